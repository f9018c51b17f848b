//! The experiments' bindings: Figure 10 (on the simulator's own pool or on a user's
//! executor), the matching engines, the engine schemes and the LHS paper's setting.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::*;

/// The options of a Figure-10 experiment from Python's arguments.
#[allow(clippy::too_many_arguments)]
fn figure10_options(
    out: &str,
    workloads_dir: &str,
    large: bool,
    seeds: Vec<u64>,
    iteration_scale: Option<f64>,
    config_toml: &str,
    jobs: Option<usize>,
    sensitivity: bool,
) -> PyResult<api::figure10::Figure10Options> {
    Ok(api::figure10::Figure10Options {
        out: out.into(),
        workloads: workloads_dir.into(),
        large,
        seeds,
        iterations: iteration_scale,
        config: parse_config(config_toml, "<config>")?,
        jobs: jobs.unwrap_or_else(api::figure10::default_jobs),
        sensitivity,
        reuse: None,
    })
}

/// Figure 10's tasks as `(spec path, design, seed, results folder name)`, in the paper's
/// order; a missing spec raises MopedError listing every missing one.
#[pyfunction]
pub(super) fn figure10_plan(
    workloads_dir: &str,
    large: bool,
    seeds: Vec<u64>,
) -> PyResult<Vec<(String, &'static str, u64, String)>> {
    guard(|| {
        let tasks = api::figure10::plan(Path::new(workloads_dir), large, &seeds).map_err(to_py)?;
        Ok(tasks
            .iter()
            .map(|t| {
                (
                    t.spec.display().to_string(),
                    t.design.name(),
                    t.seed,
                    t.dir_name(),
                )
            })
            .collect())
    })
}

/// Runs Figure 10 on the simulator's own pool of `jobs` threads (default: every core),
/// printing a line per finished run to stderr when `progress`, and writes its results into
/// `out`; with `sensitivity`, reruns it under each alternative modelling choice and writes
/// sensitivity.csv. An `out` holding an earlier Figure 10 is resumed (its runs with
/// unchanged keys reused) unless `fresh`. Returns the JSON of the Figure-10 runs' outcomes.
#[pyfunction]
#[pyo3(signature = (out, workloads_dir, large, seeds, iteration_scale, config_toml, jobs=None, progress=None, force=false, sensitivity=false, fresh=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn figure10(
    py: Python<'_>,
    out: &str,
    workloads_dir: &str,
    large: bool,
    seeds: Vec<u64>,
    iteration_scale: Option<f64>,
    config_toml: &str,
    jobs: Option<usize>,
    progress: Option<PyObject>,
    force: bool,
    sensitivity: bool,
    fresh: bool,
) -> PyResult<String> {
    guard(|| {
        let mut opts = figure10_options(
            out,
            workloads_dir,
            large,
            seeds,
            iteration_scale,
            config_toml,
            jobs,
            sensitivity,
        )?;
        let n = api::figure10::run_count(&opts).map_err(to_py)?;
        let report = reporter(progress, n);
        let call = [
            ("workloads", workloads_dir.to_string()),
            ("seeds", format!("{:?}", opts.seeds)),
        ];
        let (force, reuse) = api::figure10::claim_terms(Path::new(out), force, fresh);
        opts.reuse = reuse;
        let dir = claim(out, force, "figure10", &call)?;
        let f = interruptible(py, || api::figure10::figure10(&opts, dir, &report))?;
        serde_json::to_string(&f.outcomes).map_err(json_err)
    })
}

/// Analyses the outcomes (JSON, as `run_workload` returns them, in plan order) of runs
/// made elsewhere into the claim's folder, writes Figure 10's tables, report, records,
/// config.toml and run.json there, and moves it into place; an error leaves only FAILED.
#[pyfunction]
#[pyo3(signature = (claim, outcomes_json, workloads_dir, large, seeds, iteration_scale, config_toml))]
#[allow(clippy::too_many_arguments)]
pub(super) fn figure10_finish(
    mut claim: PyRefMut<'_, OutputClaim>,
    outcomes_json: &str,
    workloads_dir: &str,
    large: bool,
    seeds: Vec<u64>,
    iteration_scale: Option<f64>,
    config_toml: &str,
) -> PyResult<()> {
    guard(|| {
        let dest = claim.path()?;
        let opts = figure10_options(
            &dest,
            workloads_dir,
            large,
            seeds,
            iteration_scale,
            config_toml,
            None,
            false,
        )?;
        let dir = claim.take()?;
        let analysed = serde_json::from_str::<Vec<api::experiments::Outcome>>(outcomes_json)
            .map_err(|e| CoreError::Io(format!("the runs' outcomes: {e}")))
            .and_then(|outcomes| {
                let tasks = api::figure10::plan(&opts.workloads, opts.large, &opts.seeds)?;
                let none = api::sensitivity::SensitivityRuns::default();
                api::figure10::finish(dir.path(), &tasks, &outcomes, &opts, None, &none)
            });
        dir.finish(analysed, |_, _| Ok(api::figure10::run_info(&opts)))
            .map(|_| ())
            .map_err(to_py)
    })
}

/// What an experiment's runs report as each finishes, to `progress` when given (Python's
/// `moped._progress`, a bar or lines): called with (runs done, runs in all, the run's line
/// with the host time left, the events it simulated: none when reused). The runs' threads
/// take the GIL for the call; an exception it raises is printed, not raised (the runs go
/// on).
fn reporter(
    progress: Option<PyObject>,
    n: usize,
) -> impl Fn(usize, usize, &Result<api::experiments::Outcome, CoreError>) + Sync {
    let started = std::time::Instant::now();
    let done_so_far = std::sync::atomic::AtomicUsize::new(0);
    move |_i, _done, r| {
        let Some(callback) = &progress else { return };
        let done = done_so_far.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let line = api::figure10::progress_line(done, n, r, started);
        let events = r
            .as_ref()
            .map_or(0, |o| if o.reused { 0 } else { o.events });
        Python::with_gil(|py| {
            if let Err(e) = callback.call1(py, (done, n, line, events)) {
                e.print(py);
            }
        });
    }
}

/// What an experiment returns to Python: {"runs", "messages_verified", "host_seconds"}.
fn summary(
    py: Python<'_>,
    runs: usize,
    messages_verified: u64,
    host_seconds: f64,
) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("runs", runs)?;
    d.set_item("messages_verified", messages_verified)?;
    d.set_item("host_seconds", host_seconds)?;
    Ok(d)
}

/// The engines named in `engines` (default: every one, the software path first), each
/// once; an unknown name raises InputError listing the valid ones.
fn matchers(engines: Option<Vec<String>>) -> PyResult<Vec<api::matching::Matcher>> {
    let Some(names) = engines else {
        return Ok(api::matching::Matcher::all());
    };
    let mut out = Vec::new();
    for name in &names {
        let m = name
            .parse::<api::matching::Matcher>()
            .map_err(|e| InputError::new_err(format!("engines: {e}")))?;
        if !out.contains(&m) {
            out.push(m);
        }
    }
    if out.is_empty() {
        return Err(InputError::new_err(format!(
            "engines: name at least one of {}",
            matcher_names().join(", ")
        )));
    }
    Ok(out)
}

/// Every matcher's name, the software path first.
pub(super) fn matcher_names() -> Vec<&'static str> {
    api::matching::Matcher::all()
        .iter()
        .map(|m| m.name())
        .collect()
}

/// Runs the MPI queue benchmarks under the software path and each of `engines` (default:
/// all) on the simulator's own pool of `jobs` threads (default: every core), printing a
/// line per finished run to stderr when `progress`, and writes matching.csv and report.md
/// into `out`; `quick` keeps queues up to 300 entries deep. With `workloads` (the specs
/// folder), also Figure 10 under each engine (figure10_engines.csv). An `out` holding an
/// earlier run of the experiment is resumed (its runs with unchanged keys reused) unless
/// `fresh`. Returns {"runs", "messages_verified", "host_seconds", "reused"}.
#[pyfunction]
#[pyo3(signature = (out, config_toml, engines=None, quick=false, jobs=None, progress=None, force=false, workloads=None, fresh=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn matching<'py>(
    py: Python<'py>,
    out: &str,
    config_toml: &str,
    engines: Option<Vec<String>>,
    quick: bool,
    jobs: Option<usize>,
    progress: Option<PyObject>,
    force: bool,
    workloads: Option<String>,
    fresh: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        if jobs == Some(0) {
            return Err(InputError::new_err("jobs: must be at least 1"));
        }
        let (force, reuse) =
            api::store::claim_terms(Path::new(out), api::matching::STORE_NAME, force, fresh);
        let opts = api::matching::MatchingOptions {
            out: out.into(),
            config: parse_config(config_toml, "<config>")?,
            jobs: jobs.unwrap_or_else(api::figure10::default_jobs),
            engines: matchers(engines)?,
            quick,
            figure10: workloads
                .map(|w| api::matching::figure10::Figure10Part::new(w.into(), quick)),
            reuse,
        };
        let n = opts.run_count();
        let report = reporter(progress, n);
        let names: Vec<&str> = opts.engines.iter().map(|e| e.name()).collect();
        let call = [("engines", names.join(",")), ("quick", quick.to_string())];
        let dir = claim(out, force, "matching", &call)?;
        let m = interruptible(py, || api::matching::matching(&opts, dir, &report))?;
        let d = summary(py, m.runs, m.messages_verified, m.host_seconds)?;
        d.set_item("reused", m.reused)?;
        Ok(d)
    })
}

/// Runs IMB Uniband, Biband and PingPong under each of `schemes` (default: every one) with
/// one and two engines, on `jobs` threads, and writes engines.csv and report.md into `out`;
/// `costs` is "emp" (EMP's firmware costs) or "config" (the configuration's `[moped.steps]`),
/// `design` a MOPED design. With `workloads` (the specs folder), also Figure 10 under the
/// best scheme (figure10_schemes.csv). An `out` holding an earlier run of the experiment is
/// resumed (its runs with unchanged keys reused) unless `fresh`. Returns {"runs",
/// "messages_verified", "host_seconds", "reused"}.
#[pyfunction]
#[pyo3(signature = (out, config_toml, schemes=None, costs="emp", design="optcopy", quick=false, jobs=None, progress=None, force=false, workloads=None, only=None, fresh=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn engines<'py>(
    py: Python<'py>,
    out: &str,
    config_toml: &str,
    schemes: Option<Vec<String>>,
    costs: &str,
    design: &str,
    quick: bool,
    jobs: Option<usize>,
    progress: Option<PyObject>,
    force: bool,
    workloads: Option<String>,
    only: Option<String>,
    fresh: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        if jobs == Some(0) {
            return Err(InputError::new_err("jobs: must be at least 1"));
        }
        let hosts = match only {
            None => api::engines::Hosts::Both,
            Some(h) => h
                .parse()
                .map_err(|e| InputError::new_err(format!("only: {e}")))?,
        };
        let schemes = match schemes {
            None => api::engines::Scheme::ALL.to_vec(),
            Some(names) if names.is_empty() => {
                return Err(InputError::new_err(
                    "schemes: name at least one of base, SO, RO, DSR, SR",
                ))
            }
            Some(names) => names
                .iter()
                .map(|n| n.parse::<api::engines::Scheme>())
                .collect::<Result<_, _>>()
                .map_err(|e| InputError::new_err(format!("schemes: {e}")))?,
        };
        let design = design
            .parse::<api::Design>()
            .map_err(|e| InputError::new_err(format!("design: {e}")))?;
        if !design.has_moped() {
            return Err(InputError::new_err(format!(
                "design: {design} has no MOPED; pick basemoped, optcopy or optcache"
            )));
        }
        let (force, reuse) =
            api::store::claim_terms(Path::new(out), api::engines::STORE_NAME, force, fresh);
        let opts = api::engines::EnginesOptions {
            config: parse_config(config_toml, "<config>")?,
            costs: costs
                .parse()
                .map_err(|e| InputError::new_err(format!("costs: {e}")))?,
            design,
            jobs: jobs.unwrap_or_else(api::figure10::default_jobs),
            quick,
            schemes,
            hosts,
            figure10: workloads.map(|w| api::figure10::Figure10Part::new(w.into(), quick)),
            reuse,
        };
        let n = opts.run_count();
        let report = reporter(progress, n);
        let names: Vec<&str> = opts.schemes.iter().map(|s| s.name()).collect();
        let call = [
            ("schemes", names.join(",")),
            ("costs", costs.to_string()),
            ("quick", quick.to_string()),
            ("only", hosts.name().to_string()),
        ];
        let dir = claim(out, force, "engines", &call)?;
        let e = interruptible(py, || api::engines::engines(&opts, dir, &report))?;
        let d = summary(py, e.runs, e.messages_verified, e.host_seconds)?;
        d.set_item("reused", e.reused)?;
        Ok(d)
    })
}

/// Runs the LHS paper's experiments in its own setting (the DIMMnet-2 and emulated
/// DIMMnet-3 presets, each with `overrides`, `(KEY, VALUE)` pairs as `--set` takes them) on
/// `jobs` threads (default: every core), printing a line per finished run to stderr when
/// `progress`, and writes lhs.csv and report.md into `out`; `quick` keeps searches up to
/// 256 entries. Returns {"runs", "messages_verified", "host_seconds", "speedup"} (the
/// like-for-like speed-up the report leads with, None if it did not run) and "reused"; an
/// `out` holding an earlier run of the experiment is resumed unless `fresh`.
#[pyfunction]
#[pyo3(signature = (out, overrides=Vec::new(), quick=false, jobs=None, progress=None, force=false, fresh=false))]
#[allow(clippy::too_many_arguments)]
pub(super) fn lhs<'py>(
    py: Python<'py>,
    out: &str,
    overrides: Vec<(String, String)>,
    quick: bool,
    jobs: Option<usize>,
    progress: Option<PyObject>,
    force: bool,
    fresh: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        if jobs == Some(0) {
            return Err(InputError::new_err("jobs: must be at least 1"));
        }
        let (force, reuse) =
            api::store::claim_terms(Path::new(out), api::lhs::STORE_NAME, force, fresh);
        let opts = api::lhs::LhsOptions {
            out: out.into(),
            overrides,
            jobs: jobs.unwrap_or_else(api::figure10::default_jobs),
            quick,
            reuse,
        };
        let n = opts.run_count();
        let report = reporter(progress, n);
        let set: Vec<String> = opts
            .overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let call = [("set", set.join(",")), ("quick", quick.to_string())];
        let dir = claim(out, force, "lhs", &call)?;
        let l = interruptible(py, || api::lhs::lhs(&opts, dir, &report))?;
        let d = summary(py, l.runs, l.messages_verified, l.host_seconds)?;
        d.set_item("reused", l.reused)?;
        let speedup = api::lhs::report::headline(&l.rows).and_then(|h| h.ratio());
        d.set_item("speedup", speedup)?;
        Ok(d)
    })
}
