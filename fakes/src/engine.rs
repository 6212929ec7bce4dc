//! The protocol-neutral script engine: runs the steps of a [`Script`] against the subject on
//! stdio, reporting everything on the side channel. Protocol specifics live in the [`Codec`].

use std::convert::Infallible;
use std::sync::Arc;

use conform_protocol::script::{RpcError, Script, Step};
use conform_protocol::side::{Direction, FakeEvent, ToFake};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::codec::{Codec, Msg, Sugar};
use crate::judge;
use crate::process;
use crate::side::Side;
use crate::signals::SignalPolicy;
use crate::stdout::{Shape, Stdout};
use crate::wire::{Drain, Incoming};

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

    /// A step that acts on the process rather than the wire: its stderr, environment, timing,
    /// signals and children.
    async fn process_step(&mut self, i: usize, step: &Step) {
        if let Some(text) = &step.stderr {
            eprintln!("{text}");
        } else if let Some(text) = &step.stderr_part {
            use std::io::Write;
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        } else if let Some(want) = &step.expect_env {
            self.check_env(want);
        } else if let Some(want) = &step.expect_args {
            self.check_args(want);
        } else if let Some(what) = &step.echo_to_stderr {
            echo_to_stderr(what);
        } else if let Some(name) = &step.checkpoint {
            self.side.send(FakeEvent::Checkpoint { name: name.clone() });
        } else if let Some(name) = &step.await_ {
            self.await_release(name).await;
        } else if step.wait_eof == Some(true) {
            while let Some(frame) = self.read().await {
                self.stray(&frame, judge::AWAITING_EOF);
            }
        } else if let Some(ms) = step.delay_ms {
            self.delay(ms).await;
        } else if step.close_stdout == Some(true) {
            self.stdout.close();
            self.side.send(FakeEvent::StdoutClosed);
        } else if let Some(code) = step.exit {
            self.exit(code);
        } else if let Some(name) = &step.signal {
            // Validated before the run.
            let sig = process::parse_signal(name).expect("validated signal name");
            crate::signals::die_by(&self.side, sig);
            self.fault(format!("steps[{i}]: {name} did not end the process"));
        } else if let Some(on) = step.ignore_sigterm {
            self.policy.set_ignore_sigterm(on);
        } else if let Some(on) = step.ignore_eof {
            self.ignore_eof = on;
        } else if let Some(on) = step.ambient {
            self.ambient = on;
        } else if let Some(spec) = &step.spawn {
            match process::spawn_grandchild(&self.addr.path, &self.addr.run, spec) {
                // A lingering helper is one the harness is never told of.
                Ok(_) if spec.linger_ms.is_some() => {}
                Ok(child) => self.side.send(FakeEvent::Spawned { child }),
                Err(e) => self.fault(format!("steps[{i}]: spawn failed: {e}")),
            }
        } else if let Some(n) = step.coalesce {
            self.stdout.coalesce(n);
        } else if step.resend == Some(true) {
            match self.last.clone() {
                Some((line, frame, answers)) => self.write(&line, frame, None, answers),
                None => self.fault(format!("steps[{i}]: no answer was written to send again")),
            }
        } else if step.lend_stdout == Some(true) {
            self.side.lend_stdout();
            self.await_quietly(conform_protocol::side::STDOUT_HELD)
                .await;
        }
        // `wait_eof = false`, `close_stdout = false` and `lend_stdout = false` do nothing.
    }

    /// `expect_env`: the runtime's environment against the script (null: unset).
    fn check_env(&self, want: &serde_json::Map<String, Value>) {
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
    }

    /// `expect_args`: the runtime's own arguments (everything after the fake's `--`) against
    /// the script.
    fn check_args(&self, want: &[String]) {
        let got: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
        if got != want {
            self.violation(format!(
                "the runtime's command line differs from the script: got {got:?}, expected {want:?}"
            ));
        }
    }

    /// `delay_ms`: sleeps, cut short by a fatal signal left to the engine.
    async fn delay(&self, ms: u64) {
        let policy = self.policy.clone();
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
            () = policy.deferred() => self.die_if_signalled(),
        }
    }

    // ---- reading ----

    /// The next frame from the subject (already reported by the reader), or `None` at EOF.
    /// After a fatal signal, once what the subject wrote before it is read, the process dies.
    async fn read(&mut self) -> Option<Value> {
        match self.next().await {
            Next::Frame(frame) => Some(frame),
            Next::Eof => None,
            Next::Drained => {
                self.die_if_signalled();
                unreachable!("drained without a signal")
            }
        }
    }

    async fn next(&mut self) -> Next {
        if self.eof {
            return Next::Eof;
        }
        if self.drained {
            return Next::Drained;
        }
        // The subject may be waiting for what `coalesce` is still gathering.
        if let Err(e) = self.stdout.flush_batch() {
            eprintln!("fake: writing to stdout failed: {e}");
        }
        let policy = self.policy.clone();
        loop {
            let got = tokio::select! {
                biased;
                got = self.incoming.recv() => got,
                () = policy.deferred(), if !self.draining => {
                    self.drain.request();
                    self.draining = true;
                    continue;
                }
            };
            return match got {
                Some(Incoming::Frame(frame)) => {
                    if let Some(problem) = judge::envelope(self.codec.as_ref(), &frame) {
                        self.violation(problem);
                    }
                    Next::Frame(frame)
                }
                Some(Incoming::Drained) => {
                    self.drained = true;
                    Next::Drained
                }
                Some(Incoming::Eof) | None => {
                    self.eof = true;
                    Next::Eof
                }
            };
        }
    }

    /// Waits for the frame the script expects. A fatal signal meanwhile ends the process once
    /// what the subject wrote before it has been read (after the step is reported played): a
    /// frame sent before the signal counts.
    async fn expect(&mut self, method: &str, params: Option<&Value>, exact: bool) {
        if !self.expect_frame(method, params, exact).await {
            // What the script waits for never came: the subject skipped a step of the
            // protocol (a fake must not pass whatever it is sent, or not sent).
            match self
                .never_came(&format!("the script expected `{method}`"))
                .await {}
        }
    }

    /// The subject ended the exchange (stdin EOF, or a fatal signal with nothing more written)
    /// while the script was `waiting`: its violation, then the end of the process.
    async fn never_came(&mut self, waiting: &str) -> Infallible {
        let ended = match self.policy.pending() {
            Some(sig) if !self.eof => format!("{} arrived", sig.as_str()),
            _ => "stdin closed".into(),
        };
        self.violation(format!("{ended} while {waiting}"));
        self.at_eof().await
    }

    /// `false` when stdin ended, or a fatal signal came and the subject had written nothing
    /// more, before the frame.
    async fn expect_frame(&mut self, method: &str, params: Option<&Value>, exact: bool) -> bool {
        let cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        loop {
            let Next::Frame(frame) = self.next().await else {
                return false;
            };
            let Some(met) =
                judge::expected(self.codec.as_ref(), &frame, method, params, exact, &cwd)
            else {
                self.stray(&frame, &judge::expecting(method));
                continue;
            };
            if let Some(violation) = met.violation {
                self.violation(violation);
            }
            self.codec.received(method, met.params);
            if let Some(id) = met.open {
                self.open.push(Open {
                    id,
                    method: method.into(),
                });
            }
            return true;
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
            let Next::Frame(frame) = self.next().await else {
                // A request the runtime sent is answered, even when the run is over.
                match self.never_came(&format!("`{method}` was unanswered")).await {}
            };
            let codec = self.codec.as_ref();
            let Some((got, violation)) = judge::answer(codec, &frame, &id, method, answer.as_ref())
            else {
                self.stray(&frame, &judge::awaiting_answer(method));
                continue;
            };
            // `Answer.answer` is the result, or `{"error": {…}}` for an error response.
            self.side.send(FakeEvent::Answer {
                method: method.into(),
                answer: got,
            });
            if let Some(violation) = violation {
                self.violation(violation);
            }
            return;
        }
    }

    /// A frame that is not what the step waits for: tolerated, or the subject's violation
    /// (a request gets the error the real runtime would send).
    fn stray(&mut self, frame: &Value, during: &str) {
        let stray = judge::stray(self.codec.as_ref(), frame, during);
        if let Some(violation) = stray.violation {
            self.violation(violation);
        }
        if let Some((id, outcome, method)) = stray.reply {
            let frame = self.codec.response(id, outcome);
            self.send(frame, None, Some(method));
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
        crate::payload::expand_repeats(&mut frame);
        let unasked = match violation {
            None if self.ambient => self.codec.ambient(&frame, answers.as_deref()),
            _ => Vec::new(),
        };
        let line = frame.to_string();
        self.write(&line, frame, violation, answers);
        for (method, params) in unasked {
            let frame = self.codec.notification(&method, params);
            self.send(frame, None, None);
        }
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
        if let Err(sig) = self.policy.writing(true) {
            crate::signals::die_by(&self.side, sig);
        }
        let terminal = matches!(self.codec.classify(&frame),
            Msg::Notification { method, params } if self.codec.is_terminal_notification(method, params));
        if answers.is_some() {
            self.last = Some((line.to_owned(), frame.clone(), answers.clone()));
        }
        self.side.send(FakeEvent::Frame {
            dir: Direction::Sent,
            frame: crate::payload::reported(frame, line.len()),
            violation,
            answers,
        });
        if let Err(e) = self.stdout.write_line(line, &mut self.shape) {
            if e.kind() == std::io::ErrorKind::Other {
                self.fault(e.to_string());
            } else {
                eprintln!("fake: writing to stdout failed: {e}");
            }
        }
        let _ = self.policy.writing(false);
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
            let policy = self.policy.clone();
            let got = tokio::select! {
                got = self.control.recv() => got,
                () = policy.deferred() => return self.die_if_signalled(),
            };
            match got {
                Some(ToFake::Release { name }) => self.released.push(name),
                Some(ToFake::Ack { .. }) => {}
                None => {
                    eprintln!("fake: side channel closed while awaiting {name:?}; parked");
                    self.park().await;
                }
            }
        }
    }

    /// Stdin is at EOF and the step cannot go on: exit 0, or stay alive after `ignore_eof`.
    async fn at_eof(&mut self) -> Infallible {
        self.die_if_signalled();
        if self.ignore_eof {
            return self.park().await;
        }
        self.exit(self.codec.exit_code_at_eof())
    }

    /// Stays alive until a fatal signal.
    async fn park(&self) -> Infallible {
        self.policy.deferred().await;
        self.die_if_signalled();
        unreachable!("woken without a signal")
    }

    /// Dies by the fatal signal left to the engine, if one was.
    fn die_if_signalled(&self) {
        if let Some(sig) = self.policy.pending() {
            crate::signals::die_by(&self.side, sig);
        }
    }

    fn exit(&self, code: i32) -> ! {
        process::exit(&self.side, code)
    }

    fn violation(&self, detail: String) {
        self.side.send(FakeEvent::Violation { detail });
    }

    fn fault(&self, detail: String) {
        eprintln!("fake: {detail}");
        self.side.send(FakeEvent::Fault { detail });
    }
}

/// `echo_to_stderr`: the runtime's working directory (`cwd`) or one variable of its
/// environment (`env:NAME`, empty when unset), as a line on stderr.
fn echo_to_stderr(what: &str) {
    let echoed = match what.strip_prefix("env:") {
        Some(name) => std::env::var(name).unwrap_or_default(),
        None => std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    eprintln!("{echoed}");
}

/// Waits forever without spinning: only a signal ends the process from here.
pub async fn park() -> Infallible {
    std::future::pending().await
}
