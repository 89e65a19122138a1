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
//! ral-sandbox-probe memfd-exec FILE ARG  copy FILE into a memfd and fexecve it
//! ral-sandbox-probe shm KEY              attach SysV segment KEY, print its text
//! ral-sandbox-probe inotify DIR          add an inotify watch on DIR
//! ral-sandbox-probe mknod PATH           make a character device (1,3) at PATH
//! ral-sandbox-probe hostname             set the host name to what it is
//! ral-sandbox-probe chmod PATH           set PATH's mode to what it is
//! ral-sandbox-probe utimes PATH          set PATH's times to now
//! ral-sandbox-probe setxattr PATH        set the attribute user.ral on PATH
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
        "memfd-exec" => memfd_exec(&arg(1), &arg(2)),
        "shm" => shm(&arg(1)),
        "inotify" => {
            // SAFETY: inotify_init1 takes a flag; add_watch reads the
            // NUL-terminated path.
            let path = cpath(&arg(1));
            let rc = unsafe {
                let fd = libc::inotify_init1(libc::IN_CLOEXEC);
                libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_CREATE)
            };
            os_result(rc)
        }
        "mknod" => {
            let path = cpath(&arg(1));
            // SAFETY: mknod reads the NUL-terminated path.
            os_result(unsafe {
                libc::mknod(path.as_ptr(), libc::S_IFCHR | 0o600, libc::makedev(1, 3))
            })
        }
        "hostname" => {
            let mut buf = [0u8; 256];
            // SAFETY: gethostname writes at most 256 bytes into buf;
            // sethostname reads the same bytes back.
            let rc = unsafe {
                libc::gethostname(buf.as_mut_ptr().cast(), buf.len());
                let n = buf.iter().position(|b| *b == 0).unwrap_or(0);
                libc::sethostname(buf.as_ptr().cast(), n)
            };
            os_result(rc)
        }
        "chmod" => std::fs::metadata(arg(1))
            .and_then(|m| std::fs::set_permissions(arg(1), m.permissions()))
            .map(|()| "ok".to_owned())
            .map_err(|e| e.to_string()),
        "utimes" => {
            let path = cpath(&arg(1));
            // SAFETY: utimensat with a null times pointer sets both to now.
            os_result(unsafe {
                libc::utimensat(libc::AT_FDCWD, path.as_ptr(), std::ptr::null(), 0)
            })
        }
        "setxattr" => {
            let path = cpath(&arg(1));
            // SAFETY: setxattr reads the name and the one-byte value.
            os_result(unsafe {
                libc::setxattr(
                    path.as_ptr(),
                    c"user.ral".as_ptr(),
                    b"x".as_ptr().cast(),
                    1,
                    0,
                )
            })
        }
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

fn cpath(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap_or_default()
}

fn os_result(rc: i32) -> Result<String, String> {
    if rc >= 0 {
        Ok("ok".to_owned())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}

/// Copies `file` into an anonymous memory file and executes that with
/// `arg`: it prints what the program prints, or why it could not run.
fn memfd_exec(file: &str, arg: &str) -> Result<String, String> {
    let bytes = std::fs::read(file).map_err(|e| e.to_string())?;
    // SAFETY: memfd_create reads the name; the descriptor is then written
    // and executed with NUL-terminated argument and environment arrays.
    unsafe {
        let fd = libc::memfd_create(c"probe".as_ptr(), 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        if libc::write(fd, bytes.as_ptr().cast(), bytes.len()) < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        let a0 = cpath(file);
        let a1 = cpath(arg);
        let argv = [a0.as_ptr(), a1.as_ptr(), std::ptr::null()];
        let envp = [std::ptr::null()];
        libc::fexecve(fd, argv.as_ptr(), envp.as_ptr());
    }
    Err(std::io::Error::last_os_error().to_string())
}

/// Attaches the SysV shared memory segment with key `key` and prints its
/// text up to the first NUL.
fn shm(key: &str) -> Result<String, String> {
    let key: i32 = key.parse().map_err(|_| "not a key".to_owned())?;
    // SAFETY: shmget and shmat take integers; the attached segment is
    // read within its first 64 bytes, which the test wrote.
    unsafe {
        let id = libc::shmget(key, 0, 0);
        if id < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        let p = libc::shmat(id, std::ptr::null(), libc::SHM_RDONLY);
        if p as isize == -1 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        let bytes = std::slice::from_raw_parts(p.cast::<u8>(), 64);
        let end = bytes.iter().position(|b| *b == 0).unwrap_or(64);
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}
