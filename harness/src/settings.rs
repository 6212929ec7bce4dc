//! How a suite runs, resolved once from the command line into one checked struct that the
//! suite and each run read as they are: a new option is a field here and the code that obeys
//! it, nothing in between. Each default is written once, in its `#[arg]`;
//! [`Settings::default`] is what the command line gives when no flag is set.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, FromArgMatches};
use conform_protocol::vocab::Provider;

/// The flags of `conform run` that decide how its runs are run (also the settings of the
/// other commands that run a suite, from their own flags).
#[derive(Clone, Debug, Args)]
pub struct Settings {
    /// The subject command line (run with `sh -c`). Default: the reference subject.
    #[arg(long)]
    pub subject: Option<String>,
    /// Write every differing or missing snapshot as accepted (read the diffs first).
    /// A snapshot file that cannot be read is never overwritten: delete it to re-record it.
    #[arg(long)]
    pub accept: bool,
    /// Runs in flight at once (all in one subject process): `auto` (up to 8 per core, started
    /// while the machine's run queue has room: runs mostly wait) or a number, at least 1.
    #[arg(long, short = 'j', default_value = "auto", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<Jobs>()))]
    pub jobs: Jobs,
    /// Per-run deadline in milliseconds, unless a scenario sets its own; at least 1.
    #[arg(long = "deadline-ms", default_value = "20000", value_parser = millis(), value_name = "DEADLINE_MS")]
    pub deadline: Duration,
    /// When completion is expected, in ms after each start (the `start`'s `expectedBy`),
    /// unless a scenario sets its own; default: the deadline. A background run with nothing
    /// delivered by then turns `suspect_delivery_failure`, and the harness fetches its status
    /// with a waiting `job_output`.
    #[arg(long = "expected-by-ms", value_parser = millis(), value_name = "EXPECTED_BY_MS")]
    pub expected_by: Option<Duration>,
    /// How long the subject has to answer `hello`, in milliseconds; at least 1.
    #[arg(long = "hello-timeout-ms", default_value = "20000", value_parser = millis(), value_name = "HELLO_TIMEOUT_MS")]
    pub hello_timeout: Duration,
    /// The real peers' folder (`ci/peers` installs them and writes its `peers.json`): scenarios
    /// with a `[peer]` run only with it.
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
    /// A run in which every selected case was skipped exits 0 instead of 2.
    #[arg(long)]
    pub allow_skips: bool,
    /// The strong settling mode: each runtime starts in a cgroup v2 of its own, whose
    /// `populated` flag proves the tree gone and whose `cgroup.kill` sweeps it. Needs a
    /// writable cgroup v2 hierarchy; where there is none the report says why and settling is
    /// judged from /proc alone.
    #[arg(long)]
    pub cgroup: bool,
    /// The cgroup v2 folder under which `--cgroup` makes the suite's own (default: the
    /// harness's cgroup), e.g. a delegated one.
    #[arg(long, value_name = "DIR", requires = "cgroup")]
    pub cgroup_parent: Option<PathBuf>,
    /// The product version a provider's fake speaks, e.g. `codex=0.169.0` or `dsh-sdk=0.1.1`
    /// (repeatable).
    /// Scenarios that name a product version run only when it is selected.
    #[arg(long = "product-version", value_name = "PROVIDER=VERSION", value_parser = product_version)]
    pub product_versions: Vec<(Provider, String)>,
    /// Which requirements fail a case: `records` (only what a decision record demands),
    /// `protocol` (also the wire and adapter protocols), `all` (also conform's own practice).
    /// The others are listed as advisories. `conform list --checks` shows each one's source.
    #[arg(long, value_enum, default_value_t = Strictness::All)]
    pub strictness: Strictness,
    /// Print transcripts for passing cases too.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

/// How strict a suite is: which kinds of requirement fail a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Strictness {
    Records,
    Protocol,
    All,
}

impl Strictness {
    pub fn as_str(self) -> &'static str {
        match self {
            Strictness::Records => "records",
            Strictness::Protocol => "protocol",
            Strictness::All => "all",
        }
    }
}

impl Default for Settings {
    /// The settings of `conform run` without flags.
    fn default() -> Settings {
        let cmd = Settings::augment_args(clap::Command::new("conform"));
        let matches = cmd
            .try_get_matches_from(["conform"])
            .expect("no flag is required");
        Settings::from_arg_matches(&matches).expect("the defaults parse")
    }
}

impl Settings {
    /// The product version each provider's fake speaks (`--product-version`; the last one
    /// given for a provider wins).
    pub fn product_version(&self, provider: Provider) -> Option<&String> {
        self.product_versions
            .iter()
            .rev()
            .find(|(p, _)| *p == provider)
            .map(|(_, v)| v)
    }

    /// Provider → product version, for reports.
    pub fn product_version_map(&self) -> BTreeMap<Provider, String> {
        self.product_versions.iter().cloned().collect()
    }
}

/// Milliseconds, at least 1.
fn millis() -> impl clap::builder::TypedValueParser<Value = Duration> {
    use clap::builder::TypedValueParser as _;
    clap::value_parser!(u64)
        .range(1..)
        .map(Duration::from_millis)
}

/// `PROVIDER=VERSION`, for a version the provider's fake can speak: an unknown one is a usage
/// error before anything runs, naming the known ones.
fn product_version(s: &str) -> Result<(Provider, String), String> {
    let Some((p, v)) = s.split_once('=').filter(|(_, v)| !v.is_empty()) else {
        return Err(format!("takes PROVIDER=VERSION, got `{s}`"));
    };
    let provider: Provider = p.parse().map_err(|e| format!("{e}"))?;
    conform_fakes::protocols::codec_for(provider)
        .set_product_version(Some(v))
        .map_err(|e| e.to_string())?;
    Ok((provider, v.to_owned()))
}

/// `<name>` in the current folder if it exists, else the one of the workspace conform was
/// built in (so `cargo run` works from any sub-folder): the workspace's own folders (`fakes`,
/// `ci`). The scenarios and snapshots are the catalog's: [`crate::catalog::default_dir`].
pub fn default_dir(name: &str) -> PathBuf {
    let here = PathBuf::from(name);
    if here.is_dir() {
        return here;
    }
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
}

/// `--jobs`: `auto`, or a fixed number of runs in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jobs {
    Auto,
    Fixed(usize),
}

/// The most runs per core `auto` lets in flight. Measured on 2 cores (docs/performance.md):
/// the catalog's runs wait far more than they compute, and past 8 per core the runs' own
/// tree scans and start-ups fill the queue before the waits do.
pub const AUTO_PER_CORE: usize = 8;

impl Jobs {
    /// The most runs in flight at once.
    pub fn most(self) -> usize {
        match self {
            Jobs::Auto => cores() * AUTO_PER_CORE,
            Jobs::Fixed(n) => n.max(1),
        }
    }
}

impl std::fmt::Display for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Jobs::Auto => write!(f, "auto ({} at most on {} cores)", self.most(), cores()),
            Jobs::Fixed(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for Jobs {
    type Err = String;
    fn from_str(s: &str) -> Result<Jobs, String> {
        if s == "auto" {
            return Ok(Jobs::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Jobs::Fixed(n)),
            _ => Err(format!(
                "takes `auto` or a number of runs, at least 1; got `{s}`"
            )),
        }
    }
}

/// The CPUs this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_command_lines() {
        let s = Settings::default();
        assert_eq!(s.jobs, Jobs::Auto);
        assert_eq!(s.deadline, Duration::from_secs(20));
        assert_eq!(s.hello_timeout, Duration::from_secs(20));
        assert_eq!(s.expected_by, None);
        assert!(s.product_versions.is_empty());
    }

    #[test]
    fn product_versions_are_read_and_bad_ones_named() {
        assert_eq!(
            product_version("codex=0.169.0"),
            Ok((Provider::Codex, "0.169.0".to_owned()))
        );
        assert_eq!(
            product_version("codex="),
            Err("takes PROVIDER=VERSION, got `codex=`".to_owned())
        );
        assert!(product_version("nope=1").is_err());
        assert_eq!(
            product_version("codex=9.9.9"),
            Err(
                "unknown Codex product version \"9.9.9\" (known: 0.147.0, 0.169.0, 0.171.0)"
                    .to_owned()
            )
        );
        assert!(product_version("dsh-sdk=0.1.1").is_ok());
        assert!(
            product_version("acp=1.9.0")
                .unwrap_err()
                .contains("has no product versions")
        );
    }
}
