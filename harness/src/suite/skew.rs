//! Version skew, said where it bites. A host built against another release of its runtime than
//! the one the fake speaks fails output cases for no fault of its own logic (a DSH SDK 0.1.x host
//! reads the text from chunks the 0.2 runtime no longer sends). When nobody named the product
//! version — neither `--product-version` nor the subject's hello — a case that failed on its
//! output is run again alone with the fake speaking each other known version; one that passes
//! so gets one line saying which version, and how to name it. The verdict does not change: the
//! host was judged against what it was told it runs.

use std::sync::Arc;

use super::judge::Judging;
use super::outcome::{CaseReport, Verdict};
use super::schedule::{Case, run_unit, speaks};
use crate::checks::Check;
use crate::run::Ctx;

/// At most this many cases are tried again per suite: the hint is the same for all of them,
/// and a host failing hundreds of output cases has it long before the last one.
const MOST_TRIED: usize = 24;

/// Tries each output failure nobody chose a version for under the other versions; notes the
/// version under which it passes.
pub async fn hint(
    ctx: &Arc<Ctx>,
    units: &[Vec<Case>],
    mut reports: Vec<(usize, CaseReport)>,
    judging: impl Fn() -> Judging,
) -> Vec<(usize, CaseReport)> {
    let tried: Vec<(usize, Case, Vec<&'static str>)> = reports
        .iter()
        .filter_map(|(index, r)| {
            let others = other_versions(ctx, r)?;
            let unit = units.iter().find(|u| u.iter().any(|(i, ..)| i == index))?;
            // A member of an isolation group runs only with its group.
            let [case] = unit.as_slice() else {
                return None;
            };
            Some((*index, case.clone(), others))
        })
        .take(MOST_TRIED)
        .collect();
    if tried.is_empty() || ctx.interrupt.borrow().is_some() {
        return reports;
    }
    eprintln!(
        "conform: running {} case(s) that failed on their output again with the fake speaking another product version",
        tried.len()
    );
    let one = super::admit::Admission::new(crate::settings::Jobs::Fixed(1));
    for (index, (i, scenario, mode), others) in tried {
        for version in others {
            let mut speaking = (*scenario).clone();
            speaking.script.product_version = Some(version.to_owned());
            let case = (i, Arc::new(speaking), mode);
            let hidden = super::schedule::Progress::hidden();
            let again = run_unit(ctx.clone(), one.clone(), hidden, vec![case], judging()).await;
            if !again
                .iter()
                .all(|(_, r)| matches!(r.verdict, Verdict::Pass))
            {
                continue;
            }
            if let Some((_, report)) = reports.iter_mut().find(|(i, _)| *i == index) {
                let provider = scenario.file.provider;
                let note = format!(
                    "passes with the fake speaking {} — is the host built on it? Say so with `--product-version {provider}={version}`, or `productVersions` in its hello",
                    speaks(provider, Some(version))
                );
                report.rerun = Some(match report.rerun.take() {
                    Some(before) => format!("{before}; {note}"),
                    None => note,
                });
            }
            break;
        }
    }
    reports
}

/// The versions other than the one spoken for a case that failed on its output, when nobody
/// chose that one (`None`: not such a case).
fn other_versions(ctx: &Ctx, r: &CaseReport) -> Option<Vec<&'static str>> {
    let on_output = r.findings.iter().any(|f| f.check == Check::ExpectOutput);
    // A run that hung would hang again, a deadline per version: only a run that ended with
    // the wrong text is worth the question.
    let hung = r.findings.iter().any(|f| f.check == Check::SubjectDeadline);
    let s = &r.scenario;
    let chosen = ctx.settings.product_version(s.file.provider).is_some()
        || s.script.product_version.is_some()
        || s.file.peer.is_some();
    if !matches!(r.verdict, Verdict::Fail) || !on_output || hung || chosen {
        return None;
    }
    let known = conform_fakes::protocols::codec_for(s.file.provider).product_versions();
    let others: Vec<&'static str> = known.into_iter().skip(1).collect();
    (!others.is_empty()).then_some(others)
}
