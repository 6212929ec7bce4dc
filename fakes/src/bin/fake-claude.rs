//! `fake-claude`: a scripted Claude Code CLI as the Claude Agent SDK spawns it (see
//! `conform_fakes::cli` for the command line; the CLI's own flags follow `--`).

fn main() {
    conform_fakes::cli::main(Box::new(conform_fakes::claude_code::ClaudeCodeCodec::new()))
}
