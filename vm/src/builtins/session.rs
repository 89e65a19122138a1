//! The session family (§14.6, §10.2, §9.5) that acts on the machine: `cd`,
//! `alias`, `unalias`, `use`, `ask`, `help`, `explain`, `clear`, `reset`.
//!
//! Aliases are named handlers in one persistent frame at the bottom of the
//! handler stack (`Context::handlers[0]`, created on the first `alias`), so
//! they share the named-handler search with `within` frames, are outranked
//! by any inner frame, mask themselves while they run (an alias `ls` that
//! runs `ls` reaches the program), and persist across runs because the
//! context does. `within` restores the stack by truncation above the frame
//! it found, so it never removes the alias frame.
//!
//! An alias installed while a grant is in force keeps that grant stack
//! (`Context::alias_grants`) and runs under it, on top of whatever stack
//! its caller has: installing code inside a grant cannot hand it more
//! authority later (spec/capabilities.md, "Code installed under a grant").

use std::io::{BufRead, Write};

use super::{arg, str_arg, Ctx};
use crate::failure::Failure;
use crate::value::{Record, Value};

fn no_vm() -> Failure {
    Failure::error("this builtin needs a running machine")
}

/// The marker the alias frame carries in its catch-all slot.
pub(crate) const ALIAS_FRAME: &str = "<aliases>";

/// `cd dir`: changes the logical working directory (§10.2); persists
/// outside blocks and functions, undone only by an enclosing `within`.
pub fn cd(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let target = crate::display::to_text(arg(args, 0)?);
    ctx.vm().ok_or_else(no_vm)?.change_dir(&target)?;
    Ok(Value::Unit)
}

fn alias_frame(handlers: &mut Vec<Value>) -> Option<&mut Value> {
    let is_alias = |v: &Value| match v {
        Value::List(items) => {
            matches!(items.get(1), Some(Value::Str(s)) if s.as_str() == ALIAS_FRAME)
        }
        _ => false,
    };
    if handlers.first().is_some_and(is_alias) {
        handlers.first_mut()
    } else {
        None
    }
}

/// `alias name arm`: installs `arm` as a persistent named handler.
pub fn alias(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let name = str_arg(args, 0)?.to_owned();
    if name.is_empty() || name.chars().any(char::is_whitespace) {
        return Err(Failure::error(format!("alias: invalid name {name:?}")));
    }
    let arm = arg(args, 1)?.clone();
    let vm = ctx.vm().ok_or_else(no_vm)?;
    // The checker holds a written arm to `standsFor` (§17.7); this is the
    // same rule's arity half for an arm it could not see, checked before
    // anything is installed.
    match vm.arity_of(&arm) {
        Some(1) => {}
        Some(0) => {
            return Err(Failure::error(format!(
                "alias: the arm for `{name}` is a bare block; an arm takes the argument list: `{{ |args| … }}`"
            )))
        }
        Some(n) => {
            return Err(Failure::error(format!(
                "alias: the arm for `{name}` takes {n} arguments; an arm takes one, the argument list"
            )))
        }
        None => {
            return Err(Failure::error(format!(
                "alias: the arm for `{name}` is {}, not a block",
                arm.kind_name()
            )))
        }
    }
    let handlers = &mut vm.mobile.context.handlers;
    if alias_frame(handlers).is_none() {
        handlers.insert(
            0,
            Value::list(vec![
                Value::record(Record::empty()),
                Value::str(ALIAS_FRAME),
            ]),
        );
        // Frames above moved up one: so do the masks and saved depths.
        vm.shift_handler_frames();
    }
    // The alias keeps the grant stack in force now and runs under it
    // (on top of its caller's) wherever it is reached later.
    let installed_under = vm.grants.clone();
    let kept = &mut vm.mobile.context.alias_grants;
    kept.retain(|(n, _)| *n != name);
    if !installed_under.is_empty() {
        kept.push((name.clone(), installed_under));
    }
    let handlers = &mut vm.mobile.context.handlers;
    if let Some(Value::List(items)) = alias_frame(handlers) {
        let items = std::sync::Arc::make_mut(items);
        let named = match items.first() {
            Some(Value::Record(r)) => r.with(&name, arm),
            _ => Record::from_entries(vec![(name, arm)]),
        };
        items[0] = Value::record(named);
    }
    Ok(Value::Unit)
}

/// `unalias name`: removes an alias; fails if there is none.
pub fn unalias(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let name = str_arg(args, 0)?.to_owned();
    let vm = ctx.vm().ok_or_else(no_vm)?;
    let handlers = &mut vm.mobile.context.handlers;
    if let Some(Value::List(items)) = alias_frame(handlers) {
        let items = std::sync::Arc::make_mut(items);
        if let Some(Value::Record(r)) = items.first() {
            if r.has(&name) {
                let rest: Vec<(String, Value)> = r
                    .iter()
                    .filter(|(k, _)| k.as_str() != name)
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect();
                items[0] = Value::record(Record::from_entries(rest));
                vm.mobile.context.alias_grants.retain(|(n, _)| *n != name);
                return Ok(Value::Unit);
            }
        }
    }
    Err(Failure::error(format!("unalias: no alias named {name}")))
}

/// `use path`: a module's public bindings as a record (§10.3).
pub fn use_(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let path = crate::display::to_text(arg(args, 0)?);
    ctx.vm().ok_or_else(no_vm)?.use_module(&path)
}

/// `ask prompt`: prompts on the controlling terminal and reads one line.
pub fn ask(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let prompt = str_arg(args, 0)?;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|e| Failure::error(format!("ask: no terminal: {e}")))?;
    let mut out = &tty;
    out.write_all(prompt.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| Failure::error(format!("ask: {e}")))?;
    // The wait for the answer ends when the run is cancelled.
    let cancel = ctx.vm().map_or_else(
        || crate::exec::CancelProbe::of_flag(std::sync::Arc::default()),
        |vm| vm.cancel_probe(),
    );
    let reader = crate::waiting::Polled {
        fd: std::os::fd::AsRawFd::as_raw_fd(&tty),
        inner: &tty,
        cancel,
    };
    let mut line = String::new();
    if let Err(e) = std::io::BufReader::new(reader).read_line(&mut line) {
        ctx.poll()?;
        return Err(Failure::error(format!("ask: {e}")));
    }
    let keep = crate::codec::lines::strip_one_newline(&line).len();
    line.truncate(keep);
    Ok(Value::str(line))
}

/// `help` and `help NAME…`, a base handler taking the argument list
/// (deviations.md S12). Bare, the catalogue of what this shell installs
/// (§14.1, §15.4): sorted `Builtins:` and `Prelude:` sections, each name
/// with its one-line doc. Names starting with `_` are hidden, and so is a
/// host addition this host does not install (exarch's forms in `ral`,
/// `load-plugin` outside the interactive session). With names, each
/// name's entry ([`help_entry`]); a name the catalogue does not hold is a
/// message pointing at `explain`, which knows every other kind of name.
/// `help` informs and never fails.
pub fn help(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let table = ral_types::builtin_table();
    let installed: Vec<&ral_types::Builtin> = {
        let vm = ctx.vm();
        let vm = vm.as_deref();
        table
            .iter()
            .filter(|b| !b.name.starts_with('_'))
            .filter(|b| vm.is_none_or(|vm| vm.has_builtin(b.name)))
            .collect()
    };
    let names: Vec<String> = match args.first() {
        Some(Value::List(items)) => items.iter().map(crate::display::to_text).collect(),
        _ => Vec::new(),
    };
    if !names.is_empty() {
        let mut out = String::new();
        for name in &names {
            match installed.iter().find(|b| b.name == name.as_str()) {
                Some(b) => out.push_str(&help_entry(b)),
                None => out.push_str(&format!(
                    "help: `{name}` is not in the catalogue; `explain {name}` says what it is\n"
                )),
            }
        }
        ctx.write(out.as_bytes())?;
        return Ok(Value::Unit);
    }
    let mut out = String::new();
    for (title, prelude) in [("Builtins", false), ("Prelude", true)] {
        let mut names: Vec<&&ral_types::Builtin> = installed
            .iter()
            .filter(|b| (b.kind == ral_types::BuiltinKind::Prelude) == prelude)
            .collect();
        names.sort_by_key(|b| b.name);
        if names.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(title);
        out.push_str(":\n");
        for b in names {
            out.push_str(&format!("  {:<18} {}\n", b.name, b.doc));
        }
    }
    ctx.write(out.as_bytes())?;
    Ok(Value::Unit)
}

/// One catalogue entry: the name with its scheme, then its documentation
/// indented, and whether it is a builtin, a prelude function or a command
/// that takes an argument list.
pub fn help_entry(b: &ral_types::Builtin) -> String {
    let what = match b.kind {
        ral_types::BuiltinKind::Prelude => "a prelude function",
        ral_types::BuiltinKind::BaseHandler => "a command taking an argument list",
        ral_types::BuiltinKind::Builtin
        | ral_types::BuiltinKind::Decoder
        | ral_types::BuiltinKind::Boundary => "a builtin",
    };
    format!(
        "{} : {}\n  {}\n  ({what})\n",
        b.name,
        ral_types::print_scheme(b.scheme(), None),
        b.doc
    )
}

/// `explain name`: where `name` resolves and its type (§14.1, §15.4; see
/// [`crate::Vm::describe_name`]). When nothing answers to the name, the
/// documented names matching it (a case-insensitive regular expression,
/// or substring when it is not one) are listed; a name found nowhere is
/// only a message: `explain` informs and never fails.
pub fn explain(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let name = str_arg(args, 0)?.to_owned();
    let vm = ctx.vm().ok_or_else(no_vm)?;
    let text = match vm.describe_name(&name) {
        Some(t) => t,
        None => search_documented(&name),
    };
    ctx.write(text.as_bytes())?;
    Ok(Value::Unit)
}

/// The documented public names matching `query`, one per line, or a
/// message saying there are none.
fn search_documented(query: &str) -> String {
    let pattern = regex::RegexBuilder::new(query)
        .case_insensitive(true)
        .build()
        .ok();
    let lower = query.to_lowercase();
    let matches: Vec<String> = ral_types::builtin_table()
        .iter()
        .filter(|b| !b.name.starts_with('_'))
        .filter(|b| match &pattern {
            Some(re) => re.is_match(b.name) || re.is_match(b.doc),
            None => b.name.to_lowercase().contains(&lower) || b.doc.to_lowercase().contains(&lower),
        })
        .map(|b| format!("  {:<18} {}\n", b.name, b.doc))
        .collect();
    if matches.is_empty() {
        format!("explain: nothing is named `{query}`, and no documented name matches it\n")
    } else {
        format!(
            "explain: nothing is named `{query}`; documented names that match:\n{}",
            matches.concat()
        )
    }
}

/// `clear`: clears the terminal (ANSI erase and home).
pub fn clear(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    ctx.write(b"\x1b[H\x1b[2J")?;
    Ok(Value::Unit)
}

/// `reset`: resets the terminal (ANSI full reset).
pub fn reset(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    ctx.write(b"\x1bc")?;
    Ok(Value::Unit)
}
