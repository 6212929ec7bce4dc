//! The subject-facing stdio: newline-delimited frames in on stdin, out on stdout.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use conform_protocol::lines::{LineSplitter, Piece, show_bytes};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

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
    /// Everything the subject had written when [`Drain::request`] was called has been handed
    /// over (a partial last line stays buffered: it is not a frame yet).
    Drained,
}

/// Asks the reader to hand over, now, whatever stdin already holds. A signal and the bytes
/// written before it reach the fake by two unordered paths; what the subject wrote before it
/// signalled is already in the pipe, so reading until the pipe is empty restores the order.
#[derive(Debug)]
pub struct Drain {
    wake: OwnedFd,
}

impl Drain {
    pub fn request(&self) {
        if let Err(e) = nix::unistd::write(&self.wake, b"d") {
            eprintln!("fake: could not wake the stdin reader ({e})");
        }
    }
}

/// Reads stdin on a plain thread (a blocking read must not hold up the runtime). Each frame is
/// reported to the harness the moment it is read — so the ledger keeps wire order even while
/// the script is busy — then queued for the engine. EOF is reported once.
pub fn spawn_stdin_reader(side: Arc<Side>) -> (mpsc::UnboundedReceiver<Incoming>, Drain) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (wake_rx, wake) = nix::unistd::pipe().expect("a pipe for the stdin reader");
    std::thread::spawn(move || {
        let mut reader = Reader {
            side,
            tx,
            lines: LineSplitter::new(MAX_FRAME_BYTES),
            buf: vec![0; 64 * 1024],
        };
        let stdin = std::io::stdin();
        let input = stdin.as_fd();
        loop {
            let (readable, drain) = ready(input, wake_rx.as_fd(), PollTimeout::NONE);
            if drain {
                let _ = nix::unistd::read(&wake_rx, &mut [0; 16]);
                // Until a poll that does not wait finds nothing more.
                while ready(input, wake_rx.as_fd(), PollTimeout::ZERO).0 {
                    if !reader.read_chunk(input) {
                        return;
                    }
                }
                if reader.tx.send(Incoming::Drained).is_err() {
                    return;
                }
            } else if readable && !reader.read_chunk(input) {
                return;
            }
        }
    });
    (rx, Drain { wake })
}

/// Whether stdin (data, EOF or an error to read) and the drain request are ready.
fn ready(input: BorrowedFd, wake: BorrowedFd, timeout: PollTimeout) -> (bool, bool) {
    let mut fds = [
        PollFd::new(input, PollFlags::POLLIN),
        PollFd::new(wake, PollFlags::POLLIN),
    ];
    loop {
        match poll(&mut fds, timeout) {
            Ok(_) => break,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => {
                // Reading will then say what is wrong with stdin.
                eprintln!("fake: poll on stdin failed ({e})");
                return (true, false);
            }
        }
    }
    let seen = |fd: &PollFd| fd.revents().is_some_and(|r| !r.is_empty());
    (seen(&fds[0]), seen(&fds[1]))
}

struct Reader {
    side: Arc<Side>,
    tx: mpsc::UnboundedSender<Incoming>,
    lines: LineSplitter,
    buf: Vec<u8>,
}

impl Reader {
    /// One read of stdin, its complete lines handed over; `false` once stdin ended (EOF
    /// reported) or the engine is gone.
    fn read_chunk(&mut self, input: BorrowedFd) -> bool {
        let n = loop {
            match nix::unistd::read(input, &mut self.buf) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    eprintln!("fake: stdin read failed ({e}); treating it as EOF");
                    break 0;
                }
            }
        };
        if n == 0 {
            self.lines.finish();
        } else {
            self.lines.push(&self.buf[..n]);
        }
        while let Some(piece) = self.lines.pop() {
            if !self.hand_over(piece) {
                return false;
            }
        }
        if n == 0 {
            self.side.send(FakeEvent::Eof);
            let _ = self.tx.send(Incoming::Eof);
            return false;
        }
        true
    }

    fn hand_over(&self, piece: Piece) -> bool {
        let bytes = match piece {
            Piece::Line(bytes) => bytes,
            Piece::TooLong { head, size } => {
                // No frame of these protocols is this long: the subject broke the wire.
                self.side.send(FakeEvent::Violation {
                    detail: format!(
                        "a frame of {size} bytes, over the limit of {MAX_FRAME_BYTES}: {}",
                        show_bytes(&head, 200)
                    ),
                });
                return true;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return true;
        }
        let frame = parse_frame(&bytes);
        self.side.send(FakeEvent::Frame {
            dir: Direction::Recv,
            frame: frame.clone(),
            violation: None,
            answers: None,
        });
        self.tx.send(Incoming::Frame(frame)).is_ok()
    }
}
