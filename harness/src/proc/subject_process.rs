//! The subject process: spawned once (again after it dies), greeted with `hello`, then shared by
//! every run in flight. Its stdout and stderr are read as bytes with a bound on line length;
//! each stdout line is validated against the subject-protocol JSON Schema before it is parsed,
//! and a line that fails is the subject's failure, reported with the line (escaped, cut).
//! Writes to its stdin never block a run: they are queued for one writer task.

use std::os::fd::AsFd;
use std::process::Stdio;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use conform_protocol::SUBJECT_PROTOCOL;
use conform_protocol::lines::{self, LineSplitter, Piece};
use conform_protocol::subject::{FromSubject, Mode, ToSubject};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot, watch};

use crate::proc::router::{Routed, Router, RunEvent};
use crate::proc::run_id::RunId;
use crate::proc::stderr_log::StderrLog;

/// Variables the harness puts in the subject's environment: two a child must never inherit (a
/// credential-shaped name, a `DSH_` name) and one it keeps.
pub const PARENT_ENV: &[(&str, &str)] = &[
    ("CONFORM_PARENT_API_TOKEN", "parent-token-never-for-a-child"),
    ("DSH_PARENT_SETTING", "parent-setting-never-for-a-child"),
    ("CONFORM_PARENT_PLAIN", "inherited"),
];

/// The longest line a subject may write on stdout. A legal message is a few kilobytes (texts
/// are bounded to 4096 bytes; output blocks are short); a longer line is a failure showing its
/// head and size, and is never held whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Bytes of a bad line shown in a report.
pub const SHOWN_BYTES: usize = 300;

/// How long a subject has to exit after it was killed before the harness stops waiting.
const REAP_BUDGET: Duration = Duration::from_secs(5);

/// How long a subject that closed its stdout has to exit before its group is killed.
const STDOUT_CLOSED_GRACE: Duration = Duration::from_secs(2);

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    // Generated from the protocol's types; `docs/subject-protocol.schema.json` is the same
    // schema, committed for adapter authors (a test keeps it current).
    jsonschema::validator_for(&conform_protocol::subject::json_schema())
        .expect("subject schema is a valid JSON Schema")
});

/// Checks a parsed line against the subject protocol; returns the message.
fn parse_value(value: Value) -> Result<FromSubject, String> {
    let errors: Vec<String> = VALIDATOR
        .iter_errors(&value)
        .take(3)
        .map(|e| {
            format!(
                "{} at `{}`",
                lines::excerpt(&e.to_string(), SHOWN_BYTES),
                e.instance_path()
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(format!(
            "breaks the subject protocol: {}",
            errors.join("; ")
        ));
    }
    serde_json::from_value(value).map_err(|e| format!("breaks the subject protocol: {e}"))
}

/// A message as the subject sent it, cut for a report.
pub fn shown(msg: &FromSubject) -> String {
    lines::excerpt(&serde_json::to_string(msg).unwrap_or_default(), SHOWN_BYTES)
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
    /// The run controls beyond `cancel` and `job_output` it takes (`dispose`).
    pub controls: Vec<conform_protocol::subject::RunControl>,
    /// The product version each provider is built against, as its hello names them.
    pub product_versions: std::collections::BTreeMap<String, String>,
}

pub struct Subject {
    writer: Mutex<Option<mpsc::UnboundedSender<Queued>>>,
    pub caps: Capabilities,
    stderr: StderrLog,
    runs: Arc<Mutex<std::collections::HashSet<RunId>>>,
    exited: watch::Receiver<Option<String>>,
    pgid: i32,
}

impl Subject {
    /// The subject's process group: which subject process a run ran in.
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The subject's peak resident set so far (`VmHWM`, KiB), while it runs: the keeper's
    /// first child (the keeper leads the group; [`crate::proc::keeper`]).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        crate::proc::pids::peak_rss_kib(crate::proc::pids::first_child(self.pgid)?)
    }

    /// Spawns the subject (`argv`: its keeper's command line) in its own process group and
    /// exchanges `hello` (waiting at most
    /// `hello_timeout`). On any failure the subject's process group is killed and reaped.
    pub async fn start(
        argv: &[String],
        router: Arc<Router>,
        transcript: Arc<Transcripts>,
        hello_timeout: Duration,
    ) -> Result<Arc<Subject>, SubjectError> {
        let command = argv.join(" ");
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            // What a host's own environment holds: the subject must not hand the credential-
            // shaped and `DSH_*` ones to a child (`docs/subject-protocol.md`).
            .envs(PARENT_ENV.iter().copied())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SubjectError::Spawn {
                command: command.clone(),
                source,
            })?;
        let pgid = child.id().map_or(0, |p| p as i32);
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
            crate::proc::stdio_links::note_subject_stdio(fd);
        }
        let stderr_log = StderrLog::default();
        let stderr_done = tokio::spawn(stderr_log.clone().drain(stderr));
        let runs = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let (hello_tx, hello_rx) = oneshot::channel();
        let (exit_tx, exited) = watch::channel(None);
        let router_for_writer = router.clone();
        tokio::spawn(read_loop(
            stdout,
            child,
            hello_tx,
            exit_tx,
            router,
            transcript,
            runs.clone(),
            stderr_log.clone(),
            stderr_done,
        ));
        let broken = stdin_broken(router_for_writer, runs.clone(), stderr_log.clone(), pgid);
        let subject = Subject {
            writer: Mutex::new(Some(spawn_writer(stdin, broken))),
            caps: Capabilities {
                name: String::new(),
                version: String::new(),
                providers: vec![],
                modes: vec![],
                controls: vec![],
                product_versions: Default::default(),
            },
            stderr: stderr_log,
            runs,
            exited,
            pgid,
        };
        subject.send(&ToSubject::Hello {
            protocol: SUBJECT_PROTOCOL.to_owned(),
        });
        let detail = match tokio::time::timeout(hello_timeout, hello_rx).await {
            Ok(Ok(Ok(caps))) => return Ok(Arc::new(Subject { caps, ..subject })),
            Ok(Ok(Err(detail))) => detail,
            Ok(Err(_)) => {
                // The read loop ended without a hello: the subject closed stdout or exited.
                subject.wait_exited(STDOUT_CLOSED_GRACE + REAP_BUDGET).await;
                let status = subject.exited.borrow().clone().unwrap_or_default();
                format!(
                    "it closed its stdout before answering hello ({status}); stderr tail:\n{}",
                    subject.stderr_tail()
                )
            }
            Err(_) => format!(
                "no hello within {} ms; stderr tail:\n{}",
                hello_timeout.as_millis(),
                subject.stderr_tail()
            ),
        };
        subject.kill();
        subject.wait_exited(REAP_BUDGET).await;
        Err(SubjectError::Hello { detail })
    }

    /// Queues a message for the subject's stdin (never blocks: a subject that stops reading
    /// must not stall the harness). False once stdin is closed.
    pub fn send(&self, msg: &ToSubject) -> bool {
        let mut line = serde_json::to_string(msg).expect("serialises");
        line.push('\n');
        match self.writer.lock().unwrap().as_ref() {
            Some(w) => w.send(Queued::Line(line)).is_ok(),
            None => false,
        }
    }

    /// Resolves once every line sent before it has been read by the subject — the stdin pipe
    /// holds none of it any more — or [`READ_BOUND`] after it was written (a subject that does
    /// not read), or the writer is gone: what must reach the subject before something else
    /// happens is awaited, not raced.
    pub fn until_read(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        if let Some(w) = self.writer.lock().unwrap().as_ref() {
            let _ = w.send(Queued::Barrier(tx));
        }
        rx
    }

    /// Marks `run` as served by this subject (so its death is reported to the run).
    pub fn adopt(&self, run: &RunId) {
        self.runs.lock().unwrap().insert(run.clone());
    }

    pub fn release(&self, run: &RunId) {
        self.runs.lock().unwrap().remove(run);
    }

    pub fn is_alive(&self) -> bool {
        self.exited.borrow().is_none()
    }

    /// The last lines of the subject's stderr.
    pub fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// The subject's stderr as far as it is `run`'s ([`StderrLog::of_run`]).
    pub fn stderr_of(&self, run: &RunId, since: Instant) -> String {
        self.stderr.of_run(run, since)
    }

    /// SIGKILL to the subject's whole process group.
    pub fn kill(&self) {
        kill_group(self.pgid);
    }

    /// Waits until the subject process has exited and been reaped, at most `budget`.
    pub async fn wait_exited(&self, budget: Duration) -> bool {
        let mut exited = self.exited.clone();
        tokio::time::timeout(budget, exited.wait_for(|e| e.is_some()))
            .await
            .is_ok()
    }

    /// Asks the subject to shut down, then closes its stdin; kills its process group if it has
    /// not exited in time, and waits for it to be reaped. What is left of the group is killed
    /// either way: a subject's exit does not prove its children went with it.
    pub async fn shutdown(&self, budget: Duration) {
        self.send(&ToSubject::Shutdown);
        self.writer.lock().unwrap().take();
        if !self.wait_exited(budget).await {
            self.kill();
            self.wait_exited(REAP_BUDGET).await;
        }
        self.kill();
    }
}

/// What the writer task is handed: a line, or a barrier answered once the lines before it are
/// read by the subject.
enum Queued {
    Line(String),
    Barrier(oneshot::Sender<()>),
}

/// How long a barrier waits for the subject to read what was written before it.
pub const READ_BOUND: Duration = Duration::from_millis(500);

/// Returns once the subject has read everything written to its stdin (the pipe is empty), or
/// after [`READ_BOUND`]. A pipe's draining wakes nobody on the writing side (it is writable
/// as soon as there is room), so its fill level is polled, at 1 ms.
async fn read_by_subject(stdin: &ChildStdin) {
    let unread = || rustix::io::ioctl_fionread(stdin).is_ok_and(|n| n > 0);
    let until = tokio::time::Instant::now() + READ_BOUND;
    while unread() && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// What a failed write to the subject's stdin does: it cannot be told anything more, so every
/// run it serves ends now, as its failure, and the group goes so the pool starts a fresh one
/// for the next.
fn stdin_broken(
    router: Arc<Router>,
    runs: Arc<Mutex<std::collections::HashSet<RunId>>>,
    stderr: StderrLog,
    pgid: i32,
) -> impl FnOnce(std::io::Error) + Send + 'static {
    move |e| {
        let detail = format!(
            "the subject stopped reading its stdin (writing to it failed: {e}); stderr tail:\n{}",
            stderr.tail()
        );
        for run in runs.lock().unwrap().iter() {
            let detail = detail.clone();
            router.send(run, RunEvent::SubjectGone { detail });
        }
        kill_group(pgid);
    }
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// One task owns the subject's stdin and writes queued lines in order; dropping every sender
/// closes stdin (EOF) once the queue is written. A write that fails (the subject closed its
/// stdin: EPIPE) is handed to `broken` at once — nobody waits out a deadline for an answer to
/// a message that never arrived.
fn spawn_writer(
    mut stdin: ChildStdin,
    broken: impl FnOnce(std::io::Error) + Send + 'static,
) -> mpsc::UnboundedSender<Queued> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Queued>();
    tokio::spawn(async move {
        while let Some(queued) = rx.recv().await {
            match queued {
                Queued::Line(line) => {
                    let written = match stdin.write_all(line.as_bytes()).await {
                        Ok(()) => stdin.flush().await,
                        Err(e) => Err(e),
                    };
                    if let Err(e) = written {
                        broken(e);
                        break;
                    }
                }
                Queued::Barrier(done) => {
                    read_by_subject(&stdin).await;
                    let _ = done.send(());
                }
            }
        }
    });
    tx
}

/// Every subject line about a run, both directions, for failure reports: bounded per run
/// (lines cut, and only the first ones kept) so a flooding subject cannot fill memory.
#[derive(Default)]
pub struct Transcripts {
    lines: Mutex<std::collections::HashMap<String, (Vec<String>, u64)>>,
}

/// Lines kept per run, and bytes kept per line.
const TRANSCRIPT_LINES: usize = 200;
const TRANSCRIPT_LINE_BYTES: usize = 2000;

impl Transcripts {
    pub fn record(&self, run: &str, line: String) {
        let mut all = self.lines.lock().unwrap();
        let (kept, dropped) = all.entry(run.to_owned()).or_default();
        if kept.len() < TRANSCRIPT_LINES {
            kept.push(lines::excerpt(&line, TRANSCRIPT_LINE_BYTES));
        } else {
            *dropped += 1;
        }
    }

    pub fn take(&self, run: &str) -> Vec<String> {
        let (mut kept, dropped) = self.lines.lock().unwrap().remove(run).unwrap_or_default();
        if dropped > 0 {
            kept.push(format!("… {dropped} more line(s) not kept"));
        }
        kept
    }
}

/// Reads `reader` as bounded lines until EOF.
pub struct ByteLines<R> {
    reader: BufReader<R>,
    lines: LineSplitter,
}

impl<R: AsyncRead + Unpin> ByteLines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        ByteLines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            lines: LineSplitter::new(max),
        }
    }

    /// The next line; `None` at EOF (a read error counts as EOF: the pipe is gone).
    pub async fn next(&mut self) -> Option<Piece> {
        loop {
            if let Some(p) = self.lines.pop() {
                return Some(p);
            }
            let chunk = match self.reader.fill_buf().await {
                Ok(c) => c,
                Err(_) => &[],
            };
            if chunk.is_empty() {
                self.lines.finish();
                return self.lines.pop();
            }
            let n = chunk.len();
            self.lines.push(chunk);
            self.reader.consume(n);
        }
    }
}

/// The `run` a broken line seems to be about, if it is JSON enough to say.
fn run_of(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let value: Value = serde_json::from_str(&text).ok()?;
    value.get("run")?.as_str().map(str::to_owned)
}

/// One line from the subject, judged: a message, or why the line is not one.
fn read_piece(piece: Piece) -> (String, Result<FromSubject, String>, Option<String>) {
    match piece {
        Piece::TooLong { head, size } => (
            lines::show_bytes(&head, SHOWN_BYTES),
            Err(format!(
                "a line of {size} bytes, over the limit of {MAX_LINE_BYTES} bytes (its head is shown)"
            )),
            None,
        ),
        Piece::Line(bytes) => match std::str::from_utf8(&bytes) {
            Err(e) => (
                lines::show_bytes(&bytes, SHOWN_BYTES),
                Err(format!(
                    "not UTF-8: invalid byte at offset {} (invalid bytes shown as \\xNN)",
                    e.valid_up_to()
                )),
                run_of(&bytes),
            ),
            Ok(text) => {
                let shown = lines::excerpt(text, SHOWN_BYTES);
                match serde_json::from_str::<Value>(text) {
                    Err(e) => (shown, Err(format!("not JSON: {e}")), None),
                    Ok(value) => {
                        let run = value.get("run").and_then(Value::as_str).map(str::to_owned);
                        (shown, parse_value(value), run)
                    }
                }
            }
        },
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
    runs: Arc<Mutex<std::collections::HashSet<RunId>>>,
    stderr: StderrLog,
    stderr_done: tokio::task::JoinHandle<()>,
) {
    let mut hello_tx = Some(hello_tx);
    let mut lines = ByteLines::new(stdout, MAX_LINE_BYTES);
    while let Some(piece) = lines.next().await {
        if matches!(&piece, Piece::Line(b) if b.iter().all(u8::is_ascii_whitespace)) {
            continue;
        }
        let (shown, parsed, run) = read_piece(piece);
        if let Some(tx) = hello_tx.take() {
            // The first line must be the hello; nothing else is read before it.
            let _ = tx.send(match parsed {
                Ok(FromSubject::Hello {
                    protocol,
                    subject,
                    providers,
                    modes,
                    controls,
                    product_versions,
                }) if protocol == SUBJECT_PROTOCOL => Ok(Capabilities {
                    name: subject.name,
                    version: subject.version,
                    providers,
                    modes,
                    controls,
                    product_versions,
                }),
                Ok(FromSubject::Hello { protocol, .. }) => Err(format!(
                    "the subject speaks `{protocol}`, the harness speaks `{SUBJECT_PROTOCOL}`"
                )),
                Ok(_) => Err(format!("the first line is not a hello: {shown}")),
                Err(error) => Err(format!("{error}: {shown}")),
            });
            continue;
        }
        match parsed {
            Ok(FromSubject::Hello { .. }) => {
                router.unattributed(&shown, "a second `hello`");
            }
            Ok(msg) => {
                let run = msg.run().unwrap_or_default().to_owned();
                if router.from_subject(&run, RunEvent::Subject(msg), &shown) == Routed::Open {
                    transcript.record(&run, format!("<< {shown}"));
                }
            }
            Err(error) => match run {
                Some(run) => {
                    let event = RunEvent::SubjectInvalid {
                        line: shown.clone(),
                        error,
                    };
                    if router.from_subject(&run, event, &shown) == Routed::Open {
                        transcript.record(&run, format!("<< {shown}"));
                    }
                }
                None => router.unattributed(&shown, &error),
            },
        }
    }
    // Without stdout the subject can say nothing more: a process that closed it but lingers
    // is killed with its group rather than awaited forever.
    let status = match tokio::time::timeout(STDOUT_CLOSED_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            child.wait().await
        }
    };
    // A descendant may still hold stderr open: give the tail a moment to be complete, no more.
    let _ = tokio::time::timeout(Duration::from_secs(1), stderr_done).await;
    let tail = stderr.last_lines();
    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
    let detail = format!(
        "the subject exited ({status}) while the run was in flight; stderr tail:\n{}",
        tail.join("\n")
    );
    let _ = exit_tx.send(Some(status));
    for run in runs.lock().unwrap().iter() {
        router.send(
            run,
            RunEvent::SubjectGone {
                detail: detail.clone(),
            },
        );
    }
}
