//! The human report: a table of every case, then each failure with its checks, the subject
//! transcript, the runtime's wire transcript and the subject's stderr tail. Also a JSON form.

pub mod baseline;
pub mod merge;
pub mod terminal;

use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};
use conform_protocol::side::{Direction, FakeEvent};
use serde_json::json;

use crate::run::Observed;
use crate::suite::{CaseReport, SuiteReport, Verdict};

pub fn human(report: &SuiteReport, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "subject: {}", report.subject);
    let mut table = Table::new();
    table.load_preset(UTF8_BORDERS_ONLY);
    table.set_header(["case", "mode", "result", "ms", "first failed check"]);
    for c in &report.cases {
        let (result, check) = match &c.verdict {
            Verdict::Pass => ("pass".to_owned(), String::new()),
            Verdict::Fail => (
                "FAIL".to_owned(),
                c.findings
                    .first()
                    .map(|f| f.check.id().to_owned())
                    .unwrap_or_default(),
            ),
            Verdict::Known(_) => (
                "known".to_owned(),
                c.findings
                    .first()
                    .map(|f| format!("{} (baseline)", f.check.id()))
                    .unwrap_or_default(),
            ),
            Verdict::Skip(why) => ("skip".to_owned(), why.clone()),
            Verdict::Interrupted(why) => ("interrupted".to_owned(), why.clone()),
        };
        let ms = c
            .obs
            .as_ref()
            .map(|o| o.elapsed.as_millis().to_string())
            .unwrap_or_default();
        table.add_row([c.scenario.id.clone(), c.mode.to_string(), result, ms, check]);
    }
    let _ = writeln!(out, "{table}");
    for c in &report.cases {
        if matches!(c.verdict, Verdict::Fail) || (verbose && c.obs.is_some()) {
            out.push_str(&case_detail(c));
        }
        if let Some(note) = &c.snapshot {
            let _ = writeln!(out, "\n{} ({}): {note}", c.scenario.id, c.mode);
        }
    }
    let upstream: Vec<String> = report
        .cases
        .iter()
        .filter_map(|c| {
            let code = c.scenario.file.expect.upstream_code.as_ref()?;
            let obs = c.obs.as_ref()?;
            let diag = obs.result.as_ref().and_then(|r| r.diagnostic.as_deref());
            let shown = crate::checks::upstream_mapping(diag).unwrap_or_else(|| "(none)".into());
            let note = match shown.as_str() {
                s if s == code => "known",
                "unknown" => "mapped to unknown",
                _ => "mapped to another category",
            };
            Some(format!(
                "  {code} ({}): category `{shown}` — {note}",
                c.mode
            ))
        })
        .collect();
    if !upstream.is_empty() {
        let _ = writeln!(
            out,
            "\nupstream codes newer than the subject's pin, as the subject shows them:\n{}",
            upstream.join("\n")
        );
    }
    match &report.cgroup {
        crate::suite::CgroupMode::Off => {}
        crate::suite::CgroupMode::On(dir) => {
            let _ = writeln!(
                out,
                "\ncgroup mode: on (each runtime in a cgroup of its own under {})",
                dir.display()
            );
        }
        crate::suite::CgroupMode::Unavailable(why) => {
            let _ = writeln!(
                out,
                "\ncgroup mode: unavailable ({why}); settling was judged from /proc alone"
            );
        }
    }
    if !report.stragglers.is_empty() {
        let _ = writeln!(
            out,
            "\nprocesses left behind after the suite (killed): {}",
            report.stragglers.join(", ")
        );
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "\n━━ the suite");
        for f in &report.findings {
            let _ = writeln!(out, "  ✗ [{}] {}", f.check, indent(&f.message, "    "));
        }
    }
    if let Some(b) = &report.baseline {
        out.push_str(&baseline_section(b));
    }
    if let Some(signo) = report.interrupted {
        let _ = writeln!(
            out,
            "\ninterrupted by {}: the runs in flight were stopped and their processes killed; {} case(s) did not finish",
            crate::proc::interrupt::name(signo),
            report
                .cases
                .iter()
                .filter(|c| matches!(c.verdict, Verdict::Interrupted(_)))
                .count()
        );
    } else if let Some(why) = report
        .nothing_tested()
        .filter(|_| report.findings.is_empty())
    {
        let _ = writeln!(out, "\n{why}");
    }
    let count = |f: fn(&Verdict) -> bool| report.cases.iter().filter(|c| f(&c.verdict)).count();
    let known = count(|v| matches!(v, Verdict::Known(_)));
    let _ = writeln!(
        out,
        "\n{} passed, {} failed, {}{} skipped in {:.1} s",
        count(|v| matches!(v, Verdict::Pass)),
        count(|v| matches!(v, Verdict::Fail)),
        if report.baseline.is_some() {
            format!("{known} known, ")
        } else {
            String::new()
        },
        count(|v| matches!(v, Verdict::Skip(_))),
        report.elapsed.as_secs_f64()
    );
    out
}

/// The baseline's part of the human report: how many failures it covered, and every stale
/// entry (each fails the run) with where it is written.
fn baseline_section(b: &crate::report::baseline::Outcome) -> String {
    use crate::report::baseline::Status;
    let mut out = String::new();
    let count = |f: fn(&Status) -> bool| b.entries.iter().filter(|(_, s)| f(s)).count();
    let _ = writeln!(
        out,
        "\nbaseline {}: {} entr(ies) matched a failure, {} stale, {} not run here",
        b.path.display(),
        count(|s| matches!(s, Status::Matched(_))),
        count(|s| matches!(s, Status::Stale(_))),
        count(|s| matches!(s, Status::NotRun)),
    );
    for (e, s) in b.stale() {
        let Status::Stale(why) = s else { continue };
        let _ = writeln!(
            out,
            "  ✗ stale: {}:{}: `{}` — {why} (delete the entry)",
            b.path.display(),
            e.line,
            e.id
        );
    }
    out
}

fn case_detail(c: &CaseReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n━━ {} ({}) — {}\n   {}",
        c.scenario.id,
        c.mode,
        c.scenario.file.title,
        c.scenario.path.display()
    );
    for f in &c.findings {
        let _ = writeln!(out, "  ✗ [{}] {}", f.check, indent(&f.message, "    "));
    }
    if let Some(obs) = &c.obs {
        out.push_str(&transcripts(obs));
    }
    out
}

fn transcripts(obs: &Observed) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  subject transcript (run {}):", obs.run);
    for line in &obs.transcript {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "  runtime ledger:");
    for line in obs
        .fake
        .iter()
        .map(ledger_line)
        .chain(obs.ledger_text.iter().cloned())
    {
        let _ = writeln!(out, "    {line}");
    }
    if obs.wire_lines_dropped > 0 {
        let _ = writeln!(
            out,
            "    … {} more frame(s) from the subject and violation(s) not kept",
            obs.wire_lines_dropped
        );
    }
    if !obs.host_logs.is_empty() {
        let _ = writeln!(out, "  host log:");
        for l in &obs.host_logs {
            let _ = writeln!(out, "    {}", indent(l, "    "));
        }
        if obs.host_logs_dropped > 0 {
            let _ = writeln!(out, "    … {} more line(s) not kept", obs.host_logs_dropped);
        }
    }
    if !obs.stderr_tail.is_empty() {
        let _ = writeln!(
            out,
            "  subject stderr tail:\n    {}",
            indent(&obs.stderr_tail, "    ")
        );
    }
    out
}

/// One line of the runtime ledger as the failure report prints it.
pub fn ledger_line(l: &conform_protocol::side::FakeLine) -> String {
    let text = match &l.event {
        FakeEvent::Frame {
            dir,
            frame,
            violation,
            ..
        } => format!(
            "{} {}{}",
            match dir {
                Direction::Recv => "subject→runtime",
                Direction::Sent => "runtime→subject",
            },
            frame,
            violation
                .as_ref()
                .map(|v| format!("   (violation on purpose: {v})"))
                .unwrap_or_default()
        ),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    format!("[{}] {text}", l.pid)
}

fn indent(text: &str, pad: &str) -> String {
    text.replace('\n', &format!("\n{pad}"))
}

/// JUnit XML for CI systems: one test suite per provider, one test case per scenario × mode.
/// A subject failure is a `failure`, a harness fault an `error`, a known failure (baseline) a
/// `skipped` with its reason; the description carries the same detail as the human report
/// (checks, transcripts, stderr tail). Made from the JSON report, so a merged report
/// (`conform report merge`) gets the same XML.
pub fn junit(report: &SuiteReport) -> Result<String, quick_junit::SerializeError> {
    junit_from_json(&json(report))
}

pub fn junit_from_json(report: &serde_json::Value) -> Result<String, quick_junit::SerializeError> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let harness_fault = |findings: &serde_json::Value| {
        findings
            .as_array()
            .is_some_and(|fs| fs.iter().any(|f| f["blame"] == "harness"))
    };
    let mut out = Report::new("conform");
    out.set_time(std::time::Duration::from_millis(
        report["elapsedMs"].as_u64().unwrap_or_default(),
    ));
    let mut suites: std::collections::BTreeMap<String, TestSuite> = Default::default();
    for c in report["cases"].as_array().into_iter().flatten() {
        let provider = text(&c["provider"]);
        let status = match c["verdict"].as_str().unwrap_or_default() {
            "pass" => TestCaseStatus::success(),
            "skip" | "interrupted" => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(text(&c["skipReason"]));
                s
            }
            "known" => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "known failure (baseline): {}",
                    text(&c["baselineReason"])
                ));
                s.set_description(text(&c["detail"]));
                s
            }
            _ => {
                let kind = if harness_fault(&c["findings"]) {
                    NonSuccessKind::Error
                } else {
                    NonSuccessKind::Failure
                };
                let mut s = TestCaseStatus::non_success(kind);
                if let Some(first) = c["findings"].as_array().and_then(|f| f.first()) {
                    s.set_message(format!(
                        "[{}] {}",
                        text(&first["check"]),
                        text(&first["message"]).lines().next().unwrap_or_default()
                    ));
                    s.set_type(text(&first["check"]));
                }
                s.set_description(text(&c["detail"]));
                s
            }
        };
        let mut case = TestCase::new(format!("{} ({})", text(&c["id"]), text(&c["mode"])), status);
        case.set_classname(provider.clone());
        if let Some(ms) = c["elapsedMs"].as_u64() {
            case.set_time(std::time::Duration::from_millis(ms));
        }
        suites
            .entry(provider.clone())
            .or_insert_with(|| TestSuite::new(provider))
            .add_test_case(case);
    }
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    let stragglers = report["stragglers"].as_array().cloned().unwrap_or_default();
    let stale: Vec<&serde_json::Value> = report["baseline"]["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["status"] == "stale")
        .collect();
    if !findings.is_empty() || !stragglers.is_empty() || !stale.is_empty() {
        let mut s = TestCaseStatus::non_success(if harness_fault(&report["findings"]) {
            NonSuccessKind::Error
        } else {
            NonSuccessKind::Failure
        });
        let mut detail = String::new();
        for f in &findings {
            let _ = writeln!(detail, "[{}] {}", text(&f["check"]), text(&f["message"]));
        }
        if !stragglers.is_empty() {
            let names: Vec<String> = stragglers.iter().map(text).collect();
            let _ = writeln!(
                detail,
                "[process.settled] processes left behind after the suite (killed): {}",
                names.join(", ")
            );
        }
        for e in stale {
            let _ = writeln!(
                detail,
                "[baseline] stale entry `{}` ({}:{}): {}",
                text(&e["id"]),
                text(&report["baseline"]["file"]),
                e["line"],
                text(&e["why"])
            );
        }
        s.set_message(detail.lines().next().unwrap_or_default().to_owned());
        s.set_description(detail);
        let mut suite = TestSuite::new("suite");
        suite.add_test_case(TestCase::new("the suite as a whole", s));
        suites.insert("~suite".to_owned(), suite);
    }
    out.add_test_suites(suites.into_values());
    out.to_string()
}

pub fn json(report: &SuiteReport) -> serde_json::Value {
    json!({
        "subject": report.subject,
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
            "entries": b.entries.iter().map(|(e, s)| json!({
                "id": e.id,
                "reason": e.reason,
                "line": e.line,
                "status": s.as_str(),
                "why": match s { crate::report::baseline::Status::Stale(why) => Some(why), _ => None },
            })).collect::<Vec<_>>(),
        })),
        "cgroup": match &report.cgroup {
            crate::suite::CgroupMode::Off => json!({"mode": "off"}),
            crate::suite::CgroupMode::On(dir) => json!({"mode": "on", "dir": dir}),
            crate::suite::CgroupMode::Unavailable(why) => json!({"mode": "unavailable", "why": why}),
        },
        "cases": report.cases.iter().enumerate().map(|(i, c)| json!({
            "id": c.scenario.id,
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
            "elapsedMs": c.obs.as_ref().map(|o| o.elapsed.as_millis() as u64),
            // What the snapshot holds (job ids masked): runs compare across reports.
            "modelVisible": c.obs.as_ref().map(crate::snapshot::render),
            "settle": c.obs.as_ref().map(settle_json),
            // The runtime's ledger as the failure report prints it (a passing run keeps it only
            // with --verbose): what a real peer can be replayed against (`ci/claude-sdk`).
            "ledger": c.obs.as_ref().map(|o| &o.ledger_text),
            "delivery": c.obs.as_ref().filter(|_| c.mode == conform_protocol::subject::Mode::Background).map(|o| json!({
                "dispatch": o.dispatch_receipt,
                "completion": o.completion_receipt,
                "watchdog": o.watchdog.last().map(|c| c.status),
                "timeline": o.watchdog,
            })),
        })).collect::<Vec<_>>(),
    })
}

/// The run's process tree at the subject's claim and after: the claim with each process's state
/// then, when the last registered process was seen gone, and what was left over.
fn settle_json(o: &Observed) -> serde_json::Value {
    let last_exit = o.gone_at_ms.values().max().copied();
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
    json!({"check": f.check, "blame": format!("{:?}", f.blame()).to_lowercase(), "message": f.message})
}

/// The human form of a merged report (`conform report merge`): each failed case's block, the
/// suite's own findings, stale baseline entries, and the counts.
pub fn summary_from_json(report: &serde_json::Value) -> String {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let mut out = String::new();
    let _ = writeln!(out, "subject: {}", text(&report["subject"]));
    for s in report["shards"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  shard {} ({}): exit {}, {:.1} s",
            text(&s["partition"]),
            text(&s["file"]),
            s["exitCode"],
            s["elapsedMs"].as_u64().unwrap_or_default() as f64 / 1000.0
        );
    }
    let cases = report["cases"].as_array().cloned().unwrap_or_default();
    for c in cases.iter().filter(|c| c["verdict"] == "fail") {
        out.push_str(&text(&c["detail"]));
    }
    let stragglers: Vec<String> = report["stragglers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if !stragglers.is_empty() {
        let _ = writeln!(
            out,
            "\nprocesses left behind after the suite (killed): {}",
            stragglers.join(", ")
        );
    }
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    if !findings.is_empty() {
        let _ = writeln!(out, "\n━━ the suite");
        for f in &findings {
            let _ = writeln!(
                out,
                "  ✗ [{}] {}",
                text(&f["check"]),
                indent(&text(&f["message"]), "    ")
            );
        }
    }
    let baseline = &report["baseline"];
    if !baseline.is_null() {
        let entries = baseline["entries"].as_array().cloned().unwrap_or_default();
        let count = |s: &str| entries.iter().filter(|e| e["status"] == s).count();
        let _ = writeln!(
            out,
            "\nbaseline {}: {} entr(ies) matched a failure, {} stale, {} not run",
            text(&baseline["file"]),
            count("matched"),
            count("stale"),
            count("not-run")
        );
        for e in entries.iter().filter(|e| e["status"] == "stale") {
            let _ = writeln!(
                out,
                "  ✗ stale: {}:{}: `{}` — {} (delete the entry)",
                text(&baseline["file"]),
                e["line"],
                text(&e["id"]),
                text(&e["why"])
            );
        }
    }
    let count = |v: &str| cases.iter().filter(|c| c["verdict"] == v).count();
    let _ = writeln!(
        out,
        "\n{} passed, {} failed, {}{} skipped in {:.1} s (merged from {} shards)",
        count("pass"),
        count("fail"),
        if baseline.is_null() {
            String::new()
        } else {
            format!("{} known, ", count("known"))
        },
        count("skip") + count("interrupted"),
        report["elapsedMs"].as_u64().unwrap_or_default() as f64 / 1000.0,
        report["shards"].as_array().map_or(0, Vec::len),
    );
    out
}
