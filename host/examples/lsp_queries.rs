//! The language server's queries on one generated well-typed file, for
//! `benches/lsp.sh`, which runs this under callgrind and reads each
//! query's inclusive instruction count: `Analysis::new` (parse and check:
//! the diagnostics after an edit), `hover`, `complete` (after `$` at the
//! end: every binding in scope), `symbols`.
//!
//! `cargo run --release -p ral-host --example lsp_queries -- 50000`

use std::path::Path;

use ral_host::lsp::analysis::Analysis;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let lines: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let text = format!("{}echo $\n", ral_benches::generate_typed_program(lines));
    let a = Analysis::new("big.ral", &text);
    let middle = text.len() / 2;
    let hover = a.hover(middle).map_or(0, |h| h.text.len());
    let end = text.len() - 1;
    let (items, more) = a.complete(&text, end, end, Path::new("/"), &[], 500);
    let symbols = a.symbols().len();
    println!(
        "{lines} lines: {} diagnostics, hover {hover} bytes, {} completions (more: {more}), {symbols} symbols",
        a.diagnostics().len(),
        items.len()
    );
}
