//! `fake-acp`: a scripted ACP agent (see `conform_fakes::cli` for the command line).

fn main() {
    conform_fakes::cli::main(Box::new(conform_fakes::acp::AcpCodec::new()))
}
