//! Subjects that answer without doing the work: they spawn the real fake with the exact command
//! line the harness issued — so the gate admits it and hands it its script — kill it before it
//! says a word, and answer each run from what the harness is known to expect. Only the
//! runtime's own report of the steps it played (`wire.script`) tells them from a provider.

use super::*;

/// A stub subject (foreground only) that, for each `start`, spawns the runtime it is given
/// exactly as given, SIGKILLs it 0.1 s later and reports the run from an answer key: the
/// scenario's `[expect]` and its stored snapshot (`key`), or the snapshot's texts alone as a
/// completed run (`bare`).
fn stub(answers: &str) -> Subject {
    Subject::script(&format!(
        r#"cat > stub.py <<'PY'
import datetime, json, os, subprocess, sys, time, tomllib
WORKSPACE, ANSWERS = sys.argv[1], sys.argv[2]
def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def sections(label):
    text = open(f"{{WORKSPACE}}/snapshots/{{label.replace('/', '__')}}@foreground.snap").read()
    body = text.split("---\n", 2)[2]
    out, title = {{}}, None
    for line in body.split("\n"):
        if line.startswith("── ") and line.endswith(" ──"):
            title = line[3:-3]
            out[title] = []
        elif title is not None:
            out[title].append(line)
    return {{t: "\n".join(lines).rstrip("\n") for t, lines in out.items()}}
sys.stdin.readline()
send(json.loads('{hello}'))
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "shutdown":
        break
    if msg["type"] != "start":
        continue
    run, rt = msg["run"], msg["runtime"]
    env = {{k: v for k, v in os.environ.items() if not k.startswith("DSH_")
           and not any(w in k for w in ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "AUTH"))}}
    for k, v in rt["env"].items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    child = subprocess.Popen([rt["command"]] + rt["args"], cwd=rt["cwd"], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.1)
    child.kill()
    child.wait()
    texts = sections(msg["label"])
    expect = tomllib.load(open(f"{{WORKSPACE}}/scenarios/{{msg['label']}}.toml", "rb")).get("expect", {{}})
    tool = next(t for t in texts if t.startswith("tool result"))
    rejected = next((t for t in texts if t.startswith("start rejected")), None)
    if ANSWERS == "key" and rejected:
        send({{"type": "start_rejected", "run": run,
              "error": {{"name": rejected[len("start rejected ("):-1], "message": texts[rejected]}}}})
    else:
        send({{"type": "dispatched", "run": run, "childSessionKey": "k", "dispatchAt": now(),
              "expectedBy": msg["expectedBy"]}})
        if ANSWERS == "key":
            output = expect.get("output", "")
            result = {{"type": "result", "run": run, "stopReason": expect["stop_reason"],
                      "output": [{{"type": "text", "text": output}}] if output else []}}
            if "diagnostic" in expect:
                result["diagnostic"] = expect["diagnostic"]
        else:
            result = {{"type": "result", "run": run, "stopReason": "completed",
                      "output": [{{"type": "text", "text": texts[tool]}}]}}
        send(result)
        send({{"type": "settled", "run": run}})
    send({{"type": "tool_result", "run": run, "isError": "true" in tool, "text": texts[tool]}})
PY
exec python3 -u stub.py '{workspace}' {answers}
"#,
        hello = HELLO.replace(r#","background""#, ""),
        workspace = common::workspace().display(),
    ))
}

/// Every case `r` ran failed `wire.script`, the subject's failure, and nothing else ran.
fn each_unearned(r: &Ran, cases: &[&str]) {
    r.fails_with(&[&format!("0 passed, {} failed", cases.len())]);
    for case in cases {
        let line = format!("✗ {case} (foreground) [");
        let listed = r.out.lines().find(|l| l.trim_start().starts_with(&line));
        let listed = listed.unwrap_or_else(|| panic!("{case} not failed:\n{}", r.out));
        assert!(listed.contains("wire.script"), "{listed}\n{}", r.out);
    }
    assert!(!r.out.contains("[harness."), "{}", r.out);
}

#[test]
fn a_stub_answering_from_the_expected_texts_fails_every_case_it_touches() {
    // Each passes every other check: before `wire.script`, all five passed (a kill is the
    // teardown's last rung, so a case expecting an EOF teardown is not among them).
    let cases = [
        "acp/stop/refusal",
        "acp/stage/initialize-exit",
        "acp/permission/allow-edit-refusal",
        "acp/env/scrubbed-parent-env",
        "acp/settle/double-forked-daemon",
    ];
    let s = stub("key");
    let r = s.run(cases[0], &filters(&cases[1..]));
    each_unearned(&r, &cases);
    r.has("the runtime's script was not played to its end: it stopped before steps[");
}

#[test]
fn a_stub_that_spawns_and_kills_fails_the_settle_env_and_teardown_cases() {
    // Before `wire.script`, all three passed.
    let cases = [
        "acp/settle/double-forked-daemon",
        "acp/env/scrubbed-parent-env",
        "acp/teardown/sigterm-trap-needs-sigkill",
    ];
    let s = stub("bare");
    let r = s.run(cases[0], &filters(&cases[1..]));
    each_unearned(&r, &cases);
}

/// `--filter` for each of these cases (filters select what any of them matches).
fn filters<'a>(cases: &[&'a str]) -> Vec<&'a str> {
    cases.iter().flat_map(|c| ["--filter", c]).collect()
}
