//! The human report, read from the JSON report so that `conform run` and `conform report merge`
//! print the same thing: the causes of failure first, then where the subject stands (a matrix
//! of families by provider; `-v`: a row for every case), each failure (its block, or past
//! [`COMPACT_OVER`] failures its first check), what the suite as a whole found, the baseline,
//! the closing list and the counts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};
use serde_json::Value;

use crate::report::detail::{FOLD_BYTES, folded, indent};
use crate::report::style::{FailureOutput, FinalStatusLevel};

mod causes;

/// What the report shows, as the flags say.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    /// `-v`: every case as a row, every observed case's block, lines whole.
    pub verbose: bool,
    pub failure_output: FailureOutput,
    pub final_status_level: FinalStatusLevel,
}

/// How many skip reasons the default report lists (the most frequent first).
const SKIP_REASONS: usize = 5;

/// Past this many failed runs the default report shows each by its first failed check only
/// (a CI log of hundreds of failures stays readable; the causes above say the rest).
pub(super) const COMPACT_OVER: usize = 40;

pub(super) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

pub(super) fn cases(report: &Value) -> &[Value] {
    report["cases"].as_array().map_or(&[], Vec::as_slice)
}

pub(super) fn count(report: &Value, verdict: &str) -> usize {
    cases(report)
        .iter()
        .filter(|c| c["verdict"] == verdict)
        .count()
}

/// The whole human report of a JSON report (one run's, or shards' merged).
pub fn human(report: &Value, shape: Shape) -> String {
    let failed = count(report, "fail");
    // Hundreds of failures are read by their causes: each cause then shows its first run in
    // full, and every failed run is named in one line.
    let compact = !shape.verbose && failed > COMPACT_OVER;
    let representatives = compact && shape.failure_output.at_the_end();
    let mut out = causes::section(report, representatives);
    if !out.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "subject: {}", text(&report["subject"]));
    out.push_str(&header(report));
    if shape.verbose {
        out.push_str(&table(report));
    } else {
        out.push_str(&matrix(report));
    }
    out.push_str(&failures(report, shape, compact));
    out.push_str(&upstream_section(report));
    out.push_str(&suite_section(report));
    out.push_str(&baseline_section(report));
    if !shape.verbose {
        out.push_str(&closing_list(report, shape));
    }
    out.push_str(&closing(report));
    out
}

/// Each case's part in the middle of the report: a failure's block (unless `compact` or
/// `--failure-output` says not), a passing case's advisories, and the notes of its snapshot
/// and of its run alone.
fn failures(report: &Value, shape: Shape, compact: bool) -> String {
    let mut out = String::new();
    let failed = count(report, "fail");
    let shown = shape.failure_output.at_the_end() && !compact;
    if failed > 0 && !shown {
        let why = match shape.failure_output {
            FailureOutput::Never => "--failure-output never: no failure's detail below",
            FailureOutput::Immediate => {
                "--failure-output immediate: each failure's detail was printed as it failed"
            }
            _ => {
                "each cause above shows its first run in full, and the list below names every failed run"
            }
        };
        let _ = writeln!(
            out,
            "\n{failed} failed run(s): {why}; -v prints every check, transcript and ledger, and --json / --html keep them whole."
        );
    }
    let fold = (!shape.verbose).then_some(FOLD_BYTES);
    for c in cases(report) {
        let fail = c["verdict"] == "fail";
        if (fail && shown) || (shape.verbose && c["detail"].is_string()) {
            out.push_str(&folded_block(text(&c["detail"]), fold));
        } else if !fail && has(&c["advisories"]) {
            out.push_str(&advisories(c));
        }
        for note in [&c["snapshotNote"], &c["rerunAlone"]] {
            if let Some(note) = note.as_str() {
                let _ = writeln!(out, "\n{} ({}): {note}", text(&c["id"]), text(&c["mode"]));
            }
        }
    }
    out
}

fn has(list: &Value) -> bool {
    list.as_array().is_some_and(|l| !l.is_empty())
}

/// A case's block with each line past `fold` bytes cut (`-v` and the JSON keep them whole).
pub(super) fn folded_block(block: &str, fold: Option<usize>) -> String {
    let mut out = String::with_capacity(block.len());
    for line in block.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        out.push_str(&folded(body, fold));
        out.push_str(end);
    }
    out
}

/// Every case counted by family and provider ([`super::matrix`]), one row per family.
fn matrix(report: &Value) -> String {
    let m = super::matrix::Matrix::of_json(cases(report));
    if m.rows.is_empty() {
        return String::new();
    }
    let mut table = Table::new();
    table.load_preset(UTF8_BORDERS_ONLY);
    let mut head = vec!["family".to_owned()];
    head.extend(m.providers.iter().cloned());
    table.set_header(head);
    for (family, cells) in &m.rows {
        let mut row = vec![family.clone()];
        row.extend(
            m.providers
                .iter()
                .map(|p| cells.get(p).map(|c| c.cell()).unwrap_or_default()),
        );
        table.add_row(row);
    }
    format!(
        "{table}
(cases passed; ✗ failed, ~ known from the baseline, − skipped, ! interrupted; -v lists every case)
"
    )
}

/// What closes the default report, as `--final-status-level` says: the failed and known
/// cases by name, why cases were skipped, or every case as a row.
fn closing_list(report: &Value, shape: Shape) -> String {
    match shape.final_status_level {
        FinalStatusLevel::None => String::new(),
        FinalStatusLevel::Fail => by_name(report),
        FinalStatusLevel::Skip => by_name(report) + &skips(report),
        FinalStatusLevel::All => table(report),
    }
}

/// The failed and known cases by name, one line each with the first failed check.
fn by_name(report: &Value) -> String {
    let mut out = String::new();
    let (failed, known) = (count(report, "fail"), count(report, "known"));
    if failed + known == 0 {
        return out;
    }
    let heading = match (failed, known) {
        (f, 0) => format!("{f} case(s) failed:"),
        (0, k) => format!("{k} case(s) failed as the baseline knows them:"),
        (f, k) => format!("{f} case(s) failed, and {k} as the baseline knows them:"),
    };
    let _ = writeln!(out, "\n{heading}");
    for c in cases(report)
        .iter()
        .filter(|c| matches!(c["verdict"].as_str(), Some("fail" | "known")))
    {
        let check = c["findings"][0]["check"].as_str().unwrap_or("?");
        let (mark, note) = match c["verdict"].as_str() {
            Some("known") => ("~", " (known: in the baseline)"),
            _ => ("✗", ""),
        };
        let _ = writeln!(
            out,
            "  {mark} {} ({}) [{check}]{note}",
            text(&c["id"]),
            text(&c["mode"])
        );
    }
    if failed > 0 {
        let _ = writeln!(
            out,
            "(long transcript and ledger lines are folded above: `-v` prints them whole, `--json FILE` keeps them)"
        );
    }
    out
}

/// Why cases were skipped: the most frequent reasons with their counts.
fn skips(report: &Value) -> String {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cases(report).iter().filter(|c| c["verdict"] == "skip") {
        *reasons.entry(text(&c["skipReason"])).or_default() += 1;
    }
    if reasons.is_empty() {
        return String::new();
    }
    let mut reasons: Vec<(&str, usize)> = reasons.into_iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = String::from("\nskipped:\n");
    for (why, n) in reasons.iter().take(SKIP_REASONS) {
        let _ = writeln!(out, "  {n} × {why}");
    }
    if reasons.len() > SKIP_REASONS {
        let _ = writeln!(
            out,
            "  … and {} other reason(s) (-v lists every case)",
            reasons.len() - SKIP_REASONS
        );
    }
    out
}

/// What the subject was judged against: the catalog, the products the fakes spoke, the real
/// peers, how strictly; for a merged report, each shard.
fn header(report: &Value) -> String {
    let mut out = String::new();
    if let Some(line) = catalog_line(report) {
        let _ = writeln!(out, "{line}");
    }
    let speak: Vec<&str> = report["fakesSpeak"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .map(text)
        .collect();
    if !speak.is_empty() {
        let _ = writeln!(out, "fakes speak: {}", speak.join("; "));
    }
    let peers: Vec<String> = report["realPeers"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, p)| {
            format!(
                "{name} {}",
                p["version"]
                    .as_str()
                    .unwrap_or("(its manifest gives no version)")
            )
        })
        .collect();
    if !peers.is_empty() {
        let _ = writeln!(out, "real peers: {}", peers.join("; "));
    }
    let strictness = text(&report["strictness"]);
    if !strictness.is_empty() && strictness != crate::settings::Strictness::All.as_str() {
        let _ = writeln!(
            out,
            "strictness: {strictness} (failures of other requirements are advisories)"
        );
    }
    for s in report["shards"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  shard {} ({}): exit {}, {:.1} s",
            text(&s["partition"]),
            text(&s["file"]),
            s["exitCode"],
            s["elapsedMs"].as_u64().unwrap_or_default() as f64 / 1000.0
        );
    }
    out
}

/// The header's `catalog:` line: the catalog that judged the run, or that a merge's shards
/// disagree (`None`: shards written before reports named their catalog name none).
fn catalog_line(report: &Value) -> Option<String> {
    if let Some(digest) = report["catalog"].as_str() {
        return Some(format!("catalog: {digest}"));
    }
    let shards_name_one = report["shards"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| s["catalog"].is_string());
    shards_name_one.then(|| "catalog: the shards ran different ones".to_owned())
}

/// One row per case: its verdict, time and first failed check.
fn table(report: &Value) -> String {
    let mut table = Table::new();
    table.load_preset(UTF8_BORDERS_ONLY);
    table.set_header(["case", "mode", "result", "ms", "first failed check"]);
    for c in cases(report) {
        let first = text(&c["findings"][0]["check"]).to_owned();
        let (result, check) = match text(&c["verdict"]) {
            "pass" => ("pass", String::new()),
            "fail" => ("FAIL", first),
            "known" => ("known", format!("{first} (baseline)")),
            "skip" => ("skip", text(&c["skipReason"]).to_owned()),
            _ => ("interrupted", text(&c["skipReason"]).to_owned()),
        };
        let ms = c["elapsedMs"].as_u64().map(|ms| ms.to_string());
        table.add_row([
            text(&c["id"]).to_owned(),
            text(&c["mode"]).to_owned(),
            result.to_owned(),
            ms.unwrap_or_default(),
            check,
        ]);
    }
    format!("{table}\n")
}

/// Upstream codes newer than the subject's pin, as the subject shows them.
fn upstream_section(report: &Value) -> String {
    let upstream: Vec<String> = cases(report)
        .iter()
        .filter(|c| c["upstream"].is_object())
        .map(|c| {
            let u = &c["upstream"];
            format!(
                "  {} ({}): category `{}` — {}",
                text(&u["code"]),
                text(&c["mode"]),
                text(&u["shown"]),
                text(&u["note"])
            )
        })
        .collect();
    if upstream.is_empty() {
        return String::new();
    }
    format!(
        "\nupstream codes newer than the subject's pin, as the subject shows them:\n{}\n",
        upstream.join("\n")
    )
}

/// What belongs to the suite, not to a case: the settling mode, processes left behind, the
/// suite's own findings.
fn suite_section(report: &Value) -> String {
    let mut out = String::new();
    let cgroup = &report["cgroup"];
    match text(&cgroup["mode"]) {
        "on" => {
            let _ = writeln!(
                out,
                "\ncgroup mode: on (each runtime in a cgroup of its own under {})",
                text(&cgroup["dir"])
            );
        }
        "unavailable" => {
            let _ = writeln!(
                out,
                "\ncgroup mode: unavailable ({}); settling was judged from /proc alone",
                text(&cgroup["why"])
            );
        }
        _ => {}
    }
    let stragglers: Vec<&str> = report["stragglers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    if !stragglers.is_empty() {
        let _ = writeln!(
            out,
            "\nprocesses left behind after the suite (killed): {}",
            stragglers.join(", ")
        );
    }
    let findings = report["findings"].as_array().map_or(&[][..], Vec::as_slice);
    if !findings.is_empty() {
        let _ = writeln!(out, "\n━━ the suite");
        for f in findings {
            let _ = writeln!(
                out,
                "  ✗ [{}] {}",
                text(&f["check"]),
                indent(text(&f["message"]), "    ")
            );
        }
    }
    out
}

/// The baseline's part: how many of its entries matched a failure (and how many cases that
/// covers), how many pin their case's texts and how many of those changed, and every changed
/// and stale entry (each fails the run) with where it is written.
fn baseline_section(report: &Value) -> String {
    let b = &report["baseline"];
    if b.is_null() {
        return String::new();
    }
    let entries = b["entries"].as_array().map_or(&[][..], Vec::as_slice);
    let status = |s: &str| entries.iter().filter(|e| e["status"] == s).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nbaseline {}: {} entr(ies) matched a failure, {} stale, {} not run here; {} failed case(s) known by them",
        text(&b["file"]),
        // A known failure whose texts changed matched its failure too.
        status("matched")
            + entries
                .iter()
                .filter(|e| e["status"] == "changed" && e["kind"] != "refused")
                .count(),
        status("stale"),
        status("not-run"),
        count(report, "known"),
    );
    let pinned = entries.iter().filter(|e| e["texts"].is_string()).count();
    if pinned > 0 {
        let _ = writeln!(
            out,
            "  texts pinned by {pinned} entr(ies): {} as pinned, {} changed",
            entries
                .iter()
                .filter(|e| e["texts"].is_string())
                .filter(|e| e["status"] == "matched" || e["status"] == "refused")
                .count(),
            status("changed"),
        );
    }
    for e in entries.iter().filter(|e| e["status"] == "changed") {
        let _ = writeln!(
            out,
            "  ✗ changed: {}:{}: `{}` — {} → {} (its case fails: known {} changed)",
            text(&b["file"]),
            e["line"],
            text(&e["id"]),
            text(&e["texts"]),
            text(&e["textsNow"]),
            if e["kind"] == "refused" {
                "refusal"
            } else {
                "failure"
            },
        );
    }
    for e in entries.iter().filter(|e| e["status"] == "stale") {
        let _ = writeln!(
            out,
            "  ✗ stale: {}:{}: `{}` — {} (delete the entry)",
            text(&b["file"]),
            e["line"],
            text(&e["id"]),
            text(&e["why"])
        );
    }
    if let Some(warning) = b["catalogWarning"].as_str() {
        let _ = writeln!(out, "{warning}");
    }
    out
}

/// A passing case's advisories: what failed of requirements past `--strictness`.
fn advisories(c: &Value) -> String {
    let mut out = format!(
        "\n━━ {} ({}) — passed, with advisories\n",
        text(&c["id"]),
        text(&c["mode"])
    );
    for f in c["advisories"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "  ⚠ advisory [{}] {}",
            text(&f["check"]),
            indent(text(&f["message"]), "    ")
        );
        let _ = writeln!(
            out,
            "    requirement ({}, past --strictness): {}",
            text(&f["level"]),
            text(&f["source"])
        );
    }
    out
}

/// Why the suite stopped or tested nothing, if so, and the counts.
fn closing(report: &Value) -> String {
    let mut out = String::new();
    let findings = has(&report["findings"]);
    if let Some(signal) = report["interruptedBy"].as_str() {
        let _ = writeln!(
            out,
            "\ninterrupted by {signal}: the runs in flight were stopped and their processes killed; {} case(s) did not finish",
            count(report, "interrupted")
        );
    } else if let Some(why) = report["nothingTested"].as_str().filter(|_| !findings) {
        let _ = writeln!(out, "\n{why}");
    }
    let shards = report["shards"].as_array().map_or(0, Vec::len);
    let _ = writeln!(
        out,
        "\n{} passed, {} failed, {}{} skipped in {:.1} s{}",
        count(report, "pass"),
        count(report, "fail"),
        if report["baseline"].is_null() {
            String::new()
        } else {
            format!("{} known, ", count(report, "known"))
        },
        count(report, "skip"),
        report["elapsedMs"].as_u64().unwrap_or_default() as f64 / 1000.0,
        if shards > 0 {
            format!(" (merged from {shards} shards)")
        } else {
            String::new()
        }
    );
    out
}
