//! Experiments over workload specs: one run per (workload, design, seed), in parallel
//! across host cores, each writing its statistics and a run record.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::analysis::RunRecord;
use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::engines::StepKind;
use crate::mpi::{run_workload, MpiParams, MpiRun};
use crate::sim::{interrupt, SimError};
use crate::workload::load_workload_touched;

use super::output::{self, OutDir, RunInfo};
use super::store;

/// One simulation to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub spec: PathBuf,
    pub design: Design,
    pub seed: u64,
}

/// A finished run: its record (what the analyzers read) and how the host did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    #[serde(flatten)]
    pub record: RunRecord,
    // Outcomes may come back from other runners (Python's executors): what a runner does
    // not report counts as none.
    #[serde(default)]
    pub events: u64,
    #[serde(default)]
    pub host_seconds: f64,
    #[serde(default)]
    pub messages_verified: u64,
    #[serde(default)]
    pub bytes_verified: u64,
    #[serde(default)]
    pub notes: Vec<String>,
    /// Taken from an earlier result folder's store instead of simulated again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
}

/// The metrics that are sums of statistics, the same for an MPI run and a program run (the
/// Python package's program runs read them from here): Figure 10's misses and messages,
/// and the LHS experiment's causes (demand hits). MOPED's own line requests count as L2
/// misses of the L2 that took them, by what served them, as in the paper's 1 MB discussion
/// (a fill is a "local" L2 miss).
pub const SUMMED_METRICS: &[(&str, &[&str])] = &[
    ("l1_misses", &["system.total.l1d.misses"]),
    ("l1_hits", &["system.total.l1d.hits"]),
    ("l2_hits", &["system.total.l2.hits"]),
    (
        "l2_misses_private",
        &[
            "system.total.l2.misses_other_cache",
            "system.total.l2.moped_misses_other_cache",
        ],
    ),
    (
        "l2_misses_global",
        &[
            "system.total.l2.misses_memory",
            "system.total.l2.moped_misses_memory",
        ],
    ),
    ("l2_misses_local", &["system.total.l2.moped_misses_no_data"]),
    ("coherence_messages", &["system.network.total_msgs"]),
];

/// The Figure-10 metrics of a run, from its statistics: [`SUMMED_METRICS`] and the
/// experiments' own.
pub fn metrics(run: &MpiRun) -> std::collections::BTreeMap<String, f64> {
    let g = |n: &str| run.stats.get(n).map_or(0.0, |s| s.value.as_f64());
    let summed = SUMMED_METRICS
        .iter()
        .map(|&(name, parts)| (name, parts.iter().map(|&p| g(p)).sum()));
    [
        ("cycles", run.cycles as f64),
        // The LHS experiment's other cause: the L1 prefetcher's requests.
        (
            "l1_prefetches_issued",
            g("system.total.l1d.prefetches_issued"),
        ),
        (
            "l1_prefetches_useful",
            g("system.total.l1d.prefetches_useful"),
        ),
        // The parts, for the report's measured causes.
        ("l2_misses_global_cores", g("system.total.l2.misses_memory")),
        (
            "l2_misses_private_cores",
            g("system.total.l2.misses_other_cache"),
        ),
        ("recv_latency_mean", latency_mean(run, "mpi.recv_latency")),
        (
            "moped_misses_memory",
            g("system.total.l2.moped_misses_memory"),
        ),
        (
            "moped_misses_other_cache",
            g("system.total.l2.moped_misses_other_cache"),
        ),
        (
            "moped_walk_misses_memory",
            g("system.total.l2.moped_walk_misses_memory"),
        ),
        (
            "memory_reads_shared",
            g("system.total.dir.memory_reads_shared"),
        ),
        (
            "memory_queue_cycles",
            g("system.total.dir.memory_queue_cycles"),
        ),
        // The matching experiment's: rank 0's matching MOPED's engine, the engines' total,
        // and the software path's list entries compared.
        ("receiver_match_cycles", g("system.moped0.match_cycles")),
        (
            "receiver_match_traversed",
            g("system.moped0.match_search_entries"),
        ),
        ("match_cycles", g("system.moped.match_cycles")),
        ("match_searches", g("system.moped.match_searches")),
        ("list_entries_searched", g("mpi.list_entries_searched")),
        ("backoff_refused", g("mpi.backoff_refused")),
        // How much of a run MOPED carried: its sends, and the backoffs that sent the rest
        // down the software path (a real trace's share, in the report).
        ("sends", g("mpi.sends")),
        ("moped_sends", g("mpi.moped_sends")),
        ("backoff_revoked", g("mpi.backoff_revoked")),
        ("backoffs_set", g("system.moped.backoffs_set")),
        // The LHS paper's setting: software prefetches, flushes, the NICs' work.
        ("sw_prefetches", g("system.total.l1d.sw_prefetches")),
        ("flushes", g("system.total.l1d.flushes")),
        ("nic_vl_commands", g("system.total.nic.vl_commands")),
        ("nic_window_loads", g("system.total.nic.window_loads")),
        ("nic_lh_loads", g("system.total.nic.lh_loads")),
    ]
    .into_iter()
    .chain(summed)
    .map(|(k, v)| (k.to_string(), v))
    .chain(breakdown_metrics(run))
    .chain(depth_metrics(run))
    .chain(engine_metrics(run))
    .collect()
}

/// The mean of a distribution of the run's, 0 without samples.
fn latency_mean(run: &MpiRun, name: &str) -> f64 {
    run.stats
        .distribution(name)
        .filter(|d| d.samples() > 0)
        .map_or(0.0, |d| d.mean())
}

/// Where the ranks' cycles went, summed over the ranks (`rank_cycles_<activity>`, from
/// `mpi.cycles.<activity>`): the parts of the measured causes and the breakdown figure.
fn breakdown_metrics(run: &MpiRun) -> Vec<(String, f64)> {
    let g = |n: String| run.stats.get(&n).map_or(0.0, |s| s.value.as_f64());
    crate::mpi::activity::Activity::ALL
        .iter()
        .flat_map(|a| {
            let n = a.name();
            [
                (format!("rank_cycles_{n}"), g(format!("mpi.cycles.{n}"))),
                (format!("l1_misses_in_{n}"), g(format!("mpi.l1_misses.{n}"))),
                (
                    format!("memory_misses_in_{n}"),
                    g(format!("mpi.memory_misses.{n}")),
                ),
            ]
        })
        .collect()
}

/// The device engines' totals over the MOPEDs (`engine{e}_*`), and the engine of one MOPED
/// that was busiest (`bound_*`): its MOPED and engine, busy cycles, and the step kind it
/// spent most of them in (an index into [`StepKind::ALL`]) and its cycles in each kind
/// (`bound_cycles_<step>`); `active_copies_mean` is the mean number of copies active at
/// that MOPED, from its first activation on.
fn engine_metrics(run: &MpiRun) -> Vec<(String, f64)> {
    let g = |n: &str| run.stats.get(n).map(|s| s.value.as_f64());
    let mut out = Vec::new();
    let mut bound = (0.0, 0usize, 0usize);
    for e in 0.. {
        let Some(busy) = g(&format!("system.moped.engine{e}.busy_cycles")) else {
            break;
        };
        out.push((format!("engine{e}_busy_cycles"), busy));
        for k in ["lock_wait_cycles", "handoffs"] {
            let v = g(&format!("system.moped.engine{e}.{k}")).unwrap_or(0.0);
            out.push((format!("engine{e}_{k}"), v));
        }
        for m in 0.. {
            let Some(b) = g(&format!("system.moped{m}.engine{e}.busy_cycles")) else {
                break;
            };
            if b > bound.0 {
                bound = (b, m, e);
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    let (busy, m, e) = bound;
    let step_cycles = |k: StepKind| {
        g(&format!(
            "system.moped{m}.engine{e}.step_cycles.{}",
            k.name()
        ))
        .unwrap_or(0.0)
    };
    let (step, cycles) = StepKind::ALL
        .iter()
        .enumerate()
        .map(|(i, &k)| (i, step_cycles(k)))
        .fold((0, 0.0), |best, x| if x.1 > best.1 { x } else { best });
    for k in StepKind::ALL {
        out.push((format!("bound_cycles_{}", k.name()), step_cycles(k)));
    }
    out.extend([
        ("bound_busy_cycles".to_string(), busy),
        ("bound_moped".to_string(), m as f64),
        ("bound_engine".to_string(), e as f64),
        ("bound_step".to_string(), step as f64),
        ("bound_step_cycles".to_string(), cycles),
    ]);
    let active = run
        .stats
        .distribution(&format!("system.moped{m}.active_copies"));
    let mean = active.filter(|d| d.samples() > 0).map_or(0.0, |d| d.mean());
    out.push(("active_copies_mean".to_string(), mean));
    let completed = g("system.moped.completed").unwrap_or(0.0);
    out.push(("moped_completed".to_string(), completed));
    out
}

/// Mean and largest search depth of each queue, at the matching MOPEDs (`moped_*`) and in
/// the software path's lists (`software_*`), over the run's timed region.
fn depth_metrics(run: &MpiRun) -> impl Iterator<Item = (String, f64)> + '_ {
    let sides = [("moped", "system.moped"), ("software", "mpi")];
    sides.into_iter().flat_map(move |(side, prefix)| {
        ["prq_depth", "umq_depth"].into_iter().flat_map(move |q| {
            let d = run.stats.distribution(&format!("{prefix}.{q}"));
            let mean = d.filter(|d| d.samples() > 0).map_or(0.0, |d| d.mean());
            let max = d.and_then(|d| d.max_value()).unwrap_or(0) as f64;
            [
                (format!("{side}_{q}_mean"), mean),
                (format!("{side}_{q}_max"), max),
            ]
        })
    })
}

impl Task {
    /// What of it goes into its key in a results store.
    pub fn key_parts(&self) -> (&std::path::Path, Design, u64) {
        (&self.spec, self.design, self.seed)
    }

    /// The folder of its results: `<spec file stem>-<design>-s<seed>`.
    pub fn dir_name(&self) -> String {
        let stem = self
            .spec
            .file_stem()
            .map_or("run".into(), |s| s.to_string_lossy());
        format!("{stem}-{}-s{}", self.design, self.seed)
    }
}

/// Runs one task; with `out`, writes its statistics and record (`record.json`) there
/// (with `config.toml` and `run.json`), or marks it FAILED.
pub fn run_task(
    cfg: &SystemConfig,
    task: &Task,
    iteration_scale: Option<f64>,
    out: Option<OutDir>,
) -> Result<Outcome, MopedError> {
    let outcome = simulate_task(cfg, task, iteration_scale);
    // A spec the experiment wrote into its own folder, named where it will be.
    let spec = out
        .as_ref()
        .map_or_else(|| task.spec.clone(), |o| o.user_path(&task.spec));
    output::finish(out, outcome, |(outcome, run), dir| {
        let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", dir.display()));
        run.stats.write_all(dir).map_err(io)?;
        let json = serde_json::to_string_pretty(outcome).expect("records serialize");
        std::fs::write(dir.join(store::RECORD_FILE), json).map_err(io)?;
        let mut key = store::run_key(cfg, task.key_parts(), iteration_scale)?;
        key.workload = spec.display().to_string();
        store::write_key(dir, &key)?;
        Ok(RunInfo {
            config: cfg.clone(),
            seed: task.seed.into(),
            workload: spec.display().to_string(),
            design: task.design.to_string(),
        })
    })
    .map(|(outcome, _)| outcome)
}

/// One task's outcome and the run behind it.
fn simulate_task(
    cfg: &SystemConfig,
    task: &Task,
    iteration_scale: Option<f64>,
) -> Result<(Outcome, MpiRun), MopedError> {
    let how = (cfg.workload.warmup, cfg.workload.touch_buffers);
    let (w, group) =
        load_workload_touched(&task.spec, None, iteration_scale, how).map_err(MopedError::Io)?;
    let run =
        run_workload(cfg, &w, task.design, task.seed, MpiParams::from(&cfg.mpi)).map_err(|e| {
            if e.is_interrupted() {
                return e;
            }
            MopedError::Io(format!(
                "{} under {} (seed {}): {e}",
                w.name, task.design, task.seed
            ))
        })?;
    let outcome = Outcome {
        record: RunRecord {
            benchmark: w.name.clone(),
            group,
            design: task.design.name().to_string(),
            seed: task.seed,
            metrics: metrics(&run),
        },
        events: run.events,
        host_seconds: run.host_seconds,
        messages_verified: run.messages_verified,
        bytes_verified: run.bytes_verified,
        notes: w.notes.clone(),
        reused: false,
    };
    Ok((outcome, run))
}

/// Writes workload specs, (file stem, text) each, into `dir/specs/`; their paths in order.
pub fn write_specs(
    dir: &std::path::Path,
    specs: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<PathBuf>, MopedError> {
    let folder = dir.join("specs");
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", folder.display()));
    std::fs::create_dir_all(&folder).map_err(io)?;
    specs
        .into_iter()
        .map(|(stem, text)| {
            let path = folder.join(format!("{stem}.toml"));
            std::fs::write(&path, text).map_err(io)?;
            Ok(path)
        })
        .collect()
}

/// Hears of each finished run: its task index, runs done so far, its outcome.
pub type Progress<'a> = &'a (dyn Fn(usize, usize, &Result<Outcome, MopedError>) + Sync);

/// Runs `tasks` on `jobs` host threads, each writing into `runs/<task dir name>/` of `out`
/// when it is given (taken from the earlier results at `out`'s place instead, when its key
/// is unchanged there and `out` holds a store: [`OutDir::hold_store`]); `progress` hears
/// of each finished run. Outcomes come back in task order; the first error
/// stops the runs not yet started. A stop request seen by the calling thread (Ctrl-C,
/// Python's signal check) stops the runs in flight and cancels the rest: the error is then
/// [`SimError::Interrupted`](crate::sim::SimError).
pub fn run_all(
    cfg: &SystemConfig,
    tasks: &[Task],
    jobs: usize,
    iteration_scale: Option<f64>,
    out: Option<&OutDir>,
    progress: Progress,
) -> Result<Vec<Outcome>, MopedError> {
    let from = out.and_then(OutDir::earlier);
    run_all_reusing(cfg, tasks, jobs, iteration_scale, (out, from), progress)
}

/// [`run_all`], taking each run whose key is unchanged from the store of the earlier
/// result folder `from` (see [`store`]) instead of simulating it.
pub fn run_all_reusing(
    cfg: &SystemConfig,
    tasks: &[Task],
    jobs: usize,
    iteration_scale: Option<f64>,
    (out, from): (Option<&OutDir>, Option<&std::path::Path>),
    progress: Progress,
) -> Result<Vec<Outcome>, MopedError> {
    let run = |_: usize, t: &Task| match (from, out) {
        (Some(from), Some(out)) => reuse_or_run(cfg, t, iteration_scale, from, out),
        _ => out
            .map(|o| o.child(&format!("runs/{}", t.dir_name())))
            .transpose()
            .and_then(|dir| run_task(cfg, t, iteration_scale, dir)),
    };
    run_pool(tasks, jobs, run, progress)
}

/// What [`run_pool`] tells of each finished item: its index, how many have finished, its
/// result.
pub type PoolDone<'a, R> = dyn Fn(usize, usize, &Result<R, MopedError>) + Sync + 'a;

/// Runs `run` on each of `items` on `jobs` host threads; `done` hears of each finished
/// one (its index, how many have finished, its result). Results come back in item order;
/// the first error stops the items not yet started. A stop request seen by the calling
/// thread (Ctrl-C, Python's signal check) stops the runs in flight and cancels the rest:
/// the error is then [`SimError::Interrupted`](crate::sim::SimError).
pub fn run_pool<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    run: impl Fn(usize, &T) -> Result<R, MopedError> + Sync,
    done: &PoolDone<'_, R>,
) -> Result<Vec<R>, MopedError> {
    let next = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<R, MopedError>>>> =
        Mutex::new((0..items.len()).map(|_| None).collect());
    let failed = AtomicBool::new(false);
    let cancel = Arc::new(AtomicBool::new(false));
    let workers = jobs.clamp(1, items.len().max(1));
    let running = AtomicUsize::new(workers);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let _counted = CountedOut(&running);
                let stop = Arc::clone(&cancel);
                let stopped = move || stop.load(Ordering::Relaxed);
                interrupt::with_check(stopped.clone(), || loop {
                    if failed.load(Ordering::Relaxed) || stopped() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = run(i, item);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
                    done(i, n, &r);
                    results.lock().expect("no panics while held")[i] = Some(r);
                });
            });
        }
        // The workers cannot see the caller's own stop check: pass a request on.
        while running.load(Ordering::SeqCst) > 0 {
            if interrupt::requested() {
                cancel.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    if cancel.load(Ordering::Relaxed) {
        return Err(SimError::Interrupted.into());
    }
    let mut out = Vec::new();
    for r in results
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .flatten()
    {
        out.push(r?);
    }
    Ok(out)
}

/// One task of [`run_all_reusing`]: copied from `from`'s store when its key is there,
/// else run into `out`.
fn reuse_or_run(
    cfg: &SystemConfig,
    task: &Task,
    iteration_scale: Option<f64>,
    from: &std::path::Path,
    out: &OutDir,
) -> Result<Outcome, MopedError> {
    let name = task.dir_name();
    let key = store::run_key(cfg, task.key_parts(), iteration_scale)?;
    match store::find(from, &name, &key) {
        Some(found) => {
            let text = store::reuse(&found, &out.path().join("runs").join(&name))?;
            let mut outcome: Outcome = serde_json::from_str(&text).map_err(|e| {
                MopedError::Io(format!("{}: {e}", found.join(store::RECORD_FILE).display()))
            })?;
            outcome.reused = true;
            Ok(outcome)
        }
        None => run_task(
            cfg,
            task,
            iteration_scale,
            Some(out.child(&format!("runs/{name}"))?),
        ),
    }
}

/// Counts a worker of [`run_pool`] out when it ends, by a panic too (a progress callback's),
/// so that the loop watching for stop requests never waits for a worker that is gone.
struct CountedOut<'a>(&'a AtomicUsize);

impl Drop for CountedOut<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Host-side totals of a set of runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Throughput {
    pub runs: usize,
    pub events: u64,
    pub sim_seconds: f64,
    pub wall_seconds: f64,
}

impl Throughput {
    /// The runs simulated (not reused) since `started`.
    pub fn of(outcomes: &[Outcome], started: Instant) -> Throughput {
        let simulated = || outcomes.iter().filter(|o| !o.reused);
        Throughput {
            runs: simulated().count(),
            events: simulated().map(|o| o.events).sum(),
            sim_seconds: simulated().map(|o| o.host_seconds).sum(),
            wall_seconds: started.elapsed().as_secs_f64(),
        }
    }

    /// Simulated events per wall-clock second over the whole experiment.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.wall_seconds.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A progress callback that panics (eprintln! into a closed stderr) ends the runs with
    /// that panic instead of leaving the caller waiting for a worker that is gone.
    #[test]
    fn a_panicking_progress_callback_does_not_hang_the_pool() {
        let task = Task {
            spec: PathBuf::from("no-such-spec.toml"),
            design: Design::Baseline,
            seed: 1,
        };
        let cfg = SystemConfig::default();
        let progress = |_: usize, _: usize, _: &Result<Outcome, MopedError>| panic!("stderr");
        let ran = std::panic::catch_unwind(|| run_all(&cfg, &[task], 1, None, None, &progress));
        assert!(ran.is_err());
    }
}
