//! The one table of diagnostic codes.
//!
//! Every diagnostic any phase of ral can produce has a stable, kebab-case code
//! registered here with its phase, default severity and a one-line summary. The
//! code is what tests assert on and what `spec/errors.md` documents; the
//! wording of messages may change, the codes may not.

use std::fmt;

/// The phase that reports a code. Batch exit statuses follow it (spec §16.3):
/// lexical and parse errors exit 2, type errors exit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Lex,
    Parse,
    Type,
    Runtime,
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Note,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $phase:ident, $sev:ident, $summary:literal; )*) => {
        /// A stable diagnostic code. `Code::name` is its kebab-case spelling.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every registered code, in table order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The kebab-case name printed in the diagnostic header.
            pub const fn name(self) -> &'static str {
                match self { $(Code::$variant => $name,)* }
            }

            /// The phase that reports this code.
            pub const fn phase(self) -> Phase {
                match self { $(Code::$variant => Phase::$phase,)* }
            }

            /// The severity a diagnostic with this code has unless its reporter says otherwise.
            pub const fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$sev,)* }
            }

            /// One line saying what the code means.
            pub const fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }

            /// Looks a code up by its kebab-case name.
            pub fn from_name(name: &str) -> Option<Code> {
                Code::ALL.iter().copied().find(|c| c.name() == name)
            }
        }
    };
}

codes! {
    // ---- lexical (spec §3, §4.1, §4.2) ----
    /// Source text is not valid UTF-8.
    InvalidUtf8 = "invalid-utf8", Lex, Error, "source text must be valid UTF-8";
    /// A quoted string runs to the end of the input.
    UnclosedString = "unclosed-string", Lex, Error, "a string is never closed";
    /// A backslash escape in a double-quoted string is unknown or malformed.
    InvalidEscape = "invalid-escape", Lex, Error, "unknown or malformed escape in a double-quoted string";
    /// `&`, or a trailing `&`, where a word could start.
    BackgroundOperator = "background-operator", Lex, Error, "`&` is not an operator; use `spawn` to run work concurrently";
    /// `&&` or `||` outside `$[...]`.
    ShellAndOr = "shell-and-or", Lex, Error, "`&&` and `||` are not ral; sequence with `;` or a newline and fall back with `?`";
    /// A `$` or `!` that starts no form outside a string.
    StrayDollar = "stray-sigil", Lex, Error, "`$` or `!` must introduce a variable, an expression or a forced block";
    /// A redirect names a descriptor other than 0, 1 or 2, or `<<` names one other than 0.
    BadDescriptor = "bad-descriptor", Lex, Error, "only standard input (0), output (1) and error (2) can be redirected";
    /// `<<<`, or `<<` not followed by whitespace.
    HereStringForm = "here-string-form", Lex, Error, "a here string is `<< value`, with whitespace after `<<`";
    /// A backtick not followed by a tag name.
    LoneBacktick = "lone-backtick", Lex, Error, "a backtick must be followed by a tag name";

    // ---- parse (spec §3.3–3.7, §4.4–4.6, §5.2, §5.4, §7.4, §8.2, §8.3, §17.1) ----
    /// A token that no form can start or continue here.
    UnexpectedToken = "unexpected-token", Parse, Error, "this token cannot appear here";
    /// An opening delimiter without its closing partner.
    UnclosedDelimiter = "unclosed-delimiter", Parse, Error, "a delimiter is opened but never closed";
    /// A closing delimiter that closes nothing, or closes the wrong opener.
    MismatchedDelimiter = "mismatched-delimiter", Parse, Error, "a closing delimiter does not match the open one";
    /// More than 64 nested forms.
    NestingTooDeep = "nesting-too-deep", Parse, Error, "forms are nested more than 64 deep";
    /// `let` after `|` or `?`.
    LetInChain = "let-in-chain", Parse, Error, "`let` is a statement and cannot follow `|` or `?`";
    /// A newline directly after `?`.
    NewlineAfterQuestion = "newline-after-question", Parse, Error, "the alternative after `?` must start on the same line";
    /// `{ || … }`.
    EmptyParams = "empty-params", Parse, Error, "a parameter list needs at least one pattern";
    /// One pattern binds a name twice.
    DuplicateBinding = "duplicate-binding", Parse, Error, "a pattern binds the same name twice";
    /// A reserved word used as a binding name or parameter.
    ReservedName = "reserved-name", Parse, Error, "a reserved word cannot be bound";
    /// A pattern position holds something that is not a pattern.
    InvalidPattern = "invalid-pattern", Parse, Error, "this is not a pattern";
    /// A tag used as a record or map key, in a literal or a pattern.
    TagAsKey = "tag-as-key", Parse, Error, "a tag is not a key";
    /// A spread after a field, or a second spread, in a record update.
    MisplacedSpread = "misplaced-spread", Parse, Error, "a record update has one leading spread";
    /// One static key written twice in one literal or pattern.
    DuplicateKey = "duplicate-key", Parse, Error, "a key is written twice in one literal";
    /// A bracket literal mixes list items with keyed entries.
    MixedEntries = "mixed-entries", Parse, Error, "a literal mixes list items and keyed entries";
    /// A key that is neither a name, a quoted string nor a variable.
    InvalidKey = "invalid-key", Parse, Error, "this cannot be a key";
    /// One stream bound twice in one redirect list.
    RedirectTwice = "redirect-twice", Parse, Error, "a stream is redirected twice";
    /// `1>&2` or `>&2`.
    RedirectToStderr = "redirect-to-stderr", Parse, Error, "`1>&2` is refused; write diagnostics with `warn`";
    /// A bare word after `<<`.
    BareHereString = "bare-here-string", Parse, Error, "a here string takes a value, not a bare word";
    /// An `if`, `elsif`, `else` or `case` arm that is neither a block nor a name.
    InvalidArm = "invalid-arm", Parse, Error, "an arm must be a block literal or a `$name` holding one";
    /// A `case` with no arms.
    EmptyCase = "empty-case", Parse, Error, "a `case` needs at least one arm";
    /// A `case` naming one tag twice.
    DuplicateArm = "duplicate-arm", Parse, Error, "a `case` names one tag twice";
    /// A `case` arm list entry that is not `` `tag: arm ``.
    CaseArmForm = "case-arm-form", Parse, Error, "a `case` arm is written `` `tag: arm ``";
    /// A bare non-numeral word under arithmetic, ordering or negation in `$[...]`.
    BareWordArithmetic = "bare-word-arithmetic", Parse, Error, "a bare word is text and cannot be used in arithmetic";
    /// `elsif` or `else` with no `if` before it.
    StrayElse = "stray-else", Parse, Error, "`elsif` and `else` continue an `if`";
    /// `^` not followed by a plain name.
    CaretOperand = "caret-operand", Parse, Error, "`^` takes a plain command name";
    /// A form is missing a part it needs (an `if` body, a `try` handler, …).
    MissingPart = "missing-part", Parse, Error, "a form is missing one of its parts";
    /// `return` with more than one operand.
    ReturnArity = "return-arity", Parse, Error, "`return` takes at most one value";
    /// `...` where no spread is allowed.
    SpreadNotAllowed = "spread-not-allowed", Parse, Error, "a spread cannot appear here";
    /// An unknown option key in `within` or `grant` written as syntax.
    ScopeOption = "scope-option", Parse, Error, "this option is not one the form accepts";
    /// `$name` (or a bare head) naming nothing in scope.
    UnboundName = "unbound-name", Type, Error, "a `$name` names no binding in scope";
    /// `$SCRIPT` read where the source is not a script file.
    ScriptOutsideFile = "script-outside-file", Type, Error, "`$SCRIPT` exists only in a script file";
    /// `$echo`: a base handler read as a value.
    BaseHandlerValue = "base-handler-value", Type, Error, "a base handler is a command, not a value";
    /// Two types that must be equal are not.
    TypeMismatch = "type-mismatch", Type, Error, "two types that must agree do not";
    /// A record lacks a field its use needs, or has one its context refuses.
    MissingField = "missing-field", Type, Error, "a record field or variant tag is missing or not allowed";
    /// A non-applicable value in head position or applied to arguments.
    NotAFunction = "not-a-function", Type, Error, "a value that is not a function is applied";
    /// Too many arguments for a function, or a function left waiting where a result is needed.
    Arity = "arity", Type, Error, "a function gets more arguments than it takes";
    /// `...` in the arguments of a value application.
    SpreadIntoValue = "spread-into-value", Type, Error, "a value takes no argument list, so nothing can be spread into it";
    /// A kinded type variable met a type its kind refuses, or two kinds with nothing in common.
    KindMismatch = "kind-mismatch", Type, Error, "a type does not have the kind its use needs";
    /// `==`, `!=`, `equal` or an encoder reached a function or handle.
    EqualityOnFunction = "equality-on-function", Type, Error, "functions and handles are not data";
    /// A splice in a string that is not a Bool, Int, Float or String.
    InterpolationKind = "interpolation-kind", Type, Error, "only Bool, Int, Float and String values interpolate";
    /// A cycle through functions or thunks only.
    InfiniteType = "infinite-type", Type, Error, "a type would contain itself without a data constructor between";
    /// A `case` misses a tag its scrutinee can carry.
    NonExhaustiveCase = "non-exhaustive-case", Type, Error, "a `case` has no arm for a tag its scrutinee can carry";
    /// A value (not a command) as a non-final pipeline stage.
    PipeStageValue = "pipe-stage-value", Type, Error, "a value cannot feed a pipe";
    /// A decoder as a non-final pipeline stage.
    PipeStageDecoder = "pipe-stage-decoder", Type, Error, "a decoder reads a pipe and cannot feed one";
    /// A function still awaiting arguments as a pipeline stage.
    PipeStagePartial = "pipe-stage-partial", Type, Error, "a function awaiting arguments is not a pipeline stage";
    /// A later pipeline stage that redirects its standard input at its root.
    PipeStdinRedirect = "pipe-stdin-redirect", Type, Error, "a later pipeline stage already reads the pipe";
    /// A non-final stage whose result is not `Unit`.
    PipeStageResult = "pipe-stage-result", Type, Error, "a non-final pipeline stage must be a command";
    /// An argument an external command cannot receive as text.
    ExternalArgument = "external-argument", Type, Error, "an external command receives only text arguments";
    /// `fail` with a literal status 0.
    FailStatusZero = "fail-status-zero", Type, Error, "`fail` needs a non-zero status";
    /// A computed index whose container is never fixed as a list or a map.
    AmbiguousIndex = "ambiguous-index", Type, Error, "nothing decides whether a computed index reads a list or a map";
    /// A top-level `let` hides a prelude function or builtin.
    PreludeShadow = "prelude-shadow", Type, Warning, "a top-level binding hides a prelude function or builtin";
    /// A capability profile's return is not a capability record (§12.12).
    CapabilityProfile = "capability-profile", Type, Error, "a capability profile must return a capability record or `()`";

    // ---- runtime (spec §8.5, §16.3) ----
    /// A failure no handler caught ended the program.
    RuntimeFailure = "runtime-failure", Runtime, Error, "a failure no `try` or `?` handled ended the program";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_kebab_case() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let name = code.name();
            assert!(seen.insert(name), "duplicate code name {name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name} is not kebab-case"
            );
            assert_eq!(Code::from_name(name), Some(*code));
        }
    }
}
