//! What the subject sent, as the script waits for it: the next frame (a fatal signal left to
//! the engine cuts in once what came before it is read), the expected frame, the answer to a
//! request, and the strays between.

use super::*;

impl Engine {
    /// The next frame from the subject (already reported by the reader), or `None` at EOF.
    /// After a fatal signal, once what the subject wrote before it is read, the process dies.
    pub(super) async fn read(&mut self) -> Option<Value> {
        match self.next().await {
            Next::Frame(frame) => Some(frame),
            Next::Eof => None,
            Next::Drained => {
                self.die_if_signalled();
                unreachable!("drained without a signal")
            }
        }
    }

    pub(super) async fn next(&mut self) -> Next {
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
    pub(super) async fn expect(&mut self, method: &str, params: Option<&Value>, exact: bool) {
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
    pub(super) async fn never_came(&mut self, waiting: &str) -> Infallible {
        let ended = match self.policy.pending() {
            Some(sig) if !self.eof => format!("{} arrived", sig.as_str()),
            _ => "stdin closed".into(),
        };
        self.violation(format!("{ended} while {waiting}"));
        self.at_eof().await
    }

    /// `false` when stdin ended, or a fatal signal came and the subject had written nothing
    /// more, before the frame.
    pub(super) async fn expect_frame(
        &mut self,
        method: &str,
        params: Option<&Value>,
        exact: bool,
    ) -> bool {
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

    pub(super) async fn request(
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
    pub(super) fn stray(&mut self, frame: &Value, during: &str) {
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
}
