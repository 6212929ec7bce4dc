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

mod reader;

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
}

#[cfg(test)]
mod tests;
