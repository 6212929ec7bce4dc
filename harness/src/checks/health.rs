//! `harness.*`: the harness's own health. A failure here means the run proves nothing about the
//! subject (a fake faulted, or sent a frame its protocol does not allow without saying so).

use conform_protocol::side::FakeEvent;

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    for line in &obs.fake {
        if let FakeEvent::Fault { detail } = &line.event {
            f.push(Finding::new(
                Check::HarnessFake,
                format!("fake pid {}: {detail}", line.pid),
            ));
        }
    }
    // Every frame a fake sends must be valid for its protocol unless the scenario marked it.
    // A real peer's frames are the runtime's own: `conform peers diff` holds them to the same
    // schema (a rejection there means the schema, not the runtime, is wrong).
    let checked = if scenario.file.peer.is_some() {
        Some(vec![])
    } else {
        conform_fakes::schema::unmarked_invalid_frames(
            scenario.file.provider,
            obs.product_version.as_deref(),
            &obs.fake,
        )
    };
    match checked {
        Some(invalid) => {
            for (line, e) in invalid {
                let frame = match &line.event {
                    FakeEvent::Frame { frame, .. } => frame.to_string(),
                    other => format!("{other:?}"),
                };
                f.push(Finding::new(
                    Check::HarnessFakeSchema,
                    format!(
                        "the fake sent a frame that is not valid {} without a `violation` mark: {e}\n  frame: {frame}",
                        scenario.file.provider
                    ),
                ));
            }
        }
        None => f.push(Finding::new(
            Check::HarnessFakeSchema,
            format!(
                "conform has no wire schema for `{}`",
                scenario.file.provider
            ),
        )),
    }
}
