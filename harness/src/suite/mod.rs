//! A whole `conform run`: load and select scenarios, start the side channel and the subject,
//! run every case (several in flight in one subject), judge, and sweep what is left.

pub mod partition;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conform_protocol::subject::Mode;
use conform_protocol::vocab::Provider;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::checks::{self, Blame, Check, Finding};
use crate::proc::pids;
use crate::proc::pool::SubjectPool;
use crate::proc::router::Router;
use crate::proc::side::SideServer;
use crate::proc::subject_process::Transcripts;
use crate::run::{self, Ctx, Observed};
use crate::scenario::{self, Scenario};
use crate::snapshot::{self, Outcome};

#[derive(Debug)]
pub enum Verdict {
    Pass,
    Fail,
    /// Failed as the baseline in use says it does (its reasons): not a failure of the suite.
    Known(String),
    Skip(String),
    /// The suite was interrupted (a signal) before this case could finish or start.
    Interrupted(String),
}

#[derive(Debug)]
pub struct CaseReport {
    pub scenario: Arc<Scenario>,
    pub mode: Mode,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub snapshot: Option<String>,
    pub obs: Option<Observed>,
}

pub struct SuiteReport {
    pub subject: String,
    pub cases: Vec<CaseReport>,
    /// Failures of the suite as a whole, not of one case: a subject that cannot be started,
    /// messages for runs the harness never started, broken lines that name no run.
    pub findings: Vec<Finding>,
    /// Processes found alive after the suite (then killed).
    pub stragglers: Vec<String>,
    /// `--allow-skips`: a suite that skipped every case may still exit 0.
    pub allow_skips: bool,
    pub elapsed: Duration,
    /// The signal that interrupted the suite, if one did (exit 128 + n).
    pub interrupted: Option<i32>,
    /// The strong settling mode, as asked for and as had.
    pub cgroup: CgroupMode,
    /// The known-failure baseline, as applied (`--baseline`).
    pub baseline: Option<crate::report::baseline::Outcome>,
    /// The shard of the catalog this suite ran (`--partition`).
    pub partition: Option<crate::suite::partition::Partition>,
    /// Each scenario's place in the whole selection, before any partition.
    pub positions: std::collections::BTreeMap<String, usize>,
    /// Peak resident sets (KiB): the harness, the subject, the largest fake.
    pub peak_rss_kib: PeakRss,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeakRss {
    pub harness: Option<u64>,
    pub subject: Option<u64>,
    pub fake: Option<u64>,
}

/// `--cgroup`: not asked for, on (the suite's cgroup), or asked for and not to be had here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CgroupMode {
    #[default]
    Off,
    On(PathBuf),
    Unavailable(String),
}

/// The exit codes, in one place (`docs/subject-protocol.md` and the README show this table).
pub mod exit {
    /// Every case that ran passed, and at least one ran (or `--allow-skips`).
    pub const PASS: i32 = 0;
    /// A conformance failure: a case failed, the suite found a subject fault (no `hello`,
    /// messages for unknown runs, lines that name no run), or processes were left behind.
    pub const FAIL: i32 = 1;
    /// Usage or harness error, or nothing was tested: bad arguments or scenario files, a harness
    /// fault (a fake or snapshot it could not use), or every selected case skipped.
    pub const ERROR: i32 = 2;
    // Interrupted by signal n: 128 + n (`SuiteReport::exit_code`).
}

/// What decides a suite's exit code; a merged report (`conform report merge`) has the same.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExitFacts {
    pub interrupted: Option<i32>,
    /// A finding the harness is to blame for, anywhere.
    pub harness_fault: bool,
    /// A failed case, a suite finding, a straggler, or a stale baseline entry.
    pub failed: bool,
    pub nothing_tested: bool,
    pub allow_skips: bool,
}

impl ExitFacts {
    pub fn exit_code(self) -> i32 {
        if let Some(signo) = self.interrupted {
            128 + signo
        } else if self.harness_fault {
            exit::ERROR
        } else if self.failed {
            exit::FAIL
        } else if self.nothing_tested && !self.allow_skips {
            exit::ERROR
        } else {
            exit::PASS
        }
    }
}

impl SuiteReport {
    pub fn exit_facts(&self) -> ExitFacts {
        let mut findings = self
            .findings
            .iter()
            .chain(self.cases.iter().flat_map(|c| &c.findings));
        ExitFacts {
            interrupted: self.interrupted,
            harness_fault: findings.any(|f| f.blame() == Blame::Harness),
            failed: !self.stragglers.is_empty()
                || !self.findings.is_empty()
                || self
                    .cases
                    .iter()
                    .any(|c| matches!(c.verdict, Verdict::Fail))
                || self
                    .baseline
                    .as_ref()
                    .is_some_and(|b| b.stale().next().is_some()),
            nothing_tested: self.nothing_tested().is_some(),
            allow_skips: self.allow_skips,
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_facts().exit_code()
    }

    /// Why nothing was tested, when every case was skipped.
    pub fn nothing_tested(&self) -> Option<String> {
        if self
            .cases
            .iter()
            .any(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)))
        {
            return None;
        }
        let mut reasons: Vec<&str> = self
            .cases
            .iter()
            .filter_map(|c| match &c.verdict {
                Verdict::Skip(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        reasons.sort_unstable();
        reasons.dedup();
        Some(format!(
            "nothing was tested: all {} selected case(s) were skipped ({}); `--allow-skips` accepts that",
            self.cases.len(),
            reasons.join("; ")
        ))
    }
}

pub struct Options {
    pub scenarios: PathBuf,
    pub filters: Vec<String>,
    pub subject: Option<String>,
    pub snapshots: PathBuf,
    pub accept: bool,
    pub jobs: usize,
    pub deadline: Duration,
    /// When completion is expected after each start, unless a scenario says (`None`: the
    /// deadline).
    pub expected_by: Option<Duration>,
    pub progress: bool,
    /// Provider → product version its fake speaks.
    pub product_versions: std::collections::BTreeMap<Provider, String>,
    /// How long the subject has to answer `hello`.
    pub hello_timeout: Duration,
    /// A suite that skipped every case exits 0 instead of 2.
    pub allow_skips: bool,
    /// The real peers' folder (`--peers`): peer scenarios run only with it.
    pub peers: Option<PathBuf>,
    /// A differing snapshot may leave a pending `.snap.new` (insta's rules decide); off for
    /// generated variants of a scenario, which must match its stored snapshot as they are.
    pub pending_snapshots: bool,
    /// Stops the suite in order when it says a signal came (`conform run` listens; others
    /// never are).
    pub interrupt: crate::proc::interrupt::Interrupted,
    /// Each runtime in a cgroup v2 of its own (`--cgroup`), where the machine allows it.
    pub cgroup: bool,
    /// Where the suite's cgroup goes (`--cgroup-parent`; default: the harness's own).
    pub cgroup_parent: Option<PathBuf>,
    /// Keep each run's runtime ledger parsed after judging (the peer differential reads it);
    /// otherwise it is kept as text only ([`crate::run::Observed::compact`]).
    pub keep_ledgers: bool,
    /// Keep the ledger text of runs that passed too (`--verbose` prints it); otherwise only a
    /// failed run's is kept.
    pub keep_passing_ledgers: bool,
    /// Known failures (`--baseline`).
    pub baseline: Option<crate::report::baseline::Baseline>,
    /// Run one shard of the selection (`--partition`).
    pub partition: Option<crate::suite::partition::Partition>,
}

impl Options {
    /// A suite over these folders with the defaults of `conform run`: the reference subject,
    /// 4 runs in flight, 20 s deadlines, nothing accepted, pending snapshots by insta's rules.
    pub fn new(scenarios: PathBuf, snapshots: PathBuf) -> Options {
        Options {
            scenarios,
            filters: Vec::new(),
            subject: None,
            snapshots,
            accept: false,
            jobs: 4,
            deadline: Duration::from_secs(20),
            expected_by: None,
            progress: false,
            product_versions: Default::default(),
            hello_timeout: Duration::from_secs(20),
            allow_skips: false,
            peers: None,
            pending_snapshots: true,
            interrupt: crate::proc::interrupt::never(),
            cgroup: false,
            cgroup_parent: None,
            keep_ledgers: false,
            keep_passing_ledgers: false,
            baseline: None,
            partition: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{} scenario file(s) could not be loaded:\n{}", .0.len(), .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Scenarios(Vec<scenario::ScenarioError>),
    #[error("no scenario matches the filter")]
    NothingSelected,
    #[error("harness setup failed: {0}")]
    Setup(#[from] std::io::Error),
    #[error("{0}")]
    Peers(#[from] crate::proc::peers::PeersError),
}

/// Loads and filters scenarios.
pub fn select(dir: &std::path::Path, filters: &[String]) -> Result<Vec<Scenario>, SuiteError> {
    let all = scenario::discover(dir).map_err(SuiteError::Scenarios)?;
    select_from(all, filters)
}

/// Filters loaded scenarios (an isolation group's members come along with any one of them).
fn select_from(all: Vec<Scenario>, filters: &[String]) -> Result<Vec<Scenario>, SuiteError> {
    let chosen = crate::scenario::group::complete(all, |s| {
        filters.is_empty() || filters.iter().any(|f| s.id.contains(f.as_str()))
    });
    if chosen.is_empty() {
        return Err(SuiteError::NothingSelected);
    }
    Ok(chosen)
}

pub async fn run(opts: Options) -> Result<SuiteReport, SuiteError> {
    let all = scenario::discover(&opts.scenarios).map_err(SuiteError::Scenarios)?;
    let catalog: std::collections::BTreeSet<String> = all.iter().map(|s| s.id.clone()).collect();
    let mut chosen = select_from(all, &opts.filters)?;
    let positions = chosen
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.clone(), i))
        .collect();
    if let Some(p) = &opts.partition {
        chosen = p.shard(chosen);
    }
    let scenarios: Vec<Arc<Scenario>> = chosen.into_iter().map(Arc::new).collect();
    let mut report = run_scenarios(&opts, scenarios).await?;
    report.partition = opts.partition;
    report.positions = positions;
    if let Some(b) = &opts.baseline {
        crate::report::baseline::apply(&mut report, b, &catalog);
    }
    Ok(report)
}

/// Runs these scenarios (already loaded, perhaps rewritten) in each of their modes.
pub async fn run_scenarios(
    opts: &Options,
    scenarios: Vec<Arc<Scenario>>,
) -> Result<SuiteReport, SuiteError> {
    let started = Instant::now();
    // What escapes the subject's process group is reparented here and swept at the end.
    let _ = pids::become_subreaper();
    let work = tempfile::Builder::new().prefix("conform-").tempdir()?;
    let router = Arc::new(Router::default());
    let side = SideServer::bind_in(work.path(), router.clone())?;
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let argv = match &opts.subject {
        Some(cmd) => vec!["sh".to_owned(), "-c".to_owned(), cmd.clone()],
        None => vec![exe.clone(), "reference".to_owned()],
    };
    let peers = match &opts.peers {
        Some(dir) => Some((
            crate::proc::peers::Peers::load(dir)?,
            crate::proc::peers::start_model().await?,
        )),
        None => None,
    };
    let (cgroup, cgroup_mode) = if opts.cgroup {
        match crate::proc::cgroup::Base::create(&exe, opts.cgroup_parent.as_deref()) {
            Ok(base) => {
                let dir = base.dir().to_owned();
                (Some(base), CgroupMode::On(dir))
            }
            Err(why) => (None, CgroupMode::Unavailable(why.0)),
        }
    } else {
        (None, CgroupMode::Off)
    };
    let transcripts = Arc::new(Transcripts::default());
    let pool = SubjectPool::new(
        argv,
        router.clone(),
        transcripts.clone(),
        opts.hello_timeout,
    );
    let ctx = Arc::new(Ctx {
        router,
        side,
        pool,
        transcripts,
        fake_argv: vec![exe.clone()],
        exe,
        cgroup,
        product_versions: opts.product_versions.clone(),
        work: work.path().to_owned(),
        default_deadline: opts.deadline,
        default_expected_by: opts.expected_by,
        interrupt: opts.interrupt.clone(),
        peers,
    });

    let caps = ctx.pool.get().await.ok().map(|s| s.caps.clone());
    let subject_name = match &caps {
        Some(c) => format!("{} {} ({})", c.name, c.version, ctx.pool.command()),
        None => format!("(did not start) {}", ctx.pool.command()),
    };

    // A case is one scenario in one mode; an isolation group's members are one unit, run
    // together (one permit: they must be in flight at the same time, whatever `--jobs` says).
    let mut units: Vec<Vec<(usize, Arc<Scenario>, Mode)>> = Vec::new();
    let mut group_unit: std::collections::BTreeMap<String, usize> = Default::default();
    let mut index = 0;
    for s in &scenarios {
        for m in &s.file.modes {
            let case = (index, s.clone(), *m);
            index += 1;
            match crate::scenario::group::group_of(s) {
                Some(g) => match group_unit.get(g) {
                    Some(&u) => units[u].push(case),
                    None => {
                        group_unit.insert(g.to_owned(), units.len());
                        units.push(vec![case]);
                    }
                },
                None => units.push(vec![case]),
            }
        }
    }
    let bar = progress_bar(index, opts.progress);
    let limit = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let mut set = JoinSet::new();
    let mut reports = Vec::new();
    for unit in units {
        // A group runs whole or not at all: one member that cannot run skips them all.
        let skip = unit
            .iter()
            .find_map(|(_, s, mode)| skip_reason(opts, &ctx, caps.as_ref(), s, *mode));
        if let Some(reason) = skip {
            for (index, s, mode) in unit {
                bar.inc(1);
                reports.push((index, skipped(s, mode, reason.clone())));
            }
            continue;
        }
        let ctx = ctx.clone();
        let limit = limit.clone();
        let bar = bar.clone();
        let snapshots = opts.snapshots.clone();
        let accept = opts.accept;
        let pending = opts.pending_snapshots;
        let keep_ledgers = opts.keep_ledgers;
        let keep_passing = opts.keep_passing_ledgers;
        set.spawn(async move {
            // A unit still waiting for its turn when the suite is interrupted never starts.
            let mut interrupt = ctx.interrupt.clone();
            let _permit = tokio::select! {
                p = limit.acquire_owned() => p.expect("semaphore open"),
                signo = crate::proc::interrupt::wait(&mut interrupt) => {
                    return unit
                        .into_iter()
                        .map(|(index, s, mode)| {
                            bar.inc(1);
                            (index, interrupted(s, mode, signo))
                        })
                        .collect();
                }
            };
            let grouped = unit.len() > 1 || crate::scenario::group::group_of(&unit[0].1).is_some();
            let board = crate::scenario::group::Board::new();
            let runs = unit.iter().map(|(_, s, mode)| {
                let (ctx, bar) = (&ctx, &bar);
                let membership = grouped.then(|| crate::scenario::group::Membership {
                    board: board.clone(),
                    member: crate::scenario::group::member_name(s).to_owned(),
                });
                async move {
                    bar.set_message(format!("{} ({mode})", s.id));
                    run::run_case(ctx, s, *mode, membership.as_ref()).await
                }
            });
            let observed = futures_util::future::join_all(runs).await;
            // Judging is CPU work (the first schema check compiles a whole bundle, snapshots
            // are files): off the runtime's workers, so other runs' events keep being read and
            // timed when they arrive.
            tokio::task::block_in_place(|| {
                let mut done: Vec<(usize, CaseReport)> = unit
                    .into_iter()
                    .zip(observed)
                    .map(|((index, s, mode), obs)| {
                        bar.inc(1);
                        (index, judge(&s, mode, obs, &snapshots, accept, pending))
                    })
                    .collect();
                if grouped {
                    isolation(&mut done);
                }
                if !keep_ledgers {
                    for (_, r) in &mut done {
                        let passed = matches!(r.verdict, Verdict::Pass);
                        if let Some(o) = r.obs.as_mut() {
                            o.compact(passed && !keep_passing);
                        }
                    }
                }
                done
            })
        });
    }
    while let Some(done) = set.join_next().await {
        match done {
            Ok(r) => reports.extend(r),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    bar.finish_and_clear();
    reports.sort_by_key(|(i, _)| *i);

    let subject_rss = ctx.pool.peak_rss_kib();
    ctx.pool.shutdown().await;
    // The subject is gone: whatever it said about a run after that run was over is in.
    for (_, report) in reports.iter_mut() {
        let Some(obs) = &report.obs else { continue };
        let late = checks::judge_late(obs, &ctx.router.take_late(&obs.run));
        if !late.is_empty() {
            report.findings.extend(late);
            report.verdict = Verdict::Fail;
        }
    }
    unique_job_ids(&mut reports);
    let mut stragglers = Vec::new();
    for p in ctx.side.all() {
        if pids::alive(p.pid, p.start_time)
            && let Some(fd) = &p.pidfd
        {
            stragglers.push(format!("pid {} of run {}", p.pid, p.run));
            pids::kill(fd);
            pids::wait_exit(fd, Duration::from_secs(5)).await;
        }
    }
    // Every subject is gone: whatever still runs below the harness escaped a subject's group.
    stragglers.extend(
        pids::sweep_descendants()
            .await
            .into_iter()
            .map(|p| format!("{p}, left by the subject")),
    );
    let findings = suite_findings(&ctx).await;
    let fake_rss = reports
        .iter()
        .filter_map(|(_, r)| r.obs.as_ref())
        .filter_map(|o| {
            o.fake_peak_rss_kib.or_else(|| {
                o.fake
                    .iter()
                    .filter_map(|l| match l.event {
                        conform_protocol::side::FakeEvent::Exit { peak_rss_kib, .. } => {
                            peak_rss_kib
                        }
                        _ => None,
                    })
                    .max()
            })
        })
        .max();
    Ok(SuiteReport {
        subject: subject_name,
        cases: reports.into_iter().map(|(_, r)| r).collect(),
        findings,
        stragglers,
        allow_skips: opts.allow_skips,
        elapsed: started.elapsed(),
        interrupted: *ctx.interrupt.borrow(),
        cgroup: cgroup_mode,
        baseline: None,
        partition: None,
        positions: Default::default(),
        peak_rss_kib: PeakRss {
            harness: pids::own_peak_rss_kib(),
            subject: subject_rss,
            fake: fake_rss,
        },
    })
}

/// Why a case cannot run with this subject and these options, if it cannot.
fn skip_reason(
    opts: &Options,
    ctx: &Ctx,
    caps: Option<&crate::proc::subject_process::Capabilities>,
    s: &Scenario,
    mode: Mode,
) -> Option<String> {
    if let Some(want) = &s.file.product_version
        && opts.product_versions.get(&s.file.provider) != Some(want)
    {
        return Some(format!(
            "needs --product-version {}={want}",
            s.file.provider
        ));
    }
    if let Some(p) = &s.file.peer {
        match &ctx.peers {
            None => {
                return Some(format!(
                    "real peer `{}`: run `ci/peers` (or pass --peers DIR)",
                    p.name
                ));
            }
            Some((peers, _)) if !peers.entries.contains_key(&p.name) => {
                return Some(format!(
                    "real peer `{}` is not installed in {}",
                    p.name,
                    peers.dir.display()
                ));
            }
            Some(_) => {}
        }
    }
    match caps {
        None => Some("not run: the subject could not be started".to_owned()),
        Some(c) if !c.providers.iter().any(|p| p == s.file.provider.as_str()) => {
            Some(format!("the subject has no `{}` provider", s.file.provider))
        }
        Some(c) if !c.modes.contains(&mode) => {
            Some(format!("the subject does not run {mode} calls"))
        }
        Some(_) => None,
    }
}

fn interrupted(scenario: Arc<Scenario>, mode: Mode, signo: i32) -> CaseReport {
    CaseReport {
        scenario,
        mode,
        verdict: Verdict::Interrupted(format!(
            "interrupted by {}",
            crate::proc::interrupt::name(signo)
        )),
        findings: vec![],
        snapshot: None,
        obs: None,
    }
}

fn skipped(scenario: Arc<Scenario>, mode: Mode, reason: String) -> CaseReport {
    CaseReport {
        scenario,
        mode,
        verdict: Verdict::Skip(reason),
        findings: vec![],
        snapshot: None,
        obs: None,
    }
}

/// The checks that look across the members of an isolation group run together.
fn isolation(members: &mut [(usize, CaseReport)]) {
    let found = {
        let runs: Vec<(&Scenario, &Observed)> = members
            .iter()
            .filter_map(|(_, r)| r.obs.as_ref().map(|o| (&*r.scenario, o)))
            .collect();
        if runs.len() != members.len() {
            return;
        }
        checks::isolation::judge(&runs)
    };
    for ((_, report), findings) in members.iter_mut().zip(found) {
        if !findings.is_empty() {
            report.findings.extend(findings);
            report.verdict = Verdict::Fail;
        }
    }
}

/// A job id the same subject process gave to two background runs fails the later one: its
/// notices and job_output would be routed to the other job.
fn unique_job_ids(reports: &mut [(usize, CaseReport)]) {
    let mut seen: std::collections::HashMap<(i32, String), String> = Default::default();
    for (_, report) in reports.iter_mut() {
        let Some(obs) = &report.obs else { continue };
        let Some(job) = obs
            .tool_result
            .as_ref()
            .filter(|_| report.mode == Mode::Background)
            .and_then(|(_, t)| t.strip_prefix("started background subagent job "))
        else {
            continue;
        };
        let key = (obs.subject_pgid, job.to_owned());
        match seen.get(&key) {
            Some(first) => {
                report.findings.push(Finding::new(
                    Check::DeliveryUniqueJobId,
                    format!("job id `{job}` was already given to {first} by the same subject"),
                ));
                report.verdict = Verdict::Fail;
            }
            None => {
                seen.insert(key, format!("{} ({})", report.scenario.id, report.mode));
            }
        }
    }
}

/// The subject's faults that belong to no case.
async fn suite_findings(ctx: &Ctx) -> Vec<Finding> {
    let mut f = Vec::new();
    if let Some(reason) = ctx.pool.broken().await {
        f.push(Finding::new(
            Check::SubjectHello,
            format!("{reason}\n(the cases not yet run were not run)"),
        ));
    }
    let buckets = [
        (
            ctx.router.unknown_runs(),
            "message(s) for runs the harness never started",
        ),
        (
            ctx.router.unattributed_lines(),
            "line(s) broke the subject protocol and named no run",
        ),
    ];
    for (bucket, what) in buckets {
        if bucket.count > 0 {
            let first: Vec<String> = bucket.examples.iter().map(|e| format!("  {e}")).collect();
            f.push(Finding::new(
                Check::SubjectProtocol,
                format!("{} {what}; the first:\n{}", bucket.count, first.join("\n")),
            ));
        }
    }
    f
}

fn judge(
    s: &Arc<Scenario>,
    mode: Mode,
    obs: Observed,
    snapshots: &std::path::Path,
    accept: bool,
    pending: bool,
) -> CaseReport {
    if let Some(signo) = obs.interrupted {
        // Its processes were killed; what it did so far proves nothing either way.
        return interrupted(s.clone(), mode, signo);
    }
    if let Some(reason) = &obs.not_run {
        // The subject could not be started: the suite says why, once.
        return CaseReport {
            scenario: s.clone(),
            mode,
            verdict: Verdict::Skip(format!(
                "not run: the subject could not be started ({})",
                reason.lines().next().unwrap_or_default()
            )),
            findings: vec![],
            snapshot: None,
            obs: None,
        };
    }
    let mut findings = checks::judge(s, mode, &obs);
    let mut snapshot_note = None;
    let ran_to_end = obs.subject_gone.is_none() && obs.timed_out.is_none();
    let harness_fault = findings.iter().any(|f| f.blame() == Blame::Harness);
    // A snapshot never blesses a leak: texts that fail redaction are neither compared, nor
    // accepted, nor left pending (the finding already shows where the leak is).
    let leaked = findings.iter().any(|f| f.check == Check::ContractRedaction);
    if leaked && accept {
        snapshot_note = Some("not recorded: the texts leak untrusted text".to_owned());
    }
    if ran_to_end && !harness_fault && !leaked {
        let actual = snapshot::render(&obs);
        match snapshot::check(snapshots, s, mode, &actual, accept, pending) {
            Ok(Outcome::Matches) => {}
            Ok(Outcome::Accepted) => {
                snapshot_note = Some(format!("accepted new snapshot:\n{actual}"));
            }
            Ok(Outcome::Missing { new, note }) => findings.push(Finding::new(
                Check::Snapshot,
                format!(
                    "no stored snapshot{} (read them, then `cargo insta review` or `conform run --accept`):\n{actual}{}",
                    pending_note(new.as_deref()),
                    note.map(|n| format!("\n{n}")).unwrap_or_default()
                ),
            )),
            Ok(Outcome::Differs { diff, new }) => findings.push(Finding::new(
                Check::Snapshot,
                format!(
                    "the model-visible texts differ from the snapshot{}:\n{diff}",
                    pending_note(new.as_deref())
                ),
            )),
            Err(e) => findings.push(Finding::new(
                Check::HarnessSnapshot,
                format!("could not read or write the snapshot: {e}"),
            )),
        }
    }
    let verdict = if findings.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    CaseReport {
        scenario: s.clone(),
        mode,
        verdict,
        findings,
        snapshot: snapshot_note,
        obs: Some(obs),
    }
}

fn pending_note(new: Option<&std::path::Path>) -> String {
    new.map_or_else(String::new, |p| {
        format!(" (this run's texts are in {})", p.display())
    })
}

fn progress_bar(len: usize, enabled: bool) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {wide_msg}")
            .expect("template"),
    );
    bar
}
