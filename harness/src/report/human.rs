//! The human report, leading with what failed: where the subject stands (a matrix of families
//! by provider; `-v`: a row for every case), then each failure with its checks, requirements,
//! the subject transcript, the runtime's wire transcript and the subject's stderr tail (long
//! lines folded; `-v` and `--json` keep them whole), then what the suite as a whole found, the
//! failures by name, why cases were skipped, and the counts.

use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};

use crate::report::bound;
use crate::run::Observed;
use crate::run::observed::ledger_lines;
use crate::suite::{CaseReport, SuiteReport, Verdict};

/// The whole human report, as its sections: the matrix (or with `verbose`, the table), each
/// failure's detail, upstream codes, the settling mode, what the suite itself found, the
/// baseline, the failures by name, the skips by reason, and the closing counts.
pub fn human(report: &SuiteReport, verbose: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "subject: {}", report.subject);
    out.push_str(&header(report));
    if verbose {
        out.push_str(&table(report));
    } else {
        out.push_str(&matrix(report));
    }
    out.push_str(&causes_section(report));
    let fold = (!verbose).then_some(FOLD_BYTES);
    let failed = report
        .cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail))
        .count();
    // Hundreds of failures are read by their causes: each then shows what matters of it.
    let compact = !verbose && failed > COMPACT_OVER;
    if compact {
        let _ = writeln!(
            out,
            "\n{failed} failed runs: each below shows its first failed check and that check's requirement; -v prints every check, transcript and ledger, and --json / --html keep them whole.\n"
        );
    }
    for c in &report.cases {
        if compact && matches!(c.verdict, Verdict::Fail) {
            out.push_str(&compact_detail(c));
        } else if matches!(c.verdict, Verdict::Fail) || (verbose && c.obs.is_some()) {
            out.push_str(&detail(c, fold));
        } else if !c.advisories.is_empty() {
            out.push_str(&advisories(c));
        }
        for note in c.snapshot.iter().chain(&c.rerun) {
            let _ = writeln!(out, "\n{} ({}): {note}", c.scenario.id, c.mode);
        }
    }
    out.push_str(&upstream_section(report));
    out.push_str(&suite_section(report));
    if let Some(b) = &report.baseline {
        out.push_str(&baseline_section(b));
        if let Some(warning) = b.catalog_warning(&report.catalog_digest) {
            let _ = writeln!(out, "{warning}");
        }
    }
    if !verbose {
        out.push_str(&by_name(report));
        out.push_str(&skips(report));
    }
    out.push_str(&closing(report));
    out
}

/// How many runs of a cause the report names (the rest are counted).
const CAUSE_RUNS: usize = 5;

/// The failures grouped by cause ([`crate::report::causes`]), largest first: each cause's
/// count, the providers and families it spans, its findings' patterns, and its runs — the
/// first one is shown in full below.
fn causes_section(report: &SuiteReport) -> String {
    let causes = crate::report::causes::of(&crate::report::causes::failed(report));
    if causes.is_empty() {
        return String::new();
    }
    let failed = report
        .cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail))
        .count();
    let mut out = format!(
        "\n{} cause(s) of {failed} failed run(s), largest first (a run can fail for several):\n",
        causes.len()
    );
    for (n, cause) in causes.iter().enumerate() {
        let join = |s: &std::collections::BTreeSet<String>| {
            s.iter().cloned().collect::<Vec<_>>().join(", ")
        };
        let _ = writeln!(
            out,
            "\n{:>3}. {} run(s) · {} · {}",
            n + 1,
            cause.runs.len(),
            join(&cause.providers),
            join(&cause.families)
        );
        for (check, pattern) in &cause.patterns {
            let _ = writeln!(out, "     [{check}] {}", bound::cut(pattern, 300));
        }
        let shown: Vec<String> = cause
            .runs
            .iter()
            .take(CAUSE_RUNS)
            .map(|(id, mode)| format!("{id} ({mode})"))
            .collect();
        let more = cause.runs.len().saturating_sub(CAUSE_RUNS);
        let _ = writeln!(
            out,
            "     runs: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more (--json lists them all)")
            } else {
                String::new()
            }
        );
    }
    out
}

/// A transcript or ledger line longer than this is folded in the default report.
const FOLD_BYTES: usize = 400;

/// How many skip reasons the default report lists (the most frequent first).
const SKIP_REASONS: usize = 5;

/// Every case counted by family and provider ([`super::matrix`]), one row per family.
fn matrix(report: &SuiteReport) -> String {
    let m = super::matrix::Matrix::of(&report.cases);
    if m.rows.is_empty() {
        return String::new();
    }
    let mut table = Table::new();
    table.load_preset(UTF8_BORDERS_ONLY);
    let mut head = vec!["family".to_owned()];
    head.extend(m.providers.iter().map(|p| p.to_string()));
    table.set_header(head);
    for (family, cells) in &m.rows {
        let mut row = vec![family.clone()];
        row.extend(
            m.providers
                .iter()
                .map(|p| cells.get(p).map(|c| c.cell()).unwrap_or_default()),
        );
        table.add_row(row);
    }
    format!(
        "{table}
(cases passed; ✗ failed, ~ known from the baseline, − skipped, ! interrupted; -v lists every case)
"
    )
}

/// The failed and known cases by name, one line each with the first failed check.
fn by_name(report: &SuiteReport) -> String {
    let mut out = String::new();
    let failed: Vec<&CaseReport> = report
        .cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail | Verdict::Known(_)))
        .collect();
    if failed.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "
{} case(s) failed:",
        failed.len()
    );
    for c in failed {
        let check = c.findings.first().map(|f| f.check.id()).unwrap_or("?");
        let (mark, note) = match c.verdict {
            Verdict::Known(_) => ("~", " (known: in the baseline)"),
            _ => ("✗", ""),
        };
        let _ = writeln!(
            out,
            "  {mark} {} ({}) [{check}]{note}",
            c.scenario.id, c.mode
        );
    }
    if report
        .cases
        .iter()
        .any(|c| matches!(c.verdict, Verdict::Fail))
    {
        let _ = writeln!(
            out,
            "(long transcript and ledger lines are folded above: `-v` prints them whole, `--json FILE` keeps them)"
        );
    }
    out
}

/// Why cases were skipped: the most frequent reasons with their counts.
fn skips(report: &SuiteReport) -> String {
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for c in &report.cases {
        if let Verdict::Skip(why) = &c.verdict {
            *reasons.entry(why.as_str()).or_default() += 1;
        }
    }
    if reasons.is_empty() {
        return String::new();
    }
    let mut reasons: Vec<(&str, usize)> = reasons.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = String::from(
        "
skipped:
",
    );
    for (why, n) in reasons.iter().take(SKIP_REASONS) {
        let _ = writeln!(out, "  {n} × {why}");
    }
    if reasons.len() > SKIP_REASONS {
        let _ = writeln!(
            out,
            "  … and {} other reason(s) (-v lists every case)",
            reasons.len() - SKIP_REASONS
        );
    }
    out
}

/// What the subject was judged against: the products the fakes spoke, and how strictly.
fn header(report: &SuiteReport) -> String {
    let mut out = String::new();
    if !report.catalog_digest.is_empty() {
        let _ = writeln!(out, "catalog: {}", report.catalog_digest);
    }
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
    detail(c, None)
}

/// Past this many failed runs the default report shows each by its first failed check only
/// (a CI log of hundreds of failures stays readable; the causes above say the rest).
const COMPACT_OVER: usize = 40;

/// A failure in three lines: which run, its first failed check, that check's requirement.
fn compact_detail(c: &CaseReport) -> String {
    let mut out = format!(
        "━━ {} ({}) — {}\n",
        c.scenario.id, c.mode, c.scenario.file.title
    );
    if let Some(f) = c.findings.first() {
        let first = f.message.lines().next().unwrap_or_default();
        let more = c.findings.len() - 1;
        let _ = writeln!(
            out,
            "  ✗ [{}] {}{}",
            f.check,
            bound::cut(first, 300),
            if more > 0 {
                format!(" (and {more} more check(s))")
            } else {
                String::new()
            }
        );
        let _ = writeln!(out, "    requirement ({}): {}", f.level.as_str(), f.source);
    }
    out
}

/// A failure's detail; with `fold`, each transcript or ledger line past that many bytes is cut.
fn detail(c: &CaseReport, fold: Option<usize>) -> String {
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
        out.push_str(&transcripts(obs, fold));
    }
    // Each part is bounded; so is the block, whatever a run piles up.
    bound::cut(&out, bound::DETAIL_BYTES)
}

/// A line as the default report shows it: whole, or cut at `fold` bytes with what was left.
fn folded(line: &str, fold: Option<usize>) -> std::borrow::Cow<'_, str> {
    match fold {
        Some(max) if line.len() > max => {
            let mut end = max;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{} … (+{} bytes)", &line[..end], line.len() - end).into()
        }
        _ => line.into(),
    }
}

fn transcripts(obs: &Observed, fold: Option<usize>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "  subject transcript (run {}):", obs.run);
    for line in &obs.transcript {
        let _ = writeln!(out, "    {}", folded(line, fold));
    }
    let _ = writeln!(out, "  runtime ledger:");
    let ledger: Vec<String> = ledger_lines(&obs.fake)
        .into_iter()
        .chain(obs.ledger_text.iter().cloned())
        .collect();
    for line in bound::cut_lines(&ledger, bound::LEDGER_LINES, bound::LEDGER_BYTES) {
        let _ = writeln!(out, "    {}", folded(&line, fold));
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
