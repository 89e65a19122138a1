//! `load-plugin` and `unload-plugin` (spec §15.5): finding a plugin file,
//! holding its result to the manifest table before it runs, running it
//! with its names hidden afterwards, applying a factory to its options,
//! validating the manifest whole, and registering it atomically.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ral_syntax::render::Color;
use ral_syntax::SourceMap;
use ral_types::{CheckOptions, Con, TyView};
use ral_vm::{Failure, Value, Vm};

use super::contract::{self, Verdict, MANIFEST};
use super::{builtin_value, Interactive, Key};
use crate::Shell;

/// The five hooks (§15.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    BufferChange,
    PreExec,
    PostExec,
    Chpwd,
    Prompt,
}

impl HookKind {
    const ALL: [HookKind; 5] = [
        HookKind::BufferChange,
        HookKind::PreExec,
        HookKind::PostExec,
        HookKind::Chpwd,
        HookKind::Prompt,
    ];

    /// The hook's name in a manifest.
    pub fn name(self) -> &'static str {
        match self {
            HookKind::BufferChange => "buffer-change",
            HookKind::PreExec => "pre-exec",
            HookKind::PostExec => "post-exec",
            HookKind::Chpwd => "chpwd",
            HookKind::Prompt => "prompt",
        }
    }

    fn parse(name: &str) -> Option<HookKind> {
        HookKind::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// One keybinding of a loaded plugin.
#[derive(Clone, Debug)]
pub(super) struct Binding {
    pub key: Key,
    pub handler: Value,
    pub guard: Option<regex::Regex>,
}

/// A loaded plugin.
#[derive(Clone, Debug)]
pub(super) struct Plugin {
    pub name: String,
    pub hooks: Vec<(HookKind, Value)>,
    pub keybindings: Vec<Binding>,
    pub aliases: Vec<String>,
    /// The `_ed-state` cell.
    pub state: Value,
    pub buffer_change_failures: u32,
    pub buffer_change_off: bool,
}

pub(super) fn install(inter: &Arc<Interactive>, shell: &mut Shell) -> Result<(), String> {
    let i = inter.clone();
    shell.register_host_builtin(
        "load-plugin",
        1,
        Arc::new(move |vm: &mut Vm, args: &[Value]| {
            let name = str_arg(args)?;
            let options = i
                .lock()
                .pending_options
                .take()
                .unwrap_or_else(|| Value::record(ral_vm::Record::empty()));
            load(&i, vm, &name, options).map_err(|m| Failure::error(format!("load-plugin: {m}")))
        }),
    )?;
    let i = inter.clone();
    shell.register_host_builtin(
        "unload-plugin",
        1,
        Arc::new(move |vm: &mut Vm, args: &[Value]| {
            let name = str_arg(args)?;
            unload(&i, vm, &name).map_err(|m| Failure::error(format!("unload-plugin: {m}")))
        }),
    )
}

fn str_arg(args: &[Value]) -> Result<String, Failure> {
    match args.first() {
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(other) => Ok(ral_vm::display::to_text(other)),
        None => Err(Failure::error("missing argument 1")),
    }
}

/// The file `name_or_path` names (§15.5): the config `plugins/`
/// directory, each `RAL_PATH` directory, the literal path, the path with
/// `.ral`.
fn find(inter: &Interactive, vm: &Vm, name: &str) -> Result<PathBuf, String> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(c) = &inter.config_dir {
        dirs.push(c.join("plugins"));
    }
    if let Some(path) = vm.mobile.context.var("RAL_PATH") {
        dirs.extend(path.split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    let mut tried = Vec::new();
    for d in &dirs {
        for cand in [d.join(name), d.join(format!("{name}.ral"))] {
            if cand.is_file() {
                return Ok(cand);
            }
            tried.push(cand);
        }
    }
    let literal = expand(vm, name);
    for cand in [
        literal.clone(),
        PathBuf::from(format!("{}.ral", literal.display())),
    ] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    Err(format!(
        "no plugin {name} (looked in {}, then for the path itself)",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// A path relative to the logical working directory, `~` for home.
fn expand(vm: &Vm, name: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").map(PathBuf::from);
    if name == "~" {
        if let Some(h) = home() {
            return h;
        }
    }
    if let Some(rest) = name.strip_prefix("~/") {
        if let Some(h) = home() {
            return h.join(rest);
        }
    }
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        vm.cwd().join(p)
    }
}

/// Loads, validates and registers a plugin; `Err` is the message.
fn load(inter: &Interactive, vm: &mut Vm, name: &str, options: Value) -> Result<Value, String> {
    let path = find(inter, vm, name)?;
    let result = eval_file(vm, &path)?;
    let manifest = match (&result, &options) {
        (Value::Func(_), _) => {
            if contract::func_arity(&result).is_some_and(|n| n != 1) {
                return Err(format!(
                    "{}: a factory takes exactly one options map",
                    path.display()
                ));
            }
            if !first_order(&options) {
                return Err(
                    "plugin options must be first-order data (no blocks or handles)".into(),
                );
            }
            vm.call_value(result.clone(), vec![options])
                .map_err(|e| match e {
                    ral_vm::Escape::Fail(f) => format!("the factory failed: {}", f.message),
                    ral_vm::Escape::Exit(n) => format!("the factory exited with status {n}"),
                })?
        }
        (Value::Record(_), Value::Record(o)) if !o.is_empty() => {
            return Err(format!(
                "{} returns a manifest, not a factory, so it takes no options",
                path.display()
            ))
        }
        _ => result,
    };
    let plugin = validate(&manifest)?;
    let mut st = inter.lock();
    if st.plugins.iter().any(|p| p.name == plugin.name) {
        return Err(format!("a plugin named {} is already loaded", plugin.name));
    }
    let existing = alias_names(vm);
    if let Some(a) = plugin.aliases.iter().find(|a| existing.contains(a)) {
        return Err(format!("alias {a} is already defined"));
    }
    // A later binding hidden by an earlier unguarded one loads, with a
    // warning naming the owner.
    for b in &plugin.keybindings {
        if let Some(owner) = st.plugins.iter().find(|p| {
            p.keybindings
                .iter()
                .any(|e| e.key == b.key && e.guard.is_none())
        }) {
            let warning = format!(
                "plugin {}: a keybinding is hidden by plugin {}'s unguarded binding of the same key",
                plugin.name, owner.name
            );
            st.notices.push(warning);
        }
    }
    drop(st);
    // Aliases are the only registration that can fail part-way: undo
    // what landed, so a refused load leaves nothing installed.
    let aliases = manifest_aliases(&manifest);
    let mut installed: Vec<String> = Vec::new();
    for (alias, arm) in aliases {
        if let Err(e) = vm.call_value(builtin_value("alias"), vec![Value::str(alias.clone()), arm])
        {
            for a in installed {
                let _ = vm.call_value(builtin_value("unalias"), vec![Value::str(a)]);
            }
            let msg = match e {
                ral_vm::Escape::Fail(f) => f.message.clone(),
                ral_vm::Escape::Exit(n) => format!("exit {n}"),
            };
            return Err(format!("cannot install alias {alias}: {msg}"));
        }
        installed.push(alias);
    }
    let mut st = inter.lock();
    st.keys_epoch += 1;
    st.plugins.push(plugin);
    Ok(Value::Unit)
}

fn unload(inter: &Interactive, vm: &mut Vm, name: &str) -> Result<Value, String> {
    let plugin = {
        let mut st = inter.lock();
        let Some(i) = st.plugins.iter().position(|p| p.name == name) else {
            return Err(format!("no plugin named {name} is loaded"));
        };
        st.keys_epoch += 1;
        st.plugins.remove(i)
    };
    for a in plugin.aliases {
        let _ = vm.call_value(builtin_value("unalias"), vec![Value::str(a)]);
    }
    Ok(Value::Unit)
}

/// Whether options are transportable data.
fn first_order(v: &Value) -> bool {
    match v {
        Value::Func(_) | Value::Handle(_) => false,
        Value::List(items) => items.iter().all(first_order),
        Value::Record(r) => r.iter().all(|(_, v)| first_order(v)),
        Value::Variant(var) => var.payload.as_ref().is_none_or(first_order),
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_) => true,
    }
}

/// The session's alias names (the alias frame at the bottom of the
/// handler stack).
fn alias_names(vm: &Vm) -> Vec<String> {
    match vm.mobile.context.handlers.first() {
        Some(Value::List(items)) if matches!(items.get(1), Some(Value::Str(s)) if s.as_str() == "<aliases>") => {
            match items.first() {
                Some(Value::Record(r)) => r.iter().map(|(k, _)| k.to_string()).collect(),
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn manifest_aliases(manifest: &Value) -> Vec<(String, Value)> {
    match manifest {
        Value::Record(m) => match m.get("aliases") {
            Some(Value::Record(a)) => a.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Checks a manifest value whole (§15.5) and builds the plugin.
fn validate(manifest: &Value) -> Result<Plugin, String> {
    contract::check_value(&MANIFEST, manifest)?;
    let Value::Record(m) = manifest else {
        return Err("a plugin must return a manifest record".into());
    };
    if m.has("capabilities") {
        return Err("a manifest cannot carry `capabilities`: use `grant` around the call".into());
    }
    let name = match m.get("name") {
        Some(Value::Str(s)) if !s.is_empty() => s.to_string(),
        _ => return Err("the manifest's `name` must be a non-empty String".into()),
    };
    let mut hooks = Vec::new();
    if let Some(Value::Record(h)) = m.get("hooks") {
        for (k, v) in h.iter() {
            let Some(kind) = HookKind::parse(k) else {
                return Err(format!(
                    "`{k}` is not a hook (buffer-change, pre-exec, post-exec, chpwd, prompt)"
                ));
            };
            one_argument(v, &format!("the {k} hook"))?;
            hooks.push((kind, v.clone()));
        }
    }
    let mut keybindings = Vec::new();
    if let Some(Value::List(items)) = m.get("keybindings") {
        for (i, item) in items.iter().enumerate() {
            let Value::Record(b) = item else {
                return Err(format!("keybinding {} must be a record", i + 1));
            };
            let key_text = match b.get("key") {
                Some(Value::Str(s)) => s.to_string(),
                _ => return Err(format!("keybinding {} needs a `key`", i + 1)),
            };
            let key = Key::parse(&key_text)?;
            let handler = b
                .get("handler")
                .cloned()
                .ok_or_else(|| format!("keybinding {key_text} needs a `handler`"))?;
            one_argument(&handler, &format!("the handler of {key_text}"))?;
            let guard = match b.get("guard") {
                Some(Value::Str(g)) => Some(
                    regex::Regex::new(g)
                        .map_err(|e| format!("the guard of {key_text} is not a regex: {e}"))?,
                ),
                _ => None,
            };
            if guard.is_none() && key.needs_guard() {
                return Err(format!(
                    "`{key_text}` already has an editor action; binding it needs a `guard`"
                ));
            }
            keybindings.push(Binding {
                key,
                handler,
                guard,
            });
        }
    }
    let mut aliases = Vec::new();
    for (a, arm) in manifest_aliases(manifest) {
        if !matches!(arm, Value::Func(_)) {
            return Err(format!("alias {a} must be a block"));
        }
        aliases.push(a);
    }
    Ok(Plugin {
        name,
        hooks,
        keybindings,
        aliases,
        state: Value::Unit,
        buffer_change_failures: 0,
        buffer_change_off: false,
    })
}

fn one_argument(v: &Value, what: &str) -> Result<(), String> {
    if !matches!(v, Value::Func(_)) {
        return Err(format!("{what} must be a block"));
    }
    match contract::func_arity(v) {
        Some(1) | None => Ok(()),
        Some(n) => Err(format!("{what} must take exactly one argument, not {n}")),
    }
}

/// Parses, checks (holding the result to the manifest table before
/// anything runs) and runs a plugin file; its top-level names are hidden
/// again afterwards, as a module's are.
fn eval_file(vm: &mut Vm, path: &Path) -> Result<Value, String> {
    let raw = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut sources = SourceMap::new();
    let id = sources.add(path.display().to_string(), &raw);
    let text = sources.text(id).to_owned();
    let parsed = ral_syntax::parse(&text, id);
    let render =
        |d: &[ral_syntax::Diagnostic]| ral_syntax::render::render_all(d, &sources, Color::Never);
    if parsed.has_errors() {
        return Err(format!(
            "{} does not parse:\n{}",
            path.display(),
            render(&parsed.diagnostics)
        ));
    }
    let types = ral_types::TypeEnv::new();
    let mut checked =
        ral_types::check_program(&parsed.program, id, &types, &CheckOptions::default());
    if checked.has_errors() {
        return Err(format!(
            "{} does not type-check:\n{}",
            path.display(),
            render(&checked.diagnostics)
        ));
    }
    // A factory's manifest is its function's result; a manifest is the
    // file's own.
    let mut result = checked.result;
    let store = &mut checked.store;
    let r = store.find(result);
    if let TyView::Con(Con::Returns { value, .. }) = store.view(r) {
        let v = store.find(value);
        if let TyView::Con(Con::Thunk(c)) = store.view(v) {
            let c = store.find(c);
            if let TyView::Con(Con::Arrow { result: inner, .. }) = store.view(c) {
                result = inner;
            }
        }
    }
    match contract::check_type(&MANIFEST, store, result) {
        Ok(Verdict::Fits | Verdict::Unknown) => {}
        Ok(Verdict::Unit) => {
            return Err(format!("{}: a manifest must have `name`", path.display()))
        }
        Err(msg) => return Err(format!("{}: {msg}", path.display())),
    }
    let module = ral_ir::lower_with_session(&parsed.program, &checked, id, &|_| false);
    let outer = vm.mobile.scope.take_reservations();
    let journal = vm.mobile.scope.swap_journal(None);
    let saved = vm.mobile.scope.clone();
    let ran = match vm.load(&module) {
        Ok(main) => vm.run_main(main).map_err(|e| match e {
            ral_vm::Escape::Fail(f) => format!("{} failed: {}", path.display(), f.message),
            ral_vm::Escape::Exit(n) => format!("{} exited with status {n}", path.display()),
        }),
        Err(e) => Err(format!("cannot compile {}: {e}", path.display())),
    };
    vm.mobile.scope.restore_names(&saved);
    vm.mobile.scope.put_reservations(outer);
    vm.mobile.scope.swap_journal(journal);
    ran
}
