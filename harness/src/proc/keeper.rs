//! The subject's keeper: `conform keep <harness-pid> -- <subject command…>`, a small process
//! between the harness and the subject that makes sure nothing of the subject's tree outlives
//! the harness, also when the harness is killed with SIGKILL and can clean up nothing.
//!
//! Why a process and not a flag on the subject: `PR_SET_PDEATHSIG` reaches one process (the
//! subject), not what it started; a runtime that left the subject's process group — or an
//! orphan of it, reparented to the harness, a child subreaper — would go to init when the
//! harness dies and run on. The keeper is a child subreaper itself, so every orphan of the
//! subject's tree comes back to it rather than past it: whatever the subject started stays
//! below the keeper for as long as it runs. The keeper watches the harness through a pidfd;
//! when the harness is gone it kills everything below itself, until nothing is left, and exits.
//!
//! While the harness lives the keeper is invisible: the subject shares its stdio and its
//! process group (the keeper leads it, so `killpg` reaches both), orphans are reaped as soon as
//! they exit (as the harness reaped them before), and the keeper exits with the subject's own
//! status — so the harness sees the subject's exit as before. The subject has
//! `PR_SET_PDEATHSIG(SIGKILL)` on the keeper: a keeper killed alone takes the subject with it.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};

use crate::proc::pids;

/// The keeper's exit code when it cannot start the subject (as `env` does).
const CANNOT_RUN: i32 = 127;

/// The keeper's exit code after it ended the tree of a harness that died.
const HARNESS_GONE: i32 = 137;

/// Held while the keeper ends its tree or exits, so the two never interleave.
static ENDING: Mutex<()> = Mutex::new(());

/// The command line that starts `subject` below a keeper for this harness.
pub fn wrap(exe: &str, subject: &[String]) -> Vec<String> {
    let mut argv = vec![
        exe.to_owned(),
        "keep".to_owned(),
        std::process::id().to_string(),
        "--".to_owned(),
    ];
    argv.extend_from_slice(subject);
    argv
}

/// `conform keep <harness> -- <command…>`: runs the command below this keeper until it exits
/// (then exits the same way), or until the harness is gone (then ends the whole tree).
pub fn keep(harness: i32, command: &[String]) -> i32 {
    let Some((program, args)) = command.split_first() else {
        eprintln!("conform keep: no command");
        return CANNOT_RUN;
    };
    // Orphans of the subject's tree come here, not past the keeper to init.
    if let Err(e) = pids::become_subreaper() {
        eprintln!("conform keep: cannot become a subreaper: {e}");
        return CANNOT_RUN;
    }
    let watch = match watch_harness(harness) {
        Ok(Some(watch)) => watch,
        // The harness died before the keeper could watch it: start nothing.
        Ok(None) => return HARNESS_GONE,
        // Said on stderr, which the harness shows with the failed hello.
        Err(e) => {
            eprintln!("conform keep: cannot watch the harness (pidfd_open, Linux 5.3): {e}");
            return CANNOT_RUN;
        }
    };
    let subject = match spawn_subject(program, args) {
        Ok(pid) => pid,
        Err(e) => {
            eprintln!("conform keep: cannot run {program}: {e}");
            return CANNOT_RUN;
        }
    };
    release_stdio();
    std::thread::spawn(move || {
        // Nothing to do until the harness is gone; a pidfd is readable once it has exited.
        // A pidfd that cannot be polled (never seen) ends the watch, not the subject: ending
        // a live harness's subject would be the worse mistake.
        if wait_exited(&watch) {
            end_tree_and_exit(HARNESS_GONE);
        }
    });
    reap_until_subject_exits(subject, harness)
}

/// A pidfd for the harness, if it is still this process's parent (if it is not, it has died
/// and the pid may already be another process's).
fn watch_harness(harness: i32) -> std::io::Result<Option<OwnedFd>> {
    let fd = match pids::pidfd_open(harness) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(nix::libc::ESRCH) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok((nix::unistd::getppid().as_raw() == harness).then_some(fd))
}

/// Starts the subject with this keeper's stdio, in its process group, and with a death signal:
/// the keeper's main thread forks it and lives as long as the keeper (`PR_SET_PDEATHSIG`
/// fires when the forking *thread* ends).
fn spawn_subject(program: &str, args: &[String]) -> std::io::Result<i32> {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    // SAFETY: the closure only makes one async-signal-safe system call (prctl).
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn()?;
    // The keeper reaps with `waitpid(-1)`; std's handle is not used to wait.
    Ok(child.id() as i32)
}

/// The keeper must not hold the subject's pipes: the harness reads the subject's stdout to EOF
/// and judges a subject that closed it, so only the subject may keep it open.
fn release_stdio() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..=2 {
        // SAFETY: dup2 onto the standard descriptors, which this process no longer uses.
        unsafe {
            nix::libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd);
        }
    }
}

/// Reaps every child (the subject, and orphans that came here) until the subject exits; then
/// exits as the subject did, so the harness sees the subject's own status.
fn reap_until_subject_exits(subject: i32, harness: i32) -> i32 {
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid.as_raw() == subject => {
                exit_after_subject(harness, || code)
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid.as_raw() == subject => {
                exit_after_subject(harness, || die_by(signal))
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            // No child at all: the subject is gone without a status we saw.
            Err(_) => return CANNOT_RUN,
        }
    }
}

/// The subject has exited: if the harness died meanwhile the tree is ended first (what the
/// subject left would otherwise go to init); else the keeper exits with `code`, and what the
/// subject left is reparented to the harness, which sweeps it.
fn exit_after_subject(harness: i32, code: impl FnOnce() -> i32) -> ! {
    if nix::unistd::getppid().as_raw() != harness {
        end_tree_and_exit(HARNESS_GONE);
    }
    let _held = ENDING.lock().unwrap_or_else(|e| e.into_inner());
    std::process::exit(code())
}

/// Ends this process by `signal` as the subject was ended (no core file: the subject's was
/// the one that mattered); returns a code only if the signal did not end it.
fn die_by(signal: Signal) -> i32 {
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: restoring the default action of a signal is always sound.
    let _ = unsafe { nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigDfl) };
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(signal);
    let _ = set.thread_unblock();
    let _ = nix::sys::signal::raise(signal);
    128 + signal as i32
}

/// SIGKILL to everything below the keeper, again until nothing is left (what a dying process
/// leaves is reparented here, a subreaper, and found by the next round), then exits.
fn end_tree_and_exit(code: i32) -> ! {
    let _held = ENDING.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id() as i32;
    loop {
        let live: Vec<OwnedFd> = pids::descendants(me)
            .into_iter()
            .filter(|(_, st)| st.state != 'Z')
            .filter_map(|(pid, st)| pids::pidfd_of(pid, st.start_time))
            .collect();
        if live.is_empty() {
            break;
        }
        live.iter().for_each(pids::kill);
        for fd in &live {
            pids::wait_exit_blocking(fd, Some(Duration::from_secs(1)));
        }
    }
    std::process::exit(code)
}

/// Waits, without bound, until the process behind `pidfd` has exited; false if it cannot.
fn wait_exited(pidfd: &OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    loop {
        let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(n) if n > 0 => return true,
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return false,
        }
    }
}
