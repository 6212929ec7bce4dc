//! The one reader of the peer's stdout: each line read (whole, or per read for the
//! `read-per-read` defect), parsed in its framing and dispatched — an answer to its pending
//! request, a request or notification to the handler, anything else as garbage.

use super::*;

impl JsonRpc {
    pub(super) async fn read_loop(
        self,
        reader: impl AsyncRead + Send + Unpin,
        handler: Arc<dyn Handler>,
    ) {
        match self.inner.reading {
            Reading::Lines => self.read_lines(reader, handler.as_ref(), usize::MAX).await,
            Reading::LineLimit(max) => self.read_lines(reader, handler.as_ref(), max).await,
            bug => self.read_per_read(reader, handler.as_ref(), bug).await,
        }
        self.inner.eof.store(true, Ordering::SeqCst);
        self.fail_pending("stdout reached EOF");
        self.inner.eof_tx.send_replace(true);
    }

    /// Whole lines of bytes, each decoded once complete (a line past `max` ends the wire).
    pub(super) async fn read_lines(
        &self,
        reader: impl AsyncRead + Unpin,
        handler: &dyn Handler,
        max: usize,
    ) {
        // A pipe's worth per read (its default capacity), not 8 KiB: a 16 MiB frame in 256
        // reads instead of 2048.
        let mut reader = BufReader::with_capacity(64 * 1024, reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    handler.on_garbage(&format!("stdout read error: {e}"));
                    break;
                }
            }
            if buf.len() > max {
                // Seeded defect `line-limit-64k`: the reader raises, as asyncio's does, and its
                // task is gone — nothing reads on, nothing notices.
                handler.on_garbage(&format!("a line over the limit of {max} bytes"));
                std::future::pending::<()>().await;
            }
            let line = crate::util::decode(&buf);
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            self.dispatch(line, handler).await;
        }
    }

    /// Seeded defects `decode-per-read` and `parse-per-read`: each read taken on its own.
    pub(super) async fn read_per_read(
        &self,
        mut reader: impl AsyncRead + Unpin,
        handler: &dyn Handler,
        bug: Reading,
    ) {
        use tokio::io::AsyncReadExt;
        let mut chunk = vec![0u8; 64 * 1024];
        let mut text = String::new();
        loop {
            let n = match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // Decoded per read: a character cut by the read's end is lost.
            text.push_str(&String::from_utf8_lossy(&chunk[..n]));
            if bug == Reading::ParsedPerRead {
                // Parsed per read: what the read holds is one frame, or garbage.
                let read = std::mem::take(&mut text);
                if !read.trim().is_empty() {
                    self.dispatch(read.trim(), handler).await;
                }
                continue;
            }
            while let Some(end) = text.find('\n') {
                let line: String = text.drain(..=end).collect();
                let line = line.trim();
                if !line.is_empty() {
                    self.dispatch(line, handler).await;
                }
            }
        }
    }

    pub(super) async fn dispatch(&self, line: &str, handler: &dyn Handler) {
        let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else {
            handler.on_garbage(line);
            return;
        };
        if self.inner.framing == Framing::StreamJson {
            let Some(m) = stream_json_as_jsonrpc(msg) else {
                handler.on_garbage(line);
                return;
            };
            msg = m;
        }
        let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = msg.remove("id").filter(|id| !id.is_null());
        let params = match msg.remove("params") {
            Some(p @ Value::Object(_)) | Some(p @ Value::Array(_)) => p,
            _ => json!({}),
        };
        match (method, id) {
            (Some(method), Some(id)) => {
                // The writer is held while the handler decides: a teardown its decision sets off
                // (a failed run closes stdin) waits for this answer instead of closing under it.
                let mut writer = self.inner.writer.lock().await;
                let reply = match handler.on_request(&id, &method, params) {
                    Reply::Result(v) => Ok(v),
                    Reply::Error(e) => Err(e),
                    Reply::Unanswered => return,
                };
                let frame = self.answer_frame(&id, reply);
                // A failed answer is recorded as a write failure; the caller sees it as wire
                // loss later.
                let _ = self.write_held(&mut writer, &frame).await;
            }
            (Some(method), None) => handler.on_notification(&method, params),
            (None, Some(id)) => {
                let key = id.to_string();
                let Some((method, tx)) = self
                    .inner
                    .pending
                    .lock()
                    .expect("pending lock")
                    .remove(&key)
                else {
                    handler.on_garbage(line);
                    return;
                };
                let outcome = if let Some(err) = msg.get("error") {
                    Err(RpcError::Remote {
                        code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                        message: err
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("JSON-RPC error")
                            .to_owned(),
                        data: err.get("data").cloned(),
                    })
                } else {
                    Ok(msg.remove("result").unwrap_or(Value::Null))
                };
                handler.on_response(&method, &outcome);
                let _ = tx.send(outcome);
            }
            (None, None) => handler.on_garbage(line),
        }
    }
}

/// A stream-json object in JSON-RPC's terms (`None`: not a message of the framing).
pub(super) fn stream_json_as_jsonrpc(
    mut msg: serde_json::Map<String, Value>,
) -> Option<serde_json::Map<String, Value>> {
    let ty = msg.get("type")?.as_str()?.to_owned();
    let out = match ty.as_str() {
        "control_request" => {
            let id = msg.remove("request_id")?;
            let request = msg.remove("request")?;
            let method = request.get("subtype")?.as_str()?.to_owned();
            json!({"id": id, "method": method, "params": request})
        }
        "control_response" => {
            let mut response = msg.remove("response")?;
            let id = response.get_mut("request_id")?.take();
            match response.get("subtype")?.as_str()? {
                "success" => {
                    json!({"id": id, "result": response.get_mut("response").map(Value::take)})
                }
                "error" => {
                    let message = response.get("error")?.as_str().unwrap_or("control error");
                    json!({"id": id, "error": {"code": 0, "message": message}})
                }
                _ => return None,
            }
        }
        _ => json!({"method": ty, "params": Value::Object(msg)}),
    };
    match out {
        Value::Object(m) => Some(m),
        _ => None,
    }
}
