//! Steps that act on the process rather than the wire: its stderr, environment, arguments,
//! timing, signals and children.

use super::*;

impl Engine {
    /// A step that acts on the process rather than the wire: its stderr, environment, timing,
    /// signals and children.
    pub(super) async fn process_step(&mut self, i: usize, step: &Step) {
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
    pub(super) fn check_env(&self, want: &serde_json::Map<String, Value>) {
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
    pub(super) fn check_args(&self, want: &[String]) {
        let got: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
        if got != want {
            self.violation(format!(
                "the runtime's command line differs from the script: got {got:?}, expected {want:?}"
            ));
        }
    }

    /// `delay_ms`: sleeps, cut short by a fatal signal left to the engine.
    pub(super) async fn delay(&self, ms: u64) {
        let policy = self.policy.clone();
        tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
            () = policy.deferred() => self.die_if_signalled(),
        }
    }

    // ---- reading ----
}

/// `echo_to_stderr`: the runtime's working directory (`cwd`) or one variable of its
/// environment (`env:NAME`, empty when unset), as a line on stderr.
pub(super) fn echo_to_stderr(what: &str) {
    let echoed = match what.strip_prefix("env:") {
        Some(name) => std::env::var(name).unwrap_or_default(),
        None => std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    eprintln!("{echoed}");
}
