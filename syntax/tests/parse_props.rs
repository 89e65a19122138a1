//! Property tests for the front end's two promises: it never panics, on any
//! input at all, and the lexer's tokens tile the input (STYLE §1.4, §5.3).
//!
//! Inputs are arbitrary strings, and "token soups": random sequences of ral
//! fragments, which reach far more parser states than random characters do,
//! plus deeply nested delimiters. Case counts keep the whole file to a few
//! seconds.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use ral_syntax::{lexer, parse, SourceId, SourceMap};

/// Fragments of ral that open, close, or sit inside most forms.
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
    "\r\n",
    " ",
    "\t",
    "let",
    "if",
    "elsif",
    "else",
    "case",
    "try",
    "return",
    "`tag",
    "`ok",
    "$x",
    "$(x)",
    "!",
    "!{",
    "^",
    "2>&1",
    "1>&2",
    ">&2",
    "<<",
    "<<<",
    ">",
    ">>",
    ">~",
    "<",
    "=",
    "==",
    "+",
    "-",
    "*",
    "%",
    "#",
    "# note\n",
    "\\",
    "\\n",
    "\\u{1F600}",
    "word",
    "echo",
    "x",
    "_",
    "~/p",
    "./a",
    "0",
    "42",
    "-7",
    "3.14",
    "1e6",
    "007",
    "true",
    "é",
];

fn fragment() -> impl Strategy<Value = String> {
    prop::sample::select(FRAGMENTS).prop_map(str::to_string)
}

/// A random sequence of fragments, optionally space-separated.
fn soup() -> impl Strategy<Value = String> {
    (prop::collection::vec(fragment(), 0..60), any::<bool>()).prop_map(|(parts, spaced)| {
        if spaced {
            parts.join(" ")
        } else {
            parts.concat()
        }
    })
}

/// Openers with their closers, for nesting.
const PAIRS: &[(&str, &str)] = &[
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

/// Up to 200 levels of nesting around a soup, closed, unclosed or truncated.
fn nested() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(PAIRS), 1..=200),
        soup(),
        0u8..3,
    )
        .prop_map(|(pairs, inner, closing)| {
            let mut s: String = pairs.iter().map(|(open, _)| *open).collect();
            s.push_str(&inner);
            let closers = pairs.iter().rev().map(|(_, close)| *close);
            match closing {
                // Every delimiter closed.
                0 => s.extend(closers),
                // Half of them closed.
                1 => s.extend(closers.take(pairs.len() / 2)),
                // None closed.
                _ => {}
            }
            s
        })
}

/// Any input the properties run on.
fn input() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<String>(),
        4 => soup(),
        2 => nested(),
    ]
}

/// Checks that `tokens` tile `src` exactly, returning what went wrong.
fn tiling_error(src: &str) -> Option<String> {
    let lexed = lexer::lex(src, SourceId(0));
    let mut at = 0u32;
    for (i, token) in lexed.tokens.iter().enumerate() {
        if token.span.start != at {
            return Some(format!(
                "token {i} {token:?} starts at {}, expected {at}",
                token.span.start
            ));
        }
        if token.span.end <= token.span.start {
            return Some(format!("token {i} {token:?} is empty"));
        }
        if src.get(token.span.range()).is_none() {
            return Some(format!(
                "token {i} {token:?} does not fall on char boundaries"
            ));
        }
        at = token.span.end;
    }
    if at as usize != src.len() {
        return Some(format!("tokens end at {at}, input is {} bytes", src.len()));
    }
    None
}

/// Parses `raw` as a source would be: normalised through a [`SourceMap`].
fn parse_normalised(raw: &str) {
    let mut sources = SourceMap::new();
    let id = sources.add("prop.ral", raw);
    let parsed = parse(sources.text(id), id);
    // Every diagnostic must point into the source it was reported for.
    let len = sources.text(id).len();
    for d in &parsed.diagnostics {
        assert!(
            d.span().end as usize <= len,
            "diagnostic past the end: {d:?}"
        );
        assert!(d.span().start <= d.span().end, "inverted span: {d:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics(src in input()) {
        parse_normalised(&src);
    }

    #[test]
    fn lexer_tokens_tile_the_input(src in input()) {
        // The lexer's contract is on normalised text (no CR).
        let src = ral_syntax::span::normalize_newlines(&src).into_owned();
        if let Some(err) = tiling_error(&src) {
            prop_assert!(false, "{} in {:?}", err, src);
        }
    }
}

#[test]
fn deepest_nesting_is_survived() {
    for (open, close) in PAIRS {
        let src = format!("{}x{}", open.repeat(200), close.repeat(200));
        parse_normalised(&src);
        parse_normalised(&open.repeat(200));
        parse_normalised(&close.repeat(200));
    }
}
