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
    /// After the registration: the line's number on its connection (1, 2, …), sealed with it
    /// ([`Seal`]), so a line taken out or put in by anyone else breaks the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

/// A run's runtime in its ledger: the first process that registered as one (a helper it
/// spawned registers as a grandchild on the same ledger).
pub fn runtime_pid(lines: &[FakeLine]) -> Option<i32> {
    lines.iter().find_map(|l| match l.event {
        FakeEvent::Register {
            role: Role::Runtime,
            ..
        } => Some(l.pid),
        _ => None,
    })
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
        /// Its working directory (what a script's `$cwd` stands for).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        cwd: String,
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
    /// The runtime's script finished `steps[at]` (0-based, in the expanded script the harness
    /// handed over): the evidence that the conversation the scenario scripts took place. A step
    /// that ends the process itself (`exit`, `signal`) is reported just before it does.
    Step { at: usize },
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
    /// never from a file the subject could rewrite before it spawned the fake — and every fake
    /// the key ([`Seal`], hex) it seals each later line with.
    Ack {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        script: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    Release {
        name: String,
    },
}

/// The seal on a fake's side-channel lines after its registration: HMAC-SHA256 under a key the
/// harness drew for that one connection and handed over in its [`ToFake::Ack`]. The socket is
/// reachable by the subject, and a parent can take a copy of its child's connection; without
/// the key (which only the admitted fake and the harness hold) nothing it writes there passes as
/// the fake's. A sealed line is the line's JSON with `"mac"` as its last member.
#[derive(Clone)]
pub struct Seal {
    key: Vec<u8>,
}

/// How a sealed line ends: `,"mac":"` and 64 hex digits, then `"}`.
const MAC_MEMBER: &str = ",\"mac\":\"";
const MAC_HEX: usize = 64;

impl Seal {
    pub fn new(key: &[u8]) -> Seal {
        Seal { key: key.to_vec() }
    }

    /// The key as the acknowledgement carries it.
    pub fn key_hex(&self) -> String {
        hex(&self.key)
    }

    /// A seal from an acknowledgement's key (`None`: not hex).
    pub fn from_hex(text: &str) -> Option<Seal> {
        if !text.len().is_multiple_of(2) {
            return None;
        }
        let key = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Seal { key })
    }

    fn mac(&self, body: &str) -> String {
        use hmac::Mac;
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.key)
            .expect("HMAC takes a key of any length");
        mac.update(body.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// `json` (one JSON object) sealed: the same object with its `"mac"` member last.
    pub fn seal(&self, json: &str) -> String {
        let mac = self.mac(json);
        let open = json.strip_suffix('}').unwrap_or(json);
        format!("{open}{MAC_MEMBER}{mac}\"}}")
    }

    /// The object a sealed line carries, without its seal, if this key sealed it.
    pub fn open(&self, line: &str) -> Result<String, &'static str> {
        let Some(at) = line.len().checked_sub(MAC_MEMBER.len() + MAC_HEX + 2) else {
            return Err("no seal");
        };
        let (body, tail) = (line.get(..at), line.get(at..));
        let (Some(body), Some(tail)) = (body, tail) else {
            return Err("no seal");
        };
        let Some(mac) = tail
            .strip_prefix(MAC_MEMBER)
            .and_then(|t| t.strip_suffix("\"}"))
        else {
            return Err("no seal");
        };
        let json = format!("{body}}}");
        if self.mac(&json) != mac {
            return Err("a seal that is not the fake's");
        }
        Ok(json)
    }
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(…)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_opens_under_its_key_only() {
        let seal = Seal::new(b"0123456789abcdef0123456789abcdef");
        let line = serde_json::to_string(&FakeLine {
            run: "r1".into(),
            pid: 7,
            event: FakeEvent::Eof,
            seq: Some(3),
        })
        .unwrap();
        let sealed = seal.seal(&line);
        assert!(sealed.ends_with("\"}"), "{sealed}");
        assert_eq!(seal.open(&sealed).as_deref(), Ok(line.as_str()));
        let parsed: FakeLine = serde_json::from_str(&sealed).unwrap();
        assert_eq!(parsed.seq, Some(3), "the seal is one more member, ignored");
        let other = Seal::from_hex(&Seal::new(b"another key").key_hex()).unwrap();
        assert_eq!(other.open(&sealed), Err("a seal that is not the fake's"));
        assert_eq!(seal.open(&line), Err("no seal"));
        assert_eq!(seal.open("{}"), Err("no seal"));
        let tampered = sealed.replace("\"pid\":7", "\"pid\":8");
        assert_eq!(seal.open(&tampered), Err("a seal that is not the fake's"));
        assert_eq!(Seal::from_hex(&seal.key_hex()).unwrap().key, seal.key);
        assert!(Seal::from_hex("abc").is_none() && Seal::from_hex("zz").is_none());
    }
}
