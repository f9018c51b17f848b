//! Matching on the NIC (`nic.matcher`): one of the matching engines of `moped::matching`
//! (the same files the MOPEDs run) keeps a node's posted-receive and unexpected queues on
//! its NIC, as Underwood et al.'s ALPU does ("A hardware acceleration unit for MPI queue
//! processing", IPDPS 2005): the host posts each receive to the NIC, each arriving message
//! is matched there, and the NIC hands the host the (receive, message) pairs through a
//! completion queue. The engine runs at its own clock (`nic.matcher_mhz`), one operation
//! at a time.

use std::collections::BTreeMap;

use crate::envelope::{Kind, Peer, Tag};
use crate::moped::desc::DescIndex;
use crate::moped::matching::{Engine, Entry, Inserted, Key, MatcherKind, MatchingParams};

/// Handles of unexpected messages are their positions modulo this; posted receives take
/// the handles above it.
const POSTED_BASE: u32 = 32_768;

/// What the NIC's engine counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchStats {
    /// Searches run (a receive posted, a message arrived), entries they read one after
    /// another, and the engine's cycles (its own clock) for them and its insertions.
    pub searches: u64,
    pub traversed: u64,
    pub engine_cycles: u64,
    /// Pairs handed to the host.
    pub matches: u64,
}

/// A pair the host takes: receive `req` gets the message at position `pos`, from cycle `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub at: u64,
    pub req: u32,
    pub pos: u64,
}

#[derive(Debug)]
pub struct NicMatch {
    engine: Box<dyn Engine>,
    /// Core cycles per engine cycle.
    ratio: f64,
    busy_until: u64,
    /// The node whose queues these are (every key's receiver).
    node: u16,
    /// Posted receives' requests, and free handles for more.
    posted: BTreeMap<DescIndex, u32>,
    free: Vec<DescIndex>,
    /// Unexpected messages' positions, by handle.
    waiting: BTreeMap<DescIndex, u64>,
    stamp: u64,
    /// Every pair so far, in the order the engine made them.
    pub pairs: Vec<Pair>,
    pub stats: MatchStats,
}

/// The key of a match word (`mpi::queues::entry_word`'s packing: context, tag, source,
/// 0xFFFF for a wildcard) of `kind` at `node`.
fn key_of(word: u64, kind: Kind, node: u16) -> Key {
    let f = |sh: u32| ((word >> sh) & 0xFFFF) as u16;
    let source = match f(0) {
        0xFFFF => Peer::Any,
        r => Peer::Rank(r),
    };
    let tag = match f(16) {
        0xFFFF => Tag::Any,
        t => Tag::Tag(t.into()),
    };
    Key {
        kind,
        program: 0,
        receiver: node,
        context: f(32),
        source,
        tag,
    }
}

impl NicMatch {
    /// `kind`'s engine at `mhz` on a node whose cores run at `core_ghz`.
    pub fn new(
        kind: MatcherKind,
        params: &MatchingParams,
        (mhz, core_ghz): (f64, f64),
        node: u16,
    ) -> NicMatch {
        NicMatch {
            engine: kind.build(params),
            ratio: core_ghz * 1000.0 / mhz,
            busy_until: 0,
            node,
            posted: BTreeMap::new(),
            free: (POSTED_BASE..2 * POSTED_BASE)
                .rev()
                .map(|h| h as DescIndex)
                .collect(),
            waiting: BTreeMap::new(),
            stamp: 0,
            pairs: Vec::new(),
            stats: MatchStats::default(),
        }
    }

    /// Runs one operation of `cycles` engine cycles from `now` (after the one before):
    /// the cycle it ends.
    fn run(&mut self, now: u64, cycles: u64) -> u64 {
        self.stats.engine_cycles += cycles;
        let start = now.max(self.busy_until);
        self.busy_until = start + (cycles as f64 * self.ratio).ceil() as u64;
        self.busy_until
    }

    /// A message with match word `word` arrived at position `pos` at `now`: matched with
    /// the earliest posted receive it fits, or queued as unexpected.
    pub fn arrive(&mut self, pos: u64, word: u64, now: u64) -> Result<(), String> {
        let key = key_of(word, Kind::Send, self.node);
        let found = self.engine.search(&key);
        self.stats.searches += 1;
        self.stats.traversed += found.traversed;
        let end = self.run(now, found.cycles);
        if let Some(p) = found.partner {
            let req = self
                .posted
                .remove(&p.handle)
                .ok_or("a posted receive without request")?;
            self.free.push(p.handle);
            return self.pair(end, req, pos);
        }
        let handle = (pos % u64::from(POSTED_BASE)) as DescIndex;
        self.insert(key, handle, now)?;
        self.waiting.insert(handle, pos);
        Ok(())
    }

    /// The host posted receive `req` with match word `word` at `now`: matched with the
    /// earliest unexpected message it fits, or queued as posted.
    pub fn post(&mut self, req: u32, word: u64, now: u64) -> Result<(), String> {
        let key = key_of(word, Kind::Recv, self.node);
        let found = self.engine.search(&key);
        self.stats.searches += 1;
        self.stats.traversed += found.traversed;
        let end = self.run(now, found.cycles);
        if let Some(m) = found.partner {
            let pos = self
                .waiting
                .remove(&m.handle)
                .ok_or("an unexpected entry without position")?;
            return self.pair(end, req, pos);
        }
        let handle = self
            .free
            .pop()
            .ok_or("more than 32768 receives posted to one NIC")?;
        self.insert(key, handle, now)?;
        self.posted.insert(handle, req);
        Ok(())
    }

    fn insert(&mut self, key: Key, handle: DescIndex, now: u64) -> Result<(), String> {
        self.stamp += 1;
        let entry = Entry {
            key,
            seq: self.stamp,
            handle,
        };
        match self.engine.insert(entry) {
            Inserted::Queued { cycles, .. } => {
                self.run(now, cycles);
                Ok(())
            }
            Inserted::Full => Err(format!(
                "the NIC's {} engine is full",
                self.engine.kind().name()
            )),
        }
    }

    fn pair(&mut self, at: u64, req: u32, pos: u64) -> Result<(), String> {
        self.stats.matches += 1;
        self.pairs.push(Pair { at, req, pos });
        Ok(())
    }

    /// Whether the engine is still working at `now`.
    pub fn busy(&self, now: u64) -> bool {
        self.busy_until > now
    }

    /// Pairs ready by `now`.
    pub fn ready(&self, now: u64) -> u64 {
        self.pairs.iter().take_while(|p| p.at <= now).count() as u64
    }

    /// When the next pair not yet ready by `now` is.
    pub fn next_ready(&self, now: u64) -> Option<u64> {
        self.pairs.iter().map(|p| p.at).find(|&at| at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(src: u16, tag: u16) -> u64 {
        1 << 63 | u64::from(tag) << 16 | u64::from(src)
    }

    #[test]
    fn arrivals_and_posts_pair_in_mpi_order() {
        let params = MatchingParams {
            alpu_cells: 2,
            alpu: crate::moped::matching::AlpuParams {
                walk_cycles: 10,
                ..Default::default()
            },
            ..MatchingParams::default()
        };
        // A 500 MHz engine beside 1 GHz cores: 2 core cycles per engine cycle.
        let mut m = NicMatch::new(MatcherKind::Alpu, &params, (500.0, 1.0), 0);
        for (pos, tag) in [(0, 5), (1, 6), (2, 5), (3, 7)] {
            m.arrive(pos, word(1, tag), 0).unwrap();
        }
        // Tag 7, past the two cells, is found by walking the overflow list; then the
        // earliest tag-5 message, the next; an ANY_TAG receive takes the oldest left.
        m.post(100, word(1, 7), 1000).unwrap();
        assert_eq!(m.stats.traversed, 2);
        m.post(101, word(1, 5), 1000).unwrap();
        m.post(102, word(1, 5), 1000).unwrap();
        m.post(103, word(0xFFFF, 0xFFFF), 1000).unwrap();
        let got: Vec<(u32, u64)> = m.pairs.iter().map(|p| (p.req, p.pos)).collect();
        assert_eq!(got, [(100, 3), (101, 0), (102, 2), (103, 1)]);
        // Posted first, matched by the arrival.
        m.post(104, word(1, 9), 2000).unwrap();
        m.arrive(4, word(1, 9), 3000).unwrap();
        assert_eq!(m.pairs.last().map(|p| (p.req, p.pos)), Some((104, 4)));
        assert_eq!(m.ready(1_000_000), 5);
        assert_eq!(m.ready(0), 0);
        assert!(m.pairs.windows(2).all(|w| w[0].at <= w[1].at));
    }
}
