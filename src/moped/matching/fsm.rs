//! The MOPED paper's matching state machine (section 4.2): the waiting copies of every
//! receiver, sends and receives alike, sit in the descriptor table; a check walks them
//! oldest first, one entry per cycle, until the first that matches. Its capacity is the
//! table's, so it never refuses an insertion itself.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::{Engine, Entry, Found, Inserted, Key, MatcherKind};
use crate::moped::desc::DescIndex;

#[derive(Debug, Default)]
pub struct Fsm {
    /// Every queued entry by stamp: the walk's order.
    queued: BTreeMap<u64, Entry>,
    stamps: FxHashMap<DescIndex, u64>,
}

impl Engine for Fsm {
    fn kind(&self) -> MatcherKind {
        MatcherKind::Fsm
    }

    fn search(&mut self, probe: &Key) -> Found {
        let (hit, read) = super::first_match(self.queued.values(), probe);
        let partner = hit.map(|(_, p)| {
            self.queued.remove(&p.seq);
            self.stamps.remove(&p.handle);
            p
        });
        Found {
            partner,
            traversed: read,
            // One entry per cycle; a check of an empty table still takes one.
            cycles: read.max(1),
        }
    }

    fn insert(&mut self, entry: Entry) -> Inserted {
        self.stamps.insert(entry.handle, entry.seq);
        self.queued.insert(entry.seq, entry);
        Inserted::Queued {
            cycles: 0,
            overflow: false,
        }
    }

    fn remove(&mut self, handle: DescIndex) -> Option<u64> {
        let seq = self.stamps.remove(&handle)?;
        self.queued.remove(&seq);
        Some(0)
    }

    fn len(&self) -> usize {
        self.queued.len()
    }
}
