use std::process::ExitCode;

use clap::Parser;
use conform::cli::Cli;

fn main() -> ExitCode {
    // One malloc arena per core rather than glibc's eight: the harness, the reference and the
    // fakes are all this binary, and their threads' arenas kept freed memory resident (the
    // harness's peak RSS over the catalog went from 56 to 46 MiB; docs/performance.md).
    // SAFETY: mallopt only sets an allocator parameter, before any thread is started.
    unsafe {
        nix::libc::mallopt(nix::libc::M_ARENA_MAX, 2);
    }
    conform::cmd::exec(Cli::parse()).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        conform::cmd::code(conform::suite::exit::ERROR)
    })
}
