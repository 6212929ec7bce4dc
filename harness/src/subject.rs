//! The subject process: spawned once (again after it dies), greeted with `hello`, then shared by
//! every run in flight. Each line it prints is validated against the subject-protocol JSON
//! Schema before it is parsed; a line that fails is the subject's failure, reported with the line.

use std::collections::{HashSet, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use conform_protocol::SUBJECT_PROTOCOL;
use conform_protocol::subject::{FromSubject, Mode, ToSubject};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{oneshot, watch};

use crate::events::{Router, RunEvent};

/// The JSON Schema every subject line is validated against (also shipped in `docs/`).
pub const SCHEMA_TEXT: &str = include_str!("../../docs/subject-protocol.schema.json");

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA_TEXT).expect("subject schema is JSON");
    jsonschema::validator_for(&schema).expect("subject schema is a valid JSON Schema")
});

/// Checks one line against the subject protocol; returns the parsed message.
pub fn parse_line(line: &str) -> Result<FromSubject, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let errors: Vec<String> = VALIDATOR
        .iter_errors(&value)
        .take(3)
        .map(|e| format!("{} at `{}`", e, e.instance_path()))
        .collect();
    if !errors.is_empty() {
        return Err(format!(
            "breaks the subject protocol: {}",
            errors.join("; ")
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("breaks the subject protocol: {e}"))
}

#[derive(Debug, thiserror::Error)]
pub enum SubjectError {
    #[error("could not start the subject `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the subject did not complete the hello exchange: {detail}")]
    Hello { detail: String },
}

/// What the subject said it can do.
#[derive(Clone, Debug)]
pub struct Capabilities {
    pub name: String,
    pub version: String,
    pub providers: Vec<String>,
    pub modes: Vec<Mode>,
}

const STDERR_TAIL_LINES: usize = 40;

pub struct Subject {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pub caps: Capabilities,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    runs: Arc<Mutex<HashSet<String>>>,
    exited: watch::Receiver<Option<String>>,
    pgid: i32,
}

impl Subject {
    /// Spawns the subject in its own process group and exchanges `hello`.
    pub async fn start(
        argv: &[String],
        router: Arc<Router>,
        transcript: Arc<Transcripts>,
    ) -> Result<Arc<Subject>, SubjectError> {
        let command = argv.join(" ");
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SubjectError::Spawn {
                command: command.clone(),
                source,
            })?;
        let pgid = child.id().map_or(0, |p| p as i32);
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        let stderr_done = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = tail.lock().unwrap();
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        let runs = Arc::new(Mutex::new(HashSet::new()));
        let (hello_tx, hello_rx) = oneshot::channel();
        let (exit_tx, exited) = watch::channel(None);
        tokio::spawn(read_loop(
            stdout,
            child,
            hello_tx,
            exit_tx,
            router,
            transcript,
            runs.clone(),
            stderr_tail.clone(),
            stderr_done,
        ));
        let subject = Subject {
            stdin: tokio::sync::Mutex::new(stdin),
            caps: Capabilities {
                name: String::new(),
                version: String::new(),
                providers: vec![],
                modes: vec![],
            },
            stderr_tail,
            runs,
            exited,
            pgid,
        };
        subject
            .send(&ToSubject::Hello {
                protocol: SUBJECT_PROTOCOL.to_owned(),
            })
            .await;
        let hello = tokio::time::timeout(Duration::from_secs(20), hello_rx).await;
        let caps = match hello {
            Ok(Ok(Ok(caps))) => caps,
            Ok(Ok(Err(detail))) => return Err(SubjectError::Hello { detail }),
            Ok(Err(_)) => {
                return Err(SubjectError::Hello {
                    detail: format!(
                        "the subject exited before answering hello; stderr tail:\n{}",
                        subject.stderr_tail()
                    ),
                });
            }
            Err(_) => {
                subject.kill();
                return Err(SubjectError::Hello {
                    detail: "no hello within 20 s".into(),
                });
            }
        };
        Ok(Arc::new(Subject { caps, ..subject }))
    }

    pub async fn send(&self, msg: &ToSubject) -> bool {
        let mut line = serde_json::to_string(msg).expect("serialises");
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        match stdin.as_mut() {
            Some(s) => s.write_all(line.as_bytes()).await.is_ok() && s.flush().await.is_ok(),
            None => false,
        }
    }

    /// Marks `run` as served by this subject (so its death is reported to the run).
    pub fn adopt(&self, run: &str) {
        self.runs.lock().unwrap().insert(run.to_owned());
    }

    pub fn release(&self, run: &str) {
        self.runs.lock().unwrap().remove(run);
    }

    pub fn is_alive(&self) -> bool {
        self.exited.borrow().is_none()
    }

    pub fn stderr_tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap();
        t.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    pub fn kill(&self) {
        if self.pgid > 0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(self.pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }

    /// Asks the subject to shut down; kills its process group if it has not exited in time.
    pub async fn shutdown(&self, budget: Duration) {
        self.send(&ToSubject::Shutdown).await;
        self.stdin.lock().await.take();
        let mut exited = self.exited.clone();
        let ok = tokio::time::timeout(budget, exited.wait_for(|e| e.is_some())).await;
        if ok.is_err() {
            self.kill();
        }
    }
}

/// Every subject line about a run, both directions, for failure reports.
#[derive(Default)]
pub struct Transcripts {
    lines: Mutex<std::collections::HashMap<String, Vec<String>>>,
}

impl Transcripts {
    pub fn record(&self, run: &str, line: String) {
        self.lines
            .lock()
            .unwrap()
            .entry(run.to_owned())
            .or_default()
            .push(line);
    }

    pub fn take(&self, run: &str) -> Vec<String> {
        self.lines.lock().unwrap().remove(run).unwrap_or_default()
    }
}

#[allow(clippy::too_many_arguments)]
async fn read_loop(
    stdout: tokio::process::ChildStdout,
    mut child: Child,
    hello_tx: oneshot::Sender<Result<Capabilities, String>>,
    exit_tx: watch::Sender<Option<String>>,
    router: Arc<Router>,
    transcript: Arc<Transcripts>,
    runs: Arc<Mutex<HashSet<String>>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    stderr_done: tokio::task::JoinHandle<()>,
) {
    let mut hello_tx = Some(hello_tx);
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let run = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|v| v.get("run").and_then(Value::as_str).map(str::to_owned));
        match parse_line(&line) {
            Ok(FromSubject::Hello {
                protocol,
                subject,
                providers,
                modes,
            }) => {
                if let Some(tx) = hello_tx.take() {
                    let _ = tx.send(if protocol == SUBJECT_PROTOCOL {
                        Ok(Capabilities {
                            name: subject.name,
                            version: subject.version,
                            providers,
                            modes,
                        })
                    } else {
                        Err(format!(
                            "the subject speaks `{protocol}`, the harness speaks `{SUBJECT_PROTOCOL}`"
                        ))
                    });
                }
            }
            Ok(msg) => {
                let run = msg.run().unwrap_or_default().to_owned();
                transcript.record(&run, format!("<< {line}"));
                router.send(&run, RunEvent::Subject(msg));
            }
            Err(error) => {
                if let Some(tx) = hello_tx.take() {
                    let _ = tx.send(Err(format!("{error}: {line}")));
                    continue;
                }
                let targets = match run {
                    Some(r) => vec![r],
                    None => runs.lock().unwrap().iter().cloned().collect(),
                };
                for r in targets {
                    transcript.record(&r, format!("<< {line}"));
                    router.send(
                        &r,
                        RunEvent::SubjectInvalid {
                            line: line.clone(),
                            error: error.clone(),
                        },
                    );
                }
            }
        }
    }
    let status = child.wait().await;
    let _ = stderr_done.await;
    let tail: Vec<String> = stderr_tail.lock().unwrap().iter().cloned().collect();
    let detail = format!(
        "the subject exited ({}) while the run was in flight; stderr tail:\n{}",
        status.map_or_else(|e| e.to_string(), |s| s.to_string()),
        tail.join("\n")
    );
    let _ = exit_tx.send(Some(detail.clone()));
    for run in runs.lock().unwrap().iter() {
        router.send(
            run,
            RunEvent::SubjectGone {
                detail: detail.clone(),
            },
        );
    }
}
