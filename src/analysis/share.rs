//! How much of each run MOPED carried: per benchmark and MOPED design, the share of sends
//! posted to MOPED, the backoffs that sent the rest down the software path (reservations
//! refused, descriptors revoked, backoff bits set) and, under the baseline, the share of
//! the ranks' cycles in the program's own work. A real trace whose reductions fall short
//! of its skeleton's shows here why: its sends went to the software path, or its time is
//! its own computation, which no design shortens.

use std::fmt::Write;

use super::{RunRecord, BASELINE};

/// One row of the table: a benchmark under one design (seed 1, or the first seed run).
#[derive(Clone, Debug, PartialEq)]
pub struct ShareRow {
    pub group: String,
    pub benchmark: String,
    pub design: String,
    pub sends: f64,
    pub moped_sends: f64,
    pub refused: f64,
    pub revoked: f64,
    pub backoffs_set: f64,
    /// The program's own work over all the ranks' cycles, under the baseline.
    pub compute_share: f64,
}

/// The rows of `records`, in their order, for the MOPED designs.
pub fn rows(records: &[RunRecord]) -> Vec<ShareRow> {
    let m = |r: &RunRecord, k: &str| r.metrics.get(k).copied().unwrap_or(0.0);
    let mut out = Vec::new();
    for r in records.iter().filter(|r| r.design != BASELINE) {
        let first_seed = records
            .iter()
            .filter(|x| x.benchmark == r.benchmark && x.group == r.group && x.design == r.design)
            .map(|x| x.seed)
            .min();
        if Some(r.seed) != first_seed {
            continue;
        }
        let base = records.iter().find(|x| {
            x.design == BASELINE
                && x.benchmark == r.benchmark
                && x.group == r.group
                && x.seed == r.seed
        });
        let compute_share = base.map_or(f64::NAN, |b| {
            let all: f64 = b
                .metrics
                .iter()
                .filter(|(k, _)| k.starts_with("rank_cycles_") && k.as_str() != "rank_cycles_idle")
                .map(|(_, v)| v)
                .sum();
            m(b, "rank_cycles_compute") / all
        });
        out.push(ShareRow {
            group: r.group.clone(),
            benchmark: r.benchmark.clone(),
            design: r.design.clone(),
            sends: m(r, "sends"),
            moped_sends: m(r, "moped_sends"),
            refused: m(r, "backoff_refused"),
            revoked: m(r, "backoff_revoked"),
            backoffs_set: m(r, "backoffs_set"),
            compute_share,
        });
    }
    out
}

/// The report's section.
pub fn share_markdown(rows: &[ShareRow]) -> String {
    let mut s = String::from(
        "\n## MOPED's share of the messages\n\n\
         Per run, the sends posted to MOPED among all the ranks' sends (collectives' \
         included), the reservations MOPED refused, the descriptors revoked by a backoff, \
         the times a program's backoff bit was set (after which its rank stays on the \
         software path until its next barrier, the paper's rule), and the ranks' cycles in \
         the program's own work under the baseline (idle ranks left out): time no design \
         shortens.\n\n\
         | group | benchmark | design | sends | to MOPED | share | refused | revoked | backoffs set | compute share |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let share = if r.sends > 0.0 {
            format!("{:.1} %", 100.0 * r.moped_sends / r.sends)
        } else {
            "-".into()
        };
        let compute = if r.compute_share.is_finite() {
            format!("{:.1} %", 100.0 * r.compute_share)
        } else {
            "-".into()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {share} | {} | {} | {} | {compute} |",
            r.group,
            r.benchmark,
            r.design,
            r.sends,
            r.moped_sends,
            r.refused,
            r.revoked,
            r.backoffs_set
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(design: &str, metrics: &[(&str, f64)]) -> RunRecord {
        RunRecord {
            benchmark: "CG".into(),
            group: "trace".into(),
            design: design.into(),
            seed: 1,
            metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn the_share_is_moped_sends_over_sends_and_compute_comes_from_the_baseline() {
        let records = [
            rec(
                "baseline",
                &[
                    ("rank_cycles_compute", 30.0),
                    ("rank_cycles_mpi_poll", 70.0),
                    ("rank_cycles_idle", 500.0),
                ],
            ),
            rec(
                "optcopy",
                &[
                    ("sends", 200.0),
                    ("moped_sends", 50.0),
                    ("backoffs_set", 3.0),
                ],
            ),
        ];
        let rows = rows(&records);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].design, "optcopy");
        assert!((rows[0].compute_share - 0.3).abs() < 1e-12);
        let md = share_markdown(&rows);
        assert!(
            md.contains("| trace | CG | optcopy | 200 | 50 | 25.0 % | 0 | 0 | 3 | 30.0 % |"),
            "{md}"
        );
    }
}
