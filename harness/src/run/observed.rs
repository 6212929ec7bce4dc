//! The record of one run ([`Observed`]) and the one place where what a run hears is folded
//! into it ([`Recorder::fold`]). The checks read the record. What the harness itself decided
//! and did is [`Sent`], the drive's alone, joined when the drive stops; besides the recorder,
//! only the run's own phases write the record (the teardown what it found left, the deadline's
//! put-off, the delivery watchdog's status).

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use conform_protocol::side::{Direction, FakeEvent, FakeLine, Role};
use conform_protocol::subject::{FromSubject, Mode, StartError};
use conform_protocol::vocab::WatchdogStatus;
use serde_json::Value;

use crate::proc::router::RunEvent;
use crate::proc::run_id::RunId;
use crate::proc::settle::Claim;
use crate::run::lifecycle::Lifecycle;
use crate::run::sent::Sent;

/// Frames the subject sent a fake, and violations the fake saw, kept per run: a subject that
/// floods its runtime must not flood the harness. Every other ledger line is kept (a process's
/// registration, signals, exit: the checks need them all).
pub const WIRE_LINES_KEPT: usize = 2000;

/// Host log lines kept per run (each cut to [`HOST_LOG_BYTES`]); the rest are counted.
pub const HOST_LOGS_KEPT: usize = 200;
const HOST_LOG_BYTES: usize = 2000;

/// What the harness saw during one run.
/// A wait a run walked: its `[waits]` key, how long (ms), and whether the scenario declares
/// it (its point) or not (the least that makes the same thing happen).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Walked {
    pub key: &'static str,
    pub ms: u64,
    pub declared: bool,
}

#[derive(Debug, Default)]
pub struct Observed {
    pub run: RunId,
    /// The run's scratch folder (paths under it are masked in recorded wires).
    pub run_dir: String,
    pub dispatched: bool,
    pub start_rejected: Option<StartError>,
    /// The host refused the call before any job existed (`refused`).
    pub refused: Option<StartError>,
    pub result: Option<RunResult>,
    pub tool_result: Option<(bool, String)>,
    pub notices: Vec<(String, String)>,
    pub job_output: Option<String>,
    /// The answers to the `job_output` calls after the first (`[job] job_output_calls`).
    pub job_output_repeats: Vec<String>,
    /// The harness called `job_output` without `wait` while the job ran (`[job] peek_at`),
    /// and what that call answered.
    pub peek_asked: bool,
    pub peeked: Option<String>,
    pub settled: bool,
    pub host_logs: Vec<String>,
    /// Frames and violations kept, and those past [`WIRE_LINES_KEPT`], counted, not kept.
    pub wire_lines_kept: usize,
    pub wire_lines_dropped: u64,
    /// Host log lines past [`HOST_LOGS_KEPT`], counted, not kept.
    pub host_logs_dropped: u64,
    pub subject_invalid: Vec<(String, String)>,
    pub subject_gone: Option<String>,
    /// The case was not run: the subject could not be started (the suite reports why once).
    pub not_run: Option<String>,
    pub fake: Vec<FakeLine>,
    /// `fake` as the failure report prints it, once the run is judged and `fake` let go
    /// ([`Observed::compact`]).
    pub ledger_text: Vec<String>,
    /// The largest peak RSS a fake of the run reported at its exit (KiB).
    pub fake_peak_rss_kib: Option<u64>,
    /// The waits the run walked, by `[waits]` key, and whether its scenario says why
    /// (`checks::timing::walked`, taken when the run is judged).
    pub walked: Vec<Walked>,
    /// When each line of `fake` arrived, in ms since the run started (timing that matters:
    /// a slow `initialize`, retries that outlast a deadline).
    pub fake_at_ms: Vec<u64>,
    /// What the harness itself decided and did: the drive's, joined when it stops.
    pub sent: Sent,
    /// The run's deadline: the scenario's, else its real peer's, else the suite's.
    pub deadline: Duration,
    /// How far the deadline was put off: as long as the run's own processes waited for a CPU.
    pub deadline_put_off: Duration,
    /// How long the harness's and the subject's threads waited for a CPU during the run:
    /// lateness up to that much is the machine's, not the subject's.
    pub cpu_waited: Option<Duration>,
    /// Processes of this run still alive when they should have been gone (then killed).
    pub leftovers: Vec<String>,
    /// The run's process tree as it stood when the subject claimed it was gone (`settled` or
    /// `start_rejected`), read from the kernel.
    pub claim: Option<crate::proc::settle::Claim>,
    /// When each process of the run that did not register was seen gone (pid → ms), and the
    /// ones found only by the ground-truth scan (never registered).
    pub unregistered: Vec<crate::proc::settle::Member>,
    pub transcript: Vec<String>,
    pub stderr_tail: String,
    pub elapsed: Duration,
    /// When the subject's `result` and `settled` arrived, and when each registered process of
    /// the run was seen gone (pid → ms), all in ms since the run started (the clock of
    /// `fake_at_ms`).
    pub result_at_ms: Option<u64>,
    pub settled_at_ms: Option<u64>,
    /// When the subject's last message for the run arrived.
    pub last_subject_at_ms: Option<u64>,
    pub gone_at_ms: std::collections::BTreeMap<i32, u64>,
    /// The product version the fake spoke (`None`: the protocol's default).
    pub product_version: Option<String>,
    /// The process group of the subject process the run ran in (a restarted subject is another).
    pub subject_pgid: i32,
    /// Background delivery: the subject's dispatch receipt and the completion receipt the
    /// harness wrote when a completion reached the parent (`docs/subject-protocol.md`, delivery).
    pub dispatch_receipt: Option<DispatchReceipt>,
    pub completion_receipt: Option<CompletionReceipt>,
    /// The `expectedBy` the harness sent in `start` (the receipt must echo it).
    pub expected_by: Option<String>,
    /// Background: the delivery watchdog's status each time it changed, as time passed.
    pub watchdog: Vec<WatchdogChange>,
    /// The harness asked `job_output` at least once (a notice that only came as the deadline
    /// cut the run off is never asked about).
    pub job_output_asked: bool,
}

/// One change of the delivery watchdog's status.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchdogChange {
    pub status: WatchdogStatus,
    /// ms since the run started.
    pub at_ms: u64,
    /// RFC 3339, ms precision.
    pub at: String,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchReceipt {
    pub run_id: RunId,
    pub child_session_key: String,
    pub dispatch_at: String,
    pub expected_by: String,
    /// When the harness received it (`dispatchAt` may not be later).
    #[serde(skip)]
    pub received_at: SystemTime,
}

#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionReceipt {
    pub completion_received_at: String,
    pub forwarded_to_main: bool,
    pub result_source: &'static str,
}

#[derive(Clone, Debug)]
pub struct RunResult {
    pub stop_reason: String,
    pub output: Vec<Value>,
    pub diagnostic: Option<String>,
}

impl RunResult {
    pub fn output_text(&self) -> String {
        self.output
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect()
    }
}

/// What folding one event left for the caller to act on: the stream's own news, which is not
/// part of the record.
#[derive(Debug, PartialEq, Eq)]
pub enum Folded {
    /// The event is in the record.
    Recorded,
    /// A fake process's side connection closed: all its lines are in.
    SideClosed(i32),
    /// The subject process ended (recorded only by a run still in flight: [`Recorder::subject_gone`]).
    SubjectGone(String),
}

/// Folds a run's events into its [`Observed`], on the run's clock, and keeps the subject
/// protocol's per-run state ([`Lifecycle`]) that decides which subject messages are taken.
pub struct Recorder {
    obs: Observed,
    lifecycle: Lifecycle,
    started: Instant,
    /// Fake processes whose side connection closed (all their lines are in).
    closed: BTreeSet<i32>,
    /// The harness asked `job_output` (with `wait`) because `expectedBy` passed with no
    /// completion: what it answers is a status fetched back, not a pushed notice.
    fetching: bool,
}

impl Recorder {
    pub fn new(obs: Observed, mode: Mode, started: Instant) -> Recorder {
        Recorder {
            obs,
            lifecycle: Lifecycle::new(mode),
            started,
            closed: BTreeSet::new(),
            fetching: false,
        }
    }

    pub fn obs(&self) -> &Observed {
        &self.obs
    }

    /// For the drive and the teardown: what the harness itself did or found.
    pub fn obs_mut(&mut self) -> &mut Observed {
        &mut self.obs
    }

    /// ms since the run started: the clock of every `*_at_ms` of the record.
    pub fn at_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether this fake process's side connection has closed (all its lines are in).
    pub fn side_closed(&self, pid: i32) -> bool {
        self.closed.contains(&pid)
    }

    /// The one place an event becomes part of the record.
    pub fn fold(&mut self, event: RunEvent) -> Folded {
        match event {
            RunEvent::Subject(msg) => self.take_subject(msg),
            RunEvent::Fake(line) => self.push_fake(line),
            RunEvent::ProcessGone { pid } => {
                let at = self.at_ms();
                self.obs.gone_at_ms.entry(pid).or_insert(at);
            }
            RunEvent::SubjectInvalid { line, error } => {
                self.obs.subject_invalid.push((line, error))
            }
            RunEvent::SideClosed { pid } => {
                self.closed.insert(pid);
                return Folded::SideClosed(pid);
            }
            RunEvent::SubjectGone { detail } => return Folded::SubjectGone(detail),
        }
        Folded::Recorded
    }

    /// The subject process ended while the run was in flight.
    pub fn subject_gone(&mut self, detail: String) {
        self.obs.subject_gone = Some(detail);
    }

    /// The harness sent `job_output` without `wait` while the job runs (`[job] peek_at`).
    pub fn asked_peek(&mut self) {
        self.lifecycle.asked_peek();
        self.obs.peek_asked = true;
    }

    /// The harness sent `job_output`: one answer becomes legal.
    pub fn asked_job_output(&mut self) {
        self.lifecycle.asked_job_output();
        self.obs.job_output_asked = true;
    }

    /// The harness sent `job_output` (with `wait`) because `expectedBy` passed with nothing
    /// delivered: its answer is the completion fetched back.
    pub fn asked_job_output_at_expected_by(&mut self) {
        self.asked_job_output();
        self.fetching = true;
    }

    /// The run's tree as it stood at the subject's claim. What had exited by the claim did so
    /// no later than the claim, even if its pidfd's news is still on its way here.
    pub fn take_claim(&mut self, claim: Claim) {
        for m in &claim.members {
            if m.state != crate::proc::settle::State::Running {
                self.obs.gone_at_ms.entry(m.pid).or_insert(claim.at_ms);
            }
        }
        self.obs.claim = Some(claim);
    }

    /// The drive's part of the record, once it stops deciding.
    pub fn join(&mut self, sent: Sent) {
        self.obs.sent = sent;
    }

    pub fn into_observed(self) -> Observed {
        self.obs
    }

    fn push_fake(&mut self, line: FakeLine) {
        let wire = matches!(
            line.event,
            FakeEvent::Frame {
                dir: Direction::Recv,
                ..
            } | FakeEvent::Violation { .. }
        );
        if wire {
            if self.obs.wire_lines_kept >= WIRE_LINES_KEPT {
                self.obs.wire_lines_dropped += 1;
                return;
            }
            self.obs.wire_lines_kept += 1;
        }
        let at = self.at_ms();
        self.obs.fake.push(line);
        self.obs.fake_at_ms.push(at);
    }

    /// Takes a subject message if the protocol allows it now; otherwise it is a
    /// `subject.protocol` (or `subject.after-end`) failure and is not taken as the run's.
    fn take_subject(&mut self, msg: FromSubject) {
        // Past the deadline the run is over: what its teardown shook loose (a result, a job's
        // end once the runtime was killed) is not what the subject did in time, and must not
        // change what the run is judged to have owed. Host logs still serve the report.
        if self.obs.sent.timed_out.is_some() && !matches!(msg, FromSubject::HostLog { .. }) {
            return;
        }
        let at = self.at_ms();
        self.obs.last_subject_at_ms = Some(at);
        match self.lifecycle.accept(&msg) {
            Ok(()) => {
                match msg {
                    FromSubject::Result { .. } => self.obs.result_at_ms = Some(at),
                    FromSubject::Settled { .. } => self.obs.settled_at_ms = Some(at),
                    _ => {}
                }
                self.obs.record_subject(msg, self.fetching)
            }
            Err(why) => self.obs.subject_invalid.push((
                crate::proc::subject_process::shown(&msg),
                format!("out of order: {why}"),
            )),
        }
    }
}

impl Observed {
    /// How the run's deadline stood, for a finding that it passed.
    pub fn deadline_note(&self) -> String {
        if self.deadline_put_off.is_zero() {
            return String::new();
        }
        format!(
            " (put off {} ms more: the run's own processes waited that long for a CPU)",
            self.deadline_put_off.as_millis()
        )
    }

    fn record_subject(&mut self, msg: FromSubject, fetching: bool) {
        match msg {
            FromSubject::Hello { .. } => {}
            FromSubject::Dispatched {
                child_session_key,
                dispatch_at,
                expected_by,
                ..
            } => {
                self.dispatched = true;
                self.dispatch_receipt = Some(DispatchReceipt {
                    run_id: self.run.clone(),
                    child_session_key,
                    dispatch_at,
                    expected_by,
                    received_at: SystemTime::now(),
                });
            }
            FromSubject::StartRejected { error, .. } => {
                self.start_rejected = Some(error);
            }
            FromSubject::Refused { error, .. } => {
                self.refused = Some(error);
            }
            FromSubject::Result {
                stop_reason,
                output,
                diagnostic,
                ..
            } => {
                self.result = Some(RunResult {
                    stop_reason,
                    output,
                    diagnostic,
                });
            }
            FromSubject::ToolResult { is_error, text, .. } => {
                self.tool_result = Some((is_error, text));
            }
            FromSubject::Notice { job, text, .. } => {
                self.completion_receipt.get_or_insert(CompletionReceipt {
                    completion_received_at: rfc3339_ms(SystemTime::now()),
                    forwarded_to_main: true,
                    result_source: "completion_push",
                });
                self.notices.push((job, text));
            }
            FromSubject::JobOutput { text, .. } => {
                if fetching {
                    self.completion_receipt.get_or_insert(CompletionReceipt {
                        completion_received_at: rfc3339_ms(SystemTime::now()),
                        forwarded_to_main: true,
                        result_source: "job_output_wait",
                    });
                }
                if self.peek_asked && self.peeked.is_none() {
                    // Asked while the job ran, before any waiting read: this is its answer.
                    self.peeked = Some(text);
                } else if self.job_output.is_some() {
                    self.job_output_repeats.push(text);
                } else {
                    self.job_output = Some(text);
                }
            }
            FromSubject::Settled { .. } => {
                self.settled = true;
            }
            FromSubject::HostLog { text, .. } => {
                if self.host_logs.len() < HOST_LOGS_KEPT {
                    self.host_logs
                        .push(conform_protocol::lines::excerpt(&text, HOST_LOG_BYTES));
                } else {
                    self.host_logs_dropped += 1;
                }
            }
        }
    }

    /// The runtimes' stdio pipes and sockets (`pipe:[inode]`, `socket:[inode]`), from their
    /// registrations — whether each is the run's own is for [`crate::proc::stdio_links::specific`].
    pub fn runtime_stdio(&self) -> Vec<String> {
        self.fake
            .iter()
            .filter_map(|line| match &line.event {
                FakeEvent::Register {
                    role: Role::Runtime,
                    stdio,
                    ..
                } => Some(stdio),
                _ => None,
            })
            .flatten()
            .filter(|link| link.starts_with("pipe:") || link.starts_with("socket:"))
            .cloned()
            .collect()
    }

    /// When the run's last known process was seen gone (ms since the run started), if every one
    /// of them was: each registered one, and each the claim found (a helper of a real runtime that
    /// never registered, which the provider rightly waited for). One whose end the harness did not
    /// see leaves the moment unknown, and nothing is judged against it. Once the run is
    /// [compacted](Self::compact) the ledger is gone and the claim's members alone count (they
    /// include every registered process).
    pub fn all_gone_at(&self) -> Option<u64> {
        let registered = self.fake.iter().filter_map(|line| match line.event {
            FakeEvent::Register { .. } => Some(line.pid),
            _ => None,
        });
        let at_claim = self
            .claim
            .iter()
            .flat_map(|c| c.members.iter().map(|m| m.pid));
        let mut last = None;
        for pid in registered.chain(at_claim) {
            last = last.max(Some(*self.gone_at_ms.get(&pid)?));
        }
        last
    }

    /// The pid of the runtime a real peer's proxy spawned, if it did.
    pub fn spawned_runtime(&self) -> Option<i32> {
        self.fake.iter().find_map(|l| match l.event {
            FakeEvent::Spawned { child } => Some(child),
            _ => None,
        })
    }

    /// Lets go of the runtime ledger's parsed frames once the run is judged, keeping it as the
    /// text the failure report prints: a suite holds every run's observation to the end, and a
    /// parsed frame costs several times its text.
    /// `drop_text`: a run that passed keeps not even the text, only that it was dropped
    /// (`--verbose` keeps it).
    pub fn compact(&mut self, drop_text: bool) {
        self.fake_peak_rss_kib = self
            .fake
            .iter()
            .filter_map(|l| match l.event {
                FakeEvent::Exit { peak_rss_kib, .. } => peak_rss_kib,
                _ => None,
            })
            .max();
        self.ledger_text = if drop_text {
            vec![format!(
                "({} line(s) not kept: the run passed when it was judged; --verbose keeps them)",
                self.fake.len()
            )]
        } else {
            ledger_lines(&self.fake)
        };
        self.fake = Vec::new();
        self.fake_at_ms = Vec::new();
        if drop_text {
            // What only a failure report prints.
            let lines = self.transcript.len();
            self.transcript = vec![format!(
                "({lines} line(s) not kept: the run passed when it was judged; --verbose keeps them)"
            )];
            self.host_logs_dropped += self.host_logs.len() as u64;
            self.host_logs = Vec::new();
        }
    }
}

/// The runtime ledger as the failure report prints it: a line each, but the steps a process
/// played one after another on one line (`steps[4..6] played`).
pub fn ledger_lines(lines: &[FakeLine]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut run: Option<(i32, usize, usize)> = None;
    let played = |(pid, from, to): (i32, usize, usize)| match from == to {
        true => format!("[{pid}] steps[{from}] played"),
        false => format!("[{pid}] steps[{from}..{to}] played"),
    };
    for l in lines {
        match (l.event.clone(), run) {
            (FakeEvent::Step { at }, Some((pid, from, to))) if pid == l.pid && at == to + 1 => {
                run = Some((pid, from, at));
            }
            (FakeEvent::Step { at }, _) => {
                out.extend(run.take().map(played));
                run = Some((l.pid, at, at));
            }
            _ => {
                out.extend(run.take().map(played));
                out.push(ledger_line(l));
            }
        }
    }
    out.extend(run.map(played));
    out
}

/// One line of the runtime ledger as the failure report prints it.
fn ledger_line(l: &FakeLine) -> String {
    let text = match &l.event {
        FakeEvent::Frame {
            dir,
            frame,
            violation,
            ..
        } => format!(
            "{} {}{}",
            match dir {
                Direction::Recv => "subject→runtime",
                Direction::Sent => "runtime→subject",
            },
            frame,
            violation
                .as_ref()
                .map(|v| format!("   (violation on purpose: {v})"))
                .unwrap_or_default()
        ),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    format!("[{}] {text}", l.pid)
}

/// RFC 3339 UTC with milliseconds (`2026-11-30T00:53:20.250Z`): `expectedBy` may be well
/// under a second away.
pub fn rfc3339_ms(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(t) => format!("{t:.3}"),
        Err(_) => "1970-01-01T00:00:00.000Z".to_owned(),
    }
}

#[cfg(test)]
mod tests;
