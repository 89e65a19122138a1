#![allow(clippy::unwrap_used)]
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let src = std::fs::read_to_string(&path).unwrap();
    let (parsed, checked) = ral_types::check_source(&src, &path, &ral_types::TypeEnv::new());
    for d in &parsed.diagnostics {
        println!("{:?}", d);
    }
    let Some(c) = checked else { return };
    let line = |o: u32| src[..o as usize].matches('\n').count() + 1;
    for d in &c.diagnostics {
        println!(
            "L{} [{}] {:?} {}",
            line(d.primary.span.start),
            d.code.name(),
            d.severity,
            d.message
        );
        for l in &d.secondary {
            println!("    L{} {}", line(l.span.start), l.text);
        }
    }
    for b in &c.bindings {
        println!(
            "{} : {}",
            b.name,
            ral_types::print_scheme(&b.scheme, Some(&c.store))
        );
    }
}
