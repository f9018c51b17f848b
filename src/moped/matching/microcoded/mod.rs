//! The microcoded match unit of a NIC ("An Architecture to Perform NIC Based MPI
//! Matching"): a wide-instruction
//! datapath that matches one incoming header against the posted-receive list streamed
//! through its input FIFO.

pub mod asm;
pub mod isa;
pub mod pipeline;
pub mod program;
pub mod units;

#[cfg(test)]
mod tests_asm;
#[cfg(test)]
mod tests_pipeline;
#[cfg(test)]
mod tests_program;

pub use asm::{assemble, AsmError, Program};
pub use isa::Instr;
pub use pipeline::{MatchUnit, OutWord, RunError};
pub use program::{match_program, run_match, Delivery, Header, ListItem, MatchRun, Outcome};
