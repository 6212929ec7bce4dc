//! What a host's CI needs to gate on conform before the host is fully conformant: a baseline of
//! known failures (fail only on new ones, and on stale entries), and the catalog split over
//! machines (`--partition`) and merged back (`conform report merge`) into the same verdicts.

use crate::common;
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
            "✗ stale: {file_arg}:12: `acp/stop/cancelled-remote@foreground:expect.diagnostic` — the case passes now"
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

/// The part of the catalog the pin tests run (a second or so): ACP's stop reasons and its
/// plain success.
const PINNED: [&str; 4] = ["--filter", "acp/stop/", "--filter", "acp/success/end-turn"];

/// Three seeded defects whose failures say the same every run: a background start worded its
/// own way, `max_tokens` mapped to `error`, the Diagnostic line left out of the tool result.
const THREE: [&str; 3] = [
    "background-start-wording",
    "max-tokens-as-error",
    "hide-diagnostic-in-tool-result",
];

fn pinned_run(defects: &[&str], extra: &[&str]) -> (Option<i32>, String, String) {
    let subject = defective(defects);
    let mut args = PINNED.to_vec();
    args.extend(["--subject", &subject]);
    args.extend(extra);
    run(&args)
}

#[test]
fn a_baseline_pins_what_each_known_failure_says_and_a_fourth_defect_that_changes_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (file, again) = (at("known.toml"), at("again.toml"));
    let started = std::time::Instant::now();

    // Written against the three defects: every entry names one case in one mode and pins it.
    let (code, out, _) = pinned_run(&THREE, &["--write-baseline", &file]);
    assert_eq!(code, Some(1), "{out}");
    let written = std::fs::read_to_string(&file).unwrap();
    let entries = written.matches("[[known]]").count();
    assert!(entries >= 10, "{written}");
    assert_eq!(
        written.matches("\ntexts = \"sha256:").count(),
        entries,
        "{written}"
    );
    assert_eq!(
        written.matches("\nexcerpt = \"").count(),
        entries,
        "{written}"
    );

    // Nothing changed: green, every pin as it was; and written again, the same file (the
    // pins are stable from one run to the next).
    let (code, out, _) = pinned_run(&THREE, &["--baseline", &file, "--write-baseline", &again]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains(&format!(
            "  texts pinned by {entries} entr(ies): {entries} as pinned, 0 changed\n"
        )),
        "{out}"
    );
    assert!(!out.contains("baseline.changed"), "{out}");
    assert_eq!(std::fs::read_to_string(&again).unwrap(), written);

    // A fourth defect, `crlf-output`, changes what one known failure says (the job_output of a
    // completed background job ends its lines in CRLF) and fails no check the case did not fail
    // already: only the pin sees it.
    let four = [&THREE[..], &["crlf-output"]].concat();
    let (json, junit) = (at("four.json"), at("four.xml"));
    let (code, out, _) = pinned_run(
        &four,
        &["--baseline", &file, "--json", &json, "--junit", &junit],
    );
    assert_eq!(code, Some(1), "{out}");
    let line = |id: &str| {
        let needle = format!("id = \"{id}\"");
        written.lines().position(|l| l == needle).unwrap() + 1
    };
    let (wording, snapshot) = (
        line("acp/success/end-turn@background:presentation.background-start"),
        line("acp/success/end-turn@background:snapshot"),
    );
    assert!(
        out.contains(&format!(
            "  ✗ [baseline.changed] known failure changed: the texts pinned at {file}:{wording},{snapshot} are sha256:"
        )),
        "{out}"
    );
    assert!(
        out.contains("    --- pinned excerpt\n    +++ this run\n    @@ -3,7 +3,7 @@\n")
            && out
                .contains("\n    -Hello, world.\n    +Hello, world.␍\n     [status: completed]\n"),
        "the diff of the excerpts: {out}"
    );
    assert!(
        out.contains(&format!(
            "  texts pinned by {entries} entr(ies): {} as pinned, 2 changed\n",
            entries - 2
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "  ✗ changed: {file}:{wording}: `acp/success/end-turn@background:presentation.background-start` — sha256:"
        )),
        "{out}"
    );
    assert!(
        out.contains("  ✗ acp/success/end-turn (background) [baseline.changed]\n"),
        "{out}"
    );
    assert!(out.contains(" 1 failed, "), "{out}");
    let report = json_of(std::path::Path::new(&json));
    let case = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "acp/success/end-turn" && c["mode"] == "background")
        .unwrap();
    assert_eq!(case["verdict"], "fail");
    assert_eq!(case["findings"][0]["check"], "baseline.changed");
    assert_eq!(
        case["findings"][0]["level"], "record",
        "the level of the failure it pins"
    );
    let changed: Vec<&serde_json::Value> = report["baseline"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "changed")
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert!(changed.iter().all(|e| {
        e["textsNow"]
            .as_str()
            .is_some_and(|d| d.starts_with("sha256:") && e["texts"] != e["textsNow"])
    }));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("type=\"baseline.changed\""), "{xml}");

    // The same file without its pins (as written before them) knows the case as it did: the
    // run is green, the change unseen.
    let unpinned: String = written
        .lines()
        .filter(|l| !l.starts_with("texts = ") && !l.starts_with("excerpt = "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, unpinned).unwrap();
    let (code, out, _) = pinned_run(&four, &["--baseline", &file]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("texts pinned by"), "{out}");

    // Written again from the run that changed, with the pinned file in use: its reasons kept,
    // its pins refreshed; the fourth defect is then what the baseline knows.
    std::fs::write(
        &file,
        written.replacen(
            "TODO: say why this failure is acceptable for now",
            "HOST-7: the wording is the host's own",
            1,
        ),
    )
    .unwrap();
    pinned_run(&four, &["--baseline", &file, "--write-baseline", &again]);
    let refreshed = std::fs::read_to_string(&again).unwrap();
    assert!(
        refreshed.contains("reason = \"HOST-7: the wording is the host's own\""),
        "{refreshed}"
    );
    assert!(refreshed.contains("Hello, world.␍"), "{refreshed}");
    let (code, out, _) = pinned_run(&four, &["--baseline", &again]);
    assert_eq!(code, Some(0), "{out}");
    eprintln!(
        "five runs of the pinned selection in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

const HELLO: &str = r#"{"type":"hello","protocol":"conform-subject/1","subject":{"name":"refusing","version":"0"},"providers":["acp"],"modes":["foreground","background"]}"#;

/// A host that refuses every call before any job exists, with the error name and message in
/// the files `name` and `message` of `dir` (read at each call).
fn refusing_host(dir: &std::path::Path) -> String {
    let script = dir.join("host.sh");
    std::fs::write(
        &script,
        format!(
            r#"read -r _
printf '%s\n' '{HELLO}'
while IFS= read -r line; do
  run=$(printf '%s' "$line" | sed -n 's/.*"run":"\([^"]*\)".*/\1/p')
  case "$line" in
    *'"type":"start"'*)
      printf '{{"type":"refused","run":"%s","error":{{"name":"%s","message":"%s"}}}}\n' "$run" "$(cat '{d}/name')" "$(cat '{d}/message')"
      printf '{{"type":"tool_result","run":"%s","isError":true,"text":"Error: %s"}}\n' "$run" "$(cat '{d}/message')";;
    *shutdown*) exit 0;;
  esac
done
"#,
            d = dir.display()
        ),
    )
    .unwrap();
    format!("sh '{}'", script.display())
}

#[test]
fn a_baseline_pins_a_refused_call_and_fails_when_what_the_refusal_says_changes() {
    let dir = tempfile::tempdir().unwrap();
    let say = |name: &str, message: &str| {
        std::fs::write(dir.path().join("name"), name).unwrap();
        std::fs::write(dir.path().join("message"), message).unwrap();
    };
    say("ConfigError", "subagent-acp: invalid configuration");
    let subject = refusing_host(dir.path());
    let file = dir.path().join("known.toml");
    let file_arg = file.to_str().unwrap();
    // A case about start()'s rejection (does not apply: skipped as refused) and one that
    // expects a run (fails: refused a run it should have had).
    let select = [
        "--filter",
        "acp/stage/dispose-grace-zero",
        "--filter",
        "acp/success/end-turn",
        "--subject",
        &subject,
    ];
    let with = |extra: &[&str]| {
        let mut args = select.to_vec();
        args.extend(extra);
        run(&args)
    };
    let (code, out, _) = with(&["--write-baseline", file_arg]);
    assert_eq!(code, Some(1), "{out}");
    let written = std::fs::read_to_string(&file).unwrap();
    for mode in ["foreground", "background"] {
        assert!(
            written.contains(&format!(
                "[[refused]]\nid = \"acp/stage/dispose-grace-zero@{mode}\"\ntexts = \"sha256:"
            )),
            "{written}"
        );
        assert!(
            written.contains(&format!(
                "[[known]]\nid = \"acp/success/end-turn@{mode}:expect.start-error\"\nreason = \"TODO: say why this failure is acceptable for now\"\ntexts = \"sha256:"
            )),
            "{written}"
        );
    }
    assert!(
        written.contains("excerpt = \"── refused (ConfigError) ──\\nsubagent-acp: invalid configuration\\n── tool result (isError: true) ──\\nError: subagent-acp: invalid configuration\""),
        "{written}"
    );

    // As pinned: green.
    let (code, out, _) = with(&["--baseline", file_arg]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("  texts pinned by 4 entr(ies): 4 as pinned, 0 changed\n"),
        "{out}"
    );
    assert!(
        out.contains("0 passed, 0 failed, 2 known, 2 skipped"),
        "{out}"
    );

    // The error class loses its name: every case says something else.
    say("Error", "subagent-acp: invalid configuration");
    let (code, out, _) = with(&["--baseline", file_arg]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("  ✗ [baseline.changed] known refusal changed: the texts pinned at ")
            && out.contains("    -── refused (ConfigError) ──\n    +── refused (Error) ──\n"),
        "{out}"
    );
    assert!(
        out.contains("  ✗ [baseline.changed] known failure changed: the texts pinned at "),
        "{out}"
    );
    assert!(
        out.contains("  texts pinned by 4 entr(ies): 0 as pinned, 4 changed\n"),
        "{out}"
    );
    assert!(
        out.contains("0 passed, 4 failed, 0 known, 0 skipped"),
        "{out}"
    );

    // The host no longer refuses: the refused entries are stale.
    let (code, out, _) = run(&[
        "--filter",
        "acp/stage/dispose-grace-zero",
        "--baseline",
        file_arg,
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("`acp/stage/dispose-grace-zero@foreground` — the call is no longer refused"),
        "{out}"
    );
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
