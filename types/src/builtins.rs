//! The one builtin signature table.
//!
//! Every builtin, prelude function, base handler and host addition the spec
//! names (§7.3, §8, §10, §11, §14, §15.7), keyed by its spec name, with its
//! type scheme written in the signature language ([`crate::sig`]) and parsed
//! once, on first use of [`builtin_table`].
//!
//! A scheme ends in `Command` exactly when the name writes at full arity;
//! grade-polymorphic bodies are `{ν α}`; names that inhabit every type end in
//! a quantified computation variable (`fail`, `exit`, `diverges`).

use rustc_hash::FxHashMap as HashMap;
use std::sync::OnceLock;

use crate::sig::parse_scheme;
use crate::ty::{Con, Scheme, SchemeNode};

/// Index of a builtin in the table (stable for a build).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BuiltinId(pub u16);

/// How a name takes part in typing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuiltinKind {
    /// A builtin value row: applied one argument at a time, typed by its scheme.
    Builtin,
    /// A ral-written prelude function, typed like a binding of its scheme.
    Prelude,
    /// A base handler (`echo`, `detach`): takes an argv, is no value (`$echo`
    /// is an error), and its scheme is what an arm standing in for it must have.
    BaseHandler,
    /// A decoder: a boundary whose result variables are weak, and refused as a
    /// non-final pipeline stage by its mark.
    Decoder,
    /// Another boundary (`use`, `service-handle`, `_ed-state`, exarch
    /// answers): the variables of its result are made weak.
    Boundary,
}

impl Builtin {
    /// The closed scheme of its signature.
    pub fn scheme(&self) -> &Scheme {
        self.scheme_cell.get_or_init(|| {
            // The table is fixed at build time and a test parses every row,
            // so a failure here is a programming error in this file.
            parse_scheme(self.sig).unwrap_or_else(|e| {
                panic!("builtin `{}`: bad signature `{}`: {e}", self.name, self.sig)
            })
        })
    }

    /// Whether it writes its result to standard output at full arity
    /// (grade w).
    pub fn writes(&self) -> bool {
        ends_in_command(self.scheme())
    }
}

/// Which layer installs the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// The core runtime.
    Core,
    /// The ral-written prelude.
    Prelude,
    /// The `ral` executable (interactive or batch).
    RalHost,
    /// The exarch agent host.
    Exarch,
}

/// One entry of the table.
#[derive(Debug)]
pub struct Builtin {
    /// The spec's name.
    pub name: &'static str,
    /// The signature as written.
    pub sig: &'static str,
    /// The parsed scheme (closed), parsed on first use: start-up does not
    /// pay for the ~170 signatures a program never names.
    scheme_cell: OnceLock<Scheme>,
    /// How the name types.
    pub kind: BuiltinKind,
    /// Who installs it.
    pub layer: Layer,

    /// One line for `help`/`explain`.
    pub doc: &'static str,
}

/// The table: entries in declaration order, with a name index.
#[derive(Debug)]
pub struct BuiltinTable {
    entries: Vec<Builtin>,
    by_name: HashMap<&'static str, BuiltinId>,
}

impl BuiltinTable {
    /// The entry for `name`.
    pub fn get(&self, name: &str) -> Option<&Builtin> {
        self.id(name).and_then(|id| self.entry(id))
    }

    /// The id for `name`.
    pub fn id(&self, name: &str) -> Option<BuiltinId> {
        self.by_name.get(name).copied()
    }

    /// The entry with id `id`.
    pub fn entry(&self, id: BuiltinId) -> Option<&Builtin> {
        self.entries.get(id.0 as usize)
    }

    /// Every entry, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = &Builtin> {
        self.entries.iter()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty (it never is).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// What an arm for a head with no base frame stands in at (§17.7).
pub const EXTERNAL_SIG: &str = "[String] -> Command";
/// What a catch-all handler must be (§17.7).
pub const CATCH_ALL_SIG: &str = "String -> [String] -> Command";
/// The error record `try` handlers receive (§17.7).
pub const ERROR_SIG: &str = "Returns Error";

use BuiltinKind::{BaseHandler as H, Boundary as X, Builtin as B, Decoder as D, Prelude as P};
use Layer::{Core as C, Exarch as E, Prelude as L, RalHost as R};

/// `(name, kind, layer, signature, doc)`; `writes` is derived from the scheme.
type Row = (&'static str, BuiltinKind, Layer, &'static str, &'static str);

const ROWS: &[Row] = &[
    // ---- ambient reads (§10.2) ----
    ("env", B, C, "Returns (Map String)", "The effective environment, without PWD and OLDPWD."),
    ("cwd", B, C, "Returns String", "The logical working directory."),
    ("home", B, C, "Returns String", "The home directory `~` abbreviates."),
    ("user", B, C, "Returns String", "The user name from the effective environment."),
    ("nproc", B, C, "Returns Integer", "The available parallelism, at least 1."),
    ("args", B, C, "Returns [String]", "The program's arguments."),
    // ---- collections and comparison (§14.2) ----
    ("each", B, C, "forall a b e. {a -> e b} -> [a] -> Returns Unit", "Runs a body on each element for its effects, streaming its output."),
    ("map", B, C, "forall a b. {a -> Returns b} -> [a] -> Returns [b]", "The list of a function's results on each element."),
    ("filter", B, C, "forall a. {a -> Returns Bool} -> [a] -> Returns [a]", "The elements a predicate accepts."),
    ("fold", B, C, "forall a b e. {b -> a -> e b} -> b -> [a] -> Returns b", "A left fold; the body may be of either grade."),
    ("sort-list", B, C, "forall a:comparable. [a] -> Returns [a]", "Sorts numbers numerically or strings lexicographically."),
    ("sort-list-by", B, C, "forall a k:comparable. {a -> Returns k} -> [a] -> Returns [a]", "Sorts by a key function."),
    ("range", B, C, "Integer -> Integer -> Returns [Integer]", "The half-open integer range [start, end)."),
    ("length", B, C, "forall a:sized. a -> Returns Integer", "Length of a string (characters), bytes, list or map."),
    ("is-empty", B, C, "forall a:sized. a -> Returns Bool", "Whether a string, bytes, list or map is empty."),
    ("keys", B, C, "forall a. Map a -> Returns [String]", "A map's keys, sorted."),
    ("has", B, C, "forall a. Map a -> String -> Returns Bool", "Whether a map has a key."),
    ("equal", B, C, "forall a:data. a -> a -> Returns Bool", "Structural equality of two data values of one type."),
    ("lt", B, C, "forall a:comparable. a -> a -> Returns Bool", "Numeric or lexicographic less-than."),
    ("gt", B, C, "forall a:comparable. a -> a -> Returns Bool", "Numeric or lexicographic greater-than."),
    // ---- strings, numbers, text (§14.3) ----
    ("upper", B, C, "String -> Returns String", "Upper case."),
    ("lower", B, C, "String -> Returns String", "Lower case."),
    ("dedent", B, C, "String -> Returns String", "Strips the common leading indentation."),
    ("slice", B, C, "String -> Integer -> Integer -> Returns String", "The substring between two character positions."),
    ("intercalate", B, C, "String -> [String] -> Returns String", "Joins strings with a separator."),
    ("string-replace", B, C, "String -> String -> String -> Returns String", "Replaces the one literal match; fails unless exactly one."),
    ("re-match", B, C, "String -> String -> Returns Bool", "Whether a regex matches."),
    ("re-split", B, C, "String -> String -> Returns [String]", "Splits by a regex."),
    ("re-find-match", B, C, "String -> String -> Returns (Option String)", "The first regex match, if any."),
    ("re-find-matches", B, C, "String -> String -> Returns [String]", "Every regex match."),
    ("re-replace", B, C, "String -> String -> String -> Returns String", "Replaces the first regex match."),
    ("re-replace-all", B, C, "String -> String -> String -> Returns String", "Replaces every regex match."),
    ("ral-quote", B, C, "String -> Returns String", "Renders a string as one ral word that reads back identically."),
    ("posix-quote", B, C, "String -> Returns String", "Quotes a string as one POSIX shell word."),
    ("posix-split", B, C, "String -> Returns [String]", "Splits POSIX shell words."),
    ("int", B, C, "forall a:comparable. a -> Returns Integer", "Converts a number or numeral to an Int."),
    ("float", B, C, "forall a:comparable. a -> Returns Float", "Converts a number or numeral to a finite Float."),
    ("str", B, C, "forall a:data. a -> Returns String", "The text form of any data value."),
    ("round", B, C, "Float -> Integer -> Returns Float", "Rounds half away from zero to 0-308 places."),
    ("floor", B, C, "Float -> Returns Integer", "Rounds a Float down to an Int."),
    ("ceil", B, C, "Float -> Returns Integer", "Rounds a Float up to an Int."),
    ("trunc", B, C, "Float -> Returns Integer", "Rounds a Float toward zero to an Int."),
    ("lines", B, C, "String -> Returns [String]", "Splits a string by the line rule."),
    // ---- paths and filesystem (§14.4) ----
    ("absolute-path", B, C, "String -> Returns String", "Lexical absolutisation against the logical cwd."),
    ("resolve-path", B, C, "String -> Returns String", "Canonicalises through the filesystem; the path must exist."),
    ("abbreviate-home", B, C, "String -> Returns String", "Folds a leading home directory to `~`."),
    ("list-dir", B, C, "String -> Returns [FileInfo]", "A directory's entries as records."),
    ("file-info", B, C, "String -> Returns FileInfo", "lstat-style metadata of a path."),
    ("glob", B, C, "String -> Returns [String]", "Expands a glob pattern."),
    ("exists", B, C, "String -> Returns Bool", "Whether a path exists (a dangling link does)."),
    ("is-file", B, C, "String -> Returns Bool", "Whether a path is a regular file, through links."),
    ("is-dir", B, C, "String -> Returns Bool", "Whether a path is a directory, through links."),
    ("is-link", B, C, "String -> Returns Bool", "Whether a path is a symbolic link."),
    ("is-readable", B, C, "String -> Returns Bool", "Whether a path is readable, through links."),
    ("is-writable", B, C, "String -> Returns Bool", "Whether a path is writable, through links."),
    ("temp-dir", B, C, "Returns String", "Creates a temporary directory and returns its path."),
    ("temp-file", B, C, "Returns String", "Creates a temporary file and returns its path."),
    // ---- codecs (§7.3, §14.5) ----
    ("from-bytes", D, C, "Returns Bytes", "Reads all input as bytes."),
    ("from-string", D, C, "Returns String", "Reads all input as strict UTF-8."),
    ("from-line", D, C, "Returns String", "Reads input minus one final LF or CRLF."),
    ("from-lines", D, C, "Returns [String]", "Reads input as a list of lines."),
    ("from-json", D, C, "forall a:data. Returns a", "Decodes JSON, checked against its use."),
    ("from-jsonl", D, C, "forall a:data. Returns [a]", "Decodes one JSON value per non-blank line."),
    ("from-json-at", D, C, "forall a:data. [String] -> Returns a", "Decodes JSON and selects by RFC 6901 reference tokens."),
    ("from-csv", D, C, "Returns [Map String]", "Decodes CSV as header-keyed maps of text."),
    ("to-bytes", B, C, "Bytes -> Command", "Writes bytes unchanged."),
    ("ints-to-bytes", B, C, "[Integer] -> Command", "Writes the bytes numbered 0-255."),
    ("to-string", B, C, "forall a:data. a -> Command", "Writes a value's text form."),
    ("to-line", B, C, "forall a:data. a -> Command", "Writes a value's text form and a newline."),
    ("to-lines", B, C, "forall a:data. [a] -> Command", "Writes each element's text form and a newline."),
    ("to-json", B, C, "forall a:data. a -> Command", "Writes a value as JSON."),
    ("to-jsonl", B, C, "forall a:data. [a] -> Command", "Writes each element as one line of JSON."),
    ("to-csv", B, C, "[Map String] -> Command", "Writes maps of text as CSV."),
    ("fold-lines", B, C, "forall b e. {b -> String -> e b} -> b -> Returns b", "Folds over input lines in bounded memory."),
    // ---- failure and session control (§8, §14.6) ----
    ("fail", B, C, "forall r c. [status: Integer, message: String, ..r] -> c", "Raises a recoverable failure from an error record."),
    ("exit", B, C, "forall c. Integer -> c", "Ends the program with a status; not caught by `try`."),
    ("quit", B, C, "forall c. Integer -> c", "The same as `exit`."),
    ("diverges", B, C, "forall c. c", "Inhabits every type and grade (internal)."),
    ("_admit", B, C, "forall a. String -> String -> a -> Returns a", "Admits a boundary's value against the type its program uses it at (internal)."),
    ("cd", B, C, "String -> Returns Unit", "Changes the logical working directory."),
    ("alias", B, C, "forall c. String -> {c} -> Returns Unit", "Installs a persistent handler; the arm is checked on install."),
    ("unalias", B, C, "String -> Returns Unit", "Removes an alias."),
    ("use", X, C, "forall r. String -> Returns [..r]", "Loads a module and returns its public bindings as a record."),
    ("ask", B, C, "String -> Returns String", "Prompts on the controlling terminal and reads one line."),
    ("echo", H, C, "[String] -> Command", "Writes its arguments separated by spaces, then a newline."),
    ("warn", B, C, "String -> Returns Unit", "Writes one line to standard error."),
    ("surface", B, C, "forall a:data. a -> Returns Unit", "Sends a structured event to the host's surface sink."),
    ("clear", B, C, "Command", "Clears the terminal."),
    ("reset", B, C, "Command", "Resets the terminal."),
    ("help", H, C, "[String] -> Command", "Prints the catalogue of builtins and prelude functions, or the entries of the names given."),
    ("explain", B, C, "String -> Command", "Prints one name's documentation, type and resolution."),
    // ---- concurrency (§11) ----
    ("spawn", B, C, "forall a e. {e a} -> Returns (Handle a)", "Starts a session-owned worker."),
    ("await", B, C, "forall a. Handle a -> Returns (Await a)", "Waits for a worker; re-raises its failure."),
    ("poll", B, C, "forall a. Handle a -> Returns <`pending [stdout: Bytes, stderr: Bytes] | `settled [stdout: Bytes, stderr: Bytes, outcome: Outcome a]>", "Samples a worker without waiting."),
    ("race", B, C, "forall a. [Handle a] -> Returns (Await a)", "The first worker to settle; cancels the rest."),
    ("cancel", B, C, "forall a. Handle a -> Returns Unit", "Cancels a worker."),
    // ---- prelude (§14.2-§14.6) ----
    ("get", P, L, "forall a. Map a -> String -> a -> Returns a", "Map lookup with a default."),
    ("for", P, L, "forall a b e. [a] -> {a -> e b} -> Returns Unit", "`each` with the list first."),
    ("reduce", P, L, "forall a. {a -> a -> Returns a} -> [a] -> Returns a", "A fold seeded by the first element."),
    ("reverse", P, L, "forall a. [a] -> Returns [a]", "Reverses a list."),
    ("last", P, L, "forall a. [a] -> Returns a", "The last element."),
    ("take", P, L, "forall a. Integer -> [a] -> Returns [a]", "The first n elements."),
    ("drop", P, L, "forall a. Integer -> [a] -> Returns [a]", "All but the first n elements."),
    ("take-while", P, L, "forall a. {a -> Returns Bool} -> [a] -> Returns [a]", "The longest prefix satisfying a predicate."),
    ("drop-while", P, L, "forall a. {a -> Returns Bool} -> [a] -> Returns [a]", "The rest after that prefix."),
    ("first", P, L, "forall a. {a -> Returns Bool} -> [a] -> Returns a", "The first element satisfying a predicate; fails if none."),
    ("option-or", P, L, "forall a. a -> Option a -> Returns a", "Unwraps an option, with a default."),
    ("elem", P, L, "forall a:data. a -> [a] -> Returns Bool", "Whether a value is in a list."),
    ("contains", P, L, "forall a:data. [a] -> a -> Returns Bool", "Whether a list contains a value."),
    ("nub", P, L, "forall a:data. [a] -> Returns [a]", "Removes duplicates, keeping first occurrences."),
    ("zip", P, L, "forall a b. [a] -> [b] -> Returns [[left: a, right: b]]", "Pairs elements positionally."),
    ("cross", P, L, "forall a b. [a] -> [b] -> Returns [[left: a, right: b]]", "The cartesian product."),
    ("flat-map", P, L, "forall a b. {a -> Returns [b]} -> [a] -> Returns [b]", "Maps then concatenates."),
    ("enumerate", P, L, "forall a. [a] -> Returns [[index: Integer, value: a]]", "Pairs each element with its index."),
    ("concat", P, L, "forall a. [[a]] -> Returns [a]", "Flattens a list of lists."),
    ("sum", P, L, "forall a:number. [a] -> Returns a", "The sum of a list of numbers."),
    ("max", P, L, "forall a:comparable. a -> a -> Returns a", "The larger of two values."),
    ("min", P, L, "forall a:comparable. a -> a -> Returns a", "The smaller of two values."),
    ("maximum", P, L, "forall a:comparable. [a] -> Returns a", "The largest element."),
    ("minimum", P, L, "forall a:comparable. [a] -> Returns a", "The smallest element."),
    ("group-by", P, L, "forall a. {a -> Returns String} -> [a] -> Returns (Map [a])", "Groups elements by a key."),
    ("median", P, L, "forall a:number. [a] -> Returns Float", "The median of a list of numbers."),
    ("median-by", P, L, "forall a n:number. {a -> Returns n} -> [a] -> Returns Float", "The median of a key over a list."),
    ("words", P, L, "String -> Returns [String]", "Splits on whitespace."),
    ("from-words", P, L, "[String] -> Returns String", "Joins with single spaces."),
    ("indent", P, L, "Integer -> String -> Returns String", "Indents every line by n spaces."),
    ("repeat", P, L, "Integer -> String -> Returns String", "Repeats a string n times."),
    ("pad-left", P, L, "Integer -> String -> Returns String", "Pads on the left to a width."),
    ("pad-right", P, L, "Integer -> String -> Returns String", "Pads on the right to a width."),
    ("styled", P, L, "String -> String -> Returns String", "Wraps text in an ANSI style when colour is on."),
    ("file-empty", P, L, "String -> Returns Bool", "Whether a file is empty."),
    ("line-count", P, L, "String -> Returns Integer", "Counts a file's lines in bounded memory."),
    ("extension", P, L, "String -> Returns (Option String)", "The extension of a path's last component, if any."),
    ("map-lines", P, L, "forall a:scalar. {String -> Returns a} -> Command", "Writes a function's result for each input line."),
    ("filter-lines", P, L, "{String -> Returns Bool} -> Command", "Writes the input lines a predicate accepts."),
    ("each-line", P, L, "forall a e. {String -> e a} -> Returns Unit", "Runs a body on each input line for its effects."),
    ("par", P, L, "forall a b e. {a -> e b} -> [a] -> Integer -> Returns [b]", "A bounded parallel map, in order."),
    ("is-done", P, L, "forall a. Handle a -> Returns Bool", "Whether a worker has settled."),
    ("attempt", P, L, "forall a e. {e a} -> Returns Unit", "Runs a block, suppressing its failure."),
    ("succeeds", P, L, "forall a e. {e a} -> Returns Bool", "Whether a block succeeds."),
    ("defer", P, L, "forall a e. {e a} -> Returns (Handle (Report a))", "Spawns an audited block."),
    ("retry", P, L, "forall a e. Integer -> {e a} -> e a", "Runs a block up to n times until it succeeds."),
    ("commands", P, L, "forall a. Report a -> Returns [CommandObs]", "The command observations of an audit report."),
    ("succeeded", P, L, "forall a. Report a -> Returns Bool", "Whether an audit report's outcome is `ok."),
    ("bytes-to-string", P, L, "Bytes -> Returns String", "Decodes bytes as strict UTF-8."),
    // ---- ral host (§11.5, §15) ----
    ("watch", B, R, "forall a e. String -> {e a} -> Returns (Handle a)", "Starts a worker whose output streams live with a label."),
    ("load-plugin", B, R, "String -> Returns Unit", "Loads a plugin by name or path."),
    ("unload-plugin", B, R, "String -> Returns Unit", "Removes a plugin's hooks, keybindings and aliases."),
    ("_ed-get", B, R, "Returns [text: String, cursor: Integer, keymap: String]", "The editor's text, cursor and keymap."),
    ("_ed-text", B, R, "Returns String", "The editor's whole buffer."),
    ("_ed-cursor", B, R, "Returns Integer", "The cursor position."),
    ("_ed-keymap", B, R, "Returns String", "The active keymap."),
    ("_ed-lbuffer", B, R, "Returns String", "The text left of the cursor."),
    ("_ed-set", B, R, "[text: <`keep | `set String>, cursor: <`keep | `set Integer>] -> Returns Unit", "Replaces the text and/or cursor."),
    ("_ed-set-lbuffer", B, R, "String -> Returns Unit", "Replaces the text left of the cursor."),
    ("_ed-insert", B, R, "String -> Returns Unit", "Inserts at the cursor."),
    ("_ed-push", B, R, "Returns Unit", "Stashes the buffer and clears it."),
    ("_ed-accept", B, R, "Returns Unit", "Executes the buffer when the handler returns."),
    ("_ed-history", B, R, "String -> Integer -> Returns [String]", "Matching history, newest first."),
    ("_ed-parse", B, R, "Returns [words: [String], current: Integer, offset: Integer]", "The words of the command at the cursor."),
    ("_ed-ghost", B, R, "String -> Returns Unit", "Sets the ghost text."),
    ("_ed-highlight", B, R, "[[start: Integer, end: Integer, style: String]] -> Returns Unit", "Replaces the highlight spans."),
    ("_ed-state", X, R, "forall a:data. a -> {a -> Returns a} -> Returns a", "Reads, updates and returns the plugin's persistent cell."),
    ("_ed-tui", B, R, "forall e a. {e a} -> Returns [output: String, status: Integer]", "Runs a block with the terminal."),
    ("_ed-clipboard", B, R, "String -> Returns Bool", "Attempts an OSC 52 clipboard write."),
    ("_ed-hyperlink", B, R, "String -> String -> Returns String", "An OSC 8 hyperlink, or the plain text."),
    // ---- exarch (§11.5, §13.3, §7.3) ----
    ("detach", H, E, "[String] -> Returns [pid: Integer, desc: String]", "Starts a process the session gives away; returns a receipt."),
    ("service", B, E, "forall a e. String -> {e a} -> Returns (Handle a)", "Starts a durable session worker."),
    ("service-handle", X, E, "forall a. String -> Returns (Handle a)", "Recovers a service's handle by id."),
    ("exarch-agents", X, E, "forall a:data. Returns a", "The host's answer about agents (checked boundary)."),
    ("exarch-pins", X, E, "forall a:data. Returns a", "The host's answer about pins (checked boundary)."),
    ("exarch-transcript", X, E, "forall a:data. Returns a", "The host's transcript (checked boundary)."),
    ("grep-files", B, E, "String -> String -> Returns [String]", "Searches files, raising a `grep` observation."),
];

/// Rows that exist only in a build with the `fault-injection` feature: names
/// a test host uses to reach code paths no ral program can (ral-host's
/// panic checkpoint). Never part of a normal build, so no program can name
/// them there.
#[cfg(feature = "fault-injection")]
const FAULT_ROWS: &[Row] = &[(
    "__panic",
    B,
    R,
    "Returns Unit",
    "Panics inside evaluation (fault-injection builds only).",
)];
#[cfg(not(feature = "fault-injection"))]
const FAULT_ROWS: &[Row] = &[];

/// Every row of this build: the spec's, then the fault-injection ones.
fn all_rows() -> impl Iterator<Item = &'static Row> {
    ROWS.iter().chain(FAULT_ROWS)
}

/// Whether a scheme ends, after all its arrows, in `F_w Unit`.
pub fn ends_in_command(scheme: &Scheme) -> bool {
    let mut cur = scheme.root();
    for _ in 0..64 {
        match scheme.node(cur) {
            Some(SchemeNode::Con(Con::Arrow { result, .. })) => cur = result,
            Some(SchemeNode::Con(Con::Returns { grade, value })) => {
                return matches!(scheme.node(grade), Some(SchemeNode::Con(Con::Write)))
                    && matches!(scheme.node(value), Some(SchemeNode::Con(Con::Unit)));
            }
            Some(_) | None => return false,
        }
    }
    false
}

fn build() -> BuiltinTable {
    let n_rows = ROWS.len() + FAULT_ROWS.len();
    let mut entries = Vec::with_capacity(n_rows);
    let mut by_name = HashMap::with_capacity_and_hasher(n_rows, Default::default());
    for &(name, kind, layer, sig, doc) in all_rows() {
        let id = BuiltinId(entries.len() as u16);
        by_name.insert(name, id);
        entries.push(Builtin {
            name,
            sig,
            scheme_cell: OnceLock::new(),
            kind,
            layer,
            doc,
        });
    }
    BuiltinTable { entries, by_name }
}

/// The table, built on first use.
pub fn builtin_table() -> &'static BuiltinTable {
    static TABLE: OnceLock<BuiltinTable> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// The raw rows of this build, for tests that check the table itself.
#[cfg(test)]
pub(crate) fn rows() -> &'static [Row] {
    static ALL: OnceLock<Vec<Row>> = OnceLock::new();
    ALL.get_or_init(|| all_rows().copied().collect())
}
