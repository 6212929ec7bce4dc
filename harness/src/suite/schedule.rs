//! Running a selection: start what every run shares (the side channel, the subject pool, the
//! cgroup), cut the cases into units (an isolation group is one), run each unit under the
//! `--jobs` limit and judge it, then sweep ([`super::sweep`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use conform_protocol::subject::{Mode, RunControl};
use tokio::task::JoinSet;

use crate::proc::pids;
use crate::proc::pool::SubjectPool;
use crate::proc::router::Router;
use crate::proc::side::SideServer;
use crate::proc::subject_process::{Capabilities, Transcripts};
use crate::run::board::{Board, Membership};
use crate::run::{self, Ctx};
use crate::scenario::group::{group_of, member_name};
use crate::scenario::{CancelBy, Scenario};
use crate::suite::judge::{Judging, interrupted, isolation, judge, skipped};
use crate::suite::outcome::{CaseReport, CgroupMode, SuiteReport, Verdict};
use crate::suite::{Options, SuiteError, sweep};

/// One case: its place in the selection, its scenario, its mode.
pub(super) type Case = (usize, Arc<Scenario>, Mode);

/// Runs these scenarios (already loaded, perhaps rewritten) in each of their modes.
pub async fn run_scenarios(
    opts: &Options,
    scenarios: Vec<Arc<Scenario>>,
) -> Result<SuiteReport, SuiteError> {
    let started = Instant::now();
    // The scratch folder goes last, after everything that lives in it.
    let (work, ctx, cgroup_mode) = shared(opts).await?;
    let caps = ctx.pool.get().await.ok().map(|s| s.caps.clone());
    let subject = match &caps {
        Some(c) => format!("{} {} ({})", c.name, c.version, ctx.pool.command()),
        None => format!("(did not start) {}", ctx.pool.command()),
    };
    let (units, cases) = units(&scenarios);
    let reports = run_units(
        opts,
        &ctx,
        caps.as_ref(),
        super::order::slowest_first(&units),
        cases,
    )
    .await;
    let reports = super::rerun::alone(&ctx, &units, reports, || judging(opts)).await;
    let reports = match opts.version_hints {
        true => super::skew::hint(&ctx, &units, reports, || judging(opts)).await,
        false => reports,
    };
    let mut report = sweep::sweep(&ctx, reports, opts.settings.allow_skips).await;
    report.subject = subject;
    report.fakes_speak = scenarios
        .iter()
        .map(|s| s.file.provider)
        .map(|p| {
            (
                p,
                speaks(p, ctx.settings.product_version(p).map(String::as_str)),
            )
        })
        .collect();
    report.real_peers = real_peers(&ctx, &scenarios);
    report.cgroup = cgroup_mode;
    seal_unpacked(&ctx, &report.cases);
    report.elapsed = timed(started, (ctx, work));
    Ok(report)
}

/// For each real peer whose runs unpack into `{unpacked}` and have no shared folder yet: what
/// one of its passed runs unpacked becomes the shared folder, for the next suites' runs to
/// read ([`crate::proc::peers::unpacked`]). Its runs' processes are gone by now.
fn seal_unpacked(ctx: &Ctx, cases: &[CaseReport]) {
    use crate::proc::peers::unpacked;
    let Some((peers, _)) = &ctx.peers else {
        return;
    };
    let mut done = std::collections::BTreeSet::new();
    for case in cases {
        let (Some(peer), Some(obs), Verdict::Pass) =
            (&case.scenario.file.peer, &case.obs, &case.verdict)
        else {
            continue;
        };
        let Some(entry) = peers.entries.get(&peer.name) else {
            continue;
        };
        if done.contains(&peer.name) || !unpacked::uses(entry) || obs.sent.timed_out.is_some() {
            continue;
        }
        match unpacked::seal(&peers.dir, &peer.name, entry, Path::new(&obs.run_dir)) {
            Ok(false) => {}
            Ok(true) => {
                done.insert(peer.name.clone());
            }
            Err(e) => {
                eprintln!(
                    "note: `{}`'s unpacked modules could not be shared ({e}); its runs unpack their own",
                    peer.name
                );
                done.insert(peer.name.clone());
            }
        }
    }
}

/// The time since `started`, taken once `teardown` is done (dropped in order): what a person
/// reads as the suite's time is all of it, removing every run's files (a real runtime's
/// unpacked modules among them) too.
fn timed<T>(started: Instant, teardown: T) -> std::time::Duration {
    drop(teardown);
    started.elapsed()
}

/// The installed real peers the selected scenarios name (`--peers`): what actually ran in
/// place of a fake, so a report never leaves the product version to be guessed.
fn real_peers(
    ctx: &Ctx,
    scenarios: &[Arc<Scenario>],
) -> std::collections::BTreeMap<String, super::outcome::RealPeer> {
    let Some((peers, _)) = &ctx.peers else {
        return Default::default();
    };
    scenarios
        .iter()
        .filter_map(|s| {
            let name = &s.file.peer.as_ref()?.name;
            let entry = peers.entries.get(name)?;
            Some((
                name.clone(),
                super::outcome::RealPeer {
                    provider: s.file.provider,
                    version: entry.version.clone(),
                },
            ))
        })
        .collect()
}

/// The product and version a provider's fake speaks at this product version.
pub fn speaks(provider: conform_protocol::vocab::Provider, version: Option<&str>) -> String {
    conform_fakes::protocols::codec_for(provider).speaks(version)
}

/// What every run of the suite shares. The scratch folder lives as long as it is held.
async fn shared(
    opts: &Options,
) -> Result<(crate::proc::scratch::Scratch, Arc<Ctx>, CgroupMode), SuiteError> {
    let settings = &opts.settings;
    // What escapes the subject's process group is reparented here and swept at the end.
    let _ = pids::become_subreaper();
    // Named and locked so that a later harness can tell once this one is dead, and remove
    // what a SIGKILL left of it (as this one removes what dead harnesses left).
    // In memory unless real runtimes unpack their modules into their runs.
    let work = crate::proc::scratch::Scratch::create(settings.peers.is_none())?;
    let router = Arc::new(Router::default());
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let side = SideServer::bind_in(work.path(), router.clone(), Path::new(&exe))?;
    let argv = match &settings.subject {
        Some(cmd) => vec!["sh".to_owned(), "-c".to_owned(), cmd.clone()],
        None => vec![exe.clone(), "reference".to_owned()],
    };
    let peers = match &settings.peers {
        Some(dir) => Some((
            crate::proc::peers::Peers::load(dir)?,
            crate::proc::peers::start_model().await?,
        )),
        None => None,
    };
    let (cgroup, cgroup_mode) = if settings.cgroup {
        match crate::proc::cgroup::Base::create(&exe, settings.cgroup_parent.as_deref()) {
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
        exe.clone(),
        router.clone(),
        transcripts.clone(),
        settings.hello_timeout,
    );
    let mut settings = settings.clone();
    if let Ok(subject) = pool.get().await {
        adopt_versions(&mut settings, &subject.caps.product_versions)?;
    }
    let ctx = Arc::new(Ctx {
        router,
        side,
        pool,
        transcripts,
        fake_argv: vec![exe.clone()],
        exe,
        cgroup,
        work: work.path().to_owned(),
        settings,
        interrupt: opts.interrupt.clone(),
        peers,
    });
    Ok((work, ctx, cgroup_mode))
}

/// The product versions the subject's hello says it is built against, for each provider the
/// command line names none for (`--product-version` wins): the fakes speak those. A version
/// no fake speaks stops the suite before anything runs, naming the ones they do.
fn adopt_versions(
    settings: &mut crate::settings::Settings,
    hello: &std::collections::BTreeMap<String, String>,
) -> Result<(), SuiteError> {
    for (name, version) in hello {
        let bad = |why: String| {
            SuiteError::SubjectVersions(format!("`productVersions` names {name}={version}: {why}"))
        };
        let provider: conform_protocol::vocab::Provider =
            name.parse().map_err(|e| bad(format!("{e}")))?;
        conform_fakes::protocols::codec_for(provider)
            .set_product_version(Some(version))
            .map_err(|e| bad(e.to_string()))?;
        if settings.product_version(provider).is_none() {
            settings.product_versions.push((provider, version.clone()));
        }
    }
    Ok(())
}

/// A case is one scenario in one mode; an isolation group's members are one unit, run
/// together (one permit: they must be in flight at the same time, whatever `--jobs` says).
/// The units, and how many cases in all.
fn units(scenarios: &[Arc<Scenario>]) -> (Vec<Vec<Case>>, usize) {
    let mut units: Vec<Vec<Case>> = Vec::new();
    let mut group_unit: std::collections::BTreeMap<String, usize> = Default::default();
    let mut index = 0;
    for s in scenarios {
        for m in &s.file.modes {
            let case = (index, s.clone(), *m);
            index += 1;
            match group_of(s) {
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
    (units, index)
}

/// Runs every unit that can run under the `--jobs` limit (skipping the others), each judged
/// as it ends; the reports in selection order.
async fn run_units(
    opts: &Options,
    ctx: &Arc<Ctx>,
    caps: Option<&Capabilities>,
    units: Vec<Vec<Case>>,
    cases: usize,
) -> Vec<(usize, CaseReport)> {
    let live = Arc::new(Progress {
        bar: progress_bar(cases, opts.progress),
        observer: opts.observer.clone(),
    });
    let limit = super::admit::Admission::new(opts.settings.jobs);
    let mut set = JoinSet::new();
    let mut reports = Vec::new();
    for unit in units {
        // A group runs whole or not at all: one member that cannot run skips them all.
        let skip = unit
            .iter()
            .find_map(|(_, s, mode)| skip_reason(ctx, caps, s, *mode));
        if let Some(reason) = skip {
            for (index, s, mode) in unit {
                live.bar.inc(1);
                let report = skipped(s, mode, reason.clone());
                live.ended(&report);
                reports.push((index, report));
            }
            continue;
        }
        // Admitted here, one unit after another, so the units start in the order given
        // (tasks waiting for a slot each would be let in in whatever order they were polled).
        match turn(ctx, &limit).await {
            Ok(slot) => {
                set.spawn(run_admitted(
                    ctx.clone(),
                    slot,
                    live.clone(),
                    unit,
                    judging(opts),
                ));
            }
            Err(signo) => reports.extend(never_started(&live, unit, signo)),
        }
    }
    while let Some(done) = set.join_next().await {
        match done {
            Ok(r) => reports.extend(r),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    live.bar.finish_and_clear();
    reports.sort_by_key(|(i, _)| *i);
    reports
}

/// The suite's progress bar, and who hears of each case as it ends.
pub(super) struct Progress {
    pub bar: indicatif::ProgressBar,
    pub observer: Option<Arc<dyn super::CaseObserver>>,
}

impl Progress {
    /// For runs the user does not watch (a case run again alone).
    pub fn hidden() -> Arc<Progress> {
        Arc::new(Progress {
            bar: indicatif::ProgressBar::hidden(),
            observer: None,
        })
    }

    fn ended(&self, case: &CaseReport) {
        if let Some(o) = &self.observer {
            o.ended(case, &self.bar);
        }
    }
}

/// How the suite's options judge and keep each case.
fn judging(opts: &Options) -> Judging {
    Judging {
        snapshots: opts.snapshots.clone(),
        accept: opts.settings.accept,
        pending: opts.pending.clone(),
        strictness: opts.settings.strictness,
        keep_ledgers: opts.keep_ledgers,
        keep_passing: opts.settings.verbose,
    }
}

/// One unit, once it has its turn (a run again alone, [`super::rerun`]).
pub(super) async fn run_unit(
    ctx: Arc<Ctx>,
    limit: Arc<super::admit::Admission>,
    live: Arc<Progress>,
    unit: Vec<Case>,
    judging: Judging,
) -> Vec<(usize, CaseReport)> {
    match turn(&ctx, &limit).await {
        Ok(slot) => run_admitted(ctx, slot, live, unit, judging).await,
        Err(signo) => never_started(&live, unit, signo),
    }
}

/// A unit's turn under `limit`; or, once the suite is interrupted (the signal's number), none:
/// a unit still waiting for its turn then never starts.
async fn turn(
    ctx: &Ctx,
    limit: &Arc<super::admit::Admission>,
) -> Result<super::admit::RunSlot, i32> {
    let mut interrupt = ctx.interrupt.clone();
    tokio::select! {
        biased;
        signo = crate::proc::interrupt::wait(&mut interrupt) => Err(signo),
        slot = limit.admit() => Ok(slot),
    }
}

/// The reports of a unit the suite's interruption kept from starting.
fn never_started(live: &Progress, unit: Vec<Case>, signo: i32) -> Vec<(usize, CaseReport)> {
    unit.into_iter()
        .map(|(index, s, mode)| {
            live.bar.inc(1);
            let report = interrupted(s, mode, signo);
            live.ended(&report);
            (index, report)
        })
        .collect()
}

/// One unit, admitted (its slot held until it is judged): its runs in flight together, then
/// judged.
async fn run_admitted(
    ctx: Arc<Ctx>,
    _slot: super::admit::RunSlot,
    live: Arc<Progress>,
    unit: Vec<Case>,
    judging: Judging,
) -> Vec<(usize, CaseReport)> {
    let grouped = unit.len() > 1 || group_of(&unit[0].1).is_some();
    let board = Board::new();
    let runs = unit.iter().map(|(_, s, mode)| {
        let (ctx, bar) = (&ctx, &live.bar);
        let membership = grouped.then(|| Membership {
            board: board.clone(),
            member: member_name(s).to_owned(),
        });
        async move {
            bar.set_message(format!("{} ({mode})", s.id));
            run::run_case(ctx, s, *mode, membership.as_ref()).await
        }
    });
    let observed = futures_util::future::join_all(runs).await;
    // Judging is CPU work (the first schema check compiles a whole bundle, snapshots are
    // files): off the runtime's workers, so other runs' events keep being read and timed when
    // they arrive.
    tokio::task::block_in_place(|| {
        let j = &judging;
        let mut done: Vec<(usize, CaseReport)> = unit
            .into_iter()
            .zip(observed)
            .map(|((index, s, mode), obs)| {
                live.bar.inc(1);
                let report = judge(&s, mode, obs, j);
                (index, report)
            })
            .collect();
        if grouped {
            isolation(&mut done, j.strictness);
        }
        for (_, r) in &done {
            live.ended(r);
        }
        if let Some((peers, _)) = &ctx.peers {
            for (_, r) in &done {
                keep_wire(peers, r);
            }
        }
        for (_, r) in &mut done {
            if let Some(o) = r.obs.as_mut() {
                o.walked = crate::checks::timing::walked(&r.scenario, o);
            }
        }
        if !j.keep_ledgers {
            for (_, r) in &mut done {
                let passed = matches!(r.verdict, Verdict::Pass);
                if let Some(o) = r.obs.as_mut() {
                    o.compact(passed && !j.keep_passing);
                }
            }
        }
        done
    })
}

/// A real peer's run keeps its wire beside the installed peers, for `conform peers diff` to
/// reuse ([`super::recording`]); a wire that cannot be written is said and lost, no more.
fn keep_wire(peers: &crate::proc::peers::Peers, case: &CaseReport) {
    let Some(entry) = case
        .scenario
        .file
        .peer
        .as_ref()
        .and_then(|p| peers.entries.get(&p.name))
    else {
        return;
    };
    if let Err(e) = super::recording::keep(&peers.dir, entry, case) {
        eprintln!(
            "conform: the wire of {} was not kept in {} ({e}); `conform peers diff` runs it again",
            case.scenario.id,
            peers.dir.display()
        );
    }
}

/// Why a case cannot run with this subject and these settings, if it cannot.
fn skip_reason(ctx: &Ctx, caps: Option<&Capabilities>, s: &Scenario, mode: Mode) -> Option<String> {
    if let Some(want) = &s.file.product_version
        && ctx.settings.product_version(s.file.provider) != Some(want)
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
        Some(c)
            if s.file.cancel.as_ref().is_some_and(|c| c.by == CancelBy::Dispose)
                && !c.controls.contains(&RunControl::Dispose) =>
        {
            Some("the subject does not dispose a run on request (its hello lists no `dispose` control)".to_owned())
        }
        Some(_) => None,
    }
}

fn progress_bar(len: usize, enabled: bool) -> indicatif::ProgressBar {
    if !enabled {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:30} {pos}/{len} {elapsed} {prefix} {wide_msg}",
        )
        .expect("template"),
    );
    bar
}

#[cfg(test)]
mod timed_tests {
    use super::*;

    /// A teardown that notes when it ran (as removing a real peer's unpacked runtime runs).
    struct Marks(std::rc::Rc<std::cell::Cell<Option<Instant>>>);

    impl Drop for Marks {
        fn drop(&mut self) {
            self.0.set(Some(Instant::now()));
        }
    }

    #[test]
    fn the_suites_duration_includes_its_teardown() {
        let ran = std::rc::Rc::new(std::cell::Cell::new(None));
        let started = Instant::now();
        let elapsed = timed(started, ((), Marks(ran.clone())));
        let torn_down = ran.get().expect("the teardown ran");
        assert!(started + elapsed >= torn_down, "{elapsed:?}");
    }
}
