//! The catalog as one stream of files, and its digest. Written once for both sides: the build
//! script embeds the workspace's folders with it (`include!`d there) and the harness reads the
//! blob and digests folders on disk with it, so an embedded catalog and the same folders on
//! disk always have the same digest. Standard library and `sha2` only.

use std::path::Path;

/// One file of the catalog: its path under the catalog's root (`scenarios/acp/stop/x.toml`,
/// `snapshots/x.snap`; `/`-separated on every system) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogFile {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Every file of `scenarios` (preludes and all) and every `*.snap` of `snapshots` (a pending
/// `*.snap.new` is no part of the catalog), sorted by path. A folder that does not exist has
/// no files (`--accept` creates the snapshot folder).
pub fn collect(scenarios: &Path, snapshots: &Path) -> std::io::Result<Vec<CatalogFile>> {
    let mut out = Vec::new();
    walk(scenarios, "scenarios", &|_| true, &mut out)?;
    walk(
        snapshots,
        "snapshots",
        &|name| name.ends_with(".snap"),
        &mut out,
    )?;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn walk(
    dir: &Path,
    prefix: &str,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Vec<CatalogFile>,
) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().into_string().map_err(|name| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: the name {name:?} is not UTF-8", dir.display()),
            )
        })?;
        let rel = format!("{prefix}/{name}");
        // Followed, as the harness follows links when it reads scenarios; only regular files
        // are read (a FIFO would block the open for ever, a link to /dev/zero never end): what
        // else lies there is the loader's and the snapshot check's to refuse, by name.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue; // a dangling link
        };
        if meta.is_dir() {
            walk(&path, &rel, keep, out)?;
        } else if meta.is_file() && keep(&name) {
            let bytes = std::fs::read(&path)?;
            out.push(CatalogFile { path: rel, bytes });
        }
    }
    Ok(())
}

/// The blob: per file, its path's length (u32, little-endian), the path, its length (u64,
/// little-endian) and its bytes, in the order given.
pub fn encode(files: &[CatalogFile]) -> Vec<u8> {
    let size: usize = files
        .iter()
        .map(|f| 12 + f.path.len() + f.bytes.len())
        .sum();
    let mut out = Vec::with_capacity(size);
    for f in files {
        out.extend_from_slice(&(f.path.len() as u32).to_le_bytes());
        out.extend_from_slice(f.path.as_bytes());
        out.extend_from_slice(&(f.bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&f.bytes);
    }
    out
}

/// The files of a blob [`encode`] wrote; what is cut short or not UTF-8 is named.
pub fn decode(mut blob: &[u8]) -> Result<Vec<CatalogFile>, String> {
    fn take<'a>(blob: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], String> {
        if blob.len() < n {
            return Err(format!("the catalog blob ends inside {what}"));
        }
        let (head, rest) = blob.split_at(n);
        *blob = rest;
        Ok(head)
    }
    let mut out = Vec::new();
    while !blob.is_empty() {
        let n = u32::from_le_bytes(take(&mut blob, 4, "a path length")?.try_into().unwrap());
        let path = std::str::from_utf8(take(&mut blob, n as usize, "a path")?)
            .map_err(|_| "a path of the catalog blob is not UTF-8".to_owned())?
            .to_owned();
        let n = take(&mut blob, 8, &format!("the length of {path}"))?;
        let n = u64::from_le_bytes(n.try_into().unwrap());
        let bytes = take(&mut blob, n as usize, &format!("the bytes of {path}"))?.to_vec();
        out.push(CatalogFile { path, bytes });
    }
    Ok(out)
}

/// The catalog's name: the first 12 hex digits of the SHA-256 of its blob.
pub fn digest(blob: &[u8]) -> String {
    use sha2::Digest as _;
    let sum = sha2::Sha256::digest(blob);
    sum.iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}
