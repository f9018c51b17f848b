//! moped: a simulator of MOPED, a device that moves MPI message data through a chip
//! multiprocessor's cache-coherence protocol instead of through the cores.
//!
//! Layout: `protocol` (the table DSL), `coherence` (controllers executing the tables),
//! `mem`, `net`, `engine`, `core` (program-driven cores), `sim` (the timing simulator),
//! `tester` (random tester), `checker` (exhaustive checker), `stats`, `config`, `run`
//! (entry points), `analysis` (Figure 10's reductions, claim checks and report), `cli`,
//! `python` (PyO3 bindings, behind the `python` feature) and `ffi` (the C ABI for gem5,
//! behind the `ffi` feature).

pub mod analysis;
pub mod bench;
pub mod checker;
pub mod cli;
pub mod coherence;
pub mod config;
pub mod core;
pub mod engine;
pub mod experiments;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod gem5;
pub mod mem;
pub mod moped;
pub mod mpi;
pub mod net;
pub mod os;
pub mod protocol;
#[cfg(feature = "python")]
mod python;
pub mod run;
pub mod sim;
pub mod stats;
pub mod tester;
pub mod textparse;
pub mod workload;
