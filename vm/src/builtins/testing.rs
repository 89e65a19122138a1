//! A fake [`Ctx`] for testing builtins without a VM: closures are Rust
//! functions indexed by `proto`, builtins dispatch through the registry, and
//! writes collect into a buffer.

use std::sync::Arc;

use super::{by_table_id, lookup, Ctx};
use crate::failure::Failure;
use crate::value::{Func, Record, Value};

type Body = Box<dyn Fn(&[Value]) -> Result<Value, Failure>>;

pub(crate) struct FakeCtx {
    bodies: Vec<Body>,
    pub(crate) out: Vec<u8>,
    pub(crate) calls: usize,
    /// The fake's stand-in for the VM's pending exit: set when a body
    /// fails with the message `exit`.
    exiting: bool,
}

impl FakeCtx {
    pub(crate) fn new() -> FakeCtx {
        FakeCtx {
            bodies: Vec::new(),
            out: Vec::new(),
            calls: 0,
            exiting: false,
        }
    }

    /// A closure value whose body is `body`.
    pub(crate) fn closure(
        &mut self,
        body: impl Fn(&[Value]) -> Result<Value, Failure> + 'static,
    ) -> Value {
        let proto = u32::try_from(self.bodies.len()).unwrap_or(u32::MAX);
        self.bodies.push(Box::new(body));
        Value::Func(Arc::new(Func::Closure {
            proto,
            captures: Box::new([]),
            params: Arc::from(vec!["x".to_owned()]),
        }))
    }

    /// A builtin function value, partially applied to `applied`.
    pub(crate) fn builtin(&mut self, name: &str, applied: Vec<Value>) -> Value {
        let id = ral_types::builtin_table()
            .id(name)
            .unwrap_or_else(|| panic!("no builtin {name}"));
        Value::Func(Arc::new(Func::Builtin {
            id: id.0,
            applied: applied.into_boxed_slice(),
        }))
    }

    /// Runs the builtin `name` on `args`.
    pub(crate) fn run(&mut self, name: &str, args: &[Value]) -> Result<Value, Failure> {
        let def = lookup(name).unwrap_or_else(|| panic!("no builtin {name}"));
        assert_eq!(usize::from(def.arity), args.len(), "arity of {name}");
        (def.func)(self, args)
    }
}

impl Ctx for FakeCtx {
    fn call(&mut self, func: &Value, args: &[Value]) -> Result<Value, Failure> {
        self.calls += 1;
        let Value::Func(f) = func else {
            return Err(Failure::error("not a function"));
        };
        match &**f {
            Func::Closure { proto, .. } => {
                let body = self
                    .bodies
                    .get(*proto as usize)
                    .ok_or_else(|| Failure::error("no such proto"))?;
                let r = body(args);
                self.exiting = matches!(&r, Err(f) if f.message == "exit");
                r
            }
            Func::Builtin { id, applied } => {
                let def = by_table_id(ral_types::BuiltinId(*id))
                    .ok_or_else(|| Failure::error("no such builtin"))?;
                let mut all = applied.to_vec();
                all.extend_from_slice(args);
                (def.func)(self, &all)
            }
            Func::Partial { .. } => Err(Failure::error("partial closures are not faked")),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.out.extend_from_slice(bytes);
        Ok(())
    }

    fn exiting(&self) -> bool {
        self.exiting
    }
}

/// Runs a first-order builtin.
pub(crate) fn call(name: &str, args: &[Value]) -> Result<Value, Failure> {
    FakeCtx::new().run(name, args)
}

/// The failure message of running a builtin that must fail.
pub(crate) fn fails(name: &str, args: &[Value]) -> String {
    match call(name, args) {
        Ok(v) => panic!("{name} succeeded with {v:?}"),
        Err(f) => f.message.clone(),
    }
}

pub(crate) fn list(items: Vec<Value>) -> Value {
    Value::list(items)
}

pub(crate) fn ints(ns: &[i64]) -> Value {
    Value::list(ns.iter().copied().map(Value::Int).collect())
}

pub(crate) fn strs(ss: &[&str]) -> Value {
    Value::list(ss.iter().map(|s| Value::str(*s)).collect())
}

pub(crate) fn rec(entries: &[(&str, Value)]) -> Value {
    Value::record(Record::from_entries(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    ))
}
