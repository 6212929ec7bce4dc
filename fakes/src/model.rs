//! A scripted model endpoint for the real runtimes (`conform mock-model`): loopback only, one
//! behaviour per URL path prefix, speaking the two wire formats the real runtimes call —
//! Anthropic Messages (`…/v1/messages`, the DSH SDK runtime) and OpenAI Responses
//! (`…/responses`, Codex and codex-acp) — streamed as server-sent events or answered whole.
//!
//! `http://127.0.0.1:PORT/<behaviour>` is the base URL a runtime is given; the behaviours are
//! [`Behaviour`]'s names. The HTTP is the least a loopback test server needs (one request per
//! connection, `connection: close`), written here rather than pulling an HTTP stack into the
//! build for it.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The assistant text every successful answer streams, in these chunks.
pub const TEXT_CHUNKS: [&str; 2] = ["Hello, ", "world."];

/// Largest request body read (runtimes send the whole conversation; a few hundred KiB at most).
const MAX_BODY: usize = 16 << 20;

/// What the endpoint does for a request, chosen by the first path segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behaviour {
    /// Streams the text and ends the turn normally.
    Success,
    /// The same, with a pause before every event (a model that takes its time).
    Slow,
    /// HTTP 401 with the format's authentication error.
    Unauthorized,
    /// HTTP 429 with the format's rate-limit error.
    RateLimited,
    /// HTTP 500 with the format's server error.
    ServerError,
    /// Streams the first chunk of text, then drops the connection.
    MidStream,
    /// Asks for a shell command to be run (a tool call the runtime must get approved).
    Tool,
}

impl Behaviour {
    pub const ALL: [(&'static str, Behaviour); 7] = [
        ("success", Behaviour::Success),
        ("slow", Behaviour::Slow),
        ("http-401", Behaviour::Unauthorized),
        ("http-429", Behaviour::RateLimited),
        ("http-500", Behaviour::ServerError),
        ("mid-stream", Behaviour::MidStream),
        ("tool", Behaviour::Tool),
    ];

    pub fn from_name(name: &str) -> Option<Behaviour> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

/// The two wire formats, from the path's last segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Anthropic,
    Responses,
}

/// A request as read off the socket.
#[derive(Debug)]
struct Request {
    method: String,
    path: String,
    body: Value,
}

/// Serves until the listener fails; each connection on its own task.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    let mut turn = 0u64;
    loop {
        let (stream, _) = listener.accept().await?;
        turn += 1;
        tokio::spawn(async move {
            let _ = handle(stream, turn).await;
        });
    }
}

async fn handle(stream: TcpStream, turn: u64) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let request = match read_request(&mut reader).await? {
        Some(r) => r,
        None => return Ok(()),
    };
    // The query string routes nothing (Claude Code asks `…/v1/messages?beta=true`).
    let path = request.path.split('?').next().unwrap_or_default();
    let mut segments = path.trim_start_matches('/').split('/');
    let behaviour = segments.next().and_then(Behaviour::from_name);
    let format = if path.ends_with("/messages") {
        Some(Format::Anthropic)
    } else if path.ends_with("/responses") {
        Some(Format::Responses)
    } else {
        None
    };
    let (Some(behaviour), Some(format), "POST") = (behaviour, format, request.method.as_str())
    else {
        let names: Vec<&str> = Behaviour::ALL.iter().map(|(n, _)| *n).collect();
        let text = format!(
            "no such endpoint: {} {} (use POST /<{}>/v1/messages or /<…>/responses)",
            request.method,
            request.path,
            names.join("|")
        );
        return respond_json(&mut write, 404, &json!({"error": {"message": text}})).await;
    };
    let streamed = request.body.get("stream").and_then(Value::as_bool) == Some(true);
    // A tool call is asked for once: once the conversation carries its result, the model
    // answers with text, as a real one would.
    let behaviour = if behaviour == Behaviour::Tool && carries_tool_result(&request.body) {
        Behaviour::Success
    } else {
        behaviour
    };
    match behaviour {
        Behaviour::Unauthorized | Behaviour::RateLimited | Behaviour::ServerError => {
            let (status, body) = error_body(format, behaviour);
            respond_json(&mut write, status, &body).await
        }
        _ if !streamed => {
            respond_json(&mut write, 200, &whole_answer(format, behaviour, turn)).await
        }
        _ => {
            let events = stream_events(format, behaviour, turn, shell_tool(&request.body));
            respond_stream(&mut write, format, behaviour, &events).await
        }
    }
}

/// Writes a streamed answer as server-sent events, as slowly or as cut short as `behaviour`
/// says.
async fn respond_stream<W: tokio::io::AsyncWrite + Unpin>(
    write: &mut W,
    format: Format,
    behaviour: Behaviour,
    events: &[(String, Value)],
) -> std::io::Result<()> {
    write
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        )
        .await?;
    for (i, (name, data)) in events.iter().enumerate() {
        if behaviour == Behaviour::Slow {
            // Simulated model latency: the point of this behaviour.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let frame = format!("event: {name}\ndata: {data}\n\n");
        write.write_all(frame.as_bytes()).await?;
        write.flush().await?;
        if behaviour == Behaviour::MidStream && is_first_text(format, i, events) {
            // Drop the connection with the stream half told.
            return Ok(());
        }
    }
    write.shutdown().await
}

/// The shell tool's name among the tools a Messages request offers: Claude Code's `Bash`, else
/// `bash` (the DSH SDK runtime's).
fn shell_tool(body: &Value) -> &'static str {
    let offered = body["tools"].as_array().into_iter().flatten();
    if offered.into_iter().any(|t| t["name"] == "Bash") {
        "Bash"
    } else {
        "bash"
    }
}

/// The shell call's input: a marker printed for the DSH SDK runtime; for Claude Code a file
/// written in the workspace, which no permission mode but bypass allows unasked (an `echo` it
/// runs without asking).
fn shell_input(shell: &str) -> &'static str {
    if shell == "Bash" {
        "{\"command\": \"touch mock-tool-marker\", \"description\": \"Write a marker file\"}"
    } else {
        "{\"command\": \"echo mock-tool\", \"description\": \"Print a marker\"}"
    }
}

/// Whether a request's conversation already holds a tool's result (Anthropic `tool_result`
/// blocks, Responses `function_call_output` items).
fn carries_tool_result(body: &Value) -> bool {
    fn any(v: &Value) -> bool {
        match v {
            Value::Object(o) => {
                matches!(
                    o.get("type").and_then(Value::as_str),
                    Some("tool_result" | "function_call_output")
                ) || o.values().any(any)
            }
            Value::Array(a) => a.iter().any(any),
            _ => false,
        }
    }
    any(body)
}

fn is_first_text(format: Format, index: usize, events: &[(String, Value)]) -> bool {
    let delta = match format {
        Format::Anthropic => "content_block_delta",
        Format::Responses => "response.output_text.delta",
    };
    events.iter().position(|(n, _)| n == delta) == Some(index)
}

async fn read_request<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).await? == 0 {
            return Ok(None);
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).await?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 || body.len() + n > MAX_BODY {
                break;
            }
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk).await?;
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        body.resize(length.min(MAX_BODY), 0);
        reader.read_exact(&mut body).await?;
    }
    Ok(Some(Request {
        method,
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }))
}

async fn respond_json<W: tokio::io::AsyncWrite + Unpin>(
    write: &mut W,
    status: u16,
    body: &Value,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Internal Server Error",
    };
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        text.len()
    );
    write.write_all(head.as_bytes()).await?;
    write.write_all(text.as_bytes()).await?;
    write.shutdown().await
}

fn error_body(format: Format, behaviour: Behaviour) -> (u16, Value) {
    let (status, kind, message) = match behaviour {
        Behaviour::Unauthorized => (401, "authentication_error", "mock-model: invalid api key"),
        Behaviour::RateLimited => (429, "rate_limit_error", "mock-model: rate limited"),
        _ => (500, "api_error", "mock-model: internal server error"),
    };
    let body = match format {
        Format::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
        Format::Responses => json!({"error": {"type": kind, "code": kind, "message": message}}),
    };
    (status, body)
}

/// The SSE events of one streamed answer: `(event name, data)`.
fn stream_events(
    format: Format,
    behaviour: Behaviour,
    turn: u64,
    shell: &str,
) -> Vec<(String, Value)> {
    match format {
        Format::Anthropic => anthropic_events(behaviour, turn, shell),
        Format::Responses => responses_events(behaviour, turn),
    }
}

/// One SSE event: `(event name, data)`.
fn ev(name: &str, data: Value) -> (String, Value) {
    (name.to_owned(), data)
}

/// A Messages stream: the message, one content block (the text, or the shell call), its stop.
fn anthropic_events(behaviour: Behaviour, turn: u64, shell: &str) -> Vec<(String, Value)> {
    let id = format!("msg_mock_{turn}");
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "mock-model", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
    )];
    let stop = if behaviour == Behaviour::Tool {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("toolu_mock_{turn}"), "name": shell, "input": {}}}),
        ));
        out.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": shell_input(shell)}}),
        ));
        "tool_use"
    } else {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for chunk in TEXT_CHUNKS {
            out.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}}),
            ));
        }
        "end_turn"
    };
    out.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    out.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 2}}),
    ));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

/// A Responses stream: the response, one output item (the text, or the command call), its
/// completion.
fn responses_events(behaviour: Behaviour, turn: u64) -> Vec<(String, Value)> {
    let id = format!("resp_mock_{turn}");
    let item_id = format!("msg_mock_{turn}");
    let usage = json!({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 3});
    let mut out = vec![ev(
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
    )];
    if behaviour == Behaviour::Tool {
        let call = json!({"type": "function_call", "id": format!("fc_mock_{turn}"), "call_id": format!("call_mock_{turn}"), "name": "exec_command", "arguments": "{\"cmd\":\"echo mock-tool\",\"sandbox_permissions\":\"require_escalated\",\"justification\":\"Print a marker outside the sandbox\"}", "status": "completed"});
        out.push(ev(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": call}),
        ));
        out.push(ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
        ));
    } else {
        out.push(ev(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
        ));
        out.push(ev(
            "response.content_part.added",
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        ));
        for chunk in TEXT_CHUNKS {
            out.push(ev(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": chunk}),
            ));
        }
        out.push(ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": TEXT_CHUNKS.concat(), "annotations": []}]}}),
        ));
    }
    out.push(ev(
        "response.completed",
        json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed", "output": [], "usage": usage}}),
    ));
    out
}

/// A non-streamed answer (`"stream": false`): the whole message at once.
fn whole_answer(format: Format, behaviour: Behaviour, turn: u64) -> Value {
    let text = TEXT_CHUNKS.concat();
    match (format, behaviour) {
        (Format::Anthropic, _) => {
            json!({"id": format!("msg_mock_{turn}"), "type": "message", "role": "assistant", "model": "mock-model", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 2}})
        }
        (Format::Responses, _) => {
            json!({"id": format!("resp_mock_{turn}"), "object": "response", "status": "completed", "output": [{"type": "message", "id": format!("msg_mock_{turn}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}], "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}})
        }
    }
}

/// `conform mock-model`: binds loopback (`--port`, default any free port), prints
/// `listening on http://127.0.0.1:PORT` on stdout, and serves until stdin closes.
pub fn main_with_args(args: Vec<String>) -> std::process::ExitCode {
    /// The scripted model endpoint, on loopback.
    #[derive(clap::Parser)]
    #[command(name = "mock-model", no_binary_name = true)]
    struct Args {
        /// The port to listen on (0: any free one; the chosen port is printed).
        #[arg(long, default_value_t = 0)]
        port: u16,
    }
    let port = match <Args as clap::Parser>::try_parse_from(args) {
        Ok(a) => a.port,
        Err(e) => {
            let _ = e.print();
            return std::process::ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let listener = match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("mock-model: cannot bind 127.0.0.1:{port}: {e}");
                return std::process::ExitCode::from(2);
            }
        };
        let addr = listener.local_addr().expect("bound");
        println!("listening on http://{addr}");
        let mut stdin = tokio::io::stdin();
        let mut sink = [0u8; 256];
        tokio::select! {
            r = serve(listener) => {
                eprintln!("mock-model: {r:?}");
                std::process::ExitCode::from(1)
            }
            // Whoever started us closes our stdin to stop us.
            _ = async { while stdin.read(&mut sink).await.map(|n| n > 0).unwrap_or(false) {} } => {
                std::process::ExitCode::SUCCESS
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let req = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    async fn server() -> std::net::SocketAddr {
        let l = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(serve(l));
        addr
    }

    #[tokio::test]
    async fn streams_text_in_both_formats() {
        let addr = server().await;
        let a = post(addr, "/success/v1/messages", r#"{"stream":true}"#).await;
        assert!(a.starts_with("HTTP/1.1 200 OK"), "{a}");
        // As Claude Code 2.1.220 asks: a query string routes nothing.
        let q = post(addr, "/success/v1/messages?beta=true", r#"{"stream":true}"#).await;
        assert!(q.starts_with("HTTP/1.1 200 OK"), "{q}");
        assert!(
            a.contains(r#""text":"Hello, ""#) && a.contains("event: message_stop"),
            "{a}"
        );
        let r = post(addr, "/success/v1/responses", r#"{"stream":true}"#).await;
        assert!(
            r.contains(r#""delta":"world.""#) && r.contains("response.completed"),
            "{r}"
        );
    }

    #[tokio::test]
    async fn errors_and_a_dropped_stream() {
        let addr = server().await;
        let e = post(addr, "/http-401/v1/messages", r#"{"stream":true}"#).await;
        assert!(
            e.starts_with("HTTP/1.1 401") && e.contains("authentication_error"),
            "{e}"
        );
        let e = post(addr, "/http-500/responses", "{}").await;
        assert!(e.starts_with("HTTP/1.1 500"), "{e}");
        let m = post(addr, "/mid-stream/v1/messages", r#"{"stream":true}"#).await;
        assert!(
            m.contains("Hello, ") && !m.contains("world.") && !m.contains("message_stop"),
            "{m}"
        );
        let t = post(addr, "/tool/v1/responses", r#"{"stream":true}"#).await;
        assert!(t.contains("function_call") && !t.contains("world."), "{t}");
        let after = r#"{"stream":true,"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}"#;
        let t = post(addr, "/tool/v1/responses", after).await;
        assert!(t.contains("world.") && !t.contains("function_call"), "{t}");
        let n = post(addr, "/nonsense/v1/messages", "{}").await;
        assert!(n.starts_with("HTTP/1.1 404"), "{n}");
    }
}
