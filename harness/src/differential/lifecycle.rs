//! How a runtime ends — what of the provider's teardown it outlived (stdin EOF, a SIGTERM),
//! how it ended (exit code or signal) and how soon after the last thing the provider did —
//! read from a run's ledger, kept as the last line of a fixture (`{"end": …}`) and compared as
//! a pseudo-frame of kind [`END`]. Teardown is judged on exactly this: a runtime deaf to EOF
//! (codex-acp: SIGTERM after the provider's grace, in every run) is not one that exits at it.
//!
//! Only what the runtime decides is kept: which of the provider's steps came to it, and in
//! which order, is the provider's (a host that closes stdin and signals the group at once
//! leaves a runtime no time to show whether it heeds EOF), and what killed it by SIGKILL left
//! it no say.

use conform_protocol::side::{FakeEvent, FakeLine};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind a wire's ending goes by.
pub const END: &str = "(end)";

/// Steps of the provider closer than this to the end are not outlived: they came together.
const TOGETHER_MS: u64 = 100;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ending {
    /// What the provider did that the runtime lived on through (`stdin-eof` for a runtime
    /// deaf to EOF, `SIGTERM` for one that traps it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outlived: Vec<String>,
    /// `exit-0`, `signal-SIGTERM`, `signal-SIGKILL`, or `killed` (no exit reported).
    pub how: String,
    /// How soon after the provider's last step it ended: `under-1s`, `under-5s`,
    /// `5s-or-more`; `on-its-own` when the provider had done nothing yet; `-` when killed.
    pub within: String,
}

impl Ending {
    /// Read from a run's ledger and when each line arrived (ms); `None` when the ledger holds
    /// no sign of an end at all (a run cut off by its deadline).
    pub fn of(lines: &[FakeLine], at_ms: &[u64]) -> Option<Ending> {
        // The runtime's own lines: a helper it spawned registers and exits on the same ledger.
        let runtime = conform_protocol::side::runtime_pid(lines);
        let own = |l: &FakeLine| runtime.is_none_or(|pid| l.pid == pid);
        // The provider's steps, each by its first arrival (a group's SIGTERM reaches a proxy
        // twice: directly and forwarded).
        let mut steps: Vec<(String, u64)> = Vec::new();
        let mut exit = None;
        for (line, &ms) in lines.iter().zip(at_ms).filter(|(l, _)| own(l)) {
            let step = match &line.event {
                FakeEvent::Eof => "stdin-eof".to_owned(),
                FakeEvent::Signal { signal, .. } => signal.clone(),
                FakeEvent::Exit { code, signal, .. } => {
                    exit = Some(match (code, signal) {
                        (_, Some(sig)) => (format!("signal-{sig}"), ms),
                        (Some(code), None) => (format!("exit-{code}"), ms),
                        (None, None) => ("exit".to_owned(), ms),
                    });
                    break;
                }
                _ => continue,
            };
            if !steps.iter().any(|(s, _)| *s == step) {
                steps.push((step, ms));
            }
        }
        let Some((how, end_ms)) = exit else {
            return (!steps.is_empty()).then(|| Ending {
                outlived: Vec::new(),
                how: "killed".into(),
                within: "-".into(),
            });
        };
        if how == "signal-SIGKILL" {
            return Some(Ending {
                outlived: Vec::new(),
                how,
                within: "-".into(),
            });
        }
        // Outlived: a step the provider had to follow with another (a slow exit after EOF
        // alone is slow, not deaf).
        let last = steps
            .iter()
            .map(|(_, ms)| *ms)
            .filter(|ms| *ms <= end_ms)
            .max();
        let outlived = steps
            .iter()
            .filter(|(_, ms)| last.is_some_and(|last| ms + TOGETHER_MS < last))
            .map(|(s, _)| s.clone())
            .collect();
        let within = last.map_or("on-its-own".to_owned(), |last| bucket(end_ms - last));
        Some(Ending {
            outlived,
            how,
            within,
        })
    }

    /// As a pseudo-frame of a wire.
    pub fn frame(&self) -> Value {
        serde_json::to_value(self).expect("serialises")
    }

    /// In words: "outlives stdin-eof, then ends signal-SIGTERM (under-1s)".
    pub fn describe(frame: &Value) -> String {
        let Ok(e) = serde_json::from_value::<Ending>(frame.clone()) else {
            return frame.to_string();
        };
        let outlived = if e.outlived.is_empty() {
            String::new()
        } else {
            format!("outlives {}, then ", e.outlived.join(" and "))
        };
        format!("{outlived}ends {} ({})", e.how, e.within)
    }
}

/// A wire's frames, and its ending's pseudo-frame apart.
pub fn split(wire: &[(String, Value)]) -> (Vec<(String, Value)>, Option<&Value>) {
    let end = wire.iter().find(|(k, _)| k == END).map(|(_, f)| f);
    let frames = wire.iter().filter(|(k, _)| k != END).cloned().collect();
    (frames, end)
}

/// Time to end, in buckets wide enough that a real runtime's start-up noise stays inside one.
fn bucket(ms: u64) -> String {
    match ms {
        0..1000 => "under-1s",
        1000..5000 => "under-5s",
        _ => "5s-or-more",
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use conform_protocol::side::Role;

    fn line(event: FakeEvent) -> FakeLine {
        FakeLine {
            seq: None,
            run: String::new(),
            pid: 0,
            event,
        }
    }

    fn exit(code: Option<i32>, signal: Option<&str>) -> FakeLine {
        line(FakeEvent::Exit {
            code,
            signal: signal.map(str::to_owned),
            peak_rss_kib: None,
        })
    }

    fn term() -> FakeLine {
        line(FakeEvent::Signal {
            signal: "SIGTERM".into(),
            action: "forwarded".into(),
        })
    }

    #[test]
    fn a_runtime_deaf_to_eof_outlives_it_and_ends_by_the_sigterm_after_the_grace() {
        let lines = [
            line(FakeEvent::Eof),
            term(),
            term(),
            exit(None, Some("SIGTERM")),
        ];
        let e = Ending::of(&lines, &[100, 6100, 6101, 6120]).unwrap();
        assert_eq!(
            e,
            Ending {
                outlived: vec!["stdin-eof".into()],
                how: "signal-SIGTERM".into(),
                within: "under-1s".into(),
            }
        );
        assert_eq!(
            Ending::describe(&e.frame()),
            "outlives stdin-eof, then ends signal-SIGTERM (under-1s)"
        );
    }

    #[test]
    fn a_helper_the_runtime_spawned_is_not_the_runtime() {
        let register = |pid, role| FakeLine {
            pid,
            ..line(FakeEvent::Register {
                role,
                ppid: 1,
                pgid: 1,
                sid: 1,
                start_time: 0,
                stdio: Vec::new(),
                args: Vec::new(),
                cwd: String::new(),
            })
        };
        let helper_exit = FakeLine {
            pid: 8,
            ..exit(Some(3), None)
        };
        let runtime = |l: FakeLine| FakeLine { pid: 7, ..l };
        let lines = [
            register(7, Role::Runtime),
            register(8, Role::Grandchild),
            helper_exit,
            runtime(line(FakeEvent::Eof)),
            runtime(exit(Some(0), None)),
        ];
        let e = Ending::of(&lines, &[0, 1, 2, 10, 20]).unwrap();
        assert_eq!((e.how.as_str(), e.within.as_str()), ("exit-0", "under-1s"));
    }

    #[test]
    fn steps_that_came_together_are_not_outlived() {
        // EOF and the group's SIGTERM at once: the runtime had no time to heed the EOF.
        let lines = [line(FakeEvent::Eof), term(), exit(Some(0), None)];
        let e = Ending::of(&lines, &[100, 101, 140]).unwrap();
        assert_eq!((e.outlived.len(), e.how.as_str()), (0, "exit-0"));
    }

    #[test]
    fn a_slow_exit_a_kill_and_an_end_on_its_own_are_told_apart() {
        let slow = Ending::of(&[line(FakeEvent::Eof), exit(Some(0), None)], &[10, 1500]).unwrap();
        assert_eq!((slow.outlived.len(), slow.within.as_str()), (0, "under-5s"));
        let killed = Ending::of(
            &[line(FakeEvent::Eof), exit(None, Some("SIGKILL"))],
            &[10, 900],
        );
        assert_eq!(killed.unwrap().outlived, Vec::<String>::new());
        let alone = Ending::of(&[exit(Some(0), None)], &[10]).unwrap();
        assert_eq!(alone.within, "on-its-own");
        assert_eq!(Ending::of(&[], &[]), None);
    }
}
