//! Measured causes of the benchmarks outside the paper's published ranges: for each
//! benchmark a published range covers and its reduction falls outside, where the design's
//! cycles or misses went, from the run records' breakdown (`rank_cycles_*`,
//! `l1_misses_in_*`, `memory_misses_in_*`) and miss counters, and the mechanism the
//! numbers point to.
//!
//! Cycles: each rank's parts add up to the run's cycles, so the design's parts over the
//! baseline's total add up to the design's cycles over the baseline's, and the reduction
//! is what the parts left. Misses: Figure 10 counts the MOPEDs' own line requests as L2
//! misses of the L2 that took them, a reading of the paper's metric; each miss cause
//! shows the reduction under the other reading too (the cores' misses only), without
//! changing the figure.

use super::breakdown::{rows, BreakdownRow};
use super::paper::PublishedComparison;
use super::{design_label, RunRecord, BASELINE};
use crate::design::Design;
use crate::mpi::activity::Activity;

/// For each comparison with benchmarks outside its published range: its index in `cmp`
/// and one cause per such benchmark.
pub fn range_causes(
    cmp: &[PublishedComparison],
    records: &[RunRecord],
) -> Vec<(usize, Vec<String>)> {
    let breakdown = rows(records);
    let cx = Cx {
        records,
        breakdown: &breakdown,
    };
    cmp.iter()
        .enumerate()
        .filter(|(_, c)| c.inside.is_some())
        .filter_map(|(i, c)| {
            let p = &c.published;
            let outside: Vec<String> = c
                .measured
                .iter()
                .filter_map(|(b, v)| v.map(|v| (b, v)))
                .filter(|(_, v)| p.low.is_some_and(|l| *v < l) || p.high.is_some_and(|h| *v > h))
                .map(|(b, v)| cx.cause(c, b, v))
                .collect();
            (!outside.is_empty()).then_some((i, outside))
        })
        .collect()
}

struct Cx<'a> {
    records: &'a [RunRecord],
    breakdown: &'a [BreakdownRow],
}

fn pct(v: f64) -> String {
    format!("{:.1} %", 100.0 * v)
}

fn count(v: f64) -> String {
    format!("{v:.0}")
}

/// Readable names of the activities.
fn label(a: Activity) -> &'static str {
    match a {
        Activity::Compute => "compute",
        Activity::Call => "MPI calls",
        Activity::Copy => "copies",
        Activity::Search => "list searches",
        Activity::Poll => "polling",
        Activity::Reduce => "reduction arithmetic",
        Activity::MopedPort => "MOPED ports",
        Activity::MopedWait => "MOPED waits",
        Activity::Idle => "idle",
    }
}

/// The program's own work under `design`: compute and a reduction's arithmetic, and under
/// a MOPED design the rank's copies too (a collective's own part: MOPED moves only
/// messages). Under the baseline copies move messages, so they are left out.
fn own_work(design: &str) -> &'static [Activity] {
    if design == BASELINE {
        &[Activity::Compute, Activity::Reduce]
    } else {
        &[Activity::Compute, Activity::Reduce, Activity::Copy]
    }
}

impl Cx<'_> {
    fn metric(&self, group: &str, bench: &str, design: &str, key: &str) -> Option<f64> {
        self.records
            .iter()
            .filter(|r| r.group == group && r.benchmark == bench && r.design == design)
            .min_by_key(|r| r.seed)
            .and_then(|r| r.metrics.get(key).copied())
    }

    fn row(&self, group: &str, bench: &str, design: &str) -> Option<&BreakdownRow> {
        self.breakdown
            .iter()
            .find(|r| r.group == group && r.benchmark == bench && r.design == design)
    }

    fn cause(&self, c: &PublishedComparison, bench: &str, v: f64) -> String {
        let p = &c.published;
        let range = match (p.low, p.high) {
            (Some(l), Some(h)) => format!("{}-{}", pct(l), pct(h)),
            (None, Some(h)) => format!("below {}", pct(h)),
            (Some(l), None) => format!("above {}", pct(l)),
            (None, None) => "no bound".into(),
        };
        let head = format!(
            "{bench}, {}: {} (the paper's {range}).",
            design_label(&c.design),
            pct(v)
        );
        let body = match p.metric {
            "cycles" => self.cycles(p.group, bench, &c.design, p.reference, (p.low, p.high)),
            "l1_misses" => self.l1(p.group, bench, &c.design),
            "l2_misses_private" | "l2_misses_global" => {
                self.l2(p.group, bench, &c.design, p.metric, (p.low, p.high))
            }
            _ => None,
        };
        let body = body.unwrap_or_else(|| {
            "The records lack the breakdown and miss counters this needs (records from an \
             older moped); rerun the experiment."
                .into()
        });
        format!("{head} {body}")
    }

    /// The design's cycles against the reference's, part by part.
    fn cycles(
        &self,
        group: &str,
        bench: &str,
        design: &str,
        reference: &str,
        (low, high): (Option<f64>, Option<f64>),
    ) -> Option<String> {
        let d = self.row(group, bench, design)?;
        let r = self.row(group, bench, reference)?;
        let base = r.total();
        if base <= 0.0 {
            return None;
        }
        let mut parts: Vec<(Activity, f64)> = Activity::ALL
            .iter()
            .map(|&a| (a, d.part(a) / base))
            .filter(|(_, s)| *s >= 0.01)
            .collect();
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        let list: Vec<String> = parts
            .iter()
            .map(|(a, s)| format!("{} {}", label(*a), pct(*s)))
            .collect();
        let of = if reference == BASELINE {
            "the baseline's".to_string()
        } else {
            format!("{}'s", design_label(reference))
        };
        let mut out = format!(
            "Its ranks' cycles in % of {of}: {} ({} in all).",
            list.join(", "),
            pct(d.total() / base)
        );
        if high.is_some_and(|h| 1.0 - d.total() / base > h) {
            let mpi: f64 = [
                Activity::Copy,
                Activity::Poll,
                Activity::Search,
                Activity::Call,
            ]
            .iter()
            .map(|&a| r.part(a))
            .sum();
            out.push_str(&format!(
                " Measured cause: the reference's MPI work (copies, polling, list searches and \
                 calls) was {} of its cycles, and {} leaves the parts above.",
                pct(mpi / base),
                design_label(design)
            ));
            return Some(out);
        }
        let Some(low) = low.filter(|&l| 1.0 - d.total() / base < l) else {
            return Some(out);
        };
        let own = |row: &BreakdownRow, design: &str| -> f64 {
            own_work(design).iter().map(|&a| row.part(a)).sum()
        };
        let kept = own(d, design) / base;
        // The cycles to take away for the reduction to reach the range.
        let gap = d.total() - (1.0 - low) * base;
        // The same benchmark's own work under the design that keeps the most of it alike:
        // OPTCOPY for BASEMOPED (the two differ only in where the send lines stay), else
        // the reference.
        let (cmp_design, cmp_row) = match self.row(group, bench, Design::OptCopy.name()) {
            Some(o) if design == Design::BaseMoped.name() => (Design::OptCopy.name(), o),
            _ => (reference, r),
        };
        let same: &[Activity] = if cmp_design == reference && reference == BASELINE {
            own_work(BASELINE)
        } else {
            own_work(design)
        };
        let mine: f64 = same.iter().map(|&a| d.part(a)).sum();
        let theirs: f64 = same.iter().map(|&a| cmp_row.part(a)).sum();
        let growth = mine - theirs;
        let memory = |row_design: &str| -> Option<f64> {
            same.iter()
                .map(|a| {
                    self.metric(
                        group,
                        bench,
                        row_design,
                        &format!("memory_misses_in_{}", a.name()),
                    )
                })
                .sum()
        };
        if growth >= 0.5 * gap && growth > 0.0 {
            let without = 1.0 - (d.total() - growth) / base;
            let (m_mine, m_theirs) = (memory(design), memory(cmp_design));
            let misses = match (m_mine, m_theirs) {
                (Some(a), Some(b)) => format!(
                    "; its accesses served by memory: {} against {}",
                    count(a),
                    count(b)
                ),
                _ => String::new(),
            };
            let mechanism = if design == Design::BaseMoped.name()
                && m_mine.zip(m_theirs).is_some_and(|(a, b)| a > b)
            {
                " BASEMOPED's exclusive hand-over takes every line a rank sends out of its \
                 caches, so the program's next pass over its send buffers reads them from \
                 memory."
            } else {
                ""
            };
            out.push_str(&format!(
                " Measured cause: the program's own work ({}) took {} cycles against {} \
                 under {}{misses}.{mechanism} Without that growth the reduction would be {}.",
                same.iter()
                    .map(|&a| label(a))
                    .collect::<Vec<_>>()
                    .join(", "),
                count(mine),
                count(theirs),
                design_label(cmp_design),
                pct(without)
            ));
        } else if 1.0 - kept < low {
            out.push_str(&format!(
                " Measured cause: the program's own work (compute, reduction arithmetic and, \
                 under MOPED, its own copies) is {} of {of} cycles, so no design that moves \
                 only messages can reduce the cycles past {}.",
                pct(kept),
                pct(1.0 - kept)
            ));
        } else if parts
            .first()
            .is_some_and(|(a, _)| *a == Activity::MopedWait)
        {
            let lat = |des: &str| self.metric(group, bench, des, "recv_latency_mean");
            let latency = match (lat(design), lat(reference)) {
                (Some(a), Some(b)) if a > 0.0 && b > 0.0 => format!(
                    " A receive took {} cycles from post to completion on average, against {} \
                     under {}.",
                    count(a),
                    count(b),
                    design_label(reference)
                ),
                _ => String::new(),
            };
            out.push_str(&format!(
                " Measured cause: the ranks wait for MOPED's transfers, {} of {of} cycles: the \
                 messages' data moves line by line through the coherence protocol while the \
                 ranks poll, and what the ranks wait for lies on the run's critical path \
                 (senders after receivers, tree and root orders).{latency}",
                pct(d.part(Activity::MopedWait) / base)
            ));
        } else if let Some((a, s)) = parts.first() {
            out.push_str(&format!(
                " Measured cause: the largest part left is {}, {} of {of} cycles.",
                label(*a),
                pct(*s)
            ));
        }
        Some(out)
    }

    /// The design's L1 misses against the baseline's, by activity.
    fn l1(&self, group: &str, bench: &str, design: &str) -> Option<String> {
        let by = |des: &str| -> Option<Vec<(Activity, f64)>> {
            Activity::ALL
                .iter()
                .map(|&a| {
                    Some((
                        a,
                        self.metric(group, bench, des, &format!("l1_misses_in_{}", a.name()))?,
                    ))
                })
                .collect()
        };
        let (d, b) = (by(design)?, by(BASELINE)?);
        let total_b: f64 = b.iter().map(|x| x.1).sum();
        if total_b <= 0.0 {
            return None;
        }
        let list = |v: &[(Activity, f64)]| -> String {
            let mut v: Vec<_> = v.iter().filter(|x| x.1 / total_b >= 0.01).collect();
            v.sort_by(|x, y| y.1.total_cmp(&x.1));
            v.iter()
                .map(|(a, n)| format!("{} {}", label(*a), pct(n / total_b)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let own = |v: &[(Activity, f64)]| -> f64 {
            v.iter()
                .filter(|(a, _)| own_work(BASELINE).contains(a))
                .map(|x| x.1)
                .sum()
        };
        let growth = own(&d) - own(&b);
        let mpi_b = total_b - own(&b);
        let mut out = format!(
            "L1 misses in % of the baseline's, by what the core was doing: the baseline's {}; \
             {}'s {}.",
            list(&b),
            design_label(design),
            list(&d)
        );
        out.push_str(&format!(
            " Measured cause: the misses a MOPED design can remove are the baseline's MPI \
             ones, {} of its misses",
            pct(mpi_b / total_b)
        ));
        if growth > 0.0 {
            out.push_str(&format!(
                ", and the program's own accesses (compute, reduction arithmetic) missed {} \
                 times more than under the baseline; without that growth the reduction would \
                 be {}.",
                count(growth),
                pct(1.0 - (d.iter().map(|x| x.1).sum::<f64>() - growth) / total_b)
            ));
        } else {
            out.push('.');
        }
        Some(out)
    }

    /// The design's private or global L2 misses: the cores' and the MOPEDs', with the
    /// reduction under the cores-only reading.
    fn l2(
        &self,
        group: &str,
        bench: &str,
        design: &str,
        metric: &str,
        (low, high): (Option<f64>, Option<f64>),
    ) -> Option<String> {
        let (cores_key, moped_key, what) = if metric == "l2_misses_private" {
            (
                "l2_misses_private_cores",
                "moped_misses_other_cache",
                "served by another cache",
            )
        } else {
            (
                "l2_misses_global_cores",
                "moped_misses_memory",
                "served by memory",
            )
        };
        let base = self.metric(group, bench, BASELINE, metric)?;
        let cores = self.metric(group, bench, design, cores_key)?;
        let moped = self.metric(group, bench, design, moped_key)?;
        if base <= 0.0 {
            return None;
        }
        let alt = 1.0 - cores / base;
        let inside = low.map_or(true, |l| alt >= l) && high.map_or(true, |h| alt <= h);
        let mut out = format!(
            "L2 misses {what}: {} under the baseline; under {} the cores' {} and the MOPEDs' \
             line requests {}.",
            count(base),
            design_label(design),
            count(cores),
            count(moped)
        );
        if metric == "l2_misses_global" {
            out.push(' ');
            out.push_str(&self.global(group, bench, design, (base, cores, moped), (low, high))?);
        } else {
            let dominant = if moped > cores {
                "the MOPEDs' reads of send lines the senders had just written, which another \
                 cache serves"
            } else {
                "the cores' own misses to other caches"
            };
            out.push_str(&format!(
                " Measured cause: the largest share is {dominant}."
            ));
        }
        out.push_str(&format!(
            " Modelling choice: Figure 10 counts the MOPEDs' line requests as L2 misses; \
             counting only the cores' misses the reduction would be {} ({} the paper's range).",
            pct(alt),
            if inside { "inside" } else { "still outside" }
        ));
        Some(out)
    }

    /// Where the cores' misses to memory came from (by activity) under the baseline and
    /// the design, the MOPEDs' page walks among theirs, and the part that decides.
    fn global(
        &self,
        group: &str,
        bench: &str,
        design: &str,
        (base, cores, moped): (f64, f64, f64),
        (low, high): (Option<f64>, Option<f64>),
    ) -> Option<String> {
        let by = |des: &str| -> Option<Vec<(Activity, f64)>> {
            Activity::ALL
                .iter()
                .map(|&a| {
                    let key = format!("memory_misses_in_{}", a.name());
                    Some((a, self.metric(group, bench, des, &key)?))
                })
                .collect()
        };
        let (d, b) = (by(design)?, by(BASELINE)?);
        let list = |v: &[(Activity, f64)]| -> String {
            let mut v: Vec<_> = v.iter().filter(|x| x.1 >= 0.01 * base).collect();
            v.sort_by(|x, y| y.1.total_cmp(&x.1));
            if v.is_empty() {
                return "none to speak of".into();
            }
            v.iter()
                .map(|(a, n)| format!("{} {}", label(*a), count(*n)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let walks = self
            .metric(group, bench, design, "moped_walk_misses_memory")
            .unwrap_or(0.0);
        let mut out = format!(
            "The cores' misses to memory by what they were doing: under the baseline {}; \
             under {} {}. Of the MOPEDs', {} are page walks' reads.",
            list(&b),
            design_label(design),
            list(&d),
            count(walks)
        );
        let own = |v: &[(Activity, f64)]| -> f64 {
            v.iter()
                .filter(|(a, _)| own_work(BASELINE).contains(a))
                .map(|x| x.1)
                .sum()
        };
        let (own_d, own_b) = (own(&d), own(&b));
        let total = cores + moped;
        let cause = if high.is_some_and(|h| 1.0 - total / base > h) {
            format!(
                "{} removed the baseline's misses in MPI work ({}) and the program's own \
                 misses fell from {} to {}",
                design_label(design),
                count(b.iter().map(|x| x.1).sum::<f64>() - own_b),
                count(own_b),
                count(own_d)
            )
        } else if moped > cores && walks >= 0.5 * moped {
            "the MOPEDs' page walks, which read the page tables from memory for each transfer \
             (no page-table lines kept between transfers, `moped.walk_cache_lines = 0`)"
                .into()
        } else if moped > cores {
            "the MOPEDs' reads of message lines that no cache holds".into()
        } else if low.is_some_and(|l| own_d / base > 1.0 - l) {
            format!(
                "the program's own accesses (compute, reduction arithmetic) missed to memory {} \
                 times, {} of the baseline's misses, which no design that moves only messages \
                 removes: the reduction cannot pass {}",
                count(own_d),
                pct(own_d / base),
                pct(1.0 - own_d / base)
            )
        } else if own_d > own_b && design == Design::BaseMoped.name() {
            "the program's compute re-reading from memory the send-buffer lines BASEMOPED's \
             exclusive hand-over took from its caches"
                .into()
        } else {
            "the cores' own misses to memory".into()
        };
        out.push_str(&format!(" Measured cause: {cause}."));
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{compare_published, reductions};
    use std::collections::BTreeMap;

    /// CG under each design: cycles by activity (compute, calls, copies, polling, MOPED
    /// waits), the compute's misses to memory, and the L2 counters.
    fn cg(design: &str, parts: [f64; 5], memory: f64, moped: (f64, f64)) -> RunRecord {
        let [compute, call, copy, poll, wait] = parts;
        let mut m: BTreeMap<String, f64> = BTreeMap::new();
        for a in Activity::ALL {
            let v = match a {
                Activity::Compute => compute,
                Activity::Call => call,
                Activity::Copy => copy,
                Activity::Poll => poll,
                Activity::MopedWait => wait,
                _ => 0.0,
            };
            m.insert(format!("rank_cycles_{}", a.name()), v);
            let mem = if a == Activity::Compute { memory } else { 0.0 };
            m.insert(format!("memory_misses_in_{}", a.name()), mem);
            m.insert(format!("l1_misses_in_{}", a.name()), 10.0 * mem + 1.0);
        }
        m.insert("cycles".into(), parts.iter().sum::<f64>() / 16.0);
        m.insert("l1_misses".into(), 9.0 * memory + 9.0);
        m.insert("l2_misses_global_cores".into(), memory);
        m.insert("moped_misses_memory".into(), moped.0);
        m.insert("moped_walk_misses_memory".into(), moped.1);
        m.insert("l2_misses_global".into(), memory + moped.0);
        RunRecord {
            benchmark: "CG".into(),
            group: "npb".into(),
            design: design.into(),
            seed: 1,
            metrics: m,
        }
    }

    fn causes(records: &[RunRecord]) -> Vec<String> {
        let cmp = compare_published(&reductions(records).unwrap());
        range_causes(&cmp, records)
            .into_iter()
            .flat_map(|(i, list)| list.into_iter().map(move |c| format!("[{i}] {c}")))
            .collect()
    }

    /// CG under the four designs: BASEMOPED's compute grown and reading memory 5,000
    /// times; OPTCOPY and OPTCACHE with `memory` compute misses and `moped` (line reads,
    /// walk reads) of the MOPEDs' to memory.
    fn cg_runs(memory: f64, moped: (f64, f64)) -> Vec<RunRecord> {
        vec![
            cg(
                "baseline",
                [300.0, 100.0, 400.0, 200.0, 0.0],
                100.0,
                (0.0, 0.0),
            ),
            cg(
                "basemoped",
                [700.0, 100.0, 0.0, 0.0, 200.0],
                5000.0,
                (50.0, 0.0),
            ),
            cg("optcopy", [300.0, 100.0, 0.0, 0.0, 200.0], memory, moped),
            cg("optcache", [300.0, 100.0, 0.0, 0.0, 200.0], memory, moped),
        ]
    }

    #[test]
    fn basemoped_behind_the_range_is_its_own_work_growing() {
        let records = cg_runs(100.0, (50.0, 0.0));
        let all = causes(&records);
        let c = all
            .iter()
            .find(|c| c.contains("CG, BASEMOPED: 0.0 %"))
            .unwrap_or_else(|| panic!("{all:#?}"));
        assert!(
            c.contains("compute 70.0 %, MOPED waits 20.0 %, MPI calls 10.0 %")
                && c.contains("took 700 cycles against 300 under OPTCOPY")
                && c.contains("5000 against 100")
                && c.contains("exclusive hand-over")
                && c.contains("Without that growth the reduction would be 40.0 %"),
            "{c}"
        );
    }

    #[test]
    fn every_benchmark_outside_a_range_gets_a_measured_cause() {
        // OPTCOPY's global misses are its MOPEDs' page walks: far above the baseline's.
        let records = cg_runs(0.0, (900.0, 850.0));
        let all = causes(&records);
        assert!(!all.is_empty());
        for c in &all {
            assert!(c.contains("Measured cause"), "{c}");
        }
        let walks = all
            .iter()
            .find(|c| c.contains("CG, OPTCOPY") && c.contains("memory"))
            .unwrap_or_else(|| panic!("{all:#?}"));
        assert!(
            walks.contains("850 are page walks' reads")
                && walks.contains("the MOPEDs' page walks")
                && walks.contains("counting only the cores' misses the reduction would be 100.0 %"),
            "{walks}"
        );
    }

    #[test]
    fn records_without_the_breakdown_say_so() {
        let mut records: Vec<RunRecord> = cg_runs(100.0, (50.0, 0.0)).into_iter().take(2).collect();
        for r in &mut records {
            r.metrics.retain(|k, _| !k.starts_with("rank_cycles_"));
        }
        let all = causes(&records);
        assert!(
            all.iter().any(|c| c.contains("lack the breakdown")),
            "{all:#?}"
        );
    }
}
