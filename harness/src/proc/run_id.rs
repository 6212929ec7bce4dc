//! A run's id (`r7`): issued once per run by the harness, carried by every message and
//! side-channel line about it. What arrives from a subject or a fake naming a run is only a
//! string until it is looked up (by `&str`: [`RunId`] borrows as one).

use std::borrow::Borrow;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct RunId(String);

impl RunId {
    /// A fresh id, never issued before in this process.
    pub fn next() -> RunId {
        RunId(format!("r{}", NEXT_RUN.fetch_add(1, Ordering::Relaxed)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for RunId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for RunId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

#[cfg(test)]
impl From<&str> for RunId {
    fn from(s: &str) -> RunId {
        RunId(s.to_owned())
    }
}
