//! Path helpers of the prelude (§14.4): `extension` and `line-count`.
//!
//! `extension` is lexical. `line-count` reads a file in fixed-size chunks,
//! so a file of any size is counted in bounded memory.

use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::is_separator;

use super::super::fs::resolve;
use super::super::{str_arg, Ctx};
use super::fail;
use crate::caps::FsOp;
use crate::failure::Failure;
use crate::value::Value;

/// The extension of `path`'s last component: the text after its last `.`,
/// when that `.` is not the component's first character and text follows
/// it. Trailing separators are ignored; `.` and `..` have none.
pub(crate) fn extension_of(path: &str) -> Option<&str> {
    let trimmed = path.trim_end_matches(is_separator);
    let name = trimmed.rsplit(is_separator).next().unwrap_or(trimmed);
    let dot = name.rfind('.')?;
    if dot == 0 {
        return None;
    }
    name.get(dot + 1..).filter(|ext| !ext.is_empty())
}

/// `extension path`: `` `just ext `` for the extension of the last
/// component (`archive.tar.gz` gives `gz`), `` `none `` when there is
/// none: no dot, a dotfile such as `.bashrc`, or a name ending in a dot.
pub fn extension(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    Ok(match extension_of(str_arg(args, 0)?) {
        Some(ext) => Value::variant("just", Some(Value::str(ext))),
        None => Value::variant("none", None),
    })
}

/// An I/O error as a message: the system's text without its `(os error N)`
/// suffix, starting in lower case.
fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or_default();
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The number of lines of everything `r` yields, by the line rule of §7.3:
/// each LF ends a line (a CRLF's CR belongs to its line's terminator, so
/// it changes no count), and text after the last LF is one more line.
/// Polls `ctx` once per chunk.
pub(crate) fn count_lines(
    ctx: &mut dyn Ctx,
    r: &mut dyn Read,
) -> std::io::Result<Result<i64, Failure>> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines: i64 = 0;
    let mut last = None;
    loop {
        if let Err(f) = ctx.poll() {
            return Ok(Err(f));
        }
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        let lfs = chunk.iter().filter(|&&b| b == b'\n').count();
        lines = lines.saturating_add(i64::try_from(lfs).unwrap_or(i64::MAX));
        last = chunk.last().copied();
    }
    if last.is_some_and(|b| b != b'\n') {
        lines = lines.saturating_add(1);
    }
    Ok(Ok(lines))
}

/// `line-count path`: how many lines the file at `path` has, by the line
/// rule of §7.3 (`""` has 0, `"a"` and `"a\n"` 1, `"a\n\n"` 2). The path
/// is resolved as the filesystem builtins resolve one (sigils, then the
/// logical working directory) and must be readable under the active grant.
/// The file is read in 64 KiB chunks; its bytes need not be UTF-8. A path
/// that cannot be opened or read (missing, a directory, unreadable) fails.
pub fn line_count(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let path = str_arg(args, 0)?;
    let full = resolve(ctx, path).map_err(|m| fail("line-count", m))?;
    let cannot = |e: std::io::Error| {
        fail(
            "line-count",
            format!("cannot read `{path}`: {}", io_reason(&e)),
        )
    };
    let file = if ctx.restricts_fs() {
        // Walked, judged on the real path and read through the descriptor
        // the walk reached (crate::walk).
        let r = crate::walk::resolve(&full, true).map_err(cannot)?;
        ctx.check_fs_real(FsOp::Read, &r.real)?;
        File::from(r.open(rustix::fs::OFlags::RDONLY, 0).map_err(cannot)?)
    } else {
        ctx.check_fs(FsOp::Read, &full)?;
        File::open(&full).map_err(cannot)?
    };
    // A fifo can block; its reads wait with polls of the cancel flag.
    let cancel = ctx.vm().map_or_else(
        || crate::exec::CancelProbe::of_flag(std::sync::Arc::default()),
        |vm| vm.cancel_probe(),
    );
    let mut reader = crate::waiting::Polled {
        fd: std::os::fd::AsRawFd::as_raw_fd(&file),
        inner: &file,
        cancel,
    };
    let counted = count_lines(ctx, &mut reader);
    if counted.as_ref().is_err_and(crate::waiting::is_cancelled) {
        ctx.poll()?;
    }
    let n = counted.map_err(cannot)??;
    Ok(Value::Int(n))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::extension_of;
    use crate::builtins::testing::{call, fails};
    use crate::value::Value;

    #[test]
    fn extensions() {
        for (path, ext) in [
            ("notes.txt", Some("txt")),
            ("archive.tar.gz", Some("gz")),
            ("/a.d/b", None),
            ("dir.d/file.rs", Some("rs")),
            ("src/main.rs/", Some("rs")),
            (".bashrc", None),
            ("x/.bashrc", None),
            ("..hidden.md", Some("md")),
            ("trailing.", None),
            ("plain", None),
            ("", None),
            (".", None),
            ("..", None),
            ("/", None),
        ] {
            assert_eq!(extension_of(path), ext, "{path:?}");
        }
        assert_eq!(
            call("extension", &[Value::str("a.json")]),
            Ok(Value::variant("just", Some(Value::str("json"))))
        );
        assert_eq!(
            call("extension", &[Value::str(".profile")]),
            Ok(Value::variant("none", None))
        );
    }

    fn count(bytes: &[u8]) -> i64 {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let file = std::env::temp_dir().join(format!(
            "ral-line-count-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&file, bytes).expect("writing a scratch file");
        let got = call("line-count", &[Value::str(file.to_string_lossy())]);
        let _ = std::fs::remove_file(&file);
        match got {
            Ok(Value::Int(n)) => n,
            other => panic!("line-count gave {other:?}"),
        }
    }

    #[test]
    fn counts_lines_by_the_line_rule() {
        assert_eq!(count(b""), 0);
        assert_eq!(count(b"a"), 1);
        assert_eq!(count(b"a\n"), 1);
        assert_eq!(count(b"\n"), 1);
        assert_eq!(count(b"a\n\n"), 2);
        assert_eq!(count(b"\n\na"), 3);
        assert_eq!(count(b"a\r\nb\nc\r\n"), 3);
        assert_eq!(count(b"a\rb\n"), 1);
        assert_eq!(count(b"a\r"), 1);
        assert_eq!(count(b"\xff\xfe\n\xff"), 2);
        let big: Vec<u8> = b"line\n".repeat(100_000);
        assert_eq!(count(&big), 100_000);
    }

    #[test]
    fn unreadable_paths_fail() {
        let missing = std::env::temp_dir().join("ral-no-such-file-for-line-count");
        let msg = fails("line-count", &[Value::str(missing.to_string_lossy())]);
        assert!(msg.starts_with("line-count: cannot read `"), "{msg}");
        let dir = std::env::temp_dir();
        assert!(fails("line-count", &[Value::str(dir.to_string_lossy())]).contains("cannot read"));
    }
}
