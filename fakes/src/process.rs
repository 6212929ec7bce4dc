//! Process facts and process-level actions: `/proc` identity, dying by a signal, closing
//! stdout, spawning the grandchild.

use std::process::{Command, Stdio};
use std::str::FromStr;

use conform_protocol::script::Grandchild;
use conform_protocol::side::{FakeEvent, Role};
use nix::sys::signal::Signal;

use crate::side::Side;

use crate::error::StepError;

/// The `Register` event for this process.
pub fn register_event(role: Role, args: &[String]) -> FakeEvent {
    // SAFETY: these calls only read this process's ids.
    let (ppid, pgid, sid) = unsafe { (libc::getppid(), libc::getpgid(0), libc::getsid(0)) };
    FakeEvent::Register {
        role,
        ppid,
        pgid,
        sid,
        start_time: start_time().unwrap_or(0),
        stdio: (0..3)
            .map(|fd| {
                std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|e| format!("error: {e}"))
            })
            .collect(),
        args: args.to_vec(),
        cwd: std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// `/proc/self/stat` field 22 (clock ticks since boot).
pub fn start_time() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces and parentheses: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Parses `SIGABRT` (or `ABRT`).
pub fn parse_signal(name: &str) -> Result<Signal, StepError> {
    let full = if name.starts_with("SIG") {
        name.to_owned()
    } else {
        format!("SIG{name}")
    };
    Signal::from_str(&full).map_err(|_| StepError::UnknownSignal(name.to_owned()))
}

/// Dies by `sig` with its default disposition (no core file). Returns only if the default
/// action of `sig` does not terminate the process.
pub fn die_by(sig: Signal) {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on this process; SIG_DFL is always a valid disposition.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig as libc::c_int, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig as libc::c_int);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig as libc::c_int);
    }
}

/// Reports the exit on the side channel (with this process's peak), then exits with `code`.
pub fn exit(side: &Side, code: i32) -> ! {
    side.send(FakeEvent::Exit {
        code: Some(code),
        signal: None,
        peak_rss_kib: peak_rss_kib(),
    });
    std::process::exit(code)
}

/// Closes fd 1 for real, so the reader sees EOF while this process lives on.
pub fn close_stdout() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: closing fd 1; the engine never writes to stdout afterwards.
    unsafe {
        libc::close(1);
    }
}

/// Leaves the process group and session.
pub fn setsid() -> std::io::Result<()> {
    // SAFETY: setsid has no memory effects.
    if unsafe { libc::setsid() } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Leading arguments that make this executable a fake again (empty for a `fake-*` binary;
/// `["fake", "acp"]` when the fake runs as a subcommand of a multi-call binary such as `conform`).
pub static SELF_ARGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Starts `/proc/self/exe [SELF_ARGS] --grandchild …` and returns its pid once it has
/// registered with the harness (so a scenario never races its own grandchild). The caller never
/// waits for it to exit: the grandchild must outlive the runtime when the scenario wants it to.
pub fn spawn_grandchild(side: &str, run: &str, spec: &Grandchild) -> std::io::Result<i32> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    // The grandchild writes one byte here after its registration is acknowledged; EOF
    // without the byte means it died first.
    let (ready_read, ready_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let ready_fd = ready_write.as_raw_fd();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.args(SELF_ARGS.get().map(Vec::as_slice).unwrap_or_default());
    cmd.args(["--grandchild", "--side", side, "--run", run]);
    cmd.args(["--ready-fd", &ready_fd.to_string()]);
    if spec.trap_sigterm {
        cmd.arg("--trap-sigterm");
    }
    if spec.setsid {
        cmd.arg("--setsid");
    }
    if spec.daemon {
        cmd.arg("--daemon");
    }
    if spec.unregistered {
        cmd.arg("--unregistered");
    }
    if spec.anonymous {
        cmd.arg("--anonymous");
    }
    if spec.clear_env {
        cmd.arg("--clear-env");
    }
    if let Some(ms) = spec.linger_ms {
        cmd.args(["--linger-ms", &ms.to_string()]);
    }
    let (setsid, trap) = (spec.setsid, spec.trap_sigterm);
    // SAFETY: only async-signal-safe calls between fork and exec (fcntl, setsid, signal).
    unsafe {
        cmd.pre_exec(move || {
            // Leave the group before exec, so no group signal can reach the grandchild in the
            // window before it would have called setsid itself.
            if setsid && libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if trap {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            if libc::fcntl(ready_fd, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // A lingering helper's stdin is a pipe this process holds (close-on-exec, so no other
    // child inherits it) until it exits: its EOF is the runtime gone.
    cmd.stdin(if spec.linger_ms.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(if spec.hold_stdout {
        Stdio::inherit()
    } else {
        Stdio::null()
    })
    .stderr(if spec.null_stderr {
        Stdio::null()
    } else {
        Stdio::inherit()
    });
    let mut child = cmd.spawn()?;
    drop(ready_write);
    if let Some(stdin) = child.stdin.take() {
        // Held, never written, until this process exits.
        std::mem::forget(stdin);
    }
    let mut byte = [0u8; 1];
    let mut ready = std::fs::File::from(ready_read);
    let _ = ready.read(&mut byte);
    Ok(child.id() as i32)
}

/// This process's peak resident set so far, in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).ok()?;
    u64::try_from(usage.max_rss()).ok()
}

/// Tells the spawning runtime that this grandchild is registered (see [`spawn_grandchild`]).
pub fn signal_ready(fd: i32) {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: the fd was handed to us by our parent for exactly this one write.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let _ = f.write_all(b"R");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(parse_signal("SIGABRT"), Ok(Signal::SIGABRT));
        assert_eq!(parse_signal("KILL"), Ok(Signal::SIGKILL));
        assert!(parse_signal("SIGNOPE").is_err());
    }

    #[test]
    fn start_time_is_read() {
        assert!(start_time().unwrap() > 0);
    }
}
