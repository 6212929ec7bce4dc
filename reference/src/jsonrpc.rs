//! Newline-delimited JSON-RPC 2.0 over a child's stdin/stdout, protocol-neutral — or the same
//! request/notification/response model in the Claude Agent SDK's stream-json framing
//! ([`Framing::StreamJson`]): requests are `control_request`s, answers `control_response`s, and
//! every other object is a message named by its `type`.
//!
//! One reader task owns the child's stdout: it resolves pending requests, hands inbound requests
//! and notifications to a synchronous [`Handler`] *in wire order* (so a notification that precedes
//! a response is always handled before the response is seen), and reports EOF. Writes go through
//! one locked stdin; a failed write counts as losing the wire.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, watch};

use crate::util::fresh_hex32;

/// Why a request did not get a result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The peer answered with a JSON-RPC error object.
    #[error("JSON-RPC error response {code}: {message}")]
    Remote {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// Stdout reached EOF or a write failed before the response arrived.
    #[error("JSON-RPC wire lost: {0}")]
    WireLost(String),
}

/// A JSON-RPC error object to answer an inbound request with.
#[derive(Debug, Clone)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl ErrorObject {
    /// As the ACP SDK answers a method it has no handler for (observed on
    /// `@agentclientprotocol/sdk` 0.25.1): `"Method not found": <m>`, the method in `data`.
    pub fn method_not_found(method: &str) -> Self {
        ErrorObject {
            code: -32601,
            message: format!("\"Method not found\": {method}"),
            data: Some(serde_json::json!({ "method": method })),
        }
    }
}

/// How the handler answers an inbound request.
pub enum Reply {
    Result(Value),
    Error(ErrorObject),
    /// No answer (only a seeded defect leaves a request unanswered: every provider answers
    /// synchronously, under the writer, so a teardown cannot overtake the answer).
    Unanswered,
}

/// Inbound traffic, handled synchronously on the reader task in wire order.
pub trait Handler: Send + Sync + 'static {
    fn on_request(&self, id: &Value, method: &str, params: Value) -> Reply;
    fn on_notification(&self, method: &str, params: Value);
    /// A line that is not a JSON-RPC message (never answered; host-only).
    fn on_garbage(&self, _line: &str) {}
    /// The answer to one of our requests, seen in wire order before the requester is woken
    /// (so state a response establishes — Codex's committed turn id — is in place before the
    /// next notification is handled).
    fn on_response(&self, _method: &str, _outcome: &Result<Value, RpcError>) {}
}

/// How outbound request ids look on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdStyle {
    /// `0`, `1`, `2`, … (the ACP SDK's scheme).
    Counter,
    /// `"<prefix><32 hex>"`, fresh per request (the DSH SDK client's `req_<uuid hex>`).
    Prefixed(&'static str),
}

/// How frames are spelled on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `{"jsonrpc":"2.0","id","method","params"}` and `{"id","result"|"error"}`.
    JsonRpc,
    /// Claude Code's stream-json: `{"type":"control_request","request_id","request":{"subtype",
    /// …}}`, `{"type":"control_response","response":{"subtype":"success"|"error","request_id",
    /// "response"|"error"}}`; any other object is a message whose method is its `type` and whose
    /// params are the whole object.
    StreamJson,
}

/// How the reader turns the child's stdout into frames: as lines of bytes, each decoded and
/// parsed once whole — what a provider must do, since a read of a pipe or socket ends anywhere
/// — or, for the seeded defects, as the classic host bugs do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    Lines,
    /// Each read decoded on its own (`chunk.toString()` per `data` event): a character split
    /// across two reads turns into U+FFFD.
    DecodedPerRead,
    /// Each read parsed as one frame (`JSON.parse` per `data` event): a frame split across
    /// two reads is two pieces of garbage, and so are two frames in one read.
    ParsedPerRead,
    /// A line longer than this ends the wire (Python asyncio's `readline`, 64 KiB by default).
    LineLimit(usize),
}

impl Reading {
    pub fn of(defects: &crate::cli::Defects) -> Reading {
        if defects.decode_per_read {
            Reading::DecodedPerRead
        } else if defects.parse_per_read {
            Reading::ParsedPerRead
        } else if defects.line_limit_64k {
            Reading::LineLimit(64 * 1024)
        } else {
            Reading::Lines
        }
    }
}

/// The peer's stdin, held for a write (`None` once closed).
type Writer<'a> = tokio::sync::MutexGuard<'a, Option<Box<dyn AsyncWrite + Send + Unpin>>>;

/// Pending requests, keyed by the JSON text of their id (`5` and `"5"` stay distinct).
type Pending = HashMap<String, (String, oneshot::Sender<Result<Value, RpcError>>)>;

struct Inner {
    framing: Framing,
    reading: Reading,
    ids: IdStyle,
    next_id: AtomicU64,
    pending: Mutex<Pending>,
    writer: tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>,
    eof: AtomicBool,
    write_failed: AtomicBool,
    eof_tx: watch::Sender<bool>,
}

/// Client end of the wire. Cheap to clone.
#[derive(Clone)]
pub struct JsonRpc {
    inner: Arc<Inner>,
}

impl JsonRpc {
    /// Start the reader task over `reader`; `writer` is the peer's stdin. Counter ids.
    #[cfg(test)]
    pub fn new(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        handler: Arc<dyn Handler>,
    ) -> Self {
        Self::with_ids(reader, writer, handler, IdStyle::Counter, Reading::Lines)
    }

    /// Start the reader task over `reader`; `writer` is the peer's stdin; requests get ids in
    /// the `ids` scheme.
    pub fn with_ids(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        handler: Arc<dyn Handler>,
        ids: IdStyle,
        reading: Reading,
    ) -> Self {
        Self::framed(reader, writer, handler, ids, (Framing::JsonRpc, reading))
    }

    /// As [`JsonRpc::with_ids`], in the given framing.
    pub fn framed(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        handler: Arc<dyn Handler>,
        ids: IdStyle,
        (framing, reading): (Framing, Reading),
    ) -> Self {
        let (eof_tx, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            framing,
            reading,
            ids,
            next_id: AtomicU64::new(0),
            pending: Mutex::new(HashMap::new()),
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            eof: AtomicBool::new(false),
            write_failed: AtomicBool::new(false),
            eof_tx,
        });
        let client = JsonRpc { inner };
        tokio::spawn(client.clone().read_loop(reader, handler));
        client
    }

    /// Resolves `true` once the peer's stdout reached EOF (every holder of the pipe is gone).
    pub fn eof_watch(&self) -> watch::Receiver<bool> {
        self.inner.eof_tx.subscribe()
    }

    /// Whether both directions are still usable.
    pub fn is_open(&self) -> bool {
        !self.inner.eof.load(Ordering::SeqCst) && !self.inner.write_failed.load(Ordering::SeqCst)
    }

    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let rx = self.send_request(method, params).await?;
        match rx.await {
            Ok(result) => result,
            Err(_) => Err(RpcError::WireLost("request dropped".into())),
        }
    }

    /// Send a request whose response (or failure) nobody waits for (best-effort requests such
    /// as Codex `turn/interrupt`): the frame is written before this returns.
    pub async fn request_detached(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send_request(method, params).await.map(drop)
    }

    /// Registers the request as pending, then writes it; the receiver gets its outcome.
    async fn send_request(
        &self,
        method: &str,
        params: Value,
    ) -> Result<oneshot::Receiver<Result<Value, RpcError>>, RpcError> {
        let id = self.fresh_id();
        let key = id.to_string();
        let (tx, rx) = oneshot::channel();
        let forget = || {
            self.inner
                .pending
                .lock()
                .expect("pending lock")
                .remove(&key);
        };
        self.inner
            .pending
            .lock()
            .expect("pending lock")
            .insert(key.clone(), (method.to_owned(), tx));
        // Insert before checking EOF: the reader sets the flag before draining, so either it
        // drains this entry or we see the flag.
        if self.inner.eof.load(Ordering::SeqCst) {
            forget();
            return Err(RpcError::WireLost("stdout already closed".into()));
        }
        let frame = match self.inner.framing {
            Framing::JsonRpc => {
                json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            }
            Framing::StreamJson => {
                let mut request = json!({ "subtype": method });
                if let (Some(r), Value::Object(p)) = (request.as_object_mut(), params) {
                    r.extend(p);
                }
                json!({"request_id": id, "type": "control_request", "request": request})
            }
        };
        if let Err(e) = self.write(&frame).await {
            forget();
            return Err(e);
        }
        Ok(rx)
    }

    /// A notification without a `params` member (`{"jsonrpc":"2.0","method":"…"}`).
    pub async fn notify_bare(&self, method: &str) -> Result<(), RpcError> {
        self.write(&json!({"jsonrpc": "2.0", "method": method}))
            .await
    }

    fn fresh_id(&self) -> Value {
        match self.inner.ids {
            IdStyle::Counter => json!(self.inner.next_id.fetch_add(1, Ordering::SeqCst)),
            IdStyle::Prefixed(prefix) => json!(format!("{prefix}{}", fresh_hex32())),
        }
    }

    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        let frame = match self.inner.framing {
            Framing::JsonRpc => json!({"jsonrpc": "2.0", "method": method, "params": params}),
            Framing::StreamJson => {
                let mut frame = json!({ "type": method });
                if let (Some(f), Value::Object(p)) = (frame.as_object_mut(), params) {
                    f.extend(p);
                }
                frame
            }
        };
        self.write(&frame).await
    }

    fn answer_frame(&self, id: &Value, reply: Result<Value, ErrorObject>) -> Value {
        match (self.inner.framing, reply) {
            (Framing::StreamJson, Ok(result)) => json!({"type": "control_response",
                "response": {"subtype": "success", "request_id": id, "response": result}}),
            (Framing::StreamJson, Err(e)) => json!({"type": "control_response",
                "response": {"subtype": "error", "request_id": id, "error": e.message}}),
            (Framing::JsonRpc, Ok(result)) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            (Framing::JsonRpc, Err(e)) => {
                let mut error = json!({"code": e.code, "message": e.message});
                if let Some(data) = e.data {
                    error["data"] = data;
                }
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
        }
    }

    /// Close the peer's stdin (EOF). Idempotent.
    pub async fn close_stdin(&self) {
        let mut guard = self.inner.writer.lock().await;
        if let Some(mut w) = guard.take() {
            let _ = w.shutdown().await;
        }
    }

    async fn write(&self, frame: &Value) -> Result<(), RpcError> {
        let mut guard = self.inner.writer.lock().await;
        self.write_held(&mut guard, frame).await
    }

    /// Writes one frame through the writer the caller holds.
    async fn write_held(&self, guard: &mut Writer<'_>, frame: &Value) -> Result<(), RpcError> {
        let mut line = serde_json::to_vec(frame).expect("serializable frame");
        line.push(b'\n');
        let Some(w) = guard.as_mut() else {
            return Err(RpcError::WireLost("stdin closed".into()));
        };
        let res = async {
            w.write_all(&line).await?;
            w.flush().await
        }
        .await;
        if let Err(e) = res {
            self.inner.write_failed.store(true, Ordering::SeqCst);
            **guard = None;
            // Losing the write half loses the wire: fail everything pending.
            self.fail_pending(&format!("write failed: {e}"));
            return Err(RpcError::WireLost(format!("write failed: {e}")));
        }
        Ok(())
    }

    fn fail_pending(&self, reason: &str) {
        let drained: Vec<_> = self
            .inner
            .pending
            .lock()
            .expect("pending lock")
            .drain()
            .collect();
        for (_, (_, tx)) in drained {
            let _ = tx.send(Err(RpcError::WireLost(reason.to_owned())));
        }
    }

    async fn read_loop(self, reader: impl AsyncRead + Send + Unpin, handler: Arc<dyn Handler>) {
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
    async fn read_lines(&self, reader: impl AsyncRead + Unpin, handler: &dyn Handler, max: usize) {
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
    async fn read_per_read(
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

    async fn dispatch(&self, line: &str, handler: &dyn Handler) {
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
fn stream_json_as_jsonrpc(
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

#[cfg(test)]
mod tests {
    use super::*;

    struct Recorder(Mutex<Vec<String>>);
    impl Handler for Recorder {
        fn on_request(&self, _id: &Value, method: &str, _params: Value) -> Reply {
            self.0.lock().unwrap().push(format!("req {method}"));
            Reply::Error(ErrorObject::method_not_found(method))
        }
        fn on_notification(&self, method: &str, _params: Value) {
            self.0.lock().unwrap().push(format!("note {method}"));
        }
    }

    #[tokio::test]
    async fn request_response_and_ordering() {
        let (client_side, peer_side) = tokio::io::duplex(4096);
        let (peer_read, mut peer_write) = tokio::io::split(peer_side);
        let (client_read, client_write) = tokio::io::split(client_side);
        let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
        let rpc = JsonRpc::new(client_read, client_write, rec.clone());
        let peer = tokio::spawn(async move {
            let mut lines = BufReader::new(peer_read).lines();
            let first = lines.next_line().await.unwrap().unwrap();
            let v: Value = serde_json::from_str(&first).unwrap();
            assert_eq!(v["method"], "ping");
            assert_eq!(v["jsonrpc"], "2.0");
            peer_write
                .write_all(b"garbage\n{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\"}\n")
                .await
                .unwrap();
            let frame = json!({"jsonrpc":"2.0","id":v["id"],"result":{"ok":true}});
            peer_write
                .write_all(format!("{frame}\n").as_bytes())
                .await
                .unwrap();
            let answer = lines.next_line().await.unwrap().unwrap();
            let a: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(a["id"], 5);
            assert_eq!(a["error"]["code"], -32601);
            drop(peer_write);
        });
        let res = rpc.request("ping", json!({})).await.unwrap();
        assert_eq!(res, json!({"ok": true}));
        assert_eq!(*rec.0.lock().unwrap(), vec!["note n", "req x"]);
        peer.await.unwrap();
        let mut eof = rpc.eof_watch();
        eof.wait_for(|e| *e).await.unwrap();
        assert!(matches!(
            rpc.request("late", json!({})).await,
            Err(RpcError::WireLost(_))
        ));
    }

    #[tokio::test]
    async fn prefixed_string_ids() {
        let (client_side, peer_side) = tokio::io::duplex(4096);
        let (peer_read, mut peer_write) = tokio::io::split(peer_side);
        let (client_read, client_write) = tokio::io::split(client_side);
        let rec = Arc::new(Recorder(Mutex::new(Vec::new())));
        let rpc = JsonRpc::with_ids(
            client_read,
            client_write,
            rec,
            IdStyle::Prefixed("req_"),
            Reading::Lines,
        );
        let peer = tokio::spawn(async move {
            let mut lines = BufReader::new(peer_read).lines();
            let v: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            let id = v["id"].as_str().unwrap().to_owned();
            assert!(id.starts_with("req_") && id.len() == 36, "{id}");
            // A numeric id, or the id's text as a number, is not this request.
            for frame in [
                json!({"jsonrpc": "2.0", "id": 0, "result": "wrong"}),
                json!({"jsonrpc": "2.0", "id": id, "result": "right"}),
            ] {
                peer_write
                    .write_all(format!("{frame}\n").as_bytes())
                    .await
                    .unwrap();
            }
        });
        assert_eq!(rpc.request("x", json!({})).await.unwrap(), json!("right"));
        peer.await.unwrap();
    }
}
