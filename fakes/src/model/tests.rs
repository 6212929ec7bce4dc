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
    let after =
        r#"{"stream":true,"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}"#;
    let t = post(addr, "/tool/v1/responses", after).await;
    assert!(t.contains("world.") && !t.contains("function_call"), "{t}");
    let n = post(addr, "/nonsense/v1/messages", "{}").await;
    assert!(n.starts_with("HTTP/1.1 404"), "{n}");
}

#[tokio::test]
async fn speaks_the_gemini_api_as_gemini_cli_calls_it() {
    let addr = server().await;
    // Streamed by the method (`alt=sse`), whatever the body says: data lines only.
    let s = post(
        addr,
        "/success/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        r#"{"contents":[]}"#,
    )
    .await;
    assert!(s.starts_with("HTTP/1.1 200 OK"), "{s}");
    assert!(!s.contains("event:"), "{s}");
    let data: Vec<serde_json::Value> = s
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let texts: Vec<&str> = data
        .iter()
        .map(|d| {
            d["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(texts, TEXT_CHUNKS);
    assert_eq!(data[1]["candidates"][0]["finishReason"], "STOP");
    assert!(data[0]["candidates"][0].get("finishReason").is_none());
    // Whole, by `:generateContent`.
    let w = post(addr, "/success/v1beta/models/m:generateContent", "{}").await;
    assert!(w.contains(r#""text":"Hello, world.""#), "{w}");
    // A 401 in Google's error shape.
    let e = post(
        addr,
        "/http-401/v1beta/models/m:streamGenerateContent",
        "{}",
    )
    .await;
    assert!(
        e.starts_with("HTTP/1.1 401") && e.contains(r#""status":"UNAUTHENTICATED""#),
        "{e}"
    );
    // The shell call once, then text when the conversation carries its answer.
    let t = post(addr, "/tool/v1beta/models/m:streamGenerateContent", "{}").await;
    assert!(
        t.contains("run_shell_command") && !t.contains("world."),
        "{t}"
    );
    let after = r#"{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{}}}]}]}"#;
    let t = post(addr, "/tool/v1beta/models/m:streamGenerateContent", after).await;
    assert!(t.contains("world.") && !t.contains("functionCall"), "{t}");
    // Cut after the first chunk.
    let m = post(
        addr,
        "/mid-stream/v1beta/models/m:streamGenerateContent",
        "{}",
    )
    .await;
    assert!(m.contains("Hello, ") && !m.contains("world."), "{m}");
}

/// The data lines of a streamed answer, as sent.
fn data_lines(s: &str) -> Vec<&str> {
    s.lines().filter_map(|l| l.strip_prefix("data: ")).collect()
}

/// The JSON chunks of a chat-completions stream (every data line but `[DONE]`).
fn chunks(s: &str) -> Vec<serde_json::Value> {
    data_lines(s)
        .into_iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// The JSON body of a whole answer.
fn body_of(s: &str) -> serde_json::Value {
    serde_json::from_str(s.split_once("\r\n\r\n").unwrap().1).unwrap()
}

#[tokio::test]
async fn routes_chat_completions_as_qwen_code_calls_it() {
    let addr = server().await;
    // qwen-code's base URL ends in `/v1`; the OpenAI SDK appends `/chat/completions`.
    for path in ["/success/v1/chat/completions", "/success/chat/completions"] {
        let w = post(addr, path, "{}").await;
        assert!(w.starts_with("HTTP/1.1 200 OK"), "{path}: {w}");
        assert_eq!(body_of(&w)["object"], "chat.completion", "{path}");
    }
    // The legacy completions endpoint is another API.
    let n = post(addr, "/success/v1/completions", "{}").await;
    assert!(n.starts_with("HTTP/1.1 404"), "{n}");
}

#[tokio::test]
async fn streams_chat_completion_chunks() {
    let addr = server().await;
    for behaviour in ["success", "slow"] {
        let started = std::time::Instant::now();
        let path = format!("/{behaviour}/v1/chat/completions");
        let s = post(addr, &path, r#"{"stream":true,"messages":[]}"#).await;
        assert!(s.starts_with("HTTP/1.1 200 OK"), "{s}");
        assert!(s.contains("content-type: text/event-stream"), "{s}");
        // Data lines only, ended by `[DONE]`, written bare.
        assert!(!s.contains("event:"), "{s}");
        assert_eq!(data_lines(&s).last(), Some(&"[DONE]"), "{s}");
        let c = chunks(&s);
        // One completion's chunks: one id; no usage unless asked for.
        assert!(
            c.iter()
                .all(|chunk| chunk["object"] == "chat.completion.chunk"
                    && chunk["id"] == c[0]["id"]
                    && chunk.get("usage").is_none())
        );
        assert_eq!(c[0]["choices"][0]["delta"]["role"], "assistant");
        let texts: Vec<&str> = c[1..c.len() - 1]
            .iter()
            .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
            .collect();
        assert_eq!(texts, TEXT_CHUNKS);
        assert!(
            c[..c.len() - 1]
                .iter()
                .all(|c| c["choices"][0]["finish_reason"].is_null())
        );
        assert_eq!(c.last().unwrap()["choices"][0]["finish_reason"], "stop");
        if behaviour == "slow" {
            // A pause before each of the five events.
            assert!(
                started.elapsed() >= Duration::from_millis(1500),
                "{behaviour}"
            );
        }
    }
    // Usage asked for: every chunk says `usage: null` but one more, with no choices, before
    // `[DONE]`.
    let body = r#"{"stream":true,"stream_options":{"include_usage":true}}"#;
    let s = post(addr, "/success/v1/chat/completions", body).await;
    let c = chunks(&s);
    let (last, rest) = c.split_last().unwrap();
    assert_eq!(last["choices"], serde_json::json!([]));
    assert_eq!(last["usage"]["total_tokens"], 3);
    assert!(
        rest.iter()
            .all(|c| c["usage"].is_null() && c.get("usage").is_some())
    );
    assert_eq!(rest.last().unwrap()["choices"][0]["finish_reason"], "stop");
    assert_eq!(data_lines(&s).last(), Some(&"[DONE]"));
}

#[tokio::test]
async fn answers_chat_completions_whole() {
    let addr = server().await;
    // Not streamed unless the body says so; every non-error behaviour answers the text whole,
    // as in the other formats.
    for behaviour in ["success", "slow", "mid-stream", "tool"] {
        for body in ["{}", r#"{"stream":false}"#] {
            let path = format!("/{behaviour}/v1/chat/completions");
            let w = post(addr, &path, body).await;
            assert!(w.starts_with("HTTP/1.1 200 OK"), "{behaviour}: {w}");
            assert!(w.contains("content-type: application/json"), "{w}");
            let w = body_of(&w);
            assert_eq!(w["object"], "chat.completion");
            let choice = &w["choices"][0];
            assert_eq!(choice["message"]["role"], "assistant");
            assert_eq!(choice["message"]["content"], TEXT_CHUNKS.concat());
            assert_eq!(choice["finish_reason"], "stop");
            assert_eq!(w["usage"]["total_tokens"], 3);
        }
    }
}

#[tokio::test]
async fn chat_completions_errors_in_openai_shape() {
    let addr = server().await;
    let cases = [
        (
            "http-401",
            "401",
            "invalid_request_error",
            serde_json::json!("invalid_api_key"),
        ),
        (
            "http-429",
            "429",
            "requests",
            serde_json::json!("rate_limit_exceeded"),
        ),
        ("http-500", "500", "server_error", serde_json::Value::Null),
    ];
    for (behaviour, status, kind, code) in cases {
        for body in [r#"{"stream":true}"#, "{}"] {
            let path = format!("/{behaviour}/v1/chat/completions");
            let e = post(addr, &path, body).await;
            assert!(e.starts_with(&format!("HTTP/1.1 {status} ")), "{e}");
            let error = &body_of(&e)["error"];
            assert_eq!(error["type"], kind, "{e}");
            assert_eq!(error["code"], code, "{e}");
            assert!(
                error["param"].is_null() && error.get("param").is_some(),
                "{e}"
            );
            assert!(
                error["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("mock-model: ")
            );
        }
    }
}

#[tokio::test]
async fn chat_completions_cut_after_the_first_text() {
    let addr = server().await;
    let m = post(
        addr,
        "/mid-stream/v1/chat/completions",
        r#"{"stream":true}"#,
    )
    .await;
    let c = chunks(&m);
    // The role, the first text, then nothing: no finish, no `[DONE]`.
    assert_eq!(c.len(), 2, "{m}");
    assert_eq!(c[1]["choices"][0]["delta"]["content"], TEXT_CHUNKS[0]);
    assert!(!m.contains("world.") && !m.contains("[DONE]"), "{m}");
}

/// A streamed tool call's arguments, put together from every chunk but the last (by index 0).
fn arguments_of(chunks: &[serde_json::Value]) -> serde_json::Value {
    let mut arguments = String::new();
    for c in &chunks[..chunks.len() - 1] {
        let call = &c["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["index"], 0, "{c}");
        arguments.push_str(call["function"]["arguments"].as_str().unwrap());
    }
    serde_json::from_str(&arguments).unwrap()
}

#[tokio::test]
async fn chat_completions_ask_for_the_shell_call_once() {
    let addr = server().await;
    // Function tools as qwen-code offers them (its shell tool among others).
    let tools = r#"[{"type":"function","function":{"name":"read_file","parameters":{}}},{"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"},"is_background":{"type":"boolean"}},"required":["command"]}}}]"#;
    let body = format!(
        r#"{{"stream":true,"tools":{tools},"messages":[{{"role":"user","content":"hi"}}]}}"#
    );
    let t = post(addr, "/tool/v1/chat/completions", &body).await;
    let c = chunks(&t);
    assert_eq!(data_lines(&t).last(), Some(&"[DONE]"));
    let first = &c[0]["choices"][0]["delta"];
    assert_eq!(first["role"], "assistant");
    let call = &first["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "run_shell_command");
    assert!(call["id"].as_str().unwrap().starts_with("call_"), "{call}");
    // The arguments arrive as JSON text in pieces, by index, with no id after the first.
    assert!(
        c[1]["choices"][0]["delta"]["tool_calls"][0]
            .get("id")
            .is_none()
    );
    assert_eq!(arguments_of(&c), shell_args());
    assert_eq!(shell_args()["command"], SHELL_COMMAND);
    assert_eq!(
        c.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    assert!(!t.contains("world."), "{t}");
    // A shell tool named `bash` is asked for by its name; offered none, `run_shell_command`.
    let bash = r#"{"stream":true,"tools":[{"type":"function","function":{"name":"bash"}}]}"#;
    for (body, name) in [(bash, "bash"), (r#"{"stream":true}"#, "run_shell_command")] {
        let c = chunks(&post(addr, "/tool/v1/chat/completions", body).await);
        let call = &c[0]["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["function"]["name"], name);
        assert_eq!(arguments_of(&c), shell_args());
    }
    // Once the conversation carries the tool's result: the text.
    let after = r#"{"stream":true,"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"call_mock_1","type":"function","function":{"name":"run_shell_command","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_mock_1","content":"mock-tool"}]}"#;
    let t = post(addr, "/tool/v1/chat/completions", after).await;
    assert!(t.contains("world.") && !t.contains("tool_calls"), "{t}");
    assert!(t.contains(r#""finish_reason":"stop""#), "{t}");
}

#[tokio::test]
async fn a_codex_approval_review_is_allowed_only_by_tool_reviewed() {
    let addr = server().await;
    let review = r#"{"stream":true,"instructions":"You are judging one planned coding-agent action. Assess ..."}"#;
    // `tool-reviewed`: the review gets its verdict, a turn still its tool call.
    let r = post(addr, "/tool-reviewed/v1/responses", review).await;
    assert!(
        r.contains(r#""delta":"{\"outcome\":\"allow\"}""#) && !r.contains("function_call"),
        "{r}"
    );
    let t = post(addr, "/tool-reviewed/v1/responses", r#"{"stream":true}"#).await;
    assert!(t.contains("function_call"), "{t}");
    let w = post(
        addr,
        "/tool-reviewed/v1/responses",
        &review.replace("true", "false"),
    )
    .await;
    assert!(w.contains(r#"{\"outcome\":\"allow\"}"#), "{w}");
    // `tool`: the review is asked for the tool call again (no verdict the reviewer can read).
    let t = post(addr, "/tool/v1/responses", review).await;
    assert!(t.contains("function_call") && !t.contains("outcome"), "{t}");
}
