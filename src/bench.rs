//! `moped bench`: simulation speed, never a timed test. Reports simulated events per second
//! and host nanoseconds per event for the random tester and for a streaming workload
//! (16 cores each streaming over a private array while sharing a few lines).

use std::path::Path;
use std::time::Instant;

use crate::coherence::AccessKind;
use crate::coherence::Protocol;
use crate::config::SystemConfig;
use crate::core::{Op, Program, ProgramDriver};
use crate::design::Design;
use crate::mpi::{frame_need, run_workload};
use crate::sim::Sim;
use crate::tester::{self, TesterConfig};
use crate::workload::spec::{build, parse_spec};

/// One benchmark's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    pub name: String,
    pub events: u64,
    pub messages: u64,
    pub cycles: u64,
    /// Loads the cores issued (the stream's; 0 where not counted).
    pub loads: u64,
    /// Median host seconds over the repetitions.
    pub seconds: f64,
    /// Fastest repetition's host seconds.
    pub best_seconds: f64,
    pub repetitions: u32,
}

impl BenchResult {
    /// One run of `seconds` that processed `[events, messages, cycles]`.
    fn once(name: impl Into<String>, [events, messages, cycles]: [u64; 3], seconds: f64) -> Self {
        BenchResult {
            name: name.into(),
            events,
            messages,
            cycles,
            loads: 0,
            seconds,
            best_seconds: seconds,
            repetitions: 1,
        }
    }

    /// Host nanoseconds per simulated load (the median run's), where loads are counted.
    pub fn ns_per_load(&self) -> Option<f64> {
        (self.loads > 0).then(|| self.seconds * 1e9 / self.loads as f64)
    }

    pub fn ns_per_event(&self) -> f64 {
        self.seconds * 1e9 / self.events.max(1) as f64
    }

    pub fn best_ns_per_event(&self) -> f64 {
        self.best_seconds * 1e9 / self.events.max(1) as f64
    }

    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.seconds.max(1e-12)
    }
}

impl std::fmt::Display for BenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<8} {:>10} events {:>9} messages {:>10} cycles {:>7.3} s {:>10.0} events/s {:>6.1} ns/event (median of {}; best {:.1})",
            self.name,
            self.events,
            self.messages,
            self.cycles,
            self.seconds,
            self.events_per_second(),
            self.ns_per_event(),
            self.repetitions,
            self.best_ns_per_event()
        )?;
        if let Some(ns) = self.ns_per_load() {
            write!(f, " {ns:.1} ns/load ({} loads)", self.loads)?;
        }
        Ok(())
    }
}

/// The streaming workload: each core sweeps a private array (loads twice, stores once)
/// and, between sweeps, stores its slot of a few shared lines and loads the others'.
pub fn streaming_program(cores: usize, array_bytes: u64, rounds: u32) -> Program {
    let mut prog = Program {
        cores: vec![Vec::new(); cores],
        ..Program::default()
    };
    for (c, ops) in prog.cores.iter_mut().enumerate() {
        let base = 0x1000_0000 + c as u64 * 0x10_0000;
        for r in 0..rounds {
            ops.push(Op::Sweep {
                kind: AccessKind::Load,
                base,
                bytes: array_bytes,
                stride: 8,
                repeat: 2,
            });
            ops.push(Op::Sweep {
                kind: AccessKind::Store,
                base,
                bytes: array_bytes,
                stride: 8,
                repeat: 1,
            });
            ops.push(Op::Compute(100));
            for line in 0..4u64 {
                let slot = 0x100_0000 + line * 64 + (c as u64 % 8) * 8;
                ops.push(Op::Store {
                    addr: slot,
                    size: 8,
                    value: (r as u64) << 8 | c as u64,
                });
                let peer = 0x100_0000 + line * 64 + ((c as u64 + 1) % 8) * 8;
                ops.push(Op::Load {
                    addr: peer,
                    size: 8,
                    expect: None,
                });
            }
        }
    }
    prog
}

/// Runs the random tester benchmark.
pub fn bench_tester(checks: u64, seed: u64) -> Result<BenchResult, String> {
    bench_tester_on(16, checks, seed)
}

/// Runs the random tester on `cores` cores.
pub fn bench_tester_on(cores: usize, checks: u64, seed: u64) -> Result<BenchResult, String> {
    let cfg = TesterConfig::new(cores, checks, seed);
    let t0 = Instant::now();
    let r = tester::run(&cfg)?;
    Ok(BenchResult::once(
        "tester",
        [r.events, r.messages, r.cycles],
        t0.elapsed().as_secs_f64(),
    ))
}

/// Loads a program issues: one per `load`, one per word of a `sweep load` pass.
pub fn program_loads(prog: &Program) -> u64 {
    let per_op = |op: &Op| match *op {
        Op::Load { .. } => 1,
        Op::Sweep {
            kind: AccessKind::Load,
            bytes,
            stride,
            repeat,
            ..
        } => bytes.div_ceil(stride.max(1)) * u64::from(repeat),
        _ => 0,
    };
    prog.cores.iter().flatten().map(per_op).sum()
}

/// Runs the streaming benchmark on the paper's Table-1 system.
pub fn bench_stream(array_bytes: u64, rounds: u32) -> Result<BenchResult, String> {
    let cfg = SystemConfig::default();
    let prog = streaming_program(cfg.system.cores, array_bytes, rounds);
    let loads = program_loads(&prog);
    let mut sim = Sim::new(&cfg, Protocol::baseline(), 1).map_err(|e| e.to_string())?;
    let mut d = ProgramDriver::new(prog, cfg.system.cpi);
    let t0 = Instant::now();
    let cycles = sim.run(&mut d).map_err(|e| e.to_string())?;
    let mut r = BenchResult::once(
        "stream",
        [sim.counters.events, sim.counters.messages, cycles],
        t0.elapsed().as_secs_f64(),
    );
    r.loads = loads;
    Ok(r)
}

/// Runs an MPI workload spec (its text) under the baseline on the Table-1 system, with
/// `ranks` ranks on as many cores (the spec's own count when `None`), its iterations scaled
/// by `iterations`, and the warm-up when `warmup`; every message is verified.
pub fn bench_mpi(
    name: &str,
    spec_text: &str,
    ranks: Option<usize>,
    iterations: Option<f64>,
    warmup: bool,
) -> Result<BenchResult, String> {
    let mut spec = parse_spec(spec_text, Path::new(name)).map_err(|e| e.to_string())?;
    if let Some(p) = ranks {
        spec.set_ranks(p)?;
    }
    let w = build(&spec, iterations, warmup).map_err(|e| e.to_string())?;
    let cfg = match ranks {
        Some(p) => scaled_system(p, frame_need(&w, &SystemConfig::default()).total())?,
        None => SystemConfig::default(),
    };
    let run = run_workload(&cfg, &w, Design::Baseline, 1, (&cfg.mpi).into())
        .map_err(|e| e.to_string())?;
    // The simulation's own time: setting up the processes and buffers is not counted.
    Ok(BenchResult::once(
        name,
        [run.events, run.coherence_messages, run.cycles],
        run.host_seconds,
    ))
}

/// The Table-1 system with `cores` cores and, beyond 16, 64-bit page tables and the
/// memory that a run needing `need` bytes of frames may take ([`SystemConfig::fit_ranks`]).
pub fn scaled_system(cores: usize, need: u64) -> Result<SystemConfig, String> {
    let mut cfg = SystemConfig::default();
    cfg.fit_ranks(cores, need);
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(cfg)
}

/// One row of [`scaling`]: a benchmark at a core count.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalePoint {
    pub bench: String,
    pub cores: usize,
    pub result: BenchResult,
}

/// The core counts [`scaling`] runs.
pub const SCALE_CORES: [usize; 4] = [16, 64, 256, 1024];

/// How host time grows with the cores: the random tester (`checks` checks) at each of
/// `cores`, and IMB Alltoall (`alltoall_bytes` per message, one iteration, no warm-up)
/// with as many ranks, up to `max_alltoall_ranks` (its messages grow with the square of
/// the ranks). `each` hears every point as it finishes.
pub fn scaling(
    cores: &[usize],
    checks: u64,
    alltoall_bytes: u64,
    max_alltoall_ranks: usize,
    mut each: impl FnMut(&ScalePoint),
) -> Result<Vec<ScalePoint>, String> {
    let mut out = Vec::new();
    let mut keep = |p: ScalePoint| {
        each(&p);
        out.push(p);
    };
    for &n in cores {
        let mut r = bench_tester_on(n, checks, 1)?;
        r.name = format!("tester{n}");
        keep(ScalePoint {
            bench: "tester".into(),
            cores: n,
            result: r,
        });
    }
    let spec = format!(
        "name = \"AA\"\nsuite = \"imb\"\nbenchmark = \"alltoall\"\nbytes = {alltoall_bytes}\niterations = 1\n"
    );
    for &n in cores.iter().filter(|&&n| n <= max_alltoall_ranks) {
        let name = format!("alltoall{n}");
        let r = bench_mpi(&name, &spec, Some(n), None, false)?;
        keep(ScalePoint {
            bench: "alltoall".into(),
            cores: n,
            result: r,
        });
    }
    Ok(out)
}

/// [`scaling`] as `moped bench --scaling` runs it: [`SCALE_CORES`], 20,000 tester checks,
/// Alltoall of 64-byte blocks up to 256 ranks (Bruck's algorithm: P log P messages).
pub fn scaling_default(each: impl FnMut(&ScalePoint)) -> Result<Vec<ScalePoint>, String> {
    scaling(&SCALE_CORES, 20_000, 64, 256, each)
}

/// The columns of [`scaling_csv`] (Python's `moped.plot_scaling.SCALING_COLUMNS`).
pub const SCALING_CSV_HEADER: [&str; 7] = [
    "bench",
    "cores",
    "events",
    "messages",
    "cycles",
    "host_seconds",
    "ns_per_event",
];

/// The points of [`scaling`] as CSV: benchmark, cores, events, coherence messages,
/// simulated cycles, host seconds, ns per event.
pub fn scaling_csv(points: &[ScalePoint]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let rows = points.iter().map(|p| {
        let r = &p.result;
        [
            p.bench.clone(),
            p.cores.to_string(),
            r.events.to_string(),
            r.messages.to_string(),
            r.cycles.to_string(),
            format!("{:.3}", r.seconds),
            format!("{:.1}", r.ns_per_event()),
        ]
    });
    std::iter::once(SCALING_CSV_HEADER.map(String::from))
        .chain(rows)
        .try_for_each(|row| w.write_record(&row))
        .expect("writing CSV to memory");
    String::from_utf8(w.into_inner().expect("an in-memory writer")).expect("UTF-8 fields")
}

/// Runs `f` `n` times (the simulation is deterministic, so only the time varies) and
/// keeps the median time; the host's timing noise is reported, not hidden.
fn repeated(n: u32, f: impl Fn() -> Result<BenchResult, String>) -> Result<BenchResult, String> {
    let mut runs = Vec::new();
    for _ in 0..n.max(1) {
        runs.push(f()?);
    }
    let mut times: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    times.sort_by(f64::total_cmp);
    let mut r = runs.swap_remove(0);
    r.seconds = times[times.len() / 2];
    r.best_seconds = times[0];
    r.repetitions = times.len() as u32;
    Ok(r)
}

/// IMB PingPong at 16 kB, as Figure 10 runs it (warm-up and 1,000 timed iterations).
const PINGPONG: &str = include_str!("../workloads/imb/pingpong-16k.toml");
/// IMB Alltoall at 16 kB.
const ALLTOALL: &str = include_str!("../workloads/imb/alltoall-16k.toml");

/// Every benchmark at its default size (`scale` multiplies the work), each run
/// `repetitions` times: the random tester, the stream, the stream over arrays its L1s
/// hold (after its first round every private access hits the L1: the cost of the
/// cheapest events, the core's own), and two MPI cases (PingPong at 16 kB whole,
/// Alltoall at 16 kB without its warm-up, one timed iteration per `scale`).
pub fn run(scale: u32, repetitions: u32) -> Result<Vec<BenchResult>, String> {
    let s = scale.max(1);
    let alltoall = (s as f64 / 10.0).min(1.0);
    Ok(vec![
        repeated(repetitions, || bench_tester(200_000 * s as u64, 1))?,
        repeated(repetitions, || bench_stream(1 << 20, 2 * s))?,
        repeated(repetitions, || bench_stream(16 << 10, 100 * s)).map(|mut r| {
            r.name = "stream-l1".into();
            r
        })?,
        repeated(repetitions, || {
            bench_mpi("pingpong", PINGPONG, None, None, true)
        })?,
        repeated(repetitions, || {
            bench_mpi("alltoall", ALLTOALL, None, Some(alltoall), false)
        })?,
    ])
}
