//! Side-channel client: JSON lines of [`FakeLine`] to the harness, [`ToFake`] lines back.
//!
//! Writes are synchronous and complete (`write_all` of one whole line under a lock): once
//! [`Side::send`] returns, the line is in the kernel's socket buffer, so it survives an
//! `exit()` or a fatal signal raised right after — the harness relies on `Exit` arriving
//! before the socket closes. A broken socket is noted once on stderr and the script goes on.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

use conform_protocol::side::{FakeEvent, FakeLine, ToFake};
use tokio::sync::mpsc;

use crate::error::FakeError;

pub struct Side {
    run: String,
    pid: i32,
    /// `None` once the socket broke.
    out: Mutex<Option<UnixStream>>,
}

impl Side {
    /// Connects and starts a reader thread that forwards the harness's lines.
    pub fn connect(
        path: &str,
        run: &str,
    ) -> Result<(Side, mpsc::UnboundedReceiver<ToFake>), FakeError> {
        let stream = UnixStream::connect(path)
            .map_err(|e| FakeError::Side(format!("connect {path}: {e}")))?;
        let reader = stream.try_clone()?;
        let (tx, rx) = mpsc::unbounded_channel();
        // A plain thread: the read blocks, and it must work before (and without) the runtime.
        std::thread::spawn(move || forward(reader, tx));
        let side = Side {
            run: run.to_owned(),
            pid: std::process::id() as i32,
            out: Mutex::new(Some(stream)),
        };
        Ok((side, rx))
    }

    /// Sends one event. Never fails: a broken socket is reported on stderr once.
    pub fn send(&self, event: FakeEvent) {
        let line = FakeLine {
            run: self.run.clone(),
            pid: self.pid,
            event,
        };
        let mut text = serde_json::to_string(&line).expect("side lines always serialize");
        text.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stream) = out.as_mut()
            && let Err(e) = stream.write_all(text.as_bytes())
        {
            eprintln!("fake: side channel broke ({e}); continuing without it");
            *out = None;
        }
    }
}

fn forward(stream: UnixStream, tx: mpsc::UnboundedSender<ToFake>) {
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<ToFake>(&line) {
            Ok(msg) => {
                if tx.send(msg).is_err() {
                    break;
                }
            }
            Err(e) => eprintln!("fake: ignoring side-channel line {line:?}: {e}"),
        }
    }
}

/// Blocks until the harness acknowledges the registration (it opens a pidfd and checks who is
/// writing meanwhile); returns the script the acknowledgement carried. A side channel that
/// closes first — the harness did not vouch for this process — is the end of this process.
pub async fn wait_for_ack(
    mut control: mpsc::UnboundedReceiver<ToFake>,
) -> (mpsc::UnboundedReceiver<ToFake>, Option<serde_json::Value>) {
    loop {
        match control.recv().await {
            Some(ToFake::Ack { script }) => return (control, script),
            Some(other) => eprintln!("fake: {other:?} before the registration ack; ignored"),
            None => {
                eprintln!("fake: side channel closed before the registration ack");
                std::process::exit(crate::cli::FAULT_EXIT);
            }
        }
    }
}
