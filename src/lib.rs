//! moped: a simulator of MOPED, a device that moves MPI message data through a chip
//! multiprocessor's cache-coherence protocol instead of through the cores.
//!
//! The modules, floor by floor (each uses only those on the floors below it):
//!
//! - vocabulary: `envelope` (ranks, program IDs, peers, tags, envelopes), `design` (the
//!   paper's four designs, spelled once);
//! - machinery: `engine` (time, event queue), `mem` (cache arrays, backing store with real
//!   bytes), `protocol` (the table language), `textparse` (positioned errors of every
//!   text reader), `config` (the system configuration), `stats` (the registry and gem5's
//!   stats.txt);
//! - the memory system: `net` (on-chip network), `coherence` (the controllers executing
//!   the tables);
//! - what stands on it: `os` (processes, page tables, physical memory), `moped` (the
//!   device), `nic` (the LHS paper's network interface), `core` (program-driven cores),
//!   `workload` (MPI programs: IMB, NPB, GOAL);
//! - simulation: `sim` (the timing simulator), `tester` (random tester), `checker`
//!   (exhaustive checker), `error` (the crate-wide error), `tigon` (the multi-CPU NIC
//!   paper's testbed: two Tigon2 NICs running EMP), `mpi` (the MPICH-like runtime),
//!   `gem5` (SLICC generation and the host gem5 drives), `analysis` (Figure 10's
//!   reductions, claims and report, the gem5 comparison), `bench` (host speed);
//! - the front door: `api`, which the doors call: `cli` (the command line), `python` (PyO3
//!   bindings, behind the `python` feature) and `ffi` (the C ABI for gem5, behind the
//!   `ffi` feature). They only parse, convert and print.

pub mod analysis;
pub mod api;
pub mod bench;
pub mod checker;
pub mod cli;
pub mod coherence;
pub mod config;
pub mod core;
pub mod design;
pub mod engine;
pub mod envelope;
pub mod error;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod gem5;
pub mod mem;
pub mod moped;
pub mod mpi;
pub mod net;
pub mod nic;
pub mod os;
pub mod protocol;
#[cfg(feature = "python")]
mod python;
mod reuse;
pub mod sim;
pub mod stats;
pub mod tester;
pub mod textparse;
pub mod tigon;
pub mod workload;
