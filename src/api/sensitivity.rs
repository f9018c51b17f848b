//! Figure 10 under the model's alternative choices (`moped figure10 --sensitivity`): each
//! [`Alternative`] is a set of config overrides on top of the configuration Figure 10 ran
//! under; its runs go into `sensitivity/<name>/` of the result folder, and its reductions
//! become rows of `sensitivity.csv` ([`crate::analysis::sensitivity`]).

use crate::analysis::sensitivity::{rows, AlternativeInfo, SensitivityRow};
use crate::analysis::{self, Reduction};
use crate::config::SystemConfig;
use crate::error::MopedError;

use super::experiments::{run_all, Outcome, Progress, Task};
use super::output::{OutDir, RunInfo};

/// One modelling choice done the other way.
#[derive(Clone, Copy, Debug)]
pub struct Alternative {
    /// Its name in sensitivity.csv and its folder's.
    pub name: &'static str,
    /// What it models, in words.
    pub what: &'static str,
    /// Config overrides, as `--set` takes them.
    pub set: &'static [(&'static str, &'static str)],
}

/// The alternatives, in the order of the issue that asked for them: warm-up, layout, page
/// tables and walks, the core, the port, buffer alignment; then memory bandwidth.
pub const ALTERNATIVES: [Alternative; 10] = [
    Alternative {
        name: "no-warmup",
        what: "cold caches: no warm-up, every cycle of a run counted",
        set: &[("workload.warmup", "false")],
    },
    Alternative {
        name: "page-stride-queues",
        what: "ch3:shm queues at a page-rounded stride instead of MPICH's own",
        set: &[("mpi.queue_stride", "page")],
    },
    Alternative {
        name: "address-order-frames",
        what: "physical frames handed out in address order",
        set: &[("os.frame_order", "address")],
    },
    Alternative {
        name: "x86-64-tables",
        what: "4-level x86-64 page tables instead of IA-32's 2 levels",
        set: &[("os.page_table", "x86_64")],
    },
    Alternative {
        name: "no-core-walks",
        what: "free translation for the cores: page-table lines come on chip only by MOPED",
        set: &[("system.page_walks", "false")],
    },
    Alternative {
        name: "walk-cache-32",
        what: "each MOPED keeps 32 page-table lines across transfers",
        set: &[("moped.walk_cache_lines", "32")],
    },
    Alternative {
        name: "blocking-core",
        what: "cores that wait for every load's value",
        set: &[("system.core_model", "blocking")],
    },
    Alternative {
        name: "port-latency-40",
        what: "a MOPED port access takes 40 cycles",
        set: &[("moped.port_latency", "40")],
    },
    Alternative {
        name: "page-aligned-buffers",
        what: "each message buffer on its own pages",
        set: &[("workload.buffer_align", "4096")],
    },
    Alternative {
        name: "memory-6.4gbs",
        what: "memory bandwidth limited to 6.4 GB/s, 1.6 GB/s per directory bank",
        set: &[("memory.channel_cycles", "40")],
    },
];

impl Alternative {
    /// `base` with this alternative applied, or `None` when that changes nothing (`base`
    /// already makes this choice).
    pub fn config(&self, base: &SystemConfig) -> Result<Option<SystemConfig>, MopedError> {
        let mut cfg = base.clone();
        for (key, value) in self.set {
            cfg.set(key, value)
                .map_err(|e| MopedError::Io(format!("alternative `{}`: {e}", self.name)))?;
        }
        cfg.validate()?;
        Ok((cfg != *base).then_some(cfg))
    }

    pub fn info(&self) -> AlternativeInfo {
        AlternativeInfo {
            name: self.name.to_string(),
            what: self.what.to_string(),
            set: self.set.iter().map(|(k, v)| format!("{k} = {v}")).collect(),
        }
    }
}

/// The alternatives that change `base`, with their configs.
pub fn applicable(base: &SystemConfig) -> Result<Vec<(Alternative, SystemConfig)>, MopedError> {
    let mut out = Vec::new();
    for a in ALTERNATIVES {
        if let Some(cfg) = a.config(base)? {
            out.push((a, cfg));
        }
    }
    Ok(out)
}

/// What the alternatives' runs gave.
#[derive(Clone, Debug, Default)]
pub struct SensitivityRuns {
    pub alternatives: Vec<AlternativeInfo>,
    /// Every alternative's rows, in the alternatives' order (the default's are added when
    /// the table is written).
    pub rows: Vec<SensitivityRow>,
    pub runs: usize,
    pub messages_verified: u64,
}

/// Runs `tasks` under every alternative that changes `info.config` (the default run's), on
/// `jobs` host threads, each into `sensitivity/<name>/` of `out` (its runs, its
/// reductions.csv, config.toml and run.json); `progress` hears of run `i` of alternative `k`
/// as run `(k + 1) * tasks.len() + i`.
pub fn run_alternatives(
    info: &RunInfo,
    tasks: &[Task],
    jobs: usize,
    iteration_scale: Option<f64>,
    out: &OutDir,
    progress: Progress,
) -> Result<SensitivityRuns, MopedError> {
    let mut got = SensitivityRuns::default();
    for (k, (alt, cfg)) in applicable(&info.config)?.into_iter().enumerate() {
        let offset = (k + 1) * tasks.len();
        let shifted =
            |i, done, r: &Result<Outcome, MopedError>| progress(offset + i, offset + done, r);
        let dir = out.child(&format!("sensitivity/{}", alt.name))?;
        let outcomes = run_all(&cfg, tasks, jobs, iteration_scale, Some(&dir), &shifted)?;
        let analysed = analyse(&outcomes, dir.path());
        let reductions = dir.finish(analysed, |_, _| {
            Ok(RunInfo {
                config: cfg.clone(),
                ..info.clone()
            })
        })?;
        got.rows.extend(rows(alt.name, &reductions));
        got.alternatives.push(alt.info());
        got.runs += outcomes.len();
        got.messages_verified += outcomes.iter().map(|o| o.messages_verified).sum::<u64>();
    }
    Ok(got)
}

/// The reductions of an alternative's runs, written into its folder.
fn analyse(outcomes: &[Outcome], dir: &std::path::Path) -> Result<Vec<Reduction>, MopedError> {
    let records: Vec<_> = outcomes.iter().map(|o| o.record.clone()).collect();
    let err = |e: analysis::AnalysisError| MopedError::Io(e.to_string());
    let reductions = analysis::reductions(&records).map_err(err)?;
    analysis::write_tables(dir, &reductions).map_err(err)?;
    Ok(reductions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_alternative_changes_the_default_configuration() {
        let base = SystemConfig::default();
        let names: Vec<&str> = applicable(&base)
            .unwrap()
            .iter()
            .map(|(a, _)| a.name)
            .collect();
        let all: Vec<&str> = ALTERNATIVES.iter().map(|a| a.name).collect();
        assert_eq!(
            names, all,
            "an alternative that is the default measures nothing"
        );
    }

    #[test]
    fn an_alternative_the_configuration_already_makes_is_left_out() {
        let mut base = SystemConfig::default();
        base.set("moped.port_latency", "40").unwrap();
        let names: Vec<&str> = applicable(&base)
            .unwrap()
            .iter()
            .map(|(a, _)| a.name)
            .collect();
        assert!(!names.contains(&"port-latency-40"), "{names:?}");
        assert_eq!(names.len(), ALTERNATIVES.len() - 1);
    }
}
