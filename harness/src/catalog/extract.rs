//! The embedded catalog written out once per digest: into `<cache>/conform/catalog-<digest>`
//! (`$XDG_CACHE_HOME`, else `~/.cache`), or under the temporary folder where the cache cannot
//! be written. Each extraction writes a sibling temporary folder and renames it into place, so
//! a folder by that name is always whole; of two racing extractors the loser uses the winner's.
//! A folder found there is used only if its digest is still the one it is named by.

use std::path::{Path, PathBuf};

use super::files;

/// No folder could take the embedded catalog: each one tried, with why.
#[derive(Debug, thiserror::Error)]
#[error(
    "the embedded catalog could not be extracted ({}); set XDG_CACHE_HOME to a writable folder, or pass --scenarios and --snapshots",
    .tried.iter().map(|(dir, e)| format!("{}: {e}", dir.display())).collect::<Vec<_>>().join("; ")
)]
pub struct ExtractError {
    pub tried: Vec<(PathBuf, std::io::Error)>,
}

/// The folder holding the catalog `blob` (named `digest`), extracted if it is not yet; found
/// once per process (a command asks for the scenarios and the snapshots).
pub fn extracted(digest: &str, blob: &[u8]) -> Result<PathBuf, ExtractError> {
    static FOUND: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(dir) = FOUND.get() {
        return Ok(dir.clone());
    }
    let mut tried = Vec::new();
    for base in bases() {
        let dir = base.join(format!("catalog-{digest}"));
        match extract_into(&dir, digest, blob) {
            Ok(()) => return Ok(FOUND.get_or_init(|| dir).clone()),
            Err(e) => tried.push((dir, e)),
        }
    }
    Err(ExtractError { tried })
}

/// Where to try, in order: the user's cache, then the temporary folder (per user: another
/// user's folder there is not to be trusted or written).
fn bases() -> Vec<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .filter(|p| p.is_absolute());
    let temp = std::env::temp_dir().join(format!("conform-{}", rustix::process::getuid().as_raw()));
    cache
        .map(|c| c.join("conform"))
        .into_iter()
        .chain([temp])
        .collect()
}

/// `dir` holds the catalog `blob` (named `digest`) afterwards: already there, written now, or
/// written by a racer.
pub fn extract_into(dir: &Path, digest: &str, blob: &[u8]) -> std::io::Result<()> {
    let parent = dir.parent().expect("a catalog folder has a parent");
    let name = dir.file_name().expect("named").to_string_lossy();
    if dir.is_dir() {
        // Whole unless something took files out since (a cleaner of the temporary folder):
        // then it is set aside and written again.
        if super::digest_of(&dir.join("scenarios"), &dir.join("snapshots"))
            .is_ok_and(|d| d == digest)
        {
            return Ok(());
        }
        let aside = tempfile::Builder::new()
            .prefix(&format!(".{name}.damaged."))
            .tempdir_in(parent)?;
        match std::fs::rename(dir, aside.path().join("old")) {
            // Removed with `aside`; a racer may have set it aside first.
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .tempdir_in(parent)?;
    let files = files::decode(blob).map_err(std::io::Error::other)?;
    for f in &files {
        let path = tmp.path().join(&f.path);
        std::fs::create_dir_all(path.parent().expect("under the folder"))?;
        std::fs::write(&path, &f.bytes)?;
    }
    match std::fs::rename(tmp.path(), dir) {
        // The temporary folder is the catalog folder now: nothing to remove.
        Ok(()) => {
            let _ = tmp.keep();
            Ok(())
        }
        // Another extractor renamed its folder first (ours is removed as `tmp` drops).
        Err(_) if dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}
