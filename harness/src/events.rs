//! What a run hears: the subject's messages and the fakes' side-channel lines, merged into one
//! ordered stream per run so the runner awaits events instead of polling.

use std::collections::HashMap;
use std::sync::Mutex;

use conform_protocol::side::FakeLine;
use conform_protocol::subject::FromSubject;
use tokio::sync::mpsc;

#[derive(Clone, Debug)]
pub enum RunEvent {
    /// A valid line from the subject about this run.
    Subject(FromSubject),
    /// A line from the subject that broke the subject protocol.
    SubjectInvalid { line: String, error: String },
    /// The subject process ended while the run was in flight.
    SubjectGone { detail: String },
    /// A line from one of the run's fake processes.
    Fake(FakeLine),
    /// A fake process's side connection closed: it exited, and everything it reported has
    /// arrived.
    SideClosed { pid: i32 },
}

/// Routes events to the run they belong to.
#[derive(Default)]
pub struct Router {
    routes: Mutex<HashMap<String, mpsc::UnboundedSender<RunEvent>>>,
}

impl Router {
    pub fn open(&self, run: &str) -> mpsc::UnboundedReceiver<RunEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.routes.lock().unwrap().insert(run.to_owned(), tx);
        rx
    }

    pub fn close(&self, run: &str) {
        self.routes.lock().unwrap().remove(run);
    }

    /// Delivers to one run; events for unknown or finished runs are dropped.
    pub fn send(&self, run: &str, event: RunEvent) {
        if let Some(tx) = self.routes.lock().unwrap().get(run) {
            let _ = tx.send(event);
        }
    }

    pub fn runs(&self) -> Vec<String> {
        self.routes.lock().unwrap().keys().cloned().collect()
    }
}
