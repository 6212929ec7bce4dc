//! The teardown ladder over everything a run owns (stdin EOF → SIGTERM → SIGKILL, each
//! bounded), and the wait for the whole tree to be gone.

use super::*;

impl ManagedChild {
    /// Whole tree gone by `deadline`: the direct child exited, its stdout reached EOF (every
    /// holder of the pipe is gone), no owned process lives and the orphans among them are
    /// reaped.
    pub async fn wait_tree(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        deadline: Instant,
        group_only: bool,
    ) -> bool {
        let mut exit_rx = self.exit_rx.clone();
        let mut eof_rx = stdout_eof.clone();
        timeout_at(deadline, async move {
            let _ = exit_rx.wait_for(|s| s.is_some()).await;
            let _ = eof_rx.wait_for(|e| *e).await;
            // Scan, then await the exit of what the scan found (a pidfd per process) and
            // scan again: what one of them forked meanwhile is found by the next scan.
            loop {
                let (mut pending, unread) = self.owned_or_unread(group_only);
                if pending.is_empty() && unread {
                    // A process mid-exec (or mid-exit) cannot say whose it is for an instant,
                    // and nothing signals when it can: look again at once.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                if pending.is_empty() {
                    // Nothing of the run runs: what exited before the scan is a zombie now,
                    // reaped here before anyone is told the tree is gone. A zombie leader whose
                    // other threads still exit cannot be reaped yet: await it too.
                    pending = reap_orphans();
                    if pending.is_empty() {
                        break;
                    }
                }
                any_exit(&pending).await;
            }
        })
        .await
        .is_ok()
    }

    /// Sends `signal` to the group and to every other process the run owns. By pid, just
    /// after the scan that found it alive (a pid reused in between would need the whole pid
    /// space to wrap around in that window). The scan comes first: a helper that left the group
    /// and holds nothing of the run is the run's only by descent, and only while the runtime
    /// lives — which the group's signal may end before a later scan.
    pub fn signal_tree(&self, signal: Signal, group_only: bool) {
        let owned = self.owned(group_only);
        let leader = std::fs::read_to_string(format!("/proc/{}/stat", self.pgid))
            .ok()
            .and_then(|s| parse_stat_full(&s));
        if leader.is_none_or(|(.., t)| t == self.start_time) {
            // ESRCH (already gone) is fine.
            let _ = killpg(Pid::from_raw(self.pgid), signal);
        }
        for (pid, start_time) in owned {
            signal_same(pid, start_time, signal);
        }
    }

    /// The ladder: stdin must already be closed by the caller. Wait `eof_grace` for the whole
    /// tree, then SIGTERM it and wait `grace`, then SIGKILL and wait `grace`.
    pub async fn settle(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        eof_grace: Duration,
        grace: Duration,
        ladder: Ladder,
    ) -> Result<(), TeardownError> {
        if ladder.settled_early {
            // Seeded defect: the ladder goes on behind the claim, which waits only for the
            // direct child.
            let this = self.clone();
            let eof = stdout_eof.clone();
            tokio::spawn(async move { this.ladder(&eof, eof_grace, grace, ladder).await });
            let _ = self.wait_exit(eof_grace + grace + grace).await;
            return Ok(());
        }
        self.ladder(stdout_eof, eof_grace, grace, ladder).await
    }

    pub(super) async fn ladder(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        eof_grace: Duration,
        grace: Duration,
        ladder: Ladder,
    ) -> Result<(), TeardownError> {
        let group_only = ladder.group_only;
        if self
            .wait_tree(stdout_eof, Instant::now() + eof_grace, group_only)
            .await
        {
            return Ok(());
        }
        // `skip_sigterm` is the seeded defect `skip-sigterm` (straight to SIGKILL).
        if !ladder.skip_sigterm {
            self.signal_tree(Signal::SIGTERM, group_only);
            if self
                .wait_tree(stdout_eof, Instant::now() + grace, group_only)
                .await
            {
                return Ok(());
            }
        }
        // `no_sigkill` is the seeded defect `no-sigkill-rung`.
        if !ladder.no_sigkill {
            self.signal_tree(Signal::SIGKILL, group_only);
            if self
                .wait_tree(stdout_eof, Instant::now() + grace, group_only)
                .await
            {
                return Ok(());
            }
        }
        Err(TeardownError {
            pgid: self.pgid,
            grace_ms: grace.as_millis(),
        })
    }
}
