//! How long a core's accesses that miss its L1 take, by where they were served
//! (`system.total.miss_latency.*`, `system.total.l1d.miss_latency`,
//! `system.total.l2.miss_latency`): the cycles from the access entering the memory system
//! to its completion, as gem5's Ruby sequencers histogram them (`miss_latency_hist_seqr`,
//! `miss_mach_latency_hist_seqr`).
//!
//! The fast-forward of polling skips passes whose misses are sampled here: while it
//! watches a core, the samples of the pass in progress are kept, so that a skipped pass
//! adds the same samples its model pass took.

use crate::coherence::HitLevel;
use crate::stats::Distribution;

/// The levels beyond the L1 that serve an access, in the statistics' order: the name's
/// last part and what the level is.
pub(crate) const LEVELS: [(HitLevel, &str, &str); 4] = [
    (HitLevel::L2, "l2", "the core's own L2"),
    (HitLevel::OtherCache, "other_cache", "another core's cache"),
    (HitLevel::Memory, "memory", "memory"),
    (
        HitLevel::Upgrade,
        "upgrade",
        "the directory's permission alone (an upgrade)",
    ),
];

/// A pass that samples more than this many misses is not one the fast-forward skips.
const PASS_SAMPLES: usize = 4096;

/// One core's miss latencies.
#[derive(Clone, Debug)]
pub(crate) struct MissLatency {
    /// A distribution per level of [`LEVELS`].
    pub by_level: [Distribution; 4],
    /// While the fast-forward watches the core: the samples (level index, cycles) since
    /// its pass began; `None` otherwise, or once the pass took more than `PASS_SAMPLES`.
    pass: Option<Vec<(u8, u64)>>,
    /// The pass in progress took more samples than are kept.
    overflowed: bool,
}

impl Default for MissLatency {
    fn default() -> MissLatency {
        MissLatency {
            by_level: std::array::from_fn(|_| Distribution::miss_latencies()),
            pass: None,
            overflowed: false,
        }
    }
}

impl MissLatency {
    /// An access served at `level` took `cycles`; an L1 hit or a port's answer counts
    /// nowhere. Inlined down to the level's test: most accesses hit their L1.
    #[inline(always)]
    pub fn sample(&mut self, level: HitLevel, cycles: u64) {
        if let Some(i) = LEVELS.iter().position(|l| l.0 == level) {
            self.record(i, cycles);
        }
    }

    /// Adds a sample of `cycles` to level `i` of [`LEVELS`].
    #[inline(never)]
    fn record(&mut self, i: usize, cycles: u64) {
        self.by_level[i].sample(cycles.min(i64::MAX as u64) as i64);
        if let Some(p) = self.pass.as_mut() {
            if p.len() < PASS_SAMPLES {
                p.push((i as u8, cycles));
            } else {
                self.pass = None;
                self.overflowed = true;
            }
        }
    }

    /// A pass of the core begins under the fast-forward's watch: the samples of the pass
    /// that just ended (`None` if none was watched or it took too many), and a new one's
    /// are kept from now on.
    pub fn start_pass(&mut self) -> Option<Vec<(u8, u64)>> {
        let ended = self.pass.replace(Vec::new());
        if std::mem::take(&mut self.overflowed) {
            return None;
        }
        ended
    }

    /// The fast-forward no longer watches the core.
    pub fn stop_watching(&mut self) {
        self.pass = None;
        self.overflowed = false;
    }

    /// Adds `samples` (a skipped pass's) `k` times.
    pub fn add_passes(&mut self, samples: &[(u8, u64)], k: u64) {
        for &(i, cycles) in samples {
            self.by_level[i as usize].sample_n(cycles.min(i64::MAX as u64) as i64, k);
        }
    }
}
