//! What a pending file records beside its snapshot, in its insta header's `info`: the snapshots
//! folder it belongs to, its scenario, and the digest of the stored snapshot it was compared
//! with. Written and read back by conform alone, in one strict form.

use std::path::PathBuf;

/// What a pending file records beside the snapshot (its header's `info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The snapshots folder it belongs to ([`super::identity`]).
    pub snapshots: PathBuf,
    /// The scenario's id.
    pub scenario: String,
    /// The SHA-256 (hex) of the stored snapshot file it was compared with; `None`: there was
    /// none.
    pub stored: Option<String>,
}

impl Manifest {
    /// The `info` block of a pending file's header: each value a JSON string, which YAML reads
    /// as the same string.
    pub(super) fn info(&self) -> Result<String, String> {
        let folder = self
            .snapshots
            .to_str()
            .ok_or("the snapshots folder's path is not UTF-8, so no pending file can name it")?;
        let stored = match &self.stored {
            Some(sha) => format!("sha256:{sha}"),
            None => "none".to_owned(),
        };
        let json = |s: &str| serde_json::to_string(s).expect("a string serialises");
        Ok(format!(
            "info:\n  snapshots: {}\n  scenario: {}\n  stored: {}\n",
            json(folder),
            json(&self.scenario),
            json(&stored)
        ))
    }

    /// Reads back what [`Manifest::info`] wrote, and nothing else: the three lines of the block.
    fn parse(lines: &[&str]) -> Result<Manifest, String> {
        let [snapshots, scenario, stored] = lines else {
            return Err(format!(
                "its `info` has {} lines, not the 3 conform writes",
                lines.len()
            ));
        };
        let value = |line: &str, key: &str| -> Result<String, String> {
            let raw = line
                .strip_prefix(&format!("  {key}: "))
                .ok_or_else(|| format!("its `info` has no `{key}` where conform writes it"))?;
            serde_json::from_str::<String>(raw)
                .map_err(|e| format!("its `info` `{key}` is not a quoted string ({e})"))
        };
        let stored = match value(stored, "stored")?.as_str() {
            "none" => None,
            other => {
                let sha = other
                    .strip_prefix("sha256:")
                    .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                    .ok_or_else(|| {
                        format!("its `info` `stored` is {other:?}, not `none` or `sha256:<hex>`")
                    })?;
                Some(sha.to_owned())
            }
        };
        let snapshots = PathBuf::from(value(snapshots, "snapshots")?);
        if !snapshots.is_absolute() {
            return Err("its `info` `snapshots` is not an absolute path".into());
        }
        Ok(Manifest {
            snapshots,
            scenario: value(scenario, "scenario")?,
            stored,
        })
    }
}

/// A pending file's manifest, and the snapshot file it holds without it.
pub(super) fn split_info(text: &str) -> Result<(Manifest, String), String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if lines.first() != Some(&"---\n") {
        return Err("it does not start with a `---` header line".into());
    }
    let info = lines
        .iter()
        .position(|l| *l == "info:\n")
        .ok_or("its header has no `info` (a `.snap.new` conform did not write?)")?;
    let close = lines[info..]
        .iter()
        .position(|l| *l == "---\n")
        .map(|n| info + n)
        .ok_or("its header is not closed (no second `---` line; truncated?)")?;
    let block: Vec<&str> = lines[info + 1..close]
        .iter()
        .map(|l| l.trim_end_matches('\n'))
        .collect();
    let manifest = Manifest::parse(&block)?;
    let snapshot = [&lines[..info], &lines[close..]].concat().concat();
    Ok((manifest, snapshot))
}
