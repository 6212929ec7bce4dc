//! Runs one scenario in one mode, as named phases: prepare (the run's id, record, subject,
//! cgroup and `start`), drive (the event loop: [`drive::Drive`] decides, this module carries
//! out its moves), tear down (what is left of the run's processes), drain (the side lines still
//! on their way) and finish. Waits only on events and a per-run deadline; never sleeps.

pub mod board;
pub mod drive;
pub mod lifecycle;
pub mod observed;
pub mod sent;
pub mod start;
pub mod teardown;
pub mod watchdog;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conform_protocol::side::{FakeEvent, FakeLine, Role};
use conform_protocol::subject::{Mode, ToSubject};
use tokio::sync::{mpsc, oneshot};

use crate::proc::cpu_load;
use crate::proc::pids;
use crate::proc::pool::SubjectPool;
use crate::proc::router::{Router, RunEvent};
use crate::proc::run_id::RunId;
use crate::proc::settle::{self, Mark, Tracker};
use crate::proc::side::{Registered, SideServer};
use crate::proc::subject_process::{Subject, Transcripts};
use crate::scenario::Scenario;
use crate::settings::Settings;
use board::Membership;
use drive::{Drive, Input, Move};
use observed::{Folded, Recorder};

pub use observed::{
    CompletionReceipt, DispatchReceipt, HOST_LOGS_KEPT, Observed, RunResult, WIRE_LINES_KEPT,
    Walked, WatchdogChange, rfc3339_ms,
};

/// Everything a run needs from the suite.
pub struct Ctx {
    pub router: Arc<Router>,
    pub side: SideServer,
    pub pool: SubjectPool,
    pub transcripts: Arc<Transcripts>,
    /// argv prefix that starts a fake for a protocol: `<prefix…> <protocol> --side …`.
    pub fake_argv: Vec<String>,
    /// The `conform` executable (for `conform cgroup-exec`).
    pub exe: String,
    pub work: PathBuf,
    /// How runs are run (deadlines, product versions, …), as the command line set it.
    pub settings: Settings,
    /// Says when the suite was interrupted: runs in flight end at once.
    pub interrupt: crate::proc::interrupt::Interrupted,
    /// The real peers and the model endpoint's base URL, when `--peers` was given.
    pub peers: Option<(crate::proc::peers::Peers, String)>,
    /// The suite's cgroup when `--cgroup` is on: each runtime starts in a child of its own.
    pub cgroup: Option<crate::proc::cgroup::Base>,
}

/// How long the side lines of processes already gone may take to arrive.
const SIDE_DRAIN: Duration = Duration::from_secs(10);

/// Runs one scenario in one mode; a member of an isolation group publishes its milestones on
/// the group's board and may wait for the other members' (`board`).
pub async fn run_case(
    ctx: &Ctx,
    scenario: &Scenario,
    mode: Mode,
    group: Option<&Membership>,
) -> Observed {
    let mut run = match Run::prepare(ctx, scenario, mode, group).await {
        Ok(run) => run,
        Err(obs) => return obs,
    };
    run.drive().await;
    let ledger = run.tear_down().await;
    run.drain(&ledger).await;
    run.finish()
}

/// One run in flight: what its phases share.
struct Run<'a> {
    ctx: &'a Ctx,
    id: RunId,
    mode: Mode,
    group: Option<&'a Membership>,
    rec: Recorder,
    rx: mpsc::UnboundedReceiver<RunEvent>,
    subject: Arc<Subject>,
    tree: Tracker,
    drive: Drive<'a>,
    deadline: Duration,
    expected_in: Duration,
    /// How long the run's threads had waited for a CPU at its start (a deadline is put off by
    /// what its own processes waited since).
    load: cpu_load::CpuWaitMark,
}

/// The most a deadline is put off, as a multiple of it: a subject starved without end still
/// fails, later.
const MAX_PUT_OFF: u32 = 9;

/// A deadline is put off only by more than this share of it (1/20): a deadline is a coarse
/// bound, and a wait shorter than that is the noise of any machine.
const LEAST_PUT_OFF_SHARE: u32 = 20;

/// How much longer a run whose deadline passed waits, its own processes having waited
/// `waited` for a CPU since it started and `granted` having been added already: what they
/// waited beyond what was granted, within [`MAX_PUT_OFF`] deadlines. `None`: the deadline
/// stands — an idle hang (its processes waited for nothing) gets no more time, whatever the
/// rest of the machine did.
fn put_off_by(deadline: Duration, waited: Duration, granted: Duration) -> Option<Duration> {
    let more = waited.min(deadline * MAX_PUT_OFF).checked_sub(granted)?;
    (more > deadline / LEAST_PUT_OFF_SHARE).then_some(more)
}

impl<'a> Run<'a> {
    /// The run's id and record, a subject to run it in, its cgroup and its `start`, sent.
    /// A run that cannot start is returned as its record (not run, or a harness fault).
    async fn prepare(
        ctx: &'a Ctx,
        scenario: &'a Scenario,
        mode: Mode,
        group: Option<&'a Membership>,
    ) -> Result<Run<'a>, Observed> {
        let id = RunId::next();
        let started = Instant::now();
        let mut obs = Observed {
            run: id.clone(),
            run_dir: ctx.work.join(id.as_str()).to_string_lossy().into_owned(),
            product_version: ctx
                .settings
                .product_version(scenario.file.provider)
                .cloned()
                .or_else(|| scenario.script.product_version.clone()),
            ..Observed::default()
        };
        let rx = ctx.router.open(&id);
        let not_started = |mut obs: Observed, why: Result<String, String>| {
            match why {
                Ok(not_run) => obs.not_run = Some(not_run),
                Err(fault) => push_fault(&mut obs, &id, fault, started),
            }
            ctx.router.close(&id);
            obs
        };
        let subject = match ctx.pool.get().await {
            Ok(s) => s,
            Err(e) => return Err(not_started(obs, Ok(e.to_string()))),
        };
        subject.adopt(&id);
        obs.subject_pgid = subject.pgid();
        let cgroup = match ctx.cgroup.as_ref().map(|base| base.run(&id)).transpose() {
            Ok(g) => g,
            Err(e) => {
                let fault = format!("could not create the run's cgroup: {e}");
                return Err(not_started(obs, Err(fault)));
            }
        };
        let cgroup_dir = cgroup.as_ref().map(|g| g.dir().to_owned());
        let mark = Mark {
            side: start::path_str(ctx.side.path()),
            run: id.clone(),
        };
        let tree = Tracker::new(mark, obs.subject_pgid, cgroup);
        let subject_group = obs.subject_pgid;
        // The scenario's own deadline, else its real peer's (`deadline_ms` in the manifest),
        // else the suite's.
        let peer_deadline = scenario.file.peer.as_ref().and_then(|p| {
            let (peers, _) = ctx.peers.as_ref()?;
            peers.entries.get(&p.name)?.deadline_ms
        });
        let deadline = scenario
            .file
            .deadline_ms
            .or(peer_deadline)
            .map_or(ctx.settings.deadline, Duration::from_millis);
        obs.deadline = deadline;
        let expected_in = scenario
            .file
            .expected_by_ms
            .map(Duration::from_millis)
            .or(ctx.settings.expected_by)
            .unwrap_or(deadline);
        let start =
            start::start_message(ctx, scenario, mode, &id, expected_in, cgroup_dir.as_deref());
        let start = match start {
            Ok(m) => m,
            Err(e) => {
                let fault = format!("could not prepare the run: {e}");
                return Err(not_started(obs, Err(fault)));
            }
        };
        if let ToSubject::Start { expected_by, .. } = &start {
            obs.expected_by = Some(expected_by.clone());
        }
        let aborted = matches!(start, ToSubject::Start { aborted: true, .. });
        let run = Run {
            ctx,
            drive: Drive::new(scenario, mode, group, &id, deadline, expected_in, aborted),
            id,
            mode,
            group,
            rec: Recorder::new(obs, mode, started),
            rx,
            subject,
            tree,
            deadline,
            expected_in,
            load: cpu_load::CpuWaitMark::now(subject_group),
        };
        run.send(&start);
        Ok(run)
    }

    /// The event loop: hears what the run hears, lets the drive decide, carries out its moves,
    /// until it says the run is over.
    async fn drive(&mut self) {
        let now = tokio::time::Instant::now();
        let (mut until, expected_at) = (now + self.deadline, now + self.expected_in);
        // Another member's news can make a release due: wake on it (never, outside a group).
        let mut board = self.group.map(|g| g.board.watch());
        let mut interrupt = self.ctx.interrupt.clone();
        // The watcher's waiting job_output, until the subject has read it from its stdin.
        let mut read_barrier: Option<oneshot::Receiver<()>> = None;
        loop {
            let input = tokio::select! {
                e = self.rx.recv() => e.map_or(Input::RouteClosed, Input::Event),
                _ = board::others_moved(&mut board) => Input::OthersMoved,
                () = tokio::time::sleep_until(expected_at), if self.drive.awaits_expected_by() => {
                    Input::ExpectedByPassed
                }
                () = tokio::time::sleep_until(until) => Input::Deadline,
                signo = crate::proc::interrupt::wait(&mut interrupt) => Input::Interrupted(signo),
                _ = async { read_barrier.as_mut().expect("guarded").await }, if read_barrier.is_some() => {
                    read_barrier = None;
                    Input::JobOutputRead
                }
            };
            if matches!(input, Input::Deadline)
                && let Some(later) = self.put_off()
            {
                until = later;
                continue;
            }
            for step in self.drive.on(&mut self.rec, input) {
                match step {
                    Move::Finish => {
                        self.rec.join(self.drive.sent().clone());
                        return;
                    }
                    Move::SendAndAwaitRead(msg) => {
                        self.send(&msg);
                        read_barrier = Some(self.subject.until_read());
                    }
                    other => self.carry_out(other),
                }
            }
        }
    }

    /// When a deadline reached is put off to: by as long as the run's own processes — the
    /// subject handling it, its runtime — waited for a CPU (`put_off_by`). `None`: the
    /// deadline stands.
    fn put_off(&mut self) -> Option<tokio::time::Instant> {
        let runtime: Vec<i32> = self
            .ctx
            .side
            .ledger(&self.id)
            .iter()
            .map(|p| p.pid)
            .collect();
        let waited = self.load.run_waited(&runtime);
        let granted = self.rec.obs().deadline_put_off;
        let more = put_off_by(self.deadline, waited, granted)?;
        self.rec.obs_mut().deadline_put_off = granted + more;
        Some(tokio::time::Instant::now() + more)
    }

    /// Carries out one of the drive's moves.
    fn carry_out(&mut self, step: Move) {
        match step {
            Move::Send(msg) => self.send(&msg),
            Move::Scan => self.scan(),
            Move::Claim(what) => {
                // The contract: the child's whole tree is gone (exited and reaped) *before* the
                // subject says so. Whatever of the run still runs when the claim is read was
                // running when it was sent.
                self.scan();
                let pipes = self.stdio();
                let claim = settle::claim(
                    what,
                    self.rec.at_ms(),
                    &self.tree.members(),
                    &pipes,
                    self.rec.obs().subject_pgid,
                    self.tree.cgroup(),
                );
                self.rec.take_claim(claim);
            }
            Move::KillRuntime { pid } => {
                // The whole real runtime: a launcher (node's `codex` wrapper) may stand in
                // front of the process that does the work.
                pids::kill_tree(pid);
            }
            Move::Release { pid, name } => self.ctx.side.release(&self.id, pid, &name),
            Move::Reap { pid } => pids::reap_children_among(&[pid]),
            Move::SendAndAwaitRead(_) | Move::Finish => unreachable!("handled by the loop"),
        }
    }

    /// Logs a message in the run's transcript, then sends it to the subject.
    fn send(&self, msg: &ToSubject) {
        self.ctx.transcripts.record(
            &self.id,
            format!(">> {}", serde_json::to_string(msg).unwrap()),
        );
        if !self.subject.send(msg) {
            // The subject's stdin is gone (it stopped reading before this run began).
            let detail = "the subject stopped reading its stdin before this message could be sent"
                .to_owned();
            self.ctx
                .router
                .send(&self.id, RunEvent::SubjectGone { detail });
        }
    }

    /// Scans the run's process tree for what registered and what did not.
    fn scan(&mut self) {
        let registrations = self.registrations();
        let pipes = self.stdio();
        self.tree.scan(&registrations, &pipes, &self.ctx.router);
    }

    /// The run's own registrations, and every other run's.
    fn registrations(&self) -> crate::proc::settle::Registrations {
        let (own, elsewhere) = self.ctx.side.registered_and_elsewhere(&self.id);
        crate::proc::settle::Registrations {
            own: registered(&own),
            elsewhere,
        }
    }

    /// The run's own runtime stdio: what is evidence that a process holding it is the run's
    /// ([`crate::proc::stdio_links::specific`]).
    fn stdio(&self) -> Vec<String> {
        let stdio = self.rec.obs().runtime_stdio();
        let elsewhere = self.ctx.side.stdio_elsewhere(&self.id, &stdio);
        crate::proc::stdio_links::specific(stdio, &elsewhere)
    }

    /// The run is over: what the harness held open for it from outside the tree is let go,
    /// and what is left of its processes ends. The run's registered processes.
    async fn tear_down(&mut self) -> Vec<Arc<Registered>> {
        self.ctx.side.run_over(&self.id);
        let ledger = self.ctx.side.ledger(&self.id);
        let registrations = self.registrations();
        let stdio = self.stdio();
        let (tree, router) = (&mut self.tree, &self.ctx.router);
        let found = teardown::Found {
            ledger: &ledger,
            registrations: &registrations,
            stdio: &stdio,
        };
        teardown::tear_down(tree, found, router, self.rec.obs_mut()).await;
        ledger
    }

    /// Every process is gone now, so each side connection closes once its last lines are in:
    /// await that, so the ledger is whole (a loaded machine delivers them late, not never).
    /// Then the route closes: from there on the router keeps late messages itself, so
    /// whatever is still queued for this run is the rest of its messages.
    async fn drain(&mut self, ledger: &[Arc<Registered>]) {
        let mut open: BTreeSet<i32> = ledger
            .iter()
            .map(|p| p.pid)
            .filter(|pid| !self.rec.side_closed(*pid))
            .collect();
        let drain_until = tokio::time::Instant::now() + SIDE_DRAIN;
        while !open.is_empty() {
            let event = tokio::select! {
                e = self.rx.recv() => e,
                () = tokio::time::sleep_until(drain_until) => break,
            };
            let Some(event) = event else { break };
            match self.rec.fold(event) {
                Folded::Recorded => {}
                Folded::SideClosed(pid) => {
                    open.remove(&pid);
                }
                Folded::SubjectGone(_) => break,
            }
        }
        self.ctx.router.close(&self.id);
        while let Ok(event) = self.rx.try_recv() {
            self.rec.fold(event);
        }
    }

    /// The record, with the delivery watchdog's last word, the group's last milestones, the
    /// transcript and (when the run went wrong) the subject's stderr tail.
    fn finish(mut self) -> Observed {
        self.subject.release(&self.id);
        if self.mode == Mode::Background {
            let (past, at) = (self.drive.past_expected(), self.rec.at_ms());
            watchdog::watch(self.rec.obs_mut(), self.drive.sent(), past, true, at);
        }
        if let Some(g) = self.group {
            board::publish(g, self.rec.obs(), self.drive.sent());
            g.board.reach(&g.member, "over");
        }
        let started = self.rec.started();
        let mut obs = self.rec.into_observed();
        obs.cpu_waited = Some(self.load.waited());
        if obs.sent.timed_out.is_some()
            || obs.subject_gone.is_some()
            || !obs.subject_invalid.is_empty()
        {
            obs.stderr_tail = self.subject.stderr_of(&self.id, started);
        }
        obs.transcript = self.ctx.transcripts.take(&self.id);
        obs.elapsed = started.elapsed();
        obs
    }
}

/// Pid, start time and role of each registered process.
fn registered(ledger: &[Arc<Registered>]) -> Vec<(i32, u64, &'static str)> {
    ledger
        .iter()
        .map(|p| (p.pid, p.start_time, role_name(p.role)))
        .collect()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Runtime => "runtime",
        Role::Grandchild => "grandchild",
    }
}

/// A run the harness could not start: its fault, as the runtime ledger's first line.
fn push_fault(obs: &mut Observed, run: &RunId, detail: String, started: Instant) {
    obs.fake.push(FakeLine {
        seq: None,
        run: run.to_string(),
        pid: 0,
        event: FakeEvent::Fault { detail },
    });
    obs.fake_at_ms.push(started.elapsed().as_millis() as u64);
}

#[cfg(test)]
mod put_off_tests {
    use super::*;

    const S: Duration = Duration::from_secs(20);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn an_idle_hang_keeps_its_deadline_whatever_the_machine_did() {
        assert_eq!(put_off_by(S, Duration::ZERO, Duration::ZERO), None);
        assert_eq!(
            put_off_by(S, MS * 900, Duration::ZERO),
            None,
            "noise: under 1/20"
        );
    }

    #[test]
    fn a_run_whose_processes_waited_for_a_cpu_gets_that_long_again() {
        assert_eq!(put_off_by(S, MS * 1700, Duration::ZERO), Some(MS * 1700));
        // Woken again later: only what they waited since.
        assert_eq!(put_off_by(S, MS * 4000, MS * 1700), Some(MS * 2300));
        assert_eq!(put_off_by(S, MS * 2000, MS * 1700), None);
    }

    #[test]
    fn the_put_off_is_bounded() {
        assert_eq!(put_off_by(S, S * 50, Duration::ZERO), Some(S * 9));
        assert_eq!(put_off_by(S, S * 50, S * 9), None);
    }
}
