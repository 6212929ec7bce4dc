//! The harness end of the fakes' side channel: a Unix socket every fake process connects to.
//! Registration is synchronous — a pidfd is opened before the fake is acknowledged — so the
//! ledger names each process without a pid-reuse window.

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
    pub fn bind_in(dir: &Path, router: Arc<Router>) -> std::io::Result<SideServer> {
        let path = dir.join("side.sock");
        if path.as_os_str().len() <= SUN_PATH_MAX {
            return Self::bind(&path, router, None);
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
        Self::bind(&short.path().join("side.sock"), router, Some(short))
    }

    fn bind(
        path: &Path,
        router: Arc<Router>,
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
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, accept_shared.clone(), router.clone()));
            }
        });
        Ok(SideServer {
            path: path.to_owned(),
            shared,
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

    /// Closes the stdouts held for `run` (the run is over: their readers may see EOF now).
    pub fn release_held(&self, run: &RunId) {
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

async fn serve(stream: tokio::net::UnixStream, shared: Arc<Mutex<Shared>>, router: Arc<Router>) {
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
    let mut keys = Vec::new();
    let mut lines = crate::proc::subject_process::ByteLines::new(read, MAX_SIDE_LINE);
    while let Some(piece) = lines.next().await {
        let line = match piece {
            Piece::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Piece::TooLong { head, size } => format!(
                "(a line of {size} bytes, over the limit of {MAX_SIDE_LINE}) {}",
                conform_protocol::lines::show_bytes(&head, 300)
            ),
        };
        let fake: FakeLine = match serde_json::from_str(&line) {
            Ok(f) => f,
            Err(e) => {
                // A fake that cannot speak its own side channel is the harness's bug; the run
                // cannot be attributed, so tell every open run.
                for run in router.runs() {
                    router.send(
                        &run,
                        RunEvent::Fake(FakeLine {
                            run: run.to_string(),
                            pid: 0,
                            event: FakeEvent::Fault {
                                detail: format!(
                                    "unreadable side-channel line ({e}): {}",
                                    conform_protocol::lines::excerpt(&line, 300)
                                ),
                            },
                        }),
                    );
                }
                continue;
            }
        };
        if let FakeEvent::Register {
            role,
            start_time,
            stdio,
            ..
        } = &fake.event
        {
            let entry = Arc::new(Registered {
                run: fake.run.clone(),
                pid: fake.pid,
                role: *role,
                start_time: *start_time,
                pidfd: pids::pidfd_open(fake.pid).ok(),
                stdio: stdio.clone(),
            });
            watch_exit(entry.clone(), router.clone());
            let mut s = shared.lock().unwrap();
            s.ledger.entry(fake.run.clone()).or_default().push(entry);
            s.writers.insert((fake.run.clone(), fake.pid), tx.clone());
            keys.push((fake.run.clone(), fake.pid));
            drop(s);
            let _ = tx.send(ToFake::Ack);
        }
        if let FakeEvent::LendStdout = &fake.event {
            lend_stdout(&shared, &router, &fake);
            let _ = tx.send(ToFake::Release {
                name: conform_protocol::side::STDOUT_HELD.to_owned(),
            });
        }
        router.send(&fake.run.clone(), RunEvent::Fake(fake));
    }
    {
        let mut s = shared.lock().unwrap();
        for key in &keys {
            s.writers.remove(key);
        }
    }
    for (run, pid) in keys {
        router.send(&run, RunEvent::SideClosed { pid });
    }
    drop(tx);
    let _ = writer.await;
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
    let Some(pidfd) = registered.as_ref().and_then(|p| p.pidfd.as_ref()) else {
        return;
    };
    match hold_stdout(pidfd) {
        Ok(fd) => {
            let mut s = shared.lock().unwrap();
            s.held.entry(fake.run.clone()).or_default().push(fd);
        }
        // The runtime ended before the line was read (a subject that crashed, a loaded
        // machine): what the run shows of that is the run's own.
        Err(e) if e.raw_os_error() == Some(nix::libc::ESRCH) => {}
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
        // A runtime already gone has nothing to hold: ESRCH, which the caller lets pass.
        let gone = hold_stdout(&pidfd).unwrap_err();
        assert_eq!(gone.raw_os_error(), Some(nix::libc::ESRCH), "{gone}");
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
