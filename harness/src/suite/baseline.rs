//! Known-failure baselines (`conform run --baseline FILE`): a reviewed list of failures a host
//! has today, each with its reason, so that CI fails only on new ones. A listed failure is
//! reported as known; an unlisted one fails; an entry that no longer matches a failure fails as
//! **stale**, so the file shrinks as the host improves.
//!
//! ```toml
//! catalog = "3f2a9c0d41be"   # the catalog it was written against (optional)
//!
//! [[known]]
//! id = "acp/stop/refusal@background:expect.diagnostic"   # scenario[@mode][:check-id]
//! reason = "the host predates the ACP diagnostics decision (HOST-123)"
//! ```

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use serde::Deserialize;
use toml::Spanned;

use crate::checks::{Blame, Check, Finding};
use crate::suite::{SuiteReport, Verdict};

/// One known failure: a scenario, optionally one mode, optionally one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// As written: `scenario`, `scenario@mode`, `scenario:check` or `scenario@mode:check`.
    pub id: String,
    pub scenario: String,
    pub mode: Option<Mode>,
    pub check: Option<Check>,
    pub reason: String,
    /// Where it is written (1-based), for the report.
    pub line: usize,
}

impl Entry {
    fn covers(&self, scenario: &str, mode: Mode, finding: &Finding) -> bool {
        self.scenario == scenario
            && self.mode.is_none_or(|m| m == mode)
            && self.check.is_none_or(|c| c == finding.check)
    }

    /// Does this entry name the case `scenario` in `mode`?
    fn names(&self, scenario: &str, mode: Mode) -> bool {
        self.scenario == scenario && self.mode.is_none_or(|m| m == mode)
    }
}

/// A loaded baseline file.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub path: PathBuf,
    /// The digest of the catalog it was written against (`--write-baseline` records it; an
    /// older file has none).
    pub catalog: Option<String>,
    pub entries: Vec<Entry>,
}

/// A baseline file that cannot be read or is malformed, at its file, line and column.
pub type BaselineError = crate::input::InputError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    catalog: Option<String>,
    #[serde(default)]
    known: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: Spanned<String>,
    reason: Spanned<String>,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: path.to_owned(),
            source,
        })?;
        Baseline::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
        let invalid = |offset: usize, message: String| {
            let (line, column) = crate::input::line_col(text, offset);
            BaselineError::Invalid {
                path: path.to_owned(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            invalid(
                e.span().map_or(0, |s| s.start),
                e.message().trim().to_owned(),
            )
        })?;
        let mut entries = Vec::new();
        let mut seen = BTreeSet::new();
        for r in raw.known {
            let at = r.id.span().start;
            let (scenario, mode, check) =
                parse_id(r.id.get_ref()).map_err(|why| invalid(at, why))?;
            if r.reason.get_ref().trim().is_empty() {
                return Err(invalid(
                    r.reason.span().start,
                    "a known failure needs its reason".to_owned(),
                ));
            }
            if !seen.insert(r.id.get_ref().clone()) {
                return Err(invalid(at, format!("`{}` is listed twice", r.id.get_ref())));
            }
            entries.push(Entry {
                id: r.id.get_ref().clone(),
                scenario,
                mode,
                check,
                reason: r.reason.get_ref().trim().to_owned(),
                line: crate::input::line_col(text, at).0,
            });
        }
        Ok(Baseline {
            path: path.to_owned(),
            catalog: raw.catalog,
            entries,
        })
    }
}

/// `scenario[@mode][:check-id]`.
fn parse_id(id: &str) -> Result<(String, Option<Mode>, Option<Check>), String> {
    let (rest, check) = match id.split_once(':') {
        Some((rest, check)) => {
            let known = Check::from_id(check).ok_or_else(|| {
                format!("`{check}` is not a check id (`conform list --checks` lists them)")
            })?;
            (rest, Some(known))
        }
        None => (id, None),
    };
    let (scenario, mode) = match rest.split_once('@') {
        Some((scenario, mode)) => {
            let m = mode
                .parse::<Mode>()
                .map_err(|_| format!("`{mode}` is not a mode (foreground or background)"))?;
            (scenario, Some(m))
        }
        None => (rest, None),
    };
    if scenario.is_empty() || scenario.contains(char::is_whitespace) {
        return Err(format!(
            "`{id}`: write scenario, scenario@mode, scenario:check-id or scenario@mode:check-id"
        ));
    }
    Ok((scenario.to_owned(), mode, check))
}

/// What became of one entry in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// It covered this many failed checks.
    Matched(usize),
    /// Its case ran and did not fail as it says: the entry must go.
    Stale(String),
    /// Its case did not run here (filtered, another shard, skipped): nothing can be said.
    NotRun,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Matched(_) => "matched",
            Status::Stale(_) => "stale",
            Status::NotRun => "not-run",
        }
    }
}

/// The baseline as applied to a suite.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub path: PathBuf,
    /// The catalog the file was written against, where it says.
    pub catalog: Option<String>,
    pub entries: Vec<(Entry, Status)>,
}

impl Outcome {
    /// One line when the file was written against another catalog than `used` (the suite's):
    /// its entries may name cases that have changed since. A warning, never a failure; a file
    /// that names no catalog is taken as it is.
    pub fn catalog_warning(&self, used: &str) -> Option<String> {
        let written = self.catalog.as_deref()?;
        (written != used && !used.is_empty()).then(|| {
            format!(
                "warning: baseline {} was written against catalog {written}, this suite ran catalog {used}: review its entries",
                self.path.display()
            )
        })
    }

    pub fn stale(&self) -> impl Iterator<Item = &(Entry, Status)> {
        self.entries
            .iter()
            .filter(|(_, s)| matches!(s, Status::Stale(_)))
    }
}

/// Applies `baseline` to the report: a failed case whose every finding an entry covers becomes
/// [`Verdict::Known`]; entries are matched, stale or not run (an entry for no scenario of the
/// catalog is stale). A harness fault is never known: it proves nothing about the subject.
pub fn apply(report: &mut SuiteReport, baseline: &Baseline) {
    let catalog = std::mem::take(&mut report.catalog);
    let mut matched = vec![0usize; baseline.entries.len()];
    for case in &mut report.cases {
        if !matches!(case.verdict, Verdict::Fail) {
            continue;
        }
        let (id, mode) = (case.scenario.id.as_str(), case.mode);
        let mut reasons: Vec<&str> = Vec::new();
        let mut all_covered = !case.findings.is_empty();
        for f in &case.findings {
            let covering: Vec<usize> = baseline
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| f.blame() == Blame::Subject && e.covers(id, mode, f))
                .map(|(i, _)| i)
                .collect();
            if covering.is_empty() {
                all_covered = false;
            }
            for i in covering {
                matched[i] += 1;
                let reason = baseline.entries[i].reason.as_str();
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
        }
        if all_covered {
            case.verdict = Verdict::Known(reasons.join("; "));
        }
    }
    let entries = baseline
        .entries
        .iter()
        .zip(matched)
        .map(|(e, n)| {
            let status = if n > 0 {
                Status::Matched(n)
            } else if !catalog.contains(&e.scenario) {
                Status::Stale("no scenario has this id".to_owned())
            } else {
                let ran: Vec<&crate::suite::CaseReport> = report
                    .cases
                    .iter()
                    .filter(|c| e.names(&c.scenario.id, c.mode))
                    .filter(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)))
                    .collect();
                if ran.is_empty() {
                    Status::NotRun
                } else if ran.iter().all(|c| matches!(c.verdict, Verdict::Pass)) {
                    Status::Stale("the case passes now".to_owned())
                } else {
                    Status::Stale(match e.check {
                        Some(c) => format!("the case no longer fails {c}"),
                        None => "the case no longer fails for the subject".to_owned(),
                    })
                }
            };
            (e.clone(), status)
        })
        .collect();
    report.baseline = Some(Outcome {
        path: baseline.path.clone(),
        catalog: baseline.catalog.clone(),
        entries,
    });
    report.catalog = catalog;
}

/// A baseline file listing today's failures (`--write-baseline`): one entry per failed check
/// of each failed or known case, `scenario@mode:check-id`, except where an entry of the
/// baseline in use already covers it (kept as written, with its reason). Harness faults are
/// left out; stale entries are dropped.
pub fn write(report: &SuiteReport) -> String {
    let previous: Vec<&Entry> = report
        .baseline
        .iter()
        .flat_map(|o| &o.entries)
        .filter(|(_, s)| !matches!(s, Status::Stale(_)))
        .map(|(e, _)| e)
        .collect();
    let mut out = String::from(
        "# Known failures for `conform run --baseline <this file>`: each entry is a failure the\n\
         # subject has today and why it is acceptable for now. An entry that stops matching fails\n\
         # the run as stale: delete it. Ids: scenario, scenario@mode, scenario:check-id or\n\
         # scenario@mode:check-id (`conform list --checks`).\n",
    );
    if !report.catalog_digest.is_empty() {
        // Read back as a warning where the file is used with another catalog.
        let _ = write!(out, "\ncatalog = {}\n", toml_string(&report.catalog_digest));
    }
    let mut written: BTreeSet<String> = BTreeSet::new();
    let mut push = |out: &mut String, id: &str, reason: &str| {
        if written.insert(id.to_owned()) {
            let _ = write!(
                out,
                "\n[[known]]\nid = {}\nreason = {}\n",
                toml_string(id),
                toml_string(reason)
            );
        }
    };
    // What the baseline in use still says, first, in its own order.
    for e in &previous {
        push(&mut out, &e.id, &e.reason);
    }
    for case in &report.cases {
        if !matches!(case.verdict, Verdict::Fail | Verdict::Known(_)) {
            continue;
        }
        for f in &case.findings {
            if f.blame() != Blame::Subject
                || previous
                    .iter()
                    .any(|e| e.covers(&case.scenario.id, case.mode, f))
            {
                continue;
            }
            let id = format!("{}@{}:{}", case.scenario.id, case.mode, f.check);
            push(
                &mut out,
                &id,
                "TODO: say why this failure is acceptable for now",
            );
        }
    }
    out
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Baseline, BaselineError> {
        Baseline::parse(Path::new("known.toml"), text)
    }

    #[test]
    fn every_form_of_id_is_read() {
        let b = parse(
            r#"
[[known]]
id = "acp/stop/refusal"
reason = "a"

[[known]]
id = "acp/stop/refusal@background"
reason = "b"

[[known]]
id = "acp/stop/refusal:expect.diagnostic"
reason = "c"

[[known]]
id = "acp/stop/refusal@foreground:snapshot"
reason = "d"
"#,
        )
        .unwrap();
        let got: Vec<(Option<Mode>, Option<Check>, usize)> = b
            .entries
            .iter()
            .map(|e| (e.mode, e.check, e.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (None, None, 3),
                (Some(Mode::Background), None, 7),
                (None, Some(Check::ExpectDiagnostic), 11),
                (Some(Mode::Foreground), Some(Check::Snapshot), 15),
            ]
        );
    }

    #[test]
    fn the_catalog_written_against_is_read_and_a_file_without_it_is_accepted() {
        let b = parse("catalog = \"0123456789ab\"\n\n[[known]]\nid = \"a/b\"\nreason = \"r\"\n")
            .unwrap();
        assert_eq!(b.catalog.as_deref(), Some("0123456789ab"));
        let outcome = |catalog: Option<&str>| Outcome {
            path: PathBuf::from("known.toml"),
            catalog: catalog.map(str::to_owned),
            entries: Vec::new(),
        };
        assert_eq!(
            outcome(Some("0123456789ab")).catalog_warning("0123456789ab"),
            None
        );
        assert_eq!(
            outcome(Some("0123456789ab"))
                .catalog_warning("ba9876543210")
                .as_deref(),
            Some(
                "warning: baseline known.toml was written against catalog 0123456789ab, this suite ran catalog ba9876543210: review its entries"
            )
        );
        let old = parse("[[known]]\nid = \"a/b\"\nreason = \"r\"\n").unwrap();
        assert_eq!(old.catalog, None);
        assert_eq!(outcome(None).catalog_warning("ba9876543210"), None);
    }

    #[test]
    fn a_bad_entry_is_named_at_its_line_and_column() {
        let e = parse("[[known]]\nid = \"acp/x@sideways\"\nreason = \"r\"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "known.toml:2:6: `sideways` is not a mode (foreground or background)"
        );
        let e = parse("[[known]]\nid = \"acp/x:expect.nope\"\nreason = \"r\"\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("known.toml:2:6: `expect.nope` is not a check id"),
            "{e}"
        );
        let e = parse("[[known]]\nid = \"acp/x\"\nreason = \" \"\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "known.toml:3:10: a known failure needs its reason"
        );
        let e = parse("[[known]]\nid = \"acp/x\"\nreason = \"r\"\nwhy = 1\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("known.toml:4:1: unknown field `why`"),
            "{e}"
        );
        let twice =
            "[[known]]\nid = \"a/b\"\nreason = \"r\"\n[[known]]\nid = \"a/b\"\nreason = \"s\"\n";
        assert_eq!(
            parse(twice).unwrap_err().to_string(),
            "known.toml:5:6: `a/b` is listed twice"
        );
    }
}
