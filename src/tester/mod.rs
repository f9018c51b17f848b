//! A random coherence tester in the spirit of gem5's RubyTester: a table of 4-byte checks
//! placed for false sharing (many checks in one line) and for conflicts (lines that map to
//! one cache set); each check's bytes are stored one at a time from random cores, then a
//! random core loads all four and compares. Tiny caches and random message delays shake out
//! races; the simulator's watchdogs catch deadlocks. Every failure names its seed and the
//! command that replays it.

use rand::distributions::{Bernoulli, Distribution, Uniform};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::coherence::{AccessKind, Completed, CoreReq, Protocol};
use crate::config::SystemConfig;
use crate::design::Design;
use crate::mem::LINE_BYTES;
use crate::sim::{Driver, Next, Sim, SimError};

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
    pub protocol: Design,
}

impl TesterConfig {
    pub fn new(cores: usize, checks: u64, seed: u64) -> Self {
        TesterConfig {
            cores,
            checks,
            seed,
            false_sharing_checks: 32,
            conflict_checks: 100,
            random_delay_max: 16,
            protocol: Design::Baseline,
        }
    }

    /// The command that replays this run.
    pub fn replay_command(&self) -> String {
        let design = match self.protocol {
            Design::Baseline => String::new(),
            d => format!(" --protocol {d}"),
        };
        format!(
            "moped random-test --cores {} --checks {} --seed {}{design}",
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
    busy: bool,
}

impl Check {
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
            checks.push(Check {
                addr: base + line * LINE_BYTES as u64 + 4 * (k % per_line) as u64,
                value: 0,
                phase: Phase::Writing { written: 0 },
                busy: false,
            });
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
            checks.push(Check {
                addr,
                value: 0,
                phase: Phase::Writing { written: 0 },
                busy: false,
            });
        }
        let rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x7e57_7e57);
        let n = cfg.cores;
        RandomTester {
            cfg,
            pick_check: Uniform::new(0, checks.len().max(1)),
            coin: Bernoulli::new(0.5).expect("0.5 is a probability"),
            think: Uniform::new(1, 8),
            bump: Uniform::new(0, 8),
            checks,
            rng,
            in_flight: vec![Vec::new(); n],
            report: TesterReport::default(),
            failure: None,
        }
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
    fn next(&mut self, core: usize, _now: u64) -> Result<Next, String> {
        if self.finished() {
            return Ok(Next::Done);
        }
        if !self.in_flight[core].is_empty() && self.coin.sample(&mut self.rng) {
            return Ok(Next::WaitForCompletion);
        }
        // Pick a random idle check; a few tries, then think for a while.
        for _ in 0..8 {
            let i = self.pick_check.sample(&mut self.rng);
            let c = &mut self.checks[i];
            if c.busy {
                continue;
            }
            c.busy = true;
            self.in_flight[core].push(i);
            return Ok(Next::Access(match c.phase {
                Phase::Writing { written } => {
                    self.report.stores += 1;
                    CoreReq {
                        id: 0,
                        kind: AccessKind::Store,
                        addr: c.addr + written as u64,
                        size: 1,
                        value: c.value.wrapping_add(written) as u64,
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
                    self.report.mismatches += 1;
                    let msg = format!(
                        "data mismatch at cycle {now}: core {core} loaded {:#010x} from {:#x}, expected {want:#010x}; seed {}; replay: {}",
                        done.value,
                        c.addr,
                        self.cfg.seed,
                        self.cfg.replay_command()
                    );
                    self.failure.get_or_insert(msg.clone());
                    return Err(msg);
                }
                self.report.checks_completed += 1;
                c.value = c.value.wrapping_add(4 + self.bump.sample(&mut self.rng));
                c.phase = Phase::Writing { written: 0 };
            }
            _ => {
                return Err(format!(
                    "core {core}: completion kind does not match the check's phase"
                ))
            }
        }
        Ok(())
    }
}

/// Runs the tester on the real protocol. The error text names the seed and replay command.
pub fn run(cfg: &TesterConfig) -> Result<TesterReport, String> {
    let protocol = Protocol::of(cfg.protocol);
    run_with_protocol(cfg, protocol)
}

/// Runs the tester on a given protocol (for seeded-bug tests of the tester itself).
pub fn run_with_protocol(cfg: &TesterConfig, protocol: Protocol) -> Result<TesterReport, String> {
    let sys = cfg.system();
    let mut sim = Sim::new(&sys, protocol, cfg.seed).map_err(|e| e.to_string())?;
    let span = (sys.l2.size_bytes / sys.l2.assoc as u64).max(LINE_BYTES as u64);
    let mut t = RandomTester::new(cfg.clone(), span);
    let r = sim.run(&mut t);
    t.report.events = sim.counters.events;
    t.report.messages = sim.counters.messages;
    t.report.max_queue = sim.counters.max_queue;
    t.report.cycles = sim.cycles();
    match r {
        Ok(_) => Ok(t.report),
        Err(e) => {
            if matches!(e, SimError::Watchdog { .. }) {
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
