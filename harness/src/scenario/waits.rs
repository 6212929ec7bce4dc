//! The waits a scenario sets, and which of them are its point. A case pays every wait its
//! run walks (a grace waited out, a delayed answer, a helper that lingers), so a wait longer
//! than [`LONG_WAIT_MS`] must say in `[waits]` why it is as long as it is; every other wait
//! is as short as still makes the same thing happen. The lint is static (what the file sets),
//! so it holds before anything runs; what a run walked is measured where it is judged.

use std::collections::BTreeMap;

use conform_protocol::script::Step;
use serde_json::Value;

use super::ScenarioFile;
use crate::provider::{DISPOSE_EOF_GRACE, DISPOSE_GRACE, SHUTDOWN_TIMEOUT};

/// Past this a wait is long (ms): a grace of this length still ends a SIGKILLed or SIGTERMed
/// tree on a starved machine, and the catalog pays it only where it is walked.
pub const LONG_WAIT_MS: u64 = 200;

/// Every key `[waits]` may name: where each is set.
pub const WAIT_KEYS: [(&str, &str); 7] = [
    ("dispose_eof_grace_ms", "the provider configuration"),
    ("dispose_grace_ms", "the provider configuration"),
    (
        "shutdown_timeout_ms",
        "the provider configuration (`shutdownTimeoutMs`)",
    ),
    ("delay_ms", "a step"),
    ("linger_ms", "a step's spawn"),
    ("deadline_ms", "the file"),
    ("expected_by_ms", "the file"),
];

/// The waits a script sets that every run of the case waits out, whatever the subject does (a
/// step's delay, a spawned helper's linger); a grace is walked only when a tree does not end.
pub const SCRIPTED: [&str; 2] = ["delay_ms", "linger_ms"];

/// The waits set through the provider's configuration: `[waits]` key, configuration key (the
/// provider row's, [`crate::provider`]).
const CONFIG_KEYS: [(&str, &str); 3] = [
    ("dispose_eof_grace_ms", DISPOSE_EOF_GRACE.key),
    ("dispose_grace_ms", DISPOSE_GRACE.key),
    ("shutdown_timeout_ms", SHUTDOWN_TIMEOUT.key),
];

/// The `[waits]` key of a provider configuration key (`disposeGraceMs` → `dispose_grace_ms`).
pub fn key_of_config(config_key: &str) -> Option<&'static str> {
    CONFIG_KEYS
        .iter()
        .find(|(_, c)| *c == config_key)
        .map(|(key, _)| *key)
}

/// One wait the file sets: its `[waits]` key and its longest value (ms). A value that is not
/// a number of ms (an invalid configuration, which is then the case's point) is not a wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetWait {
    pub key: &'static str,
    pub ms: u64,
}

/// The waits `file` sets, its expanded `steps` (preludes spliced in) included, each key once
/// with its longest value, in [`WAIT_KEYS`] order.
pub fn set_waits(file: &ScenarioFile, steps: &[Step]) -> Vec<SetWait> {
    // A configuration refused before anything runs is no wait: its value is the case's point.
    if file.expect.spawns == Some(false) {
        return Vec::new();
    }
    let mut longest: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut note = |key: &'static str, ms: Option<u64>| {
        if let Some(ms) = ms {
            let e = longest.entry(key).or_insert(ms);
            *e = (*e).max(ms);
        }
    };
    // Through the configuration `start` sends: a grace may be written as the shorthand or as
    // its camelCase key under `[subject.config]`.
    let config = file.subject.provider_config();
    for (key, config_key) in CONFIG_KEYS {
        note(key, config.get(config_key).and_then(Value::as_u64));
    }
    for step in steps {
        note("delay_ms", step.delay_ms);
        note("linger_ms", step.spawn.as_ref().and_then(|s| s.linger_ms));
    }
    note("deadline_ms", file.deadline_ms);
    note("expected_by_ms", file.expected_by_ms);
    WAIT_KEYS
        .iter()
        .filter_map(|(key, _)| longest.get(key).map(|&ms| SetWait { key, ms }))
        .collect()
}

/// The long waits `file` sets without saying why.
pub fn undeclared(file: &ScenarioFile, steps: &[Step]) -> Vec<SetWait> {
    set_waits(file, steps)
        .into_iter()
        .filter(|w| w.ms > LONG_WAIT_MS && !file.waits.contains_key(w.key))
        .collect()
}

/// What is wrong with the `[waits]` table itself: a key that is no wait, a wait the file does
/// not set, a reason left blank. `None`: nothing.
pub fn table_error(file: &ScenarioFile, steps: &[Step]) -> Option<(String, String)> {
    let set = set_waits(file, steps);
    for (key, why) in &file.waits {
        if !WAIT_KEYS.iter().any(|(k, _)| k == key) {
            let known: Vec<&str> = WAIT_KEYS.iter().map(|(k, _)| *k).collect();
            return Some((
                key.clone(),
                format!(
                    "`[waits]` names `{key}`, which is no wait (waits: {})",
                    known.join(", ")
                ),
            ));
        }
        if !set.iter().any(|w| w.key == key) {
            let (_, where_) = WAIT_KEYS.iter().find(|(k, _)| k == key).expect("known");
            return Some((
                key.clone(),
                format!("`[waits]` says why `{key}` is long, but {where_} does not set it"),
            ));
        }
        if why.trim().is_empty() {
            return Some((
                key.clone(),
                format!("`[waits]` `{key}`: say why this wait is as long as it is"),
            ));
        }
    }
    None
}
