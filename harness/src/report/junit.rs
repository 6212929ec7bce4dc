//! The JUnit XML report, made from the JSON one.

use std::fmt::Write as _;

/// A provider's test suite, with properties naming what it was judged against: the catalog, what
/// its fakes spoke, and each real peer that ran in their place with its version.
fn products(report: &serde_json::Value, provider: &str) -> quick_junit::TestSuite {
    let mut suite = quick_junit::TestSuite::new(provider);
    if let Some(digest) = report["catalog"].as_str() {
        suite.add_property(("catalog", digest));
    }
    if let Some(spoken) = report["fakesSpeak"][provider].as_str() {
        suite.add_property(("fakes speak", spoken));
    }
    for (name, peer) in report["realPeers"].as_object().into_iter().flatten() {
        if peer["provider"] == provider {
            let version = peer["version"].as_str().unwrap_or("(no version given)");
            suite.add_property((format!("real peer {name}").as_str(), version));
        }
    }
    suite
}

/// JUnit XML for CI systems: one test suite per provider, one test case per scenario × mode.
/// A subject failure is a `failure`, a harness fault an `error`, a known failure (baseline) a
/// `skipped` with its reason; the description carries the same detail as the human report
/// (checks, transcripts, stderr tail). Made from the JSON report, so a merged report
/// (`conform report merge`) gets the same XML.
pub fn junit_from_json(report: &serde_json::Value) -> Result<String, quick_junit::SerializeError> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let harness_fault = |findings: &serde_json::Value| {
        findings
            .as_array()
            .is_some_and(|fs| fs.iter().any(|f| f["blame"] == "harness"))
    };
    let mut out = Report::new("conform");
    out.set_time(std::time::Duration::from_millis(
        report["elapsedMs"].as_u64().unwrap_or_default(),
    ));
    let mut suites: std::collections::BTreeMap<String, TestSuite> = Default::default();
    for c in report["cases"].as_array().into_iter().flatten() {
        let provider = text(&c["provider"]);
        let status = match c["verdict"].as_str().unwrap_or_default() {
            "pass" => TestCaseStatus::success(),
            "skip" | "interrupted" => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(text(&c["skipReason"]));
                s
            }
            "known" => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "known failure (baseline): {}",
                    text(&c["baselineReason"])
                ));
                s.set_description(text(&c["detail"]));
                s
            }
            _ => {
                let kind = if harness_fault(&c["findings"]) {
                    NonSuccessKind::Error
                } else {
                    NonSuccessKind::Failure
                };
                let mut s = TestCaseStatus::non_success(kind);
                if let Some(first) = c["findings"].as_array().and_then(|f| f.first()) {
                    s.set_message(format!(
                        "[{}] {}",
                        text(&first["check"]),
                        text(&first["message"]).lines().next().unwrap_or_default()
                    ));
                    s.set_type(text(&first["check"]));
                }
                s.set_description(text(&c["detail"]));
                s
            }
        };
        let mut case = TestCase::new(format!("{} ({})", text(&c["id"]), text(&c["mode"])), status);
        case.set_classname(provider.clone());
        if let Some(ms) = c["elapsedMs"].as_u64() {
            case.set_time(std::time::Duration::from_millis(ms));
        }
        suites
            .entry(provider.clone())
            .or_insert_with(|| products(report, &provider))
            .add_test_case(case);
    }
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    let stragglers = report["stragglers"].as_array().cloned().unwrap_or_default();
    let stale: Vec<&serde_json::Value> = report["baseline"]["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["status"] == "stale")
        .collect();
    if !findings.is_empty() || !stragglers.is_empty() || !stale.is_empty() {
        let mut s = TestCaseStatus::non_success(if harness_fault(&report["findings"]) {
            NonSuccessKind::Error
        } else {
            NonSuccessKind::Failure
        });
        let mut detail = String::new();
        for f in &findings {
            let _ = writeln!(detail, "[{}] {}", text(&f["check"]), text(&f["message"]));
        }
        if !stragglers.is_empty() {
            let names: Vec<String> = stragglers.iter().map(text).collect();
            let _ = writeln!(
                detail,
                "[process.settled] processes left behind after the suite (killed): {}",
                names.join(", ")
            );
        }
        for e in stale {
            let _ = writeln!(
                detail,
                "[baseline] stale entry `{}` ({}:{}): {}",
                text(&e["id"]),
                text(&report["baseline"]["file"]),
                e["line"],
                text(&e["why"])
            );
        }
        s.set_message(detail.lines().next().unwrap_or_default().to_owned());
        s.set_description(detail);
        let mut suite = TestSuite::new("suite");
        suite.add_test_case(TestCase::new("the suite as a whole", s));
        suites.insert("~suite".to_owned(), suite);
    }
    out.add_test_suites(suites.into_values());
    out.to_string()
}
