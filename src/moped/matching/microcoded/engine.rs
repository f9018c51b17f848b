//! The microcoded match unit as a matching engine: each receiving process's PRQ and UMQ
//! are lists in the list manager's memory, in posting order, and every search is decided
//! and timed by the assembled match program (`match.mu`) running on the interpreter, the
//! list manager streaming the header and the list one word a cycle
//! ([`run_with_list_manager`]).
//!
//! Envelopes as the unit sees them:
//! - match bits: the tag in bits 0-31, the context in 32-47, the program in 48-55;
//! - a rank is a source pair: nid = its high byte, pid = its low byte, so no rank reads
//!   as the unit's ANY (0xffff); a send without a source rank reads as [`NO_RANK`], a
//!   pair no rank has, and a send's ANY_TAG as tag [`NO_TAG`], above MPI's largest tag,
//!   so neither matches what MPI would not match;
//! - items are MPI-style (valid, puts, threshold 1, local offset 0) with an MD length no
//!   message exceeds, and headers carry length 0: sizes never decide an MPI match.
//!
//! PRQ search (an arriving send): the header is the send; the items are the posted
//! receives, ANY_TAG as the tag's bits in the ignore bits and ANY_SOURCE as nid = pid =
//! ANY. UMQ search (an arriving receive): the unit puts wildcards on the item side, so the
//! list manager streams each unexpected send as an item that carries the searching
//! receive's wildcards (the receive's ignore bits; nid = pid = ANY for ANY_SOURCE), and
//! the header is the receive's own envelope (tag 0 under ANY_TAG, the pair 0/0 under
//! ANY_SOURCE, both ignored by every item). Either way an item matches exactly when MPI's
//! rule holds, and the unit reports the earliest such item.
//!
//! Costs: a search takes the cycles the program ran (header, every item read, the flush
//! or the end-of-list report), an empty queue included; `traversed` is the items the unit
//! compared. Inserting and removing take 1 cycle each (a choice: the list manager links
//! or unlinks one item in its memory). Capacity: `list_entries` per queue kind, over all
//! receivers (as the hash engine), at most [`MAX_LIST`]; a full queue refuses.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::isa::Instr;
use super::list_manager::{run_with_feed, Feed};
use super::program::{match_program_for, Header, ListItem, Op, Outcome, ANY};
use crate::envelope::{Peer, ProgramId, Rank, Tag};
use crate::moped::desc::DescIndex;
use crate::moped::matching::{
    Engine, Entry, Found, Inserted, Key, MatcherKind, MatchingParams, Queue,
};

/// The most entries a queue holds. The list manager gives up after 1,000,000 cycles; the
/// costliest MPI item here takes 12 (one failing on its source after all 8 pops), so a
/// list of 2^16 such items ends within 12 * 65,536 + 31 = 786,463 cycles
/// (`a_full_list_ends_within_the_cycle_limit` checks the per-item bound).
pub const MAX_LIST: usize = 1 << 16;

/// The source pair of a send without a source rank: no rank maps to it, and it is not ANY.
pub const NO_RANK: u16 = 0xfffe;

/// The tag bits of a send with ANY_TAG: above MPI's largest tag.
pub const NO_TAG: u32 = u32::MAX;

/// The bits of the tag in the match bits, ignored by a receive with ANY_TAG.
const TAG_BITS: u64 = 0xffff_ffff;

/// An MD length no message exceeds.
const MD_LENGTH: u64 = u64::MAX;

/// Match bits of an envelope.
fn match_bits(program: ProgramId, context: u16, tag: Tag) -> u64 {
    let tag = match tag {
        Tag::Tag(t) => t,
        Tag::Any => NO_TAG,
    };
    u64::from(tag) | (u64::from(context) << 32) | (u64::from(program) << 48)
}

/// The (nid, pid) pair of a rank.
fn pair(rank: Rank) -> (u16, u16) {
    (rank >> 8, rank & 0xff)
}

/// A send's source pair.
fn send_pair(source: Peer) -> (u16, u16) {
    match source {
        Peer::Rank(r) => pair(r),
        Peer::Any => (NO_RANK, NO_RANK),
    }
}

/// A receive's ignore bits.
fn ignore_bits(tag: Tag) -> u64 {
    match tag {
        Tag::Tag(_) => 0,
        Tag::Any => TAG_BITS,
    }
}

fn header(match_bits: u64, (src_nid, src_pid): (u16, u16)) -> Header {
    Header {
        match_bits,
        src_nid,
        src_pid,
        op: Op::Put,
        ..Header::default()
    }
}

fn item(match_bits: u64, ignore_bits: u64, (nid, pid): (u16, u16)) -> ListItem {
    ListItem {
        ignore_bits,
        ..ListItem::mpi(match_bits, nid, pid, MD_LENGTH)
    }
}

/// What the list manager sends for an arriving send: the send as the header, the posted
/// receives as items with their own wildcards.
pub fn prq_request(send: &Key, posted: &[Entry]) -> (Header, Vec<ListItem>) {
    let h = header(
        match_bits(send.program, send.context, send.tag),
        send_pair(send.source),
    );
    let items = posted
        .iter()
        .map(|r| {
            let k = &r.key;
            let source = match k.source {
                Peer::Rank(s) => pair(s),
                Peer::Any => (ANY, ANY),
            };
            // Under ANY_TAG the tag bits are ignored, whatever they hold.
            item(
                match_bits(k.program, k.context, k.tag),
                ignore_bits(k.tag),
                source,
            )
        })
        .collect();
    (h, items)
}

/// What the list manager sends for an arriving receive: the receive as the header, each
/// unexpected send as an item carrying the receive's wildcards.
pub fn umq_request(recv: &Key, unexpected: &[Entry]) -> (Header, Vec<ListItem>) {
    let tag = match recv.tag {
        Tag::Any => Tag::Tag(0),
        t => t,
    };
    let source = match recv.source {
        Peer::Rank(r) => pair(r),
        Peer::Any => (0, 0),
    };
    let h = header(match_bits(recv.program, recv.context, tag), source);
    let items = unexpected
        .iter()
        .map(|s| {
            let k = &s.key;
            let source = match recv.source {
                Peer::Rank(_) => send_pair(k.source),
                Peer::Any => (ANY, ANY),
            };
            let bits = match_bits(k.program, k.context, k.tag);
            item(bits, ignore_bits(recv.tag), source)
        })
        .collect();
    (h, items)
}

/// One receiving process's queues, indexed by [`Queue`].
type Lists = [VecDeque<Entry>; 2];

#[derive(Debug)]
pub struct Microcoded {
    program: Vec<Instr>,
    feed: Feed,
    capacity: usize,
    lists: FxHashMap<(ProgramId, Rank), Lists>,
    /// Entries per queue kind, over all receivers.
    lens: [usize; 2],
    places: FxHashMap<DescIndex, (ProgramId, Rank, Queue, u64)>,
}

impl Microcoded {
    pub fn new(params: &MatchingParams) -> Microcoded {
        // `match.mu` is a constant of the crate and `tests_program` assembles it with and
        // without the flush, so assembling it cannot fail.
        let feed = params.microcoded.feed();
        let program = match_program_for(feed.flush)
            .expect("match.mu assembles")
            .instrs;
        Microcoded {
            program,
            feed,
            capacity: params.list_entries.min(MAX_LIST),
            lists: FxHashMap::default(),
            lens: [0; 2],
            places: FxHashMap::default(),
        }
    }

    /// Runs the program on one search: the matched item's index, items compared, cycles.
    fn run(&self, h: &Header, items: &[ListItem]) -> (Option<usize>, u64, u64) {
        // The program is fixed and valid, and a list holds at most MAX_LIST items, which
        // end well within the list manager's cycle limit (see MAX_LIST), so the run
        // cannot fail.
        let (run, _) = run_with_feed(&self.program, h, items, self.feed)
            .expect("the match program ends every list of at most MAX_LIST items");
        let index = match run.outcome {
            Outcome::Match { index, .. } => Some(index),
            Outcome::NoMatch => None,
        };
        let compared = run.failed as u64 + u64::from(index.is_some());
        (index, compared, run.cycles)
    }

    fn take(&mut self, at: (ProgramId, Rank), q: Queue, seq: u64) -> Option<Entry> {
        let lists = self.lists.get_mut(&at)?;
        let list = &mut lists[q as usize];
        let i = list.binary_search_by_key(&seq, |e| e.seq).ok()?;
        let e = list.remove(i)?;
        self.lens[q as usize] -= 1;
        self.places.remove(&e.handle);
        if lists.iter().all(VecDeque::is_empty) {
            self.lists.remove(&at);
        }
        Some(e)
    }
}

impl Engine for Microcoded {
    fn kind(&self) -> MatcherKind {
        MatcherKind::Microcoded
    }

    fn search(&mut self, probe: &Key) -> Found {
        let at = (probe.program, probe.receiver);
        let searched = match probe.queue() {
            Queue::Unexpected => Queue::Posted,
            Queue::Posted => Queue::Unexpected,
        };
        let list: Vec<Entry> = self
            .lists
            .get(&at)
            .map(|l| l[searched as usize].iter().copied().collect())
            .unwrap_or_default();
        let (h, items) = match searched {
            Queue::Posted => prq_request(probe, &list),
            Queue::Unexpected => umq_request(probe, &list),
        };
        let (index, traversed, cycles) = self.run(&h, &items);
        let partner = index
            .and_then(|i| list.get(i))
            .and_then(|e| self.take(at, searched, e.seq));
        Found {
            partner,
            traversed,
            cycles,
        }
    }

    fn insert(&mut self, entry: Entry) -> Inserted {
        let q = entry.key.queue();
        if self.lens[q as usize] >= self.capacity {
            return Inserted::Full;
        }
        let at = (entry.key.program, entry.key.receiver);
        self.lists.entry(at).or_default()[q as usize].push_back(entry);
        self.lens[q as usize] += 1;
        self.places.insert(entry.handle, (at.0, at.1, q, entry.seq));
        Inserted::Queued {
            cycles: 1,
            overflow: false,
        }
    }

    fn remove(&mut self, handle: DescIndex) -> Option<u64> {
        let (program, rank, q, seq) = *self.places.get(&handle)?;
        self.take((program, rank), q, seq).map(|_| 1)
    }

    fn len(&self) -> usize {
        self.places.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::program::{run_match, Delivery, CYCLE_LIMIT};
    use super::*;
    use crate::envelope::Kind;

    fn key(kind: Kind, source: Peer, tag: Tag) -> Key {
        Key {
            kind,
            program: 1,
            receiver: 2,
            context: 3,
            source,
            tag,
        }
    }

    fn engine() -> Microcoded {
        Microcoded::new(&MatchingParams::default())
    }

    fn queue(m: &mut Microcoded, keys: &[Key]) -> Vec<Entry> {
        let entries: Vec<Entry> = keys
            .iter()
            .enumerate()
            .map(|(i, &key)| Entry {
                key,
                seq: i as u64 + 10,
                handle: i as DescIndex,
            })
            .collect();
        for &e in &entries {
            assert!(matches!(m.insert(e), Inserted::Queued { cycles: 1, .. }));
        }
        entries
    }

    #[test]
    fn a_prq_search_is_timed_by_the_program() {
        let mut m = engine();
        let posted = queue(
            &mut m,
            &[
                key(Kind::Recv, Peer::Rank(7), Tag::Tag(5)),
                key(Kind::Recv, Peer::Rank(4), Tag::Tag(6)),
                key(Kind::Recv, Peer::Any, Tag::Tag(5)),
                key(Kind::Recv, Peer::Rank(4), Tag::Any),
            ],
        );
        let send = key(Kind::Send, Peer::Rank(4), Tag::Tag(5));
        let (h, items) = prq_request(&send, &posted);
        let want = run_match(&m.program, &h, &items, Delivery::Streamed).unwrap();
        let found = m.search(&send);
        assert_eq!(found.partner, Some(posted[2]));
        assert_eq!(found.traversed, 3);
        assert_eq!(found.cycles, want.cycles);
        // n items traversed, the last matching: 8n + 23 (docs/microcoded-match-unit.md);
        // the first failing on its source costs 4 more.
        assert_eq!(found.cycles, 8 * 3 + 23 + 4);
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn a_wildcard_receive_takes_the_earliest_eligible_send() {
        let mut m = engine();
        let mut other_context = key(Kind::Send, Peer::Rank(4), Tag::Tag(9));
        other_context.context = 4;
        let sends = queue(
            &mut m,
            &[
                other_context,
                key(Kind::Send, Peer::Rank(6), Tag::Tag(8)),
                key(Kind::Send, Peer::Rank(4), Tag::Tag(9)),
                key(Kind::Send, Peer::Rank(4), Tag::Tag(1)),
            ],
        );
        let found = m.search(&key(Kind::Recv, Peer::Rank(4), Tag::Any));
        assert_eq!((found.partner, found.traversed), (Some(sends[2]), 3));
        let found = m.search(&key(Kind::Recv, Peer::Any, Tag::Tag(8)));
        assert_eq!((found.partner, found.traversed), (Some(sends[1]), 2));
        let found = m.search(&key(Kind::Recv, Peer::Any, Tag::Any));
        assert_eq!(found.partner, Some(sends[3]));
        assert_eq!(m.len(), 1);
        assert_eq!(m.remove(0), Some(1));
        assert_eq!((m.remove(0), m.len()), (None, 0));
    }

    #[test]
    fn an_empty_queue_costs_the_no_match_report() {
        let mut m = engine();
        let send = key(Kind::Send, Peer::Rank(4), Tag::Tag(5));
        let (h, items) = prq_request(&send, &[]);
        let want = run_match(&m.program, &h, &items, Delivery::Streamed).unwrap();
        let found = m.search(&send);
        assert_eq!((found.partner, found.traversed), (None, 0));
        assert!(found.cycles > 0);
        assert_eq!(found.cycles, want.cycles);
    }

    #[test]
    fn a_full_queue_refuses() {
        let mut m = Microcoded::new(&MatchingParams {
            list_entries: 1,
            ..MatchingParams::default()
        });
        let recv = key(Kind::Recv, Peer::Any, Tag::Any);
        queue(&mut m, &[recv]);
        let entry = Entry {
            key: recv,
            seq: 99,
            handle: 9,
        };
        assert_eq!(m.insert(entry), Inserted::Full);
    }

    #[test]
    fn a_full_list_ends_within_the_cycle_limit() {
        let m = engine();
        let send = key(Kind::Send, Peer::Rank(4), Tag::Tag(5));
        let cycles = |n: usize| {
            let posted: Vec<Entry> = (0..n)
                .map(|i| Entry {
                    key: key(Kind::Recv, Peer::Rank(5), Tag::Tag(5)),
                    seq: i as u64,
                    handle: i as DescIndex,
                })
                .collect();
            let (h, items) = prq_request(&send, &posted);
            m.run(&h, &items).2
        };
        // The costliest item: every test passes but the source, read after all 8 pops.
        let (base, per_item) = (cycles(0), cycles(9) - cycles(8));
        assert_eq!(per_item, 12);
        assert_eq!(cycles(8), base + 8 * per_item);
        assert!(base + per_item * MAX_LIST as u64 <= CYCLE_LIMIT);
    }
}
