//! Ambient reads (§10.2) and `warn` (§14.6).
//!
//! The six nullary builtins `env`, `cwd`, `home`, `user`, `nproc` and
//! `args` read the live shell through [`Ctx`]: the effective environment
//! (the process's with the context's `within [env: …]` overrides on top),
//! the logical working directory, and the program's arguments. None of them
//! reads the process's own working directory or environment directly, so a
//! scoped override or a `cd` is always seen.
//!
//! `warn` writes a line to the current standard error, never to the byte
//! channel, so a capture does not see it.

use std::io::Write;

use super::{str_arg, Ctx};
use crate::failure::Failure;
use crate::value::{Record, Value};

/// `env`: the effective environment as a map, without `PWD` and `OLDPWD`.
pub fn env(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let entries = ctx
        .environment()
        .into_iter()
        .filter(|(k, _)| k != "PWD" && k != "OLDPWD")
        .map(|(k, v)| (k, Value::str(v)))
        .collect();
    Ok(Value::record(Record::from_entries(entries)))
}

/// `cwd`: the logical working directory, absolute.
pub fn cwd(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let dir = ctx.cwd();
    match dir.to_str() {
        Some(s) => Ok(Value::str(s)),
        None => Err(Failure::error(format!(
            "cwd: the working directory `{}` is not valid UTF-8",
            dir.to_string_lossy()
        ))),
    }
}

/// `home`: the effective home directory (`HOME`; `USERPROFILE` on
/// Windows). Unset or empty fails, naming the variable (§16.6).
pub fn home(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    super::fs::home_dir(ctx)
        .map(Value::str)
        .map_err(|m| Failure::error(format!("home: {m}")))
}

/// `user`: the user name from the effective environment (`USER`;
/// `USERNAME` on Windows), so `within [env: [USER: …]]` changes it. When
/// the effective environment has none (unset or empty: `env -i`, a
/// service manager, a container), the account database's name for the
/// effective user id; only a user the database does not know fails,
/// naming the variable and the uid (deviations.md S11).
pub fn user(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let var = if cfg!(windows) { "USERNAME" } else { "USER" };
    match ctx.var(var) {
        Some(u) if !u.is_empty() => Ok(Value::str(u)),
        _ => account_name()
            .map(Value::str)
            .map_err(|why| Failure::error(format!("user: {var} is not set, and {why}"))),
    }
}

/// The account database's name for the effective user id.
fn account_name() -> Result<String, String> {
    let uid = nix::unistd::Uid::effective();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(u)) if !u.name.is_empty() => Ok(u.name),
        Ok(_) => Err(format!("the account database has no user {uid}")),
        Err(e) => Err(format!("the account database cannot be read: {e}")),
    }
}

/// `nproc`: the parallelism available to this process, at least 1.
pub fn nproc(_: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let n = std::thread::available_parallelism().map_or(1, usize::from);
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX).max(1)))
}

/// `args`: the program's arguments.
pub fn args(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    Ok(Value::list(
        ctx.args().into_iter().map(Value::str).collect(),
    ))
}

/// `warn message`: writes `message` and a newline to the current standard
/// error; returns `()`.
pub fn warn(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let message = str_arg(args, 0)?;
    let mut line = Vec::with_capacity(message.len() + 1);
    line.extend_from_slice(message.as_bytes());
    line.push(b'\n');
    match ctx.vm() {
        Some(vm) => vm.write_err(&line)?,
        None => std::io::stderr()
            .write_all(&line)
            .map_err(|e| Failure::error(format!("warn: {e}")))?,
    }
    Ok(Value::Unit)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::exec::Stdout;
    use crate::session::Mobile;
    use crate::Vm;

    fn vm_with(env: &[(&str, Option<&str>)]) -> Vm {
        let mut vm = Vm::new(Mobile::default());
        vm.mobile.context.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect();
        vm
    }

    #[test]
    fn env_sees_overrides_and_hides_pwd() {
        let mut vm = vm_with(&[
            ("RAL_AMBIENT_TEST", Some("on")),
            ("PWD", Some("/somewhere")),
            ("OLDPWD", Some("/before")),
            ("RAL_AMBIENT_GONE", None),
        ]);
        let Value::Record(map) = env(&mut vm, &[]).unwrap() else {
            panic!("env is not a map")
        };
        assert_eq!(map.get("RAL_AMBIENT_TEST"), Some(&Value::str("on")));
        assert!(!map.has("PWD"));
        assert!(!map.has("OLDPWD"));
        assert!(!map.has("RAL_AMBIENT_GONE"));
        // Sorted keys, as every map's are.
        let keys: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
    }

    #[test]
    fn home_and_user_read_the_effective_environment() {
        let mut vm = vm_with(&[("HOME", Some("/home/scoped")), ("USER", Some("builder"))]);
        assert_eq!(home(&mut vm, &[]).unwrap(), Value::str("/home/scoped"));
        assert_eq!(user(&mut vm, &[]).unwrap(), Value::str("builder"));
        let mut unset = vm_with(&[("HOME", None), ("USER", Some(""))]);
        let e = home(&mut unset, &[]).unwrap_err();
        assert!(e.message.contains("HOME is not set"), "{}", e.message);
        // Without `USER` the account database names the effective user
        // (deviations.md S11).
        let u = user(&mut unset, &[]).unwrap();
        assert_eq!(u, Value::str(account_name().unwrap()));
        let mut gone = vm_with(&[("USER", None)]);
        assert_eq!(user(&mut gone, &[]).unwrap(), u);
    }

    #[test]
    fn cwd_is_the_logical_directory() {
        let mut vm = vm_with(&[]);
        vm.mobile.context.cwd = Some(PathBuf::from("/logical/dir"));
        assert_eq!(cwd(&mut vm, &[]).unwrap(), Value::str("/logical/dir"));
    }

    #[test]
    fn nproc_is_positive_and_args_are_the_programs() {
        let mut vm = vm_with(&[]);
        let Value::Int(n) = nproc(&mut vm, &[]).unwrap() else {
            panic!()
        };
        assert!(n >= 1);
        assert_eq!(args(&mut vm, &[]).unwrap(), Value::list(vec![]));
        vm.args = Arc::from(vec!["staging".to_owned(), "eu west".to_owned()]);
        assert_eq!(
            args(&mut vm, &[]).unwrap(),
            Value::list(vec![Value::str("staging"), Value::str("eu west")])
        );
    }

    #[test]
    fn warn_writes_a_line_to_stderr_only() {
        let mut vm = vm_with(&[]);
        vm.stderr = Stdout::Buffer(Vec::new());
        assert_eq!(
            warn(&mut vm, &[Value::str("careful")]).unwrap(),
            Value::Unit
        );
        assert_eq!(warn(&mut vm, &[Value::str("")]).unwrap(), Value::Unit);
        let Stdout::Buffer(err) = &vm.stderr else {
            panic!()
        };
        assert_eq!(err.as_slice(), b"careful\n\n");
        assert!(vm.take_output().is_empty());
    }
}
