//! `fake-dsh-sdk`: a scripted DSH SDK runtime (see `conform_fakes::cli` for the command line).

fn main() {
    conform_fakes::cli::main(Box::new(conform_fakes::dsh_sdk::DshSdkCodec::new()))
}
