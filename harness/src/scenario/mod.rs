//! Scenario files: one TOML file per case under `scenarios/<provider>/…`, documented in
//! `docs/scenarios.md`. Loading turns them into [`Scenario`]s with preludes expanded; any
//! malformed file is rejected with file, line, column and what was expected.

pub mod group;
mod load;
mod validate;
pub mod waits;

pub use load::{Found, Roots, discover, discover_in, discover_wanted, load};

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use conform_protocol::script::{Script, Step};
use conform_protocol::vocab::{
    JobStatus, Mode, PermissionPolicy, Provider, StopReason, TeardownRung, WatchdogStatus,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toml::Spanned;

/// The folder under `scenarios/` that holds shared step lists.
pub const PRELUDE_DIR: &str = "preludes";

/// A scenario as written in its file.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// One line saying what the case proves.
    pub title: String,
    pub provider: Provider,
    /// Modes to run; default both.
    #[serde(default = "all_modes")]
    pub modes: Vec<Mode>,
    /// The task text the parent model delegates (untrusted: it must never appear in a diagnostic).
    #[serde(default = "default_task")]
    pub task: String,
    /// Extra strings that must never reach model-visible text.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// The tool call's `description`, the background job's label shown in its notice (default:
    /// the scenario's id).
    #[serde(default)]
    pub label: Option<String>,
    /// Run only when the suite speaks this product version for the provider
    /// (`conform run --product-version codex=0.169.0`): for upstream codes a pinned subject
    /// has never seen.
    #[serde(default)]
    pub product_version: Option<String>,
    /// Longest the whole run may take before it counts as the subject hanging.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// When completion is expected, in ms after the start (the `start`'s `expectedBy`; default:
    /// the deadline). Past it, a background run with no completion is
    /// `suspect_delivery_failure` and the harness fetches its status with a waiting
    /// `job_output`.
    #[serde(default)]
    pub expected_by_ms: Option<u64>,
    #[serde(default)]
    pub subject: SubjectSection,
    #[serde(default)]
    pub fake: FakeSection,
    #[serde(default)]
    pub cancel: Option<CancelSection>,
    #[serde(default)]
    pub job: JobSection,
    /// A real runtime instead of the fake (named in `ci/peers.toml`; installed by
    /// `conform peers install`, run with `--peers`).
    #[serde(default)]
    pub peer: Option<PeerSection>,
    #[serde(default)]
    pub expect: ExpectSection,
    /// Membership of an isolation group: its members run together, in one subject, once each.
    #[serde(default)]
    pub group: Option<GroupSection>,
    /// Where what this case demands comes from, when it is not what its checks say: a case the
    /// decision records leave open is conform's own practice (`docs/requirements.md`).
    #[serde(default)]
    pub requirement: Option<RequirementSection>,
    /// Why each long wait this case sets is as long as it is (`dispose_grace_ms = "…"`): the
    /// waits that are its point. Any other wait stays at or under 200 ms, the least that still
    /// makes the same thing happen (`conform list --waits`; docs/scenarios.md, "Waits").
    #[serde(default)]
    pub waits: BTreeMap<String, String>,
}

/// What kind of requirement a case's findings stand for, and its source.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequirementSection {
    pub level: RequirementLevel,
    /// The clause of a record, the protocol rule, or why it is conform's own practice.
    pub source: String,
    /// The checks it applies to (ids such as `process.settle-claim`); default: every check of
    /// the subject's.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// `record`: a decision record demands it; `protocol`: the wire or adapter protocol does;
/// `practice`: conform's own stricter practice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RequirementLevel {
    Record,
    Protocol,
    Practice,
}

/// An isolation group's member (`docs/scenarios.md`, isolation groups): the members of a group
/// run at the same time in one subject, each once in its one mode, ordered by releases that
/// wait for each other (`[fake.release] go = "other-member:result"`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    /// The group's name; every member names it, and members live in one folder.
    pub name: String,
    /// Strings that identify this run and that its own model-visible texts may show (its
    /// permission line, its exit code): none may appear in another member's texts.
    #[serde(default)]
    pub markers: Vec<String>,
}

fn all_modes() -> Vec<Mode> {
    Mode::ALL.to_vec()
}

fn default_task() -> String {
    "Carry out the scripted task.".to_owned()
}

/// How the subject is configured and what it is pointed at.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubjectSection {
    /// Permission policy.
    pub permission: Option<PermissionPolicy>,
    /// How long dispose waits after stdin EOF before SIGTERM.
    pub dispose_eof_grace_ms: Option<u64>,
    /// How long dispose waits after SIGTERM before SIGKILL (and after SIGKILL).
    pub dispose_grace_ms: Option<u64>,
    /// What the provider is told to spawn.
    #[serde(default)]
    pub runtime: RuntimeKind,
    /// The child's working directory.
    #[serde(default)]
    pub cwd: CwdKind,
    /// Extra environment for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Names the run's env unsets (sent as `null`: the records' tombstone), even names the
    /// child would inherit from the host.
    #[serde(default)]
    pub env_unset: Vec<String>,
    /// Any other provider configuration, passed through as written (camelCase keys, e.g.
    /// `shutdownTimeoutMs`, `maxTokens`).
    #[serde(default)]
    pub config: serde_json::Map<String, Value>,
}

impl SubjectSection {
    /// The provider's configuration as the `start` sends it: the scenario's own keys and its
    /// named shorthands.
    pub fn provider_config(&self) -> serde_json::Map<String, Value> {
        let mut config = self.config.clone();
        if let Some(p) = &self.permission {
            config.insert("permission".into(), serde_json::json!(p));
        }
        use crate::provider::{DISPOSE_EOF_GRACE, DISPOSE_GRACE};
        if let Some(ms) = self.dispose_eof_grace_ms {
            config.insert(DISPOSE_EOF_GRACE.key.into(), serde_json::json!(ms));
        }
        if let Some(ms) = self.dispose_grace_ms {
            config.insert(DISPOSE_GRACE.key.into(), serde_json::json!(ms));
        }
        config
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeKind {
    /// The scripted fake for the scenario's provider.
    #[default]
    Fake,
    /// A command that does not exist (spawn failure).
    MissingBinary,
    /// The fake behind a launcher: the provider spawns `sh`, which runs the fake as its child
    /// and waits for it (`sh -c` → runtime → its descendants), as a wrapper script would.
    Launched,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CwdKind {
    /// A fresh empty directory per run.
    #[default]
    Workspace,
    /// An absolute path that does not exist.
    Missing,
    /// A relative path.
    Relative,
    /// An existing regular file.
    File,
}

/// The fake runtime's script.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FakeSection {
    #[serde(default)]
    #[schemars(with = "Vec<Step>")]
    pub steps: Vec<Spanned<Step>>,
    /// When to release each `await` name: `immediately` (default), `dispatched`, `result`,
    /// `cancel` (after the harness sent the cancel or the dispose), `peeked` (once the subject
    /// answered the `[job] peek_at` read) or `expected-by` (once the run's `expectedBy`
    /// passed); in an isolation group also
    /// `<member>:<milestone>`, when another member of the group reached it (`b:result`,
    /// `b:checkpoint:asked`, `b:awaiting:hold`; the milestones are listed in
    /// `docs/scenarios.md`).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    pub release: BTreeMap<String, Trigger>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub enum Trigger {
    #[default]
    Immediately,
    Dispatched,
    Result,
    Cancel,
    /// The subject answered the `job_output` without wait (`[job] peek_at`).
    Peeked,
    /// The run's `expectedBy` passed.
    ExpectedBy,
    /// Another member of the run's isolation group reached this milestone.
    Member {
        member: String,
        milestone: String,
    },
}

/// What a member of an isolation group can wait for in another: the subject's messages for
/// it, the harness's cancel, its fake's checkpoints and awaits, and the end of its run.
pub const MILESTONES: &[&str] = &[
    "dispatched",
    "start-rejected",
    "result",
    "settled",
    "tool-result",
    "notice",
    "cancel",
    "over",
    "checkpoint:<name>",
    "awaiting:<name>",
];

/// Whether `m` is one of [`MILESTONES`] (the named ones with a non-empty name).
pub fn is_milestone(m: &str) -> bool {
    MILESTONES.contains(&m)
        || ["checkpoint:", "awaiting:"]
            .iter()
            .any(|p| m.strip_prefix(p).is_some_and(|n| !n.is_empty()))
}

impl TryFrom<String> for Trigger {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Ok(match s.as_str() {
            "immediately" => Trigger::Immediately,
            "dispatched" => Trigger::Dispatched,
            "result" => Trigger::Result,
            "cancel" => Trigger::Cancel,
            "peeked" => Trigger::Peeked,
            "expected-by" => Trigger::ExpectedBy,
            _ => match s.split_once(':') {
                Some((member, milestone)) if !member.is_empty() && is_milestone(milestone) => {
                    Trigger::Member {
                        member: member.to_owned(),
                        milestone: milestone.to_owned(),
                    }
                }
                _ => {
                    return Err(format!(
                        "unknown release `{s}`, expected one of `immediately`, `dispatched`, `result`, `cancel`, `peeked`, `expected-by`, or `<member>:<milestone>` with a milestone of {}",
                        MILESTONES.join(", ")
                    ));
                }
            },
        })
    }
}

impl From<Trigger> for String {
    fn from(t: Trigger) -> String {
        match t {
            Trigger::Immediately => "immediately".into(),
            Trigger::Dispatched => "dispatched".into(),
            Trigger::Result => "result".into(),
            Trigger::Cancel => "cancel".into(),
            Trigger::Peeked => "peeked".into(),
            Trigger::ExpectedBy => "expected-by".into(),
            Trigger::Member { member, milestone } => format!("{member}:{milestone}"),
        }
    }
}

/// A real peer runs this case: its name in the peers manifest (`ci/peers.toml`), what the model
/// endpoint does for it, and the fake scenario whose wire its wire is compared with
/// (`conform peers`).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerSection {
    /// The peer's name in `ci/peers.toml` and the `peers.json` installed from it (`dsh-sdk`,
    /// `codex-0.147.0`, `acp-example`, …).
    pub name: String,
    /// The model endpoint's behaviour: `success`, `slow`, `http-401`, `http-429`,
    /// `http-500`, `mid-stream`, `tool`, `tool-reviewed` (a tool call whose Codex approval review the model allows; absent for a peer that calls no model).
    pub model: Option<String>,
    /// The fake scenario this case's real wire is compared with.
    pub analog: Option<String>,
    /// Kill the real runtime (SIGKILL, from outside the provider) at this checkpoint: the
    /// first notification of this kind (`turn/start`).
    pub kill_at: Option<String>,
    /// The product version the analog's fake speaks (`0.169.0` for a Codex 0.169.0 peer).
    pub product_version: Option<String>,
}

/// What the parent model does with a background job besides waiting for its notice.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSection {
    /// How many times `job_output` (with `wait`) is called once the job is terminal; reads are
    /// idempotent, so every answer must be the same. Default 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub job_output_calls: u32,
    /// Call `job_kill` once the completion notice arrived: the job had already finished, so
    /// nothing may change (no second notice, the same status).
    #[serde(default)]
    pub kill_after_notice: bool,
    /// Call `job_output` without `wait` when the fake reaches this checkpoint, while the job
    /// still runs: the answer comes at once, with the job's running status.
    #[serde(default)]
    pub peek_at: Option<String>,
}

impl Default for JobSection {
    fn default() -> Self {
        JobSection {
            job_output_calls: 1,
            kill_after_notice: false,
            peek_at: None,
        }
    }
}

fn one() -> u32 {
    1
}

/// The `[cancel] at` that names no checkpoint: the tool call's signal is already aborted when
/// `start()` is called (the `start` says `aborted: true`), so the provider rejects the start
/// and spawns nothing. Foreground only.
pub const BEFORE_START: &str = "before-start";

/// Cancellation at a checkpoint: by default the local cancel (the foreground call is aborted,
/// or the background job killed); with `by = "dispose"` the host's own dispose of the run.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelSection {
    /// Cancel when the fake reports this checkpoint; `before-start` (reserved, no checkpoint):
    /// the tool call's signal is already aborted when `start()` is called, so no runtime may
    /// ever run (foreground only, no steps, `[expect] start_error`).
    pub at: String,
    /// Who cancels: `signal` (the local cancel: abort / `job_kill`) or `dispose` (the host
    /// disposes the run handle itself, as its own teardown does; due before the run is
    /// published, it waits for `dispatched`). A subject whose hello lists no `dispose`
    /// control skips the case.
    #[serde(default)]
    pub by: CancelBy,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CancelBy {
    #[default]
    Signal,
    Dispose,
}

/// Contract-level expectations. With `stop_reason` set, the result's diagnostic must equal
/// `diagnostic` exactly, and an absent `diagnostic` means the result must carry none.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpectSection {
    /// `start()` must reject with exactly this model-visible message.
    pub start_error: Option<String>,
    /// The shared stop reason.
    pub stop_reason: Option<StopReason>,
    pub diagnostic: Option<String>,
    /// Concatenated text of the result's output blocks.
    pub output: Option<String>,
    /// Background job status.
    pub job_status: Option<JobStatus>,
    /// Background only: the delivery watchdog's last status (default `completed`; `recovered`
    /// where the completion is expected late, after `expected_by_ms`).
    pub watchdog: Option<WatchdogStatus>,
    /// Which rung of the teardown ladder ended the runtime.
    pub teardown: Option<TeardownRung>,
    /// An upstream code newer than the subject's pin: the diagnostic's category must be this code
    /// or `unknown` (the report lists which), instead of an exact `diagnostic`.
    pub upstream_code: Option<String>,
    /// `false`: the start is rejected before anything is spawned (a configuration the provider
    /// refuses), so no process of the run may ever have run (`process.nothing-spawned`); a
    /// start aborted before it began says so by itself.
    pub spawns: Option<bool>,
}

/// A loaded, expanded scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Stable id: the path under `scenarios/` without `.toml`, e.g. `acp/stop/max-turn-requests`.
    pub id: String,
    pub path: PathBuf,
    /// The file as written, but its `fake.steps` (emptied once expanded into `script`).
    pub file: ScenarioFile,
    /// The fake's script with preludes spliced in.
    pub script: HeldScript,
    /// Where its snapshots are kept when not in the suite's folder: a host's scenarios added
    /// beside the catalog (`--add DIR`) keep theirs in `DIR/snapshots`.
    pub snapshots: Option<PathBuf>,
}

impl CancelSection {
    /// The signal is aborted before the start ([`BEFORE_START`]), not at a checkpoint.
    pub fn before_start(&self) -> bool {
        self.at == BEFORE_START
    }
}

impl Scenario {
    /// The label the run's tool call carries: the file's `label`, else the id.
    pub fn label(&self) -> &str {
        self.file.label.as_deref().unwrap_or(&self.id)
    }

    /// The tool call's signal is already aborted when `start()` is called
    /// (`[cancel] at = "before-start"`).
    /// Whether the start is rejected before anything is spawned: aborted before it began, or
    /// `[expect] spawns = false`.
    pub fn spawns_nothing(&self) -> bool {
        self.aborted_before_start() || self.file.expect.spawns == Some(false)
    }

    /// The waits this case sets ([`waits::set_waits`]), its script's included.
    pub fn set_waits(&self) -> Vec<waits::SetWait> {
        waits::set_waits(&self.file, &self.script.steps())
    }

    pub fn aborted_before_start(&self) -> bool {
        self.file
            .cancel
            .as_ref()
            .is_some_and(CancelSection::before_start)
    }
}

/// A scenario file that could not be loaded.
/// A scenario file that cannot be read or is malformed, at its file, line and column.
pub type ScenarioError = crate::input::InputError;

fn invalid(path: &Path, text: &str, span: Option<Range<usize>>, message: String) -> ScenarioError {
    ScenarioError::invalid(path, text, span, message)
}

pub use crate::input::line_col;

/// A scenario's expanded script with its steps held as the JSON the fake reads: a parsed
/// [`Step`] is a wide struct (1.8 KB, one optional field per key) and its JSON about a tenth of
/// that, and a suite holds every scenario at once (3568 steps: 6.4 MB parsed, 0.54 MB as JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct HeldScript {
    pub protocol: Provider,
    pub product_version: Option<String>,
    steps: Vec<Box<str>>,
}

impl HeldScript {
    pub fn new(script: Script) -> HeldScript {
        let mut held = HeldScript {
            protocol: script.protocol,
            product_version: script.product_version,
            steps: Vec::new(),
        };
        held.set_steps(script.steps);
        held
    }

    /// A script whose steps are already JSON (each as [`HeldScript::set_steps`] writes it).
    pub(crate) fn from_json(
        protocol: Provider,
        product_version: Option<String>,
        steps: Vec<Box<str>>,
    ) -> HeldScript {
        HeldScript {
            protocol,
            product_version,
            steps,
        }
    }

    /// The steps, parsed again.
    pub fn steps(&self) -> Vec<Step> {
        self.steps
            .iter()
            .map(|s| serde_json::from_str(s).expect("a step conform serialized"))
            .collect()
    }

    pub fn set_steps(&mut self, steps: Vec<Step>) {
        self.steps = steps
            .iter()
            .map(|s| {
                serde_json::to_string(s)
                    .expect("a step serializes")
                    .into_boxed_str()
            })
            .collect();
    }

    /// The script as the fake reads it.
    pub fn script(&self) -> Script {
        Script {
            protocol: self.protocol,
            product_version: self.product_version.clone(),
            steps: self.steps(),
        }
    }
}

/// JSON Schema of a scenario file, for editors (`conform schema scenario`).
pub fn json_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(ScenarioFile)).expect("schema serialises")
}

#[cfg(test)]
mod tests;
