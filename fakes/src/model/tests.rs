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
