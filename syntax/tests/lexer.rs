//! Tests of the lexer: the tiling property and each lexical rule.

use proptest::prelude::*;
use ral_syntax::codes::Code;
use ral_syntax::lexer::{decode_escape, lex, EscapeValue, Lexed};
use ral_syntax::token::{ExprOp, RedirectOp, TokenKind};
use ral_syntax::SourceId;

use TokenKind as K;

fn run(src: &str) -> Lexed {
    let lexed = lex(src, SourceId(0));
    check_tiling(src, &lexed);
    lexed
}

/// Significant tokens with their text.
fn toks(src: &str) -> Vec<(TokenKind, &str)> {
    run(src)
        .tokens
        .iter()
        .filter(|t| !t.kind.is_trivia())
        .map(|t| (t.kind, t.text(src)))
        .collect()
}

/// Every token, trivia included.
fn all(src: &str) -> Vec<(TokenKind, &str)> {
    run(src)
        .tokens
        .iter()
        .map(|t| (t.kind, t.text(src)))
        .collect()
}

fn codes(src: &str) -> Vec<Code> {
    run(src).diagnostics.iter().map(|d| d.code).collect()
}

fn check_tiling(src: &str, lexed: &Lexed) {
    let mut at = 0u32;
    for t in &lexed.tokens {
        assert_eq!(t.span.start, at, "gap or overlap at {at} in {src:?}");
        assert!(t.span.end > t.span.start, "empty token in {src:?}");
        assert!(
            src.get(t.span.range()).is_some(),
            "span off a char boundary"
        );
        at = t.span.end;
    }
    assert_eq!(at as usize, src.len(), "tokens stop short in {src:?}");
}

fn redirect(fd: Option<u8>, op: RedirectOp) -> TokenKind {
    K::Redirect { fd, op }
}

// ---- tiling properties ----

const FRAGMENTS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "$[",
    "$",
    "\"",
    "'",
    "#'",
    "##'",
    "'#",
    "'##",
    "#",
    "|",
    "||",
    "?",
    "&",
    "&&",
    "...",
    ":",
    ",",
    "\n",
    " ",
    "\t",
    "`",
    "`ok",
    "2>&1",
    ">&",
    "<<",
    "<<<",
    ">",
    ">>",
    ">~",
    "<",
    "3>",
    "(",
    ")",
    "$(x)",
    "$x",
    "!",
    "!{",
    "!$x",
    "^",
    ";",
    "\\",
    "\\n",
    "\\x41",
    "\\u{1F600}",
    "\\u{",
    "=",
    "==",
    "!=",
    "<=",
    ">=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "1.5e+3",
    "word",
    "a:b",
    "é",
    "~",
    ".",
];

fn soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(FRAGMENTS), 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_tile(src in any::<String>()) {
        let lexed = lex(&src, SourceId(0));
        check_tiling(&src, &lexed);
    }

    #[test]
    fn token_soup_tiles(src in soup()) {
        let lexed = lex(&src, SourceId(0));
        check_tiling(&src, &lexed);
    }
}

#[test]
fn empty_source_has_no_tokens() {
    assert!(run("").tokens.is_empty());
}

#[test]
fn deep_nesting_does_not_overflow() {
    let n = 200_000;
    let src = format!("{}{}", "{[$[(\"!{".repeat(n), "x");
    let lexed = run(&src);
    assert!(lexed.tokens.len() > n);
    let src = "]})".repeat(n);
    run(&src);
}

// ---- words, comments, punctuation ----

#[test]
fn command_words_and_newlines() {
    assert_eq!(
        all("echo a,b\n\nx;y"),
        vec![
            (K::Word, "echo"),
            (K::Whitespace, " "),
            (K::Word, "a,b"),
            (K::Newline, "\n"),
            (K::Newline, "\n"),
            (K::Word, "x"),
            (K::Semi, ";"),
            (K::Word, "y"),
        ]
    );
}

#[test]
fn hash_inside_word_is_literal() {
    assert_eq!(
        all("curl http://x/p#frag # note\nz"),
        vec![
            (K::Word, "curl"),
            (K::Whitespace, " "),
            (K::Word, "http://x/p#frag"),
            (K::Whitespace, " "),
            (K::Comment, "# note"),
            (K::Newline, "\n"),
            (K::Word, "z"),
        ]
    );
    assert_eq!(
        all("#!/usr/bin/env ral"),
        vec![(K::Comment, "#!/usr/bin/env ral")]
    );
}

#[test]
fn terminators_end_words() {
    assert_eq!(
        toks("a|b{c}d(e)f^g!h;i"),
        vec![
            (K::Word, "a"),
            (K::Pipe, "|"),
            (K::Word, "b"),
            (K::LBrace, "{"),
            (K::Word, "c"),
            (K::RBrace, "}"),
            (K::Word, "d"),
            (K::LParen, "("),
            (K::Word, "e"),
            (K::RParen, ")"),
            (K::Word, "f"),
            (K::Caret, "^"),
            (K::Word, "g"),
            (K::Bang, "!"),
            (K::Word, "h"),
            (K::Semi, ";"),
            (K::Word, "i"),
        ]
    );
    assert_eq!(
        toks(r"C:\Users\name ~/src foo~bar .env a+b=c"),
        vec![
            (K::Word, r"C:\Users\name"),
            (K::Word, "~/src"),
            (K::Word, "foo~bar"),
            (K::Word, ".env"),
            (K::Word, "a+b=c"),
        ]
    );
}

#[test]
fn question_and_spread_at_word_start_only() {
    assert_eq!(
        toks("a ? b?c ...$xs a...b"),
        vec![
            (K::Word, "a"),
            (K::Question, "?"),
            (K::Word, "b?c"),
            (K::Spread, "..."),
            (K::Var, "$xs"),
            (K::Word, "a...b"),
        ]
    );
    assert_eq!(toks(".. ../x"), vec![(K::Word, ".."), (K::Word, "../x")]);
}

#[test]
fn colon_is_punctuation_before_an_ending() {
    // Command mode (§3.5): `:` inside a word stays, `:` before whitespace,
    // a newline or the end is punctuation (the parser then refuses it).
    assert_eq!(
        toks("echo localhost:5432 a:b note: x: :y"),
        vec![
            (K::Word, "echo"),
            (K::Word, "localhost:5432"),
            (K::Word, "a:b"),
            (K::Word, "note"),
            (K::Colon, ":"),
            (K::Word, "x"),
            (K::Colon, ":"),
            (K::Word, ":y"),
        ]
    );
    assert_eq!(toks("a:,"), vec![(K::Word, "a:,")]);
    assert_eq!(
        toks("a:\n"),
        vec![(K::Word, "a"), (K::Colon, ":"), (K::Newline, "\n")]
    );
    assert_eq!(
        toks("$host:8080"),
        vec![(K::Var, "$host"), (K::Word, ":8080")]
    );
    // Bracket mode: `:` before whitespace, newline, `]`, `,` or the end.
    assert_eq!(
        toks("[a: 1, b:2, c:, d:\n]"),
        vec![
            (K::LBracket, "["),
            (K::Word, "a"),
            (K::Colon, ":"),
            (K::Word, "1"),
            (K::Comma, ","),
            (K::Word, "b:2"),
            (K::Comma, ","),
            (K::Word, "c"),
            (K::Colon, ":"),
            (K::Comma, ","),
            (K::Word, "d"),
            (K::Colon, ":"),
            (K::RBracket, "]"),
        ]
    );
    assert_eq!(
        toks("[:] [:, a::] [host:8080] [:x] [a:"),
        vec![
            (K::LBracket, "["),
            (K::Colon, ":"),
            (K::RBracket, "]"),
            (K::LBracket, "["),
            (K::Colon, ":"),
            (K::Comma, ","),
            (K::Word, "a:"),
            (K::Colon, ":"),
            (K::RBracket, "]"),
            (K::LBracket, "["),
            (K::Word, "host:8080"),
            (K::RBracket, "]"),
            (K::LBracket, "["),
            (K::Word, ":x"),
            (K::RBracket, "]"),
            (K::LBracket, "["),
            (K::Word, "a"),
            (K::Colon, ":"),
        ]
    );
    assert_eq!(toks("[`ok: $f]")[1..3], [(K::Tag, "`ok"), (K::Colon, ":")]);
    // Expression mode: a word character again.
    assert_eq!(toks("$[a: b]")[1], (K::Word, "a:"));
}

#[test]
fn only_space_and_tab_are_whitespace() {
    assert_eq!(toks("a\rb\u{a0}c"), vec![(K::Word, "a\rb\u{a0}c")]);
}

#[test]
fn stray_bang() {
    assert_eq!(toks("!x !{a} !$y")[0], (K::Bang, "!"));
    assert!(codes("!x !{a} !$y !'s' !\"s\"").is_empty());
    for src in ["! x", "!", "{!}", "[!]", "$[!]", "a !\nb", "$[! x]"] {
        assert_eq!(codes(src), vec![Code::StrayDollar], "{src:?}");
        assert!(toks(src).contains(&(K::Error, "!")), "{src:?}");
    }
    assert_eq!(toks("$[!=]")[1], (K::Op(ExprOp::Ne), "!="));
}

#[test]
fn bracket_mode_newlines_are_whitespace() {
    assert_eq!(
        all("[\n 1,\n]"),
        vec![
            (K::LBracket, "["),
            (K::Whitespace, "\n "),
            (K::Word, "1"),
            (K::Comma, ","),
            (K::Whitespace, "\n"),
            (K::RBracket, "]"),
        ]
    );
    // A block inside a bracket is command mode again.
    let t = all("[f: {\na\n}]");
    assert!(t.contains(&(K::Newline, "\n")));
    assert_eq!(t.iter().filter(|(k, _)| *k == K::Newline).count(), 2);
}

#[test]
fn sigils() {
    assert_eq!(
        toks("$name $(my-var) $a_b-1 ^ls `ok `err-x"),
        vec![
            (K::Var, "$name"),
            (K::VarParen, "$(my-var)"),
            (K::Var, "$a_b-1"),
            (K::Caret, "^"),
            (K::Word, "ls"),
            (K::Tag, "`ok"),
            (K::Tag, "`err-x"),
        ]
    );
    assert_eq!(
        toks("$x[k]"),
        vec![
            (K::Var, "$x"),
            (K::LBracket, "["),
            (K::Word, "k"),
            (K::RBracket, "]")
        ]
    );
    assert_eq!(toks("()"), vec![(K::LParen, "("), (K::RParen, ")")]);
}

#[test]
fn stray_dollar_and_backtick() {
    assert_eq!(toks("$ x"), vec![(K::Error, "$"), (K::Word, "x")]);
    assert_eq!(codes("$ x"), vec![Code::StrayDollar]);
    assert_eq!(codes("$1"), vec![Code::StrayDollar]);
    assert_eq!(codes("$()"), vec![Code::StrayDollar]);
    assert_eq!(toks("` x"), vec![(K::Error, "`"), (K::Word, "x")]);
    assert_eq!(codes("` x"), vec![Code::LoneBacktick]);
    assert_eq!(codes("$[ $ ]"), vec![Code::StrayDollar]);
}

#[test]
fn ampersands_and_pipes() {
    assert_eq!(
        toks("a & b"),
        vec![(K::Word, "a"), (K::Amp, "&"), (K::Word, "b")]
    );
    let lexed = run("a &");
    assert_eq!(lexed.diagnostics[0].code, Code::BackgroundOperator);
    let d = &lexed.diagnostics[0];
    let text = format!(
        "{} {} {:?} {:?}",
        d.message, d.primary.text, d.notes, d.help
    );
    assert!(text.contains("spawn"));
    assert_eq!(toks("a && b")[1], (K::AmpAmp, "&&"));
    assert_eq!(codes("a && b"), vec![Code::ShellAndOr]);
    assert_eq!(toks("a || b")[1], (K::PipePipe, "||"));
    assert_eq!(codes("a || b"), vec![Code::ShellAndOr]);
    assert_eq!(toks("a&b"), vec![(K::Word, "a&b")]);
    assert!(codes("a&b").is_empty());
    // `{ || … }` is the parser's to report.
    assert_eq!(toks("{ || x }")[1], (K::PipePipe, "||"));
    assert!(codes("{ || x }").is_empty());
    assert!(codes("{|| x }").is_empty());
    assert_eq!(codes("{ a || x }"), vec![Code::ShellAndOr]);
    assert_eq!(toks("{|x| x}")[1], (K::Pipe, "|"));
}

// ---- redirects ----

#[test]
fn redirects() {
    use RedirectOp::*;
    assert_eq!(
        toks("c > f >> g >~ h < i << 'j' 2> e 2>&1 0<< x 1>> y"),
        vec![
            (K::Word, "c"),
            (redirect(None, Write), ">"),
            (K::Word, "f"),
            (redirect(None, Append), ">>"),
            (K::Word, "g"),
            (redirect(None, Stream), ">~"),
            (K::Word, "h"),
            (redirect(None, Read), "<"),
            (K::Word, "i"),
            (redirect(None, Here), "<<"),
            (
                K::RawString {
                    hashes: 0,
                    closed: true
                },
                "'j'"
            ),
            (redirect(Some(2), Write), "2>"),
            (K::Word, "e"),
            (redirect(Some(2), Dup(1)), "2>&1"),
            (redirect(Some(0), Here), "0<<"),
            (K::Word, "x"),
            (redirect(Some(1), Append), "1>>"),
            (K::Word, "y"),
        ]
    );
    assert!(codes("c > f 2>&1 0<< x").is_empty());
    // Digits belong to the redirect only at the start of a word.
    assert_eq!(
        toks("a2>f"),
        vec![
            (K::Word, "a2"),
            (redirect(None, Write), ">"),
            (K::Word, "f")
        ]
    );
    assert_eq!(toks("22x"), vec![(K::Word, "22x")]);
    assert_eq!(toks("cmd>f")[1], (redirect(None, Write), ">"));
    // In a bracket, redirects are still redirects.
    assert_eq!(toks("[2>f]")[1], (redirect(Some(2), Write), "2>"));
}

#[test]
fn bad_descriptors() {
    use RedirectOp::*;
    assert_eq!(toks("3> f")[0], (redirect(Some(3), Write), "3>"));
    assert_eq!(codes("3> f"), vec![Code::BadDescriptor]);
    assert_eq!(codes("4< f"), vec![Code::BadDescriptor]);
    assert_eq!(toks(">&5")[0], (redirect(None, Dup(5)), ">&5"));
    assert_eq!(codes(">&5"), vec![Code::BadDescriptor]);
    assert_eq!(codes(">& x"), vec![Code::BadDescriptor]);
    assert_eq!(
        toks("99999999999> f")[0],
        (redirect(Some(255), Write), "99999999999>")
    );
    assert_eq!(codes("99999999999> f"), vec![Code::BadDescriptor]);
    assert_eq!(toks("2>&999")[0], (redirect(Some(2), Dup(255)), "2>&999"));
    // `1>&2` is well-formed lexically; the parser refuses it.
    assert!(codes("1>&2").is_empty());
    assert_eq!(codes("1<< 'x'"), vec![Code::BadDescriptor]);
    assert_eq!(codes("2<< 'x'"), vec![Code::BadDescriptor]);
}

#[test]
fn here_string_form() {
    assert_eq!(codes("c <<< 'x'"), vec![Code::HereStringForm]);
    assert_eq!(
        toks("c <<< 'x'")[1],
        (redirect(None, RedirectOp::Here), "<<<")
    );
    assert_eq!(codes("c <<'x'"), vec![Code::HereStringForm]);
    assert_eq!(codes("c <<$x"), vec![Code::HereStringForm]);
    assert!(codes("c << $x").is_empty());
    assert!(codes("c <<\t$x").is_empty());
}

// ---- expression mode ----

#[test]
fn expression_operators() {
    use ExprOp::*;
    assert_eq!(
        toks("$[1+1]"),
        vec![
            (K::ExprOpen, "$["),
            (K::Word, "1"),
            (K::Op(Add), "+"),
            (K::Word, "1"),
            (K::RBracket, "]"),
        ]
    );
    let ops: Vec<TokenKind> = toks("$[a-b*c/d%e==f!=g<h>i<=j>=k&&l||m=n]")
        .into_iter()
        .filter_map(|(k, _)| matches!(k, K::Op(_)).then_some(k))
        .collect();
    assert_eq!(
        ops,
        [Sub, Mul, Div, Rem, Eq, Ne, Lt, Gt, Le, Ge, And, Or, Assign].map(K::Op)
    );
    assert!(codes("$[a && b || c]").is_empty());
    // Outside `$[...]` these are word characters or shell punctuation.
    assert_eq!(
        toks("a >= b"),
        vec![
            (K::Word, "a"),
            (redirect(None, RedirectOp::Write), ">"),
            (K::Word, "="),
            (K::Word, "b"),
        ]
    );
}

#[test]
fn expression_numerals() {
    use ExprOp::*;
    assert_eq!(
        toks("$[1.5e+3 - 2.0E-1+.5e+2]"),
        vec![
            (K::ExprOpen, "$["),
            (K::Word, "1.5e+3"),
            (K::Op(Sub), "-"),
            (K::Word, "2.0E-1"),
            (K::Op(Add), "+"),
            (K::Word, ".5e+2"),
            (K::RBracket, "]"),
        ]
    );
    // A leading sign is the operator.
    assert_eq!(toks("$[-1]")[1..3], [(K::Op(Sub), "-"), (K::Word, "1")]);
    // Without a decimal point the exponent is no numeral's.
    assert_eq!(
        toks("$[1e+3]")[1..4],
        [(K::Word, "1e"), (K::Op(Add), "+"), (K::Word, "3")]
    );
    assert_eq!(toks("$[2.e+1]")[1], (K::Word, "2.e+1"));
}

#[test]
fn expression_mode_nesting() {
    use ExprOp::*;
    // Newlines are whitespace; parentheses group; brackets and blocks nest.
    let t = toks("$[(1 +\n 2) * [a, b][0] + !{ f\n }]");
    assert!(t.contains(&(K::LParen, "(")));
    assert!(t.contains(&(K::Comma, ",")));
    assert!(t.contains(&(K::Newline, "\n")));
    assert_eq!(t.iter().filter(|(k, _)| *k == K::Newline).count(), 1);
    assert_eq!(t.last(), Some(&(K::RBracket, "]")));
    // Inside a bracket in an expression, `+` is a word character again.
    assert_eq!(toks("$[[a+b]]")[2], (K::Word, "a+b"));
    // After `]` closes `$[`, command mode resumes.
    assert_eq!(toks("$[1] + x")[3..], [(K::Word, "+"), (K::Word, "x")]);
    assert_eq!(toks("$[!x]")[1], (K::Bang, "!"));
    assert_eq!(toks("$[x != y]")[2], (K::Op(Ne), "!="));
    assert_eq!(toks("$[a & b]")[2], (K::Amp, "&"));
    assert_eq!(codes("$[a & b]"), vec![Code::BackgroundOperator]);
    assert_eq!(
        toks("$[2>1]")[1..4],
        [(K::Word, "2"), (K::Op(Gt), ">"), (K::Word, "1")]
    );
}

// ---- raw strings ----

#[test]
fn raw_strings() {
    let closed = |hashes| K::RawString {
        hashes,
        closed: true,
    };
    assert_eq!(
        toks("'a b\nc' #'it's'# ##'x '# y'##"),
        vec![
            (closed(0), "'a b\nc'"),
            (closed(1), "#'it's'#"),
            (closed(2), "##'x '# y'##"),
        ]
    );
    assert_eq!(toks("'$x \\n'"), vec![(closed(0), "'$x \\n'")]);
    assert!(codes("'a' #'b'#").is_empty());
    // Inside brackets and expressions too.
    assert_eq!(toks("[#'a'#]")[1], (closed(1), "#'a'#"));
}

#[test]
fn unclosed_raw_strings() {
    let lexed = run("x 'abc");
    assert_eq!(lexed.diagnostics.len(), 1);
    assert_eq!(lexed.diagnostics[0].code, Code::UnclosedString);
    assert_eq!(lexed.diagnostics[0].primary.span.range(), 2..3);
    assert_eq!(
        toks("x 'abc")[1],
        (
            K::RawString {
                hashes: 0,
                closed: false
            },
            "'abc"
        )
    );
    let lexed = run("##'abc'#");
    assert_eq!(lexed.diagnostics[0].code, Code::UnclosedString);
    assert_eq!(lexed.diagnostics[0].primary.span.range(), 0..3);
    assert_eq!(
        lexed.tokens[0].kind,
        K::RawString {
            hashes: 2,
            closed: false
        }
    );
}

// ---- double-quoted strings ----

#[test]
fn plain_double_quoted() {
    assert_eq!(
        all("\"hi $ there ! x\""),
        vec![
            (K::DqStart, "\""),
            (K::DqText, "hi $ there ! x"),
            (K::DqEnd, "\""),
        ]
    );
    assert_eq!(
        toks("\"a\nb\""),
        vec![(K::DqStart, "\""), (K::DqText, "a\nb"), (K::DqEnd, "\"")]
    );
}

#[test]
fn escapes() {
    let src = r#""\n\r\t\\\0\e\"\$\!\~\x41\u{1F600}""#;
    let t = toks(src);
    assert_eq!(t.len(), 14);
    assert!(t[1..13]
        .iter()
        .all(|(k, _)| *k == K::DqEscape { valid: true }));
    assert!(codes(src).is_empty());
    assert_eq!(t[11].1, r"\x41");
    assert_eq!(decode_escape(t[11].1), Some(EscapeValue::Char('A')));
    assert_eq!(decode_escape(t[12].1), Some(EscapeValue::Char('\u{1F600}')));
    let t = toks("\"a\\\nb\"");
    assert_eq!(t[2], (K::DqEscape { valid: true }, "\\\n"));
    assert_eq!(decode_escape(t[2].1), Some(EscapeValue::LineContinuation));
}

#[test]
fn invalid_escapes() {
    for (src, text) in [
        ("\"\\q\"", "\\q"),
        ("\"\\x80\"", "\\x80"),
        ("\"\\x4\"", "\\x4"),
        ("\"\\xZ\"", "\\x"),
        ("\"\\u{110000}\"", "\\u{110000}"),
        ("\"\\u{D800}\"", "\\u{D800}"),
        ("\"\\u{}\"", "\\u{}"),
        ("\"\\u{1234567}\"", "\\u{1234567}"),
        ("\"\\u{12\"", "\\u{12"),
        ("\"\\u12\"", "\\u"),
        ("\"\\é\"", "\\é"),
    ] {
        let t = toks(src);
        assert_eq!(t[1], (K::DqEscape { valid: false }, text), "{src}");
        assert_eq!(t.last(), Some(&(K::DqEnd, "\"")), "{src}");
        let lexed = run(src);
        assert_eq!(lexed.diagnostics.len(), 1, "{src}");
        assert_eq!(lexed.diagnostics[0].code, Code::InvalidEscape);
        assert!(!lexed.diagnostics[0].primary.text.is_empty());
        assert_eq!(decode_escape(text), None, "{text}");
    }
    assert_eq!(
        codes("\"\\"),
        vec![Code::InvalidEscape, Code::UnclosedString]
    );
}

#[test]
fn string_splices() {
    assert_eq!(
        toks("\"a $x b $(y)c $[1+2] !{ f a } !$z .\""),
        vec![
            (K::DqStart, "\""),
            (K::DqText, "a "),
            (K::Var, "$x"),
            (K::DqText, " b "),
            (K::VarParen, "$(y)"),
            (K::DqText, "c "),
            (K::ExprOpen, "$["),
            (K::Word, "1"),
            (K::Op(ExprOp::Add), "+"),
            (K::Word, "2"),
            (K::RBracket, "]"),
            (K::DqText, " "),
            (K::Bang, "!"),
            (K::LBrace, "{"),
            (K::Word, "f"),
            (K::Word, "a"),
            (K::RBrace, "}"),
            (K::DqText, " "),
            (K::Bang, "!"),
            (K::Var, "$z"),
            (K::DqText, " ."),
            (K::DqEnd, "\""),
        ]
    );
    // A string inside a splice.
    assert_eq!(toks("\"!{ echo \"in\" }\"").len(), 9);
    assert!(codes("\"!{ echo \"in\" }\"").is_empty());
}

#[test]
fn string_index_groups() {
    assert_eq!(
        toks("\"$r[a][$k] [x]\""),
        vec![
            (K::DqStart, "\""),
            (K::Var, "$r"),
            (K::LBracket, "["),
            (K::Word, "a"),
            (K::RBracket, "]"),
            (K::LBracket, "["),
            (K::Var, "$k"),
            (K::RBracket, "]"),
            (K::DqText, " [x]"),
            (K::DqEnd, "\""),
        ]
    );
    assert_eq!(
        toks("\"!$r[0]!\"")[1..6],
        [
            (K::Bang, "!"),
            (K::Var, "$r"),
            (K::LBracket, "["),
            (K::Word, "0"),
            (K::RBracket, "]"),
        ]
    );
    // Delimited splices do not continue into `[`.
    assert_eq!(
        toks("\"$(red)[$host]\"")[1..4],
        [(K::VarParen, "$(red)"), (K::DqText, "["), (K::Var, "$host"),]
    );
    assert_eq!(toks("\"$[1][x]\"")[4], (K::DqText, "[x]"));
}

#[test]
fn unclosed_double_quoted() {
    let lexed = run("echo \"abc $x");
    assert_eq!(lexed.diagnostics.len(), 1);
    assert_eq!(lexed.diagnostics[0].code, Code::UnclosedString);
    assert_eq!(lexed.diagnostics[0].primary.span.range(), 5..6);
    // Unclosed inside a splice.
    assert_eq!(codes("\"$[1 + "), vec![Code::UnclosedString]);
}

// ---- robustness ----

#[test]
fn stray_closers_do_not_underflow() {
    assert_eq!(
        toks("] } ) x"),
        vec![
            (K::RBracket, "]"),
            (K::RBrace, "}"),
            (K::RParen, ")"),
            (K::Word, "x"),
        ]
    );
    assert!(codes("] } )").is_empty());
    // A mismatched closer leaves the mode alone: still bracket mode here.
    assert_eq!(toks("[a } b, c]")[4], (K::Comma, ","));
    // Unclosed brackets are the parser's to report.
    assert!(codes("{ [ $[ (").is_empty());
}

#[test]
fn throughput_is_reasonable() {
    let unit = "let xs = [1, 2, 3]\nfor $xs { |x| echo \"value: $x[0] !{ f $x }\" | grep -v foo > out.txt }\n# comment here\nlet y = $[1.5 * ($a + 2)] ? fallback 'raw' #'x'#\n";
    let src = unit.repeat(20_000);
    let start = std::time::Instant::now();
    let lexed = lex(&src, SourceId(0));
    let elapsed = start.elapsed();
    check_tiling(&src, &lexed);
    assert!(lexed.diagnostics.is_empty());
    let mbps = src.len() as f64 / elapsed.as_secs_f64() / 1e6;
    eprintln!(
        "lexer: {:.1} MB in {elapsed:?} = {mbps:.0} MB/s",
        src.len() as f64 / 1e6
    );
}
