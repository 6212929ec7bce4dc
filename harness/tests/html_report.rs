//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) opens the page of
//! a run with failures, and of a merged partitioned run, offline, and runs its script without a
//! console error; the matrix counts what the JSON report says, a filter in the address hides
//! what it should, a failure opens with its requirement and its diff, and a subject's markup
//! stays text. Skipped, saying why, where Chromium is not installed (`ci/check` installs it).
//! A screenshot for review goes under `target/`, never into the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{Slot, conform, defective, stdout};

fn chromium() -> Option<PathBuf> {
    let names = ["chromium", "chromium-browser", "google-chrome"];
    let found = std::env::var_os("CONFORM_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(names.iter().map(PathBuf::from))
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    if found.is_none() {
        eprintln!(
            "SKIPPED: Chromium is not installed (apt-get install chromium); the HTML report was not opened in a browser"
        );
    }
    found
}

/// The page's DOM once its script ran (`--dump-dom`), and what the browser logged.
fn open(browser: &Path, page: &Path, hash: &str, screenshot: Option<&Path>) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()));
    match screenshot {
        Some(png) => cmd
            .arg(format!("--screenshot={}", png.display()))
            .arg("--window-size=1280,1600"),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd
        .arg(format!("file://{}#{hash}", page.display()))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The console's errors among what the browser logged (`CONSOLE` lines, uncaught exceptions,
/// a Content-Security-Policy refusal).
fn console_errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            l.contains("CONSOLE") || l.contains("Uncaught") || l.contains("Content Security Policy")
        })
        .collect()
}

/// The value of `attr` on the element whose opening tag holds every one of `marks`.
fn attr(dom: &str, marks: &[&str], attr: &str) -> Option<String> {
    dom.split('<')
        .find(|tag| marks.iter().all(|m| tag.contains(m)))
        .and_then(|tag| {
            let at = tag.find(&format!("{attr}=\""))? + attr.len() + 2;
            Some(tag[at..].split('"').next()?.to_owned())
        })
}

fn shown_rows(dom: &str) -> usize {
    dom.split("<tr ")
        .filter(|t| t.starts_with("class=\"case\"") || t.contains(" class=\"case\""))
        .filter(|t| !t.split('>').next().unwrap_or("").contains("hidden"))
        .count()
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let _slot = Slot::take();
    let out = conform().arg("run").args(args).output().unwrap();
    (out.status.code(), stdout(&out))
}

fn count(report: &serde_json::Value, verdict: &str) -> usize {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == verdict)
        .count()
}

#[test]
fn the_catalog_against_seeded_defects_opens_in_chromium_with_its_counts_filters_and_diffs() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("r.json"), dir.path().join("html"));
    // The whole catalog, against a reference with two seeded defects.
    let subject = defective(&["partial-from-chunks-only", "no-sigkill-rung"]);
    let (code, out) = run(&[
        "-j",
        "8",
        "--subject",
        &subject,
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{out}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (pass, fail, skip) = (
        count(&report, "pass"),
        count(&report, "fail"),
        count(&report, "skip"),
    );
    assert!(fail > 0 && pass > 0, "{out}");
    let cell_of = |provider: &str, family: &str, verdict: &str| {
        let cases = report["cases"].as_array().unwrap();
        let family_of = |id: &str| id.split('/').nth(1).unwrap_or("").to_owned();
        cases
            .iter()
            .filter(|c| c["provider"] == provider && family_of(c["id"].as_str().unwrap()) == family)
            .filter(|c| c["verdict"] == verdict)
            .count()
            .to_string()
    };
    let page = html.join("index.html");

    let (dom, log) = open(&browser, &page, "", None);
    assert!(dom.contains("data-ready=\"yes\""), "the script ran: {log}");
    assert_eq!(console_errors(&log), Vec::<&str>::new(), "{log}");
    // The matrix and the totals count what the JSON says.
    for (provider, family) in [
        ("dsh-sdk", "output"),
        ("acp", "teardown"),
        ("codex", "stage"),
    ] {
        let cell = [
            format!("data-provider=\"{provider}\""),
            format!("data-family=\"{family}\""),
        ];
        let cell: Vec<&str> = cell.iter().map(String::as_str).collect();
        for verdict in ["pass", "fail", "skip"] {
            assert_eq!(
                attr(&dom, &cell, &format!("data-{verdict}")),
                Some(cell_of(provider, family, verdict)),
                "{provider}/{family} {verdict}"
            );
        }
    }
    for (verdict, n) in [("pass", pass), ("fail", fail), ("skip", skip)] {
        let total = format!("data-verdict=\"{verdict}\"");
        assert_eq!(
            attr(&dom, &[&total, "data-count"], "data-count"),
            Some(n.to_string())
        );
    }
    assert_eq!(shown_rows(&dom), pass + fail + skip);
    // A failure opens with its requirement, its source, its diff, the subject's transcript and
    // the runtime's ledger.
    assert!(dom.contains("requirement (record): seed"), "{dom}");
    assert!(
        dom.contains("<span class=\"del\">"),
        "a rendered diff: {dom}"
    );
    assert!(dom.contains("subject transcript (run "), "{dom}");
    assert!(dom.contains("runtime ledger:"), "{dom}");
    // Every check is listed with its requirement; the one that failed names its cases.
    assert_eq!(
        attr(&dom, &["data-check=\"contract.bound\""], "data-failed").as_deref(),
        Some("0")
    );
    assert_ne!(
        attr(
            &dom,
            &["<tr", "data-check=\"expect.output\""],
            "data-failed"
        )
        .as_deref(),
        Some("0")
    );

    // The failures grouped by cause come first, as the JSON groups them; a cause's link lists
    // exactly its runs.
    let causes = report["causes"].as_array().unwrap();
    assert!(!causes.is_empty());
    assert_eq!(
        attr(&dom, &["id=\"causes\""], "id").as_deref(),
        Some("causes")
    );
    assert!(dom.find("id=\"causes\"").unwrap() < dom.find("id=\"matrix\"").unwrap());
    assert_eq!(dom.matches("data-cause=\"").count(), causes.len());
    let first = causes[0]["runs"].as_array().unwrap().len();
    assert_eq!(
        attr(&dom, &["data-cause=\"1\""], "data-runs"),
        Some(first.to_string())
    );
    let (dom, _) = open(&browser, &page, "cause=1&status=fail", None);
    assert_eq!(shown_rows(&dom), first);

    // The filter in the address hides every passing case.
    let (dom, _) = open(&browser, &page, "status=fail", None);
    assert_eq!(shown_rows(&dom), fail);
    assert_eq!(
        attr(&dom, &["id=\"shown\""], "data-count"),
        Some(fail.to_string())
    );
    let background_failures = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "fail" && c["mode"] == "background")
        .count();
    let (dom, _) = open(&browser, &page, "status=fail&mode=background", None);
    assert_eq!(shown_rows(&dom), background_failures);
    let (dom, _) = open(&browser, &page, "q=nothing-matches-this", None);
    assert_eq!(shown_rows(&dom), 0);
    // A filter value no case has says so in its select, rather than "every provider".
    let (dom, _) = open(&browser, &page, "provider=nonexistent", None);
    assert_eq!(shown_rows(&dom), 0);
    assert!(
        dom.contains("nonexistent (no such provider: matches nothing)"),
        "{dom}"
    );

    // For a person to look at: under target/, never in the repository.
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    let _ = std::fs::remove_file(&png);
    open(&browser, &page, "status=fail", Some(&png));
    assert!(png.is_file(), "a screenshot at {}", png.display());
    eprintln!("screenshot of the HTML report: {}", png.display());
}

#[test]
fn a_subjects_markup_in_the_report_stays_text() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let subject = defective(&["partial-from-chunks-only"]);
    run(&[
        "--filter",
        "dsh-sdk/output/",
        "--subject",
        &subject,
        "--json",
        json.to_str().unwrap(),
    ]);
    // What a hostile subject could make a report hold, wherever it holds subject text.
    let hostile = "<img src=x onerror=\"document.documentElement.dataset.pwned='img'\"><script>document.documentElement.dataset.pwned='script'</script></script><script>document.documentElement.dataset.pwned='break-out'</script>";
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    report["subject"] = hostile.into();
    for c in report["cases"].as_array_mut().unwrap() {
        if c["verdict"] == "fail" {
            c["findings"][0]["message"] = format!("first line {hostile}\nsecond {hostile}").into();
            c["detail"] = hostile.into();
        }
    }
    std::fs::write(&json, report.to_string()).unwrap();
    let html = dir.path().join("html");
    let out = conform()
        .args(["report", "html"])
        .arg(&json)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let (dom, log) = open(&browser, &html.join("index.html"), "status=fail", None);
    assert!(dom.contains("data-ready=\"yes\""), "the script ran: {log}");
    assert!(!dom.contains("data-pwned"), "markup ran: {dom}");
    assert!(
        dom.contains("&lt;img src=x onerror="),
        "shown as text: {dom}"
    );
}

#[test]
fn a_merged_partitioned_run_opens_with_every_shards_cases() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| dir.path().join(format!("shard-{k}.json")))
        .collect();
    for (k, file) in shards.iter().enumerate() {
        let (code, out) = run(&[
            "--filter",
            "acp/stop/",
            "--partition",
            &format!("{}/2", k + 1),
            "--json",
            file.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{out}");
    }
    let html = dir.path().join("html");
    let out = conform()
        .args(["report", "html"])
        .args(&shards)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let passed: usize = shards
        .iter()
        .map(|f| {
            let r: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            count(&r, "pass")
        })
        .sum();
    let (dom, log) = open(&browser, &html.join("index.html"), "", None);
    assert_eq!(console_errors(&log), Vec::<&str>::new(), "{log}");
    assert_eq!(
        attr(&dom, &["data-verdict=\"pass\"", "data-count"], "data-count"),
        Some(passed.to_string())
    );
    assert_eq!(shown_rows(&dom), passed);
    assert!(
        dom.contains("shard-1.json") && dom.contains("shard-2.json"),
        "{dom}"
    );
}

#[test]
fn the_page_tells_what_changed_since_the_previous_run_with_a_history_and_as_text() {
    // Hand-made reports (no suite runs): a case fixed, one newly failing with a cause whose
    // pattern holds markup, and a history of three reports.
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let hostile = "<img src=x onerror=\"document.documentElement.dataset.pwned='img'\">";
    let report = |when: &str, a: &str, b: &str| {
        let case = |id: &str, verdict: &str| {
            serde_json::json!({"id": id, "mode": "foreground", "provider": "acp", "verdict": verdict,
                // Each case fails for a cause of its own: b's is new, a's gone.
                "causePatterns": (verdict == "fail").then(|| serde_json::json!([{"check": "contract.output", "pattern": format!("{id} {hostile}")}]))})
        };
        serde_json::json!({"subject": "ref", "generatedAt": when,
            "cases": [case("acp/stop/a", a), case("acp/output/b", b)]})
    };
    let files: Vec<PathBuf> = [
        ("2026-01-01", "fail", "pass"),
        ("2026-01-02", "fail", "pass"),
        ("2026-01-03", "pass", "fail"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (when, a, b))| {
        let f = dir.path().join(format!("r{i}.json"));
        std::fs::write(&f, report(when, a, b).to_string()).unwrap();
        f
    })
    .collect();
    let html = dir.path().join("html");
    let out = conform()
        .args(["report", "html", "--compare"])
        .arg(&files[0])
        .arg("--compare")
        .arg(&files[1])
        .arg(&files[2])
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let (dom, log) = open(&browser, &html.join("index.html"), "", None);
    assert!(dom.contains("data-ready=\"yes\""), "the script ran: {log}");
    assert!(console_errors(&log).is_empty(), "{log}");
    let since = &dom[dom.find("id=\"since-previous\"").expect(&dom)..];
    let since = &since[..since.find("</section>").unwrap()];
    let history = &since[since.find("id=\"history\"").expect(since)..];
    assert_eq!(
        history[..history.find("</table>").unwrap()]
            .matches("<tr data-failed=\"1\">")
            .count(),
        3,
        "{since}"
    );
    assert!(
        since.contains("<a href=\"#case=acp/stop/a@foreground\">acp/stop/a (foreground)</a>"),
        "{since}"
    );
    assert!(since.contains("id=\"since-new\""), "{since}");
    assert!(!dom.contains("data-pwned"), "markup ran: {dom}");
    assert!(
        since.contains("[contract.output] acp/output/b &lt;img src=x onerror="),
        "{since}"
    );
    assert!(since.contains("data-change=\"gone\""), "{since}");
}
