//! How far the model's choices move Figure 10 (`moped figure10 --sensitivity`): the
//! reductions of each alternative configuration beside the default's, as `sensitivity.csv`
//! and a section of report.md.
//!
//! The CSV has the columns `alternative,benchmark,design,metric,reduction`: one row per
//! alternative (the default first, named [`DEFAULT`]), benchmark, MOPED design and Figure
//! 10 metric ([`FIGURE_METRICS`]); `reduction` is `1 - design / baseline` (the mean over
//! seeds, as in reductions.csv), empty where undefined. A benchmark of the 1 MB group is
//! named with its size ("PP 1MB"), so that every row is told apart by those columns.

use std::fmt::Write as _;

use serde::Serialize;

use super::write::csv_text;
use super::{design_label, metric_label, Pct, Reduction, DESIGNS};

/// The alternative name of the configuration Figure 10 ran under.
pub const DEFAULT: &str = "default";

/// Figure 10's four panels.
pub const FIGURE_METRICS: [&str; 4] = [
    "cycles",
    "l1_misses",
    "l2_misses_private",
    "l2_misses_global",
];

/// The CSV header.
pub const CSV_HEADER: &str = "alternative,benchmark,design,metric,reduction";

/// One bar of Figure 10 under one alternative.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SensitivityRow {
    pub alternative: String,
    /// The benchmark, with its message size outside the 16 kB and class-S groups.
    pub benchmark: String,
    pub design: String,
    pub metric: String,
    pub reduction: Option<f64>,
}

/// A benchmark's name in the sensitivity table.
fn bench_name(group: &str, benchmark: &str) -> String {
    match group {
        "imb-1m" => format!("{benchmark} 1MB"),
        _ => benchmark.to_string(),
    }
}

/// The rows of `alternative` from its reductions, in their (paper) order.
pub fn rows(alternative: &str, reductions: &[Reduction]) -> Vec<SensitivityRow> {
    reductions
        .iter()
        .filter(|r| FIGURE_METRICS.contains(&r.metric.as_str()))
        .map(|r| SensitivityRow {
            alternative: alternative.to_string(),
            benchmark: bench_name(&r.group, &r.benchmark),
            design: r.design.clone(),
            metric: r.metric.clone(),
            reduction: r.reduction,
        })
        .collect()
}

/// The rows as CSV text (see the module doc).
pub fn sensitivity_csv(rows: &[SensitivityRow]) -> String {
    let header = CSV_HEADER.split(',').map(str::to_string).collect();
    let lines = rows.iter().map(|r| {
        vec![
            r.alternative.clone(),
            r.benchmark.clone(),
            r.design.clone(),
            r.metric.clone(),
            r.reduction.map(|v| v.to_string()).unwrap_or_default(),
        ]
    });
    csv_text(
        std::iter::once(header).chain(lines),
        csv::Terminator::Any(b'\n'),
    )
}

/// An alternative as the report describes it: its name and what it changes.
#[derive(Clone, Debug)]
pub struct AlternativeInfo {
    pub name: String,
    /// What the alternative models, in words.
    pub what: String,
    /// The config overrides it applies, `key = value`.
    pub set: Vec<String>,
}

/// The reduction of (benchmark, design, metric) under `alternative`.
fn find(
    rows: &[SensitivityRow],
    alternative: &str,
    bench: &str,
    design: &str,
    metric: &str,
) -> Option<f64> {
    rows.iter()
        .find(|r| {
            r.alternative == alternative
                && r.benchmark == bench
                && r.design == design
                && r.metric == metric
        })
        .and_then(|r| r.reduction)
}

/// The benchmarks of the rows, in their first order.
fn benchmarks(rows: &[SensitivityRow]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for r in rows {
        if !out.contains(&r.benchmark.as_str()) {
            out.push(&r.benchmark);
        }
    }
    out
}

/// Per metric, the largest move of any bar (alternative minus default, in points) with its
/// benchmark and design, and the mean move's size over every bar.
fn moves(rows: &[SensitivityRow], alternative: &str, metric: &str) -> Option<(f64, String, f64)> {
    let mut largest: Option<(f64, String)> = None;
    let (mut sum, mut n) = (0.0, 0usize);
    for b in benchmarks(rows) {
        for d in DESIGNS {
            let (Some(alt), Some(def)) = (
                find(rows, alternative, b, d, metric),
                find(rows, DEFAULT, b, d, metric),
            ) else {
                continue;
            };
            let delta = alt - def;
            sum += delta.abs();
            n += 1;
            if largest
                .as_ref()
                .map_or(true, |(l, _)| delta.abs() > l.abs())
            {
                largest = Some((delta, format!("{b} {}", design_label(d))));
            }
        }
    }
    largest.map(|(l, at)| (l, at, sum / n as f64))
}

/// A change in points, signed ("+12.3", "-0.4").
fn points(delta: f64) -> String {
    let p = Pct(delta).to_string();
    if delta > 0.0 && p != "0.0" {
        format!("+{p}")
    } else {
        p
    }
}

/// The report's section: what each alternative changes, one row per alternative with the
/// largest move per metric, then per metric every bar under every alternative.
/// `note` follows the first table (what was verified).
pub fn sensitivity_markdown(
    rows: &[SensitivityRow],
    alternatives: &[AlternativeInfo],
    note: &str,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Sensitivity to the model's choices\n");
    let _ = writeln!(
        out,
        "Figure 10 rerun under each alternative modelling choice, everything else as in the \
         default run (`sensitivity.csv`; each alternative's runs in `sensitivity/<name>/`). \
         Per metric: the largest change of any bar, in percentage points of reduction \
         (alternative minus default), with its benchmark and design, and the mean size of \
         the change over all bars.\n"
    );
    let mut header = String::from("| alternative | what it changes |");
    let mut rule = String::from("|---|---|");
    for m in FIGURE_METRICS {
        let _ = write!(header, " {} |", metric_label(m));
        rule.push_str("---|");
    }
    let _ = writeln!(out, "{header}\n{rule}");
    for a in alternatives {
        let mut line = format!("| `{}` | {} (`{}`) |", a.name, a.what, a.set.join("`, `"));
        for m in FIGURE_METRICS {
            let cell = match moves(rows, &a.name, m) {
                Some((l, at, mean)) => format!("{} ({at}); mean {}", points(l), Pct(mean)),
                None => "—".to_string(),
            };
            let _ = write!(line, " {cell} |");
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "\n{note}\n");
    for m in FIGURE_METRICS {
        bars_table(&mut out, rows, alternatives, m);
    }
    out
}

/// Every bar of one metric: a row per alternative, a column per benchmark, each cell the
/// three designs' reductions in % (BASEMOPED / OPTCOPY / OPTCACHE).
fn bars_table(out: &mut String, rows: &[SensitivityRow], alts: &[AlternativeInfo], m: &str) {
    let benches = benchmarks(rows);
    let labels: Vec<String> = DESIGNS.iter().map(|d| design_label(d)).collect();
    let _ = writeln!(
        out,
        "### Reductions in {}, % ({})\n",
        metric_label(m),
        labels.join(" / ")
    );
    let _ = writeln!(out, "| alternative | {} |", benches.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(benches.len()));
    let names = std::iter::once(DEFAULT).chain(alts.iter().map(|a| a.name.as_str()));
    for alt in names {
        let mut line = format!("| `{alt}` |");
        for b in &benches {
            let cells: Vec<String> = DESIGNS
                .iter()
                .map(|d| find(rows, alt, b, d, m).map_or("—".into(), |v| Pct(v).to_string()))
                .collect();
            let _ = write!(line, " {} |", cells.join(" / "));
        }
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{rec, reductions};

    fn table(alt_cycles: f64) -> (Vec<SensitivityRow>, Vec<AlternativeInfo>) {
        let mut rows = Vec::new();
        for (alt, c) in [(DEFAULT, 50.0), ("cold", alt_cycles)] {
            let recs = vec![
                rec(
                    "imb",
                    "PP",
                    "baseline",
                    1,
                    &[("cycles", 100.0), ("l1_misses", 10.0)],
                ),
                rec(
                    "imb",
                    "PP",
                    "optcopy",
                    1,
                    &[("cycles", c), ("l1_misses", 5.0)],
                ),
                rec("imb-1m", "PP", "baseline", 1, &[("cycles", 100.0)]),
                rec("imb-1m", "PP", "optcopy", 1, &[("cycles", 80.0)]),
            ];
            rows.extend(super::rows(alt, &reductions(&recs).unwrap()));
        }
        let info = AlternativeInfo {
            name: "cold".into(),
            what: "no warm-up".into(),
            set: vec!["workload.warmup = false".into()],
        };
        (rows, vec![info])
    }

    #[test]
    fn rows_tell_the_groups_apart_and_write_the_five_columns() {
        let (rows, _) = table(70.0);
        let csv = sensitivity_csv(&rows);
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER));
        assert!(csv.contains("default,PP,optcopy,cycles,0.5\n"), "{csv}");
        assert!(
            csv.contains("cold,PP,optcopy,cycles,0.30000000000000004\n"),
            "{csv}"
        );
        assert!(csv.contains("default,PP 1MB,optcopy,cycles,0.19999999999999996\n"));
        // Only Figure 10's metrics: no row for a metric the figure does not show.
        assert!(rows
            .iter()
            .all(|r| FIGURE_METRICS.contains(&r.metric.as_str())));
        assert_eq!(lines.count(), rows.len());
    }

    #[test]
    fn the_report_names_each_alternatives_largest_move() {
        let (rows, alts) = table(70.0);
        let md = sensitivity_markdown(&rows, &alts, "");
        // OPTCOPY's PP cycle reduction falls from 50 % to 30 %: -20 points.
        assert!(md.contains("-20.0 (PP OPTCOPY)"), "{md}");
        assert!(
            md.contains("| `cold` | no warm-up (`workload.warmup = false`) |"),
            "{md}"
        );
        // The default row and the alternative's, each bar as its three designs.
        assert!(
            md.contains("| `default` | — / 50.0 / — | — / 20.0 / — |"),
            "{md}"
        );
        assert!(md.contains("| `cold` | — / 30.0 / — |"), "{md}");
        // An alternative that moves nothing says so with zeros.
        let (same, alts) = table(50.0);
        let md = sensitivity_markdown(&same, &alts, "");
        assert!(md.contains("0.0 (PP OPTCOPY); mean 0.0"), "{md}");
    }
}
