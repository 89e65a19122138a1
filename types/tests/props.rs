//! Property tests for the checker's robustness promise: `check_program` never
//! panics, whatever tree the parser hands it (STYLE §5.12 `check_no_panic`).
//!
//! Two sources of programs:
//!
//! * **Token soups**: random sequences of ral fragments, parsed. Most have
//!   parse errors, so the checker meets `Error` statements, atoms and
//!   expressions; a phrase-level soup makes clean parses common too. Every
//!   result is checked, with errors or without.
//! * **Grammar programs**: random but syntactically well-formed programs from
//!   a small recursive grammar (lets with patterns, blocks with parameters,
//!   builtins and externals applied to random arities, records, maps, lists,
//!   spreads, indexing, tags, `case`, `if`, `try`, `?`, pipelines with
//!   decoders and redirects, interpolation, arithmetic). They are mostly
//!   ill-typed, which is the point: every kind of type error gets raised.
//!
//! Each checked unit is also printed (every top-level scheme) and used to
//! extend the session environment for a second unit, so the printer and the
//! session path see the same odd types. Case counts keep the file to a few
//! seconds.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use ral_syntax::{parse, SourceId};
use ral_types::{check_program, print_scheme, CheckOptions, TypeEnv};

/// Parses `src` and checks whatever tree results, errors or not; then prints
/// every binding and checks `follow_up` in the session the first unit
/// extends. Returns whether `src` parsed cleanly.
fn check_all(src: &str, follow_up: &str, is_script: bool) -> bool {
    let parsed = parse(src, SourceId(0));
    let opts = CheckOptions { is_script };
    let env = TypeEnv::new();
    let checked = check_program(&parsed.program, SourceId(0), &env, &opts);
    for b in &checked.bindings {
        let _ = print_scheme(&b.scheme, Some(&checked.store));
    }
    let next_env = env.extend_with(&checked);
    let next = parse(follow_up, SourceId(1));
    let _ = check_program(&next.program, SourceId(1), &next_env, &opts);
    !parsed.has_errors()
}

/// Token-level fragments (those of the parser's own soup test, plus the
/// names the checker gives meaning to).
const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "$[",
    "(",
    ")",
    "\"",
    "'",
    "#'",
    "'#",
    "|",
    "?",
    "&",
    "&&",
    "||",
    "...",
    ":",
    ",",
    ";",
    "\n",
    " ",
    "let",
    "if",
    "elsif",
    "else",
    "case",
    "try",
    "return",
    "`tag",
    "`ok",
    "`none",
    "$x",
    "$y",
    "$(x)",
    "!",
    "!{",
    "^",
    "2>&1",
    ">",
    ">>",
    "<",
    "=",
    "==",
    "!=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<=",
    "not",
    "#",
    "\\",
    "word",
    "echo",
    "x",
    "y",
    "_",
    "~/p",
    "./a",
    "0",
    "42",
    "-7",
    "3.14",
    "true",
    "false",
    "()",
    "|x|",
    "|x y|",
    "[:",
    "map",
    "fold",
    "filter",
    "length",
    "fail",
    "from-lines",
    "from-json",
    "to-json",
    "keys",
    "range",
    "str",
    "int",
    "ls",
    "$x[a]",
    "$x[0]",
    "$x[$y]",
    "[a: 1]",
    "[1, 2]",
    "'s'",
    "\"s $x\"",
];

/// Phrase-level fragments: whole sub-forms, so that many soups parse.
const PHRASES: &[&str] = &[
    "let x = 1",
    "let y = 'a'",
    "let f = { |x| return $x }",
    "let g = { |a b| return $[$a + $b] }",
    "let r = [a: 1, b: 'two']",
    "let xs = [1, 2, 3]",
    "let [h, ...t] = $xs",
    "let [a: q] = $r",
    "let m = [:, k: 1]",
    "let u = [...$r, a: 2]",
    "let v = `ok $x",
    "let c = case $v [`ok: { |n| return $n }, `err: { |e| return 0 }]",
    "let w = if $[$x > 0] { return 1 } else { return 2 }",
    "let z = try { fail [status: 1, message: 'm'] } { |e| return $e[message] }",
    "let l = cat f | from-lines",
    "let s = \"$x and $y $[$x * 2] !{echo hi}\"",
    "let n = fold { |acc i| return $[$acc + $i] } 0 $xs",
    "let ys = map $f $xs",
    "let k = !{ f $x }",
    "let b = hostname ? return 'none'",
    "f $x",
    "g 1 2",
    "g $r",
    "echo $x $y",
    "ls | grep x | wc -l",
    "ls > out.txt",
    "$f 3",
    "!$f",
    "return $x",
    "fail $r",
    "map $g $xs",
    "$r[a]",
    "$xs[$y]",
    "$m[$x]",
    "if $x { echo a }",
    "case $x [`a: $f]",
];

fn join_soup(parts: Vec<&str>, spaced: bool) -> String {
    if spaced {
        parts.join(" ")
    } else {
        parts.concat()
    }
}

/// A random sequence of token fragments.
fn token_soup() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(FRAGMENTS), 0..50),
        any::<bool>(),
    )
        .prop_map(|(parts, spaced)| join_soup(parts, spaced))
}

/// A random sequence of phrases, separated by newlines, `;`, spaces, pipes
/// or nothing; wrapped in a block or a force sometimes.
fn phrase_soup() -> impl Strategy<Value = String> {
    let sep = prop::sample::select(&["\n", "\n", "; ", " ", " | ", " ? ", ""][..]);
    (
        prop::collection::vec((prop::sample::select(PHRASES), sep), 1..12),
        0u8..4,
    )
        .prop_map(|(parts, wrap)| {
            let body: String = parts.iter().flat_map(|(p, s)| [*p, *s]).collect();
            match wrap {
                0 => format!("let wrapped = {{ |x| {body} }}\nwrapped 1"),
                1 => format!("let forced = !{{ {body} }}"),
                _ => body,
            }
        })
}

const NAMES: &[&str] = &["x", "y", "f", "g", "r", "xs", "k"];
/// Index fields (record keys, list positions).
const FIELDS: &[&str] = &["a", "b", "port", "message", "status", "0", "1"];
/// Record keys, used in order from a random start so none repeats.
const KEYS: &[&str] = &["a", "b", "port", "message", "status"];
const TAGS: &[&str] = &["`ok", "`err", "`none", "`some", "`a"];
const HEADS: &[&str] = &[
    "map",
    "filter",
    "fold",
    "each",
    "length",
    "keys",
    "has",
    "range",
    "int",
    "float",
    "str",
    "equal",
    "lt",
    "upper",
    "intercalate",
    "sort-list",
    "sort-list-by",
    "reverse",
    "last",
    "reduce",
    "for",
    "is-empty",
    "round",
    "slice",
    "to-json",
    "to-lines",
    "fail",
    "exit",
    "echo",
    "warn",
    "cd",
    "env",
    "glob",
    "exists",
    "spawn",
    "await",
    "f",
    "g",
    "k",
    "ls",
    "cat",
    "grep",
    "$f",
    "!$g",
    "^ls",
    "./run",
];
const DECODERS: &[&str] = &[
    "from-lines",
    "from-line",
    "from-string",
    "from-bytes",
    "from-json",
    "from-jsonl",
    "from-csv",
];

fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(NAMES)
}

fn field() -> impl Strategy<Value = &'static str> {
    prop::sample::select(FIELDS)
}

/// Leaf values.
fn leaf() -> BoxedStrategy<String> {
    prop_oneof![
        (-5i64..100).prop_map(|n| n.to_string()),
        prop::sample::select(&["1.5", "0.0", "'s'", "''", "true", "false", "()", "[]", "[:]"][..])
            .prop_map(str::to_string),
        name().prop_map(|n| format!("${n}")),
        (name(), field()).prop_map(|(n, k)| format!("${n}[{k}]")),
        (name(), name()).prop_map(|(n, k)| format!("${n}[${k}]")),
        prop::sample::select(TAGS).prop_map(str::to_string),
    ]
    .boxed()
}

/// Two different names.
fn two_names() -> impl Strategy<Value = (&'static str, &'static str)> {
    (0..NAMES.len(), 1..NAMES.len()).prop_map(|(i, d)| (NAMES[i], NAMES[(i + d) % NAMES.len()]))
}

/// `n` record entries `key: value` with distinct keys.
fn entries(values: Vec<String>, start: usize) -> String {
    let kvs: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{}: {v}", KEYS[(start + i) % KEYS.len()]))
        .collect();
    kvs.join(", ")
}

/// A block argument (for `if`, `case`, `try`): a name or a literal block of
/// simple statements over `atom`.
fn block(atom: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let simple = prop_oneof![
        2 => (prop::sample::select(HEADS), prop::collection::vec(atom.clone(), 0..3))
            .prop_map(|(h, args)| format!("{h} {}", args.join(" ")).trim_end().to_string()),
        2 => atom.clone().prop_map(|a| format!("return {a}")),
        1 => (name(), atom).prop_map(|(n, a)| format!("let {n} = {a}")),
    ];
    prop_oneof![
        1 => name().prop_map(|n| format!("${n}")),
        3 => (prop::option::of(pattern()), prop::collection::vec(simple, 1..3)).prop_map(|(p, body)| {
            match p {
                Some(p) => format!("{{ |{p}| {} }}", body.join("; ")),
                None => format!("{{ {} }}", body.join("; ")),
            }
        }),
    ]
    .boxed()
}

/// An `if` condition or `case` scrutinee: a form a block may follow.
fn condition() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => name().prop_map(|n| format!("${n}")),
        1 => (name(), field()).prop_map(|(n, k)| format!("${n}[{k}]")),
        1 => (name(), 0..9).prop_map(|(n, k)| format!("$[${n} > {k}]")),
        1 => Just("true".to_string()),
        1 => prop::sample::select(TAGS).prop_map(|t| format!("!{{return {t}}}")),
    ]
}

/// A `let` pattern.
fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop_oneof![4 => name(), 1 => Just("_")].prop_map(str::to_string),
        1 => two_names().prop_map(|(a, b)| format!("[{a}, {b}]")),
        1 => two_names().prop_map(|(a, b)| format!("[{a}, ...{b}]")),
        1 => (prop::sample::select(KEYS), name()).prop_map(|(k, a)| format!("[{k}: {a}]")),
    ]
}

/// One command over the atoms `atom` generates.
fn command(atom: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let args = prop::collection::vec(atom.clone(), 0..4);
    let head_app = (prop::sample::select(HEADS), args.clone())
        .prop_map(|(h, args)| format!("{h} {}", args.join(" ")).trim_end().to_string());
    prop_oneof![
        4 => head_app.clone(),
        2 => atom.clone().prop_map(|a| format!("return {a}")),
        1 => atom.clone(),
        2 => (condition(), condition(), block(atom.clone()), block(atom.clone()), 0u8..3)
            .prop_map(|(c, c2, t, e, form)| match form {
                0 => format!("if {c} {t} else {e}"),
                1 => format!("if {c} {t} elsif {c2} {e} else {t}"),
                _ => format!("if {c} {t}"),
            }),
        2 => (condition(), 0..TAGS.len(), prop::collection::vec(block(atom.clone()), 1..4))
            .prop_map(|(s, start, arms)| {
                let arms: Vec<String> = arms
                    .iter()
                    .enumerate()
                    .map(|(i, a)| format!("{}: {a}", TAGS[(start + i) % TAGS.len()]))
                    .collect();
                format!("case {s} [{}]", arms.join(", "))
            }),
        1 => (block(atom.clone()), block(atom.clone())).prop_map(|(b, h)| format!("try {b} {h}")),
        1 => (head_app.clone(), head_app.clone()).prop_map(|(a, b)| format!("{a} ? {b}")),
        2 => (
            prop::collection::vec(head_app.clone(), 1..3),
            prop::option::of(prop::sample::select(DECODERS)),
        )
            .prop_map(|(stages, dec)| {
                let mut s = stages.join(" | ");
                if let Some(d) = dec {
                    s.push_str(" | ");
                    s.push_str(d);
                }
                s
            }),
        1 => (head_app, prop::sample::select(&["> out.txt", "2>&1", "< in.txt", ">> log"][..]))
            .prop_map(|(c, r)| format!("{c} {r}")),
    ]
    .boxed()
}

/// A statement: a command, or a `let` of one.
fn statement(atom: BoxedStrategy<String>) -> BoxedStrategy<String> {
    prop_oneof![
        2 => command(atom.clone()),
        3 => (pattern(), command(atom)).prop_map(|(p, c)| format!("let {p} = {c}")),
    ]
    .boxed()
}

/// An arithmetic expression (the inside of `$[...]`).
fn arith(atom: BoxedStrategy<String>) -> BoxedStrategy<String> {
    let operand = prop_oneof![
        3 => prop_oneof![
            (0i64..10).prop_map(|n| n.to_string()),
            name().prop_map(|n| format!("${n}")),
            (name(), field()).prop_map(|(n, k)| format!("${n}[{k}]")),
            prop::sample::select(&["2.5", "'t'", "true"][..]).prop_map(str::to_string),
        ],
        1 => command(atom).prop_map(|c| format!("!{{{c}}}")),
    ];
    let op =
        prop::sample::select(&["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||"][..]);
    (
        operand.clone(),
        prop::collection::vec((op, operand), 0..3),
        any::<bool>(),
    )
        .prop_map(|(first, rest, neg)| {
            let mut s = if neg { format!("not {first}") } else { first };
            for (o, x) in rest {
                s = format!("({s}) {o} {x}");
            }
            s
        })
        .boxed()
}

/// Atoms, built recursively: blocks hold statements over smaller atoms.
fn atom() -> BoxedStrategy<String> {
    leaf()
        .prop_recursive(3, 24, 3, |inner| {
            let stmts = prop::collection::vec(statement(inner.clone()), 1..4);
            prop_oneof![
                // Blocks, with 0-3 parameters (names or patterns).
                3 => (prop::collection::vec(pattern(), 0..3), stmts.clone()).prop_map(|(ps, body)| {
                    if ps.is_empty() {
                        format!("{{ {} }}", body.join("; "))
                    } else {
                        format!("{{ |{}| {} }}", ps.join(" "), body.join("\n"))
                    }
                }),
                1 => stmts.prop_map(|body| format!("!{{{}}}", body.join("; "))),
                1 => command(inner.clone()).prop_map(|c| format!("!{{{c}}}[a]")),
                2 => prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|xs| format!("[{}]", xs.join(", "))),
                1 => (name(), prop::collection::vec(inner.clone(), 0..3))
                    .prop_map(|(n, xs)| format!("[...${n}, {}]", xs.join(", "))),
                2 => (prop::collection::vec(inner.clone(), 1..4), 0..KEYS.len())
                    .prop_map(|(vs, start)| format!("[{}]", entries(vs, start))),
                1 => (name(), prop::collection::vec(inner.clone(), 1..3), 0..KEYS.len(), any::<bool>())
                    .prop_map(|(n, vs, start, map)| {
                        let open = if map { "[:, " } else { "[" };
                        format!("{open}...${n}, {}]", entries(vs, start))
                    }),
                1 => (name(), inner.clone()).prop_map(|(k, v)| format!("[${k}: {v}]")),
                1 => (prop::sample::select(TAGS), inner.clone()).prop_map(|(t, v)| format!("{t} {v}")),
                2 => arith(inner.clone()).prop_map(|a| format!("$[{a}]")),
                1 => (name(), arith(inner.clone()), command(inner))
                    .prop_map(|(n, a, c)| format!("\"v $({n})s $n[a] $[{a}] !{{{c}}} end\"")),
            ]
        })
        .boxed()
}

/// A program of 1-8 top-level statements.
fn grammar_program() -> impl Strategy<Value = String> {
    let sep = prop::sample::select(&["\n", "; "][..]);
    prop::collection::vec((statement(atom()), sep), 1..8).prop_map(|stmts| {
        stmts
            .iter()
            .flat_map(|(s, sep)| [s.as_str(), *sep])
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn check_survives_token_soup(src in token_soup(), script in any::<bool>()) {
        check_all(&src, "let x = 1\nx", script);
    }

}

proptest! {
#![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

#[test]
fn check_survives_phrase_soup(src in phrase_soup(), next in phrase_soup()) {
    check_all(&src, &next, false);
}

}

proptest! {
    // Two programs per case, each a few hundred characters of dense forms.
    #![proptest_config(ProptestConfig { cases: 250, ..ProptestConfig::default() })]

    #[test]
    fn check_survives_grammar_programs(src in grammar_program(), next in grammar_program()) {
        check_all(&src, &next, true);
    }
}

/// The share of `strategy`'s values that parse without error, over `n`
/// samples from a fixed seed.
fn clean_share(strategy: impl Strategy<Value = String>, n: usize) -> f64 {
    let mut runner = TestRunner::deterministic();
    let clean = (0..n)
        .filter(|_| {
            let src = strategy.new_tree(&mut runner).unwrap().current();
            !parse(&src, SourceId(0)).has_errors()
        })
        .count();
    clean as f64 / n as f64
}

/// The soups reach the checker both with and without parse errors, and the
/// grammar programs are (nearly all) well-formed, so the properties above
/// exercise the checker's ordinary paths, not only its `Error`-node ones.
#[test]
fn generators_reach_both_clean_and_broken_trees() {
    let phrase = clean_share(phrase_soup(), 200);
    assert!(
        (0.1..0.95).contains(&phrase),
        "phrase soups clean: {phrase}"
    );
    let grammar = clean_share(grammar_program(), 200);
    assert!(grammar > 0.9, "grammar programs clean: {grammar}");
}
