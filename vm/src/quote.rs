//! Rendering strings as source words: ral's own (`ral-quote`, the value
//! renderer) and POSIX shell's (`posix-quote`, `posix-split`) (§14.3).

use ral_syntax::ast::parse_numeral;

/// Words that cannot stand bare as text: reserved words and literals (§3.6).
const RESERVED: &[&str] = &[
    "if", "elsif", "else", "let", "return", "case", "within", "grant", "try", "guard", "audit",
    "true", "false",
];

/// Whether `s` reads back as itself when written as a bare word, in command
/// mode and inside brackets alike.
///
/// Conservative on purpose: letters, digits and `_ - . / + = @ %`, plus `:`
/// anywhere but at the end (a final `:` is punctuation in brackets, §3.5),
/// and non-ASCII letters and digits. Not a numeral (`007` is a number), not
/// a reserved word, not starting with `~` (home) or `...` (spread).
pub fn is_bare_word(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('~')
        && !s.starts_with("...")
        && !s.ends_with(':')
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '.' | '/' | '+' | '=' | '@' | '%' | ':')
                || (!c.is_ascii() && c.is_alphanumeric())
        })
        && !RESERVED.contains(&s)
        && parse_numeral(s).is_none()
}

/// How a quoted string may use line breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// A literal line feed may appear inside single quotes (the word reads
    /// back identically; `ral-quote`).
    Literal,
    /// Line feeds are escaped so the result is one line (the renderer).
    Escaped,
}

/// Appends `s` as one ral word: bare where [`is_bare_word`] allows, quoted
/// otherwise (`ral-quote`).
pub fn write_ral_word(out: &mut String, s: &str) {
    if is_bare_word(s) {
        out.push_str(s);
    } else {
        write_ral_quoted(out, s, Lines::Literal);
    }
}

/// Appends `s` quoted, never bare.
///
/// - Single quotes when the text has no `'` and no character a literal
///   string cannot carry exactly;
/// - a hash fence `#'…'#` with as many `#` as needed when it has a `'`;
/// - double quotes with escapes when it has a control character (a `CR`
///   would be normalised away in a literal string, and a raw escape code
///   must not reach a terminal), or a line feed and `lines` is `Escaped`.
pub fn write_ral_quoted(out: &mut String, s: &str, lines: Lines) {
    let needs_escapes = s.chars().any(|c| match c {
        '\n' => lines == Lines::Escaped,
        '\t' => false,
        c => c.is_control(),
    });
    if needs_escapes {
        write_double_quoted(out, s);
    } else if !s.contains('\'') {
        out.push('\'');
        out.push_str(s);
        out.push('\'');
    } else {
        let mut fence = 1;
        let mut closer = String::from("'#");
        while s.contains(closer.as_str()) {
            fence += 1;
            closer.push('#');
        }
        for _ in 0..fence {
            out.push('#');
        }
        out.push('\'');
        out.push_str(s);
        out.push_str(&closer);
    }
}

fn write_double_quoted(out: &mut String, s: &str) {
    out.push('"');
    for (i, c) in s.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            '!' => out.push_str("\\!"),
            '~' if i == 0 => out.push_str("\\~"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            '\u{1b}' => out.push_str("\\e"),
            c if c.is_control() => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `s` as one POSIX shell word: bare when every character is in
/// the portable safe set, otherwise single-quoted with `'\''` for each `'`.
pub fn write_posix_word(out: &mut String, s: &str) {
    let safe = !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'_' | b'@' | b'%' | b'+' | b'=' | b':' | b',' | b'.' | b'/' | b'-'
                )
        });
    if safe {
        out.push_str(s);
        return;
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}

/// Splits POSIX shell word syntax into words, with no expansion of any kind.
///
/// Blanks (space, tab, line feed) separate words; `'…'` is literal; inside
/// `"…"` a backslash escapes only `$`, `` ` ``, `"`, `\` and a line feed
/// (which then vanishes) and is kept before anything else; outside quotes a
/// backslash takes the next character literally, and backslash-newline
/// vanishes. `#` is not a comment. An unterminated quote or a trailing
/// backslash is an error.
pub fn posix_split(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('\n') => {}
                            Some(c @ ('$' | '`' | '"' | '\\')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    cur.push(c);
                }
                None => return Err("trailing backslash".into()),
            },
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ral(s: &str) -> String {
        let mut out = String::new();
        write_ral_word(&mut out, s);
        out
    }

    fn posix(s: &str) -> String {
        let mut out = String::new();
        write_posix_word(&mut out, s);
        out
    }

    #[test]
    fn ral_words() {
        assert_eq!(ral("hello"), "hello");
        assert_eq!(ral("a/b.txt"), "a/b.txt");
        assert_eq!(ral("host:8080"), "host:8080");
        assert_eq!(ral("007"), "'007'");
        assert_eq!(ral("3.10"), "'3.10'");
        assert_eq!(ral("1e6"), "1e6");
        assert_eq!(ral("true"), "'true'");
        assert_eq!(ral("if"), "'if'");
        assert_eq!(ral(""), "''");
        assert_eq!(ral("a b"), "'a b'");
        assert_eq!(ral("~/x"), "'~/x'");
        assert_eq!(ral("key:"), "'key:'");
        assert_eq!(ral("it's"), "#'it's'#");
        assert_eq!(ral("x'#y"), "##'x'#y'##");
        assert_eq!(ral("a\r\nb"), "\"a\\r\\nb\"");
        assert_eq!(ral("~$x!\"\\"), "'~$x!\"\\'");
        assert_eq!(ral("~$x!\"\\\r"), "\"\\~\\$x\\!\\\"\\\\\\r\"");
        assert_eq!(ral("a\nb"), "'a\nb'");
        assert_eq!(ral("\u{7}"), "\"\\u{7}\"");
    }

    #[test]
    fn escaped_lines() {
        let mut out = String::new();
        write_ral_quoted(&mut out, "a\nb", Lines::Escaped);
        assert_eq!(out, "\"a\\nb\"");
    }

    #[test]
    fn posix_words() {
        assert_eq!(posix("abc-1.txt"), "abc-1.txt");
        assert_eq!(posix(""), "''");
        assert_eq!(posix("a b"), "'a b'");
        assert_eq!(posix("it's"), "'it'\\''s'");
        assert_eq!(posix("$HOME"), "'$HOME'");
    }

    #[test]
    fn posix_split_reads_quotes() {
        let split = |s: &str| posix_split(s);
        assert_eq!(
            split("a  b\tc\n"),
            Ok(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(split("'a b' \"c d\""), Ok(vec!["a b".into(), "c d".into()]));
        assert_eq!(split("x'y'\"z\""), Ok(vec!["xyz".into()]));
        assert_eq!(split("''"), Ok(vec![String::new()]));
        assert_eq!(split("a\\ b"), Ok(vec!["a b".into()]));
        assert_eq!(split(r#""\$x \n""#), Ok(vec!["$x \\n".into()]));
        assert_eq!(split("a\\\nb"), Ok(vec!["ab".into()]));
        assert_eq!(split(""), Ok(vec![]));
        assert!(split("'open").is_err());
        assert!(split("\"open").is_err());
        assert!(split("x\\").is_err());
    }

    #[test]
    fn posix_round_trip() {
        for s in ["", "plain", "a b", "it's", "'", "\"", "$x", "a\nb", "\\"] {
            assert_eq!(posix_split(&posix(s)), Ok(vec![s.to_owned()]), "{s:?}");
        }
    }
}
