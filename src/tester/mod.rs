//! A random coherence tester in the spirit of gem5's RubyTester: a table of 4-byte checks
//! placed for false sharing (many checks in one line) and for conflicts (lines that map to
//! one cache set); each check's bytes are stored one at a time from random cores, then a
//! random core loads all four and compares. Tiny caches and random message delays shake out
//! races; the simulator's watchdogs catch deadlocks. Every failure names its seed and the
//! command that replays it.
//!
//! On a design with MOPEDs, a share of the picks goes to the MOPED beside the picking core
//! instead (see [`moped`]): it reads a check's line for its copy unit (`M_GETS`), checking
//! the claimed check exactly and every other byte by the rule of [`window`], or owns the
//! line (`M_GETX`, or `M_FILL` where the design has it) and writes the check's bytes as the
//! copy unit writes a receive line, asking again when the rights were lost before the
//! write. These go through the same L2 request path as the device's own requests.

mod moped;
pub mod window;

use std::collections::BTreeMap;

use rand::distributions::{Bernoulli, Distribution, Uniform};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::coherence::{AccessKind, Completed, CoreReq, Protocol};
use crate::config::{PrefetchKind, SystemConfig};
use crate::design::Design;
use crate::mem::{line_of, LineAddr, LINE_BYTES};
use crate::sim::{Driver, LineAnswer, Next, Sim, SimError};
use crate::stats::StatsRegistry;

use moped::{PendingOwn, PendingRead};

/// Tester settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TesterConfig {
    pub cores: usize,
    pub checks: u64,
    pub seed: u64,
    /// Checks packed into shared lines (false sharing).
    pub false_sharing_checks: usize,
    /// Checks in lines that conflict in one cache set.
    pub conflict_checks: usize,
    /// Largest random extra delay per message, in cycles.
    pub random_delay_max: u64,
    pub design: Design,
    /// Share of the picks that go to a MOPED instead of a core, on designs with MOPEDs.
    pub moped_share: f64,
    /// The L1 prefetcher (`l1.prefetch`, with its default degree and distance).
    pub prefetch: PrefetchKind,
    /// `sim.fast_forward` (its driver has no polling loop, so it never engages: the same
    /// run either way, which a test checks).
    pub fast_forward: bool,
    /// A tenth of the cores' picks flush a random check's line out of the core's caches
    /// (`clflush`) or prefetch it into its L1 (a software prefetch), half each: neither
    /// may change a value a load sees.
    pub cache_ops: bool,
}

impl TesterConfig {
    /// The checks run side by side grow with the cores beyond 64 (32 false-sharing and 100
    /// conflict checks per 64 cores), so that every core still finds idle checks to take.
    pub fn new(cores: usize, checks: u64, seed: u64) -> Self {
        let per_64 = cores.div_ceil(64).max(1);
        TesterConfig {
            cores,
            checks,
            seed,
            false_sharing_checks: 32 * per_64,
            conflict_checks: 100 * per_64,
            random_delay_max: 16,
            design: Design::Baseline,
            moped_share: 0.4,
            prefetch: PrefetchKind::None,
            fast_forward: true,
            cache_ops: false,
        }
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let design = match self.design {
            Design::Baseline => String::new(),
            d => format!(" --design {d}"),
        };
        let prefetch = match self.prefetch {
            PrefetchKind::None => String::new(),
            p => format!(" --prefetch {}", p.name()),
        };
        let cache_ops = if self.cache_ops { " --cache-ops" } else { "" };
        format!(
            "moped random-test --cores {} --checks {} --seed {}{design}{prefetch}{cache_ops}",
            self.cores, self.checks, self.seed
        )
    }

    /// The system the tester runs on: tiny caches to force replacements (as gem5's
    /// ruby_random_test: L1 256 B 2-way, L2 512 B) and random message delays.
    pub fn system(&self) -> SystemConfig {
        let mut cfg = SystemConfig::default();
        cfg.system.cores = self.cores;
        cfg.system.store_buffer_entries = 2;
        cfg.l1.size_bytes = 256;
        cfg.l1.assoc = 2;
        cfg.l2.size_bytes = 512;
        cfg.l2.assoc = 2;
        cfg.directory.banks = 2;
        cfg.network.random_delay_max = self.random_delay_max;
        cfg.network.cores_per_leaf = 4;
        cfg.l1.prefetch = Some(self.prefetch);
        cfg.sim.fast_forward = self.fast_forward;
        // Every core hammers the same few lines, so a request may wait behind each other
        // core's turn with the line (a network round trip and, under the MOPED designs, the
        // copy unit's own): the watchdog's patience grows with the cores. The default
        // 50,000 cycles starved BASEMOPED's requests from about 300 cores on (a queue of
        // 15 waiters, none stuck); the baseline passed at 1,024.
        cfg.watchdog.progress_cycles = cfg.watchdog.progress_cycles.max(200 * self.cores as u64);
        cfg.watchdog.request_cycles = cfg.watchdog.request_cycles.max(2_000 * self.cores as u64);
        cfg
    }
}

/// What a tester run found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TesterReport {
    pub checks_completed: u64,
    pub loads: u64,
    pub stores: u64,
    pub mismatches: u64,
    pub watchdog_trips: u64,
    pub cycles: u64,
    pub events: u64,
    pub messages: u64,
    pub max_queue: u64,
    /// The cores' L1 prefetches issued, and those a demand access then hit.
    pub prefetches_issued: u64,
    pub prefetches_useful: u64,
    /// The cores' software prefetches that requested a line, and lines their `clflush`es
    /// took out of their caches (`cache_ops`).
    pub sw_prefetches: u64,
    pub flushes: u64,
    /// MOPED line reads (`M_GETS`) issued.
    pub moped_reads: u64,
    /// MOPED exclusive requests (`M_GETX`) issued, asks after lost rights included.
    pub moped_owns: u64,
    /// MOPED fills (`M_FILL`) issued, asks after lost rights included.
    pub moped_fills: u64,
    /// Copy-unit writes into granted lines that found their rights.
    pub moped_writes: u64,
    /// Copy-unit writes that found the rights lost (the line asked for again).
    pub moped_writes_revoked: u64,
    /// Check values compared in the lines MOPEDs read.
    pub moped_values_checked: u64,
    /// MOPED reads during which a store to the line (a core's or another MOPED's) was in
    /// flight.
    pub moped_reads_raced: u64,
}

impl TesterReport {
    /// MOPED line requests issued.
    pub fn moped_requests(&self) -> u64 {
        self.moped_reads + self.moped_owns + self.moped_fills
    }

    /// The MOPED requests' share of all operations (core loads and stores, MOPED
    /// requests), 0 to 1.
    pub fn moped_share(&self) -> f64 {
        let all = self.loads + self.stores + self.moped_requests();
        if all == 0 {
            0.0
        } else {
            self.moped_requests() as f64 / all as f64
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Bytes `0..written` hold the current value.
    Writing {
        written: u8,
    },
    Reading,
}

#[derive(Clone, Debug)]
struct Check {
    addr: u64,
    value: u8,
    phase: Phase,
    /// Claimed by a core access or a MOPED operation in flight.
    busy: bool,
    /// A core's store to one of its bytes is in flight (a MOPED read may see it or not).
    storing: bool,
    /// The bytes as the completed stores left them (memory starts zero-filled).
    bytes: [u8; 4],
}

impl Check {
    fn new(addr: u64) -> Check {
        Check {
            addr,
            value: 0,
            phase: Phase::Writing { written: 0 },
            busy: false,
            storing: false,
            bytes: [0; 4],
        }
    }

    fn expected(&self) -> u64 {
        (0..4).fold(0u64, |v, i| {
            v | ((self.value.wrapping_add(i) as u64) << (8 * i))
        })
    }
}

/// The tester as a simulator driver.
pub struct RandomTester {
    cfg: TesterConfig,
    checks: Vec<Check>,
    rng: Xoshiro256PlusPlus,
    /// Distributions prepared once: a prepared range almost never rejects a draw, where
    /// `gen_range` builds a coarser one per call that rejects up to half of them.
    pick_check: Uniform<usize>,
    coin: Bernoulli,
    think: Uniform<u64>,
    bump: Uniform<u8>,
    /// The check each core's outstanding access works on.
    in_flight: Vec<Vec<usize>>,
    /// The checks in each line (MOPEDs read, own and fill whole lines).
    line_checks: BTreeMap<LineAddr, Vec<usize>>,
    /// Whether a pick goes to a MOPED (never, on a design without them).
    moped_coin: Option<Bernoulli>,
    /// Whether a core's pick is a flush or a prefetch (`cache_ops`).
    cache_coin: Option<Bernoulli>,
    /// The design fills lines (`M_FILL`).
    fill: bool,
    /// MOPED reads and owns in flight, oldest first.
    reads: Vec<PendingRead>,
    owns: Vec<PendingOwn>,
    pub report: TesterReport,
    failure: Option<String>,
}

impl RandomTester {
    /// Lays out the check table for caches with `l2_set_span` bytes per way.
    pub fn new(cfg: TesterConfig, l2_set_span: u64) -> Self {
        let mut checks = Vec::new();
        let base = 0x1000u64;
        let per_line = LINE_BYTES / 4;
        for k in 0..cfg.false_sharing_checks {
            let line = (k / per_line) as u64;
            checks.push(Check::new(
                base + line * LINE_BYTES as u64 + 4 * (k % per_line) as u64,
            ));
        }
        // Conflict lines: groups of lines one set-span apart, so they compete for one set.
        let conflict_base = 0x10_0000u64;
        for k in 0..cfg.conflict_checks {
            let group = (k % 4) as u64;
            let member = (k / 4) as u64;
            let addr = conflict_base
                + member * l2_set_span
                + group * LINE_BYTES as u64
                + 4 * (k as u64 % 3);
            checks.push(Check::new(addr));
        }
        let mut line_checks = BTreeMap::<LineAddr, Vec<usize>>::new();
        for (i, c) in checks.iter().enumerate() {
            line_checks.entry(line_of(c.addr)).or_default().push(i);
        }
        let rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x7e57_7e57);
        let n = cfg.cores;
        let cache_coin = cfg
            .cache_ops
            .then(|| Bernoulli::new(0.1).expect("0.1 is a probability"));
        RandomTester {
            cache_coin,
            cfg,
            pick_check: Uniform::new(0, checks.len().max(1)),
            coin: Bernoulli::new(0.5).expect("0.5 is a probability"),
            think: Uniform::new(1, 8),
            bump: Uniform::new(0, 8),
            checks,
            rng,
            in_flight: vec![Vec::new(); n],
            line_checks,
            moped_coin: None,
            fill: false,
            reads: Vec::new(),
            owns: Vec::new(),
            report: TesterReport::default(),
            failure: None,
        }
    }

    /// Gives a share of the picks to the MOPEDs (a design with them), filling lines if
    /// `fill` (the design has `M_FILL`).
    pub fn with_mopeds(mut self, fill: bool) -> Self {
        let share = self.cfg.moped_share.clamp(0.0, 1.0);
        self.moped_coin = Bernoulli::new(share).ok();
        self.fill = fill;
        self
    }

    fn finished(&self) -> bool {
        self.report.checks_completed >= self.cfg.checks
    }

    /// The first failure, if any.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

impl Driver for RandomTester {
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.report.checks_completed, self.cfg.checks))
    }

    fn next(&mut self, core: usize, _now: u64) -> Result<Next, String> {
        if self.finished() {
            return Ok(Next::Done);
        }
        if let Some(op) = self.granted_work(core) {
            return Ok(Next::Moped(op));
        }
        if self.owns_pending(core) {
            // The copy unit's write of an own waits for this core's next step, so the core
            // takes nothing it could block on meanwhile: a blocked core whose MOPED holds a
            // line others wait for would close a cycle of waits (seen at 512 cores).
            return Ok(Next::Wait(self.think.sample(&mut self.rng)));
        }
        if !self.in_flight[core].is_empty() && self.coin.sample(&mut self.rng) {
            return Ok(Next::WaitForCompletion);
        }
        if self.cache_coin.is_some_and(|b| b.sample(&mut self.rng)) {
            let addr = self.checks[self.pick_check.sample(&mut self.rng)].addr;
            return Ok(if self.coin.sample(&mut self.rng) {
                Next::Flush(addr)
            } else {
                Next::Prefetch(addr)
            });
        }
        // Pick a random idle check; a few tries, then think for a while.
        for _ in 0..8 {
            let i = self.pick_check.sample(&mut self.rng);
            if self.checks[i].busy {
                continue;
            }
            if self.moped_coin.is_some_and(|b| b.sample(&mut self.rng)) {
                match self.moped_pick(core, i) {
                    Some(op) => return Ok(Next::Moped(op)),
                    None => continue,
                }
            }
            let c = &mut self.checks[i];
            c.busy = true;
            self.in_flight[core].push(i);
            return Ok(Next::Access(match c.phase {
                Phase::Writing { written } => {
                    self.report.stores += 1;
                    c.storing = true;
                    let (addr, value) = (c.addr + written as u64, c.value.wrapping_add(written));
                    self.note_store(addr, value);
                    CoreReq {
                        id: 0,
                        kind: AccessKind::Store,
                        addr,
                        size: 1,
                        value: value as u64,
                    }
                }
                Phase::Reading => {
                    self.report.loads += 1;
                    CoreReq {
                        id: 0,
                        kind: AccessKind::Load,
                        addr: c.addr,
                        size: 4,
                        value: 0,
                    }
                }
            }));
        }
        Ok(Next::Wait(self.think.sample(&mut self.rng)))
    }

    fn completed(&mut self, core: usize, done: &Completed, now: u64) -> Result<(), String> {
        let pos = self.in_flight[core]
            .iter()
            .position(|&i| {
                let a = self.checks[i].addr;
                done.req.addr >= a && done.req.addr < a + 4
            })
            .ok_or_else(|| {
                format!(
                    "core {core}: completion for {:#x} matches no check in flight",
                    done.req.addr
                )
            })?;
        // Checks have distinct addresses, so the order of the in-flight list does not matter.
        let i = self.in_flight[core].swap_remove(pos);
        let c = &mut self.checks[i];
        c.busy = false;
        match (c.phase, done.req.kind) {
            (Phase::Writing { written }, AccessKind::Store) => {
                c.storing = false;
                c.bytes[written as usize] = c.value.wrapping_add(written);
                c.phase = if written + 1 == 4 {
                    Phase::Reading
                } else {
                    Phase::Writing {
                        written: written + 1,
                    }
                };
            }
            (Phase::Reading, AccessKind::Load) => {
                let want = c.expected();
                if done.value != want {
                    let what = format!(
                        "core {core} loaded {:#010x} from {:#x}, expected {want:#010x}",
                        done.value, c.addr,
                    );
                    let msg = self.mismatch(what, now);
                    self.failure.get_or_insert(msg.clone());
                    return Err(msg);
                }
                self.complete_check(i);
            }
            _ => {
                return Err(format!(
                    "core {core}: completion kind does not match the check's phase"
                ))
            }
        }
        Ok(())
    }

    fn moped_done(&mut self, m: usize, a: &LineAnswer, now: u64) -> Result<(), String> {
        self.moped_answer(m, a, now).inspect_err(|msg| {
            self.failure.get_or_insert_with(|| msg.clone());
        })
    }
}

impl RandomTester {
    /// A check read whole (a core's load or a MOPED's line read): the next round starts.
    fn complete_check(&mut self, i: usize) {
        self.report.checks_completed += 1;
        let c = &mut self.checks[i];
        c.busy = false;
        c.value = c.value.wrapping_add(4 + self.bump.sample(&mut self.rng));
        c.phase = Phase::Writing { written: 0 };
    }

    /// The message of a failed check: what was read, where, and how to replay it.
    fn mismatch(&mut self, what: String, now: u64) -> String {
        self.report.mismatches += 1;
        format!(
            "data mismatch at cycle {now}: {what}; seed {}; replay: {}",
            self.cfg.seed,
            self.cfg.replay_command()
        )
    }
}

/// Runs the tester on the real protocol. The error text names the seed and replay command.
pub fn run(cfg: &TesterConfig) -> Result<TesterReport, String> {
    let protocol = Protocol::of(cfg.design);
    run_with_protocol(cfg, protocol)
}

/// Runs the tester on a given protocol (for seeded-bug tests of the tester itself).
pub fn run_with_protocol(cfg: &TesterConfig, protocol: Protocol) -> Result<TesterReport, String> {
    run_sim(cfg, protocol).map(|(report, _)| report)
}

/// Runs the tester on the real protocol and gives, beside its report, the simulator's
/// statistics as a run's `stats.txt` lists them (host time left at zero).
pub fn run_with_stats(cfg: &TesterConfig) -> Result<(TesterReport, StatsRegistry), String> {
    let (report, sim) = run_sim(cfg, Protocol::of(cfg.design))?;
    Ok((report, sim.stats(0.0)))
}

fn run_sim(cfg: &TesterConfig, protocol: Protocol) -> Result<(TesterReport, Sim), String> {
    let sys = cfg.system();
    let mut sim = Sim::new(&sys, protocol, cfg.seed).map_err(|e| e.to_string())?;
    let span = (sys.l2.size_bytes / sys.l2.assoc as u64).max(LINE_BYTES as u64);
    let mut t = RandomTester::new(cfg.clone(), span);
    if !sim.mopeds.is_empty() {
        t = t.with_mopeds(sim.protocol.l2.event_id("M_FILL").is_some());
    }
    let r = sim.run(&mut t);
    t.report.events = sim.counters.events;
    t.report.messages = sim.counters.messages;
    t.report.max_queue = sim.counters.max_queue;
    t.report.cycles = sim.cycles();
    for c in &sim.caches {
        t.report.prefetches_issued += c.stats.l1_prefetches_issued;
        t.report.prefetches_useful += c.stats.l1_prefetches_useful;
        t.report.sw_prefetches += c.stats.sw_prefetches;
        t.report.flushes += c.stats.flushes;
    }
    match r {
        Ok(_) => Ok((t.report, sim)),
        Err(e) => {
            if matches!(e, SimError::Watchdog(_)) {
                t.report.watchdog_trips += 1;
            }
            Err(format!(
                "random test failed: {e}\n  seed {}; replay: {}",
                cfg.seed,
                cfg.replay_command()
            ))
        }
    }
}

/// Runs the tester against an ideal atomic memory (every access performed at once, cores
/// interleaved at random). `corrupt_every` > 0 drops every n-th store, to show the tester
/// catches a broken memory.
pub fn run_ideal(cfg: &TesterConfig, corrupt_every: u64) -> Result<TesterReport, String> {
    let mut t = RandomTester::new(cfg.clone(), 4096);
    let mut mem = rustc_hash::FxHashMap::<u64, u8>::default();
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
    let mut now = 0u64;
    let mut pending: Vec<Vec<CoreReq>> = vec![Vec::new(); cfg.cores];
    let mut stores = 0u64;
    while !t.finished() {
        now += 1;
        let core = rng.gen_range(0..cfg.cores);
        // Complete one pending access of this core, or ask for a new one.
        if !pending[core].is_empty() && rng.gen_bool(0.5) {
            let k = rng.gen_range(0..pending[core].len());
            let req = pending[core].remove(k);
            let value = match req.kind {
                AccessKind::Store => {
                    stores += 1;
                    if corrupt_every == 0 || stores % corrupt_every != 0 {
                        for i in 0..req.size as u64 {
                            mem.insert(req.addr + i, (req.value >> (8 * i)) as u8);
                        }
                    }
                    req.value
                }
                AccessKind::Load => (0..req.size as u64).fold(0u64, |v, i| {
                    v | ((*mem.get(&(req.addr + i)).unwrap_or(&0) as u64) << (8 * i))
                }),
            };
            let level = crate::coherence::HitLevel::L1;
            t.completed(core, &Completed { req, value, level }, now)?;
        } else if let Next::Access(req) = t.next(core, now)? {
            pending[core].push(req);
        }
    }
    Ok(t.report.clone())
}
