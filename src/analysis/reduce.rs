//! Reductions against the baseline and their per-group summaries.
//!
//! For each (group, benchmark, design other than the baseline, metric of [`METRICS`]) the
//! design's runs are matched with the baseline's runs of the same seed. Each matched seed
//! gives a ratio `design / baseline` and a reduction `1 - ratio`. Over the seeds:
//!
//! * `reduction` is the mean of the per-seed reductions (so `ratio = 1 - reduction` is the
//!   mean of the per-seed ratios);
//! * with n >= 2 seeds, `std_dev` is their sample standard deviation (n - 1 in the
//!   denominator) and `[ci_low, ci_high]` the 95 % interval of the mean from Student's t:
//!   `mean ± t(0.975, n - 1) · std_dev / sqrt(n)` (statrs' `StudentsT`); with n = 1 there is
//!   no interval;
//! * a seed whose baseline value is 0 has no ratio: it is left out of the mean, and when no
//!   seed is left the reduction is `None`. No NaN or infinity reaches an output.
//!
//! A summary per (group, design, metric) takes the geometric mean of the benchmarks' ratios
//! (plain `exp(mean(ln ratio))`; a zero ratio makes it 0, a negative one, which only
//! negative metric values could give, makes it undefined) and the smallest and largest
//! reduction with their benchmarks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{
    benchmark_rank, design_rank, group_rank, metric_rank, AnalysisError, RunRecord, BASELINE,
    METRICS,
};

/// The reduction of one metric of one benchmark under one design.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Reduction {
    pub group: String,
    pub benchmark: String,
    pub design: String,
    pub metric: String,
    /// The baseline's mean over the matched seeds.
    pub baseline: f64,
    /// The design's mean over the matched seeds.
    pub design_value: f64,
    /// Mean over seeds of design / baseline; `None` when every baseline value is 0.
    pub ratio: Option<f64>,
    /// `1 - ratio`: the mean over seeds of the per-seed reductions.
    pub reduction: Option<f64>,
    /// Sample standard deviation of the per-seed reductions (n >= 2).
    pub std_dev: Option<f64>,
    /// The 95 % Student-t interval of the mean reduction (n >= 2).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Seeds that gave a ratio (baseline value not 0).
    pub n: usize,
    /// Every seed both the design and the baseline ran (ascending).
    pub seeds: Vec<u64>,
}

impl Reduction {
    /// Half the width of the confidence interval, when there is one.
    pub fn ci_half_width(&self) -> Option<f64> {
        Some((self.ci_high? - self.ci_low?) / 2.0)
    }
}

/// Mean, sample standard deviation and 95 % Student-t interval of the mean of `values`;
/// `None` for fewer than two values.
pub fn t_interval(values: &[f64]) -> Option<(f64, f64, f64, f64)> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (nf - 1.0);
    let sd = var.sqrt();
    let t = StudentsT::new(0.0, 1.0, nf - 1.0)
        .expect("n - 1 >= 1 degrees of freedom")
        .inverse_cdf(0.975);
    let half = t * sd / nf.sqrt();
    Some((mean, sd, mean - half, mean + half))
}

/// (group, benchmark, design).
type RunKey = (String, String, String);
/// Per run: seed -> metric -> value.
type Runs = BTreeMap<RunKey, BTreeMap<u64, BTreeMap<String, f64>>>;

/// Checks the records (no duplicate runs, finite values) and indexes the analysed metrics:
/// (group, benchmark, design) -> seed -> metric -> value.
fn index(records: &[RunRecord]) -> Result<Runs, AnalysisError> {
    let mut runs = Runs::new();
    for r in records {
        let key = (r.group.clone(), r.benchmark.clone(), r.design.clone());
        let seeds = runs.entry(key).or_default();
        if seeds.contains_key(&r.seed) {
            return Err(AnalysisError::Duplicate {
                group: r.group.clone(),
                benchmark: r.benchmark.clone(),
                design: r.design.clone(),
                seed: r.seed,
            });
        }
        let mut metrics = BTreeMap::new();
        for m in METRICS {
            if let Some(&v) = r.metrics.get(m) {
                if !v.is_finite() {
                    return Err(AnalysisError::NotFinite {
                        group: r.group.clone(),
                        benchmark: r.benchmark.clone(),
                        design: r.design.clone(),
                        seed: r.seed,
                        metric: m.to_string(),
                    });
                }
                metrics.insert(m.to_string(), v);
            }
        }
        seeds.insert(r.seed, metrics);
    }
    Ok(runs)
}

/// The reductions of every design against the baseline (see the module doc), sorted by
/// group, benchmark (paper order), design and metric. Records of a (group, benchmark)
/// without a baseline run, and metrics a side lacks, give no row. Fails on two records of
/// the same run or a non-finite value.
pub fn reductions(records: &[RunRecord]) -> Result<Vec<Reduction>, AnalysisError> {
    let runs = index(records)?;
    let mut out = Vec::new();
    for ((group, benchmark, design), seeds) in &runs {
        if design == BASELINE {
            continue;
        }
        let Some(base) = runs.get(&(group.clone(), benchmark.clone(), BASELINE.to_string())) else {
            continue;
        };
        for metric in METRICS {
            let pairs: Vec<(u64, f64, f64)> = seeds
                .iter()
                .filter_map(|(seed, m)| {
                    let d = *m.get(metric)?;
                    let b = *base.get(seed)?.get(metric)?;
                    Some((*seed, b, d))
                })
                .collect();
            if pairs.is_empty() {
                continue;
            }
            out.push(reduce_pairs(group, benchmark, design, metric, &pairs));
        }
    }
    out.sort_by_key(|r| {
        (
            group_rank(&r.group),
            benchmark_rank(&r.benchmark),
            design_rank(&r.design),
            metric_rank(&r.metric),
        )
    });
    Ok(out)
}

/// One row from its matched (seed, baseline, design) values.
fn reduce_pairs(
    group: &str,
    benchmark: &str,
    design: &str,
    metric: &str,
    pairs: &[(u64, f64, f64)],
) -> Reduction {
    let k = pairs.len() as f64;
    let reds: Vec<f64> = pairs
        .iter()
        .filter(|(_, b, _)| *b != 0.0)
        .map(|(_, b, d)| 1.0 - d / b)
        .filter(|r| r.is_finite())
        .collect();
    let n = reds.len();
    let mean = (n > 0).then(|| reds.iter().sum::<f64>() / n as f64);
    let interval = t_interval(&reds);
    Reduction {
        group: group.to_string(),
        benchmark: benchmark.to_string(),
        design: design.to_string(),
        metric: metric.to_string(),
        baseline: pairs.iter().map(|p| p.1).sum::<f64>() / k,
        design_value: pairs.iter().map(|p| p.2).sum::<f64>() / k,
        ratio: mean.map(|m| 1.0 - m),
        reduction: mean,
        std_dev: interval.map(|i| i.1),
        ci_low: interval.map(|i| i.2),
        ci_high: interval.map(|i| i.3),
        n,
        seeds: pairs.iter().map(|p| p.0).collect(),
    }
}

/// The summary of one design's reductions of one metric over a group's benchmarks.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub group: String,
    pub design: String,
    pub metric: String,
    /// Benchmarks with a defined reduction.
    pub benchmarks: usize,
    /// Geometric mean of the benchmarks' ratios design / baseline.
    pub geomean_ratio: Option<f64>,
    /// `1 - geomean_ratio`.
    pub geomean_reduction: Option<f64>,
    pub min_reduction: Option<f64>,
    pub min_benchmark: Option<String>,
    pub max_reduction: Option<f64>,
    pub max_benchmark: Option<String>,
}

/// Geometric mean of non-negative values: 0 if one is 0, `None` if one is negative or the
/// list is empty.
pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| *v < 0.0 || !v.is_finite()) {
        return None;
    }
    if values.contains(&0.0) {
        return Some(0.0);
    }
    let mean_ln = values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64;
    Some(mean_ln.exp())
}

/// One summary per (group, design, metric) present in `reductions`, in their order.
pub fn summaries(reductions: &[Reduction]) -> Vec<Summary> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in reductions {
        let k = (r.group.clone(), r.design.clone(), r.metric.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by_key(|(g, d, m)| (group_rank(g), design_rank(d), metric_rank(m)));
    keys.into_iter()
        .map(|(group, design, metric)| {
            let rows: Vec<&Reduction> = reductions
                .iter()
                .filter(|r| r.group == group && r.design == design && r.metric == metric)
                .filter(|r| r.reduction.is_some())
                .collect();
            let ratios: Vec<f64> = rows.iter().filter_map(|r| r.ratio).collect();
            let geo = geometric_mean(&ratios);
            // Ties keep the first benchmark in paper order.
            let min = rows.iter().fold(None::<&Reduction>, |best, r| match best {
                Some(b) if b.reduction <= r.reduction => Some(b),
                _ => Some(r),
            });
            let max = rows.iter().fold(None::<&Reduction>, |best, r| match best {
                Some(b) if b.reduction >= r.reduction => Some(b),
                _ => Some(r),
            });
            Summary {
                benchmarks: rows.len(),
                geomean_ratio: geo,
                geomean_reduction: geo.map(|g| 1.0 - g),
                min_reduction: min.and_then(|r| r.reduction),
                min_benchmark: min.map(|r| r.benchmark.clone()),
                max_reduction: max.and_then(|r| r.reduction),
                max_benchmark: max.map(|r| r.benchmark.clone()),
                group,
                design,
                metric,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::rec;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn one_seed_reduction_by_hand() {
        // baseline 200, design 50: ratio 0.25, reduction 0.75; n = 1 gives no interval.
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 200.0)]),
            rec("imb", "PP", "basemoped", 1, &[("cycles", 50.0)]),
        ];
        let r = reductions(&recs).unwrap();
        assert_eq!(r.len(), 1);
        let r = &r[0];
        assert_eq!(
            (r.metric.as_str(), r.design.as_str()),
            ("cycles", "basemoped")
        );
        assert_eq!(r.baseline, 200.0);
        assert_eq!(r.design_value, 50.0);
        assert_eq!(r.ratio, Some(0.25));
        assert_eq!(r.reduction, Some(0.75));
        assert_eq!(r.n, 1);
        assert_eq!((r.std_dev, r.ci_low, r.ci_high), (None, None, None));
        assert_eq!(r.seeds, vec![1]);
    }

    #[test]
    fn two_seeds_mean_and_t_interval_by_hand() {
        // Seed 1: 1 - 50/200 = 0.75; seed 2: 1 - 70/200 = 0.65.
        // mean 0.70; sample sd = sqrt((0.05^2 + 0.05^2) / 1) = 0.0707107;
        // standard error = sd / sqrt(2) = 0.05; t(0.975, 1 dof) = 12.7062047;
        // half width = 0.6353102; interval [0.0646898, 1.3353102].
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 200.0)]),
            rec("imb", "PP", "baseline", 2, &[("cycles", 200.0)]),
            rec("imb", "PP", "optcopy", 1, &[("cycles", 50.0)]),
            rec("imb", "PP", "optcopy", 2, &[("cycles", 70.0)]),
        ];
        let r = &reductions(&recs).unwrap()[0];
        assert_eq!(r.n, 2);
        assert!(close(r.reduction.unwrap(), 0.70));
        assert!(close(r.ratio.unwrap(), 0.30));
        assert!(close(r.std_dev.unwrap(), 0.0707107));
        assert!(close(r.ci_low.unwrap(), 0.0646898));
        assert!(close(r.ci_high.unwrap(), 1.3353102));
        assert!(close(r.ci_half_width().unwrap(), 0.6353102));
        assert_eq!(r.design_value, 60.0);
    }

    #[test]
    fn three_seed_interval_by_hand() {
        // Reductions 0.5, 0.6, 0.7: mean 0.6, sd 0.1, se 0.1/sqrt(3) = 0.0577350,
        // t(0.975, 2 dof) = 4.3026527, half width 0.2484138.
        let (mean, sd, lo, hi) = t_interval(&[0.5, 0.6, 0.7]).unwrap();
        assert!(close(mean, 0.6) && close(sd, 0.1));
        assert!(close(lo, 0.6 - 0.2484138) && close(hi, 0.6 + 0.2484138));
        assert_eq!(t_interval(&[0.5]), None);
    }

    #[test]
    fn seeds_are_matched_and_unmatched_runs_ignored() {
        // The design ran seeds 1 and 3, the baseline 1 and 2: only seed 1 pairs up.
        let recs = vec![
            rec("npb", "CG", "baseline", 1, &[("cycles", 100.0)]),
            rec("npb", "CG", "baseline", 2, &[("cycles", 1000.0)]),
            rec("npb", "CG", "optcache", 1, &[("cycles", 80.0)]),
            rec("npb", "CG", "optcache", 3, &[("cycles", 1.0)]),
            // No baseline for MG at all: no row.
            rec("npb", "MG", "optcache", 1, &[("cycles", 1.0)]),
        ];
        let r = reductions(&recs).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].seeds, vec![1]);
        assert!(close(r[0].reduction.unwrap(), 0.2));
    }

    #[test]
    fn zero_baseline_is_undefined_never_nan() {
        let recs = vec![
            rec(
                "imb",
                "AA",
                "baseline",
                1,
                &[("l2_misses_global", 0.0), ("cycles", 10.0)],
            ),
            rec(
                "imb",
                "AA",
                "basemoped",
                1,
                &[("l2_misses_global", 5.0), ("cycles", 0.0)],
            ),
        ];
        let r = reductions(&recs).unwrap();
        let cycles = r.iter().find(|r| r.metric == "cycles").unwrap();
        assert_eq!(cycles.reduction, Some(1.0));
        let global = r.iter().find(|r| r.metric == "l2_misses_global").unwrap();
        assert_eq!((global.ratio, global.reduction, global.n), (None, None, 0));
        assert_eq!(global.seeds, vec![1]);
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("NaN") && !json.contains("inf"));
    }

    #[test]
    fn unknown_metrics_ignored_duplicates_and_nan_rejected() {
        let recs = vec![
            rec(
                "imb",
                "PP",
                "baseline",
                1,
                &[("cycles", 10.0), ("foo", 1.0)],
            ),
            rec("imb", "PP", "optcopy", 1, &[("cycles", 5.0), ("foo", 9.0)]),
        ];
        let r = reductions(&recs).unwrap();
        assert_eq!(r.len(), 1);
        let mut dup = recs.clone();
        dup.push(recs[1].clone());
        assert!(matches!(
            reductions(&dup),
            Err(AnalysisError::Duplicate { seed: 1, .. })
        ));
        let nan = vec![rec("imb", "PP", "baseline", 1, &[("cycles", f64::NAN)])];
        assert!(matches!(
            reductions(&nan),
            Err(AnalysisError::NotFinite { .. })
        ));
    }

    #[test]
    fn rows_in_paper_order() {
        let mut recs = Vec::new();
        for (g, b) in [
            ("imb-1m", "BC"),
            ("npb", "BT"),
            ("imb", "AA"),
            ("npb", "SP"),
            ("imb", "PP"),
        ] {
            for d in ["optcache", "baseline", "basemoped"] {
                recs.push(rec(g, b, d, 1, &[("l1_misses", 4.0), ("cycles", 2.0)]));
            }
        }
        let order: Vec<String> = reductions(&recs)
            .unwrap()
            .iter()
            .map(|r| format!("{} {} {} {}", r.group, r.benchmark, r.design, r.metric))
            .collect();
        assert_eq!(order[0], "imb PP basemoped cycles");
        assert_eq!(order[1], "imb PP basemoped l1_misses");
        assert_eq!(order[2], "imb PP optcache cycles");
        assert_eq!(order[4], "imb AA basemoped cycles");
        assert_eq!(order[8], "npb SP basemoped cycles");
        assert_eq!(order[12], "npb BT basemoped cycles");
        assert_eq!(order[16], "imb-1m BC basemoped cycles");
    }

    #[test]
    fn geometric_mean_and_ranges_by_hand() {
        // Ratios 0.25 and 0.64 (reductions 0.75 and 0.36): geometric mean sqrt(0.16) = 0.4.
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 100.0)]),
            rec("imb", "PP", "optcopy", 1, &[("cycles", 25.0)]),
            rec("imb", "XC", "baseline", 1, &[("cycles", 100.0)]),
            rec("imb", "XC", "optcopy", 1, &[("cycles", 64.0)]),
        ];
        let s = summaries(&reductions(&recs).unwrap());
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert!(close(s.geomean_ratio.unwrap(), 0.4));
        assert!(close(s.geomean_reduction.unwrap(), 0.6));
        assert_eq!(s.min_reduction, Some(0.36));
        assert_eq!(s.min_benchmark.as_deref(), Some("XC"));
        assert_eq!(s.max_reduction, Some(0.75));
        assert_eq!(s.max_benchmark.as_deref(), Some("PP"));
        assert_eq!(s.benchmarks, 2);
        assert_eq!(geometric_mean(&[0.0, 0.5]), Some(0.0));
        assert_eq!(geometric_mean(&[-0.1, 0.5]), None);
        assert_eq!(geometric_mean(&[]), None);
    }
}
