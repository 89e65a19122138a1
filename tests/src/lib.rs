//! Shared helpers for the end-to-end and corpus tests in `tests/tests/`; data
//! lives in `tests/syntax/`.
//!
//! Tests reach the front end only through these helpers (STYLE §5.1), so a
//! change to the API is one edit here.

use std::path::{Path, PathBuf};

use ral_syntax::render::{render_all, Color};
use ral_syntax::{Diagnostic, Parsed, SourceId, SourceMap};

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Every file directly in `dir` whose name ends in `.{ext}`, sorted by name.
/// A missing directory yields no files.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// One parsed source together with the map that owns its text.
pub struct CheckedParse {
    pub sources: SourceMap,
    pub id: SourceId,
    pub parsed: Parsed,
}

impl CheckedParse {
    /// The normalised text that was parsed.
    pub fn text(&self) -> &str {
        self.sources.text(self.id)
    }

    /// The error diagnostics, in source order.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.parsed.diagnostics.iter().filter(|d| d.is_error())
    }

    /// The 1-based line on which a diagnostic's primary label starts.
    pub fn line_of(&self, diag: &Diagnostic) -> usize {
        self.sources
            .get(self.id)
            .map_or(0, |f| f.line_col(diag.span().start).0)
    }

    /// Every diagnostic rendered without colour.
    pub fn rendered(&self) -> String {
        render_all(&self.parsed.diagnostics, &self.sources, Color::Never)
    }

    /// One line per error diagnostic: `code@line`, for failure messages.
    pub fn error_summary(&self) -> String {
        self.errors()
            .map(|d| format!("{}@{}", d.code.name(), self.line_of(d)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Parses `text` under the display name `name`: the one caller of
/// [`ral_syntax::parse`] for the test suites.
pub fn check_parse(name: &str, text: &str) -> CheckedParse {
    let mut sources = SourceMap::new();
    let id = sources.add(name, text);
    let parsed = ral_syntax::parse(sources.text(id), id);
    CheckedParse {
        sources,
        id,
        parsed,
    }
}

/// Type-checks a cleanly parsed program as a fresh, non-script unit (an empty
/// session environment, so only builtins and the prelude are bound) and
/// returns the type-phase diagnostics, rendered against the same sources.
pub fn check_types(parse: &CheckedParse) -> CheckedTypes {
    let env = ral_types::TypeEnv::new();
    let opts = ral_types::CheckOptions::default();
    let checked = ral_types::check_program(&parse.parsed.program, parse.id, &env, &opts);
    let rendered = render_all(&checked.diagnostics, &parse.sources, Color::Never);
    let lines = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| format!("{}@{}", d.code.name(), parse.line_of(d)))
        .collect::<Vec<_>>();
    CheckedTypes {
        diagnostics: checked.diagnostics,
        rendered,
        summary: lines.join(", "),
    }
}

/// The type-phase result of [`check_types`].
pub struct CheckedTypes {
    /// Every type-phase diagnostic, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// The diagnostics rendered without colour.
    pub rendered: String,
    /// One `code@line` per error, comma-separated, for failure messages.
    pub summary: String,
}

impl CheckedTypes {
    /// The error diagnostics.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }
}

/// The token list of `text`, one `Kind "text"` per line, trivia included.
pub fn token_listing(text: &str) -> String {
    let lexed = ral_syntax::lexer::lex(text, SourceId(0));
    let mut out = String::new();
    for token in &lexed.tokens {
        out.push_str(&format!("{:?} {:?}\n", token.kind, token.text(text)));
    }
    out
}

/// A snapshot body that carries its own input (STYLE §5.2).
pub fn snapshot_body(source: &str, output: &str) -> String {
    format!("----- SOURCE\n{source}\n----- OUTPUT\n{output}")
}
