//! The wire differential: what a real runtime sends (recorded by `conform peer-proxy` in the
//! peer scenarios, normalised and kept in `fakes/peers/` as fixtures) against what the fake
//! sends in the analogous scripted scenario. It compares *shapes* — which kinds of frame, which
//! fields with which JSON types, in which order — because values (ids, times, texts) differ by
//! design. Every difference is either closed in the fakes or listed, with its reason, in
//! `fakes/peers/differences.toml`; an unexplained one fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Replaces what differs from run to run — ids, times, paths, retry delays — with
/// placeholders, so a fixture changes only when the runtime does.
pub fn normalise(frame: &Value, run_dir: &str) -> Value {
    fn walk(v: &Value, key: &str, run_dir: &str) -> Value {
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), walk(v, k, run_dir)))
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

/// The field paths of a frame with their JSON types (`params.event.data.stream[].texts[]:string`).
pub fn fields(frame: &Value) -> BTreeSet<String> {
    fn walk(v: &Value, path: &str, out: &mut BTreeSet<String>) {
        let ty = match v {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        out.insert(format!("{path}:{ty}"));
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    walk(x, &format!("{path}.{k}"), out);
                }
            }
            Value::Array(a) => {
                for x in a {
                    walk(x, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(frame, "", &mut out);
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
        }
    }
}

/// Kinds in order of first appearance, with the union of their fields.
fn profile(frames: &[(String, Value)]) -> (Vec<String>, BTreeMap<String, BTreeSet<String>>) {
    let mut order = Vec::new();
    let mut fields_by_kind: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (kind, frame) in frames {
        if !order.contains(kind) {
            order.push(kind.clone());
        }
        fields_by_kind
            .entry(kind.clone())
            .or_default()
            .extend(fields(frame));
    }
    (order, fields_by_kind)
}

/// Compares a real wire with a fake one, both as `(kind, frame)` in wire order. Kinds in
/// `unordered` (sent asynchronously by the real runtime, observed in either place) are left out
/// of the order comparison.
pub fn compare(
    real: &[(String, Value)],
    fake: &[(String, Value)],
    unordered: &BTreeSet<String>,
) -> Vec<Difference> {
    let (real_order, real_fields) = profile(real);
    let (fake_order, fake_fields) = profile(fake);
    let mut out = Vec::new();
    for k in &real_order {
        match fake_fields.get(k) {
            None => out.push(Difference::OnlyReal { kind: k.clone() }),
            Some(ff) => {
                for field in real_fields[k].difference(ff) {
                    out.push(Difference::FieldOnlyReal {
                        kind: k.clone(),
                        field: field.clone(),
                    });
                }
                for field in ff.difference(&real_fields[k]) {
                    out.push(Difference::FieldOnlyFake {
                        kind: k.clone(),
                        field: field.clone(),
                    });
                }
            }
        }
    }
    for k in &fake_order {
        if !real_fields.contains_key(k) {
            out.push(Difference::OnlyFake { kind: k.clone() });
        }
    }
    let common = |order: &[String], other: &BTreeMap<String, BTreeSet<String>>| -> Vec<String> {
        order
            .iter()
            .filter(|k| other.contains_key(*k) && !unordered.contains(*k))
            .cloned()
            .collect()
    };
    let (rc, fc) = (
        common(&real_order, &fake_fields),
        common(&fake_order, &real_fields),
    );
    if rc != fc {
        out.push(Difference::Order { real: rc, fake: fc });
    }
    out
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

/// `fakes/peers/differences.toml`: the differences kept on purpose, each with its reason.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Explained {
    #[serde(default)]
    pub difference: Vec<ExplainedEntry>,
    /// Kinds a real runtime sends asynchronously: their place in the order is not judged.
    #[serde(default)]
    pub unordered: Vec<Unordered>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unordered {
    pub peer: String,
    pub kind: String,
    /// What was observed (the runs in which it came early and late).
    pub reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainedEntry {
    /// The peer (`dsh-sdk`), as in `peers.json`.
    pub peer: String,
    /// Only for this peer scenario (absent: every scenario of the peer).
    pub scenario: Option<String>,
    /// The frame kind, or `order`.
    pub kind: String,
    /// A field path with its type, for field differences; absent: every difference of the kind.
    pub field: Option<String>,
    /// Why the fake differs on purpose (or why it cannot matter to a provider).
    pub reason: String,
    /// The real runtime does this in some runs only (a race): never reported stale.
    #[serde(default)]
    pub sometimes: bool,
}

impl Explained {
    pub fn load(path: &Path) -> Result<Explained, String> {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Explained::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(text) => toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        }
    }

    /// The reason a difference is kept, if it is listed.
    pub fn reason(&self, peer: &str, scenario: &str, d: &Difference) -> Option<(usize, &str)> {
        let (kind, field) = d.key();
        self.difference
            .iter()
            .enumerate()
            .find(|(_, e)| {
                e.peer == peer
                    && e.scenario.as_deref().is_none_or(|s| s == scenario)
                    && e.kind == kind
                    && (e.field.is_none() || e.field.as_deref() == field.as_deref())
            })
            .map(|(i, e)| (i, e.reason.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn volatile_values_are_masked_and_shapes_kept() {
        let f = json!({"params": {"sessionId": "session-0123456789abcdef0123456789abcdef",
            "event": {"time": 1796090370099_u64, "seq": 3, "data": {"id": "7887a44c-9297-4893-9cc4-e41e56d40641",
            "cwd": "/tmp/conform-x/r1/workspace", "text": "Hello, world."}}}});
        let n = normalise(&f, "/tmp/conform-x/r1");
        assert_eq!(n["params"]["sessionId"], "session-<id>");
        assert_eq!(n["params"]["event"]["time"], 0);
        assert_eq!(n["params"]["event"]["seq"], 3);
        assert_eq!(n["params"]["event"]["data"]["id"], "<id>");
        assert_eq!(n["params"]["event"]["data"]["cwd"], "<run>/workspace");
        assert_eq!(n["params"]["event"]["data"]["text"], "Hello, world.");
    }

    #[test]
    fn kinds_fields_and_order_are_compared() {
        let k = |f: &Value| (kind(Provider::DshSdk, f, None), f.clone());
        let real = vec![
            k(&json!({"method": "session.event", "params": {"event": {"type": "turn/start"}}})),
            k(
                &json!({"method": "session.event", "params": {"event": {"type": "assistant/message", "data": {"stream": []}}}}),
            ),
        ];
        let fake = vec![k(
            &json!({"method": "session.event", "params": {"event": {"type": "assistant/message", "data": {"x": 1}}}}),
        )];
        let d = compare(&real, &fake, &BTreeSet::new());
        assert!(
            d.contains(&Difference::OnlyReal {
                kind: "session.event:turn/start".into()
            }),
            "{d:?}"
        );
        assert!(d.iter().any(|x| matches!(x, Difference::FieldOnlyReal { field, .. } if field == ".params.event.data.stream:array")), "{d:?}");
        assert!(d.iter().any(|x| matches!(x, Difference::FieldOnlyFake { field, .. } if field == ".params.event.data.x:number")), "{d:?}");
    }
}

/// What `conform peers diff` needs.
pub struct DiffOptions {
    pub scenarios: std::path::PathBuf,
    pub snapshots: std::path::PathBuf,
    /// The fixtures folder (`fakes/peers/`): recorded real wires and `differences.toml`.
    pub fixtures: std::path::PathBuf,
    /// Record the real wires afresh from these installed peers (else: the fixtures).
    pub peers: Option<std::path::PathBuf>,
    /// Write what was recorded over the fixtures.
    pub update: bool,
}

/// One recorded frame in a fixture: the frame, and the method a response answers.
#[derive(Debug, serde::Serialize, Deserialize)]
struct Recorded {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answers: Option<String>,
    frame: Value,
}

/// The frames the runtime (real or fake) sent, in order, from a run's ledger.
fn recorded(ledger: &[FakeLine]) -> Vec<Recorded> {
    ledger
        .iter()
        .filter_map(|l| match &l.event {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                answers,
                ..
            } => Some(Recorded {
                answers: answers.clone(),
                frame: frame.clone(),
            }),
            _ => None,
        })
        .collect()
}

fn kinds_of(provider: Provider, records: Vec<Recorded>) -> Vec<(String, Value)> {
    let codec = conform_fakes::codec::for_provider(provider);
    records
        .into_iter()
        .map(|r| (codec.frame_kind(&r.frame, r.answers.as_deref()), r.frame))
        .collect()
}

fn fixture_path(dir: &Path, peer: &str, id: &str) -> std::path::PathBuf {
    dir.join(peer)
        .join(format!("{}.jsonl", id.rsplit('/').next().unwrap_or(id)))
}

fn read_fixture(provider: Provider, path: &Path) -> Result<Vec<(String, Value)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect::<Result<Vec<Recorded>, String>>()?;
    Ok(kinds_of(provider, records))
}

/// Runs the scenarios with these exact ids in foreground and returns each one's ledger.
/// A run's ledger, its scratch folder, when each ledger line arrived (ms) and its deadline (ms).
struct Ledger {
    lines: Vec<FakeLine>,
    run_dir: String,
    at_ms: Vec<u64>,
    deadline_ms: u64,
}

async fn ledgers(
    opts: &DiffOptions,
    ids: &[String],
    peers: Option<std::path::PathBuf>,
    product_versions: BTreeMap<Provider, String>,
) -> Result<BTreeMap<String, Ledger>, String> {
    let report = crate::suite::run(crate::suite::Options {
        filters: ids.to_vec(),
        settings: crate::settings::Settings {
            product_versions: product_versions.into_iter().collect(),
            allow_skips: true,
            peers,
            ..Default::default()
        },
        keep_ledgers: true,
        ..crate::suite::Options::new(opts.scenarios.clone(), opts.snapshots.clone())
    })
    .await
    .map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for c in report.cases {
        if c.mode != conform_protocol::subject::Mode::Foreground || !ids.contains(&c.scenario.id) {
            continue;
        }
        if let Some(obs) = c.obs {
            let deadline_ms = c.scenario.file.deadline_ms.unwrap_or(DEFAULT_DEADLINE_MS);
            out.insert(
                c.scenario.id.clone(),
                Ledger {
                    lines: obs.fake,
                    run_dir: obs.run_dir,
                    at_ms: obs.fake_at_ms,
                    deadline_ms,
                },
            );
        }
    }
    Ok(out)
}

const DEFAULT_DEADLINE_MS: u64 = 20_000;

/// Timing that matters, from when the ledger lines arrived: the `initialize` answer, the
/// terminal frame (the turn's end), and the share of the run's deadline it took.
fn timing(run: &Ledger) -> String {
    let at = |pred: &dyn Fn(&FakeEvent) -> bool| {
        run.lines
            .iter()
            .zip(&run.at_ms)
            .find(|(l, _)| pred(&l.event))
            .map(|(_, ms)| *ms)
    };
    let init = at(
        &|e| matches!(e, FakeEvent::Frame { dir: Direction::Sent, answers: Some(m), .. } if m == "initialize"),
    );
    let end = at(&|e| matches!(e, FakeEvent::Terminal));
    let show = |ms: Option<u64>| ms.map_or("never".to_owned(), |ms| format!("{ms} ms"));
    let mut out = format!(
        "timing: initialize answered at {}, turn ended at {} (deadline {} ms)",
        show(init),
        show(end),
        run.deadline_ms
    );
    if end.is_some_and(|ms| ms * 2 > run.deadline_ms) {
        out.push_str(" — over half the deadline: a loaded machine may miss it");
    } else if end.is_some_and(|ms| ms > DEFAULT_DEADLINE_MS) {
        out.push_str(" — past the default 20 s deadline: the scenario needs its own");
    }
    out
}

/// `conform peers diff`: prints the differential; returns the exit code (0: every difference
/// explained and no explanation stale; 1: not; 2: could not run).
pub async fn diff(opts: DiffOptions) -> Result<i32, String> {
    let all = crate::scenario::discover(&opts.scenarios).map_err(|errs| {
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let peer_cases: Vec<_> = all
        .iter()
        .filter_map(|s| {
            let p = s.file.peer.as_ref()?;
            Some((s.id.clone(), p.name.clone(), p.analog.clone()?))
        })
        .collect();
    // The product version each analog's fake speaks (`[peer] product_version`), by analog.
    let analog_versions: BTreeMap<&str, (Provider, Option<String>)> = all
        .iter()
        .filter_map(|s| {
            let p = s.file.peer.as_ref()?;
            Some((s.id.as_str(), (s.file.provider, p.product_version.clone())))
        })
        .collect();
    if peer_cases.is_empty() {
        return Err("no peer scenario names an analog".into());
    }
    // The real side: recorded now from installed peers, or the committed fixtures.
    let mut fresh: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
    if let Some(dir) = &opts.peers {
        let ids: Vec<String> = peer_cases.iter().map(|(id, _, _)| id.clone()).collect();
        let runs = ledgers(&opts, &ids, Some(dir.clone()), BTreeMap::new()).await?;
        for (id, peer, _) in &peer_cases {
            let Some(run) = runs.get(id) else {
                println!("{id}: not recorded (the peer is not installed?)");
                continue;
            };
            println!("{id}: {}", timing(run));
            let (ledger, run_dir) = (&run.lines, &run.run_dir);
            let records: Vec<Recorded> = recorded(ledger)
                .into_iter()
                .map(|r| Recorded {
                    frame: normalise(&r.frame, run_dir),
                    ..r
                })
                .collect();
            let text = records
                .iter()
                .map(|r| serde_json::to_string(r).expect("serialises") + "\n")
                .collect::<String>();
            fresh.insert(
                id.clone(),
                kinds_of(analog_versions[id.as_str()].0, records),
            );
            let path = fixture_path(&opts.fixtures, peer, id);
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            if old != text {
                if opts.update {
                    std::fs::create_dir_all(path.parent().expect("has a parent"))
                        .map_err(|e| e.to_string())?;
                    std::fs::write(&path, &text).map_err(|e| e.to_string())?;
                    println!("{id}: fixture written ({})", path.display());
                } else {
                    // Values differ from run to run in ways normalising cannot know (a log
                    // receipt that races the answer): shapes are judged below, not text.
                    println!(
                        "{id}: the recorded wire differs from the fixture {} as text (review; --update keeps it)",
                        path.display()
                    );
                }
            }
        }
    }
    // The analogs, run once per product version their fakes must speak.
    let mut fakes: BTreeMap<(String, Option<String>), Ledger> = BTreeMap::new();
    let mut by_version: BTreeMap<(Provider, Option<String>), Vec<String>> = BTreeMap::new();
    for (id, _, analog) in &peer_cases {
        let (provider, version) = analog_versions[id.as_str()].clone();
        by_version
            .entry((provider, version))
            .or_default()
            .push(analog.clone());
    }
    for ((provider, version), analogs) in by_version {
        let versions = version.iter().map(|v| (provider, v.clone())).collect();
        for (analog, ledger) in ledgers(&opts, &analogs, None, versions).await? {
            fakes.insert((analog, version.clone()), ledger);
        }
    }
    let explained = Explained::load(&opts.fixtures.join("differences.toml"))?;
    let mut used = BTreeSet::new();
    let mut unexplained = 0;
    for (id, peer, analog) in &peer_cases {
        let path = fixture_path(&opts.fixtures, peer, id);
        let real = match fresh
            .remove(id)
            .map(Ok)
            .unwrap_or_else(|| read_fixture(analog_versions[id.as_str()].0, &path))
        {
            Ok(r) => r,
            Err(e) => {
                println!("\n{id}: no recorded real wire ({e}); run `ci/peers`");
                unexplained += 1;
                continue;
            }
        };
        let Some(Ledger {
            lines: fake_ledger, ..
        }) = fakes.get(&(analog.clone(), analog_versions[id.as_str()].1.clone()))
        else {
            println!("\n{id}: the analog `{analog}` did not run");
            unexplained += 1;
            continue;
        };
        let fake = kinds_of(analog_versions[id.as_str()].0, recorded(fake_ledger));
        println!("\n{id} (real `{peer}`) vs {analog} (fake):");
        let unordered: BTreeSet<String> = explained
            .unordered
            .iter()
            .filter(|u| &u.peer == peer)
            .map(|u| u.kind.clone())
            .collect();
        let mut diffs = compare(&real, &fake, &unordered);
        let (provider, version) = &analog_versions[id.as_str()];
        diffs.extend(schema_rejections(*provider, version.as_deref(), &real));
        if diffs.is_empty() {
            println!("  no difference");
        }
        for d in diffs {
            match explained.reason(peer, id, &d) {
                Some((entry, reason)) => {
                    used.insert(entry);
                    println!("  kept: {d}\n        ({reason})");
                }
                None => {
                    unexplained += 1;
                    println!("  ✗ {d}");
                }
            }
        }
    }
    let stale: Vec<&ExplainedEntry> = explained
        .difference
        .iter()
        .enumerate()
        .filter(|(i, e)| !used.contains(i) && !e.sometimes)
        .map(|(_, e)| e)
        .collect();
    for e in &stale {
        println!(
            "\nstale explanation (no such difference any more; remove it): peer `{}`, kind `{}`{}",
            e.peer,
            e.kind,
            e.field
                .as_ref()
                .map(|f| format!(", field `{f}`"))
                .unwrap_or_default()
        );
    }
    println!(
        "\n{unexplained} unexplained difference(s), {} stale explanation(s)",
        stale.len()
    );
    // A fresh recording may miss what a real runtime does only sometimes (a log receipt that
    // races the answer): staleness is judged against the reviewed fixtures, offline.
    let stale_fails = opts.peers.is_none() && !stale.is_empty();
    if opts.peers.is_some() && !stale.is_empty() {
        println!(
            "(stale explanations are judged against the committed fixtures: `conform peers diff`)"
        );
    }
    Ok(i32::from(unexplained > 0 || stale_fails))
}
