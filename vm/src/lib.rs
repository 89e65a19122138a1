//! ral-vm: runtime values, their printing, and the builtins that need no
//! operating system. The IR compiler, the register bytecode and the dispatch
//! loop come next (issue 4) and build on these.
//!
//! - [`value`]: [`Value`] (16 bytes, `Send + Sync`, clone = refcount bump),
//!   records/maps, variants, function and handle placeholders.
//! - [`failure`]: [`Failure`], the recoverable failure outcome.
//! - [`display`]: canonical numbers, the text conversion, the interactive
//!   renderer.
//! - [`quote`]: ral and POSIX word quoting.
//! - [`codec`]: the byte/value codecs of §7.3 (JSON, lines, CSV, text) as
//!   pure functions, and their [`codec::CodecError`].
//! - [`builtins`]: the builtin functions, their calling convention ([`Ctx`],
//!   [`BuiltinFn`]) and the registry.

pub mod builtins;
pub mod codec;
pub mod display;
pub mod failure;
pub mod quote;
pub mod value;

pub use builtins::{registry, BuiltinDef, BuiltinFn, Ctx};
pub use failure::{Cause, Failure, FailureInfo, Reason};
pub use value::{Func, Handle, Key, Keys, Record, Value, Variant};
