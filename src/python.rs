#![cfg(feature = "python")]
// pyo3 0.22's macros expand to a `gil-refs` feature check and to `?` conversions that
// clippy flags in the caller's crate.
#![allow(unexpected_cfgs, clippy::useless_conversion)]

//! PyO3 bindings: the extension module `moped._core`. It only converts types and maps
//! errors; the simulator knows nothing of Python. The pure-Python package `moped`
//! (python/moped) wraps it.

use std::path::Path;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::analysis::{self, AnalysisError, RunRecord};
use crate::coherence::protocols;
use crate::coherence::Protocol;
use crate::config::SystemConfig;
use crate::core::Program;
use crate::run::{run_program, write_results, MopedError as CoreError};
use crate::stats::StatValue;
use crate::tester::{self, TesterConfig};

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

fn to_py(e: CoreError) -> PyErr {
    match e {
        CoreError::Config(e) => ConfigError::new_err(e.to_string()),
        CoreError::Protocol(e) => ProtocolError::new_err(e.to_string()),
        CoreError::Program(e) => ProgramError::new_err(e.to_string()),
        CoreError::Simulation(e) => SimulationError::new_err(e.to_string()),
        CoreError::Io(msg) => MopedError::new_err(msg),
    }
}

fn analysis_err(e: AnalysisError) -> PyErr {
    MopedError::new_err(e.to_string())
}

fn json_err(e: serde_json::Error) -> PyErr {
    MopedError::new_err(e.to_string())
}

/// Run records from JSON (a list of {benchmark, group, design, seed, metrics}).
fn records(records_json: &str) -> PyResult<Vec<RunRecord>> {
    analysis::records_from_json(records_json).map_err(analysis_err)
}

fn config_err(e: impl std::fmt::Display) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// Runs the `moped` command line with `argv` (argv[0] is the program name); returns the exit
/// status.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.allow_threads(|| crate::cli::main_with_args(argv))
}

/// The default configuration (the paper's Table 1) as TOML.
#[pyfunction]
fn default_config_toml() -> String {
    SystemConfig::default().to_toml_string()
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

/// Merges `over` into `base`, table by table.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The first key path of `over` that `known` lacks.
fn unknown_key(known: &toml::Table, over: &toml::Table, prefix: &str) -> Option<String> {
    for (k, v) in over {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match (known.get(k), v) {
            (None, _) => return Some(path),
            (Some(toml::Value::Table(kt)), toml::Value::Table(ot)) => {
                if let Some(p) = unknown_key(kt, ot, &path) {
                    return Some(p);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_config(text: &str, file: &str) -> PyResult<SystemConfig> {
    let cfg = SystemConfig::from_toml_str(text, file).map_err(config_err)?;
    cfg.validate().map_err(config_err)?;
    Ok(cfg)
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
    let cfg = parse_config(toml_text, file)?;
    let Some(overrides) = overrides else {
        return Ok(cfg.to_toml_string());
    };
    let over = dict_to_table(overrides, "")?;
    let mut table: toml::Table = toml::from_str(&cfg.to_toml_string()).map_err(config_err)?;
    let unknown = unknown_key(&table, &over, "");
    merge(&mut table, over);
    let merged = toml::to_string(&table).map_err(config_err)?;
    match parse_config(&merged, "<overrides>") {
        Ok(cfg) => Ok(cfg.to_toml_string()),
        Err(e) => match unknown {
            Some(path) => Err(config_err(format!("unknown config key `{path}`"))),
            None => Err(e),
        },
    }
}

/// The resolved config as JSON (for `SystemConfig.to_dict`).
#[pyfunction]
fn config_to_json(toml_text: &str, file: &str) -> PyResult<String> {
    let cfg = parse_config(toml_text, file)?;
    serde_json::to_string(&cfg).map_err(config_err)
}

/// Simulates the program file at `program_path`; with `out`, also writes the result files.
/// Returns {"stats": [[name, value, unit, description], ...], "cycles", "config_toml",
/// "protocol", "host_seconds"}.
#[pyfunction]
#[pyo3(signature = (config_toml, program_path, protocol, seed, out=None))]
fn run<'py>(
    py: Python<'py>,
    config_toml: &str,
    program_path: &str,
    protocol: &str,
    seed: u64,
    out: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let cfg = parse_config(config_toml, "<config>")?;
    let program = Program::from_file(Path::new(program_path), cfg.system.cores)
        .map_err(|e| ProgramError::new_err(e.to_string()))?;
    let protocol = protocol.to_string();
    let result = py
        .allow_threads(|| {
            let r = run_program(&cfg, &program, &protocol, seed)?;
            if let Some(dir) = &out {
                write_results(Path::new(dir), &r)?;
            }
            Ok(r)
        })
        .map_err(to_py)?;
    let stats = PyList::empty_bound(py);
    for s in result.stats.stats() {
        let value = stat_value(py, &s.value);
        let row = PyList::new_bound(
            py,
            [
                s.name.clone().into_py(py),
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
    d.set_item("protocol", &result.protocol)?;
    d.set_item("host_seconds", result.host_seconds)?;
    Ok(d)
}

/// Runs the random coherence tester; a failure raises SimulationError naming the seed and the
/// replay command.
#[pyfunction]
fn random_test<'py>(
    py: Python<'py>,
    cores: usize,
    checks: u64,
    seed: u64,
) -> PyResult<Bound<'py, PyDict>> {
    if cores == 0 {
        return Err(ConfigError::new_err(
            "the random tester needs at least one core",
        ));
    }
    let cfg = TesterConfig::new(cores, checks, seed);
    let r = py
        .allow_threads(|| tester::run(&cfg))
        .map_err(SimulationError::new_err)?;
    let d = PyDict::new_bound(py);
    d.set_item("checks_completed", r.checks_completed)?;
    d.set_item("loads", r.loads)?;
    d.set_item("stores", r.stores)?;
    d.set_item("mismatches", r.mismatches)?;
    d.set_item("watchdog_trips", r.watchdog_trips)?;
    d.set_item("cycles", r.cycles)?;
    d.set_item("events", r.events)?;
    d.set_item("messages", r.messages)?;
    Ok(d)
}

/// Names of the shipped protocols.
#[pyfunction]
fn protocol_names() -> Vec<String> {
    Protocol::names().iter().map(|s| s.to_string()).collect()
}

/// Both machines of a shipped protocol as Markdown tables.
#[pyfunction]
fn protocol_markdown(name: &str) -> PyResult<String> {
    crate::cli::protocol_markdown(name).map_err(to_py)
}

/// Checks one machine file's text; raises ProtocolError with `file:line:col: reason`.
#[pyfunction]
fn lint_protocol(text: &str, file: &str) -> PyResult<()> {
    protocols::lint(text, file)
        .map(|_| ())
        .map_err(|e| ProtocolError::new_err(e.to_string()))
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
    let cfg = parse_config(config_toml, "<config>")?;
    let task = crate::experiments::Task {
        spec: spec_path.into(),
        design: design.to_string(),
        seed,
    };
    let outcome = py
        .allow_threads(|| {
            crate::experiments::run_task(
                &cfg,
                &task,
                iteration_scale,
                out.map(std::path::Path::new),
            )
        })
        .map_err(to_py)?;
    serde_json::to_string(&outcome).map_err(json_err)
}

/// Reads a GOAL schedule (`text`, named `file` in errors) into per-rank MPI calls and
/// returns a summary as JSON: name, ranks, and per rank its calls, sends, receives
/// (wildcard ones counted apart) and buffer bytes. Errors raise ProgramError with
/// file:line:col.
#[pyfunction]
fn parse_goal(text: &str, file: &str) -> PyResult<String> {
    use crate::workload::Call;
    let w = crate::workload::goal::parse_goal(text, file)
        .map_err(|e| ProgramError::new_err(e.to_string()))?;
    let ranks: Vec<serde_json::Value> = w
        .ranks
        .iter()
        .map(|r| {
            let count = |f: &dyn Fn(&Call) -> bool| r.calls.iter().filter(|c| f(c)).count();
            serde_json::json!({
                "calls": r.calls.len(),
                "sends": count(&|c| matches!(c, Call::Isend { .. })),
                "recvs": count(&|c| matches!(c, Call::Irecv { .. })),
                "any_source_recvs": count(&|c| matches!(
                    c,
                    Call::Irecv { src: crate::envelope::Peer::Any, .. }
                )),
                "buffer_bytes": r.buffers.iter().map(|b| b.bytes).sum::<u64>(),
            })
        })
        .collect();
    let out = serde_json::json!({"name": w.name, "ranks": ranks, "notes": w.notes});
    Ok(out.to_string())
}

/// The reductions of the run records (a JSON list) against the baseline, as JSON.
#[pyfunction]
fn reductions(records_json: &str) -> PyResult<String> {
    let red = analysis::reductions(&records(records_json)?).map_err(analysis_err)?;
    serde_json::to_string(&red).map_err(json_err)
}

/// Per (group, design, metric): geometric mean of the ratios, smallest and largest
/// reduction, as JSON.
#[pyfunction]
fn summaries(records_json: &str) -> PyResult<String> {
    let red = analysis::reductions(&records(records_json)?).map_err(analysis_err)?;
    serde_json::to_string(&analysis::summaries(&red)).map_err(json_err)
}

/// The paper's claims checked on the run records, as JSON.
#[pyfunction]
fn claims(records_json: &str) -> PyResult<String> {
    let recs = records(records_json)?;
    let red = analysis::reductions(&recs).map_err(analysis_err)?;
    let mut claims = analysis::check_claims(&red);
    analysis::explain(&mut claims, &recs);
    serde_json::to_string(&claims).map_err(json_err)
}

/// The paper's published values (abstract and section 6) with their sources, as JSON.
#[pyfunction]
fn published_values() -> PyResult<String> {
    serde_json::to_string(analysis::PUBLISHED).map_err(json_err)
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
    let recs = records(records_json)?;
    let red = analysis::reductions(&recs).map_err(analysis_err)?;
    let mut claims = analysis::check_claims(&red);
    analysis::explain(&mut claims, &recs);
    for c in &mut claims {
        if let Some(text) = explanations.as_ref().and_then(|e| e.get(&c.id)) {
            c.explanation = format!("{} {}", c.explanation, text.trim());
        }
    }
    Ok(analysis::report_markdown(&recs, &red, &claims, &notes))
}

/// Writes reductions.csv and reductions.json of the run records into `dir`.
#[pyfunction]
fn write_figure10_tables(dir: &str, records_json: &str) -> PyResult<()> {
    let red = analysis::reductions(&records(records_json)?).map_err(analysis_err)?;
    analysis::write_tables(Path::new(dir), &red).map_err(analysis_err)
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
    let err = |e: String| StatsError::new_err(e);
    let parsed =
        crate::stats::gem5::StatsFile::parse(text, file).map_err(|e| err(e.to_string()))?;
    let picked: Vec<(usize, &crate::stats::gem5::Dump)> = match dump {
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
    let c = py
        .allow_threads(|| {
            analysis::compare::compare(
                Path::new(gem5_dir),
                Path::new(embedded_dir),
                dump,
                tolerance_pct,
            )
        })
        .map_err(|e| StatsError::new_err(e.to_string()))?;
    serde_json::to_string(&c.to_json()).map_err(json_err)
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
    m.add_function(wrap_pyfunction!(parse_stats, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(default_config_toml, m)?)?;
    m.add_function(wrap_pyfunction!(validate_config, m)?)?;
    m.add_function(wrap_pyfunction!(config_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(random_test, m)?)?;
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
    Ok(())
}
