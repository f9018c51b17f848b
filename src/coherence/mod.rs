//! Coherence controllers executing the protocol tables of `protocols/`: the per-core L2
//! controller (the core's coherence agent, with the L1 as a placement level beneath it) and
//! the directory at memory. Controllers are plain state machines: a message or core request
//! in, messages and completions out, so the timing simulator, the exhaustive checker and
//! unit tests drive the same code.

pub mod cache;
pub mod coreset;
pub mod cut;
pub mod dir;
pub mod msg;
pub mod protocols;

pub use cache::{
    AccessKind, CacheCtrl, CacheParams, Completed, CoreOutcome, CoreReq, HitLevel, MopedDone,
    MopedKind, MopedReq, Placement, Tbe,
};
pub use coreset::CoreSet;
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

/// Total length of a machine's per-layer action lists (see [`concat_layers`]).
const fn layers_len<A>(layers: &[&[A]]) -> usize {
    let (mut n, mut k) = (0, 0);
    while k < layers.len() {
        n += layers[k].len();
        k += 1;
    }
    n
}

/// A controller's action registry, built at compile time from the action lists of the
/// protocol layers (each kept beside its layer's action functions), in layer order. `N` is
/// [`layers_len`] of `layers`.
const fn concat_layers<A: Copy, const N: usize>(layers: &[&[A]]) -> [A; N] {
    let mut all = [layers[0][0]; N];
    let (mut n, mut k) = (0, 0);
    while k < layers.len() {
        let mut i = 0;
        while i < layers[k].len() {
            all[n] = layers[k][i];
            n += 1;
            i += 1;
        }
        k += 1;
    }
    assert!(n == N, "N is the layers' total length");
    all
}

/// Home directory bank of a line: interleaved on the line address.
#[inline]
pub fn home_bank(addr: LineAddr, banks: usize) -> usize {
    ((addr >> 6) as usize) & (banks - 1)
}
