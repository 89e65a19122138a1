//! ral-vm: runtime values, their printing, the builtins that need no
//! operating system, and the register VM that runs the IR.
//!
//! - [`session`]: [`Mobile`] (scope slot table + dynamic context), the state
//!   a host snapshots; [`Scope::install`] is the top-level write chokepoint.
//! - [`op`]: the bytecode ([`op::Op`], 8 bytes), protos, the disassembler.
//! - [`compile`]: IR module → protos (registers, constants, typed ops).
//! - [`exec`]: the dispatch loop ([`Vm`]): frames without Rust recursion,
//!   tail calls, handlers, capture; what is not supported yet is listed
//!   there.
//! - [`value`]: [`Value`] (16 bytes, `Send + Sync`, clone = refcount bump),
//!   records/maps, variants, function and handle placeholders.
//! - [`failure`]: [`Failure`], the recoverable failure outcome.
//! - [`audit`]: the audit trail's observations and the doors that record
//!   them (§13.3, §12.7).
//! - [`display`]: canonical numbers, the text conversion, the interactive
//!   renderer.
//! - [`quote`]: ral and POSIX word quoting.
//! - [`codec`]: the byte/value codecs of §7.3 (JSON, lines, CSV, text) as
//!   pure functions, and their [`codec::CodecError`].
//! - [`caps`]: the capability layers and ral's own checks (§12);
//!   [`sandbox`]: the OS sandbox that confines started programs.
//! - [`builtins`]: the builtin functions, their calling convention ([`Ctx`],
//!   [`BuiltinFn`]) and the registry.

pub mod admit;
pub mod audit;
pub mod builtins;
pub mod caps;
pub mod codec;
pub mod compile;
pub mod display;
pub mod exec;
pub mod failure;
pub mod io;
pub mod job;
pub mod op;
pub mod process;
pub mod quote;
pub mod reach;
mod regalloc;
pub mod runtime;
pub mod sandbox;
pub mod session;
pub mod value;
pub mod waiting;
pub mod walk;

pub use builtins::{registry, BuiltinDef, BuiltinFn, Ctx};
pub use exec::{raise_cancel, CancelProbe, Escape, HostFn, RunError, Stdin, Stdout, Vm};
pub use failure::{Cause, Failure, FailureInfo, Reason, Site, SourceText};
pub use io::SharedBuf;
pub use session::{Context, Mobile, Scope, SlotId};
pub use value::{Func, Handle, Key, Keys, Record, Value, Variant};
