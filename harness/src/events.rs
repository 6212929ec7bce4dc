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
    /// Subject messages for runs that were already over (or never started): kept so the suite
    /// can judge them once the subject has shut down — a notice after the end is still a notice.
    late: Mutex<HashMap<String, Vec<FromSubject>>>,
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

    /// Delivers to one run. Subject messages for unknown or finished runs are kept as late;
    /// anything else for them is dropped.
    pub fn send(&self, run: &str, event: RunEvent) {
        if let Some(tx) = self.routes.lock().unwrap().get(run) {
            let _ = tx.send(event);
            return;
        }
        if let RunEvent::Subject(msg) = event {
            self.late
                .lock()
                .unwrap()
                .entry(run.to_owned())
                .or_default()
                .push(msg);
        }
    }

    /// The subject messages that arrived for `run` after it was over.
    pub fn take_late(&self, run: &str) -> Vec<FromSubject> {
        self.late.lock().unwrap().remove(run).unwrap_or_default()
    }

    pub fn runs(&self) -> Vec<String> {
        self.routes.lock().unwrap().keys().cloned().collect()
    }
}
