//! Parse-time validation (being written).
use crate::ast::Program;
use crate::diag::Diagnostic;
use crate::span::SourceId;

pub fn validate(_program: &Program, _source: SourceId) -> Vec<Diagnostic> {
    Vec::new()
}
