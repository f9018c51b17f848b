//! Systems beyond the paper's 16 cores: the random tester on 256 and 1,024 cores (sharer
//! sets wider than 64 bits, three- and five-level switch networks) and IMB Alltoall on 64
//! ranks (its ch3:shm segment mapped at first touch), every message verified.

use std::path::Path;

use moped::bench::scaled_system;
use moped::design::Design;
use moped::mpi::run_workload;
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

#[test]
fn alltoall_on_64_ranks_verifies_every_message() {
    let text = "name = \"AA\"\nsuite = \"imb\"\nbenchmark = \"alltoall\"\nbytes = 1024\niterations = 1\nranks = 64\n";
    let spec = parse_spec(text, Path::new("aa64.toml")).unwrap();
    let w = build(&spec, None, false).unwrap();
    let cfg = scaled_system(64).unwrap();
    let run = run_workload(&cfg, &w, Design::Baseline, 1, (&cfg.mpi).into()).unwrap();
    // 64 x 63 blocks of 1 kB, each its own message, beside the barriers' empty ones.
    assert_eq!(run.bytes_verified, 64 * 63 * 1024);
    assert!(run.messages_verified > 64 * 63, "{}", run.messages_verified);
    assert!(scaled_system(1025).is_err());
}
