//! The harness end of the fakes' side channel: a Unix socket every fake process connects to.
//! Registration is synchronous — the writer is checked by the [`Gate`] through a pidfd opened
//! before the fake is acknowledged — so the ledger names each process without a pid-reuse
//! window, and holds only processes the kernel vouched for. The runtime's script comes back in
//! the acknowledgement, never through a file the subject could rewrite.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use conform_protocol::lines::Piece;
use conform_protocol::side::{FakeEvent, FakeLine, Role, Seal, ToFake};
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
    /// The ledger by what each scan asks of every other run's registrations (the ledger grows
    /// all suite long, and a run scans several times).
    index: crate::proc::side_index::Index,
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

    /// Every process registered for `run`, and the (pid, start time) of every other run's.
    pub fn registered_and_elsewhere(
        &self,
        run: &RunId,
    ) -> (Vec<Arc<Registered>>, HashSet<(i32, u64)>) {
        let shared = self.shared.lock().unwrap();
        let own = shared.ledger.get(run.as_str()).cloned().unwrap_or_default();
        let elsewhere = shared.index.elsewhere(&own);
        (own, elsewhere)
    }

    /// Which of `links` (`pipe:[…]`, `socket:[…]`: a runtime's own stdio) some other run's
    /// registered process named as its stdio.
    pub fn stdio_elsewhere(&self, run: &RunId, links: &[String]) -> Vec<bool> {
        let shared = self.shared.lock().unwrap();
        links
            .iter()
            .map(|l| shared.index.link_elsewhere(run.as_str(), l))
            .collect()
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
        let mut me: Option<Admission> = None;
        let mut lines = crate::proc::side_read::SideReader::new(read, MAX_SIDE_LINE);
        while let Some(piece) = lines.next().await {
            let line = match piece {
                Piece::Line(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Piece::TooLong { head, size } => format!(
                    "(a line of {size} bytes, over the limit of {MAX_SIDE_LINE}) {}",
                    conform_protocol::lines::show_bytes(&head, 300)
                ),
            };
            let Some(admission) = &mut me else {
                match self.admit(&line, &tx) {
                    Some(admission) => me = Some(admission),
                    None => return,
                }
                continue;
            };
            match admission.open(&line) {
                Ok(fake) if fake.run == admission.run && fake.pid == admission.pid => {
                    if let FakeEvent::LendStdout = &fake.event {
                        lend_stdout(&self.shared, &self.router, &fake, lines.take_fd());
                        let _ = tx.send(ToFake::Release {
                            name: conform_protocol::side::STDOUT_HELD.to_owned(),
                        });
                    }
                    self.router.send(&fake.run.clone(), RunEvent::Fake(fake));
                }
                Ok(fake) => {
                    // Sealed with the fake's own key: a line it cannot say is our bug.
                    let why = format!("a line naming run `{}` pid {}", fake.run, fake.pid);
                    let (run, pid) = (&admission.run, admission.pid);
                    self.router
                        .send(run, fault(run, pid, &format!("{why}: {}", excerpt(&line))));
                }
                Err(Unsealed::Unreadable(e)) => {
                    let (run, pid) = (&admission.run, admission.pid);
                    let why = format!("an unreadable side-channel line ({e})");
                    self.router
                        .send(run, fault(run, pid, &format!("{why}: {}", excerpt(&line))));
                }
                // Written by someone holding the connection who is not the fake: the subject
                // (its parent, the only one that can take a copy of it). Said once.
                Err(Unsealed::Forged(why)) if !admission.forged => {
                    admission.forged = true;
                    let run = admission.run.clone();
                    let why = format!(
                        "a line on the connection of the admitted fake (pid {}) that it did not write: {why}",
                        admission.pid
                    );
                    self.forged(Some(&run), &line, &why);
                }
                Err(Unsealed::Forged(_)) => {}
            }
        }
        if let Some(Admission { run, pid, .. }) = me {
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

    /// The connection's first line, a registration, through the gate: the admitted fake's
    /// connection from here on, or `None` (the connection ends: a forgery is reported).
    fn admit(&self, line: &str, tx: &mpsc::UnboundedSender<ToFake>) -> Option<Admission> {
        let fake = match serde_json::from_str::<FakeLine>(line) {
            Ok(fake) => fake,
            Err(e) => {
                self.forged(None, line, &format!("not a side-channel line ({e})"));
                return None;
            }
        };
        match self.gate.admit(self.peer, &fake) {
            Ok(admitted) => {
                let seal = Seal::new(&fresh_key());
                let admission = Admission {
                    run: fake.run.clone(),
                    pid: fake.pid,
                    seal: seal.clone(),
                    seq: 0,
                    forged: false,
                };
                self.register(&fake, admitted, seal, tx);
                self.router.send(&fake.run.clone(), RunEvent::Fake(fake));
                Some(admission)
            }
            Err(Refused::Forged(why)) => {
                self.forged(Some(&fake.run), line, &why);
                None
            }
            // Gone, or late: no answer, and nothing to hold against anyone.
            Err(Refused::Moot(_)) => None,
        }
    }

    /// Enters an admitted process in the ledger and answers it: the acknowledgement carries
    /// its script and the key its later lines are sealed with.
    fn register(
        &self,
        fake: &FakeLine,
        admitted: Admitted,
        seal: Seal,
        tx: &mpsc::UnboundedSender<ToFake>,
    ) {
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
        s.index.add(&entry);
        s.ledger.entry(fake.run.clone()).or_default().push(entry);
        s.writers.insert((fake.run.clone(), fake.pid), tx.clone());
        drop(s);
        let _ = tx.send(ToFake::Ack {
            script: admitted.script,
            key: Some(seal.key_hex()),
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

/// An admitted fake's connection: whose it is, its seal, and the number of its last line.
struct Admission {
    run: String,
    pid: i32,
    seal: Seal,
    seq: u64,
    /// A line it did not write was reported already.
    forged: bool,
}

/// Why a line on an admitted connection is not the fake's.
enum Unsealed {
    /// Not sealed with the connection's key, or out of its count: someone else wrote it.
    Forged(String),
    /// Sealed, but not a side-channel line: the fake's own bug.
    Unreadable(serde_json::Error),
}

impl Admission {
    /// The line, if the fake wrote it: sealed with this connection's key, next in its count.
    fn open(&mut self, line: &str) -> Result<FakeLine, Unsealed> {
        let json = self
            .seal
            .open(line)
            .map_err(|why| Unsealed::Forged(why.to_owned()))?;
        let fake: FakeLine = serde_json::from_str(&json).map_err(Unsealed::Unreadable)?;
        if fake.seq != Some(self.seq + 1) {
            return Err(Unsealed::Forged(format!(
                "line {:?} of its count where {} was next",
                fake.seq,
                self.seq + 1
            )));
        }
        self.seq += 1;
        Ok(fake)
    }
}

/// A key for one connection's seal, from the kernel's random source.
fn fresh_key() -> [u8; 32] {
    let mut key = [0; 32];
    getrandom::fill(&mut key).expect("the kernel's random source");
    key
}

fn excerpt(line: &str) -> String {
    conform_protocol::lines::excerpt(line, 300)
}

fn fault(run: &str, pid: i32, detail: &str) -> RunEvent {
    RunEvent::Fake(FakeLine {
        seq: None,
        run: run.to_owned(),
        pid,
        event: FakeEvent::Fault {
            detail: detail.to_owned(),
        },
    })
}

/// A fake asked the harness to hold its stdout open from outside the subject's tree (a writer
/// the subject cannot end), and sent it along. Where the runtime is already gone there is
/// nothing to hold: the descriptor is let go, and what the run shows of that is the run's own.
fn lend_stdout(shared: &Mutex<Shared>, router: &Router, fake: &FakeLine, fd: Option<OwnedFd>) {
    let Some(fd) = fd else {
        let detail = "asked the harness to hold its stdout but sent no descriptor with it";
        return router.send(&fake.run, fault(&fake.run, fake.pid, detail));
    };
    let mut s = shared.lock().unwrap();
    let alive = s
        .ledger
        .get(&fake.run)
        .and_then(|ps| ps.iter().find(|p| p.pid == fake.pid))
        .is_some_and(|p| pids::alive(p.pid, p.start_time));
    if alive {
        s.held.entry(fake.run.clone()).or_default().push(fd);
    }
}
