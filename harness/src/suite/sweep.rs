//! After every unit: the subject shuts down, what it said late is judged, job ids it gave
//! twice fail, processes still alive are killed and named, and the suite's own findings
//! (faults that belong to no case) are collected.

use std::sync::Arc;
use std::time::Duration;

use conform_protocol::side::FakeEvent;

use crate::checks::{self, Check, Finding};
use crate::proc::pids;
use crate::run::Ctx;
use crate::suite::judge::unique_job_ids;
use crate::suite::outcome::{CaseReport, PeakRss, SuiteReport};

/// The suite's report from its cases' reports, once the subject and everything left of the
/// runs is gone. The caller fills in what it knows (subject, cgroup, elapsed).
pub async fn sweep(
    ctx: &Arc<Ctx>,
    mut reports: Vec<(usize, CaseReport)>,
    allow_skips: bool,
) -> SuiteReport {
    let subject_rss = ctx.pool.peak_rss_kib();
    ctx.pool.shutdown().await;
    // The subject is gone: whatever it said about a run after that run was over is in.
    for (_, report) in reports.iter_mut() {
        let Some(obs) = &report.obs else { continue };
        let late = checks::judge_late(obs, &ctx.router.take_late(&obs.run));
        report.add(late, ctx.settings.strictness);
    }
    unique_job_ids(&mut reports, ctx.settings.strictness);
    let stragglers = stragglers(ctx).await;
    let findings = suite_findings(ctx).await;
    let fake_rss = largest_fake_rss(&reports);
    SuiteReport {
        subject: String::new(),
        fakes_speak: Default::default(),
        real_peers: Default::default(),
        strictness: ctx.settings.strictness,
        jobs: ctx.settings.jobs.most(),
        cases: reports.into_iter().map(|(_, r)| r).collect(),
        findings,
        stragglers,
        allow_skips,
        elapsed: Duration::ZERO,
        interrupted: *ctx.interrupt.borrow(),
        cgroup: Default::default(),
        baseline: None,
        partition: None,
        positions: Default::default(),
        catalog: Default::default(),
        catalog_digest: String::new(),
        peak_rss_kib: PeakRss {
            harness: pids::own_peak_rss_kib(),
            subject: subject_rss,
            fake: fake_rss,
        },
    }
}

/// Every registered process still alive, then whatever still runs below the harness (it
/// escaped a subject's group): killed, and named.
async fn stragglers(ctx: &Ctx) -> Vec<String> {
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
    stragglers.extend(
        pids::sweep_descendants()
            .await
            .into_iter()
            .map(|p| format!("{p}, left by the subject")),
    );
    stragglers
}

/// The largest peak RSS any fake reported at its exit (KiB).
fn largest_fake_rss(reports: &[(usize, CaseReport)]) -> Option<u64> {
    reports
        .iter()
        .filter_map(|(_, r)| r.obs.as_ref())
        .filter_map(|o| {
            o.fake_peak_rss_kib.or_else(|| {
                o.fake
                    .iter()
                    .filter_map(|l| match l.event {
                        FakeEvent::Exit { peak_rss_kib, .. } => peak_rss_kib,
                        _ => None,
                    })
                    .max()
            })
        })
        .max()
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
