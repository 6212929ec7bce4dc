//! Drives the `conform-reference` binary's DSH SDK provider over the subject protocol against a
//! tiny stand-in SDK runtime (`fixtures/mini_dsh.py`).

use crate::common;

use common::{Subject, alive, assert_redacted, fixture_named, python, text};
use serde_json::{Value, json};

const CHILD_ERROR: &str =
    "Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)";
const INIT_TRANSPORT: &str = "subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: transport)";
const INIT_CONFIGURATION: &str = "subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: configuration)";

fn start_with(
    run: &str,
    mode: &str,
    label: &str,
    command: &str,
    args: Vec<String>,
    cwd: &str,
    config: Value,
) -> Value {
    json!({
        "type": "start", "run": run, "provider": "dsh-sdk", "mode": mode, "label": label,
        "task": "say hello", "expectedBy": "2030-01-01T00:00:00Z",
        "runtime": {"command": command, "args": args, "env": {"EXTRA": "1"}, "cwd": cwd},
        "config": config,
    })
}

/// A run of the stand-in runtime in `fixture_mode`.
fn start(run: &str, mode: &str, label: &str, fixture_mode: &str, config: Value) -> Value {
    start_with(
        run,
        mode,
        label,
        &python(),
        vec![fixture_named("mini_dsh.py"), fixture_mode.to_string()],
        "/tmp",
        config,
    )
}

/// Fast teardown bounds for the tests.
fn fast() -> Value {
    json!({"shutdownTimeoutMs": 300, "disposeEofGraceMs": 300, "disposeGraceMs": 300})
}

/// The stand-in's pid and `initialize` params, from its `INIT` stderr line.
fn init_line(seen: &[Value], run: &str) -> (i32, Value) {
    let text = seen
        .iter()
        .filter(|v| v["type"] == "host_log" && v["run"] == run)
        .find_map(|v| {
            let t = v["text"].as_str().unwrap();
            t.find("INIT ").map(|i| t[i + 5..].to_owned())
        })
        .expect("INIT line");
    let (pid, params) = text.split_once(' ').unwrap();
    (pid.parse().unwrap(), serde_json::from_str(params).unwrap())
}

#[test]
fn completed_foreground() {
    let mut s = Subject::spawn(&[]);
    let config = json!({"provider": "fake", "model": "m", "maxTokens": 64, "permission": "allow"});
    s.send(start("r1", "foreground", "fg", "ok", config));
    let d = s.next();
    assert_eq!(d["type"], "dispatched");
    assert_eq!(d["expectedBy"], "2030-01-01T00:00:00Z");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "r1", "stopReason": "completed",
               "output": [text("hello world")]})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": false, "text": "hello world"})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    let (pid, params) = init_line(&seen, "r1");
    assert_eq!(
        params,
        json!({"cwd": "/tmp", "provider": "fake", "model": "m", "maxTokens": 64})
    );
    assert!(!alive(pid), "runtime {pid} survived settled");
}

#[test]
fn child_error_foreground_and_background() {
    let mut s = Subject::spawn(&[]);
    s.send(start("fg", "foreground", "fg", "error", json!({})));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "fg", "stopReason": "error",
               "output": [text("hello world")], "diagnostic": CHILD_ERROR})
    );
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "fg", "isError": true, "text": format!(
            "Error: subagent run failed\nDiagnostic: {CHILD_ERROR}\nPartial output before the run ended:\nhello world")})
    );

    s.send(start("bg", "background", "Observe DSH", "error", json!({})));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "bg", "isError": false,
               "text": "started background subagent job subagent-1"})
    );
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(s.next()["diagnostic"], CHILD_ERROR);
    assert_eq!(s.next(), json!({"type": "settled", "run": "bg"}));
    let status = format!("[status: failed, error; diagnostic: {CHILD_ERROR}]");
    assert_eq!(
        s.next(),
        json!({"type": "notice", "run": "bg", "job": "subagent-1", "text": format!(
            "background job subagent-1 (subagent: Observe DSH) finished {status}. Read its output with job_output.")})
    );
    s.send(json!({"type": "job_output", "run": "bg", "wait": true}));
    assert_eq!(
        s.next(),
        json!({"type": "job_output", "run": "bg", "text": format!("(no new output)\n{status}")})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    for run in ["fg", "bg"] {
        let (pid, _) = init_line(&seen, run);
        assert!(!alive(pid), "{run}: runtime {pid} survived");
    }
}

#[test]
fn blocked_is_refusal_and_the_defect_makes_it_an_error() {
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "blocked", json!({})));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "r1", "stopReason": "refusal",
               "output": [text("hello world")]})
    );
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(
        s.next()["text"],
        "Error: subagent declined the task\nPartial output before the run ended:\nhello world"
    );
    s.shutdown();

    let mut s = Subject::spawn(&["--defect", "blocked-as-error"]);
    s.send(start("r1", "foreground", "fg", "blocked", json!({})));
    assert_eq!(s.next()["type"], "dispatched");
    let r = s.next();
    assert_eq!(r["stopReason"], "error");
    assert_eq!(r["diagnostic"], CHILD_ERROR);
    s.shutdown();
}

#[test]
fn unanswered_shutdown_stays_in_the_host_log() {
    // Seed 000's shutdown row: a shutdown never answered is a protocol shutdown failure the
    // real client only appends to its stderr tail; dispose goes on down the ladder and
    // resolves, so the result stands and the run settles.
    let mut s = Subject::spawn(&[]);
    s.send(start("fg", "foreground", "fg", "shutdown-hang", fast()));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(s.next()["stopReason"], "completed");
    assert_eq!(s.next(), json!({"type": "settled", "run": "fg"}));
    let fg = s.next();
    assert_eq!(fg["type"], "tool_result", "{fg}");
    assert_ne!(fg["isError"], true, "{fg}");

    s.send(start(
        "bg",
        "background",
        "Observe",
        "shutdown-hang",
        fast(),
    ));
    assert_eq!(s.next()["type"], "tool_result");
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(s.next()["stopReason"], "completed");
    assert_eq!(s.next(), json!({"type": "settled", "run": "bg"}));
    let notice = s.next();
    assert_eq!(notice["type"], "notice", "{notice}");
    assert!(
        notice["text"]
            .as_str()
            .unwrap()
            .contains("finished [status: completed]"),
        "{notice}"
    );
    let seen = s.shutdown();
    assert!(
        seen.iter()
            .any(|v| *v == json!({"type": "settled", "run": "bg"})),
        "{seen:?}"
    );
    assert!(seen.iter().any(|v| {
        v["type"] == "host_log"
            && v["text"]
                .as_str()
                .unwrap()
                .contains("shutdown not answered within 300 ms")
    }));
    // The whole ladder still ran: the runtimes are gone.
    for run in ["fg", "bg"] {
        let (pid, _) = init_line(&seen, run);
        assert!(!alive(pid), "{run}: runtime {pid} survived");
    }
}

#[test]
fn start_failures() {
    let mut s = Subject::spawn(&[]);
    // The runtime exits before the handshake.
    s.send(start("a", "foreground", "fg", "exit-early", json!({})));
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "a",
               "error": {"name": "DshSdkRunFailure", "message": INIT_TRANSPORT}})
    );
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "a", "isError": true, "text": format!("Error: {INIT_TRANSPORT}")})
    );
    // Spawn failure, in background.
    s.send(start_with(
        "b",
        "background",
        "Observe",
        "/nonexistent/dsh-runtime",
        vec![],
        "/tmp",
        json!({}),
    ));
    assert_eq!(s.next()["type"], "tool_result");
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "b",
               "error": {"name": "DshSdkRunFailure", "message": INIT_TRANSPORT}})
    );
    assert_eq!(
        s.next(),
        json!({"type": "notice", "run": "b", "job": "subagent-1", "text": format!(
            "background job subagent-1 (subagent: Observe) finished [status: failed, DshSdkRunFailure: {INIT_TRANSPORT}]. Read its output with job_output.")})
    );
    // A relative cwd and an invalid config never spawn.
    for (run, cwd, config) in [
        ("c", "relative/dir", json!({})),
        ("d", "/tmp", json!({"maxTokens": 0})),
    ] {
        s.send(start_with(
            run,
            "foreground",
            "fg",
            "/nonexistent/dsh-runtime",
            vec![],
            cwd,
            config,
        ));
        assert_eq!(
            s.next(),
            json!({"type": "start_rejected", "run": run,
                   "error": {"name": "DshSdkRunFailure", "message": INIT_CONFIGURATION}})
        );
        assert_eq!(s.next()["type"], "tool_result");
    }
    let seen = s.shutdown();
    assert_redacted(&seen);
}

#[test]
fn defect_stderr_in_start_error() {
    let mut s = Subject::spawn(&["--defect", "stderr-in-start-error"]);
    s.send(start("a", "foreground", "fg", "exit-early", json!({})));
    let message = format!("{INIT_TRANSPORT}\nstderr tail:\nSECRET_TOKEN=raw-stderr-value");
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "a",
               "error": {"name": "DshSdkRunFailure", "message": message}})
    );
    assert_eq!(s.next()["text"], format!("Error: {message}"));
    s.shutdown();
}

#[test]
fn local_cancel_keeps_partial_output_and_settles_the_tree() {
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "hang", fast()));
    // Readiness first: its host_log may overtake `dispatched`.
    let pids = s.ready();
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|p| alive(*p)));
    s.send(json!({"type": "cancel", "run": "r1"}));
    let r = s.next();
    assert_eq!(r["stopReason"], "aborted");
    assert!(r.get("diagnostic").is_none());
    // The deltas precede READY on the wire, but the cancel may overtake their reading.
    let output = r["output"].clone();
    assert!(
        output == json!([text("hello world")]) || output == json!([]),
        "{output}"
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    // The TERM-ignoring grandchild needed the group SIGKILL; both are gone at `settled`.
    for pid in &pids {
        assert!(!alive(*pid), "process {pid} survived settled");
    }
    let t = s.next();
    assert_eq!(t["isError"], true);
    let expected = if output == json!([]) {
        "Error: subagent run was cancelled".to_string()
    } else {
        "Error: subagent run was cancelled\nPartial output before the run ended:\nhello world"
            .to_string()
    };
    assert_eq!(t["text"], expected);
    let seen = s.shutdown();
    assert_redacted(&seen);
}

#[test]
fn concurrent_runs_share_nothing() {
    let mut s = Subject::spawn(&[]);
    s.send(start("e", "foreground", "fg", "error", json!({})));
    s.send(start("o", "foreground", "fg", "ok", json!({})));
    let mut results = std::collections::HashMap::new();
    let mut tools = 0;
    while tools < 2 {
        let v = s.next();
        match v["type"].as_str().unwrap() {
            "result" => {
                results.insert(v["run"].as_str().unwrap().to_owned(), v.clone());
            }
            "tool_result" => tools += 1,
            _ => {}
        }
    }
    assert_eq!(results["e"]["diagnostic"], CHILD_ERROR);
    assert_eq!(results["o"]["stopReason"], "completed");
    assert!(results["o"].get("diagnostic").is_none());
    s.shutdown();
}
