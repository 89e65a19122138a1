//! ral's front end.
//!
//! Source text (normalised by [`span::normalize_newlines`]) is lexed by
//! [`lexer::lex`] into tokens that tile it, parsed by [`parser`] into the
//! spanned [`ast`], and checked by [`validate`] for the rejections the spec
//! assigns to parse time. Every problem is a [`diag::Diagnostic`] with a stable
//! [`codes::Code`]; [`render`] is the only place that turns one into text.
//!
//! The front end never panics and never stops at the first error: [`parse`]
//! always returns a tree (with `Error` nodes where input could not be read)
//! together with every diagnostic it found. It does no IO.

pub mod ast;
pub mod codes;
pub mod diag;
pub mod dump;
pub mod lexer;
pub mod parser;
pub mod render;
pub mod span;
pub mod token;
pub mod validate;
pub mod walk;

pub use codes::{Code, Phase, Severity};
pub use diag::{Diagnostic, Label};
pub use span::{SourceId, SourceMap, Span};

/// The result of parsing one source.
#[derive(Clone, Debug)]
pub struct Parsed {
    pub program: ast::Program,
    /// Lexical, parse and validation diagnostics, in source order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Parsed {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Lexes, parses and validates `src`, which must already be normalised
/// (as [`SourceMap::add`] does).
pub fn parse(src: &str, source: SourceId) -> Parsed {
    // The grammar recurses once per nested form (at most 64 deep); in debug
    // builds a level can take tens of kilobytes of stack, more than a test
    // thread has. Run on a stack segment of our own, grown on demand.
    with_stack(|| parse_on_this_stack(src, source))
}

/// Runs `f` with at least [`RED_ZONE`] bytes of stack available, switching
/// to a fresh [`PHASE_STACK`] segment only when the current one has less.
/// Later phases that recurse over the tree use this too.
///
/// The red zone is what the deepest input the front end accepts needs in a
/// debug build (nesting is capped at 64 levels and 128 operators a level
/// before the grammar runs; `syntax/tests/stack_budget.rs` pins it), so a
/// caller with a normal 8 MiB main-thread stack runs in place: mapping and
/// faulting in a fresh segment on every call was a large share of a
/// trivial turn.
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    if declared_room().is_some_and(|room| room >= RED_ZONE) {
        return f();
    }
    stacker::maybe_grow(RED_ZONE, PHASE_STACK, f)
}

thread_local! {
    /// The stack this thread declared ([`declare_stack`]): an address near
    /// its top and how many bytes lie below it.
    static DECLARED: std::cell::Cell<Option<(usize, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Tells the front end that the calling thread's stack has `size` bytes
/// below the caller's frame (a program's `main` passes its stack limit),
/// so [`with_stack`] measures what is left from there instead of asking
/// the system. (Asking costs a read and a parse of `/proc/self/maps` on the
/// main thread: a fifth of an empty `ral` run's start-up.)
pub fn declare_stack(size: usize) {
    let top = stack_position();
    DECLARED.with(|d| d.set(Some((top, size))));
}

/// The stack left to the current frame on a thread that declared its
/// stack, with a margin for what lies above the declaring frame.
fn declared_room() -> Option<usize> {
    const MARGIN: usize = 256 * 1024;
    let (top, size) = DECLARED.with(std::cell::Cell::get)?;
    let used = top.saturating_sub(stack_position());
    Some(size.saturating_sub(used).saturating_sub(MARGIN))
}

/// An address in the current stack frame (stacks grow down on every
/// platform ral runs on).
#[inline(never)]
fn stack_position() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// The stack the front end needs at most (see [`with_stack`]): debug
/// builds' frames are several times larger than optimised ones.
pub const RED_ZONE: usize = if cfg!(debug_assertions) {
    16 * 1024 * 1024
} else {
    2 * 1024 * 1024
};

/// The segment [`with_stack`] maps when the caller's stack is short
/// (virtual; pages are touched only as needed).
pub const PHASE_STACK: usize = 64 * 1024 * 1024;

fn parse_on_this_stack(src: &str, source: SourceId) -> Parsed {
    let lexed = lexer::lex(src, source);
    let mut diagnostics = lexed.diagnostics;
    let (program, parse_diags) = parser::parse_tokens(src, source, lexed.tokens);
    diagnostics.extend(parse_diags);
    diagnostics.extend(validate::validate(&program, source));
    diagnostics.sort_by_key(|d| (d.primary.span.start, d.primary.span.end));
    diagnostics.dedup_by(|a, b| a.code == b.code && a.primary.span == b.primary.span);
    Parsed {
        program,
        diagnostics,
    }
}
