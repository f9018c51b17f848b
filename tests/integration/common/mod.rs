//! Helpers shared by the checker tests (`checker.rs`, `moped_checker.rs`).

use moped::checker::{check, CheckConfig, CheckReport, Failure};
use moped::coherence::Protocol;

/// Runs a named configuration; a failure fails the test with its trace.
pub fn run(name: &str, protocol: &Protocol) -> CheckReport {
    let cfg = CheckConfig::named(name).unwrap();
    check(&cfg, protocol).unwrap_or_else(|f| panic!("{f}"))
}

/// Runs a named configuration and checks its pinned (states, edges, quiescent states,
/// depth) and that no cell outside the tables fired.
pub fn assert_pinned(
    name: &str,
    protocol: &Protocol,
    want: (usize, usize, usize, usize),
) -> CheckReport {
    let r = run(name, protocol);
    assert_eq!(
        (r.states, r.edges, r.quiescent_states, r.depth),
        want,
        "{r}"
    );
    assert_eq!(r.cells_reached_outside_table, 0);
    assert!(r.max_buffer_occupancy <= r.buffer_capacity);
    r
}

/// The failure a seeded bug must produce.
pub fn fails(name: &str, protocol: &Protocol) -> Failure {
    match check(&CheckConfig::named(name).unwrap(), protocol) {
        Ok(r) => panic!("the seeded bug passed the checker: {r}"),
        Err(f) => f,
    }
}
