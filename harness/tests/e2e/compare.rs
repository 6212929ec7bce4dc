//! `--compare`: a run that fixes one seeded defect of the reference and adds another, against
//! the run before it — the terminal, the JSON report, a merge and the page all tell the first
//! defect's cases fixed and its cause gone, the second's cases new failures and its cause new.

use std::path::Path;

use crate::common;
use common::{conform, defective, run, stderr, stdout};

/// Two families, a few seconds: defect A fails `acp/stop/max-tokens`, B `acp/success/empty-output`.
const FILTERS: [&str; 4] = ["--filter", "acp/stop/", "--filter", "acp/success/"];
const A: &str = "max-tokens-as-error";
const A_CASE: &str = "acp/stop/max-tokens";
const A_CAUSE: &str = "[expect.stop-reason] stop reason `error`, expected `max-tokens`";
const B: &str = "empty-text-block";
const B_CASE: &str = "acp/success/empty-output";
const B_CAUSE: &str = "[contract.output] the output holds an empty text block";

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `(id, mode)` of each run in a comparison's list.
fn runs(list: &serde_json::Value) -> Vec<(String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["mode"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn both_modes(id: &str) -> Vec<(String, String)> {
    ["foreground", "background"]
        .map(|m| (id.to_owned(), m.to_owned()))
        .to_vec()
}

#[test]
fn a_run_that_fixes_one_defect_and_adds_another_tells_both() {
    let dir = tempfile::tempdir().unwrap();
    let (a_json, b_json) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let path = |p: &Path| p.to_str().unwrap().to_owned();

    let subject_a = defective(&[A]);
    let mut args = FILTERS.to_vec();
    let a = path(&a_json);
    args.extend(["--subject", &subject_a, "--json", &a]);
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(!out.contains("since the previous run"), "{out}");

    let subject_b = defective(&[B]);
    let mut args = FILTERS.to_vec();
    let b = path(&b_json);
    args.extend(["--subject", &subject_b, "--compare", &a, "--json", &b]);
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(1), "{out}\n{err}");

    // The terminal: after the run's own report, what changed since.
    let since = &out[out.find("\n━━ since the previous run (").expect(&out)..];
    assert!(since.contains(&format!("({a}, written ")), "{since}");
    // Defect A was part of the subject's command line: another subject, said and still compared.
    assert!(
        since.contains("note: the previous report ran another subject: "),
        "{since}"
    );
    assert!(
        since.contains("2 new failure(s), 2 fixed, 0 still failing, 0 no longer run"),
        "{since}"
    );
    // A list: the indented lines under its title.
    let section = |title: &str| -> String {
        let start = since.find(&format!("\n{title}:\n")).expect(since) + title.len() + 3;
        since[start..]
            .lines()
            .take_while(|l| l.starts_with("  "))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    assert_eq!(
        section("new failures"),
        format!(
            "  ✗ {B_CASE} (foreground) — passed before\n  ✗ {B_CASE} (background) — passed before\n"
        )
    );
    assert_eq!(
        section("fixed"),
        format!(
            "  ✓ {A_CASE} (foreground) — failed before\n  ✓ {A_CASE} (background) — failed before\n"
        )
    );
    let causes = section("causes of failure that changed, largest change first");
    let new_at = causes.find(B_CAUSE).expect(&causes);
    let gone_at = causes.find(A_CAUSE).expect(&causes);
    assert!(
        causes[..new_at].ends_with("  new    0 → 2 run(s)\n         "),
        "{causes}"
    );
    assert!(
        causes[..gone_at].ends_with("  gone   2 → 0 run(s)\n         "),
        "{causes}"
    );

    // The JSON report agrees.
    let report = read_json(&b_json);
    let compared = &report["comparedWith"];
    assert_eq!(compared["file"], a.as_str());
    assert_eq!(runs(&compared["fixed"]), both_modes(A_CASE));
    assert_eq!(runs(&compared["newFailures"]), both_modes(B_CASE));
    assert!(
        compared["newFailures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["before"] == "pass"),
        "{compared}"
    );
    let first_pattern = |kind: &str| -> Vec<String> {
        compared["causes"][kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "[{}] {}",
                    c["patterns"][0]["check"].as_str().unwrap(),
                    c["patterns"][0]["pattern"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert!(
        first_pattern("new").iter().any(|p| p.starts_with(B_CAUSE)),
        "{compared}"
    );
    assert!(
        first_pattern("gone").iter().any(|p| p == A_CAUSE),
        "{compared}"
    );
    assert_eq!(compared["causes"]["grew"], serde_json::json!([]));

    // A merge of the run's (one-shard) report compares the same way.
    let shard = dir.path().join("b-shard.json");
    let mut as_shard = report.clone();
    as_shard["partition"] = "count:1/1".into();
    std::fs::write(&shard, as_shard.to_string()).unwrap();
    let merged = conform()
        .args(["report", "merge", &path(&shard), "--compare", &a])
        .output()
        .unwrap();
    let merged_out = stdout(&merged);
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    assert!(
        merged_out.contains("2 new failure(s), 2 fixed, 0 still failing, 0 no longer run"),
        "{merged_out}"
    );

    // The page: the report compared with the previous one, and a history row for each.
    let page_dir = dir.path().join("page");
    let html = conform()
        .args(["report", "html", "--compare", &a, &b, "-o"])
        .arg(&page_dir)
        .output()
        .unwrap();
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let page = std::fs::read_to_string(page_dir.join("index.html")).unwrap();
    let data = page
        .split("<script id=\"report-data\" type=\"application/json\">")
        .nth(1)
        .and_then(|d| d.split_once("</script>"))
        .map(|(json, _)| json)
        .unwrap();
    let data: serde_json::Value = serde_json::from_str(data).unwrap();
    let history = data["history"].as_array().unwrap();
    assert_eq!(
        history
            .iter()
            .map(|r| r["file"].clone())
            .collect::<Vec<_>>(),
        [a.as_str(), b.as_str()]
    );
    for row in history {
        assert_eq!(row["counts"]["failed"], 2, "{row}");
    }
    assert_eq!(runs(&data["comparedWith"]["fixed"]), both_modes(A_CASE));
}

#[test]
fn a_previous_report_that_is_none_is_a_usage_error_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("yesterday.json");
    std::fs::write(&bad, "{\"cases\": 3}").unwrap();
    let bad = bad.to_str().unwrap();
    let (code, out, err) = run(&["--filter", "acp/stop/", "--compare", bad]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains(&format!(
            "error: --compare {bad}: not a conform JSON report: no `cases` list"
        )),
        "{err}"
    );
    assert!(out.is_empty(), "nothing ran: {out}");
    let missing = dir.path().join("missing.json");
    let html = conform()
        .args(["report", "html", "--compare"])
        .arg(&missing)
        .arg(bad)
        .args(["-o", dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(html.status.code(), Some(2));
    assert!(
        stderr(&html).contains(&format!("--compare {}: cannot read it", missing.display())),
        "{}",
        stderr(&html)
    );
}
