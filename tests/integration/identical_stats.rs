//! The access path rebuilt for host speed (lines' states kept apart from their bytes, an L1
//! hit as one short path, `sim.short_hits`) changes no statistic. Every run below digests
//! its stats.txt, all but the simulator's own event counts and host time, and the digests
//! must equal the ones recorded with the code from before the rebuild (commit 99e9bf3):
//! the random tester under each design, `moped bench`'s workloads, and Figure 10's 44 runs
//! at a twentieth of their iterations. With `MOPED_RECORD_DIGESTS=1` the test prints the
//! digests instead of comparing them (how the table was made; a change to the model that
//! is meant to move a statistic records it again, and says so in its commit).
//!
//! `scripts/bench_compare.sh` checks the full-length Figure 10 the same way, against a
//! build of that commit.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use moped::api::figure10::FIGURE10;
use moped::bench::streaming_program;
use moped::coherence::cache::PrefetchKind;
use moped::coherence::Protocol;
use moped::config::SystemConfig;
use moped::core::ProgramDriver;
use moped::design::Design;
use moped::mpi::run_workload;
use moped::sim::Sim;
use moped::stats::StatsRegistry;
use moped::tester::{self, TesterConfig};
use moped::workload::spec::{build, parse_spec};

/// Lines that may differ: how many events the simulator ran to get there, and how long;
/// and the statistics added since the digests were recorded (the miss latencies), which
/// the code before did not write.
fn own_count(line: &str) -> bool {
    [
        "sim.events",
        "sim.event_kinds.",
        "sim.max_queue",
        "sim.short_hits",
        "host.",
        "system.total.miss_latency.",
        "system.total.l1d.miss_latency",
        "system.total.l2.miss_latency",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// The lines of a run's stats.txt that must not change.
fn kept(stats: &StatsRegistry) -> String {
    let mut txt = Vec::new();
    stats.write_stats_txt(&mut txt).unwrap();
    let txt = String::from_utf8(txt).unwrap();
    let lines: Vec<&str> = txt.lines().filter(|l| !own_count(l)).collect();
    lines.join("\n")
}

/// FNV-1a, 64 bits: a digest that stays the same across Rust releases and platforms.
fn digest(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn tester_run(name: &str, cfg: &TesterConfig) -> (String, String) {
    let (mut report, stats) = tester::run_with_stats(cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
    // The report's own counts, as stats.txt's.
    report.events = 0;
    report.max_queue = 0;
    (name.to_string(), format!("{report:?}\n{}", kept(&stats)))
}

fn stream_run(name: &str, array_bytes: u64, rounds: u32) -> (String, String) {
    let cfg = SystemConfig::default();
    let prog = streaming_program(cfg.system.cores, array_bytes, rounds);
    let mut sim = Sim::new(&cfg, Protocol::baseline(), 1).unwrap();
    let mut d = ProgramDriver::new(prog, cfg.system.cpi);
    sim.run(&mut d).unwrap();
    (name.to_string(), kept(&sim.stats(0.0)))
}

fn mpi_run(spec: &str, design: Design, iterations: Option<f64>, warmup: bool) -> (String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(format!("{spec}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let spec_v = parse_spec(&text, &path).unwrap();
    let w = build(&spec_v, iterations, warmup).unwrap();
    let cfg = SystemConfig::default();
    let run = run_workload(&cfg, &w, design, 1, (&cfg.mpi).into())
        .unwrap_or_else(|e| panic!("{spec} under {design}: {e}"));
    let scale = iterations.map_or("whole".into(), |f| f.to_string());
    let name = format!(
        "{spec} {design} {scale}{}",
        if warmup { "" } else { " cold" }
    );
    (name, kept(&run.stats))
}

/// Every run of the table, each a closure giving (name, the lines that must not change).
type Run = Box<dyn Fn() -> (String, String) + Sync>;

fn runs() -> Vec<Run> {
    let mut v: Vec<Run> = Vec::new();
    for design in Design::ALL {
        v.push(Box::new(move || {
            let mut cfg = TesterConfig::new(16, 200_000, 1);
            cfg.design = design;
            tester_run(&format!("random-test {design}"), &cfg)
        }));
    }
    v.push(Box::new(|| {
        let mut cfg = TesterConfig::new(16, 50_000, 3);
        cfg.prefetch = PrefetchKind::Stride;
        cfg.cache_ops = true;
        tester_run("random-test stride cache-ops", &cfg)
    }));
    // `moped bench`'s workloads at their default sizes.
    v.push(Box::new(|| stream_run("stream", 1 << 20, 2)));
    v.push(Box::new(|| stream_run("stream-l1", 16 << 10, 100)));
    v.push(Box::new(|| {
        mpi_run("imb/pingpong-16k", Design::Baseline, None, true)
    }));
    v.push(Box::new(|| {
        mpi_run("imb/alltoall-16k", Design::Baseline, Some(0.1), false)
    }));
    for w in FIGURE10.map(|w| w.trim_end_matches(".toml")) {
        for design in Design::ALL {
            v.push(Box::new(move || mpi_run(w, design, Some(0.05), true)));
        }
    }
    v
}

/// Digests recorded with commit 99e9bf3, the code before the rebuild.
const DIGESTS: &[(&str, u64)] = &[
    ("imb/alltoall-16k baseline 0.05", 0xf06ea0ae1d74facb),
    ("imb/alltoall-16k baseline 0.1 cold", 0x5c7a0f7f4c3b8aea),
    ("imb/alltoall-16k basemoped 0.05", 0x1e695e42dbab5890),
    ("imb/alltoall-16k optcache 0.05", 0x534eab79f55e3472),
    ("imb/alltoall-16k optcopy 0.05", 0xa2993f6ca61e3446),
    ("imb/bcast-16k baseline 0.05", 0x3e67d36027c50b5b),
    ("imb/bcast-16k basemoped 0.05", 0x7e70048055a9925e),
    ("imb/bcast-16k optcache 0.05", 0x7c34f22712b4347b),
    ("imb/bcast-16k optcopy 0.05", 0x8b900e4f5dc56d8e),
    ("imb/gather-16k baseline 0.05", 0xb98d8777b551e5eb),
    ("imb/gather-16k basemoped 0.05", 0x8442064ea4fe34ab),
    ("imb/gather-16k optcache 0.05", 0x4946fca31bbdf25a),
    ("imb/gather-16k optcopy 0.05", 0x41fed8c9afe2cc42),
    ("imb/pingping-16k baseline 0.05", 0x38656ffcc4728cdf),
    ("imb/pingping-16k basemoped 0.05", 0xb0b25d84f9dfab07),
    ("imb/pingping-16k optcache 0.05", 0x4f6def87a3a8b0f3),
    ("imb/pingping-16k optcopy 0.05", 0xfc7f77049ccfeede),
    ("imb/pingpong-16k baseline 0.05", 0x3c0c4dd9377c77cf),
    ("imb/pingpong-16k baseline whole", 0x685da08ce8eec993),
    ("imb/pingpong-16k basemoped 0.05", 0x933f8634536249df),
    ("imb/pingpong-16k optcache 0.05", 0x52055759daea49d9),
    ("imb/pingpong-16k optcopy 0.05", 0x8dcc010d30cf25df),
    ("imb/reduce-16k baseline 0.05", 0x359ae1642ae6c393),
    ("imb/reduce-16k basemoped 0.05", 0xad82cb82adc6010e),
    ("imb/reduce-16k optcache 0.05", 0x6afd6ed8fdde635f),
    ("imb/reduce-16k optcopy 0.05", 0x6bf460854bdf0307),
    ("npb/bt-S baseline 0.05", 0xa671d83934fb5de1),
    ("npb/bt-S basemoped 0.05", 0x5804573fecb2df1d),
    ("npb/bt-S optcache 0.05", 0x7d74e3d11b85f6c4),
    ("npb/bt-S optcopy 0.05", 0x0eabac417ad8b7e2),
    ("npb/cg-S baseline 0.05", 0xbace762f799635f9),
    ("npb/cg-S basemoped 0.05", 0xbdd8efa872ccd73e),
    ("npb/cg-S optcache 0.05", 0x83afb5422304ad64),
    ("npb/cg-S optcopy 0.05", 0x7f5502f0bf312e10),
    ("npb/ft-S baseline 0.05", 0x6d1a4608ccf39a59),
    ("npb/ft-S basemoped 0.05", 0x1a249c91b0daa2f4),
    ("npb/ft-S optcache 0.05", 0xa7bd1e7545980eca),
    ("npb/ft-S optcopy 0.05", 0x35680d5a4a135409),
    ("npb/mg-S baseline 0.05", 0x0c6a121e40e4f84a),
    ("npb/mg-S basemoped 0.05", 0xcf91afed68e27ef0),
    ("npb/mg-S optcache 0.05", 0x7a3ce50f5f696694),
    ("npb/mg-S optcopy 0.05", 0x1d2d0725fa661969),
    ("npb/sp-S baseline 0.05", 0x8d6bb229bb6c1150),
    ("npb/sp-S basemoped 0.05", 0x7e47aa539b293ebd),
    ("npb/sp-S optcache 0.05", 0xece7db00e63e3d4d),
    ("npb/sp-S optcopy 0.05", 0x63b9ad19a3e07be5),
    ("random-test baseline", 0xece6a3457ff044d6),
    ("random-test basemoped", 0x10d914827d5daf0f),
    ("random-test optcache", 0x5003b6a058c94550),
    ("random-test optcopy", 0x9ddb9597548f3233),
    ("random-test stride cache-ops", 0x1a4e94fd72a18f6d),
    ("stream", 0x45132e2ff4a8b3d6),
    ("stream-l1", 0xb730c9ce62f5534d),
];

#[test]
fn statistics_are_those_of_the_code_before_the_access_path_was_rebuilt() {
    let runs = runs();
    let next = AtomicUsize::new(0);
    let got = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(run) = runs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (name, text) = run();
                    got.lock().unwrap().push((name, digest(&text)));
                }
            });
        }
    });
    let mut got = got.into_inner().unwrap();
    got.sort();
    if std::env::var_os("MOPED_RECORD_DIGESTS").is_some() {
        for (name, d) in &got {
            println!("    ({name:?}, {d:#018x}),");
        }
        return;
    }
    let want: Vec<(String, u64)> = DIGESTS.iter().map(|&(n, d)| (n.to_string(), d)).collect();
    let differ: Vec<String> = want
        .iter()
        .filter(|w| !got.contains(w))
        .map(|(n, _)| n.clone())
        .collect();
    assert!(
        differ.is_empty() && got.len() == want.len(),
        "statistics changed in {} of {} runs: {differ:?}",
        differ.len().max(got.len().abs_diff(want.len())),
        want.len()
    );
}

/// The short path of an L1 hit against its event: the same statistics (but the simulator's
/// own counts), with short hits taken. The runs poll (PingPong, Gather), sweep (CG) and run
/// the MOPED designs' port loads and devices (OPTCOPY).
#[test]
fn short_hits_change_no_statistic() {
    let run = |spec: &str, design: Design, short: bool| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("workloads")
            .join(format!("{spec}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let w = build(&parse_spec(&text, &path).unwrap(), Some(0.1), true).unwrap();
        let mut cfg = SystemConfig::default();
        cfg.sim.short_hits = short;
        let r = run_workload(&cfg, &w, design, 1, (&cfg.mpi).into()).unwrap();
        let short_hits = r
            .stats
            .stats()
            .iter()
            .find(|s| s.name == "sim.short_hits")
            .map(|s| s.value.as_f64() as u64)
            .unwrap();
        (kept(&r.stats), short_hits)
    };
    // At least this many short hits: OPTCOPY's ranks wait on MOPED's ports, not in L1 hits.
    for (spec, design, least) in [
        ("imb/pingpong-16k", Design::Baseline, 1_000),
        ("imb/gather-16k", Design::Baseline, 1_000),
        ("npb/cg-S", Design::Baseline, 1_000),
        ("imb/pingpong-16k", Design::OptCopy, 1),
    ] {
        let ((on, taken), (off, none)) = (run(spec, design, true), run(spec, design, false));
        assert_eq!(none, 0);
        assert!(taken >= least, "{spec} under {design}: {taken} short hits");
        if let Some((a, b)) = on.lines().zip(off.lines()).find(|(a, b)| a != b) {
            panic!("{spec} under {design}: short hits give\n  {a}\nagainst\n  {b}");
        }
        assert_eq!(
            on.lines().count(),
            off.lines().count(),
            "{spec} under {design}"
        );
    }
}
