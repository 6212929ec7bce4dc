//! An isolation group in flight: the board on which each member publishes the milestones it
//! reached, so that another member's `await` can be released at one of them
//! (`docs/scenarios.md`, isolation groups).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use conform_protocol::side::FakeEvent;
use tokio::sync::watch;

use crate::run::observed::Observed;
use crate::run::sent::Sent;

/// What every member has reached, by member.
pub type Reached = BTreeMap<String, BTreeSet<String>>;

/// Where the members of one group in flight publish the milestones they reached.
#[derive(Debug)]
pub struct Board {
    reached: watch::Sender<Reached>,
}

impl Board {
    pub fn new() -> Arc<Board> {
        Arc::new(Board {
            reached: watch::Sender::new(BTreeMap::new()),
        })
    }

    /// `member` reached `milestone` (idempotent; wakes the other members only when new).
    pub fn reach(&self, member: &str, milestone: &str) {
        self.reached.send_if_modified(|r| {
            r.entry(member.to_owned())
                .or_default()
                .insert(milestone.to_owned())
        });
    }

    pub fn has(&self, member: &str, milestone: &str) -> bool {
        self.reached
            .borrow()
            .get(member)
            .is_some_and(|m| m.contains(milestone))
    }

    /// A receiver that wakes whenever any member reaches something new.
    pub fn watch(&self) -> watch::Receiver<Reached> {
        self.reached.subscribe()
    }
}

/// One run's place in a group in flight.
#[derive(Clone, Debug)]
pub struct Membership {
    pub board: Arc<Board>,
    pub member: String,
}

/// Publishes what this run reached so far on its group's board (`scenario::MILESTONES`).
pub fn publish(g: &Membership, obs: &Observed, sent: &Sent) {
    let reached = [
        ("dispatched", obs.dispatched),
        ("start-rejected", obs.start_rejected.is_some()),
        ("result", obs.result.is_some()),
        ("settled", obs.settled),
        ("tool-result", obs.tool_result.is_some()),
        ("notice", !obs.notices.is_empty()),
        ("cancel", sent.host_cancelled()),
    ];
    for (milestone, yes) in reached {
        if yes {
            g.board.reach(&g.member, milestone);
        }
    }
    for line in &obs.fake {
        match &line.event {
            FakeEvent::Checkpoint { name } => {
                g.board.reach(&g.member, &format!("checkpoint:{name}"))
            }
            FakeEvent::Awaiting { name } => g.board.reach(&g.member, &format!("awaiting:{name}")),
            _ => {}
        }
    }
}

/// Resolves when another member of the run's group reached something new (never outside one).
pub async fn others_moved(board: &mut Option<watch::Receiver<Reached>>) {
    match board {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_board_remembers_and_wakes_only_on_news() {
        let board = Board::new();
        let mut rx = board.watch();
        rx.mark_unchanged();
        board.reach("a", "result");
        assert!(board.has("a", "result"));
        assert!(!board.has("b", "result"));
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        board.reach("a", "result");
        assert!(
            !rx.has_changed().unwrap(),
            "a milestone reached again is no news"
        );
    }
}
