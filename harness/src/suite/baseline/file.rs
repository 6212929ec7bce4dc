//! A baseline file as read: its `[[known]]` and `[[refused]]` entries, each named at its line
//! and column when malformed.

use super::*;

/// A loaded baseline file.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub path: PathBuf,
    /// The digest of the catalog it was written against (`--write-baseline` records it; an
    /// older file has none).
    pub catalog: Option<String>,
    pub entries: Vec<Entry>,
}

/// A baseline file that cannot be read or is malformed, at its file, line and column.
pub type BaselineError = crate::input::InputError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    catalog: Option<String>,
    #[serde(default)]
    known: Vec<RawEntry>,
    #[serde(default)]
    refused: Vec<RawRefused>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: Spanned<String>,
    reason: Spanned<String>,
    #[serde(default)]
    texts: Option<Spanned<String>>,
    #[serde(default)]
    excerpt: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRefused {
    id: Spanned<String>,
    #[serde(default)]
    reason: Option<Spanned<String>>,
    #[serde(default)]
    texts: Option<Spanned<String>>,
    #[serde(default)]
    excerpt: Option<Spanned<String>>,
}

/// Something wrong at a byte offset of the file.
type Wrong = (usize, String);

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: path.to_owned(),
            source,
        })?;
        Baseline::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Baseline, BaselineError> {
        let invalid = |(offset, message): Wrong| {
            let (line, column) = crate::input::line_col(text, offset);
            BaselineError::Invalid {
                path: path.to_owned(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            invalid((
                e.span().map_or(0, |s| s.start),
                e.message().trim().to_owned(),
            ))
        })?;
        let mut entries = Vec::new();
        let mut seen = BTreeSet::new();
        // The first pin of each case, and where it is written: every entry of a case pins the
        // same texts.
        let mut pinned: BTreeMap<(String, Mode), (String, usize)> = BTreeMap::new();
        let known = raw
            .known
            .into_iter()
            .map(|r| (EntryKind::Known, r.id, Some(r.reason), r.texts, r.excerpt));
        let refused = raw
            .refused
            .into_iter()
            .map(|r| (EntryKind::Refused, r.id, r.reason, r.texts, r.excerpt));
        for (kind, id, reason, texts, excerpt) in known.chain(refused) {
            let at = id.span().start;
            let (scenario, mode, check) =
                parse_id(id.get_ref()).map_err(|why| invalid((at, why)))?;
            let line = crate::input::line_col(text, at).0;
            if kind == EntryKind::Refused && (mode.is_none() || check.is_some()) {
                return Err(invalid((
                    at,
                    format!(
                        "`{}`: a refused call is one scenario in one mode: write scenario@mode",
                        id.get_ref()
                    ),
                )));
            }
            let reason = match (kind, &reason) {
                (EntryKind::Known, Some(r)) if r.get_ref().trim().is_empty() => {
                    return Err(invalid((
                        r.span().start,
                        "a known failure needs its reason".to_owned(),
                    )));
                }
                _ => reason
                    .map(|r| r.get_ref().trim().to_owned())
                    .unwrap_or_default(),
            };
            if !seen.insert((kind, id.get_ref().clone())) {
                return Err(invalid((at, format!("`{}` is listed twice", id.get_ref()))));
            }
            let pin = parse_pin(texts.as_ref(), excerpt.as_ref(), mode).map_err(invalid)?;
            if kind == EntryKind::Refused && pin.is_none() {
                return Err(invalid((
                    at,
                    format!(
                        "`{}`: a refused call's entry pins what it says: give its `texts` (`--write-baseline` writes them)",
                        id.get_ref()
                    ),
                )));
            }
            if let (Some(p), Some(m), Some(t)) = (&pin, mode, &texts) {
                match pinned.get(&(scenario.clone(), m)) {
                    Some((first, first_line)) if *first != p.texts => {
                        return Err(invalid((
                            t.span().start,
                            format!(
                                "`{}` pins other texts than the entry at line {first_line} for the same case (one case, one pin)",
                                id.get_ref()
                            ),
                        )));
                    }
                    Some(_) => {}
                    None => {
                        pinned.insert((scenario.clone(), m), (p.texts.clone(), line));
                    }
                }
            }
            entries.push(Entry {
                kind,
                id: id.get_ref().clone(),
                scenario,
                mode,
                check,
                reason,
                pin,
                line,
            });
        }
        Ok(Baseline {
            path: path.to_owned(),
            catalog: raw.catalog,
            entries,
        })
    }

    /// Does a known-failure entry cover `finding` of the case `scenario` in `mode`?
    pub fn covers(&self, scenario: &str, mode: Mode, finding: &Finding) -> bool {
        self.entries
            .iter()
            .any(|e| e.covers(scenario, mode, finding))
    }
}

/// An entry's `texts` and `excerpt`: a digest as `--write-baseline` writes it, of one case (the
/// id names a mode); an excerpt only beside the digest it shows.
fn parse_pin(
    texts: Option<&Spanned<String>>,
    excerpt: Option<&Spanned<String>>,
    mode: Option<Mode>,
) -> Result<Option<Pin>, Wrong> {
    let Some(texts) = texts else {
        return match excerpt {
            Some(e) => Err((
                e.span().start,
                "an `excerpt` shows the texts a `texts` digest pins: give `texts` too".to_owned(),
            )),
            None => Ok(None),
        };
    };
    if mode.is_none() {
        return Err((
            texts.span().start,
            "a pin is of one case in one mode: write the id as scenario@mode or scenario@mode:check-id"
                .to_owned(),
        ));
    }
    if !pin::is_digest(texts.get_ref()) {
        return Err((
            texts.span().start,
            format!(
                "`{}` is not a digest: `sha256:` and 64 lowercase hex digits, as `--write-baseline` writes it",
                texts.get_ref()
            ),
        ));
    }
    Ok(Some(Pin {
        texts: texts.get_ref().clone(),
        excerpt: excerpt.map(|e| e.get_ref().clone()),
    }))
}

/// `scenario[@mode][:check-id]`.
fn parse_id(id: &str) -> Result<(String, Option<Mode>, Option<Check>), String> {
    let (rest, check) = match id.split_once(':') {
        Some((rest, check)) => {
            let known = Check::from_id(check).ok_or_else(|| {
                format!("`{check}` is not a check id (`conform list --checks` lists them)")
            })?;
            (rest, Some(known))
        }
        None => (id, None),
    };
    let (scenario, mode) = match rest.split_once('@') {
        Some((scenario, mode)) => {
            let m = mode
                .parse::<Mode>()
                .map_err(|_| format!("`{mode}` is not a mode (foreground or background)"))?;
            (scenario, Some(m))
        }
        None => (rest, None),
    };
    if scenario.is_empty() || scenario.contains(char::is_whitespace) {
        return Err(format!(
            "`{id}`: write scenario, scenario@mode, scenario:check-id or scenario@mode:check-id"
        ));
    }
    Ok((scenario.to_owned(), mode, check))
}
