//! The subject-facing stdio: newline-delimited frames in on stdin, out on stdout.

use std::io::Write;

use conform_protocol::lines::{LineSplitter, Piece, next_piece, show_bytes};
use std::sync::Arc;

use conform_protocol::side::{Direction, FakeEvent};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::side::Side;

/// The longest frame a fake reads whole (the protocols' frames are a few kilobytes).
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// A line as a frame: its JSON, or a JSON string holding the raw line when it is not JSON.
pub fn parse_frame(bytes: &[u8]) -> Value {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.into_owned()))
}

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
        let mut lines = LineSplitter::new(MAX_FRAME_BYTES);
        loop {
            let bytes = match next_piece(&mut stdin, &mut lines) {
                Ok(Some(Piece::Line(bytes))) => bytes,
                Ok(Some(Piece::TooLong { head, size })) => {
                    // No frame of these protocols is this long: the subject broke the wire.
                    side.send(FakeEvent::Violation {
                        detail: format!(
                            "a frame of {size} bytes, over the limit of {MAX_FRAME_BYTES}: {}",
                            show_bytes(&head, 200)
                        ),
                    });
                    continue;
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("fake: stdin read failed ({e}); treating it as EOF");
                    break;
                }
            };
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let frame = parse_frame(&bytes);
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
