//! The transplant's part of report.md: bandwidth and latency per scheme, engine count and
//! active copies, the one-engine check, the sizes where an engine saturates with the order
//! of the schemes there, and the step that bounds each scheme.

use std::fmt::Write;

use super::{Bench, Row, Variant};
use crate::moped::engines::Scheme;

/// The transplant's section: the tables, the check, the saturated sizes and the bounds.
pub fn cmp_section(rows: &[Row]) -> String {
    let mut s = String::from(
        "## In MOPED: the schemes transplanted\n\nEvery scheme with one and two engines, \
         each at one and at two active copies (`moped.active_matches`): within one count of \
         active copies a row changes only the engines and the scheme.\n\n",
    );
    s.push_str(&through_moped(rows));
    s.push_str(&tables(rows));
    s.push_str(&one_engine_check(rows));
    s.push_str(&saturated(rows));
    s.push_str(&bounds(rows));
    s
}

/// Whether the timed messages went through MOPED, or some through shared memory after a
/// backoff.
fn through_moped(rows: &[Row]) -> String {
    let refused: Vec<String> = rows
        .iter()
        .filter(|r| r.backoff_refused > 0)
        .map(|r| {
            format!(
                "{} {} ({})",
                r.variant.label(),
                r.point.name(),
                r.backoff_refused
            )
        })
        .collect();
    let copies: u64 = rows.iter().map(|r| r.moped_copies).sum();
    if refused.is_empty() {
        format!(
            "MOPED refused no reservation: every timed message went through it ({copies} \
             copies in the timed regions).\n\n"
        )
    } else {
        format!(
            "MOPED refused reservations (backoff) in {}: those messages went through shared \
             memory, and their runs measure that path in part.\n\n",
            refused.join(", ")
        )
    }
}

fn find(rows: &[Row], v: Variant, bench: Bench, bytes: u64) -> Option<&Row> {
    rows.iter()
        .find(|r| r.variant == v && r.point.bench == bench && r.point.bytes == bytes)
}

fn sizes(rows: &[Row], bench: Bench) -> Vec<u64> {
    let mut v: Vec<u64> = rows
        .iter()
        .filter(|r| r.point.bench == bench)
        .map(|r| r.point.bytes)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A message size as the reports print it: B, kB or MB.
pub(super) fn size_name(b: u64) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MB", b >> 20),
        b if b >= 1024 && b % 1024 == 0 => format!("{} kB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The variants in the rows, by active copies, then scheme, then engines.
fn variants(rows: &[Row]) -> Vec<Variant> {
    let mut v: Vec<Variant> = rows.iter().map(|r| r.variant).collect();
    v.sort_by_key(|v| (v.active, v.scheme, v.engines));
    v.dedup();
    v
}

/// A run's figure: bandwidth (bytes per CMP cycle) of the window benchmarks, PingPong's
/// half round trip (cycles).
fn value(r: &Row) -> f64 {
    match r.point.bench {
        Bench::Pingpong => r.latency_cycles,
        _ => r.bandwidth_bytes_per_cycle,
    }
}

/// Every variant's figure at every size.
fn tables(rows: &[Row]) -> String {
    let mut s = String::new();
    for bench in Bench::ALL {
        let sizes = sizes(rows, bench);
        if sizes.is_empty() {
            continue;
        }
        let what = match bench {
            Bench::Pingpong => "half round trip, CMP cycles",
            _ => "bandwidth, bytes per CMP cycle",
        };
        let head: Vec<String> = sizes.iter().map(|&b| size_name(b)).collect();
        let _ = writeln!(
            s,
            "### {} ({what})\n\n| scheme | engines | active copies | {} |\n|---|---|---|{}",
            bench.name(),
            head.join(" | "),
            "---:|".repeat(sizes.len())
        );
        for v in variants(rows) {
            let cells: Vec<String> = sizes
                .iter()
                .map(|&b| {
                    find(rows, v, bench, b).map_or("-".into(), |r| format!("{:.3}", value(r)))
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                v.scheme,
                v.engines,
                v.active,
                cells.join(" | ")
            );
        }
        s.push('\n');
    }
    s
}

/// With one engine every scheme gives every step to that engine: at the same active
/// copies, the same runs.
pub fn one_engine_check(rows: &[Row]) -> String {
    let differing: Vec<String> = rows
        .iter()
        .filter(|r| r.variant.engines == 1 && r.variant.scheme != Scheme::Base)
        .filter(|r| {
            let base = Variant {
                scheme: Scheme::Base,
                ..r.variant
            };
            find(rows, base, r.point.bench, r.point.bytes).is_some_and(|b| b.cycles != r.cycles)
        })
        .map(|r| format!("{} {}", r.variant.label(), r.point.name()))
        .collect();
    if differing.is_empty() {
        "With one engine, SO, RO, DSR and SR run exactly as the base case at the same active \
         copies (every step on the one engine), cycle for cycle.\n\n"
            .into()
    } else {
        format!(
            "With one engine some schemes differ from the base case: {} (a bug: with one \
             engine every step runs on it).\n\n",
            differing.join(", ")
        )
    }
}

/// Whether `a` does better than `b` (more bandwidth, less latency).
fn better(a: &Row, b: &Row) -> std::cmp::Ordering {
    rate(b).total_cmp(&rate(a))
}

/// A run's speed, higher better: bytes per cycle where bytes move, messages per cycle for
/// PingPong and for empty messages (whose bandwidth is 0 under every scheme).
fn rate(r: &Row) -> f64 {
    match r.point.bench {
        Bench::Uniband | Bench::Biband if r.point.bytes > 0 => r.bandwidth_bytes_per_cycle,
        _ => 1.0 / r.latency_cycles.max(f64::MIN_POSITIVE),
    }
}

/// The sizes where some engine is busy at least 80 % of the cycles, with the schemes from
/// best to worst there (two engines, the base case with one) at each count of active
/// copies.
fn saturated(rows: &[Row]) -> String {
    let mut s = String::from(
        "### Where an engine saturates\n\nAt each size where some run's busiest engine is \
         busy at least 80 % of the cycles: the schemes from best to worst (two engines; the \
         base case with one), each with its gain over the base case (in bytes per cycle, or \
         in messages per cycle for PingPong and empty messages) and its busiest engine's \
         share.\n\n| test | size | active copies | order |\n|---|---|---|---|\n",
    );
    let mut any = false;
    for bench in Bench::ALL {
        for bytes in sizes(rows, bench) {
            for active in super::ACTIVE_COPIES {
                let mut at: Vec<&Row> = rows
                    .iter()
                    .filter(|r| r.point.bench == bench && r.point.bytes == bytes)
                    .filter(|r| r.variant.active == active)
                    .filter(|r| (r.variant.engines == 2) != (r.variant.scheme == Scheme::Base))
                    .collect();
                if !at.iter().any(|r| r.bound_utilisation() >= 0.8) {
                    continue;
                }
                let Some(base) = at
                    .iter()
                    .find(|r| r.variant.scheme == Scheme::Base)
                    .copied()
                else {
                    continue;
                };
                at.sort_by(|a, b| better(a, b).then(a.variant.cmp(&b.variant)));
                let order: Vec<String> = at
                    .iter()
                    .map(|r| {
                        let change = (rate(r) / rate(base) - 1.0) * 100.0;
                        format!(
                            "{} {change:+.1} % ({:.0} %)",
                            r.variant.scheme,
                            r.bound_utilisation() * 100.0
                        )
                    })
                    .collect();
                any = true;
                let _ = writeln!(
                    s,
                    "| {} | {} | {active} | {} |",
                    bench.name(),
                    size_name(bytes),
                    order.join(", ")
                );
            }
        }
    }
    if !any {
        s.push_str("| - | - | - | no engine is busy 80 % of the cycles at any size |\n");
    }
    s.push('\n');
    s
}

/// What bounds a run: its busiest engine and that engine's main step.
pub fn bound(r: &Row) -> String {
    let u = r.bound_utilisation() * 100.0;
    let share = r.bound_step_cycles as f64 / r.bound_busy_cycles.max(1) as f64 * 100.0;
    let engine = format!(
        "MOPED {} engine {} busy {u:.0} % of the cycles, {share:.0} % of it in `{}` ({})",
        r.bound_moped,
        r.bound_engine,
        r.bound_step.name(),
        r.bound_step.emp_name()
    );
    if u >= 80.0 {
        format!("bounded by {engine}")
    } else {
        format!(
            "busiest: {engine}; no engine is saturated, so the chain of steps and the copy's \
             line transfers per active copy set the pace"
        )
    }
}

/// Which step bounds each scheme, at each benchmark's largest size.
fn bounds(rows: &[Row]) -> String {
    let mut s = String::from(
        "### What bounds each scheme\n\nAt each benchmark's largest size: the busiest engine \
         of one MOPED, its share of the cycles, the step it spent most of them in, the cycles \
         steps waited for a lock and the hand-offs (over every MOPED), and the mean number of \
         copies active at the busiest engine's MOPED.\n\n| benchmark | scheme | engines | \
         active copies | busiest | busy | main step | lock wait | hand-offs | copies active \
         |\n|---|---|---|---|---|---:|---|---:|---:|---:|\n",
    );
    for bench in Bench::ALL {
        let Some(&size) = sizes(rows, bench).last() else {
            continue;
        };
        for v in variants(rows) {
            let Some(r) = find(rows, v, bench, size) else {
                continue;
            };
            let share = r.bound_step_cycles as f64 / r.bound_busy_cycles.max(1) as f64 * 100.0;
            let _ = writeln!(
                s,
                "| {} {} | {} | {} | {} | MOPED {} engine {} | {:.0} % | {} ({share:.0} %) | {} \
                 | {} | {:.2} |",
                bench.name(),
                size_name(size),
                v.scheme,
                v.engines,
                v.active,
                r.bound_moped,
                r.bound_engine,
                r.bound_utilisation() * 100.0,
                r.bound_step.name(),
                r.lock_wait_cycles,
                r.handoffs,
                r.active_copies_mean,
            );
        }
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::super::figure10::tests::row;
    use super::*;

    #[test]
    fn schemes_are_ordered_by_message_rate_where_messages_are_empty() {
        let mut rows = Vec::new();
        for (scheme, engines, latency) in [(Scheme::Base, 1, 100.0), (Scheme::Ro, 2, 50.0)] {
            let mut r = row(scheme, engines, Bench::Uniband, 0, 1.0);
            r.bandwidth_bytes_per_cycle = 0.0;
            r.latency_cycles = latency;
            r.bound_busy_cycles = 900;
            rows.push(r);
        }
        let s = saturated(&rows);
        assert!(!s.contains("NaN"), "{s}");
        assert!(
            s.contains("| uniband | 0 B | 1 | RO +100.0 % (90 %), base +0.0 % (90 %) |"),
            "{s}"
        );
    }
}
