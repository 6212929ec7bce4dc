//! How starved of CPU the machine was over a stretch of time: the kernel's pressure stall
//! information (`/proc/pressure/cpu`, `some`: the share of time at least one runnable task
//! waited for a CPU), else the load average against the CPUs there are. A run whose subject
//! had a fraction of the clock cannot be judged by the clock alone.

use std::time::{Duration, Instant};

/// The stall share from which a machine counts as starved: most of the time, something that
/// could run did not.
pub const STARVED: f64 = 0.5;

/// A point in time to measure the machine's starvation from.
#[derive(Clone, Debug)]
pub struct Mark {
    at: Instant,
    stalled: Option<Duration>,
}

impl Mark {
    pub fn now() -> Mark {
        Mark {
            at: Instant::now(),
            stalled: cpu_stalled_total(),
        }
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
    fn a_share_is_a_share() {
        let mark = Mark::now();
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(20) {}
        if let Some(share) = mark.stall_share() {
            assert!((0.0..=1.0).contains(&share), "{share}");
        }
    }
}
