//! The HTML report in a real browser: headless Chromium (Debian's `chromium`) opens the page of
//! a run with failures, and of a merged partitioned run, offline, and runs its script without a
//! console error; the matrix counts what the JSON report says, a filter in the address hides
//! what it should, a failure opens with its requirement and its diff, and a subject's markup
//! stays text. Driven over the DevTools protocol (`common::cdp`), the page opens on what
//! failed: its causes as the JSON counts them, a case opened by its address and by a changed
//! one, a matrix cell reached by Tab and opened by Enter, controls with names, and no sideways
//! scroll at 400 px wide, even from a megabyte-long line. Skipped, saying why, where Chromium is
//! not installed (`ci/check` installs it). A screenshot for review goes under `target/`, never
//! into the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::cdp::{Key, Page};
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
    // The whole catalog, against a reference with three seeded defects (the last fails most of
    // Codex's catalog: hundreds of failures).
    let subject = defective(&[
        "partial-from-chunks-only",
        "no-sigkill-rung",
        "codex-strict-notifications",
    ]);
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

    opens_on_what_failed(&browser, &page, &report);

    // For a person to look at: under target/, never in the repository.
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    let _ = std::fs::remove_file(&png);
    open(&browser, &page, "status=fail", Some(&png));
    assert!(png.is_file(), "a screenshot at {}", png.display());
    eprintln!("screenshot of the HTML report: {}", png.display());
}

/// The page's address with `hash`.
fn address(page: &Path, hash: &str) -> String {
    format!("file://{}#{hash}", page.display())
}

/// A run's address on the page, `<id>@<mode>`.
fn run_key(case: &serde_json::Value) -> String {
    format!(
        "{}@{}",
        case["id"].as_str().unwrap(),
        case["mode"].as_str().unwrap()
    )
}

/// A JavaScript expression for the opened failure of run `key`.
fn failure_of(key: &str) -> String {
    format!(
        "[...document.querySelectorAll('details.failure')].find((d) => d.dataset.run === {})",
        serde_json::to_string(key).unwrap()
    )
}

/// Whether the failure of run `key` is open and its summary in the window, uncovered (what
/// the page shows at the summary's corner is the summary).
fn opened_in_view(page: &mut Page, key: &str) -> bool {
    page.eval(&format!(
        "(() => {{ const d = {}; if (!d || !d.open) return false; const s = d.querySelector('summary'); const r = s.getBoundingClientRect(); return s.contains(document.elementFromPoint(r.left + 4, r.top + 4)); }})()",
        failure_of(key)
    )) == true
}

/// Whether the page scrolls sideways.
fn scrolls_sideways(page: &mut Page) -> bool {
    page.eval("document.documentElement.scrollWidth > document.documentElement.clientWidth") == true
}

/// The first failed case of `report` for which `pick` holds.
fn failed_case(
    report: &serde_json::Value,
    pick: impl Fn(&serde_json::Value) -> bool,
) -> &serde_json::Value {
    report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["verdict"] == "fail" && pick(c))
        .expect("such a failed case")
}

/// The page of a failing run, driven as a person would: what failed comes first, a case opens
/// by its address, a matrix cell from the keyboard, and nothing scrolls sideways at 400 px.
fn opens_on_what_failed(browser: &Path, html: &Path, report: &serde_json::Value) {
    let mut page = Page::launch(browser);
    page.open(&address(html, ""));
    assert_eq!(page.eval("document.documentElement.dataset.ready"), "yes");
    causes_first_then_the_matrix_then_the_failures(&mut page, report);
    a_case_opens_by_its_address(&mut page, html, report);
    a_matrix_cell_opens_from_the_keyboard(&mut page, html);
    nothing_scrolls_sideways_at_400_px(&mut page, html, report);
    assert_eq!(page.errors(), Vec::<String>::new());
}

fn causes_first_then_the_matrix_then_the_failures(page: &mut Page, report: &serde_json::Value) {
    let tops = page.eval(
        "['causes', 'matrix', 'cases'].map((id) => document.getElementById(id).getBoundingClientRect().top)",
    );
    let tops: Vec<f64> = tops
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_f64().unwrap())
        .collect();
    assert!(tops.is_sorted(), "causes, matrix, cases: {tops:?}");
    // Failures lead the cases.
    assert_eq!(
        page.eval("document.querySelector('tr.case').dataset.verdict"),
        "fail"
    );
    // The requirements are folded away: closed, their table not drawn.
    assert_eq!(
        page.eval(
            "(() => { const r = document.getElementById('requirements'); return [r.tagName, r.open, document.getElementById('requirement-table').checkVisibility()]; })()"
        ),
        serde_json::json!(["DETAILS", false, false])
    );
    // Each cause as the JSON counts it: its runs, each a link to its failure.
    let causes = report["causes"].as_array().unwrap();
    let drawn = page.eval(
        "[...document.querySelectorAll('#cause-list > li')].map((li) => [Number(li.dataset.runs), li.querySelectorAll('a[href^=\"#case=\"]').length, li.querySelector('summary').textContent])",
    );
    let drawn = drawn.as_array().unwrap();
    assert_eq!(drawn.len(), causes.len());
    for (cause, drawn) in causes.iter().zip(drawn) {
        let runs = cause["runs"].as_array().unwrap().len();
        assert_eq!(drawn[0], runs, "{drawn}");
        assert_eq!(drawn[1], runs, "{drawn}");
        assert!(
            drawn[2]
                .as_str()
                .unwrap()
                .starts_with(&format!("{runs} run(s) · ")),
            "{drawn}"
        );
    }
}

fn a_case_opens_by_its_address(page: &mut Page, html: &Path, report: &serde_json::Value) {
    // A snapshot failure: its diff drawn once, as a diff.
    let diffed =
        failed_case(report, |c| {
            c["findings"].as_array().unwrap().iter().any(|f| {
                f["check"] == "snapshot" && f["message"].as_str().unwrap().contains("\n+++ ")
            })
        });
    let key = run_key(diffed);
    page.open(&address(html, &format!("case={key}")));
    assert!(opened_in_view(page, &key), "{key} opened by its address");
    let diff = page.eval(&format!(
        "(() => {{ const d = {}; return [d.textContent.split('+++ this run').length - 1, d.querySelectorAll('pre.diff span.add, pre.diff span.del').length]; }})()",
        failure_of(&key)
    ));
    assert_eq!(diff[0], 1, "the diff once: {diff}");
    assert!(diff[1].as_u64().unwrap() > 0, "+/- lines styled: {diff}");

    // A background failure by a changed address: settling and delivery drawn as timelines.
    let timed = failed_case(report, |c| {
        c["mode"] == "background"
            && c["delivery"]["timeline"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
            && c["settle"]["exits"]
                .as_array()
                .is_some_and(|e| !e.is_empty())
    });
    let key = run_key(timed);
    page.change_hash(&format!("case={key}"));
    assert!(opened_in_view(page, &key), "{key} opened by hashchange");
    let drawn = page.eval(&format!(
        "(() => {{ const d = {}; return [d.textContent, [...d.querySelectorAll('ol.timeline')].map((ol) => [...ol.children].map((li) => [li.querySelector('.at').textContent, Number(li.dataset.at)]))]; }})()",
        failure_of(&key)
    ));
    let text = drawn[0].as_str().unwrap();
    assert!(
        !text.contains("\"goneAtMs\"") && !text.contains("\"atMs\""),
        "no JSON: {text}"
    );
    // Settling, then delivery: each at least its events, in order, each with its time.
    let timelines = drawn[1].as_array().unwrap();
    assert_eq!(timelines.len(), 2, "{timelines:?}");
    let least = [
        timed["settle"]["exits"].as_array().unwrap().len(),
        timed["delivery"]["timeline"].as_array().unwrap().len(),
    ];
    for (events, least) in timelines.iter().zip(least) {
        let events = events.as_array().unwrap();
        assert!(events.len() >= least, "{events:?}");
        let times: Vec<f64> = events.iter().map(|e| e[1].as_f64().unwrap()).collect();
        assert!(times.is_sorted(), "in order: {events:?}");
        assert!(
            events
                .iter()
                .all(|e| e[0].as_str().unwrap().ends_with(" ms"))
        );
    }

    // A cause's run, followed as a link.
    let first_run = &report["causes"][0]["runs"][0];
    let key = run_key(first_run);
    page.eval(
        "new Promise((done) => { addEventListener('hashchange', () => done(), { once: true }); document.querySelector('#cause-list a[href^=\"#case=\"]').click(); })",
    );
    assert!(opened_in_view(page, &key), "{key} from its cause");

    // A case the report does not have says so.
    page.change_hash("case=no/such/case@foreground");
    assert_eq!(
        page.eval("document.getElementById('case-missing').hidden"),
        false
    );
    assert!(
        page.eval("document.getElementById('case-missing').textContent")
            .as_str()
            .unwrap()
            .contains("No case no/such/case@foreground")
    );
}

fn a_matrix_cell_opens_from_the_keyboard(page: &mut Page, html: &Path) {
    page.open(&address(html, ""));
    let in_matrix = "!!document.activeElement.closest('#matrix')";
    let mut tabs = 0;
    while page.eval(in_matrix) != true {
        assert!(tabs < 200, "no matrix cell is reached by Tab");
        page.press(Key::Tab);
        tabs += 1;
    }
    let cell = page.eval("Object.assign({}, document.activeElement.closest('td').dataset)");
    let name = page.accessible_name("document.activeElement");
    assert!(
        name.starts_with(&format!(
            "{} on {}: ",
            cell["family"].as_str().unwrap(),
            cell["provider"].as_str().unwrap()
        )),
        "{name}"
    );
    page.press(Key::Enter);
    let hash = page.eval("Object.fromEntries(new URLSearchParams(location.hash.slice(1)))");
    assert_eq!(hash["provider"], cell["provider"]);
    assert_eq!(hash["family"], cell["family"]);
    assert_eq!(
        page.eval("document.getElementById('shown').dataset.count"),
        cell["total"]
    );
    // The search box and the filters say what they are.
    assert_eq!(
        page.accessible_name("document.getElementById('filter-q')"),
        "Search cases"
    );
    assert_eq!(
        page.accessible_name("document.getElementById('filter-status')"),
        "filter by status"
    );
}

fn nothing_scrolls_sideways_at_400_px(page: &mut Page, html: &Path, report: &serde_json::Value) {
    page.resize(400, 800);
    page.open(&address(html, ""));
    assert!(!scrolls_sideways(page), "the page at 400 px");
    // Every failure and the requirements opened.
    page.eval("document.querySelectorAll('details').forEach((d) => { d.open = true; }); true");
    assert!(!scrolls_sideways(page), "opened at 400 px");
    let key = run_key(failed_case(report, |_| true));
    page.change_hash(&format!("case={key}"));
    assert!(opened_in_view(page, &key));
    assert!(!scrolls_sideways(page));
    // For a person to look at: a failure at a phone's width, under target/.
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report-400px.png");
    page.screenshot(&png);
    eprintln!("screenshot of a failure at 400 px: {}", png.display());
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
fn a_megabyte_long_line_scrolls_nothing_sideways_at_400_px() {
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
    // One unbroken line of a megabyte wherever a subject's text can stand.
    let line = "x".repeat(1 << 20);
    let mut report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    report["subject"] = line.clone().into();
    report["causes"][0]["patterns"][0]["pattern"] = line.clone().into();
    let failed = report["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["verdict"] == "fail")
        .unwrap();
    failed["title"] = line.clone().into();
    failed["findings"][0]["message"] = format!("{line}\n--- a\n+++ b\n-{line}\n+{line}").into();
    failed["detail"] =
        format!("\n━━ x\n   runtime: {line}\n  subject transcript (run r1):\n    {line}\n").into();
    failed["modelVisible"] = line.clone().into();
    failed["settle"]["leftovers"] = serde_json::json!([line]);
    let key = run_key(failed);
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

    let mut page = Page::launch(&browser);
    page.resize(400, 800);
    page.open(&address(&html.join("index.html"), &format!("case={key}")));
    assert!(opened_in_view(&mut page, &key), "{key}");
    assert!(
        !scrolls_sideways(&mut page),
        "the megabyte line's case at 400 px"
    );
    page.eval("document.querySelectorAll('details').forEach((d) => { d.open = true; }); true");
    assert!(!scrolls_sideways(&mut page), "everything opened at 400 px");
    assert_eq!(page.errors(), Vec::<String>::new());
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

#[test]
fn the_page_and_the_terminal_count_a_baseline_alike_cases_apart_from_entries() {
    // A leaking host fails some cases on two checks: each check is an entry of the baseline,
    // so entries outnumber the cases they make known. Both reports say both numbers, the same.
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known.toml");
    let html = dir.path().join("html");
    let subject = defective(&["leak-raw-error", "max-tokens-as-error"]);
    let select = ["--filter", "acp/stop/", "--subject", &subject];
    let mut write = select.to_vec();
    write.extend(["--write-baseline", known.to_str().unwrap()]);
    run(&write);
    let mut read = select.to_vec();
    read.extend([
        "--baseline",
        known.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    let (code, out) = run(&read);
    assert_eq!(code, Some(0), "{out}");
    let entries = std::fs::read_to_string(&known)
        .unwrap()
        .matches("[[known]]")
        .count();
    let cases: usize = out
        .lines()
        .last()
        .and_then(|l| l.split(" failed, ").nth(1)?.split(' ').next()?.parse().ok())
        .expect(&out);
    assert!(
        entries > cases && cases > 0,
        "{entries} entries, {cases} cases\n{out}"
    );
    assert!(
        out.contains(&format!(
            ": {entries} entr(ies) matched a failure, 0 stale, 0 not run here; {cases} failed case(s) known by them"
        )),
        "{out}"
    );
    let (dom, log) = open(&browser, &html.join("index.html"), "", None);
    assert!(console_errors(&log).is_empty(), "{log}");
    assert!(
        dom.contains(&format!(
            "0 new failure(s); {cases} failed case(s) known by {entries} matched entr(ies); 0 stale"
        )),
        "{dom}"
    );
}
