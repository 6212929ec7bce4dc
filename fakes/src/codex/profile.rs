//! Codex product versions accepted from upgrade reports (`profiles/codex.toml`, compiled in by
//! `build.rs`): each sends what a built-in version sends (`dress_as`), plus the fields its
//! recording taught (`[[version.add]]`), and is held to its own schema bundle.

use serde_json::Value;

use crate::bundle::Digest;

pub struct Profile {
    pub version: &'static str,
    /// The built-in version whose frames it sends.
    pub dress_as: &'static str,
    /// Its generated schema bundle, digested (`build.rs`).
    pub schema: Digest,
    /// Fields it sends beyond `dress_as`, learned from its recording.
    pub adds: &'static [Add],
}

/// A field a version adds to every frame of a kind that has the field's parent.
pub struct Add {
    /// The frame kind, as the codec names it (`turn/started`, `response:thread/start`).
    pub kind: &'static str,
    /// The field path (`.params.turn.rootTurnId`; `[]` for each element of an array).
    pub field: &'static str,
    /// Its value, as JSON.
    pub value: &'static str,
}

/// The fields `version` adds beyond its dressing (none for a built-in version).
pub fn adds(version: &str) -> &'static [Add] {
    of(version).map_or(&[], |p| p.adds)
}

/// The additions of one kind of frame, made on `frame`.
pub fn apply(adds: &[Add], kind: &str, frame: &mut Value) {
    for a in adds.iter().filter(|a| a.kind == kind) {
        let value = serde_json::from_str(a.value).expect("checked by build.rs");
        add(frame, a.field, &value);
    }
}

/// Sets `field` of `frame` to `value` where its parent exists and it is absent (a field the
/// script wrote is kept).
pub fn add(frame: &mut Value, field: &str, value: &Value) {
    let segments: Vec<&str> = field.trim_start_matches('.').split('.').collect();
    add_at(frame, &segments, value);
}

fn add_at(v: &mut Value, segments: &[&str], value: &Value) {
    let Some((first, rest)) = segments.split_first() else {
        return;
    };
    let (key, each) = match first.strip_suffix("[]") {
        Some(key) => (key, true),
        None => (*first, false),
    };
    let Value::Object(map) = v else { return };
    if rest.is_empty() && !each {
        map.entry(key.to_owned()).or_insert_with(|| value.clone());
        return;
    }
    match (map.get_mut(key), each) {
        (Some(Value::Array(items)), true) => {
            for item in items {
                add_at(item, rest, value);
            }
        }
        (Some(child), false) => add_at(child, rest, value),
        _ => {}
    }
}

include!(concat!(env!("OUT_DIR"), "/codex_profiles.rs"));

pub fn of(version: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.version == version)
}

/// The built-in version whose frames `version` sends (itself, for a built-in one).
pub fn dressing(version: &str) -> &str {
    of(version).map_or(version, |p| p.dress_as)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_learned_field_is_added_where_its_parent_is_and_never_over_one_written() {
        let mut frame =
            json!({"params": {"turn": {"items": [{"id": 1}, {"id": 2, "delivery": "x"}]}}});
        add(&mut frame, ".params.turn.items[].delivery", &Value::Null);
        add(&mut frame, ".params.turn.rootTurnId", &json!("t"));
        add(&mut frame, ".params.thread.name", &json!("no parent"));
        assert_eq!(
            frame,
            json!({"params": {"turn": {"rootTurnId": "t", "items": [{"id": 1, "delivery": null}, {"id": 2, "delivery": "x"}]}}})
        );
    }

    #[test]
    fn a_profiles_additions_go_to_their_kind_of_frame_only() {
        const ADDS: &[Add] = &[
            Add {
                kind: "turn/started",
                field: ".params.turn.mode",
                value: "\"fast\"",
            },
            Add {
                kind: "item/started",
                field: ".params.item.delivery",
                value: "null",
            },
        ];
        let mut turn = json!({"params": {"turn": {}, "item": {}}});
        apply(ADDS, "turn/started", &mut turn);
        assert_eq!(
            turn,
            json!({"params": {"turn": {"mode": "fast"}, "item": {}}})
        );
        // Built-in versions add nothing.
        assert!(adds("0.147.0").is_empty() && adds("0.169.0").is_empty());
    }

    /// Each accepted version's digest reads as the bundle its recording came with.
    #[test]
    fn a_profiles_digest_reads_as_the_file_it_was_cut_from() {
        for p in PROFILES {
            let path = format!(
                "{}/schemas/codex/{}.schemas.json",
                env!("CARGO_MANIFEST_DIR"),
                p.version
            );
            let text = std::fs::read_to_string(path).expect("the profile's bundle");
            crate::bundle::assert_reads_as_its_file(p.schema, &text, "definitions", &["v2"]);
        }
    }
}
