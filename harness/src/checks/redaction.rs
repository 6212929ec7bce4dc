//! `contract.redaction`: no untrusted text reaches anything the model sees. The untrusted
//! strings of a scenario and the secret-like values its runtime is handed are matched against
//! every model-visible text in every form a leak takes ([`super::forms`]: raw, JSON-escaped,
//! percent-encoded, base64, normalised) — whole, line by line (a CR or LF inside a secret may
//! be where a provider splits it), across texts (a secret split between two fields), and by
//! every 24-character window (a leak the 4096-byte bound cut shows only in part). What the
//! contract itself shows — the scenario's expected texts, the fixed presentation phrases, the
//! run's label — never counts as a leak, even when an untrusted string happens to equal it.

use conform_fakes::codec::string_leaves;

use super::forms::{self, Form, WindowIndex};
use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

/// Derived untrusted strings shorter than this are not matched (they are vocabulary).
pub const MIN_DERIVED_CHARS: usize = 8;

/// A secret found only once the separators between texts are gone must be at least this long
/// there (shorter runs of characters meet by chance across a field boundary).
const MIN_COMPACT_CHARS: usize = 16;

/// Text every provider shows by contract (the foreground and background presentation): an
/// untrusted string that is part of it proves nothing when it appears.
const FIXED_PHRASES: &[&str] = &[
    "Error: subagent run failed",
    "Diagnostic: ",
    "Partial output before the run ended:",
    "started background subagent job ",
    "background job ",
    " finished [status: ",
    "]. Read its output with job_output.",
    "(no new output)",
    "Subagent failure (provider: ",
    "Product subagent failure (product: ",
    // The job status line the host composes from closed values (`[status: failed, error;
    // diagnostic: …]`): a string that is part of it — `[status: failed` — is the host's word.
    "[status: running]",
    "[status: completed]",
    "[status: killed]",
    "[status: failed, ",
    "; diagnostic: ",
    "dispose failed: ",
];

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    let expected = expected_texts(scenario);
    let shown_by_contract = |s: &str| {
        expected.iter().any(|e| e.contains(s)) || FIXED_PHRASES.iter().any(|p| p.contains(s))
    };
    // The label is the harness's own text, shown in notices by design.
    let label = format!("(subagent: {})", scenario.label());
    let texts: Vec<(&'static str, String)> = model_visible(obs)
        .into_iter()
        .map(|(what, text)| (what, text.replace(&label, "")))
        .collect();
    let seen = Seen::new(&texts, obs, &expected);
    let mut reported = std::collections::BTreeSet::new();
    for secret in run_secrets(scenario, obs) {
        if let Some(hit) = seen.leak(&secret, &shown_by_contract)
            && reported.insert((hit.what, secret.clone()))
        {
            f.push(Finding::new(
                Check::ContractRedaction,
                hit.describe(&secret),
            ));
        }
    }
}

/// Why the rendered texts of a run of `scenario` must not be stored as its snapshot: the first
/// known secret they hold (an untrusted string of the scenario, a secret-like value its runtime
/// is handed), in which form and in which text. `None`: they may be stored. The suite asks
/// before `--accept` writes (or a pending `.snap.new` is left); the render holds what the
/// redaction check reads and more (the start rejection's error name).
pub fn secret_in_snapshot(scenario: &Scenario, rendered: &str) -> Option<String> {
    let expected = expected_texts(scenario);
    let shown_by_contract = |s: &str| {
        expected.iter().any(|e| e.contains(s)) || FIXED_PHRASES.iter().any(|p| p.contains(s))
    };
    let label = format!("(subagent: {})", scenario.label());
    let text = rendered.replace(&label, "");
    let seen = Seen::new(&[("snapshot", text.clone())], &Observed::default(), &[]);
    let mut secrets = untrusted_strings(scenario);
    secrets.extend(runtime_secrets(scenario));
    secrets.iter().find_map(|secret| {
        let hit = seen.leak(secret, &shown_by_contract)?;
        Some(format!(
            "{} ({})",
            hit.describe(secret),
            block_of(&text, &hit.piece)
        ))
    })
}

/// The block of a rendered snapshot (`── tool result (isError: true) ──`) showing `piece`.
fn block_of(rendered: &str, piece: &str) -> String {
    let Some(at) = rendered.find(piece) else {
        return "in a decoded view of the texts".to_owned();
    };
    rendered[..at]
        .lines()
        .rev()
        .find(|l| l.starts_with("── ") && l.ends_with(" ──"))
        .map_or_else(
            || "before any block".to_owned(),
            |h| format!("in the block {h}"),
        )
}

/// Kinds of secret material, each a proptest strategy (a random token, a credential, a path,
/// multi-byte and combining text, right-to-left and zero-width characters, text dressed as a
/// diagnostic line, text with a line break, text long enough to cross the 4096-byte bound,
/// characters JSON, URLs and shells escape, terminal colour escapes).
pub fn secret_material() -> impl proptest::strategy::Strategy<Value = String> {
    proptest::prop_oneof![
        "[A-Za-z0-9]{1,12}",
        "(sk|ghp|xoxb|AKIA)-[A-Za-z0-9]{8,40}",
        "/(home|srv|Users)/[a-z]{2,8}/\\.(ssh|aws|config)/[a-z0-9_]{2,12}",
        "[\u{4e00}-\u{9fa5}]{1,6}",
        "[a-z]{1,4}[\u{0300}-\u{036f}]{1,3}[a-z]{0,4}",
        "[\u{0590}-\u{05ff}\u{200b}-\u{200f}\u{202a}-\u{202e}a-z]{2,10}",
        "Subagent failure \\(provider: (ACP|DSH SDK); stage: [a-z-]{3,12}; category: [a-z-]{3,12}\\)",
        "[a-z ]{3,20}\r?\n[A-Za-z: ]{3,20}",
        "[a-z0-9]{5000,6000}",
        "[\"\\\\%&<>'`$ ]{1,3}[a-z]{2,8}[\"\\\\%&<>'`$ ]{1,3}",
        "\u{1b}\\[[0-9]{1,2}m[a-z]{2,8}\u{1b}\\[0m",
    ]
}

/// Every string the run must keep from the model: the scenario's untrusted strings, the
/// secret-like values the runtime was handed, and the run's folder (the runtime's working
/// directory is in it: a runtime may echo it, and it is the user's machine, never the model's
/// business).
pub fn run_secrets(scenario: &Scenario, obs: &Observed) -> Vec<String> {
    let mut secrets = untrusted_strings(scenario);
    secrets.extend(runtime_secrets(scenario));
    if !obs.run_dir.is_empty() {
        secrets.push(obs.run_dir.clone());
    }
    secrets.sort();
    secrets.dedup();
    secrets
}

/// Where a secret showed, and how.
#[derive(Debug, PartialEq, Eq)]
pub struct Hit {
    /// Which model-visible text (or the texts together).
    pub what: &'static str,
    pub form: Form,
    /// What the text shows: the secret's form whole, one of its lines, or a window of it.
    pub piece: String,
    /// The piece is the whole secret in that form (not a line or a window of it).
    pub whole: bool,
}

impl Hit {
    fn describe(&self, secret: &str) -> String {
        let Hit {
            what, form, piece, ..
        } = self;
        let whole = self.whole && (*form != Form::Raw || piece == secret);
        match (form, whole) {
            (Form::Raw, true) => format!("the {what} contains untrusted text {secret:?}"),
            (Form::Raw, false) => {
                format!("the {what} contains {piece:?}, part of untrusted text {secret:?}")
            }
            (_, true) => {
                format!("the {what} contains untrusted text {secret:?} in its {form} form")
            }
            (_, false) => format!(
                "the {what} contains {piece:?}, part of untrusted text {secret:?} in its {form} form"
            ),
        }
    }
}

/// One model-visible text read one way.
struct View {
    what: &'static str,
    form: Form,
    text: String,
    /// The text outside the contract's own structured lines (where windows are looked for).
    unstructured: String,
}

impl View {
    /// `text` in each of its views ([`forms::views`]).
    fn all(what: &'static str, text: &str) -> Vec<View> {
        forms::views(text)
            .into_iter()
            .map(|(form, text)| View {
                what,
                form,
                unstructured: STRUCTURED_LINE.replace_all(&text, "\u{0}").into_owned(),
                text,
            })
            .collect()
    }
}

/// The texts across field boundaries: all of them joined as the model reads them, and the
/// result's diagnostic and output end to end, in either order (a secret split between them) —
/// each also without the text the scenario expects there, so a piece appended to the real
/// output or diagnostic meets the other piece.
fn joined_texts(
    texts: &[(&'static str, String)],
    obs: &Observed,
    expected: &[&str],
) -> Vec<String> {
    let all: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
    let mut out = vec![all.join("\n")];
    if let Some(r) = &obs.result
        && let Some(d) = &r.diagnostic
    {
        let output = r.output_text();
        for d in beyond_expected(d, expected) {
            for o in beyond_expected(&output, expected) {
                out.push(format!("{d}{o}"));
                out.push(format!("{o}{d}"));
            }
        }
    }
    out
}

/// A field, and what it holds beyond an expected text it starts or ends with.
fn beyond_expected<'a>(field: &'a str, expected: &[&str]) -> Vec<&'a str> {
    let mut out = vec![field];
    // Each with and without the space a provider puts between the two.
    for e in expected.iter().filter(|e| !e.is_empty()) {
        if let Some(rest) = field.strip_prefix(e) {
            out.extend([rest, rest.trim_start()]);
        }
        if let Some(rest) = field.strip_suffix(e) {
            out.extend([rest, rest.trim_end()]);
        }
    }
    out.dedup();
    out
}

/// All texts joined with the presentation's phrases, whitespace and format characters
/// removed, normalised: what is left when the separators between fields are gone.
fn compacted(texts: &[(&'static str, String)]) -> String {
    let mut all = texts
        .iter()
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    for p in FIXED_PHRASES {
        all = all.replace(p, "\n");
    }
    forms::normalized(&forms::compact(&all))
}

/// The model-visible texts of a run, read in every view ([`forms::views`]), each alone and
/// together as the model sees them.
struct Seen {
    views: Vec<View>,
    /// Every text joined as the model reads them, and each pair of result fields end to end.
    joined: Vec<View>,
    /// All texts joined without the presentation's phrases, whitespace or format characters.
    compact: String,
    /// Every window of every view, built when a secret is not found whole.
    index: std::cell::OnceCell<WindowIndex>,
}

impl Seen {
    fn new(texts: &[(&'static str, String)], obs: &Observed, expected: &[&str]) -> Seen {
        // The head of the host's status line is its own word, in every view.
        let texts: Vec<(&'static str, String)> = texts
            .iter()
            .map(|(what, t)| (*what, STATUS_HEAD.replace_all(t, "\u{0}").into_owned()))
            .collect();
        let mut views = Vec::new();
        for (what, text) in &texts {
            views.extend(View::all(what, text));
        }
        let mut joined = Vec::new();
        for text in joined_texts(&texts, obs, expected) {
            joined.extend(View::all("model-visible texts together", &text));
        }
        Seen {
            views,
            joined,
            compact: compacted(&texts),
            index: std::cell::OnceCell::new(),
        }
    }

    /// Every window of every view outside structured lines: a secret dressed as a diagnostic
    /// shares windows with the real one (whole and line matches still see everything).
    fn index(&self) -> &WindowIndex {
        self.index.get_or_init(|| {
            let mut index = WindowIndex::default();
            for (i, v) in self.views.iter().chain(&self.joined).enumerate() {
                index.add(&v.unstructured, i);
            }
            index
        })
    }

    fn view(&self, i: usize) -> &View {
        self.views
            .get(i)
            .unwrap_or_else(|| &self.joined[i - self.views.len()])
    }

    /// Where `secret` shows, in the plainest form and the first text it shows in: whole, one
    /// of its lines, across texts, or a window of any of its forms (a leak the bound cut).
    fn leak(&self, secret: &str, shown_by_contract: &impl Fn(&str) -> bool) -> Option<Hit> {
        let needles = needles(secret);
        self.whole(&needles, shown_by_contract)
            .or_else(|| self.without_separators(&needles, shown_by_contract))
            .or_else(|| self.windowed(&needles, shown_by_contract))
    }

    /// A form of the secret (or of one of its lines) whole in a text, else across texts.
    fn whole(&self, needles: &[Needle], shown: &impl Fn(&str) -> bool) -> Option<Hit> {
        for views in [&self.views, &self.joined] {
            for (form, needle, whole) in needles {
                if shown(needle) {
                    continue;
                }
                if let Some(v) = views.iter().find(|v| v.text.contains(needle.as_str())) {
                    return Some(Hit::in_view(v, *form, needle, *whole));
                }
            }
        }
        None
    }

    /// A form of the secret once the separators between the texts are gone.
    fn without_separators(&self, needles: &[Needle], shown: &impl Fn(&str) -> bool) -> Option<Hit> {
        needles.iter().find_map(|(form, needle, _)| {
            let c = forms::normalized(&forms::compact(needle));
            (c.chars().count() >= MIN_COMPACT_CHARS && self.compact.contains(&c) && !shown(needle))
                .then_some(Hit {
                    what: "model-visible texts with the separators between them removed",
                    form: *form,
                    piece: c,
                    whole: true,
                })
        })
    }

    /// A window of a form of the secret: a leak the bound cut.
    fn windowed(&self, needles: &[Needle], shown: &impl Fn(&str) -> bool) -> Option<Hit> {
        let holds = |i: usize, w: &str| self.view(i).unstructured.contains(w);
        needles.iter().find_map(|(form, needle, _)| {
            self.index()
                .find(needle, shown, &holds)
                .map(|(w, i)| Hit::in_view(self.view(i), *form, w, false))
        })
    }
}

/// A form of a secret to look for, and whether it is the whole secret (not one of its lines).
type Needle = (Form, String, bool);

impl Hit {
    /// `piece` found in view `v`: a needle in its own form names that; a raw needle names the
    /// view's (a percent-decoded or normalised text).
    fn in_view(v: &View, form: Form, piece: &str, whole: bool) -> Hit {
        Hit {
            what: v.what,
            form: if form == Form::Raw { v.form } else { form },
            piece: piece.to_owned(),
            whole,
        }
    }
}

/// What a leak of `secret` may look like: each of its forms whole, then each line of it (a CR
/// or LF inside a secret may be where a provider splits it). Encoded forms shorter than the
/// secret's own floor are left out (a short encoding meets other text by chance).
fn needles(secret: &str) -> Vec<Needle> {
    let floor = secret
        .chars()
        .count()
        .min(MIN_DERIVED_CHARS)
        .min(forms::normalized(secret).chars().count());
    let mut out: Vec<Needle> = forms::encoded(secret)
        .into_iter()
        .filter(|(form, t)| *form == Form::Raw || t.chars().count() >= floor)
        .map(|(form, t)| (form, t, true))
        .collect();
    if secret.contains(['\r', '\n']) {
        for line in secret.split(['\r', '\n']) {
            if line.chars().count() >= MIN_DERIVED_CHARS {
                out.extend(
                    forms::encoded(line)
                        .into_iter()
                        .filter(|(_, t)| t.chars().count() >= MIN_DERIVED_CHARS)
                        .map(|(form, t)| (form, t, false)),
                );
            }
        }
    }
    out
}

/// The head of the job status line the host composes from closed values (`[status: failed,
/// error; diagnostic: `): never part of a leak, whatever an untrusted string shares with it.
static STATUS_HEAD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"\[status: (?:running|completed|killed|failed)(?:, (?:error|aborted|max-tokens|refusal)(?:; diagnostic: )?)?\]?",
    )
    .expect("a valid pattern")
});

/// The shape of every fixed line the contract composes from closed values — `Subagent failure
/// (provider: ACP; stage: prompt; …)`, `ACP unattended decision (policy: allow; …)`: capitalised
/// words, then `(key: value; key: value…)`.
static STRUCTURED_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"[A-Z][A-Za-z ]* \([a-z ]+: [^;()\n]+(?:; [a-z ]+: [^;()\n]+)*\)")
        .expect("a valid pattern")
});

/// The texts the scenario says the model sees: its expected start error, diagnostic and output.
fn expected_texts(scenario: &Scenario) -> Vec<&str> {
    let e = &scenario.file.expect;
    [&e.start_error, &e.diagnostic, &e.output]
        .into_iter()
        .filter_map(|t| t.as_deref())
        .collect()
}

/// Every model-visible text of the run, with where it came from.
pub fn model_visible(obs: &Observed) -> Vec<(&'static str, &str)> {
    let mut texts = Vec::new();
    if let Some(e) = &obs.start_rejected {
        texts.push(("start rejection", e.message.as_str()));
    }
    if let Some(d) = obs.result.as_ref().and_then(|r| r.diagnostic.as_deref()) {
        texts.push(("diagnostic", d));
    }
    if let Some((_, t)) = &obs.tool_result {
        texts.push(("tool result", t.as_str()));
    }
    for (_, t) in &obs.notices {
        texts.push(("notice", t.as_str()));
    }
    for t in &obs.job_output_repeats {
        texts.push(("job_output", t.as_str()));
    }
    if let Some(t) = &obs.job_output {
        texts.push(("job_output", t.as_str()));
    }
    texts
}

/// The values the scenario hands the runtime that look like secrets (a credential-shaped name,
/// a URL with a password, a credential-shaped value), and the harness's own parent token the
/// subject holds: none is ever the model's business. A URL's password counts alone too (a
/// provider may show the URL with it parsed out).
pub fn runtime_secrets(scenario: &Scenario) -> Vec<String> {
    let env = scenario.file.subject.env.iter();
    let parent = crate::proc::subject_process::PARENT_ENV
        .iter()
        .map(|(k, v)| (*k, *v));
    let mut out = Vec::new();
    let mut passwords = Vec::new();
    for (name, value) in env.map(|(k, v)| (k.as_str(), v.as_str())).chain(parent) {
        if let Some(password) = url_password(value) {
            passwords.push(password.to_owned());
            out.push(value.to_owned());
        } else if secret_name(name) || secret_value(value) {
            out.push(value.to_owned());
        }
    }
    out.retain(|s| s.chars().count() >= MIN_DERIVED_CHARS);
    // A password is short more often than a token, and no less a secret.
    out.extend(
        passwords
            .into_iter()
            .filter(|p| p.chars().count() >= MIN_PASSWORD_CHARS),
    );
    out
}

/// A URL's password shorter than this is not matched alone (the URL still is).
const MIN_PASSWORD_CHARS: usize = 6;

/// A variable name that says its value is a credential.
fn secret_name(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "AUTH",
        "COOKIE",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// A value shaped like a credential whatever its name.
fn secret_value(value: &str) -> bool {
    static SHAPE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^(sk-|sk_|ghp_|gho_|github_pat_|xox[abp]-|AKIA|eyJ)[A-Za-z0-9_.\-]{8,}")
            .expect("a valid pattern")
    });
    SHAPE.is_match(value)
}

/// The password of a URL with credentials (`postgres://app:hunter2@db/x` → `hunter2`).
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let userinfo = rest.split(['/', '?', '#']).next()?.rsplit_once('@')?.0;
    userinfo
        .split_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty())
}

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values, as each codec names them), the task, and the scenario's
/// declared secrets. Derived strings shorter than [`MIN_DERIVED_CHARS`] are skipped (they
/// collide with the fixed vocabulary: `edit`, `read`); declared secrets count at any length.
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    let codec = conform_fakes::codec::for_provider(scenario.file.provider);
    let mut out: Vec<String> = vec![scenario.file.task.clone()];
    for step in &scenario.script.steps() {
        out.extend(step.stderr.clone());
        out.extend(step.stderr_part.clone());
        out.extend(step.raw.clone());
        if let Some(e) = &step.error {
            out.push(e.message.clone());
            if let Some(d) = &e.data {
                string_leaves(d, &mut out);
            }
        }
        if let Some(r) = &step.reply {
            // Reply payloads are protocol data; only free text inside them is a secret.
            string_leaves(r, &mut out);
        }
        codec.untrusted_text(step, &mut out);
        // A notification or request written as it is: its params are the runtime's, but for
        // the assistant output and closed values the codec knows.
        if let (Some(method), Some(params)) =
            (step.notify.as_ref().or(step.request.as_ref()), &step.params)
        {
            codec.untrusted_params(method, params, &mut out);
        }
    }
    out.retain(|s| s.chars().count() >= MIN_DERIVED_CHARS);
    out.extend(
        scenario
            .file
            .secrets
            .iter()
            .filter(|s| !s.is_empty())
            .cloned(),
    );
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// What `text` (alone, as a diagnostic) shows of `secret`, if anything.
    fn leak(secret: &str, text: &str, shown: &impl Fn(&str) -> bool) -> Option<String> {
        let seen = Seen::new(
            &[("diagnostic", text.to_owned())],
            &Observed::default(),
            &[],
        );
        seen.leak(secret, shown).map(|h| h.piece)
    }

    fn untrusted_of(id: &str) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let s = crate::scenario::load(&root, &root.join(format!("{id}.toml"))).unwrap();
        untrusted_strings(&s)
    }

    #[test]
    fn a_leak_is_found_whole_by_line_or_cut() {
        let none = |_: &str| false;
        let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
        // Whole.
        assert_eq!(
            leak(secret, &format!("x {secret} y"), &none),
            Some(secret.into())
        );
        // Cut by a bound: only the head shows, still a leak.
        let cut = format!("Diagnostic: boom {}", &secret[..30]);
        assert!(leak(secret, &cut, &none).is_some());
        // A CR or LF inside the secret is where a provider may split it.
        let multi = "first line of the traceback\r\nKeyError: SECRET_VALUE_IN_LINE_2";
        assert_eq!(
            leak(multi, "… KeyError: SECRET_VALUE_IN_LINE_2 …", &none),
            Some("KeyError: SECRET_VALUE_IN_LINE_2".into())
        );
        // A secret dressed as a diagnostic shares windows with the real one: not a leak; shown
        // whole, it is.
        let alike = "Subagent failure (provider: DSH SDK; stage: --a; category: and)·q2361k0z";
        let real = "Error: subagent run failed\nDiagnostic: Subagent failure (provider: DSH SDK; stage: shutdown; category: unknown)";
        assert_eq!(leak(alike, real, &none), None);
        assert!(leak(alike, &format!("{real}\n{alike}"), &none).is_some());
        // Nothing shown, nothing found.
        assert_eq!(
            leak(secret, "Subagent failure (provider: ACP)", &none),
            None
        );
        // What the contract shows by itself is never a leak.
        let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
        assert_eq!(
            leak(
                "Error: subagent run failed",
                "Error: subagent run failed\nDiagnostic: x",
                &fixed
            ),
            None
        );
    }

    #[test]
    fn the_hosts_status_line_is_never_a_leak() {
        // A string that is part of the host's own status line proves nothing when a failed
        // job's notice shows it (the one false alarm the reference raised).
        let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
        let notice = "background job subagent-1 finished [status: failed, error; diagnostic: Subagent failure (provider: ACP; stage: prompt; category: unknown)]. Read its output with job_output.";
        assert_eq!(leak("[status: failed", notice, &fixed), None);
        assert_eq!(leak("[status: failed, error", notice, &fixed), None);
    }

    #[test]
    fn what_the_runtime_is_handed_is_a_secret_when_it_looks_like_one() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut s =
            crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
        for (k, v) in [
            (
                "DATABASE_URL",
                "postgres://app:hunter2pw@db.internal:5432/app",
            ),
            ("GITHUB_TOKEN", "ghp_0123456789abcdef"),
            ("UPSTREAM", "sk-live-0123456789"),
            ("PASSED_TO_CHILD", "yes"),
            ("EDITOR_THEME", "solarized-dark"),
        ] {
            s.file.subject.env.insert(k.into(), v.into());
        }
        let got = runtime_secrets(&s);
        for want in [
            "hunter2pw",
            "postgres://app:hunter2pw@db.internal:5432/app",
            "ghp_0123456789abcdef",
            "sk-live-0123456789",
            // The harness's own parent token, in every subject's environment.
            "parent-token-never-for-a-child",
        ] {
            assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
        }
        for not in ["yes", "solarized-dark", "inherited"] {
            assert!(!got.contains(&not.to_owned()), "{not} in {got:?}");
        }
        // Shown percent-encoded in a diagnostic, the password is found.
        let obs = Observed {
            result: Some(crate::run::observed::RunResult {
                stop_reason: "error".into(),
                output: vec![],
                diagnostic: Some(
                    "Subagent failure (provider: ACP) dsn=postgres%3A%2F%2Fapp%3Ahunter2pw%40db"
                        .into(),
                ),
            }),
            ..Observed::default()
        };
        let mut f = Vec::new();
        judge(&s, &obs, &mut f);
        assert!(
            f.iter()
                .any(|f| f.message.contains("untrusted text \"hunter2pw\"")),
            "{f:?}"
        );
        assert!(
            f.iter().any(|f| f.message.contains(
                "\"postgres://app:hunter2pw@db.internal:5432/app\" in its percent-encoded form"
            )),
            "{f:?}"
        );
    }

    #[test]
    fn a_snapshot_holding_a_secret_is_refused_with_its_form_and_block() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let s =
            crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
        // The harness's parent token, base64 inside a diagnostic.
        let leaked = "── tool result (isError: true) ──\nError: subagent run failed\nDiagnostic: x cGFyZW50LXRva2VuLW5ldmVyLWZvci1hLWNoaWxk\n";
        let why = secret_in_snapshot(&s, leaked).expect("refused");
        assert!(why.contains("base64"), "{why}");
        assert!(why.contains("parent-token-never-for-a-child"), "{why}");
        assert!(
            why.contains("in the block ── tool result (isError: true) ──"),
            "{why}"
        );
        let clean = "── tool result (isError: true) ──\nError: subagent run failed\n";
        assert_eq!(secret_in_snapshot(&s, clean), None);
    }

    #[test]
    fn a_codex_error_notification_and_written_params_are_untrusted() {
        let codex = untrusted_of("codex/redaction/untrusted-channels");
        for s in [
            "Reconnecting... SECRET-retry",
            "stream disconnected: SECRET-details",
        ] {
            assert!(codex.contains(&s.to_owned()), "{s} in {codex:?}");
        }
        // A guardian warning written as it is; an API error dressed as an assistant message.
        let guardian = untrusted_of("codex/approval/auto-review-denied");
        assert!(
            guardian
                .iter()
                .any(|s| s.contains("SECRET-guardian-rationale")),
            "{guardian:?}"
        );
        let claude = untrusted_of("claude-code/success/is-error-success");
        assert!(
            claude.contains(
                &"Failed to authenticate. API Error: 401 SECRET-upstream message".to_owned()
            ),
            "{claude:?}"
        );
    }

    #[test]
    fn a_secret_holding_the_scenario_id_is_still_matched() {
        // Only the label `(subagent: <id>)` is the harness's own text.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut s =
            crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
        s.file.secrets = vec![format!("token-for-{}", s.id)];
        let mut obs = Observed {
            notices: vec![(
                "j".into(),
                format!(
                    "background job j (subagent: {}) finished [status: failed, token-for-{}]",
                    s.id, s.id
                ),
            )],
            ..Observed::default()
        };
        let mut f = Vec::new();
        judge(&s, &obs, &mut f);
        assert_eq!(f.len(), 1, "{f:?}");
        obs.notices[0].1 = format!("background job j (subagent: {}) finished", s.id);
        let mut f = Vec::new();
        judge(&s, &obs, &mut f);
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn each_codec_names_its_protocols_untrusted_text() {
        // ACP: a thought, a tool call's title, location and raw input; never its closed values.
        let acp = untrusted_of("acp/redaction/untrusted-channels");
        for s in [
            "THOUGHT: the password is hunter2-SECRET",
            "Read /home/alice/.ssh/id_ed25519",
        ] {
            assert!(acp.contains(&s.to_owned()), "{s} in {acp:?}");
        }
        assert!(!acp.iter().any(|s| s == "tool_call" || s == "pending"));
        // DSH SDK: a raw event's and a turn end's error text; never the turn-end kind.
        let dsh = untrusted_of("dsh-sdk/redaction/untrusted-channels");
        for s in [
            "upstream 401 for key sk-SECRET-attempt",
            "401 Unauthorized: sk-SECRET-turn-error",
        ] {
            assert!(dsh.contains(&s.to_owned()), "{s} in {dsh:?}");
        }
        assert!(!dsh.iter().any(|s| s == "error"));
        // Codex: a failed turn's message, a server request's payload; a short declared secret.
        let codex = untrusted_of("codex/redaction/untrusted-channels");
        for s in ["SECRET", "401 for sk-SECRET-turn", "SECRET-additional"] {
            assert!(codex.contains(&s.to_owned()), "{s} in {codex:?}");
        }
        assert!(
            !codex.iter().any(|s| s == "unauthorized"),
            "known codes are vocabulary"
        );
    }
}

/// The matcher's property: whatever form a subject leaks a secret in — declared, generated or
/// handed to the runtime — the check finds it. The subject here is a function that writes the
/// secret into a diagnostic (and, split, into the output) the way a careless provider would.
#[cfg(test)]
mod property {
    use super::*;
    use crate::run::observed::RunResult;
    use base64::Engine as _;
    use proptest::prelude::*;

    /// How the subject writes the secret.
    #[derive(Clone, Copy, Debug)]
    enum How {
        Raw,
        /// Inside a serialised JSON string, serde's escapes or ASCII-only ones.
        Json {
            ascii: bool,
        },
        /// As a URL component: every non-alphanumeric byte escaped, hex in either case, or a
        /// form body (`+` for a space).
        Percent {
            lower: bool,
            form: bool,
        },
        /// Inside a base64 blob, after `offset` bytes of something else.
        Base64 {
            url: bool,
            offset: usize,
        },
        /// NFKC-normalised and format characters stripped (a sanitiser).
        Normalized,
        /// With a zero-width space, a soft hyphen or a word joiner between characters.
        Decorated {
            every: usize,
        },
        /// ASCII as fullwidth forms.
        Fullwidth,
        /// The head at the end of the diagnostic, the rest at the start of the output.
        Split {
            at: usize,
        },
        /// A window cut by a bound: `len` characters from `start`.
        Cut {
            start: usize,
            len: usize,
        },
    }

    fn how() -> impl Strategy<Value = How> {
        prop_oneof![
            Just(How::Raw),
            any::<bool>().prop_map(|ascii| How::Json { ascii }),
            (any::<bool>(), any::<bool>()).prop_map(|(lower, form)| How::Percent { lower, form }),
            (any::<bool>(), 0usize..3).prop_map(|(url, offset)| How::Base64 { url, offset }),
            Just(How::Normalized),
            (1usize..4).prop_map(|every| How::Decorated { every }),
            Just(How::Fullwidth),
            (1usize..1000).prop_map(|at| How::Split { at }),
            (0usize..6000, 24usize..36).prop_map(|(start, len)| How::Cut { start, len }),
        ]
    }

    /// Declared and generated secrets (the property command's kinds), and values a runtime is
    /// handed: a database URL with its password, a parent token.
    fn secret() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => secret_material(),
            1 => "postgres://app:[A-Za-z0-9]{8,16}@db\\.internal:5432/app",
            1 => "parent-token-[a-z0-9]{8,16}",
        ]
        .prop_map(|body| format!("{body}·q7k0z"))
    }

    fn percent(secret: &str, lower: bool, form: bool) -> String {
        let mut out = String::new();
        for b in secret.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => out.push(b as char),
                b' ' if form => out.push('+'),
                _ if lower => out.push_str(&format!("%{b:02x}")),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }

    /// The diagnostic and output a subject leaking `secret` this way reports.
    fn leaked(secret: &str, how: How) -> (String, String) {
        let chars: Vec<char> = secret.chars().collect();
        let text = match how {
            How::Raw => secret.to_owned(),
            How::Json { ascii } => {
                let v = serde_json::json!({ "error": secret }).to_string();
                if ascii {
                    v.chars()
                        .map(|c| {
                            if c.is_ascii() {
                                c.to_string()
                            } else {
                                let mut u = [0u16; 2];
                                c.encode_utf16(&mut u)
                                    .iter()
                                    .map(|x| format!("\\u{x:04X}"))
                                    .collect()
                            }
                        })
                        .collect()
                } else {
                    v
                }
            }
            How::Percent { lower, form } => format!("?q={}&x=1", percent(secret, lower, form)),
            How::Base64 { url, offset } => {
                let blob = format!("{}{secret}!", &"ab"[..offset.min(2)]);
                if url {
                    base64::engine::general_purpose::URL_SAFE.encode(blob)
                } else {
                    base64::engine::general_purpose::STANDARD.encode(blob)
                }
            }
            How::Normalized => forms::normalized(secret),
            How::Decorated { every } => chars
                .chunks(every)
                .map(|c| c.iter().collect::<String>())
                .collect::<Vec<_>>()
                .join(["\u{200B}", "\u{00AD}", "\u{2060}"][every % 3]),
            How::Fullwidth => chars
                .iter()
                .map(|&c| match c {
                    '!'..='~' => char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c),
                    _ => c,
                })
                .collect(),
            How::Split { at } => {
                let at = 1 + at % chars.len().saturating_sub(1).max(1);
                let head: String = chars[..at.min(chars.len())].iter().collect();
                let tail: String = chars[at.min(chars.len())..].iter().collect();
                // The tail after the real output, as a provider appending to it writes it.
                return (
                    format!("{DIAGNOSTIC} {head}"),
                    format!("partial answer{tail}"),
                );
            }
            How::Cut { start, len } => {
                let len = len.min(chars.len());
                let start = start % (chars.len() - len + 1);
                chars[start..start + len].iter().collect()
            }
        };
        (format!("{DIAGNOSTIC} {text}"), "partial answer".to_owned())
    }

    const DIAGNOSTIC: &str = "Subagent failure (provider: ACP; stage: prompt; category: unknown)";

    fn observed(diagnostic: &str, output: &str) -> Observed {
        Observed {
            result: Some(RunResult {
                stop_reason: "error".into(),
                output: vec![serde_json::json!({ "type": "text", "text": output })],
                diagnostic: Some(diagnostic.to_owned()),
            }),
            tool_result: Some((
                true,
                format!(
                    "Error: subagent run failed\nDiagnostic: {diagnostic}\n\nPartial output before the run ended:\n{output}"
                ),
            )),
            ..Observed::default()
        }
    }

    fn found(secret: &str, obs: &Observed) -> Option<Hit> {
        let texts: Vec<(&'static str, String)> = model_visible(obs)
            .into_iter()
            .map(|(w, t)| (w, t.to_owned()))
            .collect();
        // What the scenario behind these texts expects: the diagnostic and the real output.
        let seen = Seen::new(&texts, obs, &[DIAGNOSTIC, "partial answer"]);
        let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
        seen.leak(secret, &fixed)
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn every_form_of_every_secret_is_found(secret in secret(), how in how()) {
            let (diagnostic, output) = leaked(&secret, how);
            // A cut that only shows the contract's own words proves nothing.
            if let How::Cut { .. } = how {
                let shown = diagnostic.trim_start_matches(DIAGNOSTIC).trim_start();
                prop_assume!(!FIXED_PHRASES.iter().any(|p| p.contains(shown)));
            }
            let obs = observed(&diagnostic, &output);
            prop_assert!(found(&secret, &obs).is_some(), "{how:?} missed: {diagnostic:?} / {output:?}");
        }

    }

    proptest! {
        // No false alarm: the texts without the secret never show it (a tenth as many cases:
        // each scans every window of every form, where a hit usually stops early).
        #![proptest_config(ProptestConfig {
            cases: 1_000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn what_is_not_leaked_is_not_found(secret in secret()) {
            let obs = observed(DIAGNOSTIC, "partial answer");
            prop_assert_eq!(found(&secret, &obs), None);
        }
    }
}
