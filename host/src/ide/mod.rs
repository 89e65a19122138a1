//! What editors need from the language, shared by the REPL's line editor
//! and the language server (`ral --lsp`): colouring from the real lexer
//! ([`tokens`]), completion sites and candidates ([`complete`]), and the
//! fuzzy ranking both use ([`fuzzy`]). Nothing here runs ral code; the
//! only IO is listing directories for path and `PATH` completion.

pub mod complete;
pub mod fuzzy;
pub mod tokens;

pub use complete::{candidates, executables, scheme_fields, site, Candidate, Env, Site, Want};
pub use fuzzy::{rank, rank_by};
pub use tokens::{classify, Class, Piece};
