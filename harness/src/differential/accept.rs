//! Accepting an upgrade as a peer of its own: what `conform upgrade <peer>@<version> --accept`
//! writes beside the version's profile so the accepted version is re-validated like the pinned
//! one from then on — its manifest entry, its peer scenarios and their snapshots, the fixtures
//! of the wire it sent in the upgrade, and the explanations that kept its differences from the
//! fakes. Each is made from the pinned peer's own, as text, so a person reviews a diff that
//! reads like the pinned peer's files.

use std::collections::BTreeSet;

use super::Explained;
use crate::input::wildcard;

/// The manifest's tables for `pinned` (`[peer."codex-0.147.0"]` and its `.env`, `.files`, …),
/// copied for `new` at package version `version`, running the peer scenarios under
/// `scenarios`. `None` when the manifest has no such peer.
pub fn manifest_block(
    manifest: &str,
    pinned: &str,
    new: &str,
    version: &str,
    scenarios: &str,
    why: &str,
) -> Option<String> {
    let header = |name: &str| [format!("[peer.\"{name}\""), format!("[peer.{name}")];
    let is_pinned = |line: &str| {
        header(pinned)
            .iter()
            .any(|h| line.starts_with(&format!("{h}]")) || line.starts_with(&format!("{h}.")))
    };
    // Sections: a table header and the lines up to the next one (a `[` inside a multi-line
    // string, as a runtime's own config file, is text).
    let mut sections: Vec<Vec<&str>> = Vec::new();
    let mut in_string = false;
    for line in manifest.lines() {
        if line.starts_with('[') && !in_string {
            sections.push(vec![line]);
        } else if let Some(last) = sections.last_mut() {
            last.push(line);
        }
        if (line.matches("'''").count() + line.matches("\"\"\"").count()) % 2 == 1 {
            in_string = !in_string;
        }
    }
    let mut out = format!("\n{}", comment(why));
    let mut found = false;
    for section in sections.iter().filter(|s| is_pinned(s[0])) {
        found = true;
        // Comments and blank lines at a section's end introduce the next table.
        let end = section
            .iter()
            .rposition(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map_or(1, |i| i + 1);
        for (i, line) in section[..end].iter().enumerate() {
            let line = if i == 0 {
                line.replacen(&format!("\"{pinned}\""), &format!("\"{new}\""), 1)
                    .replacen(&format!("peer.{pinned}"), &format!("peer.\"{new}\""), 1)
            } else if line.starts_with("version = ") {
                format!("version = {version:?}")
            } else if line.starts_with("scenarios = ") {
                format!("scenarios = [{scenarios:?}]")
            } else {
                (*line).to_owned()
            };
            out.push_str(&line);
            out.push('\n');
        }
        out.push('\n');
    }
    found.then(|| out.trim_end().to_owned() + "\n")
}

/// `text` as TOML comment lines of at most 100 columns.
pub fn comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > 100 && line.len() > 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// A pinned peer scenario's text for the new peer: its `[peer] name`, and the `product_version`
/// its analog's fake speaks (`speaks`: the accepted version, or the version whose case the
/// analog is), replaced or added; the pinned version named in its title becomes the accepted
/// one (the real runtime that runs it), whatever the fake speaks.
pub fn peer_scenario(
    text: &str,
    new: &str,
    pinned_version: &str,
    accepted: &str,
    speaks: &str,
) -> String {
    let version = speaks;
    let mut out = Vec::new();
    let mut in_peer = false;
    let mut version_written = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_peer = line.trim() == "[peer]";
        }
        let key = line.split('=').next().unwrap_or_default().trim();
        if key == "title" && !in_peer {
            out.push(line.replace(pinned_version, accepted));
        } else if in_peer && key == "name" {
            out.push(format!("name = {new:?}"));
            out.push(format!("product_version = {version:?}"));
            version_written = true;
        } else if in_peer && key == "product_version" {
            if !version_written {
                out.push(format!("product_version = {version:?}"));
                version_written = true;
            }
        } else {
            out.push(line.to_owned());
        }
    }
    out.join("\n") + "\n"
}

/// A pinned peer scenario's snapshot for the new one: its id, wherever it appears (the header's
/// source and expression, a background notice's label), becomes the new id.
pub fn snapshot(text: &str, old_id: &str, new_id: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(old_id) {
        let after = &rest[i + old_id.len()..];
        // Only the whole id: `peers/codex/http-401` is not in `peers/codex/http-4010`.
        let whole = !after.starts_with(|c: char| c.is_alphanumeric() || c == '-' || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if whole { new_id } else { old_id });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The explanations that kept the candidate's differences from the fakes (`used`), and the
/// order and volatile rules of the pinned peer, for the new peer: each entry that names the
/// pinned peer but not the new one, renamed (a `codex-*` entry already covers both), its
/// scenario moved by `scenario`.
pub fn explanations(
    explained: &Explained,
    used: &BTreeSet<usize>,
    pinned: &str,
    new: &str,
    scenario: impl Fn(&str) -> String,
) -> Explained {
    let only_pinned = |peer: &str| wildcard(peer, pinned) && !wildcard(peer, new);
    Explained {
        difference: explained
            .difference
            .iter()
            .enumerate()
            .filter(|(i, e)| used.contains(i) && only_pinned(&e.peer))
            .map(|(_, e)| super::ExplainedEntry {
                peer: new.to_owned(),
                scenario: e.scenario.as_deref().map(&scenario),
                ..e.clone()
            })
            .collect(),
        unordered: explained
            .unordered
            .iter()
            .filter(|u| u.peer == pinned)
            .map(|u| super::explained::Unordered {
                peer: new.to_owned(),
                ..u.clone()
            })
            .collect(),
        volatile: explained
            .volatile
            .iter()
            .filter(|v| v.peer.as_deref().is_some_and(only_pinned))
            .map(|v| super::explained::Volatile {
                peer: Some(new.to_owned()),
                ..v.clone()
            })
            .collect(),
        // Per provider, not per version: an accepted version adds none.
        unsent: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"# head
[peer."codex-0.147.0"]
product = "codex"
version = "0.147.0"
scenarios = ["peers/codex/"]

[peer."codex-0.147.0".env]
HOME = "{run_dir}/home"

[peer."codex-0.147.0".files]
"{run_dir}/config.toml" = '''
model = "m"

[model_providers.mock]
name = "mock"
'''

# The next peer.
[peer.codex-acp]
version = "0.16.0"
"#;

    #[test]
    fn the_pinned_peers_tables_are_copied_renamed_at_the_new_version() {
        let block = manifest_block(
            MANIFEST,
            "codex-0.147.0",
            "codex-0.171.0",
            "0.171.0",
            "peers/codex-0.171.0/",
            "accepted",
        )
        .unwrap();
        assert_eq!(
            block,
            "\n# accepted\n[peer.\"codex-0.171.0\"]\nproduct = \"codex\"\nversion = \"0.171.0\"\nscenarios = [\"peers/codex-0.171.0/\"]\n\n[peer.\"codex-0.171.0\".env]\nHOME = \"{run_dir}/home\"\n\n[peer.\"codex-0.171.0\".files]\n\"{run_dir}/config.toml\" = '''\nmodel = \"m\"\n\n[model_providers.mock]\nname = \"mock\"\n'''\n"
        );
        let parsed: toml::Table = toml::from_str(&format!("{MANIFEST}{block}")).unwrap();
        assert!(parsed["peer"].get("codex-0.171.0").is_some());
        assert!(manifest_block(MANIFEST, "nobody", "x", "1", "y", "z").is_none());
    }

    #[test]
    fn a_comment_is_wrapped_at_100_columns() {
        let text = "word ".repeat(40);
        let out = comment(&text);
        assert!(
            out.lines().all(|l| l.starts_with("# ") && l.len() <= 100),
            "{out}"
        );
        assert_eq!(out.split_whitespace().filter(|w| *w == "word").count(), 40);
    }

    #[test]
    fn a_peer_scenario_names_the_new_peer_and_the_version_its_analog_speaks() {
        let pinned = "title = \"the real runtime (0.147.0)\"\n\n[peer]\nname = \"codex-0.147.0\"\nmodel = \"success\"\n\n[expect]\nname = \"not the peer's\"\n";
        assert_eq!(
            peer_scenario(pinned, "codex-0.171.0", "0.147.0", "0.171.0", "0.171.0"),
            "title = \"the real runtime (0.171.0)\"\n\n[peer]\nname = \"codex-0.171.0\"\nproduct_version = \"0.171.0\"\nmodel = \"success\"\n\n[expect]\nname = \"not the peer's\"\n"
        );
        let versioned =
            "[peer]\nname = \"codex-0.169.0\"\nanalog = \"a\"\nproduct_version = \"0.169.0\"\n";
        assert_eq!(
            peer_scenario(versioned, "codex-0.171.0", "0.169.0", "0.171.0", "0.171.0"),
            "[peer]\nname = \"codex-0.171.0\"\nproduct_version = \"0.171.0\"\nanalog = \"a\"\n"
        );
        // An analog that is a case of the pinned version's behaviour keeps its fake speaking
        // that version; the title names the real runtime that runs: the accepted version.
        let case = "title = \"the real Codex app-server 0.169.0 gets a 401: unlike 0.147.0\"\n\n[peer]\nname = \"codex-0.169.0\"\nproduct_version = \"0.169.0\"\n";
        assert_eq!(
            peer_scenario(case, "codex-0.171.0", "0.169.0", "0.171.0", "0.169.0"),
            "title = \"the real Codex app-server 0.171.0 gets a 401: unlike 0.147.0\"\n\n[peer]\nname = \"codex-0.171.0\"\nproduct_version = \"0.169.0\"\n"
        );
    }

    #[test]
    fn a_snapshot_takes_the_new_id_wherever_the_whole_id_is() {
        let text = "source: scenarios/peers/codex/success.toml\nexpression: peers/codex/success (background)\n(subagent: peers/codex/success) peers/codex/success-2\n";
        assert_eq!(
            snapshot(text, "peers/codex/success", "peers/codex-0.171.0/success"),
            "source: scenarios/peers/codex-0.171.0/success.toml\nexpression: peers/codex-0.171.0/success (background)\n(subagent: peers/codex-0.171.0/success) peers/codex/success-2\n"
        );
    }

    #[test]
    fn only_what_names_the_pinned_peer_alone_is_copied_and_only_what_was_used() {
        let explained: Explained = toml::from_str(
            r#"
[[difference]]
peer = "codex-0.147.0"
scenario = "peers/codex/success"
kind = "a"
reason = "used, pinned only"

[[difference]]
peer = "codex-0.147.0"
kind = "b"
reason = "not used"

[[difference]]
peer = "codex-*"
kind = "c"
reason = "used, already covers the new peer"

[[unordered]]
peer = "codex-0.147.0"
kind = "k"
reason = "async"

[[volatile]]
peer = "codex-*"
field = ".x"
reason = "glob"

[[volatile]]
peer = "codex-0.147.0"
field = ".y"
reason = "pinned"
"#,
        )
        .unwrap();
        let out = explanations(
            &explained,
            &[0, 2].into(),
            "codex-0.147.0",
            "codex-0.171.0",
            |s| s.replace("peers/codex/", "peers/codex-0.171.0/"),
        );
        let text = toml::to_string(&out).unwrap();
        assert_eq!(out.difference.len(), 1, "{text}");
        assert_eq!(out.difference[0].peer, "codex-0.171.0");
        assert_eq!(
            out.difference[0].scenario.as_deref(),
            Some("peers/codex-0.171.0/success")
        );
        assert_eq!(out.unordered.len(), 1);
        assert_eq!(out.volatile.len(), 1);
        assert_eq!(out.volatile[0].field, ".y");
        // What is written reads back as an explanations file.
        let back: Explained = toml::from_str(&text).unwrap();
        assert_eq!(back.difference[0].reason, "used, pinned only");
    }
}
