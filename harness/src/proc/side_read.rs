//! Reading one side-channel connection: its lines, and the descriptors a fake sends with them
//! (`SCM_RIGHTS`: a runtime lends the harness its stdout that way, which needs no right over
//! the process — a runtime is non-dumpable, so `pidfd_getfd` is for root alone).

use std::collections::VecDeque;
use std::io::IoSliceMut;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use conform_protocol::lines::{LineSplitter, Piece};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use tokio::io::Interest;
use tokio::net::unix::OwnedReadHalf;

/// How many descriptors one read takes at the most (a fake sends one at a time).
const FDS_PER_READ: usize = 4;

/// What one read takes at the most. A fake's lines are mostly well under 4 KiB; a connection is
/// open for each process of every run in flight, and each buffer is touched whole when made.
const READ_BYTES: usize = 16 * 1024;

pub struct SideReader {
    half: OwnedReadHalf,
    lines: LineSplitter,
    fds: VecDeque<OwnedFd>,
    buf: Vec<u8>,
    done: bool,
}

impl SideReader {
    pub fn new(half: OwnedReadHalf, max_line: usize) -> SideReader {
        SideReader {
            half,
            lines: LineSplitter::new(max_line),
            fds: VecDeque::new(),
            buf: vec![0; READ_BYTES],
            done: false,
        }
    }

    /// The next line; `None` at EOF (a read error counts as EOF: the writer is gone).
    pub async fn next(&mut self) -> Option<Piece> {
        loop {
            if let Some(piece) = self.lines.pop() {
                return Some(piece);
            }
            if self.done {
                return None;
            }
            if self.half.readable().await.is_err() {
                self.finish();
                continue;
            }
            let (buf, fds) = (&mut self.buf, &mut self.fds);
            match self
                .half
                .as_ref()
                .try_io(Interest::READABLE, || receive(&self.half, buf, fds))
            {
                Ok(0) => self.finish(),
                Ok(n) => self.lines.push(&self.buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => self.finish(),
            }
        }
    }

    /// The oldest descriptor received and not yet taken: a line that says it came with one
    /// takes it once it is read whole (the descriptor rode with the line's first bytes).
    pub fn take_fd(&mut self) -> Option<OwnedFd> {
        self.fds.pop_front()
    }

    fn finish(&mut self) {
        self.lines.finish();
        self.done = true;
    }
}

/// One `recvmsg`: the bytes into `buf`, any descriptors (close-on-exec) onto `fds`.
fn receive(
    half: &OwnedReadHalf,
    buf: &mut [u8],
    fds: &mut VecDeque<OwnedFd>,
) -> std::io::Result<usize> {
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; FDS_PER_READ]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        half.as_ref().as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .map_err(std::io::Error::from)?;
    for cmsg in msg.cmsgs().map_err(std::io::Error::from)? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            // SAFETY: the kernel just installed these descriptors in this process for us; no
            // one else owns them.
            fds.extend(
                received
                    .into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    Ok(msg.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_descriptor_sent_with_a_line_is_taken_with_it() {
        use nix::sys::socket::{ControlMessage, sendmsg};
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        theirs.set_nonblocking(true).unwrap();
        let theirs = tokio::net::UnixStream::from_std(theirs).unwrap();
        let (read, _write) = theirs.into_split();
        let mut reader = SideReader::new(read, 1024);
        let (pipe_read, pipe_write) = nix::unistd::pipe().unwrap();
        let fds = [pipe_write.as_raw_fd()];
        let iov = [std::io::IoSlice::new(b"{\"lend\":1}\n{\"next\":2}\n")];
        let cmsg = [ControlMessage::ScmRights(&fds)];
        sendmsg::<()>(ours.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None).unwrap();
        drop(pipe_write);
        drop(ours);
        assert!(matches!(reader.next().await, Some(Piece::Line(l)) if l == b"{\"lend\":1}"));
        let held = reader.take_fd().expect("the descriptor came with the line");
        assert!(reader.take_fd().is_none());
        assert!(matches!(reader.next().await, Some(Piece::Line(l)) if l == b"{\"next\":2}"));
        assert!(reader.next().await.is_none(), "EOF");
        // The copy we hold is the pipe's write end: the reader sees no EOF while it is held.
        nix::unistd::write(&held, b"x").unwrap();
        let mut got = [0u8; 1];
        assert_eq!(nix::unistd::read(&pipe_read, &mut got).unwrap(), 1);
    }
}
