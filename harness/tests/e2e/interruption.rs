//! A suite interrupted by a signal stops in order: the runs in flight end, everything the
//! suite started is gone, the scratch folder too, and a report says what finished (exit
//! 128 + n). A second signal kills everything at once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common;
use common::{Slot, marked, workspace};

/// `conform run -j 8` over the whole catalog, its scratch folder under `tmp`, every process it
/// starts marked by an environment variable, and the reference's stdout copied into a FIFO.
/// Returns once 20 runs were dispatched (the suite is well under way), with the child.
fn suite_under_way(tmp: &Path, mark: &str) -> (Child, std::thread::JoinHandle<()>) {
    let fifo = tmp.join("subject-stdout");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let work = tmp.join("work");
    std::fs::create_dir(&work).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("conform");
    let subject = format!("'{}' reference | tee '{}'", exe.display(), fifo.display());
    let child = Command::new(&exe)
        .args(["run", "-j", "8", "--subject", &subject, "--json"])
        .arg(tmp.join("report.json"))
        .current_dir(workspace())
        .env("TMPDIR", &work)
        .env("CONFORM_INTERRUPT_MARK", mark)
        .env("INSTA_UPDATE", "no")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (under_way, wait) = mpsc::channel();
    // Opening the FIFO waits for `tee`; reading it to the end keeps `tee` from ever blocking.
    let reader = std::thread::spawn(move || {
        let lines = BufReader::new(std::fs::File::open(&fifo).unwrap()).lines();
        let mut dispatched = 0;
        for line in lines.map_while(Result::ok) {
            if line.contains(r#""type":"dispatched""#) {
                dispatched += 1;
                if dispatched == 20 {
                    let _ = under_way.send(());
                }
            }
        }
    });
    wait.recv_timeout(Duration::from_secs(120))
        .expect("20 runs dispatched");
    (child, reader)
}

#[test]
fn sigint_stops_the_suite_in_order_and_leaves_nothing() {
    let _slot = Slot::take();
    let tmp = tempfile::tempdir().unwrap();
    let mark = format!("sigint-{}", std::process::id());
    let (mut child, reader) = suite_under_way(tmp.path(), &mark);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(marked(&mark), Vec::<String>::new(), "left running");
    let scratch: Vec<_> = std::fs::read_dir(tmp.path().join("work"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(scratch.is_empty(), "scratch left: {scratch:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(report["interruptedBy"], "SIGINT");
    assert_eq!(report["exitCode"], 130);
    let verdicts: Vec<&str> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert!(verdicts.contains(&"pass"), "{verdicts:?}");
    assert!(verdicts.contains(&"interrupted"), "{verdicts:?}");
    assert!(!verdicts.contains(&"fail"), "{verdicts:?}");
}

#[test]
fn a_second_signal_kills_everything_at_once() {
    let _slot = Slot::take();
    let tmp = tempfile::tempdir().unwrap();
    let mark = format!("twice-{}", std::process::id());
    let (mut child, reader) = suite_under_way(tmp.path(), &mark);
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    kill(pid, Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    // The first may already have ended the suite in order; either way: 128 + 15, nothing left.
    assert_eq!(status.code(), Some(143));
    assert_eq!(marked(&mark), Vec::<String>::new(), "left running");
}
