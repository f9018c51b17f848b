#![cfg(feature = "python")]
// pyo3 0.22's macros expand to a `gil-refs` feature check and to `?` conversions that
// clippy flags in the caller's crate.
#![allow(unexpected_cfgs, clippy::useless_conversion)]

//! PyO3 bindings: the extension module `moped._core`. It only converts types and maps
//! errors; the simulator knows nothing of Python. The pure-Python package `moped`
//! (python/moped) wraps it.

mod experiments;
mod store;

use std::path::Path;

use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::analysis::{AnalysisError, RunRecord};
use crate::api::{self, Design, MopedError as CoreError};
use crate::config::SystemConfig;
use crate::stats::StatValue;

pyo3::create_exception!(
    moped._core,
    MopedError,
    PyException,
    "Base class of every moped error."
);
pyo3::create_exception!(
    moped._core,
    ConfigError,
    MopedError,
    "A bad configuration: unknown key, wrong type or value."
);
pyo3::create_exception!(
    moped._core,
    ProtocolError,
    MopedError,
    "A protocol file or name that does not load."
);
pyo3::create_exception!(
    moped._core,
    ProgramError,
    MopedError,
    "A program file that does not parse or does not fit the system."
);
pyo3::create_exception!(
    moped._core,
    SimulationError,
    MopedError,
    "A run or test that failed: deadlock, wrong value, bad state."
);
pyo3::create_exception!(
    moped._core,
    StatsError,
    MopedError,
    "A statistics file that does not parse, or a comparison whose runs lack what it needs."
);
pyo3::create_exception!(
    moped._core,
    InputError,
    MopedError,
    "A file, folder, workload or argument value that cannot be used: missing, unreadable, \
     out of range."
);

/// Runs a binding's body, turning a panic into MopedError naming it: the last line of
/// defence, since no input should make moped panic (pyo3 would raise PanicException, which
/// `except Exception` does not catch).
fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
        .unwrap_or_else(|p| Err(MopedError::new_err(api::internal_error(&*p))))
}

/// Stops every run of this process in flight (those of a thread-pool sweep the user
/// interrupted): each raises KeyboardInterrupt in its own thread. Later runs go on.
#[doc(hidden)]
#[pyfunction]
fn _stop_runs() {
    crate::sim::interrupt::stop_started();
}

/// Panics inside [`guard`], for the test that proves the guard catches it.
#[doc(hidden)]
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    guard(|| panic!("a deliberate panic to test the Python boundary"))
}

fn to_py(e: CoreError) -> PyErr {
    match e {
        CoreError::Config(e) => ConfigError::new_err(e.to_string()),
        CoreError::Protocol(e) => ProtocolError::new_err(e.to_string()),
        CoreError::Program(e) => ProgramError::new_err(e.to_string()),
        e if e.is_interrupted() => PyKeyboardInterrupt::new_err(e.to_string()),
        CoreError::Simulation(e) => SimulationError::new_err(e.to_string()),
        CoreError::Io(msg) => InputError::new_err(msg),
    }
}

thread_local! {
    /// What Python's signal handler raised while a run of this thread was checking.
    static RAISED: std::cell::RefCell<Option<PyErr>> = const { std::cell::RefCell::new(None) };
}

/// A run's stop check: runs Python's signal handlers; what one raises (KeyboardInterrupt
/// for Ctrl-C) stops the run and is kept to be raised when it returns.
fn python_signals() -> bool {
    Python::with_gil(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            RAISED.with(|r| *r.borrow_mut() = Some(e));
            true
        }
    })
}

/// Runs `f` without the GIL, stoppable by Ctrl-C (on the main thread) and by
/// [`_stop_runs`] (on any): the run stops and KeyboardInterrupt is raised.
fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    use crate::sim::interrupt;
    let started = interrupt::generation();
    let check = move || python_signals() || interrupt::generation() != started;
    let r = py.allow_threads(|| interrupt::with_check(check, f));
    if let Some(e) = RAISED.with(|r| r.borrow_mut().take()) {
        return Err(e);
    }
    r.map_err(to_py)
}

fn analysis_err(e: AnalysisError) -> PyErr {
    MopedError::new_err(e.to_string())
}

fn json_err(e: serde_json::Error) -> PyErr {
    MopedError::new_err(e.to_string())
}

/// Run records from JSON (a list of {benchmark, group, design, seed, metrics}).
fn records(records_json: &str) -> PyResult<Vec<RunRecord>> {
    api::analysis::records_from_json(records_json).map_err(analysis_err)
}

/// A design name as the enum; an unknown one raises ProtocolError listing the designs.
fn design(name: &str) -> PyResult<Design> {
    name.parse()
        .map_err(|e: api::UnknownDesign| ProtocolError::new_err(e.to_string()))
}

fn config_err(e: impl std::fmt::Display) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// Runs the `moped` command line with `argv` (argv[0] is the program name); returns the exit
/// status (130 when Ctrl-C stopped it, as the binary's).
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    guard(|| {
        let status = py.allow_threads(|| {
            crate::sim::interrupt::with_check(python_signals, || crate::cli::main_with_args(argv))
        });
        // Ctrl-C has become status 130 and its message, as in the binary: the
        // KeyboardInterrupt the signal check kept is spent.
        RAISED.with(|r| r.borrow_mut().take());
        Ok(status)
    })
}

/// The default configuration (the paper's Table 1) as TOML.
#[pyfunction]
fn default_config_toml() -> PyResult<String> {
    guard(|| Ok(SystemConfig::default().to_toml_string()))
}

/// A Python value as a TOML value; `path` names the key in errors.
fn to_toml_value(v: &Bound<'_, PyAny>, path: &str) -> PyResult<toml::Value> {
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v
            .extract()
            .map_err(|_| config_err(format!("config key `{path}`: integer out of range")))?;
        return Ok(toml::Value::Integer(i));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        return Ok(toml::Value::Table(dict_to_table(d, path)?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in v.iter()?.enumerate() {
            items.push(to_toml_value(&item?, &format!("{path}[{i}]"))?);
        }
        return Ok(toml::Value::Array(items));
    }
    let ty = v
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    Err(config_err(format!(
        "config key `{path}`: a {ty} is not a config value"
    )))
}

fn dict_to_table(d: &Bound<'_, PyDict>, prefix: &str) -> PyResult<toml::Table> {
    let mut t = toml::Table::new();
    for (k, v) in d.iter() {
        let key: String = k
            .extract()
            .map_err(|_| config_err(format!("config keys must be strings (under `{prefix}`)")))?;
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        t.insert(key, to_toml_value(&v, &path)?);
    }
    Ok(t)
}

fn parse_config(text: &str, file: &str) -> PyResult<SystemConfig> {
    api::config::parse_config(text, file).map_err(config_err)
}

/// Parses and validates a config (TOML text; missing fields take their defaults), applies
/// `overrides` (a nested dict) and returns the resolved config as TOML.
#[pyfunction]
#[pyo3(signature = (toml_text, file, overrides=None))]
fn validate_config(
    toml_text: &str,
    file: &str,
    overrides: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    guard(|| {
        let cfg = parse_config(toml_text, file)?;
        let Some(overrides) = overrides else {
            return Ok(cfg.to_toml_string());
        };
        let over = dict_to_table(overrides, "")?;
        let cfg = api::config::with_overrides(&cfg, over).map_err(config_err)?;
        Ok(cfg.to_toml_string())
    })
}

/// The catalogue of the configuration's keys, as `moped info config --format json`.
#[pyfunction]
fn info_config_json() -> PyResult<String> {
    guard(|| Ok(api::info::params_json(&api::info::params()).to_string()))
}

/// The catalogue of the statistics, as `moped info stats --format json` (it makes the
/// small probe runs the catalogue is read from: about a second).
#[pyfunction]
fn info_stats_json(py: Python<'_>) -> PyResult<String> {
    guard(|| {
        let stats = interruptible(py, api::info::stats)?;
        Ok(api::info::stats_json(&stats).to_string())
    })
}

/// The resolved config as JSON (for `SystemConfig.to_dict`).
#[pyfunction]
fn config_to_json(toml_text: &str, file: &str) -> PyResult<String> {
    guard(|| {
        let cfg = parse_config(toml_text, file)?;
        serde_json::to_string(&cfg).map_err(config_err)
    })
}

/// Claims the result folder `dir` of the call `name(args)` (see `api::output`): a folder
/// holding results is refused unless `force`.
fn claim(
    dir: &str,
    force: bool,
    name: &str,
    args: &[(&str, String)],
) -> PyResult<api::output::OutDir> {
    api::output::OutDir::claim(Path::new(dir), force, invocation(name, args)).map_err(to_py)
}

/// A result folder claimed for runs made elsewhere (Figure 10 on a user's executor): they
/// write into `path`, and [`figure10_finish`] moves it into place, or `fail` leaves only
/// the FAILED marker.
#[pyclass(name = "OutputClaim", module = "moped._core")]
struct OutputClaim {
    out: Option<api::output::OutDir>,
}

impl OutputClaim {
    fn finished() -> PyErr {
        MopedError::new_err("this output folder was already finished")
    }

    fn take(&mut self) -> PyResult<api::output::OutDir> {
        self.out.take().ok_or_else(Self::finished)
    }
}

#[pymethods]
impl OutputClaim {
    /// The temporary folder the results are written into.
    #[getter]
    fn path(&self) -> PyResult<String> {
        let out = self.out.as_ref().ok_or_else(Self::finished)?;
        Ok(out.path().display().to_string())
    }

    /// Ends the claim with `error`: the folder holds only FAILED, naming it.
    fn fail(&mut self, error: &str) -> PyResult<()> {
        guard(|| {
            self.take()?.fail(&CoreError::Io(error.to_string()));
            Ok(())
        })
    }
}

/// Claims `out` for a Figure-10 experiment whose runs are made elsewhere.
#[pyfunction]
#[pyo3(signature = (out, workloads_dir, seeds, force=false))]
fn figure10_claim(
    out: &str,
    workloads_dir: &str,
    seeds: Vec<u64>,
    force: bool,
) -> PyResult<OutputClaim> {
    guard(|| {
        let call = [
            ("workloads", workloads_dir.to_string()),
            ("seeds", format!("{seeds:?}")),
        ];
        Ok(OutputClaim {
            out: Some(claim(out, force, "figure10", &call)?),
        })
    })
}

/// The call `name(args)` as run.json records it.
fn invocation(name: &str, args: &[(&str, String)]) -> api::output::Invocation {
    let mut command = vec![format!("moped.{name}")];
    command.extend(args.iter().map(|(k, v)| format!("{k}={v}")));
    api::output::Invocation {
        command,
        ..Default::default()
    }
}

/// Simulates the program file at `program_path`; with `out`, also writes the result files.
/// With `progress`, calls it with a dict of the run's progress (see [`beat_dict`]) every
/// half second of host time. Returns {"stats": [[name, value, unit, description], ...],
/// "cycles", "config_toml", "protocol", "host_seconds"}.
#[pyfunction]
#[pyo3(signature = (config_toml, program_path, protocol, seed, out=None, force=false, progress=None))]
#[allow(clippy::too_many_arguments)]
fn run<'py>(
    py: Python<'py>,
    config_toml: &str,
    program_path: &str,
    protocol: &str,
    seed: u64,
    out: Option<String>,
    force: bool,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let cfg = parse_config(config_toml, "<config>")?;
        let design = design(protocol)?;
        let program = Path::new(program_path);
        let call = [
            ("program", program_path.to_string()),
            ("protocol", protocol.to_string()),
            ("seed", seed.to_string()),
        ];
        let out = out.map(|o| claim(&o, force, "run", &call)).transpose()?;
        let simulate = || api::run::run_file(&cfg, program, design, seed, out);
        let result = match progress {
            None => interruptible(py, simulate)?,
            Some(callback) => {
                let beat = move |b: &api::heartbeat::Beat| {
                    Python::with_gil(|py| {
                        let called = beat_dict(py, b).and_then(|d| callback.call1(py, (d,)));
                        if let Err(e) = called {
                            e.print(py);
                        }
                    })
                };
                let every = std::time::Duration::from_millis(500);
                interruptible(py, || api::heartbeat::with_every(every, beat, simulate))?
            }
        };
        let stats = PyList::empty_bound(py);
        // The rows of stats.txt, a distribution's fields (`name::mean`, ...) among them.
        for s in result.stats.rows() {
            let value = stat_value(py, &s.value);
            let row = PyList::new_bound(
                py,
                [
                    s.name.into_owned().into_py(py),
                    value,
                    s.unit.to_string().into_py(py),
                    s.desc.to_string().into_py(py),
                ],
            );
            stats.append(row)?;
        }
        let d = PyDict::new_bound(py);
        d.set_item("stats", stats)?;
        d.set_item("cycles", result.cycles)?;
        d.set_item("config_toml", result.config.to_toml_string())?;
        d.set_item("protocol", result.design.name())?;
        d.set_item("host_seconds", result.host_seconds)?;
        Ok(d)
    })
}

/// A heartbeat as Python sees it: {"cycle", "events", "host_seconds",
/// "events_per_second", "done", "of", "eta_seconds"} (the last three None where the run's
/// end is not known).
fn beat_dict<'py>(py: Python<'py>, b: &api::heartbeat::Beat) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("cycle", b.cycle)?;
    d.set_item("events", b.events)?;
    d.set_item("host_seconds", b.host_seconds)?;
    d.set_item("events_per_second", b.events_per_second())?;
    d.set_item("done", b.done.map(|(done, _)| done))?;
    d.set_item("of", b.done.map(|(_, of)| of))?;
    d.set_item("eta_seconds", b.eta_seconds())?;
    Ok(d)
}

/// Runs the random coherence tester under `design` (its MOPEDs take part unless it is the
/// baseline); a failure raises SimulationError naming the seed and the replay command.
#[pyfunction]
#[pyo3(signature = (cores, checks, seed, design="baseline", prefetch="none", cache_ops=false))]
fn random_test<'py>(
    py: Python<'py>,
    cores: usize,
    checks: u64,
    seed: u64,
    design: &str,
    prefetch: &str,
    cache_ops: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        crate::config::check_cores(cores).map_err(config_err)?;
        let design = self::design(design)?;
        let prefetch: crate::config::PrefetchKind = prefetch.parse().map_err(config_err)?;
        // Ctrl-C stops the tester between events and raises KeyboardInterrupt.
        let r = interruptible(py, || {
            let how = (design, prefetch, cache_ops);
            Ok(api::protocols::random_test(cores, checks, seed, how).1)
        })?;
        let r = r.map_err(SimulationError::new_err)?;
        let d = PyDict::new_bound(py);
        d.set_item("checks_completed", r.checks_completed)?;
        d.set_item("loads", r.loads)?;
        d.set_item("stores", r.stores)?;
        d.set_item("mismatches", r.mismatches)?;
        d.set_item("watchdog_trips", r.watchdog_trips)?;
        d.set_item("cycles", r.cycles)?;
        d.set_item("prefetches_issued", r.prefetches_issued)?;
        d.set_item("prefetches_useful", r.prefetches_useful)?;
        d.set_item("sw_prefetches", r.sw_prefetches)?;
        d.set_item("flushes", r.flushes)?;
        d.set_item("events", r.events)?;
        d.set_item("messages", r.messages)?;
        d.set_item("moped_reads", r.moped_reads)?;
        d.set_item("moped_owns", r.moped_owns)?;
        d.set_item("moped_fills", r.moped_fills)?;
        d.set_item("moped_writes", r.moped_writes)?;
        d.set_item("moped_values_checked", r.moped_values_checked)?;
        Ok(d)
    })
}

/// Every design, baseline first: (name, the paper's label, description).
#[pyfunction]
fn designs() -> PyResult<Vec<(&'static str, &'static str, &'static str)>> {
    guard(|| {
        Ok(Design::ALL
            .map(|d| (d.name(), d.label(), d.description()))
            .to_vec())
    })
}

/// The run metrics that are sums of statistics: (metric, the statistics it adds), as MPI
/// runs' records define them, for the package's program runs.
#[pyfunction]
fn summed_metrics() -> PyResult<Vec<(&'static str, Vec<&'static str>)>> {
    guard(|| {
        Ok(api::experiments::SUMMED_METRICS
            .iter()
            .map(|&(name, parts)| (name, parts.to_vec()))
            .collect())
    })
}

/// Names of the shipped protocols.
#[pyfunction]
fn protocol_names() -> PyResult<Vec<String>> {
    guard(|| Ok(Design::ALL.map(|d| d.name().to_string()).to_vec()))
}

/// Both machines of a shipped protocol as Markdown tables.
#[pyfunction]
fn protocol_markdown(name: &str) -> PyResult<String> {
    guard(|| Ok(api::protocols::protocol_markdown(design(name)?)))
}

/// Checks one machine file's text; raises ProtocolError with `file:line:col: reason`.
#[pyfunction]
fn lint_protocol(text: &str, file: &str) -> PyResult<()> {
    guard(|| {
        api::protocols::lint_text(text, file)
            .map(|_| ())
            .map_err(|e| ProtocolError::new_err(e.to_string()))
    })
}

/// Simulates one workload (a spec or a GOAL schedule) under `design` with every message
/// checked; with `out`, writes its statistics and record there. Returns the JSON of the
/// run record (benchmark, group, design, seed, metrics) with events, host_seconds,
/// messages_verified, bytes_verified and notes.
#[pyfunction]
#[pyo3(signature = (spec_path, design, config_toml, seed, iteration_scale=None, out=None))]
fn run_workload(
    py: Python<'_>,
    spec_path: &str,
    design: &str,
    config_toml: &str,
    seed: u64,
    iteration_scale: Option<f64>,
    out: Option<&str>,
) -> PyResult<String> {
    guard(|| {
        let cfg = parse_config(config_toml, "<config>")?;
        let task = api::experiments::Task {
            spec: spec_path.into(),
            design: self::design(design)?,
            seed,
        };
        let call = [
            ("spec", spec_path.to_string()),
            ("design", design.to_string()),
            ("seed", seed.to_string()),
        ];
        let out = out
            .map(|o| claim(o, false, "run_workload", &call))
            .transpose()?;
        let outcome = interruptible(py, || {
            api::experiments::run_task(&cfg, &task, iteration_scale, out)
        })?;
        serde_json::to_string(&outcome).map_err(json_err)
    })
}

/// Reads a GOAL schedule (`text`, named `file` in errors) into per-rank MPI calls and
/// returns a summary as JSON: name, ranks, and per rank its calls, sends, receives
/// (wildcard ones counted apart) and buffer bytes. Errors raise ProgramError with
/// file:line:col.
#[pyfunction]
fn parse_goal(text: &str, file: &str) -> PyResult<String> {
    guard(|| {
        let summary = api::mpi::goal_summary(text, file).map_err(ProgramError::new_err)?;
        Ok(summary.to_string())
    })
}

/// The reductions of the run records (a JSON list) against the baseline, as JSON.
#[pyfunction]
fn reductions(records_json: &str) -> PyResult<String> {
    guard(|| {
        let red = api::analysis::reductions(&records(records_json)?).map_err(analysis_err)?;
        serde_json::to_string(&red).map_err(json_err)
    })
}

/// Per (group, design, metric): geometric mean of the ratios, smallest and largest
/// reduction, as JSON.
#[pyfunction]
fn summaries(records_json: &str) -> PyResult<String> {
    guard(|| {
        let sums = api::analysis::summaries(&records(records_json)?).map_err(analysis_err)?;
        serde_json::to_string(&sums).map_err(json_err)
    })
}

/// The paper's claims checked on the run records, as JSON.
#[pyfunction]
fn claims(records_json: &str) -> PyResult<String> {
    guard(|| {
        let claims = api::analysis::claims(&records(records_json)?).map_err(analysis_err)?;
        serde_json::to_string(&claims).map_err(json_err)
    })
}

/// The paper's published values (abstract and section 6) with their sources, as JSON.
#[pyfunction]
fn published_values() -> PyResult<String> {
    guard(|| serde_json::to_string(api::analysis::PUBLISHED).map_err(json_err))
}

/// The Markdown report of the run records; `explanations` (claim id -> text) are added to
/// the claims' own explanations.
#[pyfunction]
#[pyo3(signature = (records_json, notes, explanations=None))]
fn figure10_report(
    records_json: &str,
    notes: Vec<String>,
    explanations: Option<std::collections::HashMap<String, String>>,
) -> PyResult<String> {
    guard(|| {
        let explanations = explanations.unwrap_or_default();
        api::analysis::report(&records(records_json)?, &notes, &explanations).map_err(analysis_err)
    })
}

/// Writes reductions.csv and reductions.json of the run records into `dir`.
#[pyfunction]
fn write_figure10_tables(dir: &str, records_json: &str) -> PyResult<()> {
    guard(|| {
        api::analysis::write_tables(Path::new(dir), &records(records_json)?).map_err(analysis_err)
    })
}

/// A value as a Python int or float.
fn stat_value(py: Python<'_>, v: &StatValue) -> PyObject {
    match *v {
        StatValue::Int(i) => i.into_py(py),
        StatValue::Float(f) => f.into_py(py),
    }
}

/// Reads gem5-format `stats.txt` text (gem5's or ours; `file` names it in errors). Returns
/// `(dump index, rows)` for every dump, or for dump `dump` only (from 0, or from the end
/// when negative); a row is `(name, value, pdf, cdf, unit, description, line)`, a oneline
/// vector's elements named `name::i`, pdf and cdf in percent or None.
#[pyfunction]
#[pyo3(signature = (text, file, dump=None))]
fn parse_stats<'py>(
    py: Python<'py>,
    text: &str,
    file: &str,
    dump: Option<i64>,
) -> PyResult<Bound<'py, PyList>> {
    guard(|| {
        let err = |e: String| StatsError::new_err(e);
        let parsed = api::gem5::StatsFile::parse(text, file).map_err(|e| err(e.to_string()))?;
        let picked: Vec<(usize, &api::gem5::Dump)> = match dump {
            Some(i) => vec![parsed.select(i).map_err(err)?],
            None => parsed.dumps.iter().enumerate().collect(),
        };
        let out = PyList::empty_bound(py);
        for (at, d) in picked {
            let rows = PyList::empty_bound(py);
            for f in d.values() {
                let row = PyTuple::new_bound(
                    py,
                    [
                        f.name.as_ref().into_py(py),
                        stat_value(py, &f.cell.value),
                        f.cell.pdf.into_py(py),
                        f.cell.cdf.into_py(py),
                        f.entry.unit.as_str().into_py(py),
                        f.entry.desc.as_str().into_py(py),
                        f.entry.line.into_py(py),
                    ],
                );
                rows.append(row)?;
            }
            out.append((at, rows))?;
        }
        Ok(out)
    })
}

/// Compares the gem5 run in `gem5_dir` (its dump `dump`, -1 for the last) with the embedded
/// run in `embedded_dir`; returns the comparison as JSON (runs, tolerance, rows).
#[pyfunction]
fn compare(
    py: Python<'_>,
    gem5_dir: &str,
    embedded_dir: &str,
    dump: i64,
    tolerance_pct: f64,
) -> PyResult<String> {
    guard(|| {
        let c = py
            .allow_threads(|| {
                api::gem5::compare(
                    Path::new(gem5_dir),
                    Path::new(embedded_dir),
                    dump,
                    tolerance_pct,
                )
            })
            .map_err(|e| StatsError::new_err(e.to_string()))?;
        serde_json::to_string(&c.to_json()).map_err(json_err)
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MopedError", py.get_type_bound::<MopedError>())?;
    m.add("ConfigError", py.get_type_bound::<ConfigError>())?;
    m.add("ProtocolError", py.get_type_bound::<ProtocolError>())?;
    m.add("ProgramError", py.get_type_bound::<ProgramError>())?;
    m.add("SimulationError", py.get_type_bound::<SimulationError>())?;
    m.add("StatsError", py.get_type_bound::<StatsError>())?;
    m.add("InputError", py.get_type_bound::<InputError>())?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(_stop_runs, m)?)?;
    m.add_function(wrap_pyfunction!(figure10_claim, m)?)?;
    m.add_class::<OutputClaim>()?;
    m.add_function(wrap_pyfunction!(store::store_claim, m)?)?;
    m.add_function(wrap_pyfunction!(store::store_take, m)?)?;
    m.add_function(wrap_pyfunction!(store::store_keep, m)?)?;
    m.add_function(wrap_pyfunction!(store::store_finish, m)?)?;
    m.add_function(wrap_pyfunction!(parse_stats, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(default_config_toml, m)?)?;
    m.add_function(wrap_pyfunction!(validate_config, m)?)?;
    m.add_function(wrap_pyfunction!(config_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(info_config_json, m)?)?;
    m.add_function(wrap_pyfunction!(info_stats_json, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(random_test, m)?)?;
    m.add_function(wrap_pyfunction!(designs, m)?)?;
    m.add_function(wrap_pyfunction!(summed_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(protocol_names, m)?)?;
    m.add_function(wrap_pyfunction!(protocol_markdown, m)?)?;
    m.add_function(wrap_pyfunction!(lint_protocol, m)?)?;
    m.add_function(wrap_pyfunction!(run_workload, m)?)?;
    m.add_function(wrap_pyfunction!(parse_goal, m)?)?;
    m.add_function(wrap_pyfunction!(reductions, m)?)?;
    m.add_function(wrap_pyfunction!(summaries, m)?)?;
    m.add_function(wrap_pyfunction!(claims, m)?)?;
    m.add_function(wrap_pyfunction!(published_values, m)?)?;
    m.add_function(wrap_pyfunction!(figure10_report, m)?)?;
    m.add_function(wrap_pyfunction!(write_figure10_tables, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::figure10_plan, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::figure10, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::figure10_finish, m)?)?;
    m.add("MATCHING_CSV_HEADER", api::matching::CSV_HEADER.to_vec())?;
    m.add(
        "MATCHING_FIGURE10_CSV_HEADER",
        api::matching::figure10::CSV_HEADER.to_vec(),
    )?;
    m.add(
        "MATCHING_STREAM64_CSV_HEADER",
        api::matching::stream64::CSV_HEADER.to_vec(),
    )?;
    m.add("MATCHING_LHS_CSV_HEADER", api::lhs_csv::CSV_HEADER.to_vec())?;
    m.add("MATCHING_ENGINES", experiments::matcher_names())?;
    m.add_function(wrap_pyfunction!(experiments::matching, m)?)?;
    m.add_function(wrap_pyfunction!(experiments::lhs, m)?)?;
    m.add("ENGINES_CSV_HEADER", api::engines::CSV_HEADER.to_vec())?;
    m.add(
        "TIGON_CSV_HEADER",
        api::engines::tigon::TIGON_CSV_HEADER.to_vec(),
    )?;
    m.add(
        "SCALING_CSV_HEADER",
        api::bench::SCALING_CSV_HEADER.to_vec(),
    )?;
    m.add_function(wrap_pyfunction!(experiments::engines, m)?)?;
    Ok(())
}
