//! A harness killed with SIGKILL cleans up nothing itself: what it started must still die with
//! it (its subject's keeper ends the tree), and what it left on disk must be removed by the
//! next harness (its scratch folder) or never be left (report files, written by rename).
//!
//! The subject here ignores stdin EOF — the harness's death closes its stdin, and it runs on —
//! and its runtimes are the fakes, which the subject started: nothing of them may outlive the
//! harness.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::workspace;

/// The harness under test: this build, or another one named by `CONFORM_UNDER_TEST` (how the
/// test was shown to fail before the keeper).
fn conform_bin() -> PathBuf {
    std::env::var_os("CONFORM_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("conform"))
}

/// The reference as a subject that ignores EOF on stdin (a `sleep` keeps the reference's
/// stdin open after the harness's is closed), and that writes one line to the FIFO `ready`
/// once a run has been dispatched — a run is then in flight with its runtime started.
fn subject_script(dir: &Path) -> String {
    let script = format!(
        r#"cd '{dir}'
{{ cat; exec sleep 3600; }} | '{conform}' reference | {{
  told=
  while IFS= read -r line; do
    printf '%s\n' "$line"
    case "$line" in *'"type":"dispatched"'*)
      if [ -z "$told" ]; then told=1; echo in-flight > ready; fi;;
    esac
  done
}}
"#,
        dir = dir.display(),
        conform = conform_bin().display(),
    );
    std::fs::write(dir.join("subject.sh"), script).unwrap();
    format!("sh {}", dir.join("subject.sh").display())
}

/// `(pid, start time, state)` from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(i32, u64, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((
        f[1].parse().ok()?,
        f[19].parse().ok()?,
        f[0].chars().next()?,
    ))
}

/// Every process below `root`: pid and start time.
fn descendants(root: i32) -> Vec<(i32, u64)> {
    let all: Vec<(i32, i32, u64)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| stat(pid).map(|(ppid, start, _)| (pid, ppid, start)))
        .collect();
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, start) in &all {
            if ppid == parent {
                out.push((pid, start));
                frontier.push(pid);
            }
        }
    }
    out
}

/// Still running (a zombie has exited)?
fn running(pid: i32, start: u64) -> bool {
    stat(pid).is_some_and(|(_, s, state)| s == start && state != 'Z')
}

/// Processes anywhere whose environment carries a run's mark (`CONFORM_RUN=<side socket> …`)
/// from a suite whose scratch folder is under `tmp`.
fn marked_under(tmp: &Path) -> Vec<i32> {
    let want = format!("CONFORM_RUN={}", tmp.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|(_, _, state)| state != 'Z'))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|kv| kv.starts_with(want.as_bytes()))
            })
        })
        .collect()
}

/// Blocks until one of `pids` exits (true; also when one is gone already) or `deadline`
/// passes (false): a pidfd per process, polled together — nothing is slept.
fn await_an_exit(pids: &[i32], deadline: Instant) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = Vec::new();
    for &pid in pids {
        match conform::proc::pids::pidfd_open(pid) {
            Ok(fd) => fds.push(fd),
            Err(_) => return true, // gone between the look and the open
        }
    }
    let mut polled: Vec<PollFd> = fds
        .iter()
        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN))
        .collect();
    let wait = deadline.saturating_duration_since(Instant::now());
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    poll(&mut polled, timeout).is_ok_and(|n| n > 0)
}

/// The scratch folders in `tmp`.
fn scratch_folders(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("conform-"))
        .map(|e| e.path())
        .collect()
}

/// A harness killed mid-suite: its temp folder, pid and start time.
struct Killed {
    tmp: tempfile::TempDir,
    pid: i32,
    start: u64,
}

/// Starts `conform run <extra>` on `acp/` against the EOF-ignoring subject, kills it with
/// SIGKILL once runs are in flight, and asserts nothing of it runs 2 s later and no report
/// file was left.
fn kill_mid_suite(extra: &[&str]) -> Killed {
    let tmp = tempfile::tempdir().unwrap();
    let subject_dir = tempfile::tempdir().unwrap();
    let subject = subject_script(subject_dir.path());
    let ready = subject_dir.path().join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let report = tmp.path().join("report.json");

    let mut harness = Command::new(conform_bin())
        .current_dir(workspace())
        .env("TMPDIR", tmp.path())
        .env("INSTA_UPDATE", "no")
        .args(["run", "--filter", "acp/", "-j", "4", "--subject", &subject])
        .args(extra)
        .arg("--json")
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = harness.id() as i32;
    let start = stat(pid).unwrap().1;

    // Blocks until the subject writes its line: a run is in flight.
    let mut line = String::new();
    BufReader::new(std::fs::File::open(&ready).unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "in-flight");
    // The runtime of that run may be done already; runs go on starting (-j 4), so one is
    // seen soon — bounded, so a broken setup fails rather than hangs.
    let seen = Instant::now() + Duration::from_secs(10);
    let (marked, tree) = loop {
        let marked = marked_under(tmp.path());
        let tree = descendants(pid);
        if !marked.is_empty() || Instant::now() > seen {
            break (marked, tree);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        !marked.is_empty() && tree.len() >= 3,
        "the subject and a runtime run below the harness: {tree:?}"
    );

    harness.kill().unwrap(); // SIGKILL
    harness.wait().unwrap();

    // A bound, not a timing claim: the keeper ends the tree as soon as the harness is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    let left = || {
        let mut left: Vec<i32> = tree
            .iter()
            .filter(|(p, s)| running(*p, *s))
            .map(|(p, _)| *p)
            .collect();
        left.extend(marked_under(tmp.path()));
        left
    };
    loop {
        let now = left();
        if now.is_empty() || !await_an_exit(&now, deadline) {
            break;
        }
    }
    let left: Vec<String> = left()
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .iter()
        .map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            format!("{p}: {}", String::from_utf8_lossy(&cmd).replace('\0', " "))
        })
        .collect();
    // Whatever the outcome, nothing of this test may run on.
    for (p, s) in &tree {
        if running(*p, *s) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    assert!(
        left.is_empty(),
        "still running 2 s after the harness was killed:\n{}",
        left.join("\n")
    );

    // No report file: it is written whole by rename, or not at all.
    assert!(
        !report.exists(),
        "a report file was left by a harness that never wrote one"
    );
    Killed { tmp, pid, start }
}

/// Runs a small suite with `TMPDIR` at `tmp` and `extra` options; asserts it passes.
fn next_run(tmp: &Path, extra: &[&str]) -> String {
    let next = Command::new(conform_bin())
        .current_dir(workspace())
        .env("TMPDIR", tmp)
        .env("INSTA_UPDATE", "no")
        .args(["run", "--filter", "acp/settle/launcher-chain"])
        .args(extra)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&next.stdout).into_owned();
    assert_eq!(next.status.code(), Some(0), "{out}");
    out
}

#[test]
fn nothing_of_a_harness_killed_with_sigkill_outlives_it() {
    let Killed { tmp, .. } = kill_mid_suite(&[]);
    // The dead harness's scratch folder is there until the next harness starts.
    let stale = scratch_folders(tmp.path());
    assert_eq!(stale.len(), 1, "{stale:?}");
    next_run(tmp.path(), &[]);
    assert!(
        !stale[0].exists(),
        "the next harness left the dead one's folder {}",
        stale[0].display()
    );
    assert!(scratch_folders(tmp.path()).is_empty());
}

/// This process's cgroup v2 folder (a child inherits it): the unified mount joined with the
/// `0::` path.
fn own_cgroup() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        (after.split_whitespace().next()? == "cgroup2").then(|| before.split_whitespace().nth(4))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(Path::new(mount).join(path.trim_start_matches('/')))
}

#[test]
fn a_cgroup_suite_killed_with_sigkill_leaves_no_cgroup_past_the_next_start() {
    let probe = tempfile::tempdir().unwrap();
    if !next_run(probe.path(), &["--cgroup"]).contains("cgroup mode: on") {
        eprintln!("skipped: no cgroup mode on this machine");
        return;
    }
    let Killed { tmp, pid, start } = kill_mid_suite(&["--cgroup"]);
    let suite = own_cgroup().unwrap().join(format!("conform-{pid}.{start}"));
    assert!(
        suite.is_dir(),
        "the killed suite's cgroup {} is there",
        suite.display()
    );
    next_run(tmp.path(), &["--cgroup"]);
    assert!(
        !suite.exists(),
        "the next harness left the dead one's cgroup {}",
        suite.display()
    );
}
