//! `conform run`: the suite against a subject, the baseline applied to what it found, and the
//! reports written (the human one on stdout; JSON, JUnit and a new baseline where asked), each
//! compared with a previous run's where asked (`--compare`), with what differs from its
//! snapshots left pending for `conform review`.

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cli::RunArgs;
use crate::cmd::output::{ReportFile, out};
use crate::cmd::{Error, code};
use crate::report::style::{self, Paint};
use crate::report::{self, terminal};
use crate::suite::{self, SuiteReport, baseline};

pub fn exec(args: RunArgs) -> Result<ExitCode, Error> {
    let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
    // From here on a signal stops the suite in order (a report of what finished).
    let interrupt = {
        let _in_runtime = runtime.enter();
        crate::proc::interrupt::listen().map_err(Error::Signals)?
    };
    let known = args
        .baseline
        .as_deref()
        .map(baseline::Baseline::load)
        .transpose()
        .map_err(|e| Error::Usage(e.to_string()))?;
    let previous = args
        .compare
        .as_deref()
        .map(crate::report::compare::load)
        .transpose()?;
    let (snapshots, pending) = snapshot_folders(&args)?;
    let [json_file, junit_file, baseline_file] = ReportFile::open_all([
        args.json.as_deref(),
        args.junit.as_deref(),
        args.write_baseline.as_deref(),
    ])?;
    let terminal = Terminal::of(&args);
    let (html, scenarios) = (args.html.clone(), args.select.scenarios.clone());
    let opts = suite::Options {
        added: args.select.added,
        filters: args.select.filter,
        partition: args.partition,
        settings: args.settings,
        progress: std::io::stderr().is_terminal(),
        observer: Some(std::sync::Arc::new(report::live::Live::new(terminal.live))),
        interrupt,
        pending: Some(pending.clone()),
        ..suite::Options::new(
            crate::catalog::or_default(scenarios, "scenarios")?,
            snapshots,
        )
    };
    let mut report = runtime.block_on(suite::run(opts))?;
    if let Some(known) = &known {
        baseline::apply(&mut report, known);
    }
    if let Some(file) = baseline_file {
        file.write(baseline::write(&report).as_bytes())?;
    }
    // Every report is read from the JSON one (`conform report merge` prints the same), with
    // the comparison in it when one was asked for: held without what only its file carries.
    let mut json = report::json::held(&report);
    let comparison = match &previous {
        Some(previous) => Some(
            previous
                .attach_to(&mut json)
                .map_err(|e| Error::Usage(e.to_string()))?,
        ),
        None => None,
    };
    let shown = terminal.print(&report, &json, comparison.as_ref());
    if let Some(file) = junit_file {
        file.write(report::junit_from_json(&json)?.as_bytes())?;
    }
    if let Some(dir) = &html {
        let whole = report::json::whole(&json, &report);
        let page = report::html::write(dir, &whole).map_err(|source| Error::Write {
            path: dir.clone(),
            source,
        })?;
        eprintln!("html report: {}", page.display());
    }
    // The harness's peak, read once every other report is made (its largest moments); the
    // JSON report is then streamed to its file a case at a time.
    json["peakRssKiB"]["harness"] = serde_json::json!(crate::proc::pids::own_peak_rss_kib());
    if let Some(file) = json_file {
        file.write_with(|out| Ok(report::json::write(out, &json, &report)?))?;
    }
    if pending.written() > 0 {
        eprintln!(
            "pending snapshots: {} written under {} (`{}` shows them)",
            pending.written(),
            pending.root().display(),
            pending.review_command()
        );
    }
    shown.map(|()| code(report.exit_code()))
}

/// The snapshots folder the run judges by, and where what differs is left pending: never into
/// the embedded catalog, whose folders are a cache named by its digest.
fn snapshot_folders(
    args: &RunArgs,
) -> Result<(std::path::PathBuf, crate::snapshot::PendingDir), Error> {
    let embedded = args.snapshots.is_none() && crate::catalog::defaults_are_embedded();
    if args.settings.accept && embedded {
        return Err(Error::Usage(
            "`--accept` writes snapshots: outside conform's workspace give the folder with --snapshots DIR"
                .to_owned(),
        ));
    }
    let snapshots = crate::catalog::or_default(args.snapshots.clone(), "snapshots")?;
    // Nothing may be accepted into the embedded catalog: nothing is left pending for it.
    let pending = match args.pending.dir() {
        dir if embedded => dir.never_for(&snapshots),
        dir => dir,
    };
    // `--accept` creates the folder when it records the first snapshot.
    if !args.settings.accept && !snapshots.is_dir() {
        let why = if snapshots.exists() {
            "is not a folder"
        } else {
            "does not exist (`--accept` creates it)"
        };
        return Err(Error::Usage(format!(
            "the snapshot folder {} {why}",
            snapshots.display()
        )));
    }
    Ok((snapshots, pending))
}

/// How the terminal is written to, resolved once from the flags: the report's shape, the
/// status lines on stderr, and whether stdout is coloured.
struct Terminal {
    shape: report::human::Shape,
    live: report::live::LiveOptions,
    stdout: Paint,
}

impl Terminal {
    fn of(args: &RunArgs) -> Terminal {
        let colour = |terminal: bool| Paint {
            on: style::colour_for(args.output.color, terminal),
        };
        Terminal {
            shape: report::human::Shape {
                verbose: args.settings.verbose,
                failure_output: args.output.failure_output,
                final_status_level: args.output.final_status_level,
            },
            live: report::live::LiveOptions {
                status_level: args.status_level,
                failure_output: args.output.failure_output,
                paint: colour(std::io::stderr().is_terminal()),
            },
            stdout: colour(std::io::stdout().is_terminal()),
        }
    }

    /// The human report on stdout, with the comparison after it. Subject text is escaped
    /// (then coloured, by us alone); the JSON and JUnit reports are exact.
    fn print(
        &self,
        report: &SuiteReport,
        json: &serde_json::Value,
        comparison: Option<&crate::report::compare::Comparison>,
    ) -> Result<(), Error> {
        let verbose = self
            .shape
            .verbose
            .then(|| report::json::with_passing_details(json.clone(), report));
        let mut human = report::human(verbose.as_ref().unwrap_or(json), self.shape);
        if let Some(comparison) = comparison {
            human.push_str(&comparison.render());
        }
        out(&self.stdout.report(&terminal::escape_controls(&human)))
    }
}
