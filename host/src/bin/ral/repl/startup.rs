//! Startup files (spec §15.3, §16.4): the login profiles, then the rc
//! file, whose result configures the session.
//!
//! - A **login** session (`-l`) first sources `/etc/ral/profile` and
//!   `~/.ral_profile`, each of which must return `()`.
//! - Every session then reads the first of `$XDG_CONFIG_HOME/ral/rc` (or
//!   `~/.config/ral/rc`) and `~/.ralrc`; with neither, a documented
//!   skeleton is written at the first and its path reported.
//! - The rc file is parsed and checked against the session before it
//!   runs, and its *inferred* result is held to the rc table
//!   ([`ral_host::interactive::contract::RC`]): a key outside the eleven,
//!   a map, a list or a mistyped field refuses the file before its first
//!   statement. A result the checker cannot type meets the same table as
//!   a value once it has run.
//! - It runs as a turn, so its top-level `let`s stay (startup is not a
//!   transaction), and then its record is applied: `env`, `bindings`
//!   (typed by the checker), `aliases`, `prompt`, `theme`, `edit_mode`,
//!   `bell`, `surface`, `recursion_limit`, `plugins` (each loaded with its
//!   options; one that fails is reported and the rest still load), and
//!   last `startup`.
//! - Every failure is reported and the shell starts anyway; `exit` stops
//!   the file that ran it.

use std::path::{Path, PathBuf};

use ral_host::interactive::contract::{self, Verdict, RC};
use ral_host::{
    render_failure, EnvEntry, Settled, Shell, SourceMap, TurnReport, TurnRequest, Value,
};
use ral_types::{CheckOptions, Con, Label, Ty, TyStore, TyView};

use super::{Session, Settings};
use crate::cli::Surface;

/// The rc file written on first start.
const SKELETON: &str = "\
# ral's rc file: ral source whose result configures the interactive shell.
# It returns a record of these keys (any may be left out), or () to set
# nothing. An unknown key refuses the whole file before it runs.
#
# return [
#     edit_mode: emacs,                  # or vi
#     bell: false,
#     surface: readline,                 # or minimal
#     recursion_limit: 100000,
#     prompt: { return \"!{abbreviate-home !{cwd}} ❯ \" },
#     env: [EDITOR: 'vim'],
#     bindings: [work: '/srv/work'],
#     aliases: [ll: { |args| ls -lh ...$args }],
#     theme: [value_prefix: '=> ', value_color: yellow],
#     plugins: [autosuggest: [:]],       # loaded from plugins/ beside this file
#     startup: { echo 'ready' },
# ]

return ()
";

/// Reads the startup files into `session` and `settings`.
pub fn run(session: &Session, login: bool, config: Option<&Path>, settings: &mut Settings) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if login {
        let mut profiles = vec![PathBuf::from("/etc/ral/profile")];
        if let Some(h) = &home {
            profiles.push(h.join(".ral_profile"));
        }
        for p in profiles.iter().filter(|p| p.is_file()) {
            profile(session, p);
        }
    }
    let candidates: Vec<PathBuf> = config
        .map(|c| c.join("rc"))
        .into_iter()
        .chain(home.as_ref().map(|h| h.join(".ralrc")))
        .collect();
    match candidates.iter().find(|p| p.is_file()) {
        Some(rc) => rc_file(session, rc, settings),
        None => {
            if let Some(first) = candidates.first() {
                let made = first
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::write(first, SKELETON));
                match made {
                    Ok(()) => eprintln!("ral: created {}", first.display()),
                    Err(e) => eprintln!("ral: cannot create {}: {e}", first.display()),
                }
            }
        }
    }
}

/// What checking a startup file found.
struct Checked {
    text: String,
    store: TyStore,
    /// The value type of the file's result, when it returns one.
    value: Option<Ty>,
}

/// Reads, parses and checks `path` against the session; reports and
/// returns `None` when it cannot run.
fn check(session: &Session, path: &Path) -> Option<Checked> {
    let raw = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("ral: cannot read {}: {e}", path.display());
            return None;
        }
    };
    let mut sources = SourceMap::new();
    let id = sources.add(path.display().to_string(), &raw);
    let text = sources.text(id).to_owned();
    let parsed = ral_syntax::parse(&text, id);
    let shell = session.shell();
    let diags = if parsed.has_errors() {
        parsed.diagnostics
    } else {
        let c = ral_types::check_program(
            &parsed.program,
            id,
            shell.type_env(),
            &CheckOptions { is_script: true },
        );
        if !c.has_errors() {
            let mut store = c.store;
            let r = store.find(c.result);
            let value = match store.view(r) {
                TyView::Con(Con::Returns { value, .. }) => Some(value),
                TyView::Var(..) | TyView::Con(_) => None,
            };
            return Some(Checked { text, store, value });
        }
        c.diagnostics
    };
    eprint!(
        "{}",
        ral_syntax::render::render_all(&diags, &sources, session.color)
    );
    eprintln!("ral: {} was not run", path.display());
    None
}

/// Runs a checked startup file as a turn; its value, when it ran to one.
fn run_file(session: &Session, path: &Path, text: &str) -> Option<Value> {
    let mut shell = session.shell();
    let name = path.display().to_string();
    let report = shell.run_turn(text, TurnRequest::new(&name));
    match report {
        TurnReport::Ran { result, .. } => match result {
            Settled::Ok(v) => Some(v),
            Settled::Failed(f) => {
                eprint!("{}", render_failure(&f, &shell, session.color));
                None
            }
            // `exit` stops this file; boot goes on.
            Settled::Exit(_) => None,
        },
        TurnReport::Static { diagnostics } => {
            eprint!("{}", diagnostics.render(session.color));
            None
        }
    }
}

/// A login profile: sourced for its effects, must return `()`.
fn profile(session: &Session, path: &Path) {
    let Some(mut c) = check(session, path) else {
        return;
    };
    if let Some(v) = c.value {
        let v = c.store.find(v);
        let unit = matches!(c.store.view(v), TyView::Con(Con::Unit) | TyView::Var(..));
        if !unit {
            eprintln!(
                "ral: {} must return (); configuration belongs in the rc file; it was not run",
                path.display()
            );
            return;
        }
    }
    if let Some(v) = run_file(session, path, &c.text) {
        if v != Value::Unit {
            eprintln!(
                "ral: {} returned a value; a profile must return ()",
                path.display()
            );
        }
    }
}

/// The rc file: checked against the table, run, applied.
fn rc_file(session: &Session, path: &Path, settings: &mut Settings) {
    let Some(mut c) = check(session, path) else {
        return;
    };
    let whole = match c.value {
        Some(v) => {
            let r = c.store.returns(v);
            contract::check_type(&RC, &mut c.store, r)
        }
        None => Ok(Verdict::Unit),
    };
    let verdict = match whole {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("ral: {}: {msg}; it was not run", path.display());
            return;
        }
    };
    let Some(value) = run_file(session, path, &c.text) else {
        return;
    };
    if verdict == Verdict::Unknown {
        if let Err(msg) = contract::check_value(&RC, &value) {
            eprintln!(
                "ral: {}: {msg}; the shell starts with the defaults",
                path.display()
            );
            return;
        }
    }
    let Value::Record(rc) = &value else {
        return;
    };
    // The result's type, to give the bindings it installs their schemes.
    let record_type = match (verdict, c.value) {
        (Verdict::Fits, Some(t)) => Some(t),
        _ => type_of(&mut c.store, &value),
    };
    apply(session, path, rc, &mut c.store, record_type, settings);
}

/// The type of a first-order value (for an rc result the checker could
/// not type); `None` for functions and handles.
fn type_of(store: &mut TyStore, v: &Value) -> Option<Ty> {
    Some(match v {
        Value::Unit => store.unit(),
        Value::Bool(_) => store.bool(),
        Value::Int(_) => store.int(),
        Value::Float(_) => store.float(),
        Value::Str(_) => store.string(),
        Value::Bytes(_) => store.bytes(),
        Value::List(items) => {
            let e = match items.first() {
                Some(x) => type_of(store, x)?,
                None => store.fresh_value(),
            };
            store.list(e)
        }
        Value::Record(r) => {
            let mut fields = Vec::new();
            for (k, x) in r.iter() {
                fields.push((Label::intern(k), type_of(store, x)?));
            }
            store.record(&fields)?
        }
        Value::Variant(_) | Value::Func(_) | Value::Handle(_) => return None,
    })
}

/// The type of field `key` of a record type.
fn field_type(store: &mut TyStore, record: Option<Ty>, key: &str) -> Option<Ty> {
    let t = store.find(record?);
    let TyView::Con(Con::Record(row)) = store.view(t) else {
        return None;
    };
    let label = Label::intern(key);
    store
        .row_parts(row)
        .0
        .into_iter()
        .find(|(l, _)| *l == label)
        .map(|(_, t)| t)
}

fn colour(name: &str) -> Option<Option<&'static str>> {
    Some(Some(match name {
        "black" => "30",
        "red" => "31",
        "green" => "32",
        "yellow" => "33",
        "blue" => "34",
        "magenta" => "35",
        "cyan" => "36",
        "white" => "37",
        "none" => return Some(None),
        _ => return None,
    }))
}

/// Applies an rc record (see the module docs).
fn apply(
    session: &Session,
    path: &Path,
    rc: &ral_vm::Record,
    store: &mut TyStore,
    record_type: Option<Ty>,
    settings: &mut Settings,
) {
    let file = path.display();
    let warn = |msg: String| eprintln!("ral: {file}: {msg}");
    if let Some(Value::Record(env)) = rc.get("env") {
        let mut shell = session.shell();
        for (k, v) in env.iter() {
            if k.as_str() == "PWD" || k.as_str() == "OLDPWD" {
                continue;
            }
            shell.set_env(k, &ral_vm::display::to_text(v));
        }
    }
    for key in ["bindings", "aliases"] {
        let Some(Value::Record(entries)) = rc.get(key) else {
            continue;
        };
        let group = field_type(store, record_type, key);
        for (name, v) in entries.iter() {
            if !ral_syntax::ast::is_identifier(name) || ral_syntax::ast::is_reserved(name) {
                warn(format!("`{name}` in {key} is not a binding name"));
                continue;
            }
            let is_alias = key == "aliases" && matches!(v, Value::Func(_));
            let mut shell = session.shell();
            if is_alias {
                alias(&mut shell, name, v.clone(), &warn);
                continue;
            }
            let ty = field_type(store, group, name).or_else(|| type_of(store, v));
            let Some(ty) = ty else {
                warn(format!("the type of `{name}` is unknown; it was not bound"));
                continue;
            };
            let entry = EnvEntry::of_type(store, ty);
            shell.install_scope_binding(name, v.clone(), entry);
        }
    }
    if let Some(block @ Value::Func(_)) = rc.get("prompt") {
        settings.prompt = Some(block.clone());
    }
    if let Some(Value::Record(theme)) = rc.get("theme") {
        for (k, v) in theme.iter() {
            match (k.as_str(), v) {
                ("value_prefix", Value::Str(s)) => settings.value_prefix = s.to_string(),
                ("value_color", Value::Str(s)) => match colour(s) {
                    Some(c) => settings.value_color = c,
                    None => warn(format!("theme: `{s}` is not a colour")),
                },
                (other, _) => warn(format!(
                    "theme: `{other}` is not a theme key (value_prefix, value_color)"
                )),
            }
        }
    }
    if let Some(Value::Str(mode)) = rc.get("edit_mode") {
        match mode.as_str() {
            "vi" => settings.vi = true,
            "emacs" => settings.vi = false,
            other => warn(format!("edit_mode `{other}` is not emacs or vi")),
        }
    }
    if let Some(Value::Bool(b)) = rc.get("bell") {
        settings.bell = *b;
    }
    if let Some(Value::Str(s)) = rc.get("surface") {
        match Surface::parse(s) {
            Some(s) => settings.surface = Some(s),
            None => warn(format!(
                "surface `{s}` is not minimal, readline or structural"
            )),
        }
    }
    if let Some(Value::Int(n)) = rc.get("recursion_limit") {
        match usize::try_from(*n) {
            Ok(n) if n > 0 => session.shell().set_recursion_limit(n),
            _ => warn(format!("recursion_limit must be positive, not {n}")),
        }
    }
    if let Some(Value::Record(plugins)) = rc.get("plugins") {
        for (name, options) in plugins.iter() {
            if !matches!(options, Value::Record(_)) {
                warn(format!(
                    "plugin {name}: its options must be a map (`[:]` for none); skipped"
                ));
                continue;
            }
            let mut shell = session.shell();
            if let Err(e) = session.inter.load_plugin(&mut shell, name, options.clone()) {
                warn(format!("plugin {name}: {e}"));
            }
        }
    }
    if let Some(block @ Value::Func(_)) = rc.get("startup") {
        let mut shell = session.shell();
        let (settled, _) = shell.call_value(block.clone(), Vec::new(), ral_host::TurnIo::Inherit);
        if let Settled::Failed(f) = settled {
            warn(format!("startup: {}", f.message));
        }
    }
}

/// Installs `arm` as alias `name` (through the `alias` builtin).
fn alias(shell: &mut Shell, name: &str, arm: Value, warn: &dyn Fn(String)) {
    let id = ral_types::builtin_table().id("alias").map_or(0, |id| id.0);
    let func = Value::Func(std::sync::Arc::new(ral_vm::Func::Builtin {
        id,
        applied: Box::new([]),
    }));
    let (settled, _) =
        shell.call_value(func, vec![Value::str(name), arm], ral_host::TurnIo::Inherit);
    if let Settled::Failed(f) = settled {
        warn(format!("alias {name}: {}", f.message));
    }
}
