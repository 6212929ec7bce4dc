//! Embeds the workspace's catalog (`../scenarios`, `../snapshots`) in the binary, so a
//! `conform` installed or copied anywhere carries the scenarios it judges by
//! (`src/catalog/mod.rs` reads it back).

#[path = "src/catalog/files.rs"]
#[allow(dead_code)]
mod files;

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let scenarios = manifest.join("../scenarios");
    let snapshots = manifest.join("../snapshots");
    // A directory is rescanned recursively: editing, adding or removing a scenario rebuilds.
    for watched in [&scenarios, &snapshots] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
    println!("cargo:rerun-if-changed=src/catalog/files.rs");
    println!("cargo:rerun-if-changed=build.rs");
    assert!(
        scenarios.is_dir(),
        "conform is built from its workspace: {} holds the catalog",
        scenarios.display()
    );
    let files = files::collect(&scenarios, &snapshots)
        .unwrap_or_else(|e| panic!("cannot read the catalog: {e}"));
    let blob = files::encode(&files);
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("catalog.bin");
    std::fs::write(&out, &blob).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    println!(
        "cargo:rustc-env=CONFORM_CATALOG_DIGEST={}",
        files::digest(&blob)
    );
    link_at_a_fixed_address();
}

/// `conform` is linked as a position-dependent executable on Linux (glibc): every fake and the
/// reference subject is this binary exec'd afresh, and as a PIE each start had the dynamic
/// loader apply some 30 000 relative relocations, writing (so copying) the pages they land on
/// — about a tenth of what a fake process costs (docs/performance.md). The code stays
/// position-independent; only the executable's load address is fixed (no ASLR for it).
fn link_at_a_fixed_address() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
