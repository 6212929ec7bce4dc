//! The subject driver shared by the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

pub fn python() -> String {
    for p in ["/usr/bin/python3", "/usr/local/bin/python3"] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    "python3".into()
}

/// A stand-in runtime under `tests/fixtures/`.
pub fn fixture_named(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

pub fn fixture() -> String {
    fixture_named("mini_acp.py")
}

pub struct Subject {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Every message seen so far (host_log included).
    seen: Vec<Value>,
    /// Messages read past while awaiting a readiness line, for `next` to return first.
    backlog: std::collections::VecDeque<Value>,
}

impl Subject {
    pub fn spawn(args: &[&str]) -> Subject {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conform-reference"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn subject");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).expect("subject wrote JSON");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut s = Subject {
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
            backlog: Default::default(),
        };
        s.send(json!({"type": "hello", "protocol": "conform-subject/1"}));
        let hello = s.next();
        assert_eq!(hello["type"], "hello");
        assert_eq!(hello["protocol"], "conform-subject/1");
        assert_eq!(hello["subject"]["name"], "conform-reference");
        assert_eq!(
            hello["providers"],
            json!(["acp", "dsh-sdk", "codex", "claude-code"])
        );
        assert_eq!(hello["modes"], json!(["foreground", "background"]));
        s
    }

    pub fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// Next message that is not a host_log.
    pub fn next(&mut self) -> Value {
        if let Some(v) = self.backlog.pop_front() {
            return v;
        }
        self.recv_any()
    }

    /// Awaits the stand-in child's `READY <pid…>` stderr line (forwarded as host_log) and
    /// returns the pids; other messages are kept for `next`.
    pub fn ready(&mut self) -> Vec<i32> {
        loop {
            let v = self.recv_raw();
            let text = v["text"].as_str().unwrap_or_default();
            if v["type"] == "host_log" {
                if let Some(i) = text.find("READY ") {
                    return text[i + 6..]
                        .split_whitespace()
                        .map(|p| p.parse().unwrap())
                        .collect();
                }
            } else {
                self.backlog.push_back(v);
            }
        }
    }

    /// Next message that is not a host_log, ignoring the backlog.
    pub fn recv_any(&mut self) -> Value {
        loop {
            let v = self.recv_raw();
            if v["type"] != "host_log" {
                return v;
            }
        }
    }

    pub fn recv_raw(&mut self) -> Value {
        match self.lines.recv_timeout(TIMEOUT) {
            Ok(v) => {
                self.seen.push(v.clone());
                v
            }
            Err(RecvTimeoutError::Timeout) => panic!("timed out; seen: {:#?}", self.seen),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("subject closed stdout; seen: {:#?}", self.seen)
            }
        }
    }

    pub fn shutdown(mut self) -> Vec<Value> {
        self.send(json!({"type": "shutdown"}));
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "subject did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(0));
        while let Ok(v) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(v);
        }
        self.seen
    }
}

pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            !rest.trim_start().starts_with('Z')
        }
        Err(_) => false,
    }
}

/// A text content block.
#[allow(dead_code)]
pub fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

/// No model-visible message carries raw child text (the stand-ins mark it `SECRET`), while the
/// raw stderr does reach the host log.
#[allow(dead_code)]
pub fn assert_redacted(seen: &[Value]) {
    for v in seen {
        if v["type"] == "host_log" {
            continue;
        }
        assert!(!v.to_string().contains("SECRET"), "leaked raw text: {v}");
    }
    assert!(
        seen.iter().any(|v| v["type"] == "host_log"
            && v["text"]
                .as_str()
                .unwrap()
                .contains("SECRET_TOKEN=raw-stderr-value")),
        "raw stderr should reach host_log"
    );
}
