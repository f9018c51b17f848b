//! Where a rank's cycles go (`mpi.rank{r}.cycles.*`, `src/mpi/activity.rs`): the parts of
//! every rank add up to the run's cycles, over the timed region, under every design and
//! both core models; each request's latency is sampled once; and the parts move as the
//! designs say they should (copies and queue searches only on the software path, port
//! accesses only under MOPED, a reduction's arithmetic only in Reduce).

use std::path::Path;

use moped::config::{CoreModel, SystemConfig};
use moped::design::Design;
use moped::mpi::activity::Activity;
use moped::mpi::{run_workload, MpiRun};
use moped::workload::spec::{build, parse_spec};

fn run(workload: &str, design: Design, cfg: &SystemConfig, iterations: f64) -> MpiRun {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(format!("{workload}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let spec = parse_spec(&text, &path).unwrap();
    let w = build(&spec, Some(iterations), cfg.workload.warmup).unwrap();
    run_workload(cfg, &w, design, 1, (&cfg.mpi).into())
        .unwrap_or_else(|e| panic!("{workload} under {design}: {e}"))
}

fn int(run: &MpiRun, name: &str) -> u64 {
    let s = run
        .stats
        .get(name)
        .unwrap_or_else(|| panic!("no statistic {name}"));
    s.value.as_f64() as u64
}

/// Rank `r`'s cycles per activity, in [`Activity::ALL`] order.
fn parts(run: &MpiRun, r: usize) -> Vec<u64> {
    Activity::ALL
        .iter()
        .map(|a| int(run, &format!("mpi.rank{r}.cycles.{}", a.name())))
        .collect()
}

fn part(run: &MpiRun, a: Activity) -> u64 {
    int(run, &format!("mpi.cycles.{}", a.name()))
}

fn samples(run: &MpiRun, name: &str) -> u64 {
    run.stats.distribution(name).unwrap().samples()
}

fn check_sums(run: &MpiRun, what: &str) {
    let ranks = int(run, "mpi.ranks") as usize;
    assert_eq!(int(run, "sim.cycles"), run.cycles, "{what}");
    for r in 0..ranks {
        let p = parts(run, r);
        assert_eq!(
            p.iter().sum::<u64>(),
            run.cycles,
            "{what}: rank {r}'s parts {p:?} against {} cycles",
            run.cycles
        );
    }
    for a in Activity::ALL {
        let sum: u64 = (0..ranks).map(|r| parts(run, r)[a as usize]).sum();
        assert_eq!(part(run, a), sum, "{what}: mpi.cycles.{}", a.name());
    }
    // Each send and each receive is sampled once, at its completion, so the timed region
    // counts the requests completed in it: its sends and receives, give or take those
    // open at its two ends (at most a barrier's and a call's requests per rank).
    let near = |a: u64, b: u64| a.abs_diff(b) <= 4 * ranks as u64;
    let (sends, recvs) = (int(run, "mpi.sends"), int(run, "mpi.messages_verified"));
    let (s, r) = (
        samples(run, "mpi.send_latency"),
        samples(run, "mpi.recv_latency"),
    );
    assert!(
        near(s, sends) && near(r, recvs),
        "{what}: {s} of {sends}, {r} of {recvs}"
    );
    assert!(s > 0 && r > 0, "{what}");
}

#[test]
fn every_ranks_parts_add_up_to_the_runs_cycles() {
    let cfg = SystemConfig::default();
    for w in [
        "imb/pingpong-16k",
        "imb/reduce-16k",
        "imb/bcast-16k",
        "npb/mg-S",
    ] {
        for d in Design::ALL {
            let r = run(w, d, &cfg, 0.05);
            check_sums(&r, &format!("{w} under {d}"));
        }
    }
}

#[test]
fn the_parts_add_up_on_an_mlp_core_and_without_warm_up() {
    let mut cfg = SystemConfig::default();
    cfg.system.core_model = CoreModel::Mlp;
    for d in [Design::Baseline, Design::OptCopy] {
        let r = run("imb/gather-16k", d, &cfg, 0.05);
        check_sums(&r, &format!("gather on mlp cores under {d}"));
    }
    let mut cold = SystemConfig::default();
    cold.workload.warmup = false;
    let r = run("imb/bcast-16k", Design::BaseMoped, &cold, 0.05);
    check_sums(&r, "bcast without warm-up");
}

#[test]
fn the_parts_follow_the_designs() {
    let cfg = SystemConfig::default();
    let base = run("imb/reduce-16k", Design::Baseline, &cfg, 0.1);
    let opt = run("imb/reduce-16k", Design::OptCopy, &cfg, 0.1);
    // The software path copies, searches and polls; MOPED's ports are untouched.
    for a in [Activity::Copy, Activity::Search, Activity::Poll] {
        assert!(part(&base, a) > 0, "baseline {}", a.name());
    }
    for a in [Activity::MopedPort, Activity::MopedWait] {
        assert_eq!(part(&base, a), 0, "baseline {}", a.name());
        assert!(part(&opt, a) > 0, "optcopy {}", a.name());
    }
    // Under MOPED the cores search no list and copy only their own contribution to the
    // reduction, not the messages.
    assert_eq!(part(&opt, Activity::Search), 0);
    assert!(part(&opt, Activity::Copy) < part(&base, Activity::Copy) / 4);
    // A reduction's arithmetic is the same work under both: within 25 % (its loads hit
    // or miss differently).
    let (rb, ro) = (part(&base, Activity::Reduce), part(&opt, Activity::Reduce));
    assert!(rb > 0 && ro > 0);
    assert!(
        (rb as f64 - ro as f64).abs() < 0.25 * rb as f64,
        "reduce: {rb} against {ro}"
    );
    // PingPong computes nothing.
    let pp = run("imb/pingpong-16k", Design::Baseline, &cfg, 0.1);
    assert_eq!(part(&pp, Activity::Compute), 0);
    assert_eq!(part(&pp, Activity::Reduce), 0);
    // An NPB kernel computes.
    let mg = run("npb/mg-S", Design::Baseline, &cfg, 0.05);
    assert!(part(&mg, Activity::Compute) > 0);
}

/// Without a timed region, every request is sampled: as many send latencies as sends, and
/// as many receive latencies as messages checked.
#[test]
fn every_request_of_a_whole_run_is_sampled_once() {
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/any_source.goal");
    let w = moped::workload::goal::load_goal(&path).unwrap();
    for d in [Design::Baseline, Design::OptCopy] {
        let r = run_workload(&cfg, &w, d, 1, (&cfg.mpi).into()).unwrap();
        assert_eq!(int(&r, "sim.timed_from"), 0);
        check_sums(&r, &format!("any_source.goal under {d}"));
        assert_eq!(samples(&r, "mpi.send_latency"), int(&r, "mpi.sends"));
        assert_eq!(
            samples(&r, "mpi.recv_latency"),
            int(&r, "mpi.messages_verified")
        );
    }
}
