//! The side channel's ledger indexed by what a run's scans ask of every other run: whether a
//! process is another run's (its pid and start time), and whether a stdio link is one another
//! run's runtime registered with. Each scan used to walk (and copy) the whole ledger, which
//! grows all suite long: the answers are the same, read from here.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::proc::side::Registered;

#[derive(Default)]
pub struct Index {
    /// The (pid, start time) of every registration.
    keys: HashSet<(i32, u64)>,
    /// How many registrations have a (pid, start time) that more than one has (a process may
    /// register twice).
    repeated: HashMap<(i32, u64), usize>,
    /// Every pipe or socket a registration named as its stdio, and by which runs: the only
    /// links a run asks about (its runtime's own stdio) are pipes and sockets.
    links: HashMap<String, Runs>,
}

/// Which runs named a link: one (its first registration), or several (then, for any run,
/// another).
enum Runs {
    One(Arc<Registered>),
    Several,
}

impl Index {
    pub fn add(&mut self, r: &Arc<Registered>) {
        let key = (r.pid, r.start_time);
        if !self.keys.insert(key) {
            *self.repeated.entry(key).or_insert(1) += 1;
        }
        for link in &r.stdio {
            if !(link.starts_with("pipe:") || link.starts_with("socket:")) {
                continue;
            }
            self.links
                .entry(link.clone())
                .and_modify(|runs| {
                    if matches!(runs, Runs::One(first) if first.run != r.run) {
                        *runs = Runs::Several;
                    }
                })
                .or_insert_with(|| Runs::One(r.clone()));
        }
    }

    /// The (pid, start time) of every registration but `own` (a run's own ones): a key stays
    /// when another run registered it too.
    pub fn elsewhere(&self, own: &[Arc<Registered>]) -> HashSet<(i32, u64)> {
        let mut out = self.keys.clone();
        let mut own_counts: HashMap<(i32, u64), usize> = HashMap::new();
        for r in own {
            *own_counts.entry((r.pid, r.start_time)).or_default() += 1;
        }
        for (key, n) in own_counts {
            let total = self.repeated.get(&key).copied().unwrap_or(1);
            if self.keys.contains(&key) && total <= n {
                out.remove(&key);
            }
        }
        out
    }

    /// Did a registration of a run other than `run` name `link` (a pipe or a socket) as its
    /// stdio?
    pub fn link_elsewhere(&self, run: &str, link: &str) -> bool {
        match self.links.get(link) {
            None => false,
            Some(Runs::One(first)) => first.run != run,
            Some(Runs::Several) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conform_protocol::side::Role;

    fn reg(run: &str, pid: i32, stdio: &[&str]) -> Arc<Registered> {
        Arc::new(Registered {
            run: run.to_owned(),
            pid,
            role: Role::Runtime,
            start_time: 7,
            pidfd: None,
            stdio: stdio.iter().map(|s| (*s).to_owned()).collect(),
        })
    }

    #[test]
    fn another_runs_processes_and_links_are_told_from_a_runs_own() {
        let mut index = Index::default();
        let a = reg("a", 10, &["pipe:[1]", "pipe:[2]", "/dev/null"]);
        let b = reg("b", 20, &["pipe:[2]", "pipe:[3]"]);
        // Registered by run a and, again, by run c: another run's all the same.
        let twice = [reg("a", 30, &["pipe:[1]"]), reg("c", 30, &[])];
        for r in [&a, &b, &twice[0], &twice[1]] {
            index.add(r);
        }
        let own = [a.clone(), twice[0].clone()];
        assert_eq!(index.elsewhere(&own), HashSet::from([(20, 7), (30, 7)]));
        assert!(
            !index.link_elsewhere("a", "pipe:[1]"),
            "named twice, by a alone"
        );
        assert!(index.link_elsewhere("b", "pipe:[1]"));
        assert!(index.link_elsewhere("a", "pipe:[2]"), "b's too");
        assert!(index.link_elsewhere("a", "pipe:[3]"));
        assert!(!index.link_elsewhere("b", "pipe:[3]"));
        assert!(!index.link_elsewhere("a", "pipe:[9]"));
    }
}
