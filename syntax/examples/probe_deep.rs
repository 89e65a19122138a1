use ral_syntax::*;
fn main() {
    let pairs = [
        ("{", "}"),
        ("[", "]"),
        ("$[", "]"),
        ("(", ")"),
        ("!{", "}"),
        ("\"$[", "]\""),
        ("{ |x| ", "}"),
        ("if $x { ", " }"),
        ("$[(", ")]"),
    ];
    let which = std::env::args().nth(1).unwrap_or_default();
    let only: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(99);
    for (i, (open, close)) in pairs.into_iter().enumerate() {
        if only != 99 && i != only {
            continue;
        }
        let src = format!("{}x{}", open.repeat(200), close.repeat(200));
        let src2 = src.clone();
        let which = which.clone();
        let h = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let lexed = lexer::lex(&src2, SourceId(0));
                let (mut program, _d) = parser::parse_tokens(&src2, SourceId(0), &lexed.tokens);
                eprintln!("parsed {open}");
                if which == "num" || which == "all" {
                    walk::number_nodes(&mut program);
                    eprintln!("numbered");
                }
                if which == "val" || which == "all" {
                    let _ = validate::validate(&program, SourceId(0));
                    eprintln!("validated");
                }
                if which == "dump" || which == "all" {
                    let _ = dump::dump_program(&program);
                    eprintln!("dumped");
                }
                drop(program);
                eprintln!("dropped");
            })
            .unwrap();
        let _ = h.join();
    }
}
