//! Drives the `conform-reference` binary over the subject protocol against a tiny stand-in ACP
//! child (`fixtures/mini_acp.py`).

use crate::common;

use std::process::Command;

use common::{Subject, alive, fixture, python};
use serde_json::{Value, json};

fn start(
    run: &str,
    mode: &str,
    label: &str,
    command: &str,
    args: Vec<String>,
    config: Value,
) -> Value {
    json!({
        "type": "start", "run": run, "provider": "acp", "mode": mode, "label": label,
        "task": "say hello", "expectedBy": "2030-01-01T00:00:00Z",
        "runtime": {"command": command, "args": args, "env": {"EXTRA": "1"}, "cwd": "/tmp"},
        "config": config,
    })
}

fn mini(mode: &str) -> Vec<String> {
    vec![fixture(), mode.to_string()]
}

/// No model-visible text may carry raw child text (stderr, thoughts, titles).
fn assert_redacted(seen: &[Value]) {
    for v in seen {
        if v["type"] == "host_log" {
            continue;
        }
        assert!(!v.to_string().contains("SECRET"), "leaked raw text: {v}");
    }
    assert!(
        seen.iter().any(
            |v| v["type"] == "host_log" && v["text"].as_str().unwrap().contains("SECRET_TOKEN")
        ),
        "raw stderr should reach host_log"
    );
}

#[test]
fn success_foreground() {
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        mini("ok"),
        json!({}),
    ));
    let d = s.next();
    assert_eq!(d["type"], "dispatched");
    assert_eq!(d["run"], "r1");
    assert_eq!(d["expectedBy"], "2030-01-01T00:00:00Z");
    assert_ne!(d["childSessionKey"], "child-sess-1");
    assert!(d["dispatchAt"].as_str().unwrap().ends_with('Z'));
    let r = s.next();
    assert_eq!(
        r,
        json!({"type": "result", "run": "r1", "stopReason": "completed",
               "output": [{"type": "text", "text": "hello world"}]})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": false, "text": "hello world"})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
}

#[test]
fn max_turn_requests_background() {
    let mut s = Subject::spawn(&[]);
    let line = "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)";
    s.send(start(
        "r1",
        "background",
        "Observe ACP",
        &python(),
        mini("mtr"),
        json!({}),
    ));
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": false,
               "text": "started background subagent job subagent-1"})
    );
    assert_eq!(s.next()["type"], "dispatched");
    assert_eq!(
        s.next(),
        json!({"type": "result", "run": "r1", "stopReason": "error",
               "output": [{"type": "text", "text": "hello world"}], "diagnostic": line})
    );
    assert_eq!(s.next(), json!({"type": "settled", "run": "r1"}));
    let status = format!("[status: failed, error; diagnostic: {line}]");
    assert_eq!(
        s.next(),
        json!({"type": "notice", "run": "r1", "job": "subagent-1",
               "text": format!("background job subagent-1 (subagent: Observe ACP) finished {status}. Read its output with job_output.")})
    );
    s.send(json!({"type": "job_output", "run": "r1", "wait": false}));
    assert_eq!(
        s.next(),
        json!({"type": "job_output", "run": "r1", "text": format!("(no new output)\n{status}")})
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
}

#[test]
fn spawn_failure_foreground() {
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        "/nonexistent/acp-agent",
        vec![],
        json!({}),
    ));
    let message =
        "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)";
    assert_eq!(
        s.next(),
        json!({"type": "start_rejected", "run": "r1",
               "error": {"name": "AcpRunFailure", "message": message}})
    );
    assert_eq!(
        s.next(),
        json!({"type": "tool_result", "run": "r1", "isError": true, "text": format!("Error: {message}")})
    );
    s.shutdown();
}

#[test]
fn crash_during_prompt_keeps_partial_output() {
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        mini("crash"),
        json!({}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let line =
        "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 17)";
    let r = s.next();
    assert_eq!(r["stopReason"], "error");
    assert_eq!(r["diagnostic"], line);
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(
        s.next()["text"],
        format!(
            "Error: subagent run failed\nDiagnostic: {line}\nPartial output before the run ended:\nhello world"
        )
    );
    let seen = s.shutdown();
    assert_redacted(&seen);
}

#[test]
fn permission_allow_and_reject() {
    let mut s = Subject::spawn(&[]);
    s.send(start(
        "a",
        "foreground",
        "fg",
        &python(),
        mini("permission"),
        json!({"permission": "allow"}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let r = s.next();
    assert_eq!(r["stopReason"], "completed");
    assert!(r.get("diagnostic").is_none());
    assert_eq!(s.next()["type"], "settled");
    assert_eq!(s.next()["isError"], false);
    s.send(start(
        "b",
        "background",
        "deny",
        &python(),
        mini("permission"),
        json!({}),
    ));
    assert_eq!(s.next()["type"], "tool_result");
    assert_eq!(s.next()["type"], "dispatched");
    let perm = "ACP unattended decision (policy: reject; request: execute; decision: denied)";
    let r = s.next();
    assert_eq!(r["stopReason"], "aborted");
    assert_eq!(r["diagnostic"], perm);
    assert_eq!(s.next()["type"], "settled");
    let n = s.next();
    assert_eq!(
        n["text"],
        format!(
            "background job subagent-1 (subagent: deny) finished [status: failed, aborted; diagnostic: {perm}]. Read its output with job_output."
        )
    );
    s.shutdown();
}

#[test]
fn shutdown_exits_zero_and_leaves_no_child() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pids");
    let mut s = Subject::spawn(&[]);
    let mut args = mini("hang");
    args.push(pid_file.display().to_string());
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        args,
        json!({"disposeEofGraceMs": 200, "disposeGraceMs": 200}),
    ));
    // Readiness first: its host_log may overtake `dispatched`.
    let pids = s.ready();
    assert_eq!(s.next()["type"], "dispatched");
    assert!(pids.iter().all(|p| alive(*p)));
    let seen = s.shutdown();
    for pid in &pids {
        assert!(!alive(*pid), "process {pid} survived shutdown");
    }
    let types: Vec<&str> = seen
        .iter()
        .map(|v| v["type"].as_str().unwrap())
        .filter(|t| *t != "host_log")
        .collect();
    assert_eq!(
        types,
        ["hello", "dispatched", "result", "settled", "tool_result"]
    );
    let r = seen.iter().find(|v| v["type"] == "result").unwrap();
    assert_eq!(r["stopReason"], "aborted");
    assert!(r.get("diagnostic").is_none());
}

#[test]
fn local_cancel_foreground_and_background() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Subject::spawn(&[]);
    let fg_ready = dir.path().join("fg");
    let mut args = mini("slow");
    args.push(fg_ready.display().to_string());
    s.send(start("fg", "foreground", "fg", &python(), args, json!({})));
    // Readiness first: its host_log may overtake `dispatched`.
    s.ready();
    assert_eq!(s.next()["type"], "dispatched");
    s.send(json!({"type": "cancel", "run": "fg"}));
    let r = s.next();
    assert_eq!(r["stopReason"], "aborted");
    assert!(r.get("diagnostic").is_none());
    assert_eq!(s.next()["type"], "settled");
    let t = s.next();
    assert_eq!(t["isError"], true);
    // The chunks precede the ready file, but the subject may see the cancel first.
    let text = t["text"].as_str().unwrap();
    assert!(
        text == "Error: subagent run was cancelled\nPartial output before the run ended:\nhello world"
            || text.starts_with("Error: subagent run was cancelled"),
        "{text}"
    );

    let bg_ready = dir.path().join("bg");
    let mut args = mini("slow");
    args.push(bg_ready.display().to_string());
    s.send(start("bg", "background", "bg", &python(), args, json!({})));
    assert_eq!(
        s.next()["text"],
        "started background subagent job subagent-1"
    );
    // Readiness first: its host_log may overtake `dispatched`.
    s.ready();
    assert_eq!(s.next()["type"], "dispatched");
    s.send(json!({"type": "job_output", "run": "bg", "wait": false}));
    assert_eq!(s.next()["text"], "(no new output)\n[status: running]");
    s.send(json!({"type": "cancel", "run": "bg"}));
    assert_eq!(s.next()["stopReason"], "aborted");
    assert_eq!(s.next()["type"], "settled");
    // Killed through job_kill: no notice; job_output shows the status.
    s.send(json!({"type": "job_output", "run": "bg", "wait": true}));
    assert_eq!(
        s.next(),
        json!({"type": "job_output", "run": "bg", "text": "(no new output)\n[status: killed]"})
    );
    let seen = s.shutdown();
    assert!(!seen.iter().any(|v| v["type"] == "notice"));
}

#[test]
fn defect_crash_after_dispatch_exits_70() {
    let mut s = Subject::spawn(&["--defect", "crash-after-dispatch"]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        mini("ok"),
        json!({}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let status = s.child.wait().unwrap();
    assert_eq!(status.code(), Some(70));
}

#[test]
fn defect_leak_and_max_tokens() {
    let mut s = Subject::spawn(&[
        "--defect",
        "leak-raw-error",
        "--defect",
        "max-tokens-as-error",
    ]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        mini("maxtok"),
        json!({}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let r = s.next();
    assert_eq!(r["stopReason"], "error");
    assert!(
        r["diagnostic"]
            .as_str()
            .unwrap()
            .contains("SECRET_TOKEN=raw-stderr-value")
    );
    s.shutdown();
}

#[test]
fn defect_hang_after_dispatch_still_shuts_down() {
    let mut s = Subject::spawn(&["--defect", "hang-after-dispatch"]);
    s.send(start(
        "r1",
        "foreground",
        "fg",
        &python(),
        mini("ok"),
        json!({}),
    ));
    assert_eq!(s.next()["type"], "dispatched");
    let seen = s.shutdown();
    let after: Vec<_> = seen
        .iter()
        .skip_while(|v| v["type"] != "dispatched")
        .skip(1)
        .collect();
    assert!(after.is_empty(), "hung run still spoke: {after:?}");
}

#[test]
fn help_lists_defects() {
    let out = Command::new(env!("CARGO_BIN_EXE_conform-reference"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for d in [
        "crash-after-dispatch",
        "hang-after-dispatch",
        "skip-teardown",
        "leak-raw-error",
        "max-tokens-as-error",
        "blocked-as-error",
        "stderr-in-start-error",
    ] {
        assert!(text.contains(d), "{d} missing from --help");
    }
}

#[test]
fn defect_skip_teardown_leaves_child() {
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("pid");
    let mut s = Subject::spawn(&["--defect", "skip-teardown"]);
    let mut args = mini("slow");
    args.push(ready.display().to_string());
    s.send(start("r1", "foreground", "fg", &python(), args, json!({})));
    // Readiness first: its host_log may overtake `dispatched`.
    let pid = s.ready()[0];
    assert_eq!(s.next()["type"], "dispatched");
    s.send(json!({"type": "cancel", "run": "r1"}));
    assert_eq!(s.next()["type"], "result");
    assert_eq!(s.next()["type"], "settled");
    assert!(alive(pid), "skip-teardown must leave the child running");
    s.shutdown();
}
