//! `--write-baseline`: today's failures as a baseline to review, pinned.

use super::*;

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
    let mut file = File::new(&report.catalog_digest);
    // What the baseline in use still says, first, in its own order (its known failures, then
    // its refused calls); then what it does not say yet.
    for kind in [EntryKind::Known, EntryKind::Refused] {
        for e in previous.iter().filter(|e| e.kind == kind) {
            let pin = pin_now(report, &e.scenario, e.mode, kind)
                .or_else(|| e.pin.clone())
                .filter(|_| e.mode.is_some());
            file.entry(kind, &e.id, &e.reason, pin);
        }
        for case in &report.cases {
            let ids = match kind {
                EntryKind::Known => new_known(case, &previous),
                EntryKind::Refused => new_refused(case, &previous).into_iter().collect(),
            };
            if ids.is_empty() {
                continue;
            }
            // Taken once per case, and only for a case that gets an entry.
            let pin = pin_now(report, &case.scenario.id, Some(case.mode), kind);
            let reason = match kind {
                EntryKind::Known => "TODO: say why this failure is acceptable for now",
                EntryKind::Refused => "",
            };
            for id in ids {
                file.entry(kind, &id, reason, pin.clone());
            }
        }
    }
    file.text
}

/// The file's text as it is written, each entry once.
struct File {
    text: String,
    written: BTreeSet<(EntryKind, String)>,
}

impl File {
    /// The header that says how to read the file, and the catalog it was written against.
    fn new(catalog: &str) -> File {
        let mut text = String::from(
            "# Known failures for `conform run --baseline <this file>`: each entry is a failure the\n\
             # subject has today and why it is acceptable for now. An entry that stops matching fails\n\
             # the run as stale: delete it. Ids: scenario, scenario@mode, scenario:check-id or\n\
             # scenario@mode:check-id (`conform list --checks`). `texts` pins what the case says (its\n\
             # model-visible texts, start error, refusal and stop reason; `excerpt`: their first\n\
             # lines): a known case that says something else fails. `[[refused]]`: a call the host\n\
             # refuses before any job exists, in a case that does not apply to it, pinned the same way.\n",
        );
        if !catalog.is_empty() {
            // Read back as a warning where the file is used with another catalog.
            let _ = write!(text, "\ncatalog = {}\n", pin::toml_string(catalog));
        }
        File {
            text,
            written: BTreeSet::new(),
        }
    }

    fn entry(&mut self, kind: EntryKind, id: &str, reason: &str, pin: Option<Pin>) {
        if !self.written.insert((kind, id.to_owned())) {
            return;
        }
        let out = &mut self.text;
        let _ = write!(
            out,
            "\n[[{}]]\nid = {}\n",
            kind.as_str(),
            pin::toml_string(id)
        );
        if kind == EntryKind::Known || !reason.is_empty() {
            let _ = writeln!(out, "reason = {}", pin::toml_string(reason));
        }
        if let Some(p) = pin {
            let _ = writeln!(out, "texts = {}", pin::toml_string(&p.texts));
            if let Some(e) = &p.excerpt {
                let _ = writeln!(out, "excerpt = {}", pin::toml_string(e));
            }
        }
    }
}

/// What this run pins of a case a pin may be taken from.
fn pin_now(
    report: &SuiteReport,
    scenario: &str,
    mode: Option<Mode>,
    kind: EntryKind,
) -> Option<Pin> {
    let c = report.cases.iter().find(|c| {
        c.scenario.id == scenario
            && Some(c.mode) == mode
            && pinnable(c)
            && match kind {
                EntryKind::Known => matches!(c.verdict, Verdict::Fail | Verdict::Known(_)),
                EntryKind::Refused => c.obs.as_ref().is_some_and(|o| o.refused.is_some()),
            }
    })?;
    Some(Pin::of(&c.scenario, c.obs.as_ref()?))
}

/// A failed or known case's failed checks the baseline in use does not cover yet, as entry
/// ids (harness faults, and a changed pin, are not the subject's to list).
fn new_known(case: &CaseReport, previous: &[&Entry]) -> Vec<String> {
    if !matches!(case.verdict, Verdict::Fail | Verdict::Known(_)) {
        return Vec::new();
    }
    case.findings
        .iter()
        .filter(|f| {
            f.blame() == Blame::Subject
                && f.check != Check::BaselineChanged
                && !previous
                    .iter()
                    .any(|e| e.covers(&case.scenario.id, case.mode, f))
        })
        .map(|f| format!("{}@{}:{}", case.scenario.id, case.mode, f.check))
        .collect()
}

/// A case skipped because its call was refused, as an entry id, unless the baseline in use
/// lists it.
fn new_refused(case: &CaseReport, previous: &[&Entry]) -> Option<String> {
    let listed = previous
        .iter()
        .any(|e| e.kind == EntryKind::Refused && e.names(&case.scenario.id, case.mode));
    (refused_skip(case) && pinnable(case) && !listed)
        .then(|| format!("{}@{}", case.scenario.id, case.mode))
}
