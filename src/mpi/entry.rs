//! An entry of a rank's matching queues: what the posted-receive list, the unexpected list
//! and the LH buffer each hold per receive or message.

use crate::envelope::{Peer, Tag};
use crate::workload::ReqId;

/// An entry of the posted-receive or unexpected list.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// Index of its 64-byte record in the list's memory; in the LH buffer, its sequence
    /// number.
    pub slot: u64,
    pub src: Peer,
    pub tag: Tag,
    pub ctx: u16,
    pub what: Unexp,
}

/// What an entry stands for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Unexp {
    /// A posted receive.
    Posted(ReqId),
    /// Eager data copied to a temporary buffer, or with LHS its first bytes (address and
    /// length) in the LH entry and the rest, if any, in the buffer (`tmp` 0 if none).
    Eager {
        tmp: u64,
        bytes: u64,
        head: Option<(u64, u64)>,
    },
    /// A rendezvous request from `src`'s request `sreq`.
    Rts { sreq: u32, bytes: u64 },
    /// A send to the rank itself, waiting for its receive.
    SelfSend(ReqId),
}
