//! Exact fast-forward of idle polling (`sim.fast_forward`, `src/sim/fastforward.rs`): with
//! it on and off, every Figure-10 workload at a fifth of its iterations, and the random
//! tester, give the same statistics: every line of stats.txt but the simulator's own event
//! counts and host time. The workloads run under the baseline, whose ranks poll MPICH's
//! queues, and under OPTCOPY, whose devices' events wake sleeping cores too; the other two
//! MOPED designs differ from OPTCOPY only in their protocols, and `moped bench --figure10`
//! compares all 44 runs at full length. Past 64 ranks the queues a rank polls outnumber its
//! TLB's entries and some of its L1's ways, so each pass walks the page tables and misses
//! the L1: IMB Alltoall on 96 ranks checks the passes that move lines.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use moped::api::figure10::FIGURE10;
use moped::config::SystemConfig;
use moped::design::Design;
use moped::mpi::{frame_need, run_workload};
use moped::tester::{self, TesterConfig};
use moped::workload::spec::{build, parse_spec};
use moped::workload::Workload;

/// Lines that may differ: how many events the simulator ran to get there, and how long.
fn own_count(line: &str) -> bool {
    [
        "sim.events",
        "sim.event_kinds.",
        "sim.max_queue",
        "sim.fast_forward.",
        "sim.short_hits",
        "host.",
    ]
    .iter()
    .any(|p| line.starts_with(p))
}

/// stats.txt of one run, without the simulator's own counts; and the passes skipped.
fn stats(workload: &str, design: Design, fast_forward: bool) -> (String, u64) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(format!("{workload}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let spec = parse_spec(&text, &path).unwrap();
    let mut cfg = SystemConfig::default();
    cfg.sim.fast_forward = fast_forward;
    // Warm-up first, as Figure 10 runs them.
    let w = build(&spec, Some(0.2), cfg.workload.warmup).unwrap();
    stats_of(&cfg, &w, design, workload)
}

/// stats.txt of workload `w` run on `cfg`, as [`stats`] gives it.
fn stats_of(cfg: &SystemConfig, w: &Workload, design: Design, name: &str) -> (String, u64) {
    let run = run_workload(cfg, w, design, 1, (&cfg.mpi).into())
        .unwrap_or_else(|e| panic!("{name} under {design}: {e}"));
    let mut txt = Vec::new();
    run.stats.write_stats_txt(&mut txt).unwrap();
    let txt = String::from_utf8(txt).unwrap();
    let skipped = txt
        .lines()
        .find_map(|l| l.strip_prefix("sim.fast_forward.passes"))
        .and_then(|rest| rest.split_whitespace().next())
        .map_or(0, |v| v.parse().unwrap());
    let kept: Vec<&str> = txt.lines().filter(|l| !own_count(l)).collect();
    (kept.join("\n"), skipped)
}

#[test]
fn figure10_workloads_give_the_same_statistics_with_and_without_fast_forward() {
    let tasks: Vec<(&str, Design)> = FIGURE10
        .iter()
        .map(|w| w.trim_end_matches(".toml"))
        .flat_map(|w| [Design::Baseline, Design::OptCopy].map(move |d| (w, d)))
        .collect();
    let next = AtomicUsize::new(0);
    let skipped = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(&(w, d)) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (on, passes) = stats(w, d, true);
                    let (off, none) = stats(w, d, false);
                    assert_eq!(none, 0);
                    if let Some((a, b)) = on.lines().zip(off.lines()).find(|(a, b)| a != b) {
                        panic!("{w} under {d}: fast-forward gives\n  {a}\nagainst\n  {b}");
                    }
                    assert_eq!(on.lines().count(), off.lines().count(), "{w} under {d}");
                    skipped.lock().unwrap().push((w, d, passes));
                }
            });
        }
    });
    // It did skip: most passes of the runs that mostly wait.
    let skipped = skipped.into_inner().unwrap();
    let of = |w: &str, d: Design| skipped.iter().find(|s| (s.0, s.1) == (w, d)).unwrap().2;
    assert!(
        of("imb/gather-16k", Design::Baseline) > 1_000,
        "{skipped:?}"
    );
    assert!(of("npb/sp-S", Design::Baseline) > 1_000, "{skipped:?}");
}

/// IMB Alltoall of 64 bytes on 96 ranks, one iteration from a cold start: each rank polls
/// 95 queues on as many pages, so its passes walk the page tables and miss its L1 (the L2
/// serves them), and a pass is skipped only when the L1, the L2 and the TLB hold the same
/// lines in the same order at both of its ends.
#[test]
fn passes_that_walk_and_miss_the_l1_are_skipped_exactly() {
    let path = Path::new("alltoall-96.toml");
    let text =
        "name = \"AA\"\nsuite = \"imb\"\nbenchmark = \"alltoall\"\nbytes = 64\niterations = 1\n";
    let mut spec = parse_spec(text, path).unwrap();
    spec.set_ranks(96).unwrap();
    let run = |fast_forward| {
        let mut cfg = SystemConfig::default();
        let w = build(&spec, None, false).unwrap();
        cfg.fit_ranks(96, frame_need(&w, &cfg).total());
        cfg.sim.fast_forward = fast_forward;
        stats_of(&cfg, &w, Design::Baseline, "alltoall-96")
    };
    let ((on, passes), (off, none)) = (run(true), run(false));
    assert_eq!(none, 0);
    if let Some((a, b)) = on.lines().zip(off.lines()).find(|(a, b)| a != b) {
        panic!("fast-forward gives\n  {a}\nagainst\n  {b}");
    }
    assert_eq!(on.lines().count(), off.lines().count());
    // Before passes with walks and L1 misses could sleep, none of these did.
    assert!(passes > 1_000, "{passes} passes skipped");
    for walked in ["system.total.dtlb.misses", "system.total.l1d.misses"] {
        let n: u64 = on
            .lines()
            .find_map(|l| l.strip_prefix(walked))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(n > 100_000, "{walked} {n}");
    }
}

#[test]
fn the_random_tester_runs_the_same_with_and_without_fast_forward() {
    for design in [Design::Baseline, Design::OptCopy] {
        let run = |fast_forward| {
            let mut cfg = TesterConfig::new(16, 20_000, 3);
            cfg.design = design;
            cfg.fast_forward = fast_forward;
            tester::run(&cfg).unwrap()
        };
        let (on, off) = (run(true), run(false));
        assert_eq!(on, off, "{design}");
        assert!(on.checks_completed >= 20_000);
    }
}
