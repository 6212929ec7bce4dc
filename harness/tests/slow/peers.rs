//! The wire differential, offline: the committed recordings of the real runtimes' wire
//! (`fakes/peers/`, made by `ci/peers`) against the fakes' wire in the analogous scenarios.
//! Every difference must be explained in `fakes/peers/differences.toml`, and no explanation
//! may be stale. Both ways to fail are shown to fail.

use std::path::Path;

use crate::common;
use common::{conform, stdout, workspace};

fn diff(fixtures: &Path) -> (Option<i32>, String) {
    let out = conform()
        .args(["peers", "diff", "--fixtures", fixtures.to_str().unwrap()])
        .output()
        .unwrap();
    (out.status.code(), stdout(&out))
}

/// A copy of the committed fixtures to doctor.
fn fixtures_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = workspace().join("fakes/peers");
    for entry in walk(&from) {
        let to = dir.path().join(entry.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    dir
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_fakes_speak_like_the_recorded_real_runtimes() {
    let (code, out) = diff(&workspace().join("fakes/peers"));
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("0 unexplained difference(s), 0 stale explanation(s)"),
        "{out}"
    );
    assert!(
        out.contains("peers/dsh-sdk/mid-stream (real `dsh-sdk`) vs dsh-sdk/turn/error (fake)"),
        "{out}"
    );
}

fn coverage(fixtures: &Path) -> (Option<i32>, String) {
    let _slot = common::Slot::take();
    let out = conform()
        .args(["peers", "coverage", "-j", "4", "--fixtures"])
        .arg(fixtures)
        .env("INSTA_UPDATE", "no")
        .output()
        .unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn the_catalog_sends_every_kind_of_frame_the_real_runtimes_send() {
    // Explaining a difference between one real wire and one fake wire does not stand in for
    // exercising it: a host that chokes on a frame every real run sends must fail somewhere.
    let (code, out) = coverage(&workspace().join("fakes/peers"));
    assert_eq!(code, Some(0), "{out}");
    for line in [
        "codex: the catalog sends 18 of the 18 kinds of frame the real fixtures hold",
        "dsh-sdk: the catalog sends 26 of the 26 kinds of frame the real fixtures hold",
        "0 kind(s) unsent and unexplained or listed stale",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
}

#[test]
fn a_real_kind_no_scenario_sends_fails_unless_listed_with_its_reason() {
    let dir = fixtures_copy();
    let fixture = dir.path().join("codex-0.171.0/success.jsonl");
    for method in ["thread/realOnly", "thread/listedOnly"] {
        append_line(
            &fixture,
            &format!(r#"{{"frame":{{"method":"{method}","params":{{}},"emittedAtMs":0}}}}"#),
        );
    }
    append_line(
        &dir.path().join("differences.toml"),
        "\n[[unsent]]\nprovider = \"codex\"\nkind = \"thread/listedOnly\"\n\
         reason = \"a test's\"\n\n[[unsent]]\nprovider = \"codex\"\n\
         kind = \"turn/completed\"\nreason = \"the catalog sends it\"",
    );
    let (code, out) = coverage(dir.path());
    assert_eq!(code, Some(1), "{out}");
    for line in [
        "✗ codex: the real runtimes send `thread/realOnly` (codex-0.171.0); no scenario makes a fake send it",
        "kept: codex `thread/listedOnly` (real: codex-0.171.0) is sent by no scenario\n      (a test's)",
        "✗ stale: `[[unsent]]` codex `turn/completed`",
        "codex: the catalog sends 18 of the 20 kinds",
        "2 kind(s) unsent and unexplained or listed stale",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
}

#[test]
fn an_unexplained_difference_fails() {
    let dir = fixtures_copy();
    std::fs::remove_file(dir.path().join("differences.toml")).unwrap();
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "✗ `session.event:request/header`: the real runtime sends field \
             `.params.event.data.header.tools[].parameters.required:array`; the fake never does"
        ),
        "{out}"
    );
}

#[test]
fn a_real_frame_the_fake_lost_fails() {
    // The real runtime's failed attempt (where it carries partial text) vanished from the
    // fake's vocabulary: the differential names the kind. Here the recording gains a kind.
    let dir = fixtures_copy();
    append_line(
        &dir.path().join("dsh-sdk/success.jsonl"),
        r#"{"frame":{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":{"type":"assistant/reasoning","seq":99,"time":0,"data":{}}}}}"#,
    );
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "✗ the real runtime sends `session.event:assistant/reasoning`; the fake never does"
        ),
        "{out}"
    );
}

#[test]
fn a_stale_explanation_fails() {
    let dir = fixtures_copy();
    let path = dir.path().join("differences.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("\n[[difference]]\npeer = \"dsh-sdk\"\nkind = \"session.event:no/such\"\nreason = \"gone\"\n");
    std::fs::write(&path, text).unwrap();
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("stale explanation (no such difference any more; remove it): peer `dsh-sdk`, kind `session.event:no/such`"),
        "{out}"
    );
}

#[test]
fn a_real_frame_the_protocol_schema_rejects_fails() {
    // The schema every fake frame is held to must accept what the real runtime sends (the DSH
    // SDK schema is conform's own): a real stream entry it does not know is reported.
    let dir = fixtures_copy();
    append_line(
        &dir.path().join("dsh-sdk/mid-stream.jsonl"),
        r#"{"frame":{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":{"type":"assistant/attempt","seq":99,"time":0,"data":{"stream":[{"type":"image-chunks","index":0}]}}}}}"#,
    );
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("✗ conform's schema rejects a `session.event:assistant/attempt` frame the real runtime sent"),
        "{out}"
    );
}

#[test]
fn a_value_or_a_count_the_fake_does_not_match_fails() {
    // The real runtime retries seven times where the fake's analog retries five, and the real
    // Codex thread goes idle (not systemError) after a failed turn: values the shapes share.
    let dir = fixtures_copy();
    let retries = dir.path().join("dsh-sdk/http-500-retries.jsonl");
    let text = std::fs::read_to_string(&retries).unwrap();
    assert_eq!(
        text.matches(r#""maxRetries":5"#).count(),
        5,
        "the recorded wire changed"
    );
    std::fs::write(
        &retries,
        text.replace(r#""maxRetries":5"#, r#""maxRetries":7"#),
    )
    .unwrap();
    let status = dir.path().join("codex-0.147.0/http-401.jsonl");
    let text = std::fs::read_to_string(&status).unwrap();
    std::fs::write(&status, text.replace("systemError", "idle")).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("\"item/started\""))
        .unwrap()
        .to_owned();
    append_line(&status, &line);
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    for shown in [
        "✗ `session.event:llm/retry` `.params.event.data.maxRetries`: the real runtime sends 7; the fake sends 5",
        "✗ `thread/status/changed` `.params.status.type`: the real runtime sends \"active\", \"idle\"; the fake sends \"active\", \"systemError\"",
        "✗ `item/started`: the real runtime sends it 2 time(s); the fake 1",
        // The verdict rests on the status: its place among the answers and terminal too.
        "thread/status/changed:active → item/completed:userMessage → thread/status/changed:idle → error → turn/completed:failed",
    ] {
        assert!(out.contains(shown), "{shown}\n{out}");
    }
    assert!(out.contains("\n4 unexplained difference(s)"), "{out}");
}

#[test]
fn a_draft_explanation_explains_nothing_until_reviewed() {
    // What `conform peers record` drafts in a peer's own folder: the difference it names stays
    // unexplained, and the draft itself fails the differential, until a person writes the
    // reason and removes `draft = true`.
    let dir = fixtures_copy();
    let main = dir.path().join("differences.toml");
    let text = std::fs::read_to_string(&main).unwrap();
    let entry = "[[difference]]\npeer = \"dsh-sdk\"\nkind = \"session.event:request/header\"\n\
                 field = \".params.event.data.header.tools[].parameters.*\"\n";
    let start = text.find(entry).expect("the request/header entry");
    let end = text[start + 1..]
        .find("[[")
        .map_or(text.len(), |i| start + 1 + i);
    std::fs::write(&main, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let own = dir.path().join("dsh-sdk/differences.toml");
    std::fs::write(
        &own,
        format!("{entry}draft = true\nreason = \"TO REVIEW — Seen: …\"\n"),
    )
    .unwrap();
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "✗ `session.event:request/header`: the real runtime sends field \
             `.params.event.data.header.tools[].parameters.required:array`; the fake never does"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "1 draft explanation(s) await review (write the reason, then remove `draft = true`)"
        ),
        "{out}"
    );
    // Reviewed: the peer's own file explains it, as the shared one did.
    std::fs::write(
        &own,
        format!("{entry}reason = \"A log echo no provider reads.\"\n"),
    )
    .unwrap();
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(0), "{out}");
}

/// Rewrites a copied fixture line by line (each line parsed).
fn doctor(path: &Path, edit: impl FnOnce(&mut Vec<serde_json::Value>)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut lines);
    let out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, out).unwrap();
}

/// The indices of a fixture's frames of this method.
fn frames_of(lines: &[serde_json::Value], method: &str) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| lines[i]["frame"]["method"] == method)
        .collect()
}

#[test]
fn order_patterns_and_endings_the_fakes_do_not_share_are_named() {
    // Each doctoring makes a real wire the fakes no longer match in a way a set of values
    // cannot show; each is named, unexplained.
    let dir = fixtures_copy();
    let codex = |f: &str| dir.path().join("codex-0.171.0").join(f);
    // The failed turn's statuses swapped: the thread goes systemError, then active.
    doctor(&codex("http-500.jsonl"), |l| {
        let s = frames_of(l, "thread/status/changed");
        l.swap(s[0], s[1]);
    });
    // The thread goes idle only after the turn completed.
    doctor(&codex("success.jsonl"), |l| {
        let idle = frames_of(l, "thread/status/changed")[1];
        let status = l.remove(idle);
        let done = frames_of(l, "turn/completed")[0];
        l.insert(done + 1, status);
    });
    let dsh = dir.path().join("dsh-sdk/http-500-retries.jsonl");
    doctor(&dsh, |l| {
        for (n, line) in l.iter_mut().enumerate() {
            let Some(data) = line.pointer_mut("/frame/params/event/data") else {
                continue;
            };
            // Five retries of five calls, not of one: a fresh id each time.
            if data.get("retryId").is_some() {
                data["retryId"] = format!("<id:{}>", 100 + n).into();
            }
            // Whole milliseconds, not the jittered fractions.
            if let Some(ms) = data.get("delayMs").and_then(serde_json::Value::as_f64) {
                data["delayMs"] = (ms.trunc() as u64).into();
            }
        }
    });
    // A job owned by a session the wire never named, not the prompt's.
    doctor(&dir.path().join("dsh-sdk/tool-round-trip.jsonl"), |l| {
        for line in l.iter_mut() {
            if let Some(owner) = line.pointer_mut("/frame/params/event/data/owner") {
                *owner = "session-<id:99>".into();
            }
        }
    });
    // codex-acp made to exit at stdin EOF.
    doctor(&dir.path().join("codex-acp/success.jsonl"), |l| {
        *l.last_mut().unwrap() =
            serde_json::json!({"end": {"how": "exit-0", "within": "under-1s"}});
    });
    let (code, out) = diff(dir.path());
    assert_eq!(code, Some(1), "{out}");
    for line in [
        "✗ `thread/status/changed` `.params.status.type`: the real runtime sends \"systemError\" → \"active\" in this order; the fake \"active\" → \"systemError\"",
        "✗ the frames a verdict rests on come in another order:\n      real: response:initialize → response:thread/start → thread/status/changed:active → item/completed:userMessage → item/completed:agentMessage → turn/completed:completed → thread/status/changed:idle\n",
        "✗ `session.event:llm/retry` `.params.event.data.retryId`: the real runtime sends a fresh value each time; the fake one value throughout",
        "✗ `session.event:llm/retry` `.params.event.data.delayMs`: the real runtime sends whole numbers, growing; the fake fractions, growing",
        "✗ how the runtime ends: the real runtime ends exit-0 (under-1s); the fake outlives stdin-eof, then ends signal-SIGTERM (under-1s)",
        "✗ `session.event:job/registered` `.params.event.data.owner`: the real runtime sends a value sent nowhere before; the fake the id first sent at session.event:permission/preset .params.sessionId",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
}

/// Appends one line to a copied fixture.
fn append_line(path: &std::path::Path, line: &str) {
    let mut text = std::fs::read_to_string(path).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_real_run_cut_off_by_its_deadline_is_reported_as_such() {
    // A "real DSH SDK runtime" that never answers `initialize`: the run is cut off by its
    // deadline, and the differential says so instead of listing every frame as missing.
    let fixtures = fixtures_copy();
    let peers = tempfile::tempdir().unwrap();
    std::fs::write(
        peers.path().join("peers.json"),
        r#"{"dsh-sdk": {"version": "never-answers", "command": ["sleep", "600"]}}"#,
    )
    .unwrap();
    let out = conform()
        .args(["peers", "diff", "--fixtures"])
        .arg(fixtures.path())
        .arg("--peers")
        .arg(peers.path())
        .args(["--filter", "peers/dsh-sdk/success", "--deadline-ms", "1500"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "peers/dsh-sdk/success: the real run did not finish (deadline 1500 ms, it sent no frame); not compared"
        ),
        "{text}"
    );
    assert!(
        !text.contains("never does"),
        "no frame is called missing: {text}"
    );
    // Nothing was written over the fixtures.
    assert_eq!(
        std::fs::read(fixtures.path().join("dsh-sdk/success.jsonl")).unwrap(),
        std::fs::read(workspace().join("fakes/peers/dsh-sdk/success.jsonl")).unwrap()
    );
}

#[test]
fn every_report_names_the_real_peer_and_version_that_ran() {
    // The version comes from the peers manifest; here a "runtime" that never answers.
    let peers = tempfile::tempdir().unwrap();
    std::fs::write(
        peers.path().join("peers.json"),
        r#"{"dsh-sdk": {"version": "9.9.9-test", "command": ["sleep", "600"]}}"#,
    )
    .unwrap();
    let reports = tempfile::tempdir().unwrap();
    let (json, xml) = (reports.path().join("r.json"), reports.path().join("r.xml"));
    let out = {
        let _slot = common::Slot::take();
        conform()
            .args([
                "run",
                "--filter",
                "peers/dsh-sdk/success",
                "--deadline-ms",
                "1000",
            ])
            .arg("--peers")
            .arg(peers.path())
            .arg("--json")
            .arg(&json)
            .arg("--junit")
            .arg(&xml)
            .output()
            .unwrap()
    };
    let text = stdout(&out);
    assert!(
        text.contains("\nreal peers: dsh-sdk 9.9.9-test\n"),
        "{text}"
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        report["realPeers"],
        serde_json::json!({"dsh-sdk": {"provider": "dsh-sdk", "version": "9.9.9-test"}})
    );
    let xml = std::fs::read_to_string(&xml).unwrap();
    assert!(
        xml.contains(r#"<property name="real peer dsh-sdk" value="9.9.9-test"/>"#),
        "{xml}"
    );
}

/// A "real ACP agent" that counts its starts in `count` and then does `then` (it exits at once,
/// or never answers).
fn counting_peer(peers: &Path, count: &Path, then: &str) {
    let script = format!("echo start >> '{}'; {then}", count.display());
    let json =
        serde_json::json!({"acp-example": {"version": "t", "command": ["/bin/sh", "-c", script]}});
    std::fs::write(peers.join("peers.json"), json.to_string()).unwrap();
}

fn starts(count: &Path) -> usize {
    std::fs::read_to_string(count)
        .unwrap_or_default()
        .lines()
        .count()
}

fn run_then_diff(peers: &Path, fixtures: &Path, extra: &[&str]) -> String {
    let filter = [
        "--filter",
        "peers/acp/example-allow",
        "--deadline-ms",
        "1500",
    ];
    {
        let _slot = common::Slot::take();
        conform()
            .arg("run")
            .args(filter)
            .arg("--peers")
            .arg(peers)
            .output()
            .unwrap();
    }
    let out = conform()
        .args(["peers", "diff", "--fixtures"])
        .arg(fixtures)
        .arg("--peers")
        .arg(peers)
        .args(filter)
        .args(extra)
        .output()
        .unwrap();
    stdout(&out)
}

#[test]
fn peers_diff_reuses_the_wire_conform_run_just_kept_and_only_that() {
    let fixtures = fixtures_copy();
    let peers = tempfile::tempdir().unwrap();
    let count = peers.path().join("count");
    counting_peer(peers.path(), &count, "exit 0");
    // `conform run` starts the peer once per mode; the differential reuses the foreground wire.
    let text = run_then_diff(peers.path(), fixtures.path(), &[]);
    assert_eq!(starts(&count), 2, "{text}");
    assert!(
        text.contains("peers/acp/example-allow: the wire `conform run --peers` kept"),
        "{text}"
    );
    // --rerun runs it again.
    let text = run_then_diff(peers.path(), fixtures.path(), &["--rerun"]);
    assert_eq!(starts(&count), 5, "{text}");
    assert!(!text.contains("kept"), "{text}");
    // A peer whose installed command line changed is run again.
    conform()
        .args([
            "run",
            "--filter",
            "peers/acp/example-allow",
            "--deadline-ms",
            "1500",
        ])
        .arg("--peers")
        .arg(peers.path())
        .output()
        .unwrap();
    assert_eq!(starts(&count), 7);
    counting_peer(peers.path(), &count, "exit 1");
    let out = conform()
        .args(["peers", "diff", "--fixtures"])
        .arg(fixtures.path())
        .arg("--peers")
        .arg(peers.path())
        .args(["--filter", "peers/acp/example-allow"])
        .output()
        .unwrap();
    assert_eq!(starts(&count), 8, "{}", stdout(&out));
}

#[test]
fn a_wire_cut_off_by_its_deadline_is_never_reused() {
    let fixtures = fixtures_copy();
    let peers = tempfile::tempdir().unwrap();
    let count = peers.path().join("count");
    counting_peer(peers.path(), &count, "exec sleep 600");
    let text = run_then_diff(peers.path(), fixtures.path(), &[]);
    assert_eq!(starts(&count), 3, "{text}");
    assert!(!text.contains("kept"), "{text}");
    assert!(text.contains("the real run did not finish"), "{text}");
}

#[test]
fn peers_record_refuses_a_failed_run_as_the_real_wire() {
    // An "agent" that exits at once: every run of its peer scenarios fails. Nothing of it is
    // written as a fixture or drafted from; the refusal names each scenario and its failure.
    let fixtures = fixtures_copy();
    let peers = tempfile::tempdir().unwrap();
    let count = peers.path().join("count");
    counting_peer(peers.path(), &count, "exit 0");
    let out = {
        let _slot = common::Slot::take();
        conform()
            .args(["peers", "record", "acp-example", "--fixtures"])
            .arg(fixtures.path())
            .arg("--peers")
            .arg(peers.path())
            .output()
            .unwrap()
    };
    let (text, err) = (stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
    assert!(
        err.contains("`acp-example` not recorded: a failed run is not its real wire"),
        "{err}"
    );
    assert!(
        err.contains("peers/acp/example-allow: the run did not pass (fail: "),
        "{err}"
    );
    assert!(!text.contains("fixture written"), "{text}");
    for file in ["acp-example/example-allow.jsonl", "differences.toml"] {
        assert_eq!(
            std::fs::read(fixtures.path().join(file)).unwrap(),
            std::fs::read(workspace().join("fakes/peers").join(file)).unwrap(),
            "{file}"
        );
    }
    assert!(
        !fixtures
            .path()
            .join("acp-example/differences.toml")
            .exists()
    );
}
