//! Where a rank's cycles go: every cycle of a rank's core is charged to what the core was
//! last asked to do (computing, an MPI call's own work, a copy, a queue search, polling,
//! a reduction's arithmetic, MOPED's ports, or nothing once the rank has finished), so the
//! parts of a rank always add up to the run's cycles.
//!
//! The charge is made when the core asks its driver for the next thing to do: the cycles
//! since the last ask go to what that ask returned. A load's latency, a compute phase and
//! a core stalled on a full store buffer are thus charged to the work that issued them,
//! and the passes fast-forward skips (which only poll) to polling.

use crate::workload::Call;

/// What a rank's core is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    /// The program's own work: compute phases and its sweeps over its arrays.
    Compute,
    /// An MPI call's own instructions and protocol work: entry, request set-up, packet
    /// headers, list links, the barrier's rounds.
    Call,
    /// The software path's copies (into and out of the shared queues, the unexpected
    /// buffers, a rank's own contribution to a collective).
    Copy,
    /// The software path's searches of the posted-receive and unexpected lists.
    Search,
    /// The software path's polling: waits and progress-engine passes over the queues.
    Poll,
    /// A reduction's arithmetic (`acc[i] += src[i]`), which no design removes.
    Reduce,
    /// MOPED's data port: reserving a descriptor and storing its fields.
    MopedPort,
    /// MOPED's poll port: polling descriptors until MOPED has moved the data.
    MopedWait,
    /// The rank has finished its program and waits for the others to end the run.
    Idle,
}

impl Activity {
    pub const ALL: [Activity; 9] = [
        Activity::Compute,
        Activity::Call,
        Activity::Copy,
        Activity::Search,
        Activity::Poll,
        Activity::Reduce,
        Activity::MopedPort,
        Activity::MopedWait,
        Activity::Idle,
    ];

    /// The statistic's name (`mpi.rank{r}.cycles.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Activity::Compute => "compute",
            Activity::Call => "mpi_call",
            Activity::Copy => "mpi_copy",
            Activity::Search => "mpi_search",
            Activity::Poll => "mpi_poll",
            Activity::Reduce => "mpi_reduce",
            Activity::MopedPort => "moped_port",
            Activity::MopedWait => "moped_wait",
            Activity::Idle => "idle",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Activity::Compute => "Cycles in the program's own work (compute phases and array sweeps)",
            Activity::Call => "Cycles in MPI calls' own work (entry, request set-up, packet headers, list links, barrier rounds)",
            Activity::Copy => "Cycles in the software path's copies (shared queues, unexpected buffers, a collective's own part)",
            Activity::Search => "Cycles searching the posted-receive and unexpected lists",
            Activity::Poll => "Cycles polling in MPI waits (progress-engine passes over the shared queues)",
            Activity::Reduce => "Cycles in reductions' arithmetic (acc[i] += src[i])",
            Activity::MopedPort => "Cycles reserving MOPED descriptors and storing their fields (data port)",
            Activity::MopedWait => "Cycles polling MOPED descriptors until their data has moved (poll port)",
            Activity::Idle => "Cycles after the rank finished its program, until the run ended",
        }
    }

    /// The activity a call starts with.
    pub(super) fn of_call(call: &Call) -> Activity {
        match call {
            Call::Compute(_) | Call::Sweep { .. } => Activity::Compute,
            Call::Combine { .. } => Activity::Reduce,
            Call::Copy { .. } => Activity::Copy,
            _ => Activity::Call,
        }
    }
}

/// A rank's cycles per [`Activity`].
#[derive(Clone, Debug)]
pub struct Breakdown {
    cycles: [u64; Activity::ALL.len()],
    /// What the core was last asked to do, and from which cycle.
    current: Activity,
    since: u64,
}

impl Default for Breakdown {
    fn default() -> Self {
        Breakdown {
            cycles: [0; Activity::ALL.len()],
            current: Activity::Call,
            since: 0,
        }
    }
}

impl Breakdown {
    /// The core asks for work at `now`: the cycles since the last ask go to its activity.
    pub(super) fn charge(&mut self, now: u64) {
        self.cycles[self.current as usize] += now.saturating_sub(self.since);
        self.since = self.since.max(now);
    }

    /// From now on the core does `a`.
    pub(super) fn switch(&mut self, a: Activity) {
        self.current = a;
    }

    /// What the core is doing.
    pub fn current(&self) -> Activity {
        self.current
    }

    /// The cycles per activity up to `now`, the activity in progress charged up to it.
    pub fn at(&self, now: u64) -> [u64; Activity::ALL.len()] {
        let mut out = self.cycles;
        out[self.current as usize] += now.saturating_sub(self.since);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cycle_goes_to_the_activity_asked_for_last() {
        let mut b = Breakdown::default();
        b.switch(Activity::Compute);
        b.charge(10);
        b.switch(Activity::Poll);
        b.charge(25);
        b.charge(30);
        b.switch(Activity::Idle);
        let at = b.at(42);
        assert_eq!(at[Activity::Compute as usize], 10);
        assert_eq!(at[Activity::Poll as usize], 20);
        assert_eq!(at[Activity::Idle as usize], 12);
        assert_eq!(at.iter().sum::<u64>(), 42);
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<_> = Activity::ALL.iter().map(|a| a.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Activity::ALL.len());
        for (i, a) in Activity::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i);
        }
    }
}
