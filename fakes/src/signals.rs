//! Termination signals (SIGTERM, SIGINT, SIGHUP), handled at any time, whatever the script is
//! doing: recorded, then either ignored (SIGTERM after `ignore_sigterm`) or emulating the
//! default disposition — the fake really dies by the signal, so the subject sees exactly what
//! a real runtime killed by it would produce.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use conform_protocol::side::FakeEvent;
use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

use crate::side::Side;

/// What the script changed about signal handling.
#[derive(Debug, Default)]
pub struct SignalPolicy {
    ignore_sigterm: AtomicBool,
}

impl SignalPolicy {
    pub fn set_ignore_sigterm(&self, on: bool) {
        self.ignore_sigterm.store(on, Ordering::SeqCst);
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
                    if !ignored {
                        side.send(FakeEvent::Exit {
                            code: None,
                            signal: Some(sig.as_str().into()),
                            peak_rss_kib: crate::process::peak_rss_kib(),
                        });
                        crate::process::die_by(sig);
                    }
                }
            });
        }
    }
}
