//! The commands that check the model or time it: `random-test`, `check` and `bench`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::api::{self, Design};

use super::args::*;
use super::{CmdResult, Failure};

pub(super) fn cmd_random_test(a: RandomTestArgs) -> CmdResult {
    crate::config::check_cores(a.cores).map_err(|e| Failure::Usage(format!("--cores: {e}")))?;
    let mut out = io::stdout().lock();
    let mut failed = 0u64;
    for k in 0..a.seeds {
        let Some(seed) = a.seed.checked_add(k) else {
            return Err(Failure::Usage(format!("seed {} + {k} overflows", a.seed)));
        };
        let test = || {
            api::protocols::random_test(
                a.cores,
                a.checks,
                seed,
                (a.design, a.prefetch, a.cache_ops),
            )
        };
        let on = super::progress::drawn();
        let (tc, r, secs) = super::progress::heartbeat(on, ("random-test", "checks"), test);
        match r {
            Ok(r) if r.mismatches == 0 && r.watchdog_trips == 0 => {
                writeln!(
                    out,
                    "seed {seed}: ok: {} checks, {} mismatches, {} watchdog trips; {} loads, {} stores, {} cycles, {} events, {} messages ({secs:.2} s)",
                    r.checks_completed,
                    r.mismatches,
                    r.watchdog_trips,
                    r.loads,
                    r.stores,
                    r.cycles,
                    r.events,
                    r.messages,
                )?;
                if a.design.has_moped() {
                    writeln!(out, "  {}", api::protocols::moped_traffic(&r))?;
                }
            }
            Ok(r) => {
                failed += 1;
                out.flush()?;
                let _ = writeln!(
                    io::stderr(),
                    "error: seed {seed}: {} mismatches, {} watchdog trips\n  replay: {}",
                    r.mismatches,
                    r.watchdog_trips,
                    tc.replay_command()
                );
            }
            Err(e) => {
                failed += 1;
                out.flush()?;
                let _ = writeln!(io::stderr(), "error: {e}");
            }
        }
    }
    if a.seeds > 1 {
        writeln!(out, "{} of {} seeds passed", a.seeds - failed, a.seeds)?;
    }
    if failed > 0 {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

/// `moped check`: the exhaustive checker on each requested configuration (c1-c3 by
/// default, and m1-m3 for a MOPED design), then the table cells no configuration reached.
pub(super) fn cmd_check(configs: &[CheckConfig], design: Design) -> CmdResult {
    let names: Vec<&str> = if configs.is_empty() {
        api::protocols::default_check_configs(design)
    } else {
        configs.iter().map(|c| c.name()).collect()
    };
    let mut out = io::stdout().lock();
    let mut reports = Vec::new();
    let mut failed = false;
    for (name, r) in names.iter().zip(api::protocols::check(design, &names)) {
        match r {
            Ok(r) => {
                writeln!(out, "{r}")?;
                reports.push(r);
            }
            Err(e) => {
                failed = true;
                out.flush()?;
                let _ = writeln!(io::stderr(), "error: {name}: {e}");
            }
        }
    }
    if !reports.is_empty() {
        let cov = api::protocols::coverage(&reports);
        writeln!(
            out,
            "coverage: {}/{} transition cells reached ({:.1} %)",
            cov.reached.len(),
            cov.possible.len(),
            cov.percent()
        )?;
        for c in &cov.unreached {
            writeln!(out, "  not reached: {c}")?;
        }
    }
    if failed {
        Err(Failure::Reported)
    } else {
        Ok(())
    }
}

pub(super) fn cmd_bench(scale: u32, repeat: u32, matching: bool) -> CmdResult {
    let results = if matching {
        vec![api::matching::bench(repeat)?]
    } else {
        api::bench::run(scale, repeat).map_err(Failure::User)?
    };
    let mut out = io::stdout().lock();
    for r in &results {
        writeln!(out, "{r}")?;
    }
    Ok(())
}

pub(super) fn cmd_bench_figure10(iterations: Option<f64>, jobs: Option<usize>) -> CmdResult {
    let opts = api::figure10::Figure10Options {
        out: PathBuf::new(),
        // As `moped figure10`'s default: run from the repository.
        workloads: PathBuf::from("workloads"),
        large: false,
        seeds: vec![1],
        iterations,
        config: crate::config::SystemConfig::default(),
        jobs: jobs.unwrap_or_else(api::figure10::default_jobs).max(1),
        sensitivity: false,
        reuse: None,
    };
    let runs = super::progress::Runs::new("bench", 2 * api::figure10::run_count(&opts)?);
    let [on, off] = api::figure10::bench_fast_forward(&opts, &runs.callback())?;
    drop(runs);
    let mut out = io::stdout().lock();
    for (name, t) in [("fast-forward on", &on), ("fast-forward off", &off)] {
        writeln!(
            out,
            "{name:<17} {:>3} runs  {:>8.1} s wall  {:>14} events  {:>6.2} M events/s",
            t.runs,
            t.wall_seconds,
            t.events,
            t.events_per_second() / 1e6
        )?;
    }
    writeln!(
        out,
        "ratio (off / on)  wall time {:.2}x  events {:.2}x  events per second {:.2}x",
        off.wall_seconds / on.wall_seconds.max(1e-9),
        off.events as f64 / (on.events as f64).max(1.0),
        off.events_per_second() / on.events_per_second().max(1e-9)
    )?;
    Ok(())
}

pub(super) fn cmd_bench_scaling(out: Option<&Path>) -> CmdResult {
    let mut stdout = io::stdout().lock();
    let mut failed = Ok(());
    let points = api::bench::scaling_default(|p| {
        if failed.is_ok() {
            failed = writeln!(stdout, "{:>5} cores  {}", p.cores, p.result)
                .and_then(|()| stdout.flush());
        }
    })
    .map_err(Failure::User)?;
    failed?;
    if let Some(path) = out {
        let csv = api::bench::scaling_csv(&points);
        std::fs::write(path, csv).map_err(|e| Failure::User(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}
