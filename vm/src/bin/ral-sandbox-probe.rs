//! A test helper for the OS sandbox's escape tests (`vm/tests/sandbox.rs`):
//! it attempts one thing a confined program might try and says what
//! happened, so a test can tell the sandbox's refusal from a missing tool.
//!
//! ```text
//! ral-sandbox-probe tcp 127.0.0.1:PORT   connect and send "probe"
//! ral-sandbox-probe udp 127.0.0.1:PORT   send one datagram "probe"
//! ral-sandbox-probe unix PATH            connect to a Unix socket, send "probe"
//! ral-sandbox-probe read PATH            print the file (trailing newlines trimmed)
//! ral-sandbox-probe write PATH           create the file with "probe"
//! ral-sandbox-probe userns               unshare a user namespace
//! ral-sandbox-probe ptrace               PTRACE_TRACEME (the deny-set kills)
//! ral-sandbox-probe sid                  print "SID PGID PID"
//! ral-sandbox-probe thread               start and join a thread (clone3 → clone)
//! ral-sandbox-probe fd N                 whether descriptor N is open
//! ```
//!
//! It prints `ok` (or the data) and exits 0, or prints `refused: ERROR`
//! and exits 1.

#![allow(unsafe_code)]

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let result: Result<String, String> = match arg(0).as_str() {
        "tcp" => std::net::TcpStream::connect(arg(1))
            .and_then(|mut s| s.write_all(b"probe"))
            .map(|()| "ok".to_owned())
            .map_err(|e| e.to_string()),
        "udp" => std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|s| s.send_to(b"probe", arg(1)))
            .map(|_| "ok".to_owned())
            .map_err(|e| e.to_string()),
        "unix" => std::os::unix::net::UnixStream::connect(arg(1))
            .and_then(|mut s| s.write_all(b"probe"))
            .map(|()| "ok".to_owned())
            .map_err(|e| e.to_string()),
        "read" => std::fs::read_to_string(arg(1))
            .map(|s| s.trim_end().to_owned())
            .map_err(|e| e.to_string()),
        "write" => std::fs::write(arg(1), "probe")
            .map(|()| "ok".to_owned())
            .map_err(|e| e.to_string()),
        "userns" => {
            // SAFETY: unshare takes an integer flag set.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWUSER) };
            if rc == 0 {
                Ok("ok".to_owned())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            }
        }
        "ptrace" => {
            // SAFETY: PTRACE_TRACEME takes no pointers.
            let rc = unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) };
            if rc == 0 {
                Ok("ok".to_owned())
            } else {
                Err(std::io::Error::last_os_error().to_string())
            }
        }
        "thread" => std::thread::spawn(|| 7)
            .join()
            .map(|n| format!("ok {n}"))
            .map_err(|_| "the thread panicked".to_owned()),
        "sid" => {
            // SAFETY: getsid, getpgid and getpid take integers.
            let (sid, pgid, pid) = unsafe { (libc::getsid(0), libc::getpgid(0), libc::getpid()) };
            Ok(format!("{sid} {pgid} {pid}"))
        }
        "fd" => match arg(1).parse::<i32>() {
            // SAFETY: F_GETFD on any integer is harmless (EBADF if closed).
            Ok(fd) => match unsafe { libc::fcntl(fd, libc::F_GETFD) } {
                -1 => Err("closed".to_owned()),
                _ => Ok("open".to_owned()),
            },
            Err(e) => Err(e.to_string()),
        },
        other => Err(format!("unknown probe {other:?}")),
    };
    match result {
        Ok(out) => {
            println!("{out}");
        }
        Err(e) => {
            println!("refused: {e}");
            std::process::exit(1);
        }
    }
}
