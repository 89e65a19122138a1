//! Session capability profiles through the `ral` binary (spec §12.12,
//! §16.3): `--capabilities a.ral[,b.ral]` loads each profile as a
//! permanent layer below every grant, both enforcement layers hold it (ral's
//! own writes and a started program's), an inline grant cannot widen it,
//! and a bad profile stops the session with status 2 before anything runs.
//! Also `gitdir:` end to end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

struct Dir {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Dir {
    fn new() -> Dir {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join("data.txt"), "data\n").unwrap();
        Dir { _tmp: tmp, root }
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.root.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

fn ral_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("ral runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const READ_ONLY: &str =
    "# read-only.ral\nreturn [\n    fs: [read: ['/']],\n    detach: false,\n]\n";

#[test]
fn a_write_under_a_read_only_session_profile_is_refused() {
    let d = Dir::new();
    let profile = d.file("read-only.ral", READ_ONLY);
    // Control: reading works, by ral and by a started program.
    let ok = ral_in(
        &d.root,
        &[
            "--capabilities",
            &profile,
            "-c",
            "cat data.txt; echo !{from-line < data.txt}",
        ],
    );
    assert_eq!(out(&ok), "data\ndata\n", "{}", err(&ok));
    assert_eq!(ok.status.code(), Some(0));
    // ral's own write: refused by the first layer, naming the profile.
    let own = ral_in(
        &d.root,
        &["--capabilities", &profile, "-c", "echo x > made.txt"],
    );
    assert_eq!(own.status.code(), Some(1), "{}", err(&own));
    assert!(
        err(&own).contains("denied by grant: write"),
        "{}",
        err(&own)
    );
    assert!(
        err(&own).contains("profile `read-only.ral`"),
        "{}",
        err(&own)
    );
    // A started program's write: refused by the kernel.
    let child = ral_in(
        &d.root,
        &[
            "--capabilities",
            &profile,
            "-c",
            "sh -c 'echo x > made.txt'",
        ],
    );
    assert_ne!(child.status.code(), Some(0));
    assert!(err(&child).contains("OS sandbox"), "{}", err(&child));
    assert!(err(&child).contains("read-only.ral"), "{}", err(&child));
    assert!(!d.root.join("made.txt").exists(), "a write landed");
}

#[test]
fn an_inline_grant_cannot_widen_a_session_profile() {
    let d = Dir::new();
    let profile = d.file("read-only.ral", READ_ONLY);
    let wide = "grant [fs: [read: ['/'], write: ['/']]] { sh -c 'echo x > wide.txt' }";
    let o = ral_in(&d.root, &["--capabilities", &profile, "-c", wide]);
    assert_ne!(o.status.code(), Some(0));
    assert!(!d.root.join("wide.txt").exists());
    // Without the profile the same grant writes.
    let o = ral_in(&d.root, &["-c", wide]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(d.root.join("wide.txt").exists());
}

#[test]
fn profiles_stack_in_the_order_listed() {
    let d = Dir::new();
    let offline = d.file("offline.ral", "return [net: false]\n");
    let scratch = d.file(
        "scratch.ral",
        "return [fs: [read: ['/'], write: ['cwd:out']]]\n",
    );
    std::fs::create_dir_all(d.root.join("out")).unwrap();
    let list = format!("{offline},{scratch}");
    let o = ral_in(
        &d.root,
        &[
            "--capabilities",
            &list,
            "-c",
            "sh -c 'echo y > out/ok.txt'; try { bash -c 'echo > /dev/tcp/127.0.0.1/9' } { |e| echo offline }",
        ],
    );
    assert_eq!(out(&o), "offline\n", "{}", err(&o));
    assert!(d.root.join("out/ok.txt").exists());
}

#[test]
fn a_bad_profile_stops_the_session_with_status_2() {
    let d = Dir::new();
    let marker = d.root.join("ran.txt");
    let misspelled = d.file(
        "bad.ral",
        &format!(
            "echo x > '{}'\nreturn [exect: [git: 'allow']]\n",
            marker.display()
        ),
    );
    let program = "echo started > started.txt";
    let o = ral_in(&d.root, &["--capabilities", &misspelled, "-c", program]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("capability-profile"), "{}", err(&o));
    assert!(err(&o).contains("exect"), "{}", err(&o));
    assert!(!marker.exists(), "the misspelled profile ran");
    assert!(!d.root.join("started.txt").exists(), "the session started");
    // Unreadable, failing, a map, a relative path: all 2.
    let failing = d.file("fails.ral", "fail [status: 4, message: 'no']\n");
    let map = d.file("map.ral", "return [:, net: false]\n");
    let relative = d.file("rel.ral", "return [fs: [read: ['src']]]\n");
    for p in [
        d.root.join("missing.ral").display().to_string(),
        failing,
        map,
        relative,
    ] {
        let o = ral_in(&d.root, &["--capabilities", &p, "-c", program]);
        assert_eq!(o.status.code(), Some(2), "{p}: {}", err(&o));
        assert!(!d.root.join("started.txt").exists());
    }
}

#[test]
fn gitdir_refuses_an_unclaimed_pointer_and_follows_a_claimed_one() {
    let d = Dir::new();
    let secrets = d.root.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "key\n").unwrap();
    let tree = d.root.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join(".git"),
        format!("gitdir: {}\n", secrets.display()),
    )
    .unwrap();
    let program = "grant [fs: [read: ['gitdir:']]] { cat key }";
    let o = ral_in(&tree, &["-c", program]);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(err(&o).contains("no Git directory claims"), "{}", err(&o));
    assert!(!out(&o).contains("key"));
    // Claimed: the Git directory names the pointer back.
    std::fs::write(
        secrets.join("gitdir"),
        format!("{}\n", tree.join(".git").display()),
    )
    .unwrap();
    let o = ral_in(
        &tree,
        &[
            "-c",
            &format!(
                "grant [fs: [read: ['gitdir:']]] {{ cat {}/key }}",
                secrets.display()
            ),
        ],
    );
    assert_eq!(out(&o), "key\n", "{}", err(&o));
}
