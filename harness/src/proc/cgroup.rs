//! The strong settling mode (`conform run --cgroup`): each run's runtime starts in a cgroup v2
//! of its own, so what the runtime starts stays there whatever it does (`setsid`, a double
//! fork, a cleared environment, a program with arguments of its own). The cgroup's
//! `populated` flag is the proof that the tree is gone. What it holds is signalled only when it
//! is below the harness (every process of a run is: the harness is their subreaper): anyone of
//! the same user can write a pid into a cgroup's `cgroup.procs`, and a process put there from
//! outside is never the run's — it is moved back out to the harness's own cgroup, untouched.
//!
//! The harness does not spawn runtimes (the subject does), so the runtime's command is
//! prefixed with `conform cgroup-exec <dir> --`, which moves itself into the run's cgroup and
//! execs the runtime in its place: same pid, nothing in between.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `cgroup-exec`'s exit code when it cannot join the cgroup or exec (as `env` does).
pub const EXEC_FAILED: i32 = 125;

/// The suite's cgroup, under the harness's own: one child per run.
#[derive(Debug)]
pub struct Base {
    dir: PathBuf,
    /// Held while the suite runs, so a later harness can tell when this one is gone
    /// ([`crate::proc::scratch`]).
    _lock: Option<nix::fcntl::Flock<std::fs::File>>,
}

/// Why the mode could not be had on this machine, in one line.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl Base {
    /// Creates the suite's cgroup under `parent` (default: the harness's own cgroup) and
    /// proves a process can be moved into one below it (by running
    /// `exe cgroup-exec <probe> -- exe --version`).
    pub fn create(exe: &str, parent: Option<&Path>) -> Result<Base, Unavailable> {
        let parent = match parent {
            Some(p) => p.to_owned(),
            None => own_cgroup()?,
        };
        // What a harness killed with SIGKILL left here: its runtimes were ended by the keeper
        // of its subject, and its (empty) cgroups stayed.
        crate::proc::scratch::remove_stale_in(&parent, remove_stale);
        let dir = parent.join(format!("conform-{}", crate::proc::scratch::owner_tag()));
        std::fs::create_dir(&dir)
            .map_err(|e| Unavailable(format!("cannot create {}: {e}", dir.display())))?;
        let lock = crate::proc::scratch::lock(&dir).ok();
        let base = Base { dir, _lock: lock };
        if !base.dir.join("cgroup.kill").exists() {
            return Err(Unavailable(format!(
                "{} has no cgroup.kill (Linux 5.14 or later is needed)",
                base.dir.display()
            )));
        }
        let probe = base.run("probe").map_err(|e| Unavailable(e.to_string()))?;
        let out = std::process::Command::new(exe)
            .arg("cgroup-exec")
            .arg(&probe.dir)
            .args(["--", exe, "--version"])
            .output()
            .map_err(|e| Unavailable(format!("cannot run the probe: {e}")))?;
        if !out.status.success() {
            return Err(Unavailable(format!(
                "a process cannot be moved into {}: {}",
                probe.dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        probe.remove();
        Ok(base)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fresh cgroup for one run.
    pub fn run(&self, run: &str) -> io::Result<RunGroup> {
        let dir = self.dir.join(run);
        std::fs::create_dir(&dir)?;
        Ok(RunGroup { dir })
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        // Whatever of the suite is left (an interrupted run's runtime) goes with it.
        for fd in end_ours(&self.dir).0 {
            crate::proc::pids::wait_exit_blocking(&fd, Some(Duration::from_secs(5)));
        }
        let _ = remove_tree(&self.dir);
    }
}

/// Kills the processes below the harness that `dir`'s cgroup tree holds, and moves the others
/// (put there from outside) out to the cgroup above the suite's — the harness's own.
fn end_ours(dir: &Path) -> (Vec<std::os::fd::OwnedFd>, Vec<i32>) {
    let me = std::process::id() as i32;
    let below: std::collections::HashSet<i32> = crate::proc::pids::descendants(me)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect();
    let home = dir
        .ancestors()
        .find(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("conform-"))
        })
        .and_then(Path::parent)
        .map(|d| d.join("cgroup.procs"));
    let (mut killed, mut outsiders) = (Vec::new(), Vec::new());
    for (pid, start_time) in (RunGroup {
        dir: dir.to_owned(),
    })
    .procs()
    {
        if !below.contains(&pid) {
            if let Some(home) = &home {
                let _ = std::fs::write(home, pid.to_string());
            }
            outsiders.push(pid);
        } else if let Some(fd) = crate::proc::pids::pidfd_of(pid, start_time) {
            crate::proc::pids::kill(&fd);
            killed.push(fd);
        }
    }
    (killed, outsiders)
}

/// One run's cgroup.
#[derive(Debug)]
pub struct RunGroup {
    dir: PathBuf,
}

impl RunGroup {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `populated 1` in `cgroup.events`: a live process in this cgroup or one below it.
    /// Exited processes leave the cgroup at once, zombies included.
    pub fn populated(&self) -> bool {
        std::fs::read_to_string(self.dir.join("cgroup.events"))
            .is_ok_and(|e| e.lines().any(|l| l == "populated 1"))
    }

    /// Every process in this cgroup and the ones below it, with its start time.
    pub fn procs(&self) -> Vec<(i32, u64)> {
        let mut out = Vec::new();
        let mut dirs = vec![self.dir.clone()];
        while let Some(dir) = dirs.pop() {
            if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                out.extend(
                    text.lines()
                        .filter_map(|l| l.trim().parse::<i32>().ok())
                        .filter_map(|pid| Some((pid, crate::proc::pids::stat(pid)?.start_time))),
                );
            }
            if let Ok(entries) = std::fs::read_dir(&dir) {
                dirs.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
        out
    }

    /// Kills what the cgroup holds below the harness (their pidfds, to wait on), and moves
    /// what it holds from outside back out to the harness's own cgroup (their pids).
    pub fn end_ours(&self) -> (Vec<std::os::fd::OwnedFd>, Vec<i32>) {
        end_ours(&self.dir)
    }

    /// Waits until `populated 0`, at most `budget`: `cgroup.events` is modified when the flag
    /// changes, and inotify says so (nothing is polled).
    pub async fn wait_empty(&self, budget: Duration) -> bool {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let Ok(inotify) = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC) else {
            return !self.populated();
        };
        if inotify
            .add_watch(&self.dir.join("cgroup.events"), AddWatchFlags::IN_MODIFY)
            .is_err()
        {
            return !self.populated();
        }
        let fd = std::os::fd::OwnedFd::from(inotify);
        // SAFETY: the AsyncFd owns the inotify fd, so it stays open while registered.
        let Ok(afd) = (unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        }) else {
            return !self.populated();
        };
        let wait = async {
            // Watched first, read second: a change between the two is not missed.
            while self.populated() {
                let Ok(mut ready) = afd.readable().await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                let _ = nix::unistd::read(afd.get_ref(), &mut buf);
                ready.clear_ready();
            }
        };
        tokio::time::timeout(budget, wait).await.is_ok()
    }

    /// Removes the cgroup (it must be empty).
    pub fn remove(&self) {
        let _ = remove_tree(&self.dir);
    }
}

/// Removes a cgroup and the ones below it, deepest first (a cgroup directory is removed with
/// rmdir, its files with it).
/// Ends what is left in a dead harness's suite cgroup and removes it (true if it is gone).
fn remove_stale(dir: &Path) -> bool {
    let kill = dir.join("cgroup.kill");
    if kill.exists() {
        let _ = std::fs::write(kill, "1");
    }
    remove_tree(dir).is_ok()
}

fn remove_tree(dir: &Path) -> io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = remove_tree(&e.path());
            }
        }
    }
    std::fs::remove_dir(dir)
}

/// The harness's own cgroup v2 directory: the unified hierarchy's mount point (from
/// `/proc/self/mountinfo`) joined with this process's path in it (`0::<path>` in
/// `/proc/self/cgroup`).
fn own_cgroup() -> Result<PathBuf, Unavailable> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| Unavailable(format!("cannot read /proc/self/mountinfo: {e}")))?;
    let mount = mounts
        .lines()
        .find_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            (after.split_whitespace().next()? == "cgroup2")
                .then(|| before.split_whitespace().nth(4).map(PathBuf::from))?
        })
        .ok_or_else(|| Unavailable("no cgroup v2 hierarchy is mounted".to_owned()))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| Unavailable(format!("cannot read /proc/self/cgroup: {e}")))?;
    let path = own
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| Unavailable("this process is in no cgroup v2".to_owned()))?;
    Ok(mount.join(path.trim_start_matches('/')))
}

/// `conform cgroup-exec <dir> -- <command…>`: joins the cgroup, then execs the command (this
/// process becomes it). Returns only on failure.
pub fn join_and_exec(dir: &Path, command: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    if let Err(e) = std::fs::write(dir.join("cgroup.procs"), "0") {
        eprintln!("conform cgroup-exec: cannot join {}: {e}", dir.display());
        return EXEC_FAILED;
    }
    let Some((program, args)) = command.split_first() else {
        eprintln!("conform cgroup-exec: no command");
        return EXEC_FAILED;
    };
    let e = std::process::Command::new(program).args(args).exec();
    eprintln!("conform cgroup-exec: cannot run {program}: {e}");
    EXEC_FAILED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_own_cgroup_is_under_the_unified_mount() {
        // Where there is no cgroup v2 the reason is a sentence, not a panic.
        match own_cgroup() {
            Ok(dir) => assert!(dir.is_absolute(), "{}", dir.display()),
            Err(Unavailable(why)) => assert!(!why.is_empty()),
        }
    }
}
