//! The recorded wire, judged again: what the subject sent a runtime, walked against the steps
//! the runtime reported it played, with the rules the engine applied live ([`crate::judge`]).
//! The harness calls it on every run, so the fake's word is not the only evidence: a runtime
//! silenced from inside — its violation lines dropped on their way out — still fails its case.
//!
//! The walk needs no time and no I/O: each frame the subject sent, in the order it was read,
//! goes to the step that read it, as in the engine; the codec learns from the steps and the
//! frames what it learns live (the session a prompt named, the answers it gave), so its sugar
//! expands to what the runtime sent. It judges only what the script read: a frame the runtime
//! never got to (killed first) is a stray the engine would have judged had it lived, and the
//! walk judges it the same way once the script ended.

use std::collections::VecDeque;

use conform_protocol::script::{RpcError, Step};
use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde_json::Value;

use crate::codec::{Codec, Msg, Sugar};
use crate::error::VersionError;
use crate::judge;

/// What a runtime's ledger says the walk needs: its command line, its working directory, the
/// frames the subject sent it in order, and how many steps of its script it played.
pub struct Recording<'a> {
    pub args: &'a [String],
    pub cwd: &'a str,
    pub received: Vec<&'a Value>,
    pub played: usize,
}

impl<'a> Recording<'a> {
    /// What runtime `pid`'s lines of a ledger record (`None`: it never registered): the one
    /// reading of a ledger for the walk, shared by the harness and the fakes' tests.
    pub fn of(lines: &'a [FakeLine], pid: i32) -> Option<Recording<'a>> {
        let mine = || lines.iter().filter(move |l| l.pid == pid);
        let (args, cwd) = mine().find_map(|l| match &l.event {
            FakeEvent::Register { args, cwd, .. } => Some((args.as_slice(), cwd.as_str())),
            _ => None,
        })?;
        Some(Recording {
            args,
            cwd,
            received: mine()
                .filter_map(|l| match &l.event {
                    FakeEvent::Frame {
                        dir: Direction::Recv,
                        frame,
                        ..
                    } => Some(frame),
                    _ => None,
                })
                .collect(),
            played: mine()
                .filter_map(|l| match l.event {
                    FakeEvent::Step { at } => Some(at + 1),
                    _ => None,
                })
                .max()
                .unwrap_or(0),
        })
    }
}

/// The violations the recorded wire shows, in the words the engine uses for them. `Err`: the
/// script cannot be walked (an unknown product version: a harness fault reported elsewhere).
pub fn violations(
    provider: Provider,
    product_version: Option<&str>,
    steps: &[Step],
    recording: Recording,
) -> Result<Vec<String>, VersionError> {
    let mut codec = crate::protocols::codec_for(provider);
    codec.set_product_version(product_version)?;
    let mut walk = Walk {
        codec,
        frames: recording.received.into_iter().collect(),
        cwd: recording.cwd,
        open: Vec::new(),
        next_id: 0,
        found: Vec::new(),
    };
    if let Err(e) = walk.codec.runtime_args(recording.args) {
        walk.found.push(format!("the runtime's command line: {e}"));
    }
    let played = recording.played.min(steps.len());
    for step in &steps[..played] {
        // A step that ends the process: nothing after it was read.
        if step.exit.is_some() || step.signal.is_some() || !walk.step(step) {
            return Ok(walk.found);
        }
    }
    if played == steps.len() {
        walk.serve();
    }
    Ok(walk.found)
}

struct Walk<'a> {
    codec: Box<dyn Codec>,
    frames: VecDeque<&'a Value>,
    cwd: &'a str,
    /// Requests the subject sent that a step has not answered yet: id and method.
    open: Vec<(Value, String)>,
    next_id: u64,
    found: Vec<String>,
}

impl<'a> Walk<'a> {
    /// One step, as the engine plays it; `false` once the frames ran out where it waited for one
    /// (the runtime was ended there: nothing after it was read).
    fn step(&mut self, step: &Step) -> bool {
        if let Some(method) = &step.expect {
            return self.expect(method, step.params.as_ref(), step.exact.unwrap_or(false));
        }
        if let Some(result) = &step.reply {
            self.answer(step.to.as_deref(), Ok(result.clone()));
            return true;
        }
        if let Some(error) = &step.error {
            self.answer(step.to.as_deref(), Err(error.clone()));
            return true;
        }
        if let Some(method) = &step.request {
            return self.request(method, step.answer.as_ref());
        }
        if step.notify.is_some() || step.raw.is_some() {
            return true;
        }
        let sugar = self.codec.sugar(step);
        if let Some(detail) = self.codec.take_violation() {
            self.found.push(detail);
        }
        match sugar {
            Ok(Some(Sugar::Request { method, answer, .. })) => {
                self.request(&method, answer.as_ref())
            }
            Ok(Some(Sugar::Reply { to, result })) => {
                let to = step.to.clone().or(to);
                self.answer(to.as_deref(), Ok(result));
                true
            }
            _ if step.wait_eof == Some(true) => {
                while let Some(frame) = self.next() {
                    self.stray(frame, judge::AWAITING_EOF);
                }
                true
            }
            _ => true,
        }
    }

    /// The next frame the subject sent, its envelope judged.
    fn next(&mut self) -> Option<&'a Value> {
        let frame = self.frames.pop_front()?;
        if let Some(problem) = judge::envelope(self.codec.as_ref(), frame) {
            self.found.push(problem);
        }
        Some(frame)
    }

    fn expect(&mut self, method: &str, want: Option<&Value>, exact: bool) -> bool {
        while let Some(frame) = self.next() {
            let Some(met) =
                judge::expected(self.codec.as_ref(), frame, method, want, exact, self.cwd)
            else {
                self.stray(frame, &judge::expecting(method));
                continue;
            };
            self.found.extend(met.violation);
            self.codec.received(method, met.params);
            if let Some(id) = met.open {
                self.open.push((id, method.to_owned()));
            }
            return true;
        }
        false
    }

    fn request(&mut self, method: &str, want: Option<&Value>) -> bool {
        let id = self.codec.request_id(self.next_id);
        self.next_id += 1;
        while let Some(frame) = self.next() {
            match judge::answer(self.codec.as_ref(), frame, &id, method, want) {
                Some((_, violation)) => {
                    self.found.extend(violation);
                    return true;
                }
                None => self.stray(frame, &judge::awaiting_answer(method)),
            }
        }
        false
    }

    fn answer(&mut self, to: Option<&str>, outcome: Result<Value, RpcError>) {
        let at = match to {
            Some(m) => self.open.iter().rposition(|(_, method)| method == m),
            None => self.open.len().checked_sub(1),
        };
        if let Some(at) = at {
            let (_, method) = self.open.remove(at);
            self.codec.answered(&method, &outcome);
        }
    }

    /// The frames after the last step, as the engine serves them: a shutdown request the
    /// runtime answers ends it; anything else is a stray.
    fn serve(&mut self) {
        while let Some(frame) = self.next() {
            if let Msg::Request { method, .. } = self.codec.classify(frame)
                && self.codec.shutdown_reply(method).is_some()
            {
                return;
            }
            self.stray(frame, judge::AFTER_THE_SCRIPT);
        }
    }

    fn stray(&mut self, frame: &Value, during: &str) {
        self.found
            .extend(judge::stray(self.codec.as_ref(), frame, during).violation);
    }
}
