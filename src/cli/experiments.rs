//! The commands that run simulations and write result folders: `run`, `mpi`, `figure10`,
//! `matching` and `engines`.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use crate::api::{self, Design, MopedError};
use crate::stats::{StatValue, StatsRegistry};

use super::args::*;
use super::{usage, CmdResult, Failure};

/// Claims `--out` before a run (see `api::output`): a folder holding results without
/// `--force` is a usage error.
pub(super) fn claim_out(
    dir: &Path,
    force: bool,
    command: &[String],
    (config, set): (Option<&Path>, &[(String, String)]),
) -> Result<api::output::OutDir, Failure> {
    let invocation = api::output::Invocation {
        command: command.to_vec(),
        config_file: config.map(|p| p.display().to_string()),
        overrides: set.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    };
    api::output::OutDir::claim(dir, force, invocation).map_err(usage)
}

/// Says on stderr how many of an experiment's `runs` were taken from the earlier
/// results in `out`, when any were.
fn report_reused(experiment: &str, reused: usize, runs: usize, out: &Path) {
    if reused > 0 {
        eprintln!(
            "{experiment}: reused {reused} of {runs} runs from the earlier results in {} \
             (--fresh runs them all)",
            out.display()
        );
    }
}

pub(super) fn cmd_mpi(mut a: MpiArgs, command: &[String]) -> CmdResult {
    api::figure10::check_scale(a.iterations).map_err(usage)?;
    no_warmup(&mut a.set, a.no_warmup);
    touch_buffers(&mut a.set, a.touch_buffers);
    let cfg = api::config::config_with(a.config.as_deref(), &a.set)?;
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let ranks = a.ranks.map(|p| p as usize);
    let run = || {
        let scale = (a.iterations, ranks);
        api::mpi::mpi(&cfg, &a.workload, a.protocol, a.seed, scale, Some(out))
    };
    let r = super::progress::heartbeat(a.heartbeat.on(), ("mpi", "messages verified"), run)?;
    let (w, run) = (&r.workload, &r.run);
    let mut out = io::stdout().lock();
    print_miss_summary(&mut out, &run.stats, w.ranks.len(), false)?;
    for note in &w.notes {
        writeln!(out, "note: {note}")?;
    }
    writeln!(
        out,
        "{} under {}, seed {}: {} cycles; {} messages ({} bytes) verified byte for byte; \
         {} events in {:.2} s; results in {}",
        w.name,
        a.protocol,
        a.seed,
        r.metrics["cycles"],
        run.messages_verified,
        run.bytes_verified,
        run.events,
        run.host_seconds,
        a.out.display()
    )?;
    Ok(())
}

pub(super) fn cmd_matching(a: MatchingArgs, command: &[String]) -> CmdResult {
    let engines = if a.engines.is_empty() {
        api::matching::Matcher::all()
    } else {
        let parse = |e: &String| e.parse::<api::matching::Matcher>();
        a.engines
            .iter()
            .map(parse)
            .collect::<Result<_, _>>()
            .map_err(|e| usage(MopedError::Io(format!("--engines: {e}"))))?
    };
    let (force, reuse) =
        api::store::claim_terms(&a.out, api::matching::STORE_NAME, a.force, a.fresh);
    let opts = api::matching::MatchingOptions {
        out: a.out.clone(),
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        engines,
        quick: a.quick,
        figure10: (!a.no_figure10)
            .then(|| api::matching::figure10::Figure10Part::new(a.workloads, a.quick)),
        reuse,
    };
    let n = opts.run_count();
    eprintln!(
        "matching: {n} runs on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let runs = super::progress::Runs::new("matching", n);
    let progress = runs.callback();
    let out = claim_out(&a.out, force, command, (a.config.as_deref(), &a.set))?;
    let m = api::matching::matching(&opts, out, &progress)?;
    report_reused("matching", m.reused, m.runs, &a.out);
    let mut files = vec!["matching.csv"];
    if !m.figure10.is_empty() {
        files.push("figure10_engines.csv");
    }
    if !m.stream64.is_empty() {
        files.push("stream64.csv");
    }
    if !m.lhs.is_empty() {
        files.push("lhs.csv");
    }
    println!(
        "{} runs, {} messages verified, host time {:.1} s; {} and report.md in {}",
        m.runs,
        m.messages_verified,
        m.host_seconds,
        files.join(", "),
        a.out.display()
    );
    Ok(())
}

pub(super) fn cmd_lhs(a: LhsArgs, command: &[String]) -> CmdResult {
    let (force, reuse) = api::store::claim_terms(&a.out, api::lhs::STORE_NAME, a.force, a.fresh);
    let opts = api::lhs::LhsOptions {
        out: a.out.clone(),
        overrides: a.set.clone(),
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        quick: a.quick,
        reuse,
    };
    let n = opts.run_count();
    eprintln!(
        "lhs: {n} runs on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let runs = super::progress::Runs::new("lhs", n);
    let progress = runs.callback();
    let out = claim_out(&a.out, force, command, (None, &a.set))?;
    let l = api::lhs::lhs(&opts, out, &progress)?;
    report_reused("lhs", l.reused, l.runs, &a.out);
    let speedup = api::lhs::report::headline(&l.rows).and_then(|h| h.ratio());
    println!(
        "{} runs, {} messages verified, host time {:.1} s; DIMMnet-2 with LHS searches {} \
         times faster than without (hardware prefetcher on both; the paper: {}); lhs.csv \
         and report.md in {}",
        l.runs,
        l.messages_verified,
        l.host_seconds,
        speedup.map_or("-".into(), |r| format!("{r:.2}")),
        api::lhs::report::PAPER_SPEEDUP,
        a.out.display()
    );
    Ok(())
}

pub(super) fn cmd_engines(a: EnginesArgs, command: &[String]) -> CmdResult {
    let costs = a
        .costs
        .parse::<api::engines::Costs>()
        .map_err(|e| usage(MopedError::Io(format!("--costs: {e}"))))?;
    let schemes = if a.schemes.is_empty() {
        api::engines::Scheme::ALL.to_vec()
    } else {
        a.schemes
            .iter()
            .map(|s| s.parse::<api::engines::Scheme>())
            .collect::<Result<_, _>>()
            .map_err(|e| usage(MopedError::Io(format!("--schemes: {e}"))))?
    };
    let hosts = a
        .only
        .as_deref()
        .map_or(Ok(api::engines::Hosts::Both), str::parse)
        .map_err(|e| usage(MopedError::Io(format!("--only: {e}"))))?;
    if !a.protocol.has_moped() {
        let e = format!(
            "--protocol {}: the engines are MOPED's; pick basemoped, optcopy or optcache",
            a.protocol
        );
        return Err(usage(MopedError::Io(e)));
    }
    let (force, reuse) =
        api::store::claim_terms(&a.out, api::engines::STORE_NAME, a.force, a.fresh);
    let opts = api::engines::EnginesOptions {
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        costs,
        design: a.protocol,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        quick: a.quick,
        schemes,
        hosts,
        figure10: (!a.no_figure10).then(|| api::figure10::Figure10Part::new(a.workloads, a.quick)),
        reuse,
    };
    let n = opts.run_count();
    eprintln!(
        "engines: {n} runs on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let runs = super::progress::Runs::new("engines", n);
    let progress = runs.callback();
    let out = claim_out(&a.out, force, command, (a.config.as_deref(), &a.set))?;
    let e = api::engines::engines(&opts, out, &progress)?;
    let testbed = e.tigon.as_ref().map_or(0, |t| t.runs());
    report_reused("engines", e.reused, e.runs - testbed, &a.out);
    if e.reused > 0 && testbed > 0 {
        eprintln!("engines: the testbed's {testbed} runs, which take seconds, ran again");
    }
    let mut tables = Vec::new();
    if e.tigon.is_some() {
        tables.extend(["tigon.csv", "tigon_sensitivity.csv"]);
    }
    if hosts.cmp() {
        tables.push("engines.csv");
    }
    if !e.figure10.is_empty() {
        tables.push("figure10_schemes.csv");
    }
    println!(
        "{} runs, {} messages verified, host time {:.1} s; {} and report.md in {}",
        e.runs,
        e.messages_verified,
        e.host_seconds,
        tables.join(", "),
        a.out.display()
    );
    Ok(())
}

pub(super) fn cmd_figure10(mut a: Figure10Args, command: &[String]) -> CmdResult {
    api::figure10::check_scale(a.iterations).map_err(usage)?;
    no_warmup(&mut a.set, a.no_warmup);
    touch_buffers(&mut a.set, a.touch_buffers);
    let (force, reuse) = api::figure10::claim_terms(&a.out, a.force, a.fresh);
    let opts = api::figure10::Figure10Options {
        out: a.out.clone(),
        workloads: a.workloads.clone(),
        large: a.large,
        seeds: (1..=a.seeds).collect(),
        iterations: a.iterations,
        config: api::config::config_with(a.config.as_deref(), &a.set)?,
        jobs: a
            .jobs
            .map_or_else(api::figure10::default_jobs, |j| j as usize),
        sensitivity: a.sensitivity,
        reuse,
    };
    let n = api::figure10::run_count(&opts)?;
    let alternatives = if opts.sensitivity {
        let names: Vec<&str> = api::sensitivity::applicable(&opts.config)?
            .iter()
            .map(|(alt, _)| alt.name)
            .collect();
        format!(" (Figure 10, then again under {})", names.join(", "))
    } else {
        String::new()
    };
    eprintln!(
        "figure10: {n} runs{alternatives} on {} host threads; results in {}",
        opts.jobs,
        a.out.display()
    );
    let runs = super::progress::Runs::new("figure10", n);
    let progress = runs.callback();
    let out = claim_out(&a.out, force, command, (a.config.as_deref(), &a.set))?;
    let f = api::figure10::figure10(&opts, out, &progress)?;
    let reused = f.outcomes.iter().filter(|o| o.reused).count();
    report_reused("figure10", reused, f.outcomes.len(), &a.out);
    print_figure10(&f, &opts)?;
    Ok(())
}

pub(super) fn print_figure10(
    f: &api::figure10::Figure10,
    opts: &api::figure10::Figure10Options,
) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "reductions in execution cycles (1 - design/baseline):")?;
    let [d0, d1, d2] = Design::MOPED.map(Design::name);
    writeln!(
        out,
        "{:<7} {:<4} {d0:>10} {d1:>10} {d2:>10}",
        "group", "bench"
    )?;
    for (group, bench, values) in api::figure10::cycle_rows(f) {
        let mut line = format!("{group:<7} {bench:<4}");
        for v in values {
            line.push_str(&match v {
                Some(v) => format!(" {:>9.1}%", 100.0 * v),
                None => format!(" {:>10}", "n/a"),
            });
        }
        writeln!(out, "{line}")?;
    }
    for c in &f.claims {
        writeln!(out, "claim {}: {} ({})", c.id, c.verdict.label(), c.title)?;
    }
    let t = f.throughput.unwrap_or_default();
    let reused = f.outcomes.len() - t.runs;
    let reused = if reused > 0 {
        format!(" ({reused} more reused)")
    } else {
        String::new()
    };
    writeln!(
        out,
        "{} runs{reused} in {:.1} s wall time ({:.2} M simulated events/s); {} messages \
         verified; per-run results in {}/ (e.g. {}), tables and report.md in {}",
        t.runs,
        t.wall_seconds,
        t.events_per_second() / 1e6,
        f.messages_verified,
        opts.out.join("runs").display(),
        f.tasks[0].dir_name(),
        opts.out.display()
    )
}

/// `--touch-buffers` as the override it stands for, so run.json records it as one.
pub(super) fn touch_buffers(set: &mut Vec<(String, String)>, stride: Option<u64>) {
    if let Some(s) = stride {
        set.push(("workload.touch_buffers".into(), s.to_string()));
    }
}

/// `--no-warmup` as the override it stands for, so run.json records it as one.
pub(super) fn no_warmup(set: &mut Vec<(String, String)>, asked: bool) {
    if asked {
        set.push(("workload.warmup".into(), "false".into()));
    }
}

pub(super) fn cmd_run(a: RunArgs, command: &[String]) -> CmdResult {
    let cfg = api::config::config_with(a.config.as_deref(), &a.set)?;
    let out = claim_out(&a.out, a.force, command, (a.config.as_deref(), &a.set))?;
    let run = || api::run::run_file(&cfg, &a.program, a.protocol, a.seed, Some(out));
    let result = super::progress::heartbeat(a.heartbeat.on(), ("run", "messages verified"), run)?;
    let mut out = io::stdout().lock();
    print_miss_summary(&mut out, &result.stats, cfg.system.cores, !a.totals_only)?;
    writeln!(
        out,
        "protocol {}, seed {}: {} cycles simulated in {:.2} s; results in {}",
        result.design,
        a.seed,
        result.cycles,
        result.host_seconds,
        a.out.display()
    )?;
    Ok(())
}

/// Prints the paper's headline counters per core and in total, from a run's stats.
pub fn print_miss_summary(
    out: &mut dyn Write,
    stats: &StatsRegistry,
    cores: usize,
    per_core: bool,
) -> io::Result<()> {
    let values: HashMap<&str, f64> = stats
        .stats()
        .iter()
        .map(|s| {
            let v = match s.value {
                StatValue::Int(i) => i as f64,
                StatValue::Float(f) => f,
            };
            (s.name.as_str(), v)
        })
        .collect();
    const COLUMNS: [(&str, &str); 6] = [
        ("l1d.hits", "L1 hits"),
        ("l1d.misses", "L1 misses"),
        ("l2.hits", "L2 hits"),
        ("l2.misses", "L2 misses"),
        ("l2.misses_other_cache", "other cache"),
        ("l2.misses_memory", "memory"),
    ];
    write!(out, "{:<8}", "")?;
    for (_, title) in COLUMNS {
        write!(out, " {title:>12}")?;
    }
    writeln!(out)?;
    let row = |out: &mut dyn Write, label: &str, prefix: &str| -> io::Result<()> {
        write!(out, "{label:<8}")?;
        for (suffix, _) in COLUMNS {
            match values.get(format!("{prefix}.{suffix}").as_str()) {
                Some(v) if v.fract() == 0.0 => write!(out, " {:>12}", *v as u64)?,
                Some(v) => write!(out, " {v:>12.2}")?,
                None => write!(out, " {:>12}", "-")?,
            }
        }
        writeln!(out)
    };
    if per_core {
        for c in 0..cores {
            row(out, &format!("cpu{c}"), &format!("system.cpu{c}"))?;
        }
    }
    row(out, "total", "system.total")?;
    writeln!(
        out,
        "(L2 misses are served by another cache or by memory, or need only write permission)"
    )?;
    if let Some(c) = values.get("sim.cycles") {
        writeln!(out, "sim.cycles {}", *c as u64)?;
    }
    Ok(())
}
