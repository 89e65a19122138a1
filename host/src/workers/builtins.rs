//! The worker builtins (§11.1–§11.5) and `surface`, as host builtins over
//! a [`WorkerRegistry`].

use std::sync::Arc;

use ral_vm::audit::{now_us, What};
use ral_vm::{Failure, Record, Value, Vm};

use super::state::{lock, CancelCause, Claim, Phase, Worker};
use super::{handle_value, reraise, worker_of, Birth, BirthError, Waited, WorkerRegistry};

type Imp = fn(&Arc<WorkerRegistry>, &mut Vm, &[Value]) -> Result<Value, Failure>;

/// Registers `spawn`, `defer`, `await`, `poll`, `race`, `cancel`, `par`,
/// `is-done`, `watch` and `surface` on `vm`, all over `reg`: the set the `ral` hosts
/// (interactive and batch) install. Machines forked from `vm` (workers)
/// share them.
pub fn install_worker_builtins(vm: &mut Vm, reg: &Arc<WorkerRegistry>) -> Result<(), String> {
    install_core_worker_builtins(vm, reg)?;
    register(vm, reg, "watch", 2, watch)
}

/// Registers everything [`install_worker_builtins`] does except `watch`:
/// the set for a host whose output capture ends with each turn (an agent
/// host), where a worker must not stream into the session's output after
/// its turn (§11.5).
pub fn install_core_worker_builtins(vm: &mut Vm, reg: &Arc<WorkerRegistry>) -> Result<(), String> {
    let table: [(&str, u8, Imp); 9] = [
        ("spawn", 1, spawn),
        ("defer", 1, defer),
        ("await", 1, await_),
        ("poll", 1, poll),
        ("race", 1, race),
        ("cancel", 1, cancel),
        ("par", 3, par),
        ("is-done", 1, is_done),
        ("surface", 1, surface),
    ];
    for (name, arity, imp) in table {
        register(vm, reg, name, arity, imp)?;
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

fn handle_arg(v: &Value) -> Result<Arc<Worker>, Failure> {
    let Value::Handle(h) = v else {
        return Err(Failure::error(format!(
            "expected a handle, got {}",
            v.kind_name()
        )));
    };
    worker_of(h)
        .cloned()
        .ok_or_else(|| Failure::error("this handle does not belong to this session"))
}

fn await_record(claim: &Claim, value: Value) -> Value {
    Value::record(Record::from_entries(vec![
        ("value".to_owned(), value),
        ("stdout".to_owned(), Value::Bytes(claim.stdout.clone())),
        ("stderr".to_owned(), Value::Bytes(claim.stderr.clone())),
    ]))
}

/// Records a worker's birth, which began at `start`, in the creator's
/// open trail (§13.3).
pub(crate) fn observe_birth(vm: &mut Vm, w: &Worker, class: &str, start: i64) {
    if !vm.observing() {
        return;
    }
    let site = vm.current_site();
    let id = i64::try_from(w.id).unwrap_or(i64::MAX);
    vm.observe(
        site,
        start,
        now_us(),
        What::Worker {
            id,
            cmd: w.description.clone(),
            class: class.to_owned(),
        },
    );
}

/// Hands a settled worker's result to the caller: merges its trail
/// fragment into the caller's open trail, replays its deferred surface
/// events (first claim only) through the caller's current sink, then
/// returns the `await` record or re-raises the worker's failure.
fn deliver(reg: &WorkerRegistry, vm: &mut Vm, w: &Worker) -> Result<Value, Failure> {
    let mut claim = match w.claim() {
        Some(Ok(c)) => c,
        Some(Err(f)) => return Err(f),
        None => {
            return Err(Failure::error(format!(
                "worker {} has not settled",
                w.name()
            )))
        }
    };
    vm.merge_trail(std::mem::take(&mut claim.trail));
    for ev in &claim.replay {
        reg.emit_surface(ev);
    }
    match &claim.outcome {
        Ok(v) => Ok(await_record(&claim, v.clone())),
        Err(f) => Err(reraise(f.clone())),
    }
}

fn spawn(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    start_worker(reg, vm, args, Birth::Spawn, "spawn")
}

/// `defer block` (§14): a worker whose body runs under `audit`, so its
/// handle's value is the body's report.
fn defer(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    start_worker(reg, vm, args, Birth::Defer, "defer")
}

/// Starts the block `args[0]` as a worker of kind `birth`, records its
/// birth in an open trail, and returns its handle.
fn start_worker(
    reg: &Arc<WorkerRegistry>,
    vm: &mut Vm,
    args: &[Value],
    birth: Birth,
    name: &str,
) -> Result<Value, Failure> {
    let body = arg(args, 0)?.clone();
    let start = now_us();
    let w = reg
        .spawn(vm, birth, body, Vec::new())
        .map_err(|e| e.into_failure(name))?;
    observe_birth(vm, &w, "worker", start);
    Ok(handle_value(&w))
}

fn watch(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let label = arg(args, 0)?
        .as_str()
        .ok_or_else(|| Failure::error("the label must be a String"))?
        .to_owned();
    if label.is_empty() || label.contains(['\n', '\r']) {
        return Err(Failure::error(
            "the label must be non-empty text on one line (it prefixes every output line)",
        ));
    }
    let body = arg(args, 1)?.clone();
    let start = now_us();
    let w = reg
        .spawn(vm, Birth::Watch(&label), body, Vec::new())
        .map_err(|e| e.into_failure("watch"))?;
    observe_birth(vm, &w, "worker", start);
    Ok(handle_value(&w))
}

fn await_(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let w = handle_arg(arg(args, 0)?)?;
    let caller = vm.cancel_probe();
    match reg.wait_any(std::slice::from_ref(&w), &caller, true) {
        Waited::Settled(_) | Waited::Cancelled(_) | Waited::NoneLive => {}
        Waited::CallerCancelled => return Err(Failure::cancelled(vm.cancel_cause())),
    }
    reg.forget(w.id);
    deliver(reg, vm, &w)
}

fn poll(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let w = handle_arg(arg(args, 0)?)?;
    let (value, settled, fragment) = {
        let mut st = lock(&w.state);
        st.last_observed = std::time::Instant::now();
        match &mut st.phase {
            Phase::Running => {
                let rec = Record::from_entries(vec![
                    ("stdout".to_owned(), Value::bytes(st.stdout.snapshot())),
                    ("stderr".to_owned(), Value::bytes(st.stderr.snapshot())),
                ]);
                (
                    Value::variant("pending", Some(Value::record(rec))),
                    false,
                    Vec::new(),
                )
            }
            Phase::Settled(s) => {
                let outcome = match &s.outcome {
                    Ok(v) => Value::variant("ok", Some(v.clone())),
                    Err(f) => Value::variant("err", Some(ral_vm::exec::error_record(f))),
                };
                let rec = Record::from_entries(vec![
                    ("stdout".to_owned(), Value::Bytes(s.stdout.clone())),
                    ("stderr".to_owned(), Value::Bytes(s.stderr.clone())),
                    ("outcome".to_owned(), outcome),
                ]);
                let fragment = std::mem::take(&mut s.trail);
                (
                    Value::variant("settled", Some(Value::record(rec))),
                    true,
                    fragment,
                )
            }
            Phase::Cancelled(cause) => return Err(w.cancelled_failure(*cause)),
        }
    };
    if settled {
        reg.forget(w.id);
    }
    vm.merge_trail(fragment);
    Ok(value)
}

fn is_done(reg: &Arc<WorkerRegistry>, _vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let w = handle_arg(arg(args, 0)?)?;
    let done = {
        let mut st = lock(&w.state);
        st.last_observed = std::time::Instant::now();
        match &st.phase {
            Phase::Running => false,
            Phase::Settled(_) => true,
            Phase::Cancelled(cause) => return Err(w.cancelled_failure(*cause)),
        }
    };
    if done {
        reg.forget(w.id);
    }
    Ok(Value::Bool(done))
}

fn cancel(reg: &Arc<WorkerRegistry>, _vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let w = handle_arg(arg(args, 0)?)?;
    reg.cancel_worker(&w, CancelCause::Explicit);
    Ok(Value::Unit)
}

fn race(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let Value::List(items) = arg(args, 0)? else {
        return Err(Failure::error("expected a list of handles"));
    };
    if items.is_empty() {
        return Err(Failure::error("race needs at least one handle"));
    }
    let ws = items
        .iter()
        .map(handle_arg)
        .collect::<Result<Vec<_>, _>>()?;
    let caller = vm.cancel_probe();
    let winner = match reg.wait_any(&ws, &caller, false) {
        Waited::Settled(i) => i,
        Waited::NoneLive | Waited::Cancelled(_) => {
            return Err(Failure::error(
                "race has no running or settled handle left to observe: all are cancelled",
            ))
        }
        Waited::CallerCancelled => return Err(Failure::cancelled(vm.cancel_cause())),
    };
    let Some(win) = ws.get(winner) else {
        return Err(Failure::error("race lost its winner"));
    };
    for w in &ws {
        if w.id != win.id {
            reg.cancel_worker(w, CancelCause::RaceLoser);
        }
    }
    reg.forget(win.id);
    deliver(reg, vm, win)
}

fn par(reg: &Arc<WorkerRegistry>, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let func = arg(args, 0)?.clone();
    let Value::List(items) = arg(args, 1)? else {
        return Err(Failure::error("expected a list of items"));
    };
    let items = items.clone();
    let Value::Int(jobs) = *arg(args, 2)? else {
        return Err(Failure::error("expected an Int job limit"));
    };
    let total = items.len();
    if total == 0 {
        return Ok(Value::list(Vec::new()));
    }
    let limit = match usize::try_from(jobs) {
        Ok(0) | Err(_) => total,
        Ok(n) => n.min(total),
    };
    let caller = vm.cancel_probe();
    let mut results: Vec<Option<Value>> = vec![None; total];
    let mut events: Vec<Option<Vec<Value>>> = vec![None; total];
    let mut replayed = 0usize;
    let mut running: Vec<(usize, Arc<Worker>)> = Vec::new();
    let mut next = 0usize;
    let stop_all = |running: &[(usize, Arc<Worker>)], cause: CancelCause| {
        for (_, w) in running {
            reg.cancel_worker(w, cause);
        }
    };
    loop {
        while running.len() < limit && next < total {
            let item = items.get(next).cloned().unwrap_or_default();
            let start = now_us();
            match reg.spawn(vm, Birth::Par, func.clone(), vec![item]) {
                Ok(w) => {
                    observe_birth(vm, &w, "worker", start);
                    running.push((next, w));
                    next += 1;
                }
                // At the worker cap: run with the seats this call holds.
                Err(BirthError::Cap(_)) if !running.is_empty() => break,
                Err(e) => {
                    stop_all(&running, CancelCause::ParSibling);
                    return Err(e.into_failure("par"));
                }
            }
        }
        if running.is_empty() {
            break;
        }
        let ws: Vec<Arc<Worker>> = running.iter().map(|(_, w)| w.clone()).collect();
        match reg.wait_any(&ws, &caller, true) {
            Waited::Settled(k) => {
                let (i, w) = running.remove(k);
                reg.forget(w.id);
                match w.claim() {
                    Some(Ok(claim)) => {
                        vm.merge_trail(claim.trail);
                        if let Some(slot) = events.get_mut(i) {
                            *slot = Some(claim.replay);
                        }
                        match claim.outcome {
                            Ok(v) => {
                                if let Some(slot) = results.get_mut(i) {
                                    *slot = Some(v);
                                }
                                // Replay in input order as the completed
                                // prefix grows.
                                while let Some(Some(evs)) = events.get_mut(replayed) {
                                    for ev in std::mem::take(evs) {
                                        reg.emit_surface(&ev);
                                    }
                                    replayed += 1;
                                }
                            }
                            Err(f) => {
                                stop_all(&running, CancelCause::ParSibling);
                                for evs in events.iter_mut().skip(replayed).flatten() {
                                    for ev in std::mem::take(evs) {
                                        reg.emit_surface(&ev);
                                    }
                                }
                                return Err(reraise(f));
                            }
                        }
                    }
                    Some(Err(f)) => {
                        stop_all(&running, CancelCause::ParSibling);
                        return Err(f);
                    }
                    None => {
                        stop_all(&running, CancelCause::ParSibling);
                        return Err(Failure::error("an item's worker vanished before settling"));
                    }
                }
            }
            Waited::Cancelled(k) => {
                let (_, w) = running.remove(k);
                stop_all(&running, CancelCause::ParSibling);
                return Err(match w.claim() {
                    Some(Err(f)) => f,
                    Some(Ok(_)) | None => Failure::error("an item's worker was cancelled"),
                });
            }
            Waited::NoneLive => {
                stop_all(&running, CancelCause::ParSibling);
                return Err(Failure::error("no item's worker is left to wait for"));
            }
            Waited::CallerCancelled => {
                stop_all(&running, CancelCause::ParCancelled);
                return Err(Failure::cancelled(vm.cancel_cause()));
            }
        }
    }
    let values: Vec<Value> = results.into_iter().map(Option::unwrap_or_default).collect();
    Ok(Value::list(values))
}

fn surface(reg: &Arc<WorkerRegistry>, _vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    reg.emit_surface(arg(args, 0)?);
    Ok(Value::Unit)
}
