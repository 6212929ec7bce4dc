//! Who may speak on the fakes' side channel. The socket is reachable by the subject, so a line
//! is believed only from a process the kernel vouches for: the peer of the connection
//! (`SO_PEERCRED`) is the pid the line names, it runs the fake binary the harness named, it
//! descends from the harness, it was started with exactly the command line the harness issued
//! for a run in flight, and it is that run's first runtime (a grandchild needs its runtime
//! first). Whatever fails a rule is never registered — never given a script, never signalled.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

use conform_protocol::side::{FakeEvent, FakeLine, Role};
use serde_json::Value;

use crate::proc::pids;
use crate::proc::run_id::RunId;

/// How far up the parent chain a fake may be from the harness (subject, launcher, wrapper,
/// runtime, grandchild … with room to spare); a longer chain is not ours.
const MAX_DEPTH: usize = 64;

/// A file's identity, so a path the subject renamed or linked cannot stand in for the binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    fn of(path: &Path) -> std::io::Result<FileId> {
        let m = std::fs::metadata(path)?;
        Ok(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// What the harness asked the subject to start for one run.
struct Issued {
    /// The runtime's arguments after the executable, before any wrapper.
    args: Vec<String>,
    /// The script the run's fake is handed at registration (`None`: a real peer's proxy).
    script: Option<Value>,
    runtime: Option<i32>,
}

/// Why a registration was not taken.
#[derive(Debug)]
pub enum Refused {
    /// The writer is not who it says: the subject's doing.
    Forged(String),
    /// Nothing to believe or blame: the writer is gone before it could be checked, or it is a
    /// fake of a run that is already over (a late grandchild under load).
    Moot(String),
}

impl Refused {
    #[cfg(test)]
    fn why(&self) -> &str {
        match self {
            Refused::Forged(w) | Refused::Moot(w) => w,
        }
    }
}

/// A process the gate let in: its pidfd (opened before it was checked, so the checks were of
/// this very process) and, for a run's runtime, the script it is to run.
pub struct Admitted {
    pub pidfd: OwnedFd,
    pub script: Option<Value>,
}

pub struct Gate {
    harness: i32,
    fake: Option<FileId>,
    /// The code the fake's binary runs: what the harness's own process (the same binary) maps
    /// executable.
    code: Code,
    issued: Mutex<HashMap<String, Issued>>,
}

impl Gate {
    /// A gate for fakes started as `fake_exe` (a binary that cannot be found admits nothing).
    pub fn new(fake_exe: &Path) -> Gate {
        Gate {
            harness: std::process::id() as i32,
            fake: FileId::of(fake_exe).ok(),
            code: Code::of("self").unwrap_or_default().and(fake_exe),
            issued: Mutex::default(),
        }
    }

    /// The runtime command line (after the executable) and script the harness issues for `run`.
    pub fn issue(&self, run: &RunId, args: Vec<String>, script: Option<Value>) {
        self.issued.lock().unwrap().insert(
            run.to_string(),
            Issued {
                args,
                script,
                runtime: None,
            },
        );
    }

    /// The run is over: nothing registers for it any more.
    pub fn withdraw(&self, run: &RunId) {
        self.issued.lock().unwrap().remove(run.as_str());
    }

    /// Checks a registration from the connection's kernel-reported peer.
    pub fn admit(&self, peer: Option<i32>, line: &FakeLine) -> Result<Admitted, Refused> {
        use Refused::{Forged, Moot};
        let FakeEvent::Register { role, .. } = &line.event else {
            return Err(Forged("a side-channel line before any registration".into()));
        };
        let pid =
            peer.ok_or_else(|| Forged("the kernel did not name the side-channel peer".into()))?;
        if pid != line.pid {
            return Err(Forged(format!(
                "the line says pid {} but the kernel says its writer is pid {pid} ({})",
                line.pid,
                pids::command_line(pid)
            )));
        }
        // Opened first: if the pid is reused after, the pidfd still names the old process, and
        // the liveness checks below fail.
        let pidfd = pids::pidfd_open(pid).map_err(|e| Moot(format!("pid {pid}: {e}")))?;
        let gone = || !pids::signal_zero(&pidfd);
        if let Err(why) = self.is_our_fake(pid) {
            return Err(if gone() { Moot(why) } else { Forged(why) });
        }
        let script = self.claim_run(pid, *role, &line.run)?;
        if gone() {
            return Err(Moot(format!("pid {pid} ended while it registered")));
        }
        Ok(Admitted { pidfd, script })
    }

    /// The process runs the fake binary and descends from the harness.
    fn is_our_fake(&self, pid: i32) -> Result<(), String> {
        let exe = Path::new("/proc").join(pid.to_string()).join("exe");
        let id = FileId::of(&exe).map_err(|e| format!("pid {pid}'s executable: {e}"))?;
        if Some(id) != self.fake {
            let shown = std::fs::read_link(&exe)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "?".into());
            return Err(format!(
                "pid {pid} runs `{shown}`, not the fake the harness named"
            ));
        }
        if !descends_from(pid, self.harness) {
            return Err(format!("pid {pid} does not descend from the harness"));
        }
        self.runs_only_its_own_code(pid)
    }

    /// Nothing runs inside the process but the fake's binary and what it loads itself: a
    /// library the subject had the loader put there (`LD_PRELOAD`, `LD_AUDIT`, another
    /// `LD_LIBRARY_PATH`) could silence or rewrite what the fake reports. Read from the kernel
    /// (`/proc/<pid>/maps`) before the fake is acknowledged — and so before it makes itself
    /// non-dumpable.
    fn runs_only_its_own_code(&self, pid: i32) -> Result<(), String> {
        if let Some(tracer) = tracer(pid) {
            return Err(format!(
                "pid {pid} is being traced by pid {tracer} ({}): its memory is another's to rewrite",
                pids::command_line(tracer)
            ));
        }
        let code = Code::of(&pid.to_string())
            .map_err(|e| format!("pid {pid}'s memory map could not be read: {e}"))?;
        let foreign: Vec<&str> = code
            .files
            .iter()
            .filter(|(file, _)| !self.code.files.contains_key(*file))
            .map(|(_, path)| path.as_str())
            .chain(
                (code.anonymous && !self.code.anonymous).then_some("anonymous executable memory"),
            )
            .collect();
        if foreign.is_empty() {
            return Ok(());
        }
        Err(format!(
            "pid {pid} runs code the harness did not put there: it maps {} executable, which the fake's binary does not load{}",
            foreign.join(", "),
            loader_variables(pid)
        ))
    }

    /// The run is in flight and this process may register for it: a runtime with the command
    /// line issued, once; a grandchild once its runtime is in.
    fn claim_run(&self, pid: i32, role: Role, run: &str) -> Result<Option<Value>, Refused> {
        use Refused::{Forged, Moot};
        let mut issued = self.issued.lock().unwrap();
        let Some(entry) = issued.get_mut(run) else {
            return Err(Moot(format!("no run `{run}` is in flight")));
        };
        match role {
            Role::Grandchild => match entry.runtime {
                Some(runtime) if self.in_runtime_tree(pid, runtime) => Ok(None),
                Some(runtime) => Err(Forged(format!(
                    "pid {pid} registered as a grandchild of run `{run}` but does not descend from its runtime (pid {runtime}), nor was it adopted by one of the runtime's ancestors"
                ))),
                None => Err(Forged(format!(
                    "a grandchild registered for run `{run}` before its runtime"
                ))),
            },
            Role::Runtime => {
                if let Some(first) = entry.runtime {
                    return Err(Forged(format!(
                        "a second runtime (pid {pid}) registered for run `{run}` (the first was pid {first})"
                    )));
                }
                let args = pids::arguments(pid);
                if !issued_as(&entry.args, &args) {
                    return Err(Forged(format!(
                        "pid {pid} was started as {:?}, not as the harness issued ({:?})",
                        args, entry.args
                    )));
                }
                entry.runtime = Some(pid);
                Ok(entry.script.clone())
            }
        }
    }
}

/// The code a process maps executable: each file (by the device and inode the kernel names it
/// with, and its path), and whether any executable memory has no file behind it.
#[derive(Default)]
struct Code {
    files: HashMap<(String, u64), String>,
    anonymous: bool,
}

impl Code {
    /// Of `/proc/<pid>` (`self`: the harness).
    fn of(pid: &str) -> std::io::Result<Code> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
        let mut code = Code::default();
        for line in maps.lines() {
            let mut fields = line.split_whitespace();
            let (Some(_), Some(perms), Some(_), Some(dev), Some(inode)) = (
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
                fields.next(),
            ) else {
                continue;
            };
            if !perms.contains('x') {
                continue;
            }
            let path = fields.collect::<Vec<_>>().join(" ");
            match inode.parse::<u64>() {
                Ok(ino) if ino != 0 => {
                    code.files.insert((dev.to_owned(), ino), path);
                }
                // The kernel's own pages (`[vdso]`, `[vsyscall]`) are every process's.
                _ if path.starts_with('[') => {}
                _ => code.anonymous = true,
            }
        }
        Ok(code)
    }
}

impl Code {
    /// With the file at `path` as well (the fake's binary, when it is not the harness's).
    fn and(mut self, path: &Path) -> Code {
        if let Ok(m) = std::fs::metadata(path) {
            let dev = m.dev();
            // As `/proc/<pid>/maps` writes a device: major and minor, in hex.
            let id = format!("{:02x}:{:02x}", libc::major(dev), libc::minor(dev));
            self.files.insert((id, m.ino()), path.display().to_string());
        }
        self
    }
}

/// The process tracing `pid` (`TracerPid` in `/proc/<pid>/status`), if one is.
fn tracer(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let tracer: i32 = status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))?
        .trim()
        .parse()
        .ok()?;
    (tracer != 0).then_some(tracer)
}

/// The loader's variables in `pid`'s environment that the harness's own lacks or has
/// otherwise, as a note for the refusal (` (LD_PRELOAD=… in its environment)`).
fn loader_variables(pid: i32) -> String {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return String::new();
    };
    let set: Vec<String> = environ
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| v.starts_with("LD_"))
        .filter(|v| {
            let (name, value) = v.split_once('=').unwrap_or((v, ""));
            std::env::var(name).ok().as_deref() != Some(value)
        })
        .collect();
    if set.is_empty() {
        String::new()
    } else {
        format!(" ({} in its environment)", set.join(" "))
    }
}

impl Gate {
    /// A grandchild is in the runtime's tree: below it, or an orphan one of the runtime's
    /// ancestors adopted — a runtime's double-forked daemon goes to the nearest child
    /// subreaper above it (the subject, when it is one; else the harness). A process of
    /// another tree (another run's, one the subject started apart) is not.
    fn in_runtime_tree(&self, pid: i32, runtime: i32) -> bool {
        let Some(parent) = pids::stat(pid).map(|s| s.ppid) else {
            return false;
        };
        descends_from(pid, runtime) || parent == self.harness || descends_from(runtime, parent)
    }
}

/// The command line is the one issued — with the product's own flags appended when the
/// issued line has a `--`: what follows it is the product's argv (a fake's product flags, or
/// the real program a peer proxy runs), which the fake's or proxy's own options cannot reach.
fn issued_as(issued: &[String], actual: &[String]) -> bool {
    match actual.strip_prefix(issued) {
        Some([]) => true,
        Some(_) => issued.iter().any(|a| a == "--"),
        None => false,
    }
}

/// Whether `ancestor` is on `pid`'s parent chain (orphans come back to the harness: it is a
/// child subreaper).
fn descends_from(pid: i32, ancestor: i32) -> bool {
    let mut at = pid;
    for _ in 0..MAX_DEPTH {
        match pids::stat(at) {
            Some(s) if s.ppid == ancestor => return true,
            Some(s) if s.ppid > 1 => at = s.ppid,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    fn register(pid: i32, role: Role, run: &str) -> FakeLine {
        FakeLine {
            seq: None,
            run: run.into(),
            pid,
            event: FakeEvent::Register {
                role,
                ppid: 0,
                pgid: 0,
                sid: 0,
                start_time: 0,
                stdio: vec![],
                args: vec![],
                cwd: String::new(),
            },
        }
    }

    /// `sleep 30` as a child of this test: it descends from us, its binary is `sleep`. Once
    /// its command line reads back: the kernel shows it empty for a moment around the exec (a
    /// fake registers from inside itself, long after).
    fn sleeper(args: &[&str]) -> std::process::Child {
        let sleep = which("sleep");
        let child = Command::new(sleep)
            .args(args)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let started = std::time::Instant::now();
        while pids::arguments(pid).is_empty() && started.elapsed().as_secs() < 10 {
            std::thread::yield_now();
        }
        child
    }

    fn which(name: &str) -> std::path::PathBuf {
        std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .unwrap()
    }

    #[test]
    fn only_the_issued_command_of_the_named_binary_registers_once() {
        let gate = Gate::new(&which("sleep"));
        let run = RunId::from("r-gate");
        gate.issue(
            &run,
            vec!["30".into()],
            Some(serde_json::json!({"steps": []})),
        );
        let mut child = sleeper(&["30"]);
        let pid = child.id() as i32;
        let lied = gate.admit(Some(pid + 1), &register(pid, Role::Runtime, "r-gate"));
        assert!(lied.err().unwrap().why().contains("the kernel says"));
        // A run that is over (or never was) is not held against anyone: a late grandchild.
        let unknown = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-other"));
        let unknown = unknown.err().unwrap();
        assert!(matches!(unknown, Refused::Moot(_)) && unknown.why().contains("no run `r-other`"));
        let grandchild_first = gate.admit(Some(pid), &register(pid, Role::Grandchild, "r-gate"));
        assert!(
            grandchild_first
                .err()
                .unwrap()
                .why()
                .contains("before its runtime")
        );
        let first = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-gate"));
        assert!(first.unwrap().script.is_some());
        let again = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-gate"));
        assert!(again.err().unwrap().why().contains("a second runtime"));
        let grandchild = gate.admit(Some(pid), &register(pid, Role::Grandchild, "r-gate"));
        assert!(grandchild.unwrap().script.is_none());
        gate.withdraw(&run);
        let late = gate.admit(Some(pid), &register(pid, Role::Grandchild, "r-gate"));
        assert!(late.err().unwrap().why().contains("no run"));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn another_binary_or_another_command_line_is_refused() {
        let run = RunId::from("r-gate2");
        let mut child = sleeper(&["31"]);
        let pid = child.id() as i32;
        let gate = Gate::new(&which("cat"));
        gate.issue(&run, vec!["31".into()], None);
        let other_binary = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-gate2"));
        let other_binary = other_binary.err().unwrap();
        assert!(
            matches!(other_binary, Refused::Forged(_))
                && other_binary.why().contains("not the fake")
        );
        let gate = Gate::new(&which("sleep"));
        gate.issue(&run, vec!["32".into()], None);
        let rewritten = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-gate2"));
        assert!(
            rewritten
                .err()
                .unwrap()
                .why()
                .contains("not as the harness issued")
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_process_outside_the_harness_tree_is_refused() {
        // Our own parent (cargo's test runner's parent) runs some binary and is not below us.
        let parent = pids::stat(std::process::id() as i32).unwrap().ppid;
        let exe = std::fs::read_link(format!("/proc/{parent}/exe")).unwrap();
        let gate = Gate::new(&exe);
        let run = RunId::from("r-gate3");
        gate.issue(&run, vec![], None);
        let outside = gate.admit(Some(parent), &register(parent, Role::Runtime, "r-gate3"));
        assert!(
            outside.err().unwrap().why().contains("does not descend"),
            "a process above the harness"
        );
    }

    #[test]
    fn a_traced_fake_is_refused() {
        use std::os::unix::process::CommandExt;
        // `sleep` traced by this test from its exec on (PTRACE_TRACEME): it stops at the exec,
        // and whoever traces it could have rewritten it.
        let mut cmd = Command::new(which("sleep"));
        cmd.arg("33").stdin(Stdio::null());
        // SAFETY: ptrace(PTRACE_TRACEME) is async-signal-safe and touches no memory of ours.
        unsafe {
            cmd.pre_exec(|| nix::sys::ptrace::traceme().map_err(std::io::Error::from));
        }
        let mut child = cmd.spawn().unwrap();
        let pid = child.id() as i32;
        let gate = Gate::new(&which("sleep"));
        let run = RunId::from("r-gate4");
        gate.issue(&run, vec!["33".into()], None);
        let traced = gate.admit(Some(pid), &register(pid, Role::Runtime, "r-gate4"));
        let traced = traced.err().unwrap();
        assert!(
            matches!(traced, Refused::Forged(_)) && traced.why().contains("is being traced by pid"),
            "{traced:?}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn product_flags_follow_only_a_double_dash() {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        assert!(issued_as(&s(&["fake", "--"]), &s(&["fake", "--", "-p"])));
        // A peer proxy's line names the real program after `--`; the subject adds its flags.
        let proxy = s(&["peer-proxy", "--run", "r1", "--", "/bin/claude"]);
        let mut flagged = proxy.clone();
        flagged.extend(s(&["--output-format", "stream-json"]));
        assert!(issued_as(&proxy, &flagged));
        assert!(!issued_as(
            &proxy,
            &s(&["peer-proxy", "--run", "r1", "--", "/bin/sh"])
        ));
        assert!(issued_as(&s(&["fake"]), &s(&["fake"])));
        assert!(!issued_as(&s(&["fake"]), &s(&["fake", "--script", "x"])));
        assert!(!issued_as(
            &s(&["fake", "--run", "a"]),
            &s(&["fake", "--run", "b"])
        ));
    }
}
