//! `conform self-test`: the catalog against every seeded defect of the reference, as a kill
//! matrix (defect × check id). It fails when the clean reference fails, when a defect survives
//! (no check caught it), or when a check id kills no defect — a check that cannot fail.
//!
//! Checks no reference defect can reach — a subject that never starts, a fake or snapshot the
//! harness cannot use — are killed by [`PROBES`]: small hostile subjects and broken inputs, each
//! named like a defect.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::checks::Check;
use crate::settings::Settings;
use crate::suite::{self, SuiteReport, Verdict};
use std::process::ExitCode;

use crate::cmd::output::out;
use crate::cmd::{Error as CmdError, block_on, verdict};

mod timing_rows;

/// Each run's deadline, unless its scenario sets one: a clean run of the catalog takes under
/// a second per case (its longest, the teardown ladders, about 0.6 s), and a defect that leaves
/// runs hanging (no notice, no answer) costs its deadline for each of them. The clean run is
/// held to the same deadline, so it cannot make a kill of its own.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// A way to make checks fail besides the reference's own defects.
pub struct Probe {
    pub name: &'static str,
    pub help: &'static str,
    /// The subject command line (`sh -c`); `{exe}` is the conform binary.
    pub subject: &'static str,
    /// Scenarios to run (`--filter`); empty: the whole catalog.
    pub filter: &'static [&'static str],
    /// A broken input the probe runs against instead of the workspace's own.
    pub breaks: Breaks,
    /// The check ids expected to catch it.
    pub catches: &'static [&'static str],
}

#[derive(Clone, Copy)]
pub enum Breaks {
    Nothing,
    /// A scenario whose fake faults (its script asks for a signal that does not exist).
    FakeScript,
    /// A scenario whose fake sends a frame its protocol's schema rejects, unmarked.
    FakeFrame,
    /// A stored snapshot that cannot be read.
    Snapshot,
    /// A baseline written against the subject `written_against` (`{exe}` is the conform
    /// binary), and the probe's subject run against it: what the baseline does not know counts.
    Baseline {
        written_against: &'static str,
    },
}

pub const PROBES: &[Probe] = &[
    Probe {
        name: "probe:no-hello",
        help: "A subject that starts and never says hello.",
        subject: "exec sleep 3600",
        filter: &["acp/stop/refusal"],
        breaks: Breaks::Nothing,
        catches: &["subject.hello"],
    },
    Probe {
        name: "probe:fake-fault",
        help: "A scenario whose fake cannot run its script.",
        subject: "",
        filter: &["probe/"],
        breaks: Breaks::FakeScript,
        catches: &["harness.fake"],
    },
    Probe {
        name: "probe:fake-frame",
        help: "A scenario whose fake sends a frame its protocol rejects, unmarked.",
        subject: "",
        filter: &["probe/"],
        breaks: Breaks::FakeFrame,
        catches: &["harness.fake-schema"],
    },
    Probe {
        name: "probe:unreadable-snapshot",
        help: "A stored snapshot that is not a snapshot.",
        subject: "",
        filter: &["acp/stop/refusal"],
        breaks: Breaks::Snapshot,
        catches: &["harness.snapshot"],
    },
    Probe {
        name: "probe:known-failure-changed",
        help: "A baseline written against the reference with `background-start-wording`, used with \
               `crlf-output` seeded too: a known failure whose texts changed, failing no other check.",
        subject: "{exe} reference --defect background-start-wording --defect crlf-output",
        filter: &["acp/success/end-turn"],
        breaks: Breaks::Baseline {
            written_against: "{exe} reference --defect background-start-wording",
        },
        catches: &["baseline.changed"],
    },
];

/// One row of the matrix.
pub struct SelfTestRow {
    pub name: String,
    pub help: String,
    pub killed: BTreeSet<&'static str>,
    /// The checks declared to catch it (`conform_reference::DEFECTS`, [`PROBES`]): its row of
    /// the kill matrix as it was accepted.
    pub expected: Vec<&'static str>,
    pub elapsed: Duration,
    /// The run could not judge at all (exit 2 without a harness check to name).
    pub error: Option<String>,
}

pub struct SelfTestMatrix {
    pub clean: Result<(), String>,
    pub rows: Vec<SelfTestRow>,
    pub elapsed: Duration,
}

impl SelfTestRow {
    /// The declared checks that did not catch it this time.
    pub fn missed(&self) -> Vec<&'static str> {
        self.expected
            .iter()
            .copied()
            .filter(|c| !self.killed.contains(c))
            .collect()
    }
}

impl SelfTestMatrix {
    pub fn survivors(&self) -> impl Iterator<Item = &SelfTestRow> {
        self.rows.iter().filter(|r| r.killed.is_empty())
    }

    /// Rows some declared check no longer catches (the matrix changed).
    pub fn changed(&self) -> impl Iterator<Item = &SelfTestRow> {
        self.rows
            .iter()
            .filter(|r| !r.killed.is_empty() && !r.missed().is_empty())
    }

    /// Check ids no row killed.
    pub fn unkilled(&self) -> Vec<&'static str> {
        Check::ALL
            .iter()
            .map(|c| c.id())
            .filter(|id| !self.rows.iter().any(|r| r.killed.contains(id)))
            .collect()
    }

    pub fn passed(&self) -> bool {
        self.clean.is_ok()
            && self.survivors().next().is_none()
            && self.changed().next().is_none()
            && self.unkilled().is_empty()
    }
}

/// What a suite's report killed: every check id a failed case or the suite names.
fn killed(report: &SuiteReport) -> BTreeSet<&'static str> {
    // A case the harness failed proves nothing about the subject: only its harness checks
    // count there.
    let counted = |fs: &'_ [crate::checks::Finding]| -> Vec<&'static str> {
        let harness = fs
            .iter()
            .any(|f| f.blame() == crate::checks::Blame::Harness);
        fs.iter()
            .filter(|f| !harness || f.blame() == crate::checks::Blame::Harness)
            .map(|f| f.check.id())
            .collect()
    };
    let mut out: BTreeSet<&'static str> = report
        .cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Fail))
        .flat_map(|c| counted(&c.findings))
        .chain(counted(&report.findings))
        .collect();
    if !report.stragglers.is_empty() {
        out.insert(Check::ProcessSettled.id());
    }
    out
}

pub struct SelfTestPlan {
    pub scenarios: PathBuf,
    pub snapshots: PathBuf,
    pub jobs: usize,
    /// Only defects and probes whose name contains one of these (empty: all).
    pub only: Vec<String>,
}

/// Runs the clean reference, every defect and every probe, one suite after another.
pub async fn run(
    plan: &SelfTestPlan,
    mut progress: impl FnMut(&str),
) -> Result<SelfTestMatrix, suite::SuiteError> {
    let started = Instant::now();
    let catalog = Catalog::new(plan)?;
    progress("the clean reference");
    let (clean_killed, clean_code, _) = catalog.against(catalog.reference("")).await?;
    let clean = match clean_code {
        suite::exit::PASS => Ok(()),
        code => Err(format!(
            "the clean reference fails its own catalog (exit {code}): {}",
            clean_killed.into_iter().collect::<Vec<_>>().join(", ")
        )),
    };
    let wanted =
        |name: &str| plan.only.is_empty() || plan.only.iter().any(|o| name.contains(o.as_str()));
    let mut rows = Vec::new();
    for defect in conform_reference::DEFECTS.iter().filter(|d| wanted(d.name)) {
        progress(defect.name);
        let t = Instant::now();
        let subject = catalog.reference(&format!(" --defect {}", defect.name));
        let (killed, _, late) = catalog.against(subject).await?;
        rows.push(SelfTestRow {
            name: defect.name.to_owned(),
            help: defect.help.to_owned(),
            killed,
            expected: defect.catches.to_vec(),
            elapsed: t.elapsed(),
            error: None,
        });
        rows.extend(catalog.timing_rows(defect, &late));
    }
    for probe in PROBES.iter().filter(|p| wanted(p.name)) {
        progress(probe.name);
        rows.push(catalog.probe(probe).await?);
    }
    Ok(SelfTestMatrix {
        clean,
        rows,
        elapsed: started.elapsed(),
    })
}

/// The catalog as the self-test runs it: the whole of it, then each part that needs a newer
/// product version, all with the self-test's deadline.
struct Catalog<'a> {
    plan: &'a SelfTestPlan,
    exe: String,
    /// Scenarios that run only when their product speaks a newer version (`codex/upgrade/`):
    /// a suite of their own per version, so every defect meets them too.
    versioned: BTreeMap<(conform_protocol::vocab::Provider, String), Vec<String>>,
}

impl<'a> Catalog<'a> {
    fn new(plan: &'a SelfTestPlan) -> Result<Catalog<'a>, suite::SuiteError> {
        let exe = std::env::current_exe()?.to_string_lossy().into_owned();
        let mut versioned: BTreeMap<_, Vec<String>> = BTreeMap::new();
        for s in crate::scenario::discover(&plan.scenarios).map_err(suite::SuiteError::Scenarios)? {
            if let Some(v) = &s.file.product_version {
                versioned
                    .entry((s.file.provider, v.clone()))
                    .or_default()
                    .push(s.id.clone());
            }
        }
        Ok(Catalog {
            plan,
            exe,
            versioned,
        })
    }

    /// The reference subject's command line, with these arguments.
    fn reference(&self, args: &str) -> String {
        format!("{} reference{args}", quote(&self.exe))
    }

    fn options(&self, subject: String) -> suite::Options {
        suite::Options {
            settings: Settings {
                subject: Some(subject),
                jobs: crate::settings::Jobs::Fixed(self.plan.jobs),
                deadline: DEADLINE,
                allow_skips: true,
                ..Settings::default()
            },
            // The hint names a version under which a failure passes; what failed, and by which
            // check, is the same without it.
            version_hints: false,
            ..suite::Options::new(self.plan.scenarios.clone(), self.plan.snapshots.clone())
        }
    }

    /// The catalog, then each versioned part, against `subject`: what failed, the worst exit
    /// code, and the scenarios a timing check failed.
    async fn against(
        &self,
        subject: String,
    ) -> Result<(BTreeSet<&'static str>, i32, BTreeSet<String>), suite::SuiteError> {
        let mut killed_here = BTreeSet::new();
        let mut late = BTreeSet::new();
        let mut worst = suite::exit::PASS;
        let mut runs = vec![self.options(subject.clone())];
        for ((provider, version), ids) in &self.versioned {
            let mut opts = self.options(subject.clone());
            opts.filters = ids.clone();
            opts.settings.product_versions = vec![(*provider, version.clone())];
            runs.push(opts);
        }
        for opts in runs {
            let report = suite::run(opts).await?;
            killed_here.extend(killed(&report));
            late.extend(
                report
                    .cases
                    .iter()
                    .filter(|c| c.findings.iter().any(|f| f.check.family() == "timing"))
                    .map(|c| c.scenario.id.clone()),
            );
            worst = worst.max(report.exit_code());
        }
        Ok((killed_here, worst, late))
    }

    /// One probe: its broken input and its subject, on its part of the catalog.
    async fn probe(&self, probe: &Probe) -> Result<SelfTestRow, suite::SuiteError> {
        let t = Instant::now();
        let work = tempfile::tempdir()?;
        let (scenarios, snapshots) = prepare(probe.breaks, work.path(), self.plan)?;
        let command = |subject: &str| {
            if subject.is_empty() {
                self.reference("")
            } else {
                subject.replace("{exe}", &quote(&self.exe))
            }
        };
        let options = |subject: &str| {
            let mut opts = suite::Options {
                filters: probe.filter.iter().map(|f| (*f).to_owned()).collect(),
                scenarios: scenarios.clone(),
                snapshots: snapshots.clone(),
                ..self.options(command(subject))
            };
            opts.settings.hello_timeout = Duration::from_secs(2);
            opts
        };
        let ran = match probe.breaks {
            Breaks::Baseline { written_against } => {
                against_baseline(options(written_against), options(probe.subject)).await
            }
            _ => suite::run(options(probe.subject))
                .await
                .map(|report| killed(&report))
                .map_err(|e| e.to_string()),
        };
        let (killed, error) = match ran {
            Ok(killed) => (killed, None),
            Err(e) => (BTreeSet::new(), Some(e)),
        };
        Ok(SelfTestRow {
            name: probe.name.to_owned(),
            help: probe.help.to_owned(),
            killed,
            expected: probe.catches.to_vec(),
            elapsed: t.elapsed(),
            error,
        })
    }
}

/// The suite `written` as a baseline (`--write-baseline`), then the suite `judged` against it
/// (`--baseline`): what that run killed that the baseline does not know (a new failure, or
/// `baseline.changed` where a known failure says something else).
async fn against_baseline(
    written: suite::Options,
    judged: suite::Options,
) -> Result<BTreeSet<&'static str>, String> {
    let written = suite::run(written).await.map_err(|e| e.to_string())?;
    let text = suite::baseline::write(&written);
    let baseline = suite::baseline::Baseline::parse(Path::new("known.toml"), &text)
        .map_err(|e| format!("the baseline written: {e}"))?;
    let mut report = suite::run(judged).await.map_err(|e| e.to_string())?;
    suite::baseline::apply(&mut report, &baseline);
    for case in &mut report.cases {
        let (id, mode) = (case.scenario.id.clone(), case.mode);
        case.findings.retain(|f| !baseline.covers(&id, mode, f));
    }
    Ok(killed(&report))
}

/// A word for `sh -c`, quoted.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The scenario and snapshot folders a probe runs against: the workspace's own, or a copy of
/// one scenario with the break in it.
fn prepare(
    breaks: Breaks,
    work: &Path,
    plan: &SelfTestPlan,
) -> std::io::Result<(PathBuf, PathBuf)> {
    let scenario = |steps: &str| -> std::io::Result<(PathBuf, PathBuf)> {
        let dir = work.join("scenarios");
        std::fs::create_dir_all(dir.join("probe"))?;
        std::fs::create_dir_all(dir.join("preludes"))?;
        for prelude in std::fs::read_dir(plan.scenarios.join("preludes"))?.flatten() {
            std::fs::copy(
                prelude.path(),
                dir.join("preludes").join(prelude.file_name()),
            )?;
        }
        std::fs::write(
            dir.join("probe").join("broken.toml"),
            format!(
                "title = \"a scenario the self-test breaks on purpose\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n\n{steps}\n[expect]\nstop_reason = \"completed\"\noutput = \"done\"\n"
            ),
        )?;
        let snaps = work.join("snapshots");
        std::fs::create_dir_all(&snaps)?;
        Ok((dir, snaps))
    };
    match breaks {
        Breaks::Nothing | Breaks::Baseline { .. } => {
            Ok((plan.scenarios.clone(), plan.snapshots.clone()))
        }
        // `reply` with no request open: the fake cannot do what its script says.
        Breaks::FakeScript => scenario("[[fake.steps]]\nreply = { x = 1 }\n"),
        Breaks::FakeFrame => scenario(
            "[[fake.steps]]\ninclude = \"acp-prompt\"\n\n[[fake.steps]]\nupdate = { sessionUpdate = \"agent_message_chunk\", content = { type = \"text\" } }\n\n[[fake.steps]]\nchunk = \"done\"\n\n[[fake.steps]]\nstop = \"end_turn\"\n",
        ),
        Breaks::Snapshot => {
            let snaps = work.join("snapshots");
            std::fs::create_dir_all(&snaps)?;
            for mode in ["foreground", "background"] {
                std::fs::write(
                    snaps.join(format!("acp__stop__refusal@{mode}.snap")),
                    [0xff, 0xfe, 0x00],
                )?;
            }
            Ok((plan.scenarios.clone(), snaps))
        }
    }
}

/// The matrix as text: one line per defect or probe with what killed it, then each check id
/// with how many rows it killed, then the verdict.
pub fn render(m: &SelfTestMatrix) -> String {
    let mut out = String::new();
    if let Err(why) = &m.clean {
        let _ = writeln!(out, "✗ {why}\n");
    }
    let width = m.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "kill matrix: {} defects and probes × {} checks\n",
        m.rows.len(),
        Check::ALL.len()
    );
    for r in &m.rows {
        let mark = if r.killed.is_empty() {
            "✗ SURVIVED"
        } else {
            "killed by"
        };
        let missed = r.missed();
        let _ = writeln!(
            out,
            "{:<width$}  {:>5.1} s  {mark} {}{}{}",
            r.name,
            r.elapsed.as_secs_f64(),
            r.killed.iter().copied().collect::<Vec<_>>().join(", "),
            r.error
                .as_ref()
                .map(|e| format!(" (could not run: {e})"))
                .unwrap_or_default(),
            if r.killed.is_empty() || missed.is_empty() {
                String::new()
            } else {
                format!("  ✗ no longer caught by {}", missed.join(", "))
            }
        );
    }
    let mut by_check: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in &m.rows {
        for c in &r.killed {
            by_check.entry(c).or_default().push(&r.name);
        }
    }
    let _ = writeln!(out, "\nper check (the defects and probes it kills):");
    let cw = Check::ALL.iter().map(|c| c.id().len()).max().unwrap_or(0);
    for c in Check::ALL {
        let rows = by_check.get(c.id()).cloned().unwrap_or_default();
        if rows.is_empty() {
            let _ = writeln!(
                out,
                "  {:<cw$}  ✗ kills nothing: a check that cannot fail",
                c.id()
            );
        } else {
            let _ = writeln!(
                out,
                "  {:<cw$}  {:>2}  {}",
                c.id(),
                rows.len(),
                rows.join(", ")
            );
        }
    }
    let survivors: Vec<&str> = m.survivors().map(|r| r.name.as_str()).collect();
    let unkilled = m.unkilled();
    let _ = writeln!(
        out,
        "\n{}: {} of {} defects and probes killed, {} of {} checks kill one, in {:.0} s",
        if m.passed() {
            "self-test passed"
        } else {
            "self-test FAILED"
        },
        m.rows.len() - survivors.len(),
        m.rows.len(),
        Check::ALL.len() - unkilled.len(),
        Check::ALL.len(),
        m.elapsed.as_secs_f64()
    );
    if !survivors.is_empty() {
        let _ = writeln!(out, "  survived: {}", survivors.join(", "));
    }
    let changed: Vec<&str> = m.changed().map(|r| r.name.as_str()).collect();
    if !changed.is_empty() {
        let _ = writeln!(
            out,
            "  caught otherwise than declared (`conform_reference::DEFECTS`): {}",
            changed.join(", ")
        );
    }
    if !unkilled.is_empty() {
        let _ = writeln!(out, "  kill nothing: {}", unkilled.join(", "));
    }
    out
}

/// `conform self-test`: the kill matrix of the reference's seeded defects.
pub fn exec(args: crate::cli::SelfTestArgs) -> Result<ExitCode, CmdError> {
    let plan = SelfTestPlan {
        scenarios: crate::catalog::or_default(args.scenarios, "scenarios")?,
        snapshots: crate::catalog::or_default(args.snapshots, "snapshots")?,
        jobs: args.jobs,
        only: args.only,
    };
    let started = Instant::now();
    let progress = |name: &str| eprintln!("[{:>4.0} s] {name}", started.elapsed().as_secs_f64());
    let m = block_on(run(&plan, progress))??;
    out(&render(&m))?;
    Ok(verdict(m.passed()))
}
