//! The protocol-neutral script engine: runs the steps of a [`Script`] against the subject on
//! stdio, reporting everything on the side channel. Protocol specifics live in the [`Codec`].

use std::convert::Infallible;
use std::sync::Arc;

use conform_protocol::script::{RpcError, Script, Step};
use conform_protocol::side::{Direction, FakeEvent, ToFake};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::codec::{Codec, Msg, Sugar};
use crate::error::{ScriptError, StepError};
use crate::judge;
use crate::process;
use crate::side::Side;
use crate::signals::SignalPolicy;
use crate::stdout::{Shape, Stdout};
use crate::wire::{Drain, Incoming};

mod lifecycle;
mod process_steps;
mod reading;
mod writing;

/// Checks a script before anything runs: protocol, step shapes, what the codec offers.
/// Errors name the step (`steps[i]`, 0-based).
pub fn validate(script: &Script, codec: &dyn Codec) -> Result<(), ScriptError> {
    if script.protocol != codec.provider() {
        return Err(ScriptError::OtherProtocol {
            script: script.protocol,
            fake: codec.provider(),
        });
    }
    for (index, step) in script.steps.iter().enumerate() {
        let at = |error: StepError| ScriptError::Step { index, error };
        let action = step.check().map_err(|e| at(e.into()))?;
        if action == "include" {
            return Err(at(
                "`include` must be expanded by the harness before the script reaches a fake".into(),
            ));
        }
        codec.check_step(action).map_err(at)?;
        if let Some(want) = &step.expect_env
            && let Some((name, _)) = want.iter().find(|(_, v)| !v.is_string() && !v.is_null())
        {
            return Err(at(format!(
                "`expect_env` values are strings or null, not `{name}`'s"
            )
            .into()));
        }
        if let Some(what) = &step.echo_to_stderr
            && what != "cwd"
            && !what.starts_with("env:")
        {
            return Err(at(format!(
                "`echo_to_stderr` is `cwd` or `env:NAME`, not {what:?}"
            )
            .into()));
        }
        if let Some(sig) = &step.signal {
            process::parse_signal(sig).map_err(at)?;
        }
    }
    Ok(())
}

/// Where a grandchild must report (`--side`, `--run` for `spawn`).
#[derive(Clone, Debug)]
pub struct SideAddr {
    pub path: String,
    pub run: String,
}

/// What the engine reads next.
enum Next {
    Frame(Value),
    Eof,
    /// The reader handed over all stdin held when asked.
    Drained,
}

/// A request the subject sent that the script has not answered yet.
#[derive(Debug)]
struct Open {
    id: Value,
    method: String,
}

/// How long the real DSH SDK runtime (0.2.1rc2) takes to exit after answering `shutdown` with
/// its stdin still open (probed directly: about 0.1 s).
const SHUTDOWN_EXIT: std::time::Duration = std::time::Duration::from_millis(100);

pub struct Engine {
    codec: Box<dyn Codec>,
    side: Arc<Side>,
    addr: SideAddr,
    policy: Arc<SignalPolicy>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    drain: Drain,
    control: mpsc::UnboundedReceiver<ToFake>,
    /// Releases that arrived before their `await`.
    released: Vec<String>,
    stdout: Stdout,
    /// How the frames of the step being played are written (`split`, `crlf`).
    shape: Shape,
    /// The last answer written, for `resend`: its line, the frame, the request it answered.
    last: Option<(String, Value, Option<String>)>,
    open: Vec<Open>,
    next_id: u64,
    eof: bool,
    /// A drain of stdin was asked for (after a fatal signal) / has ended.
    draining: bool,
    drained: bool,
    ignore_eof: bool,
    /// Send what the real runtime sends unasked ([`Codec::ambient`]); `ambient = false` stops it.
    ambient: bool,
}

impl Engine {
    pub fn new(
        codec: Box<dyn Codec>,
        side: Arc<Side>,
        addr: SideAddr,
        policy: Arc<SignalPolicy>,
        (incoming, drain): (mpsc::UnboundedReceiver<Incoming>, Drain),
        control: mpsc::UnboundedReceiver<ToFake>,
    ) -> Engine {
        Engine {
            codec,
            side,
            addr,
            policy,
            incoming,
            drain,
            control,
            released: Vec::new(),
            stdout: Stdout::default(),
            shape: Shape::default(),
            last: None,
            open: Vec::new(),
            next_id: 0,
            eof: false,
            draining: false,
            drained: false,
            ignore_eof: false,
            ambient: true,
        }
    }

    /// Runs the (validated) steps, then serves until EOF. Never returns: the process exits,
    /// dies by a signal, or stays parked.
    pub async fn run(mut self, steps: Vec<Step>) -> Infallible {
        self.policy.attach();
        for (i, step) in steps.iter().enumerate() {
            // After a fatal signal only a step that reads what the subject already wrote runs.
            if step.expect.is_none() {
                self.die_if_signalled();
            }
            // A step that ends the process is played once it starts: it is the script's end.
            let ends_process = step.exit.is_some() || step.signal.is_some();
            if ends_process {
                self.side.send(FakeEvent::Step { at: i });
            }
            self.step(i, step).await;
            if !ends_process {
                self.side.send(FakeEvent::Step { at: i });
            }
            // A frame the subject wrote before a fatal signal met its step: played, then death.
            if step.expect.is_some() {
                self.die_if_signalled();
            }
        }
        loop {
            match self.read().await {
                Some(frame) => self.serve(&frame).await,
                None => return self.at_eof().await,
            }
        }
    }

    /// A frame after the last step: the runtime's own shutdown request ends the process the
    /// way the real runtime does (answer, then exit 0 about 0.1 s later — at once if stdin
    /// closes first, as a provider closes it after the answer); anything else is a stray.
    async fn serve(&mut self, frame: &Value) {
        if let Msg::Request { id, method, .. } = self.codec.classify(frame)
            && let Some(result) = self.codec.shutdown_reply(method)
        {
            let (id, method) = (id.clone(), method.to_owned());
            let reply = self.codec.response(id, Ok(result));
            self.send(reply, None, Some(method));
            let until_eof = async {
                while let Some(frame) = self.read().await {
                    self.stray(&frame, judge::AFTER_THE_SCRIPT);
                }
            };
            let _ = tokio::time::timeout(SHUTDOWN_EXIT, until_eof).await;
            self.exit(0);
        }
        self.stray(frame, judge::AFTER_THE_SCRIPT);
    }

    async fn step(&mut self, i: usize, step: &Step) {
        self.shape = Shape {
            split: step.split.clone(),
            crlf: step.crlf == Some(true),
            cut_one: false,
        };
        self.act(i, step).await;
        if let Some(mistake) = std::mem::take(&mut self.shape).unused() {
            self.fault(format!("steps[{i}]: {mistake}"));
        }
    }

    async fn act(&mut self, i: usize, step: &Step) {
        let violation = step.violation.clone();
        if let Some(method) = &step.expect {
            let exact = step.exact.unwrap_or(false);
            return self.expect(method, step.params.as_ref(), exact).await;
        }
        if let Some(result) = &step.reply {
            return self.answer(i, step.to.as_deref(), Ok(result.clone()), violation);
        }
        if let Some(error) = &step.error {
            return self.answer(i, step.to.as_deref(), Err(error.clone()), violation);
        }
        if let Some(method) = &step.notify {
            let frame = self.codec.notification(method, step.params.clone());
            return self.send(frame, violation, None);
        }
        if let Some(method) = &step.request {
            let (params, answer) = (step.params.clone(), step.answer.clone());
            return self.request(method, params, answer, violation).await;
        }
        if let Some(line) = &step.raw {
            let frame = serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.clone()));
            return self.write(line, frame, violation, None);
        }
        let sugar = self.codec.sugar(step);
        if let Some(detail) = self.codec.take_violation() {
            self.violation(detail);
        }
        match sugar {
            Ok(Some(Sugar::Notify { method, params })) => {
                let frame = self.codec.notification(&method, params);
                return self.send(frame, violation, None);
            }
            Ok(Some(Sugar::Request {
                method,
                params,
                answer,
            })) => return self.request(&method, params, answer, violation).await,
            Ok(Some(Sugar::Notifications(all))) => {
                for (method, params) in all {
                    let frame = self.codec.notification(&method, params);
                    self.send(frame, violation.clone(), None);
                }
                return;
            }
            Ok(Some(Sugar::Reply { to, result })) => {
                let to = step.to.clone().or(to);
                return self.answer(i, to.as_deref(), Ok(result), violation);
            }
            Ok(None) => {}
            Err(e) => return self.fault(format!("steps[{i}]: {e}")),
        }
        self.process_step(i, step).await;
    }
}

/// Waits forever without spinning: only a signal ends the process from here.
pub async fn park() -> Infallible {
    std::future::pending().await
}
