//! What the differential reads from whole sequences of frames, not from sets of values: the
//! order of a field's closed values across the frames of a kind (a thread going `systemError`
//! then `active` is not one going `active` then `systemError`), the interleaving of the frames
//! a provider's verdict rests on (a status after the terminal), and, where values are volatile,
//! their pattern — whole numbers or fractions, constant or growing (a backoff), one id
//! repeated or a fresh one each time (retries of one call, or five calls).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::input::wildcard;

/// Consecutive repeats folded into one: how often a value repeats is a count, not an order.
pub(super) fn collapse<T: PartialEq + Clone>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for v in values {
        if out.last() != Some(v) {
            out.push(v.clone());
        }
    }
    out
}

/// The pattern of a volatile field's values across the frames of a kind, where one can be
/// read: numbers (`whole numbers, growing`) or ids (`one id throughout`). `None` when the
/// values say nothing of it: mixed types, or ids a fixture masked without numbering them
/// (`<id>`, recorded before ids were numbered).
pub(super) fn pattern(values: &[Value]) -> Option<String> {
    if values.iter().all(Value::is_number) {
        let xs: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
        return Some(number_pattern(&xs));
    }
    let ids: Option<Vec<&str>> = values.iter().map(Value::as_str).collect();
    let ids = ids?;
    if ids.len() < 2 || ids.iter().any(|s| s.contains("<id>") || !id_like(s)) {
        return None;
    }
    let distinct = ids.iter().collect::<std::collections::BTreeSet<_>>().len();
    Some(
        if distinct == 1 {
            "one value throughout"
        } else if distinct == ids.len() {
            "a fresh value each time"
        } else {
            "some values repeated"
        }
        .to_owned(),
    )
}

/// Where each id a wire sends was first sent: per kind and field, the `kind field` of the first
/// frame that carried each id-like value it holds (an id a runtime made up, `<id:3>`, or one
/// a script wrote, `sess-1`), when that is another place — a job's `owner` that is the
/// prompt's session id refers to where the session id came first. Free text is no id.
pub(super) fn references(
    wire: &[(String, Value)],
) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    let mut out: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (kind, frame) in wire {
        super::each_path(frame, "", &mut |path, leaf| {
            let Some(s) = leaf.as_str().filter(|s| id_like(s)) else {
                return;
            };
            let here = format!("{kind} {path}");
            let origin = first.entry(s.to_owned()).or_insert_with(|| here.clone());
            let refs = out.entry(kind.clone()).or_default();
            let field = refs.entry(path.to_owned()).or_default();
            if *origin != here {
                field.insert(origin.clone());
            }
        });
    }
    out
}

/// Whether a string reads as an id: one word carrying a number (`<id:3>` as fixtures mask one,
/// `msg_mock_1`, `item-2`, `sess-1`). Words of a catalogue (`low`, `medium`) and free text are
/// not.
fn id_like(s: &str) -> bool {
    s.len() <= 80
        && !s.contains(char::is_whitespace)
        && (s.contains("<id:") || s.chars().any(|c| c.is_ascii_digit()))
}

/// Whole numbers or fractions, and (over two or more) how they go.
fn number_pattern(xs: &[f64]) -> String {
    let fractions = xs.iter().filter(|x| x.fract() != 0.0).count();
    let form = match fractions {
        0 => "whole numbers",
        n if n == xs.len() => "fractions",
        _ => "whole numbers and fractions",
    };
    if xs.len() < 2 {
        return form.to_owned();
    }
    let pairs = || xs.windows(2);
    let trend = if pairs().all(|w| w[0] == w[1]) {
        "constant"
    } else if pairs().all(|w| w[0] <= w[1]) {
        "growing"
    } else if pairs().all(|w| w[0] >= w[1]) {
        "shrinking"
    } else {
        "up and down"
    };
    format!("{form}, {trend}")
}

/// Two patterns that can be compared: the trend only where both sides have one (a single
/// frame has none).
pub(super) fn patterns_differ(real: &str, fake: &str) -> bool {
    let form = |p: &str| p.split(", ").next().unwrap_or_default().to_owned();
    let has_trend = |p: &str| p.contains(", ");
    if has_trend(real) && has_trend(fake) {
        real != fake
    } else {
        form(real) != form(fake)
    }
}

/// The frames a provider's verdict rests on, in order, each as its kind (and its telling
/// closed value: `thread/status/changed:idle`): every answer to a request, and the kinds the
/// codec names ([`conform_fakes::codec::Codec::verdict_points`]); kinds whose place is not
/// judged (`unordered`) left out.
pub(super) fn verdict_order(
    points: &[(&str, Option<&str>)],
    wire: &[(String, Value)],
    unordered: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let labels: Vec<String> = wire
        .iter()
        .filter(|(kind, _)| !unordered.contains(kind))
        .filter_map(|(kind, frame)| {
            if kind.starts_with("response:") || kind.starts_with("error:") {
                return Some(kind.clone());
            }
            let (_, at) = points.iter().find(|(p, _)| wildcard(p, kind))?;
            let value = at
                .and_then(|pointer| frame.pointer(pointer))
                .and_then(Value::as_str);
            Some(match value {
                Some(v) => format!("{kind}:{v}"),
                None => kind.clone(),
            })
        })
        .collect();
    collapse(&labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_read_as_form_and_trend() {
        let p = |v: Value| pattern(v.as_array().unwrap()).unwrap();
        assert_eq!(p(json!([256.5, 512.5, 8192.5])), "fractions, growing");
        assert_eq!(p(json!([8, 8, 8])), "whole numbers, constant");
        assert_eq!(p(json!([3])), "whole numbers");
        assert!(patterns_differ(
            "fractions, growing",
            "whole numbers, constant"
        ));
        // One frame has no trend: only the form is compared.
        assert!(!patterns_differ("whole numbers", "whole numbers, growing"));
    }

    #[test]
    fn ids_are_read_as_repeated_or_fresh_unless_masked_without_numbers() {
        let p = |v: Value| pattern(v.as_array().unwrap());
        assert_eq!(
            p(json!(["<id:3>", "<id:3>", "<id:3>"])).as_deref(),
            Some("one value throughout")
        );
        assert_eq!(
            p(json!(["<id:3>", "<id:4>"])).as_deref(),
            Some("a fresh value each time")
        );
        assert_eq!(p(json!(["<id>", "<id>"])), None);
        assert_eq!(p(json!(["a"])), None);
    }

    #[test]
    fn the_verdict_order_folds_repeats_and_leaves_unordered_kinds_out() {
        let w = |k: &str, f: Value| (k.to_owned(), f);
        let wire = vec![
            w("response:turn/start", json!({})),
            w(
                "thread/status/changed",
                json!({"params": {"status": {"type": "active"}}}),
            ),
            w("item/agentMessage/delta", json!({})),
            w("turn/completed", json!({})),
            w(
                "thread/status/changed",
                json!({"params": {"status": {"type": "idle"}}}),
            ),
            w(
                "thread/status/changed",
                json!({"params": {"status": {"type": "idle"}}}),
            ),
        ];
        let points = [
            ("thread/status/changed", Some("/params/status/type")),
            ("turn/*", None),
        ];
        let unordered = ["response:turn/start".to_owned()].into();
        assert_eq!(
            verdict_order(&points, &wire, &unordered),
            [
                "thread/status/changed:active",
                "turn/completed",
                "thread/status/changed:idle"
            ]
        );
    }
}
