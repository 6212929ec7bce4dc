//! How long the threads that had to act for a run waited for a CPU: the kernel's run-queue
//! delay (`/proc/<pid>/task/<tid>/schedstat`, second field). Time a run spent waiting for a CPU
//! is the machine's, not the subject's; time it spent idle is its own — a hung subject waits
//! for nothing, so the clock alone judges it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A point in time to measure from, and how long the harness's and the subject's own threads
/// had waited for a CPU by then.
#[derive(Clone, Debug)]
pub struct CpuWaitMark {
    subject_group: i32,
    harness: Duration,
    subject: Duration,
}

impl CpuWaitMark {
    /// A mark for a run served by the subject whose process group is `subject_group`.
    pub fn now(subject_group: i32) -> CpuWaitMark {
        CpuWaitMark {
            subject_group,
            harness: threads_waited(std::process::id() as i32),
            subject: group_waited(subject_group),
        }
    }

    /// How long the harness's and the subject's threads waited for a CPU since the mark: time
    /// a report could come late by that neither chose. Shared by every run in flight, so it
    /// can only make a finding *suspect* ([`crate::suite::rerun`]).
    pub fn waited(&self) -> Duration {
        let harness = threads_waited(std::process::id() as i32).saturating_sub(self.harness);
        harness + self.subject_waited()
    }

    /// How long the run's own processes waited for a CPU: the subject (whose threads handle
    /// the run) since the mark, and the run's `runtime` processes (started after it) all their
    /// lives. What a deadline may be put off by.
    pub fn run_waited(&self, runtime: &[i32]) -> Duration {
        let runtimes: Duration = runtime.iter().map(|&pid| threads_waited(pid)).sum();
        self.subject_waited() + runtimes
    }

    fn subject_waited(&self) -> Duration {
        group_waited(self.subject_group).saturating_sub(self.subject)
    }
}

/// Run-queue delay so far of every thread of the subject's process group.
fn group_waited(subject_group: i32) -> Duration {
    if subject_group <= 0 {
        return Duration::ZERO;
    }
    group_members(subject_group)
        .into_iter()
        .map(threads_waited)
        .sum()
}

/// The processes of a subject's group: the keeper, the subject and whatever it runs in its own
/// group. Read from `/proc` at most once a second per group — every run marks twice, and the
/// members of a subject's group hardly ever change.
fn group_members(group: i32) -> Vec<i32> {
    type Cache = HashMap<i32, (Instant, Vec<i32>)>;
    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(HashMap::new);
    if let Some((at, members)) = cache.get(&group)
        && at.elapsed() < Duration::from_secs(1)
    {
        return members.clone();
    }
    let members: Vec<i32> = crate::proc::own_tree::read()
        .into_iter()
        .filter(|(_, st)| st.pgrp == group)
        .map(|(pid, _)| pid)
        .collect();
    cache.insert(group, (Instant::now(), members.clone()));
    members
}

/// Run-queue delay so far of every thread of one process.
fn threads_waited(pid: i32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let ns = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_that_wait_for_a_cpu_are_counted() {
        // Two busy threads per core for a while: each waits its turn on the run queue.
        let mark = CpuWaitMark::now(0);
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let busy: Vec<_> = (0..cpus * 2)
            .map(|_| {
                std::thread::spawn(|| {
                    let t = Instant::now();
                    while t.elapsed() < Duration::from_millis(300) {}
                })
            })
            .collect();
        // Counted while the threads live (a thread that ended takes its count with it): this
        // thread competes for a while too, then looks.
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(150) {}
        let while_busy = mark.waited();
        for b in busy {
            b.join().unwrap();
        }
        assert!(while_busy > Duration::ZERO);
    }
}
