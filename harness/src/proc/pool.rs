//! Keeps one subject process alive for the suite, starting a new one when the last died, so a
//! subject that crashes mid-run fails that run and the suite goes on.
//!
//! Starting is not retried forever: a subject that cannot be started or fails its `hello` at the
//! start of the suite is not tried again (it is broken, not flaky), and after a subject that
//! worked has died, at most [`RESTART_ATTEMPTS`] starts in a row may fail. Then the pool is
//! *broken*: it answers at once with the reason, the suite reports it once, and the cases left
//! are not run.

use std::sync::Arc;
use std::time::Duration;

use crate::proc::router::Router;
use crate::proc::subject_process::{Subject, SubjectError, Transcripts};

/// Failed starts in a row, after a subject that worked died, before the pool gives up.
pub const RESTART_ATTEMPTS: u32 = 3;

/// How long a subject has to exit after `shutdown` before its group is killed.
const SHUTDOWN_BUDGET: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Broken(pub String);

struct State {
    current: Option<Arc<Subject>>,
    /// Whether any subject of this pool ever completed its hello.
    ever_started: bool,
    failed_in_a_row: u32,
    broken: Option<String>,
}

pub struct SubjectPool {
    argv: Vec<String>,
    /// The `conform` executable: each subject is started below its keeper
    /// ([`crate::proc::keeper`]).
    exe: String,
    router: Arc<Router>,
    transcripts: Arc<Transcripts>,
    hello_timeout: Duration,
    state: tokio::sync::Mutex<State>,
    /// Every subject started, so the end of the suite can shut each one down.
    all: std::sync::Mutex<Vec<Arc<Subject>>>,
}

impl SubjectPool {
    pub fn new(
        argv: Vec<String>,
        exe: String,
        router: Arc<Router>,
        transcripts: Arc<Transcripts>,
        hello_timeout: Duration,
    ) -> Self {
        SubjectPool {
            argv,
            exe,
            router,
            transcripts,
            hello_timeout,
            state: tokio::sync::Mutex::new(State {
                current: None,
                ever_started: false,
                failed_in_a_row: 0,
                broken: None,
            }),
            all: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn command(&self) -> String {
        self.argv.join(" ")
    }

    /// The live subject, started if there is none; the reason once the pool gave up.
    pub async fn get(&self) -> Result<Arc<Subject>, Broken> {
        let mut state = self.state.lock().await;
        loop {
            if let Some(reason) = &state.broken {
                return Err(Broken(reason.clone()));
            }
            if let Some(s) = state.current.as_ref()
                && s.is_alive()
            {
                return Ok(s.clone());
            }
            match Subject::start(
                &crate::proc::keeper::wrap(&self.exe, &self.argv),
                self.router.clone(),
                self.transcripts.clone(),
                self.hello_timeout,
            )
            .await
            {
                Ok(s) => {
                    self.all.lock().unwrap().push(s.clone());
                    state.current = Some(s.clone());
                    state.ever_started = true;
                    state.failed_in_a_row = 0;
                    return Ok(s);
                }
                Err(e) => {
                    state.failed_in_a_row += 1;
                    let give_up = !state.ever_started
                        || state.failed_in_a_row >= RESTART_ATTEMPTS
                        || matches!(e, SubjectError::Spawn { .. });
                    if give_up {
                        state.broken = Some(if state.ever_started {
                            format!(
                                "{e} (the subject died during the suite and {} restart(s) in a row failed; no more are tried)",
                                state.failed_in_a_row
                            )
                        } else {
                            e.to_string()
                        });
                    }
                }
            }
        }
    }

    /// Why the pool gave up on the subject, if it did.
    pub async fn broken(&self) -> Option<String> {
        self.state.lock().await.broken.clone()
    }

    /// The highest peak resident set of the subjects still running (KiB).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        self.all
            .lock()
            .unwrap()
            .iter()
            .filter_map(|s| s.peak_rss_kib())
            .max()
    }

    /// Shuts every subject down (kills what does not exit in time) and waits for each.
    pub async fn shutdown(&self) {
        let all: Vec<_> = self.all.lock().unwrap().drain(..).collect();
        for s in all {
            s.shutdown(SHUTDOWN_BUDGET).await;
        }
    }
}
