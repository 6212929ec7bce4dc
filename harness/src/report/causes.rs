//! Failures grouped by cause: a host maintainer fixes causes, not cases. Every failing
//! (case, mode, check) finding is keyed by its check and its message's first line with what is
//! particular to the case masked — the scenario's own texts, quoted values, numbers, ids and
//! paths — and findings that fail exactly the same runs are one cause (a missing handler fails
//! the handshake, the start and the result of the same 250 runs: three checks, one cause).
//! Largest first, each with the providers and families it spans and one run to read in full.

use std::collections::{BTreeMap, BTreeSet};

use crate::suite::{SuiteReport, Verdict};

/// One run that failed, as the grouping reads it: each failing finding's pattern (check id,
/// masked first line). The JSON report keeps the patterns per case (`causePatterns`), so a
/// merged report groups its shards' runs exactly as each run grouped its own.
pub struct Failed {
    pub id: String,
    pub mode: String,
    pub provider: String,
    pub patterns: Vec<(String, String)>,
}

/// A case's failing findings as patterns: check id, and the message's first line (with a
/// diff's first changed line) masked of what the scenario itself wrote (its id, label, expected
/// texts) and what is particular to the run ([`mask`]).
pub fn patterns(c: &crate::suite::CaseReport) -> Vec<(String, String)> {
    let e = &c.scenario.file.expect;
    // The run's own snapshot file, which a snapshot finding names (`… texts are in <it>.new`);
    // first, before the id or label inside it are masked on their own.
    let snapshot = crate::snapshot::file_name(&c.scenario, c.mode);
    let mut own = vec![
        snapshot.as_str(),
        c.scenario.id.as_str(),
        c.scenario.label(),
    ];
    own.extend(
        [&e.start_error, &e.diagnostic, &e.output]
            .into_iter()
            .flatten()
            .map(String::as_str),
    );
    c.findings
        .iter()
        .map(|f| {
            let first = f.message.lines().next().unwrap_or_default();
            let key = match first_change(&f.message) {
                Some(change) => format!("{first} {change}"),
                None => first.to_owned(),
            };
            (f.check.id().to_owned(), mask(&key, &own))
        })
        .collect()
}

/// A diff's first changed line (a snapshot finding's message is one): what tells one defect's
/// texts from another's, where the first line only says that the texts differ.
fn first_change(message: &str) -> Option<&str> {
    message.lines().skip(1).find(|l| {
        (l.starts_with('+') && !l.starts_with("+++"))
            || (l.starts_with('-') && !l.starts_with("---"))
    })
}

/// One cause: the patterns of its findings (check id, masked message), the runs it fails.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cause {
    pub patterns: Vec<(String, String)>,
    /// `(id, mode)` of each run, in report order.
    pub runs: Vec<(String, String)>,
    pub providers: BTreeSet<String>,
    pub families: BTreeSet<String>,
}

/// The failed runs of a suite.
pub fn failed(report: &SuiteReport) -> Vec<Failed> {
    report
        .cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail))
        .map(|c| Failed {
            id: c.scenario.id.clone(),
            mode: c.mode.to_string(),
            provider: c.scenario.file.provider.as_str().to_owned(),
            patterns: patterns(c),
        })
        .collect()
}

/// The failed runs of a JSON report's cases (as `conform report merge` reads its shards).
pub fn failed_in_json(cases: &[serde_json::Value]) -> Vec<Failed> {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    cases
        .iter()
        .filter(|c| c["verdict"] == "fail")
        .map(|c| Failed {
            id: text(&c["id"]),
            mode: text(&c["mode"]),
            provider: text(&c["provider"]),
            patterns: c["causePatterns"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| (text(&p["check"]), text(&p["pattern"])))
                .collect(),
        })
        .collect()
}

/// The causes as the JSON report keeps them.
pub fn to_json(causes: &[Cause]) -> serde_json::Value {
    use serde_json::json;
    causes
        .iter()
        .map(|c| {
            json!({
                "runs": c.runs.iter().map(|(id, mode)| json!({"id": id, "mode": mode})).collect::<Vec<_>>(),
                "patterns": c.patterns.iter().map(|(check, pattern)| json!({"check": check, "pattern": pattern})).collect::<Vec<_>>(),
                "providers": c.providers,
                "families": c.families,
            })
        })
        .collect()
}

/// The causes of these failed runs, largest first (then by their first pattern).
pub fn of(failed: &[Failed]) -> Vec<Cause> {
    // Each pattern and the runs it fails.
    let mut by_pattern: BTreeMap<(String, String), BTreeSet<usize>> = BTreeMap::new();
    for (i, f) in failed.iter().enumerate() {
        for pattern in &f.patterns {
            by_pattern.entry(pattern.clone()).or_default().insert(i);
        }
    }
    // Patterns that fail exactly the same runs are one cause.
    let mut by_runs: BTreeMap<BTreeSet<usize>, Vec<(String, String)>> = BTreeMap::new();
    for (pattern, runs) in by_pattern {
        by_runs.entry(runs).or_default().push(pattern);
    }
    let mut causes: Vec<Cause> = by_runs
        .into_iter()
        .map(|(runs, patterns)| Cause {
            patterns,
            providers: runs.iter().map(|&i| failed[i].provider.clone()).collect(),
            families: runs
                .iter()
                .map(|&i| crate::report::matrix::family(&failed[i].id).to_owned())
                .collect(),
            runs: runs
                .iter()
                .map(|&i| (failed[i].id.clone(), failed[i].mode.clone()))
                .collect(),
        })
        .collect();
    causes.sort_by(|a, b| {
        b.runs
            .len()
            .cmp(&a.runs.len())
            .then_with(|| a.patterns.cmp(&b.patterns))
    });
    causes
}

/// A message's first line with what is particular to one run masked: the scenario's own texts
/// (`<case>`), quoted values (`"…"`; an empty one kept), ids and numbers (`N`), paths
/// (`<path>`).
pub fn mask(line: &str, own: &[&str]) -> String {
    let mut s = line.to_owned();
    for text in own.iter().filter(|t| t.len() >= 3) {
        s = s.replace(text, "<case>");
    }
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' {
            // A quoted value, escapes and all.
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            out.push_str(if j == i + 1 { "\"\"" } else { "\"…\"" });
            i = j + 1;
        } else if c == '/' && (i == 0 || chars[i - 1] == ' ' || chars[i - 1] == '(') {
            // A path runs to the next space.
            while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ')' {
                i += 1;
            }
            out.push_str("<path>");
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push('N');
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, findings: Vec<(&str, &str)>) -> Failed {
        Failed {
            id: id.into(),
            mode: "foreground".into(),
            provider: id.split('/').next().unwrap().into(),
            patterns: findings
                .into_iter()
                .map(|(c, m)| (c.into(), mask(m, &[id])))
                .collect(),
        }
    }

    #[test]
    fn what_is_particular_to_a_run_is_masked() {
        assert_eq!(
            mask(
                r#"diagnostic "x\"y", expected "Subagent failure" for acp/stop/refusal after 1200 ms at /tmp/conform-1/r3"#,
                &["acp/stop/refusal"]
            ),
            r#"diagnostic "…", expected "…" for <case> after N ms at <path>"#
        );
        assert_eq!(
            mask(r#"diagnostic "", expected none"#, &[]),
            r#"diagnostic "", expected none"#
        );
        assert_eq!(
            mask("steps[12] of 23 (pid 4242)", &[]),
            "steps[N] of N (pid N)"
        );
    }

    /// A failed run of a scenario `id` (written under a temporary catalog) in `mode`.
    fn failed_run(
        id: &str,
        mode: &str,
        findings: Vec<crate::checks::Finding>,
    ) -> Vec<(String, String)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{id}.toml"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "title = \"t\"\nprovider = \"acp\"\n[expect]\nstop_reason = \"completed\"\n",
        )
        .unwrap();
        let scenario = std::sync::Arc::new(crate::scenario::load(dir.path(), &path).unwrap());
        let mode = match mode {
            "background" => conform_protocol::subject::Mode::Background,
            _ => conform_protocol::subject::Mode::Foreground,
        };
        // Named as a run from the workspace names it: relative, not masked as a path.
        let snapshot =
            std::path::Path::new("snapshots").join(crate::snapshot::file_name(&scenario, mode));
        let mut findings = findings;
        findings.push(crate::checks::Finding::new(
            crate::checks::Check::Snapshot,
            format!("the model-visible texts differ from the snapshot (this run's texts are in {}.new):\n-a\n+b", snapshot.display()),
        ));
        patterns(&crate::suite::CaseReport {
            scenario,
            mode,
            verdict: Verdict::Fail,
            findings,
            advisories: vec![],
            snapshot: None,
            rerun: None,
            obs: None,
        })
    }

    #[test]
    fn a_runs_own_snapshot_file_is_masked_so_snapshot_failures_read_as_one_cause() {
        let one = failed_run("acp/teardown/one-2", "foreground", vec![]);
        let other = failed_run("acp/stop/other", "background", vec![]);
        assert_eq!(one, other);
        assert_eq!(
            one[0].1,
            "the model-visible texts differ from the snapshot (this run's texts are in snapshots/<case>.new): -a"
        );
    }

    #[test]
    fn a_diffs_first_changed_line_tells_one_snapshot_cause_from_another() {
        // Two defects that change different texts are two causes, though their findings' first
        // lines are the same; the unified diff's headers are not changes.
        let crlf =
            "the texts differ:\n--- stored snapshot\n+++ this run\n@@ -3 +3 @@\n-Done.\n+Done.␍";
        let leak = "the texts differ:\n--- stored snapshot\n+++ this run\n+Diagnostic: boom";
        assert_eq!(first_change(crlf), Some("-Done."));
        assert_eq!(first_change(leak), Some("+Diagnostic: boom"));
        assert_eq!(first_change("one line only"), None);
    }

    #[test]
    fn findings_that_fail_the_same_runs_are_one_cause_and_the_largest_comes_first() {
        let strict = |id| {
            run(
                id,
                vec![
                    (
                        "wire.violation",
                        "stdin closed while the script expected `turn/start`",
                    ),
                    ("expect.stop-reason", "no result was reported"),
                ],
            )
        };
        let runs = vec![
            strict("codex/a/one"),
            strict("codex/b/two"),
            run(
                "acp/c/three",
                vec![("contract.output", "an empty text block")],
            ),
            strict("codex/c/four"),
        ];
        let causes = of(&runs);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(causes[0].runs.len(), 3);
        assert_eq!(
            causes[0]
                .patterns
                .iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>(),
            ["expect.stop-reason", "wire.violation"]
        );
        assert_eq!(causes[0].families, ["a", "b", "c"].map(String::from).into());
        assert_eq!(causes[1].providers, ["acp".to_owned()].into());
    }
}
