//! MOPED's engines: random MPI traffic through every scheme with one and two engines and
//! firmware-like step costs, every message verified at its receiver; and the statistics
//! the engines keep.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use moped::config::SystemConfig;
use moped::design::Design;
use moped::envelope::{Peer, Tag};
use moped::moped::engines::{Scheme, StepCosts, StepKind};
use moped::mpi::{run_workload, MpiParams, MpiRun};
use moped::workload::{BufRef, Call, RankProgram, Workload, CTX_PT2PT};

/// Random point-to-point traffic among `p` ranks: `n` messages of random sizes (empty to
/// 70 kB) and tags between random pairs. Each rank posts its receives and sends in a random
/// interleaving, with computation between some of them so that receives are both posted
/// before and found unexpected after their messages arrive; receives of one (source, tag)
/// are posted in the order of their sends, as MPI's ordering needs.
fn random_traffic(p: usize, n: usize, seed: u64) -> Workload {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut ranks = vec![RankProgram::default(); p];
    let mut ops: Vec<Vec<Call>> = vec![Vec::new(); p];
    let mut reqs: Vec<Vec<u32>> = vec![Vec::new(); p];
    for m in 0..n {
        let src = rng.gen_range(0..p);
        let dst = (src + rng.gen_range(1..p)) % p;
        let tag = rng.gen_range(0..3u32);
        let bytes = match rng.gen_range(0..4) {
            0 => rng.gen_range(0..64),
            1 => rng.gen_range(64..4096),
            2 => rng.gen_range(4096..20_000),
            _ => rng.gen_range(20_000..70_000),
        };
        let sb = ranks[src].buffer(&format!("send{m}"), bytes.max(1));
        let rb = ranks[dst].buffer(&format!("recv{m}"), bytes.max(1));
        let req = m as u32;
        ops[src].push(Call::Isend {
            req,
            dst: dst as u16,
            tag,
            ctx: CTX_PT2PT,
            buf: BufRef::new(sb, 0),
            bytes,
        });
        ops[dst].push(Call::Irecv {
            req,
            src: Peer::Rank(src as u16),
            tag: Tag::Tag(tag),
            ctx: CTX_PT2PT,
            buf: BufRef::new(rb, 0),
            bytes,
        });
        reqs[src].push(req);
        reqs[dst].push(req);
    }
    for (r, prog) in ranks.iter_mut().enumerate() {
        // A send's Isend and a receive's Irecv keep their order within a rank (the
        // traffic's order); only pauses are random.
        for call in ops[r].drain(..) {
            if rng.gen_bool(0.3) {
                prog.calls.push(Call::Compute(rng.gen_range(100..3000)));
            }
            prog.calls.push(call);
        }
        prog.calls.push(Call::Waitall(std::mem::take(&mut reqs[r])));
        prog.calls.push(Call::Barrier);
    }
    Workload {
        name: format!("random-{p}x{n}-s{seed}"),
        ranks,
        notes: vec![],
        origins: None,
    }
}

fn cfg(scheme: Scheme, engines: usize, costs: StepCosts) -> SystemConfig {
    let mut c = SystemConfig::default();
    c.system.cores = 8;
    c.directory.banks = 4;
    c.moped.scheme = scheme;
    c.moped.engines = engines;
    c.moped.steps = costs;
    c
}

fn run(c: &SystemConfig, w: &Workload, design: Design) -> MpiRun {
    run_workload(c, w, design, 3, MpiParams::from(&c.mpi))
        .unwrap_or_else(|e| panic!("{} under {design}: {e}", w.name))
}

fn stat(r: &MpiRun, name: &str) -> u64 {
    r.stats
        .get(name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
        .value
        .as_f64() as u64
}

/// Messages of a workload, with the barrier's (a dissemination barrier: P x log2 P).
fn messages(w: &Workload) -> u64 {
    let p = w.ranks.len();
    let sends: usize = w
        .ranks
        .iter()
        .map(|r| {
            r.calls
                .iter()
                .filter(|c| matches!(c, Call::Isend { .. }))
                .count()
        })
        .sum();
    sends as u64 + (p * (usize::BITS - (p - 1).leading_zeros()) as usize) as u64
}

#[test]
fn every_scheme_delivers_every_message_of_random_traffic() {
    for seed in 0..2 {
        let w = random_traffic(6, 40, seed);
        let want = messages(&w);
        for scheme in Scheme::ALL {
            for engines in [1, 2] {
                let c = cfg(scheme, engines, StepCosts::emp());
                let r = run(&c, &w, Design::OptCopy);
                let label = format!("{scheme} x{engines} seed {seed}");
                assert_eq!(r.messages_verified, want, "{label}");
                assert_eq!(stat(&r, "system.moped.anomalies"), 0, "{label}");
                // Every step of the send and receive paths ran, and only where the scheme
                // puts it.
                for k in StepKind::ALL {
                    let allowed = scheme.engines_for(k, engines);
                    let mut total = 0;
                    for e in 0..engines {
                        let n = stat(&r, &format!("system.moped.engine{e}.steps.{}", k.name()));
                        if !allowed.contains(&e) {
                            assert_eq!(n, 0, "{label}: {k:?} ran on engine {e}");
                        }
                        total += n;
                    }
                    assert!(total > 0, "{label}: no {k:?} step ran");
                }
            }
        }
    }
}

#[test]
fn one_engine_with_default_costs_keeps_every_statistic_of_the_device_without_engines() {
    // The defaults are the device before engines: the same run with the default scheme
    // named explicitly and with an idle second engine under base gives the same numbers.
    let w = random_traffic(4, 24, 7);
    let base = cfg(Scheme::Base, 1, StepCosts::default());
    let a = run(&base, &w, Design::BaseMoped);
    let b = run(
        &cfg(Scheme::Base, 2, StepCosts::default()),
        &w,
        Design::BaseMoped,
    );
    assert_eq!(a.cycles, b.cycles);
    assert_eq!(
        stat(&a, "system.moped.engine0.busy_cycles"),
        stat(&a, "system.moped.match_cycles")
    );
    // With firmware costs the same traffic takes longer and the engines were busy.
    let slow = run(
        &cfg(Scheme::Base, 1, StepCosts::emp()),
        &w,
        Design::BaseMoped,
    );
    assert!(slow.cycles > a.cycles, "{} vs {}", slow.cycles, a.cycles);
    assert_eq!(slow.messages_verified, a.messages_verified);
}

#[test]
fn a_second_engine_under_ro_overlaps_the_copy_with_matching() {
    // Two active copies on both sides: the second engine is the only difference.
    let w = random_traffic(6, 40, 11);
    let two_copies = |engines| {
        let mut c = cfg(Scheme::Ro, engines, StepCosts::emp());
        c.moped.active_matches = 2;
        c
    };
    let one = run(&two_copies(1), &w, Design::OptCopy);
    let two = run(&two_copies(2), &w, Design::OptCopy);
    assert!(stat(&two, "system.moped.engine1.busy_cycles") > 0);
    assert!(
        stat(&two, "system.moped.engine0.handoffs") + stat(&two, "system.moped.engine1.handoffs")
            > 0
    );
    assert!(
        two.cycles < one.cycles,
        "RO x2 {} vs x1 {}",
        two.cycles,
        one.cycles
    );
    let d = two
        .stats
        .distribution("system.moped.active_copies")
        .expect("a distribution");
    assert!(
        d.max_value().unwrap_or(0) == 2,
        "two copies were active at once: {d:?}"
    );
}

#[test]
fn the_engines_experiment_writes_every_row_verified_and_checks_the_claims() {
    use moped::api::engines::{engines, plan, Costs, EnginesOptions, Hosts, Variant, CSV_HEADER};
    use moped::api::output::{Invocation, OutDir};
    let dir = std::env::temp_dir().join(format!("moped-engines-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = EnginesOptions {
        config: SystemConfig::default(),
        costs: Costs::Emp,
        design: Design::OptCopy,
        jobs: 2,
        quick: true,
        schemes: vec![Scheme::Base, Scheme::Ro],
        hosts: Hosts::Both,
        figure10: None,
        reuse: None,
    };
    let out = OutDir::claim(&dir, false, Invocation::default()).unwrap();
    let e = engines(&opts, out, &|_, _, _| {}).unwrap();
    assert_eq!(e.reused, 0);
    // Again into the same folder, resuming it: every CMP run is taken from the earlier
    // results, and the rows are the same.
    let (force, reuse) = moped::api::store::claim_terms(&dir, "engines", false, false);
    assert!(
        force && reuse.is_some(),
        "the folder holds the experiment's store"
    );
    let again_opts = EnginesOptions {
        reuse,
        ..opts.clone()
    };
    let out = OutDir::claim(&dir, force, Invocation::default()).unwrap();
    let again = engines(&again_opts, out, &|_, _, _| {}).unwrap();
    let cmp_runs = Variant::of(&opts.schemes).len() * plan(true).len();
    assert_eq!(again.reused, cmp_runs, "every CMP run reused");
    let cycles =
        |e: &moped::api::engines::Engines| e.rows.iter().map(|r| r.cycles).collect::<Vec<_>>();
    assert_eq!(cycles(&again), cycles(&e));
    let table = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(
        table.lines().count(),
        1 + cmp_runs,
        "a row per run in runs.csv"
    );
    assert_eq!(
        e.rows.len(),
        Variant::of(&opts.schemes).len() * plan(true).len()
    );
    assert_eq!(e.runs, opts.run_count());
    for r in &e.rows {
        assert!(r.messages_verified > 0, "{r:?}");
        assert!(r.cycles > 0 && r.latency_cycles > 0.0, "{r:?}");
        assert!(r.moped_copies > 0 && r.backoff_refused == 0, "{r:?}");
    }
    let csv = std::fs::read_to_string(dir.join("engines.csv")).unwrap();
    assert_eq!(csv.lines().next().unwrap(), CSV_HEADER.join(","));
    assert_eq!(csv.lines().count(), 1 + e.rows.len());
    let tigon = e.tigon.as_ref().expect("the testbed ran");
    let tcsv = std::fs::read_to_string(dir.join("tigon.csv")).unwrap();
    assert_eq!(tcsv.lines().count(), 1 + tigon.rows.len());
    assert!(dir.join("tigon_sensitivity.csv").is_file());
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for needle in [
        "every timed message went through it",
        "run exactly as the base case",
        "### The testbed beside the paper",
        "### What bounds each scheme",
        "\"The best results were obtained with the RO scheme for unidirectional traffic\"",
        "  - testbed: ",
        "  - CMP, 1 active copy: ",
        "  - CMP, 2 active copies: ",
    ] {
        assert!(
            report.contains(needle),
            "{needle} not in the report:\n{report}"
        );
    }
    // At either count of active copies, RO with two engines outruns the base case on
    // Uniband, and a second engine under the base case stays idle.
    let row = |scheme, engines, active, bench: &str| {
        e.rows
            .iter()
            .find(|r| {
                r.variant
                    == Variant {
                        scheme,
                        engines,
                        active,
                    }
                    && r.point.bench.name() == bench
                    && r.point.bytes == 16 * 1024
            })
            .unwrap()
    };
    for active in [1, 2] {
        let base = row(Scheme::Base, 1, active, "uniband");
        let ro = row(Scheme::Ro, 2, active, "uniband");
        assert!(ro.bandwidth_bytes_per_cycle > base.bandwidth_bytes_per_cycle);
        assert_eq!(row(Scheme::Base, 2, active, "uniband").cycles, base.cycles);
        assert_eq!(row(Scheme::Ro, 1, active, "uniband").cycles, base.cycles);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The transplant's only difference between two schemes is the scheme (and the engines
/// it is given): every other resource, the active copies above all, is the same.
#[test]
fn every_scheme_gets_the_same_resources_but_its_engines() {
    use moped::api::engines::{Costs, Variant};
    let base = SystemConfig::default();
    let variants = Variant::of(&Scheme::ALL);
    for a in &variants {
        for b in &variants {
            if a.active != b.active {
                continue;
            }
            let ca = a.config(&base, &Costs::Emp);
            let mut cb = b.config(&base, &Costs::Emp);
            assert_eq!(cb.moped.scheme, b.scheme);
            assert_eq!(cb.moped.engines, b.engines);
            cb.moped.scheme = ca.moped.scheme;
            cb.moped.engines = ca.moped.engines;
            assert!(
                ca == cb,
                "{a:?} and {b:?} differ beyond scheme and engines:\n{}",
                diff(&ca, &cb)
            );
        }
    }
}

/// The lines of two configurations' TOML that differ.
fn diff(a: &SystemConfig, b: &SystemConfig) -> String {
    let (ta, tb) = (toml::to_string(a).unwrap(), toml::to_string(b).unwrap());
    ta.lines()
        .zip(tb.lines())
        .filter(|(x, y)| x != y)
        .map(|(x, y)| format!("{x}  vs  {y}"))
        .collect::<Vec<_>>()
        .join("\n")
}
