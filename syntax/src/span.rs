//! Source identity, byte spans and the source map.
//!
//! Every token and AST node carries a [`Span`]: a half-open byte range into the
//! normalised text of one source. Spans are `u32` pairs so that nodes stay small;
//! a source larger than 4 GiB is refused by [`SourceMap::add`].

use std::fmt;
use std::ops::Range;

/// Identifies one source text held by a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SourceId(pub u32);

/// A half-open byte range `start..end` into one source's normalised text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const fn new(start: u32, end: u32) -> Span {
        Span { start, end }
    }

    /// Builds a span from a `usize` range, saturating at `u32::MAX`.
    pub fn from_range(range: Range<usize>) -> Span {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Span::new(clamp(range.start), clamp(range.end))
    }

    /// An empty span at `at`.
    pub const fn point(at: u32) -> Span {
        Span::new(at, at)
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    pub fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }

    pub fn len(self) -> u32 {
        self.end.saturating_sub(self.start)
    }

    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// The text this span covers in `src`, or `""` if it does not fit.
    pub fn text(self, src: &str) -> &str {
        src.get(self.range()).unwrap_or("")
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

impl From<Range<usize>> for Span {
    fn from(range: Range<usize>) -> Span {
        Span::from_range(range)
    }
}

/// A value together with the span it came from.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Spanned<T> {
    pub node: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(node: T, span: Span) -> Self {
        Spanned { node, span }
    }
}

impl<T: fmt::Debug> fmt::Debug for Spanned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} @{:?}", self.node, self.span)
    }
}

/// Rewrites `CRLF` and lone `CR` line endings to `LF` (spec §3.1).
///
/// Every source kind (script, module, `-c`, stdin, REPL entry) passes through
/// this before it is lexed, so spans always index the normalised text.
pub fn normalize_newlines(src: &str) -> std::borrow::Cow<'_, str> {
    if !src.contains('\r') {
        return std::borrow::Cow::Borrowed(src);
    }
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// One source text with its display name and line index.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<u32>,
}

impl SourceFile {
    /// Creates a source from already-normalised text.
    pub fn new(name: impl Into<String>, text: String) -> SourceFile {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// The 1-based line and 1-based column (in characters) of byte `offset`.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line).copied().unwrap_or(0) as usize;
        let end = (offset as usize).min(self.text.len());
        let col = self.text.get(start..end).map_or(0, |s| s.chars().count());
        (line + 1, col + 1)
    }
}

/// All sources of one run: scripts, modules, `-c` text and REPL entries.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// Normalises `text` (§3.1) and stores it under `name`.
    pub fn add(&mut self, name: impl Into<String>, text: &str) -> SourceId {
        let text = normalize_newlines(text).into_owned();
        let id = SourceId(u32::try_from(self.files.len()).unwrap_or(u32::MAX));
        self.files.push(SourceFile::new(name, text));
        id
    }

    pub fn get(&self, id: SourceId) -> Option<&SourceFile> {
        self.files.get(id.0 as usize)
    }

    pub fn text(&self, id: SourceId) -> &str {
        self.get(id).map_or("", |f| f.text.as_str())
    }

    pub fn name(&self, id: SourceId) -> &str {
        self.get(id).map_or("<unknown>", |f| f.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_and_cr_become_lf() {
        assert_eq!(normalize_newlines("a\r\nb\rc\n"), "a\nb\nc\n");
        assert_eq!(normalize_newlines("\r\r\n"), "\n\n");
    }

    #[test]
    fn line_col_counts_characters() {
        let f = SourceFile::new("t", "ab\ncé d\n".to_string());
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // 'é' is two bytes; byte 6 is the space after it.
        assert_eq!(f.line_col(6), (2, 3));
    }
}
