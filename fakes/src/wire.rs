//! The subject-facing stdio: newline-delimited frames in on stdin, out on stdout.

use std::io::{BufRead, Write};
use std::sync::Arc;

use conform_protocol::side::{Direction, FakeEvent};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::side::Side;

/// What the stdin reader hands the engine.
#[derive(Debug)]
pub enum Incoming {
    /// Parsed JSON, or a JSON string holding the raw line when it was not JSON.
    Frame(Value),
    Eof,
}

/// Reads stdin on a plain thread (a blocking read must not hold up the runtime). Each frame is
/// reported to the harness the moment it is read — so the ledger keeps wire order even while
/// the script is busy — then queued for the engine. EOF is reported once.
pub fn spawn_stdin_reader(side: Arc<Side>) -> mpsc::UnboundedReceiver<Incoming> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match stdin.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("fake: stdin read failed ({e}); treating it as EOF");
                    break;
                }
            }
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            let frame = serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.into()));
            side.send(FakeEvent::Frame {
                dir: Direction::Recv,
                frame: frame.clone(),
                violation: None,
                answers: None,
            });
            if tx.send(Incoming::Frame(frame)).is_err() {
                return;
            }
        }
        side.send(FakeEvent::Eof);
        let _ = tx.send(Incoming::Eof);
    });
    rx
}

/// Writes lines to stdout; remembers when the script closed it so nothing is written after.
#[derive(Debug, Default)]
pub struct Stdout {
    closed: bool,
}

impl Stdout {
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        if self.closed {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdout was closed by the script",
            ));
        }
        let mut out = std::io::stdout().lock();
        out.write_all(line.as_bytes())?;
        out.write_all(b"\n")?;
        out.flush()
    }

    pub fn close(&mut self) {
        if !self.closed {
            crate::process::close_stdout();
            self.closed = true;
        }
    }
}
