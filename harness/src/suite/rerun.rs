//! Verdicts that do not depend on `-j`. A timing finding the load in flight might explain (the
//! harness's and the subject's threads waited as long for a CPU as the run was late) is no
//! verdict yet: those threads are shared by every run in flight, so at a high `-j` every
//! lateness would be explained. Such a case is run again at the end of the suite, alone — its
//! unit, with nothing else in flight — and judged there: a lateness that vanishes alone was the
//! load's (an advisory, saying so); one that stays is the subject's.

use std::sync::Arc;

use super::judge::Judging;
use super::outcome::{CaseReport, Verdict};
use super::schedule::{Case, run_unit};
use crate::checks::Finding;
use crate::run::Ctx;

/// Runs again, alone, every unit holding a case that passed only because a finding was
/// load-suspect, and takes what those cases show alone.
pub async fn alone(
    ctx: &Arc<Ctx>,
    units: &[Vec<Case>],
    mut reports: Vec<(usize, CaseReport)>,
    judging: impl Fn() -> Judging,
) -> Vec<(usize, CaseReport)> {
    let suspect: Vec<usize> = reports
        .iter()
        .filter(|(_, r)| {
            matches!(r.verdict, Verdict::Pass) && r.advisories.iter().any(|f| f.load_suspect)
        })
        .map(|(i, _)| *i)
        .collect();
    let again: Vec<&Vec<Case>> = units
        .iter()
        .filter(|u| u.iter().any(|(i, ..)| suspect.contains(i)))
        .collect();
    if again.is_empty() || ctx.interrupt.borrow().is_some() {
        return reports;
    }
    eprintln!(
        "conform: running {} case(s) again alone: a timing finding the load in flight might explain",
        suspect.len()
    );
    let one = super::admit::Admission::new(crate::settings::Jobs::Fixed(1));
    for unit in again {
        let hidden = super::schedule::Progress::hidden();
        let alone = run_unit(ctx.clone(), one.clone(), hidden, unit.clone(), judging()).await;
        for (index, second) in alone {
            let Some((_, first)) = reports.iter_mut().find(|(i, _)| *i == index) else {
                continue;
            };
            if suspect.contains(&index) {
                *first = judged_alone(std::mem::replace(first, placeholder(&second)), second);
            }
        }
    }
    reports
}

/// The case as its run alone shows it, with what the first run was excused for. A lateness
/// that stays alone fails, even if the load could explain it again: that is no longer the
/// suite's load.
fn judged_alone(first: CaseReport, mut second: CaseReport) -> CaseReport {
    let excused: Vec<Finding> = first
        .advisories
        .into_iter()
        .filter(|f| f.load_suspect)
        .collect();
    let names = excused
        .iter()
        .map(|f| format!("`{}`", f.check))
        .collect::<Vec<_>>()
        .join(", ");
    let (late, rest): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut second.advisories)
        .into_iter()
        .partition(|f| f.load_suspect);
    second.advisories = rest;
    if matches!(second.verdict, Verdict::Pass) && late.is_empty() {
        second
            .advisories
            .extend(excused.into_iter().map(|f| Finding {
                message: format!("{} — alone, it was on time", f.message),
                ..f
            }));
        second.rerun = Some(format!(
            "run again alone at the end of the suite ({names} was load-suspect with other runs in flight): on time, so the lateness was the load's"
        ));
        return second;
    }
    if !late.is_empty() {
        second.verdict = Verdict::Fail;
        second.findings.extend(late.into_iter().map(|f| Finding {
            message: format!("{} — and late again when run alone", f.message),
            load_suspect: false,
            ..f
        }));
    }
    second.rerun = Some(format!(
        "run again alone at the end of the suite ({names} was load-suspect with other runs in flight): what it showed alone is the verdict"
    ));
    second
}

/// A stand-in while a report is moved out and back.
fn placeholder(like: &CaseReport) -> CaseReport {
    CaseReport {
        scenario: like.scenario.clone(),
        mode: like.mode,
        verdict: Verdict::Pass,
        findings: vec![],
        advisories: vec![],
        snapshot: None,
        rerun: None,
        obs: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Check;

    fn report(verdict: Verdict, findings: Vec<Finding>, advisories: Vec<Finding>) -> CaseReport {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acp/case.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "title = \"t\"\nprovider = \"acp\"\n[expect]\nstop_reason = \"completed\"\n",
        )
        .unwrap();
        CaseReport {
            scenario: Arc::new(crate::scenario::load(dir.path(), &path).unwrap()),
            mode: conform_protocol::subject::Mode::Foreground,
            verdict,
            findings,
            advisories,
            snapshot: None,
            rerun: None,
            obs: None,
        }
    }

    fn late() -> Finding {
        Finding::new(Check::TimingSettled, "`settled` came 900 ms after").load_suspect()
    }

    #[test]
    fn a_lateness_that_vanishes_alone_stays_an_advisory_and_says_so() {
        let first = report(Verdict::Pass, vec![], vec![late()]);
        let got = judged_alone(first, report(Verdict::Pass, vec![], vec![]));
        assert!(matches!(got.verdict, Verdict::Pass));
        assert!(got.advisories[0].message.ends_with("alone, it was on time"));
        assert!(got.rerun.unwrap().contains("on time"));
    }

    #[test]
    fn a_lateness_that_stays_alone_fails_even_when_the_load_could_explain_it_again() {
        let first = report(Verdict::Pass, vec![], vec![late()]);
        let got = judged_alone(first, report(Verdict::Pass, vec![], vec![late()]));
        assert!(matches!(got.verdict, Verdict::Fail));
        assert_eq!(got.findings.len(), 1);
        assert!(!got.findings[0].load_suspect);
        assert!(
            got.findings[0]
                .message
                .ends_with("late again when run alone")
        );
        let on_an_idle_machine = Finding::new(Check::TimingSettled, "`settled` came 900 ms after");
        let failed = report(Verdict::Fail, vec![on_an_idle_machine], vec![]);
        let got = judged_alone(report(Verdict::Pass, vec![], vec![late()]), failed);
        assert!(matches!(got.verdict, Verdict::Fail));
        assert!(
            got.rerun
                .unwrap()
                .contains("what it showed alone is the verdict")
        );
    }
}
