//! Snapshot files handled as untrusted input: the snapshot folder is a checkout anyone can put
//! anything in, so a snapshot is read only if it is a regular file of a sane size, and written
//! only by renaming a fresh file over its name — never through a symbolic link, never from a
//! FIFO or device that would hang the run or never end.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::libc;

/// The largest snapshot file conform reads or writes. A snapshot holds a handful of texts of a
/// few kilobytes each (the largest stored one is about 1.3 KB); 256 KiB leaves room for long
/// outputs while a huge file (or `/dev/zero` behind a name) is refused before it is read.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 * 1024;

/// Why a path is not a file conform reads or writes as a snapshot, or `None` for a regular file.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_symlink() {
        "it is a symbolic link (conform never follows a link in the snapshot folder)"
    } else if t.is_dir() {
        "it is a directory, not a regular file"
    } else if t.is_fifo() {
        "it is a FIFO, not a regular file"
    } else if t.is_socket() {
        "it is a socket, not a regular file"
    } else {
        "it is a device, not a regular file"
    })
}

/// The bytes of the snapshot file at `path`, or `None` when there is none. The error is the
/// reason alone (the caller names the file): a symbolic link, anything but a regular file, a
/// file over [`MAX_SNAPSHOT_BYTES`], or the OS error.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    // O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: opening a FIFO does not wait for
    // a writer; O_NOCTTY: a terminal never becomes ours. What is checked below is the opened
    // file itself (fstat), so nothing can be swapped in between the check and the read.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let why = std::fs::symlink_metadata(path)
                .ok()
                .and_then(|m| not_regular(&m))
                .unwrap_or("too many levels of symbolic links");
            return Err(why.into());
        }
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if let Some(why) = not_regular(&meta) {
        return Err(why.into());
    }
    if meta.len() > MAX_SNAPSHOT_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // At most one byte past the bound: a file that grows while it is read is still refused.
    file.take(MAX_SNAPSHOT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

fn too_big(len: u64) -> String {
    format!(
        "it is {len} bytes or more, over the {MAX_SNAPSHOT_BYTES}-byte bound of a snapshot file"
    )
}

/// Writes `contents` as the file `path` without writing through whatever is there: a fresh
/// file in the same folder, renamed over the name (rename replaces a link itself, never what it
/// points to). A name that is a link or not a regular file is refused rather than replaced —
/// someone put it there; removing it is theirs to decide. The error is the reason alone.
pub fn write(path: &Path, contents: &[u8]) -> Result<(), String> {
    if contents.len() as u64 > MAX_SNAPSHOT_BYTES {
        return Err(too_big(contents.len() as u64));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if let Some(why) = not_regular(&meta) {
                return Err(format!(
                    "{why}; conform neither writes through nor replaces it: remove it"
                ));
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.to_string()),
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err("it is not a file name".into());
    };
    let mut fresh = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o644))
        .tempfile_in(dir)
        .map_err(|e| e.to_string())?;
    fresh.write_all(contents).map_err(|e| e.to_string())?;
    fresh.persist(path).map_err(|e| e.error.to_string())?;
    Ok(())
}

/// Removes a stale pending file if it is a regular file; a link or anything else someone put
/// there is left alone, like [`write`] leaves it.
pub fn remove_stale(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(path);
    }
}
