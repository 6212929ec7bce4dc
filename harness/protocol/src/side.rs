//! The fakes' side channel: a Unix stream socket the harness listens on, named to every fake
//! process by `--side <path>`. Each fake process (the runtime and any grandchild it spawns)
//! opens its own connection, sends [`FakeEvent::Register`] first and blocks until the harness
//! answers [`ToFake::Ack`] — so the harness can open a pidfd and check who is writing (the
//! kernel's peer credentials, the binary, the command line, the ancestry) before the process
//! does anything else. A writer the harness does not vouch for gets no answer. Events are JSON lines; they arrive as they happen, so the harness awaits a checkpoint
//! instead of sleeping. This ledger is the ground truth for settling, for "the child really
//! finished", and for what the subject actually sent.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line from a fake process to the harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FakeLine {
    /// The harness run id the fake was started for (`--run`).
    pub run: String,
    pub pid: i32,
    #[serde(flatten)]
    pub event: FakeEvent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The process the subject spawned.
    Runtime,
    /// A process the runtime's script spawned.
    Grandchild,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Subject → fake (read from the fake's stdin).
    Recv,
    /// Fake → subject (written to the fake's stdout).
    Sent,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub enum FakeEvent {
    Register {
        role: Role,
        ppid: i32,
        pgid: i32,
        sid: i32,
        /// Start time in clock ticks since boot (`/proc/self/stat` field 22): with the pid it
        /// names the process without a pid-reuse window.
        start_time: u64,
        /// `pipe:[inode]` (or other link text) of fds 0, 1, 2.
        stdio: Vec<String>,
        /// The runtime's own command line, after `--` (the product flags a provider appended).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
    },
    /// A frame on the wire. `frame` is the parsed JSON, or a JSON string holding the raw line
    /// when it was not JSON.
    Frame {
        dir: Direction,
        frame: Value,
        /// Set on frames a scenario sends invalid on purpose (`violation = "…"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        violation: Option<String>,
        /// For a response the fake sent: the method of the request it answers (so the frame can be
        /// validated against that method's result schema).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answers: Option<String>,
    },
    /// The script reached a named checkpoint.
    Checkpoint { name: String },
    /// The script is blocked until the harness sends [`ToFake::Release`] with this name.
    Awaiting { name: String },
    /// The subject did something the script did not allow. Always a conformance failure.
    Violation { detail: String },
    /// The subject's answer to a request the fake sent (e.g. a permission outcome).
    Answer { method: String, answer: Value },
    /// The fake wrote its terminal message (the "child really finished" evidence).
    Terminal,
    /// A signal was delivered; `action` is `exit` (default disposition emulated) or `ignored`.
    Signal { signal: String, action: String },
    /// stdin reached EOF.
    Eof,
    /// The script closed the process's stdout (it writes nothing more; the subject reads EOF
    /// unless something else holds the stdout).
    StdoutClosed,
    /// The script spawned another process.
    Spawned { child: i32 },
    /// Asks the harness to hold this process's stdout open from outside the subject's process
    /// tree (it takes a copy through the pidfd) until the run is over; the fake goes on once
    /// [`ToFake::Release`] names [`STDOUT_HELD`].
    LendStdout,
    /// The fake is about to exit with this code, or to raise this signal on itself.
    Exit {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal: Option<String>,
        /// The process's peak resident set, in KiB (`getrusage`), for the benchmark's figures.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peak_rss_kib: Option<u64>,
    },
    /// The fake itself failed (bad script, I/O error): a harness fault, not the subject's.
    Fault { detail: String },
}

/// The release name that answers [`FakeEvent::LendStdout`].
pub const STDOUT_HELD: &str = "stdout held outside the tree";

/// One line from the harness to a fake process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case")]
pub enum ToFake {
    /// The registration is accepted. A runtime started for a scenario gets its script here —
    /// never from a file the subject could rewrite before it spawned the fake.
    Ack {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        script: Option<Value>,
    },
    Release {
        name: String,
    },
}
