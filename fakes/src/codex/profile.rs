//! Codex product versions accepted from upgrade reports (`profiles/codex.toml`, compiled in by
//! `build.rs`): each sends what a built-in version sends (`dress_as`) and is held to its own
//! schema bundle.

pub struct Profile {
    pub version: &'static str,
    /// The built-in version whose frames it sends.
    pub dress_as: &'static str,
    /// Its generated schema bundle.
    pub schema: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/codex_profiles.rs"));

pub fn of(version: &str) -> Option<&'static Profile> {
    PROFILES.iter().find(|p| p.version == version)
}

/// The built-in version whose frames `version` sends (itself, for a built-in one).
pub fn dressing(version: &str) -> &str {
    of(version).map_or(version, |p| p.dress_as)
}
