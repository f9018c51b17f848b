//! Each core's data TLB and, behind it, the hardware page walk a miss starts.
//!
//! The TLB is fully associative with LRU replacement, `system.tlb_entries` entries (64 by
//! default: the Pentium 4's data TLB for 4 KiB pages, CPUID descriptor 5BH: 64 entries,
//! fully associative; Intel Application Note 485, "Intel Processor
//! Identification and the CPUID Instruction", table of cache and TLB descriptors). Pages are
//! never unmapped or moved, so a translation stays valid and nothing is ever shot down.
//!
//! With `system.page_walks`, a miss reads the page-table entries with the core's own
//! loads, one per level, each issued when the previous returns, through the L1 like any
//! blocking load ([`CoreWalk`]); the access goes on once the last returns. The OS maps a
//! lazy page first (functionally, as on a fault), so the walk then reads the entries the
//! fault wrote. Without it a miss costs nothing, as when only MOPED's walks were timed.

use std::collections::VecDeque;

use crate::coherence::CoreReq;
use crate::os::ProcId;

/// One translation, stamped with its last use.
#[derive(Clone, Copy, Debug)]
struct Entry {
    proc: ProcId,
    vpage: u64,
    frame: u64,
    used: u64,
}

/// A core's TLB counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlbStats {
    pub hits: u64,
    pub misses: u64,
    /// Page-table loads the core's walks issued.
    pub walk_loads: u64,
    /// Cycles from a miss to its walk's last load returning.
    pub walk_cycles: u64,
}

#[derive(Clone, Debug, Default)]
struct CoreTlb {
    entries: Vec<Entry>,
    /// Advances on every lookup: the LRU order, deterministic.
    clock: u64,
    stats: TlbStats,
    /// The entry of the last hit on each of a few pages, by the page's low bits, looked
    /// at first: a sweep stays on its pages for 64 words each, often on several arrays at
    /// once, and the full scan (64 entries) was most of a hit's host time.
    recent: [u32; RECENT],
    /// A translation was filled twice. A lookup must then find the first of the two,
    /// which only the full scan does, so the shortcut is off for good.
    duplicates: bool,
}

/// Entries of [`CoreTlb::recent`]: a power of two.
const RECENT: usize = 16;

/// Every core's data TLB.
#[derive(Clone, Debug)]
pub(crate) struct Tlb {
    cores: Vec<CoreTlb>,
    capacity: usize,
    walks: bool,
}

impl Tlb {
    /// TLBs of `entries` entries for `cores` cores; `walks` times their misses.
    pub fn new(cores: usize, entries: usize, walks: bool) -> Tlb {
        Tlb {
            cores: vec![CoreTlb::default(); cores],
            capacity: entries.max(1),
            walks,
        }
    }

    /// Whether a miss walks the tables through the caches.
    pub fn walks(&self) -> bool {
        self.walks
    }

    /// The frame of `vpage` (a page address) for core `c` running `proc`, counting a hit
    /// or a miss.
    pub fn lookup(&mut self, c: usize, proc: ProcId, vpage: u64) -> Option<u64> {
        let t = &mut self.cores[c];
        t.clock += 1;
        let now = t.clock;
        let is = |e: &Entry| e.proc == proc && e.vpage == vpage;
        // Without a duplicate at most one entry holds the page, so the hint's is the one.
        let hint = (vpage >> crate::mem::PAGE_SHIFT) as usize & (RECENT - 1);
        let found = match t.entries.get(t.recent[hint] as usize) {
            Some(e) if !t.duplicates && is(e) => Some(t.recent[hint] as usize),
            _ => t.entries.iter().position(is),
        };
        match found {
            Some(i) => {
                t.recent[hint] = i as u32;
                let e = &mut t.entries[i];
                e.used = now;
                t.stats.hits += 1;
                Some(e.frame)
            }
            None => {
                t.stats.misses += 1;
                None
            }
        }
    }

    /// Installs a translation, replacing the least recently used one when full.
    pub fn fill(&mut self, c: usize, proc: ProcId, vpage: u64, frame: u64) {
        let t = &mut self.cores[c];
        t.duplicates |= t.entries.iter().any(|e| e.proc == proc && e.vpage == vpage);
        let e = Entry {
            proc,
            vpage,
            frame,
            used: t.clock,
        };
        if t.entries.len() < self.capacity {
            t.entries.push(e);
        } else if let Some(lru) = t.entries.iter_mut().min_by_key(|e| e.used) {
            *lru = e;
        }
    }

    /// Core `c`'s translations, least recently used first, and whether one was filled
    /// twice: equal signatures hit, miss and replace alike, whatever the stamps' values.
    pub fn lru_signature(&self, c: usize, out: &mut Vec<u64>) {
        let t = &self.cores[c];
        let mut order: Vec<&Entry> = t.entries.iter().collect();
        order.sort_unstable_by_key(|e| e.used);
        for e in order {
            out.extend([e.proc as u64, e.vpage, e.frame]);
        }
        out.push(u64::from(t.duplicates));
    }

    pub fn stats(&self, c: usize) -> TlbStats {
        self.cores[c].stats
    }

    pub fn stats_mut(&mut self, c: usize) -> &mut TlbStats {
        &mut self.cores[c].stats
    }
}

/// A core's page walk in progress: the access that missed and the entries still to load.
#[derive(Clone, Debug)]
pub(crate) struct CoreWalk {
    /// The access, its address still virtual.
    pub req: CoreReq,
    /// Whether the access is an independent load (`Next::Independent`).
    pub independent: bool,
    pub proc: ProcId,
    /// The physical address the walk ends at (the OS's tables, already walked functionally).
    pub pa: u64,
    /// Physical addresses of the entries not yet loaded, level 0 first.
    pub entries: VecDeque<u64>,
    /// Bytes of one entry (the size of each walk load).
    pub entry_bytes: u8,
    pub started: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_replacement_at_capacity() {
        let mut t = Tlb::new(2, 64, true);
        for p in 0..64 {
            assert_eq!(t.lookup(0, 1, p << 12), None);
            t.fill(0, 1, p << 12, 0x10_0000 + (p << 12));
        }
        // Touch page 0, so page 1 is the least recently used.
        assert_eq!(t.lookup(0, 1, 0), Some(0x10_0000));
        assert_eq!(t.lookup(0, 1, 64 << 12), None);
        t.fill(0, 1, 64 << 12, 0x20_0000);
        assert_eq!(t.lookup(0, 1, 1 << 12), None, "page 1 evicted");
        assert_eq!(t.lookup(0, 1, 0), Some(0x10_0000));
        assert_eq!(t.lookup(0, 1, 64 << 12), Some(0x20_0000));
        // Another process's page and another core's TLB are apart.
        assert_eq!(t.lookup(0, 2, 0), None);
        assert_eq!(t.lookup(1, 1, 0), None);
        let s = t.stats(0);
        assert_eq!((s.hits, s.misses), (3, 67));
    }

    /// Pages that share a hint, another process's page at the same address, a page
    /// replaced under its hint and a translation filled twice all look up as a scan of
    /// every entry does.
    #[test]
    fn lookups_through_the_hints_find_what_a_scan_finds() {
        let scan = |t: &Tlb, proc: ProcId, page: u64| {
            let e = t.cores[0]
                .entries
                .iter()
                .find(|e| e.proc == proc && e.vpage == page);
            e.map(|e| e.frame)
        };
        let mut t = Tlb::new(1, 8, true);
        let pages: Vec<(ProcId, u64)> = (0..24u64)
            .map(|i| ((i % 3) as ProcId, (i * RECENT as u64 / 2) << 12))
            .collect();
        for (k, &(proc, page)) in pages.iter().cycle().take(200).enumerate() {
            let want = scan(&t, proc, page);
            assert_eq!(t.lookup(0, proc, page), want, "lookup {k}");
            if want.is_none() {
                t.fill(0, proc, page, 0x100_0000 + page + proc as u64);
            }
        }
        // A second fill of a page held: the first entry answers from then on.
        let (proc, page) = pages[23];
        t.fill(0, proc, page, 0xdead_0000);
        assert_eq!(t.lookup(0, proc, page), scan(&t, proc, page));
    }

    /// Equal translations in the same LRU order sign alike whatever their stamps; another
    /// order, or another translation, does not.
    #[test]
    fn lru_signatures_compare_translations_and_order_not_stamps() {
        let sign = |t: &Tlb| {
            let mut out = Vec::new();
            t.lru_signature(0, &mut out);
            out
        };
        let (mut a, mut b) = (Tlb::new(1, 4, true), Tlb::new(1, 4, true));
        for p in 0..3u64 {
            a.fill(0, 1, p << 12, 0x10_0000 + (p << 12));
            assert_eq!(a.lookup(0, 1, p << 12), Some(0x10_0000 + (p << 12)));
        }
        // The same fills in b, after unrelated misses that only advance its clock.
        for _ in 0..5 {
            assert_eq!(b.lookup(0, 2, 0x9000), None);
        }
        for p in 0..3u64 {
            b.fill(0, 1, p << 12, 0x10_0000 + (p << 12));
            assert_eq!(b.lookup(0, 1, p << 12), Some(0x10_0000 + (p << 12)));
        }
        assert_eq!(sign(&a), sign(&b));
        a.lookup(0, 1, 0);
        assert_ne!(sign(&a), sign(&b));
        b.lookup(0, 1, 0);
        assert_eq!(sign(&a), sign(&b));
        b.fill(0, 1, 7 << 12, 0x70_0000);
        assert_ne!(sign(&a), sign(&b));
    }

    /// The last-hit shortcut gives what the scan alone gives: the same frames, hits and
    /// LRU victims, here against a reference scan over random lookups and fills, one of
    /// them filling a page twice (the scan then answers with the first entry).
    #[test]
    fn the_last_hit_shortcut_answers_as_the_scan() {
        let mut t = Tlb::new(1, 8, true);
        let mut reference: Vec<Entry> = Vec::new();
        let mut clock = 0;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Runs of lookups on one page, as sweeps make, among 12 pages of 2 processes.
            let (proc, vpage) = ((x % 2) as ProcId, ((x >> 8) % 12) << 12);
            for _ in 0..1 + (x >> 20) % 4 {
                clock += 1;
                let want = match reference
                    .iter_mut()
                    .find(|e| e.proc == proc && e.vpage == vpage)
                {
                    Some(e) => {
                        e.used = clock;
                        Some(e.frame)
                    }
                    None => None,
                };
                assert_eq!(t.lookup(0, proc, vpage), want, "lookup {i}");
            }
            let fill = reference.iter().all(|e| e.proc != proc || e.vpage != vpage) || i == 5_000;
            if fill {
                let frame = 0x100_0000 + (i << 12);
                t.fill(0, proc, vpage, frame);
                let e = Entry {
                    proc,
                    vpage,
                    frame,
                    used: clock,
                };
                if reference.len() < 8 {
                    reference.push(e);
                } else if let Some(lru) = reference.iter_mut().min_by_key(|e| e.used) {
                    *lru = e;
                }
            }
        }
        assert!(t.cores[0].duplicates, "page filled twice at fill 5,000");
    }
}
