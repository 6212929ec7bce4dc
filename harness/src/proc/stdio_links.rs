//! Which of a runtime's stdio links (`pipe:[…]`, `socket:[…]`) are the run's own, and so
//! evidence that a process holding one belongs to the run ([`crate::proc::settle`]).

/// Of a run's runtime stdio (`pipe:[…]`, `socket:[…]`), the links that are the run's own and
/// so evidence that whoever holds one belongs to the run: not one the harness holds (the
/// subject's own stdin, stdout and stderr — which a host's runtimes inherit when it spawns
/// them with `stderr: 'inherit'`), and not one another run's runtime registered with (what the
/// host hands every runtime it starts). Those are shared, and holding them proves nothing.
pub fn specific(stdio: Vec<String>, other_runs: &[String]) -> Vec<String> {
    let harness = links_of(std::process::id() as i32);
    stdio
        .into_iter()
        .filter(|l| !harness.contains(l) && !other_runs.contains(l))
        .collect()
}

/// Every pipe and socket `pid` holds open.
fn links_of(pid: i32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .map(|l| l.to_string_lossy().into_owned())
        .filter(|l| l.starts_with("pipe:") || l.starts_with("socket:"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link_of(fd: &impl std::os::fd::AsRawFd) -> String {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_link_the_harness_or_another_run_holds_is_no_evidence() {
        use std::os::unix::net::UnixStream;
        // A runtime's stdout socket whose other end the host holds: the runtime's end is the
        // run's own once the harness no longer holds it.
        let (_host_end, runtime_end) = UnixStream::pair().unwrap();
        let runtime = link_of(&runtime_end);
        // The subject's own stderr, inherited by every runtime: the harness reads it.
        let (shared_read, _shared_write) = std::io::pipe().unwrap();
        let shared = link_of(&shared_read);
        drop(runtime_end);
        let stdio = vec![runtime.clone(), shared.clone(), "pipe:[424242]".to_owned()];
        assert_eq!(
            specific(stdio.clone(), &[]),
            [runtime.clone(), "pipe:[424242]".to_owned()],
            "the harness's own pipe is shared"
        );
        assert_eq!(
            specific(stdio, &["pipe:[424242]".to_owned()]),
            [runtime],
            "another run's runtime holds it too"
        );
    }
}
