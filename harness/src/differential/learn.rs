//! What an accepted version's profile learns from the candidate's recording: the fields the
//! candidate sends and the fake (dressed as the version it matched) does not, where each is one
//! and the same closed value (a number, a boolean, null, a one-word string) in every frame of
//! its kind that carries it, is not declared volatile, and sits in an object the fake sends too
//! (a field of a new object is that object's, which a profile does not invent). `--accept` writes them into the
//! version's profile (`[[version.add]]` in `fakes/profiles/codex.toml`) and the fake sends them
//! when it speaks that version. Anything else a version adds — ids, clocks, objects, free text —
//! is closed in the codec by hand or explained.

use serde::Serialize;
use serde_json::Value;

use super::{Difference, Leave, closed, each_path};

/// A field the fake adds to every frame of a kind when it speaks the accepted version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Addition {
    /// The frame kind (`turn/started`, `response:thread/start`).
    pub kind: String,
    /// The field path (`.params.turn.rootTurnId`, `.params.turn.items[].delivery`).
    pub field: String,
    /// Its value, as JSON.
    pub value: String,
}

/// The addition that closes `d`, if the candidate's frames make one.
pub fn learnable(
    d: &Difference,
    candidate: &[(String, Value)],
    fake: &[(String, Value)],
    leave: &Leave,
) -> Option<Addition> {
    let Difference::FieldOnlyReal { kind, field } = d else {
        return None;
    };
    let (path, _type) = field.rsplit_once(':')?;
    if path.is_empty() || leave.volatile(path) {
        return None;
    }
    let parent = &path[..path.rfind('.')?];
    // The fake sends the parent, and never the field (with another type, it changed type: a
    // value the profile would not replace).
    let (mut parent_sent, mut field_sent) = (false, false);
    for (_, frame) in fake.iter().filter(|(k, _)| k == kind) {
        each_path(frame, "", &mut |p, v| {
            parent_sent |= p == parent && v.is_object();
            field_sent |= p == path;
        });
    }
    if !parent_sent || field_sent {
        return None;
    }
    let mut values = std::collections::BTreeSet::new();
    for (_, frame) in candidate.iter().filter(|(k, _)| k == kind) {
        each_path(frame, "", &mut |p, v| {
            if p == path {
                values.insert(closed(v));
            }
        });
    }
    let mut values = values.into_iter();
    match (values.next(), values.next()) {
        (Some(Some(value)), None) => Some(Addition {
            kind: kind.clone(),
            field: path.to_owned(),
            value,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn only_real(kind: &str, field: &str) -> Difference {
        Difference::FieldOnlyReal {
            kind: kind.into(),
            field: field.into(),
        }
    }

    #[test]
    fn one_closed_value_in_every_frame_is_learned_and_nothing_else() {
        let wire = vec![
            (
                "item/completed".to_owned(),
                json!({"params": {"item": {"delivery": null, "id": "item-1", "startedAtMs": 5}}}),
            ),
            (
                "item/completed".to_owned(),
                json!({"params": {"item": {"delivery": null, "id": "item-2", "startedAtMs": 9}}}),
            ),
            (
                "turn/started".to_owned(),
                json!({"params": {"turn": {"items": [{"mode": "fast"}, {"mode": "fast"}], "note": "two words"}}}),
            ),
        ];
        let leave = Leave {
            volatile: vec![".params.turn.items[].mode".into()],
            ..Default::default()
        };
        // The fake sends the parents: an item, a turn with its items.
        let fake = vec![
            (
                "item/completed".to_owned(),
                json!({"params": {"item": {"id": "item-1"}}}),
            ),
            (
                "turn/started".to_owned(),
                json!({"params": {"turn": {"items": [{}], "note": "x"}}}),
            ),
        ];
        let learn = |kind: &str, field: &str| {
            learnable(&only_real(kind, field), &wire, &fake, &Leave::default()).map(|a| a.value)
        };
        assert_eq!(
            learn("item/completed", ".params.item.delivery:null").as_deref(),
            Some("null")
        );
        // Values that change from frame to frame (ids, clocks) are not learned.
        assert_eq!(learn("item/completed", ".params.item.id:string"), None);
        assert_eq!(
            learn("item/completed", ".params.item.startedAtMs:number"),
            None
        );
        // Free text and objects are not closed values.
        assert_eq!(learn("turn/started", ".params.turn.note:string"), None);
        assert_eq!(learn("turn/started", ".params.turn:object"), None);
        // One value across array elements is; unless it is declared volatile.
        assert_eq!(
            learn("turn/started", ".params.turn.items[].mode:string").as_deref(),
            Some("\"fast\"")
        );
        let d = only_real("turn/started", ".params.turn.items[].mode:string");
        assert_eq!(learnable(&d, &wire, &fake, &leave), None);
        // A field of an object the fake never sends belongs to that object.
        let wire = vec![(
            "error".to_owned(),
            json!({"params": {"error": {"info": {"httpStatusCode": 401}}}}),
        )];
        let fake = vec![("error".to_owned(), json!({"params": {"error": {}}}))];
        let d = only_real("error", ".params.error.info.httpStatusCode:number");
        assert_eq!(learnable(&d, &wire, &fake, &Leave::default()), None);
        // A field that changed type (the fake sends a string where the candidate sends null)
        // is no addition.
        let wire = vec![("review".to_owned(), json!({"risk": null}))];
        let fake = vec![("review".to_owned(), json!({"risk": "high"}))];
        let d = only_real("review", ".risk:null");
        assert_eq!(learnable(&d, &wire, &fake, &Leave::default()), None);
        // Only a field the candidate sends and the fake does not.
        let values = Difference::Count {
            kind: "item/completed".into(),
            real: 2,
            fake: 1,
        };
        assert_eq!(learnable(&values, &wire, &fake, &Leave::default()), None);
    }
}
