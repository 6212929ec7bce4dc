//! The JSON report (exact: subject texts are not escaped): what every other report is read
//! from. Held in memory, a case leaves out what only the file carries ([`FILE_ONLY`]); the
//! file gets each case whole, made from its record as it is written ([`write`]).

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::report::bound;
use crate::report::detail::case_detail;
use crate::run::Observed;
use crate::suite::{SuiteReport, Verdict};

/// What of a case only the JSON file carries: no other report reads it, and it is most of a
/// case's weight (its process tree at the claim and after, its delivery timeline, its
/// model-visible text, its ledger). As a tree of values beside every record it cost the
/// harness's peak some 14 MiB on the catalog.
pub const FILE_ONLY: [&str; 5] = ["modelVisible", "settle", "ledger", "delivery", "walked"];

/// The whole report as one value (a merged report's shards, the HTML page, tests).
pub fn json(report: &SuiteReport) -> Value {
    document(report, |i, c| case_json(report, i, c))
}

/// The report as the other reports read it: each case without its [`FILE_ONLY`] keys.
pub fn held(report: &SuiteReport) -> Value {
    document(report, |i, c| match case_json(report, i, c) {
        // Into a map of its own size: the whole case's would keep room for the keys left out,
        // a thousand times over.
        Value::Object(whole) => {
            let mut held = Map::with_capacity(whole.len().saturating_sub(FILE_ONLY.len()));
            held.extend(
                whole
                    .into_iter()
                    .filter(|(k, _)| !FILE_ONLY.contains(&k.as_str())),
            );
            Value::Object(held)
        }
        other => other,
    })
}

/// Writes the JSON report: `held` (with what was added to it since: a comparison, the
/// harness's peak), each case made whole from its record as it is written, one at a time.
/// The same text as `json` pretty-printed, without ever holding every case whole.
pub fn write(
    out: impl std::io::Write,
    held: &Value,
    report: &SuiteReport,
) -> serde_json::Result<()> {
    serde_json::to_writer_pretty(out, &Whole { held, report })
}

/// `held` with each case whole again, as one value (the HTML page shows what only the file
/// carries).
pub fn whole(held: &Value, report: &SuiteReport) -> Value {
    serde_json::to_value(Whole { held, report }).expect("a report is JSON")
}

/// A held report and the records its cases were made from.
struct Whole<'a> {
    held: &'a Value,
    report: &'a SuiteReport,
}

impl Serialize for Whole<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(top) = self.held.as_object() else {
            return self.held.serialize(s);
        };
        let mut map = s.serialize_map(Some(top.len()))?;
        for (key, value) in top {
            match value {
                Value::Array(held) if key == "cases" => map.serialize_entry(
                    key,
                    &WholeCases {
                        held,
                        report: self.report,
                    },
                )?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

struct WholeCases<'a> {
    held: &'a [Value],
    report: &'a SuiteReport,
}

impl Serialize for WholeCases<'_> {
    /// Each case made again from its record, then given what its held value says now (a
    /// verbose run's detail): the same keys in the same order as [`json`]'s.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.held.len()))?;
        for (i, (held, c)) in self.held.iter().zip(&self.report.cases).enumerate() {
            let mut case = case_json(self.report, i, c);
            if let (Some(case), Some(held)) = (case.as_object_mut(), held.as_object()) {
                for (key, value) in held {
                    case.insert(key.clone(), value.clone());
                }
            }
            seq.serialize_element(&case)?;
        }
        seq.end()
    }
}

/// The report's keys in order, each case made by `case`.
fn document(
    report: &SuiteReport,
    case: impl Fn(usize, &crate::suite::CaseReport) -> Value,
) -> Value {
    let mut doc = json!({
        "subject": report.subject,
        "fakesSpeak": report.fakes_speak,
        "realPeers": report.real_peers,
        "strictness": report.strictness.as_str(),
        "jobs": report.jobs,
        "conformVersion": env!("CARGO_PKG_VERSION"),
        // The digest of the scenarios and snapshots that judged the suite.
        "catalog": (!report.catalog_digest.is_empty()).then_some(&report.catalog_digest),
        "generatedAt": jiff::Timestamp::now().to_string(),
        "exitCode": report.exit_code(),
        "elapsedMs": report.elapsed.as_millis() as u64,
        "stragglers": report.stragglers,
        "findings": report.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "nothingTested": report.nothing_tested(),
        "interruptedBy": report.interrupted.map(crate::proc::interrupt::name),
        "interruptedSignal": report.interrupted,
        "allowSkips": report.allow_skips,
        "peakRssKiB": report.peak_rss_kib,
        "partition": report.partition.map(|p| p.to_string()),
        "baseline": report.baseline.as_ref().map(|b| json!({
            "file": b.path,
            "catalog": b.catalog,
            "catalogWarning": b.catalog_warning(&report.catalog_digest),
            "entries": b.entries.iter().map(|(e, s)| json!({
                "kind": e.kind.as_str(),
                "id": e.id,
                "reason": e.reason,
                "line": e.line,
                "status": s.as_str(),
                "why": match s {
                    crate::suite::baseline::Status::Stale(why) => Some(why.clone()),
                    crate::suite::baseline::Status::Changed(now) => Some(format!(
                        "its case's texts changed: {} pinned, {now} now (known failure changed)",
                        e.pin.as_ref().map_or("", |p| p.texts.as_str())
                    )),
                    _ => None,
                },
                // What the entry pins of its case (`sha256:…`), and this run's digest where that
                // changed.
                "texts": e.pin.as_ref().map(|p| &p.texts),
                "textsNow": match s { crate::suite::baseline::Status::Changed(now) => Some(now), _ => None },
            })).collect::<Vec<_>>(),
        })),
        "cgroup": match &report.cgroup {
            crate::suite::CgroupMode::Off => json!({"mode": "off"}),
            crate::suite::CgroupMode::On(dir) => json!({"mode": "on", "dir": dir}),
            crate::suite::CgroupMode::Unavailable(why) => json!({"mode": "unavailable", "why": why}),
        },
        // The failures grouped by cause, largest first (`crate::report::causes`).
        "causes": crate::report::causes::to_json(&crate::report::causes::of(&crate::report::causes::failed(report))),
        // Put in below: given to `json!`, the cases would be copied whole once more.
        "cases": Value::Null,
        // What each check holds a subject to, and where that comes from (`conform list --checks`).
        "checks": crate::checks::Check::ALL.iter().map(|c| json!({
            "id": c.id(), "requirement": c.requirement(), "level": c.level().as_str(), "source": c.source(),
        })).collect::<Vec<_>>(),
    });
    doc["cases"] = Value::Array(
        report
            .cases
            .iter()
            .enumerate()
            .map(|(i, c)| case(i, c))
            .collect(),
    );
    doc
}

/// One case: its verdict, findings and advisories, and what its run left to read.
fn case_json(report: &SuiteReport, i: usize, c: &crate::suite::CaseReport) -> Value {
    json!({
        "id": c.scenario.id,
        "title": c.scenario.file.title,
        "file": c.scenario.path,
        "mode": c.mode,
        "provider": c.scenario.file.provider,
        // Where the case stands in the whole selection, before any partition: merged
        // shards are put back in this order.
        "order": [
            report.positions.get(&c.scenario.id).copied().unwrap_or(i),
            c.scenario.file.modes.iter().position(|m| *m == c.mode).unwrap_or_default(),
        ],
        "verdict": match &c.verdict { Verdict::Pass => "pass", Verdict::Fail => "fail", Verdict::Known(_) => "known", Verdict::Skip(_) => "skip", Verdict::Interrupted(_) => "interrupted" },
        "skipReason": match &c.verdict { Verdict::Skip(r) | Verdict::Interrupted(r) => Some(r.clone()), _ => None },
        "baselineReason": match &c.verdict { Verdict::Known(r) => Some(r.clone()), _ => None },
        // The human report's block for the case (checks, transcripts, stderr tail).
        "detail": matches!(c.verdict, Verdict::Fail | Verdict::Known(_)).then(|| case_detail(c)),
        "findings": c.findings.iter().map(finding_json).collect::<Vec<_>>(),
        // Each failing finding as the causes group it (`crate::report::causes`): a merged
        // report groups its shards' failures from these.
        "causePatterns": matches!(c.verdict, Verdict::Fail).then(|| {
            crate::report::causes::patterns(c).into_iter()
                .map(|(check, pattern)| json!({"check": check, "pattern": pattern}))
                .collect::<Vec<_>>()
        }),
        "advisories": c.advisories.iter().map(finding_json).collect::<Vec<_>>(),
        // Run again alone at the end of the suite, and what that showed (`None`: not run again).
        "rerunAlone": c.rerun,
        // What became of a differing or missing snapshot (written, pending, or why not).
        "snapshotNote": c.snapshot,
        "upstream": upstream_json(c),
        "elapsedMs": c.obs.as_ref().map(|o| o.elapsed.as_millis() as u64),
        // The waits the run walked (`[waits]` keys), declared or not: what its time went on.
        "walked": c.obs.as_ref().filter(|o| !o.walked.is_empty()).map(|o| &o.walked),
        // What the snapshot holds (job ids masked): runs compare across reports.
        "modelVisible": c.obs.as_ref().map(|o| bound::cut(&crate::snapshot::render(o), bound::DETAIL_BYTES)),
        "settle": c.obs.as_deref().map(settle_json),
        // The runtime's ledger as the failure report prints it (a passing run keeps it only
        // with --verbose): what a real peer can be replayed against (`ci/claude-sdk`).
        "ledger": c.obs.as_ref().map(|o| bound::cut_lines(&o.ledger_text, bound::LEDGER_LINES, bound::LEDGER_BYTES)),
        "delivery": c.obs.as_ref().filter(|_| c.mode == conform_protocol::subject::Mode::Background).map(|o| json!({
            "dispatch": o.dispatch_receipt,
            "completion": o.completion_receipt,
            "watchdog": o.watchdog.last().map(|c| c.status),
            "timeline": o.watchdog,
        })),
    })
}

/// The run's process tree at the subject's claim and after: the claim with each process's state
/// then, when the last of its known processes was seen gone (the moment `timing.*` judges
/// against; null when one's end was not seen), and what was left over.
fn settle_json(o: &Observed) -> Value {
    let last_exit = o.all_gone_at();
    json!({
        "claim": o.claim,
        "lastExitAtMs": last_exit,
        "lastSubjectMessageAtMs": o.last_subject_at_ms,
        // Negative: the claim came before the last exit (a failure of process.settle-claim).
        "claimAfterLastExitMs": o.claim.as_ref().zip(last_exit).map(|(c, l)| c.at_ms as i64 - l as i64),
        "unregistered": o.unregistered.iter().map(|m| json!({"pid": m.pid, "how": m.how, "command": m.command})).collect::<Vec<_>>(),
        // When the harness saw each process of the run go (its pidfd, or found gone at the claim).
        "exits": o.gone_at_ms.iter().map(|(pid, ms)| json!({"pid": pid, "goneAtMs": ms})).collect::<Vec<_>>(),
        "leftovers": o.leftovers,
    })
}

fn finding_json(f: &crate::checks::Finding) -> Value {
    json!({"check": f.check, "blame": format!("{:?}", f.blame()).to_lowercase(), "message": bound::cut(&f.message, bound::MESSAGE_BYTES),
        "level": f.level.as_str(), "source": f.source})
}

/// An upstream code newer than the subject's pin, and the category the subject showed for it.
fn upstream_json(c: &crate::suite::CaseReport) -> Option<Value> {
    let code = c.scenario.file.expect.upstream_code.as_ref()?;
    let obs = c.obs.as_ref()?;
    let diag = obs.result.as_ref().and_then(|r| r.diagnostic.as_deref());
    let shown = crate::checks::upstream_mapping(diag).unwrap_or_else(|| "(none)".into());
    let note = match shown.as_str() {
        s if s == code => "known",
        "unknown" => "mapped to unknown",
        _ => "mapped to another category",
    };
    Some(json!({"code": code, "shown": shown, "note": note}))
}

/// A verbose run's report also holds each passing observed case's block (`-v` prints it).
pub fn with_passing_details(mut report: Value, suite: &SuiteReport) -> Value {
    if let Some(cases) = report["cases"].as_array_mut() {
        for (v, c) in cases.iter_mut().zip(&suite.cases) {
            if v["detail"].is_null() && c.obs.is_some() {
                v["detail"] = case_detail(c).into();
            }
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use conform_protocol::subject::Mode;

    use super::*;
    use crate::checks::{Check, Finding};
    use crate::run::WatchdogChange;
    use crate::suite::CaseReport;

    /// Two catalog scenarios, run in background: one passed with a delivery timeline and a
    /// ledger, one failed with a finding.
    fn suite() -> SuiteReport {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let scenarios: Vec<_> = crate::scenario::discover(&root)
            .expect("loads")
            .into_iter()
            .filter(|s| s.id.starts_with("acp/stop/"))
            .collect();
        let case = |s: &crate::scenario::Scenario, verdict: Verdict| {
            let obs = Observed {
                ledger_text: vec!["← initialize".into(), "→ result".into()],
                gone_at_ms: [(42, 7)].into(),
                watchdog: vec![WatchdogChange {
                    status: conform_protocol::vocab::WatchdogStatus::Active,
                    at_ms: 3,
                    at: "2026-12-05T00:00:00.003Z".into(),
                }],
                ..Default::default()
            };
            CaseReport {
                scenario: Arc::new(s.clone()),
                mode: Mode::Background,
                findings: match verdict {
                    Verdict::Fail => vec![Finding::new(Check::ContractBound, "too long")],
                    _ => vec![],
                },
                verdict,
                advisories: vec![],
                snapshot: None,
                rerun: None,
                obs: Some(Box::new(obs)),
            }
        };
        SuiteReport {
            subject: "reference".into(),
            fakes_speak: Default::default(),
            real_peers: Default::default(),
            strictness: crate::settings::Strictness::All,
            jobs: 2,
            cases: vec![
                case(&scenarios[0], Verdict::Pass),
                case(&scenarios[1], Verdict::Fail),
            ],
            findings: vec![],
            stragglers: vec![],
            allow_skips: false,
            elapsed: std::time::Duration::from_millis(9),
            interrupted: None,
            cgroup: Default::default(),
            baseline: None,
            partition: None,
            positions: Default::default(),
            catalog: Default::default(),
            catalog_digest: String::new(),
            peak_rss_kib: Default::default(),
        }
    }

    /// The file is the whole report, key for key and byte for byte, though no case is held
    /// whole; what was added to the held report (a verbose run's detail, the harness's peak)
    /// is in it too.
    #[test]
    fn the_file_is_the_whole_report_made_a_case_at_a_time() {
        let report = suite();
        let mut held = held(&report);
        for case in held["cases"].as_array().expect("cases") {
            for key in FILE_ONLY {
                assert!(case.get(key).is_none(), "{key} is held");
            }
        }
        let mut whole_value = json(&report);
        for value in [&mut held, &mut whole_value] {
            value["peakRssKiB"]["harness"] = json!(123);
            value["cases"][0]["detail"] = json!("a passing case's detail");
        }
        // The same instant for both (`generatedAt` is read as each is made).
        whole_value["generatedAt"] = held["generatedAt"].clone();
        let mut file = Vec::new();
        write(&mut file, &held, &report).expect("written");
        let expected = serde_json::to_string_pretty(&whole_value).unwrap();
        assert_eq!(String::from_utf8(file).unwrap(), expected);
        assert_eq!(whole(&held, &report), whole_value);
        for key in FILE_ONLY {
            assert!(
                whole_value["cases"][1].get(key).is_some(),
                "{key} is written"
            );
        }
    }
}
