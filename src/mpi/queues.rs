//! MPICH's two matching queues as a rank keeps them in its memory: the posted-receive
//! queue (PRQ) of receives waiting for a message, and the unexpected-message queue (UMQ)
//! of messages that arrived before their receive, each a linked list of 64-byte records
//! (match word, payload, next pointer) searched in order by loads; and the buffers that
//! hold unexpected eager messages.
//!
//! A record's match word packs (context, tag, source) with 0xFFFF for ANY_TAG and
//! ANY_SOURCE, so a receive matches a message by comparing three 16-bit fields.

use std::collections::{BTreeMap, VecDeque};

use crate::envelope::{Peer, Tag};
use crate::workload::ReqId;

use super::layout::Layout;
use super::ops::Micro;

/// An entry of the posted-receive or unexpected list.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    /// Index of its 64-byte record in the list's memory.
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
    /// Eager data copied to a temporary buffer.
    Eager { tmp: u64, bytes: u64 },
    /// A rendezvous request from `src`'s request `sreq`.
    Rts { sreq: u32, bytes: u64 },
    /// A send to the rank itself, waiting for its receive.
    SelfSend(ReqId),
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

/// A receive's match word against a message's: same context, tag and source unless the
/// receive's are wildcards.
fn word_matches(recv: u64, msg: u64) -> bool {
    let f = |w: u64, sh: u32| (w >> sh) & 0xFFFF;
    f(recv, 32) == f(msg, 32)
        && (f(recv, 16) == 0xFFFF || f(recv, 16) == f(msg, 16))
        && (f(recv, 0) == 0xFFFF || f(recv, 0) == f(msg, 0))
}

fn list_name(posted: bool) -> &'static str {
    if posted {
        "posted-receive"
    } else {
        "unexpected"
    }
}

/// One step of a search of a list (`posted`: the PRQ, else the UMQ) for `key`: entry `i`
/// at step 0 loads the entry's match word, at step 1 compares it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Search {
    pub posted: bool,
    pub key: u64,
    pub i: usize,
    pub step: u8,
}

/// What a search step asks of the rank.
pub(super) enum Probe {
    /// Load the match word at this address and come back at step 1.
    Load(u64),
    /// No match: the next pointer's load is queued; go on with the next entry.
    Next,
    /// The search is over; [`Queues::found`] holds the result.
    Done,
}

/// A rank's PRQ and UMQ.
pub(super) struct Queues {
    /// The posted-receive queue, in posting order.
    pub posted: Vec<Entry>,
    /// The unexpected queue, in arrival order.
    pub unexpected: Vec<Entry>,
    /// Free record slots of each list: [PRQ, UMQ].
    free_slots: [Vec<u64>; 2],
    /// The index of the entry the last search found.
    pub found: Option<usize>,
}

impl Queues {
    /// Lists of `entries` records each.
    pub fn new(entries: u64) -> Queues {
        Queues {
            posted: Vec::new(),
            unexpected: Vec::new(),
            free_slots: [(0..entries).rev().collect(), (0..entries).rev().collect()],
            found: None,
        }
    }

    fn list(&self, posted: bool) -> &Vec<Entry> {
        if posted {
            &self.posted
        } else {
            &self.unexpected
        }
    }

    /// The address of record `slot` of a list.
    fn addr(layout: &Layout, posted: bool, slot: u64) -> u64 {
        let base = if posted {
            layout.posted_base
        } else {
            layout.unexpected_base
        };
        base + slot * 64
    }

    /// Where the link to entry `i` of a list is stored: the list head for the first,
    /// else the previous record's next pointer.
    fn link_to(&self, layout: &Layout, posted: bool, i: usize) -> u64 {
        match i {
            0 => layout.list_heads + if posted { 0 } else { 64 },
            _ => Queues::addr(layout, posted, self.list(posted)[i - 1].slot) + 16,
        }
    }

    /// One step of search `s` of rank `me`; a mismatch is queued in `ops`.
    pub fn search_step(
        &mut self,
        layout: &Layout,
        me: u16,
        s: Search,
        value: Option<u64>,
        ops: &mut VecDeque<Micro>,
    ) -> Result<Probe, String> {
        let Some(e) = self.list(s.posted).get(s.i).copied() else {
            self.found = None;
            return Ok(Probe::Done);
        };
        let at = Queues::addr(layout, s.posted, e.slot);
        if s.step == 0 {
            return Ok(Probe::Load(at));
        }
        let got = value.ok_or("no entry value")?;
        let want = entry_word(e.src, e.tag, e.ctx);
        if got != want {
            return Err(format!(
                "rank {me}: {} entry {} reads {got:#x}, but {want:#x} was stored",
                list_name(s.posted),
                s.i
            ));
        }
        let hit = if s.posted {
            word_matches(got, s.key)
        } else {
            word_matches(s.key, got)
        };
        if hit {
            self.found = Some(s.i);
            return Ok(Probe::Done);
        }
        // Follow the next pointer.
        ops.push_back(Micro::Load {
            addr: at + 16,
            size: 8,
        });
        Ok(Probe::Next)
    }

    /// Removes entry `i` of a list; `ops` gets the store that unlinks it.
    pub fn unlink(
        &mut self,
        layout: &Layout,
        posted: bool,
        i: usize,
        ops: &mut VecDeque<Micro>,
    ) -> Entry {
        let list = self.list(posted);
        let e = list[i];
        let next = list
            .get(i + 1)
            .map_or(0, |n| Queues::addr(layout, posted, n.slot));
        ops.push_back(Micro::Store {
            addr: self.link_to(layout, posted, i),
            size: 8,
            value: next,
        });
        let (list, free) = if posted {
            (&mut self.posted, &mut self.free_slots[0])
        } else {
            (&mut self.unexpected, &mut self.free_slots[1])
        };
        list.remove(i);
        free.push(e.slot);
        e
    }

    /// Appends an entry to a list of rank `me`; `ops` gets the stores that fill and link
    /// it.
    pub fn link(
        &mut self,
        layout: &Layout,
        me: u16,
        posted: bool,
        (src, tag, ctx): (Peer, Tag, u16),
        what: Unexp,
        ops: &mut VecDeque<Micro>,
    ) -> Result<(), String> {
        let idx = usize::from(!posted);
        let slot = self.free_slots[idx].pop().ok_or_else(|| {
            format!(
                "rank {me}: more than {} {} entries (mpi.list_entries)",
                layout.list_entries,
                list_name(posted)
            )
        })?;
        let at = Queues::addr(layout, posted, slot);
        let prev_link = self.link_to(layout, posted, self.list(posted).len());
        let payload = match what {
            Unexp::Posted(r) | Unexp::SelfSend(r) => r as u64,
            Unexp::Eager { tmp, .. } => tmp,
            Unexp::Rts { sreq, .. } => sreq as u64,
        };
        for (addr, value) in [
            (at, entry_word(src, tag, ctx)),
            (at + 8, payload),
            (at + 16, 0),
            (prev_link, at),
        ] {
            ops.push_back(Micro::Store {
                addr,
                size: 8,
                value,
            });
        }
        let e = Entry {
            slot,
            src,
            tag,
            ctx,
            what,
        };
        if posted {
            self.posted.push(e);
        } else {
            self.unexpected.push(e);
        }
        Ok(())
    }
}

/// The unexpected-message buffers of a rank: first fit in 64-byte units.
#[derive(Clone, Debug)]
pub(super) struct Arena {
    free: BTreeMap<u64, u64>,
    used: BTreeMap<u64, u64>,
}

impl Arena {
    pub fn new(base: u64, bytes: u64) -> Arena {
        Arena {
            free: BTreeMap::from([(base, bytes)]),
            used: BTreeMap::new(),
        }
    }

    pub fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let need = bytes.max(1).div_ceil(64) * 64;
        let (&at, &len) = self.free.iter().find(|(_, &len)| len >= need)?;
        self.free.remove(&at);
        if len > need {
            self.free.insert(at + need, len - need);
        }
        self.used.insert(at, need);
        Some(at)
    }

    pub fn release(&mut self, at: u64) {
        let Some(mut len) = self.used.remove(&at) else {
            return;
        };
        let mut start = at;
        if let Some((&p, &pl)) = self.free.range(..at).next_back() {
            if p + pl == at {
                self.free.remove(&p);
                start = p;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&(start + len)) {
            len += nl;
        }
        self.free.insert(start, len);
    }
}
