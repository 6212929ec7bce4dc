use super::*;

#[test]
fn a_launcher_and_a_marked_orphan_are_the_runs_and_a_shared_parent_is_not() {
    // sh (launcher) → runtime (registered) → helper (descendant); a daemon marked with the
    // run's id under init; another run's runtime under a shared parent.
    let stat = |ppid, pgrp| Stat {
        state: 'S',
        ppid,
        pgrp,
        start_time: 7,
    };
    let table = Table {
        all: [
            (10, stat(1, 10)),  // the subject
            (20, stat(10, 20)), // sh
            (21, stat(20, 20)), // runtime
            (22, stat(21, 20)), // helper
            (30, stat(10, 30)), // a shared node process
            (31, stat(30, 30)), // this run's second runtime
            (32, stat(30, 30)), // another run's runtime
        ]
        .into_iter()
        .collect(),
    };
    let mark = Mark {
        side: "/nowhere/side.sock".into(),
        run: "r-x".into(),
    };
    let claimed = Claimed {
        own: &[(21, 7), (31, 7)],
        elsewhere: &Default::default(),
        in_cgroup: &[],
    };
    let m = members_in(&table, &mark, &claimed, &[], 10);
    let got: Vec<(i32, How)> = m.iter().map(|m| (m.pid, m.how)).collect();
    assert_eq!(
        got,
        vec![
            (20, How::Launcher),
            (21, How::Registered),
            (22, How::Descendant),
            (31, How::Registered),
        ]
    );
}

#[test]
fn a_holder_of_the_runs_pipe_registered_for_another_run_is_not_this_runs() {
    // A child whose stdout is this run's runtime pipe (a host that leaked it).
    let (reader, writer) = std::io::pipe().unwrap();
    let link = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&reader)
    ))
    .unwrap()
    .to_string_lossy()
    .into_owned();
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .stdout(writer)
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // Once its exec is done (its stdout stays the pipe throughout); bounded.
    let by = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pids::arguments(pid) != ["30"] && std::time::Instant::now() < by {
        std::thread::yield_now();
    }
    let start = pids::stat(pid).unwrap().start_time;
    let mark = Mark {
        side: "/nowhere/side.sock".into(),
        run: "r-a".into(),
    };
    let members = |elsewhere: std::collections::HashSet<(i32, u64)>| {
        let claimed = Claimed {
            own: &[],
            elsewhere: &elsewhere,
            in_cgroup: &[],
        };
        members_in(
            &Table::read(),
            &mark,
            &claimed,
            std::slice::from_ref(&link),
            -1,
        )
        .iter()
        .map(|m| (m.pid, m.how))
        .collect::<Vec<_>>()
    };
    let unclaimed = members(Default::default());
    let claimed_by_b = members([(pid, start)].into());
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(unclaimed, [(pid, How::Pipe)]);
    assert_eq!(claimed_by_b, [], "another run's registered runtime");
}
