fn main() {
    let cases = [
        "let [a, a] = x",
        "let [a, [b, a]] = x",
        "let [a, ...a] = x",
        "let if = 1",
        "echo { |x x| $x }",
        "echo { |[y, y]| $y }",
        "echo [a: 1, ...$r]",
        "echo [...$r, ...$s]",
        "echo [a: 1, a: 2]",
        "echo [:, a: 1, a: 2]",
        "echo [:, a: 1, ...$m]",
        "let [a: x, a: y] = $r",
        "echo hi > a > b",
        "cat < a << 'b'",
        "echo hi 2> e 2>&1",
        "echo hi >&2",
        "echo hi 1>&2",
        "echo hi 2>&2",
        "echo hi >&1",
        "cat << hello",
        "cat << 5",
        "if $c echo",
        "if $c { a } else echo",
        "if $c { a } elsif $d $x[a]",
        "case $v []",
        "case $v [`a: {}, `a: {}]",
        "case $v [`a: echo]",
        "echo $[x + 1]",
        "echo $[-y]",
        "echo $[a == b]",
        "within [dri: 'x'] { pwd }",
        "within $o { pwd }",
        "within [:, dir: 'x'] { pwd }",
        "within [] { pwd }",
        "within [handlers: $t] { pwd }",
        "within [...$o] { pwd }",
        "grant [network: false] { pwd }",
        "grant [net: false, fs: $f] { pwd }",
        "try { a } { |e| b } > x > y",
    ];
    for src in cases {
        let p = ral_syntax::parse(src, ral_syntax::SourceId(0));
        let ds: Vec<String> = p
            .diagnostics
            .iter()
            .map(|d| format!("{} {:?}", d.code, d.primary.span))
            .collect();
        println!("{src:40} => {}", ds.join(", "));
    }
    let p = ral_syntax::parse("let f = { |[a, ...r]| echo $[-$a * 2] 2>&1 > out \"x $y\" }\nif $c { a } else { b } | c ? d\ncase $v [`ok: $h]", ral_syntax::SourceId(0));
    print!("{}", ral_syntax::dump::dump_program(&p.program));
}
