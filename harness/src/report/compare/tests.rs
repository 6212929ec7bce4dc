use serde_json::{Value, json};

use super::*;

/// One run of a hand-made report: id, verdict, and when it fails its findings' patterns.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A report as `conform run --json` writes one: each failing case's `causePatterns`, and
/// `causes` grouped from them as a run groups its own.
fn report(subject: &str, cases: &[Case]) -> Value {
    let cases: Vec<Value> = cases
        .iter()
        .map(|(id, verdict, patterns)| {
            json!({
                "id": id,
                "mode": "foreground",
                "provider": id.split('/').next().unwrap(),
                "verdict": verdict,
                "causePatterns": (*verdict == "fail").then(|| patterns.iter()
                    .map(|(check, pattern)| json!({"check": check, "pattern": pattern}))
                    .collect::<Vec<_>>()),
            })
        })
        .collect();
    let causes = crate::report::causes::to_json(&crate::report::causes::of(
        &crate::report::causes::failed_in_json(&cases),
    ));
    json!({"subject": subject, "catalog": "c1", "generatedAt": "2026-01-01T00:00:00Z", "causes": causes, "cases": cases})
}

const STOP: &[(&str, &str)] = &[("expect.stop-reason", "stop reason `error`")];
const EMPTY: &[(&str, &str)] = &[("contract.output", "an empty text block")];

fn run(id: &str) -> Run {
    (id.to_owned(), "foreground".to_owned())
}

fn first_checks(list: &[CauseChange]) -> Vec<(&str, usize, usize)> {
    list.iter()
        .map(|c| (c.patterns[0].0.as_str(), c.before, c.after))
        .collect()
}

#[test]
fn a_fixed_case_and_a_newly_failing_one_say_what_they_were() {
    let before = report(
        "ref",
        &[
            ("acp/stop/a", "fail", STOP),
            ("acp/output/b", "pass", &[]),
            ("acp/output/c", "skip", &[]),
        ],
    );
    let now = report(
        "ref",
        &[
            ("acp/stop/a", "pass", &[]),
            ("acp/output/b", "fail", EMPTY),
            ("acp/output/c", "fail", EMPTY),
            ("acp/output/d", "fail", EMPTY),
        ],
    );
    let c = compare(&before, &now).unwrap();
    assert_eq!(
        c.fixed,
        [RunChange {
            run: run("acp/stop/a"),
            before: "fail".into(),
            now: "pass".into()
        }]
    );
    let news: Vec<(&str, &str)> = c
        .new_failures
        .iter()
        .map(|ch| (ch.run.0.as_str(), ch.before.as_str()))
        .collect();
    assert_eq!(
        news,
        [
            ("acp/output/b", "pass"),
            ("acp/output/c", "skip"),
            ("acp/output/d", "absent")
        ]
    );
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    let text = c.render();
    assert!(
        text.contains("  ✓ acp/stop/a (foreground) — failed before\n"),
        "{text}"
    );
    assert!(
        text.contains("  ✗ acp/output/d (foreground) — not in the previous report\n"),
        "{text}"
    );
    let j = c.to_json();
    assert_eq!(j["fixed"][0]["id"], "acp/stop/a");
    assert_eq!(j["newFailures"][1]["before"], "skip");
}

#[test]
fn a_cause_that_fails_more_runs_grew_and_one_that_fails_fewer_shrank() {
    let before = report(
        "ref",
        &[
            ("acp/stop/a", "fail", STOP),
            ("acp/output/b", "fail", EMPTY),
            ("acp/output/c", "fail", EMPTY),
            ("acp/stop/d", "pass", &[]),
        ],
    );
    let now = report(
        "ref",
        &[
            ("acp/stop/a", "fail", STOP),
            ("acp/output/b", "fail", EMPTY),
            ("acp/output/c", "pass", &[]),
            ("acp/stop/d", "fail", STOP),
        ],
    );
    let c = compare(&before, &now).unwrap();
    assert_eq!(
        first_checks(&c.grown_causes),
        [("expect.stop-reason", 1, 2)]
    );
    assert_eq!(first_checks(&c.shrunk_causes), [("contract.output", 2, 1)]);
    assert!(c.new_causes.is_empty() && c.gone_causes.is_empty());
    assert_eq!(c.still_failing, [run("acp/stop/a"), run("acp/output/b")]);
    assert!(
        c.render().contains("  grew   1 → 2 run(s)\n"),
        "{}",
        c.render()
    );
}

#[test]
fn a_cause_no_run_failed_before_is_new() {
    let before = report("ref", &[("acp/output/b", "pass", &[])]);
    let now = report("ref", &[("acp/output/b", "fail", EMPTY)]);
    let c = compare(&before, &now).unwrap();
    assert_eq!(first_checks(&c.new_causes), [("contract.output", 0, 1)]);
    assert_eq!(c.new_causes[0].runs, [run("acp/output/b")]);
    assert_eq!(c.to_json()["causes"]["new"][0]["after"], 1);
}

#[test]
fn a_cause_none_of_whose_patterns_fails_now_is_gone() {
    let before = report(
        "ref",
        &[("acp/stop/a", "fail", STOP), ("acp/stop/d", "fail", STOP)],
    );
    let now = report(
        "ref",
        &[("acp/stop/a", "pass", &[]), ("acp/stop/d", "pass", &[])],
    );
    let c = compare(&before, &now).unwrap();
    assert_eq!(first_checks(&c.gone_causes), [("expect.stop-reason", 2, 0)]);
    assert_eq!(c.to_json()["causes"]["gone"][0]["before"], 2);
}

#[test]
fn a_cause_regrouped_is_the_same_cause_counted_by_its_patterns() {
    // Two patterns failing the same runs are one cause; once one fails a third run they are
    // two: the one grew, the other is unchanged, nothing is new or gone.
    let both: &[(&str, &str)] = &[("wire.violation", "stdin closed"), STOP[0]];
    let before = report(
        "ref",
        &[
            ("codex/x/a", "fail", both),
            ("codex/x/b", "fail", both),
            ("codex/x/c", "pass", &[]),
        ],
    );
    let now = report(
        "ref",
        &[
            ("codex/x/a", "fail", both),
            ("codex/x/b", "fail", both),
            ("codex/x/c", "fail", STOP),
        ],
    );
    let c = compare(&before, &now).unwrap();
    assert_eq!(
        first_checks(&c.grown_causes),
        [("expect.stop-reason", 2, 3)]
    );
    assert!(c.new_causes.is_empty() && c.gone_causes.is_empty(), "{c:?}");
}

#[test]
fn a_run_judged_before_and_skipped_or_absent_now_is_no_longer_run() {
    let before = report(
        "ref",
        &[
            ("acp/stop/a", "pass", &[]),
            ("acp/stop/b", "fail", STOP),
            ("acp/stop/c", "skip", &[]),
        ],
    );
    let now = report("ref", &[("acp/stop/a", "skip", &[])]);
    let c = compare(&before, &now).unwrap();
    let gone: Vec<(&str, &str, &str)> = c
        .not_run_now
        .iter()
        .map(|ch| (ch.run.0.as_str(), ch.before.as_str(), ch.now.as_str()))
        .collect();
    assert_eq!(
        gone,
        [
            ("acp/stop/a", "pass", "skip"),
            ("acp/stop/b", "fail", "absent")
        ]
    );
    assert!(
        c.fixed.is_empty(),
        "a failure that no longer runs is not fixed"
    );
}

#[test]
fn another_subject_or_catalog_is_noted_and_still_compared() {
    let before = report("old-host", &[("acp/stop/a", "fail", STOP)]);
    let mut now = report("new-host", &[("acp/stop/a", "pass", &[])]);
    now["catalog"] = json!("c2");
    let c = compare(&before, &now).unwrap();
    assert_eq!(
        c.notes,
        [
            "the previous report ran another subject: `old-host` (now `new-host`)",
            "the previous report was judged by another catalog: c1 (now c2)"
        ]
    );
    assert_eq!(c.fixed.len(), 1);
    assert!(
        c.render()
            .contains("note: the previous report ran another subject: `old-host`"),
        "{}",
        c.render()
    );
}

#[test]
fn a_long_list_names_ten_and_counts_the_rest() {
    let ids: Vec<String> = (0..13).map(|i| format!("acp/output/{i:02}")).collect();
    let before = report(
        "ref",
        &ids.iter()
            .map(|id| (id.as_str(), "pass", &[][..]))
            .collect::<Vec<_>>(),
    );
    let now = report(
        "ref",
        &ids.iter()
            .map(|id| (id.as_str(), "fail", EMPTY))
            .collect::<Vec<_>>(),
    );
    let text = compare(&before, &now).unwrap().render();
    assert_eq!(text.matches("  ✗ acp/output/").count(), 10, "{text}");
    assert!(
        text.contains("  and 3 more (the JSON report's comparedWith lists them all)"),
        "{text}"
    );
}

#[test]
fn a_report_without_causes_is_grouped_from_its_cases() {
    let mut before = report("ref", &[("acp/stop/a", "fail", STOP)]);
    before.as_object_mut().unwrap().remove("causes");
    let now = report("ref", &[("acp/stop/a", "pass", &[])]);
    let c = compare(&before, &now).unwrap();
    assert_eq!(first_checks(&c.gone_causes), [("expect.stop-reason", 1, 0)]);
}

#[test]
fn a_malformed_report_is_said_never_a_panic() {
    let good = report("ref", &[("acp/stop/a", "pass", &[])]);
    for (bad, why) in [
        (json!([1, 2]), "not a JSON object"),
        (json!({"subject": "x"}), "no `cases` list"),
        (
            json!({"cases": [{"id": "a", "mode": "foreground"}]}),
            "case 1 has no `id`, `mode` or `verdict`",
        ),
        (
            json!({"cases": [{"id": "a", "mode": "foreground", "verdict": "great"}]}),
            "unknown verdict `great`",
        ),
        (json!({"cases": [], "causes": {}}), "`causes` is not a list"),
        (
            json!({"cases": [], "causes": [{"runs": []}]}),
            "a cause has no `patterns` or `runs` list",
        ),
    ] {
        let e = compare(&bad, &good).unwrap_err().to_string();
        assert!(e.starts_with("the previous report: "), "{e}");
        assert!(e.contains(why), "{e} lacks {why}");
    }

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("prev.json");
    std::fs::write(&file, "{\"cases\": [").unwrap();
    let e = load(&file).unwrap_err();
    assert!(matches!(e, CompareError::NotJson(..)), "{e:?}");
    assert!(e.to_string().contains(&file.display().to_string()), "{e}");
    std::fs::write(&file, "{}").unwrap();
    let e = load(&file).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "--compare {}: not a conform JSON report: no `cases` list",
            file.display()
        )
    );
    let missing = dir.path().join("missing.json");
    assert!(matches!(load(&missing), Err(CompareError::Read(..))));
}
