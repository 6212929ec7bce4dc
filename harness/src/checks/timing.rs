//! Timing a provider's correctness depends on. Once every process of a run is gone, nothing is
//! left for the provider to wait for: no pipe can stay open, no exit fact is missing, no grace
//! can still expire. A `result` or `settled` that comes long after that moment is a provider
//! waiting needlessly (a grace walked after the child had already exited), which multiplies a
//! host's latency on every failure while every other verdict still passes.
//!
//! The bound is derived from the run's own graces, never an absolute target: half the shortest
//! dispose grace the provider is configured with (the scenario's `disposeGraceMs` /
//! `disposeEofGraceMs`, else the records' defaults of 3000 / 6000 ms), and never under
//! [`MIN_BOUND_MS`] so a loaded CI machine is not judged. A provider that waits out a grace
//! needlessly is late by a whole grace, twice the bound. Lateness the harness's and the
//! subject's own threads spent waiting for a CPU (their run-queue delay) is the machine's: a
//! finding it explains is load-suspect, an advisory.

use conform_protocol::side::{Direction, FakeEvent};
use serde_json::Value;

use super::{Check, Finding};
use crate::provider::{DISPOSE_EOF_GRACE, DISPOSE_GRACE, EofWait, Grace, Ladder};
use crate::run::{Observed, Walked};
use crate::scenario::Scenario;

/// The least bound ever applied (ms): below it, scheduling noise on a loaded machine could be
/// mistaken for a wait.
pub const MIN_BOUND_MS: u64 = 500;

/// How long after its last process was gone a run may take to report (ms).
pub fn bound_ms(scenario: &Scenario) -> u64 {
    let config = scenario.file.subject.provider_config();
    let shortest =
        configured_ms(&config, DISPOSE_GRACE).min(configured_ms(&config, DISPOSE_EOF_GRACE));
    (shortest / 2).max(MIN_BOUND_MS)
}

/// A duration the scenario configures (a valid one: an invalid one fails the start), else the
/// records' default.
fn configured_ms(config: &serde_json::Map<String, Value>, grace: Grace) -> u64 {
    config
        .get(grace.key)
        .and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms > 0.0)
        .map_or(grace.default_ms, |ms| ms.ceil() as u64)
}

pub fn judge(scenario: &Scenario, obs: &Observed) -> Vec<Finding> {
    if obs.sent.timed_out.is_some() || obs.subject_gone.is_some() || obs.not_run.is_some() {
        return Vec::new();
    }
    let mut f = graces(scenario, obs);
    f.extend(needless_waits(scenario, obs));
    f
}

/// How much shorter than configured a measured wait may be (ms): the fake notes stdin EOF a
/// little after the provider closed it, so the wait it measures from there is a little short.
const EARLY_SLACK_MS: u64 = 100;

/// One wait of the teardown ladder a run walked: what the provider is configured to wait
/// there, and what its runtime's ledger shows it waited.
#[derive(Debug, PartialEq)]
struct Wait {
    between: &'static str,
    /// The configuration key that sets it (`None`: the records give it no grace).
    key: Option<&'static str>,
    configured: u64,
    measured: u64,
}

/// The ladder's waits this run walked, as its provider's row ([`crate::provider`]) has them.
fn ladder_waits(scenario: &Scenario, obs: &Observed) -> Vec<Wait> {
    let ladder = &crate::provider::facts(scenario.file.provider).ladder;
    waits_of(ladder, scenario, obs)
}

/// The waits of `ladder` this run walked, read from its runtime's ledger: stdin EOF → SIGTERM,
/// a trapped SIGTERM → the SIGKILL that ended it, and an unanswered `shutdown` → stdin EOF.
fn waits_of(ladder: &Ladder, scenario: &Scenario, obs: &Observed) -> Vec<Wait> {
    let lines = || obs.fake.iter().zip(&obs.fake_at_ms);
    let Some(pid) = conform_protocol::side::runtime_pid(&obs.fake) else {
        return Vec::new();
    };
    let first = |is: &dyn Fn(&FakeEvent) -> bool| {
        lines()
            .enumerate()
            .find(|(_, (l, _))| l.pid == pid && is(&l.event))
            .map(|(i, (_, at))| (i, *at))
    };
    let config = scenario.file.subject.provider_config();
    let eof = first(&|e| matches!(e, FakeEvent::Eof));
    let term = first(&|e| matches!(e, FakeEvent::Signal { signal, .. } if signal == "SIGTERM"));
    let mut waits = Vec::new();
    if let (Some((_, eof)), Some((_, term))) = (eof, term)
        && term >= eof
        && ladder.eof != EofWait::EndedBySdk
    {
        let grace = match ladder.eof {
            EofWait::Grace(grace) => Some(grace),
            EofWait::None | EofWait::EndedBySdk => None,
        };
        waits.push(Wait {
            between: "stdin EOF and SIGTERM",
            key: grace.map(|g| g.key),
            configured: grace.map_or(0, |g| configured_ms(&config, g)),
            measured: term - eof,
        });
    }
    let trapped = first(
        &|e| matches!(e, FakeEvent::Signal { signal, action } if signal == "SIGTERM" && action == "ignored"),
    );
    if let Some((i, term)) = trapped
        && !obs.fake[i..]
            .iter()
            .any(|l| l.pid == pid && matches!(l.event, FakeEvent::Exit { .. }))
        && let Some(&gone) = obs.gone_at_ms.get(&pid)
        // Gone before the subject's claim: its SIGKILL, not the harness's sweep.
        && obs.settled_at_ms.is_some_and(|settled| gone <= settled)
    {
        waits.push(Wait {
            between: "a trapped SIGTERM and the SIGKILL",
            key: Some(ladder.sigterm.key),
            configured: configured_ms(&config, ladder.sigterm),
            measured: gone.saturating_sub(term),
        });
    }
    if let Some(shutdown) = ladder.shutdown
        && let Some((_, asked)) = first(&|e| {
            matches!(e, FakeEvent::Frame { dir: Direction::Recv, frame, .. }
                if frame.get("method").and_then(Value::as_str) == Some(shutdown.method))
        })
        && first(&|e| {
            matches!(e, FakeEvent::Frame { dir: Direction::Sent, answers: Some(m), .. } if m == shutdown.method)
        })
        .is_none()
        && let Some((_, eof)) = eof
        && eof >= asked
    {
        waits.push(Wait {
            between: "the unanswered `shutdown` request and stdin EOF",
            key: Some(shutdown.grace.key),
            configured: configured_ms(&config, shutdown.grace),
            measured: eof - asked,
        });
    }
    waits
}

/// The waits a run walked: the ladder's, as its runtime's ledger measured them, and the
/// script's delays and lingering helpers, as set (the fake sleeps exactly that).
pub fn walked(scenario: &Scenario, obs: &Observed) -> Vec<crate::run::Walked> {
    let declared = |key: &str| scenario.file.waits.contains_key(key);
    let mut out: Vec<Walked> = ladder_waits(scenario, obs)
        .into_iter()
        .filter_map(|w| {
            let key = crate::scenario::waits::key_of_config(w.key?)?;
            Some(Walked {
                key,
                ms: w.measured,
                declared: declared(key),
            })
        })
        .collect();
    for step in scenario.script.steps() {
        let set = [
            ("delay_ms", step.delay_ms),
            ("linger_ms", step.spawn.and_then(|s| s.linger_ms)),
        ];
        for (key, ms) in set {
            if let Some(ms) = ms {
                out.push(Walked {
                    key,
                    ms,
                    declared: declared(key),
                });
            }
        }
    }
    out
}

/// Dispose walks the ladder with the waits it is configured with: each one waited out before
/// the next rung (a few ms short is the fake noting EOF late), and not much longer (a wait
/// past its bound is a configured value not applied).
fn graces(scenario: &Scenario, obs: &Observed) -> Vec<Finding> {
    held_to_graces(ladder_waits(scenario, obs), obs)
}

/// `timing.grace` over the waits a run walked.
fn held_to_graces(waits: Vec<Wait>, obs: &Observed) -> Vec<Finding> {
    waits
        .into_iter()
        .filter_map(|w| {
            let setting = w.key.map_or("the records give it none".to_owned(), |k| {
                format!("`{k}` = {} ms", w.configured)
            });
            let said = format!(
                "dispose waited {} ms between {} ({setting})",
                w.measured, w.between
            );
            let slack = (w.configured / 2).max(MIN_BOUND_MS);
            if w.measured + EARLY_SLACK_MS < w.configured {
                let short = w.configured - w.measured;
                let f = Finding::new(
                    Check::TimingGrace,
                    format!("{said}: {short} ms short, the grace was not waited out"),
                );
                Some(explained_by_load(f, short - EARLY_SLACK_MS, obs))
            } else if w.measured > w.configured + slack {
                let over = w.measured - w.configured;
                let f = Finding::new(
                    Check::TimingGrace,
                    format!(
                        "{said}: {over} ms longer (bound {slack} ms), the configured wait is not the one applied"
                    ),
                );
                Some(explained_by_load(f, over - slack, obs))
            } else {
                None
            }
        })
        .collect()
}

/// `result` and `settled` long after the run's last process was gone.
fn needless_waits(scenario: &Scenario, obs: &Observed) -> Vec<Finding> {
    let Some(gone) = obs.all_gone_at() else {
        return Vec::new();
    };
    let bound = bound_ms(scenario);
    [
        (Check::TimingResult, "result", obs.result_at_ms),
        (Check::TimingSettled, "settled", obs.settled_at_ms),
    ]
    .into_iter()
    .filter_map(|(check, what, at)| {
        let late = at?.checked_sub(gone)?;
        (late > bound).then(|| {
            let finding = Finding::new(
                check,
                format!(
                    "`{what}` came {late} ms after the run's last process was gone (bound {bound} ms: \
                     half the shortest dispose grace); nothing was left to wait for"
                ),
            );
            explained_by_load(finding, late - bound, obs)
        })
    })
    .collect()
}

/// A finding off by `off` ms that the threads which had to act waited as long for a CPU: the
/// machine's, a load-suspect advisory.
fn explained_by_load(finding: Finding, off: u64, obs: &Observed) -> Finding {
    let waited = obs.cpu_waited.unwrap_or_default().as_millis() as u64;
    if waited >= off {
        Finding {
            message: format!(
                "{} — load-suspect: the harness's and the subject's threads waited {waited} ms for a CPU during the run",
                finding.message
            ),
            ..finding.load_suspect()
        }
    } else {
        finding
    }
}

#[cfg(test)]
mod tests {
    use conform_protocol::side::FakeLine;
    use serde_json::json;

    use super::*;
    use conform_protocol::side::Role;

    const PID: i32 = 7;

    fn scenario(provider: &str, subject: &str) -> Scenario {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{provider}/case.toml"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = format!(
            "title = \"t\"\nprovider = \"{provider}\"\n[subject]\n{subject}\n[[fake.steps]]\nstop = \"end_turn\"\n[expect]\nstop_reason = \"completed\"\n"
        );
        std::fs::write(&path, text).unwrap();
        crate::scenario::load(dir.path(), &path).unwrap()
    }

    /// A run whose runtime's ledger holds `events` at their times (ms), settled at `settled`.
    fn observed(events: &[(u64, FakeEvent)], gone: Option<u64>, settled: u64) -> Observed {
        let mut obs = Observed::default();
        let register = FakeEvent::Register {
            role: Role::Runtime,
            ppid: 1,
            pgid: PID,
            sid: PID,
            start_time: 1,
            stdio: Vec::new(),
            args: Vec::new(),
            cwd: String::new(),
        };
        for (at, event) in std::iter::once(&(0, register)).chain(events) {
            obs.fake.push(FakeLine {
                seq: None,
                run: "r1".into(),
                pid: PID,
                event: event.clone(),
            });
            obs.fake_at_ms.push(*at);
        }
        if let Some(gone) = gone {
            obs.gone_at_ms.insert(PID, gone);
        }
        obs.settled_at_ms = Some(settled);
        obs
    }

    fn sigterm(action: &str) -> FakeEvent {
        FakeEvent::Signal {
            signal: "SIGTERM".into(),
            action: action.into(),
        }
    }

    fn messages(s: &Scenario, obs: &Observed) -> Vec<String> {
        graces(s, obs).into_iter().map(|f| f.message).collect()
    }

    /// A fifth provider fills its row of `crate::provider` and nothing else: `timing.grace`
    /// holds its ladder to the row's own keys and defaults, from both sides.
    #[test]
    fn a_fifth_provider_is_judged_by_its_row_alone() {
        use crate::provider::Facts;
        static FIFTH: Facts = Facts {
            ladder: Ladder {
                eof: EofWait::Grace(Grace {
                    key: "fifthEofGraceMs",
                    default_ms: 400,
                }),
                sigterm: DISPOSE_GRACE,
                shutdown: Some(crate::provider::Shutdown {
                    method: "fifth/stop",
                    grace: Grace {
                        key: "fifthShutdownMs",
                        default_ms: 250,
                    },
                }),
            },
            records_as_practice: None,
            publishes_schema: false,
            fake_profiles: false,
            sdk_flags: false,
        };
        // The scenario's provider only loads the file; the row judged is the fifth's.
        let s = scenario("acp", "config = { fifthShutdownMs = 300 }");
        let judged = |obs: &Observed| -> Vec<String> {
            held_to_graces(waits_of(&FIFTH.ladder, &s, obs), obs)
                .into_iter()
                .map(|f| f.message)
                .collect()
        };
        let asked = FakeEvent::Frame {
            dir: Direction::Recv,
            frame: json!({"method": "fifth/stop", "id": 1}),
            violation: None,
            answers: None,
        };
        // On time: the unanswered shutdown's configured 300 ms, then the default 400 ms.
        let on_time = observed(
            &[
                (0, asked.clone()),
                (300, FakeEvent::Eof),
                (705, sigterm("exit")),
            ],
            Some(706),
            710,
        );
        assert!(judged(&on_time).is_empty(), "{:?}", judged(&on_time));
        // Neither waited: each named by the fifth provider's own key.
        let hasty = observed(
            &[(0, asked), (1, FakeEvent::Eof), (2, sigterm("exit"))],
            Some(3),
            10,
        );
        assert_eq!(
            judged(&hasty),
            [
                "dispose waited 1 ms between stdin EOF and SIGTERM (`fifthEofGraceMs` = 400 ms): 399 ms short, the grace was not waited out",
                "dispose waited 1 ms between the unanswered `shutdown` request and stdin EOF (`fifthShutdownMs` = 300 ms): 299 ms short, the grace was not waited out",
            ]
        );
    }

    /// The waits a run walked, by `[waits]` key: the ladder's as measured, declared or not.
    #[test]
    fn the_walked_waits_are_the_ladders_by_their_waits_keys() {
        let text = "dispose_eof_grace_ms = 100\ndispose_grace_ms = 300\n[waits]\ndispose_grace_ms = \"the point\"";
        let s = scenario("acp", text);
        let obs = observed(
            &[(100, FakeEvent::Eof), (210, sigterm("ignored"))],
            Some(520),
            530,
        );
        assert_eq!(
            walked(&s, &obs),
            [
                Walked {
                    key: "dispose_eof_grace_ms",
                    ms: 110,
                    declared: false
                },
                Walked {
                    key: "dispose_grace_ms",
                    ms: 310,
                    declared: true
                },
            ]
        );
    }

    #[test]
    fn each_rung_is_held_to_its_configured_wait_from_both_sides() {
        let s = scenario("acp", "dispose_eof_grace_ms = 200\ndispose_grace_ms = 1000");
        // On time: EOF → 210 ms → SIGTERM (trapped) → 1020 ms → gone.
        let on_time = observed(
            &[(100, FakeEvent::Eof), (310, sigterm("ignored"))],
            Some(1330),
            1340,
        );
        assert_eq!(
            ladder_waits(&s, &on_time),
            [
                Wait {
                    between: "stdin EOF and SIGTERM",
                    key: Some("disposeEofGraceMs"),
                    configured: 200,
                    measured: 210
                },
                Wait {
                    between: "a trapped SIGTERM and the SIGKILL",
                    key: Some("disposeGraceMs"),
                    configured: 1000,
                    measured: 1020
                }
            ]
        );
        assert!(messages(&s, &on_time).is_empty());
        // The defaults walked instead: 6000 ms, then 3000 ms.
        let defaults = observed(
            &[(100, FakeEvent::Eof), (6100, sigterm("ignored"))],
            Some(9100),
            9110,
        );
        assert_eq!(
            messages(&s, &defaults),
            [
                "dispose waited 6000 ms between stdin EOF and SIGTERM (`disposeEofGraceMs` = 200 ms): 5800 ms longer (bound 500 ms), the configured wait is not the one applied",
                "dispose waited 3000 ms between a trapped SIGTERM and the SIGKILL (`disposeGraceMs` = 1000 ms): 2000 ms longer (bound 500 ms), the configured wait is not the one applied",
            ]
        );
        // No grace at all: SIGTERM with the EOF.
        let hasty = observed(
            &[(100, FakeEvent::Eof), (101, sigterm("exit"))],
            Some(102),
            110,
        );
        assert_eq!(
            messages(&s, &hasty),
            [
                "dispose waited 1 ms between stdin EOF and SIGTERM (`disposeEofGraceMs` = 200 ms): 199 ms short, the grace was not waited out"
            ]
        );
    }

    #[test]
    fn rungs_the_records_do_not_time_or_the_subject_did_not_walk_are_not_judged() {
        // Codex terminates with the EOF: no grace, so a wait is late past the least bound.
        let codex = scenario("codex", "dispose_grace_ms = 1000");
        let late = observed(
            &[(100, FakeEvent::Eof), (1100, sigterm("exit"))],
            Some(1101),
            1110,
        );
        assert_eq!(
            messages(&codex, &late),
            [
                "dispose waited 1000 ms between stdin EOF and SIGTERM (the records give it none): 1000 ms longer (bound 500 ms), the configured wait is not the one applied"
            ]
        );
        // Claude Code's SDK ends the CLI's input itself: that wait is not the dispose's.
        let claude = scenario("claude-code", "dispose_grace_ms = 1000");
        assert!(ladder_waits(&claude, &late).is_empty());
        // A process the harness swept after the subject's claim was not ended by a SIGKILL
        // of the subject's; one that exited by itself after a trapped SIGTERM neither.
        let acp = scenario("acp", "dispose_grace_ms = 1000");
        let swept = observed(&[(100, sigterm("ignored"))], Some(20_000), 5_000);
        assert!(ladder_waits(&acp, &swept).is_empty());
        let exited = observed(
            &[
                (100, sigterm("ignored")),
                (
                    200,
                    FakeEvent::Exit {
                        code: Some(0),
                        signal: None,
                        peak_rss_kib: None,
                    },
                ),
            ],
            Some(210),
            220,
        );
        assert!(ladder_waits(&acp, &exited).is_empty());
    }

    #[test]
    fn an_unanswered_dsh_shutdown_is_bounded_by_its_configured_timeout() {
        let s = scenario("dsh-sdk", "config = { shutdownTimeoutMs = 150 }");
        let frame = |dir, frame, answers: Option<&str>| FakeEvent::Frame {
            dir,
            frame,
            violation: None,
            answers: answers.map(str::to_owned),
        };
        let shutdown = frame(
            Direction::Recv,
            json!({"jsonrpc": "2.0", "id": "r", "method": "shutdown", "params": {}}),
            None,
        );
        let unanswered = observed(
            &[(100, shutdown.clone()), (1100, FakeEvent::Eof)],
            Some(1110),
            1120,
        );
        assert_eq!(
            messages(&s, &unanswered),
            [
                "dispose waited 1000 ms between the unanswered `shutdown` request and stdin EOF (`shutdownTimeoutMs` = 150 ms): 850 ms longer (bound 500 ms), the configured wait is not the one applied"
            ]
        );
        let answered = observed(
            &[
                (100, shutdown),
                (
                    1000,
                    frame(
                        Direction::Sent,
                        json!({"jsonrpc": "2.0", "id": "r", "result": {}}),
                        Some("shutdown"),
                    ),
                ),
                (1100, FakeEvent::Eof),
            ],
            Some(1110),
            1120,
        );
        assert!(ladder_waits(&s, &answered).is_empty());
    }

    #[test]
    fn settled_is_late_only_after_every_process_the_claim_knew_was_gone() {
        let s = scenario("acp", "");
        let helper = |gone: Option<u64>| {
            // The runtime gone at 1000, settled at 3200; the claim knew a helper that never
            // registered (a real runtime's CLI child).
            let mut obs = observed(&[], Some(1000), 3200);
            obs.claim = Some(crate::proc::settle::Claim {
                what: "settled",
                at_ms: 3200,
                members: vec![crate::proc::settle::AtClaim {
                    pid: 8,
                    how: crate::proc::settle::How::Environment,
                    command: "claude".into(),
                    state: crate::proc::settle::State::Gone,
                    reaper: None,
                    subject_must_reap: false,
                }],
                holders: Vec::new(),
                cgroup: None,
            });
            if let Some(gone) = gone {
                obs.gone_at_ms.insert(8, gone);
            }
            needless_waits(&s, &obs)
                .into_iter()
                .map(|f| f.message)
                .collect::<Vec<_>>()
        };
        // The helper ran until 3000: the provider waited for it, rightly.
        assert_eq!(helper(Some(3000)), Vec::<String>::new());
        // Gone at 1100: the two seconds after it were a needless wait.
        assert_eq!(
            helper(Some(1100)),
            [
                "`settled` came 2100 ms after the run's last process was gone (bound 1500 ms: half the shortest dispose grace); nothing was left to wait for"
            ]
        );
        // Its end unseen: nothing is known to judge against.
        assert_eq!(helper(None), Vec::<String>::new());
    }
}
