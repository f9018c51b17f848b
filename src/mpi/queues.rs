//! MPICH's two matching queues as a rank keeps them in its memory: the posted-receive
//! queue (PRQ) of receives waiting for a message, and the unexpected-message queue (UMQ)
//! of messages that arrived before their receive, each a linked list of 64-byte records
//! (match word, payload, next pointer) searched in order by loads; and the buffers that
//! hold unexpected eager messages.
//!
//! A record's match word packs (context, tag, source) with 0xFFFF for ANY_TAG and
//! ANY_SOURCE, so a receive matches a message by comparing three 16-bit fields.
//!
//! With `mpi.unexpected_queue = "lhs"` the UMQ is an LH buffer ([`super::lhs`]) followed
//! by the list, which takes messages only while the LH buffer is full.

use std::collections::{BTreeMap, VecDeque};

use crate::envelope::{Peer, Tag};

pub(super) use super::entry::{entry_word, tag_value, Entry, Unexp};
use super::layout::Layout;
use super::lhs::{LhBuffer, ENVELOPE_BYTES};
use super::ops::Micro;

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
/// at step 0 loads the entry's match word (at step 2 too, after its software prefetch),
/// at step 1 compares it. With an LH buffer, `i` counts its positions (holes included)
/// and then the list's entries.
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
    /// Read the header at this bulk-memory address through a VL command and the Read
    /// Window (a NIC without LHS), loading its match word; come back at step 1.
    Vl(u64),
    /// No match: the next pointer's load is queued; go on with the next entry.
    Next,
    /// The search is over; [`Queues::found`] holds the result.
    Done,
}

/// A rank's PRQ and UMQ.
pub(super) struct Queues {
    /// The posted-receive queue, in posting order.
    pub posted: Vec<Entry>,
    /// The unexpected list, in arrival order (after the LH buffer's entries, with LHS).
    pub unexpected: Vec<Entry>,
    /// Free record slots of each list: [PRQ, UMQ].
    free_slots: [Vec<u64>; 2],
    /// The index of the entry the last search found: in the UMQ, the LH buffer's live
    /// entries come first.
    pub found: Option<usize>,
    /// The LH buffer, with `mpi.unexpected_queue = "lhs"`; with a NIC, its receive ring.
    lhs: Option<LhBuffer>,
    /// The rank whose queues these are.
    me: u16,
}

impl Queues {
    /// Rank `me`'s lists of `entries` records each, and an LH buffer (or a NIC's ring) if
    /// `lhs`.
    pub fn new(entries: u64, lhs: bool, me: u16) -> Queues {
        Queues {
            posted: Vec::new(),
            unexpected: Vec::new(),
            free_slots: [(0..entries).rev().collect(), (0..entries).rev().collect()],
            found: None,
            lhs: lhs.then(LhBuffer::default),
            me,
        }
    }

    /// The match word at the NIC's position `seq`, as the rank knows it.
    pub fn nic_word(&self, seq: u64) -> Option<u64> {
        self.lhs.as_ref()?.word_at(seq)
    }

    /// A NIC's head the rank has moved and not yet stored.
    pub fn take_nic_head(&mut self) -> Option<u64> {
        self.lhs.as_mut()?.take_pending_head()
    }

    /// The address of the LH entry a search of the unexpected queue reads at place `i`,
    /// if `i` falls in the LH buffer (and the buffer has entries to load).
    pub fn ring_addr(&self, layout: &Layout, i: usize) -> Option<u64> {
        let b = self.lhs.as_ref()?;
        let in_ring = (i as u64) < b.span() && layout.lh_entry_bytes > 0;
        in_ring.then(|| LhBuffer::entry_addr(layout, self.me, b.seq_at(i as u64)))
    }

    /// The next position of the NIC's receive ring this rank has not yet taken.
    pub fn nic_next(&self) -> u64 {
        self.lhs.as_ref().map_or(0, LhBuffer::tail)
    }

    /// The NIC's message at the next position, with envelope `(src, tag, ctx)`: waiting
    /// as unexpected, or (`taken`) matched by a posted receive at once.
    pub fn nic_arrived(
        &mut self,
        (src, tag, ctx): (Peer, Tag, u16),
        taken: bool,
    ) -> Result<(), String> {
        let b = self
            .lhs
            .as_mut()
            .ok_or("a NIC's message without its ring")?;
        if taken {
            b.push_taken(entry_word(src, tag, ctx));
        } else {
            b.push_arrived(Entry {
                slot: 0,
                src,
                tag,
                ctx,
                what: Unexp::Nic,
            });
        }
        Ok(())
    }

    /// Whether the UMQ starts with an LH buffer.
    pub fn has_lhs(&self) -> bool {
        self.lhs.is_some()
    }

    /// Live entries in the LH buffer (0 without one): the UMQ's first indices.
    fn lh_len(&self) -> usize {
        self.lhs.as_ref().map_or(0, |b| b.entries.len())
    }

    /// Where the next unexpected message's LH entry goes, if it goes to the LH buffer:
    /// there is one, it has room, and the list it overflowed into has emptied.
    pub fn next_lh_entry(&self, layout: &Layout) -> Option<u64> {
        let b = self.lhs.as_ref()?;
        (b.has_room(layout) && self.unexpected.is_empty()).then(|| b.next_addr(layout))
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
        if let (false, Some(b)) = (s.posted, &self.lhs) {
            let span = b.span() as usize;
            if s.i < span {
                return self.lh_step(layout, me, s, value);
            }
            let (i, skipped) = (s.i - span, self.lh_len());
            return self.list_step(layout, me, Search { i, ..s }, value, ops, skipped);
        }
        self.list_step(layout, me, s, value, ops, 0)
    }

    /// One step at position `s.i` of the LH buffer: an entry's match word, or 0 for a
    /// hole; the next position's address needs no load.
    fn lh_step(
        &mut self,
        layout: &Layout,
        me: u16,
        s: Search,
        value: Option<u64>,
    ) -> Result<Probe, String> {
        let b = self.lhs.as_ref().ok_or("no LH buffer")?;
        let seq = b.seq_at(s.i as u64);
        if s.step != 1 {
            return Ok(match &layout.nic {
                Some(n) if layout.lh_entry_bytes == 0 => Probe::Vl(n.slot(seq, layout.lh_entries)),
                _ => Probe::Load(LhBuffer::entry_addr(layout, me, seq)),
            });
        }
        let got = value.ok_or("no entry value")?;
        let live = b.find(seq);
        let want = live.map_or(b.hole_word(seq), |k| {
            let e = b.entries[k];
            entry_word(e.src, e.tag, e.ctx)
        });
        if got != want {
            return Err(format!(
                "rank {me}: LH buffer entry {seq} reads {got:#x}, but {want:#x} was stored"
            ));
        }
        match live {
            Some(k) if word_matches(s.key, got) => {
                self.found = Some(k);
                Ok(Probe::Done)
            }
            _ => Ok(Probe::Next),
        }
    }

    /// One step at entry `s.i` of a list; a UMQ's list entry `i` is entry `skipped + i`
    /// of the queue.
    fn list_step(
        &mut self,
        layout: &Layout,
        me: u16,
        s: Search,
        value: Option<u64>,
        ops: &mut VecDeque<Micro>,
        skipped: usize,
    ) -> Result<Probe, String> {
        let Some(e) = self.list(s.posted).get(s.i).copied() else {
            self.found = None;
            return Ok(Probe::Done);
        };
        let at = Queues::addr(layout, s.posted, e.slot);
        if s.step != 1 {
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
            self.found = Some(skipped + s.i);
            return Ok(Probe::Done);
        }
        // Follow the next pointer.
        ops.push_back(Micro::Load {
            addr: at + 16,
            size: 8,
        });
        Ok(Probe::Next)
    }

    /// Removes entry `i` of a queue; `ops` gets the stores that unlink or clear it.
    pub fn unlink(
        &mut self,
        layout: &Layout,
        posted: bool,
        i: usize,
        ops: &mut VecDeque<Micro>,
    ) -> Entry {
        let lh_len = self.lh_len();
        if let (false, Some(b)) = (posted, self.lhs.as_mut()) {
            if i < lh_len {
                return b.remove(layout, self.me, i, ops);
            }
        }
        let i = if posted { i } else { i - lh_len };
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
        // The LH buffer takes it when it has room and the list it overflowed into is empty.
        if !posted && self.next_lh_entry(layout).is_some() {
            let e = Entry {
                slot: 0,
                src,
                tag,
                ctx,
                what,
            };
            let words = (entry_word(src, tag, ctx), payload_word(what));
            let b = self.lhs.as_mut().ok_or("no LH buffer")?;
            b.push(layout, e, words, ops);
            return Ok(());
        }
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
        for (addr, value) in [
            (at, entry_word(src, tag, ctx)),
            (at + 8, payload_word(what)),
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

/// The word a record or LH entry keeps beside its match word.
fn payload_word(what: Unexp) -> u64 {
    match what {
        Unexp::Posted(r) | Unexp::SelfSend(r) => r as u64,
        Unexp::Eager { tmp, .. } => tmp,
        Unexp::Rts { sreq, .. } => sreq as u64,
        Unexp::Nic => 0,
    }
}

/// Payload bytes an LH entry of `entry_bytes` keeps of a message of `bytes`.
pub(super) fn lh_head_bytes(entry_bytes: u64, bytes: u64) -> u64 {
    bytes.min(entry_bytes - ENVELOPE_BYTES)
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
