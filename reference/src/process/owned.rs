//! What a run owns: its process group, the runtime's descendants, and the orphans that came
//! back here with the run's marker or one of its stdio pipes.

use super::*;

impl ManagedChild {
    /// The live processes this run owns: its process group, every descendant of the runtime,
    /// and every descendant of this process (orphans come here: it is a child subreaper) that
    /// carries the run's [`RUN_MARKER`] or holds one of the runtime's stdio pipes. With
    /// `group_only` (the seeded defect `process-group-only-kill`), the group alone.
    ///
    /// Once found, a process stays the run's until it is gone: a process on its way out has
    /// lost its memory (no environment to read) and then its descriptors before it is a
    /// zombie, and it is not gone before that.
    pub fn owned(&self, group_only: bool) -> Vec<(i32, u64)> {
        self.owned_or_unread(group_only).0
    }

    /// [`Self::owned`], and whether a process that may be the run's could not be read: one
    /// below this process, in no other run's group, between two programs or on its way out
    /// ([`in_transition`]) — its environment reads empty for that instant, so its marker says
    /// nothing yet.
    pub(super) fn owned_or_unread(&self, group_only: bool) -> (Vec<(i32, u64)>, bool) {
        let table = table();
        let unread = !group_only && self.unread(&table);
        let mut known = self.known.lock().expect("known processes");
        known.retain(|(pid, start)| {
            table.iter().any(|p| {
                p.pid == *pid && p.start_time == *start && p.state != 'Z' && p.state != 'X'
            })
        });
        known.extend(self.found(&table, group_only));
        (known.iter().copied().collect(), unread)
    }

    /// Whether `table` holds a process below this one, in no other run's group, that cannot
    /// be read yet ([`in_transition`]).
    pub(super) fn unread(&self, table: &[Proc]) -> bool {
        let me = std::process::id() as i32;
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        let others = other_runs_groups(table, self.pgid);
        table.iter().any(|p| {
            p.pid != me
                && p.state != 'Z'
                && p.state != 'X'
                && !others.contains(&p.pgrp)
                && descends_in(&parent, table.len(), p.pid, me)
                && in_transition(p.pid)
        })
    }

    /// The live processes the scan's criteria find in `table`.
    pub(super) fn found(&self, table: &[Proc], group_only: bool) -> Vec<(i32, u64)> {
        let me = std::process::id() as i32;
        // Our runtime's pid, and its group id, name ours only while no later process took
        // the number: a group id is free for reuse only once the group is empty.
        let reused = table
            .iter()
            .any(|p| p.pid == self.pid && p.start_time != self.start_time);
        if reused {
            return self.owned_orphans(table, me, group_only);
        }
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        let descends = |pid: i32, ancestor: i32| descends_in(&parent, table.len(), pid, ancestor);
        let others = other_runs_groups(table, self.pgid);
        table
            .iter()
            .filter(|p| p.pid != me && p.state != 'Z' && p.state != 'X')
            .filter(|p| {
                p.pgrp == self.pgid
                    || (!group_only
                        && (p.pid == self.pid
                            || descends(p.pid, self.pid)
                            || (descends(p.pid, me)
                                && !others.contains(&p.pgrp)
                                && (has_marker(p.pid, &self.marker)
                                    || holds_any(p.pid, &self.pipes)))))
            })
            .map(|p| (p.pid, p.start_time))
            .collect()
    }

    /// What the run owns once its runtime's pid names another process: only the orphans that
    /// came back here with the run's marker or pipes (the group and the runtime's descendants
    /// are gone with it).
    pub(super) fn owned_orphans(
        &self,
        table: &[Proc],
        me: i32,
        group_only: bool,
    ) -> Vec<(i32, u64)> {
        if group_only {
            return Vec::new();
        }
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        table
            .iter()
            .filter(|p| p.pid != me && p.state != 'Z' && p.state != 'X')
            .filter(|p| {
                descends_in(&parent, table.len(), p.pid, me)
                    && (has_marker(p.pid, &self.marker) || holds_any(p.pid, &self.pipes))
            })
            .map(|p| (p.pid, p.start_time))
            .collect()
    }
}

/// Is `ancestor` on `pid`'s chain of parents?
pub(super) fn descends_in(
    parent: &HashMap<i32, i32>,
    bound: usize,
    pid: i32,
    ancestor: i32,
) -> bool {
    let mut p = pid;
    // Bounded: a table read while processes come and go could hold a cycle.
    for _ in 0..bound {
        match parent.get(&p) {
            Some(&pp) if pp == ancestor => return true,
            Some(&pp) if pp > 1 => p = pp,
            _ => return false,
        }
    }
    false
}
