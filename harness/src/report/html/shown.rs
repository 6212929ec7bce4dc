//! What of the JSON report the page carries: only what it draws. A failing run's report is
//! mostly data the page never showed (each failure's ledger twice, its checks twice, the
//! snapshot, settling and delivery of every passing run), so the page's data is the report less
//! those; the JSON report file itself stays whole.

use serde_json::{Map, Value};

/// The report's members the page draws (its header, causes, matrix, cases and sections).
const REPORT_KEYS: &[&str] = &[
    "subject",
    "fakesSpeak",
    "realPeers",
    "conformVersion",
    "catalog",
    "generatedAt",
    "elapsedMs",
    "jobs",
    "strictness",
    "partition",
    "shards",
    "exitCode",
    "interruptedBy",
    "nothingTested",
    "stragglers",
    "findings",
    "baseline",
    "causes",
    "checks",
    "cases",
    // `--compare`: what changed since the previous run, and the reports before it.
    "comparedWith",
    "history",
];

/// A case's members every row draws.
const CASE_KEYS: &[&str] = &[
    "id",
    "title",
    "file",
    "mode",
    "provider",
    "verdict",
    "skipReason",
    "baselineReason",
    "rerunAlone",
    "elapsedMs",
    "findings",
    "advisories",
];

/// What only an opened case draws (a failed or known case, or one with advisories).
const OPENED_KEYS: &[&str] = &["detail", "ledger", "modelVisible", "settle", "delivery"];

/// A finding's members the page draws.
const FINDING_KEYS: &[&str] = &["check", "message", "level", "source"];

/// Where a case's human block (`detail`) stops telling its checks and starts on what the run
/// left (transcripts, ledger, stderr); indented by two, which no check's message line is.
const TRANSCRIPTS: &str = "\n  subject transcript (run ";

/// The line of the human block naming the runtime the case ran against.
const RUNTIME: &str = "\n   runtime: ";

/// The page's data: `report` less what the page never shows.
pub fn shown(report: &Value) -> Value {
    let mut out = kept(report, REPORT_KEYS);
    if let Some(cases) = report["cases"].as_array() {
        out.insert("cases".into(), cases.iter().map(case).collect());
    }
    if let Some(findings) = report["findings"].as_array() {
        out.insert("findings".into(), findings.iter().map(finding).collect());
    }
    Value::Object(out)
}

/// The members of `v` named in `keys` (those it has).
fn kept(v: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| Some((k.to_string(), v.get(*k)?.clone())))
        .collect()
}

fn finding(f: &Value) -> Value {
    Value::Object(kept(f, FINDING_KEYS))
}

/// Whether the page draws a case opened (as the page's `opens` decides).
fn opens(c: &Value) -> bool {
    c["verdict"] == "fail"
        || c["verdict"] == "known"
        || c["advisories"].as_array().is_some_and(|a| !a.is_empty())
}

fn case(c: &Value) -> Value {
    let mut out = kept(c, CASE_KEYS);
    for k in ["findings", "advisories"] {
        if let Some(list) = c[k].as_array() {
            out.insert(k.into(), list.iter().map(finding).collect());
        }
    }
    if opens(c) {
        out.extend(kept(c, OPENED_KEYS));
        if let Some(detail) = c["detail"].as_str() {
            // The block's ledger is the case's ledger and more: one is enough.
            out.remove("ledger");
            out.insert("detail".into(), past_the_checks(detail).into());
        }
    }
    Value::Object(out)
}

/// A case's human block less its heading and its checks, which the page draws from the
/// findings (a diff once, as a diff): the runtime's line, then what the run left. A block cut
/// short before its transcripts keeps what followed the cut.
fn past_the_checks(detail: &str) -> String {
    let runtime = detail
        .find(RUNTIME)
        .and_then(|at| detail[at + 1..].lines().next())
        .map(|line| format!("{}\n", line.trim_start()))
        .unwrap_or_default();
    let rest = detail
        .find(TRANSCRIPTS)
        .or_else(|| {
            detail
                .find("\n… ")
                .filter(|_| detail.contains(" bytes cut …"))
        })
        .map_or("", |at| &detail[at + 1..]);
    format!("{runtime}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DETAIL: &str = "\n━━ acp/x (foreground) — a title\n   scenarios/acp/x.toml\n   runtime: the fake speaking ACP 1\n  ✗ [expect.output] output differs\n    --- expected\n    +++ got\n    -a\n    +b\n    requirement (record): seed\n  subject transcript (run r1):\n    → start\n  runtime ledger:\n    ← hello\n";

    #[test]
    fn a_failures_checks_are_carried_once_and_its_ledger_once() {
        let report = json!({"subject": "s", "peakRssKiB": 1, "cgroup": {"mode": "off"}, "cases": [{
            "id": "acp/x", "mode": "foreground", "verdict": "fail", "order": [0, 0],
            "causePatterns": [{"check": "expect.output", "pattern": "p"}],
            "findings": [{"check": "expect.output", "message": "output differs", "level": "record", "source": "seed", "blame": "subject"}],
            "detail": DETAIL, "ledger": ["← hello"], "settle": {"exits": []},
        }]});
        let page = shown(&report);
        assert_eq!(page.as_object().unwrap().len(), 2, "{page}");
        let case = &page["cases"][0];
        assert_eq!(
            case["detail"],
            "runtime: the fake speaking ACP 1\n  subject transcript (run r1):\n    → start\n  runtime ledger:\n    ← hello\n"
        );
        for gone in ["order", "causePatterns", "ledger"] {
            assert!(case.get(gone).is_none(), "{gone}: {case}");
        }
        assert!(case["findings"][0].get("blame").is_none());
        assert_eq!(case["settle"], json!({"exits": []}));
    }

    #[test]
    fn a_passing_case_carries_only_its_row() {
        let case = json!({"id": "acp/x", "mode": "foreground", "verdict": "pass", "findings": [], "advisories": [],
            "detail": null, "ledger": ["← hello"], "modelVisible": "text", "settle": {}, "delivery": {}});
        let page = shown(&json!({"cases": [case]}));
        let mut keys: Vec<&String> = page["cases"][0].as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["advisories", "findings", "id", "mode", "verdict"]);
    }

    #[test]
    fn a_passing_case_with_advisories_keeps_its_ledger() {
        let case = json!({"id": "acp/x", "verdict": "pass", "detail": null, "ledger": ["← hello"],
            "advisories": [{"check": "timing.x", "message": "slow", "level": "practice", "source": "s"}]});
        let page = shown(&json!({"cases": [case]}));
        assert_eq!(page["cases"][0]["ledger"], json!(["← hello"]));
    }

    #[test]
    fn a_block_cut_before_its_transcripts_keeps_what_followed_the_cut() {
        let detail = "\n━━ acp/x (foreground) — t\n   p\n   runtime: R\n  ✗ [c] m\n… 10 bytes cut …\n    tail\n";
        assert_eq!(
            past_the_checks(detail),
            "runtime: R\n… 10 bytes cut …\n    tail\n"
        );
        assert_eq!(past_the_checks("\n━━ x\n  ✗ [c] m\n"), "");
    }

    #[test]
    fn every_member_of_the_report_the_script_reads_is_carried() {
        // The other way round: a member the script reads but the page drops draws nothing, and
        // nothing says so (the comparison's section was lost that way once).
        let script = include_str!("app.js");
        let read = regex::Regex::new(r"\breport\.([A-Za-z]+)").unwrap();
        let missing: Vec<&str> = read
            .captures_iter(script)
            .map(|c| c.get(1).unwrap().as_str())
            .filter(|key| !REPORT_KEYS.contains(key))
            .collect();
        assert!(
            missing.is_empty(),
            "app.js reads, the page drops: {missing:?}"
        );
    }

    #[test]
    fn every_member_the_page_carries_is_read_by_its_script() {
        let script = include_str!("app.js");
        for key in [REPORT_KEYS, CASE_KEYS, OPENED_KEYS, FINDING_KEYS].concat() {
            assert!(
                script.contains(&format!(".{key}")),
                "app.js never reads {key}"
            );
        }
    }
}
