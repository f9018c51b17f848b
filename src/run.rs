//! The one-call entry points shared by the CLI and the Python package.

use std::path::Path;
use std::time::Instant;

use crate::coherence::Protocol;
use crate::config::{ConfigError, SystemConfig};
use crate::core::{Program, ProgramDriver, ProgramError};
use crate::moped::ports::PortMap;
use crate::os::Region;
use crate::protocol::ProtocolError;
use crate::sim::{Sim, SimError};
use crate::stats::StatsRegistry;

/// Every error a user can meet, one variant per kind.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MopedError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Protocol(#[from] ProtocolError),
    #[error("{0}")]
    Program(#[from] ProgramError),
    #[error("{0}")]
    Simulation(#[from] SimError),
    #[error("{0}")]
    Io(String),
}

/// The outcome of one simulated program.
#[derive(Debug)]
pub struct RunResult {
    pub config: SystemConfig,
    pub protocol: String,
    pub cycles: u64,
    pub host_seconds: f64,
    pub stats: StatsRegistry,
}

/// Simulates `program` on the system `cfg` with protocol `protocol` (a design name).
pub fn run_program(
    cfg: &SystemConfig,
    program: &Program,
    protocol: &str,
    seed: u64,
) -> Result<RunResult, MopedError> {
    let proto = Protocol::by_name(protocol)?;
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
        protocol: protocol.to_string(),
        cycles,
        host_seconds,
        stats,
    })
}

/// Writes stats.txt, stats.json, stats.csv and the resolved config.toml into `dir`.
pub fn write_results(dir: &Path, r: &RunResult) -> Result<(), MopedError> {
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    r.stats.write_all(dir).map_err(io)?;
    let mut cfg = r.config.to_toml_string();
    cfg.push_str(&format!("\n# protocol used for this run: {}\n", r.protocol));
    std::fs::write(dir.join("config.toml"), cfg).map_err(io)?;
    Ok(())
}

/// Loads a config file, or the defaults (the paper's Table 1) when `path` is None.
pub fn load_config(path: Option<&Path>) -> Result<SystemConfig, MopedError> {
    Ok(match path {
        Some(p) => SystemConfig::from_file(p)?,
        None => SystemConfig::default(),
    })
}
