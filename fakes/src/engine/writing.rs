//! What the fake writes: answers to the subject's requests and its own frames, each reported
//! on the side channel before it is written.

use super::*;

impl Engine {
    pub(super) fn answer(
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

    pub(super) fn send(
        &mut self,
        mut frame: Value,
        violation: Option<String>,
        answers: Option<String>,
    ) {
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
    pub(super) fn write(
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
}
