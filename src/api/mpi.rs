//! One MPI workload (a spec or a GOAL schedule) simulated with every message checked: the
//! `moped mpi` door; and a workload written as a GOAL schedule: `moped goal`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::SystemConfig;
use crate::design::Design;
use crate::envelope::Peer;
use crate::error::MopedError;
use crate::mpi::{run_workload, MpiRun};
use crate::workload::{load_workload, load_workload_touched, Call, Workload};

use super::experiments::metrics;
use super::figure10::check_scale;
use super::output::{self, OutDir, RunInfo};

/// A finished workload run and what was simulated.
#[derive(Debug)]
pub struct MpiOutcome {
    pub workload: Workload,
    pub run: MpiRun,
    /// Figure 10's metrics of the run.
    pub metrics: BTreeMap<String, f64>,
}

/// Simulates the workload at `path` under `design`; with `out`, writes its statistics
/// (stats.txt, stats.json, stats.csv, with `config.toml` and `run.json`) there, or marks
/// it FAILED. With `ranks`, an IMB or NPB spec runs on that many ranks, on a system
/// [fitted](SystemConfig::fit_ranks) to them (the config written is the one run).
pub fn mpi(
    cfg: &SystemConfig,
    path: &Path,
    design: Design,
    seed: u64,
    (iterations, ranks): (Option<f64>, Option<usize>),
    out: Option<OutDir>,
) -> Result<MpiOutcome, MopedError> {
    let mut cfg = cfg.clone();
    let loaded = check_scale(iterations).and_then(|()| {
        let how = (cfg.workload.warmup, cfg.workload.touch_buffers);
        load_workload_touched(path, ranks, iterations, how).map_err(MopedError::Io)
    });
    if let (Some(p), Ok((w, _))) = (ranks, &loaded) {
        cfg.fit_ranks(p, crate::mpi::frame_need(w, &cfg).total());
    }
    let cfg = &cfg;
    let outcome = loaded.and_then(|(workload, _)| {
        cfg.validate()?;
        let run = run_workload(cfg, &workload, design, seed, (&cfg.mpi).into())?;
        let metrics = metrics(&run);
        Ok(MpiOutcome {
            workload,
            run,
            metrics,
        })
    });
    output::finish(out, outcome, |o, dir| {
        let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", dir.display()));
        o.run.stats.write_all(dir).map_err(io)?;
        Ok(RunInfo {
            config: cfg.clone(),
            seed: seed.into(),
            workload: path.display().to_string(),
            design: design.to_string(),
        })
    })
}

/// A GOAL schedule's summary: its name, notes, and per rank its calls, sends, receives
/// (wildcard-source ones counted apart) and buffer bytes. The error names file:line:col.
pub fn goal_summary(text: &str, file: &str) -> Result<serde_json::Value, String> {
    let w = crate::workload::goal::parse_goal(text, file).map_err(|e| e.to_string())?;
    let ranks: Vec<serde_json::Value> = w
        .ranks
        .iter()
        .map(|r| {
            let count = |f: &dyn Fn(&Call) -> bool| r.calls.iter().filter(|c| f(c)).count();
            serde_json::json!({
                "calls": r.calls.len(),
                "sends": count(&|c| matches!(c, Call::Isend { .. })),
                "recvs": count(&|c| matches!(c, Call::Irecv { .. })),
                "any_source_recvs": count(&|c| matches!(c, Call::Irecv { src: Peer::Any, .. })),
                "buffer_bytes": r.buffers.iter().map(|b| b.bytes).sum::<u64>(),
            })
        })
        .collect();
    Ok(serde_json::json!({"name": w.name, "ranks": ranks, "notes": w.notes}))
}

/// A workload written as a GOAL schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalWritten {
    pub name: String,
    pub ranks: usize,
    /// Sends, receives and calcs.
    pub operations: usize,
}

/// Builds the workload at `path` (a spec or a GOAL schedule), with its warm-up when
/// `warmup`, and writes it to `out` as a GOAL schedule (`workload::goal::write_goal`).
pub fn write_goal(path: &Path, out: &Path, warmup: bool) -> Result<GoalWritten, MopedError> {
    let (w, _) = load_workload(path, None, warmup).map_err(MopedError::Io)?;
    let text = crate::workload::goal::write_goal(&w)
        .map_err(|e| MopedError::Io(format!("{}: {e}", path.display())))?;
    std::fs::write(out, &text).map_err(|e| MopedError::Io(format!("{}: {e}", out.display())))?;
    // Operations are the labelled lines (`l12: send ...`).
    let operations = text
        .lines()
        .filter(|l| l.starts_with('l') && l.contains(": "))
        .count();
    Ok(GoalWritten {
        name: w.name,
        ranks: w.ranks.len(),
        operations,
    })
}
