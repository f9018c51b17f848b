//! The configurations the checker explores: caches, addresses, the data domain and the
//! search's bounds.

use crate::mem::LineAddr;

/// One configuration of the explorer.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckConfig {
    pub name: String,
    /// Number of caches (cores); the single directory bank is node `caches`.
    pub caches: usize,
    /// Line addresses explored (all homed at the one directory bank).
    pub addrs: Vec<LineAddr>,
    pub l1_sets: usize,
    pub l1_ways: usize,
    pub l2_sets: usize,
    pub l2_ways: usize,
    /// Values stores write into byte 0 (memory starts at 0).
    pub values: Vec<u8>,
    /// Key the visited set by the minimum encoding over permutations of cache indices.
    pub symmetry: bool,
    /// Capacity of each (destination, virtual network) buffer; exceeding it is a failure.
    pub buffer_capacity: usize,
    /// Give up (with an error) beyond this many unique states.
    pub max_states: usize,
    /// The MOPEDs of cores `0..moped_cores` issue requests too (needs a MOPED design).
    /// Symmetry reduction then permutes only cores of the same kind.
    pub moped_cores: usize,
}

impl CheckConfig {
    /// The per-PR configurations of G1: `c1`, `c2`, `c3`.
    pub fn named(name: &str) -> Option<CheckConfig> {
        let base = |caches: usize,
                    addrs: Vec<LineAddr>,
                    l1_ways: usize,
                    symmetry: bool,
                    values: Vec<u8>| {
            // Buffer capacity: each core has at most one transaction per address in flight
            // (requests and writebacks of a line are mutually exclusive in its states), the
            // blocking directory serves one transaction per address, and a transaction sends
            // a core at most one request, one forward or invalidation, and its data plus at
            // most `caches - 2` acks. So no buffer holds more than `caches * addresses`
            // messages; the extra slot covers a WB_NACK answered without blocking.
            let cap = caches * addrs.len() + 1;
            CheckConfig {
                name: name.to_string(),
                caches,
                addrs,
                l1_sets: 1,
                l1_ways,
                l2_sets: 1,
                l2_ways: 1,
                values,
                symmetry,
                buffer_capacity: cap,
                max_states: 30_000_000,
                moped_cores: 0,
            }
        };
        let with_moped = |mut c: CheckConfig, k: usize| {
            c.moped_cores = k;
            c
        };
        Some(match name {
            "c1" => base(2, vec![0x0], 1, false, vec![1, 2]),
            "c2" => base(3, vec![0x0], 1, true, vec![1, 2]),
            // Two lines that conflict in a one-line L2 (no L1, so every second line evicts
            // the first): the replacement races. One store value keeps the space at about
            // 0.6 M orbits; stale data is still caught as 0-for-1, and c1/c2 distinguish
            // successive values. `c3-full` stores two values (about 14 M orbits, minutes).
            "c3" => base(2, vec![0x0, 0x40], 0, true, vec![1]),
            "c3-full" => base(2, vec![0x0, 0x40], 0, true, vec![1, 2]),
            "c4" => base(4, vec![0x0], 1, true, vec![1, 2]),
            // The MOPED designs: each core's MOPED reads, owns and (OPTCACHE) fills lines
            // beside its core's loads and stores.
            "m1" => with_moped(base(2, vec![0x0], 1, false, vec![1, 2]), 2),
            "m2" => with_moped(base(3, vec![0x0], 1, true, vec![1]), 3),
            // The replacement races with one MOPED (the receiver's); `m3-full` gives both
            // cores one (minutes).
            "m3" => with_moped(base(2, vec![0x0, 0x40], 0, false, vec![1]), 1),
            "m3-full" => with_moped(base(2, vec![0x0, 0x40], 0, true, vec![1]), 2),
            _ => return None,
        })
    }

    /// Names accepted by [`CheckConfig::named`]; `c3-full` and `c4` are manual runs; the
    /// `m` configurations need a MOPED design.
    pub fn names() -> &'static [&'static str] {
        &[
            "c1", "c2", "c3", "c3-full", "c4", "m1", "m2", "m3", "m3-full",
        ]
    }
}
