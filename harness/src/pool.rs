//! Keeps one subject process alive for the suite, starting a new one when the last died, so a
//! subject that crashes mid-run fails that run and the suite goes on.

use std::sync::Arc;
use std::time::Duration;

use crate::events::Router;
use crate::subject::{Subject, SubjectError, Transcripts};

pub struct SubjectPool {
    argv: Vec<String>,
    router: Arc<Router>,
    transcripts: Arc<Transcripts>,
    current: tokio::sync::Mutex<Option<Arc<Subject>>>,
    /// Every subject started, so the end of the suite can shut each one down.
    all: std::sync::Mutex<Vec<Arc<Subject>>>,
}

impl SubjectPool {
    pub fn new(argv: Vec<String>, router: Arc<Router>, transcripts: Arc<Transcripts>) -> Self {
        SubjectPool {
            argv,
            router,
            transcripts,
            current: tokio::sync::Mutex::new(None),
            all: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn command(&self) -> String {
        self.argv.join(" ")
    }

    /// The live subject, started if there is none.
    pub async fn get(&self) -> Result<Arc<Subject>, SubjectError> {
        let mut current = self.current.lock().await;
        if let Some(s) = current.as_ref()
            && s.is_alive()
        {
            return Ok(s.clone());
        }
        let s = Subject::start(&self.argv, self.router.clone(), self.transcripts.clone()).await?;
        self.all.lock().unwrap().push(s.clone());
        *current = Some(s.clone());
        Ok(s)
    }

    /// Shuts every subject down (kills what does not exit in time).
    pub async fn shutdown(&self) {
        let all: Vec<_> = self.all.lock().unwrap().drain(..).collect();
        for s in all {
            if s.is_alive() {
                s.shutdown(Duration::from_secs(15)).await;
            }
            s.kill();
        }
    }
}
