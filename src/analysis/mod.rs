//! The analysis behind the paper's Figure 10: run records in, reductions, range
//! summaries, claim checks, a Markdown report and CSV/JSON tables out.
//!
//! A sweep produces one [`RunRecord`] per (benchmark, design, seed). Everything here is a
//! pure function of a slice of records:
//!
//! * [`reductions`]: `1 - design / baseline` per (group, benchmark, design, metric),
//!   matched on seed, with the mean, standard deviation and Student-t 95 % interval over
//!   seeds ([`reduce`]);
//! * [`summaries`]: per (group, design, metric) the geometric mean of the ratios and the
//!   smallest and largest reduction;
//! * [`paper::PUBLISHED`]: the values the paper publishes (section 6 and the abstract),
//!   with citations, and [`paper::compare`] setting measured ranges beside them;
//! * [`claims::check_claims`]: the paper's qualitative claims, each holds / does not hold /
//!   not measured with the numbers that decide it;
//! * [`report::report_markdown`] and [`write::write_tables`];
//! * [`sensitivity`]: Figure 10 under alternative modelling choices beside the default;
//! * [`share`]: how much of each run MOPED carried, and the backoffs behind the rest;
//! * [`compare::compare`]: an embedded run beside a gem5 run, metric by metric, with the
//!   metrics' sources on both hosts in one table ([`sources::METRIC_SOURCES`]).
//!
//! Orders are fixed everywhere (groups, benchmarks in the paper's order, designs,
//! metrics), so every output is deterministic.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::design::Design;

pub mod breakdown;
pub mod causes;
pub mod claims;
pub mod compare;
pub mod paper;
pub mod range_causes;
pub mod reduce;
pub mod report;
pub mod sensitivity;
pub mod share;
pub mod sources;
pub mod write;

pub use causes::explain;
pub use claims::{check_claims, Claim, Evidence, Unit, Verdict};
pub use paper::{compare as compare_published, Published, PublishedComparison, PUBLISHED};
pub use reduce::{reductions, summaries, t_interval, Reduction, Summary};
pub use report::report_markdown;
pub use write::{reductions_csv, write_tables};

/// One simulated run: a benchmark under one design with one seed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    /// "PP", "XC", "BC", "RD", "GA", "AA", "SP", "CG", "MG", "FT", "BT".
    pub benchmark: String,
    /// "imb" (16 kB messages), "npb" (class S), "imb-1m" (1 MB messages).
    pub group: String,
    /// "baseline", "basemoped", "optcopy", "optcache".
    pub design: String,
    pub seed: u64,
    /// The metrics named in [`METRICS`]; other keys are carried but ignored.
    pub metrics: BTreeMap<String, f64>,
}

/// The design every other one is compared with.
pub const BASELINE: &str = Design::Baseline.name();

/// The MOPED designs, in the paper's order.
pub const DESIGNS: [&str; 3] = [
    Design::BaseMoped.name(),
    Design::OptCopy.name(),
    Design::OptCache.name(),
];

/// The benchmark groups, in report order.
pub const GROUPS: [&str; 3] = ["imb", "npb", "imb-1m"];

/// IMB benchmarks in the paper's order (Figure 10).
pub const IMB: [&str; 6] = ["PP", "XC", "BC", "RD", "GA", "AA"];
/// NPB benchmarks in the paper's order.
pub const NPB: [&str; 5] = ["SP", "CG", "MG", "FT", "BT"];
/// The benchmarks the paper also runs with 1 MB messages.
pub const IMB_1M: [&str; 3] = ["PP", "XC", "BC"];

/// The analysed metrics, in report order. `l2_misses_local` (lines filled locally without
/// a fetch, OPTCACHE's receive-line fills) is optional: analysed when records carry it.
pub const METRICS: [&str; 6] = [
    "cycles",
    "l1_misses",
    "l2_misses_private",
    "l2_misses_global",
    "coherence_messages",
    "l2_misses_local",
];

/// The metrics of Figure 10's four graphs.
pub const FIGURE10_METRICS: [&str; 4] = [
    "cycles",
    "l1_misses",
    "l2_misses_private",
    "l2_misses_global",
];

/// A record set that cannot be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalysisError {
    /// Two records for the same (group, benchmark, design, seed).
    #[error("two records for {group} {benchmark} {design} seed {seed}")]
    Duplicate {
        group: String,
        benchmark: String,
        design: String,
        seed: u64,
    },
    /// A metric value that is NaN or infinite.
    #[error("{group} {benchmark} {design} seed {seed}: metric `{metric}` is not finite")]
    NotFinite {
        group: String,
        benchmark: String,
        design: String,
        seed: u64,
        metric: String,
    },
    /// Records that are not a JSON list of run records.
    #[error("run records: {0}")]
    Json(String),
    /// A table that could not be written.
    #[error("{0}")]
    Io(String),
}

/// Parses a JSON list of run records (extra fields of each record are ignored).
pub fn records_from_json(text: &str) -> Result<Vec<RunRecord>, AnalysisError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| AnalysisError::Json(e.to_string()))
}

/// Sort key of a group: [`GROUPS`] order, unknown groups after, by name.
pub(crate) fn group_rank(group: &str) -> (usize, String) {
    rank_in(&GROUPS, group)
}

/// Sort key of a benchmark: the paper's order (IMB then NPB), unknown ones after, by name.
pub(crate) fn benchmark_rank(benchmark: &str) -> (usize, String) {
    let all: Vec<&str> = IMB.iter().chain(NPB.iter()).copied().collect();
    rank_in(&all, benchmark)
}

/// Sort key of a design: baseline, then [`DESIGNS`], unknown ones after, by name.
pub(crate) fn design_rank(design: &str) -> (usize, String) {
    rank_in(&[BASELINE, DESIGNS[0], DESIGNS[1], DESIGNS[2]], design)
}

/// Sort key of a metric: [`METRICS`] order, unknown ones after, by name.
pub(crate) fn metric_rank(metric: &str) -> (usize, String) {
    rank_in(&METRICS, metric)
}

fn rank_in(order: &[&str], name: &str) -> (usize, String) {
    match order.iter().position(|n| *n == name) {
        Some(i) => (i, String::new()),
        None => (order.len(), name.to_string()),
    }
}

/// The paper's spelling of a design ("BASEMOPED"); unknown designs as given.
pub fn design_label(design: &str) -> String {
    Design::from_name(design).map_or_else(|| design.to_string(), |d| d.label().to_string())
}

/// A readable name of a metric.
pub fn metric_label(metric: &str) -> &str {
    match metric {
        "cycles" => "cycles",
        "l1_misses" => "L1 misses",
        "l2_misses_private" => "private L2 misses",
        "l2_misses_global" => "global L2 misses",
        "coherence_messages" => "coherence messages",
        "l2_misses_local" => "local L2 fills",
        m => m,
    }
}

/// A readable name of a group.
pub fn group_label(group: &str) -> &str {
    match group {
        "imb" => "IMB, 16 kB messages",
        "npb" => "NPB, class S",
        "imb-1m" => "IMB, 1 MB messages",
        g => g,
    }
}

/// A fraction as a percentage with one decimal ("75.0").
pub(crate) struct Pct(pub f64);

impl fmt::Display for Pct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0 * 100.0;
        // -0.04 % prints as "0.0", not "-0.0".
        let v = if v.abs() < 0.05 { 0.0 } else { v };
        write!(f, "{v:.1}")
    }
}

/// A record for tests.
#[cfg(test)]
pub(crate) fn rec(
    group: &str,
    benchmark: &str,
    design: &str,
    seed: u64,
    metrics: &[(&str, f64)],
) -> RunRecord {
    RunRecord {
        benchmark: benchmark.into(),
        group: group.into(),
        design: design.into(),
        seed,
        metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}
