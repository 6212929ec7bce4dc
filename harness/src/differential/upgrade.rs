//! `conform upgrade`: a pinned real peer against a candidate version of it, before anyone ships
//! the candidate. Both run every peer scenario that names the peer (same reference, same
//! loopback model); then, ranked by whether it can change what a provider reports:
//!
//! 1. **reports** — a peer scenario's verdict changed (the provider now reports otherwise);
//! 2. **meaning** — a closed value (code, status, enum value, numbering), a count, the order
//!    of kinds, a kind or field the pinned version sent and the candidate does not, a frame the
//!    fakes' schema rejects (of the candidate's and not of the pinned version's: only what
//!    differs between the two is a change);
//! 3. **additive** — a new kind of frame or a new field.
//!
//! For Codex the generated protocol schemas are compared too (every definition's constants:
//! new notifications, requests, enum values). Last, the candidate's wire is judged against the
//! fakes as `conform peers diff` judges the pinned one, with the same explanations: what is
//! unexplained there is what the fakes would get wrong after the upgrade. Nothing is written
//! over the pinned version's fixtures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use conform_protocol::vocab::Provider;
use serde::Serialize;

use super::DiffOptions;
use super::error::{DifferentialError, PeerBinaryError, SchemaChangesError, SdkFlagsError};
use super::learn::{self, Addition};
use super::vocabulary;
use super::wire::{self, Ledger, PeerCase, Wire};
use super::{Difference, Explained, compare, schema_rejections};

/// One side of an upgrade: a peers folder whose `peers.json` names the peer, and the product
/// version it runs.
pub struct Side {
    pub dir: PathBuf,
    pub version: String,
}

pub struct UpgradeOptions {
    /// Folders, filters, deadline and jobs as `conform peers diff` takes them.
    pub diff: DiffOptions,
    /// The peer, as the manifest and the peer scenarios name it.
    pub peer: String,
    pub pinned: Side,
    pub candidate: Side,
}

/// How much a change can matter to a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rank {
    /// A peer scenario's verdict changed.
    Reports,
    /// Values, counts, order, what is gone, what the schema rejects.
    Meaning,
    /// New kinds and fields.
    Additive,
}

impl Rank {
    fn heading(self) -> &'static str {
        match self {
            Rank::Reports => "Changes what a provider reports",
            Rank::Meaning => "Can change what a provider reports",
            Rank::Additive => "Additions (new kinds of frame, new fields)",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct UpgradeChange {
    pub rank: Rank,
    /// The peer scenario that shows it.
    pub scenario: String,
    pub text: String,
}

/// A difference between the candidate's wire and the fake's, and the explanation that keeps
/// it, if any.
#[derive(Debug, Serialize)]
pub struct AgainstFake {
    pub scenario: String,
    pub text: String,
    pub explained: Option<String>,
    /// Unexplained, but closed by what `--accept` writes into the profile ([`learn`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub learnable: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UpgradeReport {
    pub peer: String,
    pub product: Provider,
    pub pinned_version: String,
    pub candidate_version: String,
    /// The candidate is older than the pinned version ([`version::is_downgrade`]).
    pub downgrade: bool,
    pub scenarios: Vec<String>,
    /// The product version the analogs' fakes speak (what an accepted candidate would be
    /// dressed as); `None` for a provider whose fake speaks one version only.
    pub fakes_speak: Option<String>,
    /// The protocol schemas' definitions that changed (Codex), or why they were not read.
    pub vocabulary: Result<Vec<vocabulary::DefinitionChange>, SchemaChangesError>,
    /// How the Agent SDK's command line for the CLI changed (Claude Code only), or why it was
    /// not read ([`super::sdk_flags`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdk_flags: Option<Result<Vec<String>, SdkFlagsError>>,
    pub changes: Vec<UpgradeChange>,
    pub against_fake: Vec<AgainstFake>,
    /// The fields `--accept` writes into the version's profile for the fake to send.
    pub learned: Vec<Addition>,
    /// What accepting the candidate as a peer of its own keeps (not in the JSON report).
    #[serde(skip)]
    pub kept: Kept,
}

/// The candidate's wires as fixtures (by peer scenario), and the explanations (indices into
/// the loaded [`Explained`], kept here) that kept its differences from the fakes.
#[derive(Debug, Default)]
pub struct Kept {
    pub fixtures: BTreeMap<String, String>,
    pub explanations: BTreeSet<usize>,
    pub explained: Explained,
}

impl UpgradeReport {
    pub fn unexplained(&self) -> usize {
        self.against_fake
            .iter()
            .filter(|d| d.explained.is_none())
            .count()
    }

    /// The differences of the fakes neither explained nor closed by what the profile learns:
    /// `--accept` takes a version only when there are none.
    pub fn open_after_learning(&self) -> usize {
        self.against_fake
            .iter()
            .filter(|d| d.explained.is_none() && !d.learnable)
            .count()
    }

    /// 0: nothing a provider could notice changed and the fakes explain the candidate's wire;
    /// 1: otherwise.
    pub fn exit_code(&self) -> i32 {
        let reports = self.changes.iter().any(|c| c.rank == Rank::Reports);
        i32::from(reports || self.unexplained() > 0)
    }
}

/// Runs the peer's scenarios on both sides and compares them.
pub async fn upgrade(opts: &UpgradeOptions) -> Result<UpgradeReport, DifferentialError> {
    let cases: Vec<PeerCase> = wire::peer_cases(&opts.diff.scenarios)?
        .into_iter()
        .filter(|c| c.peer == opts.peer)
        .filter(|c| {
            opts.diff.filters.is_empty() || opts.diff.filters.iter().any(|f| c.id.contains(f))
        })
        .collect();
    let Some(product) = cases.first().map(|c| c.provider) else {
        return Err(DifferentialError::NoScenarioOfPeer(opts.peer.clone()));
    };
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let pinned = wire::ledgers(
        &opts.diff,
        &ids,
        Some(opts.pinned.dir.clone()),
        Default::default(),
    )
    .await?;
    let candidate = wire::ledgers(
        &opts.diff,
        &ids,
        Some(opts.candidate.dir.clone()),
        Default::default(),
    )
    .await?;
    let fakes = wire::run_analogs(&opts.diff, &cases).await?;
    let explained = Explained::load_all(&opts.diff.fixtures)?;
    let mut changes = Vec::new();
    let mut kept = Kept::default();
    let mut judged = Vec::new();
    for case in &cases {
        let (Some(p), Some(c)) = (pinned.get(&case.id), candidate.get(&case.id)) else {
            changes.push(UpgradeChange {
                rank: Rank::Reports,
                scenario: case.id.clone(),
                text: "did not run on both sides (is the peer installed?)".into(),
            });
            continue;
        };
        changes.extend(case_changes(case, p, c, &explained, opts));
        if c.cut_off {
            continue;
        }
        kept.fixtures.insert(case.id.clone(), wire::fixture_of(c));
        if let Some(fake) = fakes.get(&(case.analog.clone(), case.version.clone())) {
            judged.push(Judged::of(
                case,
                wire(case.provider, c),
                wire_of_fake(case, fake),
                &explained,
            ));
        }
    }
    // What a profile learns is judged over every scenario at once: a value one scenario shows
    // and another contradicts is no constant.
    let leaves: Vec<_> = judged
        .iter()
        .map(|j| explained.leave(&j.case.peer))
        .collect();
    let learned = learn::agreed(
        &judged
            .iter()
            .zip(&leaves)
            .map(|(j, leave)| learn::Seen {
                open: &j.open,
                candidate: &j.real,
                fake: &j.fake,
                leave,
            })
            .collect::<Vec<_>>(),
    );
    let against_fake = judged
        .into_iter()
        .flat_map(|j| j.against_fake(&explained, &mut kept.explanations, &learned))
        .collect();
    changes.sort_by(|a, b| (a.rank, &a.scenario).cmp(&(b.rank, &b.scenario)));
    Ok(UpgradeReport {
        peer: opts.peer.clone(),
        product,
        pinned_version: opts.pinned.version.clone(),
        candidate_version: opts.candidate.version.clone(),
        downgrade: version::is_downgrade(&opts.pinned.version, &opts.candidate.version),
        scenarios: ids,
        fakes_speak: cases.iter().find_map(|c| c.version.clone()).or_else(|| {
            conform_fakes::protocols::codec_for(product)
                .default_product_version()
                .map(str::to_owned)
        }),
        vocabulary: schema_changes(product, opts),
        sdk_flags: crate::provider::facts(product)
            .sdk_flags
            .then(|| sdk_flag_changes(opts)),
        changes,
        against_fake,
        learned: learned.into_iter().collect(),
        kept: Kept { explained, ..kept },
    })
}

fn wire(provider: Provider, run: &Ledger) -> Wire {
    wire::wire_of(provider, run)
}

fn wire_of_fake(case: &PeerCase, fake: &Ledger) -> Wire {
    wire(case.provider, fake)
}

/// What changed in one peer scenario from the pinned version to the candidate: its verdict,
/// a run cut off, and every difference of the wires (bar what the peer does only sometimes).
fn case_changes(
    case: &PeerCase,
    pinned: &Ledger,
    candidate: &Ledger,
    explained: &Explained,
    opts: &UpgradeOptions,
) -> Vec<UpgradeChange> {
    let change = |rank, text: String| UpgradeChange {
        rank,
        scenario: case.id.clone(),
        text,
    };
    let mut out = Vec::new();
    if pinned.outcome != candidate.outcome {
        out.push(change(
            Rank::Reports,
            format!(
                "the verdict changed: {} → {}",
                pinned.outcome, candidate.outcome
            ),
        ));
    }
    for (side, run) in [("pinned", pinned), ("candidate", candidate)] {
        if run.cut_off {
            out.push(change(
                Rank::Reports,
                format!("{side}: {}", wire::unfinished(run, case.provider)),
            ));
        }
    }
    if pinned.cut_off || candidate.cut_off {
        return out;
    }
    let (new, old) = (wire(case.provider, candidate), wire(case.provider, pinned));
    let sometimes = |d: &Difference| {
        explained
            .reason(&case.peer, &case.id, d)
            .is_some_and(|(i, _)| explained.difference[i].sometimes)
    };
    let mut differences = compare(case.provider, &new, &old, &explained.leave(&case.peer));
    differences.extend(new_rejections(case, &new, &old));
    let differences = differences.into_iter().filter(|d| !sometimes(d)).collect();
    let now = format!("{} (candidate)", opts.candidate.version);
    let was = format!("{} (pinned)", opts.pinned.version);
    out.extend(
        describe(differences, &now, &was)
            .into_iter()
            .map(|(rank, text)| change(rank, text)),
    );
    out
}

/// The candidate's frames the fakes' schema rejects, bar what it rejects of the pinned
/// version's too: a rejection both versions share is no change of the candidate's.
fn new_rejections(case: &PeerCase, new: &Wire, old: &Wire) -> Vec<Difference> {
    let was = schema_rejections(case.provider, case.version.as_deref(), old);
    schema_rejections(case.provider, case.version.as_deref(), new)
        .into_iter()
        .filter(|d| !was.iter().any(|w| same_rejection(d, w)))
        .collect()
}

/// Whether the schema rejects `now`'s frame of a kind for nothing it did not reject `was`'s
/// for: every clause of its error (`…; …`) is one of `was`'s.
fn same_rejection(now: &Difference, was: &Difference) -> bool {
    match (now, was) {
        (
            Difference::Schema { kind, error },
            Difference::Schema {
                kind: was_kind,
                error: was_error,
            },
        ) if kind == was_kind => {
            let before: BTreeSet<&str> = was_error.split("; ").collect();
            error == was_error || error.split("; ").all(|c| before.contains(c))
        }
        _ => false,
    }
}

/// Differences in words, `now` for the side the differential calls real and `was` for the
/// other, ranked; fields come and go by the dozen, so one line per kind of frame and
/// direction.
fn describe(differences: Vec<Difference>, now: &str, was: &str) -> Vec<(Rank, String)> {
    let mut out = Vec::new();
    let mut fields: BTreeMap<(bool, String), Vec<String>> = BTreeMap::new();
    for d in differences {
        match d {
            Difference::FieldOnlyReal { kind, field } => {
                fields.entry((true, kind)).or_default().push(field)
            }
            Difference::FieldOnlyFake { kind, field } => {
                fields.entry((false, kind)).or_default().push(field)
            }
            d => {
                let rank = match &d {
                    Difference::OnlyReal { .. } => Rank::Additive,
                    _ => Rank::Meaning,
                };
                let text = d
                    .to_string()
                    .replace("the real runtime", now)
                    .replace("the fake", was)
                    .replace("conform's schema rejects", "the fakes' schema rejects")
                    .replace("real:", &format!("{now}:"))
                    .replace("fake:", &format!("{was}:"));
                out.push((rank, text));
            }
        }
    }
    for ((added, kind), fields) in fields {
        let list = fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ");
        out.push(if added {
            (
                Rank::Additive,
                format!("`{kind}`: {now} adds field(s) {list}"),
            )
        } else {
            (
                Rank::Meaning,
                format!("`{kind}`: {now} drops field(s) {list}"),
            )
        });
    }
    out
}

/// One peer scenario's candidate wire against its analog's fake: the differences an
/// explanation keeps (as for the pinned peer), and the open ones.
struct Judged<'a> {
    case: &'a PeerCase,
    real: Wire,
    fake: Wire,
    kept: Vec<Difference>,
    open: Vec<Difference>,
}

impl<'a> Judged<'a> {
    fn of(case: &'a PeerCase, real: Wire, fake: Wire, explained: &Explained) -> Judged<'a> {
        let mut diffs = compare(case.provider, &real, &fake, &explained.leave(&case.peer));
        diffs.extend(schema_rejections(
            case.provider,
            case.version.as_deref(),
            &real,
        ));
        let (kept, open) = diffs
            .into_iter()
            .partition(|d| explained.reason(&case.peer, &case.id, d).is_some());
        Judged {
            case,
            real,
            fake,
            kept,
            open,
        }
    }

    /// Each kept difference with its reason (its explanation's index into `used`), the open
    /// ones described as [`describe`] does — those the profile learns (`learned`) apart.
    fn against_fake(
        self,
        explained: &Explained,
        used: &mut BTreeSet<usize>,
        learned: &BTreeSet<Addition>,
    ) -> Vec<AgainstFake> {
        let case = self.case;
        let closes = |d: &Difference| match d {
            Difference::FieldOnlyReal { kind, field } => {
                let path = field.rsplit_once(':').map_or(field.as_str(), |(p, _)| p);
                learned.iter().any(|a| a.kind == *kind && a.field == path)
            }
            _ => false,
        };
        let (learnable, open): (Vec<_>, Vec<_>) = self.open.into_iter().partition(closes);
        let against = |text: String, explained: Option<String>| AgainstFake {
            scenario: case.id.clone(),
            text,
            explained,
            learnable: false,
        };
        self.kept
            .iter()
            .map(|d| {
                let reason = explained.reason(&case.peer, &case.id, d).map(|(i, r)| {
                    used.insert(i);
                    r.to_owned()
                });
                against(d.to_string(), reason)
            })
            .chain(
                describe(open, "the candidate", "the fake")
                    .into_iter()
                    .map(|(_, text)| against(text, None)),
            )
            .chain(
                describe(learnable, "the candidate", "the fake")
                    .into_iter()
                    .map(|(_, text)| AgainstFake {
                        learnable: true,
                        ..against(text, None)
                    }),
            )
            .collect()
    }
}

/// Codex's generated protocol schemas, pinned against candidate: each generated by its own
/// binary the same way (the kept `fakes/schemas/codex/` files are bundled otherwise).
fn schema_changes(
    product: Provider,
    opts: &UpgradeOptions,
) -> Result<Vec<vocabulary::DefinitionChange>, SchemaChangesError> {
    if !crate::provider::facts(product).publishes_schema {
        return Err(SchemaChangesError::NoSchema(product));
    }
    let generated = |side: &Side| -> Result<vocabulary::DefinitionConstants, SchemaChangesError> {
        let bin = binary(&side.dir, &opts.peer)?;
        let work = tempfile::tempdir().map_err(SchemaChangesError::TempDir)?;
        let schema = vocabulary::codex_schema(&bin, work.path())?;
        Ok(vocabulary::of_schema(&schema))
    };
    Ok(vocabulary::changes(
        &generated(&opts.pinned)?,
        &generated(&opts.candidate)?,
    ))
}

/// The Agent SDK's command line for the CLI, pinned against candidate: each side's SDK is the
/// one installed beside its CLI.
fn sdk_flag_changes(opts: &UpgradeOptions) -> Result<Vec<String>, SdkFlagsError> {
    let argv = |side: &Side| -> Result<Vec<String>, SdkFlagsError> {
        let cli = binary(&side.dir, &opts.peer)?;
        let sdk =
            super::sdk_flags::sdk_of(&cli).ok_or_else(|| SdkFlagsError::NoSdk(cli.clone()))?;
        super::sdk_flags::argv(&sdk)
    };
    Ok(super::sdk_flags::changes(
        &argv(&opts.pinned)?,
        &argv(&opts.candidate)?,
    ))
}

/// The program a peers folder runs for `peer` (its command's first word).
pub fn binary(dir: &Path, peer: &str) -> Result<PathBuf, PeerBinaryError> {
    let peers = crate::proc::peers::Peers::load(dir)?;
    let entry = peers
        .entries
        .get(peer)
        .ok_or_else(|| PeerBinaryError::NoPeer {
            dir: dir.to_owned(),
            peer: peer.to_owned(),
        })?;
    entry
        .command
        .first()
        .map(PathBuf::from)
        .ok_or_else(|| PeerBinaryError::EmptyCommand(peer.to_owned()))
}

mod markdown;
pub mod version;
pub use markdown::markdown;

#[cfg(test)]
mod tests;
