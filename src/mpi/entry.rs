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
    /// A message in the NIC's receive ring (`[nic]`): its position is the entry's `slot`.
    Nic,
}

/// A tag as MPICH stores it, with ANY_TAG as 0xFFFF. The runtime's tags are already the
/// 16-bit numbers they travel as (`workload::tags`; checked when a call is taken).
pub(super) fn tag_value(tag: Tag) -> u16 {
    match tag {
        Tag::Tag(t) => t as u16,
        Tag::Any => 0xFFFF,
    }
}

/// The match word of an envelope.
pub(super) fn entry_word(src: Peer, tag: Tag, ctx: u16) -> u64 {
    let s = match src {
        Peer::Rank(r) => r as u64,
        Peer::Any => 0xFFFF,
    };
    let t = tag_value(tag) as u64;
    1 << 63 | (ctx as u64) << 32 | t << 16 | s
}
