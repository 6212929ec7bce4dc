//! No code: this package exists so `cargo insta review` finds the snapshots in this folder
//! (see `Cargo.toml`). The files are written and read by `conform run`.
