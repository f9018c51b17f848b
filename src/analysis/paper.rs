//! The values the paper publishes for Figure 10, and measured ranges set beside them.
//!
//! Sources are the abstract and section 6 of Gu, Lumetta, Kumar and Sun, "MOPED:
//! Orchestrating Interprocess Message Data on CMPs". Section 6's paragraphs are counted
//! from its start: 1 (the baseline), 2 (the metrics; L1 reductions nearly identical),
//! 3 (BASEMOPED), 4 (OPTCOPY), 5 (OPTCACHE), 6 (1 MB messages). Values are reductions
//! (fractions: 0.66 is 66 %) relative to `reference`. Where the paper's wording leaves
//! something open (which design the abstract means, what a reduction is relative to), the
//! entry's `reading` says how it is read here.

use serde::Serialize;

use super::{group_rank, Reduction, BASELINE, IMB, NPB};
use crate::design::Design;

/// One published value or range.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Published {
    pub id: &'static str,
    pub group: &'static str,
    /// The designs it is stated for.
    pub designs: &'static [&'static str],
    pub metric: &'static str,
    /// The benchmarks it covers.
    pub benchmarks: &'static [&'static str],
    /// What the reduction is relative to: "baseline" or another design.
    pub reference: &'static str,
    /// Published reduction bounds; `None` is unbounded on that side. `low == high` is a
    /// single ("roughly") value.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// What the paper says, in a few words.
    pub statement: &'static str,
    /// Where: "Abstract" or "Section 6, paragraph N".
    pub source: &'static str,
    /// How an open point of the wording is read here (empty when nothing is open).
    pub reading: &'static str,
}

const MOPED_OPT: &[&str] = &[Design::OptCopy.name(), Design::OptCache.name()];

/// The published values, in report order.
pub const PUBLISHED: &[Published] = &[
    Published {
        id: "imb-cycles-basemoped",
        group: "imb",
        designs: &[Design::BaseMoped.name()],
        metric: "cycles",
        benchmarks: &IMB,
        reference: BASELINE,
        low: Some(0.66),
        high: Some(0.93),
        statement: "\"66-93% reduction in execution time\"",
        source: "Section 6, paragraph 3",
        reading: "",
    },
    Published {
        id: "imb-cycles-optcopy",
        group: "imb",
        designs: &[Design::OptCopy.name()],
        metric: "cycles",
        benchmarks: &IMB,
        reference: BASELINE,
        low: Some(0.76),
        high: Some(0.94),
        statement: "execution time \"reduced by 76-94% for IMB\"",
        source: "Section 6, paragraph 4; Abstract",
        reading: "",
    },
    Published {
        id: "imb-l1-basemoped",
        group: "imb",
        designs: &[Design::BaseMoped.name()],
        metric: "l1_misses",
        benchmarks: &IMB,
        reference: BASELINE,
        low: Some(0.5),
        high: Some(1.0),
        statement: "\"removes most L1 misses\"",
        source: "Section 6, paragraph 3",
        reading: "\"most\" read as more than 50 %",
    },
    Published {
        id: "imb-l2private-basemoped",
        group: "imb",
        designs: &[Design::BaseMoped.name()],
        metric: "l2_misses_private",
        benchmarks: &["PP", "XC", "BC", "GA"],
        reference: BASELINE,
        low: Some(0.5),
        high: Some(1.0),
        statement: "\"most private L2 misses except for AA and RD\"",
        source: "Section 6, paragraph 3",
        reading: "\"most\" read as more than 50 %; AA and RD left out",
    },
    Published {
        id: "imb-global-basemoped-raised",
        group: "imb",
        designs: &[Design::BaseMoped.name()],
        metric: "l2_misses_global",
        benchmarks: &["PP", "XC"],
        reference: BASELINE,
        low: None,
        high: Some(0.0),
        statement: "PP and XC \"see an increase in global L2 misses\"",
        source: "Section 6, paragraph 3",
        reading: "an increase is a reduction below 0",
    },
    Published {
        id: "imb-global-opt",
        group: "imb",
        designs: MOPED_OPT,
        metric: "l2_misses_global",
        benchmarks: &IMB,
        reference: BASELINE,
        low: Some(0.75),
        high: Some(1.0),
        statement: "off-chip memory misses reduced \"by 75-100% for microbenchmarks\"",
        source: "Abstract",
        reading: "the abstract names no design; its execution-time ranges are OPTCOPY's, \
                  and OPTCACHE is stated to be close to OPTCOPY at 16 kB",
    },
    Published {
        id: "npb-cycles-basemoped",
        group: "npb",
        designs: &[Design::BaseMoped.name()],
        metric: "cycles",
        benchmarks: &NPB,
        reference: BASELINE,
        low: Some(0.13),
        high: Some(0.40),
        statement: "\"13-40% reduction in execution time\"",
        source: "Section 6, paragraph 3",
        reading: "",
    },
    Published {
        id: "npb-cycles-optcopy",
        group: "npb",
        designs: &[Design::OptCopy.name()],
        metric: "cycles",
        benchmarks: &NPB,
        reference: BASELINE,
        low: Some(0.17),
        high: Some(0.45),
        statement: "execution time reduced by \"17-45% for NPB\"",
        source: "Section 6, paragraph 4; Abstract",
        reading: "",
    },
    Published {
        id: "npb-l1-basemoped",
        group: "npb",
        designs: &[Design::BaseMoped.name()],
        metric: "l1_misses",
        benchmarks: &NPB,
        reference: BASELINE,
        low: Some(0.13),
        high: Some(0.48),
        statement: "\"removing 13-48% of L1 misses\"",
        source: "Section 6, paragraph 3",
        reading: "",
    },
    Published {
        id: "npb-l2private-basemoped",
        group: "npb",
        designs: &[Design::BaseMoped.name()],
        metric: "l2_misses_private",
        benchmarks: &NPB,
        reference: BASELINE,
        low: Some(0.24),
        high: Some(0.61),
        statement: "\"24-61% of private L2 misses\"",
        source: "Section 6, paragraph 3",
        reading: "",
    },
    Published {
        id: "npb-global-basemoped-raised",
        group: "npb",
        designs: &[Design::BaseMoped.name()],
        metric: "l2_misses_global",
        benchmarks: &["CG", "MG"],
        reference: BASELINE,
        low: None,
        high: Some(0.0),
        statement: "CG and MG \"see an increase in global L2 misses\"",
        source: "Section 6, paragraph 3",
        reading: "an increase is a reduction below 0",
    },
    Published {
        id: "npb-global-opt",
        group: "npb",
        designs: MOPED_OPT,
        metric: "l2_misses_global",
        benchmarks: &NPB,
        reference: BASELINE,
        low: Some(0.43),
        high: Some(0.88),
        statement: "off-chip memory misses reduced \"by 43-88% for applications\"",
        source: "Abstract",
        reading: "the abstract names no design; its execution-time ranges are OPTCOPY's, \
                  and OPTCACHE is stated to be close to OPTCOPY at 16 kB",
    },
    Published {
        id: "1m-global-optcache-vs-optcopy",
        group: "imb-1m",
        designs: &[Design::OptCache.name()],
        metric: "l2_misses_global",
        benchmarks: &["PP", "XC"],
        reference: Design::OptCopy.name(),
        low: Some(0.5),
        high: Some(0.5),
        statement: "OPTCACHE turns \"roughly 50% of global L2 misses\" into local ones",
        source: "Section 6, paragraph 6",
        reading: "the share is read against OPTCOPY's global L2 misses",
    },
    Published {
        id: "1m-global-bc-optcache",
        group: "imb-1m",
        designs: &[Design::OptCache.name()],
        metric: "l2_misses_global",
        benchmarks: &["BC"],
        reference: BASELINE,
        low: Some(0.93),
        high: Some(0.93),
        statement: "for BC, \"global L2 misses are reduced by 93%\"",
        source: "Section 6, paragraph 6",
        reading: "the paper does not name the reference; read against the baseline, \
                  as Figure 10 is",
    },
    Published {
        id: "1m-cycles-bc-optcopy-vs-basemoped",
        group: "imb-1m",
        designs: &[Design::OptCopy.name()],
        metric: "cycles",
        benchmarks: &["BC"],
        reference: Design::BaseMoped.name(),
        low: Some(0.05),
        high: Some(0.05),
        statement: "BC: \"a 5% reduction in execution time for OPTCOPY\"",
        source: "Section 6, paragraph 6",
        reading: "",
    },
    Published {
        id: "1m-cycles-bc-optcache-vs-basemoped",
        group: "imb-1m",
        designs: &[Design::OptCache.name()],
        metric: "cycles",
        benchmarks: &["BC"],
        reference: Design::BaseMoped.name(),
        low: Some(0.22),
        high: Some(0.22),
        statement: "BC: \"a 22% reduction for OPTCACHE\"",
        source: "Section 6, paragraph 6",
        reading: "",
    },
    Published {
        id: "1m-cycles-pp-xc-optcache",
        group: "imb-1m",
        designs: &[Design::OptCache.name()],
        metric: "cycles",
        benchmarks: &["PP", "XC"],
        reference: Design::BaseMoped.name(),
        low: None,
        high: None,
        statement: "PP and XC see no \"significant performance improvement\"",
        source: "Section 6, paragraph 6",
        reading: "no number is given; shown against BASEMOPED, like BC's",
    },
];

/// A published value beside what was measured for one of its designs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PublishedComparison {
    pub published: Published,
    pub design: String,
    /// Per covered benchmark, the measured reduction relative to the reference (`None`
    /// when not measured or undefined).
    pub measured: Vec<(String, Option<f64>)>,
    pub measured_low: Option<f64>,
    pub low_benchmark: Option<String>,
    pub measured_high: Option<f64>,
    pub high_benchmark: Option<String>,
    /// How many measured benchmarks fall inside the published bounds (`None` for a single
    /// value or a statement without numbers).
    pub inside: Option<usize>,
}

fn find<'a>(
    reductions: &'a [Reduction],
    group: &str,
    benchmark: &str,
    design: &str,
    metric: &str,
) -> Option<&'a Reduction> {
    reductions.iter().find(|r| {
        r.group == group && r.benchmark == benchmark && r.design == design && r.metric == metric
    })
}

/// The reduction of `design` relative to `reference` ("baseline" or another design).
/// Against another design it is `1 - design / reference` on their means over the seeds;
/// `None` when either is missing or the reference is 0.
pub fn relative_reduction(
    reductions: &[Reduction],
    group: &str,
    benchmark: &str,
    design: &str,
    metric: &str,
    reference: &str,
) -> Option<f64> {
    let d = find(reductions, group, benchmark, design, metric)?;
    if reference == BASELINE {
        return d.reduction;
    }
    let r = find(reductions, group, benchmark, reference, metric)?;
    if r.design_value == 0.0 {
        return None;
    }
    let v = 1.0 - d.design_value / r.design_value;
    v.is_finite().then_some(v)
}

/// Every published value beside the measured values of each of its designs.
pub fn compare(reductions: &[Reduction]) -> Vec<PublishedComparison> {
    let mut out = Vec::new();
    let mut published: Vec<&Published> = PUBLISHED.iter().collect();
    published.sort_by_key(|p| group_rank(p.group));
    for p in published {
        for design in p.designs {
            let measured: Vec<(String, Option<f64>)> = p
                .benchmarks
                .iter()
                .map(|b| {
                    let v =
                        relative_reduction(reductions, p.group, b, design, p.metric, p.reference);
                    (b.to_string(), v)
                })
                .collect();
            let known: Vec<(&String, f64)> = measured
                .iter()
                .filter_map(|(b, v)| v.map(|v| (b, v)))
                .collect();
            let lo = known
                .iter()
                .fold(None::<(&String, f64)>, |acc, &(b, v)| match acc {
                    Some((_, a)) if a <= v => acc,
                    _ => Some((b, v)),
                });
            let hi = known
                .iter()
                .fold(None::<(&String, f64)>, |acc, &(b, v)| match acc {
                    Some((_, a)) if a >= v => acc,
                    _ => Some((b, v)),
                });
            let is_range = (p.low.is_some() || p.high.is_some()) && p.low != p.high;
            let inside = is_range.then(|| {
                known
                    .iter()
                    .filter(|(_, v)| {
                        p.low.map_or(true, |l| *v >= l) && p.high.map_or(true, |h| *v <= h)
                    })
                    .count()
            });
            out.push(PublishedComparison {
                published: p.clone(),
                design: design.to_string(),
                measured_low: lo.map(|x| x.1),
                low_benchmark: lo.map(|x| x.0.clone()),
                measured_high: hi.map(|x| x.1),
                high_benchmark: hi.map(|x| x.0.clone()),
                measured,
                inside,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{rec, reductions, IMB_1M};

    #[test]
    fn table_is_consistent() {
        let mut ids: Vec<&str> = PUBLISHED.iter().map(|p| p.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), PUBLISHED.len(), "ids are unique");
        for p in PUBLISHED {
            if let (Some(l), Some(h)) = (p.low, p.high) {
                assert!(l <= h, "{}", p.id);
            }
            let all: &[&str] = match p.group {
                "imb" => &IMB,
                "npb" => &NPB,
                _ => &IMB_1M,
            };
            assert!(p.benchmarks.iter().all(|b| all.contains(b)), "{}", p.id);
            assert!(!p.source.is_empty() && !p.statement.is_empty());
        }
    }

    #[test]
    fn measured_beside_published() {
        // BASEMOPED's IMB cycle reductions: PP 0.75, XC 0.60 (outside 66-93 %).
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 100.0)]),
            rec("imb", "PP", "basemoped", 1, &[("cycles", 25.0)]),
            rec("imb", "XC", "baseline", 1, &[("cycles", 100.0)]),
            rec("imb", "XC", "basemoped", 1, &[("cycles", 40.0)]),
            // 1 MB BC: OPTCOPY 90 vs BASEMOPED 100 cycles: 10 % relative to BASEMOPED.
            rec("imb-1m", "BC", "baseline", 1, &[("cycles", 200.0)]),
            rec("imb-1m", "BC", "basemoped", 1, &[("cycles", 100.0)]),
            rec("imb-1m", "BC", "optcopy", 1, &[("cycles", 90.0)]),
        ];
        let cmp = compare(&reductions(&recs).unwrap());
        let c = cmp
            .iter()
            .find(|c| c.published.id == "imb-cycles-basemoped")
            .unwrap();
        assert_eq!(c.measured_low, Some(0.6));
        assert_eq!(c.low_benchmark.as_deref(), Some("XC"));
        assert_eq!(c.measured_high, Some(0.75));
        assert_eq!(c.inside, Some(1));
        assert_eq!(c.measured.len(), 6);
        let bc = cmp
            .iter()
            .find(|c| c.published.id == "1m-cycles-bc-optcopy-vs-basemoped")
            .unwrap();
        assert!((bc.measured_low.unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(bc.inside, None);
        let none = cmp
            .iter()
            .find(|c| c.published.id == "npb-cycles-optcopy")
            .unwrap();
        assert_eq!((none.measured_low, none.inside), (None, Some(0)));
    }
}
