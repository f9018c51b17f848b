//! `moped lhs`: the LHS paper's experiments in its own setting (Tanabe and Ohta, "Network
//! interface architecture with scalable low-latency message receiving mechanism", IEICE
//! Trans. Inf. & Syst. E96-D(12), 2013, section 4): the unexpected search on DIMMnet-2
//! (`configs/dimmnet2.toml`) and on the emulated DIMMnet-3 (`configs/dimmnet3.toml`),
//! through the NICs of `[nic]` and the same LHS code as the CMP runs (`mpi::lhs`).
//!
//! Every run is the unexpected queue benchmark (`workload::queue`): N messages wait at rank
//! 0 (node 0), then the receive for the x-th; its search per message is its timed region
//! less that of the same condition's receive for the first, over x - 1 (`row`). The runs:
//! - Fig. 4: the search at depths 1 to 16,384 without LHS and with it on DIMMnet-2, and
//!   with it on DIMMnet-3;
//! - Fig. 5: the six prefetch conditions on DIMMnet-2 (hardware and software prefetch);
//! - Fig. 6: the LH buffer's mappings on DIMMnet-3 (uncacheable, write-back with and
//!   without the prefetcher, forced on cache), and write-combining beside them;
//! - the same mappings on DIMMnet-2, and the search without LHS with the prefetcher off,
//!   so that each factor of the paper's split changes alone.
//!
//! The receive ring of every run of a condition holds its deepest search's messages and
//! the zero-byte message that starts the timer (16,385 positions in the sweep); DIMMnet-2's
//! LH buffer has 1,024, and only its capacity depends on the number.

pub mod report;

use std::path::PathBuf;
use std::time::Instant;

use crate::config::{MemAttr, NicMatcher, PrefetchKind, SystemConfig, UnexpectedQueue};
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::matching::MatcherKind;
use crate::workload::queue::QueueBenchmark;

use super::experiments::{run_all, Outcome, Progress, Task};
use super::lhs_csv::{self as row, Layout, LhsRow, Setting};
use super::matching::Point;
use super::output::{OutDir, RunInfo};

/// A host of the paper's, as a preset configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Host {
    /// Table 2: a Pentium 4 at 2.6 GHz and DIMMnet-2.
    Dimmnet2,
    /// Table 3: a Pentium D 840 at 3.2 GHz, main memory standing for DIMMnet-3's LH buffer.
    Dimmnet3,
}

impl Host {
    pub const ALL: [Host; 2] = [Host::Dimmnet2, Host::Dimmnet3];

    pub fn name(self) -> &'static str {
        match self {
            Host::Dimmnet2 => "dimmnet2",
            Host::Dimmnet3 => "dimmnet3",
        }
    }

    /// The preset's text (`configs/<name>.toml`, compiled in).
    pub fn preset(self) -> &'static str {
        match self {
            Host::Dimmnet2 => include_str!("../../../configs/dimmnet2.toml"),
            Host::Dimmnet3 => include_str!("../../../configs/dimmnet3.toml"),
        }
    }

    /// The preset, with `overrides` (`--set KEY=VALUE`) on top.
    pub fn config(self, overrides: &[(String, String)]) -> Result<SystemConfig, MopedError> {
        let file = format!("configs/{}.toml", self.name());
        let mut cfg = SystemConfig::from_toml_str(self.preset(), &file)?;
        super::config::apply_set(&mut cfg, overrides)?;
        Ok(cfg)
    }
}

/// What a run sets on its host's preset: one of the paper's conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Condition {
    pub host: Host,
    /// The paper's name for it (`fig5-2`: Fig. 5's condition 2), or ours.
    pub label: &'static str,
    pub lhs: bool,
    pub attribute: MemAttr,
    /// Whether the library flushes LH lines (a write-back mapping's).
    pub flush: bool,
    /// The hardware prefetcher (the preset's stride prefetcher) on or off.
    pub hwp: bool,
    /// The search's software prefetch, bytes ahead.
    pub swp: Option<u64>,
    /// The NIC's ALPU searches the queues instead of the host (`nic.matcher`).
    pub alpu: bool,
}

const fn cond(
    host: Host,
    label: &'static str,
    lhs: bool,
    (attribute, flush): (MemAttr, bool),
    hwp: bool,
    swp: Option<u64>,
) -> Condition {
    Condition {
        host,
        label,
        lhs,
        attribute,
        flush,
        hwp,
        swp,
        alpu: false,
    }
}

/// The same with the NIC's ALPU searching the queues.
const fn alpu(c: Condition, label: &'static str) -> Condition {
    Condition {
        label,
        alpu: true,
        ..c
    }
}

use Host::{Dimmnet2 as D2, Dimmnet3 as D3};
const WB: (MemAttr, bool) = (MemAttr::WriteBack, true);
const FORCED: (MemAttr, bool) = (MemAttr::WriteBack, false);
const UC: (MemAttr, bool) = (MemAttr::Uncacheable, true);
const WC: (MemAttr, bool) = (MemAttr::WriteCombining, true);

/// Fig. 5, DIMMnet-2 with LHS: (1) no prefetch; (2) hardware prefetch (the paper's best,
/// and its default); (3) both, software at offset 0; (4) to (6) software only, at offsets
/// 0, 256 and 512 bytes.
pub const FIG5: [Condition; 6] = [
    cond(D2, "fig5-1", true, WB, false, None),
    cond(D2, "fig5-2", true, WB, true, None),
    cond(D2, "fig5-3", true, WB, true, Some(0)),
    cond(D2, "fig5-4", true, WB, false, Some(0)),
    cond(D2, "fig5-5", true, WB, false, Some(256)),
    cond(D2, "fig5-6", true, WB, false, Some(512)),
];

/// Fig. 6, the emulated DIMMnet-3 with LHS: (1) uncacheable; (2) write-back, no prefetch;
/// (3) write-back, hardware prefetch; (4) the same "forced on cache" (no flushes); and
/// write-combining, which the paper does not measure.
pub const FIG6: [Condition; 5] = [
    cond(D3, "fig6-1", true, UC, true, None),
    cond(D3, "fig6-2", true, WB, false, None),
    cond(D3, "fig6-3", true, WB, true, None),
    cond(D3, "fig6-4", true, FORCED, true, None),
    cond(D3, "wc", true, WC, true, None),
];

/// Without LHS on DIMMnet-2 (Fig. 4's condition 1: whole messages in the SO-DIMM, each
/// envelope read through a VL command and the Read Window), with the hardware prefetcher
/// as in Fig. 5's condition 2 and without it as in condition 1.
pub const WITHOUT: [Condition; 2] = [
    cond(D2, "nolhs", false, WB, true, None),
    cond(D2, "nolhs-nohwp", false, WB, false, None),
];

/// DIMMnet-2's LH buffer under Fig. 6's other mappings, the hardware prefetcher on.
pub const MAPPINGS_D2: [Condition; 3] = [
    cond(D2, "uc", true, UC, true, None),
    cond(D2, "wc", true, WC, true, None),
    cond(D2, "forced", true, FORCED, true, None),
];

/// The ALPU the paper compares LHS with (its Fig. 4's condition 3: "ALPU with 128 cells",
/// at 500 MHz) on each host's NIC, searching the queues the host's LHS search would: the
/// messages still divided into the LH buffer, the host posting receives to the ALPU and
/// copying out the messages it pairs them with.
pub const ALPU: [Condition; 2] = [alpu(FIG5[1], "alpu"), alpu(FIG6[2], "alpu")];

/// The ALPU's cells (the LHS paper's Fig. 4).
pub const ALPU_CELLS: usize = 128;

/// The conditions Fig. 4's depth sweep runs: without and with LHS on DIMMnet-2, with LHS
/// on DIMMnet-3, and the ALPU on each, all with the hardware prefetcher (the machines'
/// default).
pub fn swept() -> [Condition; 5] {
    [WITHOUT[0], FIG5[1], FIG6[2], ALPU[0], ALPU[1]]
}

/// The paper's LH buffer depth, and the search its speed-up is given for.
pub const N: u32 = 1024;
/// Fig. 4's depths: powers of two to 16,384, twice the Pentium 4's L2 in 64-byte entries.
pub fn depths(quick: bool) -> Vec<u32> {
    let top = if quick { 8 } else { 14 };
    (0..=top).map(|k| 1 << k).collect()
}

impl Condition {
    /// Every condition the experiment runs, the swept ones first.
    pub fn all() -> Vec<Condition> {
        let mut v: Vec<Condition> = swept().to_vec();
        for c in FIG5.iter().chain(&FIG6).chain(&WITHOUT).chain(&MAPPINGS_D2) {
            if !v.contains(c) {
                v.push(*c);
            }
        }
        v
    }

    /// Its (depth, position) points: the sweep, or the paper's N (256 when `quick`); each
    /// depth's first and last.
    pub fn points(&self, quick: bool) -> Vec<(u32, u32)> {
        let n = if quick { 256 } else { N };
        let ds = if swept().contains(self) {
            depths(quick)
        } else {
            vec![n]
        };
        let mut v: Vec<(u32, u32)> = ds.iter().flat_map(|&d| [(d, 1), (d, d)]).collect();
        v.dedup();
        v
    }

    /// Its configuration on `base` (its host's preset): the condition's factors, and a
    /// receive ring that holds its deepest search and the timer's message.
    pub fn configure(&self, base: &SystemConfig, deepest: u32) -> Result<SystemConfig, MopedError> {
        let mut cfg = base.clone();
        cfg.workload.warmup = true;
        cfg.nic.enabled = true;
        cfg.mpi.unexpected_queue = if self.lhs {
            UnexpectedQueue::Lhs
        } else {
            UnexpectedQueue::List
        };
        cfg.nic.lh_attribute = self.attribute;
        cfg.nic.flush = self.flush;
        if !self.hwp {
            cfg.l1.prefetch = Some(PrefetchKind::None);
        } else if cfg.l1.prefetch_kind() == PrefetchKind::None {
            return Err(MopedError::Io(format!(
                "{}: the hardware prefetcher is off in the configuration (l1.prefetch); \
                 the paper's conditions turn it on and off",
                self.host.name()
            )));
        }
        cfg.mpi.search_prefetch = self.swp.is_some();
        cfg.mpi.search_prefetch_offset = self.swp.unwrap_or(0);
        if self.alpu {
            cfg.nic.matcher = NicMatcher::Engine(MatcherKind::Alpu);
            cfg.moped.matching.alpu_cells = ALPU_CELLS;
        }
        cfg.mpi.lhs_entries = cfg.mpi.lhs_entries.max(u64::from(deepest) + 1);
        cfg.validate()?;
        Ok(cfg)
    }

    /// What the condition is, in words.
    pub fn describe(&self) -> String {
        let mut parts = vec![];
        if self.alpu {
            parts.push(format!("the NIC's ALPU ({ALPU_CELLS} cells) searching"));
        }
        parts.push(if self.lhs {
            format!("LHS, LH buffer {}", self.attribute.name().replace('_', "-"))
        } else {
            "without LHS (VL commands)".to_string()
        });
        if self.lhs && self.attribute == MemAttr::WriteBack {
            parts.push(
                if self.flush {
                    "flushed"
                } else {
                    "forced on cache"
                }
                .into(),
            );
        }
        parts.push(format!("HWP {}", if self.hwp { "on" } else { "off" }));
        parts.push(match self.swp {
            Some(o) => format!("SWP at +{o} B"),
            None => "SWP off".into(),
        });
        parts.join(", ")
    }

    /// Its rows' setting.
    fn setting(&self, cfg: &SystemConfig) -> Setting {
        Setting {
            name: self.host.name(),
            condition: self.label.to_string(),
            sw_prefetch: self.swp,
            // Without LHS there is no LH buffer to map or flush.
            attribute: self.lhs.then_some(self.attribute),
            flush: (self.lhs && self.attribute == MemAttr::WriteBack).then_some(self.flush),
            core_ghz: cfg.system.core_ghz,
            matcher: cfg.nic.matcher.name(),
        }
    }
}

/// What one `moped lhs` runs.
#[derive(Clone, Debug)]
pub struct LhsOptions {
    pub out: PathBuf,
    /// `--set` overrides, applied to each host's preset before its conditions.
    pub overrides: Vec<(String, String)>,
    pub jobs: usize,
    /// Depths up to 256 only.
    pub quick: bool,
    /// An earlier result folder of this experiment whose runs are taken where their keys
    /// are unchanged (see [`super::store::claim_terms`]).
    pub reuse: Option<PathBuf>,
}

/// The experiment's name in its folder's results store.
pub const STORE_NAME: &str = "lhs";

impl LhsOptions {
    /// The simulations the experiment runs.
    pub fn run_count(&self) -> usize {
        Condition::all()
            .iter()
            .map(|c| c.points(self.quick).len())
            .sum()
    }
}

/// What the experiment found.
#[derive(Debug)]
pub struct Lhs {
    pub rows: Vec<LhsRow>,
    pub runs: usize,
    pub messages_verified: u64,
    pub events: u64,
    pub host_seconds: f64,
    /// Each host's configuration as run, its uncontended memory load in ns.
    pub hosts: Vec<(Host, SystemConfig, f64)>,
    /// Runs taken from the earlier results instead of simulated.
    pub reused: usize,
}

/// Runs the experiment into `out` (taken whole, or marked FAILED).
pub fn lhs(opts: &LhsOptions, out: OutDir, progress: Progress) -> Result<Lhs, MopedError> {
    let base = Host::Dimmnet2.config(&opts.overrides)?;
    let mut out = out;
    let result = out
        .hold_store(STORE_NAME, opts.reuse.clone())
        .and_then(|()| run_and_write(opts, &out, progress));
    out.finish(result, |_, _| {
        Ok(RunInfo {
            config: base.clone(),
            seed: 1u64.into(),
            workload: "the LHS paper's unexpected search".into(),
            design: "baseline through DIMMnet NICs ([nic])".into(),
        })
    })
}

fn run_and_write(opts: &LhsOptions, out: &OutDir, progress: Progress) -> Result<Lhs, MopedError> {
    let started = Instant::now();
    let mut hosts = Vec::new();
    for h in Host::ALL {
        let cfg = h.config(&opts.overrides)?;
        let ns = crate::sim::memory_load_cycles(&cfg) as f64 / cfg.system.core_ghz;
        hosts.push((h, cfg, ns));
    }
    let (mut rows, mut runs, mut events) = (Vec::new(), 0, 0);
    for c in Condition::all() {
        let base = &hosts.iter().find(|h| h.0 == c.host).expect("every host").1;
        let points = c.points(opts.quick);
        let deepest = points.iter().map(|p| p.0).max().unwrap_or(1);
        let cfg = c.configure(base, deepest)?;
        let specs = write_specs(out.path(), &points)?;
        let tasks: Vec<Task> = specs
            .into_iter()
            .map(|spec| Task {
                spec,
                design: Design::Baseline,
                seed: 1,
            })
            .collect();
        let dir = out.child(&format!("{}-{}", c.host.name(), c.label))?;
        let before = runs;
        let counted = |i, done, r: &Result<Outcome, MopedError>| progress(i, before + done, r);
        let got = run_all(&cfg, &tasks, opts.jobs, None, Some(&dir), &counted);
        let got = dir.finish(got, |_, _| Ok(info(&cfg, &c)))?;
        runs += got.len();
        events += got.iter().map(|o| o.events).sum::<u64>();
        let layout = Layout {
            queue: cfg.mpi.unexpected_queue,
            entry_bytes: crate::nic::NicMap::entry_bytes(&cfg),
        };
        let prefetch = cfg.l1.prefetch_kind().name();
        let setting = c.setting(&cfg);
        let these = points
            .iter()
            .zip(&got)
            .map(|(&p, o)| LhsRow::of(setting.clone(), layout, prefetch, p, o));
        rows.extend(row::with_searches(these.collect()));
    }
    let lhs = Lhs {
        messages_verified: rows.iter().map(|r| r.messages_verified).sum(),
        rows,
        runs,
        events,
        host_seconds: started.elapsed().as_secs_f64(),
        hosts,
        reused: super::runs_table::write_scanned(out.path())?.1,
    };
    let io = |e: std::io::Error| MopedError::Io(format!("{}: {e}", out.path().display()));
    std::fs::write(out.path().join("lhs.csv"), row::csv(&lhs.rows)).map_err(io)?;
    let text = report::report(&lhs, opts);
    std::fs::write(out.path().join("report.md"), text).map_err(io)?;
    Ok(lhs)
}

/// The unexpected benchmark's spec files for `points`, written once each.
fn write_specs(dir: &std::path::Path, points: &[(u32, u32)]) -> Result<Vec<PathBuf>, MopedError> {
    let specs = points.iter().map(|&(depth, position)| {
        let p = Point {
            benchmark: QueueBenchmark::Unexpected,
            depth,
            position,
            sources: None,
        };
        (p.name(), p.spec())
    });
    super::experiments::write_specs(dir, specs)
}

fn info(cfg: &SystemConfig, c: &Condition) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1u64.into(),
        workload: "unexpected queue benchmarks".into(),
        design: format!(
            "baseline on {} ({}: {})",
            c.host.name(),
            c.label,
            c.describe()
        ),
    }
}
