//! The recorded wire judged again ([`conform_fakes::verify`]) finds what the engine found live:
//! the same violations, in the same words, from the ledger alone.

use crate::common;

use common::*;
use conform_fakes::verify::{Recording, violations};
use conform_protocol::script::Step;
use conform_protocol::side::{FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde_json::{Value, json};

/// The walk over a runtime's ledger, as the harness does it.
fn walked(provider: Provider, steps: &Value, log: &[FakeLine], runtime: i32) -> Vec<String> {
    let steps: Vec<Step> = serde_json::from_value(steps.clone()).unwrap();
    let recording = Recording::of(log, runtime).unwrap();
    violations(provider, None, &steps, recording).unwrap()
}

#[test]
fn the_walk_finds_what_the_engine_found_live() {
    let steps = json!([
        {"expect": "initialize", "params": {"protocolVersion": 1}, "exact": true},
        {"reply": {"protocolVersion": 1, "agentCapabilities": {}}},
        {"expect": "session/new", "params": {"cwd": {"$cwd": true}, "mcpServers": []}},
        {"reply": {"sessionId": "sess-1"}},
        {"expect": "session/prompt"},
        {"permission": {"kind": "read", "title": "t"}, "answer": {"outcome": {"outcome": "cancelled"}}},
        {"stop": "end_turn"}
    ]);
    let mut fake = fake_for("acp", steps.clone());
    // A member the exact handshake does not name, a stray notification, a session/new
    // without mcpServers (both the script and the schema's client side say so) and in another
    // folder, a tolerated cancel, a wrong permission answer, and a request after the script
    // (with no params: the schema says so too).
    fake.send(request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "extra": true}),
    ));
    fake.recv();
    fake.send(notification("stray/note", json!({})));
    fake.send(request(1, "session/new", json!({"cwd": "/elsewhere"})));
    fake.recv();
    fake.send(request(
        2,
        "session/prompt",
        json!({"sessionId": "sess-1", "prompt": []}),
    ));
    fake.send(notification(
        "session/cancel",
        json!({"sessionId": "sess-1"}),
    ));
    let ask = fake.recv();
    fake.send(result(
        ask["id"].clone(),
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}}),
    ));
    fake.recv();
    fake.send(request(3, "session/load", json!({})));
    fake.recv();
    fake.close_stdin();
    let log = fake.finish();
    let live = fake.violations();
    assert_eq!(live.len(), 7, "{live:#?}");
    assert_eq!(walked(Provider::Acp, &steps, &log, fake.pid()), live);
}

#[test]
fn a_silenced_violation_is_still_found() {
    // What the engine reported, taken out of the ledger as a shim inside the fake would: the
    // frames still show it.
    let steps = json!([
        {"expect": "session/new", "params": {"mcpServers": []}},
        {"reply": {"sessionId": "sess-1"}}
    ]);
    let mut fake = fake_for("acp", steps.clone());
    fake.send(request(0, "session/new", json!({"cwd": "/tmp"})));
    fake.recv();
    fake.close_stdin();
    let mut log = fake.finish();
    let live = fake.violations();
    assert_eq!(
        live.len(),
        2,
        "the script's word and the schema's: {live:?}"
    );
    log.retain(|l| !matches!(l.event, FakeEvent::Violation { .. }));
    assert_eq!(walked(Provider::Acp, &steps, &log, fake.pid()), live);
}

#[test]
fn frames_a_runtime_never_read_are_not_judged() {
    // The script ends the process at its second step: what the subject wrote after was never
    // read by the runtime, and judging it would blame the subject for a dead runtime's silence.
    let steps = json!([{"expect": "initialize"}, {"exit": 3}]);
    let mut fake = fake_for("acp", steps.clone());
    fake.send(request(0, "initialize", json!({"protocolVersion": 1})));
    fake.send(request(1, "session/new", json!({})));
    let log = fake.drain();
    assert!(walked(Provider::Acp, &steps, &log, fake.pid()).is_empty());
}
