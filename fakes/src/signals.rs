//! Termination signals (SIGTERM, SIGINT, SIGHUP), handled at any time, whatever the script is
//! doing: recorded, then either ignored (SIGTERM after `ignore_sigterm`) or emulating the
//! default disposition — the fake really dies by the signal, so the subject sees exactly what
//! a real runtime killed by it would produce.
//!
//! While a script runs, the death is left to the engine, which first reads what the subject
//! wrote before it signalled and lets the step that waits for it finish; only a blocking write
//! to stdout is cut short at once. A signal and the bytes written before it reach the fake by
//! two unordered paths: without this, a subject that closes stdin and signals at once would
//! race its own EOF, and a skipped step of the protocol would pass whenever the signal won.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use conform_protocol::side::FakeEvent;
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

use crate::side::Side;

/// What the script changed about signal handling.
#[derive(Debug, Default)]
pub struct SignalPolicy {
    ignore_sigterm: AtomicBool,
    fate: Mutex<Fate>,
    deferred: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Fate {
    /// A script runs: fatal signals are left to its engine.
    engine: bool,
    /// The engine is in a (possibly blocking) write to stdout.
    writing: bool,
    /// The fatal signal left to the engine.
    signal: Option<Signal>,
}

impl SignalPolicy {
    pub fn set_ignore_sigterm(&self, on: bool) {
        self.ignore_sigterm.store(on, Ordering::SeqCst);
    }

    /// The engine takes over fatal signals.
    pub fn attach(&self) {
        self.fate().engine = true;
    }

    /// The fatal signal the engine must die by.
    pub fn pending(&self) -> Option<Signal> {
        self.fate().signal
    }

    /// Resolves when a fatal signal is left to the engine (also for one left before).
    pub async fn deferred(&self) {
        let notified = self.deferred.notified();
        if self.pending().is_none() {
            notified.await;
        }
    }

    /// Around a write to stdout: a signal during it kills at once. Entering fails with the
    /// signal already left to the engine.
    pub fn writing(&self, on: bool) -> Result<(), Signal> {
        let mut fate = self.fate();
        if let (true, Some(sig)) = (on, fate.signal) {
            return Err(sig);
        }
        fate.writing = on;
        Ok(())
    }

    /// Leaves `sig` to the engine if one runs and is not writing.
    fn defer(&self, sig: Signal) -> bool {
        let mut fate = self.fate();
        let defer = fate.engine && !fate.writing;
        if defer {
            fate.signal = Some(sig);
            self.deferred.notify_waiters();
        }
        defer
    }

    fn fate(&self) -> std::sync::MutexGuard<'_, Fate> {
        self.fate.lock().expect("signal policy")
    }
}

/// Installed handlers whose deliveries are not yet reported.
pub struct Signals {
    streams: Vec<(Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    /// Installs the handlers now (so no signal is lost before the side channel is up). Needs a
    /// tokio runtime.
    pub fn install() -> std::io::Result<Signals> {
        let kinds = [
            (Signal::SIGTERM, SignalKind::terminate()),
            (Signal::SIGINT, SignalKind::interrupt()),
            (Signal::SIGHUP, SignalKind::hangup()),
        ];
        let streams = kinds
            .into_iter()
            .map(|(sig, kind)| Ok((sig, signal(kind)?)))
            .collect::<std::io::Result<_>>()?;
        Ok(Signals { streams })
    }

    /// Starts reporting: call once `Register` was sent, so it stays the first line.
    pub fn spawn(self, side: Arc<Side>, policy: Arc<SignalPolicy>) {
        for (sig, mut stream) in self.streams {
            let side = side.clone();
            let policy = policy.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    let ignored =
                        sig == Signal::SIGTERM && policy.ignore_sigterm.load(Ordering::SeqCst);
                    side.send(FakeEvent::Signal {
                        signal: sig.as_str().into(),
                        action: if ignored { "ignored" } else { "exit" }.into(),
                    });
                    if !ignored && !policy.defer(sig) {
                        die_by(&side, sig);
                    }
                }
            });
        }
    }
}

/// Reports the death, then dies by `sig` as the default disposition would.
pub fn die_by(side: &Side, sig: Signal) {
    side.send(FakeEvent::Exit {
        code: None,
        signal: Some(sig.as_str().into()),
        peak_rss_kib: crate::process::peak_rss_kib(),
    });
    crate::process::die_by(sig);
}
