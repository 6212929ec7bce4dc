//! Where a subject stands at a glance: every case counted by family of scenarios (rows: the
//! folder under the provider's, `cancel`, `stage`, …; `isolation` and `peers` whole) and by
//! provider (columns), each cell counting passed, failed, known, skipped and interrupted cases.

use std::collections::BTreeMap;

/// The counts of one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellCounts {
    pub passed: usize,
    pub failed: usize,
    pub known: usize,
    pub skipped: usize,
    pub interrupted: usize,
}

impl CellCounts {
    /// A case of this verdict, as the JSON report names it.
    fn add(&mut self, verdict: &str) {
        match verdict {
            "pass" => self.passed += 1,
            "fail" => self.failed += 1,
            "known" => self.known += 1,
            "skip" => self.skipped += 1,
            _ => self.interrupted += 1,
        }
    }

    /// The cell as the terminal shows it: `12`, `10 ✗2`, `−8` (nothing for no case).
    pub fn cell(&self) -> String {
        let mut parts = Vec::new();
        if self.passed > 0 {
            parts.push(self.passed.to_string());
        }
        for (n, mark) in [
            (self.failed, "✗"),
            (self.known, "~"),
            (self.skipped, "−"),
            (self.interrupted, "!"),
        ] {
            if n > 0 {
                parts.push(format!("{mark}{n}"));
            }
        }
        parts.join(" ")
    }
}

/// A case's family: the folder under its provider's (`acp/cancel/x` → `cancel`), or the top
/// folder for cases across providers (`isolation`, `peers`).
pub fn family(id: &str) -> &str {
    let mut parts = id.split('/');
    let top = parts.next().unwrap_or_default();
    match top {
        "isolation" | "peers" => top,
        _ => parts.next().unwrap_or(top),
    }
}

/// Every case counted by family and provider; families in the order of their first case.
pub struct Matrix {
    pub providers: Vec<String>,
    pub rows: Vec<(String, BTreeMap<String, CellCounts>)>,
}

impl Matrix {
    /// The matrix of a JSON report's cases (one run's, or shards' merged).
    pub fn of_json(cases: &[serde_json::Value]) -> Matrix {
        let mut providers: Vec<String> = Vec::new();
        let mut rows: Vec<(String, BTreeMap<String, CellCounts>)> = Vec::new();
        for c in cases {
            let provider = c["provider"].as_str().unwrap_or_default().to_owned();
            if !providers.contains(&provider) {
                providers.push(provider.clone());
            }
            let family = family(c["id"].as_str().unwrap_or_default());
            let at = match rows.iter().position(|(f, _)| f == family) {
                Some(i) => i,
                None => {
                    rows.push((family.to_owned(), BTreeMap::new()));
                    rows.len() - 1
                }
            };
            rows[at]
                .1
                .entry(provider)
                .or_default()
                .add(c["verdict"].as_str().unwrap_or_default());
        }
        // Special families last, as the catalog lists them.
        rows.sort_by_key(|(f, _)| matches!(f.as_str(), "isolation" | "peers"));
        Matrix { providers, rows }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_counts_each_verdict_with_its_mark() {
        let c = CellCounts {
            passed: 10,
            failed: 2,
            known: 1,
            skipped: 3,
            interrupted: 0,
        };
        assert_eq!(c.cell(), "10 ✗2 ~1 −3");
        assert_eq!(CellCounts::default().cell(), "");
        let skipped = CellCounts {
            skipped: 8,
            ..Default::default()
        };
        assert_eq!(skipped.cell(), "−8");
    }

    #[test]
    fn a_family_is_the_folder_under_the_provider_or_the_top_one() {
        assert_eq!(family("acp/cancel/during-handshake"), "cancel");
        assert_eq!(family("isolation/notices-at-once/a"), "isolation");
        assert_eq!(family("peers/codex-0.171.0/success"), "peers");
    }
}
