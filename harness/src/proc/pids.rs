//! Process facts read from the kernel: liveness by pid + start time, pidfds for awaiting exit,
//! and the last-resort kill. The harness is not the parent of the processes it watches, so it
//! cannot `wait` them; a pidfd becomes readable when the process exits, which is awaitable.

use std::io;
use std::os::fd::OwnedFd;
use std::time::Duration;

use tokio::io::unix::AsyncFd;

/// What `/proc/<pid>/stat` says about a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub start_time: u64,
}

pub fn stat(pid: i32) -> Option<Stat> {
    // Read into the stack: the scans read every process of the tree several times a run.
    let mut path = [0u8; 32];
    let path = proc_path(&mut path, pid, "stat")?;
    let mut buf = [0u8; 1024];
    let mut file = std::fs::File::open(path).ok()?;
    let mut len = 0;
    loop {
        match std::io::Read::read(&mut file, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
        if len == buf.len() {
            // A line longer than any the kernel writes today: read it whole.
            let mut whole = buf.to_vec();
            std::io::Read::read_to_end(&mut file, &mut whole).ok()?;
            return parse_stat(&String::from_utf8(whole).ok()?);
        }
    }
    parse_stat(std::str::from_utf8(&buf[..len]).ok()?)
}

/// `/proc/<pid>/<file>` written into `buf`.
fn proc_path<'b>(buf: &'b mut [u8; 32], pid: i32, file: &str) -> Option<&'b str> {
    use std::io::Write as _;
    let mut at = &mut buf[..];
    write!(at, "/proc/{pid}/{file}").ok()?;
    let len = 32 - at.len();
    std::str::from_utf8(&buf[..len]).ok()
}

/// A `/proc/<pid>/stat` line.
fn parse_stat(text: &str) -> Option<Stat> {
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Field 22 of the line, the 20th after the name.
    let start_time = fields.nth(16)?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        pgrp,
        start_time,
    })
}

/// True while the process named by pid and start time still runs (a zombie has exited).
pub fn alive(pid: i32, start_time: u64) -> bool {
    stat(pid).is_some_and(|s| s.start_time == start_time && s.state != 'Z')
}

pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pid 0"))?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// A pidfd of what `pid` names now, only if that is still the process seen at `start_time`:
/// opened first, checked after, so a pid that came round again since a table was read is never
/// behind it (pid_max can be 32768: a busy suite wraps it in seconds).
pub fn pidfd_of(pid: i32, start_time: u64) -> Option<OwnedFd> {
    let fd = pidfd_open(pid).ok()?;
    alive(pid, start_time).then_some(fd)
}

/// SIGKILL to `pid` and everything below it, each through a pidfd checked against the start
/// time the process table showed.
pub fn kill_tree(pid: i32) {
    let root = stat(pid).map(|st| (pid, st));
    for (p, st) in root.into_iter().chain(descendants(pid)) {
        if let Some(fd) = pidfd_of(p, st.start_time) {
            kill(&fd);
        }
    }
}

/// Blocks until the process behind `pidfd` exits, at most `budget` (`None`: no bound). True if
/// it exited — for the places with no runtime to await on.
pub fn wait_exit_blocking(pidfd: &OwnedFd, budget: Option<Duration>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    let timeout = budget.map_or(PollTimeout::NONE, |b| {
        PollTimeout::from(u16::try_from(b.as_millis()).unwrap_or(u16::MAX))
    });
    poll(&mut fds, timeout).is_ok_and(|n| n > 0)
}

/// Waits until the process behind `pidfd` exits, at most `budget`. True if it exited.
pub async fn wait_exit(pidfd: &OwnedFd, budget: Duration) -> bool {
    let Ok(own) = pidfd.try_clone() else {
        return false;
    };
    // SAFETY: the AsyncFd owns its own duplicate of the pidfd, so the fd stays open for as
    // long as it is registered and is deregistered before it is closed.
    let Ok(afd) = (unsafe { AsyncFd::register_with_interest(own, tokio::io::Interest::READABLE) })
    else {
        return false;
    };
    tokio::time::timeout(budget, afd.readable()).await.is_ok()
}

/// SIGKILL through the pidfd (no pid-reuse race).
pub fn kill(pidfd: &OwnedFd) {
    // Already gone is fine: the point is that it is.
    let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
}

/// Makes this process the reaper of every orphan among its descendants
/// (`PR_SET_CHILD_SUBREAPER`): what escapes the subject's process group — a `setsid` child, a
/// double fork — is reparented here instead of to init, so the end-of-suite sweep finds it.
pub fn become_subreaper() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Every process in `/proc` with its stat line.
pub fn all() -> Vec<(i32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// Every process below `root` in the process tree, from `/proc`, parents before children.
pub fn descendants(root: i32) -> Vec<(i32, Stat)> {
    let all = all();
    let mut out: Vec<(i32, Stat)> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, st) in &all {
            if st.ppid == parent && !out.iter().any(|(p, _)| p == pid) {
                out.push((*pid, st.clone()));
                frontier.push(*pid);
            }
        }
    }
    out
}

/// True while the process behind `pidfd` has not exited (signal 0 checks without sending).
pub fn signal_zero(pidfd: &OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    // rustix's `Signal` cannot be 0, so the syscall is made directly.
    // SAFETY: a valid pidfd, signal 0, no siginfo, no flags: the call only checks.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    r == 0
}

/// A process's arguments after its executable, exactly as the kernel holds them.
pub fn arguments(pid: i32) -> Vec<String> {
    argv(pid).into_iter().skip(1).collect()
}

/// Its whole command line, one string per argument (empty once it is gone or a zombie).
fn argv(pid: i32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut args: Vec<String> = raw
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    // The command line ends with a NUL, which leaves one empty piece.
    if args.last().is_some_and(String::is_empty) {
        args.pop();
    }
    args
}

/// A process's command line for a report (its name when the command line is gone).
pub fn command_line(pid: i32) -> String {
    let text = argv(pid);
    if text.is_empty() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        return format!("[{}]", comm.trim());
    }
    conform_protocol::lines::excerpt(&text.join(" "), 200)
}

/// The first of `links` (`pipe:[…]`, in the order of `pid`'s descriptors) that one of `pid`'s
/// open descriptors links to and `held` accepts (given the descriptor), read through one handle
/// on `/proc/<pid>/fd` (a settling scan reads every fd of every process in the tree; a path per
/// fd would walk `/proc` again for each) into one buffer, up to the first found. The link is
/// read again once `held` has answered: a child of the subject read between fork and exec, and
/// asked of after its exec (a scan preempted under load), has another file under that number by
/// then, which `held` judged — another run's runtime was taken for a holder of this run's pipes.
pub fn fd_link_among(pid: i32, links: &[String], held: impl Fn(&str) -> bool) -> Option<&String> {
    use nix::dir::Dir;
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let mut path = [0u8; 32];
    let Ok(mut dir) = Dir::open(
        proc_path(&mut path, pid, "fd")?,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    ) else {
        return None;
    };
    let fds: Vec<u32> = dir
        .iter()
        .flatten()
        .filter_map(|e| e.file_name().to_str().ok()?.parse().ok())
        .collect();
    let mut reuse = Vec::with_capacity(64);
    for fd in fds {
        let name = fd.to_string();
        let Ok(link) = rustix::fs::readlinkat(&dir, name.as_str(), reuse) else {
            reuse = Vec::with_capacity(64);
            continue;
        };
        let found = links.iter().find(|l| l.as_bytes() == link.as_bytes());
        if let Some(l) = found
            && held(&name)
            && rustix::fs::readlinkat(&dir, name.as_str(), Vec::new())
                .is_ok_and(|again| again.as_bytes() == l.as_bytes())
        {
            return Some(l);
        }
        reuse = link.into_bytes();
    }
    None
}

/// Is `pid`'s descriptor `fd` close-on-exec (`O_CLOEXEC` in `/proc/<pid>/fdinfo/<fd>`), or
/// already closed?
pub fn close_on_exec(pid: i32, fd: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        // Unreadable: the fd was closed after it was listed (an exec closed it), so it is
        // not held either.
        .is_none_or(|flags| flags & nix::libc::O_CLOEXEC as u32 != 0)
}

/// `pid`'s peak resident set (`VmHWM` in `/proc/<pid>/status`, KiB).
pub fn peak_rss_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The oldest living child of `pid` (its children as `/proc` lists them).
pub fn first_child(pid: i32) -> Option<i32> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    list.split_whitespace()
        .filter_map(|c| c.parse().ok())
        .filter_map(|c| Some((stat(c)?.start_time, c)))
        .min()
        .map(|(_, c)| c)
}

/// This process's own peak resident set (KiB).
pub fn own_peak_rss_kib() -> Option<u64> {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF).ok()?;
    u64::try_from(usage.max_rss()).ok()
}

/// Reaps those of `pids` that are exited children of this process (orphans reparented here).
/// Only these pids: `waitpid(-1)` would take a subject's exit status from tokio.
pub fn reap_children_among(pids: &[i32]) {
    let me = std::process::id() as i32;
    for &pid in pids {
        if stat(pid).is_some_and(|s| s.ppid == me && s.state == 'Z') {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(pid),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
    }
}

/// Kills every live descendant of this process and reaps the ones that are its children;
/// returns the live ones it found (`pid N (command)`). Zombies are reaped and not reported:
/// they have exited.
pub async fn sweep_descendants() -> Vec<String> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for (pid, st) in descendants(me) {
        if st.state == 'Z' {
            continue;
        }
        let Ok(fd) = pidfd_open(pid) else { continue };
        if !alive(pid, st.start_time) {
            continue;
        }
        found.push(format!("pid {pid} ({})", command_line(pid)));
        kill(&fd);
        wait_exit(&fd, Duration::from_secs(5)).await;
    }
    // Reap what is ours to reap (orphans reparented here, now exited). Only these pids: the
    // suite's own children were already awaited.
    for (pid, st) in descendants(me) {
        if st.ppid == me && st.state == 'Z' {
            let _ = nix::sys::wait::waitpid(
                nix::unistd::Pid::from_raw(pid),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_close_on_exec_copy_is_not_a_holder_and_a_plain_fd_is() {
        use std::os::fd::AsRawFd;
        // std opens files close-on-exec; a dup without the flag is what exec keeps.
        let cloexec = std::fs::File::open("/proc/self/stat").unwrap();
        let plain = nix::unistd::dup(&cloexec).unwrap();
        let me = std::process::id() as i32;
        assert!(close_on_exec(me, &cloexec.as_raw_fd().to_string()));
        assert!(!close_on_exec(me, &plain.as_raw_fd().to_string()));
        // A descriptor that is gone (closed after it was listed) holds nothing either.
        assert!(close_on_exec(me, "999999"));
    }

    /// A descriptor that names another file once `held` has judged it (the process exec'd in
    /// between, and the number was taken again) is no hold of the pipe it named before.
    #[test]
    fn a_descriptor_that_changed_while_it_was_judged_holds_nothing() {
        use std::os::fd::AsRawFd;
        // One end of each pipe kept: both ends of one pipe name it alike.
        let (read, _) = nix::unistd::pipe().unwrap();
        let (other, _) = nix::unistd::pipe().unwrap();
        let me = std::process::id() as i32;
        let link = std::fs::read_link(format!("/proc/self/fd/{}", read.as_raw_fd())).unwrap();
        let links = [link.to_string_lossy().into_owned()];
        let number = read.as_raw_fd().to_string();
        // Unchanged, it holds.
        assert_eq!(fd_link_among(me, &links, |_| true), Some(&links[0]));
        // Judged while the number changes hands, it does not.
        let changed = fd_link_among(me, &links, |fd| {
            if fd == number {
                // SAFETY: both descriptors are open and owned here; `read` keeps owning its
                // number, which now names the other pipe.
                assert!(unsafe { nix::libc::dup2(other.as_raw_fd(), read.as_raw_fd()) } >= 0);
            }
            true
        });
        assert_eq!(changed, None);
    }

    #[tokio::test]
    async fn a_pidfd_reports_exit_and_liveness_follows() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let st = stat(pid).unwrap();
        assert!(alive(pid, st.start_time));
        assert!(
            !alive(pid, st.start_time + 1),
            "another start time is another process"
        );
        let fd = pidfd_open(pid).unwrap();
        assert!(!wait_exit(&fd, Duration::from_millis(20)).await);
        kill(&fd);
        assert!(wait_exit(&fd, Duration::from_secs(5)).await);
        assert!(!alive(pid, st.start_time), "a zombie counts as exited");
        child.wait().unwrap();
    }
}
