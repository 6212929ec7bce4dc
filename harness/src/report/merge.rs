//! `conform report merge`: the JSON reports of the shards of one catalog (`--partition k/n`)
//! become one report — cases back in the order of the unpartitioned run, one exit code by the
//! same rule as a single run ([`crate::suite::ExitFacts`]), one baseline verdict per entry.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::suite::ExitFacts;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{0}: {1}")]
    Read(PathBuf, String),
    #[error("{0}: not a shard's report (it ran no --partition)")]
    NotAShard(PathBuf),
    #[error("the reports are shards of different splits: {0} and {1}")]
    Mixed(String, String),
    #[error("shard {0} is given twice")]
    Twice(String),
    #[error("shard(s) missing: {0}")]
    Missing(String),
    #[error("the shards ran different subjects: `{0}` and `{1}`")]
    Subjects(String, String),
}

/// Reads and merges the shards' reports.
pub fn merge_files(paths: &[PathBuf]) -> Result<Value, MergeError> {
    let mut shards = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(p).map_err(|e| MergeError::Read(p.clone(), e.to_string()))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| MergeError::Read(p.clone(), e.to_string()))?;
        shards.push((p.clone(), v));
    }
    merge(shards)
}

/// Every shard of one split, once each, of one subject.
fn check_split(shards: &[(PathBuf, Value)]) -> Result<(), MergeError> {
    let mut split: Option<(String, u32)> = None;
    let mut seen = std::collections::BTreeSet::new();
    for (path, r) in shards {
        let spec = r["partition"]
            .as_str()
            .ok_or_else(|| MergeError::NotAShard(path.clone()))?;
        let parsed: crate::suite::partition::Partition = spec
            .parse()
            .map_err(|e: String| MergeError::Read(path.clone(), e))?;
        let kind = spec.split(':').next().unwrap_or_default().to_owned();
        match &split {
            None => split = Some((kind, parsed.of)),
            Some((k, n)) if *k != kind || *n != parsed.of => {
                return Err(MergeError::Mixed(format!("{k}:…/{n}"), spec.to_owned()));
            }
            Some(_) => {}
        }
        if !seen.insert(parsed.shard) {
            return Err(MergeError::Twice(spec.to_owned()));
        }
    }
    let (kind, of) = split.expect("clap requires one report at least");
    let missing: Vec<String> = (1..=of)
        .filter(|k| !seen.contains(k))
        .map(|k| format!("{kind}:{k}/{of}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing(missing.join(", ")));
    }
    let subject = shards[0].1["subject"].clone();
    for (_, r) in &shards[1..] {
        if r["subject"] != subject {
            return Err(MergeError::Subjects(
                subject.as_str().unwrap_or_default().to_owned(),
                r["subject"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }

    Ok(())
}

/// One report from a split's shards: their cases back in the unpartitioned order, one exit
/// code by the rule of one run.
pub fn merge(shards: Vec<(PathBuf, Value)>) -> Result<Value, MergeError> {
    check_split(&shards)?;
    let subject = shards[0].1["subject"].clone();
    let all = |key: &str| -> Vec<Value> {
        shards
            .iter()
            .flat_map(|(_, r)| r[key].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let mut cases = all("cases");
    cases.sort_by_key(|c| {
        let o = &c["order"];
        (
            o[0].as_u64().unwrap_or(u64::MAX),
            o[1].as_u64().unwrap_or(0),
        )
    });
    let findings = all("findings");
    let stragglers = all("stragglers");
    let interrupted = shards
        .iter()
        .find_map(|(_, r)| r["interruptedSignal"].as_i64())
        .map(|n| n as i32);
    let allow_skips = shards.iter().all(|(_, r)| r["allowSkips"] == true);
    let baseline = merge_baselines(&shards);
    let stale = baseline["entries"]
        .as_array()
        .is_some_and(|es| es.iter().any(|e| e["status"] == "stale"));
    let blamed_on_harness = |fs: &Value| {
        fs.as_array()
            .is_some_and(|fs| fs.iter().any(|f| f["blame"] == "harness"))
    };
    let nothing_tested = cases
        .iter()
        .all(|c| matches!(c["verdict"].as_str(), Some("skip" | "interrupted")));
    let facts = ExitFacts {
        interrupted,
        harness_fault: findings.iter().any(|f| f["blame"] == "harness")
            || cases.iter().any(|c| blamed_on_harness(&c["findings"])),
        failed: cases.iter().any(|c| c["verdict"] == "fail")
            || !findings.is_empty()
            || !stragglers.is_empty()
            || stale,
        nothing_tested,
        allow_skips,
    };
    let first = &shards[0].1["catalog"];
    let catalog = if shards.iter().all(|(_, r)| &r["catalog"] == first) {
        first.clone()
    } else {
        Value::Null
    };
    Ok(json!({
        "subject": subject,
        "fakesSpeak": union(&shards, "fakesSpeak"),
        "realPeers": union(&shards, "realPeers"),
        "exitCode": facts.exit_code(),
        // As the first shard gives them (one split of one run).
        "strictness": shards[0].1["strictness"],
        "jobs": shards[0].1["jobs"],
        "conformVersion": shards[0].1["conformVersion"],
        // One catalog where every shard names the same one; else each shard says its own.
        "catalog": catalog,
        "checks": shards[0].1["checks"],
        "generatedAt": shards.iter().filter_map(|(_, r)| r["generatedAt"].as_str()).max(),
        // The shards ran side by side: the merged suite took as long as the slowest.
        "elapsedMs": shards.iter().filter_map(|(_, r)| r["elapsedMs"].as_u64()).max(),
        "stragglers": stragglers,
        "findings": findings,
        "nothingTested": nothing_tested.then(|| format!("nothing was tested: all {} case(s) were skipped", cases.len())),
        "interruptedBy": shards.iter().find_map(|(_, r)| r["interruptedBy"].as_str()),
        "interruptedSignal": interrupted,
        "allowSkips": allow_skips,
        "partition": Value::Null,
        "shards": shards.iter().map(|(path, r)| json!({
            "file": path,
            "partition": r["partition"],
            "elapsedMs": r["elapsedMs"],
            "exitCode": r["exitCode"],
            "catalog": r["catalog"],
        })).collect::<Vec<_>>(),
        "cgroup": shards[0].1["cgroup"],
        "baseline": baseline,
        // The shards' failures grouped by cause, as one run would group them.
        "causes": crate::report::causes::to_json(&crate::report::causes::of(
            &crate::report::causes::failed_in_json(&cases),
        )),
        "cases": cases,
    }))
}

/// The members of object `key` over all shards: each shard names what its fakes spoke and
/// which real peers it ran, and the merged report names them all.
fn union(shards: &[(PathBuf, Value)], key: &str) -> serde_json::Map<String, Value> {
    shards
        .iter()
        .filter_map(|(_, r)| r[key].as_object())
        .flat_map(|o| o.clone())
        .collect()
}

/// One status per entry over all shards: changed anywhere (its case's pinned texts), else
/// matched (or refused as pinned) anywhere, else stale where its case ran, else not run. (Each
/// case ran in one shard; an entry naming no scenario is stale in all.)
fn merge_baselines(shards: &[(PathBuf, Value)]) -> Value {
    let with: Vec<&Value> = shards
        .iter()
        .map(|(_, r)| &r["baseline"])
        .filter(|b| !b.is_null())
        .collect();
    let Some(first) = with.first() else {
        return Value::Null;
    };
    let rank = |s: &str| match s {
        "changed" => 3,
        "matched" | "refused" => 2,
        "stale" => 1,
        _ => 0,
    };
    let mut entries: Vec<Value> = first["entries"].as_array().cloned().unwrap_or_default();
    for e in &mut entries {
        let (id, kind) = (e["id"].clone(), e["kind"].clone());
        for b in &with[1..] {
            let Some(other) = b["entries"]
                .as_array()
                .and_then(|es| es.iter().find(|o| o["id"] == id && o["kind"] == kind))
            else {
                continue;
            };
            if rank(other["status"].as_str().unwrap_or_default())
                > rank(e["status"].as_str().unwrap_or_default())
            {
                *e = other.clone();
            }
        }
    }
    // One baseline over the shards: the catalog it names, and a shard's warning about it.
    let warning = with
        .iter()
        .map(|b| &b["catalogWarning"])
        .find(|w| w.is_string());
    json!({
        "file": first["file"],
        "catalog": first["catalog"],
        "catalogWarning": warning,
        "entries": entries,
    })
}
