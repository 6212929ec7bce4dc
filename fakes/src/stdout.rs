//! The fake's stdout, and how a frame's bytes reach it: as one line, or the way real stdio
//! delivers them — cut in two so a read ends inside the frame, ended with CRLF, several frames
//! in one write.

use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use crate::error::StepError;

/// How one step's frames are written (`split`, `crlf`).
#[derive(Debug, Default, Clone)]
pub struct Shape {
    pub split: Option<String>,
    pub crlf: bool,
    /// A frame of the step was cut where `split` says (a step whose frames have no such place
    /// is the script's mistake).
    pub cut_one: bool,
}

impl Shape {
    /// Where `split` cuts `line` (a byte offset inside it; the line's length for `newline`);
    /// `None` when the line has no such place.
    fn cut(&self, line: &str) -> Result<Option<usize>, StepError> {
        let Some(at) = self.split.as_deref() else {
            return Ok(None);
        };
        let bytes = line.as_bytes();
        let found = match at {
            // Two bytes into the first member's name: `{"js|onrpc"…`.
            "key" => line.find('"').map(|i| i + 3),
            // Two bytes into the first string value: `…":"2.|0"…`.
            "string" => line.find("\":\"").map(|i| i + 5),
            // After the lead byte of the first multi-byte character.
            "utf8" => bytes.iter().position(|b| *b >= 0xC0).map(|i| i + 1),
            "newline" => Some(line.len()),
            other => {
                return Err(format!("`split = {other:?}` names no place in a frame").into());
            }
        };
        Ok(found.filter(|cut| *cut <= line.len()))
    }

    /// The script's mistake, once the step is played: a `split` that found no place.
    pub fn unused(&self) -> Option<String> {
        let at = self.split.as_deref()?;
        (!self.cut_one).then(|| format!("`split = {at:?}`: no frame of the step has such a place"))
    }

    fn end(&self) -> &'static [u8] {
        if self.crlf { b"\r\n" } else { b"\n" }
    }
}

/// Writes lines to stdout; remembers when the script closed it so nothing is written after.
#[derive(Debug, Default)]
pub struct Stdout {
    closed: bool,
    /// `coalesce`: how many more frames go into the write being gathered, and what it holds.
    batch: Option<(u32, Vec<u8>)>,
}

/// The longest the fake waits for the subject to read the first part of a cut frame: past it,
/// the rest goes anyway (a subject that does not read its runtime's stdout has other trouble).
const DRAIN_WAIT: Duration = Duration::from_secs(2);

impl Stdout {
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Writes one frame's line as `shape` says (gathered, while `coalesce` gathers).
    pub fn write_line(&mut self, line: &str, shape: &mut Shape) -> std::io::Result<()> {
        self.open()?;
        let cut = shape.cut(line).map_err(std::io::Error::other)?;
        let mut bytes = line.as_bytes().to_vec();
        bytes.extend_from_slice(shape.end());
        if let Some((left, gathered)) = &mut self.batch {
            gathered.extend_from_slice(&bytes);
            *left = left.saturating_sub(1);
            if *left == 0 {
                return self.flush_batch();
            }
            return Ok(());
        }
        match cut {
            // Each part is read alone: what came before, the first part, then the rest, each
            // read out before the next is written (else a quick writer coalesces them again).
            Some(at) => {
                shape.cut_one = true;
                wait_drained();
                write_all(&bytes[..at])?;
                wait_drained();
                write_all(&bytes[at..])?;
                wait_drained();
                Ok(())
            }
            None => write_all(&bytes),
        }
    }

    /// `coalesce`: the next `n` frames go out in one write.
    pub fn coalesce(&mut self, n: u32) {
        self.batch = (n > 0).then(|| (n, Vec::new()));
    }

    /// Writes what `coalesce` gathered so far (before the fake waits for the subject: it may be
    /// waiting for these very frames).
    pub fn flush_batch(&mut self) -> std::io::Result<()> {
        match self.batch.take() {
            Some((_, gathered)) if !gathered.is_empty() => write_all(&gathered),
            _ => Ok(()),
        }
    }

    fn open(&self) -> std::io::Result<()> {
        if self.closed {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdout was closed by the script",
            ));
        }
        Ok(())
    }

    pub fn close(&mut self) {
        if !self.closed {
            crate::process::close_stdout();
            self.closed = true;
        }
    }
}

fn write_all(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Waits until the subject has read everything written to stdout: a pipe's unread bytes
/// (`FIONREAD`, on either end), a socket's unconsumed ones (`TIOCOUTQ`, as Node's socketpair
/// stdio is). Nothing signals that moment, so it is looked at every millisecond, for at most
/// [`DRAIN_WAIT`].
fn wait_drained() {
    let stdout = std::io::stdout();
    let fd = stdout.as_fd().as_raw_fd();
    let socket = nix::sys::stat::fstat(stdout.as_fd())
        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK);
    let request = if socket {
        libc::TIOCOUTQ
    } else {
        libc::FIONREAD
    };
    let started = Instant::now();
    while started.elapsed() < DRAIN_WAIT {
        let mut unread: libc::c_int = 0;
        // SAFETY: FIONREAD/TIOCOUTQ write one int through the pointer, which is ours.
        if unsafe { libc::ioctl(fd, request, &mut unread) } != 0 || unread == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(at: &str, line: &str) -> Result<Option<usize>, StepError> {
        Shape {
            split: Some(at.into()),
            ..Shape::default()
        }
        .cut(line)
    }

    #[test]
    fn each_split_cuts_inside_what_it_names() {
        let line = r#"{"jsonrpc":"2.0","params":{"text":"héllo"}}"#;
        let at = |place| cut(place, line).unwrap().unwrap();
        assert_eq!(&line[..at("key")], r#"{"js"#);
        assert_eq!(&line[..at("string")], r#"{"jsonrpc":"2."#);
        let utf8 = at("utf8");
        assert!(!line.is_char_boundary(utf8), "inside the character");
        assert_eq!(at("newline"), line.len());
        assert_eq!(cut("utf8", r#"{"a":"plain"}"#), Ok(None), "no such place");
        assert!(cut("middle", line).is_err());
    }
}
