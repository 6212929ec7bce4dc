use super::*;

#[test]
fn scrub_rules() {
    for name in [
        "API_KEY",
        "my_password",
        "Secret",
        "GH_TOKEN",
        "dsh_home",
        "DSH_X",
    ] {
        assert!(is_scrubbed(name), "{name}");
    }
    for name in ["PATH", "HOME", "XDSH_A", "LANG"] {
        assert!(!is_scrubbed(name), "{name}");
    }
    let mut o = serde_json::Map::new();
    o.insert("DSH_OK".into(), "1".into());
    o.insert("PATH".into(), serde_json::Value::Null);
    o.insert("N".into(), 3.into());
    let (env, ignored) = child_env(
        vec![
            ("PATH".to_string(), "/bin".to_string()),
            ("API_KEY".to_string(), "x".to_string()),
            ("HOME".to_string(), "/h".to_string()),
        ]
        .into_iter(),
        &o,
    );
    assert_eq!(env.get("DSH_OK").map(String::as_str), Some("1"));
    assert!(!env.contains_key("PATH"));
    assert!(!env.contains_key("API_KEY"));
    assert_eq!(env.get("HOME").map(String::as_str), Some("/h"));
    assert_eq!(ignored, vec!["N".to_string()]);
}

#[test]
fn a_process_without_its_memory_is_in_transition_and_a_cleared_environment_is_not() {
    // A program started with an empty environment still has its command line.
    let mut cleared = std::process::Command::new("sleep")
        .arg("30")
        .env_clear()
        .spawn()
        .unwrap();
    let pid = cleared.id() as i32;
    // Until its exec is done the child is a copy of this one: wait for `sleep` to show.
    while std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| !c.starts_with("sleep"))
    {
        std::thread::yield_now();
    }
    assert!(!in_transition(pid));
    assert!(!in_transition(std::process::id() as i32));
    // Exited, not yet reaped (awaited without reaping): no memory, so neither command line
    // nor environment.
    cleared.kill().unwrap();
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    waitid(
        Id::Pid(Pid::from_raw(pid)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
    )
    .unwrap();
    assert!(in_transition(pid));
    cleared.wait().unwrap();
}

#[test]
fn a_process_is_ours_outside_or_undecided_by_its_chain_of_parents() {
    // 1 → 10 → 20 (us) → 30; 40 hangs under 35, known outside; 50's parent is gone.
    let parent: HashMap<i32, i32> =
        [(1, 0), (10, 1), (20, 10), (30, 20), (40, 35), (50, 45)].into();
    let (_r, w) = std::io::pipe().unwrap();
    let outside: BTreeMap<i32, std::os::fd::OwnedFd> = [(35, w.into())].into();
    let side = |pid| side_of(&parent, &outside, pid, 20);
    assert_eq!(side(30), Some(true));
    assert_eq!(side(20), Some(true));
    assert_eq!(side(10), Some(false));
    assert_eq!(side(40), Some(false));
    assert_eq!(side(50), None);
}

#[test]
fn stat_parsing() {
    let tail = " 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0";
    assert_eq!(
        parse_stat_full(&format!("123 (a (b) c) S 1 77 77{tail}")),
        Some(('S', 1, 77, 4242))
    );
    assert_eq!(
        parse_stat_full(&format!("9 (z) Z 1 9 9{tail}")),
        Some(('Z', 1, 9, 4242))
    );
    let own = std::fs::read_to_string("/proc/self/stat").unwrap();
    assert!(parse_stat_full(&own).is_some_and(|(.., t)| t > 0));
}

#[test]
fn another_runs_group_counts_only_while_its_runtime_leads_it() {
    let p = |pid, start_time, state| Proc {
        pid,
        ppid: 1,
        pgrp: pid,
        state,
        start_time,
    };
    // Pids far from any this test process could hold, listed as other runs' groups.
    let _live = GroupListed::new(4_000_001, 7);
    let _reused = GroupListed::new(4_000_002, 7);
    let _exited = GroupListed::new(4_000_003, 7);
    let _own = GroupListed::new(4_000_004, 7);
    let table = [
        p(4_000_001, 7, 'S'),
        // The id came round: a new session leader took it.
        p(4_000_002, 9, 'S'),
        p(4_000_003, 7, 'Z'),
        p(4_000_004, 7, 'S'),
    ];
    let groups = other_runs_groups(&table, 4_000_004);
    assert!(groups.contains(&4_000_001));
    for pgid in [4_000_002, 4_000_003, 4_000_004] {
        assert!(!groups.contains(&pgid), "{pgid}");
    }
}

#[tokio::test]
async fn ladder_kills_term_trapping_tree() {
    let env: HashMap<String, String> = std::env::vars().collect();
    // The shell traps TERM and its background child ignores it too.
    let script = "trap '' TERM; (trap '' TERM; sleep 30) & sleep 30; wait";
    let sp = spawn(
        "/bin/sh",
        &["-c".into(), script.into()],
        Path::new("/"),
        &env,
    )
    .unwrap();
    let (eof_tx, eof_rx) = watch::channel(false);
    let stdout = sp.stdout;
    tokio::spawn(async move {
        let mut s = stdout;
        let mut buf = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf).await;
        eof_tx.send_replace(true);
    });
    drop(sp.stdin);
    let pgid = sp.child.pgid();
    let started = Instant::now();
    sp.child
        .settle(
            &eof_rx,
            Duration::from_millis(100),
            Duration::from_millis(300),
            Ladder::default(),
        )
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(!group_alive(pgid));
    assert_eq!(sp.child.exited().unwrap().signal, Some(libc::SIGKILL));
}

/// A descriptor that names another file once it was judged to survive exec (the process exec'd
/// in between and the number was taken again) is no hold of the pipe it named before.
#[test]
fn a_descriptor_that_changed_while_it_was_judged_holds_nothing() {
    use std::os::fd::AsRawFd;
    // One end of each pipe kept: both ends of one pipe name it alike.
    let (read, _) = nix::unistd::pipe().unwrap();
    let (other, _) = nix::unistd::pipe().unwrap();
    let me = std::process::id() as i32;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", read.as_raw_fd())).unwrap();
    let pipes = [link.to_string_lossy().into_owned()];
    let number = read.as_raw_fd().to_string();
    assert!(holds_any_kept(me, &pipes, |_| true));
    let changed = holds_any_kept(me, &pipes, |fd| {
        if fd == number {
            // SAFETY: both descriptors are open and owned here; `read` keeps owning its
            // number, which now names the other pipe.
            assert!(unsafe { libc::dup2(other.as_raw_fd(), read.as_raw_fd()) } >= 0);
        }
        true
    });
    assert!(!changed);
}
