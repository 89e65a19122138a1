//! Plugins, hooks, keybindings and the editor interface against a real
//! shell (spec §15.5–§15.7).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;

use super::*;
use crate::{TurnReport, TurnRequest};

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-plugins-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    dir
}

fn session(config: &std::path::Path) -> (Shell, Arc<Interactive>) {
    let mut shell = Shell::new();
    let inter = Interactive::new(Some(config.to_path_buf()));
    inter.install(&mut shell).unwrap();
    (shell, inter)
}

/// Runs `src` and returns its value; panics on anything else.
fn ok(shell: &mut Shell, src: &str) -> Value {
    let mut req = TurnRequest::new("<t>");
    req.io = TurnIo::Capture;
    match shell.run_turn(src, req) {
        TurnReport::Ran {
            result: Settled::Ok(v),
            ..
        } => v,
        other => panic!("{src}: {other:?}"),
    }
}

/// Runs `src` and returns its failure's message.
fn fails(shell: &mut Shell, src: &str) -> String {
    let mut req = TurnRequest::new("<t>");
    req.io = TurnIo::Capture;
    match shell.run_turn(src, req) {
        TurnReport::Ran {
            result: Settled::Failed(f),
            ..
        } => f.message.clone(),
        other => panic!("{src} should fail: {other:?}"),
    }
}

const RECORDER: &str = "\
let log = { |what| echo $what >> $[!{cwd}] }
return [
    name: recorder,
    hooks: [
        pre-exec: { |e| return () },
        prompt: { |p| return \"[rec] $p\" },
        chpwd: { |e| return () },
    ],
    keybindings: [
        [key: 'ctrl-g', guard: '', handler: { |e| _ed-insert 'hello' }],
        [key: 'tab', guard: '^go ', handler: { |e| _ed-set-lbuffer 'go home' }],
    ],
    aliases: [greet: { |args| echo 'hi' ...$args }],
]
";

#[test]
fn a_plugin_loads_by_name_and_its_parts_work() {
    let dir = scratch("load");
    std::fs::write(dir.join("plugins/recorder.ral"), RECORDER).unwrap();
    let (mut shell, inter) = session(&dir);
    ok(&mut shell, "load-plugin recorder");
    assert_eq!(inter.plugin_names(), vec!["recorder"]);
    // The file's own names stay hidden.
    assert!(shell.get("log").is_none());
    // Its alias runs.
    let v = ok(&mut shell, "return !{greet there}");
    assert_eq!(v, Value::str("hi there"));
    // Prompt hooks compose.
    let (p, reports) = inter.prompt(&mut shell, "~ ❯ ".into());
    assert_eq!(p, "[rec] ~ ❯ ");
    assert!(reports.is_empty(), "{reports:?}");
    // A modified chord is unguarded; tab needs and honours its guard.
    let out = inter
        .keybinding(&mut shell, Key::Ctrl('g'), "echo ", 5)
        .unwrap();
    assert_eq!((out.text.as_str(), out.cursor), ("echo hello", 10));
    assert!(inter.keybinding(&mut shell, Key::Tab, "ls ", 3).is_none());
    let out = inter
        .keybinding(&mut shell, Key::Tab, "go x rest", 3)
        .unwrap();
    assert_eq!((out.text.as_str(), out.cursor), ("go homex rest", 7));
    let (_, keys) = inter.bound_keys();
    assert!(keys.contains(&Key::Ctrl('g')) && keys.contains(&Key::Tab));
    // A second load of the same name is refused; unload removes it all.
    assert!(fails(&mut shell, "load-plugin recorder").contains("already loaded"));
    ok(&mut shell, "unload-plugin recorder");
    assert!(inter.plugin_names().is_empty());
    assert!(inter
        .keybinding(&mut shell, Key::Ctrl('g'), "", 0)
        .is_none());
    assert!(fails(&mut shell, "greet").contains("greet"));
    assert!(fails(&mut shell, "unload-plugin recorder").contains("no plugin"));
}

#[test]
fn lifecycle_hooks_get_one_record_and_must_return_unit() {
    let dir = scratch("hooks");
    let plugin = "\
return [
    name: rec,
    hooks: [
        pre-exec: { |e| return $e[src] },
        post-exec: { |e| if $[$e[status] == 0] { return () } else { fail [status: 2, message: 'bad status'] } },
        chpwd: { |e| if $[$e[new] == '/'] { fail [status: 4, message: 'no root'] } else { return () } },
    ],
]
";
    std::fs::write(dir.join("rec.ral"), plugin).unwrap();
    let (mut shell, inter) = session(&dir);
    ok(
        &mut shell,
        &format!("load-plugin '{}'", dir.join("rec").display()),
    );
    // A non-Unit result is a hook failure, reported.
    let r = inter.pre_exec(&mut shell, "echo hi");
    assert_eq!(r.len(), 1);
    assert!(
        r[0].contains("pre-exec") && r[0].contains("not ()"),
        "{r:?}"
    );
    assert!(inter.post_exec(&mut shell, "echo hi", 0).is_empty());
    let r = inter.post_exec(&mut shell, "false", 3);
    assert!(
        r[0].contains("post-exec") && r[0].contains("bad status"),
        "{r:?}"
    );
    let r = inter.chpwd(&mut shell, "/tmp", "/");
    assert!(r[0].contains("no root"), "{r:?}");
    assert!(inter.chpwd(&mut shell, "/", "/tmp").is_empty());
}

#[test]
fn buffer_change_feeds_ghost_text_and_is_protected() {
    let dir = scratch("buffer");
    let suggest = "\
return [
    name: suggest,
    hooks: [buffer-change: { |e|
        if $[$e[line] == 'ec'] { _ed-ghost 'ho' } else { _ed-ghost '' }
    }],
]
";
    let slow = "\
let spin = { |n| if $[$n > 0] { spin $[$n - 1] } else { return () } }
return [name: slow, hooks: [buffer-change: { |e| spin 100000000 }]]
";
    let failing =
        "return [name: failing, hooks: [buffer-change: { |e| fail [status: 1, message: boom] }]]";
    std::fs::write(dir.join("plugins/suggest.ral"), suggest).unwrap();
    std::fs::write(dir.join("plugins/slow.ral"), slow).unwrap();
    std::fs::write(dir.join("plugins/failing.ral"), failing).unwrap();
    let (mut shell, inter) = session(&dir);
    ok(&mut shell, "load-plugin suggest");
    inter.set_editor_context(Arc::new(vec!["echo hi".into()]), "emacs");
    inter.new_line();
    inter.buffer_change(&mut shell, "ec", 2);
    assert_eq!(inter.editor_view().ghost.as_deref(), Some("ho"));
    inter.buffer_change(&mut shell, "ech", 3);
    assert_eq!(inter.editor_view().ghost, None);
    // A run over 100 ms disables that plugin's hook, with a notice, and
    // is cut short rather than hanging the editor.
    ok(&mut shell, "load-plugin slow");
    let started = std::time::Instant::now();
    let r = inter.buffer_change(&mut shell, "x", 1);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(
        r.iter().any(|m| m.contains("slow") && m.contains("off")),
        "{r:?}"
    );
    let started = std::time::Instant::now();
    inter.buffer_change(&mut shell, "xy", 2);
    assert!(
        started.elapsed() < BUFFER_CHANGE_LIMIT,
        "the slow hook is off"
    );
    // Three failures in a row disable it too.
    ok(&mut shell, "load-plugin failing");
    let mut all = Vec::new();
    for line in ["a", "ab", "abc", "abcd"] {
        all.extend(inter.buffer_change(&mut shell, line, line.len()));
    }
    assert_eq!(
        all.iter().filter(|m| m.contains("boom")).count(),
        3,
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|m| m.contains("failing") && m.contains("off")),
        "{all:?}"
    );
}

#[test]
fn a_factory_gets_its_options_and_loads_are_atomic() {
    let dir = scratch("factory");
    let factory = "\
return { |options|
    let key = get $options key 'ctrl-t'
    return [name: 'fact', keybindings: [[key: $key, guard: '', handler: { |e| _ed-insert $key }]]]
}
";
    std::fs::write(dir.join("plugins/fact.ral"), factory).unwrap();
    let (mut shell, inter) = session(&dir);
    let opts = Value::record(ral_vm::Record::from_entries(vec![(
        "key".into(),
        Value::str("alt-k"),
    )]));
    inter.load_plugin(&mut shell, "fact", opts).unwrap();
    let out = inter.keybinding(&mut shell, Key::Alt('k'), "", 0).unwrap();
    assert_eq!(out.text, "alt-k");

    // Refused statically, before the file runs: it would write a file.
    let marker = dir.join("ran");
    let misspelled = format!("echo x > '{}'\nreturn [nam: broken]", marker.display());
    std::fs::write(dir.join("plugins/broken.ral"), misspelled).unwrap();
    let e = fails(&mut shell, "load-plugin broken");
    assert!(e.contains("`nam` is not a key of a plugin manifest"), "{e}");
    assert!(!marker.exists(), "the refused plugin ran");

    // Refused whole: a bad key after a good alias installs nothing.
    let partial = "return [name: part, aliases: [part-alias: { |a| echo x }], \
                   keybindings: [[key: 'ctrl-q', handler: { |e| return () }], \
                                 [key: 'x', handler: { |e| return () }]]]";
    // (`x` is unmodified: it needs a guard.)
    std::fs::write(dir.join("plugins/part.ral"), partial).unwrap();
    let e = fails(&mut shell, "load-plugin part");
    assert!(e.contains("needs a `guard`"), "{e}");
    assert!(!shell.alias_names().contains(&"part-alias".to_owned()));
    assert_eq!(inter.plugin_names(), vec!["fact"]);

    for (file, body, want) in [
        (
            "arity",
            "return [name: a, hooks: [chpwd: { |a b| return () }]]",
            "one argument",
        ),
        (
            "hookname",
            "return [name: h, hooks: [on-save: { |e| return () }]]",
            "not a hook",
        ),
        (
            "guard",
            "return [name: g, keybindings: [[key: tab, guard: '(', handler: { |e| return () }]]]",
            "regex",
        ),
        (
            "reserved",
            "return [name: r, keybindings: [[key: 'ctrl-c', handler: { |e| return () }]]]",
            "reserved",
        ),
        (
            "caps",
            "return [name: c, capabilities: [exec: [:]]]",
            "not a key",
        ),
        ("mapped", "return [:, name: m]", "map"),
    ] {
        std::fs::write(dir.join(format!("plugins/{file}.ral")), body).unwrap();
        let e = fails(&mut shell, &format!("load-plugin {file}"));
        assert!(e.contains(want), "{file}: {e}");
    }
    assert_eq!(inter.plugin_names(), vec!["fact"]);
}

#[test]
fn the_editor_interface_needs_a_handler_and_counts_characters() {
    let dir = scratch("editor");
    let plugin = "\
return [
    name: ed,
    keybindings: [
        [key: 'ctrl-p', guard: '', handler: { |e|
            let p = _ed-parse
            _ed-set [text: `set \"$p[current]:$p[offset]:!{_ed-lbuffer}\", cursor: `set 1]
        }],
        [key: 'ctrl-s', guard: '', handler: { |e|
            let n = _ed-state 0 { |c| return $[$c + 1] }
            _ed-insert \"$n\"
        }],
        [key: 'ctrl-a', guard: '', handler: { |e| _ed-push }],
        [key: 'ctrl-e', guard: '', handler: { |e| _ed-insert 'run'; _ed-accept }],
        [key: 'ctrl-h', guard: '', handler: { |e| _ed-insert !{_ed-history 'ec' 1}[0] }],
    ],
]
";
    std::fs::write(dir.join("plugins/ed.ral"), plugin).unwrap();
    let (mut shell, inter) = session(&dir);
    // Outside a handler the interface refuses.
    assert!(fails(&mut shell, "_ed-text").contains("plugin handler"));
    ok(&mut shell, "load-plugin ed");
    // Character offsets: `é` is two bytes and one character.
    let line = "é ab cd";
    let out = inter
        .keybinding(&mut shell, Key::Ctrl('p'), line, "é ab".len())
        .unwrap();
    assert_eq!(out.text, "1:2:é ab");
    assert_eq!(out.cursor, "1".len());
    // The state cell persists per plugin.
    let a = inter.keybinding(&mut shell, Key::Ctrl('s'), "", 0).unwrap();
    let b = inter.keybinding(&mut shell, Key::Ctrl('s'), "", 0).unwrap();
    assert_eq!((a.text.as_str(), b.text.as_str()), ("1", "2"));
    // Push stashes the buffer for the next prompt; accept asks to run.
    let out = inter
        .keybinding(&mut shell, Key::Ctrl('a'), "half typed", 4)
        .unwrap();
    assert_eq!(out.text, "");
    assert_eq!(inter.new_line().as_deref(), Some("half typed"));
    let out = inter.keybinding(&mut shell, Key::Ctrl('e'), "", 0).unwrap();
    assert!(out.accept);
    inter.set_editor_context(
        Arc::new(vec!["echo a".into(), "ls".into(), "echo b".into()]),
        "emacs",
    );
    let out = inter.keybinding(&mut shell, Key::Ctrl('h'), "", 0).unwrap();
    assert_eq!(out.text, "echo b");
}

#[test]
fn command_words_at_the_cursor() {
    let w = |t: &str, c: usize| editor::command_words(t, c);
    let strs = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(w("git com", 7), (strs(&["git", "com"]), 1, 4));
    assert_eq!(w("ls | grep x", 11), (strs(&["grep", "x"]), 1, 10));
    assert_eq!(w("echo  x", 5), (strs(&["echo", "", "x"]), 1, 5));
    assert_eq!(w("echo $a[b]", 10), (strs(&["echo", "$a[b]"]), 1, 5));
    assert_eq!(w("a && b", 1).0, Vec::<String>::new());
}

#[test]
fn keys_parse_as_the_spec_writes_them() {
    assert_eq!(Key::parse("tab"), Ok(Key::Tab));
    assert_eq!(Key::parse("f12"), Ok(Key::F(12)));
    assert_eq!(Key::parse("ctrl-r"), Ok(Key::Ctrl('r')));
    assert_eq!(Key::parse("alt-."), Ok(Key::Alt('.')));
    assert_eq!(Key::parse("x"), Ok(Key::Char('x')));
    assert!(Key::parse("ctrl-d").is_err());
    assert!(Key::parse("f13").is_err());
    assert!(Key::parse("hyper-x").is_err());
    assert!(Key::Tab.needs_guard() && !Key::F(1).needs_guard() && !Key::Ctrl('x').needs_guard());
}
