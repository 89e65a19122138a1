//! ral's own file operations under a grant (spec §12.3, the in-process
//! guard): the queries that read a place the grant closed are refused, and
//! every path ral opens is walked and opened on the descriptor the walk
//! reached, so neither a dangling link nor a directory swapped for a link
//! mid-run leads an open outside what was judged. Code installed inside a
//! grant (an alias) keeps running under it. Each escape beside a control
//! that shows the same operation works where the grant allows it.

use super::*;

const RW: &str = "grant [fs: [read: ['cwd:'], write: ['cwd:']]]";

fn denied(r: &Ran) -> bool {
    !r.ok() && r.message().contains("denied by grant")
}

#[test]
fn queries_of_a_place_the_read_grant_closes_are_refused() {
    let t = Tree::new();
    std::fs::create_dir_all(t.ws().join("sub")).unwrap();
    std::fs::create_dir_all(t.ws().join("vault")).unwrap();
    std::fs::write(t.ws().join("vault/k"), "k").unwrap();
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:'], deny: ['cwd:vault']]]";
    for q in [
        "exists",
        "is-file",
        "is-dir",
        "is-link",
        "file-info",
        "file-empty",
        "is-readable",
    ] {
        let control = run_in(&t.ws(), &format!("{grant} {{ echo !{{{q} file}} }}"));
        assert!(control.ok(), "{q}: {}", control.message());
        let escape = run_in(
            &t.ws(),
            &format!("{grant} {{ echo !{{{q} {}}} }}", t.p("outside/secret")),
        );
        assert!(denied(&escape), "{q} outside: {}", escape.message());
        // Even "nothing is there" is an answer about a closed place.
        let absent = run_in(
            &t.ws(),
            &format!("{grant} {{ echo !{{{q} {}}} }}", t.p("outside/nothing")),
        );
        assert!(denied(&absent), "{q} absent outside: {}", absent.message());
        let carved = run_in(&t.ws(), &format!("{grant} {{ echo !{{{q} vault/k}} }}"));
        assert!(
            denied(&carved),
            "{q} in the carve-out: {}",
            carved.message()
        );
    }
    let listed = run_in(&t.ws(), &format!("{grant} {{ echo !{{list-dir .}} }}"));
    assert!(
        listed.stdout.contains("file") && listed.stdout.contains("sub"),
        "{}",
        listed.stdout
    );
    // The carve-out is left out of the listing of its readable parent.
    assert!(!listed.stdout.contains("vault"), "{}", listed.stdout);
    let outside = run_in(
        &t.ws(),
        &format!("{grant} {{ echo !{{list-dir {}}} }}", t.p("outside")),
    );
    assert!(denied(&outside), "{}", outside.message());
    let globbed = run_in(
        &t.ws(),
        &format!(
            "{grant} {{ echo !{{glob '*'}}; echo !{{glob '{}/*'}}; echo !{{glob '{}'}}; echo !{{glob 'vault/*'}} }}",
            t.p("outside"),
            t.p("outside/secret")
        ),
    );
    assert_eq!(
        globbed.stdout,
        "[file, sub]\n[]\n[]\n[]\n",
        "{}",
        globbed.message()
    );
    // Without a grant the same queries answer.
    let free = run_in(
        &t.ws(),
        &format!(
            "echo !{{exists {}}} !{{glob '{}/*'}}",
            t.p("outside/secret"),
            t.p("outside")
        ),
    );
    assert!(
        free.stdout.contains("true") && free.stdout.contains("secret"),
        "{}",
        free.stdout
    );
}

#[test]
fn a_dangling_link_in_the_writable_tree_creates_nothing_outside() {
    let t = Tree::new();
    for (i, redirect) in [
        "echo x > L",
        "echo x >> L",
        "echo x >~ L",
        "sh -c 'echo x >&2' 2> L",
    ]
    .iter()
    .enumerate()
    {
        let inside = t.ws().join(format!("made-{i}"));
        std::os::unix::fs::symlink(&inside, t.ws().join("L")).unwrap();
        let control = run_in(&t.ws(), &format!("{RW} {{ {redirect} }}"));
        assert!(control.ok(), "{redirect}: {}", control.message());
        assert_eq!(
            std::fs::read_to_string(&inside).unwrap(),
            "x\n",
            "{redirect}"
        );
        std::fs::remove_file(t.ws().join("L")).unwrap();
        let target = t.root.join(format!("outside/new-{i}"));
        std::os::unix::fs::symlink(&target, t.ws().join("L")).unwrap();
        let escape = run_in(&t.ws(), &format!("{RW} {{ {redirect} }}"));
        assert!(denied(&escape), "{redirect}: {}", escape.message());
        assert!(!target.exists(), "{redirect} created {}", target.display());
        std::fs::remove_file(t.ws().join("L")).unwrap();
    }
    // A read through a link to outside is refused by ral before any open.
    std::os::unix::fs::symlink(t.root.join("outside/secret"), t.ws().join("R")).unwrap();
    let escape = run_in(&t.ws(), &format!("{RW} {{ cat < R }}"));
    assert!(denied(&escape), "{}", escape.message());
    assert!(!escape.stdout.contains("secret"));
}

#[test]
fn a_directory_swapped_for_a_link_mid_run_never_leads_an_open_outside() {
    let t = Tree::new();
    let ws = t.ws();
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::create_dir_all(ws.join("vault")).unwrap();
    std::fs::write(ws.join("d/g"), "inside\n").unwrap();
    std::fs::write(t.root.join("outside/g"), "secret\n").unwrap();
    std::fs::write(ws.join("vault/g"), "vaulted\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, ws, out) = (stop.clone(), ws.clone(), t.root.join("outside"));
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let target = if n % 2 == 0 {
                    out.clone()
                } else {
                    ws.join("vault")
                };
                n += 1;
                let _ = std::fs::rename(ws.join("d"), ws.join("d.real"));
                let _ = std::os::unix::fs::symlink(&target, ws.join("d"));
                std::thread::yield_now();
                let _ = std::fs::remove_file(ws.join("d"));
                let _ = std::fs::rename(ws.join("d.real"), ws.join("d"));
                std::thread::yield_now();
            }
        })
    };
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:'], deny: ['cwd:vault']]]";
    let body = "try { echo !{line-count d/g}; cat < d/g; echo x >> d/log; echo y > d/out; echo z >~ d/st } { |e| () }";
    let script = format!(
        "let loop = {{ |n| if $[$n > 0] {{ {body}; loop $[$n - 1] }} }}\n{grant} {{ loop 300 }}"
    );
    let ran = run_in(&ws, &script);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(ran.ok(), "{}", ran.message());
    assert!(
        !ran.stdout.contains("secret"),
        "read outside: {}",
        ran.stdout
    );
    assert!(
        !ran.stdout.contains("vaulted"),
        "read the carve-out: {}",
        ran.stdout
    );
    for f in ["log", "out", "st"] {
        assert!(
            !t.root.join("outside").join(f).exists(),
            "wrote outside/{f}"
        );
        assert!(!ws.join("vault").join(f).exists(), "wrote vault/{f}");
    }
    // The control: the same loop reached the real directory most times.
    assert!(ran.stdout.contains("inside"), "{}", ran.stdout);
}

#[test]
fn an_alias_installed_inside_a_grant_runs_under_it_later() {
    let t = Tree::new();
    let secret = t.p("outside/secret");
    // Control: an alias installed with no grant reads what the caller can.
    let control = run_in(
        &t.ws(),
        &format!("alias peek {{ |a| cat {secret}; echo !{{line-count {secret}}} }}\npeek"),
    );
    assert_eq!(control.stdout, "secret\n1\n", "{}", control.message());
    // Installed inside a grant, called after it ended by code with no
    // grant: it still runs under the grant, for ral's own reads and for
    // the programs it starts.
    let own = run_in(
        &t.ws(),
        &format!("{RW} {{ alias peek {{ |a| echo !{{line-count {secret}}} }} }}\npeek"),
    );
    assert!(denied(&own), "{}", own.message());
    let child = run_in(
        &t.ws(),
        &format!("{RW} {{ alias peek {{ |a| cat {secret} }} }}\npeek"),
    );
    assert!(!child.ok(), "{}", child.stdout);
    assert!(!child.stdout.contains("secret"), "{}", child.stdout);
    // Inside the grant's own tree it works as installed.
    let inside = run_in(
        &t.ws(),
        &format!("{RW} {{ alias look {{ |a| cat file }} }}\nlook"),
    );
    assert_eq!(inside.stdout, "inside\n", "{}", inside.message());
    // Re-installed with no grant, the name loses the old grant.
    let again = run_in(
        &t.ws(),
        &format!(
            "{RW} {{ alias peek {{ |a| cat {secret} }} }}\nalias peek {{ |a| cat {secret} }}\npeek"
        ),
    );
    assert_eq!(again.stdout, "secret\n", "{}", again.message());
}
