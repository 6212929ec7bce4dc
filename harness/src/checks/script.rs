//! `wire.script`: the evidence that a run is the run its scenario scripts. Every other verdict
//! reads what the subject said and what the runtime saw; without the runtime's own report that
//! each step of its script was played, a subject could spawn the fake, kill it unheard and
//! answer from the expected texts. The fake reports each step it finished on its authenticated
//! side channel ([`FakeEvent::Step`]); a run passes only if its runtime's script reached its end
//! — its last step, or a step that ends the process itself (`exit`, `signal`) — or the first step
//! its scenario says the provider may cut off (`may_cut`, with the reason).

use conform_protocol::script::Step;
use conform_protocol::side::FakeEvent;

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::{RuntimeKind, Scenario};

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if scenario.file.peer.is_some() || scenario.file.subject.runtime == RuntimeKind::MissingBinary {
        return;
    }
    let steps = scenario.script.steps();
    if steps.is_empty() || obs.refused.is_some() {
        return;
    }
    let Some(runtime) = runtime_pid(obs) else {
        // A run reported without its runtime is `subject.runtime`'s; a start rejected without
        // it had a conversation to hold (the script waits for the subject) and never held it.
        if obs.start_rejected.is_some() && steps.iter().any(|s| s.expect.is_some()) {
            f.push(
                Finding::new(
                    Check::WireScript,
                    format!(
                        "the start was rejected, but the runtime it was given never started: its script of {} step(s) was never played",
                        steps.len()
                    ),
                )
                .blocking(),
            );
        }
        return;
    };
    let played = obs
        .fake
        .iter()
        .filter(|l| l.pid == runtime)
        .filter_map(|l| match l.event {
            FakeEvent::Step { at } => Some(at),
            _ => None,
        })
        .max();
    let next = played.map_or(0, |at| at + 1);
    let cut = steps.iter().position(|s| s.may_cut.is_some());
    if reached_end(&steps, played) || cut.is_some_and(|cut| next >= cut) {
        return;
    }
    f.push(
        Finding::new(
            Check::WireScript,
            format!(
                "the runtime's script was not played to its end: it stopped before steps[{next}] of {} ({}), {}; the run's outcome rests on a conversation that did not take place",
                steps.len(),
                describe(&steps[next]),
                how_it_ended(obs, runtime)
            ),
        )
        .blocking(),
    );
}

/// The runtime's recorded wire, judged again by the harness with the engine's own rules
/// ([`conform_fakes::verify`]): each violation the wire shows that the runtime's own report
/// lacks is `wire.violation` too — a runtime silenced from inside still fails.
pub fn recorded_wire(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if scenario.file.peer.is_some() || obs.wire_lines_dropped > 0 {
        return;
    }
    let Some(runtime) = runtime_pid(obs) else {
        return;
    };
    let mine = || obs.fake.iter().filter(|l| l.pid == runtime);
    let Some(recording) = conform_fakes::verify::Recording::of(&obs.fake, runtime) else {
        return;
    };
    let steps = scenario.script.steps();
    let version = obs.product_version.as_deref();
    let Ok(shown) =
        conform_fakes::verify::violations(scenario.file.provider, version, &steps, recording)
    else {
        return;
    };
    let reported: Vec<&str> = mine()
        .filter_map(|l| match &l.event {
            FakeEvent::Violation { detail } => Some(detail.as_str()),
            _ => None,
        })
        .collect();
    for detail in shown.iter().filter(|d| !reported.contains(&d.as_str())) {
        f.push(Finding::new(
            Check::WireViolation,
            format!(
                "the runtime's recorded wire shows a protocol violation its own report lacks: {detail}"
            ),
        ));
    }
}

/// The run's runtime: the first process that registered as one.
fn runtime_pid(obs: &Observed) -> Option<i32> {
    conform_protocol::side::runtime_pid(&obs.fake)
}

/// The script ended: its last step was played, or one that ends the process itself, or every
/// step after the last one played is passive.
fn reached_end(steps: &[Step], played: Option<usize>) -> bool {
    let rest = played.map_or(0, |at| at + 1);
    played.is_some_and(|at| ends_process(&steps[at])) || steps[rest..].iter().all(passive)
}

/// A step that neither speaks nor is spoken to: it waits (`await`, `delay_ms`, `wait_eof`),
/// marks a point (`checkpoint`) or changes how the process takes an ending (`ignore_eof`,
/// `ignore_sigterm`). A teardown that ends the runtime during such a tail has heard the whole
/// conversation — a teardown rung it skipped shows in `expect.teardown` and `timing.grace`.
fn passive(step: &Step) -> bool {
    step.await_.is_some()
        || step.delay_ms.is_some()
        || step.wait_eof.is_some()
        || step.checkpoint.is_some()
        || step.ignore_eof.is_some()
        || step.ignore_sigterm.is_some()
}

fn ends_process(step: &Step) -> bool {
    step.exit.is_some() || step.signal.is_some()
}

/// A step as its scenario file writes it: its action and value (`expect = "initialize"`).
pub fn describe(step: &Step) -> String {
    let value = serde_json::to_value(step).unwrap_or_default();
    let Some((key, v)) = step
        .actions()
        .first()
        .and_then(|k| Some((*k, value.get(*k)?)))
    else {
        return "a step".to_owned();
    };
    super::cut(&format!("{key} = {v}"), 80)
}

/// How the runtime's process ended, from its ledger and the kernel's word.
fn how_it_ended(obs: &Observed, pid: i32) -> String {
    let exit = obs
        .fake
        .iter()
        .filter(|l| l.pid == pid)
        .find_map(|l| match &l.event {
            FakeEvent::Exit { code, signal, .. } => Some((code, signal)),
            _ => None,
        });
    let eof = obs
        .fake
        .iter()
        .any(|l| l.pid == pid && l.event == FakeEvent::Eof);
    let after_eof = if eof { " after stdin EOF" } else { "" };
    match exit {
        Some((_, Some(signal))) => format!("killed by {signal}{after_eof}"),
        Some((Some(code), None)) => format!("exited with code {code}{after_eof}"),
        Some((None, None)) => format!("exited{after_eof}"),
        None if obs.gone_at_ms.contains_key(&pid) => {
            format!("killed without a word of its own (SIGKILL){after_eof}")
        }
        None => "still running when the run was over (the harness killed it)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conform_protocol::side::Role;
    use conform_protocol::side::{Direction, FakeLine};

    fn line(pid: i32, event: FakeEvent) -> FakeLine {
        FakeLine {
            seq: None,
            run: "r1".into(),
            pid,
            event,
        }
    }

    fn register(pid: i32) -> FakeLine {
        line(
            pid,
            FakeEvent::Register {
                role: Role::Runtime,
                ppid: 1,
                pgid: pid,
                sid: pid,
                start_time: 1,
                stdio: vec![],
                args: vec![],
                cwd: String::new(),
            },
        )
    }

    fn steps(toml_steps: &str) -> Vec<Step> {
        let doc: toml::Value = toml::from_str(toml_steps).unwrap();
        serde_json::from_value(serde_json::to_value(&doc["steps"]).unwrap()).unwrap()
    }

    #[test]
    fn a_script_ends_at_its_last_step_or_where_it_ends_the_process() {
        let s = steps(
            "[[steps]]\nexpect = \"initialize\"\n[[steps]]\nexit = 3\n[[steps]]\nchunk = \"never\"\n",
        );
        assert!(!reached_end(&s, None));
        assert!(!reached_end(&s, Some(0)));
        assert!(reached_end(&s, Some(1)), "an exit step is the script's end");
        assert!(reached_end(&s, Some(2)));
        assert_eq!(describe(&s[0]), "expect = \"initialize\"");
        let s = steps(
            "[[steps]]\nstop = \"end_turn\"\n[[steps]]\nignore_eof = true\n[[steps]]\nawait = \"gate\"\n[[steps]]\nwait_eof = true\n",
        );
        assert!(
            !reached_end(&s, None),
            "the terminal answer is no passive step"
        );
        assert!(reached_end(&s, Some(0)), "a passive tail may be cut off");
        assert!(reached_end(&s, Some(2)));
    }

    #[test]
    fn a_violation_the_runtimes_report_lacks_is_found_in_its_recorded_wire() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acp/case.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = "title = \"t\"\nprovider = \"acp\"\n[[fake.steps]]\nexpect = \"session/new\"\nparams = { mcpServers = [] }\n[[fake.steps]]\nreply = { sessionId = \"s\" }\n[expect]\nstop_reason = \"completed\"\n";
        std::fs::write(&path, text).unwrap();
        let scenario = crate::scenario::load(dir.path(), &path).unwrap();
        let recv = |frame| {
            line(
                7,
                FakeEvent::Frame {
                    dir: Direction::Recv,
                    frame,
                    violation: None,
                    answers: None,
                },
            )
        };
        let mut obs = Observed {
            fake: vec![
                register(7),
                recv(
                    serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "session/new", "params": {}}),
                ),
                line(7, FakeEvent::Step { at: 0 }),
                line(7, FakeEvent::Step { at: 1 }),
                // Tolerated after the script, but not with the member misspelled.
                recv(
                    serde_json::json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"session": "s"}}),
                ),
            ],
            ..Observed::default()
        };
        let judged = |obs: &Observed| {
            let mut f = Vec::new();
            recorded_wire(&scenario, obs, &mut f);
            f.into_iter().map(|f| f.message).collect::<Vec<_>>()
        };
        let silenced = judged(&obs);
        assert_eq!(silenced.len(), 3, "{silenced:?}");
        assert!(silenced[0].contains("breaks the client side of the schema (NewSessionRequest: \"cwd\" is a required property"));
        assert!(silenced[1].ends_with("params.mcpServers: missing (expected [])"));
        assert!(silenced[2].contains("breaks the client side of the schema (CancelNotification: \"sessionId\" is a required property"));
        // Reported by the runtime itself: the usual finding says it, not this one.
        for found in silenced {
            let detail = found.split(": ").skip(1).collect::<Vec<_>>().join(": ");
            obs.fake.push(line(7, FakeEvent::Violation { detail }));
        }
        assert!(judged(&obs).is_empty());
    }

    #[test]
    fn how_a_runtime_ended_is_read_from_its_ledger_and_the_kernel() {
        let mut obs = Observed {
            fake: vec![register(7)],
            ..Observed::default()
        };
        assert!(how_it_ended(&obs, 7).starts_with("still running"));
        obs.gone_at_ms.insert(7, 100);
        assert!(how_it_ended(&obs, 7).contains("SIGKILL"));
        obs.fake.push(line(7, FakeEvent::Eof));
        obs.fake.push(line(
            7,
            FakeEvent::Exit {
                code: Some(0),
                signal: None,
                peak_rss_kib: None,
            },
        ));
        assert_eq!(how_it_ended(&obs, 7), "exited with code 0 after stdin EOF");
    }
}
