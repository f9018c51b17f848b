//! Exhaustive explicit-state checker of the coherence protocol (verification target G1).
//!
//! Two halves: [`search`], a breadth-first explorer of any [`search::Model`] (visited set,
//! counterexample paths, deadlock and liveness checks) that knows nothing of coherence; and
//! the CMP model (`cmp`), whose states are the *real* controllers: every step calls the
//! controllers' own code on a clone, so nothing of the protocol is re-implemented here.
//!
//! Properties: SWMR, the data-value invariant (every load completion returns the ghost value;
//! every core with read permission holds it), directory agreement in stable states, bounded
//! buffers per (destination, virtual network), deadlock freedom, liveness (a quiescent state
//! is reachable from every reachable state, checked on the stored state graph), no
//! impossible table cell, and the MOPED designs' promises. A failure carries the shortest
//! action sequence that reaches it, replayed step by step with the cells that fired and the
//! resulting line states.
//!
//! Symmetry reduction (optional) keys the visited set by the minimum encoding over all
//! permutations of the cache indices; the stored representative of each orbit stays the
//! concrete state first reached, so traces are concrete executions with stable node ids.

mod cmp;
mod config;
mod report;
pub mod search;

use crate::coherence::Protocol;

pub use config::CheckConfig;
pub use report::{union_coverage, CellName, CheckReport, Coverage, Failure, FailureKind};

/// Runs a named configuration on the baseline protocol.
pub fn run_named(name: &str) -> Result<CheckReport, String> {
    run_with_protocol(name, Protocol::baseline())
}

/// Runs a named configuration on a given (possibly mutated) protocol.
pub fn run_with_protocol(name: &str, protocol: Protocol) -> Result<CheckReport, String> {
    let cfg = CheckConfig::named(name).ok_or_else(|| {
        format!(
            "unknown checker configuration `{name}`, expected one of: {}",
            CheckConfig::names().join(", ")
        )
    })?;
    check(&cfg, &protocol).map_err(|f| f.to_string())
}

/// Explores every reachable state of `cfg` under `protocol`.
pub fn check(cfg: &CheckConfig, protocol: &Protocol) -> Result<CheckReport, Failure> {
    cmp::check(cfg, protocol)
}
