//! `moped engines`: the multi-CPU NIC paper's schemes (`moped::engines`) on two hosts.
//! First on the paper's own testbed ([`tigon`]: two Tigon2 NICs running EMP, Gigabit
//! Ethernet, one semaphore), its latency, unidirectional and bidirectional tests set beside
//! the paper's figures. Then transplanted into MOPED: one and two engines under every
//! scheme, each at one and at two active copies (the same grant for every scheme, so that
//! the engine split is measured apart from the copies), over IMB Uniband, Biband and
//! PingPong, every message verified. `tigon.csv`, `engines.csv` and a report that checks the
//! paper's claims on both hosts and names, from the engines' statistics, what bounds each
//! scheme.
//!
//! In MOPED the steps cost what EMP's firmware cost on the Tigon2 ([`StepCosts::emp`])
//! unless the configuration's own `[moped.steps]` are asked for: with the default costs
//! (every step fixed-function but matching) a second engine would have almost nothing to
//! take over.

mod claims;
pub mod figure10;
mod report;
pub mod tigon;
mod tigon_report;

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::engines::{StepCosts, StepKind};
use crate::workload::imb::WINDOW;

use super::experiments::{run_all, Outcome, Progress, Task};
use super::figure10::{part_specs, Figure10Part};
use super::output::{OutDir, RunInfo};

pub use crate::moped::engines::Scheme;

/// The experiment's benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bench {
    Uniband,
    Biband,
    Pingpong,
}

impl Bench {
    pub const ALL: [Bench; 3] = [Bench::Uniband, Bench::Biband, Bench::Pingpong];

    /// The name in engines.csv and the spec's `benchmark`.
    pub fn name(self) -> &'static str {
        match self {
            Bench::Uniband => "uniband",
            Bench::Biband => "biband",
            Bench::Pingpong => "pingpong",
        }
    }

    /// Message sizes: the window benchmarks from empty messages to 4 MB, PingPong from
    /// the paper's 10 bytes to 16 kB (its 14 kB point included).
    pub fn sizes(self, quick: bool) -> &'static [u64] {
        match (self, quick) {
            (Bench::Pingpong, false) => &[10, 64, 1024, 14 * 1024, 16 * 1024],
            (Bench::Pingpong, true) => &[10, 14 * 1024],
            (_, false) => &[0, 64, 1024, 16 * 1024, 256 * 1024, 4 << 20],
            (_, true) => &[64, 16 * 1024],
        }
    }

    /// Messages of one timed iteration (the window's, or a ping-pong's two) and the bytes
    /// they carry, one direction counted per message.
    fn messages_per_iteration(self) -> u64 {
        match self {
            Bench::Uniband => WINDOW as u64,
            Bench::Biband => 2 * WINDOW as u64,
            Bench::Pingpong => 2,
        }
    }
}

/// One benchmark at one size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub bench: Bench,
    pub bytes: u64,
}

impl Point {
    /// Timed iterations: PingPong 20; a window 4 up to 16 kB messages, then 1.
    pub fn iterations(&self) -> u32 {
        match self.bench {
            Bench::Pingpong => 20,
            _ if self.bytes <= 16 * 1024 => 4,
            _ => 1,
        }
    }

    /// IMB's warm-up runs before the timed iterations, except for the largest windows
    /// (4 MB x 64 messages: the window's first messages warm the buffers for the rest).
    fn warmup(&self) -> bool {
        self.bytes < 1 << 20
    }

    pub fn name(&self) -> String {
        format!("{}-{}", self.bench.name(), self.bytes)
    }

    fn spec(&self) -> String {
        format!(
            "# Written by `moped engines`.\nname = \"{}\"\nsuite = \"imb\"\nbenchmark = \"{}\"\n\
             bytes = {}\niterations = {}\nranks = 2\n",
            self.name(),
            self.bench.name(),
            self.bytes,
            self.iterations()
        )
    }
}

/// Every benchmark at every size.
pub fn plan(quick: bool) -> Vec<Point> {
    Bench::ALL
        .into_iter()
        .flat_map(|bench| {
            let sizes = bench.sizes(quick);
            sizes.iter().map(move |&bytes| Point { bench, bytes })
        })
        .collect()
}

/// A scheme with a number of engines and of active copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    pub scheme: Scheme,
    pub engines: usize,
    /// Copies a MOPED keeps active at once (`moped.active_matches`), the same under every
    /// scheme.
    pub active: usize,
}

/// The active copies every scheme runs at.
pub const ACTIVE_COPIES: [usize; 2] = [1, 2];

impl Variant {
    /// Each of `schemes` with one and with two engines, each at every count of
    /// [`ACTIVE_COPIES`].
    pub fn of(schemes: &[Scheme]) -> Vec<Variant> {
        let mut v = Vec::new();
        for &active in &ACTIVE_COPIES {
            for &scheme in schemes {
                for engines in [1, 2] {
                    v.push(Variant {
                        scheme,
                        engines,
                        active,
                    });
                }
            }
        }
        v
    }

    pub fn label(&self) -> String {
        format!("{}-x{}-a{}", self.scheme, self.engines, self.active)
    }

    /// Sets the scheme, the engines, the step costs and the active copies in `cfg`: the
    /// scheme and the engines are all a variant changes beside the copies every scheme is
    /// given alike.
    pub fn configure(&self, cfg: &mut SystemConfig, costs: &Costs) {
        cfg.moped.scheme = self.scheme;
        cfg.moped.engines = self.engines;
        if let Costs::Emp = costs {
            cfg.moped.steps = StepCosts::emp();
        }
        cfg.moped.active_matches = self.active;
    }

    /// The configuration the bandwidth and latency runs take: [`Variant::configure`], and
    /// room for a whole window in the descriptor tables and in memory.
    pub fn config(&self, base: &SystemConfig, costs: &Costs) -> SystemConfig {
        let mut cfg = base.clone();
        self.configure(&mut cfg, costs);
        cfg.moped.descriptor_entries = cfg.moped.descriptor_entries.max(DESCRIPTORS);
        cfg.memory.size_bytes = cfg.memory.size_bytes.max(MEMORY_BYTES);
        cfg
    }
}

/// Descriptor-table entries per MOPED, at least: a window's 64 receives, their copies and
/// the 64 sends' copies wait at the receiver's MOPED at once (twice that in Biband), which
/// the paper's 64 entries would refuse, sending the window through shared memory by backoff.
pub const DESCRIPTORS: usize = 1024;

/// Physical memory, at least: Biband's two ranks at 4 MB each receive a window of 64
/// messages into places of their own (512 MB together), beyond the paper's 512 MB.
pub const MEMORY_BYTES: u64 = 2 << 30;

/// Where the steps' costs come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Costs {
    /// EMP's firmware on the Tigon2 ([`StepCosts::emp`]).
    #[default]
    Emp,
    /// The configuration's `[moped.steps]`.
    Config,
}

impl std::str::FromStr for Costs {
    type Err = String;

    fn from_str(s: &str) -> Result<Costs, String> {
        match s {
            "emp" => Ok(Costs::Emp),
            "config" => Ok(Costs::Config),
            _ => Err(format!("unknown step costs `{s}`, expected emp or config")),
        }
    }
}

/// The hosts the schemes run on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hosts {
    /// The paper's testbed, then the transplant.
    #[default]
    Both,
    /// Only the paper's testbed (`[tigon]`).
    Testbed,
    /// Only the transplant into MOPED.
    Cmp,
}

impl Hosts {
    /// The name `--only` takes.
    pub fn name(self) -> &'static str {
        match self {
            Hosts::Both => "both",
            Hosts::Testbed => "tigon",
            Hosts::Cmp => "cmp",
        }
    }

    pub fn testbed(self) -> bool {
        self != Hosts::Cmp
    }

    pub fn cmp(self) -> bool {
        self != Hosts::Testbed
    }
}

impl std::str::FromStr for Hosts {
    type Err = String;

    fn from_str(s: &str) -> Result<Hosts, String> {
        match s {
            "both" => Ok(Hosts::Both),
            "tigon" => Ok(Hosts::Testbed),
            "cmp" => Ok(Hosts::Cmp),
            _ => Err(format!("unknown host `{s}`, expected tigon, cmp or both")),
        }
    }
}

/// What one engines experiment runs.
#[derive(Clone, Debug)]
pub struct EnginesOptions {
    pub config: SystemConfig,
    pub costs: Costs,
    pub design: Design,
    pub jobs: usize,
    /// Fewer sizes (and on the testbed, fewer iterations).
    pub quick: bool,
    /// The schemes to run (every one by default), each with one and two engines.
    pub schemes: Vec<Scheme>,
    /// The hosts to run them on.
    pub hosts: Hosts,
    /// Also Figure 10 under the best scheme ([`figure10`]), with the transplant.
    pub figure10: Option<Figure10Part>,
    /// An earlier result folder of this experiment whose runs are taken where their keys
    /// are unchanged (see [`super::store::claim_terms`]).
    pub reuse: Option<PathBuf>,
}

impl EnginesOptions {
    pub fn run_count(&self) -> usize {
        let testbed = if self.hosts.testbed() {
            tigon::run_count(&self.schemes, self.quick)
        } else {
            0
        };
        if !self.hosts.cmp() {
            return testbed;
        }
        let f10 = self.figure10.as_ref().map_or(0, |_| figure10::run_count());
        testbed + Variant::of(&self.schemes).len() * plan(self.quick).len() + f10
    }
}

/// One run's row of engines.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub variant: Variant,
    pub point: Point,
    pub iterations: u32,
    pub cycles: u64,
    pub bandwidth_bytes_per_cycle: f64,
    pub latency_cycles: f64,
    pub messages_verified: u64,
    pub active_matches: usize,
    /// Busy cycles of each engine, over every MOPED.
    pub engine_busy: [u64; 2],
    pub lock_wait_cycles: u64,
    pub handoffs: u64,
    /// The busiest engine of one MOPED: which, its busy cycles, and the step it spent
    /// most of them in.
    pub bound_moped: usize,
    pub bound_engine: usize,
    pub bound_busy_cycles: u64,
    pub bound_step: StepKind,
    pub bound_step_cycles: u64,
    /// The busiest engine's cycles in each kind of step ([`StepKind::ALL`] order).
    pub bound_cycles: [u64; 10],
    /// Copies active at that engine's MOPED, on average from its first activation on.
    pub active_copies_mean: f64,
    /// Copies MOPED finished in the timed region, and messages that went through shared
    /// memory after a backoff.
    pub moped_copies: u64,
    pub backoff_refused: u64,
}

impl Row {
    /// Messages of the timed region.
    pub fn messages(&self) -> u64 {
        self.point.bench.messages_per_iteration() * self.iterations as u64
    }

    /// The busiest engine's share of the timed cycles.
    pub fn bound_utilisation(&self) -> f64 {
        self.bound_busy_cycles as f64 / self.cycles.max(1) as f64
    }

    fn from_outcome(variant: Variant, point: Point, cfg: &SystemConfig, o: &Outcome) -> Row {
        let m = |k: &str| o.record.metrics.get(k).copied().unwrap_or(0.0);
        let iterations = point.iterations();
        let cycles = m("cycles") as u64;
        let messages = point.bench.messages_per_iteration() * iterations as u64;
        let bytes = messages * point.bytes;
        // PingPong's two messages per iteration make this half the round trip, as IMB
        // reports it; a window's is its time per message.
        let latency_cycles = cycles as f64 / messages.max(1) as f64;
        let step = StepKind::ALL
            .get(m("bound_step") as usize)
            .copied()
            .unwrap_or(StepKind::Match);
        Row {
            variant,
            point,
            iterations,
            cycles,
            bandwidth_bytes_per_cycle: bytes as f64 / cycles.max(1) as f64,
            latency_cycles,
            messages_verified: o.messages_verified,
            active_matches: cfg.moped.active_matches,
            engine_busy: [
                m("engine0_busy_cycles") as u64,
                m("engine1_busy_cycles") as u64,
            ],
            lock_wait_cycles: (m("engine0_lock_wait_cycles") + m("engine1_lock_wait_cycles"))
                as u64,
            handoffs: (m("engine0_handoffs") + m("engine1_handoffs")) as u64,
            bound_moped: m("bound_moped") as usize,
            bound_engine: m("bound_engine") as usize,
            bound_busy_cycles: m("bound_busy_cycles") as u64,
            bound_step: step,
            bound_step_cycles: m("bound_step_cycles") as u64,
            bound_cycles: StepKind::ALL.map(|k| m(&format!("bound_cycles_{}", k.name())) as u64),
            active_copies_mean: m("active_copies_mean"),
            moped_copies: m("moped_completed") as u64,
            backoff_refused: m("backoff_refused") as u64,
        }
    }

    fn fields(&self) -> Vec<String> {
        vec![
            self.variant.scheme.name().into(),
            self.variant.engines.to_string(),
            self.point.bench.name().into(),
            self.point.bytes.to_string(),
            self.iterations.to_string(),
            self.cycles.to_string(),
            format!("{}", self.bandwidth_bytes_per_cycle),
            format!("{}", self.latency_cycles),
            self.messages_verified.to_string(),
            self.active_matches.to_string(),
            self.engine_busy[0].to_string(),
            self.engine_busy[1].to_string(),
            self.lock_wait_cycles.to_string(),
            self.handoffs.to_string(),
            self.bound_moped.to_string(),
            self.bound_engine.to_string(),
            self.bound_busy_cycles.to_string(),
            self.bound_step.name().into(),
            self.bound_step_cycles.to_string(),
            format!("{}", self.active_copies_mean),
            self.moped_copies.to_string(),
            self.backoff_refused.to_string(),
        ]
    }
}

/// engines.csv's columns.
pub const CSV_HEADER: [&str; 22] = [
    "scheme",
    "engines",
    "benchmark",
    "bytes",
    "iterations",
    "cycles",
    "bandwidth_bytes_per_cycle",
    "latency_cycles",
    "messages_verified",
    "active_matches",
    "engine0_busy_cycles",
    "engine1_busy_cycles",
    "lock_wait_cycles",
    "handoffs",
    "bound_moped",
    "bound_engine",
    "bound_busy_cycles",
    "bound_step",
    "bound_step_cycles",
    "active_copies_mean",
    "moped_copies",
    "backoff_refused",
];

/// engines.csv's text.
pub fn csv(rows: &[Row]) -> String {
    let header = CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = std::iter::once(header).chain(rows.iter().map(Row::fields));
    crate::analysis::write::csv_text(records, csv::Terminator::Any(b'\n'))
}

/// What the experiment found.
#[derive(Debug)]
pub struct Engines {
    /// The paper's testbed, when it ran.
    pub tigon: Option<tigon::TigonResults>,
    pub rows: Vec<Row>,
    pub runs: usize,
    pub messages_verified: u64,
    pub events: u64,
    pub host_seconds: f64,
    /// Figure 10 under the best scheme, when asked for and some scheme had two engines.
    pub figure10: Vec<figure10::Bar>,
    /// Runs taken from the earlier results instead of simulated.
    pub reused: usize,
}

/// The experiment's name in its folder's results store.
pub const STORE_NAME: &str = "engines";

/// Runs the experiment into `out` (taken whole, or marked FAILED).
pub fn engines(
    opts: &EnginesOptions,
    out: OutDir,
    progress: Progress,
) -> Result<Engines, MopedError> {
    let mut out = out;
    let result = out
        .hold_store(STORE_NAME, opts.reuse.clone())
        .and_then(|()| run_and_write(opts, &out, progress));
    out.finish(result, |_, _| {
        Ok(RunInfo {
            config: opts.config.clone(),
            seed: 1u64.into(),
            workload: "IMB Uniband, Biband and PingPong".into(),
            design: opts.design.to_string(),
        })
    })
}

fn run_and_write(
    opts: &EnginesOptions,
    out: &OutDir,
    progress: Progress,
) -> Result<Engines, MopedError> {
    let started = Instant::now();
    if let (Some(part), true) = (&opts.figure10, opts.hosts.cmp()) {
        // A missing spec fails now, not after the other runs.
        part_specs(part)?;
    }
    let io = |err: std::io::Error| MopedError::Io(format!("{}: {err}", out.path().display()));
    let testbed = if opts.hosts.testbed() {
        let t = tigon::run(&opts.config.tigon, &opts.schemes, opts.quick, opts.jobs)?;
        std::fs::write(out.path().join("tigon.csv"), tigon::csv(&t.rows)).map_err(io)?;
        let sweep = tigon::sensitivity_csv(&t.sensitivity);
        std::fs::write(out.path().join("tigon_sensitivity.csv"), sweep).map_err(io)?;
        Some(t)
    } else {
        None
    };
    let points = if opts.hosts.cmp() {
        plan(opts.quick)
    } else {
        Vec::new()
    };
    let variants = if opts.hosts.cmp() {
        Variant::of(&opts.schemes)
    } else {
        Vec::new()
    };
    let (mut rows, mut runs, mut events) = (Vec::new(), 0, 0);
    if let Some(t) = &testbed {
        runs += t.runs();
        events += t.events;
    }
    for v in variants {
        let cfg = v.config(&opts.config, &opts.costs);
        let dir = out.child(&v.label())?;
        let specs = write_specs(dir.path(), &points)?;
        let mut tasks = Vec::new();
        let mut cfgs = Vec::new();
        for (p, spec) in points.iter().zip(&specs) {
            let mut c = cfg.clone();
            c.workload.warmup = cfg.workload.warmup && p.warmup();
            cfgs.push(c);
            tasks.push(Task {
                spec: spec.clone(),
                design: opts.design,
                seed: 1,
            });
        }
        let before = runs;
        let counted = |i, done, r: &Result<Outcome, MopedError>| progress(i, before + done, r);
        // Runs that take the same configuration go together.
        let mut outcomes: Vec<Option<Outcome>> = vec![None; tasks.len()];
        for warm in [true, false] {
            let idx: Vec<usize> = (0..tasks.len())
                .filter(|&i| cfgs[i].workload.warmup == warm)
                .collect();
            let Some(&first) = idx.first() else { continue };
            let group: Vec<Task> = idx.iter().map(|&i| tasks[i].clone()).collect();
            let done = run_all(&cfgs[first], &group, opts.jobs, None, Some(&dir), &counted)?;
            for (i, o) in idx.into_iter().zip(done) {
                outcomes[i] = Some(o);
            }
        }
        let outcomes: Vec<Outcome> = outcomes.into_iter().flatten().collect();
        let outcomes = dir.finish(Ok(outcomes), |_, _| {
            Ok(RunInfo {
                config: cfg.clone(),
                seed: 1u64.into(),
                workload: "IMB Uniband, Biband and PingPong".into(),
                design: format!("{} ({})", opts.design, v.label()),
            })
        })?;
        runs += outcomes.len();
        events += outcomes.iter().map(|o| o.events).sum::<u64>();
        for ((p, o), c) in points.iter().zip(&outcomes).zip(&cfgs) {
            rows.push(Row::from_outcome(v, *p, c, o));
        }
    }
    let bars = match (&opts.figure10, figure10::best(&rows)) {
        (Some(part), Some(best)) => {
            let (cfg, costs, design) = (&opts.config, &opts.costs, opts.design);
            let at = (runs, progress);
            let (bars, n) = figure10::run(part, cfg, costs, design, best, opts.jobs, out, at)?;
            runs += bars.len();
            events += n;
            bars
        }
        _ => Vec::new(),
    };
    let e = Engines {
        messages_verified: rows.iter().map(|r| r.messages_verified).sum::<u64>()
            + bars.iter().map(|b| b.messages_verified).sum::<u64>()
            + testbed.as_ref().map_or(0, |t| t.messages_verified()),
        tigon: testbed,
        rows,
        runs,
        events,
        host_seconds: started.elapsed().as_secs_f64(),
        figure10: bars,
        reused: super::runs_table::write_scanned(out.path())?.1,
    };
    if opts.hosts.cmp() {
        std::fs::write(out.path().join("engines.csv"), csv(&e.rows)).map_err(io)?;
    }
    if !e.figure10.is_empty() {
        let table = figure10::csv(&e.figure10);
        std::fs::write(out.path().join("figure10_schemes.csv"), table).map_err(io)?;
    }
    std::fs::write(out.path().join("report.md"), report(opts, &e)).map_err(io)?;
    Ok(e)
}

/// report.md: the notes, the testbed, the transplant, the claims on both, Figure 10.
pub fn report(opts: &EnginesOptions, e: &Engines) -> String {
    let mut s =
        String::from("# The multi-CPU NIC paper's schemes, on its testbed and in MOPED\n\n");
    for n in notes(opts, e) {
        let _ = writeln!(s, "{n}\n");
    }
    if let Some(t) = &e.tigon {
        s.push_str(&tigon_report::section(
            t,
            opts.quick,
            &tigon_params(&opts.config),
        ));
    }
    if !e.rows.is_empty() {
        s.push_str(&report::cmp_section(&e.rows));
    }
    s.push_str(&claims::section(e.tigon.as_ref(), &e.rows));
    if !e.figure10.is_empty() {
        s.push_str(&figure10::section(&e.figure10, opts.design));
    }
    s
}

/// The `[tigon]` keys with their values and descriptions, as `moped info config` gives
/// them.
fn tigon_params(cfg: &SystemConfig) -> Vec<(String, String, String)> {
    let docs = super::info::params();
    let Ok(toml::Value::Table(table)) = toml::Value::try_from(&cfg.tigon) else {
        return Vec::new();
    };
    table
        .iter()
        .map(|(k, v)| {
            let key = format!("tigon.{k}");
            let doc = docs
                .iter()
                .find(|p| p.key == key)
                .map_or(String::new(), |p| p.description.clone());
            (key, v.to_string(), doc)
        })
        .collect()
}

fn notes(opts: &EnginesOptions, e: &Engines) -> Vec<String> {
    let costs = match opts.costs {
        Costs::Emp => "EMP's firmware costs (`StepCosts::emp`: Table 1 of the multi-CPU NIC \
                       paper at the Tigon2's 88 MHz)"
            .to_string(),
        Costs::Config => format!(
            "the configuration's `[moped.steps]`: {:?}",
            opts.config.moped.steps
        ),
    };
    let mut notes = vec![format!(
        "{} simulations on {} host threads verified {} messages byte for byte at their \
         receivers; host time {:.1} s.",
        e.runs, opts.jobs, e.messages_verified, e.host_seconds
    )];
    if opts.hosts.cmp() {
        notes.push(format!(
            "In MOPED: design {}; step costs: {costs}; hand-off {} cycles. Two ranks on cores \
             0 and 1 of the {}-core CMP; every scheme at the same active copies (1, then 2).",
            opts.design, opts.config.moped.handoff_cycles, opts.config.system.cores
        ));
    }
    notes
}

fn write_specs(dir: &Path, points: &[Point]) -> Result<Vec<PathBuf>, MopedError> {
    super::experiments::write_specs(dir, points.iter().map(|p| (p.name(), p.spec())))
}
