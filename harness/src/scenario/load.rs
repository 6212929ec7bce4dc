//! Loading: every scenario file under a folder, parsed strictly, its preludes spliced in and
//! its references checked ([`super::validate`]).

use std::path::{Path, PathBuf};

use conform_protocol::script::Step;
use serde::Deserialize;
use toml::Spanned;

use super::validate::{check_file, check_references, check_waits};
use super::{HeldScript, PRELUDE_DIR, Scenario, ScenarioError, ScenarioFile, invalid};

/// The largest scenario or prelude file: the catalog's largest is under 4 KiB. Parsing costs
/// far more memory than the text (a step is a wide struct), so this bounds what loading costs.
pub const MAX_FILE_BYTES: u64 = 128 * 1024;

/// The most steps a scenario may have once its preludes are spliced in (includes multiply:
/// a prelude included many times, including others), and the most bytes they may take as the
/// JSON the fake reads. The catalog's largest scenarios have a few dozen steps.
pub const MAX_STEPS: usize = 4096;
pub const MAX_SCRIPT_BYTES: usize = 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PreludeFile {
    #[allow(dead_code)]
    #[serde(default)]
    title: Option<String>,
    steps: Vec<Spanned<Step>>,
}

/// Where a scenario's includes are found: its own root's `preludes/`, then (for a host's
/// scenarios added beside the catalog) the catalog's.
#[derive(Clone, Copy)]
pub struct Roots<'a> {
    pub own: &'a Path,
    pub shared: Option<&'a Path>,
}

impl Roots<'_> {
    fn prelude(&self, name: &str) -> PathBuf {
        let file = format!("{name}.toml");
        let own = self.own.join(PRELUDE_DIR).join(&file);
        match self.shared {
            Some(shared) if !own.exists() => shared.join(PRELUDE_DIR).join(&file),
            _ => own,
        }
    }
}

/// Every scenario under `root` (skipping `preludes/`), sorted by id, with preludes expanded.
pub fn discover(root: &Path) -> Result<Vec<Scenario>, Vec<ScenarioError>> {
    discover_in(Roots {
        own: root,
        shared: None,
    })
}

/// [`discover`] with includes found as `roots` says.
pub fn discover_in(roots: Roots) -> Result<Vec<Scenario>, Vec<ScenarioError>> {
    discover_wanted(roots, None).map(|found| found.scenarios)
}

/// What [`discover_wanted`] found: every scenario file with its id, and the scenarios loaded.
pub struct Found {
    pub files: Vec<(String, PathBuf)>,
    pub scenarios: Vec<Scenario>,
}

/// [`discover_in`], loading only the scenarios whose id `wanted` keeps and the other files of
/// their folders (an isolation group never spans folders, so a kept member's group is loaded
/// whole); `None` loads every one. Every file is in [`Found::files`], loaded or not: a
/// filtered run reads only what it runs, and a file it leaves out is judged when it is run.
pub fn discover_wanted(
    roots: Roots,
    wanted: Option<&dyn Fn(&str) -> bool>,
) -> Result<Found, Vec<ScenarioError>> {
    let root = roots.own;
    let mut files = Vec::new();
    let mut errors = Vec::new();
    walk(root, root, &mut files, &mut errors);
    files.sort();
    let ids: Vec<String> = files.iter().map(|p| id_of(root, p)).collect();
    let folders: std::collections::BTreeSet<&Path> = match wanted {
        None => files.iter().filter_map(|p| p.parent()).collect(),
        Some(wanted) => files
            .iter()
            .zip(&ids)
            .filter(|(_, id)| wanted(id))
            .filter_map(|(p, _)| p.parent())
            .collect(),
    };
    let mut scenarios = Vec::new();
    for path in files
        .iter()
        .filter(|p| p.parent().is_some_and(|f| folders.contains(f)))
    {
        match load_in(roots, path) {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        errors = crate::scenario::group::check(&scenarios);
    }
    if errors.is_empty() {
        Ok(Found {
            files: ids.into_iter().zip(files).collect(),
            scenarios,
        })
    } else {
        Err(errors)
    }
}

/// A scenario's id: its path under the root, without `.toml`, with `/` between folders.
fn id_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .with_extension("")
        .to_string_lossy()
        .replace('\\', "/")
}

pub(super) fn walk(
    root: &Path,
    dir: &Path,
    out: &mut Vec<PathBuf>,
    errors: &mut Vec<ScenarioError>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(source) => {
            errors.push(ScenarioError::Io {
                path: dir.to_owned(),
                source,
            });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if dir == root && entry.file_name() == PRELUDE_DIR {
                continue;
            }
            walk(root, &path, out, errors);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

/// Loads one scenario file.
pub fn load(root: &Path, path: &Path) -> Result<Scenario, ScenarioError> {
    load_in(
        Roots {
            own: root,
            shared: None,
        },
        path,
    )
}

/// [`load`] with includes found as `roots` says.
pub fn load_in(roots: Roots, path: &Path) -> Result<Scenario, ScenarioError> {
    let root = roots.own;
    let text = crate::input::read_bounded(path, MAX_FILE_BYTES, "a scenario file")?;
    let file: ScenarioFile = toml::from_str(&text)
        .map_err(|e| invalid(path, &text, e.span(), e.message().to_owned()))?;
    let id = id_of(root, path);
    check_file(path, &text, &file)?;
    let mut steps = Expanded::default();
    expand(roots, path, &text, &file.fake.steps, &mut steps, 0, None)?;
    let Expanded { steps, json, .. } = steps;
    check_references(path, &text, &file, &steps)?;
    check_waits(path, &text, &file, &steps)?;
    if let Some(model) = file.peer.as_ref().and_then(|p| p.model.as_ref())
        && conform_fakes::model::Behaviour::from_name(model).is_none()
    {
        let names: Vec<&str> = conform_fakes::model::Behaviour::ALL
            .iter()
            .map(|(n, _)| *n)
            .collect();
        return Err(invalid(
            path,
            &text,
            None,
            format!(
                "`[peer] model` is `{}`, not a model behaviour ({})",
                model,
                names.join(", ")
            ),
        ));
    }
    // Held as the JSON the bound was counted on: serialising a thousand scenarios' steps
    // again is most of what loading the catalog costs in a debug build.
    let script = HeldScript::from_json(file.provider, file.product_version.clone(), json);
    // The steps as written served the expansion; the script is what runs. A step is a wide
    // struct (one optional field per key), and a suite holds every scenario at once.
    let mut file = file;
    file.fake.steps = Vec::new();
    Ok(Scenario {
        id,
        path: path.to_owned(),
        file,
        script,
        snapshots: None,
    })
}

/// The steps expanded so far, and their size as JSON.
#[derive(Default)]
struct Expanded {
    steps: Vec<Step>,
    /// Each step as JSON, as the fake reads it.
    json: Vec<Box<str>>,
    bytes: usize,
}

impl Expanded {
    /// Adds a step; says which bound it breaks, if it does.
    fn push(&mut self, step: Step) -> Result<(), String> {
        let json = serde_json::to_string(&step).expect("a step serializes");
        self.bytes += json.len();
        self.json.push(json.into_boxed_str());
        self.steps.push(step);
        if self.steps.len() > MAX_STEPS {
            return Err(format!(
                "the script has more than {MAX_STEPS} steps with its preludes spliced in (the limit)"
            ));
        }
        if self.bytes > MAX_SCRIPT_BYTES {
            return Err(format!(
                "the script is over {MAX_SCRIPT_BYTES} bytes with its preludes spliced in (the limit)"
            ));
        }
        Ok(())
    }
}

/// Where in the scenario file an include was written: a bound broken inside a prelude is said
/// there (the scenario is what is too large, not the prelude).
type Outer<'a> = Option<(&'a Path, &'a str, std::ops::Range<usize>)>;

/// Splices `steps` into `out`, preludes expanded. A bound broken is said at the scenario's step
/// that broke it: the step itself, or the include (`outer`) it came from.
fn expand(
    roots: Roots,
    path: &Path,
    text: &str,
    steps: &[Spanned<Step>],
    out: &mut Expanded,
    depth: usize,
    outer: Outer,
) -> Result<(), ScenarioError> {
    for step in steps {
        let action = step
            .get_ref()
            .check()
            .map_err(|m| invalid(path, text, Some(step.span()), m))?;
        if action != "include" {
            let mut resolved = step.get_ref().clone();
            conform_protocol::script::resolve_json_literals(&mut resolved)
                .map_err(|m| invalid(path, text, Some(step.span()), m))?;
            out.push(resolved).map_err(|m| match &outer {
                Some((p, t, span)) => invalid(p, t, Some(span.clone()), m),
                None => invalid(path, text, Some(step.span()), m),
            })?;
            continue;
        }
        let name = step.get_ref().include.as_deref().unwrap_or_default();
        if depth > 4 {
            return Err(invalid(
                path,
                text,
                Some(step.span()),
                format!("prelude `{name}` includes itself (too deep)"),
            ));
        }
        let prelude_path = roots.prelude(name);
        let prelude_text = crate::input::read_bounded(&prelude_path, MAX_FILE_BYTES, "a prelude")
            .map_err(|e| {
            invalid(
                path,
                text,
                Some(step.span()),
                format!("prelude `{name}`: {e}"),
            )
        })?;
        let prelude: PreludeFile = toml::from_str(&prelude_text).map_err(|e| {
            invalid(
                &prelude_path,
                &prelude_text,
                e.span(),
                e.message().to_owned(),
            )
        })?;
        expand(
            roots,
            &prelude_path,
            &prelude_text,
            &prelude.steps,
            out,
            depth + 1,
            outer.clone().or(Some((path, text, step.span()))),
        )?;
    }
    Ok(())
}
