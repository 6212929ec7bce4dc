//! Isolation groups: scenarios that run together, in one subject, so that one run's failure,
//! permission decision or cancellation lands at a chosen point of another's — by releases that
//! wait for each other's milestones, not by timing luck (`docs/scenarios.md`, isolation groups).
//!
//! Loading checks a group is whole and its cross-member releases name what exists; running
//! shares a board (`run::board`) on which each member publishes the milestones it reached.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::scenario::{Scenario, ScenarioError, Trigger, line_col};

/// A member's name within its group: its file's stem (`scenarios/isolation/g/a.toml` is `a`).
pub fn member_name(s: &Scenario) -> &str {
    s.id.rsplit('/').next().unwrap_or(&s.id)
}

/// The group a scenario belongs to, if any.
pub fn group_of(s: &Scenario) -> Option<&str> {
    s.file.group.as_ref().map(|g| g.name.as_str())
}

/// Every group's members, by group name, in id order.
pub fn groups(scenarios: &[Scenario]) -> BTreeMap<&str, Vec<&Scenario>> {
    let mut out: BTreeMap<&str, Vec<&Scenario>> = BTreeMap::new();
    for s in scenarios {
        if let Some(g) = group_of(s) {
            out.entry(g).or_default().push(s);
        }
    }
    out
}

/// The errors that only the whole set of scenarios shows: a group split over folders or of one
/// member, a member with more than one mode, a release that waits for a member the group does
/// not have (or for a checkpoint or await that member never declares), and cross-member
/// releases outside a group.
pub fn check(scenarios: &[Scenario]) -> Vec<ScenarioError> {
    let mut errors = Vec::new();
    let by_group = groups(scenarios);
    for s in scenarios {
        let text = std::fs::read_to_string(&s.path).unwrap_or_default();
        let err = |needle: &str, message: String| {
            let span = find(&text, needle);
            let (line, column) = span.map_or((1, 1), |r| line_col(&text, r.start));
            ScenarioError::Invalid {
                path: s.path.clone(),
                line,
                column,
                message,
            }
        };
        let Some(group) = group_of(s) else {
            if let Some((_, t)) = s
                .file
                .fake
                .release
                .iter()
                .find(|(_, t)| matches!(t, Trigger::Member { .. }))
            {
                let shown = String::from(t.clone());
                errors.push(err(
                    &shown,
                    format!(
                        "release `{shown}` waits for another member, but this scenario is in no group (`[group] name = …`)"
                    ),
                ));
            }
            continue;
        };
        let members = &by_group[group];
        if s.file.modes.len() != 1 {
            errors.push(err(
                "modes",
                format!(
                    "a member of group `{group}` runs once, in one mode: set `modes = [\"foreground\"]` or `[\"background\"]`"
                ),
            ));
        }
        if members.len() < 2 {
            errors.push(err(
                "[group]",
                format!("group `{group}` has only this member; a group needs two or more"),
            ));
        }
        if let Some(other) = members.iter().find(|m| m.path.parent() != s.path.parent()) {
            errors.push(err(
                "[group]",
                format!(
                    "group `{group}` is also named by {}: a group's members share one folder",
                    other.id
                ),
            ));
        }
        for t in s.file.fake.release.values() {
            let Trigger::Member { member, milestone } = t else {
                continue;
            };
            let shown = String::from(t.clone());
            let names: Vec<&str> = members.iter().map(|m| member_name(m)).collect();
            let Some(target) = members
                .iter()
                .find(|m| member_name(m) == member && m.id != s.id)
            else {
                errors.push(err(
                    &shown,
                    format!(
                        "release `{shown}` waits for member `{member}`, which is not another member of group `{group}` (members: {})",
                        names.join(", ")
                    ),
                ));
                continue;
            };
            let steps = target.script.steps();
            let declared: Vec<&String> = match milestone.split_once(':') {
                Some(("checkpoint", _)) => steps
                    .iter()
                    .filter_map(|st| st.checkpoint.as_ref())
                    .collect(),
                Some(("awaiting", _)) => steps.iter().filter_map(|st| st.await_.as_ref()).collect(),
                _ => continue,
            };
            let (kind, name) = milestone.split_once(':').unwrap_or_default();
            if !declared.iter().any(|d| d.as_str() == name) {
                errors.push(err(
                    &shown,
                    format!(
                        "release `{shown}` waits for {kind} `{name}`, which no step of member `{member}` declares"
                    ),
                ));
            }
        }
    }
    errors
}

/// Byte span of the first occurrence of `needle` (for pointing at semantic errors).
fn find(text: &str, needle: &str) -> Option<Range<usize>> {
    text.find(needle).map(|i| i..i + needle.len())
}

/// The scenarios `selected` picks, with every member of a group that any of them belongs to (a
/// group runs whole or not at all), sorted by id. Takes the catalog by value: the chosen
/// scenarios are moved out, not copied (the catalog is the harness's largest holder).
pub fn complete(all: Vec<Scenario>, selected: impl Fn(&Scenario) -> bool) -> Vec<Scenario> {
    let wanted: BTreeSet<String> = all
        .iter()
        .filter(|s| selected(s))
        .filter_map(|s| group_of(s).map(str::to_owned))
        .collect();
    let mut out: Vec<Scenario> = all
        .into_iter()
        .filter(|s| selected(s) || group_of(s).is_some_and(|g| wanted.contains(g)))
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

#[cfg(test)]
mod tests {

    const MEMBER: &str = r#"title = "a member"
provider = "acp"
modes = ["foreground"]

[group]
name = "g"

[[fake.steps]]
checkpoint = "here"

[[fake.steps]]
await = "go"

[fake.release]
go = "RELEASE"

[expect]
stop_reason = "completed"
"#;

    /// The load errors of a folder holding `a.toml` (releasing on `release`) and, unless
    /// `alone`, `b.toml`.
    fn errors_of(release: &str, alone: bool, a_extra: &str) -> Vec<String> {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("isolation/g");
        std::fs::create_dir_all(&dir).unwrap();
        let a = MEMBER.replace("RELEASE", release).replace(
            "modes = [\"foreground\"]",
            &format!("modes = [\"foreground\"]{a_extra}"),
        );
        std::fs::write(dir.join("a.toml"), a).unwrap();
        if !alone {
            std::fs::write(dir.join("b.toml"), MEMBER.replace("RELEASE", "a:result")).unwrap();
        }
        match crate::scenario::discover(root.path()) {
            Ok(_) => vec![],
            Err(errs) => errs
                .iter()
                .map(|e| {
                    let s = e.to_string();
                    s[s.find("isolation/").unwrap()..].to_owned()
                })
                .collect(),
        }
    }

    #[test]
    fn a_whole_group_with_releases_that_exist_loads() {
        assert_eq!(
            errors_of("b:checkpoint:here", false, ""),
            Vec::<String>::new()
        );
        assert_eq!(errors_of("b:awaiting:go", false, ""), Vec::<String>::new());
    }

    #[test]
    fn what_a_group_cannot_be_is_named_at_its_line_and_column() {
        assert_eq!(
            errors_of("c:result", false, ""),
            [
                "isolation/g/a.toml:15:7: release `c:result` waits for member `c`, which is not another member of group `g` (members: a, b)"
            ]
        );
        assert_eq!(
            errors_of("a:result", false, ""),
            [
                "isolation/g/a.toml:15:7: release `a:result` waits for member `a`, which is not another member of group `g` (members: a, b)"
            ]
        );
        assert_eq!(
            errors_of("b:checkpoint:there", false, ""),
            [
                "isolation/g/a.toml:15:7: release `b:checkpoint:there` waits for checkpoint `there`, which no step of member `b` declares"
            ]
        );
        assert_eq!(
            errors_of("b:result", true, ""),
            [
                "isolation/g/a.toml:5:1: group `g` has only this member; a group needs two or more",
                "isolation/g/a.toml:15:7: release `b:result` waits for member `b`, which is not another member of group `g` (members: a)"
            ]
        );
        let two_modes = errors_of(
            "b:result",
            false,
            "\nmodes = [\"foreground\", \"background\"]",
        );
        assert_eq!(two_modes.len(), 1, "{two_modes:?}");
        let unknown = errors_of("b:finished", false, "");
        assert!(
            unknown[0].starts_with(
                "isolation/g/a.toml:15:6: unknown release `b:finished`, expected one of"
            ),
            "{unknown:?}"
        );
    }
}
