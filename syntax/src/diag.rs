//! The one diagnostic model every phase reports through.
//!
//! A [`Diagnostic`] names its [`Code`], says what went wrong in a title, points
//! at the culprit with a primary [`Label`], may point at related places with
//! secondary labels, explains the rule in notes and proposes an edit in help.
//! Only [`crate::render`] turns one into text.

use crate::codes::{Code, Severity};
use crate::span::{SourceId, Span};

/// A span in one source with a short text saying what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

impl Label {
    pub fn new(span: Span, text: impl Into<String>) -> Label {
        Label {
            span,
            text: text.into(),
        }
    }
}

/// One reported problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// The source every label of this diagnostic points into.
    pub source: SourceId,
    /// The title: names the problem, sentence case, no trailing period.
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    /// Full sentences explaining the rule.
    pub notes: Vec<String>,
    /// A concrete edit that would fix the problem.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with `code`'s default severity and a primary label.
    pub fn new(
        code: Code,
        source: SourceId,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.severity(),
            source,
            message: sentence_case(message.into()),
            primary: Label::new(span, label),
            secondary: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    pub fn with_secondary(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.secondary.push(Label::new(span, text));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Diagnostic {
        self.severity = severity;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The span of the primary label.
    pub fn span(&self) -> Span {
        self.primary.span
    }
}

/// Titles are in sentence case (STYLE.md §2.5): the first letter is upper case.
fn sentence_case(mut message: String) -> String {
    if let Some(first) = message.get(0..1) {
        if first.bytes().all(|b| b.is_ascii_lowercase()) {
            let upper = first.to_ascii_uppercase();
            message.replace_range(0..1, &upper);
        }
    }
    message
}
