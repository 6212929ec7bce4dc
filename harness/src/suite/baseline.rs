//! Known-failure baselines (`conform run --baseline FILE`): a reviewed list of failures a host
//! has today, each with its reason, so that CI fails only on new ones. A listed failure is
//! reported as known; an unlisted one fails; an entry that no longer matches a failure fails as
//! **stale**, so the file shrinks as the host improves.
//!
//! An entry of one case in one mode may also pin what the case says ([`pin`]): the digest of its
//! model-visible texts, start error, refusal and stop reason (`texts`) and their first lines
//! (`excerpt`). A known case whose texts are no longer the pinned ones fails
//! (`baseline.changed`: "known failure changed", with the diff of the excerpts), so a host gates
//! on regressions inside failures it has not fixed yet. A call the host refuses before any job
//! exists, in a case that does not apply to it, is pinned the same way (`[[refused]]`). An entry
//! without `texts` pins nothing (files written before pins read as they did).
//!
//! ```toml
//! catalog = "3f2a9c0d41be"   # the catalog it was written against (optional)
//!
//! [[known]]
//! id = "acp/stop/refusal@background:expect.diagnostic"   # scenario[@mode][:check-id]
//! reason = "the host predates the ACP diagnostics decision (HOST-123)"
//! texts = "sha256:…"        # optional, with a mode: what the case says
//! excerpt = "── tool result (isError: false) ──\n…"   # optional: its first lines
//!
//! [[refused]]
//! id = "acp/stage/dispose-grace-zero@foreground"        # scenario@mode
//! texts = "sha256:…"
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use serde::Deserialize;
use toml::Spanned;

use crate::checks::{Blame, Check, Finding};
use crate::suite::{CaseReport, SuiteReport, Verdict};

pub mod pin;
pub use pin::Pin;

/// What an entry lists: a failure (`[[known]]`) or a refused call (`[[refused]]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Known,
    Refused,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Known => "known",
            Kind::Refused => "refused",
        }
    }
}

/// One entry: a known failure (a scenario, optionally one mode, optionally one check), or a
/// call the host refuses in a case that does not apply to it (one scenario in one mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// As written: `scenario`, `scenario@mode`, `scenario:check` or `scenario@mode:check`.
    pub id: String,
    pub scenario: String,
    pub mode: Option<Mode>,
    pub check: Option<Check>,
    /// Why the failure is acceptable for now (a refused call's entry may leave it empty).
    pub reason: String,
    /// What the case says, where the entry pins it (only with a mode).
    pub pin: Option<Pin>,
    /// Where it is written (1-based), for the report.
    pub line: usize,
}

impl Entry {
    fn covers(&self, scenario: &str, mode: Mode, finding: &Finding) -> bool {
        self.kind == Kind::Known
            && self.scenario == scenario
            && self.mode.is_none_or(|m| m == mode)
            && self.check.is_none_or(|c| c == finding.check)
    }

    /// Does this entry name the case `scenario` in `mode`?
    fn names(&self, scenario: &str, mode: Mode) -> bool {
        self.scenario == scenario && self.mode.is_none_or(|m| m == mode)
    }

    /// Does this entry pin what the case `scenario` in `mode` says?
    fn pins(&self, scenario: &str, mode: Mode) -> bool {
        self.pin.is_some() && self.scenario == scenario && self.mode == Some(mode)
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
    #[serde(default)]
    refused: Vec<RawRefused>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: Spanned<String>,
    reason: Spanned<String>,
    #[serde(default)]
    texts: Option<Spanned<String>>,
    #[serde(default)]
    excerpt: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRefused {
    id: Spanned<String>,
    #[serde(default)]
    reason: Option<Spanned<String>>,
    #[serde(default)]
    texts: Option<Spanned<String>>,
    #[serde(default)]
    excerpt: Option<Spanned<String>>,
}

/// Something wrong at a byte offset of the file.
type Wrong = (usize, String);

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: path.to_owned(),
            source,
        })?;
        Baseline::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
        let invalid = |(offset, message): Wrong| {
            let (line, column) = crate::input::line_col(text, offset);
            BaselineError::Invalid {
                path: path.to_owned(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            invalid((
                e.span().map_or(0, |s| s.start),
                e.message().trim().to_owned(),
            ))
        })?;
        let mut entries = Vec::new();
        let mut seen = BTreeSet::new();
        // The first pin of each case, and where it is written: every entry of a case pins the
        // same texts.
        let mut pinned: BTreeMap<(String, Mode), (String, usize)> = BTreeMap::new();
        let known = raw
            .known
            .into_iter()
            .map(|r| (Kind::Known, r.id, Some(r.reason), r.texts, r.excerpt));
        let refused = raw
            .refused
            .into_iter()
            .map(|r| (Kind::Refused, r.id, r.reason, r.texts, r.excerpt));
        for (kind, id, reason, texts, excerpt) in known.chain(refused) {
            let at = id.span().start;
            let (scenario, mode, check) =
                parse_id(id.get_ref()).map_err(|why| invalid((at, why)))?;
            let line = crate::input::line_col(text, at).0;
            if kind == Kind::Refused && (mode.is_none() || check.is_some()) {
                return Err(invalid((
                    at,
                    format!(
                        "`{}`: a refused call is one scenario in one mode: write scenario@mode",
                        id.get_ref()
                    ),
                )));
            }
            let reason = match (kind, &reason) {
                (Kind::Known, Some(r)) if r.get_ref().trim().is_empty() => {
                    return Err(invalid((
                        r.span().start,
                        "a known failure needs its reason".to_owned(),
                    )));
                }
                _ => reason
                    .map(|r| r.get_ref().trim().to_owned())
                    .unwrap_or_default(),
            };
            if !seen.insert((kind, id.get_ref().clone())) {
                return Err(invalid((at, format!("`{}` is listed twice", id.get_ref()))));
            }
            let pin = parse_pin(texts.as_ref(), excerpt.as_ref(), mode).map_err(invalid)?;
            if kind == Kind::Refused && pin.is_none() {
                return Err(invalid((
                    at,
                    format!(
                        "`{}`: a refused call's entry pins what it says: give its `texts` (`--write-baseline` writes them)",
                        id.get_ref()
                    ),
                )));
            }
            if let (Some(p), Some(m), Some(t)) = (&pin, mode, &texts) {
                match pinned.get(&(scenario.clone(), m)) {
                    Some((first, first_line)) if *first != p.texts => {
                        return Err(invalid((
                            t.span().start,
                            format!(
                                "`{}` pins other texts than the entry at line {first_line} for the same case (one case, one pin)",
                                id.get_ref()
                            ),
                        )));
                    }
                    Some(_) => {}
                    None => {
                        pinned.insert((scenario.clone(), m), (p.texts.clone(), line));
                    }
                }
            }
            entries.push(Entry {
                kind,
                id: id.get_ref().clone(),
                scenario,
                mode,
                check,
                reason,
                pin,
                line,
            });
        }
        Ok(Baseline {
            path: path.to_owned(),
            catalog: raw.catalog,
            entries,
        })
    }

    /// Does a known-failure entry cover `finding` of the case `scenario` in `mode`?
    pub fn covers(&self, scenario: &str, mode: Mode, finding: &Finding) -> bool {
        self.entries
            .iter()
            .any(|e| e.covers(scenario, mode, finding))
    }
}

/// An entry's `texts` and `excerpt`: a digest as `--write-baseline` writes it, of one case (the
/// id names a mode); an excerpt only beside the digest it shows.
fn parse_pin(
    texts: Option<&Spanned<String>>,
    excerpt: Option<&Spanned<String>>,
    mode: Option<Mode>,
) -> Result<Option<Pin>, Wrong> {
    let Some(texts) = texts else {
        return match excerpt {
            Some(e) => Err((
                e.span().start,
                "an `excerpt` shows the texts a `texts` digest pins: give `texts` too".to_owned(),
            )),
            None => Ok(None),
        };
    };
    if mode.is_none() {
        return Err((
            texts.span().start,
            "a pin is of one case in one mode: write the id as scenario@mode or scenario@mode:check-id"
                .to_owned(),
        ));
    }
    if !pin::is_digest(texts.get_ref()) {
        return Err((
            texts.span().start,
            format!(
                "`{}` is not a digest: `sha256:` and 64 lowercase hex digits, as `--write-baseline` writes it",
                texts.get_ref()
            ),
        ));
    }
    Ok(Some(Pin {
        texts: texts.get_ref().clone(),
        excerpt: excerpt.map(|e| e.get_ref().clone()),
    }))
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
    /// It covered this many failed checks (and its case says what it pins, if it pins).
    Matched(usize),
    /// It covered failed checks of its case (or its case's call was refused), but the case's
    /// texts are no longer the pinned ones: this run's digest. The case fails.
    Changed(String),
    /// Its case's call was refused, saying what the entry pins.
    Refused,
    /// Its case ran and did not fail (or was not refused) as it says: the entry must go.
    Stale(String),
    /// Its case did not run here (filtered, another shard, skipped): nothing can be said.
    NotRun,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Matched(_) => "matched",
            Status::Changed(_) => "changed",
            Status::Refused => "refused",
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

/// Is the case's record one a pin may be judged or taken from: it ran (or was refused) and the
/// harness is not to blame for it (a harness fault proves nothing about what the subject says)?
fn pinnable(case: &CaseReport) -> bool {
    case.obs.is_some() && !case.findings.iter().any(|f| f.blame() == Blame::Harness)
}

/// A case skipped because its call was refused before any job existed (it does not apply).
fn refused_skip(case: &CaseReport) -> bool {
    matches!(case.verdict, Verdict::Skip(_))
        && case.obs.as_ref().is_some_and(|o| o.refused.is_some())
}

/// Applies `baseline` to the report: a failed case whose every finding an entry covers becomes
/// [`Verdict::Known`]; a failed, known or refused case whose pinned texts changed fails
/// (`baseline.changed`); entries are matched, changed, refused, stale or not run (an entry for no
/// scenario of the catalog is stale). A harness fault is never known: it proves nothing about the
/// subject.
pub fn apply(report: &mut SuiteReport, baseline: &Baseline) {
    let catalog = std::mem::take(&mut report.catalog);
    let strictness = report.strictness;
    let mut matched = vec![0usize; baseline.entries.len()];
    // This run's digest, for each pinning entry whose case says something else now.
    let mut changed: Vec<Option<String>> = vec![None; baseline.entries.len()];
    let mut refused_as_pinned = vec![false; baseline.entries.len()];
    for case in &mut report.cases {
        if matches!(case.verdict, Verdict::Fail) {
            cover(case, baseline, &mut matched);
        }
        judge_pins(
            case,
            baseline,
            strictness,
            &mut changed,
            &mut refused_as_pinned,
        );
    }
    let entries = baseline
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let status = match (e.kind, &changed[i]) {
                (Kind::Known, Some(now)) if matched[i] > 0 => Status::Changed(now.clone()),
                (Kind::Refused, Some(now)) => Status::Changed(now.clone()),
                (Kind::Known, _) if matched[i] > 0 => Status::Matched(matched[i]),
                (Kind::Refused, None) if refused_as_pinned[i] => Status::Refused,
                _ => unmatched(e, report, &catalog),
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

/// A failed case against the known-failure entries: known when every finding is covered.
fn cover(case: &mut CaseReport, baseline: &Baseline, matched: &mut [usize]) {
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

/// The case's texts against what the entries naming it pin: a failed or known case against its
/// known-failure entries, a refused call against its refused entries. Texts that changed fail
/// the case (`baseline.changed`), at the level of what the pin stands for.
fn judge_pins(
    case: &mut CaseReport,
    baseline: &Baseline,
    strictness: crate::settings::Strictness,
    changed: &mut [Option<String>],
    refused_as_pinned: &mut [bool],
) {
    if !pinnable(case) {
        return;
    }
    let Some(obs) = &case.obs else { return };
    let failed = matches!(case.verdict, Verdict::Fail | Verdict::Known(_));
    let refused = obs.refused.is_some();
    let pinning: Vec<usize> = baseline
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.pins(&case.scenario.id, case.mode))
        .filter(|(_, e)| match e.kind {
            Kind::Known => failed,
            Kind::Refused => refused,
        })
        .map(|(i, _)| i)
        .collect();
    let Some(pin) = pinning
        .first()
        .and_then(|i| baseline.entries[*i].pin.as_ref())
    else {
        return;
    };
    let texts = pin::texts(obs);
    let now = pin::digest(&texts);
    if now == pin.texts {
        for i in pinning {
            refused_as_pinned[i] = baseline.entries[i].kind == Kind::Refused;
        }
        return;
    }
    for &i in &pinning {
        changed[i] = Some(now.clone());
    }
    let excerpt = pin::excerpt(&case.scenario, &obs.run_dir, &texts);
    let what = if failed {
        "known failure changed"
    } else {
        "known refusal changed"
    };
    let lines: Vec<String> = pinning
        .iter()
        .map(|i| baseline.entries[*i].line.to_string())
        .collect();
    let mut message = format!(
        "{what}: the texts pinned at {}:{} are {}, this run's are {}",
        baseline.path.display(),
        lines.join(","),
        pin.texts,
        now
    );
    match &pin.excerpt {
        Some(pinned) if *pinned != excerpt => {
            let _ = write!(message, ":\n{}", pin::diff(pinned, &excerpt));
        }
        Some(_) => {
            message.push_str(" (their excerpts agree: what changed is past them, or withheld)")
        }
        None => {
            let _ = write!(
                message,
                " (the baseline keeps no excerpt to compare; this run's):\n{excerpt}"
            );
        }
    }
    let finding = at_level_of_what_it_pins(case, Finding::new(Check::BaselineChanged, message));
    let known = matches!(case.verdict, Verdict::Known(_));
    let (mut failing, advisories) = crate::suite::judge::admitted(vec![finding], strictness);
    case.advisories.extend(advisories);
    if failing.is_empty() {
        return;
    }
    case.verdict = Verdict::Fail;
    if known {
        // What fails the case now comes first: the rest is what the baseline knows.
        failing.append(&mut case.findings);
        case.findings = failing;
    } else {
        case.findings.append(&mut failing);
    }
}

/// `finding` at the strictest level of what its pin stands for: the failures of the case (each
/// at the level its scenario gives it), or for a refused call the start rejection the scenario
/// expects. A strictness that judges those judges this.
fn at_level_of_what_it_pins(case: &CaseReport, mut finding: Finding) -> Finding {
    let stood_for = case
        .findings
        .iter()
        .filter(|f| f.blame() == Blame::Subject)
        .map(|f| (f.check, f.level, f.source.clone()))
        .min_by_key(|(_, level, _)| *level)
        .or_else(|| {
            crate::checks::expectation_levels(&case.scenario)
                .into_iter()
                .find(|(c, _, _)| *c == Check::ExpectStartError)
        });
    if let Some((check, level, source)) = stood_for {
        finding.level = level;
        finding.source = format!(
            "{}; it pins what `{check}` showed, which is {} ({source})",
            finding.source,
            level.as_str()
        )
        .into();
    }
    finding
}

/// The status of an entry that matched nothing (and whose case did not change).
fn unmatched(e: &Entry, report: &SuiteReport, catalog: &BTreeSet<String>) -> Status {
    if !catalog.contains(&e.scenario) {
        return Status::Stale("no scenario has this id".to_owned());
    }
    let named = || {
        report
            .cases
            .iter()
            .filter(|c| e.names(&c.scenario.id, c.mode))
    };
    if e.kind == Kind::Refused {
        if named().any(|c| c.obs.as_ref().is_some_and(|o| o.refused.is_some())) {
            // Refused, with a record the harness is to blame for: nothing can be said.
            return Status::NotRun;
        }
        let ran = named().any(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)));
        return if ran {
            Status::Stale("the call is no longer refused".to_owned())
        } else {
            Status::NotRun
        };
    }
    let ran: Vec<&CaseReport> = named()
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
}

/// A baseline file listing today's failures (`--write-baseline`): one entry per failed check
/// of each failed or known case, `scenario@mode:check-id`, except where an entry of the
/// baseline in use already covers it (kept as written, with its reason); then one `[[refused]]`
/// entry per case skipped because its call was refused, unless the baseline in use has it.
/// Every entry of one case in one mode pins what the case says this run ([`Pin`]: an entry of the
/// baseline in use is refreshed; one whose case did not run keeps its pin). Harness faults are
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
         # scenario@mode:check-id (`conform list --checks`). `texts` pins what the case says (its\n\
         # model-visible texts, start error, refusal and stop reason; `excerpt`: their first\n\
         # lines): a known case that says something else fails. `[[refused]]`: a call the host\n\
         # refuses before any job exists, in a case that does not apply to it, pinned the same way.\n",
    );
    if !report.catalog_digest.is_empty() {
        // Read back as a warning where the file is used with another catalog.
        let _ = write!(
            out,
            "\ncatalog = {}\n",
            pin::toml_string(&report.catalog_digest)
        );
    }
    // What this run pins of each case a pin may be taken from.
    let pin_now = |scenario: &str, mode: Option<Mode>, kind: Kind| -> Option<Pin> {
        let c = report.cases.iter().find(|c| {
            c.scenario.id == scenario
                && Some(c.mode) == mode
                && pinnable(c)
                && match kind {
                    Kind::Known => matches!(c.verdict, Verdict::Fail | Verdict::Known(_)),
                    Kind::Refused => c.obs.as_ref().is_some_and(|o| o.refused.is_some()),
                }
        })?;
        Some(Pin::of(&c.scenario, c.obs.as_ref()?))
    };
    let mut written: BTreeSet<(Kind, String)> = BTreeSet::new();
    let mut push = |out: &mut String, kind: Kind, id: &str, reason: &str, pin: Option<Pin>| {
        if !written.insert((kind, id.to_owned())) {
            return;
        }
        let _ = write!(
            out,
            "\n[[{}]]\nid = {}\n",
            kind.as_str(),
            pin::toml_string(id)
        );
        if kind == Kind::Known || !reason.is_empty() {
            let _ = writeln!(out, "reason = {}", pin::toml_string(reason));
        }
        if let Some(p) = pin {
            let _ = writeln!(out, "texts = {}", pin::toml_string(&p.texts));
            if let Some(e) = &p.excerpt {
                let _ = writeln!(out, "excerpt = {}", pin::toml_string(e));
            }
        }
    };
    // What the baseline in use still says, first, in its own order (its known failures, then
    // its refused calls).
    for kind in [Kind::Known, Kind::Refused] {
        for e in previous.iter().filter(|e| e.kind == kind) {
            let pin = pin_now(&e.scenario, e.mode, kind)
                .or_else(|| e.pin.clone())
                .filter(|_| e.mode.is_some());
            push(&mut out, kind, &e.id, &e.reason, pin);
        }
        for case in &report.cases {
            // Taken once per case, and only for a case that gets an entry.
            let taken = std::cell::OnceCell::new();
            let pin = || {
                taken
                    .get_or_init(|| pin_now(&case.scenario.id, Some(case.mode), kind))
                    .clone()
            };
            match kind {
                Kind::Known => {
                    if !matches!(case.verdict, Verdict::Fail | Verdict::Known(_)) {
                        continue;
                    }
                    for f in &case.findings {
                        if f.blame() != Blame::Subject
                            || f.check == Check::BaselineChanged
                            || previous
                                .iter()
                                .any(|e| e.covers(&case.scenario.id, case.mode, f))
                        {
                            continue;
                        }
                        let id = format!("{}@{}:{}", case.scenario.id, case.mode, f.check);
                        push(
                            &mut out,
                            kind,
                            &id,
                            "TODO: say why this failure is acceptable for now",
                            pin(),
                        );
                    }
                }
                Kind::Refused => {
                    let listed = previous
                        .iter()
                        .any(|e| e.kind == Kind::Refused && e.names(&case.scenario.id, case.mode));
                    if refused_skip(case) && pinnable(case) && !listed {
                        let id = format!("{}@{}", case.scenario.id, case.mode);
                        push(&mut out, kind, &id, "", pin());
                    }
                }
            }
        }
    }
    out
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

    const PIN_A: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    const PIN_B: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    #[test]
    fn pins_are_read_for_known_failures_and_refused_calls() {
        let b = parse(&format!(
            r#"[[known]]
id = "acp/stop/refusal@foreground:expect.diagnostic"
reason = "a"
texts = "{PIN_A}"
excerpt = "── tool result (isError: true) ──\nError: subagent run failed"

[[known]]
id = "acp/stop/refusal@foreground:snapshot"
reason = "b"
texts = "{PIN_A}"

[[known]]
id = "acp/stop/refusal:expect.stop-reason"
reason = "c"

[[refused]]
id = "acp/stage/dispose-grace-zero@background"
texts = "{PIN_B}"
"#
        ))
        .unwrap();
        let got: Vec<(Kind, Option<&str>, Option<&str>, usize)> = b
            .entries
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.pin.as_ref().map(|p| p.texts.as_str()),
                    e.pin.as_ref().and_then(|p| p.excerpt.as_deref()),
                    e.line,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    Kind::Known,
                    Some(PIN_A),
                    Some("── tool result (isError: true) ──\nError: subagent run failed"),
                    2
                ),
                (Kind::Known, Some(PIN_A), None, 8),
                (Kind::Known, None, None, 13),
                (Kind::Refused, Some(PIN_B), None, 17),
            ]
        );
        let refused = &b.entries[3];
        assert_eq!(
            (refused.mode, refused.check, refused.reason.as_str()),
            (Some(Mode::Background), None, "")
        );
    }

    #[test]
    fn a_file_written_before_pins_is_read_as_it_was_and_pins_nothing() {
        let b = parse(
            "catalog = \"0123456789ab\"\n\n[[known]]\nid = \"acp/stop/refusal@foreground:expect.diagnostic\"\nreason = \"r\"\n",
        )
        .unwrap();
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.entries[0].kind, Kind::Known);
        assert_eq!(b.entries[0].pin, None);
    }

    #[test]
    fn a_malformed_pin_is_named_at_its_line_and_column() {
        let err = |text: String| parse(&text).unwrap_err().to_string();
        let known =
            |id: &str, extra: &str| format!("[[known]]\nid = \"{id}\"\nreason = \"r\"\n{extra}");
        assert_eq!(
            err(known("a/b@foreground", "texts = \"sha256:abc\"\n")),
            "known.toml:4:9: `sha256:abc` is not a digest: `sha256:` and 64 lowercase hex digits, as `--write-baseline` writes it"
        );
        assert_eq!(
            err(known("a/b:snapshot", &format!("texts = \"{PIN_A}\"\n"))),
            "known.toml:4:9: a pin is of one case in one mode: write the id as scenario@mode or scenario@mode:check-id"
        );
        assert_eq!(
            err(known("a/b@foreground", "excerpt = \"x\"\n")),
            "known.toml:4:11: an `excerpt` shows the texts a `texts` digest pins: give `texts` too"
        );
        assert!(
            err(known("a/b@foreground", "texts = 7\n")).starts_with("known.toml:4:9: invalid type"),
            "{}",
            err(known("a/b@foreground", "texts = 7\n"))
        );
        let two = format!(
            "{}\n{}",
            known("a/b@foreground:snapshot", &format!("texts = \"{PIN_A}\"\n")),
            known(
                "a/b@foreground:expect.output",
                &format!("texts = \"{PIN_B}\"\n")
            )
        );
        assert_eq!(
            err(two),
            "known.toml:9:9: `a/b@foreground:expect.output` pins other texts than the entry at line 2 for the same case (one case, one pin)"
        );
        let refused = |id: &str, extra: &str| format!("[[refused]]\nid = \"{id}\"\n{extra}");
        assert_eq!(
            err(refused("a/b", &format!("texts = \"{PIN_A}\"\n"))),
            "known.toml:2:6: `a/b`: a refused call is one scenario in one mode: write scenario@mode"
        );
        assert_eq!(
            err(refused(
                "a/b@background:snapshot",
                &format!("texts = \"{PIN_A}\"\n")
            )),
            "known.toml:2:6: `a/b@background:snapshot`: a refused call is one scenario in one mode: write scenario@mode"
        );
        assert_eq!(
            err(refused("a/b@background", "")),
            "known.toml:2:6: `a/b@background`: a refused call's entry pins what it says: give its `texts` (`--write-baseline` writes them)"
        );
        assert!(
            err(refused("a/b@background", "why = 1\n"))
                .starts_with("known.toml:3:1: unknown field `why`"),
            "{}",
            err(refused("a/b@background", "why = 1\n"))
        );
    }
}
