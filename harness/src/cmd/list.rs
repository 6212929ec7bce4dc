//! `conform list` (the scenarios a run would select, or with `--checks` every check) and
//! `conform schema` (the JSON Schemas of the scenario file and the subject protocol).

use std::process::ExitCode;

use crate::checks::Check;
use crate::cli::ListArgs;
use crate::cmd::Error;
use crate::cmd::output::out;

pub fn exec(args: ListArgs) -> Result<ExitCode, Error> {
    if args.checks {
        out(&checks_table())?;
        return Ok(ExitCode::SUCCESS);
    }
    let sel = args.select;
    let dir = crate::catalog::or_default(sel.scenarios, "scenarios")?;
    if args.levels {
        out(&levels_table(&crate::suite::select_with(
            &dir,
            &sel.added,
            &sel.filter,
        )?))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.waits {
        let (text, undeclared) =
            waits_table(&crate::suite::select_with(&dir, &sel.added, &sel.filter)?);
        out(&text)?;
        return Ok(if undeclared == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let mut text = String::new();
    for s in crate::suite::select_with(&dir, &sel.added, &sel.filter)? {
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

/// `conform list --levels`: each scenario's expectations by the kind of requirement they stand
/// for, records first — `<level>  <scenario>  <checks>  <source>`, one line per source.
fn levels_table(scenarios: &[crate::scenario::Scenario]) -> String {
    let mut lines: Vec<(crate::checks::Level, String)> = Vec::new();
    for s in scenarios {
        let mut by_source: Vec<(crate::checks::Level, String, Vec<&str>)> = Vec::new();
        for (check, level, source) in crate::checks::expectation_levels(s) {
            match by_source
                .iter_mut()
                .find(|(l, src, _)| *l == level && *src == source)
            {
                Some((_, _, checks)) => checks.push(check.id()),
                None => by_source.push((level, source.into_owned(), vec![check.id()])),
            }
        }
        for (level, source, checks) in by_source {
            let line = format!(
                "{:<8}  {}  {}  {}\n",
                level.as_str(),
                s.id,
                checks.join(","),
                source
            );
            lines.push((level, line));
        }
    }
    lines.sort_by_key(|l| l.0);
    lines.into_iter().map(|(_, l)| l).collect()
}

/// `conform list --waits`: every long wait a scenario sets — `<scenario>  <key> = <ms>  <why>`,
/// or `UNDECLARED` — then how many say nothing.
fn waits_table(scenarios: &[crate::scenario::Scenario]) -> (String, usize) {
    use crate::scenario::waits::LONG_WAIT_MS;
    let mut text = String::new();
    let mut undeclared = 0;
    for s in scenarios {
        for w in s.set_waits().into_iter().filter(|w| w.ms > LONG_WAIT_MS) {
            let why = match s.file.waits.get(w.key) {
                Some(why) => why.as_str(),
                None => {
                    undeclared += 1;
                    "UNDECLARED: say why in `[waits]`, or make it 200 ms or less"
                }
            };
            text.push_str(&format!("{}  {} = {}  {}\n", s.id, w.key, w.ms, why));
        }
    }
    text.push_str(&format!(
        "{undeclared} wait(s) over {LONG_WAIT_MS} ms without a reason\n"
    ));
    (text, undeclared)
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
