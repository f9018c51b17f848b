//! Where each compared metric comes from, in an embedded run and in a gem5 run of the
//! `MOPED_CMP_directory` protocol. Both are read from their `stats.txt` by the same reader;
//! only this table differs between the two hosts. To compare another metric, add a row.
//!
//! Glob patterns follow [`crate::stats::gem5::glob_match`]: `*` stays within one dotted
//! part, so `system.cpu*.l1d.misses` sums the cores and not `system.total`.

/// How one host's value of a metric is computed from a dump.
#[derive(Clone, Copy, Debug)]
pub enum Source {
    /// One statistic, which must be printed.
    Stat(&'static str),
    /// The sum of the statistics matching a glob; at least one must match.
    Sum(&'static str),
    /// The largest of the statistics matching a glob; at least one must match.
    Max(&'static str),
    /// The sample count of a histogram flagged `nozero`: gem5 prints nothing of a histogram
    /// without samples, so an absent one counts 0.
    Samples(&'static str),
    /// `simTicks` divided by the period of the Ruby clock (`system.ruby.clk_domain`) read
    /// from the run's `config.ini` or `config.json`.
    RubyCycles,
    /// The first of these sources whose statistics are there.
    FirstOf(&'static [Source]),
    /// The value of a metric computed before this one (by key) minus others'.
    Remainder(&'static str, &'static [&'static str]),
    /// The sum of metrics computed before this one (by key).
    Total(&'static [&'static str]),
    /// 0 in a run without MOPEDs, told by the absence of this MOPED statistic (a baseline
    /// run, or a program without MPI); not there otherwise. Follows a `FirstOf`'s reading
    /// of the MOPEDs' own counter.
    NoMoped(&'static str),
}

/// One compared metric.
#[derive(Clone, Copy, Debug)]
pub struct MetricSource {
    /// Key in tables and JSON, as in Figure 10's run records where they share one.
    pub key: &'static str,
    /// Name printed in the table.
    pub label: &'static str,
    /// A missing statistic of a required metric is an error; optional metrics are shown
    /// only where a run has them.
    pub required: bool,
    pub embedded: Source,
    pub gem5: Source,
}

use Source::*;

/// The compared metrics, in table order.
pub const METRIC_SOURCES: &[MetricSource] = &[
    // Execution time: core cycles until the last core finished its program. In gem5 the
    // MopedSystem object counts them; without it, the simulated time in Ruby cycles.
    MetricSource {
        key: "cycles",
        label: "cycles",
        required: true,
        embedded: Stat("sim.cycles"),
        gem5: FirstOf(&[Stat("system.moped.cycles"), RubyCycles]),
    },
    // Demand misses of the cores' L1 data caches (the L1 lives in each core's L2
    // controller in MOPED_CMP_directory).
    MetricSource {
        key: "l1_misses",
        label: "L1 misses",
        required: true,
        embedded: Sum("system.cpu*.l1d.misses"),
        gem5: Sum("system.ruby.l2_cntrl*.L1Dcache.m_demand_misses"),
    },
    // L2 misses of the cores' requests: every core request an L2 sent to the directory.
    MetricSource {
        key: "l2_misses",
        label: "L2 misses",
        required: true,
        embedded: Sum("system.cpu*.l2.misses"),
        gem5: Sum("system.ruby.l2_cntrl*.L2cache.m_demand_misses"),
    },
    // The cores' private L2 misses (the paper's term): served by another core's cache.
    // gem5's sequencers record the machine that answered each miss; gem5's Profiler adds
    // up the cores' sequencers only.
    MetricSource {
        key: "l2_misses_private_cores",
        label: "private L2 misses (cores)",
        required: true,
        embedded: Sum("system.cpu*.l2.misses_other_cache"),
        gem5: Samples("system.ruby.MachineType.L2Cache.miss_mach_latency_hist_seqr"),
    },
    // The cores' global L2 misses: served by memory (the directory answered with memory's
    // data).
    MetricSource {
        key: "l2_misses_global_cores",
        label: "global L2 misses (cores)",
        required: true,
        embedded: Sum("system.cpu*.l2.misses_memory"),
        gem5: Samples("system.ruby.MachineType.Directory.miss_mach_latency_hist_seqr"),
    },
    // Upgrades: the cores' L2 misses that needed only write permission, not data. gem5
    // has no counter of its own for them: what is neither private nor global.
    MetricSource {
        key: "l2_misses_upgrade",
        label: "upgrade L2 misses",
        required: true,
        embedded: Sum("system.cpu*.l2.misses_upgrade"),
        gem5: Remainder(
            "l2_misses",
            &["l2_misses_private_cores", "l2_misses_global_cores"],
        ),
    },
    // The MOPEDs' line requests that missed in their L2, by what served them. gem5: the
    // MOPED sequencers' misses by responder (moped_sequencer.cc names them). A run without
    // MOPEDs has none.
    MetricSource {
        key: "moped_misses_other_cache",
        label: "MOPED L2 misses (other cache)",
        required: true,
        embedded: FirstOf(&[
            Stat("system.total.l2.moped_misses_other_cache"),
            NoMoped("system.moped.line_reads"),
        ]),
        gem5: FirstOf(&[
            Sum("system.ruby.l2_cntrl*.moped_sequencer.missLatencyFromL2Cache::samples"),
            NoMoped("system.moped.lineReads"),
        ]),
    },
    MetricSource {
        key: "moped_misses_memory",
        label: "MOPED L2 misses (memory)",
        required: true,
        embedded: FirstOf(&[
            Stat("system.total.l2.moped_misses_memory"),
            NoMoped("system.moped.line_reads"),
        ]),
        gem5: FirstOf(&[
            Sum("system.ruby.l2_cntrl*.moped_sequencer.missLatencyFromDirectory::samples"),
            NoMoped("system.moped.lineReads"),
        ]),
    },
    // Figure 10's private and global L2 misses: a MOPED's line request counts as a miss of
    // the L2 that took it, as the cores' do (the run records' definition,
    // `api::experiments::metrics`).
    MetricSource {
        key: "l2_misses_private",
        label: "private L2 misses",
        required: true,
        embedded: Total(&["l2_misses_private_cores", "moped_misses_other_cache"]),
        gem5: Total(&["l2_misses_private_cores", "moped_misses_other_cache"]),
    },
    MetricSource {
        key: "l2_misses_global",
        label: "global L2 misses",
        required: true,
        embedded: Total(&["l2_misses_global_cores", "moped_misses_memory"]),
        gem5: Total(&["l2_misses_global_cores", "moped_misses_memory"]),
    },
    // The MOPEDs' line requests (MOPED designs only), as the MopedSystem object issued
    // them to the MOPED sequencers.
    // Line reads for the copy unit and page walks (M_GETS, or GET_COPY under OPTCOPY).
    MetricSource {
        key: "moped_line_reads",
        label: "MOPED line reads",
        required: false,
        embedded: Stat("system.moped.line_reads"),
        gem5: Stat("system.moped.lineReads"),
    },
    // Receive lines requested with their data (M_GETX). gem5 answers the rights-only
    // M_GETX at once and counts the own there; the copy unit's write that follows is an
    // M_GETX with the bytes, counted as a write below.
    MetricSource {
        key: "moped_line_owns",
        label: "MOPED line owns",
        required: false,
        embedded: Stat("system.moped.line_owns"),
        gem5: Stat("system.moped.lineOwns"),
    },
    // The copy unit's writes into receive lines.
    MetricSource {
        key: "moped_line_writes",
        label: "MOPED line writes",
        required: false,
        embedded: Stat("system.moped.line_writes"),
        gem5: Stat("system.moped.lineWrites"),
    },
    // Receive lines requested without their data (OPTCACHE's fills).
    MetricSource {
        key: "moped_line_fills",
        label: "MOPED line fills",
        required: false,
        embedded: Stat("system.moped.line_fills"),
        gem5: Stat("system.moped.lineFills"),
    },
];
