//! `conform list` (the scenarios a run would select, or with `--checks` every check) and
//! `conform schema` (the JSON Schemas of the scenario file and the subject protocol).

use std::process::ExitCode;

use crate::checks::Check;
use crate::cli::ListArgs;
use crate::cmd::Error;
use crate::cmd::output::out;
use crate::settings::default_dir;

pub fn exec(args: ListArgs) -> Result<ExitCode, Error> {
    if args.checks {
        out(&checks_table())?;
        return Ok(ExitCode::SUCCESS);
    }
    let sel = args.select;
    let dir = sel.scenarios.unwrap_or_else(|| default_dir("scenarios"));
    let mut text = String::new();
    for s in crate::suite::select(&dir, &sel.filter)? {
        let modes: Vec<_> = s.file.modes.iter().map(|m| m.as_str()).collect();
        text.push_str(&format!(
            "{}  [{}]  {}\n",
            s.id,
            modes.join(", "),
            s.file.title
        ));
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `conform list --checks`: one line per check — id, requirement, source.
fn checks_table() -> String {
    let width = Check::ALL.iter().map(|c| c.id().len()).max().unwrap_or(0);
    Check::ALL
        .iter()
        .map(|c| {
            format!(
                "{:<width$}  {}  [{}: {}]\n",
                c.id(),
                c.requirement(),
                c.level().as_str(),
                c.source()
            )
        })
        .collect()
}

/// `conform schema scenario|subject`.
pub fn schema(which: &str) -> Result<ExitCode, Error> {
    let schema = if which == "scenario" {
        crate::scenario::json_schema()
    } else {
        conform_protocol::subject::json_schema()
    };
    let text = serde_json::to_string_pretty(&schema).expect("serialises");
    out(&format!("{text}\n"))?;
    Ok(ExitCode::SUCCESS)
}
