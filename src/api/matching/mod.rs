//! `moped matching`: the MPI queue benchmarks (`workload::queue`) on the unmodified-MPI
//! software path and under MOPED with every matching engine, each message verified;
//! `matching.csv` and a report that checks the matching papers' claims.
//!
//! Two levels of measurement. `cmp` rows are whole simulations of the 16-core CMP: the
//! latency per operation in CMP cycles and the busy cycles of the receiving rank's matching
//! engine. A process can hold at most as many descriptors at one MOPED as a descriptor ID
//! can name (4,096 with 16 MOPEDs, [`crate::moped::IdFormat`]), so the deeper unload
//! queues of the two-level queue paper (10,000 and 30,000) are `engine` rows: the engine
//! alone fed the benchmark's queue operations (every receive posted, then the sends, last
//! posted first), its busy cycles only.

pub mod engine_level;
pub mod figure10;
pub mod lhs;
mod report;
pub mod stream64;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::{SystemConfig, UnexpectedQueue};
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::desc::MAX_CAPACITY;
use crate::moped::matching::{MatcherKind, ResultAt};
use crate::workload::queue::{QueueBenchmark, Sources};

use super::experiments::{run_all, Outcome, Progress, Task};
use super::output::{OutDir, RunInfo};

/// What matches messages: MPICH's lists searched by the cores, the same software with
/// its unexpected queue in an LH buffer (`mpi.unexpected_queue = "lhs"`), or a MOPED
/// engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Matcher {
    Software,
    SoftwareLhs,
    Engine(MatcherKind),
}

impl Matcher {
    /// Every matcher, the software paths first.
    pub fn all() -> Vec<Matcher> {
        [Matcher::Software, Matcher::SoftwareLhs]
            .into_iter()
            .chain(MatcherKind::ALL.map(Matcher::Engine))
            .collect()
    }

    /// The label in matching.csv.
    pub fn name(self) -> &'static str {
        match self {
            Matcher::Software => "software",
            Matcher::SoftwareLhs => "software-lhs",
            Matcher::Engine(k) => k.name(),
        }
    }

    /// Whether a MOPED engine matches (else the cores do, on the software path).
    pub fn is_moped(self) -> bool {
        matches!(self, Matcher::Engine(_))
    }

    /// Sets what this matcher changes in a configuration: the MOPED engine, or the
    /// unexpected queue's layout.
    pub fn configure(self, cfg: &mut SystemConfig) {
        match self {
            Matcher::Software => {}
            Matcher::SoftwareLhs => cfg.mpi.unexpected_queue = UnexpectedQueue::Lhs,
            Matcher::Engine(kind) => cfg.moped.matcher = kind,
        }
    }
}

impl std::str::FromStr for Matcher {
    type Err = String;

    fn from_str(s: &str) -> Result<Matcher, String> {
        match s {
            "software" => return Ok(Matcher::Software),
            "software-lhs" => return Ok(Matcher::SoftwareLhs),
            _ => {}
        }
        s.parse::<MatcherKind>()
            .map(Matcher::Engine)
            .map_err(|e| format!("{e}, software, software-lhs"))
    }
}

/// One benchmark configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub benchmark: QueueBenchmark,
    pub depth: u32,
    /// Unexpected: the measured message's place in the UMQ; otherwise the depth.
    pub position: u32,
    /// Unload: the receives' sources (16 ranks); otherwise 2 ranks, one sender.
    pub sources: Option<Sources>,
}

impl Point {
    fn ranks(&self) -> usize {
        if self.sources.is_some() {
            16
        } else {
            2
        }
    }

    /// A file name and the spec's `name`.
    pub fn name(&self) -> String {
        let b = self.benchmark.name();
        match (self.benchmark, self.sources) {
            (QueueBenchmark::Unexpected, _) => format!("{b}-{}-at-{}", self.depth, self.position),
            (_, Some(s)) => format!("{b}-{}-{}", sources_name(s), self.depth),
            _ => format!("{b}-{}", self.depth),
        }
    }

    /// The spec file's text.
    pub fn spec(&self) -> String {
        let mut s = format!(
            "# Written by `moped matching`.\nname = \"{}\"\nsuite = \"queue\"\nbenchmark = \"{}\"\n\
             depth = {}\nranks = {}\n",
            self.name(),
            self.benchmark.name(),
            self.depth,
            self.ranks()
        );
        if self.benchmark == QueueBenchmark::Unexpected {
            s.push_str(&format!("position = {}\n", self.position));
        }
        if let Some(src) = self.sources {
            s.push_str(&format!("sources = \"{}\"\n", sources_name(src)));
        }
        s
    }

    /// Measured operations in its timed region: ping-pongs, matches or receives.
    fn operations(&self, iterations: u64) -> u64 {
        match self.benchmark {
            QueueBenchmark::Unload => self.depth as u64 * iterations,
            _ => iterations,
        }
    }
}

pub fn sources_name(s: Sources) -> &'static str {
    match s {
        Sources::Uniform => "uniform",
        Sources::Skewed => "skewed",
    }
}

/// Preposted depths: 1 to 2,048 in powers of two, the two-level paper's 10, 30, 100,
/// 300, and 1,000, where it compares with the ALPU; and 4,000, as deep as the receiver's
/// descriptors go at one of 16 MOPEDs (4,096, with its other messages' few).
pub const PREPOSTED_DEPTHS: [u32; 18] = [
    1, 2, 4, 8, 10, 16, 30, 32, 64, 100, 128, 256, 300, 512, 1000, 1024, 2048, 4000,
];
/// Unload depths on the CMP (the software path's unload grows with the square of the
/// depth: 1,000 takes half a minute of host time); the engine-level rows go deeper
/// ([`engine_level`]).
pub const UNLOAD_DEPTHS: [u32; 5] = [10, 100, 256, 500, 1000];
/// The experiment's benchmark points; `quick` keeps depths up to 300 (for tests).
pub fn plan(quick: bool) -> Vec<Point> {
    let keep = |d: &u32| !quick || *d <= 300;
    let mut points: Vec<Point> = PREPOSTED_DEPTHS
        .iter()
        .filter(|d| keep(d))
        .map(|&depth| Point {
            benchmark: QueueBenchmark::Preposted,
            depth,
            position: depth,
            sources: None,
        })
        .collect();
    for sources in [Sources::Uniform, Sources::Skewed] {
        points.extend(
            UNLOAD_DEPTHS
                .iter()
                .filter(|d| keep(d))
                .map(|&depth| Point {
                    benchmark: QueueBenchmark::Unload,
                    depth,
                    position: depth,
                    sources: Some(sources),
                }),
        );
    }
    let unexpected = [(16, 16), (256, 1), (256, 128), (256, 256), (1024, 1024)];
    points.extend(
        unexpected
            .into_iter()
            .filter(|(d, _)| keep(d))
            .map(|(depth, position)| Point {
                benchmark: QueueBenchmark::Unexpected,
                depth,
                position,
                sources: None,
            }),
    );
    points
}

/// One row of matching.csv.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub engine: Matcher,
    pub point: Point,
    /// `cmp` (a whole simulation) or `engine` (the engine alone).
    pub level: &'static str,
    pub iterations: u64,
    /// CMP cycles per measured operation (half a ping-pong for preposted); `None` at the
    /// engine level.
    pub cycles: Option<f64>,
    /// The receiver's matching engine's busy cycles per operation; `None` for software.
    pub engine_cycles: Option<f64>,
    pub total_cycles: Option<u64>,
    pub total_engine_cycles: Option<u64>,
    /// Entries the engine read one after another per operation (list elements, table
    /// entries; a CAM's parallel compare reads none): where its cycles went.
    pub traversed: Option<f64>,
    /// MOPED refused reservations (its tables were full) and the runtime fell back to its
    /// software path: the engine did not match every message.
    pub backed_off: bool,
    pub messages_verified: u64,
    /// Distinct ranks the receives name as sources (the senders).
    pub senders: u32,
    /// The engine's clock in MHz; `None` for software.
    pub mhz: Option<f64>,
    /// The cores' (and MOPEDs') clock in MHz.
    pub core_mhz: f64,
    /// `setting` rows: the latency in the two-level queue paper's setting, in ns.
    pub setting_ns: Option<f64>,
}

pub const CSV_HEADER: [&str; 19] = [
    "engine",
    "benchmark",
    "depth",
    "position",
    "sources",
    "level",
    "iterations",
    "cycles",
    "engine_cycles",
    "total_cycles",
    "total_engine_cycles",
    "messages_verified",
    "ranks",
    "traversed",
    "backed_off",
    "senders",
    "mhz",
    "ns",
    "engine_ns",
];

impl Row {
    /// A row of `engine` without the CMP around it (levels `engine` and `setting`): its
    /// measurements are filled in by the caller.
    pub fn alone(
        engine: Matcher,
        point: Point,
        level: &'static str,
        mhz: f64,
        core_mhz: f64,
    ) -> Row {
        Row {
            engine,
            point,
            level,
            iterations: 1,
            cycles: None,
            engine_cycles: None,
            total_cycles: None,
            total_engine_cycles: None,
            traversed: None,
            backed_off: false,
            messages_verified: 0,
            senders: 1,
            mhz: Some(mhz),
            core_mhz,
            setting_ns: None,
        }
    }

    /// Nanoseconds per operation: on the CMP at the cores' clock, in the paper's setting
    /// its latency.
    pub fn ns(&self) -> Option<f64> {
        self.setting_ns
            .or(self.cycles.map(|c| c * 1000.0 / self.core_mhz))
    }

    /// The engine's busy time per operation in ns, at its own clock.
    pub fn engine_ns(&self) -> Option<f64> {
        self.engine_cycles
            .zip(self.mhz)
            .map(|(c, mhz)| c * 1000.0 / mhz)
    }

    fn fields(&self) -> Vec<String> {
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let int = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        vec![
            self.engine.name().into(),
            self.point.benchmark.name().into(),
            self.point.depth.to_string(),
            self.point.position.to_string(),
            self.point.sources.map_or("", sources_name).into(),
            self.level.into(),
            self.iterations.to_string(),
            opt(self.cycles),
            opt(self.engine_cycles),
            int(self.total_cycles),
            int(self.total_engine_cycles),
            self.messages_verified.to_string(),
            self.point.ranks().to_string(),
            opt(self.traversed),
            self.backed_off.to_string(),
            self.senders.to_string(),
            opt(self.mhz),
            opt(self.ns()),
            opt(self.engine_ns()),
        ]
    }
}

/// matching.csv's text.
pub fn csv(rows: &[Row]) -> String {
    let header = CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = std::iter::once(header).chain(rows.iter().map(Row::fields));
    crate::analysis::write::csv_text(records, csv::Terminator::Any(b'\n'))
}

/// What one matching experiment runs.
#[derive(Clone, Debug)]
pub struct MatchingOptions {
    pub out: PathBuf,
    pub config: SystemConfig,
    pub jobs: usize,
    pub engines: Vec<Matcher>,
    /// Depths up to 300 only.
    pub quick: bool,
    /// Also Figure 10 under each engine ([`figure10`]).
    pub figure10: Option<figure10::Figure10Part>,
    /// An earlier result folder of this experiment whose runs are taken where their keys
    /// are unchanged (see [`super::store::claim_terms`]).
    pub reuse: Option<PathBuf>,
}

impl MatchingOptions {
    /// The simulations the experiment runs.
    pub fn run_count(&self) -> usize {
        let f10 = self
            .figure10
            .as_ref()
            .map_or(0, |_| figure10::run_count(&self.engines));
        let lhs = if self.engines.contains(&Matcher::SoftwareLhs) {
            lhs::run_count(self.quick)
        } else {
            0
        };
        plan(self.quick).len() * self.engines.len() + f10 + lhs
    }
}

/// What the experiment found.
#[derive(Debug)]
pub struct Matching {
    pub rows: Vec<Row>,
    pub messages_verified: u64,
    pub host_seconds: f64,
    pub runs: usize,
    /// Simulated events over every run.
    pub events: u64,
    /// Figure 10 under each engine, when asked for.
    pub figure10: Vec<figure10::EngineBar>,
    /// The microcoded match unit paper's benchmark, when `microcoded` is among the engines.
    pub stream64: Vec<stream64::StreamRow>,
    /// The LHS paper's unexpected search, when `software-lhs` is among the engines.
    pub lhs: Vec<lhs::LhsRow>,
    /// Runs taken from the earlier results instead of simulated.
    pub reused: usize,
}

/// The configuration an engine runs with: deep enough tables and lists for every point,
/// and its searches timed.
pub fn engine_config(base: &SystemConfig, engine: Matcher) -> SystemConfig {
    let mut cfg = search_timed(base);
    cfg.moped.descriptor_entries = cfg.moped.descriptor_entries.max(MAX_CAPACITY);
    cfg.mpi.list_entries = cfg.mpi.list_entries.max(8192);
    engine.configure(&mut cfg);
    cfg
}

/// `base` with each check's result leaving its engine when the search ends
/// (`moped.matching.result_at = "end"`, the default), whatever the configuration says:
/// these experiments measure what an engine's search time costs, which the early forward
/// (`"start"`, the pair leaving on the search's first cycle) would hide behind the next
/// check.
pub fn search_timed(base: &SystemConfig) -> SystemConfig {
    let mut cfg = base.clone();
    cfg.moped.matching.result_at = ResultAt::End;
    cfg
}

/// The design an engine runs under: the baseline for the software paths, BASEMOPED for
/// every engine (the engine's cost does not depend on how the copy moves lines).
pub fn design_of(engine: Matcher) -> Design {
    if engine.is_moped() {
        Design::BaseMoped
    } else {
        Design::Baseline
    }
}

/// The experiment's name in its folder's results store.
pub const STORE_NAME: &str = "matching";

/// Runs the experiment into `out` (taken whole, or marked FAILED), holding its store:
/// each run whose key is unchanged in `opts.reuse` is taken from there.
pub fn matching(
    opts: &MatchingOptions,
    out: OutDir,
    progress: Progress,
) -> Result<Matching, MopedError> {
    let mut out = out;
    let result = out
        .hold_store(STORE_NAME, opts.reuse.clone())
        .and_then(|()| run_and_write(opts, &out, progress));
    out.finish(result, |_, _| {
        Ok(RunInfo {
            config: opts.config.clone(),
            seed: 1u64.into(),
            workload: "queue benchmarks".into(),
            design: opts
                .engines
                .iter()
                .map(|e| e.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
    })
}

/// Runs every engine over the plan, then writes matching.csv and report.md.
fn run_and_write(
    opts: &MatchingOptions,
    out: &OutDir,
    progress: Progress,
) -> Result<Matching, MopedError> {
    let started = Instant::now();
    if let Some(part) = &opts.figure10 {
        // A missing spec fails now, not after the queue benchmarks' minutes.
        figure10::specs(part)?;
    }
    let points = plan(opts.quick);
    let specs = write_specs(out.path(), &points)?;
    let mut rows = Vec::new();
    let (mut runs, mut events) = (0, 0);
    for &engine in &opts.engines {
        let cfg = engine_config(&opts.config, engine);
        let tasks: Vec<Task> = specs
            .iter()
            .map(|spec| Task {
                spec: spec.clone(),
                design: design_of(engine),
                seed: 1,
            })
            .collect();
        let dir = out.child(engine.name())?;
        let before = runs;
        let counted = |i, done, r: &Result<Outcome, MopedError>| progress(i, before + done, r);
        let outcomes = run_all(&cfg, &tasks, opts.jobs, None, Some(&dir), &counted);
        let outcomes = dir.finish(outcomes, |_, _| Ok(engine_info(&cfg, engine)))?;
        runs += outcomes.len();
        events += outcomes.iter().map(|o| o.events).sum::<u64>();
        rows.extend(
            points
                .iter()
                .zip(&outcomes)
                .map(|(p, o)| cmp_row(&cfg, engine, *p, o)),
        );
    }
    rows.extend(engine_level::rows(
        &opts.engines,
        &opts.config.moped.matching,
        core_mhz(&opts.config),
        opts.quick,
    ));
    let lhs_rows = if opts.engines.contains(&Matcher::SoftwareLhs) {
        let specs = write_specs(out.path(), &lhs::plan(opts.quick))?;
        let (rows, n) = lhs::run(
            &opts.config,
            &specs,
            opts.quick,
            opts.jobs,
            out,
            (runs, progress),
        )?;
        runs += rows.len();
        events += n;
        rows
    } else {
        Vec::new()
    };
    let stream = if opts
        .engines
        .contains(&Matcher::Engine(MatcherKind::Microcoded))
    {
        stream64::run(opts.quick, &opts.config.moped.matching.microcoded)?
    } else {
        Vec::new()
    };
    let bars = match &opts.figure10 {
        Some(part) => {
            let engines = &opts.engines;
            let (bars, n) =
                figure10::run(part, &opts.config, engines, opts.jobs, out, runs, progress)?;
            events += n;
            bars
        }
        None => Vec::new(),
    };
    let m = Matching {
        messages_verified: rows.iter().map(|r| r.messages_verified).sum::<u64>()
            + bars.iter().map(|b| b.messages_verified).sum::<u64>()
            + lhs_rows.iter().map(|r| r.messages_verified).sum::<u64>(),
        rows,
        host_seconds: started.elapsed().as_secs_f64(),
        runs: runs + bars.len(),
        events,
        figure10: bars,
        stream64: stream,
        lhs: lhs_rows,
        reused: 0,
    };
    let mut m = m;
    m.reused = super::runs_table::write_scanned(out.path())?.1;
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", out.path().display()));
    std::fs::write(out.path().join("matching.csv"), csv(&m.rows)).map_err(io)?;
    let mut report = report::report(&m.rows, &m.notes(opts));
    if !m.figure10.is_empty() {
        let table = figure10::csv(&m.figure10);
        std::fs::write(out.path().join("figure10_engines.csv"), table).map_err(io)?;
        report.push_str(&figure10::section(&m.figure10, &opts.config.moped.matching));
    }
    if !m.lhs.is_empty() {
        std::fs::write(out.path().join("lhs.csv"), lhs::csv(&m.lhs)).map_err(io)?;
        report.push_str(&lhs::section(&m.lhs, &opts.config));
    }
    if !m.stream64.is_empty() {
        let table = stream64::csv(&m.stream64);
        std::fs::write(out.path().join("stream64.csv"), table).map_err(io)?;
        report.push_str(&stream64::section(&m.stream64));
    }
    std::fs::write(out.path().join("report.md"), report).map_err(io)?;
    Ok(m)
}

impl Matching {
    fn notes(&self, opts: &MatchingOptions) -> Vec<String> {
        vec![
            format!(
                "{} simulations on {} host threads verified {} messages byte for byte at \
                 their receivers; host time {:.1} s for the whole experiment.",
                self.runs, opts.jobs, self.messages_verified, self.host_seconds
            ),
            "Engines run under BASEMOPED with `moped.descriptor_entries` = 32768; the \
             software path under the baseline with `mpi.list_entries` = 8192."
                .into(),
        ]
    }
}

fn engine_info(cfg: &SystemConfig, engine: Matcher) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1u64.into(),
        workload: "queue benchmarks".into(),
        design: format!("{} ({})", design_of(engine), engine.name()),
    }
}

pub(crate) fn write_specs(dir: &Path, points: &[Point]) -> Result<Vec<PathBuf>, MopedError> {
    super::experiments::write_specs(dir, points.iter().map(|p| (p.name(), p.spec())))
}

/// The cores' clock in MHz.
fn core_mhz(cfg: &SystemConfig) -> f64 {
    cfg.system.core_ghz * 1000.0
}

/// A simulation's row: its timed region per measured operation.
fn cmp_row(cfg: &SystemConfig, engine: Matcher, point: Point, o: &Outcome) -> Row {
    let m = |k: &str| o.record.metrics.get(k).copied().unwrap_or(0.0);
    let iterations = crate::workload::queue::default_iterations(point.benchmark) as u64;
    let ops = point.operations(iterations).max(1) as f64;
    // A ping-pong's latency is half its round trip.
    let per_op = if point.benchmark == QueueBenchmark::Preposted {
        2.0 * ops
    } else {
        ops
    };
    let engine_total = m("receiver_match_cycles") as u64;
    Row {
        engine,
        point,
        level: "cmp",
        iterations,
        cycles: Some(m("cycles") / per_op),
        engine_cycles: engine.is_moped().then(|| engine_total as f64 / ops),
        total_cycles: Some(m("cycles") as u64),
        total_engine_cycles: engine.is_moped().then_some(engine_total),
        traversed: engine
            .is_moped()
            .then(|| m("receiver_match_traversed") / ops),
        backed_off: m("backoff_refused") > 0.0,
        messages_verified: o.messages_verified,
        senders: point.ranks() as u32 - 1,
        mhz: match engine {
            Matcher::Engine(kind) => Some(cfg.moped.matching.mhz(kind, core_mhz(cfg))),
            _ => None,
        },
        core_mhz: core_mhz(cfg),
        setting_ns: None,
    }
}

/// A series of matching.csv: (engine, benchmark, sources, senders, level).
pub type SeriesKey = (Matcher, &'static str, &'static str, u32, &'static str);

/// The rows by (engine, benchmark, sources, senders, level), depth ascending: what the
/// report reads.
pub fn by_series(rows: &[Row]) -> BTreeMap<SeriesKey, Vec<&Row>> {
    let mut m: BTreeMap<_, Vec<&Row>> = BTreeMap::new();
    for r in rows {
        let key = (
            r.engine,
            r.point.benchmark.name(),
            r.point.sources.map_or("", sources_name),
            r.senders,
            r.level,
        );
        m.entry(key).or_default().push(r);
    }
    for v in m.values_mut() {
        v.sort_by_key(|r| (r.point.depth, r.point.position));
    }
    m
}

/// `moped bench --matching`: the host time of `moped matching --quick` on one host thread
/// (every engine), `repetitions` times into a temporary folder; the median is reported.
pub fn bench(repetitions: u32) -> Result<crate::bench::BenchResult, MopedError> {
    let mut times = Vec::new();
    let mut last = None;
    for i in 0..repetitions.max(1) {
        let dir =
            std::env::temp_dir().join(format!("moped-bench-matching-{}-{i}", std::process::id()));
        let opts = MatchingOptions {
            out: dir.clone(),
            config: SystemConfig::default(),
            jobs: 1,
            engines: Matcher::all(),
            quick: true,
            figure10: None,
            reuse: None,
        };
        let out = OutDir::claim(&dir, true, Default::default())?;
        let m = matching(&opts, out, &|_, _, _| {})?;
        std::fs::remove_dir_all(&dir).ok();
        times.push(m.host_seconds);
        last = Some(m);
    }
    times.sort_by(f64::total_cmp);
    let m = last.expect("at least one repetition");
    Ok(crate::bench::BenchResult {
        name: "matching".into(),
        events: m.events,
        messages: m.messages_verified,
        cycles: m.rows.iter().filter_map(|r| r.total_cycles).sum(),
        loads: 0,
        seconds: times[times.len() / 2],
        best_seconds: times[0],
        repetitions: times.len() as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_experiments_time_every_search_whatever_the_default() {
        let mut base = SystemConfig::default();
        // The paper's state machine forwards a pair once its walk found it.
        assert_eq!(base.moped.matching.result_at, ResultAt::End);
        base.moped.matching.result_at = ResultAt::Start;
        for engine in Matcher::all() {
            let cfg = engine_config(&base, engine);
            assert_eq!(cfg.moped.matching.result_at, ResultAt::End, "{engine:?}");
        }
        assert_eq!(search_timed(&base).moped.matching.result_at, ResultAt::End);
    }
}
