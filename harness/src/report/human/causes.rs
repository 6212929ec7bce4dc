//! The causes of failure as the terminal prints them first ([`crate::report::causes`] groups
//! them): each cause's count, span, patterns with their requirements, runs, and past
//! [`super::COMPACT_OVER`] failures its first run in full.

use std::fmt::Write as _;

use serde_json::Value;

use super::{cases, count, folded_block, text};
use crate::report::bound;
use crate::report::detail::FOLD_BYTES;

/// How many runs of a cause the report names (the rest are counted).
const CAUSE_RUNS: usize = 5;

/// How many causes, the largest, show their first run in full (the smaller ones are read by
/// their patterns; `-v`, `--json` and `--html` keep every run).
const REPRESENTED: usize = 10;

/// How many lines of a cause's first run the report shows (the JSON keeps them all).
const REPRESENTATIVE_LINES: usize = 40;

/// The failures grouped by cause ([`crate::report::causes`]), largest first: each cause's
/// count, the providers and families it spans, its findings' patterns with their
/// requirements, its runs, and with `representatives` its first run in full (the
/// [`REPRESENTED`] largest causes').
pub(super) fn section(report: &Value, representatives: bool) -> String {
    let causes = report["causes"].as_array().map_or(&[][..], Vec::as_slice);
    if causes.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "{} cause(s) of {} failed run(s), largest first (a run can fail for several):\n",
        causes.len(),
        count(report, "fail")
    );
    let join = |v: &Value| {
        v.as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (n, cause) in causes.iter().enumerate() {
        let runs = cause["runs"].as_array().map_or(&[][..], Vec::as_slice);
        let _ = writeln!(
            out,
            "\n{:>3}. {} run(s) · {} · {}",
            n + 1,
            runs.len(),
            join(&cause["providers"]),
            join(&cause["families"])
        );
        let first = runs.first().and_then(|r| case_of(report, r));
        for p in cause["patterns"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "     [{}] {}",
                text(&p["check"]),
                bound::cut(text(&p["pattern"]), 300)
            );
            if let Some(f) = first.and_then(|c| finding_of(c, text(&p["check"]))) {
                let _ = writeln!(
                    out,
                    "       requirement ({}): {}",
                    text(&f["level"]),
                    text(&f["source"])
                );
            }
        }
        let shown: Vec<String> = runs
            .iter()
            .take(CAUSE_RUNS)
            .map(|r| format!("{} ({})", text(&r["id"]), text(&r["mode"])))
            .collect();
        let more = runs.len().saturating_sub(CAUSE_RUNS);
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
        if let Some(c) = first.filter(|_| representatives && n < REPRESENTED) {
            out.push_str(&representative(c));
        }
    }
    out
}

/// The case a cause's run names.
fn case_of<'a>(report: &'a Value, run: &Value) -> Option<&'a Value> {
    cases(report)
        .iter()
        .find(|c| c["id"] == run["id"] && c["mode"] == run["mode"])
}

/// A case's first finding of this check.
fn finding_of<'a>(case: &'a Value, check: &str) -> Option<&'a Value> {
    case["findings"]
        .as_array()?
        .iter()
        .find(|f| f["check"] == check)
}

/// A cause's first run as its block, folded, indented under the cause, at most
/// [`REPRESENTATIVE_LINES`] lines.
fn representative(case: &Value) -> String {
    let block = folded_block(text(&case["detail"]), Some(FOLD_BYTES));
    let lines: Vec<&str> = block.trim_start_matches('\n').lines().collect();
    let mut out = String::from("     its first run:\n");
    for line in lines.iter().take(REPRESENTATIVE_LINES) {
        let _ = writeln!(out, "       {line}");
    }
    if lines.len() > REPRESENTATIVE_LINES {
        let _ = writeln!(
            out,
            "       … {} more line(s) (-v prints them; --json / --html keep them)",
            lines.len() - REPRESENTATIVE_LINES
        );
    }
    out
}
