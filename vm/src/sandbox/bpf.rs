//! The seccomp program of a confined launch: one classic-BPF program built
//! once per process from a table of (system call, optional argument test,
//! action).
//!
//! One program, not one per action: the kernel attaches each filter
//! separately and prepares its action cache by running the filter over
//! every system call number, so five single-action filters (what a
//! one-action-per-filter compiler gives) cost five times that on every
//! launch. For the same reason the rows are searched, not scanned:
//!
//! ```text
//!     ld  arch            ; a foreign architecture (32-bit int 0x80) dies
//!     jeq AUDIT_ARCH, +1
//!     ret KILL_PROCESS
//!     ld  nr
//!     jge 0x40000000, x32 ; x86-64 only: the x32 range gets ENOSYS
//!   a binary search over the rows by number (jge), and at each leaf, per
//!   row without a test:
//!     jeq NR, 0, +1
//!     ret ACTION
//!   per entry with a test on the low 32 bits of argument I:
//!     jeq NR, 0, +4
//!     ld  args[I]
//!     and MASK
//!     jeq VALUE, 0, +1
//!     ret ACTION
//!     ld  nr              ; the test clobbered the accumulator
//!   and after a leaf's rows:
//!     ret ALLOW
//! ```
//!
//! The system call numbers are the C library's named constants (`libc`),
//! the offsets those of `struct seccomp_data`.

/// A BPF instruction, as the kernel reads it.
pub type Insn = libc::sock_filter;

/// What the program does with a matching system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Kill the process with `SIGSYS`.
    Kill,
    /// Fail the call with this errno.
    Errno(i32),
}

/// An argument test: `(args[index] & mask) == value`, on the low 32 bits.
#[derive(Clone, Copy, Debug)]
pub struct ArgTest {
    pub index: u32,
    pub mask: u32,
    pub value: u32,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub nr: libc::c_long,
    pub test: Option<ArgTest>,
    pub action: Action,
}

/// `EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE` (linux/audit.h).
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// `EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`.
const AUDIT_ARCH_AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;
/// The x32 system call range's bit.
const X32_BIT: u32 = 0x4000_0000;

/// `offsetof(struct seccomp_data, nr)`, `arch`, `args`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARGS: u32 = 16;

/// The audit architecture of this build, where ral builds programs.
pub fn audit_arch() -> Option<u32> {
    if cfg!(target_arch = "x86_64") {
        Some(AUDIT_ARCH_X86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(AUDIT_ARCH_AARCH64)
    } else {
        None
    }
}

fn code(c: u32) -> u16 {
    u16::try_from(c).unwrap_or(u16::MAX)
}

fn stmt(c: u32, k: u32) -> Insn {
    Insn {
        code: code(c),
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(c: u32, k: u32, jt: u8, jf: u8) -> Insn {
    Insn {
        code: code(c),
        jt,
        jf,
        k,
    }
}

fn ret(action: Action) -> Insn {
    let k = match action {
        Action::Kill => libc::SECCOMP_RET_KILL_PROCESS,
        Action::Errno(e) => {
            libc::SECCOMP_RET_ERRNO | (u32::try_from(e).unwrap_or(1) & libc::SECCOMP_RET_DATA)
        }
    };
    stmt(libc::BPF_RET | libc::BPF_K, k)
}

/// The instructions of one row; they end in a return or fall through to
/// the next row with the accumulator holding the system call number.
fn row(e: &Entry, nr: u32, p: &mut Vec<Insn>) {
    let eq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
    let ld = |off: u32| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, off);
    match e.test {
        None => {
            p.push(jump(eq, nr, 0, 1));
            p.push(ret(e.action));
        }
        Some(t) => {
            p.push(jump(eq, nr, 0, 4));
            p.push(ld(OFF_ARGS + 8 * t.index));
            p.push(stmt(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, t.mask));
            p.push(jump(eq, t.value, 0, 1));
            p.push(ret(e.action));
            p.push(ld(OFF_NR));
        }
    }
}

/// Rows sorted by number, as a binary search: a `jge` splits them, each
/// side ends in `ret ALLOW`. The kernel runs the program over every system
/// call number when it attaches it (its action cache), so a search of
/// depth log n costs far less than one long chain.
fn search(rows: &[(u32, Entry)], p: &mut Vec<Insn>) -> Option<()> {
    if rows.len() <= 4 {
        for (nr, e) in rows {
            row(e, *nr, p);
        }
        p.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
        return Some(());
    }
    let (left, right) = rows.split_at(rows.len() / 2);
    let mut l = Vec::new();
    search(left, &mut l)?;
    let skip = u8::try_from(l.len()).ok()?;
    p.push(jump(
        libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
        right.first()?.0,
        skip,
        0,
    ));
    p.extend(l);
    search(right, p)
}

/// Builds the program for `entries` under audit architecture `arch`; on
/// x86-64 (`x32` true) the x32 range gets ENOSYS. `None` when a system
/// call number does not fit the program or one appears twice.
pub fn program(arch: u32, x32: bool, entries: &[Entry]) -> Option<Vec<Insn>> {
    let ld = |off: u32| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, off);
    let mut p = vec![
        ld(OFF_ARCH),
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, arch, 1, 0),
        ret(Action::Kill),
        ld(OFF_NR),
    ];
    if x32 {
        p.push(jump(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            X32_BIT,
            0,
            1,
        ));
        p.push(ret(Action::Errno(libc::ENOSYS)));
    }
    let mut rows: Vec<(u32, Entry)> = entries
        .iter()
        .map(|e| u32::try_from(e.nr).ok().map(|nr| (nr, *e)))
        .collect::<Option<_>>()?;
    rows.sort_by_key(|(nr, _)| *nr);
    if rows.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    search(&rows, &mut p)?;
    (p.len() <= 4096).then_some(p)
}

/// Installs `prog` on the calling thread (after `PR_SET_NO_NEW_PRIVS`).
/// Async-signal-safe: one system call on memory the caller owns.
pub fn install(prog: &[Insn]) -> std::io::Result<()> {
    let fprog = libc::sock_fprog {
        len: u16::try_from(prog.len())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program in during the call; `fprog`
    // and `prog` outlive it.
    #[allow(unsafe_code)]
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter of the instructions `program` emits, to check the
    /// table's meaning without a kernel.
    fn run(p: &[Insn], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut a: u32 = 0;
        let mut pc = 0usize;
        let word = |off: u32| -> u32 {
            match off {
                OFF_NR => nr,
                OFF_ARCH => arch,
                o => {
                    let i = ((o - OFF_ARGS) / 8) as usize;
                    (args[i] & 0xffff_ffff) as u32
                }
            }
        };
        loop {
            let i = p[pc];
            let c = u32::from(i.code);
            pc += 1;
            if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
                a = word(i.k);
            } else if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K {
                a &= i.k;
            } else if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K {
                pc += usize::from(if a == i.k { i.jt } else { i.jf });
            } else if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K {
                pc += usize::from(if a >= i.k { i.jt } else { i.jf });
            } else if c == libc::BPF_RET | libc::BPF_K {
                return i.k;
            } else {
                panic!("unexpected instruction {c:#x}");
            }
        }
    }

    #[test]
    fn the_program_does_what_its_table_says() {
        let arch = AUDIT_ARCH_X86_64;
        let entries = [
            Entry {
                nr: 101,
                test: None,
                action: Action::Kill,
            },
            Entry {
                nr: 272,
                test: Some(ArgTest {
                    index: 0,
                    mask: 0x1000_0000,
                    value: 0x1000_0000,
                }),
                action: Action::Errno(libc::EPERM),
            },
            Entry {
                nr: 41,
                test: None,
                action: Action::Errno(libc::EACCES),
            },
        ];
        let p = program(arch, true, &entries).unwrap_or_default();
        let errno = |e: i32| libc::SECCOMP_RET_ERRNO | e as u32;
        assert_eq!(run(&p, arch, 101, [0; 6]), libc::SECCOMP_RET_KILL_PROCESS);
        assert_eq!(
            run(&p, arch, 272, [0x1000_0000, 0, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            run(&p, arch, 272, [0x0002_0000, 0, 0, 0, 0, 0]),
            libc::SECCOMP_RET_ALLOW
        );
        // After a failed argument test the later entries still match.
        assert_eq!(run(&p, arch, 41, [0; 6]), errno(libc::EACCES));
        assert_eq!(run(&p, arch, 0, [0; 6]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(run(&p, arch, 41 | X32_BIT, [0; 6]), errno(libc::ENOSYS));
        assert_eq!(
            run(&p, 0x4000_0003, 0, [0; 6]),
            libc::SECCOMP_RET_KILL_PROCESS
        );
    }
}
