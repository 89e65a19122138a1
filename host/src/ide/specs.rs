//! Completion specs: what a command's arguments are (its subcommands, its
//! flags, and what its other words name), as data.
//!
//! A spec is a JSON file named after the command (`git.json`):
//!
//! ```json
//! {
//!   "name": "git",
//!   "description": "the content tracker",
//!   "flags": [
//!     {"name": ["-C"], "description": "run as if started in this directory", "arg": "directories"},
//!     {"name": "--version", "description": "print the version"}
//!   ],
//!   "subcommands": [
//!     {"name": ["switch", "sw"], "description": "switch branches",
//!      "args": {"command": ["git", "branch", "--format=%(refname:short)"]}}
//!   ]
//! }
//! ```
//!
//! - `name`: a string or a list of strings (the first is shown; the others
//!   are aliases). Required at every level.
//! - `description`: shown beside the candidate.
//! - `flags`: each with `name`, `description`, and `arg` when the flag
//!   takes a value in the next word (or after `=`).
//! - `subcommands`: specs, recursively; offered in the first argument
//!   position of their parent.
//! - `args` (and a flag's `arg`): what the other words are. One source or
//!   a list of them: `"files"`, `"directories"`, `"commands"`, `"none"`,
//!   `{"values": [...]}` (fixed words, each a string or a `{"name",
//!   "description"}` pair), or `{"command": [...]}` (a program run in the
//!   working directory whose output lines are the words). Without `args`,
//!   a command with subcommands offers only them in its first position,
//!   and files elsewhere.
//!
//! An unknown key is an error naming the key and the keys there are, so a
//! misspelling does not silently do nothing. The specs shipped with ral
//! (`host/completions/`) are built into the binary; the interactive host
//! reads its user's from the configuration directory first, and for any
//! other command derives a spec from its `--help` text ([`from_help`]).
//!
//! [`offers`] reads the words already typed after the command against a
//! spec (walking subcommands, skipping flags and their values) and says
//! what the word being typed may be.

use serde_json::{json, Map, Value};

/// A command's (or a subcommand's) spec.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// The name and its aliases (at least one).
    pub names: Vec<String>,
    pub description: String,
    pub flags: Vec<Flag>,
    pub subcommands: Vec<Spec>,
    /// What other words are; `None` for the default (see the module docs).
    pub args: Option<Vec<Source>>,
}

/// A flag.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flag {
    pub names: Vec<String>,
    pub description: String,
    /// What its value is, when it takes one.
    pub arg: Option<Vec<Source>>,
}

/// Where the words of an argument come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Files,
    Directories,
    Commands,
    /// Nothing to offer (free text).
    Nothing,
    Values(Vec<Word>),
    /// A program whose output lines are the words.
    Command(Vec<String>),
}

/// A fixed word and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub description: String,
}

/// What the word being typed may be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offer {
    Words(Vec<Word>),
    Files,
    Directories,
    Commands,
    /// Run this program; its output lines are words.
    Run(Vec<String>),
}

/// The shipped specs, by command name.
const SHIPPED: &[(&str, &str)] = &[
    ("cargo", include_str!("../../completions/cargo.json")),
    ("cd", include_str!("../../completions/cd.json")),
    ("git", include_str!("../../completions/git.json")),
    ("mkdir", include_str!("../../completions/mkdir.json")),
    ("rmdir", include_str!("../../completions/rmdir.json")),
];

/// The names of the shipped specs.
pub fn shipped_names() -> impl Iterator<Item = &'static str> {
    SHIPPED.iter().map(|(n, _)| *n)
}

/// The text of the shipped spec for `command`.
pub fn shipped_text(command: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(n, _)| *n == command)
        .map(|(_, text)| *text)
}

/// The shipped spec for `command` (read once per process; a test checks
/// that every shipped spec reads).
pub fn shipped(command: &str) -> Option<&'static Spec> {
    static READ: std::sync::OnceLock<Vec<(&'static str, Spec)>> = std::sync::OnceLock::new();
    READ.get_or_init(|| {
        SHIPPED
            .iter()
            .filter_map(|(n, text)| Some((*n, Spec::from_json(text).ok()?)))
            .collect()
    })
    .iter()
    .find(|(n, _)| *n == command)
    .map(|(_, s)| s)
}

impl Spec {
    /// Reads a spec file's text.
    pub fn from_json(text: &str) -> Result<Spec, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        spec(&v, "the spec")
    }

    /// The spec as JSON (what [`Spec::from_json`] reads back).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.names));
        if !self.description.is_empty() {
            m.insert("description".into(), json!(self.description));
        }
        if !self.flags.is_empty() {
            let flags: Vec<Value> = self
                .flags
                .iter()
                .map(|f| {
                    let mut fm = Map::new();
                    fm.insert("name".into(), json!(f.names));
                    if !f.description.is_empty() {
                        fm.insert("description".into(), json!(f.description));
                    }
                    if let Some(a) = &f.arg {
                        fm.insert("arg".into(), sources_json(a));
                    }
                    Value::Object(fm)
                })
                .collect();
            m.insert("flags".into(), Value::Array(flags));
        }
        if !self.subcommands.is_empty() {
            let subs: Vec<Value> = self.subcommands.iter().map(Spec::to_json).collect();
            m.insert("subcommands".into(), Value::Array(subs));
        }
        if let Some(a) = &self.args {
            m.insert("args".into(), sources_json(a));
        }
        Value::Object(m)
    }

    fn subcommand(&self, word: &str) -> Option<&Spec> {
        self.subcommands
            .iter()
            .find(|s| s.names.iter().any(|n| n == word))
    }
}

fn sources_json(sources: &[Source]) -> Value {
    let one = |s: &Source| match s {
        Source::Files => json!("files"),
        Source::Directories => json!("directories"),
        Source::Commands => json!("commands"),
        Source::Nothing => json!("none"),
        Source::Values(words) => {
            let vals: Vec<Value> = words
                .iter()
                .map(|w| {
                    if w.description.is_empty() {
                        json!(w.text)
                    } else {
                        json!({"name": w.text, "description": w.description})
                    }
                })
                .collect();
            json!({ "values": vals })
        }
        Source::Command(argv) => json!({ "command": argv }),
    };
    match sources {
        [s] => one(s),
        many => Value::Array(many.iter().map(one).collect()),
    }
}

/// Checks an object's keys against the ones allowed there.
fn keys(obj: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "{at}: unknown key `{k}` (the keys are {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

fn object<'v>(v: &'v Value, at: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{at}: expected an object"))
}

fn string(v: Option<&Value>, at: &str) -> Result<String, String> {
    match v {
        None => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{at}: expected a string")),
    }
}

/// `name`: a non-empty string or a non-empty list of them.
fn names(v: Option<&Value>, at: &str) -> Result<Vec<String>, String> {
    let out = match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{at}.name: every name is a string"))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(format!("{at}.name: a string or a list of strings")),
        None => return Err(format!("{at}: `name` is required")),
    };
    if out.is_empty()
        || out
            .iter()
            .any(|n| n.is_empty() || n.contains(char::is_whitespace))
    {
        return Err(format!("{at}.name: names are non-empty and hold no spaces"));
    }
    Ok(out)
}

fn spec(v: &Value, at: &str) -> Result<Spec, String> {
    let obj = object(v, at)?;
    keys(
        obj,
        &["name", "description", "flags", "subcommands", "args"],
        at,
    )?;
    let flags = match obj.get("flags") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, f)| flag(f, &format!("{at}.flags[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{at}.flags: expected a list")),
    };
    let subcommands = match obj.get("subcommands") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| spec(s, &format!("{at}.subcommands[{i}]")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{at}.subcommands: expected a list")),
    };
    let args = match obj.get("args") {
        None => None,
        Some(a) => Some(sources(a, &format!("{at}.args"))?),
    };
    Ok(Spec {
        names: names(obj.get("name"), at)?,
        description: string(obj.get("description"), &format!("{at}.description"))?,
        flags,
        subcommands,
        args,
    })
}

fn flag(v: &Value, at: &str) -> Result<Flag, String> {
    let obj = object(v, at)?;
    keys(obj, &["name", "description", "arg"], at)?;
    let names = names(obj.get("name"), at)?;
    if let Some(n) = names.iter().find(|n| !n.starts_with('-')) {
        return Err(format!("{at}.name: a flag starts with `-`, not `{n}`"));
    }
    Ok(Flag {
        names,
        description: string(obj.get("description"), &format!("{at}.description"))?,
        arg: match obj.get("arg") {
            None => None,
            Some(a) => Some(sources(a, &format!("{at}.arg"))?),
        },
    })
}

fn sources(v: &Value, at: &str) -> Result<Vec<Source>, String> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, s)| source(s, &format!("{at}[{i}]")))
            .collect(),
        one @ (Value::Null
        | Value::Bool(_)
        | Value::Number(_)
        | Value::String(_)
        | Value::Object(_)) => Ok(vec![source(one, at)?]),
    }
}

fn source(v: &Value, at: &str) -> Result<Source, String> {
    match v {
        Value::String(s) => match s.as_str() {
            "files" => Ok(Source::Files),
            "directories" => Ok(Source::Directories),
            "commands" => Ok(Source::Commands),
            "none" => Ok(Source::Nothing),
            other => Err(format!(
                "{at}: `{other}` is not files, directories, commands or none"
            )),
        },
        Value::Object(obj) => {
            keys(obj, &["values", "command"], at)?;
            match (obj.get("values"), obj.get("command")) {
                (Some(Value::Array(vals)), None) => vals
                    .iter()
                    .enumerate()
                    .map(|(i, w)| word(w, &format!("{at}.values[{i}]")))
                    .collect::<Result<_, _>>()
                    .map(Source::Values),
                (None, Some(Value::Array(argv))) if !argv.is_empty() => argv
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| format!("{at}.command: every word is a string"))
                    })
                    .collect::<Result<_, _>>()
                    .map(Source::Command),
                _ => Err(format!(
                    "{at}: one of `values` (a list) or `command` (a non-empty list of strings)"
                )),
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => Err(format!(
            "{at}: a source is \"files\", \"directories\", \"commands\", \"none\", \
             {{\"values\": […]}} or {{\"command\": […]}}"
        )),
    }
}

fn word(v: &Value, at: &str) -> Result<Word, String> {
    match v {
        Value::String(s) => Ok(Word {
            text: s.clone(),
            description: String::new(),
        }),
        Value::Object(obj) => {
            keys(obj, &["name", "description"], at)?;
            Ok(Word {
                text: string(obj.get("name"), &format!("{at}.name"))?,
                description: string(obj.get("description"), &format!("{at}.description"))?,
            })
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => {
            Err(format!("{at}: a string or {{\"name\", \"description\"}}"))
        }
    }
}

/// What the word being typed may be, after the command's `words` (the
/// arguments before it, unquoted), given `typed` so far (see the module
/// docs).
pub fn offers(spec: &Spec, words: &[String], typed: &str) -> Vec<Offer> {
    let mut chain: Vec<&Spec> = vec![spec];
    let mut cur = spec;
    let mut pending: Option<&Flag> = None;
    let mut positional = 0usize;
    let mut only_positional = false;
    for w in words {
        if pending.take().is_some() {
            continue;
        }
        if !only_positional && w == "--" {
            only_positional = true;
            continue;
        }
        if !only_positional && w.len() > 1 && w.starts_with('-') {
            let name = w.split('=').next().unwrap_or(w);
            if let Some(f) = find_flag(&chain, name) {
                if f.arg.is_some() && !w.contains('=') {
                    pending = Some(f);
                }
            }
            continue;
        }
        if positional == 0 && !only_positional {
            if let Some(sub) = cur.subcommand(w) {
                cur = sub;
                chain.push(sub);
                continue;
            }
        }
        positional += 1;
    }
    if let Some(f) = pending {
        return f.arg.as_deref().map(to_offers).unwrap_or_default();
    }
    if typed.starts_with('-') && !only_positional {
        let flags = cur
            .flags
            .iter()
            .flat_map(|f| {
                f.names.iter().map(|n| Word {
                    text: n.clone(),
                    description: f.description.clone(),
                })
            })
            .collect();
        return vec![Offer::Words(flags)];
    }
    let mut out = Vec::new();
    let first = positional == 0 && !only_positional;
    if first && !cur.subcommands.is_empty() {
        let subs = cur
            .subcommands
            .iter()
            .flat_map(|s| {
                s.names.iter().map(|n| Word {
                    text: n.clone(),
                    description: s.description.clone(),
                })
            })
            .collect();
        out.push(Offer::Words(subs));
    }
    match &cur.args {
        Some(sources) => out.extend(to_offers(sources)),
        None if first && !cur.subcommands.is_empty() => {}
        None => out.push(Offer::Files),
    }
    out
}

fn find_flag<'s>(chain: &[&'s Spec], name: &str) -> Option<&'s Flag> {
    chain
        .iter()
        .rev()
        .find_map(|s| s.flags.iter().find(|f| f.names.iter().any(|n| n == name)))
}

fn to_offers(sources: &[Source]) -> Vec<Offer> {
    sources
        .iter()
        .filter_map(|s| match s {
            Source::Files => Some(Offer::Files),
            Source::Directories => Some(Offer::Directories),
            Source::Commands => Some(Offer::Commands),
            Source::Nothing => None,
            Source::Values(w) => Some(Offer::Words(w.clone())),
            Source::Command(argv) => Some(Offer::Run(argv.clone())),
        })
        .collect()
}

/// A spec for `name` read from its `--help` text: the flags of every line
/// that starts (after indentation) with `-`, and the subcommands listed
/// under a heading that names commands. Its other words are files.
pub fn from_help(name: &str, text: &str) -> Spec {
    let text = plain(text);
    let mut flags: Vec<Flag> = Vec::new();
    let mut subcommands: Vec<Spec> = Vec::new();
    let mut in_commands = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        if line.is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start();
        if indent == 0 && body.ends_with(':') {
            let heading = body.to_lowercase();
            in_commands = heading.contains("command") && !heading.contains("option");
            continue;
        }
        if body.starts_with('-') {
            if let Some(f) = help_flag(body) {
                if let Some(old) = flags
                    .iter_mut()
                    .find(|o| o.names.iter().any(|n| f.names.contains(n)))
                {
                    if old.description.is_empty() {
                        old.description = f.description;
                    }
                } else {
                    flags.push(f);
                }
            }
            continue;
        }
        if in_commands && indent > 0 {
            if let Some(s) = help_command(body) {
                if !subcommands.iter().any(|o| o.names == s.names) {
                    subcommands.push(s);
                }
            }
        }
    }
    Spec {
        names: vec![name.to_owned()],
        description: String::new(),
        flags,
        subcommands,
        args: Some(vec![Source::Files]),
    }
}

/// Text without terminal escapes and overstrikes (`x\bx`, `_\bx`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                // CSI: ESC [ parameters final-byte.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
            }
            '\x08' => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Splits a help line into its leading column and its description: the
/// column ends at a tab or at two spaces.
fn columns(body: &str) -> (&str, &str) {
    let cut = body.find('\t').into_iter().chain(body.find("  ")).min();
    match cut {
        Some(i) => (&body[..i], body[i..].trim()),
        None => (body, ""),
    }
}

/// One flag line: `-a, --all  description`, `--size=SIZE  …`,
/// `-p, --package <SPEC>  …`, `--color[=WHEN]  …`.
fn help_flag(body: &str) -> Option<Flag> {
    let (head, description) = columns(body);
    let mut names = Vec::new();
    let mut placeholder: Option<String> = None;
    for part in head.split([',', ' ']).filter(|p| !p.is_empty()) {
        if part.starts_with('-') {
            let end = part.find(['=', '[', '<']).unwrap_or(part.len());
            let name = part[..end].trim_end_matches(".");
            let valid = name.len() > 1
                && name
                    .trim_start_matches('-')
                    .chars()
                    .next()
                    .is_some_and(char::is_alphanumeric)
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | '+' | '#'));
            if !valid {
                return None;
            }
            names.push(name.to_owned());
            // `--x=VALUE` and `--x <VALUE>` take a value; `--x[=VALUE]`
            // only takes one written after `=`.
            let rest = &part[end..];
            if rest.starts_with('=') || rest.starts_with('<') {
                placeholder = Some(rest.to_owned());
            }
        } else if !names.is_empty() {
            if part.starts_with('[') {
                continue;
            }
            placeholder = Some(part.to_owned());
        } else {
            return None;
        }
    }
    if names.is_empty() {
        return None;
    }
    let arg = placeholder.map(|p| {
        let values = possible_values(description);
        if !values.is_empty() {
            return vec![Source::Values(values)];
        }
        let p = p.to_uppercase();
        if p.contains("DIR") {
            vec![Source::Directories]
        } else if p.contains("FILE") || p.contains("PATH") {
            vec![Source::Files]
        } else {
            vec![Source::Nothing]
        }
    });
    Some(Flag {
        names,
        description: first_sentence(description),
        arg,
    })
}

/// `[possible values: a, b, c]` in a description (clap's spelling).
fn possible_values(description: &str) -> Vec<Word> {
    let Some(i) = description.find("[possible values:") else {
        return Vec::new();
    };
    let rest = &description[i + "[possible values:".len()..];
    let list = rest.split(']').next().unwrap_or("");
    list.split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty() && !v.contains(char::is_whitespace))
        .map(|v| Word {
            text: v.to_owned(),
            description: String::new(),
        })
        .collect()
}

/// One subcommand line: `name  description` or `name, alias  description`.
fn help_command(body: &str) -> Option<Spec> {
    let (head, description) = columns(body);
    let names: Vec<String> = head
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let word = |n: &String| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if names.is_empty() || !names.iter().all(word) || (description.is_empty() && names.len() > 1) {
        return None;
    }
    Some(Spec {
        names,
        description: first_sentence(description),
        ..Spec::default()
    })
}

/// The description up to its first full stop, at most 60 characters.
fn first_sentence(d: &str) -> String {
    let d = d.split(". ").next().unwrap_or(d).trim();
    if d.chars().count() > 60 {
        let cut: String = d.chars().take(59).collect();
        format!("{cut}…")
    } else {
        d.to_owned()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn words(offers: &[Offer]) -> Vec<String> {
        offers
            .iter()
            .flat_map(|o| match o {
                Offer::Words(w) => w.iter().map(|w| w.text.clone()).collect(),
                Offer::Files => vec!["<files>".to_owned()],
                Offer::Directories => vec!["<dirs>".to_owned()],
                Offer::Commands => vec!["<commands>".to_owned()],
                Offer::Run(argv) => vec![format!("<run {}>", argv.join(" "))],
            })
            .collect()
    }

    fn s(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn every_shipped_spec_reads() {
        for name in shipped_names() {
            let spec = Spec::from_json(shipped_text(name).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(shipped(name), Some(&spec));
            assert_eq!(spec.names[0], name);
            // It reads back from its own JSON.
            let again = Spec::from_json(&spec.to_json().to_string()).unwrap();
            assert_eq!(again, spec, "{name}");
        }
    }

    #[test]
    fn a_spec_is_walked_by_the_words_typed() {
        let spec = Spec::from_json(
            r#"{"name": "tool",
                "flags": [{"name": ["-C", "--dir"], "arg": "directories"}, {"name": "--verbose"}],
                "subcommands": [
                  {"name": ["build", "b"], "description": "compile",
                   "flags": [{"name": "--release"}, {"name": "--target", "arg": {"values": ["x86", "arm"]}}]},
                  {"name": "run", "args": [{"command": ["tool", "list"]}, "files"]}
                ]}"#,
        )
        .unwrap();
        assert_eq!(words(&offers(&spec, &[], "")), s(&["build", "b", "run"]));
        assert_eq!(
            words(&offers(&spec, &[], "-")),
            s(&["-C", "--dir", "--verbose"])
        );
        assert_eq!(words(&offers(&spec, &s(&["-C"]), "")), s(&["<dirs>"]));
        assert_eq!(
            words(&offers(&spec, &s(&["-C", "src", "--verbose"]), "")),
            s(&["build", "b", "run"])
        );
        assert_eq!(
            words(&offers(&spec, &s(&["b"]), "--r")),
            s(&["--release", "--target"])
        );
        assert_eq!(
            words(&offers(&spec, &s(&["build", "--target"]), "")),
            s(&["x86", "arm"])
        );
        assert_eq!(
            words(&offers(&spec, &s(&["build", "--target=arm"]), "")),
            s(&["<files>"])
        );
        assert_eq!(
            words(&offers(&spec, &s(&["run"]), "")),
            s(&["<run tool list>", "<files>"])
        );
        // After `--`, a dash word is not a flag.
        assert_eq!(
            words(&offers(&spec, &s(&["build", "--"]), "-")),
            s(&["<files>"])
        );
        // A positional word ends the subcommand position.
        assert_eq!(words(&offers(&spec, &s(&["x"]), "")), s(&["<files>"]));
    }

    #[test]
    fn bad_specs_are_refused_with_the_place() {
        let e = Spec::from_json(r#"{"name": "x", "flgs": []}"#).unwrap_err();
        assert!(e.contains("unknown key `flgs`"), "{e}");
        let e = Spec::from_json(r#"{"name": "x", "subcommands": [{"nmae": "y"}]}"#).unwrap_err();
        assert!(e.contains("subcommands[0]"), "{e}");
        let e = Spec::from_json(r#"{"name": "x", "flags": [{"name": "v"}]}"#).unwrap_err();
        assert!(e.contains("starts with `-`"), "{e}");
        let e = Spec::from_json(r#"{"name": "x", "args": "filez"}"#).unwrap_err();
        assert!(e.contains("filez"), "{e}");
        assert!(Spec::from_json(r#"{"description": "x"}"#).is_err());
        assert!(Spec::from_json("[").is_err());
    }

    #[test]
    fn help_text_gives_flags_and_subcommands() {
        let gnu = "Usage: ls [OPTION]... [FILE]...\n\
                   List information about the FILEs.\n\n\
                   Mandatory arguments to long options are mandatory for short options too.\n\
                   \x20 -a, --all                  do not ignore entries starting with .\n\
                   \x20 -A, --almost-all           do not list implied . and ..\n\
                   \x20     --block-size=SIZE      with -l, scale sizes by SIZE when printing them;\n\
                   \x20                              e.g., '--block-size=M'; see SIZE format below\n\
                   \x20     --color[=WHEN]         color the output WHEN; more info below\n\
                   \x20 -I, --ignore=PATTERN       do not list implied entries matching shell PATTERN\n";
        let spec = from_help("ls", gnu);
        let names: Vec<&str> = spec
            .flags
            .iter()
            .flat_map(|f| f.names.iter().map(String::as_str))
            .collect();
        assert_eq!(
            names,
            [
                "-a",
                "--all",
                "-A",
                "--almost-all",
                "--block-size",
                "--color",
                "-I",
                "--ignore"
            ]
        );
        assert_eq!(
            spec.flags[0].description,
            "do not ignore entries starting with ."
        );
        assert!(spec.flags[0].arg.is_none());
        assert_eq!(spec.flags[2].arg, Some(vec![Source::Nothing]));
        assert!(spec.flags[3].arg.is_none(), "an optional `[=WHEN]`");
        assert_eq!(words(&offers(&spec, &[], "--al")).len(), 8);

        let clap = "A tool\n\n\
                    Usage: tool [OPTIONS] <COMMAND>\n\n\
                    Commands:\n\
                    \x20 build, b  Compile the current package\n\
                    \x20 check     Analyze the current package\n\
                    \x20 help      Print this message\n\n\
                    Options:\n\
                    \x20 -p, --package <SPEC>     Package to build\n\
                    \x20     --color <WHEN>       Coloring [possible values: auto, always, never]\n\
                    \x20     --manifest-path <PATH>  Path to Cargo.toml\n\
                    \x20 -h, --help               Print help\n";
        let spec = from_help("tool", clap);
        let subs: Vec<&Vec<String>> = spec.subcommands.iter().map(|s| &s.names).collect();
        assert_eq!(subs, [&s(&["build", "b"]), &s(&["check"]), &s(&["help"])]);
        assert_eq!(
            spec.subcommands[0].description,
            "Compile the current package"
        );
        assert_eq!(
            words(&offers(&spec, &s(&["--color"]), "")),
            s(&["auto", "always", "never"])
        );
        assert_eq!(
            words(&offers(&spec, &s(&["--manifest-path"]), "")),
            s(&["<files>"])
        );
        assert_eq!(
            words(&offers(&spec, &[], "")),
            s(&["build", "b", "check", "help", "<files>"])
        );
        // Escapes and overstrikes are not text.
        let spec = from_help(
            "x",
            "\x1b[1mOPTIONS:\x1b[0m\n  -\x08-q, --quiet  be quiet\n",
        );
        assert_eq!(spec.flags[0].names, s(&["-q", "--quiet"]));
    }
}
