//! The two-level queue of Xiong, Skjellum and Herbordt ("Accelerating MPI Message Matching
//! Through FPGA Offload", sections III.C and III.D), one for the PRQ and one for the UMQ:
//! a CAM (256 entries, 1 cycle to insert and to match) holding the oldest entries, over
//! `n` hardware linked lists (32,768 entries in all, 3 cycles per element traversed)
//! filled round robin and searched in parallel; a data mover refills the CAM from the
//! lists, 1 cycle a move, "during which any insertion into the linked-list is stalled"
//! (section III.C).
//!
//! Time. The PRQ and the UMQ sit in two dual-ported BRAMs, so that "the design can handle
//! simultaneously accesses and perform the operations in parallel" (section III.C.2):
//! each queue has its own port, busy until its last operation ends. A search waits for
//! its queue's port, and its cycles (the wait included) are what the check holds the
//! engine; an insertion takes its queue's port for 1 cycle without holding the engine,
//! so the next check may search the other queue meanwhile, and a refill runs on the
//! mover after the search that freed the CAM slot, holding back only list insertions
//! into that queue. Operations on one queue stay in arrival order, so MPI's order holds.
//!
//! Order. New entries go to the CAM only while the lists are empty, and the mover refills
//! the CAM with the oldest list head, so the CAM always holds a queue's oldest entries: a
//! CAM hit is the earliest match and the lists need no search. (The paper's mover picks
//! the lists round robin; with round-robin insertion that is the same list until a match
//! removes an element from the middle of one, after which only the oldest head keeps the
//! CAM's entries older than every list's.) Within the lists, the earliest of the lists'
//! first matches, by sequence number, wins.
//!
//! Wildcards. The CAM stores exact headers and compares exact keys (the paper drops
//! wildcards because NPB and Mantevo hardly use them, section III.B). Here a receive with
//! ANY_SOURCE or ANY_TAG joins a wildcard list of its own beside the PRQ, a hardware
//! list searched in parallel with the CAM by every arriving send; the earliest match of
//! the two wins. A wildcard receive searching the UMQ cannot use the CAM's exact compare:
//! it reads the CAM's entries one per cycle, and then the lists, comparing under its mask.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::{first_match, Engine, Entry, Found, Inserted, Key, MatcherKind, MatchingParams, Queue};
use crate::moped::desc::DescIndex;

/// Where a queued entry sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Cam,
    List(usize),
    Wildcard,
}

/// One queue's two levels.
#[derive(Debug)]
struct Level {
    /// The CAM's entries by stamp (slot order does not matter to a parallel compare).
    cam: BTreeMap<u64, Entry>,
    lists: Vec<VecDeque<Entry>>,
    /// Receives with a wildcard (PRQ only).
    wildcard: VecDeque<Entry>,
    /// The list the next insertion goes to.
    next: usize,
    /// Elements in the lists and the wildcard list: they share the list memory.
    listed: usize,
}

#[derive(Debug)]
pub struct TwoLevel {
    kind: MatcherKind,
    cam_entries: usize,
    list_entries: usize,
    list_cycles: u64,
    levels: [Level; 2],
    places: FxHashMap<DescIndex, (Queue, Place, u64)>,
    /// The cycle the current operation starts at ([`Engine::at`]).
    now: u64,
    /// Per queue: the cycle its BRAM port is free, and the cycle its data mover is.
    port_free: [u64; 2],
    mover_free: [u64; 2],
}

impl TwoLevel {
    /// The two-level queue over `lists` parallel lists (1, 4 or 64 name the engines).
    pub fn new(params: &MatchingParams, lists: usize) -> TwoLevel {
        let level = || Level {
            cam: BTreeMap::new(),
            lists: (0..lists.max(1)).map(|_| VecDeque::new()).collect(),
            wildcard: VecDeque::new(),
            next: 0,
            listed: 0,
        };
        TwoLevel {
            kind: match lists {
                1 => MatcherKind::Cam,
                4 => MatcherKind::Cam4,
                _ => MatcherKind::Cam64,
            },
            cam_entries: params.cam_entries,
            list_entries: params.list_entries,
            list_cycles: params.list_cycles,
            levels: [level(), level()],
            places: FxHashMap::default(),
            now: 0,
            port_free: [0; 2],
            mover_free: [0; 2],
        }
    }

    fn level(&mut self, q: Queue) -> &mut Level {
        &mut self.levels[q as usize]
    }

    /// The earliest match in the lists, searched in parallel: (list, position, entry),
    /// the elements read, and the longest list's read.
    fn search_lists(
        lists: &[VecDeque<Entry>],
        probe: &Key,
    ) -> (Option<(usize, usize, Entry)>, u64, u64) {
        let (mut best, mut read, mut longest) = (None::<(usize, usize, Entry)>, 0, 0);
        for (i, list) in lists.iter().enumerate() {
            let (hit, r) = first_match(list, probe);
            read += r;
            longest = longest.max(r);
            if let Some((at, e)) = hit {
                if best.map_or(true, |(_, _, b)| e.seq < b.seq) {
                    best = Some((i, at, e));
                }
            }
        }
        (best, read, longest)
    }

    /// Takes `e` out of its place; the cycles of the refill it causes (the mover's).
    fn take(&mut self, q: Queue, place: Place, e: &Entry) -> u64 {
        self.places.remove(&e.handle);
        let level = &mut self.levels[q as usize];
        match place {
            Place::Cam => {
                level.cam.remove(&e.seq);
                return self.refill(q);
            }
            Place::List(i) => remove_seq(&mut level.lists[i], e.seq),
            Place::Wildcard => remove_seq(&mut level.wildcard, e.seq),
        }
        level.listed -= 1;
        0
    }

    /// The data mover: the oldest list head into a free CAM slot, 1 cycle.
    fn refill(&mut self, q: Queue) -> u64 {
        let level = &mut self.levels[q as usize];
        let oldest = (0..level.lists.len())
            .filter_map(|i| level.lists[i].front().map(|e| (e.seq, i)))
            .min();
        let Some((_, i)) = oldest else { return 0 };
        let Some(e) = level.lists[i].pop_front() else {
            return 0;
        };
        level.listed -= 1;
        level.cam.insert(e.seq, e);
        self.places.insert(e.handle, (q, Place::Cam, e.seq));
        1
    }

    /// A search by an exact key, or by a send (whose PRQ may hold wildcard receives).
    fn search_exact(&mut self, q: Queue, probe: &Key) -> (Option<(Place, Entry)>, u64, u64) {
        let level = &self.levels[q as usize];
        let cam_hit = level.cam.values().find(|e| probe.matches(&e.key)).copied();
        // The wildcard list runs beside the CAM; it can stop at entries younger than a hit.
        let limit = cam_hit.map_or(u64::MAX, |e| e.seq);
        let (wild_hit, wild_read) =
            first_match(level.wildcard.iter().take_while(|e| e.seq < limit), probe);
        let wild_cycles = self.list_cycles * wild_read;
        let (mut best, mut read, mut cycles) = (cam_hit.map(|e| (Place::Cam, e)), wild_read, 1);
        if cam_hit.is_none() {
            let (hit, r, longest) = Self::search_lists(&level.lists, probe);
            read += r;
            cycles += self.list_cycles * longest;
            best = hit.map(|(i, _, e)| (Place::List(i), e));
        }
        if let Some((_, w)) = wild_hit {
            if best.map_or(true, |(_, b)| w.seq < b.seq) {
                best = Some((Place::Wildcard, w));
            }
        }
        (best, read, cycles.max(wild_cycles))
    }

    /// A wildcard receive searching the UMQ: the CAM read out entry by entry, then the lists.
    fn search_masked(&mut self, q: Queue, probe: &Key) -> (Option<(Place, Entry)>, u64, u64) {
        let level = &self.levels[q as usize];
        let cam_read = level.cam.len() as u64;
        if let Some(e) = level.cam.values().find(|e| probe.matches(&e.key)) {
            return (Some((Place::Cam, *e)), cam_read, cam_read.max(1));
        }
        let (hit, r, longest) = Self::search_lists(&level.lists, probe);
        let cycles = cam_read.max(1) + self.list_cycles * longest;
        (
            hit.map(|(i, _, e)| (Place::List(i), e)),
            cam_read + r,
            cycles,
        )
    }
}

fn remove_seq(list: &mut VecDeque<Entry>, seq: u64) {
    if let Ok(at) = list.binary_search_by_key(&seq, |e| e.seq) {
        list.remove(at);
    }
}

fn opposite(probe: &Key) -> Queue {
    match probe.queue() {
        Queue::Posted => Queue::Unexpected,
        Queue::Unexpected => Queue::Posted,
    }
}

impl Engine for TwoLevel {
    fn kind(&self) -> MatcherKind {
        self.kind
    }

    fn search(&mut self, probe: &Key) -> Found {
        let q = opposite(probe);
        let start = self.now.max(self.port_free[q as usize]);
        let (hit, traversed, cycles) = if q == Queue::Unexpected && probe.has_wildcard() {
            self.search_masked(q, probe)
        } else {
            self.search_exact(q, probe)
        };
        let end = start + cycles;
        self.port_free[q as usize] = end;
        if let Some((place, e)) = hit {
            let refill = self.take(q, place, &e);
            if refill > 0 {
                self.mover_free[q as usize] = end + refill;
            }
        }
        Found {
            partner: hit.map(|(_, e)| e),
            traversed,
            cycles: end - self.now,
        }
    }

    fn insert(&mut self, entry: Entry) -> Inserted {
        let q = entry.key.queue();
        let (cam_entries, list_entries) = (self.cam_entries, self.list_entries);
        let level = self.level(q);
        let lists_empty = level.lists.iter().all(VecDeque::is_empty);
        let place = if q == Queue::Posted && entry.key.has_wildcard() {
            Place::Wildcard
        } else if lists_empty && level.cam.len() < cam_entries {
            Place::Cam
        } else {
            Place::List(level.next)
        };
        if place != Place::Cam && level.listed >= list_entries {
            return Inserted::Full;
        }
        // The port for one cycle, after any refill when it goes to a list.
        let mut start = self.now.max(self.port_free[q as usize]);
        if place != Place::Cam {
            start = start.max(self.mover_free[q as usize]);
        }
        self.port_free[q as usize] = start + 1;
        let level = self.level(q);
        match place {
            Place::Cam => {
                level.cam.insert(entry.seq, entry);
            }
            Place::List(i) => {
                level.lists[i].push_back(entry);
                level.next = (i + 1) % level.lists.len();
                level.listed += 1;
            }
            Place::Wildcard => {
                level.wildcard.push_back(entry);
                level.listed += 1;
            }
        }
        self.places.insert(entry.handle, (q, place, entry.seq));
        Inserted::Queued {
            cycles: 0,
            overflow: place != Place::Cam,
        }
    }

    fn remove(&mut self, handle: DescIndex) -> Option<u64> {
        let &(q, place, seq) = self.places.get(&handle)?;
        let level = &self.levels[q as usize];
        let e = match place {
            Place::Cam => level.cam.get(&seq).copied(),
            Place::List(i) => level.lists[i].iter().find(|e| e.seq == seq).copied(),
            Place::Wildcard => level.wildcard.iter().find(|e| e.seq == seq).copied(),
        }?;
        Some(1 + self.take(q, place, &e))
    }

    fn len(&self) -> usize {
        self.places.len()
    }

    fn at(&mut self, cycle: u64) {
        self.now = self.now.max(cycle);
    }

    fn idle_at(&self) -> u64 {
        self.port_free
            .into_iter()
            .chain(self.mover_free)
            .max()
            .unwrap_or(0)
    }
}
