//! The agent forms of spec §11.5 — `service`, `service-handle` and
//! `detach` — as host builtins over a [`WorkerRegistry`], and
//! [`AgentForms`], the choice of which to install.

use std::path::PathBuf;
use std::sync::Arc;

use ral_vm::audit::{now_us, CommandObs, Origin, What};
use ral_vm::{Failure, Record, Value, Vm};

use super::detach::{launch, Survivor};
use super::{Birth, WorkerRegistry};

/// The `detach` birth budget exarch gives a session (§11.5).
pub const DETACH_BIRTHS: u32 = 16;

/// Which agent forms a shell installs
/// ([`crate::Shell::enable_agent_forms`], [`install_agent_forms`]).
///
/// The `ral` executable installs none of them: its workers have no lease
/// to be exempt from, and nothing of its sessions may outlive them
/// unannounced. An agent host whose workers are leased installs them:
///
/// ```
/// use ral_host::{AgentForms, Shell};
/// let mut shell = Shell::new();
/// shell.enable_agent_forms(AgentForms { detach_births: 4, ..AgentForms::default() })?;
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentForms {
    /// Install `service` (a worker no lease reaps) and `service-handle`
    /// (its handle recovered by id).
    pub service: bool,
    /// How many successful `detach` births the session allows, shared by
    /// all its workers and never replenished. `0` leaves `detach`
    /// uninstalled: the spec installs it only together with a budget.
    /// Enabling again changes the budget; births already made still count.
    pub detach_births: u32,
}

impl Default for AgentForms {
    /// Everything, with exarch's budget of [`DETACH_BIRTHS`].
    fn default() -> AgentForms {
        AgentForms {
            service: true,
            detach_births: DETACH_BIRTHS,
        }
    }
}

type Imp = fn(&Arc<WorkerRegistry>, &mut Vm, &[Value]) -> Result<Value, Failure>;

/// Registers the forms `forms` selects on `vm`, over `reg` (whose worker
/// machines share them). An error names a builtin the VM refused, which
/// means the builtin table and this crate disagree.
pub fn install_agent_forms(
    vm: &mut Vm,
    reg: &Arc<WorkerRegistry>,
    forms: AgentForms,
) -> Result<(), String> {
    if forms.service {
        register(vm, reg, "service", 2, service)?;
        register(vm, reg, "service-handle", 1, service_handle)?;
    }
    reg.set_detach_budget(forms.detach_births);
    if forms.detach_births > 0 {
        register(vm, reg, "detach", 1, detach)?;
    }
    Ok(())
}

fn register(
    vm: &mut Vm,
    reg: &Arc<WorkerRegistry>,
    name: &str,
    arity: u8,
    imp: Imp,
) -> Result<(), String> {
    let reg = reg.clone();
    let cmd: Arc<str> = Arc::from(name);
    vm.register_host_builtin(
        name,
        arity,
        Arc::new(move |vm: &mut Vm, args: &[Value]| {
            imp(&reg, vm, args).map_err(|f| f.with_cmd(&cmd))
        }),
    )
}

fn arg(args: &[Value], i: usize) -> Result<&Value, Failure> {
    args.get(i)
        .ok_or_else(|| Failure::error(format!("missing argument {}", i + 1)))
}

/// A description: non-empty text on one line.
fn description(v: &Value) -> Result<String, Failure> {
    let text = v.as_str().ok_or_else(|| {
        Failure::error(format!(
            "the description must be a String, got {}",
            v.kind_name()
        ))
    })?;
    if text.trim().is_empty() || text.contains(['\n', '\r']) {
        return Err(Failure::error(
            "the description must be non-empty text on one line (it names the work in listings)",
        ));
    }
    Ok(text.to_owned())
}

fn service(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let desc = description(arg(args, 0)?)?;
    let body = arg(args, 1)?.clone();
    let start = now_us();
    let w = reg
        .spawn(vm, Birth::Service(&desc), body, Vec::new())
        .map_err(|e| e.into_failure("service"))?;
    super::builtins::observe_birth(vm, &w, "durable", start);
    Ok(super::handle_value(&w))
}

fn service_handle(
    reg: &Arc<WorkerRegistry>,
    _vm: &mut Vm,
    args: &[Value],
) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let id = v.as_str().ok_or_else(|| {
        Failure::error(format!(
            "the id must be a String such as 'w3', got {}",
            v.kind_name()
        ))
    })?;
    reg.service_handle(id)
}

fn detach(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let Value::List(argv) = arg(args, 0)? else {
        return Err(Failure::error("detach takes its arguments as one list"));
    };
    let words = argv
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| Failure::error("detach's arguments must be text"))
        })
        .collect::<Result<Vec<String>, Failure>>()?;
    let usage = || {
        Failure::error(
            "detach needs a description and a command: detach 'what it is' program args…",
        )
    };
    let (desc, rest) = words.split_first().ok_or_else(usage)?;
    let (command, command_args) = rest.split_first().ok_or_else(usage)?;
    let desc = description(&Value::str(desc.as_str()))?;
    let start = now_us();
    let born = give_away(reg, vm, command, command_args);
    if vm.observing() {
        // A birth is a command observation of origin `detached` (§13.3).
        let mut argv = vec![command.clone()];
        argv.extend(command_args.iter().cloned());
        let (status, error) = match &born {
            Ok(_) => (0, String::new()),
            Err(f) => (f.status, f.message.clone()),
        };
        let site = vm.current_site();
        vm.observe(
            site,
            start,
            now_us(),
            What::Command(Box::new(CommandObs {
                argv,
                status,
                origin: Origin::Detached,
                stdout: Vec::new(),
                stderr: Vec::new(),
                error,
            })),
        );
    }
    let pid = born?;
    Ok(Value::record(Record::from_entries(vec![
        ("pid".to_owned(), Value::Int(i64::from(pid))),
        ("desc".to_owned(), Value::str(desc)),
    ])))
}

/// Starts `command` with `command_args` as a process the session stops
/// owning; its pid.
fn give_away(
    reg: &Arc<WorkerRegistry>,
    vm: &mut Vm,
    command: &str,
    command_args: &[String],
) -> Result<u32, Failure> {
    if !ral_vm::caps::may_detach(&vm.grants) {
        return Err(Failure::new(
            126,
            "denied by grant: detach (a grant in force says `detach: false`); `spawn` and \
             `service` start work the session owns"
                .to_owned(),
            ral_vm::Reason::NotRunnable,
        ));
    }
    let (name, program) = resolve(vm, command)?;
    if !vm.grants.is_empty() && program.exists() {
        if let Err(f) = ral_vm::caps::check_exec(&vm.grants, &name, &program, command_args) {
            vm.observe_exec_denial(&name, &program, command_args, &f);
            return Err(f);
        }
    }
    let sandbox = ral_vm::sandbox::prepare(&vm.grants, &name, &program)?;
    let mut env = vm.environment();
    if sandbox.is_some() {
        ral_vm::sandbox::scrub_env(&mut env);
    }
    let survivor = Survivor {
        name: &name,
        program,
        args: command_args,
        cwd: vm.cwd(),
        env,
        sandbox,
    };
    reg.detach_birth(|| launch(survivor))
}

/// The file `command` names, and its name for messages: a path (it has a
/// `/`) as written, relative to the logical directory; `^name` as the
/// program `PATH` finds; a bare name likewise, unless a handler or a base
/// handler would intercept it, since a handler runs inside the session
/// and cannot be given away (§11.5).
fn resolve(vm: &Vm, command: &str) -> Result<(String, PathBuf), Failure> {
    let (bare, caret) = match command.strip_prefix('^') {
        Some(rest) => (rest, true),
        None => (command, false),
    };
    if bare.is_empty() {
        return Err(Failure::error("detach: the command is empty"));
    }
    if bare.contains('/') {
        return Ok((bare.to_owned(), expand(vm, bare)));
    }
    if !caret && vm.intercepts(bare) {
        return Err(Failure::error(format!(
            "`{bare}` is taken by a handler or a base handler here, and a handler runs inside \
             the session, so it cannot be detached; write '^{bare}' to detach the program itself"
        )));
    }
    let cwd = vm.cwd();
    let path = vm.mobile.context.var("PATH");
    match ral_vm::process::search_path(bare, path.as_deref(), &cwd) {
        Some(program) => Ok((bare.to_owned(), program)),
        None => {
            let suggestions = ral_vm::process::suggest(bare, path.as_deref(), &[]);
            Err(ral_vm::process::not_found(bare, &suggestions))
        }
    }
}

/// `~`, `~/x` and relative paths against the logical directory.
fn expand(vm: &Vm, p: &str) -> PathBuf {
    let home = || vm.mobile.context.var("HOME").unwrap_or_default();
    let p = if p == "~" {
        home()
    } else if let Some(rest) = p.strip_prefix("~/") {
        format!("{}/{rest}", home())
    } else {
        p.to_owned()
    };
    let path = PathBuf::from(p);
    if path.is_absolute() {
        path
    } else {
        vm.cwd().join(path)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::{Duration, Instant};

    use ral_vm::{Escape, Func, Mobile};

    use super::*;

    /// Calls the registered `detach` with `argv`, as command dispatch does.
    fn call_detach(vm: &mut Vm, argv: &[&str]) -> Result<Value, Escape> {
        let id = ral_types::builtin_table().id("detach").unwrap().0;
        let handler = Value::Func(Arc::new(Func::Builtin {
            id,
            applied: Box::new([]),
        }));
        let list = Value::list(argv.iter().map(|a| Value::str(*a)).collect());
        vm.call_value(handler, vec![list])
    }

    #[test]
    fn the_receipt_names_the_program_pid_and_the_description() {
        let dir = std::env::temp_dir().join(format!("ral-receipt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut vm = Vm::new(Mobile::default());
        vm.mobile.context.cwd = Some(dir.clone());
        let reg = Arc::new(WorkerRegistry::new());
        install_agent_forms(&mut vm, &reg, AgentForms::default()).unwrap();
        let receipt = call_detach(
            &mut vm,
            &["the receipt", "sh", "-c", "echo $$ > pid; exec sleep 30"],
        )
        .unwrap();
        let start = Instant::now();
        let written = loop {
            let text = std::fs::read_to_string(dir.join("pid")).unwrap_or_default();
            if let Ok(pid) = text.trim().parse::<i64>() {
                break pid;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "no pid file");
            std::thread::sleep(Duration::from_millis(5));
        };
        let raw = i32::try_from(written).unwrap();
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(raw).unwrap(),
            rustix::process::Signal::KILL,
        );
        let _ = std::fs::remove_dir_all(&dir);
        let Value::Record(r) = receipt else {
            panic!("not a record: {receipt:?}")
        };
        assert_eq!(r.get("pid"), Some(&Value::Int(written)));
        assert_eq!(r.get("desc"), Some(&Value::str("the receipt")));
        assert_eq!(r.len(), 2);
        assert_eq!(reg.detach_births(), (1, DETACH_BIRTHS));
    }

    #[test]
    fn a_malformed_argument_list_fails_clearly() {
        let mut vm = Vm::new(Mobile::default());
        let reg = Arc::new(WorkerRegistry::new());
        install_agent_forms(&mut vm, &reg, AgentForms::default()).unwrap();
        for argv in [&[][..], &["only a description"][..]] {
            let Err(Escape::Fail(f)) = call_detach(&mut vm, argv) else {
                panic!("{argv:?} was accepted")
            };
            assert!(
                f.message.contains("needs a description and a command"),
                "{f}"
            );
            assert_eq!(f.cmd.as_deref(), Some("detach"));
        }
        let Err(Escape::Fail(f)) = call_detach(&mut vm, &["x", "^"]) else {
            panic!("an empty command was accepted")
        };
        assert!(f.message.contains("the command is empty"), "{f}");
        assert_eq!(reg.detach_births(), (0, DETACH_BIRTHS));
    }
}
