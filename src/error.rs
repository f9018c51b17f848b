//! The crate-wide error: every error a user can meet, one variant per kind. It sits just
//! above the parts whose errors it gathers (config, protocol, program, simulation), so the
//! MPI runtime, the gem5 face and the `api` door can all return it; `api` re-exports it.

use crate::config::ConfigError;
use crate::core::ProgramError;
use crate::protocol::ProtocolError;
use crate::sim::SimError;

/// Every error a user can meet, one variant per kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MopedError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    #[error("{0}")]
    Program(#[from] ProgramError),
    #[error("{0}")]
    Simulation(#[from] SimError),
    #[error("{0}")]
    Io(String),
}

impl MopedError {
    /// Whether the run was asked to stop (Ctrl-C) rather than failed.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, MopedError::Simulation(SimError::Interrupted))
    }
}

/// The message of a panic caught at a boundary to Python or C: a panic is a bug in moped,
/// never the user's input, so it says so and asks for a report.
pub fn internal_error(panic: &(dyn std::any::Any + Send)) -> String {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    format!("internal error, please report: {what}")
}
