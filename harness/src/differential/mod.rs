//! The wire differential: what a real runtime sends (recorded by `conform peer-proxy` in the
//! peer scenarios, normalised and kept in `fakes/peers/` as fixtures) against what the fake
//! sends in the analogous scripted scenario. It compares *shapes* — which kinds of frame, which
//! fields with which JSON types, in which order — and *values* where they carry meaning: every
//! closed value (a number, a boolean, a one-word string such as a code, a status, a stop reason)
//! at each field of each kind, and how many frames of each kind. Free text, and what normalising
//! masks (ids, times, paths, the loopback port), is not compared; nor are fields declared
//! volatile (`[[volatile]]` in `fakes/peers/differences.toml`, each with its reason). Every
//! difference is either closed in the fakes or listed, with its reason, in
//! `fakes/peers/differences.toml`; an unexplained one fails.

pub mod accept;
mod coverage;
mod diff;
mod drafts;
mod explained;
pub mod learn;
pub mod sdk_flags;
pub mod upgrade;
pub mod vocabulary;
mod wire;

pub use coverage::{CoverageOptions, coverage};
pub use diff::{DiffOptions, diff};
pub use drafts::record_peer;
pub use explained::{Explained, ExplainedEntry, FILE, Leave};

use std::collections::{BTreeMap, BTreeSet};

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value};

/// Replaces what differs from run to run — ids, times, paths, retry delays — with
/// placeholders, so a fixture changes only when the runtime does.
pub fn normalise(frame: &Value, run_dir: &str) -> Value {
    fn walk(v: &Value, key: &str, run_dir: &str) -> Value {
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
                        (name, walk(v, k, run_dir))
                    })
                    .collect::<Map<_, _>>(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, key, run_dir)).collect()),
            Value::Number(_) if VOLATILE_NUMBERS.contains(&key) => Value::from(0),
            Value::String(s) => Value::String(normalise_text(s, run_dir)),
            other => other.clone(),
        }
    }
    walk(frame, "", run_dir)
}

/// Keys of maps whose keys are model names (Claude Code's per-model usage).
const KEYED_BY_MODEL: &[&str] = &["modelUsage", "model_usage_since_last_result"];

/// Keys whose numbers are clocks or jittered delays.
const VOLATILE_NUMBERS: &[&str] = &[
    "time",
    "time0",
    "dt",
    "delayMs",
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

fn normalise_text(s: &str, run_dir: &str) -> String {
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
    let bytes: Vec<char> = out.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let run: String = bytes[i..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit() || **c == '-')
            .collect();
        let hex = run.chars().filter(char::is_ascii_hexdigit).count();
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if starts_word && hex >= 16 && run.chars().any(|c| c.is_ascii_digit()) {
            result.push_str("<id>");
            i += run.chars().count();
        } else {
            result.push(bytes[i]);
            i += 1;
        }
    }
    out = result;
    out
}

/// A frame's kind, as its protocol's codec names it ([`Codec::frame_kind`]).
pub fn kind(provider: Provider, frame: &Value, answers: Option<&str>) -> String {
    conform_fakes::codec::for_provider(provider).frame_kind(frame, answers)
}

/// Visits every value in a frame with its field path (`.params.items[].status`): the one
/// spelling of a path that shapes, values and explanations (`.path:type`, `.path=`) share.
fn each_path(v: &Value, path: &str, visit: &mut impl FnMut(&str, &Value)) {
    visit(path, v);
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                each_path(x, &format!("{path}.{k}"), visit);
            }
        }
        Value::Array(a) => {
            for x in a {
                each_path(x, &format!("{path}[]"), visit);
            }
        }
        _ => {}
    }
}

/// The field paths of a frame with their JSON types (`params.event.data.stream[].texts[]:string`).
pub fn fields(frame: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    each_path(frame, "", &mut |path, v| {
        let ty = match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        out.insert(format!("{path}:{ty}"));
    });
    out
}

/// One difference between a real wire and the fake's.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Difference {
    /// A kind of frame the real runtime sends that the fake never does.
    OnlyReal { kind: String },
    /// A kind of frame the fake sends that the real runtime never does.
    OnlyFake { kind: String },
    /// A field (path and type) of a kind both send, present only in the real frames.
    FieldOnlyReal { kind: String, field: String },
    /// A field present only in the fake's frames of that kind.
    FieldOnlyFake { kind: String, field: String },
    /// The two send their common kinds in another order (first kinds shown).
    Order {
        real: Vec<String>,
        fake: Vec<String>,
    },
    /// The protocol schema conform checks the fakes against rejects a frame the real runtime
    /// sent: the schema (and so the fakes) are wrong about the real wire.
    Schema { kind: String, error: String },
    /// A field of a kind both send carries other closed values (codes, statuses, enum values,
    /// numbering): each side's values, as JSON.
    Values {
        kind: String,
        field: String,
        real: BTreeSet<String>,
        fake: BTreeSet<String>,
    },
    /// Both send a kind, a different number of times (five retries against one).
    Count {
        kind: String,
        real: usize,
        fake: usize,
    },
}

impl Difference {
    /// The key a `differences.toml` entry matches (`kind` alone, or `kind` + `field`).
    pub fn key(&self) -> (String, Option<String>) {
        match self {
            Difference::OnlyReal { kind } | Difference::OnlyFake { kind } => (kind.clone(), None),
            Difference::FieldOnlyReal { kind, field }
            | Difference::FieldOnlyFake { kind, field } => (kind.clone(), Some(field.clone())),
            Difference::Order { .. } => ("order".into(), None),
            Difference::Schema { kind, .. } => (kind.clone(), Some("schema".into())),
            Difference::Values { kind, field, .. } => (kind.clone(), Some(format!("{field}="))),
            Difference::Count { kind, .. } => (kind.clone(), Some("count".into())),
        }
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::OnlyReal { kind } => {
                write!(f, "the real runtime sends `{kind}`; the fake never does")
            }
            Difference::OnlyFake { kind } => {
                write!(f, "the fake sends `{kind}`; the real runtime never does")
            }
            Difference::FieldOnlyReal { kind, field } => {
                write!(
                    f,
                    "`{kind}`: the real runtime sends field `{field}`; the fake never does"
                )
            }
            Difference::FieldOnlyFake { kind, field } => {
                write!(
                    f,
                    "`{kind}`: the fake sends field `{field}`; the real runtime never does"
                )
            }
            Difference::Schema { kind, error } => write!(
                f,
                "conform's schema rejects a `{kind}` frame the real runtime sent: {error}"
            ),
            Difference::Order { real, fake } => write!(
                f,
                "order of common kinds differs:\n      real: {}\n      fake: {}",
                real.join(" → "),
                fake.join(" → ")
            ),
            Difference::Values {
                kind,
                field,
                real,
                fake,
            } => {
                let show = |v: &BTreeSet<String>| v.iter().cloned().collect::<Vec<_>>().join(", ");
                write!(
                    f,
                    "`{kind}` `{field}`: the real runtime sends {}; the fake sends {}",
                    show(real),
                    show(fake)
                )
            }
            Difference::Count { kind, real, fake } => write!(
                f,
                "`{kind}`: the real runtime sends it {} time(s); the fake {}",
                real, fake
            ),
        }
    }
}

/// What one wire shows, kind by kind.
#[derive(Debug, Default)]
struct Profile {
    /// Kinds in order of first appearance.
    order: Vec<String>,
    /// Field paths with their JSON types.
    fields: BTreeMap<String, BTreeSet<String>>,
    /// Closed values ([`closed`]) by field path.
    values: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    /// How many frames.
    counts: BTreeMap<String, usize>,
}

impl Profile {
    fn of(frames: &[(String, Value)]) -> Profile {
        let mut p = Profile::default();
        for (kind, frame) in frames {
            if !p.order.contains(kind) {
                p.order.push(kind.clone());
            }
            p.fields
                .entry(kind.clone())
                .or_default()
                .extend(fields(frame));
            closed_values(frame, p.values.entry(kind.clone()).or_default());
            *p.counts.entry(kind.clone()).or_default() += 1;
        }
        p
    }
}

/// A value that carries meaning as it is, as JSON: a number, a boolean, null, or a string of
/// one word (a code, a status, an enum value, a method). Free text, and what normalising
/// masked (`<id>`, `<run>/…`), are not.
fn closed(v: &Value) -> Option<String> {
    let word = |s: &str| {
        !s.is_empty()
            && s.len() <= 64
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c))
    };
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        Value::String(s) if word(s) => Some(v.to_string()),
        _ => None,
    }
}

/// Every closed value of `v` by its field path (`.error.code`, `.params.items[].status`).
fn closed_values(v: &Value, out: &mut BTreeMap<String, BTreeSet<String>>) {
    each_path(v, "", &mut |path, leaf| {
        if let Some(c) = closed(leaf) {
            out.entry(path.to_owned()).or_default().insert(c);
        }
    });
}

/// Compares a real wire with a fake one, both as `(kind, frame)` in wire order: kinds, their
/// fields, the order of the kinds both send (bar `leave.unordered`), the closed values of
/// each field both send (bar `leave.volatile`), and how often each kind comes.
pub fn compare(
    real: &[(String, Value)],
    fake: &[(String, Value)],
    leave: &Leave,
) -> Vec<Difference> {
    let (r, f) = (Profile::of(real), Profile::of(fake));
    let mut out = Vec::new();
    for k in &r.order {
        match f.fields.get(k) {
            None => out.push(Difference::OnlyReal { kind: k.clone() }),
            Some(ff) => {
                for field in r.fields[k].difference(ff) {
                    out.push(Difference::FieldOnlyReal {
                        kind: k.clone(),
                        field: field.clone(),
                    });
                }
                for field in ff.difference(&r.fields[k]) {
                    out.push(Difference::FieldOnlyFake {
                        kind: k.clone(),
                        field: field.clone(),
                    });
                }
                out.extend(value_differences(k, &r.values[k], &f.values[k], leave));
                if r.counts[k] != f.counts[k] {
                    out.push(Difference::Count {
                        kind: k.clone(),
                        real: r.counts[k],
                        fake: f.counts[k],
                    });
                }
            }
        }
    }
    for k in &f.order {
        if !r.fields.contains_key(k) {
            out.push(Difference::OnlyFake { kind: k.clone() });
        }
    }
    let common = |order: &[String], other: &BTreeMap<String, BTreeSet<String>>| -> Vec<String> {
        order
            .iter()
            .filter(|k| other.contains_key(*k) && !leave.unordered.contains(*k))
            .cloned()
            .collect()
    };
    let (rc, fc) = (common(&r.order, &f.fields), common(&f.order, &r.fields));
    if rc != fc {
        out.push(Difference::Order { real: rc, fake: fc });
    }
    out
}

/// The fields of one kind whose closed values differ: only where both sides send closed values
/// there (a field one side fills with free text is a matter of text, not of values).
fn value_differences(
    kind: &str,
    real: &BTreeMap<String, BTreeSet<String>>,
    fake: &BTreeMap<String, BTreeSet<String>>,
    leave: &Leave,
) -> Vec<Difference> {
    real.iter()
        .filter_map(|(field, rv)| {
            let fv = fake.get(field)?;
            (rv != fv && !leave.volatile(field)).then(|| Difference::Values {
                kind: kind.to_owned(),
                field: field.clone(),
                real: rv.clone(),
                fake: fv.clone(),
            })
        })
        .collect()
}

/// Real frames the protocol's schema rejects (the schema every fake frame is held to).
fn schema_rejections(
    provider: Provider,
    version: Option<&str>,
    real: &[(String, Value)],
) -> Vec<Difference> {
    // A recorded wire names the ids the runtime made up `<id>` (a stable fixture); the schema
    // sees a well-formed one in its place, so only what the runtime chose is judged.
    fn unmask(v: &mut Value) {
        match v {
            Value::String(s) if s == "<id>" => *s = "00000000-0000-4000-8000-000000000000".into(),
            Value::Array(a) => a.iter_mut().for_each(unmask),
            Value::Object(o) => o.values_mut().for_each(unmask),
            _ => {}
        }
    }
    let lines: Vec<FakeLine> = real
        .iter()
        .map(|(kind, frame)| FakeLine {
            seq: None,
            run: String::new(),
            pid: 0,
            event: FakeEvent::Frame {
                dir: Direction::Sent,
                frame: {
                    let mut f = frame.clone();
                    unmask(&mut f);
                    f
                },
                violation: None,
                answers: kind
                    .strip_prefix("response:")
                    .or_else(|| kind.strip_prefix("error:"))
                    .map(str::to_owned),
            },
        })
        .collect();
    let Some(invalid) = conform_fakes::schema::unmarked_invalid_frames(provider, version, &lines)
    else {
        return vec![];
    };
    let mut out: Vec<Difference> = invalid
        .into_iter()
        .filter_map(|(line, error)| match &line.event {
            FakeEvent::Frame { frame, answers, .. } => Some(Difference::Schema {
                kind: kind(provider, frame, answers.as_deref()),
                error: conform_protocol::lines::excerpt(&error, 300),
            }),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.key() == b.key());
    out
}

#[cfg(test)]
mod tests;
