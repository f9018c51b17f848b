//! The MPICH-like runtime model: runs a [`Workload`]'s ranks on the simulated cores.
//!
//! Each rank is a process (program 0, its rank) on the core of the same number. Under the
//! unmodified-MPI baseline every message goes through MPICH2 1.2's ch3:shm channel
//! ([`shm`]): eager up to 10,000 bytes, rendezvous (request to send, clear to send, data)
//! beyond, through a 16 x 16 kB ring per directed pair, with the posted-receive and
//! unexpected lists in the rank's memory, searched by loads. Under a MOPED design every
//! send and receive reserves a descriptor through the data port, stores its three fields
//! and polls it; a refused reservation or a revoked descriptor sends the program to the
//! shared-memory path until the next barrier (paper, section 4.4).
//!
//! Every message is checked byte for byte ([`verify`]): the run fails naming the ranks, the
//! tag and the first differing offset.

pub mod activity;
mod calls;
mod entry;
pub mod layout;
mod lhs;
mod moped_path;
mod nic_path;
mod ops;
mod overlap;
mod queues;
mod rank;
pub mod runtime;
pub mod shm;
mod shm_path;
pub mod verify;

use std::time::Instant;

use crate::coherence::Protocol;
use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::ports::PortMap;
use crate::os::phys::PhysMem;
use crate::os::{MemView, Os, ProcId, Region};
use crate::sim::{Pause, Sim, SimError};
use crate::stats::StatsRegistry;
use crate::workload::tags::TagMap;
use crate::workload::Workload;

use activity::Activity;
use layout::{Layout, NO_BACKOFF};
pub use runtime::MpiParams;
use runtime::{MpiDriver, RankStats};

/// The outcome of one simulated workload.
#[derive(Debug)]
pub struct MpiRun {
    pub cycles: u64,
    pub host_seconds: f64,
    /// Events of the whole run, warm-up included.
    pub events: u64,
    /// Coherence messages of the whole run, warm-up included.
    pub coherence_messages: u64,
    /// Messages whose bytes were checked at the receiver.
    pub messages_verified: u64,
    /// The messages the run was expected to verify, where known before it ran (the end
    /// of its heartbeat's progress).
    pub messages_expected: Option<u64>,
    pub bytes_verified: u64,
    pub stats: StatsRegistry,
}

/// Simulates `w` on the system `cfg` under `design`.
pub fn run_workload(
    cfg: &SystemConfig,
    w: &Workload,
    design: Design,
    seed: u64,
    params: MpiParams,
) -> Result<MpiRun, MopedError> {
    check_nic(cfg, w, design)?;
    let expected_messages = refuse_certain_failures(w)?;
    let proto = Protocol::of(design);
    let moped = proto.has_moped();
    let mut sim = Sim::new(cfg, proto, seed)?;
    let mut mem = MemView {
        dirs: &mut sim.dirs,
    };
    let mut driver = prepare(cfg, w, moped, seed, params, &mut sim.os, &mut mem)?;
    driver.expected_messages = expected_messages;
    for (r, &proc) in driver.procs().iter().enumerate() {
        sim.place(r, Some(proc));
    }
    let t0 = Instant::now();
    let (end, start, stop) = run_to_end(&mut sim, &mut driver, t0)?;
    let host_seconds = t0.elapsed().as_secs_f64();
    check_all_received(&driver, end)?;
    let (to, stats) = match stop {
        Some(stop) => stop,
        None => {
            let mut stats = sim.stats(host_seconds);
            add_stats(&mut stats, &driver, end, true);
            (end, stats)
        }
    };
    let from = start.as_ref().map_or(0, |s| s.0);
    let stats = timed_region(stats, start)?;
    let cycles = to - from;
    Ok(MpiRun {
        cycles,
        host_seconds,
        events: sim.counters.events,
        coherence_messages: sim.counters.messages,
        messages_verified: driver.verifier.messages,
        messages_expected: driver.expected_messages,
        bytes_verified: driver.verifier.bytes,
        stats,
    })
}

/// Fails at once a run the NIC setting (`[nic]`) cannot make: a design other than the
/// baseline (the NICs replace shared memory, not MOPED), or a message larger than a NIC's
/// send window holds with its header (the NIC path sends every message eagerly).
fn check_nic(cfg: &SystemConfig, w: &Workload, design: Design) -> Result<(), MopedError> {
    if !cfg.nic.enabled {
        return Ok(());
    }
    let fail = |detail: String| {
        Err(MopedError::Simulation(SimError::config(format!(
            "workload {}: {detail}",
            w.name
        ))))
    };
    if design != Design::Baseline {
        return fail(format!(
            "nic.enabled runs the unmodified-MPI baseline only, not {}: the NICs carry the \
             messages MOPED would",
            design.name()
        ));
    }
    let room = cfg.nic.slot_bytes - crate::nic::HEADER_BYTES;
    for (r, prog) in w.ranks.iter().enumerate() {
        for (i, call) in prog.calls.iter().enumerate() {
            if let crate::workload::Call::Isend { bytes, .. } = call {
                if *bytes > room {
                    let at = w
                        .origins
                        .as_ref()
                        .and_then(|o| o.at(r, i))
                        .map_or(String::new(), |p| format!(" at {p}"));
                    return fail(format!(
                        "rank {r} call {i}{at} sends {bytes} bytes, but a NIC carries at most \
                         {room} (nic.slot_bytes less the {}-byte header)",
                        crate::nic::HEADER_BYTES
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The statistics at a cycle, the runtime's included.
type Snapshot = Option<(u64, StatsRegistry)>;

/// Runs the ranks to the end (the cycle returned), through the start and the end of the
/// timed region, if the workload has them: the statistics there come back with their
/// cycles. The watchdog's report names each blocked rank's pending calls itself.
fn run_to_end(
    sim: &mut Sim,
    driver: &mut MpiDriver,
    t0: Instant,
) -> Result<(u64, Snapshot, Snapshot), MopedError> {
    let (mut start, mut stop) = (None, None);
    loop {
        let pause = sim.run_to_mark(driver)?;
        let at = match pause {
            Pause::RegionStart(at) | Pause::RegionEnd(at) => at,
            Pause::Done(cycles) => return Ok((cycles, start, stop)),
        };
        let mut s = sim.stats_at(at, t0.elapsed().as_secs_f64());
        add_stats(&mut s, driver, at, true);
        match pause {
            Pause::RegionStart(_) => start = Some((at, s)),
            _ => stop = Some((at, s)),
        }
    }
}

/// The run's statistics `end` over its timed region, which started at `start` (gem5's
/// `m5 resetstats`); all of them without one. `sim.timed_from` says which.
fn timed_region(
    mut end: StatsRegistry,
    start: Option<(u64, StatsRegistry)>,
) -> Result<StatsRegistry, MopedError> {
    let from = start.as_ref().map_or(0, |s| s.0);
    end.level(
        "sim.timed_from",
        from,
        "Cycle the timed region started: the statistics count from there (0: the whole run)",
        "Cycle",
    );
    let Some((at, start)) = start else {
        return Ok(end);
    };
    end.since(&start).map_err(|e| {
        MopedError::Simulation(SimError::check(
            at,
            format!("the timed region's statistics: {e}"),
        ))
    })
}

/// Fails at once a workload that deadlocks or truncates in every timing: a receive no
/// send matches, ranks that all receive first, sends above the eager limit (which wait
/// for their receive under MPICH's rendezvous and under MOPED alike) that cross, or a
/// message longer than the receive it matches (MPI_ERR_TRUNCATE). The logical run of
/// [`check`](crate::workload::check) proves these, naming the ranks and calls, with every
/// send that may complete early doing so. A truncation must be caught here, since the
/// simulated run may stop at another symptom of it first (the message left unreceived).
/// A program with an ANY_SOURCE receive is not judged: its matches depend on timing, so
/// the runtime watchdog (`watchdog.mpi_cycles`) has its deadlocks, as it has the ones
/// only timing makes. The check's other findings are left to the run, which reports them
/// as they happen. Where the check ran to the end, returns the messages the run will
/// verify: the workload's sends and its barriers' messages.
fn refuse_certain_failures(w: &Workload) -> Result<Option<u64>, MopedError> {
    use crate::workload::check::{check_with, SendMode, TRUNCATION};
    if w.receives_from_any_source() {
        return Ok(None);
    }
    let max_bytes = shm::EAGER_MAX - shm::PKT_HEADER;
    let detail = match check_with(w, SendMode::Eager { max_bytes }) {
        Err(e) if e.ends_with(TRUNCATION) => e,
        Err(e) if e.starts_with("deadlock") => format!(
            "{e}\n  (a send of more than {max_bytes} bytes, or to the rank itself, completes \
             only when a receive matches it)"
        ),
        Ok(report) => {
            // Each barrier is MPICH's dissemination barrier: a message per rank per round.
            let p = report.ranks.len() as u64;
            let rounds = u64::from(64 - p.saturating_sub(1).leading_zeros());
            let barriers: u64 = report.ranks.iter().map(|r| r.barriers).sum();
            return Ok(Some(report.messages() + barriers * rounds));
        }
        Err(_) => return Ok(None),
    };
    Err(MopedError::Simulation(SimError::check(
        0,
        format!("workload {}: {detail}", w.name),
    )))
}

/// The ranks of `w` made processes of `os` (rank `r` is the `r`-th process and runs on
/// core `r`): their page tables, the shared segments, the backoff word and the seeded
/// bytes of their buffers are written into `mem`. Returns the driver that runs them. The
/// embedded simulator and the gem5 host both set a workload up here.
pub fn prepare(
    cfg: &SystemConfig,
    w: &Workload,
    moped: bool,
    seed: u64,
    params: MpiParams,
    os: &mut Os,
    mem: &mut impl PhysMem,
) -> Result<MpiDriver, MopedError> {
    let p = w.ranks.len();
    if p == 0 || p > cfg.system.cores {
        return Err(MopedError::Io(format!(
            "workload {} has {p} ranks but the system has {} cores",
            w.name, cfg.system.cores
        )));
    }
    let ports = PortMap::new(cfg.moped.port_base).map_err(|e| MopedError::Io(e.to_string()))?;
    if moped
        && ports
            .addr_of(0, p as u16 - 1, crate::moped::ports::Port::Data)
            .is_err()
    {
        return Err(MopedError::Io(format!(
            "{p} ranks do not fit MOPED's port window"
        )));
    }
    layout::check_fits(w, os.free_frame_bytes(), cfg.workload.buffer_align)
        .map_err(MopedError::Io)?;
    let tags = TagMap::of(w).map_err(MopedError::Io)?;
    let layout = layout_of(w, cfg);
    let os_err = |e: crate::os::OsError| MopedError::Io(format!("workload {}: {e}", w.name));
    let procs = spawn_ranks(os, mem, &layout).map_err(os_err)?;
    share_segments(os, mem, &layout, &procs).map_err(os_err)?;
    seed_buffers(os, mem, w, &layout, &procs, seed).map_err(os_err)?;
    MpiDriver::new(w, tags, procs, layout, ports, params, moped, &cfg.system)
        .map_err(|e| MopedError::Io(format!("workload {}: {e}", w.name)))
}

/// Where the ranks of `w` keep their buffers, the runtime's lists and the ch3:shm queues.
fn layout_of(w: &Workload, cfg: &SystemConfig) -> Layout {
    let mut layout = Layout::new(w, cfg.mpi.queue_stride, cfg.workload.buffer_align);
    layout.set_list_entries(cfg.mpi.list_entries);
    let lhs = cfg.mpi.unexpected_queue == crate::config::UnexpectedQueue::Lhs;
    if lhs {
        layout.set_lh_buffer(cfg.mpi.lhs_entries, cfg.mpi.lhs_entry_bytes);
    }
    if cfg.nic.enabled {
        // The NIC's receive ring is the unexpected queue, with or without LHS.
        let entry_bytes = crate::nic::NicMap::entry_bytes(cfg);
        layout.set_lh_buffer(cfg.mpi.lhs_entries, entry_bytes);
        let n = &cfg.nic;
        layout.nic = Some(layout::NicLayout {
            map: crate::nic::NicMap::of(cfg),
            size_offset: n.size_offset,
            slot_bytes: n.slot_bytes,
            window_bytes: n.window_bytes,
            flush: n.flush && n.lh_attribute == crate::config::MemAttr::WriteBack,
            matcher: n.matcher != crate::config::NicMatcher::Host,
        });
    }
    if lhs && cfg.mpi.search_prefetch {
        layout.search_prefetch = Some(cfg.mpi.search_prefetch_offset);
    }
    layout
}

/// The most physical memory `w` may take on `cfg`'s system: what
/// [`SystemConfig::fit_ranks`] sizes memory by.
pub fn frame_need(w: &Workload, cfg: &SystemConfig) -> layout::FrameNeed {
    layout_of(w, cfg).frame_need()
}

/// One process per rank, with its buffers (populated), its private runtime region, and
/// the pages it will share mapped.
fn spawn_ranks(
    os: &mut Os,
    mem: &mut impl PhysMem,
    layout: &Layout,
) -> Result<Vec<ProcId>, crate::os::OsError> {
    let mut procs = Vec::new();
    for r in 0..layout.ranks {
        let regions = [
            Region {
                va: layout::BUF_BASE..layout.buf_end[r],
                populate: true,
            },
            Region {
                va: layout::PRIV_BASE..layout.priv_end(),
                populate: false,
            },
            Region {
                va: layout.flag_va..layout.flag_va + 4096,
                populate: false,
            },
            Region {
                va: layout::SHM_BASE..layout.shm_end(),
                populate: false,
            },
        ];
        procs.push(os.spawn(mem, 0, r as u16, &regions)?);
    }
    Ok(procs)
}

/// Page mappings [`share_segments`] makes at set-up at most; a larger segment is shared
/// page by page as the ranks touch it.
const SETUP_SHARED_MAPPINGS: u64 = 1 << 22;

/// The backoff word's page, set to "no backoff", and the ch3:shm segment, both shared by
/// every rank. MPICH2 1.2 attaches one segment holding every queue to every process; the
/// queues lie back to back in it, so one page may hold the end of one pair's queue and
/// the start of another's.
///
/// The segment holds a queue per pair of ranks, so it grows with the square of the ranks
/// (67 MB for 16 ranks, 17 GB for 256). Up to [`SETUP_SHARED_MAPPINGS`] page mappings
/// (every page into every rank: up to 32 ranks) it is mapped at set-up; beyond, each rank
/// maps a page at its first touch, and only the pages touched take frames.
fn share_segments(
    os: &mut Os,
    mem: &mut impl PhysMem,
    layout: &Layout,
    procs: &[ProcId],
) -> Result<(), crate::os::OsError> {
    os.share(mem, procs, layout.flag_va, 4096)?;
    let shm_bytes = layout.shm_end() - layout::SHM_BASE;
    let pages = shm_bytes.div_ceil(crate::os::pagetable::PAGE_BYTES);
    if pages.saturating_mul(procs.len() as u64) <= SETUP_SHARED_MAPPINGS {
        os.share(mem, procs, layout::SHM_BASE, shm_bytes)?;
    } else {
        os.share_at_first_touch(procs, layout::SHM_BASE, shm_bytes);
    }
    os.write_virtual(mem, procs[0], layout.flag_va, &NO_BACKOFF.to_le_bytes())
}

/// Buffers start with seeded bytes, so a receive buffer never already holds its message.
fn seed_buffers(
    os: &mut Os,
    mem: &mut impl PhysMem,
    w: &Workload,
    layout: &Layout,
    procs: &[ProcId],
    seed: u64,
) -> Result<(), crate::os::OsError> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for (r, prog) in w.ranks.iter().enumerate() {
        for (b, buf) in prog.buffers.iter().enumerate() {
            let bytes: Vec<u8> = (0..buf.bytes)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            os.write_virtual(mem, procs[r], layout.buf_va[r][b], &bytes)?;
        }
    }
    Ok(())
}

/// Fails a finished run in which some message was sent but never received.
pub fn check_all_received(driver: &MpiDriver, cycles: u64) -> Result<(), MopedError> {
    let left = driver.verifier.unchecked();
    if left > 0 {
        return Err(MopedError::Simulation(SimError::check(
            cycles,
            format!(
                "{left} messages were sent but never received:{}{}",
                driver.describe_unreceived(),
                driver.describe()
            ),
        )));
    }
    Ok(())
}

/// The MPI statistics of a run at cycle `now` (`system.cpu{i}.instructions`, `mpi.*`).
/// `levels_known` says whether each access's completion said where it was served: without
/// it (gem5, whose packets do not carry it) the misses by activity are left out.
pub fn add_stats(stats: &mut StatsRegistry, d: &MpiDriver, now: u64, levels_known: bool) {
    let mut total = RankStats::default();
    for r in 0..d.n_ranks() {
        let s = d.rank_stats(r);
        stats.scalar(
            format!("system.cpu{r}.instructions"),
            s.instructions,
            "Instructions executed (compute instructions plus one per access)",
            "Count",
        );
        total.add(s);
    }
    stats.level(
        "mpi.ranks",
        d.n_ranks() as u64,
        "MPI ranks (one per core)",
        "Count",
    );
    for (name, v, desc, unit) in mpi_rows(d, &total) {
        stats.scalar(name, v, desc, unit);
    }
    add_depths(stats, d, &total);
    add_breakdown(stats, d, now);
    if levels_known {
        add_activity_misses(stats, d);
    }
    for (name, dist, desc) in [
        ("mpi.send_latency", &total.latency[0], "Cycles from each send's post to its completion (its data out of the send buffer; barrier messages included)"),
        ("mpi.recv_latency", &total.latency[1], "Cycles from each receive's post to its completion (its data in the receive buffer; barrier messages included)"),
    ] {
        stats.dist(name, dist, desc, "Cycle");
    }
    stats.dist(
        "mpi.message_bytes",
        &total.message_bytes,
        "Payload bytes of each message sent (barrier messages included)",
        "Byte",
    );
}

/// Where each rank's cycles went up to `now` (`mpi.rank{r}.cycles.<activity>`, adding up
/// to the run's cycles) and the sums over the ranks (`mpi.cycles.<activity>`).
fn add_breakdown(stats: &mut StatsRegistry, d: &MpiDriver, now: u64) {
    let mut total = [0u64; Activity::ALL.len()];
    for r in 0..d.n_ranks() {
        let cycles = d.rank_time(r).at(now);
        for (a, v) in Activity::ALL.iter().zip(cycles) {
            stats.scalar(
                format!("mpi.rank{r}.cycles.{}", a.name()),
                v,
                a.describe(),
                "Cycle",
            );
        }
        for (t, v) in total.iter_mut().zip(cycles) {
            *t += v;
        }
    }
    for (a, v) in Activity::ALL.iter().zip(total) {
        let desc = format!("{}, summed over the ranks", a.describe());
        stats.scalar(format!("mpi.cycles.{}", a.name()), v, &desc, "Cycle");
    }
}

/// The cores' L1 misses and misses to memory by activity, summed over the ranks
/// (`mpi.l1_misses.<activity>`, `mpi.memory_misses.<activity>`).
fn add_activity_misses(stats: &mut StatsRegistry, d: &MpiDriver) {
    let mut l1 = [0u64; Activity::ALL.len()];
    let mut memory = [0u64; Activity::ALL.len()];
    for r in 0..d.n_ranks() {
        let s = d.rank_stats(r);
        for (t, v) in l1.iter_mut().zip(s.l1_misses_in) {
            *t += v;
        }
        for (t, v) in memory.iter_mut().zip(s.memory_in) {
            *t += v;
        }
    }
    for (a, (l1, memory)) in Activity::ALL.iter().zip(l1.into_iter().zip(memory)) {
        let what = a.name();
        let desc = format!("The cores' accesses that missed their L1 while in {what} (as mpi.cycles.{what}), summed over the ranks");
        stats.scalar(format!("mpi.l1_misses.{what}"), l1, &desc, "Count");
        let desc = format!("The cores' accesses served by memory while in {what} (as mpi.cycles.{what}), summed over the ranks");
        stats.scalar(format!("mpi.memory_misses.{what}"), memory, &desc, "Count");
    }
}

/// The software path's search depths per rank (`mpi.rank{r}.prq_depth`, `umq_depth`) and
/// over all ranks (`mpi.prq_depth`, `umq_depth`), beside MOPED's `system.moped*.prq_depth`.
fn add_depths(stats: &mut StatsRegistry, d: &MpiDriver, total: &RankStats) {
    const QUEUES: [(&str, &str); 2] = [
        ("prq_depth", "Posted-receive list search depth of the software path per incoming message: the matched receive's position (from 1), or the list's length when none matched"),
        ("umq_depth", "Unexpected list search depth of the software path per posted receive: the matched message's position (from 1), or the list's length when none matched"),
    ];
    for (q, (name, desc)) in QUEUES.iter().enumerate() {
        for r in 0..d.n_ranks() {
            let dist = &d.rank_stats(r).depths[q];
            stats.dist(format!("mpi.rank{r}.{name}"), dist, desc, "Count");
        }
        stats.dist(format!("mpi.{name}"), &total.depths[q], desc, "Count");
    }
}

/// The `mpi.*` counters: (name, value, description, unit).
fn mpi_rows(
    d: &MpiDriver,
    total: &RankStats,
) -> [(&'static str, u64, &'static str, &'static str); 17] {
    [
        (
            "mpi.instructions",
            total.instructions,
            "Instructions executed by all ranks",
            "Count",
        ),
        (
            "mpi.sends",
            total.sends,
            "Messages sent (barrier messages included)",
            "Count",
        ),
        (
            "mpi.send_bytes",
            total.send_bytes,
            "Payload bytes sent",
            "Byte",
        ),
        (
            "mpi.messages_verified",
            d.verifier.messages,
            "Messages whose received bytes were checked against the sent bytes",
            "Count",
        ),
        (
            "mpi.bytes_verified",
            d.verifier.bytes,
            "Payload bytes checked at the receivers",
            "Byte",
        ),
        (
            "mpi.moped_sends",
            total.moped_sends,
            "Sends posted to MOPED",
            "Count",
        ),
        (
            "mpi.moped_recvs",
            total.moped_recvs,
            "Receives posted to MOPED",
            "Count",
        ),
        (
            "mpi.shm_eager",
            total.eager,
            "Sends through shared memory, eager protocol",
            "Count",
        ),
        (
            "mpi.shm_rendezvous",
            total.rendezvous,
            "Sends through shared memory, rendezvous protocol",
            "Count",
        ),
        (
            "mpi.self_sends",
            total.self_sends,
            "Sends to the sending rank itself (copied by the rank)",
            "Count",
        ),
        (
            "mpi.moped_polls",
            total.polls,
            "Polls of MOPED descriptors",
            "Count",
        ),
        (
            "mpi.progress_passes",
            total.progress_passes,
            "Passes of the shared-memory progress engine over the queues",
            "Count",
        ),
        (
            "mpi.backoff_refused",
            total.refused,
            "Reservations MOPED refused (backoff)",
            "Count",
        ),
        (
            "mpi.backoff_revoked",
            total.revoked,
            "Descriptors revoked by backoff and completed through shared memory",
            "Count",
        ),
        (
            "mpi.list_entries_searched",
            total.list_searched,
            "Posted-receive and unexpected entries compared during searches",
            "Count",
        ),
        (
            "mpi.lhs_heads",
            total.lhs_heads,
            "Unexpected messages whose head went to the LH buffer (mpi.unexpected_queue = lhs)",
            "Count",
        ),
        (
            "mpi.lhs_overflows",
            total.lhs_overflows,
            "Unexpected messages put on the list because the LH buffer was full",
            "Count",
        ),
    ]
}
