//! `isolation.*`: what only runs in flight together show — one run's facts in another's texts,
//! a cancel that reached the wrong run. Judged over the members of an isolation group
//! (`docs/scenarios.md`), after each member was judged on its own.

use super::{Check, Finding, model_visible, untrusted_strings};
use crate::run::Observed;
use crate::scenario::Scenario;

/// The findings of each member, in the order given.
pub fn judge(members: &[(&Scenario, &Observed)]) -> Vec<Vec<Finding>> {
    let identities: Vec<Vec<String>> = members.iter().map(|(s, _)| identity(s)).collect();
    members
        .iter()
        .enumerate()
        .map(|(i, (s, obs))| {
            let mut f = Vec::new();
            cross_talk(i, s, obs, members, &identities, &mut f);
            cancel_target(obs, members, &mut f);
            f
        })
        .collect()
}

/// What identifies a run: its label, its declared markers, and its task and every untrusted
/// string its runtime sent.
fn identity(s: &Scenario) -> Vec<String> {
    let mut out = vec![s.label().to_owned()];
    if let Some(g) = &s.file.group {
        out.extend(g.markers.iter().filter(|m| !m.is_empty()).cloned());
    }
    out.extend(untrusted_strings(s));
    out
}

/// What a run may show of its own: its identity and the texts its scenario expects.
fn own_texts(s: &Scenario, identity: &[String]) -> Vec<String> {
    let e = &s.file.expect;
    let mut out = identity.to_vec();
    out.extend(
        [&e.start_error, &e.diagnostic, &e.output]
            .into_iter()
            .flatten()
            .cloned(),
    );
    out
}

fn cross_talk(
    me: usize,
    s: &Scenario,
    obs: &Observed,
    members: &[(&Scenario, &Observed)],
    identities: &[Vec<String>],
    f: &mut Vec<Finding>,
) {
    let own = own_texts(s, &identities[me]);
    for (other, (os, oobs)) in members.iter().enumerate() {
        if other == me {
            continue;
        }
        // A string this run could show of its own says nothing about where it came from.
        let telling = identities[other]
            .iter()
            .filter(|m| !own.iter().any(|o| o.contains(m.as_str())));
        for marker in telling {
            if let Some((place, _)) = model_visible(obs)
                .into_iter()
                .find(|(_, text)| text.contains(marker.as_str()))
            {
                f.push(Finding::new(
                    Check::IsolationCrossTalk,
                    format!(
                        "the {place} shows `{}`, which belongs to {} (run {}), in flight beside it",
                        super::cut(marker, 120),
                        os.id,
                        oobs.run
                    ),
                ));
                return;
            }
        }
    }
}

/// A run that was not cancelled but ended as a local cancel does (stop reason `aborted`, no
/// diagnostic), while another member was cancelled: that cancel reached the wrong run.
fn cancel_target(obs: &Observed, members: &[(&Scenario, &Observed)], f: &mut Vec<Finding>) {
    if obs.sent.cancel {
        return;
    }
    let Some((cs, cobs)) = members.iter().find(|(_, o)| o.sent.cancel) else {
        return;
    };
    if let Some(r) = &obs.result
        && r.stop_reason == "aborted"
        && r.diagnostic.is_none()
    {
        f.push(Finding::new(
            Check::IsolationCancelTarget,
            format!(
                "this run was never cancelled, yet it ended as a local cancel (aborted, no diagnostic); the cancel was sent to {} (run {})",
                cs.id, cobs.run
            ),
        ));
    }
}
