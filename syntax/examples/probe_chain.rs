use ral_syntax::*;
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let src = format!("echo $[{}1]", "1 + ".repeat(n));
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let lexed = lexer::lex(&src, SourceId(0));
            let (program, _d) = parser::parse_tokens(&src, SourceId(0), &lexed.tokens);
            eprintln!("parsed");
            let _ = validate::validate(&program, SourceId(0));
            eprintln!("validated");
            let _ = dump::dump_program(&program);
            eprintln!("dumped");
            drop(program);
            eprintln!("dropped");
        })
        .unwrap()
        .join()
        .ok();
}
