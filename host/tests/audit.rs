//! The audit trail through the host: `ral --audit [--pretty]` end to end,
//! its report parsed as JSON (spec §13.4), and a turn's trail through
//! [`TurnRequest::audit`] with the work that runs away from the owning
//! thread — workers, `defer`, ral-written pipeline stages (§13.3).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output, Stdio};

use ral_host::audit::report_json;
use ral_host::{Settled, Shell, TurnIo, TurnReport, TurnRequest, Value, What};
use serde_json::Value as Json;

fn ral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("ral runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The report: the last line of standard error, parsed.
fn compact_report(out: &Output) -> Json {
    let err = text(&out.stderr);
    let line = err.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {err}"))
}

/// The `what` payloads of the report's trail with tag `tag`.
fn of_kind<'a>(report: &'a Json, tag: &str) -> Vec<&'a Json> {
    report["trail"]
        .as_array()
        .expect("a trail array")
        .iter()
        .filter(|o| o["what"]["tag"] == tag)
        .map(|o| &o["what"]["payload"])
        .collect()
}

#[test]
fn the_report_is_one_json_line_after_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.txt");
    let src = format!(
        "echo streamed\nsh -c 'echo to-err >&2; printf kept'\necho written > {}\n",
        target.display()
    );
    let out = ral(&["--audit", "-c", &src]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Program output is not suppressed: fd 1 and fd 2 carry it as ever.
    assert_eq!(text(&out.stdout), "streamed\nkept");
    assert!(text(&out.stderr).starts_with("to-err\n"));
    let report = compact_report(&out);
    assert_eq!(
        report["outcome"],
        serde_json::json!({"tag": "ok", "payload": null})
    );
    let commands = of_kind(&report, "command");
    assert_eq!(commands.len(), 1, "{report}");
    let c = commands[0];
    assert_eq!(
        c["argv"],
        serde_json::json!(["sh", "-c", "echo to-err >&2; printf kept"])
    );
    assert_eq!(c["status"], 0);
    assert_eq!(c["origin"], "external");
    // Bytes are projected to text.
    assert_eq!(c["stdout"], "kept");
    assert_eq!(c["stderr"], "to-err\n");
    assert_eq!(c["error"], "");
    let writes = of_kind(&report, "write");
    assert_eq!(writes.len(), 1);
    let w = writes[0];
    assert_eq!(w["path"], target.display().to_string());
    assert_eq!(w["outcome"], "committed");
    assert_eq!(
        w["old_bytes"],
        serde_json::json!({"tag": "just", "payload": ""})
    );
    assert_eq!(
        w["new_bytes"],
        serde_json::json!({"tag": "just", "payload": "written\n"})
    );
    // Every observation has the common fields, the site a variant.
    for o in report["trail"].as_array().unwrap() {
        assert!(o["start"].as_i64().unwrap() <= o["end"].as_i64().unwrap());
        assert_eq!(o["principal"], "");
        assert_eq!(o["site"]["tag"], "just");
        assert_eq!(o["site"]["payload"]["script"], "<-c>");
    }
}

#[test]
fn pretty_writes_the_same_report_indented() {
    let out = ral(&["--audit", "--pretty", "-c", "sh -c 'exit 0'"]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.lines().count() > 5, "{err}");
    let report: Json = serde_json::from_str(&err).unwrap();
    assert_eq!(of_kind(&report, "command").len(), 1);
}

#[test]
fn a_failure_is_the_err_outcome_and_keeps_the_status() {
    let out = ral(&["--audit", "-c", "sh -c 'exit 7'\necho never"]);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(text(&out.stdout), "");
    // No separate human diagnostic: the report is the whole of stderr.
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    let report = compact_report(&out);
    let e = &report["outcome"]["payload"];
    assert_eq!(report["outcome"]["tag"], "err");
    assert_eq!(e["status"], 7);
    assert_eq!(e["cmd"], "sh");
    assert_eq!(
        e["reason"],
        serde_json::json!({"tag": "exited", "payload": 7})
    );
    assert_eq!(e["site"]["payload"]["line"], 1);
    assert_eq!(of_kind(&report, "command")[0]["status"], 7);
}

#[test]
fn an_exit_at_the_root_is_ok_and_keeps_its_status() {
    let out = ral(&["--audit", "-c", "exit 5"]);
    assert_eq!(out.status.code(), Some(5));
    let report = compact_report(&out);
    assert_eq!(
        report["outcome"],
        serde_json::json!({"tag": "ok", "payload": null})
    );
    assert_eq!(report["trail"], serde_json::json!([]));
}

#[test]
fn a_script_reports_its_denials() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("deny.ral");
    std::fs::write(
        &script,
        "grant [exec: [true: 'allow']] {\n  try { sh -c 'exit 0' } { |e| () }\n}\n",
    )
    .unwrap();
    let out = ral(&["--audit", script.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = compact_report(&out);
    let checks = of_kind(&report, "check");
    assert_eq!(checks.len(), 1, "{report}");
    assert_eq!(checks[0]["resource"], "exec");
    assert_eq!(checks[0]["decision"], "denied");
    assert_eq!(checks[0]["fields"]["command"], "sh");
    let c = &of_kind(&report, "command")[0];
    assert_eq!(c["status"], 126);
    assert!(c["error"].as_str().unwrap().contains("denied by grant"));
    let site = &report["trail"][0]["site"]["payload"];
    assert_eq!(site["script"], script.display().to_string());
    assert_eq!(site["line"], 2);
}

#[test]
fn static_errors_give_diagnostics_and_no_report() {
    let out = ral(&["--audit", "-c", "let x = $[1 + 'a']"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("Error"), "{err}");
    assert!(serde_json::from_str::<Json>(err.lines().last().unwrap_or("")).is_err());
}

#[test]
fn the_flags_keep_their_restrictions() {
    for args in [
        &["--pretty", "-c", "echo x"][..],
        &["--audit"][..],
        &["--audit", "-s"][..],
        &["--audit", "--check", "-c", "echo x"][..],
    ] {
        let out = ral(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_report_that_cannot_be_written_fails_without_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(["--audit", "-c", "sleep 0.3"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Nobody reads standard error: writing the report fails.
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}

// ---- the trail through run_turn ----

fn audited(shell: &mut Shell, src: &str) -> (Settled<Value>, Vec<ral_host::Observation>) {
    let report = shell.run_turn(
        src,
        TurnRequest {
            io: TurnIo::Capture,
            audit: true,
            ..TurnRequest::new("<test>")
        },
    );
    match report {
        TurnReport::Ran {
            result,
            trail: Some(trail),
            ..
        } => (result, trail),
        other => panic!("{other:?}"),
    }
}

fn argv0(o: &ral_host::Observation) -> Option<&str> {
    match &o.what {
        What::Command(c) => c.argv.first().map(String::as_str),
        _ => None,
    }
}

#[test]
fn a_turn_without_audit_keeps_no_trail() {
    let mut shell = Shell::default();
    let report = shell.run_turn(
        "sh -c 'exit 0'",
        TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new("<test>")
        },
    );
    assert!(matches!(report, TurnReport::Ran { trail: None, .. }));
    // And the next audited turn starts empty.
    let (_, trail) = audited(&mut shell, "return 1");
    assert!(trail.is_empty());
}

#[test]
fn workers_report_their_fragments_to_the_trail_that_awaits_them() {
    let mut shell = Shell::default();
    let (result, trail) = audited(
        &mut shell,
        "let h = spawn { sh -c 'echo from-worker' }\nawait $h\nreturn ()",
    );
    assert!(result.is_ok(), "{result:?}");
    let tags: Vec<&str> = trail.iter().map(|o| o.what.tag()).collect();
    assert_eq!(tags, ["worker", "command"], "{trail:?}");
    let What::Worker { class, cmd, .. } = &trail[0].what else {
        panic!()
    };
    assert_eq!(class, "worker");
    assert!(cmd.starts_with("spawn"), "{cmd}");
    let What::Command(c) = &trail[1].what else {
        panic!()
    };
    assert_eq!(c.stdout, b"from-worker\n");
    // The worker ran inside the turn's extent: its interval nests in
    // nothing later than the await.
    assert!(trail[0].start <= trail[1].start);
}

#[test]
fn defer_returns_a_report_of_its_body() {
    let mut shell = Shell::default();
    let (result, trail) = audited(
        &mut shell,
        "let h = defer { sh -c 'exit 4' }\nlet r = await $h\nreturn $r[value]",
    );
    let Settled::Ok(report) = result else {
        panic!("{result:?}")
    };
    let json = ral_host::audit::value_to_json(&report);
    assert_eq!(json["outcome"]["tag"], "err");
    assert_eq!(json["outcome"]["payload"]["status"], 4);
    assert_eq!(json["trail"][0]["what"]["payload"]["argv"][0], "sh");
    // The turn's own trail has the birth and, merged at the await, the
    // deferred body's command.
    assert_eq!(trail.iter().filter_map(argv0).collect::<Vec<_>>(), ["sh"]);
    assert!(trail.iter().any(|o| o.what.tag() == "worker"));
    // Outside any trail, defer still reports.
    let report = shell.run_turn(
        "let h2 = defer { sh -c 'echo alone' }\nlet r2 = await $h2\nreturn !{length $r2[value][trail]}",
        TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new("<test>")
        },
    );
    assert!(
        matches!(
            report,
            TurnReport::Ran {
                result: Settled::Ok(Value::Int(1)),
                ..
            }
        ),
        "{report:?}"
    );
}

#[test]
fn ral_written_pipeline_stages_report_into_the_owning_trail() {
    let mut shell = Shell::default();
    let (result, trail) = audited(
        &mut shell,
        "!{ sh -c 'echo one'; sh -c 'echo two' } | !{ sh -c 'cat' }",
    );
    assert!(result.is_ok(), "{result:?}");
    let mut names: Vec<&str> = trail.iter().filter_map(argv0).collect();
    names.sort_unstable();
    assert_eq!(names, ["sh", "sh", "sh"]);
    let json = report_json(&result, &trail);
    let cat = json["trail"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["what"]["payload"]["argv"][2] == "cat")
        .unwrap();
    assert_eq!(cat["what"]["payload"]["stdout"], "one\ntwo\n");
}

#[test]
fn agent_forms_record_durable_births_and_refused_detaches() {
    let mut shell = Shell::default();
    shell
        .enable_agent_forms(ral_host::AgentForms::default())
        .unwrap();
    let (result, trail) = audited(
        &mut shell,
        "let s = service 'a quiet service' { return 1 }\n\
         await $s\n\
         grant [exec: [true: 'allow']] { try { detach 'refused' sh -c 'exit 0'; return () } { |e| () } }\n\
         return ()",
    );
    assert!(result.is_ok(), "{result:?}");
    let born = trail
        .iter()
        .find_map(|o| match &o.what {
            What::Worker { class, cmd, .. } => Some((class.clone(), cmd.clone())),
            _ => None,
        })
        .expect("a worker birth");
    assert_eq!(born, ("durable".to_owned(), "a quiet service".to_owned()));
    let denial = trail
        .iter()
        .find_map(|o| match &o.what {
            What::Check(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a denial");
    assert_eq!(denial.resource, "exec");
    assert!(denial
        .fields
        .contains(&("command".to_owned(), "sh".to_owned())));
    let detached = trail
        .iter()
        .find_map(|o| match &o.what {
            What::Command(c) => Some(c.clone()),
            _ => None,
        })
        .expect("the refused birth");
    assert_eq!(detached.origin, ral_host::audit::Origin::Detached);
    assert_eq!(detached.argv, ["sh", "-c", "exit 0"]);
    assert_eq!(detached.status, 126);
    assert!(
        detached.error.contains("denied by grant"),
        "{}",
        detached.error
    );
}
