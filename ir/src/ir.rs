//! The IR: what the checker's elaborated program lowers to, and what the VM
//! compiler consumes.
//!
//! Design:
//!
//! - **Functions.** A turn lowers to a [`Module`]: one [`Func`] per block or
//!   lambda in the source plus the turn's `main`. A multi-parameter block is one
//!   function of that arity (the VM builds partial applications; currying is
//!   `{|p q| M} = {|p| {|q| M}}` observationally). A plain block is a function
//!   of arity 0 (a thunk).
//! - **A-normal form.** Every operand of a computation is an [`Operand`]: a
//!   local, a captured variable, a session global, a builtin or a constant, so
//!   evaluation order is the order of [`Stmt`]s and no expression nests
//!   another computation.
//! - **Resolved names.** A `$name` is one of: [`Operand::Local`] (a binding of
//!   this function), [`Operand::Captured`] (a free variable copied into the
//!   closure when it was made; bindings are immutable, so capture is by
//!   value), [`Operand::Global`] (a session binding: from an earlier turn, or a
//!   top-level `let` of this turn), or [`Operand::Builtin`].
//! - **Top-level bindings** are installed with [`Expr::Define`], the install
//!   chokepoint: each top-level `let` lands as its statement completes (spec
//!   §5.6). A later reference to it is an [`Operand::Global`] naming that
//!   definition, so shadowing never changes what an earlier closure sees.
//! - **Explicit control flow.** Branching, fallback, scopes and pipelines are
//!   structured nodes holding [`Block`]s ([`Expr::If`], [`Expr::Case`],
//!   [`Expr::Chain`], [`Expr::Try`], …); every place a command's output becomes
//!   its value is an explicit [`Expr::Capture`] that the checker decided.
//! - **Typed operations.** Arithmetic and comparison carry the [`NumKind`] or
//!   [`OrdKind`] the checker fixed, so the VM emits `add-int`/`lt-float`
//!   without dynamic type tests where it can.
//! - **Local recursion.** Named blocks of one statement list that refer to
//!   each other, in any order, form
//!   a [`Expr::MakeRecGroup`]: one shared capture environment, members made
//!   from it on demand ([`Operand::Sibling`]), so no reference cycle exists.

use std::sync::Arc;

use ral_syntax::{SourceId, Span};
use ral_types::BuiltinId;

/// A local variable of one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

/// A function of one module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// A top-level definition made by this turn (the index of the `let` among the
/// turn's definitions, in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DefId(pub u32);

/// One lowered turn (or script).
#[derive(Clone, Debug)]
pub struct Module {
    pub source: SourceId,
    /// Every function; `funcs[id.0]` has that id.
    pub funcs: Vec<Func>,
    /// The turn's top-level code (arity 0, no captures).
    pub main: FuncId,
    /// The top-level definitions in the order their statements appear.
    pub defs: Vec<Def>,
}

/// A top-level `let`-bound name of this turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Def {
    pub id: DefId,
    pub name: String,
    pub span: Span,
    /// The closed scheme the checker gave it: what the session's type
    /// environment holds once it lands (a `use` run after it, and
    /// `explain`, read it).
    pub entry: Option<ral_types::EnvEntry>,
}

#[derive(Clone, Debug)]
pub struct Func {
    pub id: FuncId,
    /// The name it was bound to, for traces (`None` for anonymous blocks).
    pub name: Option<String>,
    /// Parameters in application order; patterns are destructured by the
    /// body's first statements.
    pub params: Vec<LocalId>,
    /// The parameters as written (`x`, `_`, `[a, ...rest]`), for the text
    /// conversion of a closure (`<|x y| block>`, §4.9, §6.6); empty for a
    /// function the lowering made itself.
    pub param_names: Vec<String>,
    /// What the closure copies in when it is made, in order; the body reads
    /// capture `i` as [`Operand::Captured`]`(i)`.
    pub captures: Vec<CaptureFrom>,
    /// How many locals the body uses (ids `0..n_locals`).
    pub n_locals: u32,
    pub body: Block,
    pub span: Span,
}

/// Where a captured value comes from, in the function that makes the closure.
#[derive(Clone, Debug, PartialEq)]
pub enum CaptureFrom {
    Local(LocalId),
    Captured(u32),
    /// A member of the maker's own recursive group (added by lowering: a
    /// closure nested in a group member that refers to a sibling).
    Sibling(u32),
}

/// A sequence of statements and the value it produces.
#[derive(Clone, Debug)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    /// The block's value (its last statement's); [`Operand::Unit`] when empty.
    pub result: Operand,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    /// Where the result goes; `None` discards it (its bytes still flow).
    pub dst: Option<LocalId>,
    pub expr: Expr,
    pub span: Span,
}

/// A value that needs no computation.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Unit,
    Const(Const),
    Local(LocalId),
    Captured(u32),
    /// A session binding: an earlier turn's (`def: None`, looked up by name
    /// when the turn is compiled) or this turn's top-level definition.
    Global {
        name: String,
        def: Option<DefId>,
    },
    /// A member of the innermost enclosing recursive group.
    Sibling(u32),
    Builtin(BuiltinId),
    /// `$SCRIPT`.
    Script,
}

/// A literal constant.
#[derive(Clone, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Arc<str>),
}

/// Number representation an arithmetic operation works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumKind {
    Int,
    Float,
    /// Not fixed by the checker (a polymorphic `number` variable).
    Generic,
}

/// What an ordering compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrdKind {
    Int,
    Float,
    Str,
    Generic,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Gt,
    Le,
    Ge,
}

/// A computation.
#[derive(Clone, Debug)]
pub enum Expr {
    /// The operand itself.
    Value(Operand),
    /// Installs a top-level binding into the session (the chokepoint, §5.6).
    Define {
        def: DefId,
        value: Operand,
    },
    /// Matches `value` against `pattern` all or nothing, binding locals;
    /// a mismatch is a runtime failure and binds nothing.
    Destructure {
        value: Operand,
        pattern: Pat,
    },

    // ---- data ----
    MakeList(Vec<Part>),
    /// A record literal: static keys (sorted by the VM), or a record update
    /// `[...$base, k: v]` when `base` is set.
    MakeRecord {
        base: Option<Operand>,
        fields: Vec<(Arc<str>, Operand)>,
    },
    /// A map literal: explicit entries win over spreads, the first spread wins
    /// among spreads (§4.5).
    MakeMap(Vec<MapPart>),
    MakeVariant {
        tag: Arc<str>,
        payload: Option<Operand>,
    },
    MakeClosure {
        func: FuncId,
        captures: Vec<Operand>,
    },
    /// Makes the closures of a local recursive group; `dsts[i]` receives
    /// member `funcs[i]`.
    MakeRecGroup {
        funcs: Vec<FuncId>,
        captures: Vec<Operand>,
        dsts: Vec<LocalId>,
    },
    /// `"…"`: text parts and scalar splices rendered and joined.
    Interp(Vec<InterpPart>),
    /// `base[key]`.
    Index {
        base: Operand,
        key: Operand,
        kind: IndexKind,
    },

    // ---- operators (`$[...]`) ----
    Arith {
        op: ArithOp,
        kind: NumKind,
        lhs: Operand,
        rhs: Operand,
    },
    Neg {
        kind: NumKind,
        operand: Operand,
    },
    Not(Operand),
    Compare {
        op: CmpOp,
        kind: OrdKind,
        lhs: Operand,
        rhs: Operand,
    },
    /// Structural equality on data (`==`, `!=` with `negate`).
    Equal {
        lhs: Operand,
        rhs: Operand,
        negate: bool,
    },

    // ---- application ----
    /// Applies a function value to arguments (partial and over-application
    /// are the VM's). `tail` marks a call in tail position.
    Call {
        func: Operand,
        args: Vec<Operand>,
        tail: bool,
    },
    /// A call whose argument list holds spreads (`f a ...$xs`, §6.6; added
    /// by lowering): the VM applies each element of a spread as an argument,
    /// in order.
    CallSpread {
        func: Operand,
        args: Vec<Part>,
        tail: bool,
    },
    /// Forces a thunk (`!$b`, a bare block name as a head).
    Force {
        thunk: Operand,
        tail: bool,
    },
    /// Dispatches a command through the handler stack and on to an external
    /// program or base handler, with its rendered argument list.
    Exec {
        head: ExecHead,
        args: Vec<Part>,
        redirects: Vec<Redirect>,
    },

    // ---- control ----
    If {
        cond: Operand,
        then: Block,
        otherwise: Block,
    },
    /// Applies the arm of the variant's tag to its payload (`()` if none).
    Case {
        scrutinee: Operand,
        arms: Vec<CaseArm>,
    },
    /// `a ? b ? c`: the first alternative that succeeds.
    Chain(Vec<Block>),
    Try {
        body: Block,
        error: LocalId,
        handler: Block,
    },
    Guard {
        body: Block,
        cleanup: Block,
    },
    Within {
        options: Operand,
        body: Block,
    },
    Grant {
        caps: Operand,
        body: Block,
    },
    Audit {
        body: Block,
    },
    /// Runs a body with redirects that are not part of an [`Expr::Exec`].
    Redirected {
        body: Block,
        redirects: Vec<Redirect>,
    },
    /// `stage | stage | …`: each stage runs with the previous one's output as
    /// its input; the value is the last stage's.
    Pipeline(Vec<Block>),
    /// The output of `body` becomes its value: strict UTF-8, one final
    /// newline removed (§7.2). Inserted only where the checker said so.
    Capture(Block),
}

/// How a command head dispatches (spec §6.2–6.3).
#[derive(Clone, Debug, PartialEq)]
pub enum ExecHead {
    /// A bare name with no binding: handlers, then the base handler, then the
    /// catch-all, then `PATH`.
    Name(String),
    /// A base handler known statically (`echo`).
    Base(BuiltinId),
    /// `^name`: external lookup only.
    External(String),
    /// `./x`, `/x`, `~/x`: that file.
    Path(Operand),
}

/// An item of a list literal or argument list.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    One(Operand),
    Spread(Operand),
}

#[derive(Clone, Debug, PartialEq)]
pub enum MapPart {
    Entry { key: Operand, value: Operand },
    Spread(Operand),
}

#[derive(Clone, Debug, PartialEq)]
pub enum InterpPart {
    Text(Arc<str>),
    Home,
    Value(Operand),
}

/// What an index reads, as far as the checker decided.
#[derive(Clone, Debug, PartialEq)]
pub enum IndexKind {
    /// A list by `Int`.
    List,
    /// A record field.
    Field(Arc<str>),
    /// A map by `String` key.
    Map,
    /// Decided at run time by the container's kind.
    Dynamic,
}

#[derive(Clone, Debug)]
pub struct CaseArm {
    pub tag: Arc<str>,
    /// The arm's payload parameter.
    pub payload: LocalId,
    pub body: Block,
}

/// A binding pattern (spec §5.2).
#[derive(Clone, Debug, PartialEq)]
pub enum Pat {
    Wildcard,
    Bind(LocalId),
    List {
        items: Vec<Pat>,
        rest: Option<Option<LocalId>>,
    },
    Fields(Vec<(Arc<str>, Pat)>),
}

/// A redirect with its target already evaluated to an operand.
#[derive(Clone, Debug, PartialEq)]
pub struct Redirect {
    /// 0, 1 or 2.
    pub fd: u8,
    pub kind: RedirectKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RedirectKind {
    Write(Operand),
    Stream(Operand),
    Append(Operand),
    Read(Operand),
    Here(Operand),
    /// `2>&1`.
    ErrToOut,
    /// `N>&M` other than `2>&1` (added by lowering): send `fd` where
    /// descriptor `M` goes.
    Dup(u8),
}
