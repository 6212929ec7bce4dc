//! A failed case's block as the reports show it: its checks and requirements, advisories, the
//! subject transcript, the runtime's ledger, host logs and the subject's stderr tail — whole in
//! the JSON report (`detail`), long lines folded on a terminal.

use std::fmt::Write as _;

use crate::report::bound;
use crate::run::Observed;
use crate::run::observed::ledger_lines;
use crate::suite::CaseReport;

/// A transcript or ledger line longer than this is folded in the default report.
pub const FOLD_BYTES: usize = 400;

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

pub fn case_detail(c: &CaseReport) -> String {
    detail(c, None)
}

/// A failure's detail as the default report shows it (long lines folded).
pub fn folded_detail(c: &CaseReport) -> String {
    detail(c, Some(FOLD_BYTES))
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
pub fn folded(line: &str, fold: Option<usize>) -> std::borrow::Cow<'_, str> {
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

pub fn indent(text: &str, pad: &str) -> String {
    text.replace('\n', &format!("\n{pad}"))
}
