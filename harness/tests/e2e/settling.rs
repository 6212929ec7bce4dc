//! Settling judged from ground truth: each way a provider can claim a tree is gone while it is
//! not (a process-group-only kill, `settled` before the ladder finished, no SIGKILL rung,
//! orphans left unreaped) is caught by a named `process.*` check; the report shows the tree at
//! the claim with its timing; and the whole catalog leaves nothing behind.

use crate::common;
use common::{defective, run};

/// Runs `filter` against the reference with `defect`; asserts failure and each expected line.
fn caught(defect: &str, filter: &str, expected: &[&str]) -> String {
    let subject = defective(&[defect]);
    let (code, out, err) = run(&["--filter", filter, "--subject", &subject]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    for line in expected {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    out
}

/// The pids a finding names after `prefix` (`pid 123 (…)`, comma-separated).
fn pids_after(out: &str, prefix: &str) -> Vec<i32> {
    let at = out.find(prefix).unwrap_or_else(|| panic!("{out}")) + prefix.len();
    let line = out[at..].lines().next().unwrap_or_default();
    line.split("pid ")
        .skip(1)
        .filter_map(|p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })
        .collect()
}

fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn a_process_group_only_kill_is_caught_even_for_a_daemon_that_never_registered() {
    let out = caught(
        "process-group-only-kill",
        "acp/settle/unregistered-daemon",
        &[
            "[process.settle-claim] `settled` came while processes of the run still ran: pid ",
            "--unregistered; marked with the run's id)",
            "[process.settled] still running after the subject said the run was over (killed by the harness): pid ",
        ],
    );
    for pid in pids_after(&out, "[process.settled] ") {
        assert!(!running(pid), "the harness left pid {pid} running");
    }
}

#[test]
fn a_process_group_only_kill_leaves_the_stdout_held_by_an_escaped_grandchild() {
    caught(
        "process-group-only-kill",
        "acp/settle/escaped-grandchild-killed-on-rollback",
        &[
            "[process.rollback] start was rejected while the child was still running",
            "[process.pipes] at `start_rejected`, the runtime's stdio pipes are still held: pid ",
            " holds pipe:[",
        ],
    );
}

#[test]
fn settled_before_the_ladder_finished_is_caught() {
    caught(
        "settled-early",
        "acp/settle/runtime-gone-grandchild-lingers",
        &["[process.settle-claim] `settled` came while processes of the run still ran: pid "],
    );
}

#[test]
fn a_ladder_without_its_sigkill_rung_is_caught() {
    caught(
        "no-sigkill-rung",
        "acp/teardown/sigterm-trap-needs-sigkill",
        &[
            "[process.settled] still running after the subject said the run was over (killed by the harness): pid ",
        ],
    );
}

#[test]
fn orphans_left_unreaped_at_the_claim_are_caught() {
    caught(
        "reap-orphans-late",
        "acp/settle/double-forked-daemon",
        &[
            "[process.reaped] at `settled`, zombies the subject must reap: pid ",
            "had exited but was not reaped by the subject (pid ",
        ],
    );
}

#[test]
fn the_report_shows_the_tree_at_the_claim_and_its_timing() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let (code, out, err) = run(&[
        "--filter",
        "dsh-sdk/settle/launcher-chain",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for case in report["cases"].as_array().unwrap() {
        let settle = &case["settle"];
        assert_eq!(settle["claim"]["what"], "settled", "{settle}");
        let members = settle["claim"]["members"].as_array().unwrap();
        // The shell in front, the runtime and its grandchild: all gone at the claim.
        assert_eq!(members.len(), 3, "{settle}");
        assert!(members.iter().all(|m| m["state"] == "gone"), "{settle}");
        // Its command line, or — first seen only once it had exited, on a loaded machine — its
        // name.
        assert!(
            members.iter().any(|m| m["how"] != "registered"
                && (m["command"].as_str().unwrap().starts_with("/bin/sh -c")
                    || m["command"] == "[sh]")),
            "the launcher is the run's: {settle}"
        );
        let claim_at = settle["claim"]["atMs"].as_i64().unwrap();
        let last_exit = settle["lastExitAtMs"].as_i64().unwrap();
        assert_eq!(settle["claimAfterLastExitMs"], claim_at - last_exit);
        assert!(claim_at >= last_exit, "the claim came first: {settle}");
        assert_eq!(settle["leftovers"], serde_json::json!([]));
    }
}

#[test]
fn a_helper_with_no_run_id_in_its_arguments_is_found_by_the_mark_it_inherited() {
    let out = caught(
        "process-group-only-kill",
        "codex/settle/anonymous-daemon",
        &[
            "[process.settle-claim] `settled` came while processes of the run still ran: pid ",
            "sleep 86400; the run's mark in its environment)",
        ],
    );
    for pid in pids_after(&out, "[process.settled] ") {
        assert!(!running(pid), "the harness left pid {pid} running");
    }
}

/// The suite's cgroup folder named in the report is gone.
fn cgroup_removed(report: &serde_json::Value) -> bool {
    let dir = report["cgroup"]["dir"]
        .as_str()
        .expect("the suite's cgroup folder");
    !std::path::Path::new(dir).exists()
}

/// Runs with `--cgroup` and a JSON report; `None` (said loudly) where the mode is unavailable.
fn with_cgroup(args: &[&str]) -> Option<(Option<i32>, String, serde_json::Value)> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let mut all = vec!["--cgroup", "--json", json.to_str().unwrap()];
    all.extend_from_slice(args);
    let (code, out, err) = run(&all);
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
            .unwrap_or_else(|e| panic!("no JSON report ({e}):\n{out}\n{err}"));
    if report["cgroup"]["mode"] == "unavailable" {
        eprintln!(
            "SKIPPED: cgroup mode unavailable here: {}",
            report["cgroup"]["why"]
        );
        assert!(out.contains("cgroup mode: unavailable ("), "{out}");
        return None;
    }
    assert_eq!(report["cgroup"]["mode"], "on", "{report}");
    Some((code, out, report))
}

#[test]
fn in_cgroup_mode_the_kernel_proves_each_tree_gone_and_nothing_is_left() {
    let Some((code, out, report)) = with_cgroup(&["--filter", "/settle/"]) else {
        return;
    };
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("cgroup mode: on ("), "{out}");
    for case in report["cases"].as_array().unwrap() {
        let claim = &case["settle"]["claim"];
        assert_eq!(
            claim["cgroup"]["populated"], false,
            "{}: {claim}",
            case["id"]
        );
    }
    assert!(
        cgroup_removed(&report),
        "the suite's cgroup is left: {}",
        report["cgroup"]
    );
}

#[test]
fn in_cgroup_mode_a_process_group_only_kill_is_named_from_the_cgroup() {
    let subject = defective(&["process-group-only-kill"]);
    let Some((code, out, report)) = with_cgroup(&[
        "--filter",
        "dsh-sdk/settle/anonymous-daemon",
        "--subject",
        &subject,
    ]) else {
        return;
    };
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("; in the run's cgroup)"),
        "the straggler is named as the cgroup's: {out}"
    );
    for case in report["cases"].as_array().unwrap() {
        let claim = &case["settle"]["claim"];
        assert_eq!(claim["cgroup"]["populated"], true, "{claim}");
        assert!(
            !claim["cgroup"]["pids"].as_array().unwrap().is_empty(),
            "{claim}"
        );
    }
    assert!(
        cgroup_removed(&report),
        "the suite's cgroup is left: {}",
        report["cgroup"]
    );
}

#[test]
fn a_cgroup_parent_that_is_no_cgroup_makes_the_mode_unavailable_and_says_why() {
    let parent = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let (code, out, err) = run(&[
        "--cgroup",
        "--cgroup-parent",
        parent.path().to_str().unwrap(),
        "--filter",
        "acp/settle/launcher-chain",
        "--json",
        json.to_str().unwrap(),
    ]);
    // The suite still runs, judged from /proc alone.
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("cgroup mode: unavailable ("), "{out}");
    assert!(out.contains("has no cgroup.kill"), "{out}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["cgroup"]["mode"], "unavailable");
    // Nothing of the attempt is left in the folder.
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}
