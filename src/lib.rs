//! moped: a simulator of MOPED, a device that moves MPI message data through a chip
//! multiprocessor's cache-coherence protocol instead of through the cores.

pub mod config;
pub mod engine;
pub mod net;
pub mod protocol;
pub mod stats;
