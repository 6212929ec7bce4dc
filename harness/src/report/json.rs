//! The JSON report (exact: subject texts are not escaped): what every other report is read
//! from.

use serde_json::json;

use crate::report::bound;
use crate::report::detail::case_detail;
use crate::run::Observed;
use crate::suite::{SuiteReport, Verdict};

pub fn json(report: &SuiteReport) -> serde_json::Value {
    json!({
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
        "cases": report.cases.iter().enumerate().map(|(i, c)| case_json(report, i, c)).collect::<Vec<_>>(),
        // What each check holds a subject to, and where that comes from (`conform list --checks`).
        "checks": crate::checks::Check::ALL.iter().map(|c| json!({
            "id": c.id(), "requirement": c.requirement(), "level": c.level().as_str(), "source": c.source(),
        })).collect::<Vec<_>>(),
    })
}

/// One case: its verdict, findings and advisories, and what its run left to read.
fn case_json(report: &SuiteReport, i: usize, c: &crate::suite::CaseReport) -> serde_json::Value {
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
        "settle": c.obs.as_ref().map(settle_json),
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
fn settle_json(o: &Observed) -> serde_json::Value {
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

fn finding_json(f: &crate::checks::Finding) -> serde_json::Value {
    json!({"check": f.check, "blame": format!("{:?}", f.blame()).to_lowercase(), "message": bound::cut(&f.message, bound::MESSAGE_BYTES),
        "level": f.level.as_str(), "source": f.source})
}

/// An upstream code newer than the subject's pin, and the category the subject showed for it.
fn upstream_json(c: &crate::suite::CaseReport) -> Option<serde_json::Value> {
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
pub fn with_passing_details(
    mut report: serde_json::Value,
    suite: &SuiteReport,
) -> serde_json::Value {
    if let Some(cases) = report["cases"].as_array_mut() {
        for (v, c) in cases.iter_mut().zip(&suite.cases) {
            if v["detail"].is_null() && c.obs.is_some() {
                v["detail"] = case_detail(c).into();
            }
        }
    }
    report
}
