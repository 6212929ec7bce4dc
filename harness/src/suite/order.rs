//! The order a suite starts its units in.

use super::schedule::Case;
use crate::scenario::waits::SCRIPTED;

/// The units in the order they are started: the one whose scripts wait longest first (ties in
/// selection order), by the waits every run of the case walks ([`SCRIPTED`]; a grace is no
/// guide). A case that waits a second and a half started among the
/// last keeps the suite open after every other run is done; started first, it waits while the
/// short ones run. Reports are put back in selection order: only the wall time changes.
pub(super) fn slowest_first(units: &[Vec<Case>]) -> Vec<Vec<Case>> {
    let scripted = |unit: &Vec<Case>| -> u64 {
        unit.iter()
            .map(|(_, s, _)| {
                s.set_waits()
                    .iter()
                    .filter(|w| SCRIPTED.contains(&w.key))
                    .map(|w| w.ms)
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    };
    let mut ordered: Vec<(u64, &Vec<Case>)> = units.iter().map(|u| (scripted(u), u)).collect();
    ordered.sort_by_key(|(ms, _)| std::cmp::Reverse(*ms));
    ordered.into_iter().map(|(_, u)| u.clone()).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use conform_protocol::subject::Mode;

    use super::*;

    /// Longest scripted wait first: a delayed answer (1.5 s), a helper's linger (0.7 s, its
    /// 1.5 s grace not counted), a 0.3 s delay beside a 10 s grace never walked; the rest in
    /// selection order.
    #[test]
    fn the_units_whose_scripts_wait_longest_start_first() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let all = crate::scenario::discover(&root).expect("the catalog loads");
        let ids = [
            "acp/stop/refusal",
            "acp/cancel/answered-late",
            "acp/stop/max-tokens",
            "acp/settle/unannounced-helper-outlives-runtime",
            "dsh-sdk/handshake/slow-initialize",
        ];
        let units: Vec<Vec<Case>> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let s = all.iter().find(|s| s.id == *id).expect("in the catalog");
                vec![(i, Arc::new(s.clone()), Mode::Foreground)]
            })
            .collect();
        let ordered = slowest_first(&units);
        let order: Vec<&str> = ordered.iter().map(|u| u[0].1.id.as_str()).collect();
        assert_eq!(
            order,
            [
                "dsh-sdk/handshake/slow-initialize",
                "acp/settle/unannounced-helper-outlives-runtime",
                "acp/cancel/answered-late",
                "acp/stop/refusal",
                "acp/stop/max-tokens",
            ]
        );
    }
}
