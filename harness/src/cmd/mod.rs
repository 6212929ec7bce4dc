//! One module per subcommand.

pub mod bench;
pub mod drift;
pub mod redaction;
pub mod self_test;
