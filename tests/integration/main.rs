//! moped's integration tests, one module per file, in one test binary: one link instead of
//! one per file, and the harness runs the files' tests side by side on every core.
//! `cargo test --test integration <module>::` runs one file's tests.

// The helpers some of the modules share.
mod common;
mod unexpected;

mod breakdown;
mod checker;
mod compare;
mod config_corpus;
mod engines;
mod fast_forward;
#[cfg(feature = "ffi")]
mod ffi;
mod fuzz;
mod goal_touch;
mod identical_stats;
mod info;
mod lhs;
mod miss_latency;
mod moped_checker;
mod moped_copy;
mod moped_device;
mod moped_matching;
mod moped_system;
mod moped_transitions;
mod mpi;
mod nic;
mod outputs;
mod protocol_corpus;
mod protocol_markdown;
mod real_runs;
mod scale;
mod sensitivity;
mod sim;
mod stats_gem5;
mod store;
mod store_cli;
mod stuck_runs;
mod tigon;
mod trace;
mod transitions;

/// The tests run on the allocator the `moped` binary uses (`src/main.rs`): the checker
/// clones a state's controllers for every step it takes.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
