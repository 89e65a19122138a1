//! Session capability profiles (spec §12.12): `.ral` scripts whose terminal
//! value is a capability record, loaded before a session starts and pushed
//! as permanent layers of its capability ceiling
//! ([`crate::Shell::set_capability_ceiling`]).
//!
//! Loading one profile:
//!
//! 1. parse and type-check it (on a fresh session of its own, with the
//!    process's authority: profile evaluation is trusted set-up);
//! 2. **ascribe** `grant`'s table to its return where the checker typed it:
//!    a record's labels must be `exec`, `fs`, `net`, `detach`, `editor`,
//!    `shell`, with `net` and `detach` Bool and the others records; a map
//!    (keys are data, not labels), a list (`[]` is the empty list), a
//!    scalar or a block is refused before the profile runs, with the
//!    spelling to use; `()` is the lattice top;
//! 3. run it, and decode the value strictly, as `grant` decodes an inline
//!    record (sigils frozen against the load-time home and working
//!    directory), which also catches what the checker could not see (a
//!    profile decoded from JSON).
//!
//! Any failure refuses the whole profile, and the host does not start the
//! session (`ral` exits 2, §16.3). The resulting layer is labelled
//! ``profile `NAME` `` so its denials name it.
//!
//! # Built-in profiles
//!
//! A host that ships profiles of its own (exarch's `reasonable`,
//! `confined`, …) must start wherever its user runs it, so it loads them
//! with [`load_builtin_profile`]: every `fs.read` and `fs.write` entry is
//! resolved on its own, and an entry that cannot be resolved is left out
//! (which only narrows the profile) and reported, instead of refusing the
//! whole profile. An `xdg:` entry there does not follow the sigil's home
//! rule (capabilities.md, section 2): it names `$XDG_…` wherever that
//! points, as long as it is absolute and neither the root nor a directory
//! holding the home directory, else the home-relative default. `fs.deny`
//! entries, whose omission would widen the profile, and every other field
//! stay strict. A profile file the user passed is never loaded this way.

use std::path::Path;

use ral_syntax::render::{render, render_all, Color};
use ral_syntax::{Code, Diagnostic, SourceId, SourceMap, Span};
use ral_types::{print_ty, CheckOptions, Con, Ty, TyStore, TyView};
use ral_vm::caps::{decode_profile, DecodeEnv, Layer};
use ral_vm::value::Record;
use ral_vm::Value;

use crate::turn::{Capabilities, Settled, TurnIo, TurnReport, TurnRequest};
use crate::Shell;

/// The fields of a capability record (§12.1), in the order the spec lists
/// them.
pub const GRANT_FIELDS: [&str; 6] = ["exec", "fs", "net", "detach", "editor", "shell"];

/// Loads the profiles in `paths` (in order, each one layer) into a ceiling.
/// The error is the rendered report, ready for standard error.
pub fn load_profiles(paths: &[String], color: Color) -> Result<Capabilities, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let mut caps = Capabilities::root();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read capability profile {path}: {e}\n"))?;
        let name = Path::new(path)
            .file_name()
            .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
        let layer = load_profile(path, &text, &cwd, &format!("profile `{name}`"), color)?;
        caps = caps.with_layer(layer);
    }
    Ok(caps)
}

/// Loads one profile's `text` (named `script` in diagnostics), decoding its
/// paths against `cwd` and the process environment, and labels the layer.
pub fn load_profile(
    script: &str,
    text: &str,
    cwd: &Path,
    label: &str,
    color: Color,
) -> Result<Layer, String> {
    let value = run_profile(script, text, color)?;
    let var = |k: &str| std::env::var(k).ok();
    let layer = decode_profile(&value, &DecodeEnv { cwd, var: &var })
        .map_err(|f| format!("capability profile {script}: {}\n", f.message))?;
    Ok(layer.labelled(label))
}

/// An `fs` entry a built-in profile could not resolve, left out of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// `read` or `write`.
    pub list: &'static str,
    /// The entry as the profile wrote it.
    pub entry: String,
    /// Why it could not be resolved.
    pub reason: String,
}

/// Loads a host's own profile leniently (see the module docs): the layer,
/// and the entries left out of it. A profile that does not parse, check,
/// run or decode is still refused.
pub fn load_builtin_profile(
    script: &str,
    text: &str,
    cwd: &Path,
    label: &str,
    color: Color,
) -> Result<(Layer, Vec<LeftOut>), String> {
    let var = |k: &str| std::env::var(k).ok();
    load_builtin_profile_with(script, text, cwd, label, color, &var)
}

/// [`load_builtin_profile`] against an explicit environment (tests, and
/// hosts that resolve against a prepared one).
pub fn load_builtin_profile_with(
    script: &str,
    text: &str,
    cwd: &Path,
    label: &str,
    color: Color,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<(Layer, Vec<LeftOut>), String> {
    let value = run_profile(script, text, color)?;
    let env = DecodeEnv { cwd, var };
    let (value, left_out) = resolve_leniently(&value, &env);
    let layer = decode_profile(&value, &env)
        .map_err(|f| format!("capability profile {script}: {}\n", f.message))?;
    Ok((layer.labelled(label), left_out))
}

/// Parses, checks, ascribes and runs a profile for its value.
fn run_profile(script: &str, text: &str, color: Color) -> Result<Value, String> {
    let mut shell = Shell::default();
    // Static: parse, check, ascribe.
    let mut sources = SourceMap::new();
    let id = sources.add(script, text);
    let parsed = ral_syntax::parse(sources.text(id), id);
    if parsed.has_errors() {
        return Err(render_all(&parsed.diagnostics, &sources, color));
    }
    let opts = CheckOptions {
        is_script: !script.starts_with('<'),
    };
    let checked = ral_types::check_program(&parsed.program, id, shell.type_env(), &opts);
    if checked.has_errors() {
        return Err(render_all(&checked.diagnostics, &sources, color));
    }
    if let Some(d) = ascribe(&parsed.program, &checked, id) {
        return Err(render(&d, &sources, color));
    }
    // Run it for its value, its output kept away from the host's streams.
    let report = shell.run_turn(
        text,
        TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new(script)
        },
    );
    let value = match report {
        TurnReport::Static { diagnostics } => return Err(diagnostics.render(color)),
        TurnReport::Ran { result, .. } => match result {
            Settled::Ok(v) => v,
            Settled::Failed(f) => {
                return Err(format!(
                    "capability profile {script} failed:\n{}",
                    crate::render_failure(&f, &shell, color)
                ))
            }
            Settled::Exit(n) => {
                return Err(format!(
                    "capability profile {script} ran `exit {n}` instead of returning a capability \
                     record\n"
                ))
            }
        },
    };
    Ok(value)
}

/// A built-in profile's value with each `fs.read` and `fs.write` entry
/// resolved on its own: an `xdg:` entry by the built-in rule, every entry
/// then checked by the strict decoder alone, and the ones that fail left
/// out. Anything that is not such a list passes through untouched for the
/// strict decoder to judge.
fn resolve_leniently(value: &Value, env: &DecodeEnv<'_>) -> (Value, Vec<LeftOut>) {
    let mut left_out = Vec::new();
    let Value::Record(profile) = value else {
        return (value.clone(), left_out);
    };
    let Some(Value::Record(fs)) = profile.get("fs") else {
        return (value.clone(), left_out);
    };
    let mut fs_entries = Vec::with_capacity(fs.len());
    for (key, field) in fs.iter() {
        let list = match key.as_str() {
            "read" => "read",
            "write" => "write",
            _ => {
                fs_entries.push((key.as_str().to_owned(), field.clone()));
                continue;
            }
        };
        let Value::List(items) = field else {
            fs_entries.push((key.as_str().to_owned(), field.clone()));
            continue;
        };
        let mut kept = Vec::with_capacity(items.len());
        for item in items.iter() {
            let Value::Str(entry) = item else {
                kept.push(item.clone());
                continue;
            };
            match resolve_entry(entry, env) {
                Ok(resolved) => kept.push(Value::str(resolved)),
                Err(reason) => left_out.push(LeftOut {
                    list,
                    entry: entry.as_str().to_owned(),
                    reason,
                }),
            }
        }
        fs_entries.push((key.as_str().to_owned(), Value::list(kept)));
    }
    let mut entries: Vec<(String, Value)> = profile
        .iter()
        .filter(|(k, _)| k.as_str() != "fs")
        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
        .collect();
    entries.push((
        "fs".to_owned(),
        Value::record(Record::from_entries(fs_entries)),
    ));
    (Value::record(Record::from_entries(entries)), left_out)
}

/// One entry of a built-in profile: its `xdg:` sigil expanded by the
/// built-in rule, then the whole entry decoded alone as a one-path read
/// list, so whatever the strict decoder refuses (an unset `HOME` under `~`,
/// an unclaimed `gitdir:` pointer, a relative path) is this entry's reason.
fn resolve_entry(entry: &str, env: &DecodeEnv<'_>) -> Result<String, String> {
    let resolved = match entry.strip_prefix("xdg:") {
        Some(rest) => builtin_xdg(rest, env)?,
        None => entry.to_owned(),
    };
    let probe = Record::from_entries(vec![(
        "fs".to_owned(),
        Value::record(Record::from_entries(vec![(
            "read".to_owned(),
            Value::list(vec![Value::str(resolved.clone())]),
        )])),
    )]);
    decode_profile(&Value::record(probe), env).map_err(|f| {
        f.message
            .strip_prefix("grant: ")
            .unwrap_or(&f.message)
            .to_owned()
    })?;
    Ok(resolved)
}

/// `xdg:NAME[/SUB]` for a built-in profile: `$XDG_…` when it is set to an
/// absolute path (a relative one is ignored, as the XDG specification
/// says), else the default under `HOME`. The directory may lie outside the
/// home directory, but not be the root or hold the home directory, which
/// would hand a profile far more than a cache or a state directory.
fn builtin_xdg(rest: &str, env: &DecodeEnv<'_>) -> Result<String, String> {
    let (name, sub) = rest.split_once('/').unwrap_or((rest, ""));
    let (var, default) = match name {
        "config" => ("XDG_CONFIG_HOME", ".config"),
        "data" => ("XDG_DATA_HOME", ".local/share"),
        "cache" => ("XDG_CACHE_HOME", ".cache"),
        "state" => ("XDG_STATE_HOME", ".local/state"),
        "runtime" => ("XDG_RUNTIME_DIR", ""),
        other => return Err(format!("unknown XDG directory `{other}`")),
    };
    let absolute = |v: Option<String>| {
        v.filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|p| lexical(&p))
    };
    let home = absolute((env.var)("HOME"));
    let base = match (absolute((env.var)(var)), &home) {
        (Some(b), _) => b,
        (None, _) if default.is_empty() => return Err(format!("{var} is not set")),
        (None, Some(h)) => h.join(default),
        (None, None) => return Err(format!("neither {var} nor HOME is set")),
    };
    if base.parent().is_none() {
        return Err(format!("{var} is the root directory"));
    }
    if let Some(h) = &home {
        if h.starts_with(&base) {
            return Err(format!(
                "{var} ({}) holds the home directory",
                base.display()
            ));
        }
    }
    let sub = sub.trim_start_matches('/');
    let full = if sub.is_empty() { base } else { base.join(sub) };
    Ok(full.to_string_lossy().into_owned())
}

/// `p` with `.` and `..` components resolved lexically.
fn lexical(p: &Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) | Component::Normal(_) => {
                out.push(c.as_os_str())
            }
        }
    }
    out
}

/// The static ascription of `grant`'s table to the profile's return (see
/// the module docs); a diagnostic when it does not fit.
fn ascribe(
    program: &ral_syntax::ast::Program,
    checked: &ral_types::Checked,
    id: SourceId,
) -> Option<Diagnostic> {
    use ral_syntax::ast::Stmt;
    let last = program
        .stmts
        .iter()
        .rev()
        .find(|s| !matches!(s, Stmt::Error(_)))?;
    let (span, ty) = match last {
        // A profile that ends in a binding returns `()`.
        Stmt::Let(_) => return None,
        Stmt::Error(_) => return None,
        Stmt::Chain(chain) => {
            let stage = chain.alternatives.first()?.stages.last()?;
            (stage.span, *checked.elab.stage_types.get(stage.id)?)
        }
    };
    let store = &checked.store;
    let value = match store.view(ty) {
        TyView::Con(Con::Returns { grade, value }) => {
            if matches!(store.view(grade), TyView::Con(Con::Write)) {
                // It writes rather than returns: its value is its output.
                let msg = "a capability profile must return its record; this one ends in a \
                           command whose value is the text it writes";
                return Some(bad(id, span, msg, "write `return [fs: …, net: …]`"));
            }
            value
        }
        TyView::Var(..) | TyView::Con(_) => return None,
    };
    check_record(store, value, id, span)
}

fn bad(id: SourceId, span: Span, label: &str, help: &str) -> Diagnostic {
    Diagnostic::new(
        Code::CapabilityProfile,
        id,
        "this profile does not return a capability record".to_owned(),
        span,
        label,
    )
    .with_note(
        "A profile's value is a record with the fields of `grant`: exec, fs, net, detach, \
         editor, shell (or `()` for a profile with nothing to set).",
    )
    .with_help(help)
}

fn check_record(store: &TyStore, value: Ty, id: SourceId, span: Span) -> Option<Diagnostic> {
    let shown = print_ty(store, value);
    match store.view(value) {
        TyView::Var(..) | TyView::Con(Con::Unit | Con::Error) => None,
        TyView::Con(Con::Map(_)) => Some(bad(
            id,
            span,
            &format!("this returns a map ({shown}), whose keys are data, not the table's labels"),
            "write the record without `:,`: `return [exec: …, net: …]`",
        )),
        TyView::Con(Con::List(_)) => Some(bad(
            id,
            span,
            &format!("this returns a list ({shown})"),
            "`[]` is the empty list; return `()` for a profile with nothing to set",
        )),
        TyView::Con(Con::Record(row)) => {
            let mut fields = Vec::new();
            collect_fields(store, row, &mut fields);
            for (label, ty) in fields {
                if !GRANT_FIELDS.contains(&label) {
                    return Some(bad(
                        id,
                        span,
                        &format!("`{label}` is not a capability field"),
                        &format!("the fields are {}", GRANT_FIELDS.join(", ")),
                    ));
                }
                let fine = match store.view(ty) {
                    TyView::Var(..) | TyView::Con(Con::Error) => true,
                    TyView::Con(Con::Bool) => label == "net" || label == "detach",
                    TyView::Con(Con::Record(_) | Con::Map(_)) => {
                        label != "net" && label != "detach"
                    }
                    TyView::Con(_) => false,
                };
                if !fine {
                    let want = if label == "net" || label == "detach" {
                        "a Bool"
                    } else {
                        "a record"
                    };
                    return Some(bad(
                        id,
                        span,
                        &format!(
                            "`{label}` is {} here, where the table has {want}",
                            print_ty(store, ty)
                        ),
                        &format!("give `{label}` {want}"),
                    ));
                }
            }
            None
        }
        TyView::Con(_) => Some(bad(
            id,
            span,
            &format!("this returns {shown}"),
            "return a record: `return [fs: [read: ['cwd:']], net: false]`",
        )),
    }
}

/// The labels and types of a record row, in written order.
fn collect_fields(store: &TyStore, row: Ty, out: &mut Vec<(&'static str, Ty)>) {
    let mut cur = row;
    loop {
        match store.view(cur) {
            TyView::Con(Con::Row { fields, tail, .. }) => {
                out.extend(store.fields(fields).iter().map(|(l, t)| (l.as_str(), *t)));
                cur = tail;
            }
            TyView::Con(_) | TyView::Var(..) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn load(text: &str) -> Result<Layer, String> {
        let cwd = std::env::temp_dir();
        load_profile("p.ral", text, &cwd, "profile `p.ral`", Color::Never)
    }

    #[test]
    fn a_record_profile_decodes_to_a_labelled_layer() {
        let l = load("return [fs: [read: ['cwd:']], net: false]").unwrap();
        assert!(l.fs.is_some());
        assert_eq!(l.net, Some(false));
        assert_eq!(l.label.as_deref(), Some("profile `p.ral`"));
        let top = load("let x = 1\nreturn ()").unwrap();
        assert!(!top.confines());
    }

    #[test]
    fn a_misspelled_field_is_refused_before_the_profile_runs() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let text = format!(
            "echo x > '{}'\nreturn [exect: [git: 'allow']]",
            marker.display()
        );
        let err = load(&text).unwrap_err();
        assert!(err.contains("capability-profile"), "{err}");
        assert!(err.contains("exect"), "{err}");
        assert!(!marker.exists(), "the profile ran");
    }

    #[test]
    fn maps_lists_scalars_and_wrong_field_types_are_refused_statically() {
        for (text, says) in [
            ("return [:, exec: [git: 'allow']]", "a map"),
            ("return []", "empty list"),
            ("return 3", "Integer"),
            ("return [net: 'no']", "`net` is String"),
            ("return [fs: ['/']]", "`fs` is"),
            ("echo hi", "writes"),
        ] {
            let err = load(text).unwrap_err();
            assert!(err.contains("capability-profile"), "{text}: {err}");
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_profile_the_checker_cannot_type_is_decoded_strictly() {
        let ok = load("return !{from-json << '{\"net\": false}'}").unwrap();
        assert_eq!(ok.net, Some(false));
        let err = load("return !{from-json << '{\"network\": false}'}").unwrap_err();
        assert!(err.contains("unknown capability field `network`"), "{err}");
        let err = load("return !{from-json << '[1]'}").unwrap_err();
        assert!(err.contains("must return a capability record"), "{err}");
    }

    /// A built-in profile against a made-up environment.
    fn builtin(text: &str, vars: &[(&str, &str)]) -> Result<(Layer, Vec<LeftOut>), String> {
        let cwd = std::env::temp_dir();
        let owned: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let var = move |k: &str| owned.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        load_builtin_profile_with("<builtin>", text, &cwd, "profile `b`", Color::Never, &var)
    }

    fn writes(l: &Layer) -> Vec<String> {
        let (_, write) = l.fs.as_ref().unwrap().lists();
        write.iter().map(|p| p.display().to_string()).collect()
    }

    const CACHES: &str = "return [fs: [read: ['/'], write: ['cwd:', 'xdg:cache', '~/.npm']]]";

    #[test]
    fn a_builtin_profile_follows_an_xdg_directory_outside_home() {
        let (l, out) = builtin(
            CACHES,
            &[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/ci/cache")],
        )
        .unwrap();
        assert!(out.is_empty(), "{out:?}");
        let w = writes(&l);
        assert!(w.contains(&"/ci/cache".to_owned()), "{w:?}");
        assert!(w.contains(&"/home/u/.npm".to_owned()), "{w:?}");
        // A user's grant keeps the sigil's home rule.
        let cwd = std::env::temp_dir();
        let strict = decode_profile(
            &Value::record(Record::from_entries(vec![(
                "fs".to_owned(),
                Value::record(Record::from_entries(vec![(
                    "write".to_owned(),
                    Value::list(vec![Value::str("xdg:cache")]),
                )])),
            )])),
            &DecodeEnv {
                cwd: &cwd,
                var: &|k| match k {
                    "HOME" => Some("/home/u".to_owned()),
                    "XDG_CACHE_HOME" => Some("/ci/cache".to_owned()),
                    _ => None,
                },
            },
        );
        assert!(strict.is_err());
    }

    #[test]
    fn a_builtin_profile_leaves_out_what_it_cannot_resolve_and_says_why() {
        // No HOME and no XDG_CACHE_HOME: both home entries go, the rest stays.
        let (l, out) = builtin(CACHES, &[]).unwrap();
        let named: Vec<(&str, &str)> = out.iter().map(|o| (o.list, o.entry.as_str())).collect();
        assert_eq!(
            named,
            vec![("write", "xdg:cache"), ("write", "~/.npm")],
            "{out:?}"
        );
        assert!(out[0].reason.contains("HOME"), "{}", out[0].reason);
        assert!(out[1].reason.contains("HOME"), "{}", out[1].reason);
        assert_eq!(writes(&l).len(), 1, "{:?}", writes(&l));
        // No HOME, but an absolute cache directory: that entry resolves.
        let (l, out) = builtin(CACHES, &[("XDG_CACHE_HOME", "/ci/cache")]).unwrap();
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(writes(&l).contains(&"/ci/cache".to_owned()));
        // A relative value is ignored, as the XDG specification says.
        let (l, out) = builtin(CACHES, &[("HOME", "/h"), ("XDG_CACHE_HOME", "rel")]).unwrap();
        assert!(out.is_empty(), "{out:?}");
        assert!(writes(&l).contains(&"/h/.cache".to_owned()));
    }

    #[test]
    fn a_builtin_xdg_entry_never_widens_to_the_root_or_the_home_directory() {
        for (cache, says) in [
            ("/", "root"),
            ("/home/u", "holds the home"),
            ("/home", "holds the home"),
        ] {
            let (l, out) =
                builtin(CACHES, &[("HOME", "/home/u"), ("XDG_CACHE_HOME", cache)]).unwrap();
            assert_eq!(out.len(), 1, "{cache}: {out:?}");
            assert!(out[0].reason.contains(says), "{cache}: {}", out[0].reason);
            assert!(!writes(&l).contains(&cache.to_owned()), "{cache}");
        }
    }

    #[test]
    fn a_builtin_profile_stays_strict_where_leaving_out_would_widen() {
        // A deny entry that cannot be resolved refuses the profile.
        let err = builtin("return [fs: [read: ['/'], deny: ['~/.ssh']]]", &[]).unwrap_err();
        assert!(err.contains("HOME"), "{err}");
        // So do a malformed field and a profile that fails.
        assert!(builtin("return [fs: [read: ['/'], writ: []]]", &[]).is_err());
        assert!(builtin("fail [status: 1, message: 'no']", &[]).is_err());
    }

    #[test]
    fn a_failing_or_malformed_profile_is_refused() {
        assert!(load("fail [status: 3, message: 'no']")
            .unwrap_err()
            .contains("failed"));
        assert!(load("return [fs: [read: ['relative']]]")
            .unwrap_err()
            .contains("relative path"));
        assert!(load("return [fs: [read: [").is_err());
    }
}
