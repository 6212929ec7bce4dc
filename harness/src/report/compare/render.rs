//! The comparison as the terminal shows it, after the run's own report: one line of counts,
//! then new failures, fixed runs, the causes that moved (largest change first) and what no
//! longer runs — each list naming a few and counting the rest (the JSON keeps them all).

use std::fmt::Write as _;

use super::{CauseChange, Comparison, RunChange};
use crate::report::bound;

/// How many entries of one list are named (the rest are counted).
const NAMED: usize = 10;

/// How many patterns of one cause are shown.
const PATTERNS: usize = 3;

pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let from = c.file.as_ref().map_or_else(
        || "the previous report".to_owned(),
        |f| f.display().to_string(),
    );
    let when = c
        .generated_before
        .as_deref()
        .map(|w| format!(", written {w}"))
        .unwrap_or_default();
    let _ = writeln!(out, "\n━━ since the previous run ({from}{when})");
    for note in &c.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(
        out,
        "{} new failure(s), {} fixed, {} still failing, {} no longer run; failed {} → {}, passed {} → {}",
        c.new_failures.len(),
        c.fixed.len(),
        c.still_failing.len(),
        c.not_run_now.len(),
        c.counts_before.failed,
        c.counts_after.failed,
        c.counts_before.passed,
        c.counts_after.passed,
    );
    if c.unchanged() {
        let _ = writeln!(out, "nothing changed");
        return out;
    }
    runs(&mut out, "new failures", "✗", &c.new_failures);
    runs(&mut out, "fixed", "✓", &c.fixed);
    causes(&mut out, c);
    runs(&mut out, "no longer run", "−", &c.not_run_now);
    out
}

fn runs(out: &mut String, title: &str, mark: &str, list: &[RunChange]) {
    if list.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title}:");
    for ch in list.iter().take(NAMED) {
        let _ = writeln!(
            out,
            "  {mark} {} ({}) — {}",
            ch.run.0,
            ch.run.1,
            what_changed(ch)
        );
    }
    more(out, list.len());
}

/// The verdict before (and, where it is not the list's own, now), in words.
fn what_changed(ch: &RunChange) -> String {
    let before = match ch.before.as_str() {
        "pass" => "passed before",
        "fail" => "failed before",
        "known" => "a known failure before",
        "skip" => "skipped before",
        "interrupted" => "interrupted before",
        _ => "not in the previous report",
    };
    match ch.now.as_str() {
        "skip" => format!("{before}, skipped now"),
        "interrupted" => format!("{before}, interrupted now"),
        "absent" => format!("{before}, not in this report"),
        _ => before.to_owned(),
    }
}

/// Every moved cause in one list, largest change first: new, grew, shrank, gone.
fn causes(out: &mut String, c: &Comparison) {
    let mut all: Vec<(&str, &CauseChange)> = [
        ("new", &c.new_causes),
        ("grew", &c.grown_causes),
        ("shrank", &c.shrunk_causes),
        ("gone", &c.gone_causes),
    ]
    .into_iter()
    .flat_map(|(kind, list)| list.iter().map(move |ch| (kind, ch)))
    .collect();
    if all.is_empty() {
        return;
    }
    all.sort_by_key(|(_, ch)| std::cmp::Reverse(ch.size()));
    let _ = writeln!(out, "causes of failure that changed, largest change first:");
    for (kind, ch) in all.iter().take(NAMED) {
        let _ = writeln!(out, "  {kind:<6} {} → {} run(s)", ch.before, ch.after);
        for (check, pattern) in ch.patterns.iter().take(PATTERNS) {
            let _ = writeln!(out, "         [{check}] {}", bound::cut(pattern, 300));
        }
        if ch.patterns.len() > PATTERNS {
            let _ = writeln!(
                out,
                "         and {} more pattern(s)",
                ch.patterns.len() - PATTERNS
            );
        }
    }
    more(out, all.len());
}

fn more(out: &mut String, len: usize) {
    if len > NAMED {
        let _ = writeln!(
            out,
            "  and {} more (the JSON report's comparedWith lists them all)",
            len - NAMED
        );
    }
}
