//! What a run hears: the subject's messages and the fakes' side-channel lines, merged into one
//! ordered stream per run so the runner awaits events instead of polling. What cannot go to a
//! run in flight — messages for runs that are over, for runs the harness never started, or
//! naming no run — is kept here, bounded, for the suite to judge.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use conform_protocol::side::FakeLine;
use conform_protocol::subject::FromSubject;
use tokio::sync::mpsc;

use crate::proc::run_id::RunId;

#[derive(Clone, Debug)]
pub enum RunEvent {
    /// A valid line from the subject about this run.
    Subject(FromSubject),
    /// A line from the subject that broke the subject protocol (shown bounded and escaped).
    SubjectInvalid { line: String, error: String },
    /// The subject process ended while the run was in flight.
    SubjectGone { detail: String },
    /// A line from one of the run's fake processes.
    Fake(FakeLine),
    /// A fake process's side connection closed: it exited, and everything it reported has
    /// arrived.
    SideClosed { pid: i32 },
    /// One of the run's registered processes is gone (its pidfd said so).
    ProcessGone { pid: i32 },
}

/// Messages kept per finished run, and examples kept per suite-level kind of fault: enough to
/// show what happened, never enough for a flooding subject to fill memory.
const LATE_KEPT: usize = 16;
const EXAMPLES_KEPT: usize = 5;

/// A count of like faults with the first few shown.
#[derive(Clone, Debug, Default)]
pub struct Bucket {
    pub count: u64,
    pub examples: Vec<String>,
}

impl Bucket {
    fn add(&mut self, example: impl FnOnce() -> String) {
        self.count += 1;
        if self.examples.len() < EXAMPLES_KEPT {
            self.examples.push(example());
        }
    }
}

/// What arrived for a run after it was over: the first messages, and how many in all.
#[derive(Debug, Default)]
pub struct Late {
    pub events: Vec<RunEvent>,
    pub count: u64,
}

/// Where a subject line went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Routed {
    /// To the run, in flight.
    Open,
    /// Kept as late: the run is over.
    Late,
    /// Counted against the suite: no run of that id was ever started.
    Unknown,
}

/// Routes events to the run they belong to.
#[derive(Default)]
pub struct Router {
    routes: Mutex<HashMap<RunId, mpsc::UnboundedSender<RunEvent>>>,
    /// Every run id the harness has opened, so a message naming anything else is known forged.
    issued: Mutex<HashSet<RunId>>,
    /// Subject messages for runs that were already over: kept so the suite can judge them once
    /// the subject has shut down — a notice after the end is still a notice.
    late: Mutex<HashMap<RunId, Late>>,
    unknown_runs: Mutex<Bucket>,
    unattributed: Mutex<Bucket>,
}

impl Router {
    pub fn open(&self, run: &RunId) -> mpsc::UnboundedReceiver<RunEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.issued.lock().unwrap().insert(run.clone());
        self.routes.lock().unwrap().insert(run.clone(), tx);
        rx
    }

    pub fn close(&self, run: &RunId) {
        self.routes.lock().unwrap().remove(run);
    }

    /// Delivers a fake's event to its run; dropped when the run is not in flight (the ledger
    /// of a finished run was already read).
    pub fn send(&self, run: &str, event: RunEvent) {
        if let Some(tx) = self.routes.lock().unwrap().get(run) {
            let _ = tx.send(event);
        }
    }

    /// Delivers a subject event (a message or an invalid line) about `run`.
    pub fn from_subject(&self, run: &str, event: RunEvent, line: &str) -> Routed {
        if let Some(tx) = self.routes.lock().unwrap().get(run) {
            let _ = tx.send(event);
            return Routed::Open;
        }
        let issued = self.issued.lock().unwrap().get(run).cloned();
        let Some(id) = issued else {
            self.unknown_runs
                .lock()
                .unwrap()
                .add(|| format!("run {run:?}: {line}"));
            return Routed::Unknown;
        };
        if matches!(event, RunEvent::Subject(FromSubject::HostLog { .. })) {
            // Host-only text after the end is harmless and never judged.
            return Routed::Late;
        }
        let mut late = self.late.lock().unwrap();
        let entry = late.entry(id).or_default();
        entry.count += 1;
        if entry.events.len() < LATE_KEPT {
            entry.events.push(event);
        }
        Routed::Late
    }

    /// A subject line that names no run (not JSON, too long, no `run` field where one belongs).
    pub fn unattributed(&self, line: &str, error: &str) {
        self.unattributed
            .lock()
            .unwrap()
            .add(|| format!("{error}\n  line: {line}"));
    }

    /// What arrived for `run` after it was over.
    pub fn take_late(&self, run: &RunId) -> Late {
        self.late.lock().unwrap().remove(run).unwrap_or_default()
    }

    /// Messages for runs the harness never started.
    pub fn unknown_runs(&self) -> Bucket {
        self.unknown_runs.lock().unwrap().clone()
    }

    /// Broken lines that could not be laid at any run's door.
    pub fn unattributed_lines(&self) -> Bucket {
        self.unattributed.lock().unwrap().clone()
    }

    pub fn runs(&self) -> Vec<RunId> {
        self.routes.lock().unwrap().keys().cloned().collect()
    }
}
