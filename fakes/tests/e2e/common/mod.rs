//! Test driver: a side-channel server plus a fake child (`fake-acp`, `fake-dsh-sdk`,
//! `fake-codex`) driven
//! like a client of its protocol.
//! Every wait is on a pipe or the side channel (with a generous deadline so a broken fake
//! fails the test instead of hanging it). Everything spawned is killed and reaped on drop,
//! grandchildren included (by the pid they registered with).

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conform_protocol::side::{FakeEvent, FakeLine, Role};
use serde_json::{Value, json};

pub const DEADLINE: Duration = Duration::from_secs(20);

type Writers = Arc<Mutex<HashMap<i32, UnixStream>>>;

enum SideMsg {
    Line(FakeLine),
    /// A fake's connection closed (its registered pid, if it registered).
    Closed(Option<i32>),
}

pub struct Fake {
    /// The script's protocol (which binary runs, which schema `finish` checks against).
    pub protocol: &'static str,
    /// The script's `product_version` (`None`: the protocol's default).
    pub product_version: Option<&'static str>,
    pub dir: tempfile::TempDir,
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    stdout_fd: i32,
    out: Receiver<Option<String>>,
    side: Receiver<SideMsg>,
    /// Every side line received so far, in order.
    pub log: Vec<FakeLine>,
    closed: HashSet<i32>,
    grandchildren: Vec<i32>,
    _turn: Turn,
    writers: Writers,
    exited: Option<ExitStatus>,
}

/// An ACP fake with extra command-line arguments.
pub fn fake_with_args(steps: Value, extra: impl FnOnce(&mut Command, &PathBuf)) -> Fake {
    fake_full("acp", None, steps, true, extra)
}

/// An ACP fake whose registration the test acknowledges itself (`Fake::ack`).
pub fn fake_unacked(steps: Value) -> Fake {
    fake_full("acp", None, steps, false, |_, _| {})
}

/// A fake for `protocol` (`acp`, `dsh-sdk`, `codex`) running these steps.
pub fn fake_for(protocol: &'static str, steps: Value) -> Fake {
    fake_full(protocol, None, steps, true, |_, _| {})
}

/// A Claude Code fake running these steps, started with the flags the Agent SDK gives its CLI.
pub fn claude_fake(steps: Value) -> Fake {
    fake_full("claude-code", None, steps, true, |cmd, _| {
        cmd.args([
            "--",
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ]);
    })
}

/// A fake for `protocol` speaking this product version (`None`: no `product_version` key).
pub fn fake_versioned(
    protocol: &'static str,
    product_version: Option<&'static str>,
    steps: Value,
) -> Fake {
    fake_full(protocol, product_version, steps, true, |_, _| {})
}

/// The binary speaking `protocol`.
fn binary(protocol: &str) -> &'static str {
    match protocol {
        "acp" => env!("CARGO_BIN_EXE_fake-acp"),
        "dsh-sdk" => env!("CARGO_BIN_EXE_fake-dsh-sdk"),
        "codex" => env!("CARGO_BIN_EXE_fake-codex"),
        "claude-code" => env!("CARGO_BIN_EXE_fake-claude"),
        other => panic!("no fake binary for protocol {other:?}"),
    }
}

/// Tests driving fakes at once: two, as when each protocol's tests were a binary of their own
/// on two threads. The signal tests race a signal against stdin by design, and with eight
/// tests' fakes in flight "stdin closed and SIGTERM at once" was read as SIGTERM first (twice in
/// a dozen runs; not yet explained by the fake's code).
const TESTS_AT_ONCE: usize = 2;

static DRIVING: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static TURN_FREED: std::sync::Condvar = std::sync::Condvar::new();

thread_local! {
    /// The fakes this test's thread holds: its turn is taken with the first, given back with
    /// the last.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A test's turn among [`TESTS_AT_ONCE`], held by each of its fakes.
struct Turn;

impl Turn {
    fn take() -> Turn {
        if HELD.get() == 0 {
            let mut n = DRIVING.lock().unwrap_or_else(|e| e.into_inner());
            while *n >= TESTS_AT_ONCE {
                n = TURN_FREED.wait(n).unwrap_or_else(|e| e.into_inner());
            }
            *n += 1;
        }
        HELD.set(HELD.get() + 1);
        Turn
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        HELD.set(HELD.get().saturating_sub(1));
        if HELD.get() == 0 {
            *DRIVING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            TURN_FREED.notify_all();
        }
    }
}

/// Spawns share it; closing a fake's stdin holds it alone ([`Fake::close_stdin`]). `spawn`
/// returns once the child has exec'd, so no fork holds a copy of a pipe outside it.
static SPAWNING: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn fake_full(
    protocol: &'static str,
    product_version: Option<&'static str>,
    steps: Value,
    auto_ack: bool,
    extra: impl FnOnce(&mut Command, &PathBuf),
) -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("side.sock");
    let script = dir.path().join("script.json");
    let mut doc = json!({"protocol": protocol, "steps": steps});
    if let Some(v) = product_version {
        doc["product_version"] = v.into();
    }
    std::fs::write(&script, serde_json::to_string(&doc).unwrap()).unwrap();
    let listener = UnixListener::bind(&sock).unwrap();
    let (tx, side) = channel();
    let writers = Writers::default();
    let w = writers.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            let (tx, w) = (tx.clone(), w.clone());
            std::thread::spawn(move || serve(conn, tx, w, auto_ack));
        }
    });
    let mut cmd = Command::new(binary(protocol));
    cmd.arg("--script").arg(&script).arg("--side").arg(&sock);
    cmd.args(["--run", "run-1"]);
    extra(&mut cmd, &script);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let turn = Turn::take();
    let mut child = {
        let _spawning = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
        cmd.spawn().unwrap()
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().unwrap();
    let stdout_fd = stdout.as_raw_fd();
    let (out_tx, out) = channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            let line = lines.next().and_then(Result::ok);
            let eof = line.is_none();
            if out_tx.send(line).is_err() || eof {
                return;
            }
        }
    });
    Fake {
        protocol,
        product_version,
        dir,
        child,
        stdin,
        stdout_fd,
        out,
        side,
        log: Vec::new(),
        closed: HashSet::new(),
        grandchildren: Vec::new(),
        _turn: turn,
        writers,
        exited: None,
    }
}

/// An ACP fake.
pub fn fake(steps: Value) -> Fake {
    fake_with_args(steps, |_, _| {})
}

/// One fake connection: auto-acks its registration, forwards its lines.
fn serve(conn: UnixStream, tx: Sender<SideMsg>, writers: Writers, auto_ack: bool) {
    let mut writer = conn.try_clone().unwrap();
    let mut pid = None;
    for line in BufReader::new(conn).lines() {
        let Ok(line) = line else { break };
        let parsed: FakeLine =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad side line {line:?}: {e}"));
        let register = matches!(parsed.event, FakeEvent::Register { .. });
        if register {
            pid = Some(parsed.pid);
            writers
                .lock()
                .unwrap()
                .insert(parsed.pid, conn_clone(&writer));
        }
        if tx.send(SideMsg::Line(parsed)).is_err() {
            return;
        }
        if register && auto_ack {
            // The fake blocks until this ack.
            let _ = writer.write_all(b"{\"do\":\"ack\"}\n");
        }
    }
    let _ = tx.send(SideMsg::Closed(pid));
}

impl Fake {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn send(&mut self, frame: Value) {
        self.send_line(&frame.to_string());
    }

    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes the fake's stdin: it reads EOF at once. Another test's spawn in flight would
    /// hold a copy of the pipe's write end from its fork to its exec, and EOF would come only
    /// then — after a signal sent "at once" with the close — so no spawn is let in meanwhile.
    pub fn close_stdin(&mut self) {
        let _closing = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
        self.stdin.take();
    }

    /// The next frame the fake wrote.
    pub fn recv(&mut self) -> Value {
        match self.out.recv_timeout(DEADLINE) {
            Ok(Some(line)) => serde_json::from_str(&line).unwrap_or(Value::String(line)),
            Ok(None) => panic!("fake stdout reached EOF; side log: {:#?}", self.log),
            Err(e) => panic!("no frame from the fake ({e}); side log: {:#?}", self.log),
        }
    }

    /// True when stdout reaches EOF next (panics on a frame).
    pub fn stdout_eof(&mut self) -> bool {
        match self.out.recv_timeout(DEADLINE) {
            Ok(None) => true,
            Ok(Some(line)) => panic!("expected stdout EOF, got {line}"),
            Err(e) => panic!("stdout neither closed nor wrote ({e})"),
        }
    }

    /// Asserts nothing appears on stdout for a short while (for "this step blocks").
    pub fn assert_stdout_quiet(&mut self, ms: u64) {
        match self.out.recv_timeout(Duration::from_millis(ms)) {
            Err(RecvTimeoutError::Timeout) => {}
            other => panic!("expected no output, got {other:?}"),
        }
    }

    /// Whether the write end of the fake's stdout pipe is closed everywhere (POLLHUP), checked
    /// without waiting.
    pub fn stdout_hung_up(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.stdout_fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; the reader thread keeps the fd open.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        assert!(n >= 0);
        pfd.revents & libc::POLLHUP != 0
    }

    /// The next side event of any fake process.
    pub fn next_line(&mut self) -> FakeLine {
        loop {
            match self.side.recv_timeout(DEADLINE) {
                Ok(SideMsg::Line(line)) => {
                    if let FakeEvent::Register {
                        role: Role::Grandchild,
                        ..
                    } = line.event
                    {
                        self.grandchildren.push(line.pid);
                    }
                    self.log.push(line.clone());
                    return line;
                }
                Ok(SideMsg::Closed(pid)) => {
                    self.closed.extend(pid);
                }
                Err(e) => panic!("no side event ({e}); log so far: {:#?}", self.log),
            }
        }
    }

    /// The first side event already seen that matches, else the next one that does.
    #[allow(dead_code)]
    pub fn seen_or_until(&mut self, what: &str, pred: impl Fn(&FakeLine) -> bool) -> FakeLine {
        if let Some(line) = self.log.iter().find(|l| pred(l)) {
            return line.clone();
        }
        self.until(what, pred)
    }

    /// Skips side events until one matches; returns it.
    pub fn until(&mut self, what: &str, pred: impl Fn(&FakeLine) -> bool) -> FakeLine {
        loop {
            let line = self.next_line();
            if pred(&line) {
                return line;
            }
            assert!(
                !matches!(line.event, FakeEvent::Exit { .. }) || line.pid != self.pid(),
                "runtime exited before {what}: {:#?}",
                self.log
            );
        }
    }

    pub fn until_event(&mut self, what: &str, pred: impl Fn(&FakeEvent) -> bool) -> FakeEvent {
        self.until(what, |l| pred(&l.event)).event
    }

    /// Sends `{"do":"release","name":…}` to the runtime.
    pub fn release(&mut self, name: &str) {
        self.send_to_runtime(json!({"do": "release", "name": name}));
    }

    /// Acknowledges the runtime's registration (for `fake_unacked`).
    pub fn ack(&mut self) {
        self.send_to_runtime(json!({"do": "ack"}));
    }

    fn send_to_runtime(&mut self, msg: Value) {
        let pid = self.pid();
        let mut writers = self.writers.lock().unwrap();
        let conn = writers.get_mut(&pid).expect("runtime registered");
        conn.write_all((msg.to_string() + "\n").as_bytes()).unwrap();
    }

    pub fn wait(&mut self) -> ExitStatus {
        if let Some(status) = self.exited {
            return status;
        }
        // The fake's exit is awaited through its side channel (`Exit`) or its death; `wait`
        // itself blocks, which is what we want.
        let status = self.child.wait().unwrap();
        self.exited = Some(status);
        status
    }

    pub fn kill(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            self.wait();
        }
    }

    /// Waits for the runtime to exit and its side connection to close, then checks every frame
    /// it sent without a `violation` mark against its protocol's schema. Returns the whole log.
    pub fn finish(&mut self) -> Vec<FakeLine> {
        self.drain();
        let invalid = conform_fakes::schema::unmarked_invalid_frames(
            self.protocol.parse().expect("a provider"),
            self.product_version,
            &self.log,
        )
        .unwrap_or_else(|| panic!("conform has no {} schema", self.protocol));
        if let Some((line, e)) = invalid.first() {
            panic!(
                "the fake sent an invalid unmarked frame {:?}: {e}",
                line.event
            );
        }
        self.log.clone()
    }

    /// Waits for the runtime to exit and its side connection to close. Returns the whole log.
    pub fn drain(&mut self) -> Vec<FakeLine> {
        self.wait();
        let pid = self.pid();
        while !self.closed.contains(&pid) {
            match self.side.recv_timeout(DEADLINE) {
                Ok(SideMsg::Line(line)) => self.log.push(line),
                Ok(SideMsg::Closed(p)) => self.closed.extend(p),
                Err(e) => panic!("side connection of {pid} did not close ({e})"),
            }
        }
        self.log.clone()
    }

    /// The runtime's own events (not a grandchild's).
    pub fn runtime_events(&self) -> Vec<FakeEvent> {
        let pid = self.pid();
        self.log
            .iter()
            .filter(|l| l.pid == pid)
            .map(|l| l.event.clone())
            .collect()
    }

    pub fn violations(&self) -> Vec<String> {
        self.log
            .iter()
            .filter_map(|l| match &l.event {
                FakeEvent::Violation { detail } => Some(detail.clone()),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.kill();
        for pid in &self.grandchildren {
            // SAFETY: signalling a pid this test's fake registered.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
    }
}

pub fn request(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub fn result(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

fn conn_clone(c: &UnixStream) -> UnixStream {
    c.try_clone().unwrap()
}
