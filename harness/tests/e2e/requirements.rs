//! Every requirement says where it comes from — a decision record, the wire or adapter
//! protocol, or conform's own practice — and `--strictness` judges only the kinds asked for,
//! listing the others as advisories.

use crate::common;
use common::{conform, defective, run, stdout};

#[test]
fn list_checks_shows_each_requirements_kind_and_source() {
    let out = conform().args(["list", "--checks"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let line = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no {id} in:\n{text}"))
            .to_owned()
    };
    assert!(line("contract.bound").contains("[record: seed 000 and seed 001: "));
    assert!(line("wire.violation").contains("[protocol: the runtime's wire protocol"));
    assert!(line("process.reaped").contains("[practice: conform: "));
    assert!(line("harness.fake").contains("[harness: conform: "));
    for l in text.lines() {
        assert!(
            ["[record: ", "[protocol: ", "[practice: ", "[harness: "]
                .iter()
                .any(|k| l.contains(k)),
            "a check without a kind of source: {l}"
        );
    }
}

#[test]
fn strictness_records_turns_a_practice_failure_into_an_advisory() {
    // Orphans left unreaped at the claim: conform's practice, no record's clause.
    let subject = defective(&["reap-orphans-late"]);
    let args = [
        "--filter",
        "acp/settle/double-forked-daemon",
        "--subject",
        &subject,
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("[process.reaped] at `settled`, zombies the subject must reap"),
        "{out}"
    );
    assert!(out.contains("    requirement (practice): "), "{out}");
    let strict: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--strictness", "records"])
        .collect();
    let (code, out, err) = run(&strict);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.contains("strictness: records (failures of other requirements are advisories)"),
        "{out}"
    );
    assert!(
        out.contains("⚠ advisory [process.reaped] at `settled`, zombies the subject must reap"),
        "{out}"
    );
    assert!(out.contains("2 passed, 0 failed"), "{out}");
}

#[test]
fn a_scenario_says_where_its_own_demands_come_from() {
    // A daemon that left the runtime's group: the records are silent on whether dispose must
    // end it, so the case says it is conform's practice — a record-level run lets it pass.
    let subject = defective(&["process-group-only-kill"]);
    let args = [
        "--filter",
        "acp/settle/double-forked-daemon",
        "--subject",
        &subject,
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("    requirement (practice): conform practice: seeds 000 and 001 demand the managed process tree"),
        "{out}"
    );
    let records: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--strictness", "records"])
        .collect();
    let (code, out, err) = run(&records);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("⚠ advisory [process.settle-claim]"), "{out}");
}

#[test]
fn a_requirement_naming_no_check_is_rejected_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("acp")).unwrap();
    std::fs::write(
        root.join("acp/case.toml"),
        "title = \"t\"\nprovider = \"acp\"\n[[fake.steps]]\nstop = \"end_turn\"\n[expect]\nstop_reason = \"completed\"\n[requirement]\nlevel = \"practice\"\nsource = \"s\"\nchecks = [\"process.nope\"]\n",
    )
    .unwrap();
    let out = conform()
        .args(["list", "--scenarios"])
        .arg(root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = common::stderr(&out);
    assert!(
        err.contains("acp/case.toml:10:11: `process.nope` is no check id"),
        "{err}"
    );
}

#[test]
fn a_run_that_never_delivered_its_result_fails_at_the_level_of_what_it_kept_from_being_judged() {
    // A hang is the adapter protocol's `subject.deadline`, but it kept the records' result
    // from being judged: it fails at `--strictness records` (ACP: seed 000), and its source
    // says why.
    let subject = defective(&["hang-after-dispatch"]);
    let (code, out, err) = run(&[
        "--filter",
        "acp/stop/refusal",
        "--subject",
        &subject,
        "--strictness",
        "records",
        "-j",
        "1",
        "--deadline-ms",
        "1500",
    ]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(
        out.contains("✗ [subject.deadline] the run did not finish"),
        "{out}"
    );
    // The defect hangs the subject's first dispatched run, whichever mode that is: a
    // foreground hang kept the records' stop reason (or start error) from being judged, a
    // background one seed 003's delivery first.
    assert!(
        [
            "it kept `expect.start-error` from being judged, which is record",
            "it kept `expect.stop-reason` from being judged, which is record",
            "it kept `delivery.completion` from being judged, which is record (seed 003",
        ]
        .iter()
        .any(|kept| out.contains(kept)),
        "{out}"
    );
}

#[test]
fn every_record_level_expectation_names_its_clause() {
    // `conform list --levels`: each scenario's expectations by kind, records first. A record's
    // expectation must name the record it rests on; what rests on conform's reading says so.
    let out = conform().args(["list", "--levels"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let records: Vec<&str> = text.lines().filter(|l| l.starts_with("record ")).collect();
    assert!(records.len() > 1000, "{}", records.len());
    for line in &records {
        assert!(
            ["seed 000", "seed 001", "seed 003"]
                .iter()
                .any(|s| line.contains(s)),
            "a record-level expectation without its clause: {line}"
        );
    }
    let level_of = |id: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(id))
            .filter_map(|l| l.split_whitespace().next())
            .collect()
    };
    // Conform's readings, said as such: a pipe held from outside the tree, a configuration
    // surface no record lists (the background delivery stays seed 003's).
    for id in [
        "acp/teardown/stdout-held-outside-cleanup-fails",
        "dsh-sdk/config/model-blank",
        "dsh-sdk/stage/initialize-blank-provider",
    ] {
        let levels = level_of(id);
        assert!(levels.contains(&"practice"), "{id}: {levels:?}");
        assert_eq!(
            levels.iter().filter(|l| **l == "record").count(),
            1,
            "{id}: only the delivery is a record's: {levels:?}"
        );
    }
    // The DSH SDK's unanswered `shutdown`, decided from seed 000's shutdown row.
    assert!(text.lines().any(|l| l.starts_with("record ")
        && l.contains("dsh-sdk/shutdown/hangs")
        && l.contains("seed 000, the DSH SDK shutdown row")));
}

/// `conform list --waits`: a wait over 200 ms with no reason fails the lint (exit 1, named
/// UNDECLARED); once `[waits]` says why, it passes and shows the reason.
#[test]
fn list_waits_fails_on_a_long_wait_without_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("acp")).unwrap();
    let case = "title = \"t\"\nprovider = \"acp\"\n[subject]\ndispose_grace_ms = 900\n[[fake.steps]]\nstop = \"end_turn\"\n[expect]\nstop_reason = \"completed\"\n";
    let list = || {
        conform()
            .args(["list", "--waits", "--scenarios"])
            .arg(root)
            .output()
            .unwrap()
    };
    std::fs::write(root.join("acp/case.toml"), case).unwrap();
    let out = list();
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("acp/case  dispose_grace_ms = 900  UNDECLARED"),
        "{text}"
    );
    assert!(
        text.contains("1 wait(s) over 200 ms without a reason"),
        "{text}"
    );
    let declared = format!("{case}[waits]\ndispose_grace_ms = \"a margin, never walked\"\n");
    std::fs::write(root.join("acp/case.toml"), declared).unwrap();
    let out = list();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert!(stdout(&out).contains("dispose_grace_ms = 900  a margin, never walked"));
}
