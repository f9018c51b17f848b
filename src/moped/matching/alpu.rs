//! The associative list processing unit of Underwood, Hemmert, Rodrigues, Murphy and
//! Brightwell ("A hardware acceleration unit for MPI queue processing", IPDPS 2005), one
//! for the PRQ and one for the UMQ: `alpu_cells` cells (256 in the comparison of Xiong et
//! al.) compare a probe with every entry at once under ternary masks, so wildcards need no
//! special path, and answer the oldest match (cells are kept in priority order, oldest
//! first). An insertion takes one cycle while the unit is not full (as the unit's patent
//! record states); a search one cycle, the CAM's figure, as the ALPU's own was not
//! available to us.
//!
//! Overflow. Entries beyond the cells stay in a list in memory kept by the NIC's embedded
//! processor that the ALPU accelerates, always younger than every cell's entry: a search
//! that misses the cells walks that list, `alpu.walk_cycles` processor cycles per element
//! (at `alpu.nic_mhz`, counted here in ALPU cycles at `alpu.mhz`); when a cell frees, the
//! processor moves the list's oldest entry into it, and appending to the list costs the
//! same (one element's access each). New entries go to the list while it is not empty, so
//! the cells keep the queue's oldest entries.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;

use super::{first_match, Engine, Entry, Found, Inserted, Key, MatcherKind, MatchingParams, Queue};
use crate::moped::desc::DescIndex;

#[derive(Debug, Default)]
struct Unit {
    /// The cells' entries by stamp: priority order.
    cells: BTreeMap<u64, Entry>,
    overflow: VecDeque<Entry>,
}

#[derive(Debug)]
pub struct Alpu {
    cells: usize,
    overflow_cycles: u64,
    units: [Unit; 2],
    /// Queue and stamp of every queued entry, by handle.
    stamps: FxHashMap<DescIndex, (Queue, u64)>,
}

/// ALPU cycles of one overflow element the NIC's processor handles, rounded up.
pub fn walk_cost(params: &MatchingParams) -> u64 {
    let a = &params.alpu;
    if a.mhz == a.nic_mhz {
        return a.walk_cycles;
    }
    ((a.walk_cycles as f64 * a.mhz / a.nic_mhz) - 1e-9)
        .ceil()
        .max(1.0) as u64
}

impl Alpu {
    pub fn new(params: &MatchingParams) -> Alpu {
        Alpu {
            cells: params.alpu_cells,
            overflow_cycles: walk_cost(params),
            units: [Unit::default(), Unit::default()],
            stamps: FxHashMap::default(),
        }
    }

    /// Takes the entry with stamp `seq` out of unit `q`; the cycles of any refill.
    fn take(&mut self, q: Queue, seq: u64) -> u64 {
        let unit = &mut self.units[q as usize];
        if unit.cells.remove(&seq).is_none() {
            if let Ok(at) = unit.overflow.binary_search_by_key(&seq, |e| e.seq) {
                unit.overflow.remove(at);
            }
            return 0;
        }
        match unit.overflow.pop_front() {
            Some(e) => {
                unit.cells.insert(e.seq, e);
                self.overflow_cycles
            }
            None => 0,
        }
    }
}

impl Engine for Alpu {
    fn kind(&self) -> MatcherKind {
        MatcherKind::Alpu
    }

    fn search(&mut self, probe: &Key) -> Found {
        let q = match probe.queue() {
            Queue::Posted => Queue::Unexpected,
            Queue::Unexpected => Queue::Posted,
        };
        let unit = &self.units[q as usize];
        let mut cycles = 1;
        let mut traversed = 0;
        let mut hit = unit.cells.values().find(|e| probe.matches(&e.key)).copied();
        if hit.is_none() {
            let (found, read) = first_match(&unit.overflow, probe);
            traversed = read;
            cycles += self.overflow_cycles * read;
            hit = found.map(|(_, e)| e);
        }
        if let Some(e) = hit {
            self.stamps.remove(&e.handle);
            cycles += self.take(q, e.seq);
        }
        Found {
            partner: hit,
            traversed,
            cycles,
        }
    }

    fn insert(&mut self, entry: Entry) -> Inserted {
        let q = entry.key.queue();
        let cells = self.cells;
        let unit = &mut self.units[q as usize];
        let overflow = !unit.overflow.is_empty() || unit.cells.len() >= cells;
        if overflow {
            unit.overflow.push_back(entry);
        } else {
            unit.cells.insert(entry.seq, entry);
        }
        self.stamps.insert(entry.handle, (q, entry.seq));
        Inserted::Queued {
            cycles: if overflow { self.overflow_cycles } else { 1 },
            overflow,
        }
    }

    fn remove(&mut self, handle: DescIndex) -> Option<u64> {
        let (q, seq) = self.stamps.remove(&handle)?;
        Some(1 + self.take(q, seq))
    }

    fn len(&self) -> usize {
        self.stamps.len()
    }
}
