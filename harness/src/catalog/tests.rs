use std::path::Path;

use super::files::{self, CatalogFile};
use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small catalog on disk: two scenarios, a prelude, a snapshot, a pending snapshot and a
/// file of the snapshot crate that is no snapshot.
fn small_catalog() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "scenarios/acp/b.toml", "title = \"b\"\n");
    write(root.path(), "scenarios/acp/a.toml", "title = \"a\"\n");
    write(root.path(), "scenarios/preludes/p.toml", "title = \"p\"\n");
    write(root.path(), "snapshots/acp__a@foreground.snap", "---\nx\n");
    write(
        root.path(),
        "snapshots/acp__a@foreground.snap.new",
        "pending\n",
    );
    write(root.path(), "snapshots/lib.rs", "// not a snapshot\n");
    root
}

fn digest_in(root: &Path) -> String {
    digest_of(&root.join("scenarios"), &root.join("snapshots")).unwrap()
}

#[test]
fn the_catalog_is_every_scenario_file_and_every_snapshot_in_path_order() {
    let root = small_catalog();
    let got = files::collect(
        &root.path().join("scenarios"),
        &root.path().join("snapshots"),
    )
    .unwrap();
    let paths: Vec<&str> = got.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "scenarios/acp/a.toml",
            "scenarios/acp/b.toml",
            "scenarios/preludes/p.toml",
            "snapshots/acp__a@foreground.snap",
        ]
    );
}

#[test]
fn the_blob_round_trips_and_a_cut_one_is_refused() {
    let files = vec![
        CatalogFile {
            path: "scenarios/a.toml".into(),
            bytes: b"title = \"a\"\n".to_vec(),
        },
        CatalogFile {
            path: "snapshots/empty.snap".into(),
            bytes: Vec::new(),
        },
    ];
    let blob = files::encode(&files);
    assert_eq!(files::decode(&blob).unwrap(), files);
    assert_eq!(files::decode(&[]).unwrap(), []);
    let cut = files::decode(&blob[..blob.len() - 1]).unwrap_err();
    assert!(cut.contains("snapshots/empty.snap"), "{cut}");
}

#[test]
fn the_digest_changes_with_any_file_and_only_with_the_catalog() {
    let root = small_catalog();
    let before = digest_in(root.path());
    assert_eq!(before.len(), 12);
    assert!(before.chars().all(|c| c.is_ascii_hexdigit()), "{before}");
    // What is no part of the catalog does not change its name.
    write(
        root.path(),
        "snapshots/acp__b@foreground.snap.new",
        "pending\n",
    );
    assert_eq!(digest_in(root.path()), before);
    // A scenario's title, a prelude, a snapshot, a renamed file: each is another catalog.
    let mut seen = vec![before.clone()];
    for (rel, text) in [
        ("scenarios/acp/a.toml", "title = \"A\"\n"),
        ("scenarios/preludes/p.toml", "title = \"P\"\n"),
        ("snapshots/acp__a@foreground.snap", "---\ny\n"),
    ] {
        write(root.path(), rel, text);
        let now = digest_in(root.path());
        assert!(!seen.contains(&now), "{rel}: {now}");
        seen.push(now);
    }
    std::fs::rename(
        root.path().join("scenarios/acp/b.toml"),
        root.path().join("scenarios/acp/c.toml"),
    )
    .unwrap();
    assert!(!seen.contains(&digest_in(root.path())));
}

#[test]
fn the_embedded_catalog_is_extracted_whole_with_its_own_digest() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join(format!("catalog-{DIGEST}"));
    extract::extract_into(&dir, DIGEST, BLOB).unwrap();
    assert_eq!(digest_in(&dir), DIGEST);
    assert!(dir.join("scenarios/preludes").is_dir());
    // Once there, it is used as it is; no temporary folder is left beside it.
    extract::extract_into(&dir, DIGEST, BLOB).unwrap();
    let names: Vec<String> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [format!("catalog-{DIGEST}")]);
}

#[test]
fn a_damaged_extraction_is_written_again() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join(format!("catalog-{DIGEST}"));
    extract::extract_into(&dir, DIGEST, BLOB).unwrap();
    let prelude = std::fs::read_dir(dir.join("scenarios/preludes"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&prelude).unwrap();
    assert_ne!(digest_in(&dir), DIGEST);
    extract::extract_into(&dir, DIGEST, BLOB).unwrap();
    assert_eq!(digest_in(&dir), DIGEST);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1);
}

#[test]
fn racing_extractors_all_end_with_one_whole_catalog() {
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().join("catalog-race");
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| extract::extract_into(&dir, DIGEST, BLOB).unwrap());
        }
    });
    assert_eq!(digest_in(&dir), DIGEST);
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 1);
}

#[test]
fn an_unwritable_cache_is_named() {
    let cache = tempfile::tempdir().unwrap();
    let file = cache.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let e = extract::extract_into(&file.join("catalog-x"), DIGEST, BLOB).unwrap_err();
    let err = ExtractError {
        tried: vec![(file.join("catalog-x"), e)],
    };
    assert!(
        err.to_string()
            .contains(&file.join("catalog-x").display().to_string()),
        "{err}"
    );
}
