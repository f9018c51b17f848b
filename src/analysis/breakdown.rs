//! Where the ranks' cycles go, per benchmark and design: `breakdown.csv` (the stacked-bar
//! figure's data) and the report's tables.
//!
//! A run's `rank_cycles_<activity>` metrics are its ranks' cycles in each activity summed
//! over the ranks (`mpi.cycles.<activity>`); each rank's parts add up to the run's cycles,
//! so a design's parts over the baseline's total are its bars in Figure 10's cycle panel,
//! split by where the cycles went.

use std::fmt::Write;

use super::write::csv_text;
use super::{design_label, RunRecord, BASELINE};
use crate::mpi::activity::Activity;

/// The metric of an activity's cycles in a run record.
pub fn metric(a: Activity) -> String {
    format!("rank_cycles_{}", a.name())
}

/// One benchmark under one design: each activity's cycles (summed over the ranks, the
/// mean over seeds) in [`Activity::ALL`] order, and the baseline's total of the same
/// benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakdownRow {
    pub group: String,
    pub benchmark: String,
    pub design: String,
    pub parts: Vec<f64>,
    pub baseline_total: Option<f64>,
}

impl BreakdownRow {
    pub fn total(&self) -> f64 {
        self.parts.iter().sum()
    }

    pub fn part(&self, a: Activity) -> f64 {
        self.parts[a as usize]
    }
}

/// The mean of each activity's cycles over the seeds of every (group, benchmark, design),
/// in the records' order; records without the breakdown's metrics are left out.
pub fn rows(records: &[RunRecord]) -> Vec<BreakdownRow> {
    let mut out: Vec<(BreakdownRow, usize)> = Vec::new();
    for r in records {
        let Some(parts) = Activity::ALL
            .iter()
            .map(|&a| r.metrics.get(&metric(a)).copied())
            .collect::<Option<Vec<f64>>>()
        else {
            continue;
        };
        let key = |row: &BreakdownRow| {
            row.group == r.group && row.benchmark == r.benchmark && row.design == r.design
        };
        match out.iter_mut().find(|(row, _)| key(row)) {
            Some((row, n)) => {
                for (sum, v) in row.parts.iter_mut().zip(&parts) {
                    *sum += v;
                }
                *n += 1;
            }
            None => out.push((
                BreakdownRow {
                    group: r.group.clone(),
                    benchmark: r.benchmark.clone(),
                    design: r.design.clone(),
                    parts,
                    baseline_total: None,
                },
                1,
            )),
        }
    }
    let mut rows: Vec<BreakdownRow> = out
        .into_iter()
        .map(|(mut row, n)| {
            row.parts.iter_mut().for_each(|v| *v /= n as f64);
            row
        })
        .collect();
    let totals: Vec<(String, String, f64)> = rows
        .iter()
        .filter(|r| r.design == BASELINE)
        .map(|r| (r.group.clone(), r.benchmark.clone(), r.total()))
        .collect();
    for row in &mut rows {
        row.baseline_total = totals
            .iter()
            .find(|(g, b, _)| *g == row.group && *b == row.benchmark)
            .map(|t| t.2);
    }
    rows
}

/// The CSV header of `breakdown.csv`.
pub const CSV_HEADER: &str = "group,benchmark,design,activity,rank_cycles,share,of_baseline";

/// `breakdown.csv`: a line per (group, benchmark, design, activity): the activity's cycles
/// summed over the ranks, its share of the design's, and its cycles over the baseline's
/// total (the stacked bar's segment; empty without a baseline run).
pub fn breakdown_csv(rows: &[BreakdownRow]) -> String {
    let header = CSV_HEADER.split(',').map(str::to_string).collect();
    let lines = rows.iter().flat_map(|r| {
        let total = r.total();
        Activity::ALL.iter().map(move |&a| {
            let v = r.part(a);
            let share = if total > 0.0 { v / total } else { 0.0 };
            let of_base = r
                .baseline_total
                .filter(|&t| t > 0.0)
                .map(|t| (v / t).to_string())
                .unwrap_or_default();
            vec![
                r.group.clone(),
                r.benchmark.clone(),
                r.design.clone(),
                a.name().to_string(),
                v.to_string(),
                share.to_string(),
                of_base,
            ]
        })
    });
    csv_text(
        std::iter::once(header).chain(lines),
        csv::Terminator::Any(b'\n'),
    )
}

/// The report's columns: activities merged so a table fits eight columns.
const COLUMNS: [(&str, &[Activity]); 7] = [
    ("compute", &[Activity::Compute]),
    ("reduction", &[Activity::Reduce]),
    ("copies", &[Activity::Copy]),
    ("searches", &[Activity::Search]),
    ("waiting", &[Activity::Poll, Activity::MopedWait]),
    ("calls, ports", &[Activity::Call, Activity::MopedPort]),
    ("idle", &[Activity::Idle]),
];

/// The report's section: per design, each benchmark's cycles by activity, as shares of
/// the baseline's total (so a row adds up to the design's cycles over the baseline's).
pub fn markdown(rows: &[BreakdownRow]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(out, "## Where the ranks' cycles go\n");
    let _ = writeln!(
        out,
        "Each rank's cycles, summed over the ranks, by what its core was doing \
         (`mpi.cycles.*`; `breakdown.csv` has every activity, `breakdown.png` the bars), \
         in % of the baseline's cycles on the same benchmark: a row adds up to the design's \
         cycles over the baseline's. Waiting is the software path's polling or MOPED's \
         descriptor polls; calls and ports are the MPI calls' own work and MOPED's data-port \
         stores; idle is a rank's time after its last call.\n"
    );
    let mut designs: Vec<&str> = Vec::new();
    for r in rows {
        if !designs.contains(&r.design.as_str()) {
            designs.push(&r.design);
        }
    }
    for d in designs {
        let _ = writeln!(out, "{}:\n", design_label(d));
        let mut head = "| benchmark |".to_string();
        let mut rule = "|---|".to_string();
        for (name, _) in COLUMNS {
            let _ = write!(head, " {name} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(out, "{head}\n{rule}");
        for r in rows.iter().filter(|r| r.design == d) {
            let Some(base) = r.baseline_total.filter(|&t| t > 0.0) else {
                continue;
            };
            let mut line = format!("| {} |", r.benchmark);
            for (_, acts) in COLUMNS {
                let v: f64 = acts.iter().map(|&a| r.part(a)).sum();
                let _ = write!(line, " {:.1} |", 100.0 * v / base);
            }
            let _ = writeln!(out, "{line}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn rec(bench: &str, design: &str, seed: u64, parts: [f64; 9]) -> RunRecord {
        let metrics: BTreeMap<String, f64> = Activity::ALL
            .iter()
            .zip(parts)
            .map(|(&a, v)| (metric(a), v))
            .collect();
        RunRecord {
            benchmark: bench.into(),
            group: "imb".into(),
            design: design.into(),
            seed,
            metrics,
        }
    }

    #[test]
    fn rows_average_seeds_and_divide_by_the_baselines_total() {
        let records = vec![
            rec(
                "RD",
                "baseline",
                1,
                [0., 10., 50., 0., 30., 10., 0., 0., 0.],
            ),
            rec("RD", "optcopy", 1, [0., 10., 10., 0., 0., 10., 1., 9., 0.]),
            rec("RD", "optcopy", 2, [0., 10., 12., 0., 0., 10., 1., 7., 0.]),
        ];
        let rows = rows(&records);
        assert_eq!(rows.len(), 2);
        let opt = &rows[1];
        assert_eq!(opt.part(Activity::Copy), 11.0);
        assert_eq!(opt.total(), 40.0);
        assert_eq!(opt.baseline_total, Some(100.0));
        let csv = breakdown_csv(&rows);
        assert!(csv.starts_with(CSV_HEADER));
        assert_eq!(csv.lines().count(), 1 + 2 * 9);
        assert!(
            csv.contains("imb,RD,optcopy,mpi_copy,11,0.275,0.11\n"),
            "{csv}"
        );
        let md = markdown(&rows);
        // Waiting merges polling and MOPED's waits: 8 of the baseline's 100 cycles.
        assert!(
            md.contains("| RD | 0.0 | 10.0 | 11.0 | 0.0 | 8.0 | 11.0 | 0.0 |"),
            "{md}"
        );
        for line in md.lines().filter(|l| l.starts_with('|')) {
            assert!(line.matches('|').count() - 1 <= 8, "{line}");
        }
    }

    #[test]
    fn records_without_the_breakdown_are_left_out() {
        let mut r = rec("PP", "baseline", 1, [1.0; 9]);
        r.metrics.remove(&metric(Activity::Idle));
        assert!(rows(&[r]).is_empty());
        assert_eq!(markdown(&[]), "");
    }
}
