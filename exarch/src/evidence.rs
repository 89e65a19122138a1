//! What a call did, from its audit trail: the evidence the session log
//! keeps beside the model's prose.
//!
//! Every call runs with an open trail (`TurnRequest::audit`). Its
//! observations are reduced here to what an operator asks of a call —
//! which commands ran and how they ended, which files were written, what
//! was refused — and written as one `evidence` record after the call's
//! `tool_call` record. Output bytes are left out: the call's result
//! already carries what the model saw, and the trail's copies can be
//! large. Nothing here reaches the model.

use ral_host::{Observation, What};
use serde_json::{json, Value};

/// One call's evidence.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evidence {
    /// `{argv, status, origin, error?, start, end}` per command, in
    /// settlement order.
    pub commands: Vec<Value>,
    /// `{path, mode, outcome}` per settled write.
    pub writes: Vec<Value>,
    /// `{resource, fields}` per denial.
    pub denials: Vec<Value>,
    /// `{resource, fields}` per advisory check (`deputy`/`flagged`).
    pub flagged: Vec<Value>,
    /// Paths read through `<`.
    pub reads: Vec<String>,
    /// `{id, cmd, class}` per worker birth.
    pub workers: Vec<Value>,
    /// Host acts and searches, as their observations' JSON.
    pub other: Vec<Value>,
}

impl Evidence {
    /// The evidence in `trail`.
    pub fn from_trail(trail: &[Observation]) -> Evidence {
        let mut ev = Evidence::default();
        for o in trail {
            match &o.what {
                What::Command(c) => {
                    let mut rec = json!({
                        "argv": c.argv,
                        "status": c.status,
                        "origin": c.origin.name(),
                        "start": o.start,
                        "end": o.end,
                    });
                    if !c.error.is_empty() {
                        rec["error"] = json!(c.error);
                    }
                    ev.commands.push(rec);
                }
                What::Write(w) => ev.writes.push(json!({
                    "path": w.path,
                    "mode": w.mode.name(),
                    "outcome": w.outcome.name(),
                })),
                What::Read { path } => ev.reads.push(path.clone()),
                What::Check(c) => {
                    let fields: serde_json::Map<String, Value> = c
                        .fields
                        .iter()
                        .map(|(k, v)| (k.clone(), json!(v)))
                        .collect();
                    let rec = json!({"resource": c.resource, "fields": fields});
                    if c.decision == "denied" {
                        ev.denials.push(rec);
                    } else {
                        ev.flagged.push(rec);
                    }
                }
                What::Worker { id, cmd, class } => ev.workers.push(json!({
                    "id": format!("w{id}"),
                    "cmd": cmd,
                    "class": class,
                })),
                What::Grep { .. } | What::Act(_) => {
                    ev.other.push(ral_host::audit::observation_json(o));
                }
            }
        }
        ev
    }

    /// The log record's fields: `commands`, `writes` and `denials` always,
    /// the rest when there is something to say.
    pub fn to_log(&self, id: &str) -> Value {
        let mut rec = json!({
            "id": id,
            "commands": self.commands,
            "writes": self.writes,
            "denials": self.denials,
        });
        let optional = [
            ("flagged", json!(self.flagged), self.flagged.is_empty()),
            ("reads", json!(self.reads), self.reads.is_empty()),
            ("workers", json!(self.workers), self.workers.is_empty()),
            ("other", json!(self.other), self.other.is_empty()),
        ];
        for (key, value, empty) in optional {
            if !empty {
                rec[key] = value;
            }
        }
        rec
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ral_host::{Settled, Shell, TurnIo, TurnReport, TurnRequest};

    fn trail_of(src: &str) -> Vec<Observation> {
        let mut shell = Shell::default();
        let report = shell.run_turn(
            src,
            TurnRequest {
                io: TurnIo::Capture,
                audit: true,
                ..TurnRequest::new("<tool>")
            },
        );
        match report {
            TurnReport::Ran {
                result: Settled::Ok(_),
                trail: Some(t),
                ..
            } => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn commands_writes_and_denials_are_kept_without_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        let src = format!(
            "sh -c 'echo lots'\necho x > {}\ngrant [exec: [true: 'allow']] {{ try {{ sh -c 'exit 0' }} {{ |e| () }} }}",
            f.display()
        );
        let ev = Evidence::from_trail(&trail_of(&src));
        assert_eq!(ev.commands.len(), 2);
        assert_eq!(ev.commands[0]["argv"], json!(["sh", "-c", "echo lots"]));
        assert_eq!(ev.commands[0]["status"], 0);
        assert!(ev.commands[0].get("stdout").is_none());
        assert!(ev.commands[0].get("error").is_none());
        assert_eq!(ev.commands[1]["status"], 126);
        assert!(ev.commands[1]["error"]
            .as_str()
            .unwrap()
            .contains("denied by grant"));
        assert_eq!(
            ev.writes,
            vec![json!({"path": f.display().to_string(), "mode": "write", "outcome": "committed"})]
        );
        assert_eq!(ev.denials.len(), 1);
        assert_eq!(ev.denials[0]["resource"], "exec");
        assert_eq!(ev.denials[0]["fields"]["command"], "sh");
        let log = ev.to_log("c1");
        assert_eq!(log["id"], "c1");
        assert!(log.get("workers").is_none());
    }
}
