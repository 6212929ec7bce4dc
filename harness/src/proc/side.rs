//! The harness end of the fakes' side channel: a Unix socket every fake process connects to.
//! Registration is synchronous — the writer is checked by the [`Gate`] through a pidfd opened
//! before the fake is acknowledged — so the ledger names each process without a pid-reuse
//! window, and holds only processes the kernel vouched for. The runtime's script comes back in
//! the acknowledgement, never through a file the subject could rewrite.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use conform_protocol::lines::Piece;
use conform_protocol::side::{FakeEvent, FakeLine, Role, ToFake};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixListener;
use tokio::sync::mpsc;

use crate::proc::pids;
use crate::proc::router::{Router, RunEvent};
use crate::proc::run_id::RunId;
use crate::proc::side_gate::{Admitted, Gate, Refused};

/// One registered fake process.
#[derive(Debug)]
pub struct Registered {
    pub run: String,
    pub pid: i32,
    pub role: Role,
    pub start_time: u64,
    pub pidfd: Option<OwnedFd>,
    /// Its stdin, stdout and stderr as it registered them (`pipe:[…]`, `socket:[…]`, …).
    pub stdio: Vec<String>,
}

#[derive(Default)]
struct Shared {
    ledger: HashMap<String, Vec<Arc<Registered>>>,
    /// Runtimes' stdouts the harness holds open for a run ([`FakeEvent::LendStdout`]).
    held: HashMap<String, Vec<OwnedFd>>,
    writers: HashMap<(String, i32), mpsc::UnboundedSender<ToFake>>,
}

pub struct SideServer {
    path: PathBuf,
    shared: Arc<Mutex<Shared>>,
    gate: Arc<Gate>,
    task: tokio::task::JoinHandle<()>,
    /// The short folder holding the socket when the work folder was too deep (removed on drop).
    _short_dir: Option<tempfile::TempDir>,
}

/// Longest side-channel line the harness reads whole. Fakes report frames the subject sent
/// them, so a subject's runaway frame must not become a runaway ledger line.
pub const MAX_SIDE_LINE: usize = 4 << 20;

/// A Unix socket path is at most 107 bytes (`sun_path`); past it `bind` fails.
const SUN_PATH_MAX: usize = 107;

impl SideServer {
    /// Binds the side channel in `dir`, or — when `dir` is too deep for a socket path (a long
    /// `TMPDIR`) — in a short private folder under `/tmp`, so no temp folder can make it fail.
    /// Only processes running `fake_exe` register.
    pub fn bind_in(
        dir: &Path,
        router: Arc<Router>,
        fake_exe: &Path,
    ) -> std::io::Result<SideServer> {
        let gate = Arc::new(Gate::new(fake_exe));
        let path = dir.join("side.sock");
        if path.as_os_str().len() <= SUN_PATH_MAX {
            return Self::bind(&path, router, gate, None);
        }
        let short = tempfile::Builder::new()
            .prefix("conform-")
            .tempdir_in("/tmp")
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "the side-channel socket path {} is over {SUN_PATH_MAX} bytes and no short folder could be made in /tmp: {e}",
                        path.display()
                    ),
                )
            })?;
        Self::bind(&short.path().join("side.sock"), router, gate, Some(short))
    }

    fn bind(
        path: &Path,
        router: Arc<Router>,
        gate: Arc<Gate>,
        short_dir: Option<tempfile::TempDir>,
    ) -> std::io::Result<SideServer> {
        let listener = UnixListener::bind(path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot bind the side-channel socket {}: {e}",
                    path.display()
                ),
            )
        })?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let accept_shared = shared.clone();
        let accept_gate = gate.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let peer = stream.peer_cred().ok().and_then(|c| c.pid());
                let conn = Conn {
                    shared: accept_shared.clone(),
                    router: router.clone(),
                    gate: accept_gate.clone(),
                    peer,
                };
                tokio::spawn(conn.serve(stream));
            }
        });
        Ok(SideServer {
            path: path.to_owned(),
            shared,
            gate,
            task,
            _short_dir: short_dir,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every process registered for `run` so far.
    pub fn ledger(&self, run: &RunId) -> Vec<Arc<Registered>> {
        self.shared
            .lock()
            .unwrap()
            .ledger
            .get(run.as_str())
            .cloned()
            .unwrap_or_default()
    }

    /// What the harness asks the subject to start for `run`: the runtime's arguments after
    /// the executable, and the script handed to the fake that registers with them.
    pub fn issue(&self, run: &RunId, args: Vec<String>, script: Option<serde_json::Value>) {
        self.gate.issue(run, args, script);
    }

    /// The run is over: nothing more registers for it, and the stdouts held for it close
    /// (their readers may see EOF now).
    pub fn run_over(&self, run: &RunId) {
        self.gate.withdraw(run);
        self.shared.lock().unwrap().held.remove(run.as_str());
    }

    /// Every process registered, for the end-of-suite sweep.
    pub fn all(&self) -> Vec<Arc<Registered>> {
        let shared = self.shared.lock().unwrap();
        shared.ledger.values().flatten().cloned().collect()
    }

    pub fn release(&self, run: &RunId, pid: i32, name: &str) {
        if let Some(w) = self
            .shared
            .lock()
            .unwrap()
            .writers
            .get(&(run.to_string(), pid))
        {
            let _ = w.send(ToFake::Release {
                name: name.to_owned(),
            });
        }
    }
}

impl Drop for SideServer {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Tells the process's run when the kernel says it is gone (its pidfd became readable): ground
/// truth for timing, whether it exited, was killed, or could not say so itself (SIGKILL).
fn watch_exit(process: Arc<Registered>, router: Arc<Router>) {
    tokio::spawn(async move {
        let Some(fd) = &process.pidfd else { return };
        // Every process of a run is gone or killed by the run's end; this bound only keeps a
        // task from outliving an unkillable stray forever.
        if pids::wait_exit(fd, std::time::Duration::from_secs(24 * 3600)).await {
            router.send(&process.run, RunEvent::ProcessGone { pid: process.pid });
        }
    });
}

/// One side-channel connection: its writer as the kernel names it, and where its lines go.
struct Conn {
    shared: Arc<Mutex<Shared>>,
    router: Arc<Router>,
    gate: Arc<Gate>,
    peer: Option<i32>,
}

impl Conn {
    async fn serve(self, stream: tokio::net::UnixStream) {
        let (read, mut write) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<ToFake>();
        let writer = tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                let mut line = serde_json::to_string(&msg).expect("serialises");
                line.push('\n');
                if write.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let mut me: Option<(String, i32)> = None;
        let mut lines = crate::proc::subject_process::ByteLines::new(read, MAX_SIDE_LINE);
        while let Some(piece) = lines.next().await {
            let line = match piece {
                Piece::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Piece::TooLong { head, size } => format!(
                    "(a line of {size} bytes, over the limit of {MAX_SIDE_LINE}) {}",
                    conform_protocol::lines::show_bytes(&head, 300)
                ),
            };
            let parsed = serde_json::from_str::<FakeLine>(&line);
            match (&me, parsed) {
                (None, Ok(fake)) => match self.gate.admit(self.peer, &fake) {
                    Ok(admitted) => {
                        me = Some((fake.run.clone(), fake.pid));
                        self.register(&fake, admitted, &tx);
                        self.router.send(&fake.run.clone(), RunEvent::Fake(fake));
                    }
                    Err(Refused::Forged(why)) => {
                        return self.forged(Some(&fake.run), &line, &why);
                    }
                    // Gone, or late: no answer, and nothing to hold against anyone.
                    Err(Refused::Moot(_)) => return,
                },
                (None, Err(e)) => {
                    return self.forged(None, &line, &format!("not a side-channel line ({e})"));
                }
                (Some((run, pid)), Ok(fake)) if fake.run == *run && fake.pid == *pid => {
                    if let FakeEvent::LendStdout = &fake.event {
                        lend_stdout(&self.shared, &self.router, &fake);
                        let _ = tx.send(ToFake::Release {
                            name: conform_protocol::side::STDOUT_HELD.to_owned(),
                        });
                    }
                    self.router.send(&fake.run.clone(), RunEvent::Fake(fake));
                }
                (Some((run, pid)), parsed) => {
                    // The writer is a fake the gate let in: a line it cannot say is our bug.
                    let why = match parsed {
                        Ok(f) => format!("a line naming run `{}` pid {}", f.run, f.pid),
                        Err(e) => format!("an unreadable side-channel line ({e})"),
                    };
                    self.router
                        .send(run, fault(run, *pid, &format!("{why}: {}", excerpt(&line))));
                }
            }
        }
        if let Some((run, pid)) = me {
            self.shared
                .lock()
                .unwrap()
                .writers
                .remove(&(run.clone(), pid));
            self.router.send(&run, RunEvent::SideClosed { pid });
        }
        drop(tx);
        let _ = writer.await;
    }

    /// Enters an admitted process in the ledger and answers it: the acknowledgement carries
    /// its script.
    fn register(&self, fake: &FakeLine, admitted: Admitted, tx: &mpsc::UnboundedSender<ToFake>) {
        let FakeEvent::Register {
            role,
            start_time,
            stdio,
            ..
        } = &fake.event
        else {
            unreachable!("the gate admits registrations only")
        };
        let entry = Arc::new(Registered {
            run: fake.run.clone(),
            pid: fake.pid,
            role: *role,
            start_time: *start_time,
            pidfd: Some(admitted.pidfd),
            stdio: stdio.clone(),
        });
        watch_exit(entry.clone(), self.router.clone());
        let mut s = self.shared.lock().unwrap();
        s.ledger.entry(fake.run.clone()).or_default().push(entry);
        s.writers.insert((fake.run.clone(), fake.pid), tx.clone());
        drop(s);
        let _ = tx.send(ToFake::Ack {
            script: admitted.script,
        });
    }

    /// A line from a writer the gate refused: the subject's protocol failure (of the run it
    /// names, else of the suite), never believed, never answered — the connection closes.
    fn forged(&self, run: Option<&str>, line: &str, why: &str) {
        let error = format!("a forged side-channel line: {why}");
        let shown = excerpt(line);
        match run {
            Some(run) => {
                let event = RunEvent::SubjectInvalid {
                    line: shown.clone(),
                    error,
                };
                self.router.from_subject(run, event, &shown);
            }
            None => self.router.unattributed(&shown, &error),
        }
    }
}

fn excerpt(line: &str) -> String {
    conform_protocol::lines::excerpt(line, 300)
}

fn fault(run: &str, pid: i32, detail: &str) -> RunEvent {
    RunEvent::Fake(FakeLine {
        run: run.to_owned(),
        pid,
        event: FakeEvent::Fault {
            detail: detail.to_owned(),
        },
    })
}

/// A fake asked the harness to hold its stdout open from outside the subject's tree (a writer
/// the subject cannot end). Where the runtime is already gone there is nothing to hold; where
/// the kernel will not hand over its stdout, the case does not apply to this subject.
fn lend_stdout(shared: &Mutex<Shared>, router: &Router, fake: &FakeLine) {
    let registered = shared
        .lock()
        .unwrap()
        .ledger
        .get(&fake.run)
        .and_then(|ps| ps.iter().find(|p| p.pid == fake.pid).cloned());
    let Some((process, pidfd)) = registered
        .as_ref()
        .and_then(|p| Some((p, p.pidfd.as_ref()?)))
    else {
        return;
    };
    match hold_stdout(pidfd) {
        Ok(fd) => {
            let mut s = shared.lock().unwrap();
            s.held.entry(fake.run.clone()).or_default().push(fd);
        }
        // The runtime ended before the line was read (a subject that crashed, a loaded
        // machine): ESRCH, or EBADF from a zombie whose files are gone. What the run shows of
        // that is the run's own, never a refusal or a fault.
        Err(_) if !pids::alive(process.pid, process.start_time) => {}
        Err(e) => router.send(
            &fake.run,
            RunEvent::NotApplicable {
                reason: format!(
                    "the harness could not hold the runtime's stdout from outside (pid {}: {e})",
                    fake.pid
                ),
            },
        ),
    }
}

/// Takes a copy of the process's stdout, whatever it is — a pipe, or a socket as Node's and
/// libuv's child stdio are (opening `/proc/<pid>/fd/1` fails with ENXIO on a socket).
fn hold_stdout(pidfd: &OwnedFd) -> std::io::Result<OwnedFd> {
    rustix::process::pidfd_getfd(pidfd, 1, rustix::process::PidfdGetfdFlags::empty())
        .map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};

    use super::*;

    /// A child (`sleep`) whose stdout is `stdout`, its pidfd, and the child to kill.
    fn child_with_stdout(stdout: Stdio) -> (std::process::Child, OwnedFd) {
        let child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .stdout(stdout)
            .spawn()
            .unwrap();
        let pidfd = pids::pidfd_open(child.id() as i32).unwrap();
        (child, pidfd)
    }

    fn link(fd: &OwnedFd) -> String {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_socket_stdout_is_held_as_a_pipe_is() {
        // Node's child stdio: a socketpair. Opening it through /proc fails (ENXIO)…
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (mut child, pidfd) = child_with_stdout(Stdio::from(OwnedFd::from(theirs)));
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/{}/fd/1", child.id()));
        assert_eq!(
            opened.unwrap_err().raw_os_error(),
            Some(nix::libc::ENXIO),
            "the old way"
        );
        // …and holding it through the pidfd gives the child's own end.
        let held = hold_stdout(&pidfd).unwrap();
        let child_end = std::fs::read_link(format!("/proc/{}/fd/1", child.id())).unwrap();
        assert_eq!(link(&held), child_end.to_string_lossy());
        assert!(link(&held).starts_with("socket:"));
        drop(ours);
        child.kill().unwrap();
        child.wait().unwrap();
        // A runtime already gone has nothing to hold, and the caller lets that pass.
        assert!(hold_stdout(&pidfd).is_err());
        assert!(!pids::alive(child.id() as i32, 0), "reaped: gone");
    }

    #[test]
    fn a_zombie_has_no_stdout_to_hold_and_counts_as_gone() {
        let (mut child, pidfd) = child_with_stdout(Stdio::piped());
        let pid = child.id() as i32;
        let start = pids::stat(pid).unwrap().start_time;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        // Exited, not yet reaped: its files are gone, and it is not alive.
        assert!(pids::wait_exit_blocking(&pidfd, None));
        assert!(hold_stdout(&pidfd).is_err());
        assert!(!pids::alive(pid, start));
        child.wait().unwrap();
    }

    #[test]
    fn a_pipe_stdout_is_held() {
        let (mut child, pidfd) = child_with_stdout(Stdio::piped());
        let held = hold_stdout(&pidfd).unwrap();
        assert!(link(&held).starts_with("pipe:"));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
