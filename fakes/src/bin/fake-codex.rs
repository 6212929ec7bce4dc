//! `fake-codex`: a scripted Codex app-server (see `conform_fakes::cli` for the command line).

fn main() {
    conform_fakes::cli::main(Box::new(conform_fakes::codex::CodexCodec::new()))
}
