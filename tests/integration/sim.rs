//! The timing simulator end to end: the random tester on the baseline protocol over several
//! seeds, its self-test against an ideal memory, watchdogs on a seeded bug, determinism,
//! and the three statistics outputs of a small program.

use moped::api::output::{Invocation, OutDir};
use moped::api::run::{run_file, run_program};
use moped::coherence::protocols::{BASELINE_DIR, BASELINE_L2};
use moped::coherence::Protocol;
use moped::config::SystemConfig;
use moped::core::Program;
use moped::design::Design;
use moped::stats::{parse_stats_csv, parse_stats_txt, StatValue};
use moped::tester::{self, TesterConfig};

#[test]
fn random_tester_passes_on_16_cores_over_16_seeds() {
    // 16 seeds x 100,000 checks (the per-change target); the nightly run goes further.
    let checks = std::env::var("MOPED_TESTER_CHECKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    for seed in 1..=16 {
        let cfg = TesterConfig::new(16, checks, seed);
        let r = tester::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert!(r.checks_completed >= checks, "seed {seed}: {r:?}");
        assert_eq!((r.mismatches, r.watchdog_trips), (0, 0), "seed {seed}");
    }
}

/// The L1 prefetcher only moves lines: with it on, every loaded value is still the last one
/// stored, in every design, while it issues and hits prefetches.
#[test]
fn random_tester_passes_with_the_prefetcher_on() {
    use moped::config::PrefetchKind;
    for prefetch in [PrefetchKind::NextLine, PrefetchKind::Stride] {
        for design in Design::ALL {
            for seed in 1..=2 {
                let mut cfg = TesterConfig::new(16, 30_000, seed);
                cfg.design = design;
                cfg.prefetch = prefetch;
                let r = tester::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!((r.mismatches, r.watchdog_trips), (0, 0), "{design} {seed}");
                assert!(
                    r.prefetches_issued > 0,
                    "{prefetch:?} {design} {seed}: {r:?}"
                );
            }
        }
    }
    // The failure's replay command carries the prefetcher.
    let mut cfg = TesterConfig::new(4, 10, 1);
    cfg.prefetch = PrefetchKind::Stride;
    assert!(cfg.replay_command().ends_with("--prefetch stride"));
}

#[test]
fn random_tester_passes_with_few_cores() {
    for cores in [1, 2, 3, 5] {
        let r = tester::run(&TesterConfig::new(cores, 5_000, 3)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.mismatches, 0);
    }
}

#[test]
fn tester_self_test_against_ideal_memory() {
    for cores in [16, 32] {
        let r = tester::run_ideal(&TesterConfig::new(cores, 50_000, 5), 0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(r.checks_completed >= 50_000);
    }
    // A memory that drops every 97th store must be caught, with seed and replay command.
    let e = tester::run_ideal(&TesterConfig::new(16, 50_000, 5), 97).unwrap_err();
    assert!(
        e.contains("data mismatch") && e.contains("seed 5") && e.contains("moped random-test"),
        "{e}"
    );
}

fn mutated(l2_from: &str, l2_to: &str, dir_from: &str, dir_to: &str) -> Protocol {
    let l2 = BASELINE_L2.0.replace(l2_from, l2_to);
    let dir = BASELINE_DIR.0.replace(dir_from, dir_to);
    assert!(
        l2 != BASELINE_L2.0 || dir != BASELINE_DIR.0,
        "the mutation must change a table"
    );
    Protocol::from_sources("mutant", (&l2, "L2Cache.sm"), (&dir, "Directory.sm")).unwrap()
}

/// Asserts that a failure message names every one of `wants`.
fn assert_names(e: &str, wants: &[&str]) {
    for want in wants {
        assert!(e.contains(want), "missing `{want}` in: {e}");
    }
}

#[test]
fn watchdog_catches_a_dropped_invalidation_ack() {
    let p = mutated(
        "transition(S, Inv, I) { f_sendAckToRequestor; rr_deallocateLine; }",
        "transition(S, Inv, I) { rr_deallocateLine; }",
        "",
        "",
    );
    let e = tester::run_with_protocol(&TesterConfig::new(4, 20_000, 11), p).unwrap_err();
    assert_names(
        &e,
        &[
            "watchdog",
            "controller L2Cache[",
            "state ",
            "event ",
            "address 0x",
            "cycle ",
            "seed 11",
            "replay: moped random-test",
        ],
    );
}

#[test]
fn tester_catches_a_lost_writeback_as_data_mismatch() {
    let p = mutated(
        "",
        "",
        "transition(MI, Dirty_Writeback, I) { m_writeDataToMemory; c_clearOwner; w_deallocateTBE; }",
        "transition(MI, Dirty_Writeback, I) { c_clearOwner; w_deallocateTBE; }",
    );
    let e = tester::run_with_protocol(&TesterConfig::new(4, 20_000, 2), p).unwrap_err();
    assert!(e.contains("data mismatch") && e.contains("expected"), "{e}");
    assert!(
        e.contains("seed 2") && e.contains("replay: moped random-test"),
        "{e}"
    );
}

#[test]
fn tester_catches_missing_invalidations_as_a_stuck_request() {
    let p = mutated(
        "",
        "",
        "transition({I, S}, GETX, MM) { v_allocateTBE; dd_sendExclusiveDataFromMemory; i_sendInvToSharers; }",
        "transition({I, S}, GETX, MM) { v_allocateTBE; dd_sendExclusiveDataFromMemory; }",
    );
    let e = tester::run_with_protocol(&TesterConfig::new(4, 20_000, 2), p).unwrap_err();
    assert!(
        e.contains("watchdog") && e.contains("made no progress"),
        "{e}"
    );
}

const SMALL_PROGRAM: &str = "[[core]]\ncores = \"all\"\noffset_per_core = 0x10000\nops = '''\nsweep load 0x100000 4096 64\nstore 0x100040 8 5\nload 0x100040 8 expect=5\n'''\n\
                [[core]]\ncores = [0]\nops = '''\nstore 0x40 8 0x1234\ncompute 50\n'''\n\
                [[core]]\ncores = [1]\nops = '''\ncompute 2000\nload 0x40 8\n'''\n";

fn small_program() -> Program {
    Program::from_toml_str(SMALL_PROGRAM, "small.toml", 4).unwrap()
}

fn small_system() -> SystemConfig {
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 4;
    cfg
}

#[test]
fn stats_outputs_agree_and_name_the_paper_metrics() {
    let base = std::env::temp_dir().join(format!("moped-stats-test-{}", std::process::id()));
    std::fs::create_dir_all(&base).unwrap();
    let program = base.join("small.toml");
    std::fs::write(&program, SMALL_PROGRAM).unwrap();
    let dir = base.join("out");
    let out = OutDir::claim(&dir, true, Invocation::default()).unwrap();
    let r = run_file(&small_system(), &program, Design::Baseline, 1, Some(out)).unwrap();
    let txt = parse_stats_txt(&std::fs::read_to_string(dir.join("stats.txt")).unwrap()).unwrap();
    let csv = parse_stats_csv(&std::fs::read_to_string(dir.join("stats.csv")).unwrap()).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap()).unwrap();
    let json_list = json["stats"].as_array().unwrap();
    assert_eq!(txt.len(), csv.len());
    assert_eq!(txt.len(), json_list.len());
    for ((t, c), j) in txt.iter().zip(&csv).zip(json_list) {
        assert_eq!(t.0, c.0);
        assert_eq!(t.0, j["name"].as_str().unwrap());
        match (&t.1, &c.1) {
            (StatValue::Int(a), StatValue::Int(b)) => {
                assert_eq!(a, b, "{}", t.0);
                // A whole-numbered mean prints as an integer in the text formats and stays
                // a float in JSON: the same value either way.
                let v = j["value"].as_u64().or_else(|| {
                    j["value"]
                        .as_f64()
                        .filter(|f| f.fract() == 0.0)
                        .map(|f| f as u64)
                });
                assert_eq!(v, Some(*a), "{} {}", t.0, j["value"]);
            }
            // An empty distribution's mean is NaN in every format, as gem5 prints it.
            (a, b) if a.as_f64().is_nan() && b.as_f64().is_nan() => {
                assert!(j["value"].is_null() || j["value"].as_f64().is_some_and(f64::is_nan));
            }
            (a, b) => assert!(
                (a.as_f64() - b.as_f64()).abs() < 1e-5 * b.as_f64().abs().max(1.0),
                "{}: {a:?} in stats.txt, {b:?} in stats.csv",
                t.0
            ),
        }
        assert!(
            !t.2.is_empty() && !t.3.is_empty(),
            "{} needs a description and unit",
            t.0
        );
    }
    let get = |name: &str| {
        r.stats
            .get(name)
            .unwrap_or_else(|| panic!("missing {name}"))
            .value
            .as_f64()
    };
    for i in 0..4 {
        for s in [
            "l1d.hits",
            "l1d.misses",
            "l2.hits",
            "l2.misses_other_cache",
            "l2.misses_memory",
            "l2.writebacks_dirty",
            "l2.invalidations",
        ] {
            get(&format!("system.cpu{i}.{s}"));
        }
    }
    assert!(get("sim.cycles") > 0.0);
    assert!(
        get("system.total.l2.misses_memory") >= 4.0 * 64.0,
        "each core's sweep misses to memory"
    );
    assert!(
        get("system.total.l2.misses_other_cache") >= 1.0,
        "core 1 reads core 0's line"
    );
    assert!(r
        .stats
        .stats()
        .iter()
        .any(|s| s.name.starts_with("system.network.msg_count.GETS.vnet0")));
    assert!(r
        .stats
        .stats()
        .iter()
        .any(|s| s.name.starts_with("system.L2Cache_Controller.I.Load")));
    let cfg_text = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    assert_eq!(
        SystemConfig::from_toml_str(&cfg_text, "config.toml").unwrap(),
        small_system()
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(
        (&run["seed"], &run["design"]),
        (&1.into(), &"baseline".into())
    );
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn same_seed_same_stats() {
    let cfg = TesterConfig::new(8, 3_000, 9);
    assert_eq!(tester::run(&cfg).unwrap(), tester::run(&cfg).unwrap());
    let a = run_program(&small_system(), &small_program(), Design::Baseline, 4).unwrap();
    let b = run_program(&small_system(), &small_program(), Design::Baseline, 4).unwrap();
    let strip = |r: &moped::api::run::RunResult| {
        r.stats
            .stats()
            .iter()
            .filter(|s| !s.name.starts_with("host."))
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn expect_mismatch_fails_the_run_naming_the_load() {
    let p = Program::from_toml_str(
        "[[core]]\ncores = [0]\nops = '''\nstore 0x40 8 1\nload 0x40 8 expect=2\n'''\n",
        "p.toml",
        4,
    )
    .unwrap();
    let e = run_program(&small_system(), &p, Design::Baseline, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("0x40") && e.contains("expected 0x2"), "{e}");
}

#[test]
fn impossible_cell_in_the_simulator_names_controller_cycle_state_and_event() {
    // The first GETS to an idle line reaches a cell the mutant declares impossible.
    let p = mutated(
        "",
        "",
        "transition(I, GETS, IS) { v_allocateTBE; d_sendDataFromMemory; }",
        "impossible(I, GETS);",
    );
    let e = tester::run_with_protocol(&TesterConfig::new(4, 1_000, 3), p).unwrap_err();
    assert_names(
        &e,
        &[
            "Invalid transition",
            "controller Directory[",
            "state I",
            "event GETS",
            "address 0x",
            "seed 3",
            "replay: moped random-test",
        ],
    );
    // The cycle is the event's, not a clock the controller was never given.
    let cycle: u64 = e
        .split("cycle ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no cycle in: {e}"));
    assert!(cycle > 0, "{e}");
}

/// Runs `ops` on core 0 of a 4-core system under `cfg` (the other cores have nothing to
/// do): the run's result, or its error as text.
fn run_ops(cfg: &SystemConfig, ops: &str) -> Result<moped::api::run::RunResult, String> {
    let text = format!("[[core]]\ncores = [0]\nops = '''\n{ops}\n'''\n");
    let p = Program::from_toml_str(&text, "idle.toml", 4).unwrap();
    run_program(cfg, &p, Design::Baseline, 1).map_err(|e| e.to_string())
}

fn stat(r: &moped::api::run::RunResult, name: &str) -> u64 {
    let s = r.stats.get(name).unwrap_or_else(|| panic!("no {name}"));
    s.value.as_f64() as u64
}

#[test]
fn idle_time_costs_one_event_however_long() {
    // Loads block the core: the compute between them overlaps nothing.
    let around = |n: &str| format!("load 0x40 8\ncompute {n}\nload 0x80 8");
    let short = run_ops(&small_system(), &around("10")).unwrap();
    let long = run_ops(&small_system(), &around("1000000000000000")).unwrap();
    assert_eq!(stat(&short, "sim.events"), stat(&long, "sim.events"));
    assert!(long.cycles > 1_000_000_000_000_000, "{}", long.cycles);
    // A high CPI stretches the same compute into one wait too.
    let mut slow = small_system();
    slow.system.cpi = 1e11;
    let cpi = run_ops(&slow, &around("10")).unwrap();
    assert_eq!(stat(&short, "sim.events"), stat(&cpi, "sim.events"));
    assert!(cpi.cycles > 1_000_000_000_000, "{}", cpi.cycles);
}

#[test]
fn compute_past_the_end_of_simulated_time_names_its_op() {
    let e = run_ops(&small_system(), "compute 5\ncompute 18446744073709551615").unwrap_err();
    assert!(
        e.contains("idle.toml:5:1") && e.contains("simulated time"),
        "{e}"
    );
    // Computes that fit alone but not together: the one that overflows is named.
    let third = "compute 6000000000000000000";
    let e = run_ops(&small_system(), &[third; 4].join("\n")).unwrap_err();
    assert!(e.contains("idle.toml:7:1"), "{e}");
}

// ---- MOPED traffic in the random tester ----

/// The tester's settings for `design`: 16 cores, `checks` checks.
fn moped_tester(design: Design, checks: u64, seed: u64) -> TesterConfig {
    let mut cfg = TesterConfig::new(16, checks, seed);
    cfg.design = design;
    cfg
}

#[test]
fn random_tester_drives_mopeds_under_each_moped_design() {
    for design in Design::MOPED {
        let r = tester::run(&moped_tester(design, 3_000, 7))
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        assert_eq!((r.mismatches, r.watchdog_trips), (0, 0), "{design}");
        assert!(r.moped_share() >= 0.2, "{design}: {r:?}");
        assert!(r.moped_reads > 0 && r.moped_owns > 0, "{design}: {r:?}");
        assert!(
            r.moped_writes > 0 && r.moped_values_checked > 0,
            "{design}: {r:?}"
        );
        assert!(
            r.moped_reads_raced > 0,
            "reads race stores to their lines: {r:?}"
        );
        // Only OPTCACHE has M_FILL.
        assert_eq!(
            r.moped_fills > 0,
            design == Design::OptCache,
            "{design}: {r:?}"
        );
    }
    let r = tester::run(&moped_tester(Design::Baseline, 1_000, 7)).unwrap();
    assert_eq!(r.moped_requests(), 0, "the baseline has no MOPEDs");
}

/// `design`'s protocol with `from` replaced by `to` in its overlay `file` (under
/// `protocols/`).
fn mutated_moped(design: Design, file: &str, from: &str, to: &str) -> Protocol {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/protocols/");
    let read = |f: &str| std::fs::read_to_string(format!("{root}{f}")).unwrap();
    let layers = |machine: &str| -> Vec<(String, String)> {
        let folders: &[&str] = match design {
            Design::BaseMoped => &["basemoped"],
            Design::OptCopy => &["basemoped", "optcopy"],
            _ => &["basemoped", "optcopy", "optcache"],
        };
        folders
            .iter()
            .map(|d| format!("{d}/{machine}.sm"))
            .filter(|f| std::path::Path::new(&format!("{root}{f}")).exists())
            .map(|f| {
                let text = read(&f);
                let text = if f == file {
                    assert!(text.contains(from), "{from} not in {f}");
                    text.replace(from, to)
                } else {
                    text
                };
                (text, f)
            })
            .collect()
    };
    let (l2, dir) = (layers("L2Cache"), layers("Directory"));
    let l2o: Vec<(&str, &str)> = l2.iter().map(|(t, f)| (t.as_str(), f.as_str())).collect();
    let diro: Vec<(&str, &str)> = dir.iter().map(|(t, f)| (t.as_str(), f.as_str())).collect();
    Protocol::layered("mutant", BASELINE_L2, &l2o, BASELINE_DIR, &diro).unwrap()
}

#[test]
fn tester_catches_a_stale_copy_as_a_moped_read_mismatch() {
    // OPTCOPY's directory answers a copy of an owned line from memory, not the owner.
    let p = mutated_moped(
        Design::OptCopy,
        "optcopy/Directory.sm",
        "transition(M, GET_COPY, MC) { v_allocateTBE; fc_forwardCopyToOwner; }",
        "transition(M, GET_COPY, MC) { v_allocateTBE; d_sendDataFromMemory; }",
    );
    let e = tester::run_with_protocol(&moped_tester(Design::OptCopy, 20_000, 3), p).unwrap_err();
    assert_names(
        &e,
        &[
            "data mismatch at cycle ",
            "MOPED ",
            "controller L2Cache[",
            "event M_GETS",
            "read line 0x",
            "expected",
            "now: ",
            "seed 3",
            "replay: moped random-test --cores 16 --checks 20000 --seed 3 --design optcopy",
        ],
    );
}

#[test]
fn tester_catches_a_moped_own_that_keeps_the_sharers() {
    // BASEMOPED grants a shared line to its MOPED without invalidating the other sharers.
    let p = mutated_moped(
        Design::BaseMoped,
        "basemoped/L2Cache.sm",
        "transition(S, M_GETX, SM) { i_allocateTBE; b_issueGETX; }",
        "transition(S, M_GETX, MM) { mg_grantToMoped; }",
    );
    let e = tester::run_with_protocol(&moped_tester(Design::BaseMoped, 20_000, 3), p).unwrap_err();
    assert_names(&e, &["seed 3", "replay: moped random-test"]);
}

#[test]
fn tester_catches_a_fill_never_granted_to_its_moped() {
    // OPTCACHE forgets to tell the MOPED its fill (or own) was granted.
    let p = mutated_moped(
        Design::OptCache,
        "optcache/L2Cache.sm",
        "override transition({IM, SM}, All_Acks, MM) { hx_storeMissComplete; mx_notifyMopedGranted; jj_sendExclusiveUnblock; s_deallocateTBE; }",
        "override transition({IM, SM}, All_Acks, MM) { hx_storeMissComplete; jj_sendExclusiveUnblock; s_deallocateTBE; }",
    );
    let e = tester::run_with_protocol(&moped_tester(Design::OptCache, 20_000, 3), p).unwrap_err();
    assert_names(
        &e,
        &[
            "watchdog",
            "line request never answered",
            "controller L2Cache[",
            "state ",
            "address 0x",
            "cycle ",
            "seed 3",
            "--design optcache",
        ],
    );
}

/// Core 0 stores a value into each of 32 lines of one page; core 1 then loads them in
/// order, each load checking its value. With the next-line prefetcher core 1 misses only
/// the first lines, the prefetched ones are counted useful, demand misses are counted
/// apart from prefetches, and every value is the one stored.
#[test]
fn the_next_line_prefetcher_turns_a_scan_into_l1_hits_without_changing_a_value() {
    let lines = 32u64;
    let stores: String = (0..lines)
        .map(|i| format!("store {:#x} 8 {}\n", 0x200000 + 64 * i, 1000 + i))
        .collect();
    let loads: String = (0..lines)
        .map(|i| format!("load {:#x} 8 expect={}\n", 0x200000 + 64 * i, 1000 + i))
        .collect();
    let text = format!(
        "[[core]]\ncores = [0]\nops = '''\n{stores}'''\n\
         [[core]]\ncores = [1]\nops = '''\ncompute 20000\n{loads}'''\n"
    );
    let program = Program::from_toml_str(&text, "scan.toml", 2).unwrap();
    let run = |prefetch: &str| {
        let mut cfg = SystemConfig::default();
        cfg.system.cores = 2;
        cfg.set("l1.prefetch", prefetch).unwrap();
        let r = run_program(&cfg, &program, Design::Baseline, 1).unwrap();
        let get = |name: &str| match r.stats.get(name).unwrap().value {
            StatValue::Int(v) => v,
            StatValue::Float(f) => f as u64,
        };
        [
            "system.cpu1.l1d.misses",
            "system.cpu1.l1d.prefetches_issued",
            "system.cpu1.l1d.prefetches_network",
            "system.cpu1.l1d.prefetches_useful",
            "system.cpu1.l2.misses",
        ]
        .map(get)
    };
    let [misses, issued, network, useful, l2_misses] = run("none");
    assert_eq!((issued, network, useful), (0, 0, 0));
    assert!(
        misses >= lines && l2_misses >= lines,
        "{misses} {l2_misses}"
    );
    let [pf_misses, issued, network, useful, pf_l2_misses] = run("next_line");
    // Each prefetched line is fetched from core 0's cache by a GETS of its own.
    assert!(
        issued >= lines - 2 && network == issued,
        "{issued} {network}"
    );
    assert!(useful >= lines - 2, "{useful} useful");
    // Only the scan's first line misses on demand (the others wait on, or hit, their
    // prefetches), and the prefetches' GETS are not demand L2 misses.
    assert!(pf_misses < misses / 2, "{pf_misses} against {misses}");
    assert!(
        pf_l2_misses < l2_misses / 2,
        "{pf_l2_misses} against {l2_misses}"
    );
}

/// Flushes (`clflush`) and software prefetches only move lines: with a tenth of the picks
/// flushing or prefetching a check's line, every loaded value is still the last stored,
/// in every design, the hardware prefetcher on or off.
#[test]
fn random_tester_passes_with_flushes_and_software_prefetches() {
    use moped::config::PrefetchKind;
    for prefetch in [PrefetchKind::None, PrefetchKind::Stride] {
        for design in Design::ALL {
            let mut cfg = TesterConfig::new(16, 20_000, 7);
            cfg.design = design;
            cfg.prefetch = prefetch;
            cfg.cache_ops = true;
            let r = tester::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((r.mismatches, r.watchdog_trips), (0, 0), "{design}");
            assert!(r.flushes > 100 && r.sw_prefetches > 100, "{design}: {r:?}");
        }
    }
    let mut cfg = TesterConfig::new(4, 10, 1);
    cfg.cache_ops = true;
    assert!(cfg.replay_command().ends_with("--cache-ops"));
}
