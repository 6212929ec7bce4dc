//! Managed child processes: spawn in an own process group, exit observation, what a run owns
//! (its group, its descendants, and the orphans that come back to this child subreaper with
//! the run's marker), and the teardown ladder over all of it (stdin EOF → SIGTERM → SIGKILL,
//! each bounded).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::{Instant, timeout_at};

use crate::diagnostic::ExitFacts;

mod owned;
mod proc_table;
mod reaper;
mod teardown;

use proc_table::*;
use reaper::*;

pub use reaper::become_reaper;

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

/// Every runtime's environment carries this name with a value unique to its run, so a
/// descendant that left the runtime's process group and lost its parent (`setsid`, a double
/// fork) is still known as the run's: the environment is inherited through fork and exec.
pub const RUN_MARKER: &str = "CONFORM_REFERENCE_RUN";

/// How the teardown ladder runs; every flag but none is a seeded defect.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ladder {
    pub skip_sigterm: bool,
    pub no_sigkill: bool,
    pub group_only: bool,
    pub settled_early: bool,
}

/// A spawned child that leads its own process group.
#[derive(Clone)]
pub struct ManagedChild {
    pid: i32,
    /// The runtime's start time: with pid_max at 32768 a busy machine reuses pids within a
    /// suite, and a dead runtime's pid (and group id) may name another run's process.
    start_time: u64,
    pgid: i32,
    /// This run's value of [`RUN_MARKER`].
    marker: String,
    /// `pipe:[inode]` of the child's stdin, stdout and stderr.
    pipes: Vec<String>,
    exit_rx: watch::Receiver<Option<ExitFacts>>,
    /// What the scans found the run owns (pid, start time), until each is gone.
    known: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<(i32, u64)>>>,
    /// Its group in [`GROUPS`] while a handle lives.
    _listed: std::sync::Arc<GroupListed>,
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

fn pipe_name(fd: &impl std::os::fd::AsFd) -> Option<String> {
    let st = nix::sys::stat::fstat(fd.as_fd()).ok()?;
    Some(format!("pipe:[{}]", st.st_ino))
}

pub fn spawn(
    command: &str,
    args: &[String],
    cwd: &Path,
    env: &HashMap<String, String>,
) -> Result<Spawned, SpawnError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let marker = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .env(RUN_MARKER, &marker)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = {
        let mut managed = MANAGED.lock().expect("managed pids");
        let child = cmd.spawn()?;
        managed.insert(child.id().expect("a freshly spawned child has a pid") as i32);
        child
    };
    let pid = child.id().expect("a freshly spawned child has a pid") as i32;
    // Not reaped before its waiter below runs, so its stat line is there (a zombie's too).
    let start_time = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_stat_full(&s))
        .map_or(0, |(.., t)| t);
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let pipes = [pipe_name(&stdin), pipe_name(&stdout), pipe_name(&stderr)]
        .into_iter()
        .flatten()
        .collect();
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let observed = match child.wait().await {
            Ok(status) => facts(status),
            Err(_) => ExitFacts::default(),
        };
        MANAGED.lock().expect("managed pids").remove(&pid);
        exit_tx.send_replace(Some(observed));
    });
    Ok(Spawned {
        child: ManagedChild {
            pid,
            start_time,
            pgid: pid,
            marker,
            pipes,
            exit_rx,
            known: Default::default(),
            _listed: std::sync::Arc::new(GroupListed::new(pid, start_time)),
        },
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
}

#[cfg(test)]
mod tests;
