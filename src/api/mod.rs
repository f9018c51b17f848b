//! The front door: what the command line (`cli`), the Python bindings (`python`) and the
//! C ABI for gem5 (`ffi`) call. They only parse, convert and print; every experiment,
//! check and analysis they offer is a function here, and a design name is parsed once into
//! [`Design`] on the way in.
//!
//! - [`analysis`]: reductions, summaries, claims and the report of run records;
//! - [`config`]: system configurations from files, `--set` overrides and override tables;
//! - [`output`]: result folders: claimed, written whole or marked FAILED, with
//!   `config.toml` and `run.json`;
//! - [`run`]: a program file on the embedded simulator (`moped run`);
//! - [`mpi`]: an MPI workload with every message checked (`moped mpi`);
//! - [`experiments`]: runs of (workload, design, seed) tasks on a pool of host threads;
//! - [`figure10`]: the paper's Figure 10, planned, run, analysed and written;
//! - [`store`]: runs identified by a key, reused when an experiment runs again;
//! - [`runs_table`]: the store's table, `runs.csv`, a row per run of any experiment;
//! - [`trace`]: a real MPI run recorded as a workload (`moped trace`);
//! - [`sensitivity`]: Figure 10 again under each alternative modelling choice;
//! - [`matching`]: the queue benchmarks under every matching engine (`moped matching`);
//! - [`engines`]: MOPED with one and two engines under each scheme (`moped engines`);
//! - [`protocols`]: a design's tables, the lint, the exhaustive checker, the random tester;
//! - [`info`]: the catalogue of every parameter and statistic (`moped info`);
//! - [`gem5`]: the host gem5 drives, the generated SLICC, gem5 runs compared with ours;
//! - [`bench`]: the simulator's host speed (`moped bench`).

pub mod analysis;
pub mod config;
pub mod engines;
pub mod experiments;
pub mod figure10;
pub mod gem5;
pub mod info;
pub mod lhs;
pub mod lhs_csv;
pub mod matching;
pub mod mpi;
pub mod output;
pub mod protocols;
pub mod run;
pub mod runs_table;
pub mod sensitivity;
pub mod store;
pub mod trace;

pub use crate::bench;
pub use crate::design::{Design, UnknownDesign};
pub use crate::error::{internal_error, MopedError};
pub use crate::sim::heartbeat;
