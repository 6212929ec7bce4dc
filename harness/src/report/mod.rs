//! The reports of a suite: for people (`human`, escaped by `terminal` on the way out), for
//! machines (`json`, `junit`), a merged one (`merge`), the known-failure `baseline`, and a run
//! against the previous one (`compare`).

pub mod bound;
pub mod causes;
pub mod compare;
pub mod detail;
pub mod html;
pub mod human;
pub mod json;
pub mod junit;
pub mod live;
pub mod matrix;
pub mod merge;
pub mod style;
pub mod terminal;

pub use human::human;
pub use json::json;
pub use junit::junit_from_json;
