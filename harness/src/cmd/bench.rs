//! `conform bench` (run by `ci/bench`): what the harness costs, measured on this machine in one
//! sitting, each figure beside the floor it is judged against. Never a timed assertion: the
//! figures are printed, `docs/performance.md` keeps one table.
//!
//! - **floor**: one fake process spawned, its ACP handshake answered, stdin closed, its exit
//!   awaited — the least any run can cost;
//! - **simplest run**: `acp/success/end-turn` in the foreground, one at a time, end to end
//!   (harness → reference subject → fake → verdict), and what it costs above the floor;
//! - **catalog wall time** at several `--jobs`, each a fresh `conform run` (its peak RSS too);
//! - **settle verdict latency**: from the run's last process exit to its verdict (p50, p99);
//! - **redaction property** cases per second;
//! - **peak RSS** of the harness, the subject and the largest fake;
//! - the cases that set the catalog's wall time (teardown graces and deadlines).

use std::fmt::Write as _;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use std::process::ExitCode;

use crate::cmd::output::out;
use crate::cmd::{Error as CmdError, block_on};
use crate::settings::Jobs;

pub struct BenchPlan {
    pub scenarios: PathBuf,
    pub snapshots: PathBuf,
    /// `--jobs` values for the catalog's wall time.
    pub jobs: Vec<Jobs>,
    /// Repetitions of the floor and of the simplest run.
    pub repeat: usize,
    pub redaction_cases: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Suite(#[from] crate::suite::SuiteError),
    #[error("{0}")]
    Other(String),
}

/// The p-th percentile (0–100) of `xs` (sorted here), nearest rank.
fn percentile(xs: &mut [f64], p: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// One fake spawned, handshake answered, EOF, exit: milliseconds, `repeat` times.
fn floor(exe: &str, work: &Path, repeat: usize) -> Result<(Vec<f64>, Option<u64>), BenchError> {
    let root = work.join("floor");
    std::fs::create_dir_all(root.join("probe"))?;
    std::fs::create_dir_all(root.join("preludes"))?;
    let file = root.join("probe/floor.toml");
    std::fs::write(
        &file,
        "title = \"the floor\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n\n\
         [[fake.steps]]\nexpect = \"initialize\"\n\n\
         [[fake.steps]]\nreply = { protocolVersion = 1, agentCapabilities = {} }\n\n\
         [expect]\nstop_reason = \"completed\"\n",
    )?;
    let scenario =
        crate::scenario::load(&root, &file).map_err(|e| BenchError::Other(e.to_string()))?;
    let script = serde_json::to_value(scenario.script.script()).expect("json");
    let router = Arc::new(crate::proc::router::Router::default());
    let side = crate::proc::side::SideServer::bind_in(work, router.clone(), Path::new(exe))?;
    let init = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":{}}}\n";
    let mut times = Vec::new();
    let mut rss = None;
    for i in 0..repeat {
        let run = crate::proc::run_id::RunId::next();
        let _route = router.open(&run);
        let args: Vec<String> = ["fake", "acp", "--side"]
            .into_iter()
            .map(str::to_owned)
            .chain([side.path().to_string_lossy().into_owned(), "--run".into()])
            .chain([run.to_string()])
            .collect();
        side.issue(&run, args.clone(), Some(script.clone()));
        let t = Instant::now();
        let mut child = Command::new(exe)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        stdin.write_all(init.as_bytes())?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line)?;
        if !line.contains("\"protocolVersion\"") {
            return Err(BenchError::Other(format!(
                "the fake did not answer initialize: {line:?}"
            )));
        }
        if i == 0 {
            rss = crate::proc::pids::peak_rss_kib(child.id() as i32);
        }
        drop(stdin);
        child.wait()?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        side.run_over(&run);
        router.close(&run);
    }
    Ok((times, rss))
}

/// `conform <args>` as a child, with a JSON report: (wall time, report).
fn conform_json(
    exe: &str,
    args: &[&str],
    work: &Path,
    name: &str,
) -> Result<(Duration, Value), BenchError> {
    let json = work.join(format!("{name}.json"));
    let t = Instant::now();
    let out = Command::new(exe)
        .args(args)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()?;
    let wall = t.elapsed();
    let text = std::fs::read_to_string(&json).map_err(|e| {
        BenchError::Other(format!(
            "conform {} wrote no report ({e}): {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ))
    })?;
    let v: Value = serde_json::from_str(&text).map_err(|e| BenchError::Other(e.to_string()))?;
    if v["exitCode"] != 0 {
        return Err(BenchError::Other(format!(
            "conform {} did not pass (exit {}): the figures would measure failures",
            args.join(" "),
            v["exitCode"]
        )));
    }
    Ok((wall, v))
}

/// One line of the table: the figure, what was measured, what it stands beside.
type BenchRow = (String, String, String);

/// One catalog run: its `-j`, its wall time, its JSON report.
type CatalogRun = (Jobs, Duration, Value);

/// Measures every figure, one after another, and renders the table.
pub async fn run(plan: &BenchPlan, mut progress: impl FnMut(&str)) -> Result<String, BenchError> {
    let exe = std::env::current_exe()?.to_string_lossy().into_owned();
    let work = tempfile::Builder::new()
        .prefix("conform-bench-")
        .tempdir()?;
    let mut rows: Vec<BenchRow> = Vec::new();
    progress("the floor");
    let (floor_p50, fake_rss_idle) = the_floor(&exe, work.path(), plan, &mut rows)?;
    progress("the simplest run, one at a time");
    the_simplest_run(plan, floor_p50, &mut rows).await?;
    let mut catalog: Vec<CatalogRun> = Vec::new();
    for &j in &plan.jobs {
        progress(&format!("the catalog at -j {j}"));
        let jobs = match j {
            Jobs::Auto => "auto".to_owned(),
            Jobs::Fixed(n) => n.to_string(),
        };
        let (wall, v) = conform_json(
            &exe,
            &["run", "-j", &jobs],
            work.path(),
            &format!("catalog-j{jobs}"),
        )?;
        catalog.push((j, wall, v));
    }
    catalog_rows(&catalog, fake_rss_idle, &mut rows);
    if let Some((_, _, v)) = catalog.first() {
        rows.push(waits_row(v));
    }
    progress("each provider alone, at -j auto");
    for provider in conform_protocol::vocab::Provider::ALL {
        rows.push(provider_row(&exe, work.path(), provider.as_str())?);
    }
    progress("the redaction property");
    rows.extend(the_redaction_property(&exe, plan)?);
    Ok(render(rows, &catalog))
}

/// The floor: a fake spawned, its handshake answered, EOF, its exit awaited. Its p50, and the
/// idle fake's peak RSS.
fn the_floor(
    exe: &str,
    work: &Path,
    plan: &BenchPlan,
    rows: &mut Vec<BenchRow>,
) -> Result<(f64, Option<u64>), BenchError> {
    let (mut floor_ms, fake_rss_idle) = floor(exe, work, plan.repeat)?;
    let floor_p50 = percentile(&mut floor_ms, 50.0);
    rows.push((
        "floor: spawn a fake, answer its handshake, EOF, exit".into(),
        format!(
            "{floor_p50:.1} ms p50 (p90 {:.1} ms, {} runs)",
            percentile(&mut floor_ms, 90.0),
            plan.repeat
        ),
        "the floor".into(),
    ));
    Ok((floor_p50, fake_rss_idle))
}

/// The simplest run end to end, one at a time, and the harness's own part of it.
async fn the_simplest_run(
    plan: &BenchPlan,
    floor_p50: f64,
    rows: &mut Vec<BenchRow>,
) -> Result<(), BenchError> {
    let simplest = crate::scenario::discover(&plan.scenarios)
        .map_err(|e| BenchError::Other(format!("{} scenario file(s) failed to load", e.len())))?
        .into_iter()
        .find(|s| s.id == "acp/success/end-turn")
        .ok_or_else(|| BenchError::Other("acp/success/end-turn is missing".into()))?;
    let mut one = simplest.clone();
    one.file.modes = vec![conform_protocol::subject::Mode::Foreground];
    let one = Arc::new(one);
    let opts = crate::suite::Options {
        settings: crate::settings::Settings {
            jobs: crate::settings::Jobs::Fixed(1),
            ..Default::default()
        },
        ..crate::suite::Options::new(plan.scenarios.clone(), plan.snapshots.clone())
    };
    let report =
        crate::suite::run_scenarios(&opts, std::iter::repeat_n(one, plan.repeat).collect()).await?;
    if report.exit_code() != crate::suite::exit::PASS {
        return Err(BenchError::Other(
            "acp/success/end-turn failed under the bench".into(),
        ));
    }
    let mut run_ms: Vec<f64> = report
        .cases
        .iter()
        .filter_map(|c| c.obs.as_ref())
        .map(|o| o.elapsed.as_secs_f64() * 1000.0)
        .collect();
    let run_p50 = percentile(&mut run_ms, 50.0);
    rows.push((
        "simplest run end to end (acp/success/end-turn, -j 1)".into(),
        format!(
            "{run_p50:.1} ms p50 (p90 {:.1} ms)",
            percentile(&mut run_ms, 90.0)
        ),
        format!("{:.1}× the floor", run_p50 / floor_p50),
    ));
    // The harness's own part: from the subject's last message to the verdict (its /proc
    // reads at the claim, the pidfd waits, the side channel's last lines). Before that, the
    // harness only relays; the subject's handshake, prompt and teardown are its own.
    let mut tail_ms: Vec<f64> = report
        .cases
        .iter()
        .filter_map(|c| c.obs.as_ref())
        .filter_map(|o| Some(o.elapsed.as_secs_f64() * 1000.0 - o.last_subject_at_ms? as f64))
        .collect();
    rows.push((
        "  above the floor (subject's three round trips and teardown, harness)".into(),
        format!("{:.1} ms", run_p50 - floor_p50),
        String::new(),
    ));
    rows.push((
        "  of which the harness's: last subject message → verdict".into(),
        format!(
            "{:.1} ms p50 (p90 {:.1} ms)",
            percentile(&mut tail_ms, 50.0),
            percentile(&mut tail_ms, 90.0)
        ),
        "target ≤ 2 ms above the floor".into(),
    ));

    Ok(())
}

/// The catalog's wall time at each `-j`, then exit-to-verdict latency and peak RSS from the
/// widest run that is not oversubscribed.
fn catalog_rows(catalog: &[CatalogRun], fake_rss_idle: Option<u64>, rows: &mut Vec<BenchRow>) {
    let cases = catalog
        .first()
        .map(|(_, _, v)| {
            v["cases"]
                .as_array()
                .map_or(0, |cs| cs.iter().filter(|c| c["verdict"] == "pass").count())
        })
        .unwrap_or_default();
    for (j, wall, v) in catalog {
        rows.push((
            format!("catalog wall time, -j {j} ({cases} runs)"),
            format!("{:.1} s", wall.as_secs_f64()),
            format!(
                "{:.1} ms per run; harness peak RSS {}",
                wall.as_secs_f64() * 1000.0 / cases.max(1) as f64,
                mib(v["peakRssKiB"]["harness"].as_u64())
            ),
        ));
    }

    // Settle verdict latency and peak RSS at the default (the first run measured).
    if let Some((j, _, v)) = catalog.first() {
        // The subject's share (its teardown: graces where a scenario makes it wait) and the
        // harness's (from the subject's last word to the verdict).
        let split = |c: &Value| -> Option<(f64, f64)> {
            let elapsed = c["elapsedMs"].as_f64()?;
            let exit = c["settle"]["lastExitAtMs"].as_f64()?;
            let said = c["settle"]["lastSubjectMessageAtMs"].as_f64()?;
            Some(((said - exit).max(0.0), elapsed - said.max(exit)))
        };
        let pairs: Vec<(f64, f64)> = v["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(split)
            .collect();
        let (mut subject, mut harness): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        rows.push((
            format!("last process exit → verdict (-j {j})"),
            format!(
                "subject {:.0} ms p50 / {:.0} ms p99, then harness {:.1} ms p50 / {:.0} ms p99",
                percentile(&mut subject, 50.0),
                percentile(&mut subject, 99.0),
                percentile(&mut harness, 50.0),
                percentile(&mut harness, 99.0)
            ),
            "event-driven: pidfd, pipe EOF, channels".into(),
        ));
        rows.push((
            "peak RSS: harness / subject / largest fake".into(),
            format!(
                "{} / {} / {}",
                mib(v["peakRssKiB"]["harness"].as_u64()),
                mib(v["peakRssKiB"]["subject"].as_u64()),
                mib(v["peakRssKiB"]["fake"].as_u64().or(fake_rss_idle))
            ),
            "target: harness ≤ 40 MiB".into(),
        ));
    }
}

/// The share of all run time spent in waits the runs walked, declared in `[waits]` (a case's
/// point) or not (the least that makes the same thing happen), from the first catalog run.
fn waits_row(v: &Value) -> BenchRow {
    let cases = v["cases"].as_array().map_or(&[][..], Vec::as_slice);
    let total: f64 = cases.iter().filter_map(|c| c["elapsedMs"].as_f64()).sum();
    let walked = |declared: bool| -> f64 {
        cases
            .iter()
            .filter_map(|c| c["walked"].as_array())
            .flatten()
            .filter(|w| w["declared"] == declared)
            .filter_map(|w| w["ms"].as_f64())
            .sum()
    };
    let share = |ms: f64| 100.0 * ms / total.max(1.0);
    let (declared, not) = (walked(true), walked(false));
    (
        "run time in the waits the runs walked".into(),
        format!(
            "{:.1} % declared ({:.1} s), {:.1} % not ({:.1} s), of {:.1} s",
            share(declared),
            declared / 1000.0,
            share(not),
            not / 1000.0,
            total / 1000.0
        ),
        "declared: a case's point (`[waits]`); not: ≤ 200 ms each".into(),
    )
}

/// One provider's part of the catalog alone at the default `-j`: its wall per run.
fn provider_row(exe: &str, work: &Path, provider: &str) -> Result<BenchRow, BenchError> {
    let filter = format!("{provider}/");
    let (wall, v) = conform_json(
        exe,
        &["run", "-f", &filter],
        work,
        &format!("provider-{provider}"),
    )?;
    let runs = v["cases"]
        .as_array()
        .map_or(0, |cs| cs.iter().filter(|c| c["verdict"] == "pass").count());
    Ok((
        format!("per run, {provider} alone (-j auto, {runs} runs)"),
        format!("{:.1} ms", wall.as_secs_f64() * 1000.0 / runs.max(1) as f64),
        format!("wall {:.1} s; target ≤ 12 ms", wall.as_secs_f64()),
    ))
}

/// The redaction property's speed (cases per second): against the reference, and against a
/// host that leaks (`leak-raw-error`: most cases fail, the first per provider × channel is
/// kept and shrunk).
fn the_redaction_property(exe: &str, plan: &BenchPlan) -> Result<Vec<BenchRow>, BenchError> {
    let leaking = format!("'{exe}' reference --defect leak-raw-error");
    let mut rows = Vec::new();
    for (what, subject, target) in [
        ("the reference", None, "target: 2000 cases ≤ 20 s, idle"),
        (
            "a leaking host",
            Some(leaking.as_str()),
            "target: 2000 cases ≤ 120 s",
        ),
    ] {
        let t = Instant::now();
        let cases_arg = plan.redaction_cases.to_string();
        let mut cmd = Command::new(exe);
        cmd.args(["redaction", "--cases", &cases_arg, "--seed", "1"]);
        if let Some(s) = subject {
            cmd.args(["--subject", s]);
        }
        let out = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let secs = t.elapsed().as_secs_f64();
        let verdict = if out.success() {
            "all passed".to_owned()
        } else {
            format!("exit {:?}", out.code())
        };
        rows.push((
            format!(
                "redaction property, {what} ({} cases, -j 32)",
                plan.redaction_cases
            ),
            format!(
                "{secs:.1} s ({:.0} cases/s)",
                plan.redaction_cases as f64 / secs
            ),
            format!("{verdict}; {target}"),
        ));
    }
    Ok(rows)
}

/// The table, then what sets the wall time at the first `-j` measured: the longest cases
/// (their share of all run time).
fn render(rows: Vec<BenchRow>, catalog: &[CatalogRun]) -> String {
    let mut table = comfy_table::Table::new();
    table.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    table.set_header(["figure", "measured", "beside"]);
    for (a, b, c) in rows {
        table.add_row([a, b, c]);
    }
    let mut text = format!("{table}\n");
    // What sets the wall time at the default: the longest cases (their share of all run time).
    if let Some((j, _, v)) = catalog.first() {
        let mut by_time: Vec<(f64, String)> = v["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                Some((
                    c["elapsedMs"].as_f64()?,
                    format!("{} ({})", c["id"].as_str()?, c["mode"].as_str()?),
                ))
            })
            .collect();
        let total: f64 = by_time.iter().map(|(t, _)| t).sum();
        by_time.sort_by(|a, b| b.0.total_cmp(&a.0));
        let _ = writeln!(
            text,
            "\nlongest runs at -j {j} (of {:.1} s of run time in all):",
            total / 1000.0
        );
        for (t, id) in by_time.iter().take(10) {
            let _ = writeln!(text, "  {t:>6.0} ms  {id}");
        }
        let over_300: f64 = by_time
            .iter()
            .filter(|(t, _)| *t >= 300.0)
            .map(|(t, _)| t)
            .sum();
        let _ = writeln!(
            text,
            "  runs of 300 ms or more: {} of {}, {:.0} % of all run time",
            by_time.iter().filter(|(t, _)| *t >= 300.0).count(),
            by_time.len(),
            100.0 * over_300 / total.max(1.0)
        );
    }
    text
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

/// `conform bench`: the figures of `ci/bench`.
pub fn exec(args: crate::cli::BenchArgs) -> Result<ExitCode, CmdError> {
    let plan = BenchPlan {
        scenarios: crate::catalog::default_dir("scenarios")?,
        snapshots: crate::catalog::default_dir("snapshots")?,
        jobs: args.jobs,
        repeat: args.repeat.max(1),
        redaction_cases: args.redaction_cases.max(1),
    };
    let started = std::time::Instant::now();
    let progress = |what: &str| eprintln!("[{:>4.0} s] {what}", started.elapsed().as_secs_f64());
    let table = block_on(run(&plan, progress))?.map_err(|e| CmdError::Usage(e.to_string()))?;
    out(&table)?;
    Ok(ExitCode::SUCCESS)
}
