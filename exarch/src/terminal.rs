//! Reduces program output to what a terminal would have shown, before it is
//! measured and clipped for the model.
//!
//! Written here rather than taken from a crate: the escape-stripping crates
//! (`strip-ansi-escapes`, `vte`-based filters) remove sequences but leave
//! carriage returns and backspaces in place, and a progress bar redrawn
//! with `\r` is exactly what must collapse. The reduction is a small line
//! model:
//!
//! - CSI sequences (`ESC [ … final`) are dropped, except erase-in-line
//!   (`ESC [ K`, `ESC [ 2 K`), which erases as a terminal would; OSC
//!   (`ESC ] … BEL` or `ESC ] … ESC \`), DCS/SOS/PM/APC strings and other
//!   escapes are dropped whole;
//! - `\r` returns the cursor to the line start, so later text overwrites
//!   (`\r\n` is an ordinary line end);
//! - backspace moves the cursor one cell left (overstrike resolves to the
//!   last character written);
//! - other control characters except tab are dropped.
//!
//! Text with none of ESC, CR or BS is returned as is, without copying.

use std::borrow::Cow;

/// See the module docs.
pub fn reduce(text: &str) -> Cow<'_, str> {
    if !text.contains(['\x1b', '\r', '\x08']) && !text.contains(is_dropped_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut line: Vec<char> = Vec::new();
    let mut cursor = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                out.extend(line.drain(..));
                out.push('\n');
                cursor = 0;
            }
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    continue;
                }
                cursor = 0;
            }
            '\x08' => cursor = cursor.saturating_sub(1),
            '\x1b' => escape(&mut chars, &mut line, cursor),
            c if is_dropped_control(c) => {}
            c => {
                if cursor < line.len() {
                    line[cursor] = c;
                } else {
                    line.push(c);
                }
                cursor += 1;
            }
        }
    }
    out.extend(line);
    Cow::Owned(out)
}

fn is_dropped_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t' && c != '\r' && c != '\x08' && c != '\x1b')
        || c == '\u{7f}'
}

/// Consumes one escape sequence (the ESC already read), applying
/// erase-in-line to `line`.
fn escape(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: &mut Vec<char>,
    cursor: usize,
) {
    match chars.next() {
        Some('[') => {
            let mut params = String::new();
            for c in chars.by_ref() {
                if ('\x40'..='\x7e').contains(&c) {
                    if c == 'K' {
                        match params.as_str() {
                            "" | "0" => line.truncate(cursor),
                            "1" => line.iter_mut().take(cursor + 1).for_each(|ch| *ch = ' '),
                            "2" => {
                                line.truncate(cursor);
                                line.iter_mut().for_each(|ch| *ch = ' ');
                            }
                            _ => {}
                        }
                    }
                    return;
                }
                params.push(c);
            }
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            // A string ended by BEL or ST (ESC \).
            while let Some(c) = chars.next() {
                if c == '\x07' {
                    return;
                }
                if c == '\x1b' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    return;
                }
            }
        }
        Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
            chars.next();
        }
        Some(_) | None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_not_copied() {
        assert!(matches!(reduce("a\tb\nc"), Cow::Borrowed("a\tb\nc")));
    }

    #[test]
    fn colour_and_titles_vanish() {
        assert_eq!(reduce("\x1b[1;31merror\x1b[0m: x"), "error: x");
        assert_eq!(
            reduce("\x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "oklink"
        );
        assert_eq!(reduce("\x1b(Bplain\x1b=\x1b>"), "plain");
    }

    #[test]
    fn carriage_return_frames_collapse_to_the_last() {
        assert_eq!(
            reduce("downloading  10%\rdownloading  55%\rdownloading 100%\ndone\r\n"),
            "downloading 100%\ndone\n"
        );
        // A shorter frame overwrites only its own cells, as on a terminal…
        assert_eq!(reduce("progress 100%\rok"), "okogress 100%");
        // …unless it erases the rest of the line first.
        assert_eq!(reduce("progress 100%\r\x1b[Kok"), "ok");
        assert_eq!(reduce("abc\r\x1b[2Kz"), "z");
    }

    #[test]
    fn backspace_overstrike_resolves() {
        assert_eq!(reduce("b\x08bo\x08ol\x08ld\x08d"), "bold");
        assert_eq!(reduce("_\x08a"), "a");
        assert_eq!(reduce("\x08\x08x"), "x");
    }

    #[test]
    fn stray_controls_drop_but_tabs_stay() {
        assert_eq!(reduce("a\x07b\x00c\td\x7f"), "abc\td");
    }
}
