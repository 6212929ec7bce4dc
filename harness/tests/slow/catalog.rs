//! The whole catalog, run as a host runs it: against the clean reference (it passes, and
//! leaves nothing behind), one run at a time and sixteen at once (the same texts), and each
//! product's family with its fake speaking another known version. Each is a catalog's worth of
//! runs — half a minute of both cores in a debug build.

use std::path::Path;

use crate::common;
use common::whole_catalog::whole_catalog;
use common::{run, stdout, workspace};

#[test]
fn the_reference_passes_the_whole_catalog() {
    // Run as a host would have it (`common::whole_catalog`): a copied `conform`, outside the
    // workspace, judging by the catalog it carries — the very files of the workspace, by digest.
    let run = whole_catalog();
    let (code, out, err) = (run.code, &run.out, &run.err);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        out.lines().any(|l| l == format!("catalog: {}", run.digest)),
        "{out}"
    );
    assert!(run.extracted);
    // The upgrade scenarios need `--product-version codex=0.169.0` (or 0.171.0), the
    // real-peer ones `--peers` (ci/peers); everything else runs.
    assert!(out.contains(" 0 failed, 100 skipped"), "{out}");
    // A passing catalog fits on one screen: the matrix, why cases were skipped, one line.
    assert!(
        out.lines().count() <= 50,
        "{} lines:\n{out}",
        out.lines().count()
    );
    assert!(out.contains("│ cancel "), "{out}");
    assert!(
        out.contains("real peer `dsh-sdk`: run `ci/peers` (or pass --peers DIR)"),
        "{out}"
    );
    // The matrix: a column per provider, a row per family (`isolation` across them).
    for provider in [" acp ", " dsh-sdk ", " codex ", " claude-code "] {
        assert!(out.contains(provider), "{provider} scenarios ran: {out}");
    }
    assert!(out.contains("│ isolation "), "{out}");
}

#[test]
fn the_whole_catalog_leaves_nothing_behind() {
    let run = whole_catalog();
    assert_eq!(run.code, Some(0), "{}", run.out);
    // Nothing needed the end-of-suite sweep, and nothing is left now.
    assert_eq!(run.stragglers, serde_json::json!([]));
    assert_eq!(run.left_running, Vec::<String>::new(), "left running");
}

#[test]
fn one_run_at_a_time_and_sixteen_show_the_model_the_same_texts() {
    // Texts only: with sixteen runs in flight on a small machine a timing check may judge the
    // machine, but no text may depend on which runs shared the subject.
    let dir = tempfile::tempdir().unwrap();
    let texts = |report: &Path| {
        let report: serde_json::Value =
            serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
        report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| {
                Some((
                    format!("{}@{}", c["id"].as_str()?, c["mode"].as_str()?),
                    c["modelVisible"].as_str()?.to_owned(),
                ))
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    // One run at a time: the catalog in four shards, each a `conform run -j 1` of its own (its
    // own subject, never more than one run in it), side by side — a run at `-j 1` mostly waits
    // on its teardown graces, so four of them load the machine like one at `-j 4`.
    let one = {
        let _slot = common::Slot::take();
        let shards: Vec<_> = (1..=4)
            .map(|k| {
                let json = dir.path().join(format!("one-{k}.json"));
                let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("conform"))
                    .args(["run", "-j", "1", "--partition", &format!("count:{k}/4")])
                    .arg("--json")
                    .arg(&json)
                    .current_dir(workspace())
                    .env("INSTA_UPDATE", "no")
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (child, json)
            })
            .collect();
        let mut one = std::collections::BTreeMap::new();
        for (child, json) in shards {
            let out = child.wait_with_output().unwrap();
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{}\n{}",
                stdout(&out),
                common::stderr(&out)
            );
            one.extend(texts(&json));
        }
        one
    };
    let sixteen = {
        let json = dir.path().join("report-16.json");
        let (code, out, err) = run(&["-j", "16", "--json", json.to_str().unwrap()]);
        assert!(matches!(code, Some(0 | 1)), "{out}\n{err}");
        texts(&json)
    };
    assert!(one.len() > 400, "only {} cases ran", one.len());
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        sixteen.keys().collect::<Vec<_>>()
    );
    for (case, text) in &one {
        assert_eq!(Some(text), sixteen.get(case), "{case}");
    }
}

#[test]
fn the_codex_catalog_also_passes_with_the_fake_speaking_0_169_0() {
    // Every fake frame is validated against the real 0.169.0 schema in this run.
    let (code, out, err) = run(&["--filter", "codex/", "--product-version", "codex=0.169.0"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    // The only skips are the real-peer Codex cases (`peers/codex/`, which need `--peers`) and
    // the scenario of a code 0.171.0 adds.
    assert!(out.contains(" 0 failed, 20 skipped"), "{out}");
}

#[test]
fn the_codex_catalog_also_passes_with_the_fake_speaking_an_accepted_version() {
    // 0.171.0 was accepted from an upgrade report (fakes/profiles/codex.toml): the fake sends
    // 0.169.0's frames, each validated against the real 0.171.0 schema, and the code it adds
    // is reported as the subject maps it.
    let (code, out, err) = run(&["--filter", "codex/", "--product-version", "codex=0.171.0"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("295 passed, 0 failed, 34 skipped"), "{out}");
    assert!(
        out.contains("fakes speak: Codex app-server 0.171.0"),
        "{out}"
    );
    assert!(
        out.contains("  bioPolicy (foreground): category `unknown` — mapped to unknown"),
        "{out}"
    );
}

#[test]
fn the_dsh_sdk_catalog_also_passes_with_the_fake_speaking_0_1_1() {
    // At 0.1.1 the model's text also streams as `assistant/chunk` text-deltas before the
    // message or failed attempt that records it; the reference reads both, and every frame is
    // still validated against the DSH SDK schema.
    let (code, out, err) = run(&["--filter", "dsh-sdk/", "--product-version", "dsh-sdk=0.1.1"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("fakes speak: DSH SDK runtime 0.1.1"), "{out}");
    // The only skips are the real-peer DSH SDK cases (`peers/dsh-sdk/`, which need `--peers`).
    assert!(out.contains(" 0 failed, 14 skipped"), "{out}");
    assert!(
        out.contains("  14 × real peer `dsh-sdk`: run `ci/peers` (or pass --peers DIR)\n"),
        "{out}"
    );
}
