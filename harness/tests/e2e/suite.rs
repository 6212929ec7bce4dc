//! End-to-end tests of `conform run`: the reference passes the catalog, and each kind of
//! subject failure the harness promises to catch is caught (a seeded defect per check).

use crate::common;
use common::{conform, defective, run, stdout, workspace};

/// Runs the scenarios matching `filter` against the reference with `defects` seeded and
/// asserts that the suite fails (exit 1) with each of the `expected` lines in its report.
fn caught(defects: &[&str], filter: &str, extra: &[&str], expected: &[&str]) -> String {
    let subject = defective(defects);
    let mut args = vec!["--filter", filter, "--subject", &subject];
    args.extend_from_slice(extra);
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(1), "{out}\n{err}");
    for line in expected {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    out
}

#[test]
fn an_unknown_product_version_is_a_usage_error_before_anything_runs() {
    let (code, out, err) = run(&["--product-version", "codex=9.9.9"]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("unknown Codex product version \"9.9.9\" (known: 0.147.0, 0.169.0, 0.171.0)"),
        "{err}"
    );
    assert!(out.is_empty(), "nothing ran: {out}");
}

#[test]
fn a_host_reading_partial_text_only_from_chunks_passes_at_0_1_1_and_fails_at_the_default() {
    // A host built against runtime 0.1.x takes partial text from the `assistant/chunk` stream
    // (the seeded defect `partial-from-chunks-only`: never from a failed attempt's stream).
    // Against a fake speaking 0.1.1 it is right; against the default 0.2.1rc2, which carries
    // that text only on `assistant/attempt` (and an empty message's stream), it shows none.
    let subject = defective(&["partial-from-chunks-only"]);
    let (code, out, err) = run(&[
        "--filter",
        "dsh-sdk/output/",
        "--subject",
        &subject,
        "--product-version",
        "dsh-sdk=0.1.1",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("18 passed, 0 failed, 0 skipped"), "{out}");
    let out = caught(
        &["partial-from-chunks-only"],
        "dsh-sdk/output/",
        &[],
        &[
            "[expect.output] output \"\", expected \"streamed only\"",
            "[expect.output] output \"\", expected \"streamed text\"",
            "[expect.output] output \"\", expected \"kept\"",
            "[expect.output] output \"\", expected \"partial via raw deltas\"",
        ],
    );
    assert!(out.contains("10 passed, 8 failed, 0 skipped"), "{out}");
    assert!(
        out.contains("fakes speak: DSH SDK runtime 0.2.1rc2"),
        "{out}"
    );
    // The terminal leads with what failed: the matrix, then every failure's check, requirement
    // and diff, then the failures by name; no passing case has a row of its own.
    let first_detail = out
        .find("\n━━ dsh-sdk/output/")
        .expect("a failure's detail");
    let matrix = out.find("│ output ").expect("the matrix's output row");
    let index = out.find("8 case(s) failed:").expect("the failures by name");
    assert!(matrix < first_detail && first_detail < index, "{out}");
    assert!(out.contains("    requirement ("), "{out}");
    assert!(out.contains("  ✗ dsh-sdk/output/"), "{out}");
    assert!(!out.contains(" pass "), "no row per passing case: {out}");
}

/// The test `ci/mutants` runs against each mutant of the reference: the part of the catalog a
/// mutant can reach (`CONFORM_MUTANTS_FILTER`: `acp/`, `dsh-sdk/`, `codex/` or `claude-code/` for
/// a file only that provider uses; unset: everything), and for Codex also the catalog at 0.169.0.
/// Ignored by `cargo test`: the whole-catalog test and the Codex one at 0.169.0 above already run
/// all of it.
/// `conform run` in a PID namespace of its own, where one can be made, with the harness as its
/// first process. A mutant of the teardown code can signal pid -1 or pid 1: outside, that
/// reaches every process the user may signal (it took down the shell of two sweeps) or the
/// machine's init; inside, only the run — and the harness, which reports the interruption.
fn run_contained(args: &[&str]) -> (Option<i32>, String, String) {
    const ROOT: &[&str] = &["--pid", "--fork", "--mount-proc", "--kill-child"];
    const USER: &[&str] = &[
        "--user",
        "--map-root-user",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
    ];
    let unshare = |flags: &[&str]| {
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(flags).current_dir(workspace());
        cmd
    };
    for flags in [ROOT, USER] {
        let works = unshare(flags)
            .arg("true")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            let out = unshare(flags)
                .arg(assert_cmd::cargo::cargo_bin("conform"))
                .arg("run")
                .args(args)
                .env("INSTA_UPDATE", "no")
                .output()
                .unwrap();
            return (out.status.code(), stdout(&out), common::stderr(&out));
        }
    }
    eprintln!("WARNING: no PID namespace (unshare failed): a mutant can signal any process");
    run(args)
}

#[test]
#[ignore = "run by ci/mutants"]
fn the_catalog_a_mutant_can_reach() {
    let filter = std::env::var("CONFORM_MUTANTS_FILTER").unwrap_or_default();
    // The self-test's deadline per run: a mutant that leaves runs hanging fails in seconds
    // instead of running into cargo-mutants' timeout.
    let deadline = conform::cmd::self_test::DEADLINE.as_millis().to_string();
    let mut args = vec!["-j", "8", "--deadline-ms", deadline.as_str()];
    if !filter.is_empty() {
        args.extend(["--filter", filter.as_str()]);
    }
    let (code, out, err) = run_contained(&args);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains(" 0 failed, "), "{out}");
    if filter == "codex/" {
        let (code, out, err) = run_contained(&[
            "-j",
            "8",
            "--deadline-ms",
            deadline.as_str(),
            "--filter",
            "codex/",
            "--product-version",
            "codex=0.169.0",
        ]);
        assert_eq!(code, Some(0), "{out}\n{err}");
    }
}

#[test]
fn a_wrong_snapshot_fails_with_a_readable_diff() {
    let dir = tempfile::tempdir().unwrap();
    let name = "acp__stop__max-turn-requests@foreground.snap";
    let stored = std::fs::read_to_string(workspace().join("snapshots").join(name)).unwrap();
    let wrong = stored.replace("category: remote-limit", "category: remote-limits");
    assert_ne!(stored, wrong, "the seeded defect must change the snapshot");
    std::fs::write(dir.path().join(name), wrong).unwrap();
    let snapshots = dir.path().to_str().unwrap();
    let pending = tempfile::tempdir().unwrap();
    let out = conform()
        .env("INSTA_UPDATE", "new")
        .args([
            "run",
            "--filter",
            "acp/stop/max-turn-requests",
            "--snapshots",
            snapshots,
            "--pending",
            pending.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let (code, out) = (out.status.code(), stdout(&out));
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("[snapshot] the model-visible texts differ"),
        "{out}"
    );
    assert!(
        out.contains(
            "-Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limits;"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "+Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limit;"
        ),
        "{out}"
    );
    // Left pending in the pending folder, never beside the snapshot.
    let new =
        conform::snapshot::PendingDir::new(pending.path().to_owned()).file_for(dir.path(), name);
    assert!(new.exists(), "{}", new.display());
    assert!(!dir.path().join(name.replace(".snap", ".snap.new")).exists());
}

#[test]
fn accept_records_what_the_run_showed_and_insta_update_always_does_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let snapshots = dir.path().to_str().unwrap();
    let pending = tempfile::tempdir().unwrap();
    let case = [
        "--filter",
        "acp/stop/max-turn-requests",
        "--snapshots",
        snapshots,
        "--pending",
        pending.path().to_str().unwrap(),
    ];
    let name = "acp__stop__max-turn-requests@foreground.snap";
    let committed = std::fs::read_to_string(workspace().join("snapshots").join(name)).unwrap();
    // --accept into an empty folder: both modes recorded, exactly as committed, and it passes.
    let (code, out, _) = run(&[&case[..], &["--accept"]].concat());
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("accepted new snapshot"), "{out}");
    let recorded = std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(recorded, committed);
    assert!(
        dir.path()
            .join(name.replace("foreground", "background"))
            .exists()
    );
    // Then a plain run matches what was recorded.
    let (code, out, _) = run(&case);
    assert_eq!(code, Some(0), "{out}");
    // INSTA_UPDATE=always overwrites a wrong stored snapshot as insta does, leaving nothing
    // pending.
    std::fs::write(
        dir.path().join(name),
        committed.replace("remote-limit", "remote-limits"),
    )
    .unwrap();
    let out = conform()
        .env("INSTA_UPDATE", "always")
        .arg("run")
        .args(case)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(name)).unwrap(),
        committed
    );
    assert_eq!(std::fs::read_dir(pending.path()).unwrap().count(), 0);
    assert!(!dir.path().join(name.replace(".snap", ".snap.new")).exists());
}

#[test]
fn a_subject_that_crashes_mid_run_fails_that_run_and_the_suite_goes_on() {
    let subject = defective(&["crash-after-dispatch"]);
    let (code, out, _) = run(&["--filter", "acp/stop/", "--subject", &subject, "-j", "1"]);
    assert_eq!(code, Some(1), "{out}");
    // Every selected case was still run and reported, each as the subject's failure.
    let failed = out
        .matches("[subject.alive] the subject exited (exit status: 70)")
        .count();
    assert_eq!(failed, 12, "{out}");
    assert!(out.contains("0 passed, 12 failed"), "{out}");
    assert!(out.contains("subject transcript (run "), "{out}");
}

#[test]
fn a_hanging_subject_misses_the_deadline_and_is_reported() {
    let subject = defective(&["hang-after-dispatch"]);
    let (code, out, _) = run(&[
        "--filter",
        "acp/success/end-turn",
        "--subject",
        &subject,
        "--deadline-ms",
        "1500",
    ]);
    assert_eq!(code, Some(1), "{out}");
    // What it still awaited, and where the runtime stood, so the developer knows where to look.
    // A loaded machine puts the deadline off and says so between the two halves.
    assert!(
        out.contains("[subject.deadline] the run did not finish within 1500 ms"),
        "{out}"
    );
    assert!(
        out.contains("; the subject still owed the `result` (its last message at "),
        "{out}"
    );
    assert!(out.contains("it saw stdin EOF, it exited 0"), "{out}");
}

#[test]
fn a_child_left_running_is_reported_and_killed() {
    let subject = defective(&["skip-teardown"]);
    let (code, out, _) = run(&["--filter", "acp/success/end-turn", "--subject", &subject]);
    assert_eq!(code, Some(1), "{out}");
    let marker = "[process.settled] still running after the subject said the run was over (killed by the harness): pid ";
    let at = out.find(marker).unwrap_or_else(|| panic!("{out}")) + marker.len();
    let pid: String = out[at..].chars().take_while(char::is_ascii_digit).collect();
    // The harness killed it before it returned: nothing of the run is left running.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = state
        .rsplit_once(") ")
        .is_some_and(|(_, rest)| !rest.starts_with('Z'));
    assert!(!running, "pid {pid} is still running: {state}");
}

#[test]
fn a_start_whose_signal_is_already_aborted_must_spawn_nothing() {
    // The clean reference checks the signal before it spawns: every provider's case passes.
    let (code, out, err) = run(&["--filter", "cancel/before-start"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("4 passed, 0 failed, 0 skipped"), "{out}");
    // Spawned anyway, then rolled back by the handshake's race with the signal: ACP rejects
    // with the very same text, so only the runtime's registration tells.
    let subject = defective(&["spawns-when-aborted"]);
    let (code, out, err) = run(&[
        "-v",
        "--filter",
        "acp/cancel/before-start",
        "--subject",
        &subject,
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(out.contains(r#""aborted":true}"#), "{out}");
    let failures: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("✗ ["))
        .collect();
    assert_eq!(failures.len(), 1, "{out}");
    assert!(
        failures[0].contains("[process.nothing-spawned] the start said the request's signal was already aborted (`aborted: true`), yet the run spawned: pid "),
        "{out}"
    );
    assert!(failures[0].contains("registered"), "{out}");
}

#[test]
fn a_malformed_scenario_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("acp")).unwrap();
    std::fs::write(
        dir.path().join("acp/bad.toml"),
        "title = \"t\"\nprovider = \"acp\"\n[[fake.steps]]\nchunk = \"a\"\nstop = \"end_turn\"\n[expect]\nstop_reason = \"completed\"\n",
    )
    .unwrap();
    let (code, _, err) = run(&["--scenarios", dir.path().to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("acp/bad.toml:3:1: a step sets several actions (chunk, stop)"),
        "{err}"
    );
}

#[test]
fn a_subject_that_breaks_the_subject_protocol_is_reported_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("subject.sh");
    // Answers hello, then claims a result for the run in a shape the schema rejects.
    std::fs::write(
        &script,
        r#"read -r hello
echo '{"type":"hello","protocol":"conform-subject/1","subject":{"name":"bad","version":"0"},"providers":["acp"],"modes":["foreground"]}'
while read -r line; do
  run=$(printf '%s' "$line" | sed -n 's/.*"run":"\([^"]*\)".*/\1/p')
  [ -n "$run" ] && echo "{\"type\":\"result\",\"run\":\"$run\",\"stopReason\":\"completed\"}"
  case "$line" in *shutdown*) exit 0;; esac
done
"#,
    )
    .unwrap();
    let subject = format!("sh {}", script.display());
    let (code, out, _) = run(&[
        "--filter",
        "acp/success/end-turn",
        "--subject",
        &subject,
        "--deadline-ms",
        "1500",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("[subject.protocol] breaks the subject protocol"),
        "{out}"
    );
    assert!(out.contains("\"stopReason\":\"completed\"}"), "{out}");
    // Background is not offered by this subject: skipped with a reason, not failed.
    assert!(
        out.contains("the subject does not run background calls"),
        "{out}"
    );
}

#[test]
fn an_unmarked_invalid_fake_frame_is_a_harness_fault() {
    // Every frame the fakes send is validated against the ACP v1 schema; only frames a step
    // marks `violation = "…"` are exempt. Dropping the mark must turn the run into exit 2.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("acp")).unwrap();
    std::fs::create_dir_all(root.join("preludes")).unwrap();
    for p in ["acp-handshake", "acp-prompt"] {
        std::fs::copy(
            workspace().join(format!("scenarios/preludes/{p}.toml")),
            root.join(format!("preludes/{p}.toml")),
        )
        .unwrap();
    }
    let original =
        std::fs::read_to_string(workspace().join("scenarios/acp/stop/unknown.toml")).unwrap();
    let unmarked: String = original
        .lines()
        .filter(|l| !l.starts_with("violation"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(original, unmarked);
    std::fs::write(root.join("acp/unknown.toml"), unmarked).unwrap();
    let (code, out, _) = run(&[
        "--scenarios",
        root.to_str().unwrap(),
        "--snapshots",
        root.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("[harness.fake-schema] the fake sent a frame that is not valid acp"),
        "{out}"
    );
    assert!(out.contains("\"teleported_elsewhere\""), "{out}");
}

#[test]
fn the_newer_codex_vocabulary_runs_and_reports_what_the_subject_maps_to_unknown() {
    let (code, out, _) = run(&[
        "--filter",
        "codex/upgrade/",
        "--product-version",
        "codex=0.169.0",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("upstream codes newer than the subject's pin"),
        "{out}"
    );
    for c in [
        "rateLimitExceeded",
        "flexUnavailable",
        "modelNotFound",
        "policyCapacityUnavailable",
        "inferenceHookDenied",
        "misalignmentPolicyViolation",
        "tooManyDenials",
    ] {
        assert!(
            out.contains(&format!(
                "  {c} (foreground): category `unknown` — mapped to unknown"
            )),
            "{c}: {out}"
        );
    }
    // Without the newer product version those scenarios are skipped, not failed — and a run
    // that skipped everything tested nothing: exit 2, unless skips are allowed.
    let (code, out, _) = run(&["--filter", "codex/upgrade/"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("0 passed, 0 failed, 16 skipped"), "{out}");
    assert!(
        out.contains("nothing was tested: all 16 selected case(s) were skipped (needs --product-version codex=0.169.0; needs --product-version codex=0.171.0)"),
        "{out}"
    );
    let (code, _, _) = run(&["--filter", "codex/upgrade/", "--allow-skips"]);
    assert_eq!(code, Some(0));
}

#[test]
fn drift_against_the_vendored_schemas_shows_the_seven_added_codes() {
    let dir = workspace().join("fakes/schemas/codex");
    let out = conform()
        .args(["drift", "codex", "--schema"])
        .arg(dir.join("0.147.0.schemas.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("no drift"));
    let out = conform()
        .args(["drift", "codex", "--schema"])
        .arg(dir.join("0.169.0.schemas.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("added (7):"), "{text}");
    assert!(text.contains("open catch-all"), "{text}");
    assert!(
        !text.contains("removed") && !text.contains("changed"),
        "{text}"
    );
}

// ---- one seeded defect per check: each check is shown able to fail ----

#[test]
fn a_wrong_stop_reason_mapping_is_caught() {
    caught(
        &["max-tokens-as-error"],
        "acp/stop/max-tokens",
        &[],
        &["[expect.stop-reason] stop reason `error`, expected `max-tokens`"],
    );
}

#[test]
fn a_raw_error_in_model_visible_text_is_caught() {
    caught(
        &["leak-raw-error"],
        "acp/stage/process-exit-after-chunk",
        &[],
        &[
            "[contract.redaction] the diagnostic contains untrusted text \"Traceback: KeyError SECRET_TRACEBACK_VALUE\"",
        ],
    );
}

#[test]
fn untrusted_text_copied_from_any_channel_is_caught() {
    // Each seeded defect copies one untrusted channel into model-visible text.
    let cases: &[(&str, &str, &str)] = &[
        (
            "copy-unknown-stop-reason",
            "acp/stop/unknown",
            "[contract.redaction] the diagnostic contains untrusted text \"teleported_elsewhere\"",
        ),
        (
            "error-data-in-diagnostic",
            "acp/stage/prompt-error-response",
            "[contract.redaction] the diagnostic contains untrusted text \"upstream said SECRET_UPSTREAM_DETAIL\"",
        ),
        (
            "title-in-permission-line",
            "acp/permission/allow-read-max-tokens",
            "[contract.redaction] the diagnostic contains untrusted text \"Run rm -rf /srv/private-project\"",
        ),
        (
            "task-in-start-error",
            "acp/stage/initialize-relative-cwd",
            "[contract.redaction] the start rejection contains untrusted text \"Carry out the scripted task.\"",
        ),
        (
            // A failed Codex turn's message: collected from `turn_completed` only since the
            // codec names its untrusted text.
            "leak-turn-error",
            "codex/redaction/untrusted-channels",
            "[contract.redaction] the diagnostic contains untrusted text \"401 for sk-SECRET-turn\"",
        ),
    ];
    for (defect, filter, expected) in cases {
        caught(&[defect], filter, &[], &[expected]);
    }
}

#[test]
fn a_leaking_run_is_never_recorded_as_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let snapshots = dir.path().to_str().unwrap();
    let subject = defective(&["leak-turn-error"]);
    let (code, out, _) = run(&[
        "--filter",
        "codex/redaction/untrusted-channels",
        "--subject",
        &subject,
        "--snapshots",
        snapshots,
        "--accept",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("not recorded: the texts leak untrusted text"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn a_job_id_given_twice_by_one_subject_is_caught() {
    caught(
        &["reuse-job-id"],
        "acp/stop/",
        &["-j", "1"],
        &["[delivery.unique-job-id] job id `subagent-1` was already given to"],
    );
}

#[test]
fn a_child_that_inherits_the_parents_credentials_is_caught() {
    caught(
        &["inherit-whole-env"],
        "/env/scrubbed-parent-env",
        &[],
        &[
            "[wire.violation] the runtime saw a protocol violation: the runtime's environment differs from the script: CONFORM_PARENT_API_TOKEN: expected None, got Some(\"parent-token-never-for-a-child\")",
        ],
    );
}

#[test]
fn a_wrong_dsh_turn_mapping_is_caught() {
    caught(
        &["blocked-as-error"],
        "dsh-sdk/turn/blocked",
        &[],
        &[
            "[expect.stop-reason] stop reason `error`, expected `refusal`",
            "[expect.diagnostic] diagnostic \"Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)\", expected none",
        ],
    );
}

#[test]
fn a_start_error_carrying_the_child_stderr_tail_is_caught() {
    // Today's real host appends the SDK runtime's stderr tail to start errors.
    caught(
        &["stderr-in-start-error"],
        "dsh-sdk/stage/initialize-exit-before-handshake",
        &[],
        &[
            "[contract.redaction] the start rejection contains untrusted text \"scripted boot failure: cannot open /home/alice/.dsh/SECRET-credentials.json\"",
        ],
    );
}

#[test]
fn cyber_policy_as_refusal_is_caught() {
    caught(
        &["cyber-policy-as-refusal"],
        "codex/error-info/cyberPolicy",
        &[],
        &["[expect.stop-reason] stop reason `refusal`, expected `error`"],
    );
}

#[test]
fn an_http_status_read_from_a_string_is_caught() {
    caught(
        &["http-status-from-string"],
        "codex/error-info/httpConnectionFailed-status-string",
        &[],
        &[
            "category: httpConnectionFailed; HTTP status: 503)\", expected \"Product subagent failure (product: Codex; stage: turn; category: httpConnectionFailed)\"",
        ],
    );
}

#[test]
fn a_completion_that_never_reaches_the_parent_is_a_blackhole() {
    let out = caught(
        &["drop-notice"],
        "acp/stop/refusal",
        &["--deadline-ms", "1500"],
        &[
            // A loaded machine puts the deadline off, and says so after "1500 ms".
            "[delivery.completion] the run settled but no completion reached the parent within its deadline (1500 ms",
            "): active at ",
            " ms → done_but_not_forwarded at ",
        ],
    );
    // The foreground call has no notice to lose.
    assert!(out.contains("1 passed, 1 failed"), "{out}");
}

#[test]
fn a_diagnostic_on_success_is_caught() {
    caught(
        &["diagnostic-on-success"],
        "acp/success/end-turn",
        &[],
        &["[contract.no-diagnostic] a completed result carries a diagnostic"],
    );
}

#[test]
fn an_unbounded_diagnostic_is_caught() {
    caught(
        &["unbounded-diagnostic"],
        "acp/stop/max-turn-requests",
        &[],
        &[
            "[contract.bound] the diagnostic is 5104 bytes, over 4096",
            "bytes in all)",
        ],
    );
}

#[test]
fn dropped_partial_output_is_caught() {
    caught(
        &["drop-partial-output"],
        "acp/stop/max-tokens",
        &[],
        &["[expect.output] output \"\", expected \"partial answer\""],
    );
}

#[test]
fn partial_output_read_only_from_the_old_frame_is_caught() {
    // The real DSH SDK runtime carries a failed turn's partial text in `assistant/attempt`;
    // a provider that reads only `assistant/chunk` deltas shows no partial output.
    let out = caught(
        &["partial-from-chunks-only"],
        "dsh-sdk/turn/",
        &[],
        &["[expect.output] output \"\", expected \"partial answer\""],
    );
    assert!(out.contains("dsh-sdk/turn/blocked"), "{out}");
}

#[test]
fn a_notice_after_job_kill_is_caught() {
    let out = caught(
        &["notice-after-kill"],
        "acp/cancel/local-during-prompt",
        &[],
        &[
            "[delivery.no-notice-after-kill] a job killed through job_kill still sent a completion notice",
        ],
    );
    assert!(
        out.contains("1 passed, 1 failed"),
        "only the background run has a job: {out}"
    );
}

#[test]
fn a_notice_naming_another_job_is_caught() {
    caught(
        &["wrong-notice-job"],
        "acp/stop/refusal",
        &[],
        &[
            "[delivery.job-id] the notice names job \"subagent-999\", the tool result named \"subagent-",
        ],
    );
}

#[test]
fn a_tool_result_hiding_the_diagnostic_is_caught() {
    caught(
        &["hide-diagnostic-in-tool-result"],
        "acp/stop/max-turn-requests",
        &[],
        &["[presentation.same-diagnostic] the tool result does not show the result's diagnostic"],
    );
}

#[test]
fn a_teardown_that_skips_sigterm_is_caught() {
    caught(
        &["skip-sigterm"],
        "acp/teardown/eof-deaf-needs-sigterm",
        &[],
        &["[expect.teardown] the runtime ended at teardown rung \"sigkill\", expected `sigterm`"],
    );
}

#[test]
fn a_wire_violation_is_caught() {
    caught(
        &["omit-mcp-servers"],
        "acp/success/end-turn",
        &[],
        &[
            "[wire.violation] the runtime saw a protocol violation:",
            "mcpServers",
        ],
    );
}

#[test]
fn a_fake_that_cannot_play_its_script_is_a_harness_fault() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("acp")).unwrap();
    // `reply` with no request open: the fake cannot do what the script says.
    std::fs::write(
        dir.path().join("acp/broken.toml"),
        "title = \"t\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n[[fake.steps]]\nreply = { x = 1 }\n[expect]\nstop_reason = \"completed\"\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, out, _) = run(&[
        "--scenarios",
        root,
        "--snapshots",
        root,
        "--deadline-ms",
        "3000",
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("[harness.fake] fake pid"), "{out}");
}

#[test]
fn a_start_rejected_before_rollback_is_caught() {
    caught(
        &["reject-before-rollback"],
        "acp/stage/new-session-missing-id-deaf-child",
        &[],
        &[
            "[process.rollback] start was rejected while the child was still running (it must be settled first): pid ",
        ],
    );
}

#[test]
fn a_needless_grace_is_caught_by_time_alone() {
    // The child exits by itself at stdin EOF; a provider that still waits out its dispose grace
    // (3000 ms) gives the same verdicts, only later than half that grace.
    let out = caught(
        &["needless-grace"],
        "acp/success/end-turn",
        &[],
        &[
            "[timing.settled] `settled` came ",
            "after the run's last process was gone (bound 1500 ms: half the shortest dispose grace)",
            "0 passed, 2 failed",
        ],
    );
    assert!(!out.contains("[expect."), "only time tells: {out}");
}

#[test]
fn a_terminal_answer_lost_to_a_simultaneous_exit_is_caught() {
    caught(
        &["exit-beats-terminal"],
        "acp/races/terminal-then-exit",
        &[],
        &[
            "[expect.stop-reason] stop reason `error`, expected `completed`",
            "category: process-exit; exit code: 0)",
        ],
    );
}

#[test]
fn early_facts_applied_after_newer_ones_are_caught() {
    caught(
        &["early-facts-last"],
        "codex/races/early-fact-then-newer-fact",
        &[],
        &["(mode: never; request: command approval; decision: cancelled)"],
    );
}

#[test]
fn a_run_ended_at_turn_end_instead_of_idle_is_caught() {
    caught(
        &["turn-end-ends-the-run"],
        "dsh-sdk/races/exit-between-turn-end-and-idle",
        &[],
        &["[expect.stop-reason] stop reason `completed`, expected `error`"],
    );
}

#[test]
fn claude_code_races_at_the_result_are_caught() {
    for (defect, filter, line) in [
        (
            "signal-beats-result",
            "claude-code/races/error-result-then-killed",
            "diagnostic \"Product subagent failure (product: Claude Code; stage: process; category: process-exit; signal: SIGKILL)\"",
        ),
        (
            "result-after-cancel",
            "claude-code/races/cancel-racing-result",
            "[expect.stop-reason] stop reason `completed`, expected `aborted`",
        ),
        (
            "init-resets-facts",
            "claude-code/races/request-before-init",
            "[expect.diagnostic] diagnostic \"Product subagent failure (product: Claude Code; stage: query-run; category: error_during_execution; exit code: 1)\", expected",
        ),
    ] {
        caught(&[defect], filter, &[], &[line]);
    }
}

#[test]
fn a_handshake_answered_with_null_is_caught_for_every_provider_it_fails() {
    // ACP is the exception: the records check nothing of its initialize answer.
    for (filter, line) in [
        (
            "codex/handshake/initialize-null",
            "[expect.start-error] start rejected with \"subagent-codex: Product subagent failure (product: Codex; stage: thread-start; category: unknown)\"",
        ),
        (
            "dsh-sdk/handshake/initialize-null",
            "[expect.start-error] start was not rejected",
        ),
        (
            "claude-code/handshake/initialize-null",
            // The task's `user` message after a null answer is what the real SDK writes anyway
            // (it does not await the answer): the published run that never ends shows it.
            // (Checked up to the deadline: a loaded machine adds how far it was put off.)
            "[subject.deadline] the run did not finish within 3000 ms",
        ),
    ] {
        caught(
            &["null-handshake-accepted"],
            filter,
            &["--deadline-ms", "3000"],
            &[line],
        );
    }
}

#[test]
fn schema_valid_but_wrong_handshakes_are_caught_by_the_pinned_params() {
    for (defect, filter, line) in [
        (
            "codex-experimental-api",
            "codex/success/final-answer",
            "`initialize` params differ from the script: params.capabilities.experimentalApi: expected false, got true",
        ),
        (
            "acp-fs-capability",
            "acp/success/end-turn",
            "`initialize` params differ from the script: params.clientCapabilities.fs: not expected",
        ),
        (
            "dsh-subject-cwd",
            "dsh-sdk/turn/completed",
            "`initialize` params differ from the script: params.cwd: expected the runtime's working directory",
        ),
    ] {
        caught(&[defect], filter, &[], &["[wire.violation]", line]);
    }
}

#[test]
fn a_request_of_the_runtime_left_unanswered_is_caught() {
    // The fake used to take EOF in the middle of its own request as the end of the run: a
    // provider that answered only when it had time (the answer raced the teardown) passed.
    caught(
        &["unanswered-request"],
        "codex/frames/unsupported-request",
        &[],
        &[
            "[wire.violation] the runtime saw a protocol violation: stdin closed while `item/tool/call` was unanswered",
        ],
    );
}

#[test]
fn a_request_the_script_waits_for_that_never_comes_is_caught() {
    // The fake used to exit quietly at EOF in the middle of an `expect`: a provider that skipped
    // a step of the protocol (here the interrupt of a still-open turn) passed.
    caught(
        &["skip-turn-interrupt"],
        "codex/frames/unsupported-request",
        &[],
        &[
            "[wire.violation] the runtime saw a protocol violation: stdin closed while the script expected `turn/interrupt`",
        ],
    );
}

#[test]
fn an_empty_text_block_for_no_output_is_caught() {
    // Found by mutation testing: only the output's text was judged, so `[{"type":"text",
    // "text":""}]` passed for `[]`.
    caught(
        &["empty-text-block"],
        "acp/success/empty-output",
        &[],
        &["[contract.output] the output holds an empty text block; no output is `[]`"],
    );
}

// ---- isolation: runs in flight together, in an order the scenarios choose ----

#[test]
fn a_permission_fact_kept_per_provider_shows_in_the_other_run() {
    caught(
        &["permission-fact-per-provider"],
        "isolation/permission-between-request-and-stop/",
        &[],
        &[
            "[isolation.cross-talk] the diagnostic shows `request: move; decision: denied`, which belongs to isolation/permission-between-request-and-stop/late-denier",
        ],
    );
}

#[test]
fn a_diagnostic_builder_shared_across_runs_is_caught() {
    caught(
        &["shared-diagnostic-builder"],
        "isolation/failures-in-turn/",
        &[],
        &[
            "[isolation.cross-talk] the diagnostic shows `category: usageLimitExceeded`, which belongs to isolation/failures-in-turn/codex-first",
        ],
    );
}

#[test]
fn job_ids_counted_per_provider_collide_across_runs() {
    // The group's two background jobs are of two providers, in one subject.
    caught(
        &["job-id-per-provider"],
        "isolation/failures-in-turn/",
        &[],
        &[
            "[delivery.unique-job-id] job id `subagent-1` was already given to isolation/failures-in-turn/",
        ],
    );
}

#[test]
fn a_cancel_that_reaches_another_run_is_caught() {
    caught(
        &["cancel-every-run"],
        "isolation/cancel-beside-prompt/",
        &[],
        &[
            "[isolation.cancel-target] this run was never cancelled, yet it ended as a local cancel (aborted, no diagnostic); the cancel was sent to isolation/cancel-beside-prompt/cancelled",
        ],
    );
}

#[test]
fn a_group_runs_whole_and_together_even_one_run_at_a_time() {
    // One member selected, one run in flight allowed: its partner still runs beside it (each
    // waits for the other's milestones, so run apart they would both miss their deadlines).
    let (code, out, err) = run(&[
        "--filter",
        "isolation/permission-between-request-and-stop/early-asker",
        "-j",
        "1",
        "--deadline-ms",
        "5000",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
}

// ---- the delivery watchdog's timeline ----

/// The watchdog statuses of each background case of a `conform run --json` report, in order,
/// and the source of its completion receipt.
fn timelines(args: &[&str]) -> Vec<(Vec<String>, Option<String>)> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    let (code, out, err) = run(&all);
    assert!(matches!(code, Some(0 | 1)), "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["mode"] == "background")
        .map(|c| {
            let d = &c["delivery"];
            let statuses = d["timeline"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    assert!(t["at"].as_str().unwrap().ends_with('Z'), "{t}");
                    assert!(t["atMs"].is_u64(), "{t}");
                    t["status"].as_str().unwrap().to_owned()
                })
                .collect();
            let source = d["completion"]["resultSource"].as_str().map(str::to_owned);
            (statuses, source)
        })
        .collect()
}

#[test]
fn a_job_still_running_at_expected_by_is_suspect_then_recovered() {
    // The reference, and a child slower than expectedBy: the watcher's waiting job_output
    // receives the result, which the scenario expects.
    let t = timelines(&["--filter", "acp/delivery/late-child-recovered"]);
    assert_eq!(
        t,
        [(
            vec![
                "active".to_owned(),
                "suspect_delivery_failure".into(),
                "done_but_not_forwarded".into(),
                "recovered".into()
            ],
            Some("job_output_wait".to_owned())
        )]
    );
}

#[test]
fn a_subject_that_delivers_only_when_asked_is_recovered_not_completed() {
    caught(
        &["drop-notice"],
        "acp/success/end-turn",
        &["--expected-by-ms", "300"],
        &[
            "[delivery.completion] the delivery watchdog ended recovered, expected completed (the completion came only when the parent fetched it with job_output after expectedBy): active at ",
        ],
    );
    let subject = defective(&["drop-notice"]);
    let t = timelines(&[
        "--filter",
        "acp/success/end-turn",
        "--subject",
        &subject,
        "--expected-by-ms",
        "300",
    ]);
    assert_eq!(
        t,
        [(
            vec![
                "active".to_owned(),
                "done_but_not_forwarded".into(),
                "recovered".into()
            ],
            Some("job_output_wait".to_owned())
        )]
    );
}

#[test]
fn a_subject_that_never_delivers_goes_suspect_then_done_but_not_forwarded() {
    let subject = defective(&["hang-after-dispatch"]);
    let t = timelines(&[
        "--filter",
        "acp/delivery/late-child-recovered",
        "--subject",
        &subject,
        "--deadline-ms",
        "2000",
    ]);
    assert_eq!(
        t,
        [(
            vec![
                "active".to_owned(),
                "suspect_delivery_failure".into(),
                "done_but_not_forwarded".into()
            ],
            None
        )]
    );
}

#[test]
fn a_subject_that_dies_leaves_its_job_blocked() {
    let subject = defective(&["crash-after-dispatch"]);
    let t = timelines(&[
        "--filter",
        "acp/delivery/late-child-recovered",
        "--subject",
        &subject,
    ]);
    assert_eq!(t, [(vec!["active".to_owned(), "blocked".into()], None)]);
}

#[test]
fn a_completed_run_shown_as_an_error_is_caught() {
    let out = caught(
        &["success-as-error"],
        "acp/success/end-turn",
        &[],
        &["[presentation.is-error] isError is true for stop reason `completed`"],
    );
    assert!(
        out.contains("1 passed, 1 failed"),
        "only the foreground tool result shows the run's outcome: {out}"
    );
}

#[test]
fn a_job_output_showing_another_status_than_the_notice_is_caught() {
    caught(
        &["job-output-status-without-detail"],
        "acp/stop/refusal",
        &[],
        &[
            "[presentation.same-status] the notice says [status: failed, refusal] but job_output says [status: failed]",
        ],
    );
}

#[test]
fn a_background_start_in_other_words_is_caught() {
    let out = caught(
        &["background-start-wording"],
        "acp/success/end-turn",
        &[],
        &[
            "[presentation.background-start] the background tool result is \"started background job subagent-",
        ],
    );
    assert!(out.contains("1 passed, 1 failed"), "{out}");
}

#[test]
fn a_job_output_never_answered_is_caught() {
    // The harness waits for the answer to end the run, so only the deadline shows it: a short
    // one keeps the wait short.
    let out = caught(
        &["no-job-output-answer"],
        "acp/success/end-turn",
        &["--deadline-ms", "2000"],
        &[
            "[delivery.job-output] job_output was asked for and never answered within the run's deadline (2000 ms)",
        ],
    );
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    assert!(!out.contains("[subject.deadline]"), "{out}");
}

#[test]
fn a_failed_job_reported_completed_is_caught() {
    // Notice and job_output agree on the wrong status, so only the expectation can tell.
    let out = caught(
        &["job-status-completed-always"],
        "acp/stop/refusal",
        &[],
        &["[expect.job-status] job status \"completed\", expected `failed`"],
    );
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    assert!(!out.contains("[presentation.same-status]"), "{out}");
}

#[test]
fn a_newer_upstream_code_shown_as_another_known_one_is_caught() {
    // `rateLimitExceeded` is newer than the subject's pin: it may show as itself or `unknown`,
    // never as the catch-all `other` of the pinned vocabulary.
    let out = caught(
        &["unknown-code-as-other"],
        "codex/upgrade/rateLimitExceeded",
        &["--product-version", "codex=0.169.0"],
        &[
            "[expect.upstream-code] upstream code `rateLimitExceeded` shows as \"other\", expected `rateLimitExceeded` or `unknown`",
            "  rateLimitExceeded (foreground): category `other` — mapped to another category",
        ],
    );
    assert!(out.contains("0 passed, 2 failed"), "{out}");
}

#[test]
fn a_dispatch_receipt_with_another_expected_by_is_caught() {
    let out = caught(
        &["wrong-expected-by"],
        "acp/success/end-turn",
        &[],
        &[
            "[delivery.dispatch-receipt] expectedBy \"",
            "\" is not the one the harness sent in `start` (\"",
        ],
    );
    // A foreground run is published too: both have a receipt.
    assert!(out.contains("0 passed, 2 failed"), "{out}");
}

#[test]
fn a_message_after_the_run_is_over_is_caught() {
    // The second answer comes after the first ended the run: whether it reaches the harness
    // before or after the run is closed, it is the same fault.
    let out = caught(
        &["job-output-twice"],
        "acp/success/end-turn",
        &[],
        &["[subject.after-end] out of order: `job_output` after the run was over"],
    );
    assert!(out.contains("1 passed, 1 failed"), "{out}");
    assert!(!out.contains("[subject.protocol]"), "{out}");
}

#[test]
fn a_job_output_read_that_consumes_the_output_is_caught() {
    caught(
        &["consuming-job-output"],
        "acp/delivery/job-output-read-twice",
        &[],
        &[
            "[delivery.job-output] job_output answered call 2 differently from the first: \"(no new output)\\n[status: completed]\" instead of \"The answer.\\n[status: completed]\"",
        ],
    );
}

#[test]
fn a_late_job_kill_that_sends_the_notice_again_is_caught() {
    caught(
        &["renotice-on-late-kill"],
        "acp/delivery/job-kill-after-completion",
        &[],
        &["[delivery.single-notice] 2 completion notices for one job"],
    );
}

#[test]
fn a_result_reported_twice_breaks_the_subject_protocol() {
    caught(
        &["result-twice"],
        "acp/success/end-turn",
        &[],
        &["[subject.protocol] out of order: `result` a second time"],
    );
}

#[test]
fn a_result_made_up_without_spawning_the_runtime_is_caught() {
    caught(
        &["stub-result"],
        "acp/success/end-turn",
        &[],
        &[
            "[subject.runtime] the subject reported the run, but the runtime it was given never started",
        ],
    );
}

#[test]
fn a_result_held_back_after_the_child_exited_is_caught_by_time() {
    // One case whose child exits before the result: each late result is read as lateness the
    // load might explain whenever other runs are in flight, and is then run again alone.
    caught(
        &["late-result-after-exit"],
        "acp/stage/process-exit-zero",
        &[],
        &[
            "[timing.result] `result` came ",
            " ms after the run's last process was gone",
        ],
    );
}

#[test]
fn a_blank_claude_code_success_counted_as_completed_is_caught() {
    caught(
        &["blank-success-completed"],
        "claude-code/success/blank-result",
        &[],
        &["[expect.stop-reason] stop reason `completed`, expected `error`"],
    );
}

#[test]
fn a_claude_code_error_max_turns_shown_as_max_tokens_is_caught() {
    caught(
        &["max-turns-as-max-tokens"],
        "claude-code/result/error_max_turns",
        &[],
        &["[expect.stop-reason] stop reason `max-tokens`, expected `error`"],
    );
}

#[test]
fn a_dropped_claude_code_permission_fact_is_caught() {
    caught(
        &["claude-permission-fact-dropped"],
        "claude-code/permission/tool-denied-dontAsk",
        &[],
        &[
            "[expect.diagnostic] diagnostic \"Product subagent failure (product: Claude Code; stage: query-run; category: error_max_turns; exit code: 1)\", expected",
        ],
    );
}

#[test]
fn a_claude_code_cli_started_without_the_stdio_prompt_tool_is_caught_by_the_fake() {
    caught(
        &["no-permission-prompt-tool"],
        "claude-code/permission/tool-denied-dontAsk",
        &[],
        &[
            "[wire.violation] the runtime saw a protocol violation: the script asks `can_use_tool`, but the CLI was started without `--permission-prompt-tool stdio`",
            // The flags the real SDK passes, pinned per mode (`expect_args`).
            "[wire.violation] the runtime saw a protocol violation: the runtime's command line differs from the script",
        ],
    );
}

#[test]
fn a_duration_read_without_validation_is_caught_by_the_configuration_surface() {
    // Every invalid class of a dispose grace or the DSH SDK shutdown timeout
    // (docs/scenarios.md, "The configuration surface") must refuse the start.
    let out = caught(
        &["durations-unchecked"],
        "dsh-sdk/config/shutdown-timeout-",
        &[],
        &[
            "✗ dsh-sdk/config/shutdown-timeout-zero (foreground)",
            "✗ dsh-sdk/config/shutdown-timeout-negative (foreground)",
            "✗ dsh-sdk/config/shutdown-timeout-past-the-timer-limit (foreground)",
            "✗ dsh-sdk/config/shutdown-timeout-wrong-type (foreground)",
            "[expect.start-error] start rejected with \"subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: protocol)\", expected `subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: configuration)`",
        ],
    );
    assert!(out.contains("0 passed, 8 failed"), "{out}");
}

#[test]
fn a_host_dispose_that_leaves_the_turn_running_is_caught() {
    // The host's own dispose while the prompt or turn runs must cancel it at once, for every
    // provider: a dispose that waits for the turn to end by itself leaves the run hanging.
    let out = caught(
        &["dispose-ignores-turn"],
        "cancel/host-dispose-",
        &["--deadline-ms", "3000"],
        &[
            "✗ acp/cancel/host-dispose-answered-late (foreground) [subject.deadline]",
            "✗ codex/cancel/host-dispose-interrupt-never-answered (background) [subject.deadline]",
            "✗ dsh-sdk/cancel/host-dispose-shutdown-answered-late (foreground) [subject.deadline]",
            "✗ claude-code/cancel/host-dispose-cli-deaf-to-eof (background) [subject.deadline]",
        ],
    );
    assert!(out.contains("0 passed, 14 failed"), "{out}");
}

#[test]
fn a_subject_without_the_dispose_control_skips_the_host_dispose_cases() {
    // An adapter whose hello lists no `dispose` control is never sent one.
    let hello = r#"{"type":"hello","protocol":"conform-subject/1","subject":{"name":"s","version":"1"},"providers":["acp"],"modes":["foreground","background"]}"#;
    let subject = format!("read _; echo '{hello}'; cat >/dev/null");
    let (code, out, err) = run(&[
        "--filter",
        "acp/cancel/host-dispose-",
        "--subject",
        &subject,
    ]);
    assert_eq!(
        code,
        Some(2),
        "{out}
{err}"
    );
    assert!(
        out.contains("4 × the subject does not dispose a run on request (its hello lists no `dispose` control)"),
        "{out}"
    );
}

#[test]
fn a_configured_grace_not_applied_is_caught() {
    // A provider that validates its graces and then walks the ladder with the defaults: only
    // the time each rung took shows it.
    caught(
        &["graces-not-applied"],
        "teardown/eof-deaf-needs-sigterm",
        &["--filter", "teardown/sigterm-trap-needs-sigkill"],
        &[
            "✗ acp/teardown/eof-deaf-needs-sigterm (foreground) [timing.grace]",
            "✗ dsh-sdk/teardown/sigterm-trap-needs-sigkill (background) [timing.grace]",
            "✗ codex/teardown/sigterm-trap-needs-sigkill (foreground) [timing.grace]",
            "between stdin EOF and SIGTERM (`disposeEofGraceMs` = 200 ms)",
            "between a trapped SIGTERM and the SIGKILL (`disposeGraceMs` = 300 ms)",
        ],
    );
}

#[test]
fn a_bound_read_as_exclusive_is_caught_by_the_largest_valid_values() {
    // A provider refusing a duration of exactly 2^31 − 1 ms, or maxTokens of exactly 2^53 − 1:
    // the "past the limit" cases (one more) cannot tell; the bound itself can.
    caught(
        &["bounds-exclusive"],
        "/config/largest-valid-values",
        &[],
        &[
            "✗ acp/config/largest-valid-values (foreground) [wire.script]",
            "✗ dsh-sdk/config/largest-valid-values (background) [wire.script]",
            "✗ codex/config/largest-valid-values (foreground) [wire.script]",
            "✗ claude-code/config/largest-valid-values (background) [wire.script]",
            "start was rejected unexpectedly: \"AcpRunFailure\": \"subagent-acp: Subagent failure (provider: ACP; stage: initialize; category: configuration)\"",
        ],
    );
}

#[test]
fn a_child_started_before_its_configuration_is_read_is_caught() {
    // The rejection is the same text either way: only that something ran tells them apart.
    caught(
        &["validate-after-spawn"],
        "/config/dispose-grace-negative",
        &[],
        &[
            // Which check a run names first depends on when its child was seen.
            "✗ acp/config/dispose-grace-negative (foreground) [",
            "✗ dsh-sdk/config/dispose-grace-negative (background) [",
            "✗ codex/config/dispose-grace-negative (foreground) [",
            "✗ claude-code/config/dispose-grace-negative (background) [",
            "✗ [process.nothing-spawned] the start was rejected for its configuration, yet the run spawned: pid ",
        ],
    );
}

#[test]
fn a_providers_own_working_directory_never_read_is_caught() {
    // ACP and the DSH SDK take a `cwd` of their own over the parent's: ignored, the child runs
    // in the parent's folder (the wire names it) and an invalid one starts anyway.
    caught(
        &["own-cwd-ignored"],
        "/config/own-cwd-",
        &[],
        &[
            "✗ acp/config/own-cwd-relative (foreground) [wire.violation]",
            "✗ dsh-sdk/config/own-cwd-relative (background) [wire.violation]",
            "✗ acp/config/own-cwd-blank (background) [wire.violation]",
            "✗ dsh-sdk/config/own-cwd-file (foreground) [wire.violation]",
        ],
    );
}

#[test]
fn a_dispose_mid_prompt_without_session_cancel_is_caught() {
    // Disposal while the prompt runs must cancel on the wire before stdin EOF, whether the agent
    // answers the cancel, answers it late or never does.
    caught(
        &["skip-session-cancel"],
        "acp/cancel/",
        &[],
        &[
            "✗ acp/cancel/answered-late (foreground) [wire.violation]",
            "✗ acp/cancel/eof-without-answer (background) [wire.violation]",
            "✗ acp/cancel/local-during-prompt (foreground) [wire.violation]",
        ],
    );
}

#[test]
fn a_host_decoding_each_read_on_its_own_is_caught() {
    // Node's `chunk.toString()` per `data` event: a character the read cut turns into U+FFFD.
    caught(
        &["decode-per-read"],
        "/wire/split-inside-utf8",
        &[],
        &[
            "✗ acp/wire/split-inside-utf8 (foreground) [expect.output]",
            "✗ dsh-sdk/wire/split-inside-utf8 (background) [expect.output]",
            "✗ codex/wire/split-inside-utf8 (foreground) [expect.output]",
            "✗ claude-code/wire/split-inside-utf8 (background) [expect.output]",
            "\u{FFFD}",
        ],
    );
}

#[test]
fn a_host_parsing_each_read_as_a_frame_is_caught() {
    // `JSON.parse` per `data` event: a frame split across reads, and two frames in one read,
    // are garbage.
    caught(
        &["parse-per-read"],
        "acp/wire/split-inside-",
        &[
            "--filter",
            "acp/wire/coalesced-frames",
            "--deadline-ms",
            "2000",
        ],
        &[
            "✗ acp/wire/split-inside-string (foreground) [expect.output]",
            "✗ acp/wire/split-inside-key (background) [subject.deadline]",
            "✗ acp/wire/coalesced-frames (foreground) [subject.deadline]",
        ],
    );
}

#[test]
fn a_host_with_a_64_kib_line_limit_is_caught() {
    // Python asyncio's default `readline` limit: a 1 MiB frame kills the reader, unnoticed.
    caught(
        &["line-limit-64k"],
        "/wire/frame-of-1-mib",
        &["--deadline-ms", "2000"],
        &[
            "✗ acp/wire/frame-of-1-mib (foreground) [subject.deadline]",
            "✗ dsh-sdk/wire/frame-of-1-mib (foreground) [subject.deadline]",
            "✗ codex/wire/frame-of-1-mib (background) [subject.deadline]",
            "✗ claude-code/wire/frame-of-1-mib (background) [subject.deadline]",
        ],
    );
}

/// The reference, its hello rewritten to say it is built against `versions` (a JSON object).
fn built_against(versions: &str) -> String {
    format!(
        "{} | sed -u '1s/}}$/,\"productVersions\":{versions}}}/'",
        defective(&[])
    )
}

#[test]
fn the_fakes_speak_the_versions_the_subjects_hello_names() {
    // A host pinned to Codex 0.169.0 says so once, in its hello: the upgrade scenarios that
    // need that version run without a flag, and the report names what the fakes spoke.
    let subject = built_against(r#"{"codex":"0.169.0"}"#);
    let (code, out, err) = run(&["--filter", "codex/upgrade/", "--subject", &subject]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("fakes speak: Codex app-server 0.169.0"),
        "{out}"
    );
    assert!(
        out.contains("14 passed, 0 failed, 2 skipped"),
        "only 0.171.0's: {out}"
    );
    // The command line wins over the hello.
    let (code, out, err) = run(&[
        "--filter",
        "codex/upgrade/",
        "--subject",
        &subject,
        "--product-version",
        "codex=0.171.0",
        "--allow-skips",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("fakes speak: Codex app-server 0.171.0"),
        "{out}"
    );
    // A version no fake speaks stops the suite before anything runs, naming the known ones.
    let subject = built_against(r#"{"codex":"9.9.9"}"#);
    let (code, out, err) = run(&["--filter", "codex/upgrade/", "--subject", &subject]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("the subject's hello: `productVersions` names codex=9.9.9:")
            && err.contains("0.169.0"),
        "{err}"
    );
}

#[test]
fn a_host_that_chokes_on_what_every_real_codex_run_sends_is_caught() {
    // Every real Codex run sends a configuration warning after `initialize` and token and
    // rate-limit bookkeeping after each model answer; the fake sends them too (unless a
    // script says `ambient = false`), so a host that throws on a method it has no handler for
    // fails where it would fail in production.
    caught(
        &["codex-strict-notifications"],
        "codex/success/final-answer",
        &[],
        &[
            "✗ codex/success/final-answer (foreground) [wire.violation]",
            "✗ [expect.start-error] start was rejected unexpectedly: \"CodexRunFailure\"",
            "0 passed, 2 failed",
        ],
    );
}

#[test]
fn a_provider_impatient_with_a_slow_initialize_is_caught() {
    // The real DSH SDK runtime answers initialize in about 0.9 s idle and 2.4 s under load; a
    // provider that gives up after 1 s fails where a loaded machine would fail it.
    caught(
        &["dsh-initialize-patience"],
        "dsh-sdk/handshake/slow-initialize",
        &[],
        &[
            "✗ [expect.start-error] start was rejected unexpectedly: \"DshSdkRunFailure\"",
            "0 passed, 2 failed",
        ],
    );
}

#[test]
fn a_frame_breaking_the_client_side_of_the_schema_is_caught() {
    // A `session/cancel` with its member misspelled: the lenient runtime ignores it and no
    // script step names it (it is tolerated at dispose), so only the schema's client side
    // says it — live, and again from the recorded wire.
    caught(
        &["cancel-misspelled-session"],
        "acp/success/end-turn",
        &[],
        &[
            "✗ acp/success/end-turn (foreground) [wire.violation]",
            "breaks the client side of the schema (CancelNotification: \"sessionId\" is a required property",
        ],
    );
}

#[test]
fn an_output_failure_another_known_version_explains_says_so() {
    // A host built on DSH SDK 0.1.x reads the text from the chunks 0.2 no longer streams: its
    // output cases fail, and each says under which version it would pass.
    let out = caught(
        &["partial-from-chunks-only"],
        "dsh-sdk/output/raw-stream-deltas",
        &[],
        &[
            "✗ dsh-sdk/output/raw-stream-deltas (foreground) [expect.output]",
            "dsh-sdk/output/raw-stream-deltas (foreground): passes with the fake speaking DSH SDK runtime 0.1.1 — is the host built on it? Say so with `--product-version dsh-sdk=0.1.1`, or `productVersions` in its hello",
        ],
    );
    assert!(
        out.contains("0 passed, 2 failed"),
        "the verdict stands: {out}"
    );
    // A version someone chose is what the host is judged against: no second guess.
    let out = caught(
        &["partial-from-chunks-only"],
        "dsh-sdk/output/raw-stream-deltas",
        &["--product-version", "dsh-sdk=0.2.1rc2"],
        &["✗ dsh-sdk/output/raw-stream-deltas (foreground) [expect.output]"],
    );
    assert!(!out.contains("passes with the fake speaking"), "{out}");
    // The reference's own output failures under a wrong decoding are not the version's.
    let out = caught(
        &["decode-per-read"],
        "dsh-sdk/wire/split-inside-utf8",
        &[],
        &["[expect.output]"],
    );
    assert!(!out.contains("passes with the fake speaking"), "{out}");
}

#[test]
fn failures_are_grouped_by_cause_before_any_detail_and_the_json_agrees() {
    // Two defects fail twelve runs of these families: told as a handful of causes, largest
    // first, before the first failure's detail — and the JSON's causes are the same ones.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let subject = defective(&["empty-text-block", "codex-strict-notifications"]);
    let (code, out, err) = run(&[
        "--filter",
        "codex/success/",
        "--filter",
        "acp/success/",
        "--subject",
        &subject,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    let causes_at = out
        .find("cause(s) of 12 failed run(s), largest first")
        .expect(&out);
    let first_detail = out.find("\n━━ ").expect(&out);
    assert!(causes_at < first_detail, "{out}");
    assert!(
        out.contains(
            "  1. 10 run(s) · codex · success\n     [expect.start-error] start was rejected unexpectedly: \"…\": \"…\"\n       requirement (record): seed 000 and seed 001: start publishes only after the handshake"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "\n     [expect.stop-reason] no result was reported\n       requirement (record): seed 000 (ACP stop reasons"
        ),
        "{out}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let causes = report["causes"].as_array().unwrap();
    let printed = out
        .lines()
        .filter(|l| {
            l.trim_start()
                .split_once(". ")
                .is_some_and(|(n, rest)| n.parse::<usize>().is_ok() && rest.contains(" run(s) · "))
        })
        .count();
    assert_eq!(causes.len(), printed, "{out}");
    assert_eq!(causes[0]["runs"].as_array().unwrap().len(), 10);
    assert!(
        causes
            .iter()
            .any(|c| c["patterns"][0]["check"] == "contract.output"
                && c["providers"] == serde_json::json!(["acp"])),
        "{causes:?}"
    );
}
