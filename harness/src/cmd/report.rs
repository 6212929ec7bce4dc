//! `conform report merge`: one report, one JUnit file and one exit code from the shards'.

use std::process::ExitCode;

use crate::cli::ReportArgs;
use crate::cmd::output::{ReportFile, out};
use crate::cmd::{Error, code};
use crate::report::{self, terminal};
use crate::suite::exit;

pub fn exec(args: ReportArgs) -> Result<ExitCode, Error> {
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
    out(&terminal::escape_controls(&report::summary_from_json(
        &merged,
    )))?;
    Ok(code(
        merged["exitCode"].as_i64().unwrap_or(exit::ERROR as i64) as i32,
    ))
}
