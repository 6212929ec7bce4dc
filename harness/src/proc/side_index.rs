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
    /// How many registrations have each (pid, start time) (one process may register twice).
    counts: HashMap<(i32, u64), usize>,
    /// Every stdio link registered, with the registrations naming it.
    links: HashMap<String, Vec<Arc<Registered>>>,
}

impl Index {
    pub fn add(&mut self, r: &Arc<Registered>) {
        let key = (r.pid, r.start_time);
        self.keys.insert(key);
        *self.counts.entry(key).or_default() += 1;
        for link in &r.stdio {
            self.links.entry(link.clone()).or_default().push(r.clone());
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
            if self.counts.get(&key).is_some_and(|total| *total <= n) {
                out.remove(&key);
            }
        }
        out
    }

    /// Did a registration of a run other than `run` name `link` as its stdio?
    pub fn link_elsewhere(&self, run: &str, link: &str) -> bool {
        self.links
            .get(link)
            .is_some_and(|rs| rs.iter().any(|r| r.run != run))
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
        let a = reg("a", 10, &["pipe:[1]", "pipe:[2]"]);
        let b = reg("b", 20, &["pipe:[2]", "pipe:[3]"]);
        // Registered by run a and, again, by run c: another run's all the same.
        let twice = [reg("a", 30, &[]), reg("c", 30, &[])];
        for r in [&a, &b, &twice[0], &twice[1]] {
            index.add(r);
        }
        let own = [a.clone(), twice[0].clone()];
        assert_eq!(index.elsewhere(&own), HashSet::from([(20, 7), (30, 7)]));
        assert!(!index.link_elsewhere("a", "pipe:[1]"));
        assert!(index.link_elsewhere("a", "pipe:[2]"), "b's too");
        assert!(index.link_elsewhere("a", "pipe:[3]"));
        assert!(!index.link_elsewhere("b", "pipe:[3]"));
        assert!(!index.link_elsewhere("a", "pipe:[9]"));
    }
}
