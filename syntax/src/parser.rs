//! The parser (being written).
use crate::ast::Program;
use crate::diag::Diagnostic;
use crate::span::{SourceId, Span};
use crate::token::Token;

pub fn parse_tokens(
    _src: &str,
    _source: SourceId,
    _tokens: &[Token],
) -> (Program, Vec<Diagnostic>) {
    (
        Program {
            stmts: Vec::new(),
            span: Span::default(),
        },
        Vec::new(),
    )
}
