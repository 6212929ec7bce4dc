fn main() {
    std::process::exit(conform_reference::main_with_args(
        std::env::args().skip(1).collect(),
    ));
}
