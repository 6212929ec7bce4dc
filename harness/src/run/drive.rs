//! The run's policy while it is in flight, as a state machine: it is fed what the run hears
//! ([`Input`]), folds it into the record, and answers with the [`Move`]s the harness makes —
//! send the subject a message, read the subject's claim against the process tree, kill a real
//! runtime, release a fake's `await`, finish. It does no I/O itself, so every run-time rule is
//! tested by feeding it events (`tests` below); `run_case` carries the moves out.

use std::time::Duration;

use conform_protocol::side::FakeEvent;
use conform_protocol::subject::{FromSubject, Mode, ToSubject};

use crate::proc::router::RunEvent;
use crate::proc::run_id::RunId;
use crate::run::board::{self, Membership};
use crate::run::observed::{Folded, Recorder};
use crate::run::sent::Sent;
use crate::run::watchdog;
use crate::scenario::{CancelBy, Scenario, Trigger};

/// What the run hears while it is in flight.
#[derive(Debug)]
pub enum Input {
    /// A subject message or side-channel line of this run.
    Event(RunEvent),
    /// Another member of the run's isolation group reached something new.
    OthersMoved,
    /// `expectedBy` passed (only before the deadline: [`Drive::awaits_expected_by`]).
    ExpectedByPassed,
    /// The subject has read the watcher's waiting `job_output` from its stdin.
    JobOutputRead,
    /// The run's deadline passed.
    Deadline,
    /// The suite was interrupted by this signal.
    Interrupted(i32),
    /// The run's route closed: nothing more can arrive.
    RouteClosed,
}

/// What the harness does in answer, in order.
#[derive(Debug, PartialEq)]
pub enum Move {
    /// Log the message in the run's transcript, then send it to the subject.
    Send(ToSubject),
    /// As `Send`, then feed [`Input::JobOutputRead`] once the subject has read the line (the
    /// watcher's waiting `job_output`, which a child late past `expectedBy` must not overtake).
    SendAndAwaitRead(ToSubject),
    /// A process of the run appeared, or one of its known processes exited: scan its tree,
    /// so whatever it brought along (a launcher, a daemon that will never register, a helper
    /// that outlives its parent) is seen while it lives.
    Scan,
    /// The subject claimed the child's tree gone (`settled` or `start_rejected`): read the
    /// tree now and record it ([`Recorder::take_claim`]).
    Claim(&'static str),
    /// Kill the real runtime's whole tree from outside (a peer scenario's `kill_at`).
    KillRuntime { pid: i32 },
    /// Release the `await` a fake process is blocked in.
    Release { pid: i32, name: String },
    /// A process of the run exited: reap it if it came back to the harness (the harness is a
    /// child subreaper), so a host that polls its runtime's group sees it gone, not a zombie.
    Reap { pid: i32 },
    /// The run is over: tear it down.
    Finish,
}

/// An `await` a fake announced, waiting for its trigger.
#[derive(Debug)]
struct Pending {
    pid: i32,
    name: String,
    trigger: Trigger,
}

/// One run's in-flight state: what the harness has asked and what it still waits for.
pub struct Drive<'a> {
    scenario: &'a Scenario,
    mode: Mode,
    group: Option<&'a Membership>,
    run: RunId,
    deadline: Duration,
    expected_in: Duration,
    past_expected: bool,
    pending: Vec<Pending>,
    job_output_sent: bool,
    /// The watcher's waiting job_output has been read by the subject.
    job_output_read: bool,
    job_output_asked: usize,
    /// The `[cancel] by = "dispose"` checkpoint came before the run was published: the
    /// dispose waits for `dispatched` (the host holds no handle before it).
    dispose_due: bool,
    /// What the harness decided and did: only the drive writes it.
    sent: Sent,
}

impl<'a> Drive<'a> {
    pub fn new(
        scenario: &'a Scenario,
        mode: Mode,
        group: Option<&'a Membership>,
        run: &RunId,
        deadline: Duration,
        expected_in: Duration,
        aborted: bool,
    ) -> Drive<'a> {
        Drive {
            scenario,
            mode,
            group,
            run: run.clone(),
            deadline,
            expected_in,
            past_expected: false,
            pending: Vec::new(),
            job_output_sent: false,
            job_output_read: false,
            job_output_asked: 0,
            dispose_due: false,
            // The local cancel came with the start: its signal is already aborted.
            sent: Sent {
                cancel: aborted,
                ..Sent::default()
            },
        }
    }

    /// What the harness decided and did so far.
    pub fn sent(&self) -> &Sent {
        &self.sent
    }

    /// Whether `expectedBy` is still to pass while the run is in flight: at or past the
    /// deadline, the deadline ends the run first and nothing is fetched then.
    pub fn awaits_expected_by(&self) -> bool {
        self.expected_in < self.deadline && !self.past_expected
    }

    /// Whether `expectedBy` passed while the run was in flight.
    pub fn past_expected(&self) -> bool {
        self.past_expected
    }

    /// Folds `input` into the record and answers with the moves it calls for.
    pub fn on(&mut self, rec: &mut Recorder, input: Input) -> Vec<Move> {
        let mut moves = Vec::new();
        match input {
            Input::Event(event) => {
                if self.hear(rec, event, &mut moves) {
                    return moves;
                }
            }
            Input::OthersMoved => {}
            Input::ExpectedByPassed => self.past_expected = true,
            Input::JobOutputRead => self.job_output_read = true,
            Input::Deadline => {
                self.sent.timed_out = Some(self.deadline);
                return vec![Move::Finish];
            }
            Input::Interrupted(signo) => {
                self.sent.interrupted = Some(signo);
                return vec![Move::Finish];
            }
            Input::RouteClosed => return vec![Move::Finish],
        }
        self.rules(rec, &mut moves);
        moves
    }

    /// The moves one event calls for by itself, and the event folded into the record.
    /// Whether the run ends with it.
    fn hear(&mut self, rec: &mut Recorder, event: RunEvent, moves: &mut Vec<Move>) -> bool {
        match &event {
            RunEvent::Subject(FromSubject::StartRejected { .. }) if rec.obs().claim.is_none() => {
                moves.push(Move::Claim("start_rejected"));
            }
            RunEvent::Subject(FromSubject::Settled { .. }) if rec.obs().claim.is_none() => {
                moves.push(Move::Claim("settled"));
            }
            RunEvent::Fake(line) => self.fake_event(rec, line.pid, &line.event, moves),
            RunEvent::ProcessGone { pid } => {
                moves.push(Move::Reap { pid: *pid });
                // What the process started and left running is an orphan now, found by no
                // descent any more: seen now, it is known (and timed) until it goes. Without
                // this, a helper born after the last scan that outlives every known process
                // (a real runtime's CLI child finishing after it) is never seen, and the
                // claim that waited for it would look late.
                if rec.obs().claim.is_none() {
                    moves.push(Move::Scan);
                }
            }
            _ => {}
        }
        match rec.fold(event) {
            Folded::SubjectGone(detail) => {
                rec.subject_gone(detail);
                moves.push(Move::Finish);
                true
            }
            Folded::Recorded | Folded::SideClosed(_) => false,
        }
    }

    /// The moves a fake's line calls for: a cancel at its checkpoint, a real runtime killed at
    /// one, an `await` to release later, a new process's tree to scan.
    fn fake_event(
        &mut self,
        rec: &mut Recorder,
        pid: i32,
        event: &FakeEvent,
        moves: &mut Vec<Move>,
    ) {
        let file = &self.scenario.file;
        match event {
            FakeEvent::Checkpoint { name }
                if file.cancel.as_ref().is_some_and(|c| &c.at == name)
                    && !self.sent.cancel
                    && !self.dispose_due =>
            {
                if file.cancel.as_ref().map(|c| c.by) == Some(CancelBy::Dispose) {
                    self.dispose_due = true;
                } else {
                    self.sent.cancel = true;
                    moves.push(Move::Send(ToSubject::Cancel {
                        run: self.run.to_string(),
                    }));
                }
            }
            FakeEvent::Checkpoint { name }
                if self.mode == Mode::Background
                    && file.job.peek_at.as_ref() == Some(name)
                    && !rec.obs().peek_asked =>
            {
                rec.asked_peek();
                moves.push(Move::Send(ToSubject::JobOutput {
                    run: self.run.to_string(),
                    wait: false,
                }));
            }
            FakeEvent::Checkpoint { name }
                if file.peer.as_ref().and_then(|p| p.kill_at.as_ref()) == Some(name) =>
            {
                // The real runtime dies from outside, mid-turn: what the provider makes of a
                // crash it did not cause.
                if let Some(pid) = rec.obs().spawned_runtime() {
                    moves.push(Move::KillRuntime { pid });
                }
            }
            FakeEvent::Awaiting { name } => {
                let trigger = file.fake.release.get(name).cloned().unwrap_or_default();
                self.pending.push(Pending {
                    pid,
                    name: name.clone(),
                    trigger,
                });
            }
            FakeEvent::Register { .. } | FakeEvent::Spawned { .. } => moves.push(Move::Scan),
            _ => {}
        }
    }

    /// The rules weighed after everything the run hears (bar what ends it): publish the
    /// milestones, release what is due, follow the watchdog, kill after a notice, ask
    /// `job_output`, finish.
    fn rules(&mut self, rec: &mut Recorder, moves: &mut Vec<Move>) {
        if let Some(g) = self.group {
            board::publish(g, rec.obs(), &self.sent);
        }
        self.dispose(rec, moves);
        self.release_due(rec, moves);
        if self.mode == Mode::Background {
            let at = rec.at_ms();
            watchdog::watch(rec.obs_mut(), &self.sent, self.past_expected, false, at);
        }
        self.kill_after_notice(rec, moves);
        self.job_output(rec, moves);
    }

    /// The host's own dispose, once it is due and the run is published; never for a start
    /// that was rejected.
    fn dispose(&mut self, rec: &mut Recorder, moves: &mut Vec<Move>) {
        if self.dispose_due && !self.sent.dispose && rec.obs().dispatched {
            self.sent.dispose = true;
            moves.push(Move::Send(ToSubject::Dispose {
                run: self.run.to_string(),
            }));
        }
    }

    /// Releases every pending `await` whose trigger is due, and forgets it.
    fn release_due(&mut self, rec: &Recorder, moves: &mut Vec<Move>) {
        let obs = rec.obs();
        let (past_expected, job_output_read, mode, group, sent) = (
            self.past_expected,
            self.job_output_read,
            self.mode,
            self.group,
            &self.sent,
        );
        self.pending.retain(|p| {
            let due = match &p.trigger {
                Trigger::Immediately => true,
                Trigger::Dispatched => obs.dispatched,
                Trigger::Result => obs.result.is_some(),
                Trigger::Cancel => sent.host_cancelled(),
                Trigger::Peeked => obs.peeked.is_some(),
                // A background child late past expectedBy is released only once the subject
                // has read the parent's waiting job_output, so that read is first (released
                // before, the child could finish first, and a notice would be due).
                Trigger::ExpectedBy => {
                    past_expected && (mode == Mode::Foreground || job_output_read)
                }
                Trigger::Member { member, milestone } => {
                    group.is_some_and(|g| g.board.has(member, milestone))
                }
            };
            if due {
                moves.push(Move::Release {
                    pid: p.pid,
                    name: p.name.clone(),
                });
            }
            !due
        });
    }

    /// `job_kill` on a background job that already finished (`[job] kill_after_notice`):
    /// nothing may change.
    fn kill_after_notice(&mut self, rec: &mut Recorder, moves: &mut Vec<Move>) {
        let obs = rec.obs();
        if self.mode == Mode::Background
            && self.scenario.file.job.kill_after_notice
            && !obs.notices.is_empty()
            && !self.sent.killed_after_notice
        {
            self.sent.killed_after_notice = true;
            moves.push(Move::Send(ToSubject::Cancel {
                run: self.run.to_string(),
            }));
        }
    }

    /// A foreground tool result comes after dispose; a background job is terminal once
    /// job_output (asked after its notice, after job_kill, or — as the parent's watcher
    /// fetches a status back — once expectedBy passed with nothing delivered) answers.
    fn job_output(&mut self, rec: &mut Recorder, moves: &mut Vec<Move>) {
        let obs = rec.obs();
        let calls = self.scenario.file.job.job_output_calls as usize;
        let answers = obs.job_output.is_some() as usize + obs.job_output_repeats.len();
        let ask = ToSubject::JobOutput {
            run: self.run.to_string(),
            wait: true,
        };
        match self.mode {
            // Refused before any job existed: the tool's answer is all there will be.
            _ if obs.refused.is_some() && obs.tool_result.is_some() => moves.push(Move::Finish),
            Mode::Foreground if obs.tool_result.is_some() => moves.push(Move::Finish),
            Mode::Background
                if answers > 0 && answers < calls && self.job_output_asked == answers =>
            {
                // Reads are idempotent: ask again, once the previous answer is in.
                self.job_output_asked += 1;
                rec.asked_job_output();
                moves.push(Move::Send(ask));
            }
            Mode::Background if answers > 0 && answers >= calls => moves.push(Move::Finish),
            Mode::Background
                if obs.tool_result.is_some()
                    && (!obs.notices.is_empty()
                        || self.sent.cancel
                        || (self.past_expected && obs.completion_receipt.is_none()))
                    && !self.job_output_sent =>
            {
                let fetched = obs.notices.is_empty() && !self.sent.cancel;
                self.job_output_sent = true;
                self.job_output_asked = 1;
                if fetched {
                    rec.asked_job_output_at_expected_by();
                } else {
                    rec.asked_job_output();
                }
                moves.push(Move::SendAndAwaitRead(ask));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
