//! The microcoded match unit of a NIC ("An Architecture to Perform NIC Based MPI
//! Matching"): a wide-instruction datapath that matches one incoming header against the
//! posted-receive list streamed through its input FIFO.
//!
//! - [`isa`]: the wide instruction word, one slot per unit (section 4.2, Figure 4);
//! - [`encode`]: a 162-bit layout of that word (the paper's is 164 bits);
//! - [`units`]: the SIMD ALU and its permute, the ternary unit, the predicate logic;
//! - [`pipeline`]: [`MatchUnit`], the three-stage pipeline with forwarding, FIFO stalls
//!   and two branch delay slots (sections 4.1, 4.2.5);
//! - [`asm`]: the assembler for the text format, built on nom;
//! - [`list_manager`]: streams the header and list items into the FIFO, one word a
//!   cycle, and stops one item past the reported match (section 3.2);
//! - [`program`]: the match program `match.mu` (section 4.3), its data layout, and
//!   Figure 1 of the paper as the reference it is tested against;
//! - [`engine`]: the unit as a matching engine behind [`super::Engine`]
//!   (`moped.matcher = "microcoded"`), every search run by the program.
//!
//! `docs/microcoded-match-unit.md` describes the text format, the program and which
//! numbers come from the paper.

pub mod asm;
pub mod encode;
pub mod engine;
pub mod isa;
pub mod list_manager;
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
