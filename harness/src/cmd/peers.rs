//! `conform peers diff`: the real runtimes' wire against the fakes' ([`crate::differential`]).

use std::process::ExitCode;

use crate::cli::PeersArgs;
use crate::cmd::{Error, block_on, code};
use crate::settings::default_dir;

pub fn exec(args: PeersArgs) -> Result<ExitCode, Error> {
    let opts = crate::differential::DiffOptions {
        scenarios: default_dir("scenarios"),
        snapshots: default_dir("snapshots"),
        fixtures: args
            .fixtures
            .unwrap_or_else(|| default_dir("fakes").join("peers")),
        peers: args.peers,
        update: args.update,
        filters: args.filter,
        deadline: args.deadline_ms.map(std::time::Duration::from_millis),
        jobs: args.jobs.map(|j| j as usize),
    };
    block_on(crate::differential::diff(opts))?
        .map(code)
        .map_err(Error::Usage)
}
