//! The suite's scratch folder (side socket, runs' files), and what a harness that died left of
//! its own: a harness killed with SIGKILL cannot remove its folder, so the next one does (the
//! same naming serves the suite's cgroup, [`crate::proc::cgroup`]).
//!
//! A folder is named `conform-<pid>.<start time>-<random>` after the harness that made it, and
//! that harness holds an exclusive `flock` on it for as long as it lives (the kernel drops the
//! lock when the process dies, however it dies). A later harness removes a folder only when
//! both say its owner is gone: no process with that pid and start time runs, and the lock can
//! be taken. The name alone would misjudge a harness in another pid namespace sharing the
//! temp folder; the lock alone, a folder made but not yet locked.

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::proc::pids;

const PREFIX: &str = "conform-";

/// The scratch folder, removed when dropped; locked while it lives.
pub struct Scratch {
    // Dropped first: the lock is given up only once the folder is gone.
    dir: tempfile::TempDir,
    _lock: Flock<File>,
}

/// Free space a memory file system must have to take the scratch folder: a run's files are
/// a few small ones, but a suite runs a thousand of them, sixteen at once.
const MEMORY_ROOM: u64 = 1 << 30;

/// `statfs`'s type of a tmpfs (`TMPFS_MAGIC`).
const TMPFS: i64 = 0x0102_1994;

/// Where the scratch folder goes. `$TMPDIR`, where it is set, is the user's word. Else memory —
/// `$XDG_RUNTIME_DIR`, or `/dev/shm` where it is a tmpfs with [`MEMORY_ROOM`] free — unless
/// `in_memory` is false (a suite whose real runtimes unpack their modules into their runs);
/// else the system's temp folder. Every run makes its folders and files there and the suite
/// removes them: on ext4 that cost the harness about 0.4 s of CPU a catalog (inode allocation
/// passing over the inodes the last suite freed), on a tmpfs next to nothing.
pub fn parent(in_memory: bool) -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) || !in_memory {
        return std::env::temp_dir();
    }
    memory_parents()
        .into_iter()
        .find(|dir| roomy_tmpfs(dir))
        .unwrap_or_else(std::env::temp_dir)
}

/// The memory file systems a scratch folder may go to, in order.
fn memory_parents() -> Vec<PathBuf> {
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty());
    runtime
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/dev/shm")])
        .collect()
}

/// `dir` is a writable tmpfs with [`MEMORY_ROOM`] free.
fn roomy_tmpfs(dir: &Path) -> bool {
    let tmpfs = nix::sys::statfs::statfs(dir).is_ok_and(|s| s.filesystem_type().0 == TMPFS);
    let room = nix::sys::statvfs::statvfs(dir)
        .is_ok_and(|s| s.blocks_available().saturating_mul(s.fragment_size()) >= MEMORY_ROOM);
    tmpfs && room && nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

impl Scratch {
    /// Removes the folders of dead harnesses wherever a scratch folder may be, then makes
    /// this one's in [`parent`]`(in_memory)`.
    pub fn create(in_memory: bool) -> std::io::Result<Scratch> {
        for dir in memory_parents().into_iter().chain([std::env::temp_dir()]) {
            remove_stale(&dir);
        }
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", owner_tag()))
            .tempdir_in(parent(in_memory))?;
        let lock = lock(dir.path())?;
        Ok(Scratch { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// An exclusive lock on `dir`, held while the returned value lives (and no longer than this
/// process: the kernel drops it however the process dies).
pub fn lock(dir: &Path) -> std::io::Result<Flock<File>> {
    Flock::lock(File::open(dir)?, FlockArg::LockExclusiveNonblock)
        .map_err(|(_, errno)| std::io::Error::from(errno))
}

/// `<pid>.<start time>` of this process: what a folder it owns is named after.
pub fn owner_tag() -> String {
    let me = std::process::id() as i32;
    let start = pids::stat(me).map_or(0, |s| s.start_time);
    format!("{me}.{start}")
}

/// The owner a folder's name records: `conform-<pid>.<start>`, maybe followed by `-…`.
fn owner_of(name: &str) -> Option<(i32, u64)> {
    let rest = name.strip_prefix(PREFIX)?;
    let tag = rest.split_once('-').map_or(rest, |(tag, _)| tag);
    let (pid, start) = tag.split_once('.')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Removes every folder in `tmp` whose owning harness is gone; returns them.
pub fn remove_stale(tmp: &Path) -> Vec<PathBuf> {
    remove_stale_in(tmp, |dir| std::fs::remove_dir_all(dir).is_ok())
}

/// Calls `remove` on every folder in `parent` named after a harness that is gone (holding the
/// folder's lock meanwhile); returns those it removed.
pub fn remove_stale_in(parent: &Path, remove: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return vec![];
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            owner_of(&e.file_name().to_string_lossy())
                .is_some_and(|(pid, start)| !pids::alive(pid, start))
        })
        .map(|e| e.path())
        .filter(|dir| lock(dir).is_ok_and(|_held| remove(dir)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory only where asked for and where it is a tmpfs with room; a real runtime's suite,
    /// or a `$TMPDIR`, keeps the temp folder.
    #[test]
    fn the_scratch_folder_goes_to_memory_only_where_it_is_a_roomy_tmpfs() {
        assert!(!roomy_tmpfs(Path::new("/proc")), "procfs is no tmpfs");
        assert!(
            !roomy_tmpfs(Path::new(env!("CARGO_MANIFEST_DIR"))),
            "the source tree is on disk"
        );
        assert_eq!(parent(false), std::env::temp_dir());
        let chosen = parent(true);
        let tmpdir_set = std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty());
        if tmpdir_set || !memory_parents().iter().any(|d| roomy_tmpfs(d)) {
            assert_eq!(chosen, std::env::temp_dir());
        } else {
            assert!(
                roomy_tmpfs(&chosen),
                "{} is no roomy tmpfs",
                chosen.display()
            );
        }
    }

    #[test]
    fn a_dead_owners_folder_goes_and_a_live_ones_stays() {
        let tmp = tempfile::tempdir().unwrap();
        // A live owner (this process), locked as a harness holds it.
        let live = tmp.path().join(format!("{PREFIX}{}-live", owner_tag()));
        std::fs::create_dir(&live).unwrap();
        let _held = Flock::lock(File::open(&live).unwrap(), FlockArg::LockExclusive).unwrap();
        // A live owner that has not locked yet (between making and locking).
        let unlocked = tmp.path().join(format!("{PREFIX}{}-new", owner_tag()));
        std::fs::create_dir(&unlocked).unwrap();
        // A dead owner: this pid with another start time.
        let me = std::process::id();
        let dead = tmp.path().join(format!("{PREFIX}{me}.1-dead"));
        std::fs::create_dir_all(dead.join("runs")).unwrap();
        // A dead owner's folder without a random part (as a suite cgroup is named).
        let bare = tmp.path().join(format!("{PREFIX}{me}.2"));
        std::fs::create_dir(&bare).unwrap();
        // Not a harness's folder at all.
        let other = tmp.path().join(format!("{PREFIX}notes"));
        std::fs::create_dir(&other).unwrap();

        let mut removed = remove_stale(tmp.path());
        removed.sort();
        assert_eq!(removed, vec![dead.clone(), bare.clone()]);
        assert!(live.is_dir() && unlocked.is_dir() && other.is_dir());
    }

    #[test]
    fn a_dead_owners_folder_still_locked_stays() {
        // Another pid namespace's harness: its pid says nothing here, its lock does.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp
            .path()
            .join(format!("{PREFIX}{}.1-elsewhere", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let _held = Flock::lock(File::open(&dir).unwrap(), FlockArg::LockExclusive).unwrap();
        assert!(remove_stale(tmp.path()).is_empty());
        assert!(dir.is_dir());
    }
}
