//! The hidden commands the harness runs itself: a fake runtime (the others are one call each,
//! in [`super::exec`]).

use std::process::ExitCode;

use conform_protocol::vocab::Provider;

use crate::cmd::Error;

/// `conform fake <provider> …`: the scripted runtime of a provider (never returns).
pub fn fake(provider: Provider, args: Vec<String>) -> Result<ExitCode, Error> {
    conform_fakes::cli::main_with_args(
        conform_fakes::codec::for_provider(provider),
        args,
        vec!["fake".to_owned(), provider.to_string()],
    )
}
