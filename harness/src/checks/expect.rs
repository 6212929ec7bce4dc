//! `expect.*`: what the scenario says this run must end in — start rejection, stop reason,
//! diagnostic (or upstream code), output, job status, teardown rung.

use conform_protocol::side::FakeEvent;
use conform_protocol::subject::Mode;
use conform_protocol::vocab::TeardownRung;

use super::{Check, Finding, show};
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn judge(scenario: &Scenario, mode: Mode, obs: &Observed, f: &mut Vec<Finding>) {
    let expect = &scenario.file.expect;
    match (&expect.start_error, &obs.start_rejected) {
        (Some(want), Some(got)) if &got.message != want => f.push(Finding::new(
            Check::ExpectStartError,
            format!(
                "start rejected with {}, expected `{want}`",
                show(Some(&got.message))
            ),
        )),
        (Some(want), None) => f.push(Finding::new(
            Check::ExpectStartError,
            format!("start was not rejected, expected `{want}`"),
        )),
        (None, Some(got)) => f.push(Finding::new(
            Check::ExpectStartError,
            format!(
                "start was rejected unexpectedly: {}: {}",
                show(Some(&got.name)),
                show(Some(&got.message))
            ),
        )),
        _ => {}
    }
    if let Some(want) = &expect.stop_reason {
        match &obs.result {
            None => f.push(Finding::new(
                Check::ExpectStopReason,
                "no result was reported",
            )),
            Some(r) => {
                if r.stop_reason != want.as_str() {
                    f.push(Finding::new(
                        Check::ExpectStopReason,
                        format!("stop reason `{}`, expected `{want}`", r.stop_reason),
                    ));
                }
                if let Some(code) = &expect.upstream_code {
                    let mapped = upstream_mapping(r.diagnostic.as_deref());
                    if mapped.as_deref() != Some(code.as_str())
                        && mapped.as_deref() != Some("unknown")
                    {
                        f.push(Finding::new(
                            Check::ExpectUpstreamCode,
                            format!(
                                "upstream code `{code}` shows as {}, expected `{code}` or `unknown`",
                                show(mapped.as_deref())
                            ),
                        ));
                    }
                } else if r.diagnostic != expect.diagnostic {
                    f.push(Finding::new(
                        Check::ExpectDiagnostic,
                        format!(
                            "diagnostic {}, expected {}",
                            show(r.diagnostic.as_deref()),
                            show(expect.diagnostic.as_deref())
                        ),
                    ));
                }
                if let Some(want) = &expect.output
                    && &r.output_text() != want
                {
                    f.push(Finding::new(
                        Check::ExpectOutput,
                        format!("output {:?}, expected {want:?}", r.output_text()),
                    ));
                }
            }
        }
    }
    if mode == Mode::Background
        && let Some(want) = &expect.job_status
    {
        let got = obs.job_output.as_deref().and_then(super::job_status);
        if got.as_deref() != Some(want.as_str()) {
            f.push(Finding::new(
                Check::ExpectJobStatus,
                format!("job status {}, expected `{want}`", show(got.as_deref())),
            ));
        }
    }
    if let Some(want) = expect.teardown {
        let got = teardown_rung(obs);
        if got != Some(want) {
            f.push(Finding::new(
                Check::ExpectTeardown,
                format!(
                    "the runtime ended at teardown rung {}, expected `{want}`",
                    show(got.map(TeardownRung::as_str))
                ),
            ));
        }
    }
}

/// Which rung of the teardown ladder ended the runtime process, from its own ledger.
pub fn teardown_rung(obs: &Observed) -> Option<TeardownRung> {
    let runtime_pid = conform_protocol::side::runtime_pid(&obs.fake)?;
    let mine = || obs.fake.iter().filter(move |l| l.pid == runtime_pid);
    let term = mine().find_map(|l| match &l.event {
        FakeEvent::Signal { signal, action } if signal == "SIGTERM" => Some(action.clone()),
        _ => None,
    });
    let exited = mine().any(|l| matches!(l.event, FakeEvent::Exit { .. }));
    Some(match term.as_deref() {
        Some("exit") => TeardownRung::Sigterm,
        _ if exited => TeardownRung::Eof,
        _ => TeardownRung::Sigkill,
    })
}

/// The category a diagnostic's first line shows (`category: <x>;` or `…)`).
pub fn upstream_mapping(diagnostic: Option<&str>) -> Option<String> {
    let first = diagnostic?.lines().next()?;
    let rest = &first[first.find("category: ")? + "category: ".len()..];
    let end = rest.find([';', ')']).unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}
