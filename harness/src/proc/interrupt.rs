//! SIGINT, SIGTERM and SIGHUP to a running suite: the first stops it in order (no new runs,
//! the runs in flight ended and their processes killed, the subject shut down, the scratch
//! folder removed, a report of what finished, exit 128 + n); a second kills everything below
//! the harness at once and exits.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// The signal that interrupted the suite, once one did.
pub type Interrupted = watch::Receiver<Option<i32>>;

/// Never interrupted (for suites run by tests and tools, not by a user at a terminal).
pub fn never() -> Interrupted {
    watch::Sender::new(None).subscribe()
}

/// Resolves with the signal once the suite is interrupted (never, if it is not).
pub async fn wait(rx: &mut Interrupted) -> i32 {
    let signo = rx
        .wait_for(Option::is_some)
        .await
        .map(|s| s.unwrap_or_default());
    match signo {
        Ok(signo) => signo,
        Err(_) => std::future::pending().await,
    }
}

/// Starts listening (call inside the runtime): the receiver says which signal came first.
pub fn listen() -> std::io::Result<Interrupted> {
    let (tx, rx) = watch::channel(None);
    let kinds = [
        (SignalKind::interrupt(), libc_signo::SIGINT),
        (SignalKind::terminate(), libc_signo::SIGTERM),
        (SignalKind::hangup(), libc_signo::SIGHUP),
    ];
    let tx = std::sync::Arc::new(tx);
    for (kind, signo) in kinds {
        let mut stream = signal(kind)?;
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.borrow().is_some() {
                    // The second signal: nothing is waited for any more.
                    kill_everything_below_us().await;
                    std::process::exit(128 + signo);
                }
                tx.send_replace(Some(signo));
            }
        });
    }
    Ok(rx)
}

/// SIGKILL to every process below the harness (subjects, fakes, what escaped their groups and
/// was reparented here: the harness is their subreaper), all at once, then a short wait for
/// each to be gone.
async fn kill_everything_below_us() {
    let me = std::process::id() as i32;
    let fds: Vec<_> = crate::proc::pids::descendants(me)
        .into_iter()
        .filter_map(|(pid, _)| crate::proc::pids::pidfd_open(pid).ok())
        .collect();
    for fd in &fds {
        crate::proc::pids::kill(fd);
    }
    for fd in &fds {
        crate::proc::pids::wait_exit(fd, std::time::Duration::from_secs(2)).await;
    }
}

/// The name of a signal the suite listens for.
pub fn name(signo: i32) -> &'static str {
    match signo {
        libc_signo::SIGINT => "SIGINT",
        libc_signo::SIGTERM => "SIGTERM",
        libc_signo::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// The numbers, from nix (one place; the exit code is 128 + n).
mod libc_signo {
    use nix::sys::signal::Signal;
    pub const SIGINT: i32 = Signal::SIGINT as i32;
    pub const SIGTERM: i32 = Signal::SIGTERM as i32;
    pub const SIGHUP: i32 = Signal::SIGHUP as i32;
}
