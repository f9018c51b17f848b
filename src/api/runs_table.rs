//! The store's table, `runs.csv` (see [`super::store`]): a row per run of an experiment's
//! folder, the same columns for every experiment (Figure 10, the matching engines, the
//! engine schemes, the LHS paper's setting, a Python sweep), so one reader
//! (`moped.load_results`) takes any of them.
//!
//! The rows come from the runs an experiment holds in memory ([`rows_of`]) or from the
//! run folders under its folder ([`scan`]: each with `key.json`, `record.json` and
//! `config.toml`), for experiments whose parts run under configurations of their own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::SystemConfig;
use crate::error::MopedError;

use super::experiments::{Outcome, Task};
use super::store::{self, RunKey};

/// The columns every row has, before the configuration's and the metrics'.
pub const RUN_COLUMNS: [&str; 14] = [
    "key",
    "benchmark",
    "group",
    "design",
    "seed",
    "iterations",
    "workload",
    "reused",
    "events",
    "host_seconds",
    "messages_verified",
    "bytes_verified",
    "notes",
    "folder",
];

/// One run of the table.
#[derive(Clone, Debug)]
pub struct TableRow {
    /// Its folder, relative to the experiment's (`runs/<name>`, `microcoded/runs/<name>`).
    pub folder: String,
    pub key: RunKey,
    /// The resolved configuration's keys and values (see [`store::config_columns`]).
    pub config: Vec<(String, String)>,
    pub outcome: Outcome,
}

/// The rows of runs made in memory: `tasks` and their `outcomes` in the same order, each
/// in `runs/<task dir name>`, all under `cfg` at the iteration scale `iterations`.
pub fn rows_of(
    cfg: &SystemConfig,
    iterations: Option<f64>,
    tasks: &[Task],
    outcomes: &[Outcome],
) -> Result<Vec<TableRow>, MopedError> {
    let config = store::config_columns(cfg);
    tasks
        .iter()
        .zip(outcomes)
        .map(|(task, o)| {
            Ok(TableRow {
                folder: format!("runs/{}", task.dir_name()),
                key: store::run_key(cfg, task.key_parts(), iterations)?,
                config: config.clone(),
                outcome: o.clone(),
            })
        })
        .collect()
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> MopedError + '_ {
    move |e| MopedError::Io(format!("{}: {e}", path.display()))
}

/// The rows of every finished run folder under `dir` (at any depth, in path order; a
/// hidden folder is an unfinished claim and is passed over).
pub fn scan(dir: &Path) -> Result<Vec<TableRow>, MopedError> {
    let mut rows = Vec::new();
    scan_into(dir, dir, &mut rows)?;
    Ok(rows)
}

fn scan_into(root: &Path, dir: &Path, rows: &mut Vec<TableRow>) -> Result<(), MopedError> {
    if dir.join(store::KEY_FILE).is_file() && dir.join(store::RECORD_FILE).is_file() {
        rows.push(read_row(root, dir)?);
        return Ok(());
    }
    let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io_err(dir))?;
    subdirs.retain(|p| {
        p.is_dir()
            && !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
    });
    subdirs.sort();
    for sub in subdirs {
        scan_into(root, &sub, rows)?;
    }
    Ok(())
}

/// A run folder's row: its key, outcome and configuration, each read back from its file.
fn read_row(root: &Path, dir: &Path) -> Result<TableRow, MopedError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path)
            .map_err(io_err(&path))
            .map(|text| (path, text))
    };
    let bad =
        |path: &Path, e: &dyn std::fmt::Display| MopedError::Io(format!("{}: {e}", path.display()));
    let (path, text) = read(store::KEY_FILE)?;
    let key: RunKey = serde_json::from_str(&text).map_err(|e| bad(&path, &e))?;
    let (path, text) = read(store::RECORD_FILE)?;
    let outcome: Outcome = serde_json::from_str(&text).map_err(|e| bad(&path, &e))?;
    let (path, text) = read("config.toml")?;
    let config = store::toml_columns(&text).map_err(|e| bad(&path, &e))?;
    let folder = dir.strip_prefix(root).unwrap_or(dir);
    let folder = folder
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    Ok(TableRow {
        folder,
        key,
        config,
        outcome,
    })
}

/// Writes `rows` as `runs.csv` into `dir`: [`RUN_COLUMNS`], then every configuration key
/// any row has (in the order first seen; a row without one leaves it empty), then every
/// metric (in name order).
pub fn write(dir: &Path, rows: &[TableRow]) -> Result<(), MopedError> {
    let path = dir.join(store::TABLE_FILE);
    let csv_err = |e: csv::Error| MopedError::Io(format!("{}: {e}", path.display()));
    let mut config: Vec<&str> = Vec::new();
    let mut seen = BTreeSet::new();
    for (k, _) in rows.iter().flat_map(|r| &r.config) {
        if seen.insert(k.as_str()) {
            config.push(k);
        }
    }
    let metrics: BTreeSet<&String> = rows
        .iter()
        .flat_map(|r| r.outcome.record.metrics.keys())
        .collect();
    let mut w = csv::Writer::from_path(&path).map_err(csv_err)?;
    let header = RUN_COLUMNS
        .iter()
        .copied()
        .chain(config.iter().copied())
        .chain(metrics.iter().map(|m| m.as_str()));
    w.write_record(header).map_err(csv_err)?;
    for r in rows {
        let o = &r.outcome;
        let mut row = vec![
            r.key.key.clone(),
            o.record.benchmark.clone(),
            o.record.group.clone(),
            o.record.design.clone(),
            o.record.seed.to_string(),
            r.key.iterations.map_or(String::new(), |f| f.to_string()),
            r.key.workload.clone(),
            o.reused.to_string(),
            o.events.to_string(),
            o.host_seconds.to_string(),
            o.messages_verified.to_string(),
            o.bytes_verified.to_string(),
            o.notes.join("; "),
            r.folder.clone(),
        ];
        let value = |k: &str| r.config.iter().find(|(c, _)| c == k).map(|(_, v)| v);
        row.extend(config.iter().map(|k| value(k).cloned().unwrap_or_default()));
        row.extend(metrics.iter().map(|m| {
            o.record
                .metrics
                .get(*m)
                .map_or(String::new(), f64::to_string)
        }));
        w.write_record(&row).map_err(csv_err)?;
    }
    w.flush()
        .map_err(|e| MopedError::Io(format!("{}: {e}", path.display())))
}

/// Writes `runs.csv` into `dir` from the run folders under it ([`scan`]); returns how
/// many runs it holds and how many of them were reused.
pub fn write_scanned(dir: &Path) -> Result<(usize, usize), MopedError> {
    let rows = scan(dir)?;
    write(dir, &rows)?;
    let reused = rows.iter().filter(|r| r.outcome.reused).count();
    Ok((rows.len(), reused))
}
