//! What a real runtime unpacks on first use, shared by its runs. The DSH runtime is one binary
//! (pkg) that copies its native modules (~80 MB) out of itself at first use, into
//! `$PKG_NATIVE_CACHE_PATH`, else `$HOME/.cache`: in a fresh `HOME` per run that is 80 MB
//! written and deleted by every run. `{unpacked}` in a peer's environment or files names,
//! per run, the peer's shared folder in the peers cache (`<peers>/unpacked/<peer>@<version>`)
//! once one run has filled it, else the run's own (`<run_dir>/unpacked`, as before).
//!
//! Runs never fill the shared folder themselves: runs that start together would write the
//! same files at once, and one could load a module another is rewriting. After a suite, the
//! folder a passed run filled is copied beside the shared one and renamed into place (whole or
//! not at all), read-only: from then on runs only read it (the runtime rewrites a module only
//! when its copy's hash differs).

use std::path::{Path, PathBuf};

use super::PeerEntry;

/// The placeholder, in a peer's `env` and `files`.
pub const PLACEHOLDER: &str = "{unpacked}";

/// Whether the peer's runs unpack into `{unpacked}`.
pub fn uses(entry: &PeerEntry) -> bool {
    entry
        .env
        .values()
        .chain(entry.files.keys())
        .chain(entry.files.values())
        .any(|v| v.contains(PLACEHOLDER))
}

/// The peer's shared folder: one per installed version.
pub fn shared(peers: &Path, name: &str, entry: &PeerEntry) -> PathBuf {
    let version = entry.version.as_deref().unwrap_or("unknown");
    peers.join("unpacked").join(format!("{name}@{version}"))
}

/// What `{unpacked}` stands for in one run: the shared folder once filled, else the run's own.
pub fn for_run(peers: &Path, name: &str, entry: &PeerEntry, run_dir: &Path) -> PathBuf {
    let shared = shared(peers, name, entry);
    if shared.is_dir() {
        shared
    } else {
        run_dir.join("unpacked")
    }
}

/// Makes what a passed run unpacked into its own folder the peer's shared folder, if there is
/// none yet: copied beside it, made read-only, renamed into place. Returns whether it did.
pub fn seal(peers: &Path, name: &str, entry: &PeerEntry, run_dir: &Path) -> std::io::Result<bool> {
    let (from, to) = (run_dir.join("unpacked"), shared(peers, name, entry));
    let filled = std::fs::read_dir(&from).is_ok_and(|mut d| d.next().is_some());
    if to.exists() || !filled {
        return Ok(false);
    }
    let parent = to.parent().expect("under the peers folder");
    std::fs::create_dir_all(parent)?;
    let copy = tempfile::Builder::new()
        .prefix(".unpacking-")
        .tempdir_in(parent)?;
    copy_tree(&from, copy.path())?;
    read_only(copy.path())?;
    // Another suite may have sealed it meanwhile: then its folder stands, and this copy goes.
    match std::fs::rename(copy.path(), &to) {
        Ok(()) => {
            // Renamed away: nothing left for the guard to remove.
            let _ = copy.keep();
            Ok(true)
        }
        Err(_) if to.exists() => {
            writable(copy.path())?;
            Ok(false)
        }
        Err(e) => {
            writable(copy.path())?;
            Err(e)
        }
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Every file and folder under `dir` (itself too) without write permission.
fn read_only(dir: &Path) -> std::io::Result<()> {
    set_write(dir, false)
}

/// Writable again, so an abandoned copy can be removed.
fn writable(dir: &Path) -> std::io::Result<()> {
    set_write(dir, true)
}

fn set_write(path: &Path, on: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    let set = |mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    // A folder opens before its entries change, and closes after.
    if on {
        set(mode | 0o200)?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            set_write(&entry?.path(), on)?;
        }
    }
    if !on {
        set(mode & !0o222)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> PeerEntry {
        serde_json::from_str(
            r#"{"version": "0.2.1rc2", "command": ["/bin/true"],
                "env": {"PKG_NATIVE_CACHE_PATH": "{unpacked}"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn runs_share_the_folder_a_passed_run_filled_read_only_once_sealed() {
        let (peers, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let entry = entry();
        assert!(uses(&entry));
        let shared = peers.path().join("unpacked/dsh-sdk@0.2.1rc2");
        // Nothing sealed: each run unpacks into its own folder.
        let own = for_run(peers.path(), "dsh-sdk", &entry, run.path());
        assert_eq!(own, run.path().join("unpacked"));
        // A run with nothing unpacked seals nothing.
        assert!(!seal(peers.path(), "dsh-sdk", &entry, run.path()).unwrap());
        let module = own.join("pkg/54a9/@deepseek-ai/cordis/lib/index.js");
        std::fs::create_dir_all(module.parent().unwrap()).unwrap();
        std::fs::write(&module, "module.exports = 1").unwrap();
        std::os::unix::fs::symlink("index.js", module.with_file_name("link.js")).unwrap();
        assert!(seal(peers.path(), "dsh-sdk", &entry, run.path()).unwrap());
        let sealed = shared.join("pkg/54a9/@deepseek-ai/cordis/lib");
        assert_eq!(
            std::fs::read_to_string(sealed.join("index.js")).unwrap(),
            "module.exports = 1"
        );
        assert_eq!(
            std::fs::read_link(sealed.join("link.js")).unwrap(),
            Path::new("index.js")
        );
        for path in [&shared, &sealed, &sealed.join("index.js")] {
            assert!(
                std::fs::metadata(path).unwrap().permissions().readonly(),
                "{}",
                path.display()
            );
        }
        // Every later run reads the shared folder; sealing again changes nothing.
        let next = tempfile::tempdir().unwrap();
        assert_eq!(
            for_run(peers.path(), "dsh-sdk", &entry, next.path()),
            shared
        );
        assert!(!seal(peers.path(), "dsh-sdk", &entry, run.path()).unwrap());
        // No half-made copy is left beside it.
        let beside: Vec<_> = std::fs::read_dir(peers.path().join("unpacked"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beside, vec![std::ffi::OsString::from("dsh-sdk@0.2.1rc2")]);
        writable(&shared).unwrap();
    }
}
