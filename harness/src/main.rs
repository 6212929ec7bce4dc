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
    // A fake or the reference subject (started hundreds of times per catalog) is read without
    // clap's command tree; any other command line, or one not plainly written, by clap.
    let args: Option<Vec<String>> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string().ok())
        .collect();
    let cli = match args.as_deref().and_then(conform::cmd::internal::plain) {
        Some(command) => Cli { command },
        None => Cli::parse(),
    };
    conform::cmd::exec(cli).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        conform::cmd::code(conform::suite::exit::ERROR)
    })
}
