//! `conform report merge`: one report, one JUnit file and one exit code from the shards'.
//! `conform report html`: the HTML report of one run's JSON report, or of shards' merged.
//! Either compared with previous reports where asked (`--compare`).

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::cmd::output::{ReportFile, out};
use crate::cmd::{Error, code};
use crate::report::{self, compare, terminal};
use crate::suite::exit;

pub fn exec(args: ReportArgs) -> Result<ExitCode, Error> {
    if args.action == "html" {
        return html(&args);
    }
    let mut merged = crate::report::merge::merge_files(&args.reports)
        .map_err(|e| Error::Usage(e.to_string()))?;
    let comparison = match args.compare.as_slice() {
        [] => None,
        [one] => Some(
            compare::load(one)?
                .attach_to(&mut merged)
                .map_err(|e| Error::Usage(e.to_string()))?,
        ),
        _ => {
            return Err(Error::Usage(
                "`report merge` compares with one report: give --compare once (`report html` draws a history of several)".to_owned(),
            ));
        }
    };
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&merged).expect("json");
        ReportFile::open(path)?.write(json.as_bytes())?;
    }
    if let Some(path) = &args.junit {
        let xml = report::junit_from_json(&merged)?;
        ReportFile::open(path)?.write(xml.as_bytes())?;
    }
    let shape = report::human::Shape {
        verbose: false,
        failure_output: args.output.failure_output,
        final_status_level: args.output.final_status_level,
    };
    let paint = report::style::Paint {
        on: report::style::colour_for(args.output.color, std::io::stdout().is_terminal()),
    };
    // What `conform run` prints of one run, of the shards' merged.
    let mut human = report::human(&merged, shape);
    if let Some(comparison) = &comparison {
        human.push_str(&comparison.render());
    }
    out(&paint.report(&terminal::escape_controls(&human)))?;
    Ok(code(
        merged["exitCode"].as_i64().unwrap_or(exit::ERROR as i64) as i32,
    ))
}

/// The page of one report as it is, or of the shards' merged; exit 0 once it is written.
fn html(args: &ReportArgs) -> Result<ExitCode, Error> {
    let dir = args.out.as_deref().expect("clap requires -o for html");
    let mut report = match args.reports.as_slice() {
        [one] => {
            let text = std::fs::read_to_string(one).map_err(|source| Error::Write {
                path: one.clone(),
                source,
            })?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| Error::Usage(format!("{}: not a JSON report: {e}", one.display())))?;
            if v["partition"].is_string() {
                crate::report::merge::merge(vec![(one.clone(), v)])
                    .map_err(|e| Error::Usage(e.to_string()))?
            } else {
                v
            }
        }
        many => crate::report::merge::merge_files(many).map_err(|e| Error::Usage(e.to_string()))?,
    };
    with_history(args, &mut report)?;
    let page = crate::report::html::write(dir, &report).map_err(|source| Error::Write {
        path: dir.to_owned(),
        source,
    })?;
    println!("report: {}", page.display());
    Ok(code(exit::PASS))
}

/// `--compare OLD.json…` (oldest first): the report compared with the last of them
/// (`comparedWith`), and a row per report, these and it (`history`), for the page.
fn with_history(args: &ReportArgs, report: &mut serde_json::Value) -> Result<(), Error> {
    let previous = args
        .compare
        .iter()
        .map(|p| compare::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(last) = previous.last() else {
        return Ok(());
    };
    let name = match args.reports.as_slice() {
        [one] => one.display().to_string(),
        shards => format!("{} shards merged", shards.len()),
    };
    let not_a_report = |e| Error::Usage(format!("{name}: not a conform JSON report: {e}"));
    let history = compare::history::of(&previous, &name, report).map_err(not_a_report)?;
    last.attach_to(report).map_err(not_a_report)?;
    report["history"] = history;
    Ok(())
}
