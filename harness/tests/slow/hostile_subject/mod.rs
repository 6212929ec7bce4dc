//! A harness that cannot be fooled, hung or flooded by the subject it judges: each test points
//! `conform run` at a small hostile subject — a shell script, or the reference behind a filter
//! that adds one hostile twist to its stdout — and checks the harness reports it as the
//! subject's failure, promptly, with bounded memory, and leaves nothing running.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common;
mod forged;
mod injected;
mod unearned;
use common::workspace;

/// The harness under test: this build, or another one named by `CONFORM_UNDER_TEST` (how
/// these tests were shown to fail on the harness before the fixes).
fn conform_bin() -> PathBuf {
    std::env::var_os("CONFORM_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("conform"))
}

/// What one `conform run` did.
struct Ran {
    code: Option<i32>,
    out: String,
    err: String,
    /// Peak resident memory of the harness process, in MiB.
    peak_rss_mib: u64,
}

/// Runs `conform run <args>` and waits for it with `wait4`, so its own peak RSS is known.
// The child is reaped by `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn run_with(args: &[&str], envs: &[(&str, &str)]) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let mut cmd = std::process::Command::new(conform_bin());
    cmd.current_dir(workspace())
        .env("INSTA_UPDATE", "no")
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let _slot = common::Slot::take();
    let child = cmd.spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child we just spawned; `child` is not waited elsewhere.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let read = |p: &Path| {
        let mut s = Vec::new();
        std::fs::File::open(p).unwrap().read_to_end(&mut s).unwrap();
        String::from_utf8_lossy(&s).into_owned()
    };
    Ran {
        code,
        out: read(&out_path),
        err: read(&err_path),
        peak_rss_mib: usage.ru_maxrss as u64 / 1024,
    }
}

fn run(args: &[&str]) -> Ran {
    run_with(args, &[])
}

impl Ran {
    /// Asserts the human report contains `text`.
    fn has(&self, text: &str) {
        assert!(
            self.out.contains(text),
            "missing {text:?} in:\n{}",
            self.out
        );
    }

    /// Asserts the run failed as a conformance failure (exit 1), showing each of `texts`.
    fn fails_with(&self, texts: &[&str]) {
        assert_eq!(self.code, Some(1), "{}\n{}", self.out, self.err);
        texts.iter().for_each(|t| self.has(t));
    }
}

/// A scratch folder with a subject script in it.
struct Subject {
    dir: tempfile::TempDir,
}

impl Subject {
    fn script(body: &str) -> Subject {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "cd '{}'\n{}",
            dir.path().display(),
            body.replace("$CONFORM", &format!("'{}'", conform_bin().display()))
        );
        std::fs::write(dir.path().join("subject.sh"), text).unwrap();
        Subject { dir }
    }

    /// The reference subject with `filter` (a shell snippet reading the reference's stdout
    /// on its stdin and writing the subject's) between it and the harness.
    fn filtered(filter: &str) -> Subject {
        Subject::script(&format!("$CONFORM reference | {{\n{filter}\n}}\n"))
    }

    /// `conform run` against this subject for the scenarios matching `filter`.
    fn run(&self, filter: &str, extra: &[&str]) -> Ran {
        let command = self.command();
        let mut args = vec!["--subject", &command, "--filter", filter];
        args.extend_from_slice(extra);
        run(&args)
    }

    fn command(&self) -> String {
        format!("sh {}", self.dir.path().join("subject.sh").display())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The pid a script wrote to `name`.
    fn pid(&self, name: &str) -> i32 {
        std::fs::read_to_string(self.path(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .trim()
            .parse()
            .unwrap()
    }
}

/// True while `pid` runs (a zombie has exited).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
        .unwrap_or(false)
}

const HELLO: &str = r#"{"type":"hello","protocol":"conform-subject/1","subject":{"name":"hostile","version":"0"},"providers":["acp"],"modes":["foreground","background"]}"#;

/// The shell lines that pull `run` out of a harness line held in `$line`.
const RUN_OF_LINE: &str = r#"run=$(printf '%s' "$line" | sed -n 's/.*"run":"\([^"]*\)".*/\1/p')"#;

/// A filter loop that passes every line through, and before a line of type `kind` (only the
/// first one with `once`) runs `action` with `$run` set to that line's run.
fn inject_before(kind: &str, once: bool, action: &str) -> String {
    format!(
        r#"done=
while IFS= read -r line; do
  case "$line" in *'"type":"{kind}"'*)
    if [ -z "$done" ]; then
      {mark}
      {RUN_OF_LINE}
      {action}
    fi;;
  esac
  printf '%s\n' "$line"
done"#,
        mark = if once { "done=1" } else { ":" },
    )
}

#[test]
fn a_subject_that_never_answers_hello_fails_the_suite_once_without_retrying() {
    let s = Subject::script("echo $$ > pid\nexec sleep 600\n");
    let r = run(&["--subject", &s.command(), "--hello-timeout-ms", "1000"]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.out, r.err);
    assert_eq!(r.out.matches("[subject.hello]").count(), 1, "{}", r.out);
    r.has("no hello within 1000 ms");
    // Every case of the catalog is reported as not run, none as failed or hanging.
    let summary = r.out.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("0 passed, 0 failed, ") && summary.contains(" skipped"),
        "{}",
        r.out
    );
    r.has("not run: the subject could not be started");
    assert!(!running(s.pid("pid")), "the hung subject was killed");
}

#[test]
fn a_hello_that_is_not_one_kills_the_whole_subject_group() {
    let big = "x".repeat(3 << 20);
    let hellos = [
        (
            "wrong protocol",
            HELLO.replace("conform-subject/1", "conform-subject/9"),
            "breaks the subject protocol",
        ),
        ("not JSON", "hello there".to_owned(), "not JSON"),
        (
            "unknown providers only",
            HELLO.replace(r#"["acp"]"#, r#"["smtp"]"#),
            "breaks the subject protocol",
        ),
        ("oversized", big, "a line of 3145728 bytes, over the limit"),
    ];
    for (what, hello, expected) in hellos {
        // The shell that runs the subject is not the subject: its child must die too.
        let s = Subject::script(&format!(
            "sleep 600 &\necho $! > pid\nread -r _\nprintf '%s\\n' '{hello}'\nwait\n"
        ));
        let r = s.run("acp/success/end-turn", &[]);
        assert_eq!(r.code, Some(1), "{what}: {}\n{}", r.out, r.err);
        assert!(r.out.contains("[subject.hello]"), "{what}: {}", r.out);
        assert!(r.out.contains(expected), "{what}: {}", r.out);
        assert!(
            r.out.len() < 20_000,
            "{what}: the report shows the head only"
        );
        assert!(
            !running(s.pid("pid")),
            "{what}: the subject's child was killed"
        );
    }
}

#[test]
fn a_non_utf8_line_fails_its_run_and_reading_goes_on() {
    // One host_log line with a byte that is not UTF-8, for the first run dispatched.
    let s = Subject::filtered(&inject_before(
        "dispatched",
        true,
        r#"printf '{"type":"host_log","run":"%s","text":"bad \377 byte"}\n' "$run""#,
    ));
    let r = s.run("acp/stop/", &["-j", "1"]);
    r.fails_with(&[
        "11 passed, 1 failed",
        "[subject.protocol] not UTF-8: invalid byte at offset",
        r"bad \xff byte",
    ]);
    assert!(!r.out.contains("subject.deadline"), "{}", r.out);
}

#[test]
fn a_subject_logging_steadily_to_stderr_never_blocks() {
    // A byte that is not UTF-8 on stderr first, then 4 KiB of stderr for every stdout line:
    // far more than a pipe holds, so the subject blocks unless stderr is always drained.
    let s = Subject::filtered(
        r#"pad=$(head -c 4096 /dev/zero | tr '\0' p)
printf 'start \377\n' >&2
while IFS= read -r line; do
  printf '%s\n' "$line"
  printf 'debug %s %s\n' "$line" "$pad" >&2
done"#,
    );
    let r = s.run("acp/stop/", &[]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.out, r.err);
    r.has("12 passed, 0 failed");
}

#[test]
fn a_subject_that_offers_nothing_tests_nothing_and_says_so() {
    let s = Subject::script(&format!(
        "read -r _\nprintf '%s\\n' '{}'\nwhile read -r line; do case \"$line\" in *shutdown*) exit 0;; esac; done\n",
        HELLO.replace(r#"["acp"]"#, "[]")
    ));
    let r = s.run("acp/stop/", &[]);
    assert_eq!(r.code, Some(2), "{}\n{}", r.out, r.err);
    r.has("nothing was tested: all 12 selected case(s) were skipped (the subject has no `acp` provider)");
    let r = s.run("acp/stop/", &["--allow-skips"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.out, r.err);
}

#[test]
fn a_forged_result_before_the_real_one_fails() {
    let s = Subject::filtered(&inject_before(
        "result",
        false,
        r#"printf '{"type":"result","run":"%s","stopReason":"completed","output":[]}\n' "$run""#,
    ));
    let r = s.run("acp/stop/max-turn-requests", &[]);
    r.fails_with(&["0 passed, 2 failed"]);
    assert_eq!(
        r.out
            .matches("✗ [subject.protocol] out of order: `result` a second time")
            .count(),
        2,
        "{}",
        r.out
    );
}

#[test]
fn messages_out_of_order_fail_their_run() {
    // A `job_output` nobody asked for, in a foreground run.
    let s = Subject::filtered(&inject_before(
        "dispatched",
        false,
        r#"printf '{"type":"job_output","run":"%s","text":"unasked"}\n' "$run""#,
    ));
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[subject.protocol] out of order: `job_output` for a foreground call",
        "[subject.protocol] out of order: `job_output` that the harness did not ask for",
    ]);
}

#[test]
fn messages_for_runs_never_started_fail_the_suite() {
    let s = Subject::filtered(
        r#"IFS= read -r hello; printf '%s\n' "$hello"
printf '{"type":"result","run":"forged-1","stopReason":"completed","output":[]}\n'
printf '{"type":"tool_result","run":"forged-2","isError":false,"text":"done"}\n'
cat"#,
    );
    let junit = s.path("report.xml");
    let r = s.run(
        "acp/success/end-turn",
        &["--junit", junit.to_str().unwrap()],
    );
    r.fails_with(&["2 passed, 0 failed"]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("the suite as a whole"), "{xml}");
    assert!(xml.contains("runs the harness never started"), "{xml}");
    r.has("[subject.protocol] 2 message(s) for runs the harness never started");
    r.has("run \"forged-1\"");
}

#[test]
fn floods_cost_bounded_memory_and_a_bounded_report() {
    // After its hello, the subject writes 256 MiB without a newline, a 50 MB line, and
    // 300,000 host_log lines for runs that do not exist; then it serves the runs properly,
    // but for the first run it dispatches, 300,000 host_log lines more.
    let s = Subject::filtered(
        &(r#"IFS= read -r hello; printf '%s\n' "$hello"
head -c 268435456 /dev/zero | tr '\0' x
printf '\n'
head -c 50000000 /dev/zero | tr '\0' y
printf '\n'
yes '{"type":"host_log","run":"nobody","text":"flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood flood"}' | head -n 300000
"#
        .to_owned()
            + &inject_before(
                "dispatched",
                true,
                r#"yes "{\"type\":\"host_log\",\"run\":\"$run\",\"text\":\"a flood for a real run, flood flood flood\"}" | head -n 300000"#,
            )),
    );
    let report = s.path("report.json");
    let r = s.run(
        "acp/stop/",
        &[
            "-j",
            "8",
            "--deadline-ms",
            "120000",
            "--json",
            report.to_str().unwrap(),
        ],
    );
    // Runs whose messages queue behind the flood in the subject's one stdout arrive late, which
    // the timing checks rightly report; beside the flood's own suite findings (below), nothing
    // else may fail.
    let checks: Vec<&str> = r
        .out
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("✗ ["))
        .filter(|c| !c.starts_with("subject.protocol] 300000 message(s)"))
        .filter(|c| !c.starts_with("subject.protocol] 2 line(s) broke"))
        .collect();
    assert!(
        checks.iter().all(|c| c.starts_with("timing.")),
        "{checks:?}\n{}",
        r.out
    );
    r.fails_with(&[
        "a line of 268435456 bytes, over the limit of 1048576 bytes",
        "a line of 50000000 bytes",
        "300000 message(s) for runs the harness never started",
    ]);
    let json_size = std::fs::metadata(&report).unwrap().len();
    assert!(json_size < 2_000_000, "JSON report of {json_size} bytes");
    assert!(
        r.out.len() < 2_000_000,
        "human report of {} bytes",
        r.out.len()
    );
    eprintln!("peak RSS under a 300 MB flood: {} MiB", r.peak_rss_mib);
    assert!(
        r.peak_rss_mib < 200,
        "peak RSS {} MiB: something held the flood",
        r.peak_rss_mib
    );
}

#[test]
fn a_subject_that_escapes_its_group_is_found_and_killed() {
    let s = Subject::script(
        "setsid sleep 600 </dev/null >/dev/null 2>&1 &\necho $! > pid\nexec $CONFORM reference\n",
    );
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&["2 passed, 0 failed"]);
    let pid = s.pid("pid");
    r.has(&format!(
        "processes left behind after the suite (killed): pid {pid} (sleep 600), left by the subject"
    ));
    assert!(!running(pid), "the escaped process was killed");
}

#[test]
fn an_oversized_start_rejection_breaks_the_bound() {
    // A minimal adapter in shell that rejects every start with a 5000-byte message, in the
    // order the protocol asks for in both modes.
    let s = Subject::script(&format!(
        r#"read -r _
printf '%s\n' '{HELLO}'
msg=$(head -c 5000 /dev/zero | tr '\0' m)
while IFS= read -r line; do
  {RUN_OF_LINE}
  case "$line" in
    *'"type":"start"'*'"mode":"background"'*)
      printf '{{"type":"tool_result","run":"%s","isError":false,"text":"started background subagent job subagent-1"}}\n' "$run"
      printf '{{"type":"start_rejected","run":"%s","error":{{"name":"E","message":"%s"}}}}\n' "$run" "$msg"
      printf '{{"type":"notice","run":"%s","job":"subagent-1","text":"background job subagent-1 failed"}}\n' "$run";;
    *'"type":"start"'*)
      printf '{{"type":"start_rejected","run":"%s","error":{{"name":"E","message":"%s"}}}}\n' "$run" "$msg"
      printf '{{"type":"tool_result","run":"%s","isError":true,"text":"Error: %s"}}\n' "$run" "$msg";;
    *'"type":"job_output"'*)
      printf '{{"type":"job_output","run":"%s","text":"[status: failed]"}}\n' "$run";;
    *shutdown*) exit 0;;
  esac
done
"#
    ));
    let r = s.run("acp/success/end-turn", &[]);
    assert_eq!(r.code, Some(1), "{}\n{}", r.out, r.err);
    assert_eq!(
        r.out
            .matches("[contract.bound] the start rejection message is 5000 bytes, over 4096")
            .count(),
        2,
        "{}",
        r.out
    );
    assert!(!r.out.contains("subject.deadline"), "{}", r.out);
}

#[test]
fn a_long_tmpdir_does_not_break_the_side_channel() {
    let base = tempfile::tempdir().unwrap();
    let deep = base.path().join("d".repeat(120));
    std::fs::create_dir_all(&deep).unwrap();
    let r = run_with(
        &["--filter", "acp/success/end-turn"],
        &[("TMPDIR", deep.to_str().unwrap())],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.out, r.err);
    r.has("2 passed, 0 failed");
}

#[test]
fn a_run_reported_without_starting_its_runtime_fails() {
    // An adapter that answers every foreground start with a made-up successful run, never
    // spawning the runtime it was given.
    let s = Subject::script(&format!(
        r#"read -r _
printf '%s\n' '{}'
while IFS= read -r line; do
  {RUN_OF_LINE}
  case "$line" in
    *'"type":"start"'*)
      printf '{{"type":"dispatched","run":"%s","childSessionKey":"k","dispatchAt":"2026-01-01T00:00:00Z","expectedBy":"2026-01-01T00:00:00Z"}}\n' "$run"
      printf '{{"type":"result","run":"%s","stopReason":"completed","output":[{{"type":"text","text":"Hello from the fake."}}]}}\n' "$run"
      printf '{{"type":"settled","run":"%s"}}\n' "$run"
      printf '{{"type":"tool_result","run":"%s","isError":false,"text":"Hello from the fake."}}\n' "$run";;
    *shutdown*) exit 0;;
  esac
done
"#,
        HELLO.replace(r#","background""#, "")
    ));
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&["[subject.runtime] the subject reported the run, but the runtime it was given never started"]);
}

#[test]
fn a_subject_flooding_its_runtime_costs_bounded_memory() {
    // An adapter (python3) that spawns the runtime it was given and writes 300,000 frames no
    // script expects into it: the fake reports each one to the harness.
    let s = Subject::script(&format!(
        r#"exec python3 -c '
import json, subprocess, sys, threading
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
sys.stdin.readline()
send(json.loads(sys.argv[1]))
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "shutdown":
        break
    if m["type"] != "start":
        continue
    rt, run = m["runtime"], m["run"]
    p = subprocess.Popen([rt["command"]] + rt["args"], cwd=rt["cwd"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL)
    frame = (json.dumps({{"jsonrpc": "2.0", "method": "flood", "params": {{}}}}) + "\n").encode()
    try:
        p.stdin.write(frame * 300000)
        p.stdin.close()
    except BrokenPipeError:
        pass
    p.kill(); p.wait()
    send({{"type": "start_rejected", "run": run, "error": {{"name": "E", "message": "flooded"}}}})
    send({{"type": "tool_result", "run": run, "isError": True, "text": "Error: flooded"}})
' '{}'
"#,
        HELLO.replace(r#","background""#, "")
    ));
    let r = s.run("acp/success/end-turn", &[]);
    r.fails_with(&["more frame(s) from the subject and violation(s) not kept"]);
    assert!(
        r.out.len() < 3_000_000,
        "human report of {} bytes",
        r.out.len()
    );
    eprintln!(
        "peak RSS under a 300,000-frame flood: {} MiB",
        r.peak_rss_mib
    );
    assert!(r.peak_rss_mib < 200, "peak RSS {} MiB", r.peak_rss_mib);
}

#[test]
fn restarts_that_keep_failing_their_hello_stop_after_three() {
    // The first subject works until its first dispatch, then dies; every later one answers
    // hello with garbage. Each start is counted in `starts`.
    let s = Subject::script(
        "echo start >> starts\nif [ ! -e worked ]; then\n  touch worked\n  exec $CONFORM reference --defect crash-after-dispatch\nfi\nread -r _\necho 'not a hello'\n",
    );
    let r = s.run("acp/stop/", &["-j", "1"]);
    r.fails_with(&[
        "0 passed, 1 failed, 11 skipped",
        "[subject.alive] the subject exited",
    ]);
    assert_eq!(r.out.matches("[subject.hello]").count(), 1, "{}", r.out);
    assert!(
        r.out
            .contains("3 restart(s) in a row failed; no more are tried"),
        "{}",
        r.out
    );
    let starts = std::fs::read_to_string(s.path("starts")).unwrap();
    assert_eq!(
        starts.lines().count(),
        4,
        "one subject that worked, three restarts"
    );
}

/// A host that validates its configuration when its plugin loads: every call is refused before
/// any job exists (`refused`, then the tool's error).
fn refusing_host() -> Subject {
    refusing_host_saying("subagent-acp: invalid configuration")
}

/// [`refusing_host`] refusing with `message`, a shell word in double quotes (`$task` is the
/// call's task; it must be JSON-safe).
fn refusing_host_saying(message: &str) -> Subject {
    Subject::script(&format!(
        r#"read -r _
printf '%s\n' '{HELLO}'
while IFS= read -r line; do
  {RUN_OF_LINE}
  task=$(printf '%s' "$line" | sed -n 's/.*"task":"\([^"]*\)".*/\1/p')
  case "$line" in
    *'"type":"start"'*)
      printf '{{"type":"refused","run":"%s","error":{{"name":"ConfigError","message":"%s"}}}}\n' "$run" "{message}"
      printf '{{"type":"tool_result","run":"%s","isError":true,"text":"Error: subagent-acp: invalid configuration"}}\n' "$run";;
    *shutdown*) exit 0;;
  esac
done
"#
    ))
}

#[test]
fn a_call_refused_before_any_job_existed_ends_at_once_and_only_a_start_rejection_case_skips() {
    // A case about start()'s rejection does not apply to a host that never lets the call reach
    // a provider: skipped with the reason, in both modes, without waiting out a deadline.
    let r = refusing_host().run("acp/stage/dispose-grace-zero", &["--allow-skips"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.out, r.err);
    r.has("not applicable to this subject: it refused the call before any job existed");
    r.has("0 passed, 0 failed, 2 skipped");
    assert!(!r.out.contains("subject.deadline"), "{}", r.out);
    // A case that expects a run was refused one: the subject's failure.
    let r = refusing_host().run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[expect.start-error] the host refused the call before any job existed (\"ConfigError: subagent-acp: invalid configuration\"), where the scenario expects a run",
    ]);
    assert!(!r.out.contains("subject.deadline"), "{}", r.out);
    assert!(!r.out.contains("subject.protocol"), "{}", r.out);
}

#[test]
fn a_refusal_is_model_visible_text_the_redaction_and_the_bound_judge() {
    // The task in the refusal: a leak, even where the case does not apply (it is about
    // start()'s rejection, which a refusing host never reaches).
    let r = refusing_host_saying("subagent-acp: invalid configuration for $task")
        .run("acp/stage/dispose-grace-zero", &["--allow-skips"]);
    r.fails_with(&[
        "[contract.redaction] the refusal contains untrusted text \"Carry out the scripted task.\"",
        "0 passed, 2 failed, 0 skipped",
    ]);
    // A refusal over the bound, where the case expects a run: both failures are said.
    let r = refusing_host_saying("$(printf '%05000d' 0)").run("acp/success/end-turn", &[]);
    r.fails_with(&[
        "[contract.bound] the refusal message is 5000 bytes, over 4096",
        "[expect.start-error] the host refused the call before any job existed",
    ]);
}

#[test]
fn a_subject_that_closes_its_stdin_fails_its_runs_at_once() {
    // It says hello, then stops reading for good while it lives on: no message can reach it,
    // so no run waits for an answer (before, each waited out its whole deadline).
    let s = Subject::script(&format!(
        "read -r _\nprintf '%s\\n' '{HELLO}'\nexec 0<&-\nexec sleep 600\n"
    ));
    // `exec`: the shell `--subject` runs in would otherwise hold the pipe open for it.
    let command = format!("exec {}", s.command());
    let r = run(&["--subject", &command, "--filter", "acp/success/end-turn"]);
    r.fails_with(&["the subject stopped reading its stdin"]);
    assert!(!r.out.contains("subject.deadline"), "{}", r.out);
}
