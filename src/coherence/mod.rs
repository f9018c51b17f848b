//! Coherence controllers executing the protocol tables of `protocols/`: the per-core L2
//! controller (the core's coherence agent, with the L1 as a placement level beneath it) and
//! the directory at memory. Controllers are plain state machines: a message or core request
//! in, messages and completions out, so the timing simulator, the exhaustive checker and
//! unit tests drive the same code.

pub mod cache;
pub mod cut;
pub mod dir;
pub mod msg;
pub mod protocols;

pub use cache::{
    AccessKind, CacheCtrl, CacheParams, Completed, CoreOutcome, CoreReq, HitLevel, MopedDone,
    MopedKind, MopedReq, Placement, Tbe,
};
pub use dir::{DirCtrl, DirParams};
pub use msg::{Msg, MsgType, NodeId, Outbox, Outgoing};
pub use protocols::Protocol;

use crate::mem::LineAddr;

/// What became of a delivered message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// A transition ran.
    Done,
    /// The (state, event) cell is a stall: keep the message and retry when the line changes.
    Stalled,
}

/// An internal protocol error: an impossible (state, event) pair was reached, or a message
/// arrived that this controller cannot take. Reported in gem5's "Invalid transition" terms.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid transition: controller {controller}, cycle {cycle}, address {addr:#x}, state {state}, event {event}: {detail}")]
pub struct Violation {
    pub controller: String,
    /// Cycle of the event that raised it: controllers keep no clock, so they leave 0 and
    /// the timing simulator stamps it.
    pub cycle: u64,
    pub addr: LineAddr,
    pub state: String,
    pub event: String,
    pub detail: String,
}

/// Home directory bank of a line: interleaved on the line address.
#[inline]
pub fn home_bank(addr: LineAddr, banks: usize) -> usize {
    ((addr >> 6) as usize) & (banks - 1)
}
