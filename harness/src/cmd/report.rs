//! `conform report merge`: one report, one JUnit file and one exit code from the shards'.
//! `conform report html`: the HTML report of one run's JSON report, or of shards' merged.

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::cmd::output::{ReportFile, out};
use crate::cmd::{Error, code};
use crate::report::{self, terminal};
use crate::suite::exit;

pub fn exec(args: ReportArgs) -> Result<ExitCode, Error> {
    if args.action == "html" {
        return html(&args);
    }
    let merged = crate::report::merge::merge_files(&args.reports)
        .map_err(|e| Error::Usage(e.to_string()))?;
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
        on: report::style::colour_for(args.output.color, &std::io::stdout()),
    };
    // What `conform run` prints of one run, of the shards' merged.
    out(&paint.report(&terminal::escape_controls(&report::human(&merged, shape))))?;
    Ok(code(
        merged["exitCode"].as_i64().unwrap_or(exit::ERROR as i64) as i32,
    ))
}

/// The page of one report as it is, or of the shards' merged; exit 0 once it is written.
fn html(args: &ReportArgs) -> Result<ExitCode, Error> {
    let dir = args.out.as_deref().expect("clap requires -o for html");
    let report = match args.reports.as_slice() {
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
    let page = crate::report::html::write(dir, &report).map_err(|source| Error::Write {
        path: dir.to_owned(),
        source,
    })?;
    println!("report: {}", page.display());
    Ok(code(exit::PASS))
}
