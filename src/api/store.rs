//! The results store of an experiment's folder.
//!
//! - Every run is identified by a key: a SHA-256 of what determines its results (the
//!   workload file's bytes, the resolved configuration, the design, the seed, the
//!   iteration scale, moped's version and a fingerprint of the simulator's sources, so a
//!   run made by other code is never reused). A run's folder holds it as `key.json`.
//! - An experiment that runs again into a folder holding its store (`store.json`) takes
//!   each run whose key is unchanged from there instead of simulating it again; a failed
//!   or interrupted experiment keeps its finished runs there, so the next one resumes.
//! - All runs go into one tidy table, `runs.csv`: a row per run with its key, what it
//!   was (benchmark, design, seed, iteration scale, workload), every configuration key as
//!   a column, its host costs and its metrics. Python's `moped.load_results` reads it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::SystemConfig;
use crate::error::MopedError;

use crate::design::Design;

pub use super::output::{mark_store, STORE_FILE};
/// A run's identity, in its folder.
pub const KEY_FILE: &str = "key.json";
/// The store's table of every run.
pub const TABLE_FILE: &str = "runs.csv";
/// SHA-256 of the simulator's sources (`src/`, `protocols/`) this build was made from.
pub const SOURCE_SHA256: &str = env!("MOPED_SOURCE_SHA256");

/// A run's outcome, in its folder (written by `experiments::run_task`).
pub const RECORD_FILE: &str = "record.json";

/// What determines one run's results, and its hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunKey {
    /// SHA-256 (hex) of the fields below and the resolved configuration.
    pub key: String,
    pub workload: String,
    pub workload_sha256: String,
    pub design: String,
    pub seed: u64,
    pub iterations: Option<f64>,
    pub version: String,
    /// SHA-256 of the simulator's sources this build was made from.
    pub source_sha256: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> MopedError + '_ {
    move |e| MopedError::Io(format!("{}: {e}", path.display()))
}

/// The SHA-256 of a workload: a file's bytes, or a recorded run's rank files, each
/// name and content in rank order.
fn workload_digest(spec: &Path) -> Result<String, MopedError> {
    if !spec.is_dir() {
        let bytes = std::fs::read(spec).map_err(io_err(spec))?;
        return Ok(hex(&Sha256::digest(&bytes)));
    }
    let mut h = Sha256::new();
    for r in 0.. {
        let name = format!("rank-{r}.trace");
        let path = spec.join(&name);
        if !path.is_file() {
            break;
        }
        h.update(name.as_bytes());
        h.update(std::fs::read(&path).map_err(io_err(&path))?);
    }
    Ok(hex(&h.finalize()))
}

/// The key of the workload `spec` run under `design` with `seed` on `cfg`, its iterations
/// scaled by `iterations`.
pub fn run_key(
    cfg: &SystemConfig,
    (spec, design, seed): (&Path, Design, u64),
    iterations: Option<f64>,
) -> Result<RunKey, MopedError> {
    let workload_sha256 = workload_digest(spec)?;
    let version = env!("CARGO_PKG_VERSION").to_string();
    let what = serde_json::json!({
        "format": "moped-run-key-1",
        "workload_sha256": workload_sha256,
        "config": cfg.to_toml_string(),
        "design": design.name(),
        "seed": seed,
        "iterations": iterations,
        "version": version,
        "source_sha256": SOURCE_SHA256,
    });
    Ok(RunKey {
        key: hex(&Sha256::digest(what.to_string().as_bytes())),
        workload: spec.display().to_string(),
        workload_sha256,
        design: design.name().to_string(),
        seed,
        iterations,
        version,
        source_sha256: SOURCE_SHA256.to_string(),
    })
}

/// Writes `key` into a run's folder.
pub fn write_key(dir: &Path, key: &RunKey) -> Result<(), MopedError> {
    let path = dir.join(KEY_FILE);
    let text = serde_json::to_string_pretty(key).expect("keys serialize");
    std::fs::write(&path, text + "\n").map_err(io_err(&path))
}

/// Whether `dir` holds the store of `experiment`.
pub fn holds_store(dir: &Path, experiment: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(STORE_FILE)) else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(&text)
        .is_ok_and(|v| v["experiment"] == experiment && v["format"] == "moped-store-1")
}

/// How an experiment claims its folder `out`: replaced without `force` when it holds this
/// experiment's store (an earlier run of it, finished or failed), and, unless `fresh`,
/// that store's runs reused. Returns (force, the folder to reuse runs from).
pub fn claim_terms(
    out: &Path,
    experiment: &str,
    force: bool,
    fresh: bool,
) -> (bool, Option<PathBuf>) {
    let ours = holds_store(out, experiment);
    (force || ours, (ours && !fresh).then(|| out.to_path_buf()))
}

/// The folder of a finished run in `store` (an earlier result folder) with the same key,
/// if there is one.
pub fn find(store: &Path, dir_name: &str, key: &RunKey) -> Option<PathBuf> {
    let dir = store.join("runs").join(dir_name);
    let text = std::fs::read_to_string(dir.join(KEY_FILE)).ok()?;
    let found: RunKey = serde_json::from_str(&text).ok()?;
    (found.key == key.key && dir.join(RECORD_FILE).is_file()).then_some(dir)
}

/// Copies the run folder `from` into `to` (created) and returns its record's text; the
/// copy's record says it was reused (`"reused": true`), for the store's table.
pub fn reuse(from: &Path, to: &Path) -> Result<String, MopedError> {
    std::fs::create_dir_all(to).map_err(io_err(to))?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(from)
        .map_err(io_err(from))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io_err(from))?;
    names.sort();
    for path in names.iter().filter(|p| p.is_file()) {
        let dest = to.join(path.file_name().expect("a listed file has a name"));
        std::fs::copy(path, &dest).map_err(io_err(path))?;
    }
    let record = from.join(RECORD_FILE);
    let text = std::fs::read_to_string(&record).map_err(io_err(&record))?;
    let mut value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| MopedError::Io(format!("{}: {e}", record.display())))?;
    value["reused"] = serde_json::Value::Bool(true);
    let text = serde_json::to_string_pretty(&value).expect("json values serialize");
    let copy = to.join(RECORD_FILE);
    std::fs::write(&copy, &text).map_err(io_err(&copy))?;
    Ok(text)
}

/// The folder of a run whose tasks may differ in configuration alone (a sweep's):
/// `<spec file stem>-<design>-s<seed>-<the key's first 12 hex digits>`.
pub fn keyed_dir_name((spec, design, seed): (&Path, Design, u64), key: &RunKey) -> String {
    let stem = spec
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy());
    format!("{stem}-{design}-s{seed}-{}", &key.key[..12])
}

/// The run `parts` under `cfg` at the iteration scale `iterations` in a store whose
/// folders are named by [`keyed_dir_name`]: its folder's name, and, when `earlier` (an
/// earlier result folder) holds it finished, its record's text once copied into
/// `into/runs/<name>` (see [`reuse`]).
pub fn take_earlier(
    earlier: Option<&Path>,
    into: &Path,
    parts: (&Path, Design, u64),
    cfg: &SystemConfig,
    iterations: Option<f64>,
) -> Result<(String, Option<String>), MopedError> {
    let key = run_key(cfg, parts, iterations)?;
    let name = keyed_dir_name(parts, &key);
    let Some(found) = earlier.and_then(|e| find(e, &name, &key)) else {
        return Ok((name, None));
    };
    let text = reuse(&found, &into.join("runs").join(&name))?;
    Ok((name, Some(text)))
}

/// Writes the key and the record (`record_json`, an outcome as `run_task` writes it) of a
/// run made outside the experiments' runner (a program file in a sweep) into its folder
/// `dir`, so the store can find it and its table can read it.
pub fn keep(
    dir: &Path,
    parts: (&Path, Design, u64),
    cfg: &SystemConfig,
    record_json: &str,
) -> Result<(), MopedError> {
    let record: serde_json::Value = serde_json::from_str(record_json)
        .map_err(|e| MopedError::Io(format!("the run's record: {e}")))?;
    let path = dir.join(RECORD_FILE);
    let text = serde_json::to_string_pretty(&record).expect("json values serialize");
    std::fs::write(&path, text).map_err(io_err(&path))?;
    write_key(dir, &run_key(cfg, parts, None)?)
}

/// The configuration's keys and values, flattened (`l2.latency`), in key order: the
/// configuration's columns of the store's table.
pub fn config_columns(cfg: &SystemConfig) -> Vec<(String, String)> {
    toml_columns(&cfg.to_toml_string()).expect("a configuration reads back")
}

/// [`config_columns`] of a configuration's TOML text (a run folder's `config.toml`).
pub fn toml_columns(text: &str) -> Result<Vec<(String, String)>, toml::de::Error> {
    let table: toml::Table = toml::from_str(text)?;
    let mut out = Vec::new();
    flatten(&table, "", &mut out);
    Ok(out)
}

fn flatten(table: &toml::Table, prefix: &str, out: &mut Vec<(String, String)>) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => flatten(t, &format!("{key}."), out),
            toml::Value::String(s) => out.push((key, s.clone())),
            v => out.push((key, v.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task's key, as the store takes it.
    #[derive(Clone)]
    struct Task {
        spec: PathBuf,
        design: Design,
        seed: u64,
    }

    fn key(cfg: &SystemConfig, t: &Task, iterations: Option<f64>) -> RunKey {
        run_key(cfg, (&t.spec, t.design, t.seed), iterations).unwrap()
    }

    #[test]
    fn a_key_changes_with_everything_that_determines_the_run() {
        let dir = std::env::temp_dir().join(format!("moped-store-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = dir.join("w.goal");
        std::fs::write(&spec, "num_ranks 2\nrank 0 {\n  calc 10\n}\n").unwrap();
        let task = Task {
            spec: spec.clone(),
            design: Design::OptCopy,
            seed: 1,
        };
        let cfg = SystemConfig::default();
        let base = key(&cfg, &task, None);
        assert_eq!(base, key(&cfg, &task, None), "deterministic");
        assert_eq!(base.source_sha256.len(), 64, "the sources' fingerprint");
        let mut other = cfg.clone();
        other.l2.latency = 12;
        let seed2 = Task {
            seed: 2,
            ..task.clone()
        };
        let basemoped = Task {
            design: Design::BaseMoped,
            ..task.clone()
        };
        let changed = [
            key(&other, &task, None),
            key(&cfg, &seed2, None),
            key(&cfg, &basemoped, None),
            key(&cfg, &task, Some(0.5)),
        ];
        for k in &changed {
            assert_ne!(k.key, base.key, "{k:?}");
        }
        std::fs::write(&spec, "num_ranks 2\nrank 0 {\n  calc 11\n}\n").unwrap();
        assert_ne!(key(&cfg, &task, None).key, base.key, "the bytes");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
