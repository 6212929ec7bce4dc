//! Drives the `conform-reference` binary's Codex provider over the subject protocol against a
//! tiny stand-in app-server (`fixtures/mini_codex.py`).

use crate::common;

use common::{Subject, alive, assert_redacted, fixture_named, python, text};
use serde_json::{Value, json};

const HTTP_503: &str = "Product subagent failure (product: Codex; stage: turn; category: httpConnectionFailed; HTTP status: 503)";

fn start_with(run: &str, mode: &str, label: &str, args: Vec<String>, config: Value) -> Value {
    json!({
        "type": "start", "run": run, "provider": "codex", "mode": mode, "label": label,
        "task": "say hello", "expectedBy": "2030-01-01T00:00:00Z",
        "runtime": {"command": python(), "args": args, "env": {"EXTRA": "1"}, "cwd": "/tmp"},
        "config": config,
    })
}

/// A run of the stand-in in `fixture_mode` (with an optional error info for `failed`).
fn start(run: &str, mode: &str, label: &str, fixture_mode: &str, info: Option<Value>) -> Value {
    let mut args = vec![fixture_named("mini_codex.py"), fixture_mode.to_string()];
    if let Some(info) = info {
        args.push(info.to_string());
    }
    start_with(run, mode, label, args, json!({"disposeGraceMs": 300}))
}

/// The stand-in's stderr lines of `run` that start with `tag ` (forwarded as host_log).
fn tagged(seen: &[Value], run: &str, tag: &str) -> Vec<String> {
    let tag = format!("child stderr: {tag} ");
    seen.iter()
        .filter(|v| v["type"] == "host_log" && v["run"] == run)
        .filter_map(|v| v["text"].as_str()?.strip_prefix(&tag).map(str::to_owned))
        .collect()
}

fn pid(seen: &[Value], run: &str) -> i32 {
    tagged(seen, run, "PID")[0].parse().unwrap()
}

/// The frames the stand-in received, parsed.
fn wire(seen: &[Value], run: &str) -> Vec<Value> {
    tagged(seen, run, "WIRE")
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn completed_with_early_frames_and_the_exact_wire() {
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "ok", None));
    let d = s.next();
    assert_eq!(d["type"], "dispatched");
    assert_eq!(d["expectedBy"], "2030-01-01T00:00:00Z");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "r1", "stopReason": "completed",
               "output": [text("the answer")]})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": false, "text": "the answer"})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    assert!(!alive(pid(&seen, "r1")), "app-server survived settled");
    let frames = wire(&seen, "r1");
    let methods: Vec<&str> = frames
        .iter()
        .map(|f| f["method"].as_str().unwrap())
        .collect();
    // The turn completed: no turn/interrupt on dispose.
    assert_eq!(
        methods,
        ["initialize", "initialized", "thread/start", "turn/start"]
    );
    for f in &frames {
        assert_eq!(f["jsonrpc"], "2.0");
    }
    for f in [&frames[0], &frames[2], &frames[3]] {
        let id = f["id"].as_str().unwrap();
        assert!(id.starts_with("req_") && id.len() == 36, "{id}");
    }
    assert_eq!(
        frames[0]["params"],
        json!({"clientInfo": {"name": "deepseek-harness", "title": "DeepSeek Harness", "version": "0.0.1"},
               "capabilities": {"experimentalApi": false, "requestAttestation": false}})
    );
    assert_eq!(
        frames[1],
        json!({"jsonrpc": "2.0", "method": "initialized"})
    );
    assert_eq!(
        frames[2]["params"],
        json!({"cwd": "/tmp", "ephemeral": true, "approvalPolicy": "never"})
    );
    assert_eq!(
        frames[3]["params"],
        json!({"threadId": "thread-7f0c",
               "input": [{"type": "text", "text": "say hello", "text_elements": []}]})
    );
}

#[test]
fn http_connection_failed_503_in_background_and_foreground() {
    let info = json!({"httpConnectionFailed": {"httpStatusCode": 503}});
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "bg",
        "background",
        "Observe Codex background diagnostic",
        "failed",
        Some(info.clone()),
    ));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "bg", "isError": false,
               "text": "started background subagent job subagent-1"})
    );
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "bg", "stopReason": "error",
               "output": [text("partial assistant text")], "diagnostic": HTTP_503})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "bg"}));
    assert_eq!(
        s.next(),
        json!({"type": "notice", "run": "bg", "job": "subagent-1", "text": format!(
            "background job subagent-1 (subagent: Observe Codex background diagnostic) finished [status: failed, error; diagnostic: {HTTP_503}]. Read its output with job_output.")})
    );
    s.send(json!({"type": "job_output", "run": "bg", "wait": true}));
    assert_eq!(
        s.next(),
        json!({"type": "job_output", "run": "bg", "text": format!(
            "(no new output)\n[status: failed, error; diagnostic: {HTTP_503}]")})
    );

    s.send(start("fg", "foreground", "fg", "failed", Some(info)));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(s.next()["diagnostic"], HTTP_503);
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "fg", "isError": true, "text": format!(
            "Error: subagent run failed\nDiagnostic: {HTTP_503}\nPartial output before the run ended:\npartial assistant text")})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    for run in ["bg", "fg"] {
        assert!(!alive(pid(&seen, run)), "{run}: app-server survived");
    }
}

#[test]
fn process_exit_before_a_terminal() {
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "exit", None));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "r1", "stopReason": "error",
               "output": [text("partial assistant text")],
               "diagnostic": "Product subagent failure (product: Codex; stage: process; category: process-exit; exit code: 9)"})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    assert_eq!(s.next()["type"], "tool_result");
    let seen = s.shutdown();
    assert_redacted(&seen);
    assert!(!alive(pid(&seen, "r1")));
}

#[test]
fn startup_failure_at_thread_start_rolls_back_then_rejects() {
    let message = "subagent-codex: Product subagent failure (product: Codex; stage: thread-start; category: unknown)";
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "thread-fail", None));
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "r1",
               "error": {"name": "CodexRunFailure", "message": message}})
    );
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": true, "text": format!("Error: {message}")})
    );
    s.send(start("bg", "background", "Observe", "thread-fail", None));
    assert_eq!(s.next()["type"], "tool_result");
    assert_eq!(s.next()["type"], "start_rejected");
    assert_eq!(
        s.next()["text"],
        format!(
            "background job subagent-1 (subagent: Observe) finished [status: failed, CodexRunFailure: {message}]. Read its output with job_output."
        )
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    // Rolled back to fully settled before the rejection.
    for run in ["r1", "bg"] {
        assert!(
            !alive(pid(&seen, run)),
            "{run}: app-server survived rollback"
        );
    }
    assert!(!seen.iter().any(|v| v["type"] == "dispatched"));
}

#[test]
fn approval_answer_and_permission_fact_in_approve_for_me() {
    let mut s = Subject::spawn(&[]);
    let args = vec![fixture_named("mini_codex.py"), "approval".into()];
    s.send(start_with(
        "r1",
        "foreground",
        "fg",
        args,
        json!({"permissionMode": "approve-for-me", "disposeGraceMs": 300}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next()["diagnostic"],
        "Product subagent failure (product: Codex; stage: turn; category: other)\nCodex unattended decision (mode: approve-for-me; request: command approval; decision: cancelled): the provider does not grant interactive approval"
    );
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(s.next()["type"], "tool_result");
    let seen = s.shutdown();
    assert_redacted(&seen);
    let frames = wire(&seen, "r1");
    assert_eq!(
        frames[2]["params"],
        json!({"cwd": "/tmp", "ephemeral": true, "approvalPolicy": "on-request",
               "approvalsReviewer": "auto_review", "sandbox": "workspace-write"})
    );
    let answer = frames
        .iter()
        .find(|f| f["id"] == 900)
        .expect("approval answer");
    assert_eq!(
        answer,
        &json!({"jsonrpc": "2.0", "id": 900, "result": {"decision": "cancel"}})
    );
}

#[test]
fn local_cancel_interrupts_the_turn_and_settles_the_tree() {
    let mut s = Subject::spawn(&[]);
    s.send(start("r1", "foreground", "fg", "hang", None));
    let pids = s.ready();
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(pids.len(), 2);
    s.send(json!({"type": "cancel", "run": "r1"}));
    let r = s.next();
    assert_eq!(r["stopReason"], "aborted");
    assert!(r.get("diagnostic").is_none());
    assert_eq!(r["output"], json!([]));
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    // The TERM-ignoring grandchild needed the group SIGKILL; both are gone at `settled`.
    for pid in &pids {
        assert!(!alive(*pid), "process {pid} survived settled");
    }
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": true, "text": "Error: subagent run was cancelled"})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
    let frames = wire(&seen, "r1");
    let interrupts: Vec<&Value> = frames
        .iter()
        .filter(|f| f["method"] == "turn/interrupt")
        .collect();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(
        interrupts[0]["params"],
        json!({"threadId": "thread-7f0c", "turnId": "turn-1a2b"})
    );
}

#[test]
fn defects_change_the_mapping() {
    let mut s = Subject::spawn(&["--defect", "cyber-policy-as-refusal"]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        "failed",
        Some(json!("cyberPolicy")),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let r = s.next();
    assert_eq!(r["stopReason"], "refusal");
    assert_eq!(
        r["diagnostic"],
        "Product subagent failure (product: Codex; stage: turn; category: cyberPolicy)"
    );
    s.shutdown();

    let string_status = json!({"responseStreamDisconnected": {"httpStatusCode": "503"}});
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        "failed",
        Some(string_status.clone()),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let r = s.next();
    assert_eq!(r["stopReason"], "error");
    assert_eq!(
        r["diagnostic"],
        "Product subagent failure (product: Codex; stage: turn; category: responseStreamDisconnected)"
    );
    s.shutdown();

    let mut s = Subject::spawn(&["--defect", "http-status-from-string"]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        "failed",
        Some(string_status),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next()["diagnostic"],
        "Product subagent failure (product: Codex; stage: turn; category: responseStreamDisconnected; HTTP status: 503)"
    );
    s.shutdown();
}

#[test]
fn start_preconditions() {
    let mut s = Subject::spawn(&[]);
    // No working directory at all: the host's own message.
    let mut no_cwd = start("a", "foreground", "fg", "ok", None);
    no_cwd["runtime"]["cwd"] = json!("");
    s.send(no_cwd);
    let message = "subagent-codex: no working directory for the child — delegate from a parent session that has one";
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "a", "error": {"name": "Error", "message": message}})
    );
    assert_eq!(s.next()["text"], format!("Error: {message}"));
    // One the app-server cannot start in: the initialize stage's line (docs/requirements.md).
    let mut bad_cwd = start("r", "foreground", "fg", "ok", None);
    bad_cwd["runtime"]["cwd"] = json!("relative/dir");
    s.send(bad_cwd);
    assert_eq!(
        s.next()["error"],
        json!({"name": "CodexRunFailure", "message": "subagent-codex: Product subagent failure (product: Codex; stage: initialize; category: unknown)"})
    );
    assert_eq!(s.next()["type"], "tool_result");
    let mut missing = start("b", "foreground", "fg", "ok", None);
    missing["runtime"]["command"] = json!("/nonexistent/codex");
    s.send(missing);
    assert_eq!(
        s.next()["error"],
        json!({"name": "CodexRunFailure", "message": "subagent-codex: Product subagent failure (product: Codex; stage: initialize; category: unknown)"})
    );
    assert_eq!(s.next()["type"], "tool_result");
    s.shutdown();
}

#[test]
fn concurrent_runs_share_nothing() {
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "f",
        "foreground",
        "fg",
        "failed",
        Some(json!({"httpConnectionFailed": {"httpStatusCode": 503}})),
    ));
    s.send(start("o", "foreground", "fg", "ok", None));
    s.send(start("x", "foreground", "fg", "exit", None));
    let mut results = std::collections::HashMap::new();
    let mut tools = 0;
    while tools < 3 {
        let v = s.next();
        match v["type"].as_str().unwrap() {
            "result" => {
                results.insert(v["run"].as_str().unwrap().to_owned(), v.clone());
            }
            "tool_result" => tools += 1,
            _ => {}
        }
    }
    assert_eq!(results["f"]["diagnostic"], HTTP_503);
    assert_eq!(results["o"]["stopReason"], "completed");
    assert!(results["o"].get("diagnostic").is_none());
    assert_eq!(
        results["x"]["diagnostic"],
        "Product subagent failure (product: Codex; stage: process; category: process-exit; exit code: 9)"
    );
    let seen = s.shutdown();
    for run in ["f", "o", "x"] {
        assert!(!alive(pid(&seen, run)), "{run}: app-server survived");
    }
}
