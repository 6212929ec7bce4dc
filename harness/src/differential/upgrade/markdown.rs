//! The upgrade report in Markdown (also what the terminal shows): changes ranked, the
//! vocabulary, the Agent SDK's command line, and the fakes against the candidate.

use std::collections::{BTreeMap, BTreeSet};

use super::{Rank, UpgradeChange, UpgradeReport};
use crate::differential::vocabulary;

/// The report as Markdown (also what the terminal shows).
pub fn markdown(r: &UpgradeReport) -> String {
    let mut out = if r.downgrade {
        format!(
            "# Downgrade: `{}` {} → {} (the candidate is older than the pinned version)\n",
            r.peer, r.pinned_version, r.candidate_version
        )
    } else {
        format!(
            "# Upgrade: `{}` {} → {}\n",
            r.peer, r.pinned_version, r.candidate_version
        )
    };
    out.push_str(&format!(
        "\n{} peer scenario(s) ran against both versions ({}).\n",
        r.scenarios.len(),
        r.scenarios.join(", ")
    ));
    let mut ranks: BTreeMap<Rank, Vec<&UpgradeChange>> = BTreeMap::new();
    for c in &r.changes {
        ranks.entry(c.rank).or_default().push(c);
    }
    for rank in [Rank::Reports, Rank::Meaning, Rank::Additive] {
        let list = ranks.remove(&rank).unwrap_or_default();
        out.push_str(&format!("\n## {} ({})\n\n", rank.heading(), list.len()));
        if list.is_empty() {
            out.push_str("Nothing.\n");
        }
        for c in grouped(&list) {
            out.push_str(&c);
        }
    }
    out.push_str("\n## Protocol vocabulary (the generated schemas)\n\n");
    match &r.vocabulary {
        Ok(v) if v.is_empty() => out.push_str("No definition changed.\n"),
        Ok(v) => out.push_str(&vocabulary_lines(v)),
        Err(why) => out.push_str(&format!("Not compared: {why}.\n")),
    }
    if let Some(flags) = &r.sdk_flags {
        out.push_str("\n## How the Agent SDK starts the CLI\n\n");
        match flags {
            Ok(v) if v.is_empty() => out.push_str("The same command line.\n"),
            Ok(v) => {
                for line in v {
                    out.push_str(&format!("- The candidate SDK {line}.\n"));
                }
                out.push_str(
                    "\nThe Claude Code fake reads a value either way (`--flag value`, \
                     `--flag=value`), as the real CLI does; `ci/claude-sdk` compares the flags \
                     by meaning.\n",
                );
            }
            Err(why) => out.push_str(&format!("Not compared: {why}.\n")),
        }
    }
    let unexplained = r.unexplained();
    out.push_str(&format!(
        "\n## The fakes against the candidate\n\n{} difference(s) kept by `fakes/peers/differences.toml` (as for the pinned version), {} unexplained:\n\n",
        r.against_fake.len() - unexplained,
        unexplained
    ));
    // Only the Codex fake has version profiles for `--accept` to write.
    let profiles = crate::provider::facts(r.product).fake_profiles;
    let learnable = if profiles {
        "learnable: `--accept` adds it to the profile".to_owned()
    } else {
        format!(
            "learnable: one constant value, but the {} fake has no version profiles",
            r.product
        )
    };
    let open: Vec<UpgradeChange> = r
        .against_fake
        .iter()
        .filter(|d| d.explained.is_none())
        .map(|d| UpgradeChange {
            rank: Rank::Meaning,
            scenario: d.scenario.clone(),
            text: if d.learnable {
                format!("✗ {} ({learnable})", d.text)
            } else {
                format!("✗ {}", d.text)
            },
        })
        .collect();
    for line in grouped(&open.iter().collect::<Vec<_>>()) {
        out.push_str(&line);
    }
    if !r.learned.is_empty() {
        out.push_str(&if profiles {
            format!(
                "\n`--accept` would write {} field(s) into the profile for the fake to send:\n\n",
                r.learned.len()
            )
        } else {
            format!(
                "\n{} field(s) a version profile could learn (`--accept` takes Codex versions only):\n\n",
                r.learned.len()
            )
        });
        for a in &r.learned {
            out.push_str(&format!("- `{}` `{}` = `{}`\n", a.kind, a.field, a.value));
        }
    }
    out
}

/// The definitions a provider meets on the wire first (what a client may ask and be told, the
/// error codes), every definition that lost a value next, then the rest in one line each for
/// new, gone and changed definitions.
fn vocabulary_lines(changes: &[vocabulary::DefinitionChange]) -> String {
    const SURFACE: &[&str] = &[
        "ServerNotification",
        "ServerRequest",
        "ClientRequest",
        "ClientNotification",
        "CodexErrorInfo",
    ];
    let (first, rest): (Vec<_>, Vec<_>) = changes
        .iter()
        .partition(|c| SURFACE.contains(&c.definition.as_str()) || !c.removed.is_empty());
    let mut out: String = first.iter().map(|c| format!("- {c}\n")).collect();
    let names = |whole: Option<vocabulary::Whole>| {
        rest.iter()
            .filter(|c| c.whole == whole)
            .map(|c| format!("`{}`", c.definition))
            .collect::<Vec<_>>()
    };
    for (whole, what) in [
        (None, "other definitions with new values"),
        (Some(vocabulary::Whole::Added), "new definitions"),
        (Some(vocabulary::Whole::Removed), "definitions gone"),
    ] {
        let list = names(whole);
        if !list.is_empty() {
            out.push_str(&format!("- {} {what}: {}\n", list.len(), list.join(", ")));
        }
    }
    out
}

/// One Markdown item per text, naming every scenario that shows it.
fn grouped(list: &[&UpgradeChange]) -> Vec<String> {
    let mut by_text: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut order = Vec::new();
    for c in list {
        if !by_text.contains_key(c.text.as_str()) {
            order.push(c.text.as_str());
        }
        by_text
            .entry(c.text.as_str())
            .or_default()
            .insert(c.scenario.as_str());
    }
    order
        .into_iter()
        .map(|text| {
            let shown: Vec<&str> = by_text[text].iter().copied().collect();
            format!(
                "- {} — shown by {}\n",
                text.replace('\n', "\n  "),
                shown.join(", ")
            )
        })
        .collect()
}
