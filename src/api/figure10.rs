//! The Figure-10 experiment of the MOPED paper, the one pipeline behind `moped figure10`
//! and `moped.experiments.figure10`: plan the runs (every spec under every design and
//! seed), run them, then analyse and write the results. Python may run the planned tasks on
//! an executor of its own and hand the outcomes to [`finish`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::analysis::{self, Claim, Reduction, RunRecord};
use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;

use super::experiments::{run_all, Outcome, Progress, Task, Throughput};
use super::output::{OutDir, RunInfo};
use super::sensitivity::{applicable, run_alternatives, SensitivityRuns};
use crate::analysis::sensitivity::{self as sens, SensitivityRow};

/// The 16 kB IMB and the NPB specs of Figure 10, in the paper's order.
pub const FIGURE10: [&str; 11] = [
    "imb/pingpong-16k.toml",
    "imb/pingping-16k.toml",
    "imb/bcast-16k.toml",
    "imb/reduce-16k.toml",
    "imb/gather-16k.toml",
    "imb/alltoall-16k.toml",
    "npb/sp-S.toml",
    "npb/cg-S.toml",
    "npb/mg-S.toml",
    "npb/ft-S.toml",
    "npb/bt-S.toml",
];

/// The 1 MB runs (`--large`).
pub const FIGURE10_LARGE: [&str; 3] = [
    "imb/pingpong-1m.toml",
    "imb/pingping-1m.toml",
    "imb/bcast-1m.toml",
];

/// What one Figure-10 experiment runs.
#[derive(Clone, Debug)]
pub struct Figure10Options {
    /// Folder for the results (created if missing).
    pub out: PathBuf,
    /// The folder holding the workload specs.
    pub workloads: PathBuf,
    /// Also the 1 MB PingPong, PingPing and Bcast.
    pub large: bool,
    pub seeds: Vec<u64>,
    /// Scale every workload's iteration count (0 < F <= 1).
    pub iterations: Option<f64>,
    pub config: SystemConfig,
    /// Host threads running simulations.
    pub jobs: usize,
    /// Also rerun every task under each alternative modelling choice
    /// ([`super::sensitivity`]) and write sensitivity.csv.
    pub sensitivity: bool,
    /// An earlier Figure-10 folder whose runs with unchanged keys are taken instead of
    /// simulated again ([`super::store`]): the folder being replaced, when it holds
    /// Figure 10's store.
    pub reuse: Option<PathBuf>,
}

/// The experiment's name in its store's marker.
pub const STORE_NAME: &str = "figure10";

/// How a new Figure 10 claims `out`: whether it may replace what `out` holds (asked to,
/// or `out` holds Figure 10's own store), and the earlier results it takes runs from
/// (that store, unless `fresh`).
pub fn claim_terms(out: &Path, force: bool, fresh: bool) -> (bool, Option<PathBuf>) {
    super::store::claim_terms(out, STORE_NAME, force, fresh)
}

/// What the experiment found, for its caller to print.
#[derive(Debug)]
pub struct Figure10 {
    pub tasks: Vec<Task>,
    pub outcomes: Vec<Outcome>,
    pub records: Vec<RunRecord>,
    pub reductions: Vec<Reduction>,
    pub claims: Vec<Claim>,
    pub messages_verified: u64,
    pub throughput: Option<Throughput>,
    /// With `sensitivity`: every bar under the default and each alternative.
    pub sensitivity: Vec<SensitivityRow>,
}

/// Host threads for the run pool when the caller names none: every host core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A spec in `folder` named `name`, matched exactly or, failing that, ignoring case.
fn find_spec(workloads: &Path, rel: &str) -> Option<PathBuf> {
    let exact = workloads.join(rel);
    if exact.is_file() {
        return Some(exact);
    }
    let folder = exact.parent()?;
    let name = exact.file_name()?.to_str()?.to_lowercase();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    entries.into_iter().find(|p| {
        p.is_file()
            && p.file_name()
                .and_then(|n| n.to_str())
                .map(str::to_lowercase)
                == Some(name.clone())
    })
}

/// The GOAL schedules (`*.goal`) and recorded runs (folders `moped trace` wrote, holding
/// `rank-0.trace`) directly in `folder`, by name; none when it holds none or cannot be
/// read.
fn goal_schedules(folder: &Path) -> Vec<PathBuf> {
    let user_workload = |p: &PathBuf| {
        (p.is_file() && p.extension().is_some_and(|e| e == "goal"))
            || (p.is_dir() && p.join("rank-0.trace").is_file())
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(user_workload)
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The tasks of Figure 10: every spec times every seed times every design, in the paper's
/// order. A `workloads` folder without the paper's specs but with GOAL schedules (`*.goal`,
/// directly in it) or recorded runs (`moped trace`'s folders) makes those the benchmarks, in file-name order: Figure 10 for a user's
/// own applications (`large` then adds nothing). An error lists every spec that is
/// missing.
pub fn plan(workloads: &Path, large: bool, seeds: &[u64]) -> Result<Vec<Task>, MopedError> {
    if seeds.is_empty() {
        return Err(MopedError::Io("figure10 needs at least one seed".into()));
    }
    let goals = goal_schedules(workloads);
    if !goals.is_empty() && find_spec(workloads, FIGURE10[0]).is_none() {
        return Ok(tasks_of(&goals, seeds));
    }
    let specs = FIGURE10
        .iter()
        .chain(if large { &FIGURE10_LARGE[..] } else { &[] });
    let mut tasks = Vec::new();
    let mut missing = Vec::new();
    for rel in specs {
        let Some(spec) = find_spec(workloads, rel) else {
            missing.push(workloads.join(rel).display().to_string());
            continue;
        };
        tasks.extend(tasks_of(&[spec], seeds));
    }
    if !missing.is_empty() {
        return Err(MopedError::Io(format!(
            "workload specs not found (is --workloads the repository's workloads/ folder, or \
             a folder of GOAL schedules?): {}",
            missing.join(", ")
        )));
    }
    Ok(tasks)
}

/// Every workload of `specs` under every seed and design.
fn tasks_of(specs: &[PathBuf], seeds: &[u64]) -> Vec<Task> {
    let mut tasks = Vec::new();
    for spec in specs {
        for &seed in seeds {
            for design in Design::ALL {
                let spec = spec.clone();
                tasks.push(Task { spec, design, seed });
            }
        }
    }
    tasks
}

/// Plans and runs Figure 10 on `opts.jobs` host threads, each run's files in
/// `runs/<task dir name>/` of `out`, then writes the tables and report (see [`finish`]);
/// `out` takes its place whole, or is marked FAILED (see [`super::output`]).
pub fn figure10(
    opts: &Figure10Options,
    out: OutDir,
    progress: Progress,
) -> Result<Figure10, MopedError> {
    let mut out = out;
    let outcome = out
        .hold_store(STORE_NAME, opts.reuse.clone())
        .and_then(|()| run_and_analyse(opts, &out, progress));
    out.finish(outcome, |_, _| Ok(run_info(opts)))
}

/// What an experiment ran, for its folder's `run.json`.
pub fn run_info(opts: &Figure10Options) -> RunInfo {
    RunInfo {
        config: opts.config.clone(),
        seed: opts.seeds.clone().into(),
        workload: opts.workloads.display().to_string(),
        design: Design::ALL.map(|d| d.to_string()).join(", "),
    }
}

fn run_and_analyse(
    opts: &Figure10Options,
    out: &OutDir,
    progress: Progress,
) -> Result<Figure10, MopedError> {
    check_scale(opts.iterations)?;
    let tasks = plan(&opts.workloads, opts.large, &opts.seeds)?;
    let started = Instant::now();
    let outcomes = run_all(
        &opts.config,
        &tasks,
        opts.jobs,
        opts.iterations,
        Some(out),
        progress,
    )?;
    let t = Throughput::of(&outcomes, started);
    let alternatives = if opts.sensitivity {
        let info = run_info(opts);
        run_alternatives(&info, &tasks, opts.jobs, opts.iterations, out, progress)?
    } else {
        SensitivityRuns::default()
    };
    let host = Some((t, opts.jobs));
    let mut f = finish(out.path(), &tasks, &outcomes, opts, host, &alternatives)?;
    f.throughput = Some(t);
    Ok(f)
}

/// Figure 10's runs twice in one invocation, with fast-forward of polling on and then off
/// (`moped bench --figure10`): the host time and events of each. The two give the same
/// results by construction; each run's Figure-10 metrics are compared all the same, and a
/// difference is an error naming the run.
pub fn bench_fast_forward(
    opts: &Figure10Options,
    progress: Progress,
) -> Result<[Throughput; 2], MopedError> {
    check_scale(opts.iterations)?;
    let tasks = plan(&opts.workloads, opts.large, &opts.seeds)?;
    let run = |fast_forward| {
        let mut cfg = opts.config.clone();
        cfg.sim.fast_forward = fast_forward;
        let started = Instant::now();
        let outcomes = run_all(&cfg, &tasks, opts.jobs, opts.iterations, None, progress)?;
        Ok::<_, MopedError>((Throughput::of(&outcomes, started), outcomes))
    };
    let (on, with) = run(true)?;
    let (off, without) = run(false)?;
    for (a, b) in with.iter().zip(&without) {
        if a.record != b.record {
            return Err(MopedError::Io(format!(
                "fast-forward changed {} under {} (seed {}): {:?} against {:?}",
                a.record.benchmark,
                a.record.design,
                a.record.seed,
                a.record.metrics,
                b.record.metrics
            )));
        }
    }
    Ok([on, off])
}

/// Runs the experiment makes: Figure 10's, and with `sensitivity` as many again per
/// alternative that changes the configuration.
pub fn run_count(opts: &Figure10Options) -> Result<usize, MopedError> {
    let n = plan(&opts.workloads, opts.large, &opts.seeds)?.len();
    let alternatives = if opts.sensitivity {
        applicable(&opts.config)?.len()
    } else {
        0
    };
    Ok(n * (1 + alternatives))
}

/// An iteration scale outside (0, 1].
pub fn check_scale(f: Option<f64>) -> Result<(), MopedError> {
    match f {
        Some(f) if !(f > 0.0 && f <= 1.0) => Err(MopedError::Io(format!(
            "--iterations {f}: expected a factor in (0, 1]"
        ))),
        _ => Ok(()),
    }
}

/// Analyses finished runs and writes into `out`: reductions.csv and .json, report.md,
/// records.json, config.toml, with `host` (the pool's throughput and threads)
/// timing.json, and with `opts.sensitivity` sensitivity.csv from the default's reductions
/// and the `alternatives`' (a section of report.md too).
pub fn finish(
    out: &Path,
    tasks: &[Task],
    outcomes: &[Outcome],
    opts: &Figure10Options,
    host: Option<(Throughput, usize)>,
    alternatives: &SensitivityRuns,
) -> Result<Figure10, MopedError> {
    let records: Vec<RunRecord> = outcomes.iter().map(|o| o.record.clone()).collect();
    let analysis_err = |e: analysis::AnalysisError| MopedError::Io(e.to_string());
    let reductions = analysis::reductions(&records).map_err(analysis_err)?;
    let mut claims = analysis::check_claims(&reductions);
    analysis::explain(&mut claims, &records);
    analysis::causes::note_scaling(&mut claims, opts.iterations);
    let verified: u64 = outcomes.iter().map(|o| o.messages_verified).sum();
    let notes = notes(outcomes, opts, verified, host);
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(io)?;
    analysis::write_tables(out, &reductions).map_err(analysis_err)?;
    let breakdown = analysis::breakdown::breakdown_csv(&analysis::breakdown::rows(&records));
    std::fs::write(out.join("breakdown.csv"), breakdown).map_err(io)?;
    let mut report = analysis::report_markdown(&records, &reductions, &claims, &notes);
    report.push_str(&analysis::share::share_markdown(&analysis::share::rows(
        &records,
    )));
    let mut sensitivity = Vec::new();
    if opts.sensitivity {
        sensitivity = sens::rows(sens::DEFAULT, &reductions);
        sensitivity.extend(alternatives.rows.iter().cloned());
        let csv = sens::sensitivity_csv(&sensitivity);
        std::fs::write(out.join("sensitivity.csv"), csv).map_err(io)?;
        let note = format!(
            "The alternatives' {} runs verified {} messages byte for byte at their receivers.",
            alternatives.runs, alternatives.messages_verified
        );
        let md = sens::sensitivity_markdown(&sensitivity, &alternatives.alternatives, &note);
        report.push_str(&md);
    }
    std::fs::write(out.join("report.md"), report).map_err(io)?;
    let all = serde_json::to_string_pretty(outcomes).expect("outcomes serialize");
    std::fs::write(out.join("records.json"), all).map_err(io)?;
    std::fs::write(out.join("config.toml"), opts.config.to_toml_string()).map_err(io)?;
    let rows = super::runs_table::rows_of(&opts.config, opts.iterations, tasks, outcomes)?;
    super::runs_table::write(out, &rows)?;
    if let Some((t, jobs)) = host {
        std::fs::write(out.join("timing.json"), timing_json(&t, jobs, verified)).map_err(io)?;
    }
    Ok(Figure10 {
        tasks: tasks.to_vec(),
        outcomes: outcomes.to_vec(),
        records,
        reductions,
        claims,
        messages_verified: verified,
        throughput: None,
        sensitivity,
    })
}

fn timing_json(t: &Throughput, jobs: usize, verified: u64) -> String {
    serde_json::json!({
        "runs": t.runs,
        "host_threads": jobs,
        "wall_seconds": t.wall_seconds,
        "simulation_seconds": t.sim_seconds,
        "events": t.events,
        "events_per_second": t.events_per_second(),
        "messages_verified": verified,
    })
    .to_string()
}

/// The report's notes: seeds, configuration, scaling, each distinct note of the runs (with
/// the benchmarks it concerns unless it concerns them all), what was verified, host speed.
fn notes(
    outcomes: &[Outcome],
    opts: &Figure10Options,
    verified: u64,
    host: Option<(Throughput, usize)>,
) -> Vec<String> {
    let seeds: Vec<String> = opts.seeds.iter().map(u64::to_string).collect();
    let mut notes = vec![format!("Seeds: {}.", seeds.join(", "))];
    notes.push(if opts.config == SystemConfig::default() {
        "System configuration: the paper's Table 1 (config.toml).".into()
    } else {
        "System configuration: changed from the paper's Table 1 (see config.toml).".into()
    });
    notes.push(if opts.config.workload.warmup {
        "Each IMB and NPB run warmed up first (IMB's warm-up call, NPB's untimed \
         start-up); the statistics are those of its timed region (sim.timed_from). A GOAL \
         schedule has no warm-up: every cycle of its run counts."
            .into()
    } else {
        "No warm-up (workload.warmup = false): cold caches, every cycle of each run counted.".into()
    });
    if let Some(f) = opts.iterations {
        notes.push(format!(
            "Iteration counts scaled by {f} relative to the workload specs."
        ));
    }
    notes.extend(run_notes(outcomes));
    notes.push(format!(
        "{} runs; {verified} messages verified byte for byte at their receivers.",
        outcomes.len()
    ));
    let reused = outcomes.iter().filter(|o| o.reused).count();
    if reused > 0 {
        notes.push(format!(
            "{reused} of the runs were taken from this folder's earlier results, their keys \
             (workload bytes, configuration, design, seed, iteration scale, moped's version \
             and sources) unchanged."
        ));
    }
    if let Some((t, jobs)) = host.filter(|(t, _)| t.runs > 0) {
        notes.push(format!(
            "{} simulated events in {:.1} s of wall time on {jobs} host threads ({:.2} M events/s).",
            t.events,
            t.wall_seconds,
            t.events_per_second() / 1e6
        ));
    }
    notes
}

/// Each distinct note of the runs, once, naming its benchmarks unless every run has it.
fn run_notes(outcomes: &[Outcome]) -> Vec<String> {
    let mut by_note: Vec<(&str, Vec<&str>, usize)> = Vec::new();
    for o in outcomes {
        for n in &o.notes {
            let i = match by_note.iter().position(|(t, _, _)| t == n) {
                Some(i) => i,
                None => {
                    by_note.push((n, Vec::new(), 0));
                    by_note.len() - 1
                }
            };
            let entry = &mut by_note[i];
            entry.2 += 1;
            if !entry.1.contains(&o.record.benchmark.as_str()) {
                entry.1.push(&o.record.benchmark);
            }
        }
    }
    by_note
        .into_iter()
        .map(|(n, benches, count)| {
            if count == outcomes.len() {
                n.to_string()
            } else {
                format!("{}: {n}", benches.join(", "))
            }
        })
        .collect()
}

/// The progress line of a finished run: `[done/n]`, what ran and what it gave, and the
/// host time left, extrapolated from the runs done since `started`.
pub fn progress_line(
    done: usize,
    n: usize,
    r: &Result<Outcome, MopedError>,
    started: Instant,
) -> String {
    let line = run_line(done, n, r);
    if done == 0 || done >= n || r.is_err() {
        return line;
    }
    let left = started.elapsed().as_secs_f64() * (n - done) as f64 / done as f64;
    format!("{line}  (about {} left)", duration_text(left))
}

/// `42 s`, `3 min 20 s`, `1 h 05 min`.
fn duration_text(seconds: f64) -> String {
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
    }
}

fn run_line(done: usize, n: usize, r: &Result<Outcome, MopedError>) -> String {
    match r {
        Ok(o) => format!(
            "[{done:>3}/{n}] {:<6} {:<3} {:<9} {:>12} cycles  {:>6} messages verified  {}",
            o.record.group,
            o.record.benchmark,
            o.record.design,
            o.record.metrics["cycles"],
            o.messages_verified,
            if o.reused {
                "reused".to_string()
            } else {
                format!("{:>6.2} s", o.host_seconds)
            }
        ),
        Err(e) => format!("[{done:>3}/{n}] failed: {e}"),
    }
}

/// Figure 10's headline rows: per (group, benchmark) the cycle reduction of each MOPED
/// design, in the order the runs were planned.
pub fn cycle_rows(f: &Figure10) -> Vec<(String, String, [Option<f64>; 3])> {
    let mut rows: Vec<(String, String, [Option<f64>; 3])> = Vec::new();
    for r in &f.records {
        if rows.iter().any(|x| x.0 == r.group && x.1 == r.benchmark) {
            continue;
        }
        let reduction = |d: Design| {
            f.reductions
                .iter()
                .find(|x| {
                    x.group == r.group
                        && x.benchmark == r.benchmark
                        && x.design == d.name()
                        && x.metric == "cycles"
                })
                .and_then(|x| x.reduction)
        };
        rows.push((
            r.group.clone(),
            r.benchmark.clone(),
            Design::MOPED.map(reduction),
        ));
    }
    rows
}

/// Where the Figure-10 specs are and how far to scale their iterations.
#[derive(Clone, Debug)]
pub struct Figure10Part {
    /// The repository's `workloads/` folder.
    pub workloads: PathBuf,
    /// Scale every workload's iteration count (0 < F <= 1); `None`: the specs' own.
    pub iterations: Option<f64>,
}

impl Figure10Part {
    /// The part over the specs in `workloads`; `quick` runs a tenth of their iterations.
    pub fn new(workloads: PathBuf, quick: bool) -> Figure10Part {
        Figure10Part {
            workloads,
            iterations: quick.then_some(QUICK_ITERATIONS),
        }
    }
}

/// The iteration scale of the quick experiments' Figure-10 runs (`moped matching --quick`,
/// `moped engines --quick`).
pub const QUICK_ITERATIONS: f64 = 0.1;

/// Figure 10's spec files, in the paper's order; an error names every missing one.
pub fn part_specs(part: &Figure10Part) -> Result<Vec<PathBuf>, MopedError> {
    let tasks = plan(&part.workloads, false, &[1])?;
    let mut specs: Vec<PathBuf> = Vec::new();
    for t in tasks {
        if !specs.contains(&t.spec) {
            specs.push(t.spec);
        }
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_reads_in_seconds_minutes_or_hours() {
        assert_eq!(duration_text(41.6), "42 s");
        assert_eq!(duration_text(200.0), "3 min 20 s");
        assert_eq!(duration_text(3900.0), "1 h 05 min");
        let failed = Err(MopedError::Io("x".into()));
        let line = progress_line(1, 4, &failed, Instant::now());
        assert!(!line.contains("left"), "{line}");
    }
}
