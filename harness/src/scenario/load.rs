//! Loading: every scenario file under a folder, parsed strictly, its preludes spliced in and
//! its references checked ([`super::validate`]).

use std::path::{Path, PathBuf};

use conform_protocol::script::{Script, Step};
use serde::Deserialize;
use toml::Spanned;

use super::validate::{check_file, check_references};
use super::{HeldScript, PRELUDE_DIR, Scenario, ScenarioError, ScenarioFile, invalid};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PreludeFile {
    #[allow(dead_code)]
    #[serde(default)]
    title: Option<String>,
    steps: Vec<Spanned<Step>>,
}

/// Every scenario under `root` (skipping `preludes/`), sorted by id, with preludes expanded.
pub fn discover(root: &Path) -> Result<Vec<Scenario>, Vec<ScenarioError>> {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    walk(root, root, &mut files, &mut errors);
    files.sort();
    let mut scenarios = Vec::new();
    for path in files {
        match load(root, &path) {
            Ok(s) => scenarios.push(s),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        errors = crate::scenario::group::check(&scenarios);
    }
    if errors.is_empty() {
        Ok(scenarios)
    } else {
        Err(errors)
    }
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
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
        path: path.to_owned(),
        source,
    })?;
    let file: ScenarioFile = toml::from_str(&text)
        .map_err(|e| invalid(path, &text, e.span(), e.message().to_owned()))?;
    let id = path
        .strip_prefix(root)
        .unwrap_or(path)
        .with_extension("")
        .to_string_lossy()
        .replace('\\', "/");
    check_file(path, &text, &file)?;
    let mut steps = Vec::new();
    expand(root, path, &text, &file.fake.steps, &mut steps, 0)?;
    check_references(path, &text, &file, &steps)?;
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
    let script = HeldScript::new(Script {
        protocol: file.provider,
        product_version: file.product_version.clone(),
        steps,
    });
    // The steps as written served the expansion; the script is what runs. A step is a wide
    // struct (one optional field per key), and a suite holds every scenario at once.
    let mut file = file;
    file.fake.steps = Vec::new();
    Ok(Scenario {
        id,
        path: path.to_owned(),
        file,
        script,
    })
}

fn expand(
    root: &Path,
    path: &Path,
    text: &str,
    steps: &[Spanned<Step>],
    out: &mut Vec<Step>,
    depth: usize,
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
            out.push(resolved);
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
        let prelude_path = root.join(PRELUDE_DIR).join(format!("{name}.toml"));
        let prelude_text = std::fs::read_to_string(&prelude_path).map_err(|e| {
            invalid(
                path,
                text,
                Some(step.span()),
                format!("prelude `{name}` ({}): {e}", prelude_path.display()),
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
            root,
            &prelude_path,
            &prelude_text,
            &prelude.steps,
            out,
            depth + 1,
        )?;
    }
    Ok(())
}
