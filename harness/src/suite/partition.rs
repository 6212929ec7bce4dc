//! One shard of the catalog (`conform run --partition k/n`), so a CI system's own matrix can
//! spread the suite over machines, and `conform report merge` puts the shards' reports back
//! together. The split is deterministic: the shards of one commit always hold the same cases.
//! An isolation group is one unit (its members run together, in one shard).

use std::hash::Hasher;

use crate::scenario::Scenario;

/// How units are spread over the shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Round-robin over the sorted units: shards as even as can be; adding a scenario may move
    /// others.
    Count,
    /// By a hash of the unit's id: a scenario stays in its shard whatever else is added.
    Hash,
}

/// Shard `shard` (1-based) of `of`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub kind: Spread,
    pub shard: u32,
    pub of: u32,
}

impl std::str::FromStr for Partition {
    type Err = String;

    /// `k/n`, `count:k/n` or `hash:k/n`, with 1 ≤ k ≤ n.
    fn from_str(s: &str) -> Result<Partition, String> {
        let (kind, rest) = match s.split_once(':') {
            Some(("count", rest)) => (Spread::Count, rest),
            Some(("hash", rest)) => (Spread::Hash, rest),
            Some((other, _)) => {
                return Err(format!("`{other}` is not a partition kind (count or hash)"));
            }
            None => (Spread::Count, s),
        };
        let bad = || format!("`{s}`: write k/n, count:k/n or hash:k/n with 1 ≤ k ≤ n");
        let (k, n) = rest.split_once('/').ok_or_else(bad)?;
        let (shard, of): (u32, u32) =
            (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if shard == 0 || shard > of {
            return Err(bad());
        }
        Ok(Partition { kind, shard, of })
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            Spread::Count => "count",
            Spread::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.of)
    }
}

/// The unit a scenario is split with: its isolation group, or itself.
fn unit(s: &Scenario) -> &str {
    crate::scenario::group::group_of(s).unwrap_or(&s.id)
}

impl Partition {
    /// The scenarios of this shard, in their order.
    pub fn shard(&self, scenarios: Vec<Scenario>) -> Vec<Scenario> {
        let mut units: Vec<String> = scenarios.iter().map(|s| unit(s).to_owned()).collect();
        units.sort();
        units.dedup();
        let mine: std::collections::BTreeSet<&str> = units
            .iter()
            .enumerate()
            .filter(|(i, u)| {
                let slot = match self.kind {
                    Spread::Count => *i as u64,
                    Spread::Hash => {
                        // FNV-1a: stable across Rust releases and machines, unlike std's hasher.
                        let mut h = fnv::FnvHasher::default();
                        h.write(u.as_bytes());
                        h.finish()
                    }
                };
                slot % u64::from(self.of) == u64::from(self.shard - 1)
            })
            .map(|(_, u)| u.as_str())
            .collect();
        scenarios
            .into_iter()
            .filter(|s| mine.contains(unit(s)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_read_and_bad_ones_named() {
        let p: Partition = "2/3".parse().unwrap();
        assert_eq!((p.kind, p.shard, p.of), (Spread::Count, 2, 3));
        assert_eq!(
            "hash:1/4".parse::<Partition>().unwrap().to_string(),
            "hash:1/4"
        );
        for bad in ["0/3", "4/3", "3", "x/2", "slice:1/2", "1/0"] {
            assert!(bad.parse::<Partition>().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shards_cover_the_catalog_once_and_keep_groups_whole() {
        let all =
            crate::scenario::discover(&crate::catalog::default_dir("scenarios").unwrap()).unwrap();
        for kind in ["count", "hash"] {
            let mut seen: Vec<String> = Vec::new();
            for k in 1..=3 {
                let p: Partition = format!("{kind}:{k}/3").parse().unwrap();
                let shard = p.shard(all.clone());
                assert!(!shard.is_empty(), "{p} is empty");
                // An isolation group is all in one shard or none.
                for (g, members) in crate::scenario::group::groups(&all) {
                    let here = shard
                        .iter()
                        .filter(|s| crate::scenario::group::group_of(s) == Some(g))
                        .count();
                    assert!(here == 0 || here == members.len(), "{p} splits group {g}");
                }
                seen.extend(shard.into_iter().map(|s| s.id));
            }
            seen.sort();
            let mut ids: Vec<String> = all.iter().map(|s| s.id.clone()).collect();
            ids.sort();
            assert_eq!(seen, ids, "{kind}: every scenario in exactly one shard");
        }
    }
}
