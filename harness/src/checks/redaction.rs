//! `contract.redaction`: no untrusted text reaches anything the model sees. The untrusted
//! strings of a scenario and the secret-like values its runtime may be handed (the harness's
//! own environment included) are matched against every model-visible text in every form a leak
//! takes ([`super::forms`]: raw, JSON-escaped, percent- or form-encoded, HTML-escaped, base64,
//! normalised) — whole, line by line (a CR or LF inside a secret may be where a provider splits
//! it), across texts (a secret split between two fields, or broken at its own space or line
//! break over the diagnostic's line and the output's), and by every 24-character window (a leak
//! the 4096-byte bound cut shows only in part). What the contract itself shows — the scenario's
//! expected texts, the fixed presentation phrases, the run's label — never counts as a leak,
//! even when an untrusted string happens to equal it.

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
    let contract = Contract::of(scenario);
    // The label is the harness's own text, shown in notices by design.
    let label = format!("(subagent: {})", scenario.label());
    let texts: Vec<(&'static str, String)> = model_visible(obs)
        .into_iter()
        .map(|(what, text)| (what, text.replace(&label, "")))
        .collect();
    let seen = Seen::new(&texts, obs, &contract.expected);
    let mut reported = std::collections::BTreeSet::new();
    for secret in run_secrets(scenario, obs) {
        // The run's folder is new every run: its needles are not kept.
        let needles = needles::of(&secret, secret != obs.run_dir);
        if let Some(hit) = seen.leak(&needles, &contract)
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
    let contract = Contract::of(scenario);
    let label = format!("(subagent: {})", scenario.label());
    let text = rendered.replace(&label, "");
    let seen = Seen::new(&[("snapshot", text.clone())], &Observed::default(), &[]);
    let mut secrets = untrusted_strings(scenario);
    secrets.extend(runtime_secrets(scenario));
    secrets.iter().find_map(|secret| {
        let hit = seen.leak(&needles::of(secret, true), &contract)?;
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

/// The result's diagnostic and output as pairs to read across the boundary between them: each
/// whole, and without the text the scenario expects there, so a piece appended to the real
/// output or diagnostic meets the other piece.
fn field_pairs(obs: &Observed, expected: &[&str]) -> Vec<(String, String)> {
    let Some(r) = &obs.result else {
        return Vec::new();
    };
    let Some(d) = &r.diagnostic else {
        return Vec::new();
    };
    let output = r.output_text();
    let mut out = Vec::new();
    for d in beyond_expected(d, expected) {
        for o in beyond_expected(&output, expected) {
            out.push((d.to_owned(), o.to_owned()));
        }
    }
    out
}

/// The texts across field boundaries: all of them joined as the model reads them, and the
/// result's diagnostic and output end to end, in either order (a secret split between them).
fn joined_texts(texts: &[(&'static str, String)], pairs: &[(String, String)]) -> Vec<String> {
    let all: Vec<&str> = texts.iter().map(|(_, t)| t.as_str()).collect();
    let mut out = vec![all.join("\n")];
    for (d, o) in pairs {
        out.push(format!("{d}{o}"));
        out.push(format!("{o}{d}"));
    }
    out
}

/// The result's diagnostic and output read across the line break the presentation puts
/// between them (`Diagnostic: …` on one line, the output on a later one), in either order,
/// every run of separators made one space ([`forms::fold_separators`]): a secret broken where
/// it holds a space or a control character reads whole here.
fn split_texts(pairs: &[(String, String)]) -> Vec<String> {
    let mut out: Vec<String> = pairs
        .iter()
        .flat_map(|(d, o)| [format!("{d}\n{o}"), format!("{o}\n{d}")])
        .map(|t| forms::fold_separators(&t))
        .collect();
    out.sort();
    out.dedup();
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
    /// Each pair of result fields across the line between them, separators folded.
    split: Vec<String>,
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
        let pairs = field_pairs(obs, expected);
        let mut joined = Vec::new();
        for text in joined_texts(&texts, &pairs) {
            joined.extend(View::all("model-visible texts together", &text));
        }
        Seen {
            views,
            joined,
            split: split_texts(&pairs),
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

    /// Where a secret (as its `needles`) shows, in the plainest form and the first text it
    /// shows in: whole, one of its lines, across texts (end to end, broken at one of its
    /// separators between the diagnostic and the output, or with the separators gone), or a
    /// window of any of its forms (a leak the bound cut).
    fn leak(&self, needles: &[Needle], contract: &impl Shows) -> Option<Hit> {
        self.whole(needles, contract)
            .or_else(|| self.broken_at_separator(needles, contract))
            .or_else(|| self.without_separators(needles, contract))
            .or_else(|| self.windowed(needles, contract))
    }

    /// A form of the secret (or of one of its lines) whole in a text, else across texts.
    fn whole(&self, needles: &[Needle], contract: &impl Shows) -> Option<Hit> {
        for views in [&self.views, &self.joined] {
            for n in needles {
                if contract.shows_needle(n) {
                    continue;
                }
                if let Some(v) = views.iter().find(|v| n.in_text(&v.text)) {
                    return Some(Hit::in_view(v, n.form, &n.text, n.whole));
                }
            }
        }
        None
    }

    /// A form of the secret that holds a separator, broken there between the diagnostic and
    /// the output: the presentation's line break stands where the secret's own separator was
    /// (kept or dropped). Short ones are left to chance no more than a derived string is.
    fn broken_at_separator(&self, needles: &[Needle], contract: &impl Shows) -> Option<Hit> {
        needles.iter().find_map(|n| {
            let folded = n.folded.as_deref()?;
            (!contract.shows_needle(n) && self.split.iter().any(|t| t.contains(folded))).then(
                || Hit {
                    what: "result read across the line between its diagnostic and its output",
                    form: n.form,
                    piece: n.text.clone(),
                    whole: n.whole,
                },
            )
        })
    }

    /// A form of the secret once the separators between the texts are gone.
    fn without_separators(&self, needles: &[Needle], contract: &impl Shows) -> Option<Hit> {
        needles.iter().find_map(|n| {
            let c = n.compact.as_deref()?;
            (self.compact.contains(c) && !contract.shows_needle(n)).then(|| Hit {
                what: "model-visible texts with the separators between them removed",
                form: n.form,
                piece: c.to_owned(),
                whole: true,
            })
        })
    }

    /// A window of a form of the secret: a leak the bound cut.
    fn windowed(&self, needles: &[Needle], contract: &impl Shows) -> Option<Hit> {
        let holds = |i: usize, w: &str| self.view(i).unstructured.contains(w);
        let shown = |w: &str| contract.shows(w);
        needles.iter().find_map(|n| {
            let found = match &n.window_hashes {
                Some(hashes) => self.index().find_hashed(&n.text, hashes, &shown, &holds),
                None => self.index().find(&n.text, &shown, &holds),
            };
            found.map(|(w, i)| Hit::in_view(self.view(i), n.form, w, false))
        })
    }
}

/// What the contract itself shows — the scenario's expected texts, the fixed presentation
/// phrases — never counts as a leak.
struct Contract<'s> {
    expected: Vec<&'s str>,
}

impl<'s> Contract<'s> {
    fn of(scenario: &'s Scenario) -> Contract<'s> {
        Contract {
            expected: expected_texts(scenario),
        }
    }
}

/// What proves nothing when it appears.
trait Shows {
    fn shows(&self, s: &str) -> bool;

    /// [`Shows::shows`] of a needle.
    fn shows_needle(&self, n: &Needle) -> bool {
        self.shows(&n.text)
    }
}

impl Shows for Contract<'_> {
    fn shows(&self, s: &str) -> bool {
        self.expected.iter().any(|e| e.contains(s)) || FIXED_PHRASES.iter().any(|p| p.contains(s))
    }

    /// The fixed phrases a needle is part of are known already.
    fn shows_needle(&self, n: &Needle) -> bool {
        n.fixed || self.expected.iter().any(|e| n.in_text(e))
    }
}

/// Tests say what is shown as they like.
#[cfg(test)]
impl<F: Fn(&str) -> bool> Shows for F {
    fn shows(&self, s: &str) -> bool {
        self(s)
    }
}

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
    if let Some(e) = &obs.refused {
        texts.push(("refusal", e.message.as_str()));
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
    if let Some(t) = &obs.peeked {
        texts.push(("job_output", t.as_str()));
    }
    texts
}

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values, as each codec names them), the task, and the scenario's
/// declared secrets. Derived strings shorter than [`MIN_DERIVED_CHARS`] are skipped (they
/// collide with the fixed vocabulary: `edit`, `read`); declared secrets count at any length.
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    let codec = conform_fakes::protocols::codec_for(scenario.file.provider);
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

mod environment;
mod needles;
pub use environment::runtime_secrets;
use needles::Needle;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod property;
