//! The catalog a `conform` binary carries: the workspace's `scenarios/` and `snapshots/` as
//! they were when it was built (`build.rs`), named by a digest. Inside conform's own workspace
//! the folders on disk are used, as a developer edits them; anywhere else the embedded catalog
//! is extracted once into a cache folder named by its digest and used from there.

mod extract;
pub mod files;

use std::path::{Path, PathBuf};

pub use extract::ExtractError;

/// The digest of the catalog embedded at build time ([`files::digest`]).
pub const DIGEST: &str = env!("CONFORM_CATALOG_DIGEST");

/// The embedded catalog, as [`files::encode`] wrote it.
pub static BLOB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/catalog.bin"));

/// The digest of the catalog in these folders, by the rule the embedded one was named by: the
/// same files give the same digest wherever they are.
pub fn digest_of(scenarios: &Path, snapshots: &Path) -> std::io::Result<String> {
    Ok(files::digest(&files::encode(&files::collect(
        scenarios, snapshots,
    )?)))
}

/// The default `--scenarios` (`name` = `scenarios`) or `--snapshots` folder: in conform's
/// build workspace, the workspace's own; elsewhere, the embedded catalog's (extracted on first
/// use).
pub fn default_dir(name: &str) -> Result<PathBuf, ExtractError> {
    debug_assert!(matches!(name, "scenarios" | "snapshots"), "{name}");
    if in_workspace() {
        // As before the catalog was embedded: `<name>` in the current folder if it is there
        // (`cargo run` from the workspace's root), else the workspace's.
        let here = PathBuf::from(name);
        return Ok(if here.is_dir() {
            here
        } else {
            workspace().join(name)
        });
    }
    Ok(extract::extracted(DIGEST, BLOB)?.join(name))
}

/// `given` (`--scenarios`, `--snapshots`), else the default folder `name`.
pub fn or_default(given: Option<PathBuf>, name: &str) -> Result<PathBuf, ExtractError> {
    given.map_or_else(|| default_dir(name), Ok)
}

/// Are the default folders the embedded catalog's (not a workspace's, to be edited)?
pub fn defaults_are_embedded() -> bool {
    !in_workspace()
}

/// The workspace conform was built in.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Is the current folder within the workspace conform was built in (and is that still there)?
fn in_workspace() -> bool {
    match (workspace().canonicalize(), std::env::current_dir()) {
        (Ok(workspace), Ok(here)) => here
            .canonicalize()
            .is_ok_and(|here| here.starts_with(&workspace)),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
