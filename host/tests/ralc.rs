//! End-to-end tests of the `ralc` binary: exit statuses (spec §16.3),
//! diagnostics on stderr, stdin via `-`, several files at once, `--dump-ast`
//! and usage errors. Each test writes its inputs into its own directory under
//! Cargo's per-target temporary directory.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A well-formed program.
const GOOD: &str = "let greeting = 'hello'\necho $greeting\n";
/// A program with a lexical error: `&&` is not ral.
const BAD: &str = "echo a && echo b\n";
/// The code `BAD` must report.
const BAD_CODE: &str = "shell-and-or";

/// A fresh, empty directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("ralc-tests")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn ralc(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ralc"))
        .args(args)
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn status(out: &Output) -> i32 {
    out.status.code().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn good_file_exits_0_silently() {
    let dir = scratch("good");
    let good = write(&dir, "good.ral", GOOD.as_bytes());
    let out = ralc(&["--check", &good], b"");
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(stdout(&out), "");
}

#[test]
fn crlf_file_is_good() {
    let dir = scratch("crlf");
    let good = write(&dir, "crlf.ral", GOOD.replace('\n', "\r\n").as_bytes());
    let out = ralc(&["--check", &good], b"");
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));
}

#[test]
fn syntax_error_exits_2_with_code() {
    let dir = scratch("bad");
    let bad = write(&dir, "bad.ral", BAD.as_bytes());
    let out = ralc(&["--check", &bad], b"");
    assert_eq!(status(&out), 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("[{BAD_CODE}]")), "stderr: {err}");
    assert!(err.contains("bad.ral"), "stderr: {err}");
    assert!(!err.contains('\u{1b}'), "colour without a terminal: {err}");
}

#[test]
fn missing_file_exits_1() {
    let dir = scratch("missing");
    let missing = dir.join("nope.ral");
    let missing = missing.to_str().unwrap();
    let out = ralc(&["--check", missing], b"");
    assert_eq!(status(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("ralc: cannot read {missing}: ")),
        "stderr: {err}"
    );
}

#[test]
fn directory_is_unreadable() {
    let dir = scratch("directory");
    let out = ralc(&["--check", dir.to_str().unwrap()], b"");
    assert_eq!(status(&out), 1, "stderr: {}", stderr(&out));
    assert!(stderr(&out).contains("cannot read"));
}

#[test]
fn stdin_via_dash() {
    let out = ralc(&["--check", "-"], GOOD.as_bytes());
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));

    let out = ralc(&["--check", "-"], BAD.as_bytes());
    assert_eq!(status(&out), 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("[{BAD_CODE}]")), "stderr: {err}");
    assert!(err.contains("<stdin>"), "stderr: {err}");
}

#[test]
fn many_files_one_bad_reports_all() {
    let dir = scratch("many");
    let good = write(&dir, "good.ral", GOOD.as_bytes());
    let bad1 = write(&dir, "bad1.ral", BAD.as_bytes());
    let bad2 = write(&dir, "bad2.ral", b"echo x\necho y || echo z\n");
    let out = ralc(&["--check", &bad1, &good, &bad2], b"");
    assert_eq!(status(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("bad1.ral"), "stderr: {err}");
    assert!(err.contains("bad2.ral"), "stderr: {err}");
    assert!(!err.contains("good.ral"), "stderr: {err}");
    assert_eq!(err.matches(&format!("[{BAD_CODE}]")).count(), 2, "{err}");

    let out = ralc(&["--check", &good, &good], b"");
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));
}

#[test]
fn syntax_error_outranks_unreadable_file() {
    let dir = scratch("mixed");
    let bad = write(&dir, "bad.ral", BAD.as_bytes());
    let missing = dir.join("nope.ral");
    let missing = missing.to_str().unwrap();
    for args in [
        ["--check", missing, bad.as_str()],
        ["--check", bad.as_str(), missing],
    ] {
        let out = ralc(&args, b"");
        assert_eq!(status(&out), 2, "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("cannot read"), "stderr: {err}");
        assert!(err.contains(&format!("[{BAD_CODE}]")), "stderr: {err}");
    }
}

#[test]
fn invalid_utf8_exits_2() {
    let dir = scratch("utf8");
    let file = write(&dir, "latin1.ral", b"echo caf\xe9\n");
    let out = ralc(&["--check", &file], b"");
    assert_eq!(status(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("[invalid-utf8]"), "stderr: {err}");
    assert!(err.contains("latin1.ral"), "stderr: {err}");
}

#[test]
fn dump_ast_prints_tree_to_stdout() {
    let dir = scratch("dump");
    let good = write(&dir, "good.ral", GOOD.as_bytes());
    let out = ralc(&["--dump-ast", &good], b"");
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let tree = stdout(&out);
    assert!(!tree.trim().is_empty(), "empty dump");
    assert!(tree.contains("greeting"), "stdout: {tree}");

    // --emit=ast is the same mode.
    let same = ralc(&["--emit=ast", &good], b"");
    assert_eq!(stdout(&same), tree);

    // A broken file still dumps its tree, reports, and exits 2.
    let bad = write(&dir, "bad.ral", BAD.as_bytes());
    let out = ralc(&["--dump-ast", &bad], b"");
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains(&format!("[{BAD_CODE}]")));
    assert!(!stdout(&out).trim().is_empty());
}

#[test]
fn warnings_do_not_fail() {
    // Only errors decide the status: a good file has no diagnostics at all,
    // and the exit status must not depend on anything but errors. (No code
    // is a warning by default yet, so this checks the good path only.)
    let out = ralc(&["--check", "-"], b"# just a comment\n");
    assert_eq!(status(&out), 0, "stderr: {}", stderr(&out));
}

#[test]
fn help_and_version() {
    let out = ralc(&["--help"], b"");
    assert_eq!(status(&out), 0);
    let help = stdout(&out);
    assert!(help.contains("--check"), "{help}");
    assert!(help.contains("--dump-ast"), "{help}");
    assert!(help.contains("Exit status"), "{help}");

    let out = ralc(&["--version"], b"");
    assert_eq!(status(&out), 0);
    assert_eq!(
        stdout(&out).trim(),
        format!("ralc {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["--check"][..],
        &["file.ral"][..],
        &["--bogus", "x.ral"][..],
        &["--emit=nonsense", "x.ral"][..],
    ] {
        let out = ralc(args, b"");
        assert_eq!(status(&out), 2, "{args:?}");
        let err = stderr(&out);
        assert!(err.starts_with("ralc: "), "{args:?}: {err}");
        assert!(err.contains("usage: ralc"), "{args:?}: {err}");
        assert_eq!(stdout(&out), "", "{args:?}");
    }
    let out = ralc(&["--emit=nonsense", "x.ral"], b"");
    let err = stderr(&out);
    assert!(
        err.contains("available now: ast, types, ir, bytecode"),
        "{err}"
    );
}

#[test]
fn emit_bytecode_disassembles_every_proto() {
    let dir = scratch("emit_bytecode");
    let file = write(
        &dir,
        "b.ral",
        b"let inc = { |n| $[$n + 1] }\necho !{inc 41}\n",
    );
    let out = ralc(&["--emit=bytecode", &file], b"");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("proto inc"), "{text}");
    assert!(
        text.contains("add-int-k"),
        "typed arithmetic expected: {text}"
    );
    assert!(text.contains("define"), "{text}");
}

#[test]
fn type_error_exits_1_and_names_the_code() {
    let dir = scratch("type_error");
    let file = write(&dir, "t.ral", b"let port = 8080\necho $prot\n");
    let out = ralc(&["--check", &file], b"");
    assert_eq!(status(&out), 1);
    let err = stderr(&out);
    assert!(err.contains("[unbound-name]"), "{err}");
    assert!(err.contains("t.ral:2:6"), "{err}");
    assert!(err.contains("$port"), "did-you-mean missing: {err}");
}

#[test]
fn syntax_error_outranks_type_error() {
    let dir = scratch("syntax_over_type");
    let bad_type = write(&dir, "a.ral", b"echo $nowhere\n");
    let bad_syntax = write(&dir, "b.ral", b"echo 'open\n");
    let out = ralc(&["--check", &bad_type, &bad_syntax], b"");
    assert_eq!(status(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("[unbound-name]") && err.contains("[unclosed-string]"),
        "{err}"
    );
}

#[test]
fn emit_types_prints_each_top_level_scheme() {
    let dir = scratch("emit_types");
    let file = write(
        &dir,
        "s.ral",
        b"let n = 42\nlet id = { |x| return $x }\nlet greet = { echo hi }\nlet n = 'shadowed'\n",
    );
    let out = ralc(&["--emit=types", &file], b"");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "n : Integer\nid : ∀α. {α -> Returns α}\ngreet : {Command}\nn : String\n"
    );
}

#[test]
fn emit_ir_prints_the_lowered_module() {
    let dir = scratch("emit_ir");
    let file = write(
        &dir,
        "s.ral",
        b"let n = 42\nlet id = { |x| return $x }\nid $n\n",
    );
    let out = ralc(&["--emit=ir", &file], b"");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "defs n#def0 id#def1\n\n\
         func f0 main arity=0 captures=[] locals=2\n\
         \x20 _ = define #def0 42\n\
         \x20 l0 = closure f1 []\n\
         \x20 _ = define #def1 l0\n\
         \x20 l1 = call g:id#def1 (g:n#def0) tail\n\
         \x20 => l1\n\n\
         func f1 name=id arity=1 captures=[] locals=1\n\
         \x20 params l0\n\
         \x20 => l0\n"
    );
    // A file with a type error prints no IR.
    let bad = write(&dir, "bad.ral", b"let x = $[1 + true]\n");
    let out = ralc(&["--emit=ir", &bad], b"");
    assert_eq!(status(&out), 1);
    assert_eq!(stdout(&out), "");
}

/// The README's first command, and every program of the syntax corpus, must
/// check clean: parse and types (warnings allowed).
#[test]
fn examples_and_ok_corpus_check_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["examples", "tests/syntax/ok"] {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("folder exists")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "ral"))
            .collect();
        entries.sort();
        files.extend(entries);
    }
    assert!(files.len() > 30, "corpus went missing: {files:?}");
    let args: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    let mut argv = vec!["--check"];
    argv.extend(args.iter().map(String::as_str));
    let out = ralc(&argv, b"");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("Error:"), "{}", stderr(&out));
}
