//! How many runs are in flight at once (`--jobs`). A run spends most of its life waiting (a
//! handshake, a teardown grace, a delayed answer), so on few cores a fixed small limit leaves
//! them idle; `auto` lets up to [`AUTO_PER_CORE`](crate::settings::AUTO_PER_CORE) runs per core in flight, but starts one past
//! the first run per core only while the machine's run queue has room (what it held before
//! the suite began, plus [`QUEUE_PER_CORE`] per core). The queue is read when a
//! slot is free and, while it is full, again each time a run ends: a wait on an event, never a
//! timer, and never with fewer than one run per core in flight (so it cannot stall).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::settings::{Jobs, cores};

/// Runnable tasks per core, above what ran before the suite began, past which `auto` starts
/// no further run (beyond one per core). The queue the machine had already (another build,
/// another suite) is not the runs' doing: it is read once, at the start, and added.
const QUEUE_PER_CORE: usize = 6;

/// Runnable tasks on the machine now (`/proc/loadavg`'s fourth field, before the slash);
/// `None` where it cannot be read (then `auto` is held by its slots alone).
fn runnable() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .nth(3)?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// The suite's admission of runs: slots, and for `auto` the run-queue gate.
pub struct Admission {
    slots: Arc<Semaphore>,
    /// `auto`: runs in flight that start whatever the queue says (one per core), and the
    /// queue length past which no further run starts.
    gate: Option<(usize, usize)>,
    in_flight: AtomicUsize,
    ended: Notify,
}

/// A run's admission, held while it runs; dropping it frees the slot.
pub struct RunSlot {
    _slot: OwnedSemaphorePermit,
    admission: Arc<Admission>,
}

impl Admission {
    pub fn new(jobs: Jobs) -> Arc<Admission> {
        let gate = (jobs == Jobs::Auto)
            .then(|| (cores(), runnable().unwrap_or(0) + cores() * QUEUE_PER_CORE));
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(jobs.most())),
            gate,
            in_flight: AtomicUsize::new(0),
            ended: Notify::new(),
        })
    }

    /// Waits for a slot and, under `auto`, for room in the run queue.
    pub async fn admit(self: &Arc<Self>) -> RunSlot {
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the slots are never closed");
        if let Some((floor, queue)) = self.gate {
            self.room(floor, queue, runnable).await;
        }
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        RunSlot {
            _slot: slot,
            admission: self.clone(),
        }
    }

    /// Returns once fewer than `floor` runs are in flight or the queue is under `queue`,
    /// looking again each time a run ends.
    async fn room(&self, floor: usize, queue: usize, runnable: impl Fn() -> Option<usize>) {
        loop {
            // Registered before looking, so a run that ends in between still wakes us.
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.in_flight.load(Ordering::SeqCst) < floor || runnable().is_none_or(|r| r < queue)
            {
                return;
            }
            ended.await;
        }
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        self.admission.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.admission.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::AUTO_PER_CORE;

    #[test]
    fn jobs_read_auto_or_a_positive_number() {
        assert_eq!("auto".parse(), Ok(Jobs::Auto));
        assert_eq!("3".parse(), Ok(Jobs::Fixed(3)));
        assert!("0".parse::<Jobs>().unwrap_err().contains("at least 1"));
        assert!("many".parse::<Jobs>().is_err());
        assert_eq!(Jobs::Auto.most(), cores() * AUTO_PER_CORE);
        assert_eq!(Jobs::Fixed(5).most(), 5);
    }

    /// Under a full queue a run waits for another to end, and is let in by that end; with
    /// fewer runs in flight than the floor it is let in whatever the queue says.
    #[tokio::test]
    async fn a_full_queue_holds_a_start_until_a_run_ends() {
        let a = Arc::new(Admission {
            slots: Arc::new(Semaphore::new(8)),
            gate: None,
            in_flight: AtomicUsize::new(0),
            ended: Notify::new(),
        });
        let full = || Some(100);
        // Under the floor: in at once.
        a.room(1, 4, full).await;
        let first = a.admit().await;
        assert_eq!(a.in_flight.load(Ordering::SeqCst), 1);
        let waiting = {
            let a = a.clone();
            tokio::spawn(async move { a.room(1, 4, full).await })
        };
        tokio::task::yield_now().await;
        assert!(
            !waiting.is_finished(),
            "the queue is full and one run is in flight"
        );
        drop(first);
        waiting.await.expect("let in once the run ended");
    }
}
