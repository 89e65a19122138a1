//! The interactive session's extensions (spec §15.5–§15.7): plugins, their
//! hooks and keybindings, and the editor interface (`_ed-*`) handlers use.
//!
//! A host that edits lines (the REPL) makes one [`Interactive`] and calls
//! [`Interactive::install`], which registers `load-plugin`,
//! `unload-plugin` and the `_ed-*` builtins on the shell. The host then
//! drives the session's extensions at the points the spec names:
//!
//! | call | when (§15.6) |
//! |---|---|
//! | [`Interactive::pre_exec`] | before an entry runs |
//! | [`Interactive::post_exec`] | after it settles, with its status |
//! | [`Interactive::chpwd`] | after an entry that changed the directory |
//! | [`Interactive::prompt`] | before each prompt, on the base prompt |
//! | [`Interactive::buffer_change`] | after the text or cursor changed |
//! | [`Interactive::keybinding`] | when a bound key is pressed |
//!
//! Every hook and handler takes one argument. Hooks run in plugin load
//! order; a failed lifecycle hook is reported (returned as a message) and
//! the later plugins' hooks still run; the four `Unit` contracts are
//! enforced (another result is a hook failure). Prompt hooks compose, a
//! failure or a non-string leaving the prompt as it was. A
//! `buffer-change` hook runs under a 100 ms deadline: one run over it, or
//! three failures in a row, disables that plugin's hook for the session
//! with a notice (the deadline also cancels the run, so a looping handler
//! cannot hang the editor).
//!
//! Keybindings form one ordered table (load order, then manifest order,
//! then the editor's own action): the first binding for the key whose
//! guard (a regular expression) matches the text left of the cursor
//! claims it; with none, the editor does what the key does anyway.
//!
//! **Locks.** The state is behind one mutex that is never held while ral
//! code runs: handlers call the `_ed-*` builtins, which take it.

mod editor;
mod plugins;

pub mod contract;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ral_vm::{Record, Value};

use crate::turn::{Settled, TurnIo};
use crate::Shell;

pub use editor::EditorView;
pub use plugins::HookKind;

/// The deadline of one `buffer-change` run (§15.6).
pub const BUFFER_CHANGE_LIMIT: Duration = Duration::from_millis(100);
/// Failures in a row that disable a `buffer-change` hook.
const BUFFER_CHANGE_FAILURES: u32 = 3;

/// A key a plugin may bind (§15.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Tab,
    Enter,
    Escape,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    Delete,
    Backspace,
    /// `f1` … `f12`.
    F(u8),
    /// One character, unmodified.
    Char(char),
    /// `ctrl-x`.
    Ctrl(char),
    /// `alt-x`.
    Alt(char),
}

impl Key {
    /// Reads key notation: `tab`, `enter`, `escape`, `up`, `down`, `left`,
    /// `right`, `home`, `end`, `delete`, `backspace`, `f1`–`f12`, one
    /// character, `ctrl-c`, `alt-c`. Ctrl-C and Ctrl-D are reserved.
    pub fn parse(text: &str) -> Result<Key, String> {
        let one = |s: &str| {
            let mut cs = s.chars();
            match (cs.next(), cs.next()) {
                (Some(c), None) => Some(c),
                _ => None,
            }
        };
        let key = match text {
            "tab" => Key::Tab,
            "enter" => Key::Enter,
            "escape" => Key::Escape,
            "up" => Key::Up,
            "down" => Key::Down,
            "left" => Key::Left,
            "right" => Key::Right,
            "home" => Key::Home,
            "end" => Key::End,
            "delete" => Key::Delete,
            "backspace" => Key::Backspace,
            _ => {
                if let Some(n) = text.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                    if (1..=12).contains(&n) {
                        return Ok(Key::F(n));
                    }
                }
                if let Some(c) = text.strip_prefix("ctrl-").and_then(one) {
                    let c = c.to_ascii_lowercase();
                    if c == 'c' || c == 'd' {
                        return Err(format!("`{text}` is reserved and cannot be bound"));
                    }
                    Key::Ctrl(c)
                } else if let Some(c) = text.strip_prefix("alt-").and_then(one) {
                    Key::Alt(c)
                } else if let Some(c) = one(text) {
                    Key::Char(c)
                } else {
                    return Err(format!(
                        "`{text}` is not a key (tab, enter, escape, up, down, left, right, \
                         home, end, delete, backspace, f1-f12, a character, ctrl-x, alt-x)"
                    ));
                }
            }
        };
        Ok(key)
    }

    /// Whether binding the key needs a guard: every unmodified key but the
    /// function keys already has an editor action.
    pub fn needs_guard(self) -> bool {
        !matches!(self, Key::F(_) | Key::Ctrl(_) | Key::Alt(_))
    }
}

/// What a keybinding handler left in the editor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyOutcome {
    /// The buffer after the handler.
    pub text: String,
    /// The cursor after the handler (a byte offset into `text`).
    pub cursor: usize,
    /// `_ed-accept`: run the buffer now.
    pub accept: bool,
    /// Messages to show (a failed handler).
    pub reports: Vec<String>,
}

/// The session's plugins and editor state; see the module docs.
#[derive(Debug)]
pub struct Interactive {
    state: Mutex<State>,
    /// `$XDG_CONFIG_HOME/ral` or `~/.config/ral` (plugins live in
    /// `plugins/` under it).
    config_dir: Option<PathBuf>,
}

#[derive(Debug, Default)]
struct State {
    plugins: Vec<plugins::Plugin>,
    editor: editor::EditorState,
    /// Options for the next `load-plugin` (the rc file's `plugins:`).
    pending_options: Option<Value>,
    /// Bumped whenever the keybinding table changes.
    keys_epoch: u64,
    /// Notices for the host to print (a disabled hook, a hidden binding).
    notices: Vec<String>,
}

impl Interactive {
    /// A fresh state; plugins are searched under `config_dir/plugins`.
    pub fn new(config_dir: Option<PathBuf>) -> Arc<Interactive> {
        Arc::new(Interactive {
            state: Mutex::new(State::default()),
            config_dir,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `load-plugin`, `unload-plugin` and the `_ed-*` builtins on
    /// `shell`. An error means the builtin table and the host disagree.
    pub fn install(self: &Arc<Interactive>, shell: &mut Shell) -> Result<(), String> {
        plugins::install(self, shell)?;
        editor::install(self, shell)
    }

    /// Loads a plugin with `options` (the rc file's `plugins:` entries),
    /// as `load-plugin` does with an empty options map. `Err` is the
    /// message.
    pub fn load_plugin(&self, shell: &mut Shell, name: &str, options: Value) -> Result<(), String> {
        self.lock().pending_options = Some(options);
        let (settled, _) = shell.call_value(
            builtin_value("load-plugin"),
            vec![Value::str(name)],
            TurnIo::Inherit,
        );
        self.lock().pending_options = None;
        match settled {
            Settled::Ok(_) => Ok(()),
            Settled::Failed(f) => Err(f.message.clone()),
            Settled::Exit(n) => Err(format!("the plugin exited with status {n}")),
        }
    }

    /// The loaded plugins' names, in load order.
    pub fn plugin_names(&self) -> Vec<String> {
        self.lock().plugins.iter().map(|p| p.name.clone()).collect()
    }

    /// The keys some plugin binds, and a number that changes whenever
    /// that set may have (so a host rebinds only when it must).
    pub fn bound_keys(&self) -> (u64, Vec<Key>) {
        let st = self.lock();
        let mut keys: Vec<Key> = st
            .plugins
            .iter()
            .flat_map(|p| p.keybindings.iter().map(|k| k.key))
            .collect();
        keys.dedup();
        (st.keys_epoch, keys)
    }

    /// Queues messages for the host to show at its next chance (from a
    /// callback that cannot print without tearing the line being edited).
    pub fn note(&self, msgs: Vec<String>) {
        if !msgs.is_empty() {
            self.lock().notices.extend(msgs);
        }
    }

    /// Takes the notices waiting to be shown.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().notices)
    }

    /// Sets what the editor interface reports between handler runs: the
    /// history (oldest first) and the keymap name.
    pub fn set_editor_context(&self, history: Arc<Vec<String>>, keymap: &str) {
        let mut st = self.lock();
        st.editor.history = history;
        st.editor.keymap = keymap.to_owned();
    }

    /// What the plugins want shown: ghost text and highlight spans.
    pub fn editor_view(&self) -> EditorView {
        self.lock().editor.view()
    }

    /// Clears the per-line display state (ghost text, highlights) for a
    /// new prompt, and returns a buffer `_ed-push` stashed, if any.
    pub fn new_line(&self) -> Option<String> {
        let mut st = self.lock();
        st.editor.ghost = None;
        st.editor.highlights.clear();
        st.editor.last_text = None;
        st.editor.pushed.pop()
    }

    /// The plugin hooks of `kind`, in load order, with their owners.
    fn hooks(&self, kind: HookKind) -> Vec<(String, Value)> {
        self.lock()
            .plugins
            .iter()
            .filter(|p| kind != HookKind::BufferChange || !p.buffer_change_off)
            .flat_map(|p| {
                p.hooks
                    .iter()
                    .filter(|(k, _)| *k == kind)
                    .map(|(_, h)| (p.name.clone(), h.clone()))
            })
            .collect()
    }

    /// Runs the `Unit`-returning lifecycle hooks of `kind` on `event`;
    /// returns a message per failed hook.
    fn lifecycle(&self, shell: &mut Shell, kind: HookKind, event: Value) -> Vec<String> {
        let mut reports = Vec::new();
        for (plugin, hook) in self.hooks(kind) {
            // A handler of its plugin (so `_ed-state` reaches its cell),
            // over an empty buffer: no line is being edited.
            self.begin(&plugin, "", 0, false);
            let (settled, _) = shell.call_value(hook, vec![event.clone()], TurnIo::Inherit);
            self.end();
            if let Err(msg) = unit_result(settled) {
                reports.push(format!("plugin {plugin}: {} hook: {msg}", kind.name()));
            }
        }
        reports
    }

    /// `pre-exec` hooks: `[src: String]`.
    pub fn pre_exec(&self, shell: &mut Shell, src: &str) -> Vec<String> {
        self.lifecycle(
            shell,
            HookKind::PreExec,
            record(vec![("src", Value::str(src))]),
        )
    }

    /// `post-exec` hooks: `[src: String, status: Int]`.
    pub fn post_exec(&self, shell: &mut Shell, src: &str, status: i32) -> Vec<String> {
        let event = record(vec![
            ("src", Value::str(src)),
            ("status", Value::Int(i64::from(status))),
        ]);
        self.lifecycle(shell, HookKind::PostExec, event)
    }

    /// `chpwd` hooks: `[old: String, new: String]`.
    pub fn chpwd(&self, shell: &mut Shell, old: &str, new: &str) -> Vec<String> {
        let event = record(vec![("old", Value::str(old)), ("new", Value::str(new))]);
        self.lifecycle(shell, HookKind::Chpwd, event)
    }

    /// `prompt` hooks, composed on `base`; failures leave the prompt as it
    /// was and are reported.
    pub fn prompt(&self, shell: &mut Shell, base: String) -> (String, Vec<String>) {
        let mut prompt = base;
        let mut reports = Vec::new();
        for (plugin, hook) in self.hooks(HookKind::Prompt) {
            let (settled, _) =
                shell.call_value(hook, vec![Value::str(prompt.clone())], TurnIo::Inherit);
            match settled {
                Settled::Ok(Value::Str(s)) => prompt = s.to_string(),
                Settled::Ok(other) => reports.push(format!(
                    "plugin {plugin}: prompt hook returned {}, not a String",
                    other.kind_name()
                )),
                Settled::Failed(f) => {
                    reports.push(format!("plugin {plugin}: prompt hook: {}", f.message))
                }
                Settled::Exit(n) => reports.push(format!("plugin {plugin}: prompt hook: exit {n}")),
            }
        }
        (prompt, reports)
    }

    /// `buffer-change` hooks, when `line` or `pos` (a byte offset) differ
    /// from what they last saw; each under the deadline (see the module
    /// docs). Returns the notices and failures to show.
    pub fn buffer_change(&self, shell: &mut Shell, line: &str, pos: usize) -> Vec<String> {
        let (old, history, keymap) = {
            let mut st = self.lock();
            let now = (line.to_owned(), pos);
            if st.editor.last_text.as_ref() == Some(&now) {
                return Vec::new();
            }
            let old = st
                .editor
                .last_text
                .replace(now)
                .map(|(t, _)| t)
                .unwrap_or_default();
            (old, st.editor.history.clone(), st.editor.keymap.clone())
        };
        let hooks = self.hooks(HookKind::BufferChange);
        if hooks.is_empty() {
            return Vec::new();
        }
        let mut reports = Vec::new();
        for (plugin, hook) in hooks {
            let state = self.plugin_state(&plugin);
            let event = record(vec![
                ("old_buf", Value::str(old.clone())),
                ("line", Value::str(line)),
                ("pos", Value::Int(char_offset(line, pos))),
                ("history", strings(&history)),
                ("keymap", Value::str(keymap.clone())),
                ("state", state),
            ]);
            self.begin(&plugin, line, pos, true);
            let cancel = shell.cancel_handle();
            let started = Instant::now();
            let deadline = Deadline::arm(BUFFER_CHANGE_LIMIT, move || cancel.cancel());
            let (settled, _) = shell.call_value(hook, vec![event], TurnIo::Inherit);
            drop(deadline);
            let took = started.elapsed();
            self.end();
            let failed = unit_result(settled).err();
            let mut st = self.lock();
            let Some(p) = st.plugins.iter_mut().find(|p| p.name == plugin) else {
                continue;
            };
            let disable = if took > BUFFER_CHANGE_LIMIT {
                Some(format!(
                    "plugin {plugin}: buffer-change took {} ms (limit {} ms); \
                     its buffer-change hook is off for this session",
                    took.as_millis(),
                    BUFFER_CHANGE_LIMIT.as_millis()
                ))
            } else if let Some(msg) = &failed {
                p.buffer_change_failures += 1;
                reports.push(format!("plugin {plugin}: buffer-change hook: {msg}"));
                (p.buffer_change_failures >= BUFFER_CHANGE_FAILURES).then(|| {
                    format!(
                        "plugin {plugin}: buffer-change failed {BUFFER_CHANGE_FAILURES} times \
                         in a row; its buffer-change hook is off for this session"
                    )
                })
            } else {
                p.buffer_change_failures = 0;
                None
            };
            if let Some(notice) = disable {
                p.buffer_change_off = true;
                reports.push(notice);
            }
        }
        reports
    }

    /// Runs the keybinding `key` claims with the cursor at byte `pos` of
    /// `line`, if one does (see the module docs); `None` leaves the key to
    /// the editor.
    pub fn keybinding(
        &self,
        shell: &mut Shell,
        key: Key,
        line: &str,
        pos: usize,
    ) -> Option<KeyOutcome> {
        let left = line.get(..pos).unwrap_or(line);
        let (plugin, handler, history, keymap) = {
            let st = self.lock();
            let (plugin, binding) = st.plugins.iter().find_map(|p| {
                p.keybindings
                    .iter()
                    .find(|b| b.key == key && b.guard.as_ref().is_none_or(|g| g.is_match(left)))
                    .map(|b| (p.name.clone(), b.handler.clone()))
            })?;
            (
                plugin,
                binding,
                st.editor.history.clone(),
                st.editor.keymap.clone(),
            )
        };
        let event = record(vec![
            ("line", Value::str(line)),
            ("cursor", Value::Int(char_offset(line, pos))),
            ("history", strings(&history)),
            ("keymap", Value::str(keymap)),
            ("state", self.plugin_state(&plugin)),
        ]);
        self.begin(&plugin, line, pos, false);
        let (settled, _) = shell.call_value(handler, vec![event], TurnIo::Inherit);
        let (text, cursor, accept) = self.end();
        let reports = match settled {
            Settled::Ok(_) => Vec::new(),
            Settled::Failed(f) => vec![format!("plugin {plugin}: keybinding: {}", f.message)],
            Settled::Exit(n) => vec![format!("plugin {plugin}: keybinding: exit {n}")],
        };
        Some(KeyOutcome {
            text,
            cursor,
            accept,
            reports,
        })
    }

    /// Marks a handler of `plugin` active over this buffer.
    fn begin(&self, plugin: &str, line: &str, pos: usize, buffer_change: bool) {
        let mut st = self.lock();
        st.editor.text = line.to_owned();
        st.editor.cursor = pos.min(line.len());
        st.editor.accept = false;
        st.editor.active = Some(editor::Active {
            plugin: plugin.to_owned(),
            buffer_change,
        });
    }

    /// Ends the active handler; the buffer, cursor and accept flag it left.
    fn end(&self) -> (String, usize, bool) {
        let mut st = self.lock();
        st.editor.active = None;
        let ed = &mut st.editor;
        (
            std::mem::take(&mut ed.text),
            std::mem::take(&mut ed.cursor),
            std::mem::take(&mut ed.accept),
        )
    }

    /// A plugin's `_ed-state` cell (`()` before the first update).
    fn plugin_state(&self, plugin: &str) -> Value {
        self.lock()
            .plugins
            .iter()
            .find(|p| p.name == plugin)
            .map_or(Value::Unit, |p| p.state.clone())
    }
}

/// A lifecycle hook's result: `Unit`, or the failure to report.
fn unit_result(settled: Settled<Value>) -> Result<(), String> {
    match settled {
        Settled::Ok(Value::Unit) => Ok(()),
        Settled::Ok(other) => Err(format!("returned {}, not ()", other.kind_name())),
        Settled::Failed(f) => Err(f.message.clone()),
        Settled::Exit(n) => Err(format!("exit {n}")),
    }
}

/// Runs `on_expiry` if not dropped within `limit`.
struct Deadline {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Deadline {
    fn arm(limit: Duration, on_expiry: impl FnOnce() + Send + 'static) -> Deadline {
        let (stop, wake) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("ral-hook-deadline".to_owned())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wake.recv_timeout(limit) {
                    on_expiry();
                }
            })
            .ok();
        Deadline {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A record value from entries.
fn record(entries: Vec<(&str, Value)>) -> Value {
    Value::record(Record::from_entries(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    ))
}

/// A list of strings, newest first (how hooks see history).
fn strings(history: &[String]) -> Value {
    Value::list(
        history
            .iter()
            .rev()
            .map(|s| Value::str(s.as_str()))
            .collect(),
    )
}

/// The character offset of byte offset `pos` (§15.7 counts characters).
fn char_offset(line: &str, pos: usize) -> i64 {
    let pos = pos.min(line.len());
    let count = line.char_indices().take_while(|(i, _)| *i < pos).count();
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The byte offset of character offset `n` of `line`, clamped.
fn byte_offset(line: &str, n: i64) -> usize {
    let n = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
    line.char_indices().nth(n).map_or(line.len(), |(i, _)| i)
}

/// The function value of builtin `name`, unapplied.
fn builtin_value(name: &str) -> Value {
    let id = ral_types::builtin_table().id(name).map_or(0, |id| id.0);
    Value::Func(Arc::new(ral_vm::Func::Builtin {
        id,
        applied: Box::new([]),
    }))
}

#[cfg(test)]
mod tests;
