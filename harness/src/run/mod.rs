//! Runs one scenario in one mode: start the subject's run, drive cancels and releases from the
//! fakes' checkpoints, collect every event until the run is over, then check that the run's
//! processes are gone. Waits only on events and a per-run deadline; never sleeps.

pub mod lifecycle;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use conform_protocol::side::{Direction, FakeEvent, FakeLine, Role};
use conform_protocol::subject::{FromSubject, Mode, Runtime, StartError, ToSubject};
use conform_protocol::vocab::{Provider, WatchdogStatus};
use serde_json::{Map, Value, json};

use crate::proc::pids;
use crate::proc::pool::SubjectPool;
use crate::proc::router::{Router, RunEvent};
use crate::proc::side::SideServer;
use crate::proc::subject_process::Transcripts;
use crate::run::lifecycle::Lifecycle;
use crate::scenario::group::Membership;
use crate::scenario::{CwdKind, RuntimeKind, Scenario, Trigger};

/// Everything a run needs from the suite.
pub struct Ctx {
    pub router: Arc<Router>,
    pub side: SideServer,
    pub pool: SubjectPool,
    pub transcripts: Arc<Transcripts>,
    /// argv prefix that starts a fake for a protocol: `<prefix…> <protocol> --script …`.
    pub fake_argv: Vec<String>,
    /// The `conform` executable (for `conform cgroup-exec`).
    pub exe: String,
    pub work: PathBuf,
    pub default_deadline: Duration,
    /// When completion is expected after a start, unless the scenario says (`None`: the
    /// deadline).
    pub default_expected_by: Option<Duration>,
    /// Says when the suite was interrupted: runs in flight end at once.
    pub interrupt: crate::proc::interrupt::Interrupted,
    /// Provider → product version its fake speaks (`--product-version`).
    pub product_versions: std::collections::BTreeMap<Provider, String>,
    /// The real peers and the model endpoint's base URL, when `--peers` was given.
    pub peers: Option<(crate::proc::peers::Peers, String)>,
    /// The suite's cgroup when `--cgroup` is on: each runtime starts in a child of its own.
    pub cgroup: Option<crate::proc::cgroup::Base>,
}

/// How long processes get to be gone after the subject said the run was settled.
const SETTLE_BUDGET: Duration = Duration::from_millis(500);

/// How long the side lines of processes already gone may take to arrive.
const SIDE_DRAIN: Duration = Duration::from_secs(10);

/// Frames the subject sent a fake, and violations the fake saw, kept per run: a subject that
/// floods its runtime must not flood the harness. Every other ledger line is kept (a process's
/// registration, signals, exit: the checks need them all).
pub const WIRE_LINES_KEPT: usize = 2000;

/// Host log lines kept per run (each cut to [`HOST_LOG_BYTES`]); the rest are counted.
pub const HOST_LOGS_KEPT: usize = 200;
const HOST_LOG_BYTES: usize = 2000;

/// What the harness saw during one run.
#[derive(Debug, Default)]
pub struct Observed {
    pub run: String,
    /// The run's scratch folder (paths under it are masked in recorded wires).
    pub run_dir: String,
    pub dispatched: bool,
    pub start_rejected: Option<StartError>,
    pub result: Option<RunResult>,
    pub tool_result: Option<(bool, String)>,
    pub notices: Vec<(String, String)>,
    pub job_output: Option<String>,
    /// The answers to the `job_output` calls after the first (`[job] job_output_calls`).
    pub job_output_repeats: Vec<String>,
    /// The harness called `job_kill` after the completion notice (`[job] kill_after_notice`).
    pub killed_after_notice: bool,
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
    /// When each line of `fake` arrived, in ms since the run started (timing that matters:
    /// a slow `initialize`, retries that outlast a deadline).
    pub fake_at_ms: Vec<u64>,
    pub cancel_sent: bool,
    pub timed_out: Option<Duration>,
    /// The suite was interrupted by this signal while the run was in flight.
    pub interrupted: Option<i32>,
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
    /// The harness asked `job_output` (with `wait`) because `expectedBy` passed with no
    /// completion: what it answers is a status fetched back, not a pushed notice.
    pub fetched_at_expected_by: bool,
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
    pub run_id: String,
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

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// Runs one scenario in one mode; a member of an isolation group publishes its milestones on
/// the group's board and may wait for the other members' (`group`).
pub async fn run_case(
    ctx: &Ctx,
    scenario: &Scenario,
    mode: Mode,
    group: Option<&Membership>,
) -> Observed {
    let run = format!("r{}", NEXT_RUN.fetch_add(1, Ordering::Relaxed));
    let started = Instant::now();
    let mut obs = Observed {
        run: run.clone(),
        run_dir: ctx.work.join(&run).to_string_lossy().into_owned(),
        product_version: ctx
            .product_versions
            .get(&scenario.file.provider)
            .cloned()
            .or_else(|| scenario.script.product_version.clone()),
        ..Observed::default()
    };
    let mut rx = ctx.router.open(&run);
    let subject = match ctx.pool.get().await {
        Ok(s) => s,
        Err(e) => {
            obs.not_run = Some(e.to_string());
            ctx.router.close(&run);
            return obs;
        }
    };
    subject.adopt(&run);
    obs.subject_pgid = subject.pgid();
    let cgroup = match ctx.cgroup.as_ref().map(|base| base.run(&run)).transpose() {
        Ok(g) => g,
        Err(e) => {
            push_fake(
                &mut obs,
                fault(&run, format!("could not create the run's cgroup: {e}")),
                started,
            );
            ctx.router.close(&run);
            return obs;
        }
    };
    let cgroup_dir = cgroup.as_ref().map(|g| g.dir().to_owned());
    let mut tree = crate::proc::settle::Tracker::new(
        crate::proc::settle::Mark {
            side: path_str(ctx.side.path()),
            run: run.clone(),
        },
        obs.subject_pgid,
        cgroup,
    );
    let deadline = scenario
        .file
        .deadline_ms
        .map_or(ctx.default_deadline, Duration::from_millis);
    let expected_in = scenario
        .file
        .expected_by_ms
        .map(Duration::from_millis)
        .or(ctx.default_expected_by)
        .unwrap_or(deadline);
    let start = match start_message(
        ctx,
        scenario,
        mode,
        &run,
        expected_in,
        cgroup_dir.as_deref(),
    ) {
        Ok(m) => m,
        Err(e) => {
            push_fake(
                &mut obs,
                fault(&run, format!("could not prepare the run: {e}")),
                started,
            );
            ctx.router.close(&run);
            return obs;
        }
    };
    if let ToSubject::Start { expected_by, .. } = &start {
        obs.expected_by = Some(expected_by.clone());
    }
    ctx.transcripts.record(
        &run,
        format!(">> {}", serde_json::to_string(&start).unwrap()),
    );
    subject.send(&start);
    let mut lifecycle = Lifecycle::new(mode);

    let until = tokio::time::Instant::now() + deadline;
    let expected_at = tokio::time::Instant::now() + expected_in;
    // At or past the deadline, the deadline ends the run first: nothing is fetched then.
    let expected_before_deadline = expected_in < deadline;
    let mut past_expected = false;
    let mut pending_releases: Vec<(i32, String, Trigger)> = Vec::new();
    let mut job_output_sent = false;
    // The watcher's waiting job_output, once the subject has read it from its stdin.
    let mut job_output_barrier: Option<tokio::sync::oneshot::Receiver<()>> = None;
    let mut job_output_read = false;
    let mut job_output_asked = 0;
    // Another member's news can make a release due: wake on it (never, outside a group).
    let mut board = group.map(|g| g.board.watch());
    let mut interrupt = ctx.interrupt.clone();
    // Fake processes whose side connection already closed (all their lines are in).
    let mut closed = std::collections::BTreeSet::new();
    loop {
        let event = tokio::select! {
            e = rx.recv() => Some(e),
            _ = others_moved(&mut board) => None,
            () = tokio::time::sleep_until(expected_at), if expected_before_deadline && !past_expected => {
                past_expected = true;
                None
            }
            () = tokio::time::sleep_until(until) => { obs.timed_out = Some(deadline); break; }
            signo = crate::proc::interrupt::wait(&mut interrupt) => { obs.interrupted = Some(signo); break; }
            _ = async { job_output_barrier.as_mut().expect("guarded").await }, if job_output_barrier.is_some() => {
                job_output_barrier = None;
                job_output_read = true;
                None
            }
        };
        match event {
            None => {}
            Some(None) => break,
            Some(Some(event)) => match event {
                RunEvent::Subject(msg) => {
                    let what = match msg {
                        FromSubject::StartRejected { .. } => Some("start_rejected"),
                        FromSubject::Settled { .. } => Some("settled"),
                        _ => None,
                    };
                    if let Some(what) = what.filter(|_| obs.claim.is_none()) {
                        // The contract: the child's whole tree is gone (exited and reaped) *before*
                        // the subject says so. Whatever of the run still runs when the claim is
                        // read was running when it was sent.
                        tree.scan(
                            &registered(&ctx.side.ledger(&run)),
                            &runtime_pipes(&obs),
                            &ctx.router,
                        );
                        let claim = crate::proc::settle::claim(
                            what,
                            ms_since(started),
                            &tree.members(),
                            &runtime_pipes(&obs),
                            obs.subject_pgid,
                            tree.cgroup(),
                        );
                        // What had exited by the claim did so no later than the claim, even if
                        // its pidfd's news is still on its way here.
                        for m in &claim.members {
                            if m.state != crate::proc::settle::State::Running {
                                obs.gone_at_ms.entry(m.pid).or_insert(claim.at_ms);
                            }
                        }
                        obs.claim = Some(claim);
                    }
                    take_subject(&mut obs, &mut lifecycle, msg, started);
                }
                RunEvent::ProcessGone { pid } => {
                    obs.gone_at_ms.entry(pid).or_insert(ms_since(started));
                }
                RunEvent::SubjectInvalid { line, error } => obs.subject_invalid.push((line, error)),
                RunEvent::SubjectGone { detail } => {
                    obs.subject_gone = Some(detail);
                    break;
                }
                RunEvent::SideClosed { pid } => {
                    closed.insert(pid);
                }
                RunEvent::Fake(line) => {
                    match &line.event {
                        FakeEvent::Checkpoint { name }
                            if scenario.file.cancel.as_ref().is_some_and(|c| &c.at == name)
                                && !obs.cancel_sent =>
                        {
                            obs.cancel_sent = true;
                            let msg = ToSubject::Cancel { run: run.clone() };
                            ctx.transcripts.record(
                                &run,
                                format!(">> {}", serde_json::to_string(&msg).unwrap()),
                            );
                            subject.send(&msg);
                        }
                        FakeEvent::Checkpoint { name }
                            if scenario.file.peer.as_ref().and_then(|p| p.kill_at.as_ref())
                                == Some(name) =>
                        {
                            // The real runtime dies from outside, mid-turn: what the provider makes
                            // of a crash it did not cause.
                            // The whole real runtime: a launcher (node's `codex` wrapper) may
                            // stand in front of the process that does the work.
                            if let Some(pid) = obs.fake.iter().find_map(|l| match l.event {
                                FakeEvent::Spawned { child } => Some(child),
                                _ => None,
                            }) {
                                let tree = pids::descendants(pid).into_iter().map(|(p, _)| p);
                                for p in std::iter::once(pid).chain(tree) {
                                    let _ = nix::sys::signal::kill(
                                        nix::unistd::Pid::from_raw(p),
                                        nix::sys::signal::Signal::SIGKILL,
                                    );
                                }
                            }
                        }
                        FakeEvent::Awaiting { name } => {
                            let trigger = scenario
                                .file
                                .fake
                                .release
                                .get(name)
                                .cloned()
                                .unwrap_or_default();
                            pending_releases.push((line.pid, name.clone(), trigger));
                        }
                        // A process appeared: whatever of the run it brought along (its
                        // launcher, a daemon that will never register) is seen while it lives.
                        FakeEvent::Register { .. } | FakeEvent::Spawned { .. } => {
                            tree.scan(
                                &registered(&ctx.side.ledger(&run)),
                                &runtime_pipes(&obs),
                                &ctx.router,
                            );
                        }
                        _ => {}
                    }
                    push_fake(&mut obs, line, started);
                }
            },
        }
        if let Some(g) = group {
            publish(g, &obs);
        }
        release_due(
            &mut pending_releases,
            &obs,
            Moment {
                past_expected,
                job_output_read,
                mode,
            },
            group,
            ctx,
            &run,
        );
        if mode == Mode::Background {
            watch_delivery(&mut obs, past_expected, false, started);
        }
        // A foreground tool result comes after dispose; a background job is terminal once
        // job_output (asked after its notice, after job_kill, or — as the parent's watcher
        // fetches a status back — once expectedBy passed with nothing delivered) answers.
        let job = &scenario.file.job;
        if mode == Mode::Background
            && job.kill_after_notice
            && !obs.notices.is_empty()
            && !obs.killed_after_notice
        {
            // job_kill on a job that already finished: nothing may change.
            obs.killed_after_notice = true;
            let msg = ToSubject::Cancel { run: run.clone() };
            ctx.transcripts
                .record(&run, format!(">> {}", serde_json::to_string(&msg).unwrap()));
            subject.send(&msg);
        }
        match mode {
            Mode::Foreground if obs.tool_result.is_some() => break,
            Mode::Background
                if obs.job_output.is_some()
                    && obs.job_output_repeats.len() + 1 < job.job_output_calls as usize
                    && job_output_asked == obs.job_output_repeats.len() + 1 =>
            {
                // Reads are idempotent: ask again, once the previous answer is in.
                job_output_asked += 1;
                lifecycle.asked_job_output();
                let msg = ToSubject::JobOutput {
                    run: run.clone(),
                    wait: true,
                };
                ctx.transcripts
                    .record(&run, format!(">> {}", serde_json::to_string(&msg).unwrap()));
                subject.send(&msg);
            }
            Mode::Background
                if obs.job_output.is_some()
                    && obs.job_output_repeats.len() + 1 >= job.job_output_calls as usize =>
            {
                break;
            }
            Mode::Background
                if obs.tool_result.is_some()
                    && (!obs.notices.is_empty()
                        || obs.cancel_sent
                        || (past_expected && obs.completion_receipt.is_none()))
                    && !job_output_sent =>
            {
                obs.fetched_at_expected_by = obs.notices.is_empty() && !obs.cancel_sent;
                job_output_sent = true;
                job_output_asked = 1;
                lifecycle.asked_job_output();
                let msg = ToSubject::JobOutput {
                    run: run.clone(),
                    wait: true,
                };
                ctx.transcripts
                    .record(&run, format!(">> {}", serde_json::to_string(&msg).unwrap()));
                subject.send(&msg);
                job_output_barrier = Some(subject.until_read());
            }
            _ => {}
        }
    }
    // Whatever remains of the run's processes: after a clean end they get a short budget to be
    // gone; after a hang or a subject crash they are cleaned up at once.
    let clean = obs.timed_out.is_none() && obs.subject_gone.is_none() && obs.interrupted.is_none();
    // The run is over: what the harness held open for it from outside the tree is let go.
    ctx.side.release_held(&run);
    let ledger = ctx.side.ledger(&run);
    // What never registered is found by the ground-truth scans (a double-forked daemon, a
    // launcher, a helper of a real runtime).
    tree.scan(&registered(&ledger), &runtime_pipes(&obs), &ctx.router);
    obs.unregistered = tree.unregistered().map(|t| t.member.clone()).collect();
    let unregistered: Vec<(
        String,
        i32,
        u64,
        Option<std::sync::Arc<std::os::fd::OwnedFd>>,
    )> = tree
        .unregistered()
        .map(|t| {
            let m = &t.member;
            (m.describe(), m.pid, m.start_time, t.pidfd.clone())
        })
        .collect();
    let budget = if clean { SETTLE_BUDGET } else { Duration::ZERO };
    let watched = ledger
        .iter()
        .map(|p| {
            (
                format!("pid {} ({})", p.pid, role_name(p.role)),
                p.pid,
                p.start_time,
                p.pidfd.as_ref(),
            )
        })
        .chain(
            unregistered
                .iter()
                .map(|(d, pid, st, fd)| (d.clone(), *pid, *st, fd.as_deref())),
        );
    for (described, pid, start_time, fd) in watched {
        let Some(fd) = fd else { continue };
        let gone = !pids::alive(pid, start_time) || pids::wait_exit(fd, budget).await;
        if !gone {
            obs.leftovers.push(described);
            pids::kill(fd);
            pids::wait_exit(fd, Duration::from_secs(5)).await;
        }
    }
    // The cgroup is the last word: whatever is still in it was the run's (started after the
    // last scan, or never seen by one) and goes with `cgroup.kill`.
    if let Some(group) = tree.cgroup() {
        if group.populated() && !group.wait_empty(budget).await {
            obs.leftovers.extend(group.procs().iter().map(|(pid, _)| {
                format!(
                    "pid {pid} ({}; in the run's cgroup)",
                    pids::command_line(*pid)
                )
            }));
            group.kill(Duration::from_secs(5)).await;
        }
        group.remove();
    }
    // Orphans of the run that came back to the harness (it is a child subreaper) are reaped
    // here, now: the harness owes its children what it asks of the subject.
    pids::reap_children_among(
        &ledger
            .iter()
            .map(|p| p.pid)
            .chain(unregistered.iter().map(|u| u.1))
            .collect::<Vec<_>>(),
    );
    // Every process is gone now, so each side connection closes once its last lines are in:
    // await that, so the ledger is whole (a loaded machine delivers them late, not never).
    let mut open: std::collections::BTreeSet<i32> = ledger
        .iter()
        .map(|p| p.pid)
        .filter(|pid| !closed.contains(pid))
        .collect();
    let drain_until = tokio::time::Instant::now() + SIDE_DRAIN;
    while !open.is_empty() {
        let event = tokio::select! {
            e = rx.recv() => e,
            () = tokio::time::sleep_until(drain_until) => break,
        };
        match event {
            Some(RunEvent::Fake(line)) => push_fake(&mut obs, line, started),
            Some(RunEvent::SideClosed { pid }) => {
                open.remove(&pid);
            }
            Some(RunEvent::Subject(msg)) => take_subject(&mut obs, &mut lifecycle, msg, started),
            Some(RunEvent::ProcessGone { pid }) => {
                obs.gone_at_ms.entry(pid).or_insert(ms_since(started));
            }
            Some(RunEvent::SubjectInvalid { line, error }) => {
                obs.subject_invalid.push((line, error))
            }
            Some(RunEvent::SubjectGone { .. }) | None => break,
        }
    }
    // Close the route first: from here on the router keeps late messages itself, so whatever
    // is still queued for this run is the rest of its messages, and nothing falls in between.
    ctx.router.close(&run);
    while let Ok(event) = rx.try_recv() {
        match event {
            RunEvent::Subject(msg) => take_subject(&mut obs, &mut lifecycle, msg, started),
            RunEvent::Fake(line) => push_fake(&mut obs, line, started),
            RunEvent::SubjectInvalid { line, error } => obs.subject_invalid.push((line, error)),
            RunEvent::ProcessGone { pid } => {
                obs.gone_at_ms.entry(pid).or_insert(ms_since(started));
            }
            RunEvent::SideClosed { .. } | RunEvent::SubjectGone { .. } => {}
        }
    }
    subject.release(&run);
    if mode == Mode::Background {
        watch_delivery(&mut obs, past_expected, true, started);
    }
    if let Some(g) = group {
        publish(g, &obs);
        g.board.reach(&g.member, "over");
    }
    if obs.timed_out.is_some() || obs.subject_gone.is_some() || !obs.subject_invalid.is_empty() {
        obs.stderr_tail = subject.stderr_tail();
    }
    obs.transcript = ctx.transcripts.take(&run);
    obs.elapsed = started.elapsed();
    obs
}

/// Records the delivery watchdog's status if it changed (`over`: the run ended, nothing more
/// will arrive).
fn watch_delivery(obs: &mut Observed, past_expected: bool, over: bool, started: Instant) {
    let prev = obs.watchdog.last().map(|c| c.status);
    if let Some(status) = crate::checks::watchdog_status(prev, obs, past_expected, over)
        && Some(status) != prev
    {
        obs.watchdog.push(WatchdogChange {
            status,
            at_ms: ms_since(started),
            at: rfc3339_ms(SystemTime::now()),
        });
    }
}

/// Resolves when another member of the run's group reached something new (never outside one).
async fn others_moved(
    board: &mut Option<
        tokio::sync::watch::Receiver<BTreeMap<String, std::collections::BTreeSet<String>>>,
    >,
) {
    match board {
        Some(rx) => {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        None => std::future::pending().await,
    }
}

/// Publishes what this run reached so far on its group's board (`group::MILESTONES`).
fn publish(g: &Membership, obs: &Observed) {
    let reached = [
        ("dispatched", obs.dispatched),
        ("start-rejected", obs.start_rejected.is_some()),
        ("result", obs.result.is_some()),
        ("settled", obs.settled),
        ("tool-result", obs.tool_result.is_some()),
        ("notice", !obs.notices.is_empty()),
        ("cancel", obs.cancel_sent),
    ];
    for (milestone, yes) in reached {
        if yes {
            g.board.reach(&g.member, milestone);
        }
    }
    for line in &obs.fake {
        match &line.event {
            FakeEvent::Checkpoint { name } => {
                g.board.reach(&g.member, &format!("checkpoint:{name}"))
            }
            FakeEvent::Awaiting { name } => g.board.reach(&g.member, &format!("awaiting:{name}")),
            _ => {}
        }
    }
}

/// Where the run stands when releases are weighed.
#[derive(Clone, Copy)]
struct Moment {
    past_expected: bool,
    /// The watcher's waiting job_output has been read by the subject.
    job_output_read: bool,
    mode: Mode,
}

/// Releases every scripted `await` whose trigger is due, and forgets it.
fn release_due(
    pending: &mut Vec<(i32, String, Trigger)>,
    obs: &Observed,
    now: Moment,
    group: Option<&Membership>,
    ctx: &Ctx,
    run: &str,
) {
    pending.retain(|(pid, name, trigger)| {
        let due = match trigger {
            Trigger::Immediately => true,
            Trigger::Dispatched => obs.dispatched,
            Trigger::Result => obs.result.is_some(),
            Trigger::Cancel => obs.cancel_sent,
            // A background child late past expectedBy is released only once the subject has
            // read the parent's waiting job_output, so that read is first (released before,
            // the child could finish first, and a notice would be due).
            Trigger::ExpectedBy => {
                now.past_expected && (now.mode == Mode::Foreground || now.job_output_read)
            }
            Trigger::Member { member, milestone } => {
                group.is_some_and(|g| g.board.has(member, milestone))
            }
        };
        if due {
            ctx.side.release(run, *pid, name);
        }
        !due
    });
}

fn push_fake(obs: &mut Observed, line: FakeLine, started: Instant) {
    let wire = |l: &FakeLine| {
        matches!(
            l.event,
            FakeEvent::Frame {
                dir: Direction::Recv,
                ..
            } | FakeEvent::Violation { .. }
        )
    };
    if wire(&line) {
        if obs.wire_lines_kept >= WIRE_LINES_KEPT {
            obs.wire_lines_dropped += 1;
            return;
        }
        obs.wire_lines_kept += 1;
    }
    obs.fake.push(line);
    obs.fake_at_ms.push(ms_since(started));
}

fn ms_since(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

impl Observed {
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
            self.fake.iter().map(crate::report::ledger_line).collect()
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

/// Pid, start time and role of each registered process.
fn registered(
    ledger: &[std::sync::Arc<crate::proc::side::Registered>],
) -> Vec<(i32, u64, &'static str)> {
    ledger
        .iter()
        .map(|p| (p.pid, p.start_time, role_name(p.role)))
        .collect()
}

/// The runtimes' stdio pipes (`pipe:[inode]`), from their registrations.
fn runtime_pipes(obs: &Observed) -> Vec<String> {
    obs.fake
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
        .filter(|link| link.starts_with("pipe:"))
        .cloned()
        .collect()
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Runtime => "runtime",
        Role::Grandchild => "grandchild",
    }
}

fn fault(run: &str, detail: String) -> FakeLine {
    FakeLine {
        run: run.to_owned(),
        pid: 0,
        event: FakeEvent::Fault { detail },
    }
}

/// Takes a subject message if the protocol allows it now; otherwise it is a `subject.protocol`
/// (or `subject.after-end`) failure and is not taken as the run's.
fn take_subject(obs: &mut Observed, lifecycle: &mut Lifecycle, msg: FromSubject, started: Instant) {
    obs.last_subject_at_ms = Some(ms_since(started));
    match lifecycle.accept(&msg) {
        Ok(()) => {
            match msg {
                FromSubject::Result { .. } => obs.result_at_ms = Some(ms_since(started)),
                FromSubject::Settled { .. } => obs.settled_at_ms = Some(ms_since(started)),
                _ => {}
            }
            record_subject(obs, msg)
        }
        Err(why) => {
            obs.subject_invalid.push((
                crate::proc::subject_process::shown(&msg),
                format!("out of order: {why}"),
            ));
        }
    }
}

fn record_subject(obs: &mut Observed, msg: FromSubject) {
    match msg {
        FromSubject::Hello { .. } => {}
        FromSubject::Dispatched {
            child_session_key,
            dispatch_at,
            expected_by,
            ..
        } => {
            obs.dispatched = true;
            obs.dispatch_receipt = Some(DispatchReceipt {
                run_id: obs.run.clone(),
                child_session_key,
                dispatch_at,
                expected_by,
                received_at: SystemTime::now(),
            });
        }
        FromSubject::StartRejected { error, .. } => {
            obs.start_rejected = Some(error);
        }
        FromSubject::Result {
            stop_reason,
            output,
            diagnostic,
            ..
        } => {
            obs.result = Some(RunResult {
                stop_reason,
                output,
                diagnostic,
            });
        }
        FromSubject::ToolResult { is_error, text, .. } => {
            obs.tool_result = Some((is_error, text));
        }
        FromSubject::Notice { job, text, .. } => {
            obs.completion_receipt.get_or_insert(CompletionReceipt {
                completion_received_at: rfc3339_ms(SystemTime::now()),
                forwarded_to_main: true,
                result_source: "completion_push",
            });
            obs.notices.push((job, text));
        }
        FromSubject::JobOutput { text, .. } => {
            if obs.fetched_at_expected_by {
                obs.completion_receipt.get_or_insert(CompletionReceipt {
                    completion_received_at: rfc3339_ms(SystemTime::now()),
                    forwarded_to_main: true,
                    result_source: "job_output_wait",
                });
            }
            if obs.job_output.is_some() {
                obs.job_output_repeats.push(text);
            } else {
                obs.job_output = Some(text);
            }
        }
        FromSubject::Settled { .. } => {
            obs.settled = true;
        }
        FromSubject::HostLog { text, .. } => {
            if obs.host_logs.len() < HOST_LOGS_KEPT {
                obs.host_logs
                    .push(conform_protocol::lines::excerpt(&text, HOST_LOG_BYTES));
            } else {
                obs.host_logs_dropped += 1;
            }
        }
    }
}

fn start_message(
    ctx: &Ctx,
    scenario: &Scenario,
    mode: Mode,
    run: &str,
    expected_in: Duration,
    cgroup: Option<&Path>,
) -> std::io::Result<ToSubject> {
    let dir = ctx.work.join(run);
    std::fs::create_dir_all(&dir)?;
    let script_path = dir.join("script.json");
    let provider = &scenario.file.provider;
    let mut script = scenario.script.script();
    if let Some(v) = ctx.product_versions.get(provider) {
        script.product_version = Some(v.clone());
    }
    std::fs::write(&script_path, serde_json::to_vec_pretty(&script)?)?;
    let mut argv = ctx.fake_argv.clone();
    let mut peer_env = BTreeMap::new();
    match (&scenario.file.peer, &ctx.peers) {
        (Some(peer), Some((peers, model))) => {
            let entry = peers.entries.get(&peer.name).ok_or_else(|| {
                std::io::Error::other(format!("peer `{}` is not installed", peer.name))
            })?;
            let url = match &peer.model {
                Some(behaviour) => format!("{model}/{behaviour}"),
                None => model.clone(),
            };
            let (peer_argv, env) = crate::proc::peers::prepare(entry, &peers.dir, &dir, &url)?;
            argv.extend([
                "peer-proxy".into(),
                "--side".into(),
                path_str(ctx.side.path()),
                "--run".into(),
                run.to_owned(),
                "--protocol".into(),
                provider.to_string(),
                "--".into(),
            ]);
            argv.extend(peer_argv);
            peer_env = env;
        }
        _ => {
            argv.extend(["fake".to_owned(), provider.to_string()]);
            argv.extend([
                "--script".into(),
                path_str(&script_path),
                "--side".into(),
                path_str(ctx.side.path()),
                "--run".into(),
                run.to_owned(),
            ]);
            // The provider appends the product's own flags after these (Claude Code's CLI).
            if conform_fakes::codec::for_provider(*provider).takes_runtime_args() {
                argv.push("--".into());
            }
        }
    }
    let subject = &scenario.file.subject;
    match subject.runtime {
        RuntimeKind::Fake => {}
        RuntimeKind::MissingBinary => {
            argv[0] = path_str(&dir.join("no-such-dir").join("missing-runtime"));
        }
        RuntimeKind::Launched => {
            // `; exit $?` keeps the shell from exec'ing the fake in its place.
            let launcher = ["/bin/sh", "-c", "\"$@\"; exit $?", "sh"];
            argv.splice(0..0, launcher.map(str::to_owned));
        }
    }
    // In the strong mode the runtime joins its cgroup first, then becomes what it would have
    // been (one exec, same pid). A command that does not exist stays one: its spawn failure
    // is the case.
    if let Some(dir) = cgroup
        && subject.runtime != RuntimeKind::MissingBinary
    {
        let wrapper = [
            ctx.exe.clone(),
            "cgroup-exec".into(),
            path_str(dir),
            "--".into(),
        ];
        argv.splice(0..0, wrapper);
    }
    let cwd = match subject.cwd {
        CwdKind::Workspace => {
            let ws = dir.join("workspace");
            std::fs::create_dir_all(&ws)?;
            path_str(&ws)
        }
        CwdKind::Missing => path_str(&dir.join("missing-workspace")),
        CwdKind::Relative => "relative/workspace".to_owned(),
        CwdKind::File => {
            let f = dir.join("not-a-directory");
            std::fs::write(&f, b"")?;
            path_str(&f)
        }
    };
    let mut config = subject.config.clone();
    if let Some(p) = &subject.permission {
        config.insert("permission".into(), json!(p));
    }
    if let Some(ms) = subject.dispose_eof_grace_ms {
        config.insert("disposeEofGraceMs".into(), json!(ms));
    }
    if let Some(ms) = subject.dispose_grace_ms {
        config.insert("disposeGraceMs".into(), json!(ms));
    }
    // The run's mark in the runtime's environment: inherited by everything the runtime
    // starts, whatever its arguments (`settle::Mark`).
    let mark = crate::proc::settle::Mark {
        side: path_str(ctx.side.path()),
        run: run.to_owned(),
    };
    let env: Map<String, Value> = peer_env
        .iter()
        .chain(subject.env.iter())
        .map(|(k, v)| (k.clone(), json!(v)))
        .chain(std::iter::once((
            crate::proc::settle::ENV_MARK.to_owned(),
            json!(mark.env_value()),
        )))
        .chain(subject.env_unset.iter().map(|k| (k.clone(), Value::Null)))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    Ok(ToSubject::Start {
        run: run.to_owned(),
        provider: *provider,
        mode,
        label: scenario.label().to_owned(),
        task: scenario.file.task.clone(),
        runtime: Runtime {
            command: argv[0].clone(),
            args: argv[1..].to_vec(),
            env,
            cwd,
        },
        config,
        expected_by: rfc3339_ms(SystemTime::now() + expected_in),
    })
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
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
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
        assert_eq!(
            rfc3339_ms(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000Z"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339_ms(leap), "2000-02-29T00:00:00.000Z");
        let quarter = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_250);
        assert_eq!(rfc3339_ms(quarter), "2026-11-30T00:53:20.250Z");
        assert_eq!(rfc3339_ms(t), "2026-11-30T00:53:20.000Z");
    }
}
