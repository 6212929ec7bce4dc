//! The terminal as a host maintainer sees a red run: on a terminal each failure's line appears
//! while the run goes on, in colour unless NO_COLOR says not; the report then opens on its
//! causes.

use crate::common;

use std::io::Read;
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

use common::defective;
use nix::pty::{Winsize, openpty};

/// `conform run ARGS` with its stdout and stderr on a pseudo-terminal: all it wrote there, in
/// order, and its exit code.
fn on_a_terminal(args: &[&str], no_color: bool) -> (Option<i32>, String) {
    let size = Winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let _slot = common::Slot::take();
    let pty = openpty(Some(&size), None).expect("a pseudo-terminal");
    let slave: OwnedFd = pty.slave;
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("conform"));
    cmd.arg("run")
        .args(args)
        .env_remove("CI")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .env("INSTA_UPDATE", "no")
        .stdin(Stdio::null())
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave);
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let mut child = cmd.spawn().expect("conform starts");
    // Our copies of the terminal's far end go, so reading ends when the child's do.
    drop(cmd);
    let mut master = std::fs::File::from(pty.master);
    let mut bytes = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match master.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            // Linux answers EIO once the last writer of the far end has closed it.
            Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
            Err(e) => panic!("reading the terminal: {e}"),
        }
    }
    let status = child.wait().expect("conform ends");
    (status.code(), String::from_utf8_lossy(&bytes).into_owned())
}

/// Where each progress line drawn in `out` stands: (byte offset, cases done, cases in all).
fn progress_draws(out: &str) -> Vec<(usize, usize, usize)> {
    let re = regex::Regex::new(r"(\d+)/(\d+) \S+ (\d+) failed").unwrap();
    re.captures_iter(out)
        .map(|c| {
            let n = |i: usize| c[i].parse::<usize>().unwrap();
            (c.get(0).unwrap().start(), n(1), n(2))
        })
        .collect()
}

#[test]
fn on_a_terminal_each_failure_shows_as_it_happens_in_colour() {
    let subject = defective(&["crlf-output"]);
    let (code, out) = on_a_terminal(
        &[
            "--filter",
            "acp/wire/",
            "--jobs",
            "1",
            "--subject",
            &subject,
        ],
        false,
    );
    assert_eq!(code, Some(1), "{out}");
    // `FAIL`, its colour reset, then its time.
    let status = regex::Regex::new(r"FAIL(\x1b\[[0-9;]*m)* \[").unwrap();
    let first_fail = status
        .find(&out)
        .expect("a status line for a failure")
        .start();
    let causes = out.find(" cause(s) of ").expect("the report's causes");
    assert!(first_fail < causes, "{out}");
    // After the first failure's line the bar still counts a run that is not over, with its
    // failures.
    let draws = progress_draws(&out);
    assert!(
        draws
            .iter()
            .any(|&(at, done, all)| at > first_fail && done < all),
        "no progress drawn after the first failure while the run went on: {draws:?}\n{out:?}"
    );
    // In colour: the status word and the report's failure marks.
    let coloured_fail =
        regex::Regex::new(r"\x1b\[[0-9;]*m(\x1b\[[0-9;]*m)*FAIL\x1b\[0?m \[").unwrap();
    assert!(coloured_fail.is_match(&out), "{out:?}");
    let coloured_mark =
        regex::Regex::new(r"\x1b\[[0-9;]*m(\x1b\[[0-9;]*m)*✗ \[snapshot\]").unwrap();
    assert!(coloured_mark.is_match(&out), "{out:?}");
}

#[test]
fn no_color_leaves_a_terminal_without_colour() {
    let subject = defective(&["crlf-output"]);
    let (code, out) = on_a_terminal(
        &["--filter", "acp/wire/split-inside", "--subject", &subject],
        true,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("FAIL ["), "{out:?}");
    // The progress line still erases itself (`ESC [ 2 K`), but nothing sets a colour (SGR).
    let sgr = regex::Regex::new(r"\x1b\[[0-9;]*m").unwrap();
    assert!(!sgr.is_match(&out), "{out:?}");
}

/// `conform run` over the three split-inside cases with `subject`, piped: its exit code,
/// stdout and stderr (no `NO_COLOR` from the caller; nothing left pending).
fn off_a_terminal(subject: &str, flags: &[&str]) -> (Option<i32>, String, String) {
    let _slot = common::Slot::take();
    let out = Command::new(assert_cmd::cargo::cargo_bin("conform"))
        .args([
            "run",
            "--filter",
            "acp/wire/split-inside",
            "--subject",
            subject,
        ])
        .args(flags)
        .env_remove("NO_COLOR")
        .env("INSTA_UPDATE", "no")
        .output()
        .expect("conform runs");
    (
        out.status.code(),
        common::stdout(&out),
        common::stderr(&out),
    )
}

#[test]
fn off_a_terminal_the_status_lines_go_to_stderr_plain_and_the_report_opens_on_its_causes() {
    let subject = defective(&["crlf-output"]);
    let (code, stdout, stderr) = off_a_terminal(&subject, &[]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("1 cause(s) of 3 failed run(s)"),
        "{stdout}"
    );
    let fails: Vec<&str> = stderr.lines().filter(|l| l.starts_with("FAIL [")).collect();
    assert_eq!(fails.len(), 3, "{stderr}");
    assert!(
        fails
            .iter()
            .all(|l| l.contains(" (background) [snapshot] the model-visible texts differ")),
        "{stderr}"
    );
    assert!(
        !stdout.contains('\x1b') && !stderr.contains('\x1b'),
        "{stdout}\n{stderr}"
    );

    // `--color always` colours even a pipe; `--status-level none` prints no status line;
    // `--failure-output never` leaves the detail out and says where it is.
    let (code, stdout, stderr) = off_a_terminal(
        &subject,
        &[
            "--color",
            "always",
            "--status-level",
            "none",
            "--failure-output",
            "never",
            "--final-status-level",
            "fail",
        ],
    );
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(!stderr.contains("FAIL ["), "{stderr}");
    assert!(stdout.contains("\x1b["), "{stdout:?}");
    assert!(
        stdout.contains("--failure-output never: no failure's detail below"),
        "{stdout}"
    );
    assert!(!stdout.contains("subject transcript (run "), "{stdout}");
    assert!(stdout.contains("3 case(s) failed:"), "{stdout}");
    assert!(!stdout.contains("\nskipped:\n"), "{stdout}");
}

#[test]
fn failure_output_immediate_prints_each_detail_under_its_line() {
    let subject = defective(&["crlf-output"]);
    let (code, stdout, stderr) = off_a_terminal(&subject, &["--failure-output", "immediate"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert_eq!(
        stderr.matches("subject transcript (run ").count(),
        3,
        "{stderr}"
    );
    let line = stderr.find("FAIL [").expect(&stderr);
    let detail = stderr.find("\n━━ acp/wire/split-inside").expect(&stderr);
    assert!(line < detail, "{stderr}");
    // Not again at the end.
    assert!(!stdout.contains("subject transcript (run "), "{stdout}");
}
