//! Which of a runtime's stdio links (`pipe:[…]`, `socket:[…]`) are the run's own, and so
//! evidence that a process holding one belongs to the run ([`crate::proc::settle`]).
//!
//! A link is shared — no evidence — when the harness handed it out: a subject's stdin, stdout
//! or stderr (which a host's runtimes inherit when it spawns them with `stderr: 'inherit'`).
//! The harness spawns every subject with pipes of its own making, so these are all it hands
//! out; each is noted when the subject starts, and no run reads the harness's own descriptors
//! (a hundred of them at `-j 8`, several times a run).

use std::collections::BTreeSet;
use std::os::fd::AsFd;
use std::sync::Mutex;

/// Links handed to subjects since the harness started.
static SUBJECT_STDIO: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Notes a subject's stdio pipe (the harness's end: a pipe's two ends are one inode).
pub fn note_subject_stdio(fd: impl AsFd) {
    if let Some(link) = link_of(fd) {
        SUBJECT_STDIO.lock().unwrap().insert(link);
    }
}

/// Of a run's runtime stdio (`pipe:[…]`, `socket:[…]`), the links that are the run's own and
/// so evidence that whoever holds one belongs to the run: not one the harness handed out
/// (module docs), and not one another run's runtime registered with (what the host hands
/// every runtime it starts). Those are shared, and holding them proves nothing.
/// `other_runs`: for each of `stdio`, whether another run's runtime registered with it.
pub fn specific(stdio: Vec<String>, other_runs: &[bool]) -> Vec<String> {
    debug_assert_eq!(stdio.len(), other_runs.len());
    let subjects = SUBJECT_STDIO.lock().unwrap();
    stdio
        .into_iter()
        .zip(other_runs.iter().copied())
        .filter(|(l, elsewhere)| !subjects.contains(l) && !elsewhere)
        .map(|(l, _)| l)
        .collect()
}

/// The link `/proc/<pid>/fd/<n>` shows for `fd`, if it is a pipe or a socket.
fn link_of(fd: impl AsFd) -> Option<String> {
    let st = rustix::fs::fstat(fd).ok()?;
    let kind = match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::Fifo => "pipe",
        rustix::fs::FileType::Socket => "socket",
        _ => return None,
    };
    Some(format!("{kind}:[{}]", st.st_ino))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc_link(fd: &impl std::os::fd::AsRawFd) -> String {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_link_handed_to_a_subject_or_held_by_another_run_is_no_evidence() {
        use std::os::unix::net::UnixStream;
        // A runtime's stdout socket whose other end the host holds: the runtime's end is the
        // run's own.
        let (_host_end, runtime_end) = UnixStream::pair().unwrap();
        let runtime = proc_link(&runtime_end);
        assert_eq!(link_of(&runtime_end).as_deref(), Some(runtime.as_str()));
        // A subject's stderr, inherited by every runtime: the harness reads it.
        let (shared_read, _shared_write) = std::io::pipe().unwrap();
        let shared = proc_link(&shared_read);
        let unnoted = vec![shared.clone()];
        assert_eq!(
            specific(unnoted, &[false]),
            std::slice::from_ref(&shared),
            "not noted yet"
        );
        note_subject_stdio(&shared_read);
        let stdio = vec![runtime.clone(), shared.clone(), "pipe:[424242]".to_owned()];
        assert_eq!(
            specific(stdio.clone(), &[false, false, false]),
            [runtime.clone(), "pipe:[424242]".to_owned()],
            "a subject's stdio is shared"
        );
        assert_eq!(
            specific(stdio, &[false, false, true]),
            [runtime],
            "another run's runtime holds it too"
        );
    }
}
