//! The redaction property end to end: generated secrets in every untrusted channel, against the
//! reference (no case may fail) and against seeded defects that copy one channel each (each
//! caught, narrowed to its channel, with a shrunk secret).

use crate::common;
use common::{conform, stdout};

fn redaction(args: &[&str]) -> (Option<i32>, String) {
    let _slot = common::Slot::take();
    let out = conform().arg("redaction").args(args).output().unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn the_reference_keeps_every_generated_secret_out_of_every_text() {
    // A modest count for `cargo test` (PROPTEST_CASES raises it); `conform redaction --cases
    // 10000` is the full run.
    let cases = std::env::var("PROPTEST_CASES").unwrap_or_else(|_| "160".into());
    let (code, out) = redaction(&["--cases", &cases, "--seed", "7"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains(&format!("{cases} cases over")), "{out}");
    assert!(out.contains(" 0 failed (0 kept"), "{out}");
}

#[test]
fn each_channel_copied_by_a_seeded_defect_is_caught_with_its_channel_named() {
    // The channel named must be the one copied (for the stderr tail: a stderr line, or what the
    // runtime echoed there).
    let cases = [
        (
            "leak-raw-error",
            "acp/stage/process-exit-after-chunk",
            "stderr",
        ),
        (
            "error-data-in-diagnostic",
            "acp/stage/prompt-error-response",
            "json-rpc error data",
        ),
        (
            "copy-unknown-stop-reason",
            "acp/stop/unknown",
            "acp unknown stop reason",
        ),
        (
            "title-in-permission-line",
            "acp/permission/allow-read-max-tokens",
            "acp permission title",
        ),
        (
            "task-in-start-error",
            "acp/stage/initialize-relative-cwd",
            "task",
        ),
        (
            "leak-turn-error",
            "codex/redaction/untrusted-channels",
            "codex turn error message",
        ),
    ];
    for (defect, scenario, channel) in cases {
        let subject = common::defective(&[defect]);
        let (code, out) = redaction(&[
            "--cases",
            "2",
            "--seed",
            "11",
            "--filter",
            scenario,
            "--subject",
            &subject,
        ]);
        assert_eq!(code, Some(1), "{defect}: {out}");
        assert!(
            out.contains(&format!("✗ {scenario} ("))
                && (out.contains(&format!("channel `{channel}`"))
                    || out.contains(&format!(" {channel}`, secret"))),
            "{defect}: {out}"
        );
        assert!(out.contains("[contract.redaction]"), "{defect}: {out}");
        assert!(
            out.contains("replay: conform redaction --cases 2 --seed 11"),
            "{defect}: {out}"
        );
    }
}

#[test]
fn a_secret_leaked_in_each_form_is_caught() {
    // `leak-encoded` writes the error message in another form each run, in turn: JSON-escaped,
    // percent-encoded, in base64, in base64url, with zero-width spaces, split between the
    // diagnostic and the output, cut to 24 characters, form-encoded, HTML-escaped. One run
    // after another (`-j 1`), nine cases take every form once; each must fail, with its
    // channel named.
    let subject = common::defective(&["leak-encoded"]);
    let scenario = "acp/stage/prompt-error-response";
    let (code, out) = redaction(&[
        "--cases",
        "9",
        "--seed",
        "11",
        "-j",
        "1",
        "--filter",
        scenario,
        "--subject",
        &subject,
    ]);
    assert_eq!(code, Some(1), "{out}");
    // Every case failed, each laid by its finding at the channel the defect copies (one is
    // kept as the counterexample: the first per provider × channel).
    assert!(
        out.contains("9 cases over 1 scenarios, 9 failed (1 kept"),
        "{out}"
    );
    assert!(
        out.contains("failing cases by channel: `json-rpc error message` 9"),
        "{out}"
    );
}

#[test]
fn a_message_form_encoded_html_escaped_or_wrapped_over_two_lines_is_caught() {
    // Each leaks a `session/prompt` error message one way, and the finding names that way:
    // "Internal error" as `Internal+error` (no `%` to decode), a JSON message with its quotes
    // as `&quot;`, "Internal error" broken at its space ("Internal" ends the diagnostic's line,
    // "error" begins the output's).
    for (defect, scenario, finding) in [
        (
            "leak-form-encoded",
            "acp/stage/prompt-error-response",
            "the diagnostic contains untrusted text \"Internal error\" in its form-encoded form",
        ),
        (
            "leak-html-escaped",
            "acp/stage/prompt-error-http-status-code",
            r#"SECRET-upstream-key\",\"status\":\"UNAUTHENTICATED\"}}" in its HTML-escaped form"#,
        ),
        (
            "wrap-error-into-output",
            "acp/stage/prompt-error-response",
            "the result read across the line between its diagnostic and its output contains \
             untrusted text \"Internal error\"",
        ),
    ] {
        let subject = common::defective(&[defect]);
        let (code, out, _) = common::run(&["--filter", scenario, "--subject", &subject]);
        assert_eq!(code, Some(1), "{defect}: {out}");
        assert!(out.contains(finding), "{defect}: {out}");
    }
}

#[test]
fn the_harness_own_secrets_echoed_by_the_runtime_are_caught() {
    // A CI starts conform with credentials of its own; the subject inherits them. The runtime
    // echoes one whose name says credential (handed on by `inherit-whole-env`) and one whose
    // value does (a name the reference hands on), and `leak-raw-error` shows its stderr.
    let dir = tempfile::tempdir().unwrap();
    let (scenarios, snapshots) = (dir.path().join("scenarios"), dir.path().join("snapshots"));
    std::fs::create_dir_all(scenarios.join("acp")).unwrap();
    std::fs::create_dir_all(scenarios.join("preludes")).unwrap();
    std::fs::create_dir_all(&snapshots).unwrap();
    for p in std::fs::read_dir(common::workspace().join("scenarios/preludes"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(p.path(), scenarios.join("preludes").join(p.file_name())).unwrap();
    }
    std::fs::write(
        scenarios.join("acp/echoed-environment.toml"),
        r#"title = "the runtime echoes two variables of the harness's own environment, then exits"
provider = "acp"

[[fake.steps]]
include = "acp-prompt"

[[fake.steps]]
echo_to_stderr = "env:CONFORM_TEST_DEPLOY_TOKEN"

[[fake.steps]]
echo_to_stderr = "env:CONFORM_TEST_UPSTREAM"

[[fake.steps]]
exit = 17

[expect]
stop_reason = "error"
diagnostic = "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 17)"
job_status = "failed"
"#,
    )
    .unwrap();
    let subject = common::defective(&["inherit-whole-env", "leak-raw-error"]);
    let _slot = common::Slot::take();
    let out = conform()
        .env("CONFORM_TEST_DEPLOY_TOKEN", "ci-deploy-token-0123456789")
        .env("CONFORM_TEST_UPSTREAM", "sk-ci-upstream-0a1b2c3d4e5f")
        .args(["run", "--scenarios"])
        .arg(&scenarios)
        .arg("--snapshots")
        .arg(&snapshots)
        .args(["--subject", &subject])
        .output()
        .unwrap();
    let out = stdout(&out);
    for secret in ["ci-deploy-token-0123456789", "sk-ci-upstream-0a1b2c3d4e5f"] {
        assert!(
            out.contains(&format!(
                "[contract.redaction] the diagnostic contains untrusted text \"{secret}\""
            )),
            "{secret}: {out}"
        );
    }
}

#[test]
fn the_hosts_own_token_percent_encoded_is_caught() {
    // A value the runtime never wrote: the harness's parent credential in the subject's
    // environment, leaked percent-encoded by `leak-parent-token`.
    let subject = common::defective(&["leak-parent-token"]);
    let (code, out, _) = common::run(&[
        "--filter",
        "acp/stop/max-turn-requests",
        "--subject",
        &subject,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "untrusted text \"parent-token-never-for-a-child\" in its percent-encoded form"
        ),
        "{out}"
    );
}

fn leaking_subject() -> String {
    common::defective(&["leak-raw-error"])
}

#[test]
fn the_search_stops_at_the_first_counterexamples_or_its_time_budget() {
    let subject = leaking_subject();
    let (code, out) = redaction(&[
        "--cases",
        "2000",
        "--max-failures",
        "1",
        "--subject",
        &subject,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("stopped after 250 of 2000 cases: 1 counterexample(s) found"),
        "{out}"
    );
    assert_eq!(
        out.matches("\n✗ ").count() + usize::from(out.starts_with("✗ ")),
        1,
        "{out}"
    );
    // A budget spent at once still runs one batch: a search that ran nothing proves nothing.
    let (code, out) = redaction(&[
        "--cases",
        "2000",
        "--time-budget",
        "0",
        "--subject",
        &subject,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("stopped after 250 of 2000 cases: the time budget of 0 s ran out"),
        "{out}"
    );
}

#[test]
fn a_signal_ends_the_search_with_what_it_found() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("conform"))
        .current_dir(common::workspace())
        .args([
            "redaction",
            "--cases",
            "100000",
            "--subject",
            &leaking_subject(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its progress says when a counterexample is kept: then it is stopped.
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    for line in stderr.by_ref() {
        let line = line.unwrap();
        if line.contains(" kept") && !line.ends_with(" 0 kept") {
            break;
        }
    }
    // The rest is read to the end, as a terminal would.
    let drained = std::thread::spawn(move || stderr.count());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    drained.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(128 + 15), "{text}");
    assert!(
        text.contains("✗ ") && text.contains("[contract.redaction]"),
        "{text}"
    );
    assert!(text.contains("interrupted by SIGTERM"), "{text}");
}

#[test]
fn accept_refuses_to_record_a_leak() {
    // `--accept` against a host that leaks the parent token: the texts are not recorded, and
    // the stored snapshots stay as they were.
    let snapshots = tempfile::tempdir().unwrap();
    for mode in ["foreground", "background"] {
        let name = format!("acp__stop__max-turn-requests@{mode}.snap");
        std::fs::copy(
            common::workspace().join("snapshots").join(&name),
            snapshots.path().join(&name),
        )
        .unwrap();
    }
    let before = std::fs::read_dir(snapshots.path()).unwrap().count();
    let subject = common::defective(&["leak-parent-token"]);
    let dir = snapshots.path().to_str().unwrap();
    let (code, out, _) = common::run(&[
        "--filter",
        "acp/stop/max-turn-requests",
        "--subject",
        &subject,
        "--snapshots",
        dir,
        "--accept",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not recorded"), "{out}");
    for mode in ["foreground", "background"] {
        let name = format!("acp__stop__max-turn-requests@{mode}.snap");
        assert_eq!(
            std::fs::read(snapshots.path().join(&name)).unwrap(),
            std::fs::read(common::workspace().join("snapshots").join(&name)).unwrap(),
            "{name} was rewritten"
        );
    }
    assert_eq!(
        std::fs::read_dir(snapshots.path()).unwrap().count(),
        before,
        "nothing new written"
    );
}
