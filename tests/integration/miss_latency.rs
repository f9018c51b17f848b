//! Miss latencies as distributions (`system.total.miss_latency.*`, `system.total.l1d.
//! miss_latency`, `system.total.l2.miss_latency`): one sample per access that missed the
//! L1, each in the distribution of the level that served it, none shorter than that
//! level's latency, and in gem5's format in stats.txt.

use std::path::Path;

use moped::api::mpi::mpi;
use moped::config::SystemConfig;
use moped::design::Design;
use moped::stats::StatsRegistry;

fn samples(stats: &StatsRegistry, name: &str) -> u64 {
    stats
        .distribution(name)
        .unwrap_or_else(|| panic!("no distribution {name}"))
        .samples()
}

fn count(stats: &StatsRegistry, name: &str) -> u64 {
    stats
        .get(name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
        .value
        .as_f64() as u64
}

#[test]
fn every_l1_miss_is_one_sample_of_the_level_that_served_it() {
    // Cold, so that every access the counters count also completes within the statistics.
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/imb/pingpong-16k.toml");
    for design in [Design::Baseline, Design::OptCopy] {
        let o = mpi(&cfg, &spec, design, 1, (Some(0.2), None), None).unwrap();
        let s = &o.run.stats;
        let by_level: Vec<u64> = ["l2", "other_cache", "memory", "upgrade"]
            .iter()
            .map(|l| samples(s, &format!("system.total.miss_latency.{l}")))
            .collect();
        assert_eq!(by_level[0], count(s, "system.total.l2.hits"), "{design}");
        assert_eq!(
            by_level.iter().sum::<u64>(),
            count(s, "system.total.l1d.misses"),
            "{design}"
        );
        assert_eq!(
            samples(s, "system.total.l1d.miss_latency"),
            by_level.iter().sum::<u64>(),
            "{design}"
        );
        assert_eq!(
            samples(s, "system.total.l2.miss_latency"),
            by_level[1..].iter().sum::<u64>(),
            "{design}"
        );
        assert!(by_level[2] > 0, "{design}: nothing came from memory");
        // Under the baseline no miss is quicker than the levels it went through: the L1
        // and the L2 (Table 1, 1 + 10 cycles), and for a line from memory the directory
        // and memory on top. (Under the MOPED designs a core's access may join a line a
        // MOPED is already bringing in, and finish sooner.)
        if design != Design::Baseline {
            continue;
        }
        let min = |name: &str| {
            let d = s.distribution(name).unwrap();
            let line = d.lines().into_iter().find(|l| l.field == "min_value");
            line.map(|l| l.value.as_f64()).unwrap()
        };
        let l2 = min("system.total.miss_latency.l2");
        assert!(l2 >= 11.0, "{l2}");
        assert!(min("system.total.miss_latency.memory") > l2);
    }
}

#[test]
fn the_distributions_are_in_gem5s_format_in_stats_txt() {
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/imb/pingpong-16k.toml");
    let o = mpi(&cfg, &spec, Design::Baseline, 1, (Some(0.1), None), None).unwrap();
    let mut txt = Vec::new();
    o.run.stats.write_stats_txt(&mut txt).unwrap();
    let txt = String::from_utf8(txt).unwrap();
    for field in ["samples", "mean", "stdev", "8-15", "overflows", "max_value"] {
        let name = format!("system.total.miss_latency.l2::{field}");
        assert!(
            txt.lines().any(|l| l.starts_with(&name)),
            "{name} missing from stats.txt"
        );
    }
}
