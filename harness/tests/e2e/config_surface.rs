//! The configuration surface (`docs/scenarios.md`, "The configuration surface") held to the
//! reference and to the catalog: every key a provider of the reference reads has a row, and
//! every row names, for its key, a scenario that sets a valid value other than the default and
//! one per invalid class of its kind — each scenario of that provider, setting that key, an
//! invalid one failing at start.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common;
use common::workspace;

/// One row of the table.
#[derive(Debug)]
struct Row {
    provider: String,
    key: String,
    kind: String,
    default: String,
    valid: Vec<String>,
    /// A scenario setting the key to its largest valid value (bounded kinds).
    largest: Vec<String>,
    /// Invalid class → scenario.
    invalid: BTreeMap<String, String>,
}

/// The invalid classes a kind of key must be tried with.
fn classes(kind: &str) -> &'static [&'static str] {
    match kind {
        "duration" => &["zero", "negative", "past the limit", "wrong type"],
        "integer" => &[
            "zero",
            "negative",
            "fraction",
            "past the limit",
            "wrong type",
        ],
        "name" => &["blank", "wrong type"],
        "choice" => &["unknown", "wrong type"],
        "path" => &["missing", "relative", "file"],
        // A provider's own working directory over the parent's: a relative one is taken from
        // the parent's, so it is valid.
        "own path" => &["blank", "missing", "file", "wrong type"],
        _ => &[],
    }
}

fn ids(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn table(doc: &str) -> Vec<Row> {
    let section = doc
        .split("## The configuration surface")
        .nth(1)
        .expect("docs/scenarios.md has the configuration surface");
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| provider"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            let invalid = cells[6]
                .split("; ")
                .filter_map(|part| {
                    let (class, id) = part.split_once(": ")?;
                    Some((class.to_owned(), ids(id).into_iter().next()?))
                })
                .collect();
            Row {
                provider: cells[0].to_owned(),
                key: cells[1].trim_matches('`').to_owned(),
                kind: cells[2].to_owned(),
                default: cells[3].trim_matches('`').to_owned(),
                valid: ids(cells[4]),
                largest: ids(cells[5]),
                invalid,
            }
        })
        .collect()
}

/// The largest valid value of a bounded kind: a duration up to the timer limit (2^31 − 1 ms),
/// an integer up to the largest safe one (2^53 − 1). One more is "past the limit".
fn bound(kind: &str) -> Option<i64> {
    match kind {
        "duration" => Some((1 << 31) - 1),
        "integer" => Some((1 << 53) - 1),
        _ => None,
    }
}

/// Every `(provider, key)` the reference reads from `start.config`, found in its sources.
fn keys_read(src: &Path) -> BTreeSet<(String, String)> {
    let patterns = [
        r#"duration_ms\(config, "(\w+)""#,
        r#"ms\("(\w+)""#,
        r#"name\(config, "(\w+)""#,
        r#"config\.get\("(\w+)"\)"#,
        r#"path\(config, "(\w+)""#,
    ];
    let patterns: Vec<regex::Regex> = patterns
        .iter()
        .map(|p| regex::Regex::new(p).unwrap())
        .collect();
    let mut out = BTreeSet::new();
    for (file, providers) in [
        ("acp/config.rs", &["acp"][..]),
        ("dsh_sdk/config.rs", &["dsh-sdk"]),
        ("codex/config.rs", &["codex"]),
        ("claude_code/config.rs", &["claude-code"]),
        ("product.rs", &["codex", "claude-code"]),
    ] {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        // The file's own tests write configurations; only what the provider reads counts.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for p in &patterns {
            for c in p.captures_iter(code) {
                for provider in providers {
                    out.insert((provider.to_string(), c[1].to_owned()));
                }
            }
        }
    }
    out
}

/// A scenario's provider and configuration as the harness sends it (`[subject.config]` and
/// the `[subject]` shorthands), and its expected start error.
struct Case {
    provider: String,
    config: toml::Table,
    start_error: Option<String>,
    /// `[expect] spawns`: `Some(false)`, refused before anything runs.
    spawns: Option<bool>,
}

fn case(scenarios: &Path, id: &str) -> Option<Case> {
    let text = std::fs::read_to_string(scenarios.join(format!("{id}.toml"))).ok()?;
    let file: toml::Table = toml::from_str(&text).ok()?;
    let subject = file.get("subject").and_then(|s| s.as_table());
    let mut config = subject
        .and_then(|s| s.get("config"))
        .and_then(|c| c.as_table())
        .cloned()
        .unwrap_or_default();
    for (short, key) in [
        ("cwd", "cwd"),
        ("permission", "permission"),
        ("dispose_eof_grace_ms", "disposeEofGraceMs"),
        ("dispose_grace_ms", "disposeGraceMs"),
    ] {
        if let Some(v) = subject.and_then(|s| s.get(short)) {
            config.insert(key.to_owned(), v.clone());
        }
    }
    Some(Case {
        provider: file.get("provider")?.as_str()?.to_owned(),
        config,
        start_error: file
            .get("expect")
            .and_then(|e| e.get("start_error"))
            .and_then(|e| e.as_str())
            .map(str::to_owned),
        spawns: file
            .get("expect")
            .and_then(|e| e.get("spawns"))
            .and_then(|e| e.as_bool()),
    })
}

/// What is wrong with the table against the keys read and the scenarios: one line each.
fn problems(
    rows: &[Row],
    read: &BTreeSet<(String, String)>,
    scenario: &dyn Fn(&str) -> Option<Case>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (provider, key) in read {
        if !rows
            .iter()
            .any(|r| &r.provider == provider && &r.key == key)
        {
            out.push(format!("{provider} reads `{key}`, which has no row"));
        }
    }
    for r in rows {
        let at = format!("{} `{}`", r.provider, r.key);
        if classes(&r.kind).is_empty() {
            out.push(format!("{at}: no such kind `{}`", r.kind));
        }
        let sets = |id: &str| -> Result<Case, String> {
            let c = scenario(id).ok_or(format!("{at}: no scenario `{id}`"))?;
            if c.provider != r.provider {
                return Err(format!("{at}: `{id}` is a {} scenario", c.provider));
            }
            if !c.config.contains_key(&r.key) {
                return Err(format!("{at}: `{id}` does not set it"));
            }
            Ok(c)
        };
        // A working directory is set by every case (a fresh workspace of its own).
        if r.valid.is_empty() && r.kind != "path" {
            out.push(format!(
                "{at}: no scenario sets a valid value other than the default"
            ));
        }
        for id in &r.valid {
            match sets(id) {
                Err(e) => out.push(e),
                Ok(c) if c.start_error.is_some() => {
                    out.push(format!("{at}: `{id}` fails at start"))
                }
                Ok(c) => {
                    let value = c.config[&r.key].to_string();
                    if value.trim_matches('"') == r.default {
                        out.push(format!("{at}: `{id}` sets the default"));
                    }
                }
            }
        }
        if let Some(bound) = bound(&r.kind) {
            out.extend(bounds(r, bound, &sets));
        }
        for class in classes(&r.kind) {
            match r.invalid.get(*class) {
                None => out.push(format!("{at}: no scenario for the invalid class `{class}`")),
                Some(id) => match sets(id) {
                    Err(e) => out.push(e),
                    Ok(c) if c.start_error.is_none() => {
                        out.push(format!("{at}: `{id}` does not expect start to fail"))
                    }
                    // Refused before any child runs: `process.nothing-spawned` holds it to that.
                    Ok(c) if c.spawns != Some(false) => out.push(format!(
                        "{at}: `{id}` does not say nothing may run (`[expect] spawns = false`)"
                    )),
                    Ok(_) => {}
                },
            }
        }
    }
    out
}

/// A bounded key's edges: a scenario that sets it to its bound itself and starts, and the
/// "past the limit" one setting exactly one more (a bound read as exclusive, or one off, fails
/// one of them).
fn bounds(r: &Row, bound: i64, sets: &dyn Fn(&str) -> Result<Case, String>) -> Vec<String> {
    let at = format!("{} `{}`", r.provider, r.key);
    let value = |c: &Case| c.config[&r.key].as_integer();
    let mut out = Vec::new();
    match r.largest.first() {
        None => out.push(format!(
            "{at}: no scenario sets its largest valid value ({bound})"
        )),
        Some(id) => match sets(id) {
            Err(e) => out.push(e),
            Ok(c) if c.start_error.is_some() => out.push(format!("{at}: `{id}` fails at start")),
            Ok(c) if value(&c) != Some(bound) => out.push(format!(
                "{at}: `{id}` sets {}, not the largest valid value {bound}",
                c.config[&r.key]
            )),
            Ok(_) => {}
        },
    }
    if let Some(Ok(c)) = r.invalid.get("past the limit").map(|id| sets(id))
        && value(&c) != Some(bound + 1)
    {
        out.push(format!(
            "{at}: past the limit sets {}, not one past the bound ({})",
            c.config[&r.key],
            bound + 1
        ));
    }
    out
}

#[test]
fn every_configuration_key_the_reference_reads_is_set_valid_and_invalid_by_the_catalog() {
    let doc = std::fs::read_to_string(workspace().join("docs/scenarios.md")).unwrap();
    let rows = table(&doc);
    let read = keys_read(&workspace().join("reference/src"));
    assert!(read.len() >= 13, "{read:?}");
    let scenarios = workspace().join("scenarios");
    let found = problems(&rows, &read, &|id| case(&scenarios, id));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_key_without_a_row_or_a_row_without_its_scenarios_is_named() {
    let rows = vec![Row {
        provider: "acp".into(),
        key: "disposeGraceMs".into(),
        kind: "duration".into(),
        default: "3000".into(),
        valid: vec!["acp/valid".into()],
        largest: vec!["acp/valid".into()],
        invalid: [
            ("zero".to_owned(), "acp/zero".to_owned()),
            ("past the limit".to_owned(), "acp/zero".to_owned()),
        ]
        .into(),
    }];
    let read: BTreeSet<(String, String)> = [
        ("acp".to_owned(), "disposeGraceMs".to_owned()),
        ("acp".to_owned(), "newKey".to_owned()),
    ]
    .into();
    let scenario = |id: &str| -> Option<Case> {
        let mut config = toml::Table::new();
        config.insert("disposeGraceMs".into(), toml::Value::Integer(3000));
        Some(Case {
            provider: "acp".into(),
            config,
            start_error: (id == "acp/zero").then(|| "rejected".to_owned()),
            spawns: None,
        })
    };
    assert_eq!(
        problems(&rows, &read, &scenario),
        [
            "acp reads `newKey`, which has no row",
            "acp `disposeGraceMs`: `acp/valid` sets the default",
            "acp `disposeGraceMs`: `acp/valid` sets 3000, not the largest valid value 2147483647",
            "acp `disposeGraceMs`: past the limit sets 3000, not one past the bound (2147483648)",
            "acp `disposeGraceMs`: `acp/zero` does not say nothing may run (`[expect] spawns = false`)",
            "acp `disposeGraceMs`: no scenario for the invalid class `negative`",
            // The same scenario named for two classes is judged for each.
            "acp `disposeGraceMs`: `acp/zero` does not say nothing may run (`[expect] spawns = false`)",
            "acp `disposeGraceMs`: no scenario for the invalid class `wrong type`",
        ]
    );
}
