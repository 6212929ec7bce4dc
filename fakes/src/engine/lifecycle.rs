//! How a run waits on the harness and ends: releases, stdin's EOF, parking, dying by a signal
//! left to the engine, exiting, and the violations and faults it reports.

use super::*;

impl Engine {
    pub(super) async fn await_release(&mut self, name: &str) {
        self.side.send(FakeEvent::Awaiting { name: name.into() });
        self.await_quietly(name).await;
    }

    /// Blocks until the harness releases `name`, without announcing it as a checkpoint.
    pub(super) async fn await_quietly(&mut self, name: &str) {
        loop {
            if let Some(at) = self.released.iter().position(|n| n == name) {
                self.released.remove(at);
                return;
            }
            let policy = self.policy.clone();
            let got = tokio::select! {
                got = self.control.recv() => got,
                () = policy.deferred() => return self.die_if_signalled(),
            };
            match got {
                Some(ToFake::Release { name }) => self.released.push(name),
                Some(ToFake::Ack { .. }) => {}
                None => {
                    eprintln!("fake: side channel closed while awaiting {name:?}; parked");
                    self.park().await;
                }
            }
        }
    }

    /// Stdin is at EOF and the step cannot go on: exit 0, or stay alive after `ignore_eof`.
    pub(super) async fn at_eof(&mut self) -> Infallible {
        self.die_if_signalled();
        if self.ignore_eof {
            return self.park().await;
        }
        self.exit(self.codec.exit_code_at_eof())
    }

    /// Stays alive until a fatal signal.
    pub(super) async fn park(&self) -> Infallible {
        self.policy.deferred().await;
        self.die_if_signalled();
        unreachable!("woken without a signal")
    }

    /// Dies by the fatal signal left to the engine, if one was.
    pub(super) fn die_if_signalled(&self) {
        if let Some(sig) = self.policy.pending() {
            crate::signals::die_by(&self.side, sig);
        }
    }

    pub(super) fn exit(&self, code: i32) -> ! {
        process::exit(&self.side, code)
    }

    pub(super) fn violation(&self, detail: String) {
        self.side.send(FakeEvent::Violation { detail });
    }

    pub(super) fn fault(&self, detail: String) {
        eprintln!("fake: {detail}");
        self.side.send(FakeEvent::Fault { detail });
    }
}
