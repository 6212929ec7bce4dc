//! What an accepted version's profile learns from the candidate's recording: the fields the
//! candidate sends and the fake (dressed as the version it matched) does not, where each is one
//! and the same closed value (a number, a boolean, null, a one-word string) in every frame of
//! its kind that carries it, in every peer scenario ([`agreed`]), is not declared volatile, and
//! sits in an object the fake sends too (a field of a new object is that object's, which a
//! profile does not invent). Never a clock, a path or a pid ([`of_the_machine`]), whatever one
//! recording shows. `--accept` writes them into the version's profile (`[[version.add]]` in
//! `fakes/profiles/codex.toml`) and the fake sends them when it speaks that version. Anything
//! else a version adds — ids, clocks, objects, free text — is closed in the codec by hand or
//! explained.

use std::collections::{BTreeMap, BTreeSet};

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

/// The addition that closes `d`, if this one scenario's frames make one ([`agreed`] judges
/// all of them).
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
        (Some(Some(value)), None) if !of_the_machine(path, &value) => Some(Addition {
            kind: kind.clone(),
            field: path.to_owned(),
            value,
        }),
        _ => None,
    }
}

/// One peer scenario as [`agreed`] reads it: the candidate's differences from the fake that
/// nothing explains, and both wires.
pub struct Seen<'a> {
    pub open: &'a [Difference],
    pub candidate: &'a [(String, Value)],
    pub fake: &'a [(String, Value)],
    pub leave: &'a Leave,
}

/// The additions the scenarios agree on, field by field: the candidate sends the field with
/// one and the same value in every scenario (one value per scenario, unioned across them,
/// would make a 401 and a 500 both "the" status), and wherever it differs from the fake there,
/// [`learnable`] makes that addition.
pub fn agreed(seen: &[Seen<'_>]) -> BTreeSet<Addition> {
    let mut proposed: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut refused = BTreeSet::new();
    for s in seen {
        for d in s.open {
            let Difference::FieldOnlyReal { kind, field } = d else {
                continue;
            };
            let path = field.rsplit_once(':').map_or(field.as_str(), |(p, _)| p);
            match learnable(d, s.candidate, s.fake, s.leave) {
                Some(a) => {
                    proposed
                        .entry((a.kind, a.field))
                        .or_default()
                        .insert(a.value);
                }
                None => {
                    refused.insert((kind.clone(), path.to_owned()));
                }
            }
        }
    }
    proposed
        .into_iter()
        .filter(|(key, _)| !refused.contains(key))
        .filter_map(|((kind, field), values)| {
            let value = values.into_iter().next()?;
            // Every value the candidate sends there, in any scenario, the fake's too or not.
            let mut sent = BTreeSet::new();
            for s in seen {
                for (_, frame) in s.candidate.iter().filter(|(k, _)| *k == kind) {
                    each_path(frame, "", &mut |p, v| {
                        if p == field {
                            sent.insert(closed(v));
                        }
                    });
                }
            }
            (sent.len() == 1 && sent.contains(&Some(value.clone()))).then_some(Addition {
                kind,
                field,
                value,
            })
        })
        .collect()
}

/// A value of the machine or the moment, never of the protocol, by its field's name or its
/// look: a clock (a timestamp, a date, an ISO time, an epoch-like number), a filesystem path
/// (a socket), a pid. One recording shows one such value; the next run another.
pub fn of_the_machine(field: &str, value: &str) -> bool {
    let name = field.rsplit(['.', '[']).next().unwrap_or(field);
    let lower = name.to_ascii_lowercase();
    let clock_name = name.ends_with("_at")
        || name.ends_with("At")
        || name.ends_with("_ms")
        || name.ends_with("Ms")
        || lower.contains("timestamp")
        || lower.contains("time")
        || lower == "date"
        || name.ends_with("_date")
        || name.ends_with("Date");
    let path_name = lower.ends_with("path")
        || lower.ends_with("_dir")
        || name.ends_with("Dir")
        || lower == "cwd"
        || lower.contains("socket");
    let pid_name = lower == "pid" || name.ends_with("_pid") || name.ends_with("Pid");
    clock_name || path_name || pid_name || looks_like_a_clock(value) || looks_like_a_path(value)
}

/// An ISO date or time (`"2026-12-05T01:40:55.463Z"`, `"01:40:55"`), or a number as large as
/// seconds since the epoch (from 2001 on) or more.
fn looks_like_a_clock(value: &str) -> bool {
    if let Ok(n) = value.parse::<f64>() {
        return n.abs() >= 1e9;
    }
    let s = value.trim_matches('"');
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    let date = s.len() >= 10
        && s.is_char_boundary(10)
        && matches!(s[..10].split('-').collect::<Vec<_>>()[..], [y, m, d] if y.len() == 4 && digits(y) && digits(m) && digits(d));
    let time = s
        .split(['T', ' '])
        .any(|t| matches!(t.split(':').collect::<Vec<_>>()[..], [h, m, ..] if h.len() == 2 && digits(h) && m.len() >= 2 && digits(&m[..2])));
    date || time
}

/// A filesystem path: absolute, from home, relative with `./`, or a socket file.
fn looks_like_a_path(value: &str) -> bool {
    let s = value.trim_matches('"');
    s.starts_with('/')
        || s.starts_with("~/")
        || s.starts_with("./")
        || s.starts_with("../")
        || s.ends_with(".sock")
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

    #[test]
    fn a_field_is_learned_only_with_one_value_in_every_scenario_and_never_a_clock_a_path_or_a_pid()
    {
        // The fake sends every parent; each scenario's candidate adds fields to it.
        let fake = vec![
            ("assistant".to_owned(), json!({"message": {}})),
            ("system:init".to_owned(), json!({"cwd": "x"})),
        ];
        let candidate = |status: u64, at: &str, socket: &str| {
            vec![
                (
                    "assistant".to_owned(),
                    json!({"api_error_status": status, "message": {"diagnostics": null}}),
                ),
                (
                    "system:init".to_owned(),
                    json!({"cwd": "x", "written_at": at, "messaging_socket_path": socket,
                        "view_mode": "default", "started": 1796090370099_u64, "pid": 7}),
                ),
            ]
        };
        let w401 = candidate(401, "2026-12-05T01:40:55.463Z", "/tmp/cc-socks/20037.sock");
        let w500 = candidate(500, "2026-12-05T01:40:55.908Z", "/tmp/cc-socks/20038.sock");
        let leave = Leave::default();
        let open = |wire: &[(String, Value)]| -> Vec<Difference> {
            super::super::compare(
                conform_protocol::vocab::Provider::ClaudeCode,
                wire,
                &fake,
                &leave,
            )
        };
        let (o401, o500) = (open(&w401), open(&w500));
        let seen = [
            Seen {
                open: &o401,
                candidate: &w401,
                fake: &fake,
                leave: &leave,
            },
            Seen {
                open: &o500,
                candidate: &w500,
                fake: &fake,
                leave: &leave,
            },
        ];
        let learned: Vec<String> = agreed(&seen)
            .into_iter()
            .map(|a| format!("{} {} = {}", a.kind, a.field, a.value))
            .collect();
        assert_eq!(
            learned,
            vec![
                "assistant .message.diagnostics = null",
                "system:init .view_mode = \"default\"",
            ]
        );
        // One scenario alone has one status, one clock, one socket: still only what is no
        // clock, path or pid.
        let learned: Vec<String> = agreed(&seen[..1]).into_iter().map(|a| a.field).collect();
        assert_eq!(
            learned,
            vec![".api_error_status", ".message.diagnostics", ".view_mode"]
        );
        for (field, value) in [
            (".written_at", "\"2026-12-05T01:40:55.463Z\""),
            (".day", "\"2026-12-05\""),
            (".at", "\"01:40:55\""),
            (".started", "1796090370099"),
            (".messaging_socket_path", "\"/tmp/cc-socks/20037.sock\""),
            (".where", "\"/tmp/x\""),
            (".pid", "7"),
            (".parentPid", "7"),
            (".createdAt", "5"),
        ] {
            assert!(of_the_machine(field, value), "{field} = {value}");
        }
        for (field, value) in [
            (".view_mode", "\"default\""),
            (".method", "\"turn/start\""),
            (".api_error_status", "401"),
            (".delivery", "null"),
        ] {
            assert!(!of_the_machine(field, value), "{field} = {value}");
        }
    }
}
