//! One program file simulated on one system: the `moped run` door.

use std::path::Path;
use std::time::Instant;

use crate::coherence::Protocol;
use crate::config::SystemConfig;
use crate::core::{Program, ProgramDriver};
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::ports::PortMap;
use crate::os::Region;
use crate::sim::Sim;
use crate::stats::StatsRegistry;

use super::output::{self, OutDir, RunInfo};

/// The outcome of one simulated program.
#[derive(Debug)]
pub struct RunResult {
    pub config: SystemConfig,
    pub design: Design,
    pub cycles: u64,
    pub host_seconds: f64,
    pub stats: StatsRegistry,
}

/// Simulates `program` on the system `cfg` under `design`.
pub fn run_program(
    cfg: &SystemConfig,
    program: &Program,
    design: Design,
    seed: u64,
) -> Result<RunResult, MopedError> {
    let proto = Protocol::of(design);
    if program.cores.len() != cfg.system.cores {
        return Err(MopedError::Io(format!(
            "the program has {} cores but the system has {}",
            program.cores.len(),
            cfg.system.cores
        )));
    }
    let mut sim = Sim::new(cfg, proto, seed)?;
    for ps in &program.processes {
        let regions: Vec<Region> = ps
            .regions
            .iter()
            .map(|r| (r, true))
            .chain(ps.lazy_regions.iter().map(|r| (r, false)))
            .map(|(r, populate)| Region {
                va: r[0]..r[0].saturating_add(r[1]),
                populate,
            })
            .collect();
        let p = sim
            .spawn(ps.program, ps.rank, &regions)
            .map_err(|e| MopedError::Io(format!("process {}/{}: {e}", ps.program, ps.rank)))?;
        sim.place(ps.core, Some(p));
    }
    let ports = PortMap::new(cfg.moped.port_base).map_err(|e| MopedError::Io(e.to_string()))?;
    let mut driver = ProgramDriver::with_ports(program.clone(), cfg.system.cpi, ports);
    let t0 = Instant::now();
    let cycles = sim.run(&mut driver)?;
    let host_seconds = t0.elapsed().as_secs_f64();
    let mut stats = sim.stats(host_seconds);
    for c in 0..cfg.system.cores {
        stats.scalar(
            format!("system.cpu{c}.instructions"),
            driver.instructions(c),
            "Instructions executed (compute instructions plus one per access)",
            "Count",
        );
    }
    Ok(RunResult {
        config: cfg.clone(),
        design,
        cycles,
        host_seconds,
        stats,
    })
}

/// Writes stats.txt, stats.json and stats.csv into `dir`.
pub fn write_results(dir: &Path, r: &RunResult) -> Result<(), MopedError> {
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", dir.display()));
    r.stats.write_all(dir).map_err(io)
}

/// Simulates the program file at `path` under `design`; with `out`, writes the results
/// there ([`write_results`], with `config.toml` and `run.json`), or marks it FAILED.
pub fn run_file(
    cfg: &SystemConfig,
    path: &Path,
    design: Design,
    seed: u64,
    out: Option<OutDir>,
) -> Result<RunResult, MopedError> {
    let result = Program::from_file(path, cfg)
        .map_err(MopedError::from)
        .and_then(|program| run_program(cfg, &program, design, seed));
    output::finish(out, result, |r, dir| {
        write_results(dir, r)?;
        Ok(RunInfo {
            config: r.config.clone(),
            seed: seed.into(),
            workload: path.display().to_string(),
            design: design.to_string(),
        })
    })
}
