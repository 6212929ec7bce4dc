//! Subjects that put code inside the fake: a defective reference (it leaves `mcpServers` out
//! of `session/new`, a `wire.violation` in every ACP case) behind a relay that has the loader
//! load a shim into the runtime — one that swallows every `violation` line the fake writes to
//! the harness. The gate reads what the runtime maps before it hands it its script; a runtime
//! that runs code the harness did not put there is refused, as the subject's forgery.

use super::*;

/// A shared library that drops every write carrying a side-channel `violation` line.
const SHIM: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
static int hidden(const void *buf, size_t n) {
    return memmem(buf, n, "\"ev\":\"violation\"", 16) != NULL;
}
ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = dlsym(RTLD_NEXT, "write");
    return hidden(buf, n) ? (ssize_t)n : real(fd, buf, n);
}
ssize_t send(int fd, const void *buf, size_t n, int flags) {
    static ssize_t (*real)(int, const void *, size_t, int);
    if (!real) real = dlsym(RTLD_NEXT, "send");
    return hidden(buf, n) ? (ssize_t)n : real(fd, buf, n, flags);
}
"#;

/// The defective reference behind a relay that rewrites each `start`'s runtime with
/// `rewrite` (python; `rt` the runtime, `shim` the compiled shim's path).
fn relay(rewrite: &str) -> Subject {
    Subject::script(&format!(
        r#"cat > shim.c <<'C'
{SHIM}
C
cc -shared -fPIC -o shim.so shim.c -ldl || exit 3
cat > relay.py <<'PY'
import json, os, subprocess, sys
shim = os.path.abspath("shim.so")
ref = subprocess.Popen([sys.argv[1], "reference", "--defect", "omit-mcp-servers"],
                       stdin=subprocess.PIPE)
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("type") == "start":
        rt = msg["runtime"]
{rewrite}
    ref.stdin.write((json.dumps(msg) + "\n").encode())
    ref.stdin.flush()
ref.stdin.close()
ref.wait()
PY
exec python3 -u relay.py $CONFORM
"#,
        rewrite = rewrite
            .lines()
            .map(|l| format!("        {l}\n"))
            .collect::<String>()
    ))
}

/// Both cases fail in both modes as the subject's forgery, nothing is the harness's, and the violation the
/// shim would have swallowed never mattered: the fake never got its script.
fn refused(r: &Ran, why: &[&str]) {
    let mut texts = vec![
        "0 passed, 4 failed",
        "[subject.protocol] a forged side-channel line: pid",
    ];
    texts.extend_from_slice(why);
    r.fails_with(&texts);
    assert!(!r.out.contains("[harness."), "{}", r.out);
}

const CASES: [&str; 2] = ["acp/success/end-turn", "acp/stop/refusal"];

fn run_cases(s: &Subject) -> Ran {
    s.run(CASES[0], &["--filter", CASES[1]])
}

#[test]
fn a_shim_preloaded_through_the_runtime_env_is_refused() {
    let s = relay(r#"rt["env"]["LD_PRELOAD"] = shim"#);
    let r = run_cases(&s);
    refused(
        &r,
        &[
            "runs code the harness did not put there: it maps",
            "shim.so executable, which the fake's binary does not load (LD_PRELOAD=",
        ],
    );
}

#[test]
fn a_shim_preloaded_on_the_command_line_is_refused() {
    // `env LD_PRELOAD=… conform fake …`: after env's exec, the command line is the one issued.
    let s = relay(
        r#"rt["args"] = ["LD_PRELOAD=" + shim, rt["command"]] + rt["args"]
rt["command"] = "/usr/bin/env""#,
    );
    let r = run_cases(&s);
    refused(
        &r,
        &["shim.so executable, which the fake's binary does not load"],
    );
}

#[test]
fn the_loader_run_by_hand_is_not_the_fake() {
    // `ld.so --preload shim conform fake …`: the process is the loader, not the fake's binary.
    let s = relay(
        r#"rt["args"] = ["--preload", shim, rt["command"]] + rt["args"]
rt["command"] = "/lib64/ld-linux-x86-64.so.2""#,
    );
    let r = run_cases(&s);
    refused(&r, &["not the fake the harness named"]);
}
