//! The differences kept on purpose (`fakes/peers/differences.toml` and each peer's own), each
//! with its reason, and what a comparison leaves aside by declared rule.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Difference;
use super::error::ExplainedError;
use crate::input::wildcard;

/// What a comparison leaves aside, by declared rule: kinds whose place in the order is not
/// judged (sent asynchronously), and fields whose values are not (`*` matches any run of
/// characters: `.params.usage.*`).
#[derive(Debug, Default)]
pub struct Leave {
    pub unordered: BTreeSet<String>,
    pub volatile: Vec<String>,
}

impl Leave {
    pub(super) fn volatile(&self, field: &str) -> bool {
        self.volatile.iter().any(|p| wildcard(p, field))
    }
}

/// The explanations file's name, in the fixtures folder and in a peer's folder.
pub const FILE: &str = "differences.toml";

/// `fakes/peers/differences.toml`: the differences kept on purpose, each with its reason.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Explained {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub difference: Vec<ExplainedEntry>,
    /// Kinds a real runtime sends asynchronously: their place in the order is not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unordered: Vec<Unordered>,
    /// Fields whose values change from run to run or build to build by nature (token counts,
    /// versions, model names): their values are not compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volatile: Vec<Volatile>,
    /// Kinds of frame a real runtime sends that no scenario of the catalog makes a fake send
    /// (`conform peers coverage`), each with why no provider can act on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsent: Vec<Unsent>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Unsent {
    /// The provider whose real runtimes send it (`dsh-sdk`).
    pub provider: String,
    /// The frame kind; `*` matches any run of characters.
    pub kind: String,
    /// Why no provider can act on it — so a host that chokes on it is still judged fairly
    /// without the catalog sending it.
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Volatile {
    /// Only for this peer (absent: every peer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// A field path, `*` for any run of characters (`*.usage.*`).
    pub field: String,
    /// Why its value says nothing a provider acts on.
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Unordered {
    pub peer: String,
    pub kind: String,
    /// What was observed (the runs in which it came early and late).
    pub reason: String,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedEntry {
    /// The peer (`dsh-sdk`), as in `peers.json`; `*` matches any run of characters
    /// (`codex-*`).
    pub peer: String,
    /// Only for this peer scenario (absent: every scenario of the peer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// The frame kind, or `order`; `*` matches any run of characters (a class of kinds).
    pub kind: String,
    /// Which difference of the kind: a field path with its type (`.id:string`, a shape), a
    /// field path and `=` (`.error.code=`, its values), `count`, or `schema`; `*` matches any
    /// run of characters (`.params.*:*` for every new field). Absent: every difference of the
    /// kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Why the fake differs on purpose (or why it cannot matter to a provider).
    pub reason: String,
    /// The real runtime does this in some runs only (a race): never reported stale.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sometimes: bool,
    /// Written by `conform peers record` for a person to review: it explains nothing (and
    /// fails the differential) until its reason is written and this is removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draft: bool,
}

impl Explained {
    /// `differences.toml` of the fixtures folder, and each peer folder's own
    /// (`<peer>/differences.toml`, as `conform peers record` starts one).
    pub fn load_all(fixtures: &Path) -> Result<Explained, ExplainedError> {
        let mut all = Explained::load(&fixtures.join(FILE))?;
        let mut own: Vec<std::path::PathBuf> = std::fs::read_dir(fixtures)
            .map(|dir| {
                dir.filter_map(|e| Some(e.ok()?.path().join(FILE)))
                    .filter(|f| f.is_file())
                    .collect()
            })
            .unwrap_or_default();
        own.sort();
        for path in own {
            let more = Explained::load(&path)?;
            all.difference.extend(more.difference);
            all.unordered.extend(more.unordered);
            all.volatile.extend(more.volatile);
            all.unsent.extend(more.unsent);
        }
        Ok(all)
    }

    pub fn load(path: &Path) -> Result<Explained, ExplainedError> {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Explained::default()),
            Err(source) => Err(ExplainedError::Read {
                path: path.to_owned(),
                source,
            }),
            Ok(text) => toml::from_str(&text).map_err(|source| ExplainedError::Toml {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// The reason a difference is kept, if it is listed.
    pub fn reason(&self, peer: &str, scenario: &str, d: &Difference) -> Option<(usize, &str)> {
        let (kind, field) = d.key();
        self.difference
            .iter()
            .enumerate()
            .find(|(_, e)| {
                !e.draft
                    && wildcard(&e.peer, peer)
                    && e.scenario.as_deref().is_none_or(|s| s == scenario)
                    && wildcard(&e.kind, &kind)
                    && e.field.as_deref().is_none_or(|pattern| {
                        field
                            .as_deref()
                            .is_some_and(|field| wildcard(pattern, field))
                    })
            })
            .map(|(i, e)| (i, e.reason.as_str()))
    }

    /// What a comparison for `peer` leaves aside.
    pub fn leave(&self, peer: &str) -> Leave {
        Leave {
            unordered: self
                .unordered
                .iter()
                .filter(|u| u.peer == peer)
                .map(|u| u.kind.clone())
                .collect(),
            volatile: self
                .volatile
                .iter()
                .filter(|v| v.peer.as_deref().is_none_or(|p| wildcard(p, peer)))
                .map(|v| v.field.clone())
                .collect(),
        }
    }
}
