//! Systems beyond the paper's 16 cores: the random tester on 256 and 1,024 cores (sharer
//! sets wider than 64 bits, three- and five-level switch networks) and IMB Alltoall on 64
//! ranks (its ch3:shm segment mapped at first touch), every message verified.

use std::path::Path;

use moped::bench::scaled_system;
use moped::config::SystemConfig;
use moped::design::Design;
use moped::mpi::{frame_need, run_workload};
use moped::tester::{self, TesterConfig};
use moped::workload::spec::{build, parse_spec};

#[test]
fn the_random_tester_passes_on_256_and_1024_cores() {
    for (cores, checks) in [(256, 4_000), (1024, 2_000)] {
        let r = tester::run(&TesterConfig::new(cores, checks, 7)).unwrap();
        assert!(r.checks_completed >= checks, "{cores} cores: {r:?}");
        assert_eq!((r.mismatches, r.watchdog_trips), (0, 0), "{cores} cores");
    }
}

/// Under the MOPED designs a request waits its turn behind more copy units as the cores
/// grow: at 320 cores BASEMOPED's tester once tripped the watchdog with 15 waiters queued on
/// one line, none stuck, before the watchdog's patience grew with the cores.
#[test]
fn the_moped_designs_tester_passes_beyond_300_cores() {
    for (design, cores) in [(Design::BaseMoped, 320), (Design::OptCopy, 512)] {
        let mut cfg = TesterConfig::new(cores, 30_000, 1);
        cfg.design = design;
        let r = tester::run(&cfg).unwrap_or_else(|e| panic!("{design} on {cores}: {e}"));
        assert_eq!(
            (r.mismatches, r.watchdog_trips),
            (0, 0),
            "{design} on {cores}"
        );
    }
}

#[test]
fn alltoall_on_64_ranks_verifies_every_message() {
    let text = "name = \"AA\"\nsuite = \"imb\"\nbenchmark = \"alltoall\"\nbytes = 1024\niterations = 1\nranks = 64\n";
    let spec = parse_spec(text, Path::new("aa64.toml")).unwrap();
    let w = build(&spec, None, false).unwrap();
    let cfg = scaled_system(64, frame_need(&w, &SystemConfig::default()).total()).unwrap();
    let run = run_workload(&cfg, &w, Design::Baseline, 1, (&cfg.mpi).into()).unwrap();
    // 64 x 63 blocks of 1 kB, each its own message, beside the barriers' empty ones.
    assert_eq!(run.bytes_verified, 64 * 63 * 1024);
    assert!(run.messages_verified > 64 * 63, "{}", run.messages_verified);
    assert!(scaled_system(1025, 0).is_err());
}

/// `moped mpi --ranks P` through the library's front door: an IMB spec on 32 ranks on a
/// system fitted to them, every message verified; counts a benchmark or a schedule cannot
/// run on are refused with the reason.
#[test]
fn a_spec_runs_on_the_ranks_asked_for() {
    use moped::api::mpi::mpi;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    let bcast = root.join("imb/bcast-16k.toml");
    let r = mpi(
        &cfg,
        &bcast,
        Design::Baseline,
        1,
        (Some(0.1), Some(32)),
        None,
    )
    .unwrap();
    assert_eq!(r.workload.ranks.len(), 32);
    assert!(r
        .workload
        .notes
        .iter()
        .any(|n| n == "ranks set to 32 (the spec has 16)"));
    // One timed broadcast of 16 kB reaches the 31 other ranks.
    assert!(
        r.run.bytes_verified >= 31 * 16384,
        "{}",
        r.run.bytes_verified
    );
    let core31 = r.run.stats.get("system.cpu31.accesses");
    assert!(
        core31.is_some_and(|s| s.value.as_f64() > 0.0),
        "core 31 ran rank 31"
    );

    let err = |path: &str, p: usize| {
        mpi(
            &cfg,
            &root.join(path),
            Design::Baseline,
            1,
            (Some(0.1), Some(p)),
            None,
        )
        .err()
        .unwrap_or_else(|| panic!("{path} on {p} ranks ran"))
        .to_string()
    };
    let sp = err("npb/sp-S.toml", 8);
    assert!(
        sp.contains("8 ranks asked") && sp.contains("square"),
        "{sp}"
    );
    let goal = err("goal/any_source.goal", 8);
    assert!(goal.contains("a GOAL schedule runs on its own"), "{goal}");
    let too_many = err("imb/bcast-16k.toml", 1025);
    assert!(
        too_many.contains("1024") || too_many.contains("cores"),
        "{too_many}"
    );
}

/// IMB Alltoall of 16 kB on 256 ranks may write the whole ch3:shm segment (256² queues of
/// 262,408 bytes: 17.2 GB) beside 2 GiB of buffers. Fitting the system gives it memory
/// whose upper half, where the OS takes frames, holds all of that: 16 GiB ran out of frames
/// hours into the run. Sixteen ranks keep Table 1's 512 MB.
#[test]
fn memory_is_fitted_to_what_the_ranks_may_touch() {
    let text =
        "name = \"AA\"\nsuite = \"imb\"\nbenchmark = \"alltoall\"\nbytes = 16384\niterations = 1\n";
    let mut spec = parse_spec(text, Path::new("aa.toml")).unwrap();
    spec.set_ranks(256).unwrap();
    let w = build(&spec, None, false).unwrap();
    let need = frame_need(&w, &SystemConfig::default());
    assert_eq!(need.segment, 256 * 256 * 262_408);
    // Two 4 MiB buffers per rank, each rank's rounded to whole pages.
    assert_eq!(need.buffers / (256 * 4096), 2 * 256 * 16384 / 4096 + 1);
    let cfg = scaled_system(256, need.total()).unwrap();
    assert!(cfg.memory.size_bytes / 2 >= need.total(), "{need:?}");
    assert_eq!(cfg.memory.size_bytes, 64 << 30, "{need:?}");
    assert_eq!(
        scaled_system(16, need.total()).unwrap().memory,
        SystemConfig::default().memory
    );
}
