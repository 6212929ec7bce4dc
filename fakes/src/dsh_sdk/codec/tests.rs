use super::*;

fn step(json: Value) -> Step {
    serde_json::from_value(json).unwrap()
}

fn sugar(c: &mut DshSdkCodec, s: Value) -> Value {
    match c.sugar(&step(s)).unwrap().unwrap() {
        Sugar::Notify { method, params } => json!({"method": method, "params": params}),
        other => panic!("{other:?}"),
    }
}

fn prompted() -> DshSdkCodec {
    let mut c = DshSdkCodec::new();
    c.received(
        "session/prompt",
        Some(&json!({"sessionId": "s-1", "contentBlocks": [{"type": "text", "text": "go"}]})),
    );
    c
}

#[test]
fn sugar_before_a_prompt_needs_a_session() {
    let mut c = DshSdkCodec::new();
    let e = c.sugar(&step(json!({"delta": "x"}))).unwrap_err();
    assert!(e.to_string().contains("`delta` needs a session"), "{e}");
    let s = sugar(&mut c, json!({"status": "running", "session": "other"}));
    assert_eq!(s["params"]["sessionId"], "other");
    assert_eq!(c.sugar(&step(json!({"expect": "x"}))).unwrap(), None);
}

#[test]
fn seq_counts_per_session_and_explicit_fields_stay() {
    let mut c = prompted();
    let a = sugar(&mut c, json!({"receipt": "msg-1"}));
    assert_eq!(
        a["params"]["event"],
        json!({"type": "agent/inbox/spliced", "seq": 0, "time": 0, "data": {
            "target": "next-turn", "start": 0, "inserted": [{"id": "msg-1", "role": "user",
            "content": [{"type": "text", "text": "go"}], "source": {"kind": "user"}}]}})
    );
    let other = sugar(&mut c, json!({"delta": "x", "session": "child"}));
    assert_eq!(other["params"]["event"]["seq"], 0);
    let b = sugar(
        &mut c,
        json!({"event": {"type": "x/y", "seq": 9, "data": {}}}),
    );
    assert_eq!(
        b["params"]["event"],
        json!({"type": "x/y", "seq": 9, "time": 0, "data": {}})
    );
    let d = sugar(&mut c, json!({"message": ""}));
    assert_eq!(d["params"]["event"]["seq"], 2);
    assert_eq!(
        d["params"]["event"]["data"]["message"]["content"],
        json!([])
    );
    assert_eq!(d["params"]["event"]["data"]["message"]["id"], "m1");
    let raw = sugar(&mut c, json!({"event": "not an object"}));
    assert_eq!(raw["params"]["event"], "not an object");
}

/// Every frame one sugar step writes, as `{method, params}`.
fn frames(c: &mut DshSdkCodec, s: Value) -> Vec<Value> {
    match c.sugar(&step(s)).unwrap().unwrap() {
        Sugar::Notify { method, params } => vec![json!({"method": method, "params": params})],
        Sugar::Notifications(all) => all
            .into_iter()
            .map(|(method, params)| json!({"method": method, "params": params}))
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn kinds(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["params"]["event"]["type"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn product_versions_are_the_default_and_0_1_1() {
    let mut c = DshSdkCodec::new();
    assert_eq!(c.product_version(), "0.2.1rc2");
    c.set_product_version(Some("0.1.1")).unwrap();
    assert_eq!(c.product_version(), "0.1.1");
    c.set_product_version(None).unwrap();
    assert_eq!(c.product_version(), "0.2.1rc2");
    assert_eq!(
        c.set_product_version(Some("0.1.0"))
            .map_err(|e| e.to_string()),
        Err("unknown DSH SDK runtime version \"0.1.0\" (known: 0.2.1rc2, 0.1.1)".into())
    );
    assert_eq!(c.speaks(None), "DSH SDK runtime 0.2.1rc2");
    assert_eq!(c.speaks(Some("0.1.1")), "DSH SDK runtime 0.1.1");
}

#[test]
fn at_0_1_1_the_models_text_streams_as_chunks_before_it_is_recorded() {
    let mut c = prompted();
    c.set_product_version(Some("0.1.1")).unwrap();
    let m = frames(&mut c, json!({"message": "hi"}));
    assert_eq!(kinds(&m), ["assistant/chunk", "assistant/message"]);
    assert_eq!(
        m[0]["params"],
        json!({"sessionId": "s-1", "event": {"type": "assistant/chunk", "seq": 0, "time": 0,
            "data": {"turn": 1, "step": 1,
            "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}}})
    );
    assert_eq!(m[1]["params"]["event"]["seq"], 1);
    // The message itself is the default version's, seq apart.
    let mut d = prompted();
    let mut plain = frames(&mut d, json!({"message": "hi"})).remove(0);
    plain["params"]["event"]["seq"] = 1.into();
    assert_eq!(m[1], plain);
    // A failed attempt streamed its text too; empty text streamed nothing.
    let a = frames(&mut c, json!({"attempt": "part"}));
    assert_eq!(kinds(&a), ["assistant/chunk", "assistant/attempt"]);
    assert_eq!(a[0]["params"]["event"]["data"]["chunk"]["text"], "part");
    assert_eq!(
        kinds(&frames(&mut c, json!({"message": ""}))),
        ["assistant/message"]
    );
    assert_eq!(
        kinds(&frames(&mut c, json!({"attempt": ""}))),
        ["assistant/attempt"]
    );
    // Another session's text streams to that session.
    let o = frames(&mut c, json!({"message": "x", "session": "child"}));
    assert_eq!(o[0]["params"]["sessionId"], "child");
    assert_eq!(o[0]["params"]["event"]["seq"], 0);
}

#[test]
fn at_0_1_1_a_written_events_recorded_text_deltas_stream_first() {
    let mut c = prompted();
    c.set_product_version(Some("0.1.1")).unwrap();
    let ev = json!({"event": {"type": "assistant/attempt", "data": {"turn": 1, "step": 2,
        "stream": [
            {"type": "chunk", "time": 0, "chunk": {"type": "reasoning-delta", "index": 0, "text": "think"}},
            {"type": "chunk", "time": 0, "chunk": {"type": "text-delta", "index": 1, "text": "a"}},
            {"type": "text-chunks", "time0": 0, "index": 1, "dt": [0], "texts": ["b", "c"]},
            {"type": "chunk", "time": 0, "chunk": {"type": "finish", "reason": {"kind": "error"}}}]}}});
    let f = frames(&mut c, ev);
    assert_eq!(kinds(&f)[..3], ["assistant/chunk"; 3]);
    let chunks: Vec<Value> = f[..3]
        .iter()
        .map(|f| f["params"]["event"]["data"].clone())
        .collect();
    assert_eq!(
        chunks,
        ["a", "b", "c"].map(|t| json!({"turn": 1, "step": 2,
            "chunk": {"type": "text-delta", "index": 1, "text": t}}))
    );
    assert_eq!(f[3]["params"]["event"]["type"], "assistant/attempt");
    // No text, another event, a step broken on purpose: as written, alone.
    let tool = json!({"event": {"type": "assistant/message", "data": {"message": {"content": []},
        "stream": [{"type": "tool-call-chunks", "time0": 0, "index": 0, "dt": [], "args": ["{}"]}]}}});
    assert_eq!(frames(&mut c, tool).len(), 1);
    assert_eq!(
        frames(&mut c, json!({"event": {"type": "step/end", "data": {}}})).len(),
        1
    );
    let broken = json!({"message": "x", "violation": "on purpose"});
    assert_eq!(kinds(&frames(&mut c, broken)), ["assistant/message"]);
    // `delta` is a chunk as written, at every version.
    assert_eq!(
        kinds(&frames(&mut c, json!({"delta": "d"}))),
        ["assistant/chunk"]
    );
}

#[test]
fn at_the_default_version_no_chunk_is_added() {
    let mut c = prompted();
    for s in [
        json!({"message": "hi"}),
        json!({"attempt": "part"}),
        json!({"event": {"type": "assistant/attempt", "data": {"stream": [
            {"type": "chunk", "time": 0, "chunk": {"type": "text-delta", "index": 0, "text": "a"}}]}}}),
    ] {
        assert_eq!(frames(&mut c, s).len(), 1);
    }
}

#[test]
fn turn_end_and_terminal() {
    let mut c = prompted();
    let t = sugar(
        &mut c,
        json!({"turn_end": {"kind": "aborted", "reason": "disposed"}}),
    );
    assert_eq!(
        t["params"]["event"]["data"],
        json!({"turn": 1, "reason": {"kind": "aborted", "reason": "disposed"}})
    );
    assert!(c.is_terminal_notification("session.event", Some(&t["params"])));
    let child = sugar(&mut c, json!({"turn_end": "completed", "session": "child"}));
    assert!(!c.is_terminal_notification("session.event", Some(&child["params"])));
    assert!(c.sugar(&step(json!({"turn_end": 3}))).is_err());
}
