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

use conform_protocol::script::Step;
use proptest::strategy::Strategy;

use crate::checks::Check;
use crate::scenario::Scenario;
use crate::suite::Options;

use std::process::ExitCode;

use crate::cmd::output::out;
use crate::cmd::{Error as CmdError, verdict};

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
/// declared as the variant's `secrets`; the redaction check derives their forms and looks
/// for each). `next` is given the channel and its text in `base`; answering that text leaves
/// the channel as it was (and plants nothing there). Every other string of the script equal to
/// a replaced one follows it (the task in the pinned prompt, an id in later requests).
pub fn inject(
    base: &Scenario,
    next: &mut dyn FnMut(&'static str, &str) -> String,
) -> (Scenario, Vec<Planted>) {
    let codec = conform_fakes::protocols::codec_for(base.file.provider);
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
        // The check derives every form a leak takes (`checks::forms`) from the secret itself.
        s.file.secrets.push(p.secret.clone());
    }
    (s, planted)
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

mod search;

pub use search::{Counterexample, SearchOutcome, SearchPlan, run};

/// The report: one line per failing case with its channel, secret and first finding.
pub fn render(outcome: &SearchOutcome, plan: &SearchPlan, elapsed: std::time::Duration) -> String {
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
    if !outcome.by_channel.is_empty() {
        let counts: Vec<String> = outcome
            .by_channel
            .iter()
            .map(|(c, n)| match c {
                Some(c) => format!("`{c}` {n}"),
                None => format!("(named by no finding) {n}"),
            })
            .collect();
        out.push_str(&format!(
            "\nfailing cases by channel: {}",
            counts.join(", ")
        ));
    }
    if let Some(why) = &outcome.stopped {
        out.push_str(&format!(
            "\nstopped after {} of {} cases: {why}",
            outcome.cases, plan.cases
        ));
    }
    out.push_str(&format!(
        "\n{} cases over {} scenarios, {} failed ({} kept: the first per provider × channel), seed {} ({:.1} s, {:.0} cases/s); replay: conform redaction --cases {} --seed {}\n",
        outcome.cases,
        outcome.scenarios,
        outcome.failing_cases,
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
    let runtime = tokio::runtime::Runtime::new().map_err(CmdError::Runtime)?;
    // From here on a signal ends the search in order, with what it found.
    let interrupt = {
        let _in_runtime = runtime.enter();
        crate::proc::interrupt::listen().map_err(CmdError::Signals)?
    };
    let opts = Options {
        filters: args.select.filter,
        settings: crate::settings::Settings {
            subject: args.subject,
            jobs: crate::settings::Jobs::Fixed(args.jobs),
            ..Default::default()
        },
        // The search says how far it got after each batch instead.
        progress: false,
        // Generated variants must match the stored snapshots as they are.
        pending: None,
        interrupt,
        ..Options::new(
            crate::catalog::or_default(args.select.scenarios, "scenarios")?,
            crate::catalog::default_dir("snapshots")?,
        )
    };
    let plan = SearchPlan {
        cases: args.cases,
        seed: args.seed,
        max_failures: args.max_failures,
        time_budget: args.time_budget.map(std::time::Duration::from_secs),
        progress: true,
    };
    let started = std::time::Instant::now();
    let outcome = runtime.block_on(run(&opts, &plan))?;
    out(&render(&outcome, &plan, started.elapsed()))?;
    if let Some(signo) = outcome.signal {
        return Ok(ExitCode::from((128 + signo) as u8));
    }
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
}
