//! The redaction property (`conform redaction`): for generated secrets written into every
//! untrusted channel of a scenario, no model-visible text shows a secret (in any form
//! `contract.redaction` matches: `checks::forms`), and every model-visible text equals the
//! scenario's stored snapshot — the contract's text must not depend on untrusted content at all.
//!
//! A variant of a scenario rewrites its free-text channels: the task, stderr lines, JSON-RPC
//! error messages and data, and each protocol's own channels (ids included) as its codec names them
//! ([`conform_fakes::codec::Codec::free_text`]). Output the records let the model see
//! (assistant text) is never a channel: that is the one exemption, and it lives in the codecs.
//! Secrets come from proptest strategies, seeded, so a run can be replayed; a failing case is
//! narrowed to the one channel that matters and its secret shrunk.

use std::sync::Arc;

use conform_protocol::script::Step;
use conform_protocol::subject::Mode;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::checks::{Check, Finding};
use crate::scenario::Scenario;
use crate::suite::{self, Options, SuiteError};

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cmd::output::out;
use crate::cmd::{Error as CmdError, block_on, verdict};
use crate::settings::default_dir;

/// Kinds of secret material, each a proptest strategy ([`crate::checks::secret_material`]:
/// the check's own property generates the same).
pub fn secret_body() -> impl Strategy<Value = String> {
    crate::checks::secret_material()
}

/// The environment variable a variant passes the runtime, holding a secret it echoes.
const ECHO_ENV: &str = "CONFORM_ECHOED_SECRET";

/// One channel's secret in a variant.
#[derive(Clone, Debug)]
pub struct Planted {
    pub channel: &'static str,
    pub secret: String,
}

/// `base` with a secret from `next` in every free-text channel, and the secrets (also
/// declared as the variant's `secrets`, with their escaped forms, so the redaction check looks
/// for each). `next` is given the channel and its text in `base`; answering that text leaves
/// the channel as it was (and plants nothing there). Every other string of the script equal to
/// a replaced one follows it (the task in the pinned prompt, an id in later requests).
pub fn inject(
    base: &Scenario,
    next: &mut dyn FnMut(&'static str, &str) -> String,
) -> (Scenario, Vec<Planted>) {
    let codec = conform_fakes::codec::for_provider(base.file.provider);
    let mut planted = Vec::new();
    let mut renames: Vec<(String, String)> = Vec::new();
    // `follow`: the value stood for something elsewhere in the script (not a channel the
    // variant adds), so every other occurrence is renamed with it.
    let mut plant = |channel: &'static str, slot: &mut String, follow: bool| {
        let secret = next(channel, slot);
        if secret != *slot {
            if follow {
                renames.push((slot.clone(), secret.clone()));
            }
            *slot = secret.clone();
            planted.push(Planted { channel, secret });
        }
    };
    let mut s = base.clone();
    // A blank task is the case itself (rejected before spawning), not a channel to write in.
    if !s.file.task.trim().is_empty() {
        plant("task", &mut s.file.task, true);
    }
    // What the subject passes in, echoed by the runtime: its working directory (the check holds
    // the run's folder untrusted) and an environment variable carrying a secret.
    let mut env_secret = ECHO_ENV.to_owned();
    plant("environment echoed on stderr", &mut env_secret, false);
    if env_secret != ECHO_ENV {
        s.file.subject.env.insert(ECHO_ENV.to_owned(), env_secret);
    }
    let echo = |what: &str| Step {
        echo_to_stderr: Some(what.to_owned()),
        ..Step::default()
    };
    let mut steps = vec![echo("cwd"), echo(&format!("env:{ECHO_ENV}"))];
    for mut step in s.script.steps() {
        if step.exit.is_some() {
            // A last stderr line the process never ends.
            let mut last = String::new();
            plant("stderr without newline", &mut last, false);
            steps.push(Step {
                stderr_part: Some(last),
                ..Step::default()
            });
        }
        if let Some(text) = &mut step.stderr {
            plant("stderr", text, true);
            // One line in two writes: a provider reading stderr must join them.
            let chars: Vec<char> = text.chars().collect();
            let (head, tail) = chars.split_at(chars.len() / 2);
            steps.push(Step {
                stderr_part: Some(head.iter().collect()),
                ..Step::default()
            });
            step.stderr = Some(tail.iter().collect());
        }
        steps.push(step);
    }
    for step in &mut steps {
        if let Some(e) = &mut step.error {
            plant("json-rpc error message", &mut e.message, true);
            if let Some(data) = &mut e.data {
                conform_fakes::codec::string_leaves_mut(data, &mut |t| {
                    plant("json-rpc error data", t, true)
                });
            }
        }
        codec.free_text(step, &mut |c, t| plant(c, t, true));
    }
    // What a planted value stood for elsewhere in the script follows it: the prompt the script
    // expects carries the new task, a request names the new session or thread id.
    for step in &mut steps {
        for (old, new) in &renames {
            rename_string(step, old, new);
        }
    }
    s.script.set_steps(steps);
    for p in &planted {
        s.file.secrets.extend(escaped_forms(&p.secret));
    }
    (s, planted)
}

/// The secret and the forms a provider might write it in: JSON-escaped, percent-encoded.
fn escaped_forms(secret: &str) -> Vec<String> {
    let json = serde_json::to_string(secret).unwrap_or_default();
    let json = json[1..json.len().saturating_sub(1).max(1)].to_owned();
    let url: String = secret
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut forms = vec![secret.to_owned(), json, url];
    forms.sort();
    forms.dedup();
    forms.retain(|f| !f.is_empty());
    forms
}

/// Replaces every string leaf of the step equal to `old` by `new`.
fn rename_string(step: &mut Step, old: &str, new: &str) {
    let Ok(mut v) = serde_json::to_value(&*step) else {
        return;
    };
    conform_fakes::codec::string_leaves_mut(&mut v, &mut |s| {
        if s == old {
            *s = new.to_owned();
        }
    });
    if let Ok(renamed) = serde_json::from_value(v) {
        *step = renamed;
    }
}

/// What `conform redaction` was asked.
pub struct Plan {
    pub cases: usize,
    pub seed: u64,
}

/// One failing case, narrowed and shrunk.
#[derive(Debug)]
pub struct Counterexample {
    pub scenario: String,
    pub mode: Mode,
    pub channel: &'static str,
    pub secret: String,
    pub findings: Vec<Finding>,
}

pub struct Outcome {
    pub cases: usize,
    pub scenarios: usize,
    pub failures: Vec<Counterexample>,
}

/// A deterministic source of secrets: case `i`'s `k`-th secret depends only on the seed.
struct Secrets {
    runner: TestRunner,
}

impl Secrets {
    fn new(seed: u64) -> Secrets {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Secrets {
            runner: TestRunner::new_with_rng(
                Config::default(),
                TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
            ),
        }
    }

    fn tree(&mut self) -> impl ValueTree<Value = String> + use<> {
        secret_body()
            .new_tree(&mut self.runner)
            .expect("the secret strategy always generates")
    }
}

/// Whether a finding fails the property: any but timing (how long a run took says nothing
/// about what it showed, and thousands of runs in flight load the machine).
fn counts(f: &Finding) -> bool {
    f.check.family() != "timing"
}

/// A secret unique to its case and channel: a generated body and a nonce no fixed text holds.
fn unique(body: &str, case: usize, k: usize) -> String {
    format!("{body}·q{case:x}k{k:x}z")
}

/// Runs `plan.cases` variants over the selected scenarios (round robin, both modes) against
/// the subject in `opts`, and narrows each failure to a channel and a shrunk secret.
pub async fn run(opts: &Options, plan: &Plan) -> Result<Outcome, SuiteError> {
    let bases: Vec<Arc<Scenario>> = suite::select(&opts.scenarios, &opts.filters)?
        .into_iter()
        // Peer cases run a real runtime, and a scenario pinned to a product version needs it.
        // An isolation group's member runs only beside the others (its channels are the
        // standalone cases' channels).
        .filter(|s| {
            s.file.peer.is_none() && s.file.product_version.is_none() && s.file.group.is_none()
        })
        .map(Arc::new)
        .collect();
    let mut slots: Vec<(Arc<Scenario>, Mode)> = bases
        .iter()
        .flat_map(|s| s.file.modes.iter().map(move |m| (s.clone(), *m)))
        .collect();
    // Every provider and mode early in any run, in an order the seed fixes.
    let mut order = Secrets::new(plan.seed ^ 0x5eed);
    let mut keyed: Vec<(u64, (Arc<Scenario>, Mode))> = slots
        .drain(..)
        .map(|slot| {
            (
                proptest::prelude::any::<u64>()
                    .new_tree(&mut order.runner)
                    .map_or(0, |t| t.current()),
                slot,
            )
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    slots.extend(keyed.into_iter().map(|(_, slot)| slot));
    if slots.is_empty() {
        return Err(SuiteError::NothingSelected);
    }
    let mut secrets = Secrets::new(plan.seed);
    let mut variants = Vec::with_capacity(plan.cases);
    for case in 0..plan.cases {
        let (base, mode) = &slots[case % slots.len()];
        let mut k = 0;
        let mut trees = Vec::new();
        let (mut v, planted) = inject(base, &mut |_, _| {
            let tree = secrets.tree();
            let s = unique(&tree.current(), case, k);
            trees.push(tree);
            k += 1;
            s
        });
        v.file.modes = vec![*mode];
        variants.push((Arc::new(v), planted, trees, base.clone(), *mode, case));
    }
    let report = suite::run_scenarios(opts, variants.iter().map(|v| v.0.clone()).collect()).await?;
    let mut failures = Vec::new();
    for ((_, planted, trees, base, mode, case), c) in variants.into_iter().zip(&report.cases) {
        if !c.findings.iter().any(counts) {
            continue;
        }
        failures.push(narrow(opts, &base, mode, case, planted, trees, c.findings.clone()).await);
    }
    Ok(Outcome {
        cases: plan.cases,
        scenarios: bases.len(),
        failures,
    })
}

/// Finds the one channel whose secret makes the case fail (the others get a plain filler),
/// then shrinks that secret while the case still fails. Each step is a run of its own.
async fn narrow(
    opts: &Options,
    base: &Arc<Scenario>,
    mode: Mode,
    case: usize,
    planted: Vec<Planted>,
    mut trees: Vec<impl ValueTree<Value = String>>,
    findings: Vec<Finding>,
) -> Counterexample {
    // The variant with only channel `only` carrying `secret`; the others as in `base`.
    let variant = |only: usize, secret: &str| {
        let mut k = 0;
        let (mut v, _) = inject(base, &mut |_, original| {
            let s = if k == only {
                secret.to_owned()
            } else {
                original.to_owned()
            };
            k += 1;
            s
        });
        v.file.modes = vec![mode];
        Arc::new(v)
    };
    // A scenario that fails as written (a provider the catalog already catches) still names
    // the channel: the one whose secret a redaction finding names. One that passes as written
    // fails through a channel whenever that channel's secret makes any check fail.
    let base_fails = match suite::run_scenarios(opts, vec![variant(usize::MAX, "")]).await {
        Ok(r) => r
            .cases
            .first()
            .is_some_and(|c| c.findings.iter().any(counts)),
        Err(_) => true,
    };
    let fails = |report: &suite::SuiteReport, secret: &str| {
        report.cases.first().map(|c| {
            let named = |f: &Finding| {
                f.check == Check::ContractRedaction
                    && escaped_forms(secret)
                        .iter()
                        .any(|form| f.message.contains(&format!("{form:?}")))
            };
            let failed = if base_fails {
                c.findings.iter().any(named)
            } else {
                c.findings.iter().any(counts)
            };
            (failed, c.findings.clone())
        })
    };
    let mut best = Counterexample {
        scenario: base.id.clone(),
        mode,
        channel: planted.first().map_or("task", |p| p.channel),
        secret: planted
            .first()
            .map(|p| p.secret.clone())
            .unwrap_or_default(),
        findings,
    };
    for (k, p) in planted.iter().enumerate() {
        let Ok(r) = suite::run_scenarios(opts, vec![variant(k, &p.secret)]).await else {
            continue;
        };
        if let Some((true, f)) = fails(&r, &p.secret) {
            best.channel = p.channel;
            best.secret = p.secret.clone();
            best.findings = f;
            // Shrink this channel's secret (a bounded number of runs).
            let tree = &mut trees[k];
            for _ in 0..12 {
                if !tree.simplify() {
                    break;
                }
                let candidate = unique(&tree.current(), case, k);
                let Ok(r) = suite::run_scenarios(opts, vec![variant(k, &candidate)]).await else {
                    break;
                };
                match fails(&r, &candidate) {
                    Some((true, f)) => {
                        best.secret = candidate;
                        best.findings = f;
                    }
                    _ => {
                        if !tree.complicate() {
                            break;
                        }
                    }
                }
            }
            return best;
        }
    }
    // No single channel alone: the combination is the counterexample.
    best.channel = "several channels together";
    best
}

/// The report: one line per failing case with its channel, secret and first finding.
pub fn render(outcome: &Outcome, plan: &Plan, elapsed: std::time::Duration) -> String {
    let mut out = String::new();
    for f in &outcome.failures {
        let first = f
            .findings
            .iter()
            .find(|x| x.check == Check::ContractRedaction)
            .or(f.findings.first());
        out.push_str(&format!(
            "✗ {} ({}) — channel `{}`, secret {}\n",
            f.scenario,
            f.mode,
            f.channel,
            crate::checks::shown(&f.secret)
        ));
        if let Some(x) = first {
            out.push_str(&format!(
                "  [{}] {}\n",
                x.check,
                x.message
                    .lines()
                    .take(12)
                    .map(|l| crate::checks::cut(l, 300))
                    .collect::<Vec<_>>()
                    .join("\n  ")
            ));
        }
    }
    let secs = elapsed.as_secs_f64().max(0.001);
    out.push_str(&format!(
        "\n{} cases over {} scenarios, {} failed, seed {} ({:.1} s, {:.0} cases/s); replay: conform redaction --cases {} --seed {}\n",
        outcome.cases,
        outcome.scenarios,
        outcome.failures.len(),
        plan.seed,
        secs,
        outcome.cases as f64 / secs,
        plan.cases,
        plan.seed
    ));
    out
}

/// `conform redaction`: the redaction property against a subject.
pub fn exec(args: crate::cli::RedactionArgs) -> Result<ExitCode, CmdError> {
    let opts = Options {
        filters: args.select.filter,
        settings: crate::settings::Settings {
            subject: args.subject,
            jobs: args.jobs,
            ..Default::default()
        },
        progress: std::io::stderr().is_terminal(),
        // Generated variants must match the stored snapshots as they are.
        pending_snapshots: false,
        ..Options::new(
            args.select
                .scenarios
                .unwrap_or_else(|| default_dir("scenarios")),
            default_dir("snapshots"),
        )
    };
    let plan = Plan {
        cases: args.cases,
        seed: args.seed,
    };
    let started = std::time::Instant::now();
    let outcome = block_on(run(&opts, &plan))??;
    out(&render(&outcome, &plan, started.elapsed()))?;
    Ok(verdict(outcome.failures.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn load(id: &str) -> Scenario {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        crate::scenario::load(&root, &root.join(format!("{id}.toml"))).unwrap()
    }

    #[test]
    fn every_channel_gets_its_own_secret_and_the_script_follows_the_task() {
        let base = load("acp/redaction/untrusted-channels");
        let mut n = 0;
        let (v, planted) = inject(&base, &mut |c, _| {
            n += 1;
            format!("SECRET-{n}-{c}")
        });
        let channels: Vec<&str> = planted.iter().map(|p| p.channel).collect();
        for c in ["task", "stderr", "acp thought", "acp tool call title"] {
            assert!(channels.contains(&c), "{c} in {channels:?}");
        }
        // The pinned prompt now expects the new task.
        let steps = v.script.steps();
        let prompt = steps
            .iter()
            .find(|s| s.expect.as_deref() == Some("session/prompt"))
            .unwrap();
        assert!(
            prompt
                .params
                .as_ref()
                .unwrap()
                .to_string()
                .contains("SECRET-1-task")
        );
        assert!(v.file.secrets.contains(&"SECRET-1-task".to_owned()));
    }

    #[test]
    fn escaped_forms_cover_json_and_urls() {
        let forms = escaped_forms("a\"b c");
        assert!(forms.contains(&"a\\\"b c".to_owned()), "{forms:?}");
        assert!(forms.contains(&"a%22b%20c".to_owned()), "{forms:?}");
    }
}
