//! A `conform` copied alone anywhere carries its catalog: with no `--scenarios` or
//! `--snapshots` it extracts the embedded one into its cache and judges by it, and every report
//! names that catalog by the digest `conform --version` shows. A baseline names the catalog it
//! was written against and warns when used with another.

use crate::common;
use common::{Slot, conform, run, stdout, workspace};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The built `conform`, copied alone into a fresh folder outside the workspace.
fn copied_conform() -> (tempfile::TempDir, PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("conform");
    std::fs::copy(assert_cmd::cargo::cargo_bin("conform"), &exe).unwrap();
    (bin, exe)
}

/// The digest `conform --version` names (`conform 0.1.0 (catalog 3f2a9c0d41be)`).
fn version_digest(exe: &Path, env: &[(&str, &Path)]) -> String {
    let out = Command::new(exe)
        .arg("--version")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = stdout(&out);
    let digest = text
        .trim()
        .strip_suffix(')')
        .and_then(|t| t.rsplit_once("(catalog "))
        .map(|(_, d)| d.to_owned())
        .unwrap_or_else(|| panic!("no catalog in {text:?}"));
    assert_eq!(digest.len(), 12, "{text}");
    digest
}

#[test]
fn a_copied_binary_judges_by_the_catalog_it_carries() {
    let (_bin, exe) = copied_conform();
    let cwd = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let env = [
        ("XDG_CACHE_HOME", cache.path()),
        // Nothing falls back to the real home's cache.
        ("HOME", cwd.path()),
    ];
    let digest = version_digest(&exe, &env);
    // What it carries is the workspace's catalog as it was built.
    let ws = workspace();
    assert_eq!(
        digest,
        conform::catalog::digest_of(&ws.join("scenarios"), &ws.join("snapshots")).unwrap()
    );

    let _slot = Slot::take();
    let started = Instant::now();
    let out = Command::new(&exe)
        .current_dir(cwd.path())
        .envs(env)
        .env("INSTA_UPDATE", "no")
        .args(["run", "--filter", "acp/success", "--json", "report.json"])
        .args(["--junit", "report.xml"])
        .output()
        .unwrap();
    eprintln!("copied binary, acp/success: {:?}", started.elapsed());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", common::stderr(&out));
    assert!(
        text.lines().any(|l| l == format!("catalog: {digest}")),
        "{text}"
    );
    let extracted = cache.path().join(format!("conform/catalog-{digest}"));
    assert!(extracted.join("scenarios/preludes").is_dir());
    assert!(
        std::fs::read_dir(extracted.join("snapshots"))
            .unwrap()
            .count()
            > 900
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cwd.path().join("report.json")).unwrap()).unwrap();
    assert_eq!(json["catalog"], digest.as_str());
    assert!(
        json["cases"][0]["file"]
            .as_str()
            .unwrap()
            .starts_with(extracted.to_str().unwrap()),
        "{}",
        json["cases"][0]["file"]
    );
    let xml = std::fs::read_to_string(cwd.path().join("report.xml")).unwrap();
    assert!(
        xml.contains(&format!("name=\"catalog\" value=\"{digest}\"")),
        "{xml}"
    );

    // The extracted catalog is never written into: `--accept` wants its own folder.
    let out = Command::new(&exe)
        .current_dir(cwd.path())
        .envs(env)
        .args(["run", "--filter", "acp/success/end-turn", "--accept"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("--snapshots DIR"), "{out:?}");
}

#[test]
fn an_unwritable_cache_falls_back_and_a_cache_folder_is_reused() {
    let (_bin, exe) = copied_conform();
    let cwd = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let digest = version_digest(&exe, &[]);
    // `conform list` reads the default scenario folder and runs nothing.
    let list = |cache: &Path| {
        let out = Command::new(&exe)
            .current_dir(cwd.path())
            .env("XDG_CACHE_HOME", cache)
            .env("HOME", cwd.path())
            .args(["list", "--filter", "acp/success/end-turn"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        stdout(&out)
    };
    let started = Instant::now();
    assert!(list(cache.path()).contains("acp/success/end-turn"));
    eprintln!("first use (extraction) and list: {:?}", started.elapsed());
    let started = Instant::now();
    list(cache.path());
    eprintln!("later use and list: {:?}", started.elapsed());
    let entries: Vec<_> = std::fs::read_dir(cache.path().join("conform"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, [format!("catalog-{digest}").as_str()]);
}

/// `from` copied into `to`, folders and all.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn a_baseline_written_with_one_catalog_warns_when_used_with_another() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("known.toml");
    let file_arg = file.to_str().unwrap();
    let filter = "acp/success/end-turn";
    let (code, out, _) = run(&["--filter", filter, "--write-baseline", file_arg]);
    assert_eq!(code, Some(0), "{out}");
    let digest = conform::catalog::DIGEST;
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains(&format!("catalog = \"{digest}\"")),
        "{written}"
    );

    // The same catalog: no warning.
    let (code, out, _) = run(&["--filter", filter, "--baseline", file_arg]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("warning: baseline"), "{out}");

    // A copy of the scenarios with one title edited (a scenario the filter leaves out): another
    // catalog, named in the report, and one warning line, not a failure.
    let copy = dir.path().join("scenarios");
    copy_tree(&workspace().join("scenarios"), &copy);
    let edited = copy.join("acp/stop/refusal.toml");
    let text = std::fs::read_to_string(&edited).unwrap();
    let title = text.lines().find(|l| l.starts_with("title")).unwrap();
    let retitled = text.replacen(title, "title = \"an edited title\"", 1);
    assert_ne!(retitled, text);
    std::fs::write(&edited, retitled).unwrap();
    let other = conform::catalog::digest_of(&copy, &workspace().join("snapshots")).unwrap();
    assert_ne!(other, digest);
    let copy_arg = copy.to_str().unwrap();
    let args = [
        "--filter",
        filter,
        "--scenarios",
        copy_arg,
        "--baseline",
        file_arg,
    ];
    let (code, out, _) = run(&args);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().any(|l| l == format!("catalog: {other}")),
        "{out}"
    );
    let warnings: Vec<&str> = out.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        [format!(
            "warning: baseline {file_arg} was written against catalog {digest}, this suite ran catalog {other}: review its entries"
        )],
        "{out}"
    );

    // Shards of that run, merged: the merged report says the same.
    let mut shards = Vec::new();
    for k in 1..=2 {
        let shard = dir.path().join(format!("shard-{k}.json"));
        let spec = format!("{k}/2");
        let shard_args = [
            "--filter",
            "acp/success",
            "--scenarios",
            copy_arg,
            "--baseline",
            file_arg,
            "--partition",
            &spec,
            "--json",
            shard.to_str().unwrap(),
        ];
        run(&shard_args);
        shards.push(shard);
    }
    let merged = {
        let _slot = Slot::take();
        conform()
            .args(["report", "merge"])
            .args(&shards)
            .output()
            .unwrap()
    };
    let text = stdout(&merged);
    assert!(
        text.lines().any(|l| l == format!("catalog: {other}")),
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("warning: baseline"))
            .count(),
        1,
        "{text}"
    );

    // A baseline from before files named their catalog: taken silently.
    let old: String = written
        .lines()
        .filter(|l| !l.starts_with("catalog"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, old).unwrap();
    let (code, out, _) = run(&args);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("warning:"), "{out}");
}

/// Inside the workspace the folders on disk are the catalog, as a developer edits them.
#[test]
fn inside_the_workspace_the_workspace_folders_are_used() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let _slot = Slot::take();
    let out = conform()
        .current_dir(workspace().join("harness"))
        .args(["run", "--filter", "acp/success/end-turn", "--json"])
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let file = Path::new(json["cases"][0]["file"].as_str().unwrap());
    let scenarios = workspace().join("scenarios").canonicalize().unwrap();
    assert!(
        file.canonicalize().unwrap().starts_with(&scenarios),
        "{}",
        file.display()
    );
    assert_eq!(json["catalog"], conform::catalog::DIGEST);
}

#[test]
fn a_hosts_own_scenarios_are_added_beside_the_carried_catalog() {
    // A host keeps its own cases in its repository (`conform/scenarios`, `conform/snapshots`):
    // they run beside the embedded catalog, may include its preludes, keep their snapshots
    // where they are, and name the run's catalog with their own digest.
    let (_bin, exe) = copied_conform();
    let cwd = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let env = [("XDG_CACHE_HOME", cache.path()), ("HOME", cwd.path())];
    let digest = version_digest(&exe, &env);
    let host = cwd.path().join("conform");
    let scenario = host.join("scenarios/acp/host/greeting.toml");
    std::fs::create_dir_all(scenario.parent().unwrap()).unwrap();
    let case = "title = \"the host's own greeting case\"\nprovider = \"acp\"\n\n\
        [[fake.steps]]\ninclude = \"acp-prompt\"\n\n[[fake.steps]]\nchunk = \"Hi from the host.\"\n\n\
        [[fake.steps]]\nstop = \"end_turn\"\n\n[expect]\nstop_reason = \"completed\"\n\
        output = \"Hi from the host.\"\njob_status = \"completed\"\n";
    std::fs::write(&scenario, case).unwrap();
    let _slot = Slot::take();
    let run = |extra: &[&str]| {
        Command::new(&exe)
            .current_dir(cwd.path())
            .envs(env)
            .env("INSTA_UPDATE", "no")
            .args(["run", "--add", "conform", "--filter", "acp/host/"])
            .args(["--filter", "acp/success/end-turn"])
            .args(extra)
            .output()
            .unwrap()
    };
    // No snapshot yet: a failure saying so; the host records its own, into its own folder.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("no stored snapshot"),
        "{}",
        stdout(&out)
    );
    let accepted = Command::new(&exe)
        .current_dir(cwd.path())
        .envs(env)
        .args([
            "run",
            "--add",
            "conform",
            "--filter",
            "acp/host/",
            "--accept",
        ])
        .args(["--snapshots", cwd.path().join("unused").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(accepted.status.code(), Some(0), "{}", stdout(&accepted));
    let snap = host.join("snapshots/acp__host__greeting@foreground.snap");
    assert!(
        std::fs::read_to_string(&snap)
            .unwrap()
            .contains("Hi from the host.")
    );
    // Now both the host's case and the catalog's pass, and the report names both catalogs.
    let out = run(&[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("4 passed, 0 failed"), "{text}");
    let line = text.lines().find(|l| l.starts_with("catalog: ")).unwrap();
    assert!(line.starts_with(&format!("catalog: {digest}+")), "{line}");
    // An id the catalog already has is refused, naming the file.
    let clash = host.join("scenarios/acp/success/end-turn.toml");
    std::fs::create_dir_all(clash.parent().unwrap()).unwrap();
    std::fs::write(&clash, case).unwrap();
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        common::stderr(&out).contains("the id `acp/success/end-turn` is taken by"),
        "{}",
        common::stderr(&out)
    );
}
