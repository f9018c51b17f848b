//! Why a run stopped early: the simulator's one error type.

use crate::coherence::Violation;

/// Why a run stopped early. Each kind keeps its particulars behind one pointer: the error
/// is two words, so the `Result<(), SimError>` that every step of an event's path returns
/// comes back in registers rather than through a 112-byte slot in memory.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Protocol(Box<Violation>),
    #[error("check failed at cycle {}: {}", .0.cycle, .0.detail)]
    Check(Box<Stop>),
    #[error("watchdog: {}", .0.detail)]
    Watchdog(Box<Stop>),
    #[error("configuration: {0}")]
    Config(Box<String>),
    /// The run was asked to stop (Ctrl-C; see [`interrupt`](super::interrupt)).
    #[error("interrupted")]
    Interrupted,
    /// The host is nearly out of memory (see [`host_memory`](super::host_memory)).
    #[error("stopped at cycle {}: {}", .0.cycle, .0.detail)]
    HostMemory(Box<Stop>),
}

const _: () = assert!(
    std::mem::size_of::<Result<(), SimError>>() == 16,
    "an event path's result stays two words"
);

/// The cycle a run stopped at and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub cycle: u64,
    pub detail: String,
}

impl Stop {
    fn boxed(cycle: u64, detail: String) -> Box<Self> {
        Box::new(Stop { cycle, detail })
    }
}

impl SimError {
    /// A check of the model's own rules failed at `cycle`.
    pub fn check(cycle: u64, detail: impl Into<String>) -> Self {
        Self::Check(Stop::boxed(cycle, detail.into()))
    }

    /// Nothing moved for too long (or a request can never complete), seen at `cycle`.
    pub fn watchdog(cycle: u64, detail: impl Into<String>) -> Self {
        Self::Watchdog(Stop::boxed(cycle, detail.into()))
    }

    /// The host ran nearly out of memory at `cycle`.
    pub fn host_memory(cycle: u64, detail: impl Into<String>) -> Self {
        Self::HostMemory(Stop::boxed(cycle, detail.into()))
    }

    /// The configuration cannot be simulated.
    pub fn config(detail: impl Into<String>) -> Self {
        Self::Config(Box::new(detail.into()))
    }
}

impl From<Box<Violation>> for SimError {
    fn from(v: Box<Violation>) -> Self {
        Self::Protocol(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_reads_as_it_did_before_its_particulars_were_boxed() {
        assert_eq!(
            SimError::check(7, "a store into a full buffer").to_string(),
            "check failed at cycle 7: a store into a full buffer"
        );
        assert_eq!(
            SimError::watchdog(9, "core 3 waits").to_string(),
            "watchdog: core 3 waits"
        );
        assert_eq!(
            SimError::host_memory(11, "2 MB left").to_string(),
            "stopped at cycle 11: 2 MB left"
        );
        assert_eq!(
            SimError::config("no such port").to_string(),
            "configuration: no such port"
        );
        let v = Violation {
            controller: "L2_0".into(),
            cycle: 5,
            addr: 0x40,
            state: "S".into(),
            event: "Inv".into(),
            detail: "no cell".into(),
        };
        let text = v.to_string();
        assert_eq!(SimError::from(Box::new(v)).to_string(), text);
        assert_eq!(SimError::Interrupted.to_string(), "interrupted");
    }
}
