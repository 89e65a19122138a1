//! Renders [`Diagnostic`]s as text with ariadne. No other module prints them.

use std::io::Write;

use ariadne::{Config, IndexType, Label as ALabel, Report, ReportKind};

use crate::codes::Severity;
use crate::diag::Diagnostic;
use crate::span::SourceMap;

/// Whether rendered diagnostics may use ANSI colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Never,
    Always,
}

/// Renders one diagnostic against the sources it points into.
///
/// The header reads `[code] Error: message`, followed by the location
/// `name:line:col` and the labelled source excerpt, notes and help.
pub fn render(diag: &Diagnostic, sources: &SourceMap, color: Color) -> String {
    let name = sources.name(diag.source).to_string();
    let text = sources.text(diag.source);
    let clamp = |r: std::ops::Range<usize>| {
        let start = r.start.min(text.len());
        let end = r.end.clamp(start, text.len());
        start..end
    };
    let kind = match diag.severity {
        Severity::Error => ReportKind::Error,
        Severity::Warning => ReportKind::Warning,
        Severity::Note => ReportKind::Advice,
    };
    let primary = clamp(diag.primary.span.range());
    let config = Config::default()
        .with_color(color == Color::Always)
        .with_index_type(IndexType::Byte);
    let mut report = Report::build(kind, (name.clone(), primary.clone()))
        .with_config(config)
        .with_code(diag.code.name())
        .with_message(&diag.message)
        .with_label(
            ALabel::new((name.clone(), primary))
                .with_message(&diag.primary.text)
                .with_order(0),
        );
    for (i, label) in diag.secondary.iter().enumerate() {
        let order = i32::try_from(i + 1).unwrap_or(i32::MAX);
        report = report.with_label(
            ALabel::new((name.clone(), clamp(label.span.range())))
                .with_message(&label.text)
                .with_order(order),
        );
    }
    for note in &diag.notes {
        report = report.with_note(note);
    }
    if let Some(help) = &diag.help {
        report = report.with_help(help);
    }
    let mut out = Vec::new();
    let cache = ariadne::sources(vec![(name, text.to_string())]);
    if report.finish().write(cache, &mut out).is_err() {
        // Rendering into a Vec cannot fail on IO; fall back to a plain line if
        // ariadne itself refuses the report.
        out.clear();
        let _ = write!(out, "[{}] {}", diag.code.name(), diag.message);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Renders every diagnostic, separated by blank lines.
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap, color: Color) -> String {
    let mut out = String::new();
    for d in diags {
        out.push_str(&render(d, sources, color));
    }
    out
}
