//! The `moped` binary: the command line of `moped::cli`.

fn main() {
    std::process::exit(moped::cli::main_with_args(std::env::args().collect()));
}
