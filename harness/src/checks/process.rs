//! `process.*`: the child's process tree settled before the subject said so — before a start
//! rejection, and once the run is over — except what the scenario makes escape on purpose.

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    let escapes = scenario.file.expect.escapes;
    if !obs.alive_at_rejection.is_empty() && obs.alive_at_rejection.len() != escapes {
        f.push(Finding::new(
            Check::ProcessRollback,
            format!(
                "start was rejected while the child was still running (it must be settled first): {}",
                obs.alive_at_rejection.join(", ")
            ),
        ));
    }
    if obs.leftovers.len() != escapes {
        let check = if obs.start_rejected.is_some() {
            Check::ProcessRollback
        } else {
            Check::ProcessSettled
        };
        f.push(Finding::new(
            check,
            if escapes == 0 {
                format!(
                    "still running after the subject said the run was over (killed by the harness): {}",
                    obs.leftovers.join(", ")
                )
            } else {
                format!(
                    "{} process(es) left running, the scenario makes exactly {} escape: {}",
                    obs.leftovers.len(),
                    escapes,
                    obs.leftovers.join(", ")
                )
            },
        ));
    }
}
