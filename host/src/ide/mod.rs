//! What editors need from the language, shared by the REPL's line editor
//! and the language server (`ral --lsp`): colouring from the real lexer
//! ([`tokens`]), completion sites and candidates ([`complete`]), and the
//! fuzzy ranking both use ([`fuzzy`]), and completion specs for the
//! arguments of commands ([`specs`]: the format, the shipped specs, the
//! `--help` reader). Nothing here runs ral code or programs; the only IO
//! is listing directories for path and `PATH` completion (a host runs a
//! spec's generator commands and `--help`).

pub mod complete;
pub mod fuzzy;
pub mod specs;
pub mod tokens;

pub use complete::{
    candidates, executables, scheme_fields, site, Candidate, Env, Invocation, Offer, Site, Want,
};
pub use fuzzy::{rank, rank_by};
pub use tokens::{classify, Class, Piece};
