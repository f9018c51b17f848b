//! Limited-length head separation (LHS; Tanabe and Ohta, "Network interface architecture
//! with scalable low-latency message receiving mechanism"): the unexpected-message queue
//! kept as a ring of fixed-size entries, the LH buffer, each holding one message's head
//! (its 16-byte envelope and the first bytes of its payload), the rest of the payload in a
//! buffer of its own. A search reads entry after entry at computed addresses, so
//! consecutive envelopes share lines or sit in the next one, where a list makes the core
//! follow a pointer from each record to the next.
//!
//! An entry's first word is the match word (as the list's records hold it, never 0); its
//! second what the list's record holds as payload (the buffer of the rest, the sender's
//! request, the rank's own request); the payload's first bytes follow. A matched entry is
//! cleared to 0 and stays a hole, read and skipped by later searches, until the head
//! passes it: the paper's experiment likewise scans cleared entries. The head and tail
//! indices live in the buffer's first line.
//!
//! Capacity: a ring of `mpi.lhs_entries` positions, holes included. When it is full, the
//! runtime puts messages on MPICH's list instead, and keeps doing so until the list is
//! empty, so that every list entry arrived after every LH entry and a search of the ring
//! and then the list meets messages in arrival order.
//!
//! With `[nic]` on, the ring is the NIC's receive ring: the NIC's dividing controller
//! writes the entries (with LHS into its LH buffer; without, whole messages into its bulk
//! memory), the rank never writes them. A matched entry keeps its bytes, so a hole reads
//! as the envelope it held (the rank remembers which), and the new head goes to the NIC's
//! head register, which hands the positions behind it back to the NIC.

use std::collections::{BTreeMap, VecDeque};

use super::entry::Entry;
use super::layout::Layout;
use super::ops::Micro;

/// Bytes of an entry's envelope: the match word and the payload word.
pub const ENVELOPE_BYTES: u64 = 16;

/// A rank's LH buffer.
#[derive(Debug, Default)]
pub(super) struct LhBuffer {
    /// Sequence numbers of the oldest position still in the ring and of the next one to
    /// fill; entry `seq` lives at position `seq % lh_entries`.
    head: u64,
    tail: u64,
    /// The live entries in arrival order, each with its sequence number as its `slot`.
    pub entries: Vec<Entry>,
    /// With a NIC: the match word each hole between the head and the tail still holds.
    holes: BTreeMap<u64, u64>,
    /// With a NIC: a head not yet stored into its register (the rank stores it once it
    /// has copied the message out).
    pending_head: Option<u64>,
}

impl LhBuffer {
    /// The address of rank `me`'s entry `seq`: the ring starts a page after the control
    /// line, or at the start of the NIC's LH buffer.
    pub fn entry_addr(layout: &Layout, me: u16, seq: u64) -> u64 {
        let ring = match &layout.nic {
            Some(n) => n.lh(me),
            None => layout.lh_base + crate::os::pagetable::PAGE_BYTES,
        };
        ring + (seq % layout.lh_entries) * layout.lh_entry_bytes
    }

    /// The match word a search reads at `seq` when no live entry is there: what the hole
    /// still holds (0 where the rank cleared it).
    pub fn hole_word(&self, seq: u64) -> u64 {
        self.holes.get(&seq).copied().unwrap_or(0)
    }

    /// The match word at `seq`, live or a hole, if it lies between head and tail.
    pub fn word_at(&self, seq: u64) -> Option<u64> {
        if !(self.head..self.tail).contains(&seq) {
            return None;
        }
        Some(match self.find(seq) {
            Some(k) => {
                let e = &self.entries[k];
                super::entry::entry_word(e.src, e.tag, e.ctx)
            }
            None => self.hole_word(seq),
        })
    }

    /// A NIC's head that moved and is not yet stored.
    pub fn take_pending_head(&mut self) -> Option<u64> {
        self.pending_head.take()
    }

    /// The next position a NIC fills, as this rank knows the ring.
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// A NIC's message at the next position, waiting as `e` (its `slot` set here).
    pub fn push_arrived(&mut self, mut e: Entry) {
        e.slot = self.tail;
        self.tail += 1;
        self.entries.push(e);
    }

    /// A NIC's message at the next position, taken at once (a posted receive matched it):
    /// a hole holding `word`; the head moves past it if it can (stored later, see
    /// [`LhBuffer::take_pending_head`]).
    pub fn push_taken(&mut self, word: u64) {
        self.holes.insert(self.tail, word);
        self.tail += 1;
        if let Some(head) = self.advance_head() {
            self.pending_head = Some(head);
        }
    }

    /// Positions a search reads: live entries and the holes between them.
    pub fn span(&self) -> u64 {
        self.tail - self.head
    }

    /// The sequence number of the entry a search reads at place `i` (from 0).
    pub fn seq_at(&self, i: u64) -> u64 {
        self.head + i
    }

    /// Whether the ring has a free position.
    pub fn has_room(&self, layout: &Layout) -> bool {
        self.span() < layout.lh_entries
    }

    /// The live entry with sequence number `seq`, by its index.
    pub fn find(&self, seq: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&seq, |e| e.slot).ok()
    }

    /// The address the next entry will take.
    pub fn next_addr(&self, layout: &Layout) -> u64 {
        // A ring in the rank's memory lies at the same address in every rank.
        LhBuffer::entry_addr(layout, 0, self.tail)
    }

    /// Appends `e` (its `slot` set here) with match word `word` and payload word
    /// `payload`; `ops` gets the envelope's stores and the tail's. The payload's first
    /// bytes are the caller's to copy, to [`LhBuffer::next_addr`] + [`ENVELOPE_BYTES`].
    pub fn push(
        &mut self,
        layout: &Layout,
        mut e: Entry,
        (word, payload): (u64, u64),
        ops: &mut VecDeque<Micro>,
    ) {
        let at = self.next_addr(layout);
        e.slot = self.tail;
        self.tail += 1;
        for (addr, value) in [
            (at, word),
            (at + 8, payload),
            (layout.lh_base + 8, self.tail),
        ] {
            ops.push_back(Micro::Store {
                addr,
                size: 8,
                value,
            });
        }
        self.entries.push(e);
    }

    /// Removes live entry `k`: its match word is cleared (a NIC's entry keeps it, and the
    /// rank remembers it), and the head moves past the holes it now leads, if it led them.
    pub fn remove(
        &mut self,
        layout: &Layout,
        me: u16,
        k: usize,
        ops: &mut VecDeque<Micro>,
    ) -> Entry {
        let e = self.entries.remove(k);
        if layout.nic.is_some() {
            let word = super::entry::entry_word(e.src, e.tag, e.ctx);
            self.holes.insert(e.slot, word);
        } else {
            ops.push_back(Micro::Store {
                addr: LhBuffer::entry_addr(layout, me, e.slot),
                size: 8,
                value: 0,
            });
        }
        match self.advance_head() {
            Some(head) if layout.nic.is_some() => self.pending_head = Some(head),
            Some(head) => ops.push_back(Micro::Store {
                addr: layout.lh_base,
                size: 8,
                value: head,
            }),
            None => {}
        }
        e
    }

    /// Moves the head to the first live entry (or the tail): the new head, if it moved
    /// (the caller stores it in the control line, or later in a NIC's head register).
    fn advance_head(&mut self) -> Option<u64> {
        let head = self.entries.first().map_or(self.tail, |f| f.slot);
        if head == self.head {
            return None;
        }
        self.head = head;
        self.holes = self.holes.split_off(&head);
        Some(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Peer, Tag};
    use crate::mpi::entry::Unexp;

    fn layout(entries: u64) -> Layout {
        let w = crate::workload::goal::parse_goal(
            "num_ranks 2\nrank 0 {\n send 8b to 1\n}\nrank 1 {\n recv 8b from 0\n}\n",
            "t.goal",
        )
        .unwrap();
        let mut l = Layout::new(&w, crate::config::QueueStride::Mpich, 16);
        l.set_lh_buffer(entries, 64);
        l
    }

    fn entry(tag: u32) -> Entry {
        Entry {
            slot: 0,
            src: Peer::Rank(1),
            tag: Tag::Tag(tag),
            ctx: 0,
            what: Unexp::Rts {
                sreq: tag,
                bytes: 0,
            },
        }
    }

    #[test]
    fn holes_stay_until_the_head_passes_them_and_the_ring_wraps() {
        let l = layout(3);
        let mut b = LhBuffer::default();
        let mut ops = VecDeque::new();
        for t in 1..=3 {
            assert!(b.has_room(&l));
            b.push(&l, entry(t), (t as u64, 0), &mut ops);
        }
        assert!(!b.has_room(&l));
        // The middle one leaves a hole: the search still reads three positions.
        b.remove(&l, 0, 1, &mut ops);
        assert_eq!((b.span(), b.entries.len()), (3, 2));
        assert!(!b.has_room(&l));
        // The first one goes: the head moves past the hole.
        b.remove(&l, 0, 0, &mut ops);
        assert_eq!(b.span(), 1);
        assert_eq!(b.seq_at(0), 2);
        // The next entry wraps to the ring's first position.
        let first = LhBuffer::entry_addr(&l, 0, 0);
        assert_eq!(b.next_addr(&l), first);
        b.push(&l, entry(4), (4, 0), &mut ops);
        assert_eq!(b.find(3), Some(1));
        assert_eq!(LhBuffer::entry_addr(&l, 0, 3), first);
    }

    #[test]
    fn a_removal_clears_the_match_word_and_stores_the_new_head() {
        let l = layout(4);
        let mut b = LhBuffer::default();
        let mut ops = VecDeque::new();
        b.push(&l, entry(1), (7, 9), &mut ops);
        assert_eq!(ops.len(), 3);
        ops.clear();
        b.remove(&l, 0, 0, &mut ops);
        let stores: Vec<(u64, u64)> = ops
            .iter()
            .map(|m| match m {
                Micro::Store { addr, value, .. } => (*addr, *value),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            stores,
            [(LhBuffer::entry_addr(&l, 0, 0), 0), (l.lh_base, 1)],
            "the entry cleared, then the head past it"
        );
    }
}
