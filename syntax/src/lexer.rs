//! The lexer (being written).
use crate::diag::Diagnostic;
use crate::span::SourceId;
use crate::token::Token;

/// Tokens of one source, tiling it, and the lexical diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub diagnostics: Vec<Diagnostic>,
}

pub fn lex(_src: &str, _source: SourceId) -> Lexed {
    Lexed::default()
}
