//! What a host's CI needs to gate on conform before the host is fully conformant: a baseline of
//! known failures (fail only on new ones, and on stale entries), and the catalog split over
//! machines (`--partition`) and merged back (`conform report merge`) into the same verdicts.

mod common;
use common::{Slot, conform, defective, run, stdout};

#[test]
fn a_baseline_of_known_failures_passes_an_unlisted_one_fails_and_a_stale_entry_fails() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.toml");
    let file_arg = file.to_str().unwrap();
    let subject = defective(&["leak-raw-error"]);
    let filter = "acp/stop/";

    // Today's failures, written as a starting file.
    let (code, out, _) = run(&[
        "--filter",
        filter,
        "--subject",
        &subject,
        "--write-baseline",
        file_arg,
    ]);
    assert_eq!(code, Some(1), "{out}");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("id = \"acp/stop/refusal@foreground:expect.diagnostic\""),
        "{written}"
    );

    // Every failure listed: the run passes, each failed case reported as known.
    let (code, out, _) = run(&[
        "--filter",
        filter,
        "--subject",
        &subject,
        "--baseline",
        file_arg,
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(
            "  ~ acp/stop/refusal (foreground) [expect.diagnostic] (known: in the baseline)"
        ),
        "{out}"
    );
    assert!(out.contains(" 0 stale, "), "{out}");

    // One entry taken out: that failure is new again.
    let fewer: String = written.replacen(
        "[[known]]\nid = \"acp/stop/refusal@foreground:expect.diagnostic\"",
        "[[known]]\nid = \"acp/stop/refusal@foreground:contract.bound\"",
        1,
    );
    std::fs::write(&file, &fewer).unwrap();
    let (code, out, _) = run(&[
        "--filter",
        filter,
        "--subject",
        &subject,
        "--baseline",
        file_arg,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("acp/stop/refusal (foreground)"),
        "the new failure is shown: {out}"
    );
    assert!(
        out.contains(
            "`acp/stop/refusal@foreground:contract.bound` — the case no longer fails contract.bound"
        ),
        "an entry that matches no failure of a case that still fails is stale: {out}"
    );

    // The host fixed it all: every entry is stale, and says where it is written.
    std::fs::write(&file, &written).unwrap();
    let (code, out, _) = run(&["--filter", filter, "--baseline", file_arg]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "✗ stale: {file_arg}:9: `acp/stop/cancelled-remote@foreground:expect.diagnostic` — the case passes now"
        )),
        "{out}"
    );

    // Rewriting against the fixed host drops the stale entries.
    let again = dir.path().join("again.toml");
    run(&[
        "--filter",
        filter,
        "--baseline",
        file_arg,
        "--write-baseline",
        again.to_str().unwrap(),
    ]);
    let rewritten = std::fs::read_to_string(&again).unwrap();
    assert!(!rewritten.contains("[[known]]"), "{rewritten}");
}

#[test]
fn a_baseline_entry_outside_the_selection_is_not_stale_and_one_for_no_scenario_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.toml");
    std::fs::write(
        &file,
        "[[known]]\nid = \"codex/success/final-answer\"\nreason = \"not selected\"\n\n\
         [[known]]\nid = \"acp/stop/gone-for-good\"\nreason = \"renamed long ago\"\n",
    )
    .unwrap();
    let (code, out, _) = run(&[
        "--filter",
        "acp/stop/refusal",
        "--baseline",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("0 entr(ies) matched a failure, 1 stale, 1 not run here"),
        "{out}"
    );
    assert!(
        out.contains("`acp/stop/gone-for-good` — no scenario has this id"),
        "{out}"
    );
}

#[test]
fn a_malformed_baseline_is_named_at_its_line_and_column_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.toml");
    std::fs::write(
        &file,
        "[[known]]\nid = \"acp/stop/refusal@sideways\"\nreason = \"r\"\n",
    )
    .unwrap();
    let (code, out, err) = run(&["--baseline", file.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.contains(&format!(
            "{}:2:6: `sideways` is not a mode (foreground or background)",
            file.display()
        )),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

/// What must be equal between a merged report and an unpartitioned one, per case.
fn cases(report: &serde_json::Value) -> Vec<(String, String, String, String, Vec<String>)> {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["mode"].as_str().unwrap().to_owned(),
                c["verdict"].as_str().unwrap().to_owned(),
                c["modelVisible"].as_str().unwrap_or_default().to_owned(),
                c["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["check"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

/// What must be equal between a merged report's terminal output and the unpartitioned run's:
/// the causes, the matrix, the failures by name, the skip reasons and the counts (each run's
/// own ids, pids, paths and times aside).
fn terminal_sections(out: &str) -> Vec<String> {
    let causes = out
        .split("\nsubject: ")
        .next()
        .unwrap_or_default()
        .to_owned();
    let matrix: String = out
        .lines()
        .filter(|l| l.starts_with('│') || l.starts_with('┌') || l.starts_with('└'))
        .collect::<Vec<_>>()
        .join("\n");
    let block = |head: &str| {
        out.find(head)
            .map(|at| {
                out[at..]
                    .split("\n\n")
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .unwrap_or_default()
    };
    let counts = out
        .lines()
        .last()
        .unwrap_or_default()
        .split(" in ")
        .next()
        .unwrap_or_default()
        .to_owned();
    vec![
        causes,
        matrix,
        block(" case(s) failed"),
        block("\nskipped:\n"),
        counts,
    ]
}

fn json_of(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn three_shards_merged_equal_the_unpartitioned_run() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    // A part of the catalog with isolation groups in it, failing somewhere (so verdicts and
    // exit codes have something to agree on).
    let subject = defective(&["leak-raw-error"]);
    let select = [
        "--filter",
        "acp/stop/",
        "--filter",
        "isolation/",
        "--subject",
        &subject,
    ];
    let mut whole = select.to_vec();
    let all = at("all.json");
    whole.extend(["--json", all.to_str().unwrap()]);
    let (code, whole_out, _) = run(&whole);
    assert_eq!(code, Some(1), "{whole_out}");
    assert!(whole_out.contains(" cause(s) of "), "{whole_out}");
    let mut shards = Vec::new();
    for kind in ["count", "hash"] {
        shards.clear();
        for k in 1..=3 {
            let shard = at(&format!("{kind}-{k}.json"));
            let spec = format!("{kind}:{k}/3");
            let mut args = select.to_vec();
            args.extend(["--partition", &spec, "--json", shard.to_str().unwrap()]);
            run(&args);
            assert_eq!(json_of(&shard)["partition"], spec.as_str());
            shards.push(shard);
        }
        let merged = at(&format!("{kind}-merged.json"));
        let junit = at(&format!("{kind}-merged.xml"));
        let out = {
            let _slot = Slot::take();
            conform()
                .args(["report", "merge"])
                .args(&shards)
                .args([
                    "--json",
                    merged.to_str().unwrap(),
                    "--junit",
                    junit.to_str().unwrap(),
                ])
                .output()
                .unwrap()
        };
        assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
        // `report merge` prints what `run` printed.
        let printed = stdout(&out);
        assert_eq!(
            terminal_sections(&printed),
            terminal_sections(&whole_out),
            "{kind}: the merged terminal report\n{printed}\n---\n{whole_out}"
        );
        assert!(printed.contains("(merged from 3 shards)"), "{printed}");
        let (m, a) = (json_of(&merged), json_of(&all));
        assert_eq!(cases(&m), cases(&a), "{kind}: merged cases differ");
        assert_eq!(m["exitCode"], a["exitCode"]);
        // The shards' failures grouped by cause as the whole run grouped its own.
        assert!(!a["causes"].as_array().unwrap().is_empty());
        assert_eq!(m["causes"], a["causes"], "{kind}: the causes");
        assert_eq!(
            m["fakesSpeak"], a["fakesSpeak"],
            "{kind}: what the fakes spoke"
        );
        assert_eq!(
            m["catalog"],
            conform::catalog::DIGEST,
            "{kind}: the catalog"
        );
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(
            xml.contains(&format!(
                "name=\"catalog\" value=\"{}\"",
                conform::catalog::DIGEST
            )),
            "{xml}"
        );
        assert_eq!(
            xml.matches("<testcase ").count(),
            a["cases"].as_array().unwrap().len(),
            "{kind}: one JUnit test case per case"
        );
        assert!(xml.contains("type=\"expect.diagnostic\""), "{xml}");
    }
    // A shard missing is the merge's error, not a pass.
    let out = conform()
        .args(["report", "merge"])
        .args(&shards[..2])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("shard(s) missing: hash:3/3"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
