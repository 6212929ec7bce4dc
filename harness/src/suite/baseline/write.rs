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
