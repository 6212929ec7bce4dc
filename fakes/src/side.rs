//! Side-channel client: JSON lines of [`FakeLine`] to the harness, [`ToFake`] lines back.
//!
//! Writes are synchronous and complete (`write_all` of one whole line under a lock): once
//! [`Side::send`] returns, the line is in the kernel's socket buffer, so it survives an
//! `exit()` or a fatal signal raised right after — the harness relies on `Exit` arriving
//! before the socket closes. A broken socket is noted once on stderr and the script goes on.
//!
//! Every line after the registration is numbered and sealed with the key the harness's
//! acknowledgement carried ([`Seal`]), and the process makes itself non-dumpable once it has
//! the key: a parent that is not root can then neither read the key from its memory nor take
//! a copy of this connection to write lines of its own.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;

use conform_protocol::side::{FakeEvent, FakeLine, Seal, ToFake};
use tokio::sync::mpsc;

use crate::error::{FAULT_EXIT, FakeError};

pub struct Side {
    run: String,
    pid: i32,
    out: Mutex<Out>,
}

struct Out {
    /// `None` once the socket broke.
    stream: Option<UnixStream>,
    /// The key of the acknowledgement and the last line's number (none before the
    /// acknowledgement, and none from a harness that gives no key: a fake's own tests).
    seal: Option<(Seal, u64)>,
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
            out: Mutex::new(Out {
                stream: Some(stream),
                seal: None,
            }),
        };
        Ok((side, rx))
    }

    /// Sends one event, numbered and sealed once the harness gave a key. Never fails: a broken
    /// socket is reported on stderr once.
    pub fn send(&self, event: FakeEvent) {
        self.send_with(event, None);
    }

    /// Sends [`FakeEvent::LendStdout`] with this process's stdout itself (`SCM_RIGHTS`): the
    /// harness holds it from outside the subject's tree without any right over this process.
    pub fn lend_stdout(&self) {
        self.send_with(FakeEvent::LendStdout, Some(1));
    }

    fn send_with(&self, event: FakeEvent, fd: Option<std::os::fd::RawFd>) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let seq = out.seal.as_mut().map(|(_, n)| {
            *n += 1;
            *n
        });
        let line = FakeLine {
            run: self.run.clone(),
            pid: self.pid,
            event,
            seq,
        };
        let json = serde_json::to_string(&line).expect("side lines always serialize");
        let mut text = match &out.seal {
            Some((seal, _)) => seal.seal(&json),
            None => json,
        };
        text.push('\n');
        if let Some(stream) = out.stream.as_mut()
            && let Err(e) = write_line(stream, text.as_bytes(), fd)
        {
            eprintln!("fake: side channel broke ({e}); continuing without it");
            out.stream = None;
        }
    }

    /// Seals every later line with the acknowledgement's key — a runtime after sealing itself
    /// off from its parent. (A grandchild stays as open as a real runtime's helpers are: the
    /// subject reads their environment to find what its run started.)
    fn take_key(&self, key: &str, seal_off: bool) {
        if seal_off {
            non_dumpable();
        }
        match Seal::from_hex(key) {
            Some(seal) => self.out.lock().unwrap_or_else(|e| e.into_inner()).seal = Some((seal, 0)),
            None => eprintln!("fake: the harness's key is not hex; lines go unsealed"),
        }
    }
}

/// Writes one whole line; a descriptor rides with its first bytes.
fn write_line(
    stream: &mut UnixStream,
    line: &[u8],
    fd: Option<std::os::fd::RawFd>,
) -> std::io::Result<()> {
    use nix::sys::socket::{ControlMessage, MsgFlags, sendmsg};
    use std::os::fd::AsRawFd;
    let Some(fd) = fd else {
        return stream.write_all(line);
    };
    let fds = [fd];
    let sent = loop {
        let iov = [std::io::IoSlice::new(line)];
        let cmsg = [ControlMessage::ScmRights(&fds)];
        match sendmsg::<()>(stream.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None) {
            Err(nix::errno::Errno::EINTR) => continue,
            other => break other.map_err(std::io::Error::from)?,
        }
    };
    stream.write_all(&line[sent..])
}

/// No core dump, no ptrace attach, no `pidfd_getfd` and no `/proc/<pid>/mem` for anyone
/// without `CAP_SYS_PTRACE`: what a non-root parent could use to read the key or take the
/// connection. (Root can; docs/subject-protocol.md, the threat model.)
fn non_dumpable() {
    // SAFETY: PR_SET_DUMPABLE takes an integer argument and touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        eprintln!(
            "fake: cannot make the process non-dumpable: {}",
            std::io::Error::last_os_error()
        );
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
/// writing meanwhile); takes the key the acknowledgement carried and returns its script. Send
/// nothing between the registration and this: the harness takes only sealed lines after it. A
/// side channel that closes first — the harness did not vouch for this process — is the end of
/// this process.
pub async fn wait_for_ack(
    side: &Side,
    role: conform_protocol::side::Role,
    mut control: mpsc::UnboundedReceiver<ToFake>,
) -> (mpsc::UnboundedReceiver<ToFake>, Option<serde_json::Value>) {
    loop {
        match control.recv().await {
            Some(ToFake::Ack { script, key }) => {
                if let Some(key) = key {
                    side.take_key(&key, role == conform_protocol::side::Role::Runtime);
                }
                return (control, script);
            }
            Some(other) => eprintln!("fake: {other:?} before the registration ack; ignored"),
            None => {
                eprintln!("fake: side channel closed before the registration ack");
                std::process::exit(FAULT_EXIT);
            }
        }
    }
}
