//! The embedded simulator's statistics, each declared once in a table (name, unit,
//! description, where its value comes from) and registered by [`Sim::stats`] in the order
//! `stats.txt` lists them.

use crate::coherence::cache::CacheStats;
use crate::coherence::dir::DirStats;
use crate::nic::NicStats;
use crate::protocol::{Machine, TransitionCounts};
use crate::stats::{stat_table, Distribution, StatDef, StatsRegistry};

use super::latency::LEVELS;
use super::tlb::TlbStats;
use super::Sim;

/// What the run's own statistics are read from.
struct RunCounts {
    cycles: u64,
    events: u64,
    kinds: super::platform::EventKinds,
    messages: u64,
    max_queue: u64,
    message_stalls: u64,
    ff_passes: u64,
    short_hits: u64,
    host_seconds: f64,
}

/// What a core's statistics are read from: its count of accesses, its TLB's and its caches'
/// counters.
struct CoreCounts {
    accesses: u64,
    tlb: TlbStats,
    cache: CacheStats,
}

const RUN_STATS: &[StatDef<RunCounts>] = stat_table!(RunCounts {
    "sim.cycles" => cycles, "Cycle", "Cycles until the last core finished";
    "sim.events" => events, "Count", "Simulation events processed";
    "sim.event_kinds.deliver" => kinds.deliver, "Count", "Coherence messages delivered";
    "sim.event_kinds.step" => kinds.step, "Count", "Core steps: a core asked its driver what next";
    "sim.event_kinds.walk" => kinds.walk, "Count", "Page-walk steps";
    "sim.event_kinds.retry_load" => kinds.retry_load, "Count", "Blocked loads retried";
    "sim.event_kinds.retry_store" => kinds.retry_store, "Count", "Store-buffer drains retried";
    "sim.event_kinds.load_hit" => kinds.load_hit, "Count",
        "Blocking loads completed after their hit latency (caches and MOPED ports)";
    "sim.event_kinds.store_hit" => kinds.store_hit, "Count",
        "Stores completed after their hit latency (caches and MOPED ports)";
    "sim.event_kinds.window_hit" => kinds.window_hit, "Count",
        "Hits of loads in an mlp core's window completed";
    "sim.event_kinds.watchdog" => kinds.watchdog, "Count", "Watchdog events";
    "sim.event_kinds.dev_deliver" => kinds.dev_deliver, "Count",
        "MOPED-to-MOPED messages delivered";
    "sim.event_kinds.moped_tick" => kinds.moped_tick, "Count", "MOPED ticks";
    "sim.event_kinds.fault_done" => kinds.fault_done, "Count", "MOPED page faults served";
    "sim.event_kinds.nic_tick" => kinds.nic_tick, "Count", "NIC ticks ([nic])";
    "sim.messages" => messages, "Count", "Coherence messages sent";
    "sim.max_queue" => max_queue, "Count", "Largest number of pending events (whole run)", level;
    "sim.message_stalls" => message_stalls, "Count",
        "Message deliveries that stalled on a busy line";
    "sim.fast_forward.passes" => ff_passes, "Count",
        "Idle polling passes skipped by fast-forward and accounted as if run (sim.fast_forward)";
    "sim.short_hits" => short_hits, "Count",
        "Loads and stores whose L1 hit went to the driver as it hit, without an event (sim.short_hits)";
    "host.seconds" => host_seconds, "Second", "Host wall-clock time of the run";
});

/// Each core's, under `system.cpuN`.
const CORE_STATS: &[StatDef<CoreCounts>] = stat_table!(CoreCounts {
    "accesses" => accesses, "Count", "Loads and stores the core issued (not its walks')";
    "dtlb.hits" => tlb.hits, "Count", "Data-TLB hits";
    "dtlb.misses" => tlb.misses, "Count", "Data-TLB misses (each a page walk)";
    "dtlb.walk_loads" => tlb.walk_loads, "Count",
        "Page-table loads of the core's walks, through its L1 (counted in its cache statistics)";
    "dtlb.walk_cycles" => tlb.walk_cycles, "Cycle", "Cycles from a TLB miss to its walk's end";
    "l1d.hits" => cache.l1_hits, "Count", "L1 D-cache hits";
    "l1d.misses" => cache.l1_misses, "Count",
        "L1 D-cache misses (absent, or a store without write permission)";
    "l1d.prefetches_issued" => cache.l1_prefetches_issued, "Count",
        "L1 prefetches issued (l1.prefetch), apart from the demand counts";
    "l1d.prefetches_l2" => cache.l1_prefetches_l2, "Count",
        "L1 prefetches served by moving the line up from this core's L2";
    "l1d.prefetches_network" => cache.l1_prefetches_network, "Count",
        "L1 prefetches that sent a GETS to the directory";
    "l1d.prefetches_useful" => cache.l1_prefetches_useful, "Count",
        "Prefetched lines a demand access then hit in the L1";
    "l1d.prefetches_dropped" => cache.l1_prefetches_dropped, "Count",
        "L1 prefetch candidates dropped (held, busy, or no room without stalling)";
    "l1d.sw_prefetches" => cache.sw_prefetches, "Count",
        "Software prefetches (prefetch instructions) that requested a line (mpi.search_prefetch)";
    "l1d.sw_prefetches_dropped" => cache.sw_prefetches_dropped, "Count",
        "Software prefetches dropped (line held or busy, no room, or uncacheable)";
    "l1d.flushes" => cache.flushes, "Count",
        "Lines the core's clflush instructions took out of its caches (nic.flush)";
    "l2.hits" => cache.l2_hits, "Count", "L1 misses served by this core's L2";
    "l2.misses" => cache.l2_misses, "Count", "L2 misses: requests sent to the directory";
    "l2.misses_other_cache" => cache.l2_misses_other_cache, "Count",
        "L2 misses served by another core's cache (the paper's private L2 misses)";
    "l2.misses_memory" => cache.l2_misses_memory, "Count",
        "L2 misses served by memory (the paper's global L2 misses)";
    "l2.misses_upgrade" => cache.l2_misses_upgrade, "Count",
        "L2 misses that needed only write permission (owner upgrades)";
    "l2.writebacks_dirty" => cache.writebacks_dirty, "Count",
        "Modified lines written back to memory";
    "l2.writebacks_clean" => cache.writebacks_clean, "Count",
        "Unmodified owned lines handed back to the directory";
    "l2.invalidations" => cache.invalidations, "Count", "Invalidations received";
    "l2.forwarded_requests" => cache.forwarded_requests, "Count",
        "Forwarded GETS/GETX received as owner";
    "l2.stalls" => cache.stalls, "Count", "Requests and messages that stalled on a busy line";
});

/// Sums over the cores, under `system.total`.
const CORE_TOTALS: &[StatDef<CoreCounts>] = stat_table!(CoreCounts {
    "dtlb.misses" => tlb.misses, "Count", "Data-TLB misses, all cores";
    "dtlb.walk_loads" => tlb.walk_loads, "Count", "Page-table loads of the cores' walks";
    "dtlb.walk_cycles" => tlb.walk_cycles, "Cycle", "Cycles the cores spent in page walks";
    "l1d.hits" => cache.l1_hits, "Count", "L1 D-cache hits, all cores";
    "l1d.misses" => cache.l1_misses, "Count", "L1 D-cache misses, all cores";
    "l1d.prefetches_issued" => cache.l1_prefetches_issued, "Count",
        "L1 prefetches issued, all cores";
    "l1d.prefetches_useful" => cache.l1_prefetches_useful, "Count",
        "Prefetched lines a demand access then hit in the L1, all cores";
    "l1d.sw_prefetches" => cache.sw_prefetches, "Count",
        "Software prefetches that requested a line, all cores";
    "l1d.flushes" => cache.flushes, "Count", "Lines clflush took out of the caches, all cores";
    "l2.hits" => cache.l2_hits, "Count", "L2 hits, all cores";
    "l2.misses" => cache.l2_misses, "Count", "L2 misses, all cores";
    "l2.misses_other_cache" => cache.l2_misses_other_cache, "Count",
        "L2 misses served by another cache, all cores";
    "l2.misses_memory" => cache.l2_misses_memory, "Count", "L2 misses served by memory, all cores";
    "l2.misses_upgrade" => cache.l2_misses_upgrade, "Count",
        "L2 misses that needed only permission, all cores";
    "l2.writebacks_dirty" => cache.writebacks_dirty, "Count",
        "Modified lines written back, all cores";
    "l2.writebacks_clean" => cache.writebacks_clean, "Count",
        "Clean owned lines handed back, all cores";
    "l2.invalidations" => cache.invalidations, "Count", "Invalidations received, all cores";
});

/// Each NIC's, under `system.nicN` (`[nic]`).
const NIC_STATS: &[StatDef<NicStats>] = stat_table!(NicStats {
    "packets_sent" => packets_sent, "Count", "Messages the NIC put on the wire";
    "bytes_sent" => bytes_sent, "Byte", "Bytes of the messages it sent, headers included";
    "packets_received" => packets_received, "Count",
        "Messages its receive dividing controller took into the receive ring";
    "heads" => heads, "Count", "Messages whose head went to the LH buffer (LHS)";
    "bulk_bytes" => bulk_bytes, "Byte", "Bytes written to the bulk memory (SO-DIMM)";
    "ring_full_cycles" => ring_full_cycles, "Cycle",
        "Cycles arrived messages waited for a free receive-ring position";
    "vl_commands" => vl_commands, "Count",
        "VL commands: bulk-memory blocks copied to the Read Window";
    "vl_bytes" => vl_bytes, "Byte", "Bytes the VL commands copied";
    "register_loads" => register_loads, "Count", "Host loads of the NIC's registers";
    "window_loads" => window_loads, "Count", "Host loads of the Read Window";
    "host_stores" => host_stores, "Count", "Host stores to the NIC's registers and send window";
    "lh_loads" => lh_loads, "Count",
        "Host loads of an uncacheable or write-combining LH buffer (nic.lh_attribute)";
    "invalidations" => invalidations, "Count",
        "Cached LH-buffer lines the dividing controller's writes took out of the cores' caches";
    "match_searches" => match_searches, "Count",
        "Searches of the NIC's matching engine (nic.matcher): receives posted, messages arrived";
    "match_traversed" => match_traversed, "Count",
        "Entries the NIC engine's searches read one after another (an overflow list's, say)";
    "match_engine_cycles" => match_engine_cycles, "Cycle",
        "The NIC engine's busy cycles at its own clock (nic.matcher_mhz)";
    "matches" => matches, "Count", "Receive-message pairs the NIC's engine made";
});

/// Each directory bank's, under `system.dirN`.
const DIR_STATS: &[StatDef<DirStats>] = stat_table!(DirStats {
    "memory_reads" => memory_reads, "Count", "Lines read from memory";
    "memory_reads_shared" => memory_reads_shared, "Count",
        "Lines read from memory while other caches were listed as sharers";
    "memory_queue_cycles" => memory_queue_cycles, "Cycle",
        "Cycles memory accesses waited for the bank's busy channel";
    "memory_writes" => memory_writes, "Count", "Lines written to memory";
    "forwards" => forwards, "Count", "Requests forwarded to an owner";
    "invalidations_sent" => invalidations_sent, "Count", "Invalidations sent";
    "stalls" => stalls, "Count", "Requests stalled on a busy line";
});

impl Sim {
    /// Every statistic of the run, with descriptions and units.
    pub fn stats(&self, host_seconds: f64) -> StatsRegistry {
        self.stats_at(self.cycles(), host_seconds)
    }

    /// The statistics so far, `sim.cycles` being `cycles`: at the start of a timed region,
    /// the registry the end's is taken relative to ([`StatsRegistry::since`]).
    pub fn stats_at(&self, cycles: u64, host_seconds: f64) -> StatsRegistry {
        let mut r = StatsRegistry::new();
        let events = self.counters.events;
        let run = RunCounts {
            cycles,
            events,
            kinds: self.counters.kinds,
            messages: self.wire.net.total_msgs(),
            max_queue: self.counters.max_queue,
            message_stalls: self.counters.message_stalls,
            ff_passes: self.ff.passes,
            short_hits: self.cores.iter().map(|c| c.short_hits).sum(),
            host_seconds,
        };
        r.table("", RUN_STATS, &run);
        r.ratio(
            "host.events_per_second",
            events as f64,
            host_seconds,
            "Simulation events per host second",
            "Count/Second",
        );
        let cores: Vec<CoreCounts> = self
            .caches
            .iter()
            .enumerate()
            .map(|(i, c)| CoreCounts {
                accesses: self.cores[i].accesses,
                tlb: self.tlb.stats(i),
                cache: c.stats.clone(),
            })
            .collect();
        for (i, c) in cores.iter().enumerate() {
            r.table(&format!("system.cpu{i}"), CORE_STATS, c);
        }
        r.table_sums("system.total", CORE_TOTALS, &cores);
        self.register_miss_latencies(&mut r);
        for d in &self.dirs {
            r.table(&format!("system.dir{}", d.params.bank), DIR_STATS, &d.stats);
        }
        let dirs: Vec<DirStats> = self.dirs.iter().map(|d| d.stats.clone()).collect();
        r.table_sums("system.total.dir", DIR_STATS, &dirs);
        self.register_moped_stats(&mut r);
        if let Some(h) = self.nic_host() {
            for (i, n) in h.nics.iter().enumerate() {
                r.table(&format!("system.nic{i}"), NIC_STATS, &n.stats);
            }
            let all: Vec<NicStats> = h.nics.iter().map(|n| n.stats.clone()).collect();
            r.table_sums("system.total.nic", NIC_STATS, &all);
        }
        self.wire.net.register_stats(&mut r, "system.network");
        transition_stats(
            &mut r,
            "system.L2Cache_Controller",
            self.protocol.l2.as_ref(),
            self.caches.iter().map(|c| &c.transitions),
        );
        transition_stats(
            &mut r,
            "system.Directory_Controller",
            self.protocol.dir.as_ref(),
            self.dirs.iter().map(|d| &d.transitions),
        );
        r
    }
}

impl Sim {
    /// The cores' miss latencies (`sim::latency`), all cores together: by where each miss
    /// was served, every L1 miss, and those that missed the L2 too.
    fn register_miss_latencies(&self, r: &mut StatsRegistry) {
        let mut by_level: [Distribution; 4] =
            std::array::from_fn(|_| Distribution::miss_latencies());
        for core in &self.cores {
            for (all, mine) in by_level.iter_mut().zip(&core.miss_latency.by_level) {
                all.merge(mine).expect("miss latencies share their buckets");
            }
        }
        for ((_, name, what), d) in LEVELS.iter().zip(&by_level) {
            let desc = format!(
                "Cycles each core access that missed its L1 and was served by {what} took, from \
                 entering the memory system to its completion, all cores"
            );
            r.dist(
                format!("system.total.miss_latency.{name}"),
                d,
                &desc,
                "Cycle",
            );
        }
        let mut l2 = by_level[1].clone();
        for d in &by_level[2..] {
            l2.merge(d).expect("miss latencies share their buckets");
        }
        let mut l1 = by_level[0].clone();
        l1.merge(&l2).expect("miss latencies share their buckets");
        r.dist(
            "system.total.l1d.miss_latency",
            &l1,
            "Cycles each core access that missed its L1 took, from entering the memory system \
             to its completion, all cores (gem5: system.ruby.miss_latency_hist_seqr)",
            "Cycle",
        );
        r.dist(
            "system.total.l2.miss_latency",
            &l2,
            "Cycles each core access that missed its L1 and its L2 took (served by another \
             cache, memory or an upgrade), all cores",
            "Cycle",
        );
    }
}

/// Per-transition counts summed over controllers, gem5-style
/// `<Machine>_Controller.<State>.<Event>`.
fn transition_stats<'a>(
    r: &mut StatsRegistry,
    prefix: &str,
    m: &Machine,
    counts: impl Iterator<Item = &'a TransitionCounts>,
) {
    let mut sum = vec![0u64; m.n_counters()];
    for c in counts {
        for (s, v) in sum.iter_mut().zip(c.iter()) {
            *s += v;
        }
    }
    // Counters run in (state, event) order, so the statistics do too.
    for (k, &v) in sum.iter().enumerate() {
        if v > 0 {
            let (s, e) = m.counted_cell(k);
            r.scalar(
                format!("{prefix}.{}.{}", m.state_name(s), m.event_name(e)),
                v,
                "Times this transition ran, all controllers",
                "Count",
            );
        }
    }
}
