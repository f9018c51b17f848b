//! The `moped` binary: the command line of `moped::cli`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    moped::cli::stop_on_signals();
    std::process::exit(moped::cli::main_with_args(std::env::args().collect()));
}
