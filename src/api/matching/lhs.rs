//! The LHS paper's experiment on the CMP (Tanabe and Ohta, "Network interface
//! architecture with scalable low-latency message receiving mechanism", section 4.2): `N`
//! unexpected messages wait at rank 0, then a receive for the `x`-th; its search time per
//! entry, with the unexpected queue as MPICH's list and as an LH buffer (64-byte entries,
//! the paper's one line, and 16-byte ones, envelope only), each with the L1 prefetcher
//! off, next-line and stride. Every run is the unexpected queue benchmark
//! (`workload::queue`) on the baseline, each message verified.
//!
//! A search's time is the timed region (the one receive) less that of the receive found
//! first in the queue (`x` = 1) at the same `N`: what the `x - 1` entries before it cost.

use std::fmt::Write;

use crate::config::{SystemConfig, UnexpectedQueue};
use crate::error::MopedError;
use crate::workload::queue::QueueBenchmark;

pub use crate::api::lhs_csv::{csv, Layout, LhsRow, Setting, CSV_HEADER};

use super::super::experiments::{run_all, Outcome, Progress, Task};
use super::super::output::{OutDir, RunInfo};
use super::{Matcher, Point};

/// The paper's LH buffer depth, and the deepest search it measures.
pub const DEPTH: u32 = 1024;
/// The paper's speed-up of the unexpected search with LHS on DIMMnet-2, and the part of
/// it the memory organisation explains (SO-DIMM reads of about 600 ns against about 100 ns
/// for the LH buffer); the rest it puts down to caching and prefetching.
pub const PAPER_SPEEDUP: f64 = 14.3;
pub const PAPER_LAYOUT: f64 = 6.0;

/// The prefetchers compared, by their `l1.prefetch` names.
pub const PREFETCHERS: [&str; 3] = ["none", "next_line", "stride"];

/// The layouts compared: the list, LHS with one line per entry, LHS with the envelope
/// alone (four per line).
pub const LAYOUTS: [Layout; 3] = [
    Layout {
        queue: UnexpectedQueue::List,
        entry_bytes: 0,
    },
    Layout {
        queue: UnexpectedQueue::Lhs,
        entry_bytes: 64,
    },
    Layout {
        queue: UnexpectedQueue::Lhs,
        entry_bytes: 16,
    },
];

/// The benchmark points: at the paper's 1,024 messages every power-of-two position; at
/// 16, 64 and 256 the first and the last (`quick`: only those).
pub fn plan(quick: bool) -> Vec<Point> {
    let point = |depth, position| Point {
        benchmark: QueueBenchmark::Unexpected,
        depth,
        position,
        sources: None,
    };
    let mut points: Vec<Point> = [16, 64, 256]
        .into_iter()
        .flat_map(|n| [point(n, 1), point(n, n)])
        .collect();
    if !quick {
        points.extend((0..=10).map(|k| point(DEPTH, 1 << k)));
    }
    points
}

/// The runs the experiment makes.
pub fn run_count(quick: bool) -> usize {
    plan(quick).len() * LAYOUTS.len() * PREFETCHERS.len()
}

/// The configuration of one layout and prefetcher: the software path's
/// ([`super::engine_config`]), with the layout's queue and the prefetcher set.
pub fn config(base: &SystemConfig, layout: Layout, prefetch: &str) -> SystemConfig {
    let mut cfg = super::engine_config(base, Matcher::Software);
    cfg.mpi.unexpected_queue = layout.queue;
    if layout.queue == UnexpectedQueue::Lhs {
        cfg.mpi.lhs_entry_bytes = layout.entry_bytes;
        cfg.mpi.lhs_entries = cfg.mpi.lhs_entries.max(DEPTH as u64);
    }
    cfg.set("l1.prefetch", prefetch)
        .expect("every prefetcher of PREFETCHERS is a valid l1.prefetch");
    cfg
}

/// Runs every layout and prefetcher over the plan's specs (written by the caller, in the
/// plan's order), each into a folder `lhs-<layout>-<prefetch>` of `out`.
pub fn run(
    base: &SystemConfig,
    specs: &[std::path::PathBuf],
    quick: bool,
    jobs: usize,
    out: &OutDir,
    (before, progress): (usize, Progress),
) -> Result<(Vec<LhsRow>, u64), MopedError> {
    let points = plan(quick);
    let (mut rows, mut events, mut done) = (Vec::new(), 0, before);
    for layout in LAYOUTS {
        for prefetch in PREFETCHERS {
            let cfg = config(base, layout, prefetch);
            let tasks: Vec<Task> = specs
                .iter()
                .map(|spec| Task {
                    spec: spec.clone(),
                    design: crate::design::Design::Baseline,
                    seed: 1,
                })
                .collect();
            let dir = out.child(&format!("lhs-{}-{prefetch}", layout.name()))?;
            let counted = |i, n, r: &Result<Outcome, MopedError>| progress(i, done + n, r);
            let got = run_all(&cfg, &tasks, jobs, None, Some(&dir), &counted);
            let got = dir.finish(got, |_, _| Ok(info(&cfg, layout, prefetch)))?;
            done += got.len();
            events += got.iter().map(|o| o.events).sum::<u64>();
            let setting = Setting::cmp(cfg.system.core_ghz);
            rows.extend(rows_of(&setting, layout, prefetch, &points, &got));
        }
    }
    Ok((rows, events))
}

fn info(cfg: &SystemConfig, layout: Layout, prefetch: &str) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1u64.into(),
        workload: "unexpected queue benchmarks".into(),
        design: format!("baseline ({}, l1.prefetch = {prefetch})", layout.name()),
    }
}

/// One layout and prefetcher's rows, each search measured against position 1 at its depth.
fn rows_of(
    setting: &Setting,
    layout: Layout,
    prefetch: &'static str,
    points: &[Point],
    outcomes: &[Outcome],
) -> Vec<LhsRow> {
    let rows = points
        .iter()
        .zip(outcomes)
        .map(|(p, o)| LhsRow::of(setting.clone(), layout, prefetch, (p.depth, p.position), o))
        .collect();
    crate::api::lhs_csv::with_searches(rows)
}

fn find<'a>(
    rows: &'a [LhsRow],
    layout: &str,
    prefetch: &str,
    d: u32,
    x: u32,
) -> Option<&'a LhsRow> {
    rows.iter().find(|r| {
        r.layout.name() == layout && r.prefetch == prefetch && r.depth == d && r.position == x
    })
}

/// The searches the report's tables show: full searches of 16, 64 and 256 entries, and
/// positions of the paper's 1,024-message queue.
fn shown(rows: &[LhsRow]) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = rows
        .iter()
        .filter(|r| r.position > 1 && (r.position == r.depth || r.position >= 16))
        .map(|r| (r.depth, r.position))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// report.md's section: the speed-up of the search under LHS at each depth, split into
/// what the layout gives and what the prefetcher gives, beside the paper's, with causes.
pub fn section(rows: &[LhsRow], cfg: &SystemConfig) -> String {
    let mut s = String::from("\n## Unexpected-queue search with LHS\n\n");
    s.push_str(
        "The LHS paper's experiment (section 4.2): N unexpected messages wait at rank 0, \
         then the receive for the x-th; its search time per entry passed over is the \
         receive's cycles less those of the receive for the first (x = 1), over x - 1. \
         `list` is MPICH's linked list (a 64-byte record per message, the payload in a \
         buffer of its own); `lhs-64` the LH buffer with one line per entry (envelope and \
         48 payload bytes), `lhs-16` with the envelope alone. Each speed-up changes one \
         factor: the layout (list over lhs-64) with the same prefetcher on both sides, \
         none or next-line; the prefetcher (lhs-64 without over with the next-line \
         prefetcher). The last column changes both at once (the list without a \
         prefetcher over lhs-64 with one), a product of two changes, not one factor's \
         measure.\n\n",
    );
    let per = |l: &str, p: &str, d, x| find(rows, l, p, d, x).and_then(LhsRow::per_entry);
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let fx = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}x"));
    s.push_str(
        "| N | x | list | lhs-64 | layout, no prefetcher | list next-line | lhs-64 next-line | \
         layout, next-line on both | prefetcher on lhs-64 | lhs-64 stride | lhs-16 | both \
         changed (product) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (d, x) in shown(rows) {
        let list = per("list", "none", d, x);
        let lhs = per("lhs-64", "none", d, x);
        let list_pf = per("list", "next_line", d, x);
        let lhs_pf = per("lhs-64", "next_line", d, x);
        let _ = writeln!(
            s,
            "| {d} | {x} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            f(list),
            f(lhs),
            fx(ratio(list, lhs)),
            f(list_pf),
            f(lhs_pf),
            fx(ratio(list_pf, lhs_pf)),
            fx(ratio(lhs, lhs_pf)),
            f(per("lhs-64", "stride", d, x)),
            f(per("lhs-16", "none", d, x)),
            fx(ratio(list, lhs_pf)),
        );
    }
    s.push_str("\nSearch cycles per entry passed over.\n");
    s.push_str(&causes(rows, cfg));
    s
}

/// The counters of one run per entry passed over: its own less those of the receive at
/// position 1 (cycles, L1 misses, of them served by the L2, prefetches issued, useful).
fn per_entry_counts(rows: &[LhsRow], r: &LhsRow) -> Option<[f64; 5]> {
    let first = find(rows, &r.layout.name(), r.prefetch, r.depth, 1)?;
    let n = r.position.checked_sub(1).filter(|&n| n > 0)? as f64;
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / n;
    Some([
        r.per_entry()?,
        per(r.l1_misses, first.l1_misses),
        per(r.l2_hits, first.l2_hits),
        per(r.prefetches_issued, first.prefetches_issued),
        per(r.prefetches_useful, first.prefetches_useful),
    ])
}

/// The claims and their measured causes, at the deepest search that ran.
fn causes(rows: &[LhsRow], cfg: &SystemConfig) -> String {
    let mut s = String::from("\n");
    let Some(&(d, x)) = shown(rows).iter().max_by_key(|(d, x)| (*x, *d)) else {
        return s;
    };
    let per = |l: &str, p: &str| find(rows, l, p, d, x).and_then(LhsRow::per_entry);
    let [Some(list), Some(list_pf), Some(lhs), Some(lhs_pf)] = [
        per("list", "none"),
        per("list", "next_line"),
        per("lhs-64", "none"),
        per("lhs-64", "next_line"),
    ] else {
        return s;
    };
    let _ = writeln!(
        s,
        "- Like for like: searching {} of {d} entries, LHS is {:.2}x faster than the list \
         with no prefetcher on either side, and {:.2}x with the next-line prefetcher on \
         both. The paper's {PAPER_SPEEDUP}x, about {PAPER_LAYOUT}x of it from DIMMnet-2's \
         memory organisation, is a measurement on DIMMnet-2, whose list the host read from \
         the NIC's SO-DIMM through VL commands (`moped lhs` runs it there).",
        x - 1,
        list / lhs,
        list_pf / lhs_pf,
    );
    let _ = writeln!(
        s,
        "- The prefetcher alone gives {:.2}x on the LH buffer and {:.2}x on the list. LHS \
         with the prefetcher against the list without it changes both factors at once: \
         {:.2}x, a product, not a measure of either.",
        lhs / lhs_pf,
        list / list_pf,
        list / lhs_pf,
    );
    let _ = writeln!(
        s,
        "- Per entry passed over (cycles, L1 misses, of them served by the L2, prefetches \
         issued, useful; the L1 holds {} lines):",
        cfg.l1.size_bytes / 64
    );
    for l in LAYOUTS {
        for p in PREFETCHERS {
            let Some(c) = find(rows, &l.name(), p, d, x).and_then(|r| per_entry_counts(rows, r))
            else {
                continue;
            };
            let _ = writeln!(
                s,
                "  - {} with prefetch {p}: {:.2}, {:.2}, {:.2}, {:.2}, {:.2}.",
                l.name(),
                c[0],
                c[1],
                c[2],
                c[3],
                c[4]
            );
        }
    }
    s.push_str(&cause_text(rows, (d, x), cfg));
    s
}

/// Why the CMP's numbers differ from the paper's, from the counters at `(d, x)`.
fn cause_text(rows: &[LhsRow], (d, x): (u32, u32), cfg: &SystemConfig) -> String {
    let at = |l: &str, p: &str| find(rows, l, p, d, x).and_then(|r| per_entry_counts(rows, r));
    let (Some(list), Some(lhs), Some(pf)) = (
        at("list", "none"),
        at("lhs-64", "none"),
        at("lhs-64", "next_line"),
    ) else {
        return String::new();
    };
    let lhs16 = find(rows, "lhs-16", "none", d, x)
        .and_then(LhsRow::per_entry)
        .map_or("-".into(), |v| format!("{v:.2}"));
    format!(
        "- Cause: both queues live in the receiving core's own cacheable memory, written by \
         that core as the messages arrived, where DIMMnet-2's list was read from the NIC's \
         SO-DIMM (about 600 ns an envelope against about 100 ns for the LH buffer). Without \
         a prefetcher the list misses the L1 {:.2} times per entry ({:.2} served by the L2, \
         `l2.latency` = {}) and the LH buffer {:.2} times ({:.2}): {d} entries of a line \
         against the L1's {} lines. The list's other {:+.2} cycles per entry are its \
         next-pointer load and compare. A denser layout packs more envelopes per line: \
         `lhs-16` (four per line) takes {lhs16} cycles per entry. With the next-line \
         prefetcher the LH buffer misses {:.2} times per entry and {:.2} prefetches per \
         entry are hit; the list gains from it as well, because in a fresh queue its records \
         sit one after another in arrival order (a list scattered by earlier frees would \
         gain less).\n",
        list[1],
        list[2],
        cfg.l2.latency,
        lhs[1],
        lhs[2],
        cfg.l1.size_bytes / 64,
        list[0] - lhs[0],
        pf[1],
        pf[4],
    )
}

/// The first speed-up (`N.NNx`) a report's text states outside its tables: what a reader
/// takes away first, so tests hold it to a like-for-like comparison.
pub fn first_speedup(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with('|'))
        .flat_map(|l| l.split([' ', '(', ')', ',', ':', '*']))
        .find(|w| w.ends_with('x') && w[..w.len() - 1].parse::<f64>().is_ok())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(cycles: f64, l1_misses: f64) -> Outcome {
        let mut o: Outcome = serde_json::from_str(
            r#"{"benchmark": "u", "group": "queue", "design": "baseline", "seed": 1,
                "metrics": {}}"#,
        )
        .unwrap();
        o.record.metrics.insert("cycles".into(), cycles);
        o.record.metrics.insert("l1_misses".into(), l1_misses);
        o.messages_verified = 1;
        o
    }

    #[test]
    fn a_search_is_measured_against_the_first_entry_at_its_depth() {
        let points = plan(true);
        let outcomes: Vec<Outcome> = points
            .iter()
            .map(|p| outcome(100.0 + 10.0 * p.position as f64, p.position as f64))
            .collect();
        let rows = rows_of(&Setting::cmp(1.0), LAYOUTS[1], "none", &points, &outcomes);
        let r = rows
            .iter()
            .find(|r| (r.depth, r.position) == (64, 64))
            .unwrap();
        assert_eq!(r.search_cycles, Some(630.0));
        assert_eq!(r.per_entry(), Some(10.0));
        let first = rows
            .iter()
            .find(|r| (r.depth, r.position) == (64, 1))
            .unwrap();
        assert_eq!((first.search_cycles, first.per_entry()), (Some(0.0), None));
    }

    #[test]
    fn the_section_splits_the_speed_up_into_layout_and_prefetcher() {
        let points = plan(true);
        let mut rows = Vec::new();
        // The list 12 cycles per entry (6 with the next-line prefetcher), LHS 4 (2).
        for (layout, prefetch, per) in [
            (LAYOUTS[0], "none", 12.0),
            (LAYOUTS[0], "next_line", 6.0),
            (LAYOUTS[1], "none", 4.0),
            (LAYOUTS[1], "next_line", 2.0),
        ] {
            let outcomes: Vec<Outcome> = points
                .iter()
                .map(|p| outcome(500.0 + per * (p.position - 1) as f64, 0.0))
                .collect();
            rows.extend(rows_of(
                &Setting::cmp(1.0),
                layout,
                prefetch,
                &points,
                &outcomes,
            ));
        }
        let s = section(&rows, &SystemConfig::default());
        assert!(
            s.contains(
                "| 256 | 256 | 12.00 | 4.00 | 3.00x | 6.00 | 2.00 | 3.00x | 2.00x | - | - | 6.00x |"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "LHS is 3.00x faster than the list with no prefetcher on either side, and \
                 3.00x with the next-line prefetcher on both"
            ),
            "{s}"
        );
        assert!(
            s.contains("The prefetcher alone gives 2.00x on the LH buffer and 2.00x on the list"),
            "{s}"
        );
        assert!(s.contains("6.00x, a product"), "{s}");
        assert!(s.contains("The list's other +8.00 cycles per entry"), "{s}");
        // The first speed-up the section states is a like-for-like one: never the
        // product of the layout and the prefetcher (6.00x here).
        let first = first_speedup(&s);
        assert_eq!(first, "3.00x", "{s}");
    }
}
