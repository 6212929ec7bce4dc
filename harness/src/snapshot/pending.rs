//! Pending snapshots: a run's texts where they differ from the stored snapshot (or none is
//! stored), kept in a folder of their own until `conform review` accepts or rejects them. They
//! never go beside the stored snapshots: that folder is a checkout (a host's own, with
//! `--snapshots`), and a red run must leave its `git status` clean.
//!
//! A pending file is insta's `<name>.snap.new`, in one subfolder per snapshots folder (two
//! checkouts sharing a target folder never take each other's). Its header's `info` says what
//! review needs: the snapshots folder it belongs to, its scenario, and the SHA-256 of the stored
//! snapshot it was compared with, so that accepting it refuses once that snapshot has changed.
//! The folder holds untrusted files like the snapshots folder (`snapshot/file.rs`): links, FIFOs,
//! devices and oversized files are refused, never followed or read.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::file;

mod manifest;

pub use manifest::Manifest;
use manifest::split_info;

/// What a folder conform creates for pending snapshots holds beside them, as pytest's and
/// ruff's caches do: it ignores the folder's every file in whatever repository it lies in, not
/// only in one that ignores `target/`.
pub const GITIGNORE: &str = "*\n";

/// The pending folder when `--pending` is not given, from `$CARGO_TARGET_DIR` as cargo reads it
/// (relative to the current folder; unset or empty: `target`).
pub fn default_dir(cargo_target_dir: Option<&std::ffi::OsStr>) -> PathBuf {
    let target = cargo_target_dir
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from);
    target.join("conform").join("pending")
}

/// The absolute path a snapshots folder is known by: its canonical path where it exists, so
/// `snapshots`, `./snapshots` and a link to it are one folder.
pub fn identity(snapshots: &Path) -> PathBuf {
    snapshots
        .canonicalize()
        .or_else(|_| std::path::absolute(snapshots))
        .unwrap_or_else(|_| snapshots.to_owned())
}

/// A pending folder, as a suite writes into it and `conform review` reads it.
#[derive(Clone, Debug)]
pub struct PendingDir {
    root: PathBuf,
    /// A snapshots folder nothing may be accepted into (the embedded catalog's cache): no
    /// pending file is kept for it.
    never_for: Option<PathBuf>,
    /// Pending files written, across the clones a suite's cases judge with.
    written: Arc<AtomicUsize>,
}

/// One pending snapshot, read back.
#[derive(Debug)]
pub struct Pending {
    /// The pending file.
    pub file: PathBuf,
    /// The snapshot's file name in its folder (`<id>@<mode>.snap`).
    pub name: String,
    pub manifest: Manifest,
    /// The file accepting it writes: insta's header (without the `info`) and the body, as
    /// `conform run --accept` writes it.
    snapshot: String,
    /// The run's texts.
    pub text: String,
}

/// Why a pending snapshot could not be read, accepted or removed.
#[derive(Debug, thiserror::Error)]
pub enum PendingError {
    #[error("cannot read the pending folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the pending file {} cannot be read: {why}", path.display())]
    Unreadable { path: PathBuf, why: String },
    #[error(
        "{} changed since the run that left {} pending: not accepted (run `conform run` again to \
         compare with the snapshot as it is now, or drop this one with `conform review --reject`)",
        stored.display(),
        pending.display()
    )]
    StoredChanged { stored: PathBuf, pending: PathBuf },
    /// The stored snapshot cannot be read; the error names the file and why.
    #[error("{0}")]
    Stored(std::io::Error),
    #[error("cannot write {}: {why}", path.display())]
    Write { path: PathBuf, why: String },
    #[error("cannot remove {}: {source}", path.display())]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl PendingDir {
    pub fn new(root: PathBuf) -> PendingDir {
        PendingDir {
            root,
            never_for: None,
            written: Arc::default(),
        }
    }

    /// Keeps no pending file for the snapshots folder `snapshots`.
    pub fn never_for(self, snapshots: &Path) -> PendingDir {
        PendingDir {
            never_for: Some(identity(snapshots)),
            ..self
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many pending files this folder's suite wrote.
    pub fn written(&self) -> usize {
        self.written.load(Ordering::Relaxed)
    }

    /// The command that reviews this folder: `--pending` only where it is not the default.
    pub fn review_command(&self) -> String {
        let default = default_dir(std::env::var_os("CARGO_TARGET_DIR").as_deref());
        if self.root == default {
            return "conform review".to_owned();
        }
        let dir = self.root.display().to_string();
        let plain = dir
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c));
        if plain {
            format!("conform review --pending {dir}")
        } else {
            format!("conform review --pending '{}'", dir.replace('\'', r"'\''"))
        }
    }

    /// Does a difference in `snapshots` leave a pending file here?
    pub fn keeps(&self, snapshots: &Path) -> bool {
        self.never_for
            .as_ref()
            .is_none_or(|never| *never != identity(snapshots))
    }

    /// The pending file of the snapshot `name` (`<id>@<mode>.snap`) of the folder `snapshots`.
    pub fn file_for(&self, snapshots: &Path, name: &str) -> PathBuf {
        self.folder_for(&identity(snapshots))
            .join(format!("{name}.new"))
    }

    /// One subfolder per snapshots folder, named by its last part (for a reader) and a digest
    /// of its whole path (so that two folders never share one).
    fn folder_for(&self, identity: &Path) -> PathBuf {
        use sha2::Digest as _;
        let sum = sha2::Sha256::digest(identity.as_os_str().as_encoded_bytes());
        let hex: String = sum.iter().take(6).map(|b| format!("{b:02x}")).collect();
        let base: String = identity
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || "_-".contains(*c))
            .collect();
        let base = if base.is_empty() { "snapshots" } else { &base };
        self.root.join(format!("{base}-{hex}"))
    }

    /// Writes the pending file of `name`: the snapshot `header` (both `---` lines) with
    /// `manifest` as its `info`, then `body`. Creates the folder (with its [`GITIGNORE`]) on
    /// first use. The error is the file and the reason alone.
    pub(super) fn write(
        &self,
        name: &str,
        header: &str,
        body: &str,
        manifest: &Manifest,
    ) -> Result<PathBuf, (PathBuf, String)> {
        let folder = self.folder_for(&manifest.snapshots);
        let path = folder.join(format!("{name}.new"));
        let fail = |why: String| (path.clone(), why);
        let info = manifest.info().map_err(fail)?;
        let open = header
            .strip_suffix("---\n")
            .expect("a snapshot header ends with its closing `---` line");
        self.make_root().map_err(fail)?;
        make_own_folder(&folder).map_err(fail)?;
        file::write(&path, format!("{open}{info}---\n{body}").as_bytes()).map_err(fail)?;
        self.written.fetch_add(1, Ordering::Relaxed);
        Ok(path)
    }

    /// Removes the pending file of `name` of the folder `snapshots`, if there is one (once its
    /// snapshot matches or was accepted); anything but a regular file is left alone.
    pub(super) fn remove_stale(&self, snapshots: &Path, name: &str) {
        file::remove_stale(&self.file_for(snapshots, name));
    }

    /// Creates the pending folder with its [`GITIGNORE`] unless it is there: whole under a
    /// temporary name, then renamed into place, so no one (another case of the suite, git) sees
    /// it without. A folder that is there (given with `--pending`, say) is used as it is.
    fn make_root(&self) -> Result<(), String> {
        if self.root.is_dir() {
            return Ok(());
        }
        let parent = match self.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        let fresh = tempfile::Builder::new()
            .prefix(".pending.")
            .tempdir_in(parent)
            .map_err(|e| format!("cannot create a folder in {}: {e}", parent.display()))?;
        std::fs::write(fresh.path().join(".gitignore"), GITIGNORE).map_err(|e| e.to_string())?;
        match std::fs::rename(fresh.path(), &self.root) {
            Ok(()) => {
                let _kept = fresh.keep();
                Ok(())
            }
            // Another case made it first (ours is removed with `fresh`).
            Err(_) if self.root.is_dir() => Ok(()),
            Err(e) => Err(format!("cannot create {}: {e}", self.root.display())),
        }
    }

    /// Every pending file, sorted by path: each read, or why it cannot be. A folder that does
    /// not exist has none. Only the subfolders conform makes are read (never through a link),
    /// and in them only `*.snap.new` (a write cut off leaves a temporary file, no pending one).
    pub fn list(&self) -> Result<Vec<Result<Pending, PendingError>>, PendingError> {
        let mut out = Vec::new();
        for folder in entries(&self.root)? {
            let is_dir = std::fs::symlink_metadata(&folder).is_ok_and(|m| m.is_dir());
            if !is_dir {
                continue;
            }
            for path in entries(&folder)? {
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default();
                if name.ends_with(".snap.new") {
                    out.push(read(&path));
                }
            }
        }
        out.sort_by(|a, b| sort_key(a).cmp(sort_key(b)));
        Ok(out)
    }
}

fn sort_key(entry: &Result<Pending, PendingError>) -> &Path {
    match entry {
        Ok(p) => &p.file,
        Err(PendingError::Unreadable { path, .. }) => path,
        Err(_) => Path::new(""),
    }
}

/// The paths in `dir`, or none when it does not exist.
fn entries(dir: &Path) -> Result<Vec<PathBuf>, PendingError> {
    let fail = |source| PendingError::Folder {
        path: dir.to_owned(),
        source,
    };
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.map(|e| e.path()).map_err(fail)).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(fail(e)),
    }
}

/// Creates a folder conform names itself, refusing to use one that is there as a link or
/// anything but a folder: a pending file is never written through a link someone planted.
fn make_own_folder(folder: &Path) -> Result<(), String> {
    match std::fs::create_dir(folder) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", folder.display())),
    }
    let meta = std::fs::symlink_metadata(folder).map_err(|e| e.to_string())?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "{} is not a folder conform made (a link or a file): conform neither writes through \
             nor replaces it: remove it",
            folder.display()
        ))
    }
}

/// Reads the pending file `path`: a regular file of a sane size, in the form `PendingDir::write`
/// writes, whose snapshot is one conform reads.
pub fn read(path: &Path) -> Result<Pending, PendingError> {
    let unreadable = |why: String| PendingError::Unreadable {
        path: path.to_owned(),
        why,
    };
    let bytes = file::read(path)
        .map_err(unreadable)?
        .ok_or_else(|| unreadable("it is gone".into()))?;
    let text = String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8".into()))?;
    let (manifest, snapshot) = split_info(&text).map_err(unreadable)?;
    let body = super::parse(&snapshot).map_err(unreadable)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".new"))
        .expect("listed as `*.snap.new`")
        .to_owned();
    Ok(Pending {
        file: path.to_owned(),
        name,
        manifest,
        snapshot,
        text: body,
    })
}

impl Pending {
    /// The stored snapshot it would replace.
    pub fn destination(&self) -> PathBuf {
        self.manifest.snapshots.join(&self.name)
    }

    /// The mode, from the file name (`<id>@<mode>.snap`).
    pub fn mode(&self) -> &str {
        self.name
            .rsplit_once('@')
            .map_or("", |(_, m)| m.trim_end_matches(".snap"))
    }

    /// The stored snapshot as it is now: its text (`None`: there is none), and whether it is
    /// still the one the run compared with.
    pub fn stored_now(&self) -> Result<(Option<String>, bool), PendingError> {
        let now = super::read_stored(&self.destination()).map_err(PendingError::Stored)?;
        let same = now.as_ref().map(|s| s.sha256.as_str()) == self.manifest.stored.as_deref();
        Ok((now.map(|s| s.text), same))
    }

    /// Writes it as the stored snapshot (by rename, never through a link) and removes it,
    /// unless the stored snapshot changed since the run. Returns the snapshot written.
    pub fn accept(self) -> Result<PathBuf, PendingError> {
        let destination = self.destination();
        if !self.stored_now()?.1 {
            return Err(PendingError::StoredChanged {
                stored: destination,
                pending: self.file,
            });
        }
        std::fs::create_dir_all(&self.manifest.snapshots).map_err(|e| PendingError::Write {
            path: self.manifest.snapshots.clone(),
            why: e.to_string(),
        })?;
        file::write(&destination, self.snapshot.as_bytes()).map_err(|why| PendingError::Write {
            path: destination.clone(),
            why,
        })?;
        self.reject()?;
        Ok(destination)
    }

    /// Removes it, and its folder once that is empty.
    pub fn reject(self) -> Result<(), PendingError> {
        std::fs::remove_file(&self.file).map_err(|source| PendingError::Remove {
            path: self.file.clone(),
            source,
        })?;
        if let Some(folder) = self.file.parent() {
            let _ = std::fs::remove_dir(folder); // fails while others are pending: kept
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
