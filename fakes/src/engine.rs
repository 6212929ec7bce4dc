//! The protocol-neutral script engine: runs the steps of a [`Script`] against the subject on
//! stdio, reporting everything on the side channel. Protocol specifics live in the [`Codec`].

use std::convert::Infallible;
use std::sync::Arc;

use conform_protocol::script::{RpcError, Script, Step};
use conform_protocol::side::{Direction, FakeEvent, ToFake};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::codec::{Codec, Msg, Sugar};
use crate::params::{Rule, mismatch};
use crate::process;
use crate::side::Side;
use crate::signals::SignalPolicy;
use crate::wire::{Incoming, Stdout};

/// Checks a script before anything runs: protocol, step shapes, what the codec offers.
/// Errors name the step (`steps[i]`, 0-based).
pub fn validate(script: &Script, codec: &dyn Codec) -> Result<(), String> {
    if script.protocol != codec.provider() {
        return Err(format!(
            "script is for protocol `{}`, this fake speaks `{}`",
            script.protocol,
            codec.provider()
        ));
    }
    for (i, step) in script.steps.iter().enumerate() {
        let at = |e: String| format!("steps[{i}]: {e}");
        let action = step.check().map_err(at)?;
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
            )));
        }
        if let Some(what) = &step.echo_to_stderr
            && what != "cwd"
            && !what.starts_with("env:")
        {
            return Err(at(format!(
                "`echo_to_stderr` is `cwd` or `env:NAME`, not {what:?}"
            )));
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

/// A request the subject sent that the script has not answered yet.
#[derive(Debug)]
struct Open {
    id: Value,
    method: String,
}

pub struct Engine {
    codec: Box<dyn Codec>,
    side: Arc<Side>,
    addr: SideAddr,
    policy: Arc<SignalPolicy>,
    incoming: mpsc::UnboundedReceiver<Incoming>,
    control: mpsc::UnboundedReceiver<ToFake>,
    /// Releases that arrived before their `await`.
    released: Vec<String>,
    stdout: Stdout,
    open: Vec<Open>,
    next_id: u64,
    eof: bool,
    ignore_eof: bool,
}

impl Engine {
    pub fn new(
        codec: Box<dyn Codec>,
        side: Arc<Side>,
        addr: SideAddr,
        policy: Arc<SignalPolicy>,
        incoming: mpsc::UnboundedReceiver<Incoming>,
        control: mpsc::UnboundedReceiver<ToFake>,
    ) -> Engine {
        Engine {
            codec,
            side,
            addr,
            policy,
            incoming,
            control,
            released: Vec::new(),
            stdout: Stdout::default(),
            open: Vec::new(),
            next_id: 0,
            eof: false,
            ignore_eof: false,
        }
    }

    /// Runs the (validated) steps, then serves until EOF. Never returns: the process exits,
    /// dies by a signal, or stays parked.
    pub async fn run(mut self, steps: Vec<Step>) -> Infallible {
        for (i, step) in steps.iter().enumerate() {
            self.step(i, step).await;
        }
        loop {
            match self.read().await {
                Some(frame) => self.serve(&frame),
                None => return self.at_eof().await,
            }
        }
    }

    /// A frame after the last step: the runtime's own shutdown request ends the process the
    /// way the real runtime does (answer, then exit 0); anything else is a stray.
    fn serve(&mut self, frame: &Value) {
        if let Msg::Request { id, method, .. } = self.codec.classify(frame)
            && let Some(result) = self.codec.shutdown_reply(method)
        {
            let (id, method) = (id.clone(), method.to_owned());
            let reply = self.codec.response(id, Ok(result));
            self.send(reply, None, Some(method));
            self.exit(0);
        }
        self.stray(frame, "after the script ended");
    }

    async fn step(&mut self, i: usize, step: &Step) {
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

    async fn process_step(&mut self, i: usize, step: &Step) {
        if let Some(text) = &step.stderr {
            eprintln!("{text}");
        } else if let Some(text) = &step.stderr_part {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        } else if let Some(want) = &step.expect_env {
            let wrong: Vec<String> = want
                .iter()
                .filter_map(|(name, value)| {
                    let got = std::env::var(name).ok();
                    let expected = value.as_str().map(str::to_owned);
                    (got != expected).then(|| format!("{name}: expected {expected:?}, got {got:?}"))
                })
                .collect();
            if !wrong.is_empty() {
                self.violation(format!(
                    "the runtime's environment differs from the script: {}",
                    wrong.join("; ")
                ));
            }
        } else if let Some(want) = &step.expect_args {
            // The runtime's own arguments: everything after the fake's `--`.
            let got: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
            if &got != want {
                self.violation(format!(
                    "the runtime's command line differs from the script: got {got:?}, expected {want:?}"
                ));
            }
        } else if let Some(what) = &step.echo_to_stderr {
            let echoed = match what.strip_prefix("env:") {
                Some(name) => std::env::var(name).unwrap_or_default(),
                None => std::env::current_dir()
                    .map(|d| d.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            };
            eprintln!("{echoed}");
        } else if let Some(name) = &step.checkpoint {
            self.side.send(FakeEvent::Checkpoint { name: name.clone() });
        } else if let Some(name) = &step.await_ {
            self.await_release(name).await;
        } else if step.wait_eof == Some(true) {
            while let Some(frame) = self.read().await {
                self.stray(&frame, "waiting for stdin EOF");
            }
        } else if let Some(ms) = step.delay_ms {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        } else if step.close_stdout == Some(true) {
            self.stdout.close();
        } else if let Some(code) = step.exit {
            self.exit(code);
        } else if let Some(name) = &step.signal {
            // Validated before the run.
            let sig = process::parse_signal(name).expect("validated signal name");
            self.side.send(FakeEvent::Exit {
                code: None,
                signal: Some(sig.as_str().into()),
                peak_rss_kib: crate::process::peak_rss_kib(),
            });
            process::die_by(sig);
            self.fault(format!("steps[{i}]: {name} did not end the process"));
        } else if let Some(on) = step.ignore_sigterm {
            self.policy.set_ignore_sigterm(on);
        } else if let Some(on) = step.ignore_eof {
            self.ignore_eof = on;
        } else if let Some(spec) = &step.spawn {
            match process::spawn_grandchild(&self.addr.path, &self.addr.run, spec) {
                Ok(child) => self.side.send(FakeEvent::Spawned { child }),
                Err(e) => self.fault(format!("steps[{i}]: spawn failed: {e}")),
            }
        } else if step.lend_stdout == Some(true) {
            self.side.send(FakeEvent::LendStdout);
            self.await_quietly(conform_protocol::side::STDOUT_HELD)
                .await;
        }
        // `wait_eof = false`, `close_stdout = false` and `lend_stdout = false` do nothing.
    }

    // ---- reading ----

    /// The next frame from the subject (already reported by the reader), or `None` at EOF.
    async fn read(&mut self) -> Option<Value> {
        if self.eof {
            return None;
        }
        match self.incoming.recv().await {
            Some(Incoming::Frame(frame)) => {
                if let Some(problem) = self.codec.envelope_problem(&frame) {
                    self.violation(format!("malformed envelope ({problem}) in {frame}"));
                }
                Some(frame)
            }
            Some(Incoming::Eof) | None => {
                self.eof = true;
                None
            }
        }
    }

    async fn expect(&mut self, method: &str, params: Option<&Value>, exact: bool) {
        loop {
            let Some(frame) = self.read().await else {
                // What the script waits for never came: the subject skipped a step of the
                // protocol (a fake must not pass whatever it is sent, or not sent).
                self.violation(format!("stdin closed while the script expected `{method}`"));
                self.at_eof().await;
                return;
            };
            let (got, open) = match self.codec.classify(&frame) {
                Msg::Request {
                    id,
                    method: m,
                    params,
                } if m == method => (params, Some(id.clone())),
                Msg::Notification { method: m, params } if m == method => (params, None),
                _ => {
                    self.stray(&frame, &format!("expecting `{method}`"));
                    continue;
                }
            };
            let cwd = std::env::current_dir()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default();
            let rule = Rule { exact, cwd: &cwd };
            let diff = match (params, got) {
                (Some(want), got) => mismatch(want, got.unwrap_or(&Value::Null), "params", &rule),
                (None, Some(got)) if exact => Some(format!("params: not expected (sent {got})")),
                (None, _) => None,
            };
            if let Some(diff) = diff {
                self.violation(format!("`{method}` params differ from the script: {diff}"));
            }
            self.codec.received(method, got);
            if let Some(id) = open {
                self.open.push(Open {
                    id,
                    method: method.into(),
                });
            }
            return;
        }
    }

    async fn request(
        &mut self,
        method: &str,
        params: Option<Value>,
        answer: Option<Value>,
        violation: Option<String>,
    ) {
        let id = self.codec.request_id(self.next_id);
        self.next_id += 1;
        let frame = self.codec.request(id.clone(), method, params);
        self.send(frame, violation, None);
        loop {
            let Some(frame) = self.read().await else {
                self.at_eof().await;
                return;
            };
            let outcome = match self.codec.classify(&frame) {
                Msg::Response { id: got, outcome } if *got == id => outcome,
                _ => {
                    self.stray(&frame, &format!("waiting for the answer to `{method}`"));
                    continue;
                }
            };
            // `Answer.answer` is the result, or `{"error": {…}}` for an error response.
            let got = match outcome {
                Ok(result) => result.clone(),
                Err(error) => json!({ "error": error }),
            };
            self.side.send(FakeEvent::Answer {
                method: method.into(),
                answer: got.clone(),
            });
            // An error answer is judged like any other: against the `{"error": …}` the script
            // expects, if it expects one.
            if let Some(want) = answer
                && got != want
            {
                self.violation(format!(
                    "`{method}` was answered {got}, the script expects {want}"
                ));
            }
            return;
        }
    }

    /// A frame that is not what the step waits for: tolerated, or the subject's violation
    /// (a request gets the error the real runtime would send).
    fn stray(&mut self, frame: &Value, during: &str) {
        match self.codec.classify(frame) {
            Msg::Notification { method, .. } if self.codec.tolerated(method, false) => {}
            Msg::Request { id, method, .. } if self.codec.tolerated(method, true) => {
                let reply = self.codec.tolerated_reply(method);
                let frame = self.codec.response(id.clone(), reply);
                self.send(frame, None, Some(method.into()));
            }
            Msg::Notification { method, .. } => {
                self.violation(format!("unexpected notification `{method}` {during}"));
            }
            Msg::Request { id, method, .. } => {
                self.violation(format!("unexpected request `{method}` {during}"));
                let error = self.codec.unknown_method_error(method);
                let frame = self.codec.response(id.clone(), Err(error));
                self.send(frame, None, Some(method.into()));
            }
            Msg::Response { id, .. } => {
                self.violation(format!(
                    "unexpected response to id {id} {during} (no such request is pending)"
                ));
            }
            Msg::Malformed(why) => self.violation(format!("malformed frame {during}: {why}")),
        }
    }

    // ---- writing ----

    fn answer(
        &mut self,
        i: usize,
        to: Option<&str>,
        outcome: Result<Value, RpcError>,
        violation: Option<String>,
    ) {
        let at = match to {
            Some(m) => self.open.iter().rposition(|o| o.method == m),
            None => self.open.len().checked_sub(1),
        };
        let Some(at) = at else {
            let which = to.map_or("any".to_owned(), |m| format!("`{m}`"));
            return self.fault(format!("steps[{i}]: no open {which} request to answer"));
        };
        let open = self.open.remove(at);
        let frame = self.codec.response(open.id, outcome.clone());
        self.send(frame, violation, Some(open.method.clone()));
        self.codec.answered(&open.method, &outcome);
        if self.codec.is_terminal(&open.method) {
            self.side.send(FakeEvent::Terminal);
        }
    }

    fn send(&mut self, mut frame: Value, violation: Option<String>, answers: Option<String>) {
        if violation.is_none() {
            self.codec.dress(answers.as_deref(), &mut frame);
        }
        let line = frame.to_string();
        self.write(&line, frame, violation, answers);
    }

    /// Reports the frame, then writes it: reporting first keeps the ledger causal (the
    /// subject's reaction, reported by the reader, can only come after).
    fn write(
        &mut self,
        line: &str,
        frame: Value,
        violation: Option<String>,
        answers: Option<String>,
    ) {
        if self.stdout.is_closed() {
            eprintln!("fake: not sending {line} (stdout was closed by the script)");
            return;
        }
        let terminal = matches!(self.codec.classify(&frame),
            Msg::Notification { method, params } if self.codec.is_terminal_notification(method, params));
        self.side.send(FakeEvent::Frame {
            dir: Direction::Sent,
            frame,
            violation,
            answers,
        });
        if let Err(e) = self.stdout.write_line(line) {
            eprintln!("fake: writing to stdout failed: {e}");
        }
        if terminal {
            self.side.send(FakeEvent::Terminal);
        }
    }

    // ---- control ----

    async fn await_release(&mut self, name: &str) {
        self.side.send(FakeEvent::Awaiting { name: name.into() });
        self.await_quietly(name).await;
    }

    /// Blocks until the harness releases `name`, without announcing it as a checkpoint.
    async fn await_quietly(&mut self, name: &str) {
        loop {
            if let Some(at) = self.released.iter().position(|n| n == name) {
                self.released.remove(at);
                return;
            }
            match self.control.recv().await {
                Some(ToFake::Release { name }) => self.released.push(name),
                Some(ToFake::Ack) => {}
                None => {
                    eprintln!("fake: side channel closed while awaiting {name:?}; parked");
                    park().await;
                }
            }
        }
    }

    /// Stdin is at EOF and the step cannot go on: exit 0, or stay alive after `ignore_eof`.
    async fn at_eof(&mut self) -> Infallible {
        if self.ignore_eof {
            return park().await;
        }
        self.exit(self.codec.exit_code_at_eof())
    }

    fn exit(&self, code: i32) -> ! {
        self.side.send(FakeEvent::Exit {
            code: Some(code),
            signal: None,
            peak_rss_kib: crate::process::peak_rss_kib(),
        });
        std::process::exit(code)
    }

    fn violation(&self, detail: String) {
        self.side.send(FakeEvent::Violation { detail });
    }

    fn fault(&self, detail: String) {
        eprintln!("fake: {detail}");
        self.side.send(FakeEvent::Fault { detail });
    }
}

/// Waits forever without spinning: only a signal ends the process from here.
pub async fn park() -> Infallible {
    std::future::pending().await
}
