//! The subject protocol's per-run state machine: which message is legal when. The order is the
//! one `docs/subject-protocol.md` promises; a message out of it — a duplicate, one before its
//! prerequisite — is a `subject.protocol` failure (one after the run ended: `subject.after-end`),
//! and is not taken as the run's (so a forged `result` followed by the real one cannot pass).
//!
//! Notices are the exception on purpose: how many there are and whether one follows a
//! `job_kill` are delivery facts with their own checks (`delivery.single-notice`,
//! `delivery.no-notice-after-kill`), so only their place is judged here.

use conform_protocol::subject::{FromSubject, Mode};

/// How the refusal of a message after the run's end ends: `subject.after-end` tells it from the
/// rest of `subject.protocol` by it.
const AFTER_END: &str = "after the run was over";

/// Whether `why` (a refusal of [`Lifecycle::accept`], as reported) refused a message because the
/// run was already over.
pub fn after_end(why: &str) -> bool {
    why.strip_suffix(AFTER_END)
        .is_some_and(|head| head.ends_with("` "))
}

#[derive(Debug)]
pub struct Lifecycle {
    mode: Mode,
    dispatched: bool,
    start_rejected: bool,
    refused: bool,
    result: bool,
    settled: bool,
    tool_result: bool,
    notice: bool,
    job_outputs_asked: u32,
    job_outputs_answered: u32,
    /// Of the `job_output` calls asked, those without `wait` while the job ran: their answers
    /// are not the job's delivery.
    peeks_asked: u32,
}

impl Lifecycle {
    pub fn new(mode: Mode) -> Lifecycle {
        Lifecycle {
            mode,
            dispatched: false,
            start_rejected: false,
            refused: false,
            result: false,
            settled: false,
            tool_result: false,
            notice: false,
            job_outputs_asked: 0,
            job_outputs_answered: 0,
            peeks_asked: 0,
        }
    }

    /// The harness sent `job_output`: one answer becomes legal.
    pub fn asked_job_output(&mut self) {
        self.job_outputs_asked += 1;
    }

    /// The harness sent `job_output` without `wait` while the job ran: one answer becomes
    /// legal, and it does not end the run.
    pub fn asked_peek(&mut self) {
        self.job_outputs_asked += 1;
        self.peeks_asked += 1;
    }

    /// Whether the run is over for the protocol: nothing but `host_log` may follow.
    pub fn ended(&self) -> bool {
        if self.refused {
            return self.tool_result;
        }
        match self.mode {
            Mode::Foreground => self.tool_result,
            Mode::Background => {
                self.job_outputs_asked > self.peeks_asked
                    && self.job_outputs_answered == self.job_outputs_asked
            }
        }
    }

    /// Takes `msg` if it is legal now; otherwise says why not and leaves the state as it was.
    pub fn accept(&mut self, msg: &FromSubject) -> Result<(), String> {
        let kind = kind(msg);
        if matches!(msg, FromSubject::HostLog { .. }) {
            return Ok(());
        }
        if let FromSubject::Hello { .. } = msg {
            return Err("`hello` is only legal as the first line of the subject".into());
        }
        let background = self.mode == Mode::Background;
        if self.ended() && !matches!(msg, FromSubject::Notice { .. }) {
            return Err(format!("`{kind}` {AFTER_END}"));
        }
        let started = !background || self.tool_result;
        let over = self.start_rejected || self.result || self.refused;
        let first = !(self.dispatched
            || self.start_rejected
            || self.refused
            || self.tool_result
            || self.result);
        let check = |ok: bool, why: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("`{kind}` {why}"))
            }
        };
        match msg {
            FromSubject::Refused { .. } => {
                check(
                    first,
                    "after the run began (only the first message may refuse it)",
                )?;
                self.refused = true;
            }
            FromSubject::Dispatched { .. } => {
                check(!self.refused, "after `refused`")?;
                check(!self.dispatched, "a second time")?;
                check(!self.start_rejected, "after `start_rejected`")?;
                check(started, "before the background `tool_result` (started …)")?;
                self.dispatched = true;
            }
            FromSubject::StartRejected { .. } => {
                check(!self.refused, "after `refused`")?;
                check(!self.start_rejected, "a second time")?;
                check(
                    !self.dispatched,
                    "after `dispatched` (start already resolved)",
                )?;
                check(started, "before the background `tool_result` (started …)")?;
                self.start_rejected = true;
            }
            FromSubject::Result { .. } => {
                check(!self.result, "a second time")?;
                check(self.dispatched, "before `dispatched`")?;
                self.result = true;
            }
            FromSubject::Settled { .. } => {
                check(!self.settled, "a second time")?;
                check(self.result, "before `result`")?;
                self.settled = true;
            }
            FromSubject::ToolResult { .. } => {
                check(!self.tool_result, "a second time")?;
                if !background || self.refused {
                    check(over, "before `result` or `start_rejected`")?;
                }
                self.tool_result = true;
            }
            FromSubject::Notice { .. } => {
                check(!self.refused, "after `refused` (no job was created)")?;
                check(background, "for a foreground call")?;
                check(
                    self.tool_result,
                    "before the background `tool_result` (started …)",
                )?;
                check(over, "before `result` or `start_rejected`")?;
                self.notice = true;
            }
            FromSubject::JobOutput { .. } => {
                check(background, "for a foreground call")?;
                check(
                    self.job_outputs_answered < self.job_outputs_asked,
                    "that the harness did not ask for",
                )?;
                self.job_outputs_answered += 1;
            }
            FromSubject::HostLog { .. } | FromSubject::Hello { .. } => unreachable!(),
        }
        Ok(())
    }
}

/// The message's `type`, as on the wire.
pub fn kind(msg: &FromSubject) -> &'static str {
    match msg {
        FromSubject::Hello { .. } => "hello",
        FromSubject::Dispatched { .. } => "dispatched",
        FromSubject::StartRejected { .. } => "start_rejected",
        FromSubject::Refused { .. } => "refused",
        FromSubject::Result { .. } => "result",
        FromSubject::ToolResult { .. } => "tool_result",
        FromSubject::Notice { .. } => "notice",
        FromSubject::JobOutput { .. } => "job_output",
        FromSubject::Settled { .. } => "settled",
        FromSubject::HostLog { .. } => "host_log",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conform_protocol::subject::StartError;

    #[test]
    fn a_refusal_after_the_end_is_told_from_the_others() {
        let mut l = Lifecycle::new(Mode::Foreground);
        let settled = FromSubject::Settled { run: "r".into() };
        assert!(!after_end(&l.accept(&settled).unwrap_err()));
        l.tool_result = true;
        let why = l.accept(&settled).unwrap_err();
        assert!(after_end(&why), "{why}");
        assert!(after_end(&format!("out of order: {why}")));
        assert!(!after_end(
            "breaks the subject protocol: after the run was over"
        ));
    }

    fn msg(kind: &str) -> FromSubject {
        let run = "r1".to_owned();
        match kind {
            "dispatched" => FromSubject::Dispatched {
                run,
                child_session_key: "k".into(),
                dispatch_at: "t".into(),
                expected_by: "t".into(),
            },
            "start_rejected" => FromSubject::StartRejected {
                run,
                error: StartError {
                    name: "E".into(),
                    message: "m".into(),
                },
            },
            "result" => FromSubject::Result {
                run,
                stop_reason: "completed".into(),
                output: vec![],
                diagnostic: None,
            },
            "settled" => FromSubject::Settled { run },
            "tool_result" => FromSubject::ToolResult {
                run,
                is_error: false,
                text: "t".into(),
            },
            "notice" => FromSubject::Notice {
                run,
                job: "j".into(),
                text: "t".into(),
            },
            "job_output" => FromSubject::JobOutput {
                run,
                text: "t".into(),
            },
            "host_log" => FromSubject::HostLog {
                run,
                text: "t".into(),
            },
            other => panic!("{other}"),
        }
    }

    /// Plays `kinds` (`ask` = the harness sends job_output); returns the index of the first
    /// refused message and why.
    fn play(mode: Mode, kinds: &[&str]) -> Option<(usize, String)> {
        let mut l = Lifecycle::new(mode);
        for (i, k) in kinds.iter().enumerate() {
            if *k == "ask" {
                l.asked_job_output();
                continue;
            }
            if let Err(why) = l.accept(&msg(k)) {
                return Some((i, why));
            }
        }
        None
    }

    #[test]
    fn the_documented_orders_are_legal() {
        use Mode::*;
        let fg = ["dispatched", "host_log", "result", "settled", "tool_result"];
        assert_eq!(play(Foreground, &fg), None);
        assert_eq!(play(Foreground, &["start_rejected", "tool_result"]), None);
        // A failed teardown claims no `settled`.
        assert_eq!(
            play(Foreground, &["dispatched", "result", "tool_result"]),
            None
        );
        let bg = [
            "tool_result",
            "dispatched",
            "result",
            "settled",
            "notice",
            "ask",
            "job_output",
            "host_log",
        ];
        assert_eq!(play(Background, &bg), None);
        let killed = [
            "tool_result",
            "dispatched",
            "ask",
            "result",
            "settled",
            "job_output",
        ];
        assert_eq!(play(Background, &killed), None);
        let rejected = [
            "tool_result",
            "start_rejected",
            "notice",
            "ask",
            "job_output",
        ];
        assert_eq!(play(Background, &rejected), None);
    }

    #[test]
    fn duplicates_and_messages_out_of_order_are_refused() {
        use Mode::*;
        let cases: &[(Mode, &[&str], usize, &str)] = &[
            (
                Foreground,
                &["dispatched", "result", "result"],
                2,
                "`result` a second time",
            ),
            (Foreground, &["result"], 0, "`result` before `dispatched`"),
            (
                Foreground,
                &["dispatched", "tool_result"],
                1,
                "`tool_result` before `result`",
            ),
            (
                Foreground,
                &["dispatched", "start_rejected"],
                1,
                "after `dispatched`",
            ),
            (
                Foreground,
                &["dispatched", "result", "tool_result", "settled"],
                3,
                "`settled` after the run was over",
            ),
            (
                Foreground,
                &["dispatched", "settled"],
                1,
                "`settled` before `result`",
            ),
            (
                Background,
                &["dispatched"],
                0,
                "before the background `tool_result`",
            ),
            (
                Background,
                &["tool_result", "job_output"],
                1,
                "did not ask for",
            ),
            (Foreground, &["notice"], 0, "`notice` for a foreground call"),
            (
                Background,
                &["tool_result", "dispatched", "notice"],
                2,
                "`notice` before `result`",
            ),
            (
                Background,
                &[
                    "tool_result",
                    "dispatched",
                    "result",
                    "ask",
                    "job_output",
                    "result",
                ],
                5,
                "after the run was over",
            ),
        ];
        for (mode, kinds, at, why) in cases {
            let got = play(*mode, kinds);
            assert!(
                got.as_ref()
                    .is_some_and(|(i, w)| i == at && w.contains(why)),
                "{mode} {kinds:?}: {got:?}, expected refusal at {at} ({why})"
            );
        }
    }

    #[test]
    fn a_refused_message_does_not_change_the_state() {
        let mut l = Lifecycle::new(Mode::Foreground);
        assert!(l.accept(&msg("result")).is_err());
        l.accept(&msg("dispatched")).unwrap();
        l.accept(&msg("result")).unwrap();
    }
}
