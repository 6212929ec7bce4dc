//! Bounded scenarios and bounded reports: a huge scenario file is refused before it is parsed
//! (listing it costs little memory), and a failing run's entry in the text and JSON reports is
//! cut, visibly, however much the run produced.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common;
use common::workspace;

/// The harness under test: this build, or another one named by `CONFORM_UNDER_TEST` (how
/// these tests were shown to fail before the bounds).
fn conform_bin() -> PathBuf {
    std::env::var_os("CONFORM_UNDER_TEST")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("conform"))
}

/// A scenario folder with the catalog's preludes and `files` (relative path, text).
fn catalog(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let preludes = dir.path().join("preludes");
    std::fs::create_dir_all(&preludes).unwrap();
    for entry in std::fs::read_dir(workspace().join("scenarios/preludes")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), preludes.join(entry.file_name())).unwrap();
    }
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// Runs `conform <args>` to its end: exit code, stdout, stderr, and its peak RSS in MiB.
// The child is reaped by `wait4`, which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn conform(args: &[&str], dir: &Path) -> (Option<i32>, String, String, u64) {
    let out = dir.join("stdout");
    let err = dir.join("stderr");
    let child = std::process::Command::new(conform_bin())
        .current_dir(workspace())
        .env("INSTA_UPDATE", "no")
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child just spawned, waited nowhere else.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    (code, read(&out), read(&err), usage.ru_maxrss as u64 / 1024)
}

const END: &str = "\n[[fake.steps]]\nstop = \"end_turn\"\n\n[expect]\nstop_reason = \"completed\"\njob_status = \"completed\"\n";

#[test]
fn listing_a_huge_scenario_is_refused_cheaply_naming_the_file() {
    // 100 000 steps: 2.8 MB of text, which parsed took over 500 MB to list.
    let steps = "\n[[fake.steps]]\nchunk = \"x\"\n".repeat(100_000);
    let text = format!(
        "title = \"huge\"\nprovider = \"acp\"\n\n[[fake.steps]]\ninclude = \"acp-prompt\"\n{steps}{END}"
    );
    let dir = catalog(&[("acp/x/huge.toml", text)]);
    let root = dir.path().to_str().unwrap();
    let (code, out, err, peak_mib) = conform(&["list", "--scenarios", root], dir.path());
    assert_eq!(code, Some(2), "{out}\n{err}");
    let file = dir.path().join("acp/x/huge.toml");
    assert!(
        err.contains(&format!("{}: ", file.display()))
            && err.contains("bytes, over the limit of 131072 bytes for a scenario file"),
        "{err}"
    );
    assert!(peak_mib < 100, "listing took {peak_mib} MiB");
}

#[test]
fn a_failing_run_with_a_megabyte_of_output_gets_a_bounded_report_entry() {
    // Ten chunks of 100 KB each from one prelude: a 1 MB output, within the scenario bounds.
    let chunk = format!("[[steps]]\nchunk = \"{}\"\n", "x".repeat(100_000));
    let includes = "\n[[fake.steps]]\ninclude = \"big-chunk\"\n".repeat(10);
    let text = format!(
        "title = \"much output\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n\n[[fake.steps]]\ninclude = \"acp-prompt\"\n{includes}\n[[fake.steps]]\nstop = \"end_turn\"\n\n[expect]\nstop_reason = \"completed\"\noutput = \"not this\"\n"
    );
    let dir = catalog(&[
        ("preludes/big-chunk.toml", chunk),
        ("acp/x/much-output.toml", text),
    ]);
    let root = dir.path().to_str().unwrap();
    let json = dir.path().join("report.json");
    let (code, out, err, _) = conform(
        &[
            "run",
            "--scenarios",
            root,
            "--snapshots",
            root,
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        out.contains("[expect.output]"),
        "{}",
        &out[..out.len().min(4000)]
    );
    assert!(
        out.contains(" bytes cut …"),
        "no cut marker in the text report"
    );
    assert!(
        out.len() < 512 * 1024,
        "the text report is {} bytes for one run",
        out.len()
    );
    let json_len = std::fs::metadata(&json).unwrap().len();
    assert!(
        json_len < 1024 * 1024,
        "the JSON report is {json_len} bytes"
    );
}
