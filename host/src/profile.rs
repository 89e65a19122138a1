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

use std::path::Path;

use ral_syntax::render::{render, render_all, Color};
use ral_syntax::{Code, Diagnostic, SourceId, SourceMap, Span};
use ral_types::{print_ty, CheckOptions, Con, Ty, TyStore, TyView};
use ral_vm::caps::{decode_profile, DecodeEnv, Layer};

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
    let var = |k: &str| std::env::var(k).ok();
    let layer = decode_profile(&value, &DecodeEnv { cwd, var: &var })
        .map_err(|f| format!("capability profile {script}: {}\n", f.message))?;
    Ok(layer.labelled(label))
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
