//! Subjects that try to forge the verdict through the fakes' side channel, or to change what
//! the fake runs: each is the subject's failure (exit 1), and no process outside the run is
//! signalled.

use super::*;

/// The reference subject behind a python relay that passes every harness line through and
/// runs `on_start` (python, with `msg` the start message and `side, run` its runtime's side
/// socket and run id) on each `start` first. `say(lines)` writes lines on a new side
/// connection and notes in `side-answers` what came back (an ack, or nothing).
fn reference_with(on_start: &str) -> Subject {
    let body = format!(
        r#"cat > relay.py <<'PY'
import json, os, socket, subprocess, sys
ref = subprocess.Popen([sys.argv[1], "reference"], stdin=subprocess.PIPE)
def say(lines):
    s = socket.socket(socket.AF_UNIX)
    s.connect(side)
    for l in lines:
        s.sendall((l if isinstance(l, str) else json.dumps(l)).encode() + b"\n")
    s.settimeout(10)
    try:
        got = s.recv(4096) or b"closed"
    except OSError as e:
        got = str(e).encode()
    with open("side-answers", "ab") as f:
        f.write(got.strip() + b"\n")
    s.close()
def register(pid):
    return {{"run": run, "pid": pid, "ev": "register", "role": "runtime", "ppid": 1,
            "pgid": pid, "sid": pid, "start_time": 0, "stdio": []}}
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "start":
        args = msg["runtime"]["args"]
        side, run = args[args.index("--side") + 1], args[args.index("--run") + 1]
{on_start}
    ref.stdin.write((json.dumps(msg) + "\n").encode())
    ref.stdin.flush()
ref.stdin.close()
ref.wait()
PY
exec python3 -u relay.py $CONFORM
"#,
        on_start = indent(on_start, 8)
    );
    Subject::script(&body)
}

fn indent(code: &str, by: usize) -> String {
    code.lines()
        .map(|l| format!("{}{l}\n", " ".repeat(by)))
        .collect()
}

impl Subject {
    /// What the harness answered each side connection the subject opened.
    fn side_answers(&self) -> String {
        std::fs::read_to_string(self.path("side-answers")).unwrap_or_default()
    }
}

/// A process of the user's that nothing in the suite started.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Bystander {
        Bystander(
            std::process::Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_subject_registering_a_process_of_the_user_gets_no_answer_and_nothing_is_signalled() {
    let bystander = Bystander::start();
    let s = reference_with(&format!("say([register({})])", bystander.pid()));
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&["[subject.protocol] a forged side-channel line: the line says pid"]);
    assert!(running(bystander.pid()), "the bystander was signalled");
    assert!(!r.out.contains("killed by the harness"), "{}", r.out);
    assert_eq!(s.side_answers(), "closed\nclosed\n", "answered a forger");
}

#[test]
fn a_subject_registering_itself_is_not_the_fake() {
    let s = reference_with("say([register(os.getpid())])");
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[subject.protocol] a forged side-channel line: pid",
        "not the fake the harness named",
    ]);
    assert_eq!(s.side_answers(), "closed\nclosed\n", "answered a forger");
}

#[test]
fn forged_faults_and_garbage_are_the_subjects_failure_not_the_harness() {
    let s = reference_with(
        "say([{\"run\": run, \"pid\": os.getpid(), \"ev\": \"fault\", \"detail\": \"forged\"}])\n\
         say([\"not a side-channel line\"])",
    );
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[subject.protocol] a forged side-channel line: a side-channel line before any registration",
    ]);
    assert!(!r.out.contains("harness.fake"), "{}", r.out);
    // The garbage names no run: the suite's failure, laid at the subject's door.
    assert!(r.out.contains("not a side-channel line"), "{}", r.out);
}

#[test]
fn a_runtime_started_with_another_script_is_refused() {
    // The subject hands the fake a script of its own making (the fakes read `--script` when
    // started by hand): the command line is not the one issued, so the fake gets no script.
    let s = reference_with(
        "open(\"forged.json\", \"w\").write(json.dumps({\"steps\": []}))\n\
         msg[\"runtime\"][\"args\"][-2:-2] = [\"--script\", os.path.abspath(\"forged.json\")]",
    );
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[subject.protocol] a forged side-channel line: pid",
        "not as the harness issued",
    ]);
}

#[test]
fn a_stub_that_never_spawns_the_runtime_cannot_forge_its_ledger() {
    // Everything a real run would show — on both channels — made up by the subject itself.
    let s = Subject::script(&format!(
        r#"cat > stub.py <<'PY'
import datetime, json, os, socket, sys
def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
sys.stdin.readline()
send(json.loads('{hello}'))
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "shutdown":
        break
    if msg["type"] != "start":
        continue
    args, run = msg["runtime"]["args"], msg["run"]
    side = socket.socket(socket.AF_UNIX)
    side.connect(args[args.index("--side") + 1])
    pid = os.getpid()
    for ev in [{{"ev": "register", "role": "runtime", "ppid": os.getppid(), "pgid": pid,
                 "sid": pid, "start_time": 0, "stdio": []}},
               {{"ev": "terminal"}}, {{"ev": "eof"}}, {{"ev": "exit", "code": 0}}]:
        ev.update(run=run, pid=pid)
        side.sendall((json.dumps(ev) + "\n").encode())
    side.close()
    send({{"type": "dispatched", "run": run, "childSessionKey": "k",
          "dispatchAt": now(), "expectedBy": msg["expectedBy"]}})
    send({{"type": "result", "run": run, "stopReason": "completed",
          "output": [{{"type": "text", "text": "Hello, world."}}]}})
    send({{"type": "settled", "run": run}})
    send({{"type": "tool_result", "run": run, "isError": False, "text": "Hello, world."}})
PY
exec python3 -u stub.py
"#,
        hello = HELLO.replace(r#","background""#, "")
    ));
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&["[subject.protocol] a forged side-channel line: pid"]);
}

/// The reference subject behind a relay of both its pipes that runs `on_dispatched` (python,
/// with `run` the run id, `side` its runtime's side socket and `start` its start message)
/// when the reference says a run is dispatched — its runtime registered and shook hands —
/// before passing that on.
fn reference_dispatching(on_dispatched: &str) -> Subject {
    Subject::script(&format!(
        r#"cat > relay.py <<'PY'
import ctypes, glob, json, os, socket, subprocess, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
ref = subprocess.Popen([sys.argv[1], "reference"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
starts = {{}}
def dispatched(run, side, start):
{on_dispatched}
def out():
    for line in ref.stdout:
        msg = json.loads(line)
        if msg.get("type") == "dispatched":
            start = starts[msg["run"]]
            args = start["runtime"]["args"]
            dispatched(msg["run"], args[args.index("--side") + 1], start)
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
threading.Thread(target=out).start()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "start":
        starts[msg["run"]] = msg
    ref.stdin.write((json.dumps(msg) + "\n").encode())
    ref.stdin.flush()
ref.stdin.close()
ref.wait()
PY
exec python3 -u relay.py $CONFORM
"#,
        on_dispatched = indent(on_dispatched, 4)
    ))
}

#[test]
fn lines_written_on_a_stolen_connection_are_the_subjects_forgery() {
    // The subject is the fake's parent: once its run is dispatched, it takes a copy of the
    // fake's side connection (`pidfd_getfd`; root may, whatever the fake does) and writes the
    // lines that would end the run its way — the runtime's terminal, EOF, exit, a fault, a
    // line naming another run.
    let s = reference_dispatching(
        r#"for p in glob.glob("/proc/[0-9]*"):
    try:
        argv = open(p + "/cmdline", "rb").read().split(b"\0")
        fds = os.listdir(p + "/fd")
    except OSError:
        continue
    if b"--run" not in argv or argv[argv.index(b"--run") + 1] != run.encode() \
            or b"--grandchild" in argv:
        continue
    pid = int(p[6:])
    for fd in fds:
        try:
            if not os.readlink(f"{p}/fd/{fd}").startswith("socket:"):
                continue
            n = libc.syscall(438, os.pidfd_open(pid), int(fd), 0)
        except OSError:
            continue
        if n < 0:
            continue
        conn = socket.socket(fileno=n)
        try:
            peer = conn.getpeername()
        except OSError:
            peer = None
        if peer != side:
            conn.detach()
            continue
        open("stolen", "a").write(f"{pid}\n")
        for ev in [{"ev": "terminal"}, {"ev": "eof"}, {"ev": "exit", "code": 0},
                   {"ev": "fault", "detail": "forged"}]:
            ev.update(run=run, pid=pid)
            conn.sendall((json.dumps(ev) + "\n").encode())
        other = {"run": "r-other", "pid": pid, "ev": "fault", "detail": "other run"}
        conn.sendall((json.dumps(other) + "\n").encode())
        return"#,
    );
    let r = s.run("acp/teardown/sigterm-trap-needs-sigkill", &[]);
    let stolen = std::fs::read_to_string(s.path("stolen")).unwrap_or_default();
    assert_eq!(
        stolen.lines().count(),
        2,
        "both runs' connections taken: {}",
        r.out
    );
    r.fails_with(&["0 passed, 2 failed"]);
    let forged = "✗ [subject.protocol] a forged side-channel line: a line on the connection of the admitted fake";
    assert_eq!(r.out.matches(forged).count(), 2, "{}", r.out);
    r.has("that it did not write: no seal");
    assert!(!r.out.contains("[harness."), "{}", r.out);
    // The forged ending was not believed: the runtime's own ledger still ends at SIGKILL, and
    // nothing else failed.
    assert_eq!(r.out.matches("✗ [").count(), 2, "{}", r.out);
}

#[test]
fn a_process_moved_into_a_runs_cgroup_is_never_signalled() {
    // The subject writes a process of the user's into the run's cgroup (`--cgroup`): the
    // harness must not kill it as the run's, and says whose doing it was.
    let bystander = Bystander::start();
    let s = reference_with(&format!(
        r#"if msg["runtime"]["args"][:1] == ["cgroup-exec"]:
    group = msg["runtime"]["args"][1]
    open(os.path.join(group, "cgroup.procs"), "w").write("{}")
    open("moved", "a").write(group + "\n")"#,
        bystander.pid()
    ));
    let r = s.run("acp/success/end-turn", &["--cgroup"]);
    if r.out.contains("cgroup mode: unavailable (") {
        eprintln!("SKIPPED: cgroup mode unavailable here");
        return;
    }
    let moved = std::fs::read_to_string(s.path("moved")).unwrap_or_default();
    assert_eq!(moved.lines().count(), 2, "both runs' cgroups: {}", r.out);
    r.fails_with(&[
        "[subject.protocol] a process from outside the run was put into its cgroup",
        &format!("pid {} (", bystander.pid()),
    ]);
    assert!(running(bystander.pid()), "the bystander was signalled");
    assert!(!r.out.contains("[harness."), "{}", r.out);
}

#[test]
fn a_grandchild_from_another_tree_is_refused() {
    // Once the runtime registered, the subject has a process of another tree — a helper of its
    // own, no ancestor of the runtime — start a fake naming the run, as a grandchild: it is not
    // in the runtime's tree, so it is no grandchild of the run's. (One the subject starts
    // itself passes for an orphan it adopted: the threat model says so.)
    let s = reference_dispatching(
        r#"argv = [start["runtime"]["command"], "fake", "acp", "--grandchild", "--side", side, "--run", run]
subprocess.Popen(["sh", "-c", '"$@"; :', "sh"] + argv, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)"#,
    );
    let r = s.run("acp/teardown/sigterm-trap-needs-sigkill", &[]);
    r.fails_with(&[
        "[subject.protocol] a forged side-channel line: pid",
        "registered as a grandchild of run",
        "does not descend from its runtime",
        "nor was it adopted by one of the runtime's ancestors",
    ]);
    assert!(!r.out.contains("[harness."), "{}", r.out);
}
