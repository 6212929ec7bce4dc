//! The human report: a table of every case, then each failure with its checks, the subject
//! transcript, the runtime's wire transcript and the subject's stderr tail, then what the
//! suite as a whole found and the counts.

use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::report::bound;
use crate::run::Observed;
use crate::run::observed::ledger_line;
use crate::suite::{CaseReport, SuiteReport, Verdict};

/// The whole human report, as its sections: the table, each failure's detail, upstream codes,
/// the settling mode, what the suite itself found, the baseline, and the closing counts.
pub fn human(report: &SuiteReport, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "subject: {}", report.subject);
    out.push_str(&header(report));
    out.push_str(&table(report));
    for c in &report.cases {
        if matches!(c.verdict, Verdict::Fail) || (verbose && c.obs.is_some()) {
            out.push_str(&case_detail(c));
        } else if !c.advisories.is_empty() {
            out.push_str(&advisories(c));
        }
        if let Some(note) = &c.snapshot {
            let _ = writeln!(out, "\n{} ({}): {note}", c.scenario.id, c.mode);
        }
    }
    out.push_str(&upstream_section(report));
    out.push_str(&suite_section(report));
    if let Some(b) = &report.baseline {
        out.push_str(&baseline_section(b));
    }
    out.push_str(&closing(report));
    out
}

/// What the subject was judged against: the products the fakes spoke, and how strictly.
fn header(report: &SuiteReport) -> String {
    let mut out = String::new();
    if !report.fakes_speak.is_empty() {
        let spoken: Vec<&str> = report.fakes_speak.values().map(String::as_str).collect();
        let _ = writeln!(out, "fakes speak: {}", spoken.join("; "));
    }
    if !report.real_peers.is_empty() {
        let ran: Vec<String> = report
            .real_peers
            .iter()
            .map(|(name, p)| {
                format!(
                    "{name} {}",
                    p.version
                        .as_deref()
                        .unwrap_or("(its manifest gives no version)")
                )
            })
            .collect();
        let _ = writeln!(out, "real peers: {}", ran.join("; "));
    }
    if report.strictness != crate::settings::Strictness::All {
        let _ = writeln!(
            out,
            "strictness: {} (failures of other requirements are advisories)",
            report.strictness.as_str()
        );
    }
    out
}

/// One row per case: its verdict, time and first failed check.
fn table(report: &SuiteReport) -> String {
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
    format!("{table}\n")
}

/// Upstream codes newer than the subject's pin, as the subject shows them.
fn upstream_section(report: &SuiteReport) -> String {
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
    if upstream.is_empty() {
        return String::new();
    }
    format!(
        "\nupstream codes newer than the subject's pin, as the subject shows them:\n{}\n",
        upstream.join("\n")
    )
}

/// What belongs to the suite, not to a case: the settling mode, processes left behind, the
/// suite's own findings.
fn suite_section(report: &SuiteReport) -> String {
    let mut out = String::new();
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
    out
}

/// Why the suite stopped or tested nothing, if so, and the counts.
fn closing(report: &SuiteReport) -> String {
    let mut out = String::new();
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
fn baseline_section(b: &crate::suite::baseline::Outcome) -> String {
    use crate::suite::baseline::Status;
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

/// A passing case's advisories: what failed of requirements past `--strictness`.
fn advisories(c: &CaseReport) -> String {
    let mut out = format!(
        "\n━━ {} ({}) — passed, with advisories\n",
        c.scenario.id, c.mode
    );
    out.push_str(&advisory_lines(c));
    out
}

fn advisory_lines(c: &CaseReport) -> String {
    let mut out = String::new();
    for f in &c.advisories {
        let _ = writeln!(
            out,
            "  ⚠ advisory [{}] {}",
            f.check,
            indent(&bound::cut(&f.message, bound::MESSAGE_BYTES), "    ")
        );
        let _ = writeln!(
            out,
            "    requirement ({}, past --strictness): {}",
            f.level.as_str(),
            f.source
        );
    }
    out
}

pub(crate) fn case_detail(c: &CaseReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n━━ {} ({}) — {}\n   {}",
        c.scenario.id,
        c.mode,
        c.scenario.file.title,
        c.scenario.path.display()
    );
    let runtime = match (&c.scenario.file.peer, &c.obs) {
        (Some(peer), _) => format!("the real peer `{}`", peer.name),
        (None, obs) => crate::suite::schedule::speaks(
            c.scenario.file.provider,
            obs.as_ref().and_then(|o| o.product_version.as_deref()),
        ),
    };
    let _ = writeln!(out, "   runtime: {runtime}");
    for f in &c.findings {
        let message = bound::cut(&f.message, bound::MESSAGE_BYTES);
        let _ = writeln!(out, "  ✗ [{}] {}", f.check, indent(&message, "    "));
        let _ = writeln!(out, "    requirement ({}): {}", f.level.as_str(), f.source);
    }
    out.push_str(&advisory_lines(c));
    if let Some(obs) = &c.obs {
        out.push_str(&transcripts(obs));
    }
    // Each part is bounded; so is the block, whatever a run piles up.
    bound::cut(&out, bound::DETAIL_BYTES)
}

fn transcripts(obs: &Observed) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  subject transcript (run {}):", obs.run);
    for line in &obs.transcript {
        let _ = writeln!(out, "    {line}");
    }
    let _ = writeln!(out, "  runtime ledger:");
    let ledger: Vec<String> = obs
        .fake
        .iter()
        .map(ledger_line)
        .chain(obs.ledger_text.iter().cloned())
        .collect();
    for line in bound::cut_lines(&ledger, bound::LEDGER_LINES, bound::LEDGER_BYTES) {
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
        let _ = writeln!(out, "  {}", indent(&obs.stderr_tail, "    "));
    }
    out
}

pub(crate) fn indent(text: &str, pad: &str) -> String {
    text.replace('\n', &format!("\n{pad}"))
}
