//! Figure 10 under each matching engine (part of `moped matching`): the 16 kB IMB and
//! class S NPB runs of the MOPED paper under BASEMOPED with every engine, beside the
//! software baseline, with the search depths that explain how little or how much the
//! engine moves the cycle reductions. Figure 10's configuration is kept as given (its
//! 64-entry descriptor tables); only `moped.matcher` changes, and each check's result
//! leaves its engine when the search ends (`super::search_timed`), so the engines' search
//! times count.

use std::fmt::Write;

use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;
use crate::moped::matching::{MatcherKind, MatchingParams};

use super::super::experiments::{run_all, Outcome, Progress, Task};
use super::super::figure10::FIGURE10;
use super::super::output::{OutDir, RunInfo};
use super::Matcher;

pub use super::super::figure10::{Figure10Part, QUICK_ITERATIONS};

/// One benchmark under one engine (the software baseline's own row has `engine` software).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineBar {
    pub engine: Matcher,
    /// The paper's label: PP, XC, ..., BT.
    pub benchmark: String,
    pub group: String,
    pub cycles: f64,
    pub baseline_cycles: f64,
    /// `1 - cycles / baseline_cycles` (0 for the baseline's own row).
    pub reduction: f64,
    /// Checks the matching MOPEDs ran and their busy cycles (0 for software).
    pub match_searches: f64,
    pub match_cycles: f64,
    /// Search depths at the matching MOPEDs (this run's; none for software).
    pub depths: Depths,
    /// Search depths in the software path's lists (the baseline run's).
    pub software: Depths,
    pub messages_verified: u64,
}

/// Mean and largest search depth of the posted-receive and unexpected queues.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Depths {
    pub prq_mean: f64,
    pub prq_max: f64,
    pub umq_mean: f64,
    pub umq_max: f64,
}

impl Depths {
    fn of(o: &Outcome, prefix: &str) -> Depths {
        let m = |k: &str| metric(o, &format!("{prefix}_{k}"));
        Depths {
            prq_mean: m("prq_depth_mean"),
            prq_max: m("prq_depth_max"),
            umq_mean: m("umq_depth_mean"),
            umq_max: m("umq_depth_max"),
        }
    }
}

fn metric(o: &Outcome, key: &str) -> f64 {
    o.record.metrics.get(key).copied().unwrap_or(0.0)
}

pub const CSV_HEADER: [&str; 17] = [
    "engine",
    "benchmark",
    "group",
    "cycles",
    "baseline_cycles",
    "reduction",
    "match_searches",
    "match_cycles",
    "moped_prq_depth_mean",
    "moped_prq_depth_max",
    "moped_umq_depth_mean",
    "moped_umq_depth_max",
    "software_prq_depth_mean",
    "software_prq_depth_max",
    "software_umq_depth_mean",
    "software_umq_depth_max",
    "messages_verified",
];

impl EngineBar {
    fn fields(&self) -> Vec<String> {
        let (d, software) = (&self.depths, &self.software);
        vec![
            self.engine.name().into(),
            self.benchmark.clone(),
            self.group.clone(),
            self.cycles.to_string(),
            self.baseline_cycles.to_string(),
            self.reduction.to_string(),
            self.match_searches.to_string(),
            self.match_cycles.to_string(),
            d.prq_mean.to_string(),
            d.prq_max.to_string(),
            d.umq_mean.to_string(),
            d.umq_max.to_string(),
            software.prq_mean.to_string(),
            software.prq_max.to_string(),
            software.umq_mean.to_string(),
            software.umq_max.to_string(),
            self.messages_verified.to_string(),
        ]
    }
}

/// figure10_engines.csv's text: the baseline's rows first, then each engine's.
pub fn csv(bars: &[EngineBar]) -> String {
    let header = CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = bars.iter().map(EngineBar::fields);
    crate::analysis::write::csv_text(
        std::iter::once(header).chain(records),
        csv::Terminator::Any(b'\n'),
    )
}

/// Runs the part: the baseline once, then BASEMOPED under each engine of `engines`, each
/// into its own folder under `figure10/` of `out`. `before` runs were counted already.
/// Returns the rows and the simulated events.
pub fn run(
    part: &Figure10Part,
    config: &SystemConfig,
    engines: &[Matcher],
    jobs: usize,
    out: &OutDir,
    before: usize,
    progress: Progress,
) -> Result<(Vec<EngineBar>, u64), MopedError> {
    let specs = specs(part)?;
    let root = out.child("figure10")?;
    let mut outcomes: Vec<(Matcher, Vec<Outcome>)> = Vec::new();
    let mut done = before;
    for engine in std::iter::once(Matcher::Software)
        .chain(engines.iter().copied().filter(|e| *e != Matcher::Software))
    {
        let mut cfg = super::search_timed(config);
        engine.configure(&mut cfg);
        let design = super::design_of(engine);
        let tasks: Vec<Task> = specs
            .iter()
            .map(|spec| Task {
                spec: spec.clone(),
                design,
                seed: 1,
            })
            .collect();
        let dir = root.child(engine.name())?;
        let counted = |i, n, r: &Result<Outcome, MopedError>| progress(i, done + n, r);
        let got = run_all(&cfg, &tasks, jobs, part.iterations, Some(&dir), &counted);
        let got = dir.finish(got, |_, _| Ok(info(&cfg, engine, design)))?;
        done += got.len();
        outcomes.push((engine, got));
    }
    let events = outcomes.iter().flat_map(|(_, o)| o).map(|o| o.events).sum();
    let bars = bars(&outcomes);
    root.finish(Ok(()), |_, _| {
        Ok(info(config, Matcher::Software, Design::Baseline))
    })?;
    Ok((bars, events))
}

/// The runs the part makes for `engines`.
pub fn run_count(engines: &[Matcher]) -> usize {
    let moped = engines.iter().filter(|e| **e != Matcher::Software).count();
    FIGURE10.len() * (1 + moped)
}

pub(super) use super::super::figure10::part_specs as specs;

fn info(cfg: &SystemConfig, engine: Matcher, design: Design) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1u64.into(),
        workload: "Figure 10 (16 kB IMB, class S NPB)".into(),
        design: format!("{design} ({})", engine.name()),
    }
}

/// Each engine's rows against the baseline's outcome for the same benchmark.
fn bars(outcomes: &[(Matcher, Vec<Outcome>)]) -> Vec<EngineBar> {
    let Some((_, baseline)) = outcomes.first() else {
        return Vec::new();
    };
    let mut bars = Vec::new();
    for (engine, runs) in outcomes {
        for (o, b) in runs.iter().zip(baseline) {
            let (cycles, base) = (metric(o, "cycles"), metric(b, "cycles"));
            let moped = engine.is_moped();
            bars.push(EngineBar {
                engine: *engine,
                benchmark: o.record.benchmark.clone(),
                group: o.record.group.clone(),
                cycles,
                baseline_cycles: base,
                reduction: if base > 0.0 { 1.0 - cycles / base } else { 0.0 },
                match_searches: if moped {
                    metric(o, "match_searches")
                } else {
                    0.0
                },
                match_cycles: if moped {
                    metric(o, "match_cycles")
                } else {
                    0.0
                },
                depths: if moped {
                    Depths::of(o, "moped")
                } else {
                    Depths::default()
                },
                software: Depths::of(b, "software"),
                messages_verified: o.messages_verified,
            });
        }
    }
    bars
}

/// report.md's section: the cycle reductions per engine, how far each engine moves them
/// from `fsm`'s, and the depths and engine cycles that say why.
pub fn section(bars: &[EngineBar], params: &MatchingParams) -> String {
    let mut s = String::from("\n## Figure 10 with each engine\n\n");
    s.push_str(
        "BASEMOPED's cycle reduction over the software baseline (16 kB IMB, class S NPB), \
         Figure 10's configuration with only `moped.matcher` changed and each check's \
         result leaving the engine when its search ends (`moped.matching.result_at = \
         \"end\"`, the default, so `fsm`'s column is `moped figure10`'s BASEMOPED); then \
         the search depths (mean / largest) at the matching MOPEDs under \
         `fsm` (or the first engine run, when `fsm` was not) and in the baseline's software \
         lists, and the engines' busy cycles per check.\n\n",
    );
    let engines: Vec<Matcher> = unique(bars.iter().map(|b| b.engine))
        .into_iter()
        .filter(|e| e.is_moped())
        .collect();
    let benchmarks = unique(bars.iter().map(|b| b.benchmark.clone()));
    let bar = |e: Matcher, b: &str| find(bars, e, b);
    let reference = depth_reference(&engines);
    let _ = writeln!(
        s,
        "| benchmark | {} | MOPED PRQ | MOPED UMQ | software PRQ | software UMQ |",
        engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(s, "|---|{}---|---|---|---|", "---|".repeat(engines.len()));
    for b in &benchmarks {
        let cells: Vec<String> = engines
            .iter()
            .map(|&e| bar(e, b).map_or("-".into(), |x| format!("{:.1} %", 100.0 * x.reduction)))
            .collect();
        let depth = |d: Option<Depths>, prq: bool| {
            d.map_or("-".into(), |d| {
                let (mean, max) = if prq {
                    (d.prq_mean, d.prq_max)
                } else {
                    (d.umq_mean, d.umq_max)
                };
                format!("{mean:.2} / {max}")
            })
        };
        let moped = reference.and_then(|e| bar(e, b)).map(|x| x.depths);
        let sw = bar(Matcher::Software, b).map(|x| x.software);
        let _ = writeln!(
            s,
            "| {b} | {} | {} | {} | {} | {} |",
            cells.join(" | "),
            depth(moped, true),
            depth(moped, false),
            depth(sw, true),
            depth(sw, false)
        );
    }
    s.push_str(&verdict(bars, &engines, &benchmarks, params));
    s.push_str(&lhs_line(bars, &benchmarks));
    s
}

/// The line on `software-lhs`, when it ran: the baseline with an LH buffer, against the
/// baseline with MPICH's list, per benchmark, with the software UMQ depths that bound it.
fn lhs_line(bars: &[EngineBar], benchmarks: &[String]) -> String {
    let cells: Vec<String> = benchmarks
        .iter()
        .filter_map(|b| {
            let x = find(bars, Matcher::SoftwareLhs, b)?;
            Some(format!(
                "{b} {:+.2} % (UMQ depth mean {:.2}, largest {})",
                100.0 * x.reduction,
                x.software.umq_mean,
                x.software.umq_max
            ))
        })
        .collect();
    if cells.is_empty() {
        return String::new();
    }
    format!(
        "- `software-lhs` (the baseline with its unexpected queue in an LH buffer, no \
         MOPED), cycle reduction against the baseline's list: {}. Its search gains only \
         where the unexpected queue is deep (see the LHS section).\n",
        cells.join("; ")
    )
}

/// The largest move of a reduction away from `fsm`'s, and the engines' cycles per check.
fn verdict(
    bars: &[EngineBar],
    engines: &[Matcher],
    benchmarks: &[String],
    params: &MatchingParams,
) -> String {
    let fsm = Matcher::Engine(MatcherKind::Fsm);
    let mut s = String::from("\n");
    let mut widest: Option<(f64, &EngineBar, &EngineBar)> = None;
    for &e in engines.iter().filter(|&&e| e != fsm) {
        for b in benchmarks {
            if let (Some(x), Some(f)) = (find(bars, e, b), find(bars, fsm, b)) {
                let moved = 100.0 * (x.reduction - f.reduction);
                if widest.map_or(true, |(w, _, _)| moved.abs() > w.abs()) {
                    widest = Some((moved, x, f));
                }
            }
        }
    }
    if let Some((moved, x, f)) = widest {
        let _ = writeln!(
            s,
            "- The largest change from `fsm`'s reduction: {moved:+.2} points ({} on {}): its \
             checks kept the matching MOPEDs {:+.0} cycles busier in all than `fsm`'s, and \
             the run took {:+.0} cycles.",
            x.engine.name(),
            x.benchmark,
            x.match_cycles - f.match_cycles,
            x.cycles - f.cycles
        );
    }
    let per_check: Vec<String> = engines
        .iter()
        .map(|&e| {
            let (searches, cycles) = bars
                .iter()
                .filter(|b| b.engine == e)
                .fold((0.0, 0.0), |(n, c), b| {
                    (n + b.match_searches, c + b.match_cycles)
                });
            let mean = if searches > 0.0 {
                cycles / searches
            } else {
                0.0
            };
            format!("{} {mean:.2}", e.name())
        })
        .collect();
    let _ = writeln!(
        s,
        "- Engine busy cycles per check over all benchmarks: {}.",
        per_check.join(", ")
    );
    // Every engine's runs: the order messages arrive in, and so the depths, can differ.
    let deepest = bars
        .iter()
        .filter(|b| b.engine.is_moped())
        .map(|b| b.depths.prq_max.max(b.depths.umq_max))
        .fold(0.0, f64::max);
    let first_level = params.cam_entries.min(params.alpu_cells) as f64;
    let _ = if deepest <= first_level {
        writeln!(
            s,
            "- Cause: the deepest search at any matching MOPED is {deepest} entries, within \
             the CAM's {} entries and the ALPU's {} cells, so no engine reaches its second \
             level: the engines differ only in what a check costs, the cycles per check \
             above, small beside a 16 kB copy or an NPB iteration.",
            params.cam_entries, params.alpu_cells
        )
    } else {
        writeln!(
            s,
            "- The deepest search at any matching MOPED is {deepest} entries, beyond the \
             first level of the CAM ({}) or the ALPU ({}): those checks walk lists.",
            params.cam_entries, params.alpu_cells
        )
    };
    s
}

/// The engine whose runs give the table's MOPED depths: `fsm`, the paper's, when it ran.
fn depth_reference(engines: &[Matcher]) -> Option<Matcher> {
    let fsm = Matcher::Engine(MatcherKind::Fsm);
    engines
        .contains(&fsm)
        .then_some(fsm)
        .or_else(|| engines.first().copied())
}

fn find<'a>(bars: &'a [EngineBar], e: Matcher, b: &str) -> Option<&'a EngineBar> {
    bars.iter().find(|x| x.engine == e && x.benchmark == b)
}

/// The distinct items in first-seen order.
fn unique<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(engine: Matcher, benchmark: &str, reduction: f64, deepest: f64) -> EngineBar {
        EngineBar {
            engine,
            benchmark: benchmark.into(),
            group: "imb".into(),
            cycles: 1000.0 * (1.0 - reduction),
            baseline_cycles: 1000.0,
            reduction,
            match_searches: 10.0,
            match_cycles: 30.0,
            depths: Depths {
                prq_mean: 1.5,
                prq_max: deepest,
                umq_mean: 1.0,
                umq_max: 2.0,
            },
            software: Depths::default(),
            messages_verified: 4,
        }
    }

    #[test]
    fn the_section_names_the_largest_move_and_whether_searches_stay_in_the_first_level() {
        let fsm = Matcher::Engine(MatcherKind::Fsm);
        let cam = Matcher::Engine(MatcherKind::Cam);
        let hash = Matcher::Engine(MatcherKind::Hash);
        let bars = [
            bar(Matcher::Software, "PP", 0.0, 3.0),
            bar(Matcher::Software, "CG", 0.0, 3.0),
            bar(fsm, "PP", 0.50, 3.0),
            bar(fsm, "CG", 0.10, 300.0),
            bar(cam, "PP", 0.51, 3.0),
            bar(cam, "CG", 0.07, 3.0),
            bar(hash, "PP", 0.50, 3.0),
            bar(hash, "CG", 0.10, 3.0),
        ];
        let s = section(&bars, &MatchingParams::default());
        assert!(s.contains("| PP | 50.0 % | 51.0 % | 50.0 % |"), "{s}");
        assert!(s.contains("-3.00 points (cam on CG): its checks kept the matching MOPEDs +0 cycles busier in all than `fsm`'s, and the run took +30 cycles."), "{s}");
        assert!(s.contains("300 entries, beyond the first level"), "{s}");
        let shallow = section(&bars[..3], &MatchingParams::default());
        assert!(
            shallow.contains("within the CAM's 256 entries"),
            "{shallow}"
        );
        let text = csv(&bars);
        assert_eq!(text.lines().count(), 1 + bars.len());
        assert!(text.starts_with(&CSV_HEADER.join(",")));
    }

    #[test]
    fn software_lhs_gets_a_line_of_its_own_not_a_moped_column() {
        let fsm = Matcher::Engine(MatcherKind::Fsm);
        let mut lhs = bar(Matcher::SoftwareLhs, "CG", 0.012, 3.0);
        lhs.software = Depths {
            umq_mean: 1.25,
            umq_max: 6.0,
            ..Depths::default()
        };
        let bars = [
            bar(Matcher::Software, "CG", 0.0, 3.0),
            bar(fsm, "CG", 0.10, 3.0),
            lhs,
        ];
        let s = section(&bars, &MatchingParams::default());
        assert!(s.contains("| benchmark | fsm | MOPED PRQ"), "{s}");
        assert!(
            s.contains("against the baseline's list: CG +1.20 % (UMQ depth mean 1.25, largest 6)"),
            "{s}"
        );
        let without = section(&bars[..2], &MatchingParams::default());
        assert!(!without.contains("software-lhs"), "{without}");
    }

    #[test]
    fn without_fsm_the_depths_come_from_the_engines_that_ran() {
        let micro = Matcher::Engine(MatcherKind::Microcoded);
        let bars = [
            bar(Matcher::Software, "MG", 0.0, 3.0),
            bar(micro, "MG", 0.06, 5.0),
        ];
        let s = section(&bars, &MatchingParams::default());
        assert!(s.contains("| MG | 6.0 % | 1.50 / 5 | 1.00 / 2 |"), "{s}");
        assert!(
            s.contains("deepest search at any matching MOPED is 5 entries"),
            "{s}"
        );
    }
}
