//! How starved of CPU the machine was over a stretch of time: the kernel's pressure stall
//! information (`/proc/pressure/cpu`, `some`: the share of time at least one runnable task
//! waited for a CPU), else the load average against the CPUs there are. A run whose subject
//! had a fraction of the clock cannot be judged by the clock alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The stall share from which a machine counts as starved: most of the time, something that
/// could run did not.
pub const STARVED: f64 = 0.5;

/// A point in time to measure the machine's starvation from, and how long the harness's and
/// the subject's own threads had waited for a CPU by then.
#[derive(Clone, Debug)]
pub struct Mark {
    at: Instant,
    stalled: Option<Duration>,
    subject_group: i32,
    waited: Duration,
}

impl Mark {
    /// A mark for a run served by the subject whose process group is `subject_group`.
    pub fn now(subject_group: i32) -> Mark {
        Mark {
            at: Instant::now(),
            stalled: cpu_stalled_total(),
            subject_group,
            waited: waited(subject_group),
        }
    }

    /// How long the harness's and the subject's threads waited for a CPU since the mark (the
    /// kernel's run-queue delay): time a report could come late by that neither chose.
    pub fn waited(&self) -> Duration {
        waited(self.subject_group).saturating_sub(self.waited)
    }

    /// The share of the time since the mark that something waited for a CPU (0 to 1);
    /// `None` when the kernel cannot say and the load average is unknown too.
    pub fn stall_share(&self) -> Option<f64> {
        let wall = self.at.elapsed().as_secs_f64();
        match (self.stalled, cpu_stalled_total()) {
            (Some(before), Some(now)) if wall > 0.0 => {
                Some((now.saturating_sub(before).as_secs_f64() / wall).clamp(0.0, 1.0))
            }
            _ => load_average_share(),
        }
    }
}

/// Run-queue delay so far of every thread of the harness and of the subject's process group
/// (`/proc/<pid>/task/<tid>/schedstat`, second field, ns).
fn waited(subject_group: i32) -> Duration {
    let mut processes = vec![std::process::id() as i32];
    if subject_group > 0 {
        processes.extend(group_members(subject_group));
    }
    let ns: u64 = processes.into_iter().map(threads_waited_ns).sum();
    Duration::from_nanos(ns)
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

fn threads_waited_ns(pid: i32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// `some total=<µs>` of `/proc/pressure/cpu`.
fn cpu_stalled_total() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    parse_some_total(&text).map(Duration::from_micros)
}

fn parse_some_total(text: &str) -> Option<u64> {
    let some = text.lines().find(|l| l.starts_with("some "))?;
    some.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// Without pressure figures: the share of the one-minute load the CPUs could not carry.
fn load_average_share() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cpus = std::thread::available_parallelism().ok()?.get() as f64;
    Some(if load > cpus { 1.0 - cpus / load } else { 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stalled_total_is_read_from_the_some_line() {
        let text = "some avg10=36.35 avg60=75.56 avg300=73.41 total=4509920200\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_some_total(text), Some(4_509_920_200));
        assert_eq!(parse_some_total("full total=3\n"), None);
    }

    #[test]
    fn threads_that_wait_for_a_cpu_are_counted() {
        // Two busy threads per core for a while: each waits its turn on the run queue.
        let mark = Mark::now(0);
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
