//! The Markdown report of a Figure-10 sweep: what was run, the table behind the figure,
//! measured ranges beside the paper's, the claims and a pointer to the plot.
//!
//! The output is a pure function of its inputs: groups, benchmarks (the paper's order),
//! designs and metrics are always listed in the same order, numbers with one decimal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::claims::{Claim, Unit, Verdict};
use super::paper::{compare, Published};
use super::reduce::{summaries, Reduction, Summary};
use super::{
    benchmark_rank, design_label, design_rank, group_label, group_rank, metric_label, metric_rank,
    Pct, RunRecord,
};

/// A reduction cell: "75.0", "70.0 ± 63.5" with an interval, "undef." for a zero baseline,
/// "—" when not run.
fn cell(r: Option<&Reduction>) -> String {
    match r {
        None => "—".into(),
        Some(r) => match (r.reduction, r.ci_half_width()) {
            (None, _) => "undef.".into(),
            (Some(v), None) => format!("{}", Pct(v)),
            (Some(v), Some(h)) => format!("{} ± {}", Pct(v), Pct(h)),
        },
    }
}

fn opt_pct(v: Option<f64>) -> String {
    v.map(|v| format!("{} %", Pct(v)))
        .unwrap_or_else(|| "n/a".into())
}

fn sorted<T, K: Ord>(items: impl IntoIterator<Item = T>, key: impl Fn(&T) -> K) -> Vec<T> {
    let mut v: Vec<T> = items.into_iter().collect();
    v.sort_by_key(|x| key(x));
    v
}

/// The published value as text: "66-93 %", "below 0 %", "about 50 %", "no number".
fn published_value(p: &Published) -> String {
    match (p.low, p.high) {
        (Some(l), Some(h)) if l == h => format!("{} %", Pct(l)),
        (Some(l), Some(h)) => format!("{}-{} %", Pct(l), Pct(h)),
        (None, Some(h)) => format!("below {} % (an increase)", Pct(h)),
        (Some(l), None) => format!("above {} %", Pct(l)),
        (None, None) => "no number".into(),
    }
}

fn what_was_run(out: &mut String, records: &[RunRecord], notes: &[String]) {
    let _ = writeln!(out, "## What was run\n");
    type Grid = BTreeMap<String, BTreeMap<String, BTreeSet<u64>>>; // bench -> design -> seeds
    let mut groups: BTreeMap<String, Grid> = BTreeMap::new();
    for r in records {
        groups
            .entry(r.group.clone())
            .or_default()
            .entry(r.benchmark.clone())
            .or_default()
            .entry(r.design.clone())
            .or_default()
            .insert(r.seed);
    }
    let designs_all: BTreeSet<&str> = records.iter().map(|r| r.design.as_str()).collect();
    let seeds_all: BTreeSet<u64> = records.iter().map(|r| r.seed).collect();
    let _ = writeln!(
        out,
        "{} runs: {} benchmark(s) in {} group(s), {} design(s), seed(s) {}.\n",
        records.len(),
        groups.values().map(|g| g.len()).sum::<usize>(),
        groups.len(),
        designs_all.len(),
        seeds_all
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if records.is_empty() {
        let _ = writeln!(out, "No run records were given.\n");
    } else {
        let _ = writeln!(out, "| group | benchmarks | designs | seeds | runs |");
        let _ = writeln!(out, "|---|---|---|---|---:|");
    }
    let mut holes = Vec::new();
    for (group, grid) in sorted(&groups, |(g, _)| group_rank(g)) {
        let benches = sorted(grid.keys(), |b| benchmark_rank(b));
        let designs: BTreeSet<&String> = grid.values().flat_map(|d| d.keys()).collect();
        let designs = sorted(designs, |d| design_rank(d));
        let seeds: BTreeSet<u64> = grid
            .values()
            .flat_map(|d| d.values().flatten().copied())
            .collect();
        let runs: usize = grid
            .values()
            .flat_map(|d| d.values())
            .map(|s| s.len())
            .sum();
        let _ = writeln!(
            out,
            "| {} (`{group}`) | {} | {} | {} | {runs} |",
            group_label(group),
            benches
                .iter()
                .map(|b| b.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            designs
                .iter()
                .map(|d| design_label(d))
                .collect::<Vec<_>>()
                .join(" "),
            seeds
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" "),
        );
        for b in &benches {
            for d in &designs {
                let have = grid[*b].get(*d);
                let absent: Vec<String> = seeds
                    .iter()
                    .filter(|s| !have.is_some_and(|h| h.contains(s)))
                    .map(|s| s.to_string())
                    .collect();
                if !absent.is_empty() {
                    holes.push(format!(
                        "{group} {b} {} (seed {})",
                        design_label(d),
                        absent.join(", ")
                    ));
                }
            }
        }
    }
    out.push('\n');
    if !holes.is_empty() {
        let _ = writeln!(
            out,
            "Runs missing from the benchmark x design x seed grid: {}.\n",
            holes.join("; ")
        );
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "Notes:\n");
        for n in notes {
            let _ = writeln!(out, "- {n}");
        }
        out.push('\n');
    }
}

fn figure_table(out: &mut String, reductions: &[Reduction], sums: &[Summary]) {
    let _ = writeln!(out, "## The table behind Figure 10\n");
    let _ = writeln!(
        out,
        "Reductions in % of the baseline (`1 - design / baseline`; positive: the design \
         does better, negative: worse), the mean over seeds, with the half width of its 95 % \
         Student-t interval when there are several seeds. `undef.`: the baseline's value is \
         0; `—`: not run. The last row is the geometric mean of the ratios design / baseline, \
         as a reduction.\n"
    );
    if reductions.is_empty() {
        let _ = writeln!(out, "No reductions: no design ran beside its baseline.\n");
        return;
    }
    let groups: BTreeSet<&str> = reductions.iter().map(|r| r.group.as_str()).collect();
    for group in sorted(groups, |g| group_rank(g)) {
        let rows: Vec<&Reduction> = reductions.iter().filter(|r| r.group == group).collect();
        let metrics = sorted(
            rows.iter()
                .map(|r| r.metric.as_str())
                .collect::<BTreeSet<_>>(),
            |m| metric_rank(m),
        );
        let designs = sorted(
            rows.iter()
                .map(|r| r.design.as_str())
                .collect::<BTreeSet<_>>(),
            |d| design_rank(d),
        );
        let benches = sorted(
            rows.iter()
                .map(|r| r.benchmark.as_str())
                .collect::<BTreeSet<_>>(),
            |b| benchmark_rank(b),
        );
        let _ = writeln!(out, "### {} (`{group}`)\n", group_label(group));
        // A table per metric, a column per design: narrow enough to read anywhere.
        for m in &metrics {
            let _ = writeln!(out, "{}:\n", metric_label(m));
            let mut header = String::from("| benchmark |");
            let mut rule = String::from("|---|");
            for d in &designs {
                let _ = write!(header, " {} |", design_label(d));
                rule.push_str("---:|");
            }
            let _ = writeln!(out, "{header}\n{rule}");
            for b in &benches {
                let mut line = format!("| {b} |");
                for d in &designs {
                    let r = rows
                        .iter()
                        .find(|r| r.benchmark == *b && r.design == *d && r.metric == *m);
                    let _ = write!(line, " {} |", cell(r.copied()));
                }
                let _ = writeln!(out, "{line}");
            }
            let mut line = String::from("| geo. mean |");
            for d in &designs {
                let s = sums
                    .iter()
                    .find(|s| s.group == group && s.design == *d && s.metric == *m);
                let v = s
                    .and_then(|s| s.geomean_reduction)
                    .map(|v| Pct(v).to_string());
                let _ = write!(line, " {} |", v.unwrap_or_else(|| "n/a".into()));
            }
            let _ = writeln!(out, "{line}\n");
        }
    }
}

fn ranges(out: &mut String, records: &[RunRecord], reductions: &[Reduction], sums: &[Summary]) {
    let _ = writeln!(out, "## Measured ranges beside the paper's\n");
    let cmp = compare(reductions);
    let _ = writeln!(
        out,
        "The paper's values (abstract and section 6; paragraphs of section 6 counted from \
         its start) beside the measured reductions of the benchmarks each covers. `inside`: \
         how many measured benchmarks fall in the published range.\n"
    );
    let _ = writeln!(
        out,
        "| paper | source | group | design | metric | published | measured | inside |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---:|");
    let mut readings: Vec<String> = Vec::new();
    for c in &cmp {
        let p = &c.published;
        let measured = match (c.measured_low, c.measured_high) {
            (Some(l), Some(h)) if c.low_benchmark == c.high_benchmark => {
                debug_assert_eq!(l, h);
                format!(
                    "{} % ({})",
                    Pct(l),
                    c.low_benchmark.as_deref().unwrap_or("")
                )
            }
            (Some(l), Some(h)) => format!(
                "{} % ({}) to {} % ({})",
                Pct(l),
                c.low_benchmark.as_deref().unwrap_or(""),
                Pct(h),
                c.high_benchmark.as_deref().unwrap_or("")
            ),
            _ => "not measured".into(),
        };
        let known = c.measured.iter().filter(|(_, v)| v.is_some()).count();
        let inside = match c.inside {
            Some(n) => format!("{n}/{known}"),
            None => "".into(),
        };
        let mut reference = String::new();
        if p.reference != super::BASELINE {
            reference = format!(" (against {})", design_label(p.reference));
        }
        let mut paper = p.statement.to_string();
        if !p.reading.is_empty() {
            let mark = readings
                .iter()
                .position(|r| r == p.reading)
                .unwrap_or_else(|| {
                    readings.push(p.reading.to_string());
                    readings.len() - 1
                });
            let _ = write!(paper, " [{}]", mark + 1);
        }
        let _ = writeln!(
            out,
            "| {paper} | {} | {} | {} | {}{reference} | {} | {measured} | {inside} |",
            p.source,
            p.group,
            design_label(&c.design),
            metric_label(p.metric),
            published_value(p),
        );
    }
    out.push('\n');
    for (i, r) in readings.iter().enumerate() {
        let _ = writeln!(out, "[{}] Reading: {r}.", i + 1);
    }
    if !readings.is_empty() {
        out.push('\n');
    }
    let causes = super::range_causes::range_causes(&cmp, records);
    if !causes.is_empty() {
        let _ = writeln!(
            out,
            "### Benchmarks outside the paper's ranges, and why\n\nFor each range above \
             with benchmarks outside it, each such benchmark's measured cause (the section \
             \"Where the ranks' cycles go\" below has every benchmark's parts).\n"
        );
    }
    for (i, list) in causes {
        let c = &cmp[i];
        let _ = writeln!(
            out,
            "{} ({}, {}):
",
            c.published.statement,
            design_label(&c.design),
            metric_label(c.published.metric)
        );
        for cause in list {
            let _ = writeln!(out, "- {cause}");
        }
        out.push('\n');
    }

    let _ = writeln!(out, "Every measured range, per group, design and metric:\n");
    let _ = writeln!(
        out,
        "| group | design | metric | benchmarks | smallest | largest | geo. mean |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---|---|---:|");
    for s in sums {
        let with = |v: Option<f64>, b: &Option<String>| match (v, b) {
            (Some(v), Some(b)) => format!("{} % ({b})", Pct(v)),
            _ => "n/a".into(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            s.group,
            design_label(&s.design),
            metric_label(&s.metric),
            s.benchmarks,
            with(s.min_reduction, &s.min_benchmark),
            with(s.max_reduction, &s.max_benchmark),
            opt_pct(s.geomean_reduction),
        );
    }
    out.push('\n');
}

fn claims_section(out: &mut String, claims: &[Claim]) {
    let _ = writeln!(out, "## The paper's claims\n");
    let count = |v: Verdict| claims.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        out,
        "{} hold, {} do not hold, {} not measured. A claim does not hold as soon as one \
         measured check fails; it is not measured when no check fails but a value it needs \
         is missing or undefined.\n",
        count(Verdict::Holds),
        count(Verdict::DoesNotHold),
        count(Verdict::NotMeasured),
    );
    let _ = writeln!(out, "| claim | verdict |");
    let _ = writeln!(out, "|---|---|");
    for c in claims {
        let _ = writeln!(
            out,
            "| ({}) {} | **{}** |",
            c.id,
            c.title,
            c.verdict.label()
        );
    }
    out.push('\n');
    for c in claims {
        let _ = writeln!(out, "### ({}) {}: {}\n", c.id, c.verdict.label(), c.title);
        let _ = writeln!(out, "Paper: {}. Test: {}\n", c.source, c.definition);
        if !c.evidence.is_empty() {
            let _ = writeln!(out, "| number | value | check |");
            let _ = writeln!(out, "|---|---:|---|");
            for e in &c.evidence {
                let value = match (e.value, e.unit) {
                    (None, _) => "n/a".into(),
                    (Some(v), Unit::Percent) => format!("{} %", Pct(v)),
                    (Some(v), Unit::Points) => format!("{} points", Pct(v)),
                    (Some(v), Unit::Count) => format!("{v}"),
                };
                let check = match e.passes {
                    Some(true) => "pass",
                    Some(false) => "**fail**",
                    None => "",
                };
                let _ = writeln!(out, "| {} | {value} | {check} |", e.label);
            }
            out.push('\n');
        }
        if !c.missing.is_empty() {
            let shown: Vec<&str> = c.missing.iter().take(12).map(|s| s.as_str()).collect();
            let more = match c.missing.len() {
                n if n > 12 => format!(" and {} more", n - 12),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "Not measured or undefined: {}{more}.\n",
                shown.join(", ")
            );
        }
        let _ = writeln!(out, "{}\n", c.explanation.trim());
    }
}

/// The Markdown report (see the module doc). `notes` are printed under "What was run"
/// (scaled iteration counts and the like).
pub fn report_markdown(
    records: &[RunRecord],
    reductions: &[Reduction],
    claims: &[Claim],
    notes: &[String],
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Figure 10: the MOPED designs against unmodified MPI\n"
    );
    let _ = writeln!(
        out,
        "Reproduces Figure 10 of \"MOPED: Orchestrating Interprocess Message Data on CMPs\": \
         execution cycles, L1 misses, private L2 misses (served by another cache) and global \
         L2 misses (served by memory) of BASEMOPED, OPTCOPY and OPTCACHE, each relative to \
         the baseline (MPICH's shared-buffer copies, no MOPED) on the same seed.\n"
    );
    what_was_run(&mut out, records, notes);
    let sums = summaries(reductions);
    figure_table(&mut out, reductions, &sums);
    ranges(&mut out, records, reductions, &sums);
    out.push_str(&super::breakdown::markdown(&super::breakdown::rows(
        records,
    )));
    claims_section(&mut out, claims);
    let _ = writeln!(out, "## Figure\n");
    let _ = writeln!(
        out,
        "![Figure 10: each design's value normalised to the baseline](figure10.png)\n\n\
         `figure10.png` and `figure10.svg` beside this report show design / baseline per \
         benchmark and metric (bars below the line at 1.0 are reductions), drawn from \
         `reductions.json` by `python -m moped.plot DIR`; `reductions.csv` holds the same \
         numbers."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{check_claims, rec, reductions};

    fn sample() -> Vec<RunRecord> {
        let mut recs = Vec::new();
        for seed in [1, 2] {
            for (g, b) in [("imb", "PP"), ("npb", "CG"), ("imb-1m", "BC")] {
                for (d, c) in [
                    ("baseline", 1000.0),
                    ("basemoped", 300.0 + seed as f64),
                    ("optcopy", 200.0),
                    ("optcache", 190.0),
                ] {
                    let metrics = [("cycles", c), ("l2_misses_global", c / 10.0)];
                    recs.push(rec(g, b, d, seed, &metrics));
                }
            }
        }
        // A hole in the grid: CG under OPTCACHE has no seed 2.
        recs.retain(|r| !(r.benchmark == "CG" && r.design == "optcache" && r.seed == 2));
        recs
    }

    #[test]
    fn report_has_every_part_and_is_deterministic() {
        let recs = sample();
        let red = reductions(&recs).unwrap();
        let claims = check_claims(&red);
        let notes = vec!["iterations scaled by 0.1".to_string()];
        let a = report_markdown(&recs, &red, &claims, &notes);
        let mut shuffled = recs.clone();
        shuffled.reverse();
        let red2 = reductions(&shuffled).unwrap();
        let b = report_markdown(&shuffled, &red2, &check_claims(&red2), &notes);
        assert_eq!(a, b);
        for part in [
            "## What was run",
            "- iterations scaled by 0.1",
            "npb CG OPTCACHE (seed 2)",
            "## The table behind Figure 10",
            "### IMB, 16 kB messages (`imb`)",
            "### IMB, 1 MB messages (`imb-1m`)",
            "cycles:\n\n| benchmark | BASEMOPED | OPTCOPY | OPTCACHE |",
            "## Measured ranges beside the paper's",
            "\"66-93% reduction in execution time\"",
            "## The paper's claims",
            "### (a) does not hold",
            "### (e) not measured",
            "figure10.png",
        ] {
            assert!(a.contains(part), "missing {part:?} in\n{a}");
        }
        // PP under BASEMOPED: seeds give 0.699 and 0.698: mean 69.85 % with an interval.
        let pp = a.lines().find(|l| l.starts_with("| PP |")).unwrap();
        assert!(pp.contains("| 69.8 ± 0.6 |"), "{pp}");
        // Groups in order: imb, npb, imb-1m.
        let i = a.find("(`imb`)").unwrap();
        let n = a.find("(`npb`)").unwrap();
        let m = a.find("(`imb-1m`)").unwrap();
        assert!(i < n && n < m);
        assert!(!a.contains("NaN") && !a.contains("inf"));
        // No table wider than a page reads: at most eight columns.
        let widest = a
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| l.matches('|').count() - 1)
            .max();
        assert!(widest.is_some_and(|w| w <= 8), "{widest:?}");
    }

    #[test]
    fn empty_report() {
        let text = report_markdown(&[], &[], &check_claims(&[]), &[]);
        assert!(text.contains("No run records were given."));
        assert!(text.contains("0 hold, 0 do not hold, 7 not measured"));
    }

    #[test]
    fn failed_claim_is_shown() {
        // OPTCOPY slower than BASEMOPED on PP: (b) does not hold, and says so.
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 100.0)]),
            rec("imb", "PP", "basemoped", 1, &[("cycles", 20.0)]),
            rec("imb", "PP", "optcopy", 1, &[("cycles", 40.0)]),
        ];
        let red = reductions(&recs).unwrap();
        let text = report_markdown(&recs, &red, &check_claims(&red), &[]);
        assert!(text.contains("| (b) OPTCOPY cuts"), "{text}");
        assert!(text.contains("### (b) does not hold"));
        assert!(text.contains(
            "| PP: OPTCOPY - BASEMOPED cycle reduction (must be >= -1.0) | -20.0 points | **fail** |"
        ));
    }
}
