//! A run against the previous one (`--compare PREV.json`): what broke since, what was fixed,
//! what no longer runs, and which causes of failure are new, gone, grew or shrank. Pure over
//! two JSON reports ([`super::json`], or merged ones): the previous and the current.
//!
//! A run is its `(id, mode)`. A cause is known by its patterns (check id × masked first line,
//! [`super::causes`]). The same findings group differently when the runs they fail change (two
//! patterns failing the same ten runs are one cause, then two once one fails an eleventh), so
//! a cause now is counted before by the runs its patterns failed then, and a cause before is
//! gone when none of its patterns fails now.

pub mod history;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Why a previous report cannot be compared with: each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("--compare {0}: cannot read it: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("--compare {0}: not JSON: {1}")]
    NotJson(PathBuf, serde_json::Error),
    #[error("--compare {0}: not a conform JSON report: {1}")]
    NotAReport(PathBuf, Malformed),
}

/// What makes a JSON value no report to compare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(String);

/// A previous report, read and found to be one.
#[derive(Debug, Clone)]
pub struct Previous {
    pub file: PathBuf,
    pub report: Value,
}

/// Reads a previous report (before anything runs, so that a wrong path costs no suite).
pub fn load(path: &Path) -> Result<Previous, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|e| CompareError::Read(path.to_owned(), e))?;
    let report: Value =
        serde_json::from_str(&text).map_err(|e| CompareError::NotJson(path.to_owned(), e))?;
    Judged::of(&report).map_err(|e| CompareError::NotAReport(path.to_owned(), e))?;
    Ok(Previous {
        file: path.to_owned(),
        report,
    })
}

impl Previous {
    /// This report against the current one, named by its file.
    pub fn compare(&self, current: &Value) -> Result<Comparison, Malformed> {
        let mut c = compare(&self.report, current)?;
        c.file = Some(self.file.clone());
        Ok(c)
    }

    /// Compares `current` with this report and keeps the comparison in it (`comparedWith`:
    /// the JSON report's, which the page draws).
    pub fn attach_to(&self, current: &mut Value) -> Result<Comparison, Malformed> {
        let c = self.compare(current)?;
        // `compare` found `current` an object: indexing inserts the key.
        current["comparedWith"] = c.to_json();
        Ok(c)
    }
}

/// One run, `(id, mode)`.
pub type Run = (String, String);

/// A run whose verdict changed: what it was before, what it is now (`absent`: not in that
/// report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunChange {
    pub run: Run,
    pub before: String,
    pub now: String,
}

/// A cause whose count changed (`before` 0: new; `after` 0: gone), named by its patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseChange {
    pub patterns: Vec<(String, String)>,
    pub before: usize,
    pub after: usize,
    /// Its runs now (a gone cause: before).
    pub runs: Vec<Run>,
}

impl CauseChange {
    fn size(&self) -> usize {
        self.before.abs_diff(self.after)
    }
}

/// How many runs of a report ended each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerdictCounts {
    pub passed: usize,
    pub failed: usize,
    pub known: usize,
    /// Skipped or interrupted.
    pub skipped: usize,
}

/// The previous report against the current one.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    /// The previous report's file, when it came from one.
    pub file: Option<PathBuf>,
    pub generated_before: Option<String>,
    pub counts_before: VerdictCounts,
    pub counts_after: VerdictCounts,
    /// What makes the two reports unlike (another subject, another catalog, another shard).
    pub notes: Vec<String>,
    /// Failing now; before passed, known, skipped or absent (`before` says which).
    pub new_failures: Vec<RunChange>,
    /// Failed (or was known) before, passes now.
    pub fixed: Vec<RunChange>,
    /// Judged before, skipped, interrupted or absent now.
    pub not_run_now: Vec<RunChange>,
    pub still_failing: Vec<Run>,
    /// Largest change first, in each.
    pub new_causes: Vec<CauseChange>,
    pub gone_causes: Vec<CauseChange>,
    pub grown_causes: Vec<CauseChange>,
    pub shrunk_causes: Vec<CauseChange>,
}

/// What a report judged, as the comparison reads it.
struct Judged {
    subject: Option<String>,
    catalog: Option<String>,
    partition: Option<String>,
    generated_at: Option<String>,
    /// Each run's verdict, in report order.
    verdicts: Vec<(Run, String)>,
    causes: Vec<Cause>,
}

struct Cause {
    patterns: BTreeSet<(String, String)>,
    runs: Vec<Run>,
}

const VERDICTS: [&str; 5] = ["pass", "fail", "known", "skip", "interrupted"];

impl Judged {
    fn of(report: &Value) -> Result<Judged, Malformed> {
        let bad = |why: String| Err(Malformed(why));
        if !report.is_object() {
            return bad("not a JSON object".to_owned());
        }
        let Some(cases) = report["cases"].as_array() else {
            return bad("no `cases` list".to_owned());
        };
        let mut verdicts = Vec::with_capacity(cases.len());
        for (i, c) in cases.iter().enumerate() {
            let field = |k: &str| c[k].as_str().map(str::to_owned);
            let (Some(id), Some(mode), Some(verdict)) =
                (field("id"), field("mode"), field("verdict"))
            else {
                return bad(format!("case {} has no `id`, `mode` or `verdict`", i + 1));
            };
            if !VERDICTS.contains(&verdict.as_str()) {
                return bad(format!("case {} has an unknown verdict `{verdict}`", i + 1));
            }
            verdicts.push(((id, mode), verdict));
        }
        let causes = match &report["causes"] {
            // A report written before causes were grouped: grouped here as a run would.
            Value::Null => causes_of_cases(cases),
            Value::Array(list) => list.iter().map(cause_of).collect::<Result<_, _>>()?,
            _ => return bad("`causes` is not a list".to_owned()),
        };
        let text = |k: &str| report[k].as_str().map(str::to_owned);
        Ok(Judged {
            subject: text("subject"),
            catalog: text("catalog"),
            partition: text("partition"),
            generated_at: text("generatedAt"),
            verdicts,
            causes,
        })
    }

    fn counts(&self) -> VerdictCounts {
        let mut n = VerdictCounts::default();
        for (_, v) in &self.verdicts {
            match v.as_str() {
                "pass" => n.passed += 1,
                "fail" => n.failed += 1,
                "known" => n.known += 1,
                _ => n.skipped += 1,
            }
        }
        n
    }
}

fn cause_of(c: &Value) -> Result<Cause, Malformed> {
    let pairs = |k: &str, a: &str, b: &str| -> Option<Vec<(String, String)>> {
        c[k].as_array()?
            .iter()
            .map(|p| Some((p[a].as_str()?.to_owned(), p[b].as_str()?.to_owned())))
            .collect()
    };
    match (
        pairs("patterns", "check", "pattern"),
        pairs("runs", "id", "mode"),
    ) {
        (Some(patterns), Some(runs)) => Ok(Cause {
            patterns: patterns.into_iter().collect(),
            runs,
        }),
        _ => Err(Malformed(
            "a cause has no `patterns` or `runs` list".to_owned(),
        )),
    }
}

fn causes_of_cases(cases: &[Value]) -> Vec<Cause> {
    let failed = super::causes::failed_in_json(cases);
    super::causes::of(&failed)
        .into_iter()
        .map(|c| Cause {
            patterns: c.patterns.into_iter().collect(),
            runs: c.runs,
        })
        .collect()
}

/// The previous report against the current one. Either malformed is said, never a panic.
pub fn compare(previous: &Value, current: &Value) -> Result<Comparison, Malformed> {
    let before =
        Judged::of(previous).map_err(|e| Malformed(format!("the previous report: {e}")))?;
    let now = Judged::of(current).map_err(|e| Malformed(format!("the current report: {e}")))?;
    let mut c = Comparison {
        generated_before: before.generated_at.clone(),
        counts_before: before.counts(),
        counts_after: now.counts(),
        notes: notes(&before, &now),
        ..Comparison::default()
    };
    compare_runs(&before, &now, &mut c);
    compare_causes(&before, &now, &mut c);
    Ok(c)
}

/// What makes the reports unlike: the comparison still stands, read with these in mind.
fn notes(before: &Judged, now: &Judged) -> Vec<String> {
    let mut notes = Vec::new();
    let shown = |v: &Option<String>| v.as_deref().unwrap_or("none").to_owned();
    if before.subject != now.subject {
        notes.push(format!(
            "the previous report ran another subject: `{}` (now `{}`)",
            shown(&before.subject),
            shown(&now.subject)
        ));
    }
    match (&before.catalog, &now.catalog) {
        (Some(b), Some(n)) if b != n => notes.push(format!(
            "the previous report was judged by another catalog: {b} (now {n})"
        )),
        (None, Some(_)) => {
            notes.push("the previous report names no catalog: it may be another".to_owned())
        }
        _ => {}
    }
    if before.partition != now.partition {
        notes.push(format!(
            "the reports cover different parts of the selection: partition {} before, {} now",
            shown(&before.partition),
            shown(&now.partition)
        ));
    }
    notes
}

fn judged(verdict: &str) -> bool {
    matches!(verdict, "pass" | "fail" | "known")
}

fn compare_runs(before: &Judged, now: &Judged, c: &mut Comparison) {
    let was: BTreeMap<&Run, &str> = before
        .verdicts
        .iter()
        .map(|(r, v)| (r, v.as_str()))
        .collect();
    let is: BTreeMap<&Run, &str> = now.verdicts.iter().map(|(r, v)| (r, v.as_str())).collect();
    let change = |run: &Run, before: &str, now: &str| RunChange {
        run: run.clone(),
        before: before.to_owned(),
        now: now.to_owned(),
    };
    for (run, v) in &now.verdicts {
        let old = was.get(run).copied().unwrap_or("absent");
        match (old, v.as_str()) {
            ("fail", "fail") => c.still_failing.push(run.clone()),
            (old, "fail") => c.new_failures.push(change(run, old, "fail")),
            ("fail" | "known", "pass") => c.fixed.push(change(run, old, "pass")),
            (old, now) if judged(old) && !judged(now) => c.not_run_now.push(change(run, old, now)),
            _ => {}
        }
    }
    for (run, v) in &before.verdicts {
        if judged(v) && !is.contains_key(run) {
            c.not_run_now.push(change(run, v, "absent"));
        }
    }
}

fn compare_causes(before: &Judged, now: &Judged, c: &mut Comparison) {
    let change =
        |patterns: &BTreeSet<(String, String)>, b: usize, a: usize, runs: &[Run]| CauseChange {
            patterns: patterns.iter().cloned().collect(),
            before: b,
            after: a,
            runs: runs.to_vec(),
        };
    // Each pattern's runs before (a pattern is in one cause of a report).
    let runs_before: BTreeMap<&(String, String), &[Run]> = before
        .causes
        .iter()
        .flat_map(|cause| cause.patterns.iter().map(|p| (p, cause.runs.as_slice())))
        .collect();
    for cause in &now.causes {
        let was: BTreeSet<&Run> = cause
            .patterns
            .iter()
            .filter_map(|p| runs_before.get(p))
            .flat_map(|runs| runs.iter())
            .collect();
        let moved = change(&cause.patterns, was.len(), cause.runs.len(), &cause.runs);
        match was.len().cmp(&cause.runs.len()) {
            _ if was.is_empty() => c.new_causes.push(moved),
            std::cmp::Ordering::Less => c.grown_causes.push(moved),
            std::cmp::Ordering::Greater => c.shrunk_causes.push(moved),
            std::cmp::Ordering::Equal => {}
        }
    }
    let failing_now: BTreeSet<&(String, String)> = now
        .causes
        .iter()
        .flat_map(|cause| &cause.patterns)
        .collect();
    for cause in &before.causes {
        if cause.patterns.iter().all(|p| !failing_now.contains(p)) {
            c.gone_causes
                .push(change(&cause.patterns, cause.runs.len(), 0, &cause.runs));
        }
    }
    for list in [
        &mut c.new_causes,
        &mut c.gone_causes,
        &mut c.grown_causes,
        &mut c.shrunk_causes,
    ] {
        // Stable: causes changed alike keep their report's order (largest first).
        list.sort_by_key(|ch| std::cmp::Reverse(ch.size()));
    }
}

impl VerdictCounts {
    pub fn to_json(self) -> Value {
        json!({"passed": self.passed, "failed": self.failed, "known": self.known, "skipped": self.skipped})
    }
}

impl Comparison {
    /// The JSON report's `comparedWith`: every change, none left out.
    pub fn to_json(&self) -> Value {
        let runs = |list: &[RunChange]| -> Vec<Value> {
            list.iter()
                .map(|ch| json!({"id": ch.run.0, "mode": ch.run.1, "before": ch.before, "now": ch.now}))
                .collect()
        };
        let causes = |list: &[CauseChange]| -> Vec<Value> {
            list.iter()
                .map(|ch| {
                    json!({
                        "patterns": ch.patterns.iter().map(|(check, pattern)| json!({"check": check, "pattern": pattern})).collect::<Vec<_>>(),
                        "before": ch.before,
                        "after": ch.after,
                        "runs": ch.runs.iter().map(|(id, mode)| json!({"id": id, "mode": mode})).collect::<Vec<_>>(),
                    })
                })
                .collect()
        };
        json!({
            "file": self.file,
            "generatedAt": self.generated_before,
            "notes": self.notes,
            "before": self.counts_before.to_json(),
            "after": self.counts_after.to_json(),
            "newFailures": runs(&self.new_failures),
            "fixed": runs(&self.fixed),
            "notRunNow": runs(&self.not_run_now),
            "stillFailing": self.still_failing.iter().map(|(id, mode)| json!({"id": id, "mode": mode})).collect::<Vec<_>>(),
            "causes": {
                "new": causes(&self.new_causes),
                "gone": causes(&self.gone_causes),
                "grew": causes(&self.grown_causes),
                "shrank": causes(&self.shrunk_causes),
            },
        })
    }

    /// The terminal's section ([`render::render`]).
    pub fn render(&self) -> String {
        render::render(self)
    }

    /// Nothing broke, was fixed, stopped running, or moved among the causes.
    pub fn unchanged(&self) -> bool {
        self.new_failures.is_empty()
            && self.fixed.is_empty()
            && self.not_run_now.is_empty()
            && self.new_causes.is_empty()
            && self.gone_causes.is_empty()
            && self.grown_causes.is_empty()
            && self.shrunk_causes.is_empty()
    }
}

#[cfg(test)]
mod tests;
