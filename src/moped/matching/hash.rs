//! The hash-based MPI processor of Mattheakis and Papaefstathiou (ACM TACO 9(4), 2013) as
//! Xiong, Skjellum and Herbordt describe and compare against it (sections III.C.2 and
//! IV.B): each queue split into `hash_buckets` (64) linked lists by source rank, in one
//! memory served by one list manager, so list operations run one after another. Receives
//! with ANY_SOURCE cannot be hashed: they wait in a list of their own, and an arriving
//! send searches its bucket and then that list, the earlier match by sequence number
//! winning. A receive with ANY_SOURCE searching the unexpected queue reads every bucket.
//! Elements cost `list_cycles` (3) each, the figure of the two-level queue's lists, which
//! were modelled on this processor's; an insertion (free-list pop, tail link) one cycle.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::{first_match, Engine, Entry, Found, Inserted, Key, MatcherKind, MatchingParams, Queue};
use crate::envelope::Peer;
use crate::moped::desc::DescIndex;

/// Where a queued entry sits: a bucket, or the wildcard list (`None`).
type Place = Option<usize>;

#[derive(Debug)]
struct Buckets {
    lists: Vec<VecDeque<Entry>>,
    wildcard: VecDeque<Entry>,
    len: usize,
}

#[derive(Debug)]
pub struct Hash {
    capacity: usize,
    list_cycles: u64,
    queues: [Buckets; 2],
    places: FxHashMap<DescIndex, (Queue, Place, u64)>,
}

impl Hash {
    pub fn new(params: &MatchingParams) -> Hash {
        let buckets = || Buckets {
            lists: (0..params.hash_buckets.max(1))
                .map(|_| VecDeque::new())
                .collect(),
            wildcard: VecDeque::new(),
            len: 0,
        };
        Hash {
            capacity: params.list_entries,
            list_cycles: params.list_cycles,
            queues: [buckets(), buckets()],
            places: FxHashMap::default(),
        }
    }

    fn bucket(&self, source: Peer) -> Place {
        match source {
            Peer::Rank(r) => Some(r as usize % self.queues[0].lists.len()),
            Peer::Any => None,
        }
    }

    /// The earliest match among `places` of queue `q`, searched one list after another.
    fn search_in(&self, q: Queue, places: &[Place], probe: &Key) -> (Option<(Place, Entry)>, u64) {
        let b = &self.queues[q as usize];
        let (mut best, mut read) = (None::<(Place, Entry)>, 0);
        for &place in places {
            let list = match place {
                Some(i) => &b.lists[i],
                None => &b.wildcard,
            };
            // A later list need not look past the best match so far.
            let limit = best.map_or(u64::MAX, |(_, e)| e.seq);
            let (hit, r) = first_match(list.iter().take_while(|e| e.seq < limit), probe);
            read += r;
            if let Some((_, e)) = hit {
                best = Some((place, e));
            }
        }
        (best, read)
    }

    fn take(&mut self, q: Queue, place: Place, seq: u64) {
        let b = &mut self.queues[q as usize];
        let list = match place {
            Some(i) => &mut b.lists[i],
            None => &mut b.wildcard,
        };
        if let Ok(at) = list.binary_search_by_key(&seq, |e| e.seq) {
            list.remove(at);
            b.len -= 1;
        }
    }
}

impl Engine for Hash {
    fn kind(&self) -> MatcherKind {
        MatcherKind::Hash
    }

    fn search(&mut self, probe: &Key) -> Found {
        let (q, places): (Queue, Vec<Place>) = match (probe.queue(), self.bucket(probe.source)) {
            // A send: its source's bucket of the PRQ, then the ANY_SOURCE receives.
            (Queue::Unexpected, bucket) => (Queue::Posted, vec![bucket, None]),
            (Queue::Posted, Some(bucket)) => (Queue::Unexpected, vec![Some(bucket)]),
            (Queue::Posted, None) => {
                let all = (0..self.queues[1].lists.len()).map(Some).collect();
                (Queue::Unexpected, all)
            }
        };
        let (hit, read) = self.search_in(q, &places, probe);
        if let Some((place, e)) = hit {
            self.places.remove(&e.handle);
            self.take(q, place, e.seq);
        }
        Found {
            partner: hit.map(|(_, e)| e),
            traversed: read,
            cycles: (self.list_cycles * read).max(1),
        }
    }

    fn insert(&mut self, entry: Entry) -> Inserted {
        let q = entry.key.queue();
        if self.queues[q as usize].len >= self.capacity {
            return Inserted::Full;
        }
        let place = self.bucket(entry.key.source);
        let b = &mut self.queues[q as usize];
        match place {
            Some(i) => b.lists[i].push_back(entry),
            None => b.wildcard.push_back(entry),
        }
        b.len += 1;
        self.places.insert(entry.handle, (q, place, entry.seq));
        Inserted::Queued {
            cycles: 1,
            overflow: false,
        }
    }

    fn remove(&mut self, handle: DescIndex) -> Option<u64> {
        let (q, place, seq) = self.places.remove(&handle)?;
        self.take(q, place, seq);
        Some(1)
    }

    fn len(&self) -> usize {
        self.places.len()
    }
}
