//! What a check returns: the report of a passing exploration (with table coverage) or a
//! failure with its counterexample trace.

use std::fmt;

/// One (machine, state, event) cell of a protocol table, by name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellName {
    pub machine: String,
    pub state: String,
    pub event: String,
}

impl fmt::Display for CellName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ({}, {})", self.machine, self.state, self.event)
    }
}

/// The result of a passing exploration.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub config: String,
    pub protocol: String,
    /// Unique states (symmetry orbits when symmetry reduction is on).
    pub states: usize,
    /// Unique (state, successor) pairs of the state graph.
    pub edges: usize,
    pub quiescent_states: usize,
    /// Breadth-first depth of the deepest state.
    pub depth: usize,
    pub max_in_flight: usize,
    pub buffer_capacity: usize,
    pub max_buffer_occupancy: usize,
    /// Transition cells that fired, sorted.
    pub cells_reached: Vec<CellName>,
    /// Cells the tables mark as transitions that never fired.
    pub cells_possible_not_reached: Vec<CellName>,
    /// Fired cells the tables do not mark as transitions (must be 0).
    pub cells_reached_outside_table: usize,
    pub seconds: f64,
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let possible = self.cells_reached.len() + self.cells_possible_not_reached.len();
        writeln!(
            f,
            "{} ({}): {} states, {} edges, {} quiescent, depth {}, {:.2} s",
            self.config,
            self.protocol,
            self.states,
            self.edges,
            self.quiescent_states,
            self.depth,
            self.seconds
        )?;
        writeln!(
            f,
            "  in flight: max {} messages; buffers: max {} of capacity {} per (destination, vnet)",
            self.max_in_flight, self.max_buffer_occupancy, self.buffer_capacity
        )?;
        write!(
            f,
            "  table cells: {}/{} transition cells reached, {} reached outside the table; 0 violations",
            self.cells_reached.len(),
            possible,
            self.cells_reached_outside_table
        )
    }
}

/// Union of the table coverage of several runs of the same protocol.
#[derive(Clone, Debug)]
pub struct Coverage {
    pub possible: Vec<CellName>,
    pub reached: Vec<CellName>,
    pub unreached: Vec<CellName>,
}

impl Coverage {
    pub fn percent(&self) -> f64 {
        if self.possible.is_empty() {
            100.0
        } else {
            100.0 * self.reached.len() as f64 / self.possible.len() as f64
        }
    }
}

/// Table coverage over several reports (e.g. c1, c2 and c3).
pub fn union_coverage(reports: &[CheckReport]) -> Coverage {
    use std::collections::BTreeSet;
    let mut possible = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for r in reports {
        possible.extend(r.cells_reached.iter().cloned());
        possible.extend(r.cells_possible_not_reached.iter().cloned());
        reached.extend(r.cells_reached.iter().cloned());
    }
    let unreached = possible.difference(&reached).cloned().collect();
    Coverage {
        possible: possible.into_iter().collect(),
        reached: reached.into_iter().collect(),
        unreached,
    }
}

/// What kind of property failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A controller reached an impossible cell or could not take a message.
    InvalidTransition,
    Swmr,
    DataValue,
    DirectoryAgreement,
    BufferOverflow,
    Deadlock,
    Liveness,
    /// A completion without a matching outstanding request, or similar harness mismatch.
    CompletionMismatch,
    /// The state space exceeded `max_states`.
    StateLimit,
    /// A MOPED request broke its design's promise (M_GETS allocated, a copy changed the
    /// owner, a fill left another valid copy).
    Moped,
}

impl FailureKind {
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::InvalidTransition => "invalid transition",
            FailureKind::Swmr => "SWMR violation",
            FailureKind::DataValue => "data-value violation",
            FailureKind::DirectoryAgreement => "directory-agreement violation",
            FailureKind::BufferOverflow => "buffer overflow",
            FailureKind::Deadlock => "deadlock",
            FailureKind::Liveness => "liveness violation (no quiescent state reachable)",
            FailureKind::CompletionMismatch => "completion mismatch",
            FailureKind::StateLimit => "state limit exceeded",
            FailureKind::Moped => "MOPED property violation",
        }
    }
}

/// A failed check: the property, what was seen, and a counterexample trace.
#[derive(Clone, Debug)]
pub struct Failure {
    pub config: String,
    pub kind: FailureKind,
    pub detail: String,
    /// The trace, one entry per line, starting with the initial state.
    pub trace: Vec<String>,
    pub states_explored: usize,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {}: {}",
            self.config,
            self.kind.describe(),
            self.detail
        )?;
        writeln!(
            f,
            "after {} states; counterexample trace:",
            self.states_explored
        )?;
        for l in &self.trace {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}
