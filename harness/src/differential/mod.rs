//! The wire differential: what a real runtime sends (recorded by `conform peer-proxy` in the
//! peer scenarios, normalised and kept in `fakes/peers/` as fixtures) against what the fake
//! sends in the analogous scripted scenario. It compares *shapes* — which kinds of frame, which
//! fields with which JSON types, in which order — and *values* where they carry meaning: every
//! closed value (a number, a boolean, a one-word string such as a code, a status, a stop reason)
//! at each field of each kind, in the order the frames carry them, and how many frames of each
//! kind. It reads whole sequences too ([`sequence`]): the order of the frames a provider's
//! verdict rests on, where each id was first sent, and — at fields declared volatile
//! (`[[volatile]]` in `fakes/peers/differences.toml`, each with its reason), whose values are
//! not compared — their pattern: whole numbers or fractions, constant or growing, one id or a
//! fresh one each time. Last, how the runtime ended ([`lifecycle`]). Free text, and what
//! normalising masks (ids, times, paths, the loopback port), is not compared. Every difference
//! is either closed in the fakes or listed, with its reason, in `fakes/peers/differences.toml`;
//! an unexplained one fails. `conform peers coverage` ([`coverage`]) holds the catalog to
//! sending every kind the fixtures hold.

pub mod accept;
mod coverage;
mod diff;
mod drafts;
pub mod error;
mod explained;
pub mod learn;
mod lifecycle;
mod normalise;
pub mod sdk_flags;
mod sequence;
pub mod upgrade;
pub mod vocabulary;
mod wire;

pub use coverage::{CoverageOptions, CoverageReport, UnsentKind, coverage};
pub use diff::{CaseDiff, DiffOptions, DiffProgress, DiffReport, diff, rebuild_first};
pub use drafts::record_peer;
pub use explained::{Explained, ExplainedEntry, FILE, Leave};
pub use normalise::{Ids, normalise};

use std::collections::{BTreeMap, BTreeSet};

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde_json::Value;

/// A frame's kind, as its protocol's codec names it ([`Codec::frame_kind`]).
pub fn kind(provider: Provider, frame: &Value, answers: Option<&str>) -> String {
    conform_fakes::protocols::codec_for(provider).frame_kind(frame, answers)
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
    /// A field of a kind both send carries the same closed values in another order across
    /// its frames (repeats folded): each side's order.
    Sequence {
        kind: String,
        field: String,
        real: Vec<String>,
        fake: Vec<String>,
    },
    /// A volatile field's values follow another pattern: whole numbers or fractions, constant
    /// or growing, one id repeated or a fresh one each time.
    Pattern {
        kind: String,
        field: String,
        real: String,
        fake: String,
    },
    /// The frames a provider's verdict rests on (answers, statuses, terminals, errors) come in
    /// another order (repeats folded).
    VerdictOrder {
        real: Vec<String>,
        fake: Vec<String>,
    },
    /// A field's ids come from another place: where each side's values were first sent
    /// (`kind field`), when not here ([`sequence::references`]).
    Reference {
        kind: String,
        field: String,
        real: BTreeSet<String>,
        fake: BTreeSet<String>,
    },
    /// The runtime ends otherwise: after another thing, by another means, or at another pace
    /// ([`lifecycle::Ending`], each side in words).
    Lifecycle { real: String, fake: String },
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
            Difference::Sequence { kind, field, .. } => {
                (kind.clone(), Some(format!("{field}@order")))
            }
            Difference::Pattern { kind, field, .. } => {
                (kind.clone(), Some(format!("{field}@pattern")))
            }
            Difference::VerdictOrder { .. } => ("verdict-order".into(), None),
            Difference::Reference { kind, field, .. } => {
                (kind.clone(), Some(format!("{field}@reference")))
            }
            Difference::Lifecycle { .. } => ("lifecycle".into(), None),
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
            Difference::Sequence {
                kind,
                field,
                real,
                fake,
            } => write!(
                f,
                "`{kind}` `{field}`: the real runtime sends {} in this order; the fake {}",
                real.join(" → "),
                fake.join(" → ")
            ),
            Difference::Pattern {
                kind,
                field,
                real,
                fake,
            } => write!(
                f,
                "`{kind}` `{field}`: the real runtime sends {real}; the fake {fake}"
            ),
            Difference::Reference {
                kind,
                field,
                real,
                fake,
            } => {
                let show = |v: &BTreeSet<String>| {
                    if v.is_empty() {
                        "a value sent nowhere before".to_owned()
                    } else {
                        format!(
                            "the id first sent at {}",
                            v.iter().cloned().collect::<Vec<_>>().join(", ")
                        )
                    }
                };
                write!(
                    f,
                    "`{kind}` `{field}`: the real runtime sends {}; the fake {}",
                    show(real),
                    show(fake)
                )
            }
            Difference::Lifecycle { real, fake } => write!(
                f,
                "how the runtime ends: the real runtime {real}; the fake {fake}"
            ),
            Difference::VerdictOrder { real, fake } => write!(
                f,
                "the frames a verdict rests on come in another order:\n      real: {}\n      fake: {}",
                real.join(" → "),
                fake.join(" → ")
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
    /// Every scalar by field path, in wire order across the kind's frames.
    sequences: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
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
            let seq = p.sequences.entry(kind.clone()).or_default();
            each_path(frame, "", &mut |path, leaf| {
                if !leaf.is_object() && !leaf.is_array() {
                    seq.entry(path.to_owned()).or_default().push(leaf.clone());
                }
            });
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

/// Compares a real wire with a fake one of `provider`, both as `(kind, frame)` in wire order:
/// kinds, their fields, the order of the kinds both send (bar `leave.unordered`), the closed
/// values of each field both send and their order (bar `leave.volatile`, whose values are
/// read for their pattern instead), how often each kind comes, and the order of the frames a
/// verdict rests on.
pub fn compare(
    provider: Provider,
    real: &[(String, Value)],
    fake: &[(String, Value)],
    leave: &Leave,
) -> Vec<Difference> {
    let (real, real_end) = lifecycle::split(real);
    let (fake, fake_end) = lifecycle::split(fake);
    let mut out = Vec::new();
    // A fixture recorded before endings were kept says nothing of its end.
    if let (Some(r), Some(f)) = (real_end, fake_end)
        && r != f
    {
        out.push(Difference::Lifecycle {
            real: lifecycle::Ending::describe(r),
            fake: lifecycle::Ending::describe(f),
        });
    }
    let (real, fake) = (&real[..], &fake[..]);
    let (r, f) = (Profile::of(real), Profile::of(fake));
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
                out.extend(sequence_differences(
                    k,
                    &r.sequences[k],
                    &f.sequences[k],
                    leave,
                ));
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
    out.extend(reference_differences(real, fake, &r, &f, leave));
    let points = conform_fakes::protocols::codec_for(provider).verdict_points();
    let (rv, fv) = (
        sequence::verdict_order(points, real, &leave.unordered),
        sequence::verdict_order(points, fake, &leave.unordered),
    );
    if rv != fv {
        out.push(Difference::VerdictOrder { real: rv, fake: fv });
    }
    out
}

/// Fields of the kinds both send whose ids come from other places ([`sequence::references`]):
/// only where both sides send strings there, and never at a volatile field (its own ids are
/// judged by their pattern).
fn reference_differences(
    real: &[(String, Value)],
    fake: &[(String, Value)],
    r: &Profile,
    f: &Profile,
    leave: &Leave,
) -> Vec<Difference> {
    let (rr, fr) = (sequence::references(real), sequence::references(fake));
    let strings = |p: &Profile, kind: &str, field: &str| {
        p.sequences
            .get(kind)
            .and_then(|k| k.get(field))
            .is_some_and(|v| v.iter().all(Value::is_string))
    };
    let mut out = Vec::new();
    for (kind, fields) in &rr {
        for (field, real_refs) in fields {
            if leave.volatile(field) || !strings(r, kind, field) || !strings(f, kind, field) {
                continue;
            }
            let empty = BTreeSet::new();
            let fake_refs = fr.get(kind).and_then(|k| k.get(field)).unwrap_or(&empty);
            if real_refs != fake_refs {
                out.push(Difference::Reference {
                    kind: kind.clone(),
                    field: field.clone(),
                    real: real_refs.clone(),
                    fake: fake_refs.clone(),
                });
            }
        }
    }
    out
}

/// Per field of one kind both send: closed values in another order (where both send the same
/// ones: other values are a [`Difference::Values`]), or, at a volatile field, values of
/// another pattern.
fn sequence_differences(
    kind: &str,
    real: &BTreeMap<String, Vec<Value>>,
    fake: &BTreeMap<String, Vec<Value>>,
    leave: &Leave,
) -> Vec<Difference> {
    let mut out = Vec::new();
    for (field, rv) in real {
        let Some(fv) = fake.get(field) else { continue };
        if leave.volatile(field) {
            if let (Some(rp), Some(fp)) = (sequence::pattern(rv), sequence::pattern(fv))
                && sequence::patterns_differ(&rp, &fp)
            {
                out.push(Difference::Pattern {
                    kind: kind.to_owned(),
                    field: field.clone(),
                    real: rp,
                    fake: fp,
                });
            }
            continue;
        }
        let closed_in_order = |vs: &[Value]| -> Vec<String> {
            sequence::collapse(&vs.iter().filter_map(closed).collect::<Vec<_>>())
        };
        let (rs, fs) = (closed_in_order(rv), closed_in_order(fv));
        let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<_>>();
        if rs != fs && set(&rs) == set(&fs) {
            out.push(Difference::Sequence {
                kind: kind.to_owned(),
                field: field.clone(),
                real: rs,
                fake: fs,
            });
        }
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
            // `<id>` as fixtures masked ids before they numbered them, `<id:N>` since.
            Value::String(s) if s == "<id>" || (s.starts_with("<id:") && s.ends_with('>')) => {
                *s = "00000000-0000-4000-8000-000000000000".into()
            }
            Value::Array(a) => a.iter_mut().for_each(unmask),
            Value::Object(o) => o.values_mut().for_each(unmask),
            _ => {}
        }
    }
    let lines: Vec<FakeLine> = real
        .iter()
        .filter(|(kind, _)| kind != lifecycle::END)
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
