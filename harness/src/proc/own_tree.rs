//! The harness's own process tree, read from `/proc` without reading every process on the
//! machine each time.
//!
//! Every process of every run descends from the harness (it is a child subreaper: an orphan
//! comes back to it). A process outside its tree never comes into it — reparenting only moves
//! a process up, to a subreaper above it or to init — so once one is seen outside, it is held
//! by a pidfd and passed over until that pidfd says it exited (its pid may then come round
//! again, inside). The scans of settling read the table several times a run; most of the
//! machine's processes (kernel threads, the shell, the CI agent) are outside.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Mutex;

use super::pids::{self, Stat};

/// Processes seen outside the tree, each held by a pidfd.
static OUTSIDE: Mutex<BTreeMap<i32, OwnedFd>> = Mutex::new(BTreeMap::new());

/// The harness and every process below it, from `/proc` now.
pub fn read() -> Vec<(i32, Stat)> {
    let me = std::process::id() as i32;
    let mut outside = OUTSIDE.lock().unwrap_or_else(|e| e.into_inner());
    forget_exited(&mut outside);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let seen: HashMap<i32, Stat> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| !outside.contains_key(pid))
        .filter_map(|pid| Some((pid, pids::stat(pid)?)))
        .collect();
    let (inside, known_outside) = classify(&seen, me, |pid| outside.contains_key(&pid));
    for pid in known_outside {
        if let Some(fd) = pids::pidfd_of(pid, seen[&pid].start_time) {
            outside.insert(pid, fd);
        }
    }
    let mut tree: Vec<(i32, Stat)> = seen
        .into_iter()
        .filter(|(pid, _)| inside.contains(pid))
        .collect();
    tree.sort_by_key(|(pid, _)| *pid);
    tree
}

/// Which of `seen` are `me` or below it, and which are certainly outside: their parent chain
/// ends at the top of the tree (pid 0) or at a process already known outside. A chain that
/// breaks at a pid not seen (a parent that exited between two reads) is neither: such a
/// process is left out now and looked at again next time.
fn classify(
    seen: &HashMap<i32, Stat>,
    me: i32,
    known_outside: impl Fn(i32) -> bool,
) -> (HashSet<i32>, Vec<i32>) {
    let mut inside = HashSet::new();
    let mut outside = Vec::new();
    for &pid in seen.keys() {
        let mut at = pid;
        // Bounded: a pid table is never longer than the chain of all its processes.
        for _ in 0..=seen.len() {
            if at == me {
                inside.insert(pid);
                break;
            }
            if at == 0 || known_outside(at) {
                outside.push(pid);
                break;
            }
            match seen.get(&at) {
                Some(st) => at = st.ppid,
                None => break,
            }
        }
    }
    (inside, outside)
}

/// Lets go of the processes that exited: a readable pidfd.
fn forget_exited(outside: &mut BTreeMap<i32, OwnedFd>) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let pids: Vec<i32> = outside.keys().copied().collect();
    let mut fds: Vec<PollFd> = outside
        .values()
        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
        .collect();
    if poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n == 0) {
        return;
    }
    let exited: Vec<i32> = pids
        .into_iter()
        .zip(&fds)
        .filter(|(_, fd)| fd.revents().is_none_or(|r| !r.is_empty()))
        .map(|(pid, _)| pid)
        .collect();
    drop(fds);
    for pid in exited {
        outside.remove(&pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(ppid: i32) -> Stat {
        Stat {
            state: 'S',
            ppid,
            pgrp: 0,
            start_time: 1,
        }
    }

    #[test]
    fn a_chain_decides_only_when_it_reaches_the_harness_or_the_top() {
        // 1 (init) → 10 (shell) → 20 (harness) → 30 → 40; 50's parent 45 is not seen (it
        // exited between reads); 60 descends from 70, known outside.
        let seen: HashMap<i32, Stat> = [
            (1, st(0)),
            (10, st(1)),
            (20, st(10)),
            (30, st(20)),
            (40, st(30)),
            (50, st(45)),
            (60, st(70)),
        ]
        .into_iter()
        .collect();
        let (inside, mut outside) = classify(&seen, 20, |pid| pid == 70);
        outside.sort();
        assert_eq!(inside, HashSet::from([20, 30, 40]));
        assert_eq!(outside, [1, 10, 60], "50 is undecided");
    }

    #[test]
    fn a_child_started_after_the_first_read_is_in_the_tree_and_the_shell_is_not() {
        let first = read();
        let me = std::process::id() as i32;
        assert!(first.iter().any(|(p, _)| *p == me));
        let parent = pids::stat(me).unwrap().ppid;
        assert!(!first.iter().any(|(p, _)| *p == parent));
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let second = read();
        let _ = child.kill();
        let _ = child.wait();
        assert!(second.iter().any(|(p, _)| *p == child.id() as i32));
        assert!(
            OUTSIDE.lock().unwrap().contains_key(&parent),
            "the shell is held as outside"
        );
    }
}
