//! What differs from run to run, masked so a fixture changes only when the runtime does:
//! ids (numbered per run), times, paths, the loopback port, retry delays (kept by magnitude).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Replaces what differs from run to run — ids, times, paths, retry delays — with
/// placeholders, so a fixture changes only when the runtime does. Each id becomes `<id:N>`,
/// numbered by first appearance in `ids` (one table per run): which frames share an id is
/// kept, the id is not.
pub fn normalise(frame: &Value, run_dir: &str, ids: &mut Ids) -> Value {
    fn walk(v: &Value, key: &str, run_dir: &str, ids: &mut Ids) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| {
                        // A map keyed by model name: the configured model, not a field.
                        let name = if KEYED_BY_MODEL.contains(&key) {
                            "<model>".to_owned()
                        } else {
                            k.clone()
                        };
                        (name, walk(v, k, run_dir, ids))
                    })
                    .collect::<Map<_, _>>(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, key, run_dir, ids)).collect()),
            Value::Number(_) if VOLATILE_NUMBERS.contains(&key) => Value::from(0),
            Value::Number(n) if BACKOFFS.contains(&key) => backoff_bucket(n),
            Value::String(s) => Value::String(normalise_text(s, run_dir, ids)),
            other => other.clone(),
        }
    }
    walk(frame, "", run_dir, ids)
}

/// The ids a run's frames name, numbered by first appearance.
#[derive(Debug, Default)]
pub struct Ids(BTreeMap<String, usize>);

impl Ids {
    fn mask(&mut self, id: &str) -> String {
        let next = self.0.len() + 1;
        format!("<id:{}>", self.0.entry(id.to_owned()).or_insert(next))
    }
}

/// Keys of maps whose keys are model names (Claude Code's per-model usage).
const KEYED_BY_MODEL: &[&str] = &["modelUsage", "model_usage_since_last_result"];

/// Keys whose numbers are clocks: their values say nothing, nor does how they grow.
const VOLATILE_NUMBERS: &[&str] = &[
    "time",
    "time0",
    "dt",
    "emittedAtMs",
    "createdAt",
    "updatedAt",
    "recencyAt",
    "startedAt",
    "completedAt",
    "durationMs",
    "startedAtMs",
    "completedAtMs",
    "finishedAt",
];

/// Keys whose numbers are jittered delays: their values change from run to run, but whether
/// they are whole milliseconds or fractions, and how they grow (exponential backoff), is the
/// runtime's.
const BACKOFFS: &[&str] = &["delayMs"];

/// A delay as its power of two below (jitter rarely crosses one), plus one half when it has a
/// fraction: `501.18` → `256.5`, `8522` → `8192`.
fn backoff_bucket(n: &serde_json::Number) -> Value {
    let x = n.as_f64().unwrap_or(0.0);
    if x < 1.0 {
        return Value::from(0);
    }
    let bucket = 2f64.powi(x.log2().floor() as i32);
    if x.fract() == 0.0 {
        Value::from(bucket as u64)
    } else {
        Value::from(bucket + 0.5)
    }
}

fn normalise_text(s: &str, run_dir: &str, ids: &mut Ids) -> String {
    let mut out = if run_dir.is_empty() {
        s.to_owned()
    } else {
        s.replace(run_dir, "<run>")
    };
    // The loopback model endpoint's port.
    while let Some(i) = out.find("127.0.0.1:") {
        let start = i + "127.0.0.1:".len();
        let digits = out[start..]
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        if digits == 0 {
            break;
        }
        out.replace_range(i..start + digits, "<loopback>");
    }
    // UUIDs and long hex ids (session ids, request ids, message ids).
    let mut result = String::with_capacity(out.len());
    let chars: Vec<char> = out.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let run: String = chars[i..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() || **c == '-')
            .collect();
        let hex = run.chars().filter(char::is_ascii_hexdigit).count();
        let starts_word = i == 0 || !chars[i - 1].is_ascii_alphanumeric();
        if starts_word && hex >= 16 && run.chars().any(|c| c.is_ascii_digit()) {
            result.push_str(&ids.mask(&run));
            i += run.chars().count();
        } else {
            result.push(chars[i]);
            i += 1;
        }
    }
    result
}
