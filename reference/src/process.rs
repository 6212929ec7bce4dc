//! Managed child processes: spawn in an own process group, exit observation, whole-tree
//! liveness and the teardown ladder (stdin EOF → SIGTERM → SIGKILL, each bounded).

use std::collections::HashMap;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout_at};

use crate::diagnostic::ExitFacts;

/// Environment variable names never inherited by a child (`scrubbedParentEnv`).
pub fn is_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "PASSWORD", "SECRET", "TOKEN"]
        .iter()
        .any(|w| upper.contains(w))
        || upper.starts_with("DSH_")
}

/// Parent env minus credential-shaped and `DSH_*` names, then `overrides` (a string sets, `null`
/// removes; other JSON values are ignored and reported back).
pub fn child_env(
    parent: impl Iterator<Item = (String, String)>,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> (HashMap<String, String>, Vec<String>) {
    let mut env: HashMap<String, String> = parent.filter(|(k, _)| !is_scrubbed(k)).collect();
    let mut ignored = Vec::new();
    for (k, v) in overrides {
        match v {
            serde_json::Value::String(s) => {
                env.insert(k.clone(), s.clone());
            }
            serde_json::Value::Null => {
                env.remove(k);
            }
            _ => ignored.push(k.clone()),
        }
    }
    (env, ignored)
}

#[derive(Debug, thiserror::Error)]
#[error("spawn failed: {0}")]
pub struct SpawnError(#[from] std::io::Error);

#[derive(Debug, thiserror::Error)]
#[error("process group {pgid} still alive after SIGKILL and {grace_ms} ms")]
pub struct TeardownError {
    pub pgid: i32,
    pub grace_ms: u128,
}

/// A spawned child that leads its own process group.
pub struct ManagedChild {
    pgid: i32,
    exit_rx: watch::Receiver<Option<ExitFacts>>,
}

pub struct Spawned {
    pub child: ManagedChild,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

fn facts(status: ExitStatus) -> ExitFacts {
    use std::os::unix::process::ExitStatusExt;
    ExitFacts {
        code: status.code(),
        signal: status.signal(),
    }
}

pub fn spawn(
    command: &str,
    args: &[String],
    cwd: &Path,
    env: &HashMap<String, String>,
) -> Result<Spawned, SpawnError> {
    let mut child = Command::new(command)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pgid = child.id().expect("a freshly spawned child has a pid") as i32;
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let observed = match child.wait().await {
            Ok(status) => facts(status),
            Err(_) => ExitFacts::default(),
        };
        exit_tx.send_replace(Some(observed));
    });
    Ok(Spawned {
        child: ManagedChild { pgid, exit_rx },
        stdin,
        stdout,
        stderr,
    })
}

impl ManagedChild {
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The direct child's exit facts once it has exited (and been reaped).
    pub fn exited(&self) -> Option<ExitFacts> {
        *self.exit_rx.borrow()
    }

    /// Watch of the direct child's exit facts (`Some` once it exited and was reaped).
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitFacts>> {
        self.exit_rx.clone()
    }

    /// Wait up to `bound` for the direct child to exit.
    pub async fn wait_exit(&self, bound: Duration) -> Option<ExitFacts> {
        let mut rx = self.exit_rx.clone();
        let deadline = Instant::now() + bound;
        match timeout_at(deadline, rx.wait_for(|s| s.is_some())).await {
            Ok(Ok(v)) => *v,
            _ => self.exited(),
        }
    }

    /// Whole tree gone by `deadline`: the direct child exited, its stdout reached EOF (every
    /// holder of the pipe is gone) and no live (non-zombie) process remains in the group.
    pub async fn wait_tree(&self, stdout_eof: &watch::Receiver<bool>, deadline: Instant) -> bool {
        let mut exit_rx = self.exit_rx.clone();
        let mut eof_rx = stdout_eof.clone();
        let pgid = self.pgid;
        timeout_at(deadline, async move {
            let _ = exit_rx.wait_for(|s| s.is_some()).await;
            let _ = eof_rx.wait_for(|e| *e).await;
            // There is no kernel event for "process group became empty" unless we are a child
            // subreaper of every member, so the residual scan polls at a short interval.
            while group_alive(pgid) {
                sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .is_ok()
    }

    pub fn signal_group(&self, signal: Signal) {
        // ESRCH (group already gone) is fine.
        let _ = killpg(Pid::from_raw(self.pgid), signal);
    }

    /// The ladder: stdin must already be closed by the caller. Wait `eof_grace` for the whole
    /// tree, then SIGTERM the group and wait `grace`, then SIGKILL and wait `grace`.
    pub async fn settle(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        eof_grace: Duration,
        grace: Duration,
        skip_sigterm: bool,
    ) -> Result<(), TeardownError> {
        if self.wait_tree(stdout_eof, Instant::now() + eof_grace).await {
            return Ok(());
        }
        // `skip_sigterm` is the seeded defect `skip-sigterm` (straight to SIGKILL).
        if !skip_sigterm {
            self.signal_group(Signal::SIGTERM);
            if self.wait_tree(stdout_eof, Instant::now() + grace).await {
                return Ok(());
            }
        }
        self.signal_group(Signal::SIGKILL);
        if self.wait_tree(stdout_eof, Instant::now() + grace).await {
            return Ok(());
        }
        Err(TeardownError {
            pgid: self.pgid,
            grace_ms: grace.as_millis(),
        })
    }
}

/// Is any non-zombie process in process group `pgid`? Scans `/proc/*/stat` (zombies count as
/// gone: pid 1 in a container may never reap them).
pub fn group_alive(pgid: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        // No /proc: fall back to a signal probe (counts zombies as alive).
        return killpg(Pid::from_raw(pgid), None).is_ok();
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else {
            continue;
        };
        if let Some((state, pgrp)) = parse_stat(&stat)
            && pgrp == pgid
            && state != 'Z'
            && state != 'X'
        {
            return true;
        }
    }
    false
}

/// `(state, pgrp)` from a `/proc/<pid>/stat` line; the command name may contain spaces and
/// parentheses, so fields are read after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_rules() {
        for name in [
            "API_KEY",
            "my_password",
            "Secret",
            "GH_TOKEN",
            "dsh_home",
            "DSH_X",
        ] {
            assert!(is_scrubbed(name), "{name}");
        }
        for name in ["PATH", "HOME", "XDSH_A", "LANG"] {
            assert!(!is_scrubbed(name), "{name}");
        }
        let mut o = serde_json::Map::new();
        o.insert("DSH_OK".into(), "1".into());
        o.insert("PATH".into(), serde_json::Value::Null);
        o.insert("N".into(), 3.into());
        let (env, ignored) = child_env(
            vec![
                ("PATH".to_string(), "/bin".to_string()),
                ("API_KEY".to_string(), "x".to_string()),
                ("HOME".to_string(), "/h".to_string()),
            ]
            .into_iter(),
            &o,
        );
        assert_eq!(env.get("DSH_OK").map(String::as_str), Some("1"));
        assert!(!env.contains_key("PATH"));
        assert!(!env.contains_key("API_KEY"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/h"));
        assert_eq!(ignored, vec!["N".to_string()]);
    }

    #[test]
    fn stat_parsing() {
        assert_eq!(parse_stat("123 (a (b) c) S 1 77 77 0 -1"), Some(('S', 77)));
        assert_eq!(parse_stat("9 (z) Z 1 9 9"), Some(('Z', 9)));
    }

    #[tokio::test]
    async fn ladder_kills_term_trapping_tree() {
        let env: HashMap<String, String> = std::env::vars().collect();
        // The shell traps TERM and its background child ignores it too.
        let script = "trap '' TERM; (trap '' TERM; sleep 30) & sleep 30; wait";
        let sp = spawn(
            "/bin/sh",
            &["-c".into(), script.into()],
            Path::new("/"),
            &env,
        )
        .unwrap();
        let (eof_tx, eof_rx) = watch::channel(false);
        let stdout = sp.stdout;
        tokio::spawn(async move {
            let mut s = stdout;
            let mut buf = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf).await;
            eof_tx.send_replace(true);
        });
        drop(sp.stdin);
        let pgid = sp.child.pgid();
        let started = Instant::now();
        sp.child
            .settle(
                &eof_rx,
                Duration::from_millis(100),
                Duration::from_millis(300),
                false,
            )
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(!group_alive(pgid));
        assert_eq!(sp.child.exited().unwrap().signal, Some(libc::SIGKILL));
    }
}
