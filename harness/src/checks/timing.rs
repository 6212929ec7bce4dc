//! Timing a provider's correctness depends on. Once every process of a run is gone, nothing is
//! left for the provider to wait for: no pipe can stay open, no exit fact is missing, no grace
//! can still expire. A `result` or `settled` that comes long after that moment is a provider
//! waiting needlessly (a grace walked after the child had already exited), which multiplies a
//! host's latency on every failure while every other verdict still passes.
//!
//! The bound is derived from the run's own graces, never an absolute target: half the shortest
//! dispose grace the provider is configured with (the scenario's `disposeGraceMs` /
//! `disposeEofGraceMs`, else the records' defaults of 3000 / 6000 ms), and never under
//! [`MIN_BOUND_MS`] so a loaded CI machine is not judged. A provider that waits out a grace
//! needlessly is late by a whole grace, twice the bound. Lateness the harness's and the
//! subject's own threads spent waiting for a CPU (their run-queue delay) is the machine's: a
//! finding it explains is load-suspect, an advisory.

use conform_protocol::side::FakeEvent;
use serde_json::Value;

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

/// The records' default dispose graces (ms): SIGTERM → SIGKILL, and stdin EOF → SIGTERM.
const DEFAULT_DISPOSE_GRACE_MS: u64 = 3000;
const DEFAULT_DISPOSE_EOF_GRACE_MS: u64 = 6000;

/// The least bound ever applied (ms): below it, scheduling noise on a loaded machine could be
/// mistaken for a wait.
pub const MIN_BOUND_MS: u64 = 500;

/// How long after its last process was gone a run may take to report (ms).
pub fn bound_ms(scenario: &Scenario) -> u64 {
    let config = &scenario.file.subject.config;
    let grace =
        |key: &str, default: u64| config.get(key).and_then(Value::as_u64).unwrap_or(default);
    let shortest = grace("disposeGraceMs", DEFAULT_DISPOSE_GRACE_MS)
        .min(grace("disposeEofGraceMs", DEFAULT_DISPOSE_EOF_GRACE_MS));
    (shortest / 2).max(MIN_BOUND_MS)
}

/// When the run's last registered process was seen gone (ms since the run started), if every
/// one of them was.
fn all_gone_at(obs: &Observed) -> Option<u64> {
    let mut last = None;
    for line in &obs.fake {
        if let FakeEvent::Register { .. } = line.event {
            let at = *obs.gone_at_ms.get(&line.pid)?;
            last = last.max(Some(at));
        }
    }
    last
}

pub fn judge(scenario: &Scenario, obs: &Observed) -> Vec<Finding> {
    if obs.timed_out.is_some() || obs.subject_gone.is_some() || obs.not_run.is_some() {
        return Vec::new();
    }
    let Some(gone) = all_gone_at(obs) else {
        return Vec::new();
    };
    let bound = bound_ms(scenario);
    [
        (Check::TimingResult, "result", obs.result_at_ms),
        (Check::TimingSettled, "settled", obs.settled_at_ms),
    ]
    .into_iter()
    .filter_map(|(check, what, at)| {
        let late = at?.checked_sub(gone)?;
        (late > bound).then(|| {
            let finding = Finding::new(
                check,
                format!(
                    "`{what}` came {late} ms after the run's last process was gone (bound {bound} ms: \
                     half the shortest dispose grace); nothing was left to wait for"
                ),
            );
            // As late as the threads that had to report it waited for a CPU: the machine's.
            let waited = obs.cpu_waited.unwrap_or_default().as_millis() as u64;
            if waited >= late - bound {
                Finding {
                    message: format!(
                        "{} — load-suspect: the harness's and the subject's threads waited {waited} ms for a CPU during the run",
                        finding.message
                    ),
                    ..finding.load_suspect()
                }
            } else {
                finding
            }
        })
    })
    .collect()
}
