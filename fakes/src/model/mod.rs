//! A scripted model endpoint for the real runtimes (`conform mock-model`): loopback only, one
//! behaviour per URL path prefix, speaking the four wire formats the real runtimes call —
//! Anthropic Messages (`…/v1/messages`, [`anthropic`]), OpenAI Responses (`…/responses`,
//! [`responses`]), OpenAI chat completions (`…/chat/completions`, [`chat`]) and the Gemini API
//! (`…/models/<model>:streamGenerateContent`, [`gemini`]) — streamed as server-sent events or
//! answered whole.
//!
//! `http://127.0.0.1:PORT/<behaviour>` is the base URL a runtime is given; the behaviours are
//! [`Behaviour`]'s names. The HTTP is the least a loopback test server needs (one request per
//! connection, `connection: close`), written here rather than pulling an HTTP stack into the
//! build for it.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

mod anthropic;
mod chat;
mod gemini;
mod responses;

/// The assistant text every successful answer streams, in these chunks.
pub const TEXT_CHUNKS: [&str; 2] = ["Hello, ", "world."];

/// The shell command the tool behaviour asks every runtime to run (Claude Code excepted: it
/// runs an `echo` unasked, so it is asked to write a file instead), and the reason it gives.
const SHELL_COMMAND: &str = "echo mock-tool";
const SHELL_DESCRIPTION: &str = "Print a marker";

/// The shell call's arguments as the shell tools taking `command` and `description` name them
/// (gemini-cli's and qwen-code's `run_shell_command`).
fn shell_args() -> Value {
    json!({"command": SHELL_COMMAND, "description": SHELL_DESCRIPTION})
}

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
    /// As `Tool`, and answers a Codex approval review (its guardian asks the model for a
    /// verdict as JSON) with `{"outcome":"allow"}`, so the command runs for real.
    ToolReviewed,
    /// The answer to an approval review (`ToolReviewed`): the verdict as the text.
    Review,
}

impl Behaviour {
    pub const ALL: [(&'static str, Behaviour); 8] = [
        ("success", Behaviour::Success),
        ("slow", Behaviour::Slow),
        ("http-401", Behaviour::Unauthorized),
        ("http-429", Behaviour::RateLimited),
        ("http-500", Behaviour::ServerError),
        ("mid-stream", Behaviour::MidStream),
        ("tool", Behaviour::Tool),
        ("tool-reviewed", Behaviour::ToolReviewed),
    ];

    pub fn from_name(name: &str) -> Option<Behaviour> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
    }
}

/// The four wire formats, from the path's last segment (two for chat completions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Anthropic,
    Responses,
    Chat,
    Gemini,
}

impl Format {
    /// The format a path asks for, and whether the answer streams by the path alone (Gemini
    /// says so in its method; the others in the body's `stream`).
    fn of(path: &str) -> Option<(Format, Option<bool>)> {
        let last = path.rsplit('/').next().unwrap_or_default();
        match last.split_once(':') {
            Some((_, "streamGenerateContent")) => Some((Format::Gemini, Some(true))),
            Some((_, "generateContent")) => Some((Format::Gemini, Some(false))),
            _ if last == "messages" => Some((Format::Anthropic, None)),
            _ if last == "responses" => Some((Format::Responses, None)),
            _ if path.ends_with("/chat/completions") => Some((Format::Chat, None)),
            _ => None,
        }
    }

    /// Whether the conversation already holds a tool's result.
    fn carries_tool_result(self, body: &Value) -> bool {
        match self {
            Format::Anthropic => anthropic::carries_tool_result(body),
            Format::Responses => responses::carries_tool_result(body),
            Format::Chat => chat::carries_tool_result(body),
            Format::Gemini => gemini::carries_tool_result(body),
        }
    }

    /// The SSE events of one streamed answer: `(event name, data)`.
    fn events(self, behaviour: Behaviour, turn: u64, body: &Value) -> Vec<(String, Value)> {
        match self {
            Format::Anthropic => anthropic::events(behaviour, turn, body),
            Format::Responses => responses::events(behaviour, turn),
            Format::Chat => chat::events(behaviour, turn, body),
            Format::Gemini => gemini::events(behaviour, turn),
        }
    }

    /// A non-streamed answer: the whole message at once.
    fn whole(self, turn: u64) -> Value {
        match self {
            Format::Anthropic => anthropic::whole(turn),
            Format::Responses => responses::whole(turn, Behaviour::Success),
            Format::Chat => chat::whole(turn),
            Format::Gemini => gemini::whole(turn),
        }
    }

    /// The HTTP status and the format's error body for an error behaviour.
    fn error(self, behaviour: Behaviour) -> (u16, Value) {
        let (status, kind, message) = match behaviour {
            Behaviour::Unauthorized => (401, "authentication_error", "mock-model: invalid api key"),
            Behaviour::RateLimited => (429, "rate_limit_error", "mock-model: rate limited"),
            _ => (500, "api_error", "mock-model: internal server error"),
        };
        let body = match self {
            Format::Anthropic => anthropic::error(kind, message),
            Format::Responses => responses::error(kind, message),
            Format::Chat => chat::error(status, message),
            Format::Gemini => gemini::error(status, message),
        };
        (status, body)
    }

    /// Whether the event at `index` is the first that carries text (where a stream cut
    /// mid-way stops).
    fn is_first_text(self, index: usize, events: &[(String, Value)]) -> bool {
        let text = match self {
            Format::Anthropic => anthropic::TEXT_EVENT,
            Format::Responses => responses::TEXT_EVENT,
            // Every chunk is data only; the first carries the role, not text.
            Format::Chat => return chat::is_first_text(index, events),
            // Every Gemini chunk carries text.
            Format::Gemini => return index == 0,
        };
        events.iter().position(|(n, _)| n == text) == Some(index)
    }
}

/// How the 404 body of a request no behaviour and format serves begins: a runtime that passes
/// it on (into its wire) shows its model call was never answered (`conform peers record`
/// refuses such a run).
pub const NOT_SERVED: &str = "no such endpoint";

/// The verdict a `tool-reviewed` model gives an approval review.
pub const REVIEW_ALLOW: &str = r#"{"outcome":"allow"}"#;

/// Whether a request is Codex's approval review (its guardian's policy prompt), not a turn.
fn is_review(body: &Value) -> bool {
    body.to_string()
        .contains("You are judging one planned coding-agent action")
}

/// The text an answer streams, in chunks.
fn text_of(behaviour: Behaviour) -> &'static [&'static str] {
    if behaviour == Behaviour::Review {
        &[REVIEW_ALLOW]
    } else {
        &TEXT_CHUNKS
    }
}

/// One SSE event: `(event name, data)`.
fn ev(name: &str, data: Value) -> (String, Value) {
    (name.to_owned(), data)
}

/// Whether any object in `v` has this `type`.
fn any_typed(v: &Value, kind: &str) -> bool {
    match v {
        Value::Object(o) => {
            o.get("type").and_then(Value::as_str) == Some(kind)
                || o.values().any(|v| any_typed(v, kind))
        }
        Value::Array(a) => a.iter().any(|v| any_typed(v, kind)),
        _ => false,
    }
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
    let (Some(behaviour), Some((format, streams)), "POST") =
        (behaviour, Format::of(path), request.method.as_str())
    else {
        let names: Vec<&str> = Behaviour::ALL.iter().map(|(n, _)| *n).collect();
        let text = format!(
            "{NOT_SERVED}: {} {} (use POST /<{}>/v1/messages, /<…>/responses, /<…>/chat/completions or /<…>/v1beta/models/<model>:streamGenerateContent)",
            request.method,
            request.path,
            names.join("|")
        );
        return respond_json(&mut write, 404, &json!({"error": {"message": text}})).await;
    };
    let streamed = streams
        .unwrap_or_else(|| request.body.get("stream").and_then(Value::as_bool) == Some(true));
    // A tool call is asked for once: once the conversation carries its result, the model
    // answers with text, as a real one would.
    let behaviour = match behaviour {
        Behaviour::ToolReviewed if is_review(&request.body) => Behaviour::Review,
        Behaviour::Tool | Behaviour::ToolReviewed if format.carries_tool_result(&request.body) => {
            Behaviour::Success
        }
        Behaviour::ToolReviewed => Behaviour::Tool,
        other => other,
    };
    match behaviour {
        Behaviour::Unauthorized | Behaviour::RateLimited | Behaviour::ServerError => {
            let (status, body) = format.error(behaviour);
            respond_json(&mut write, status, &body).await
        }
        _ if !streamed && format == Format::Responses => {
            respond_json(&mut write, 200, &responses::whole(turn, behaviour)).await
        }
        _ if !streamed => respond_json(&mut write, 200, &format.whole(turn)).await,
        _ => {
            let events = format.events(behaviour, turn, &request.body);
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
        // Gemini's and chat completions' events have data lines only; a data line that is not
        // JSON (chat completions' `[DONE]`) is a string, written as it is.
        let frame = if let Value::String(raw) = data {
            format!("data: {raw}\n\n")
        } else if name.is_empty() {
            format!("data: {data}\n\n")
        } else {
            format!("event: {name}\ndata: {data}\n\n")
        };
        write.write_all(frame.as_bytes()).await?;
        write.flush().await?;
        if behaviour == Behaviour::MidStream && format.is_first_text(i, events) {
            // Drop the connection with the stream half told.
            return Ok(());
        }
    }
    write.shutdown().await
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
mod tests;
