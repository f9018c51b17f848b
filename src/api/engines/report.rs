//! report.md of `moped engines`: bandwidth and latency per scheme, the multi-CPU NIC
//! paper's claims checked, and the step that bounds each scheme.

use std::fmt::Write;

use super::{Bench, Row, Variant};
use crate::moped::engines::{Scheme, StepKind};

/// The report: the notes, the tables, the claims and the bounds.
pub fn report(rows: &[Row], notes: &[String]) -> String {
    let mut s = String::from("# MOPED with several engines\n\n");
    for n in notes {
        let _ = writeln!(s, "{n}\n");
    }
    s.push_str(&through_moped(rows));
    s.push_str(&tables(rows));
    s.push_str(&claims(rows));
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
            "MOPED refused reservations (backoff) in {}: those messages went through shared              memory, and their runs measure that path in part.\n\n",
            refused.join(", ")
        )
    }
}

fn find(rows: &[Row], scheme: Scheme, engines: usize, bench: Bench, bytes: u64) -> Option<&Row> {
    rows.iter().find(|r| {
        r.variant == Variant { scheme, engines } && r.point.bench == bench && r.point.bytes == bytes
    })
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

fn size_name(b: u64) -> String {
    match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MB", b >> 20),
        b if b >= 1024 && b % 1024 == 0 => format!("{} kB", b >> 10),
        b => format!("{b} B"),
    }
}

fn variants(rows: &[Row]) -> Vec<Variant> {
    let mut v: Vec<Variant> = rows.iter().map(|r| r.variant).collect();
    v.sort();
    v.dedup();
    v
}

/// Bandwidth (bytes per CMP cycle) of the window benchmarks and PingPong's half round trip
/// (cycles), per scheme and size.
fn tables(rows: &[Row]) -> String {
    let mut s = String::new();
    for bench in Bench::ALL {
        let sizes = sizes(rows, bench);
        if sizes.is_empty() {
            continue;
        }
        let (what, value): (&str, fn(&Row) -> f64) = match bench {
            Bench::Pingpong => ("half round trip, CMP cycles", |r| r.latency_cycles),
            _ => ("bandwidth, bytes per CMP cycle", |r| {
                r.bandwidth_bytes_per_cycle
            }),
        };
        let _ = writeln!(s, "## {} ({what})\n", bench.name());
        let head: Vec<String> = sizes.iter().map(|&b| size_name(b)).collect();
        let _ = writeln!(s, "| scheme | engines | {} |", head.join(" | "));
        let _ = writeln!(s, "|---|---|{}", "---:|".repeat(sizes.len()));
        for v in variants(rows) {
            let cells: Vec<String> = sizes
                .iter()
                .map(|&b| {
                    find(rows, v.scheme, v.engines, bench, b)
                        .map_or("-".into(), |r| format!("{:.3}", value(r)))
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} |",
                v.scheme,
                v.engines,
                cells.join(" | ")
            );
        }
        s.push('\n');
    }
    s.push_str(&one_engine_check(rows));
    s
}

/// With one engine every scheme gives every step to that engine: the same runs.
fn one_engine_check(rows: &[Row]) -> String {
    let differing: Vec<String> = rows
        .iter()
        .filter(|r| r.variant.engines == 1 && r.variant.scheme != Scheme::Base)
        .filter(|r| {
            find(rows, Scheme::Base, 1, r.point.bench, r.point.bytes)
                .is_some_and(|b| b.cycles != r.cycles && !r.variant.scheme.parallel_receive())
        })
        .map(|r| format!("{} {}", r.variant.label(), r.point.name()))
        .collect();
    if differing.is_empty() {
        "With one engine, SO, DSR and the rest run exactly as the base case (every step on \
         the one engine), cycle for cycle.\n\n"
            .into()
    } else {
        format!(
            "With one engine some schemes differ from the base case: {} (a bug: with one \
             engine every step runs on it).\n\n",
            differing.join(", ")
        )
    }
}

/// The largest size of `bench` in the rows.
fn largest(rows: &[Row], bench: Bench) -> Option<u64> {
    sizes(rows, bench).last().copied()
}

fn gain(new: f64, old: f64) -> f64 {
    if old > 0.0 {
        (new / old - 1.0) * 100.0
    } else {
        0.0
    }
}

/// What bounds a run: its busiest engine and that engine's main step.
fn bound(r: &Row) -> String {
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

fn verdict(holds: bool) -> &'static str {
    if holds {
        "holds"
    } else {
        "does not hold"
    }
}

/// The best two-engine scheme of `bench` at `bytes` by bandwidth.
fn best(rows: &[Row], bench: Bench, bytes: u64) -> Option<&Row> {
    rows.iter()
        .filter(|r| r.variant.engines == 2 && r.point.bench == bench && r.point.bytes == bytes)
        .max_by(|a, b| {
            a.bandwidth_bytes_per_cycle
                .total_cmp(&b.bandwidth_bytes_per_cycle)
        })
}

fn claims(rows: &[Row]) -> String {
    let mut s = String::from("## The paper's claims, checked\n\n");
    s.push_str(
        "Schemes with two engines against the base case with one, at the largest message \
         size of each benchmark; a tie is within 1 %.\n\n",
    );
    let within =
        |a: &Row, b: &Row| a.bandwidth_bytes_per_cycle >= 0.99 * b.bandwidth_bytes_per_cycle;
    if let Some(size) = largest(rows, Bench::Uniband) {
        let base = find(rows, Scheme::Base, 1, Bench::Uniband, size);
        let top = best(rows, Bench::Uniband, size);
        let ro = find(rows, Scheme::Ro, 2, Bench::Uniband, size);
        if let (Some(base), Some(top), Some(ro)) = (base, top, ro) {
            let g = gain(ro.bandwidth_bytes_per_cycle, base.bandwidth_bytes_per_cycle);
            let _ = writeln!(
                s,
                "- **RO gives the best unidirectional bandwidth** (paper: 964 against 840 \
                 Mbit/s, +14.8 %, SR alike): {}. At {}, RO reaches {:.3} bytes/cycle \
                 ({g:+.1} % over the base case's {:.3}); the best is {} ({:.3}). RO is {}; \
                 the base case is {}. Cause: {}.",
                verdict(within(ro, top)),
                size_name(size),
                ro.bandwidth_bytes_per_cycle,
                base.bandwidth_bytes_per_cycle,
                top.variant.label(),
                top.bandwidth_bytes_per_cycle,
                bound(ro),
                bound(base),
                cause(ro, base),
            );
        }
        let so = find(rows, Scheme::So, 2, Bench::Uniband, size);
        if let (Some(base), Some(so)) = (base, so) {
            let g = gain(so.bandwidth_bytes_per_cycle, base.bandwidth_bytes_per_cycle);
            let _ = writeln!(
                s,
                "- **SO gives no unidirectional gain**: {}. SO changes Uniband's bandwidth at \
                 {} by {g:+.1} % (no gain: within 2 %); SO is {}. Cause: {}.",
                verdict(g.abs() <= 2.0),
                size_name(size),
                bound(so),
                cause(so, base),
            );
        }
        let dsr = find(rows, Scheme::Dsr, 2, Bench::Uniband, size);
        if let (Some(base), Some(dsr)) = (base, dsr) {
            let g = gain(
                dsr.bandwidth_bytes_per_cycle,
                base.bandwidth_bytes_per_cycle,
            );
            let _ = writeln!(
                s,
                "- **DSR is marginal** (unidirectional bandwidth marginally better than the \
                 base case): {}. DSR changes Uniband's bandwidth at {} by {g:+.1} % \
                 (marginal: from 0 to 5 %); DSR is {}. Cause: {}.",
                verdict((0.0..5.0).contains(&g)),
                size_name(size),
                bound(dsr),
                cause(dsr, base),
            );
        }
    }
    if let Some(size) = largest(rows, Bench::Biband) {
        let base = find(rows, Scheme::Base, 1, Bench::Biband, size);
        let top = best(rows, Bench::Biband, size);
        if let (Some(base), Some(top)) = (base, top) {
            let so_sr: Vec<&Row> = [Scheme::So, Scheme::Sr]
                .into_iter()
                .filter_map(|k| find(rows, k, 2, Bench::Biband, size))
                .collect();
            let holds = so_sr.iter().any(|r| within(r, top));
            let parts: Vec<String> = so_sr
                .iter()
                .map(|r| {
                    let g = gain(r.bandwidth_bytes_per_cycle, base.bandwidth_bytes_per_cycle);
                    format!(
                        "{} {:.3} ({g:+.1} %)",
                        r.variant.scheme, r.bandwidth_bytes_per_cycle
                    )
                })
                .collect();
            let _ = writeln!(
                s,
                "- **SO or SR gives the best bidirectional bandwidth** (paper: SO +17 %): {}. \
                 At {}: {} against the base case's {:.3}; the best is {} ({:.3}), {}. \
                 Cause: {}.",
                verdict(holds),
                size_name(size),
                parts.join(", "),
                base.bandwidth_bytes_per_cycle,
                top.variant.label(),
                top.bandwidth_bytes_per_cycle,
                bound(top),
                cause(top, base),
            );
        }
    }
    s.push_str(&latency_claim(rows));
    s.push('\n');
    s
}

/// RO's latency gain at the paper's 10 bytes and 14 kB (7 % and 8.3 %).
fn latency_claim(rows: &[Row]) -> String {
    let mut parts = Vec::new();
    let mut holds = true;
    for (bytes, paper) in [(10u64, 7.0), (14 * 1024, 8.3)] {
        let base = find(rows, Scheme::Base, 1, Bench::Pingpong, bytes);
        let ro = find(rows, Scheme::Ro, 2, Bench::Pingpong, bytes);
        let (Some(base), Some(ro)) = (base, ro) else {
            continue;
        };
        let cut = -gain(ro.latency_cycles, base.latency_cycles);
        holds &= (cut - paper).abs() <= 2.0;
        parts.push(format!(
            "at {} {:.0} against {:.0} cycles, {cut:.1} % less (paper {paper} %); RO is {}; \
             cause: {}",
            size_name(bytes),
            ro.latency_cycles,
            base.latency_cycles,
            bound(ro),
            cause(ro, base)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "- **RO cuts latency by 7 to 8 %** (within 2 points of the paper's): {}. PingPong's \
         half round trip {}.\n",
        verdict(holds),
        parts.join("; ")
    )
}

/// Which step bounds each scheme, at each benchmark's largest size.
fn bounds(rows: &[Row]) -> String {
    let mut s = String::from(
        "## What bounds each scheme\n\nAt each benchmark's largest size: the busiest engine \
         of one MOPED, its share of the cycles, the step it spent most of them in, the cycles \
         steps waited for a lock and the hand-offs (over every MOPED), and the mean number of \
         copies active at the busiest engine's MOPED.\n\n| benchmark | scheme | engines | busiest | busy | main step | \
         lock wait | hand-offs | active copies |\n|---|---|---|---|---:|---|---:|---:|---:|\n",
    );
    for bench in Bench::ALL {
        let Some(size) = largest(rows, bench) else {
            continue;
        };
        for r in rows
            .iter()
            .filter(|r| r.point.bench == bench && r.point.bytes == size)
        {
            let share = r.bound_step_cycles as f64 / r.bound_busy_cycles.max(1) as f64 * 100.0;
            let _ = writeln!(
                s,
                "| {} {} | {} | {} | MOPED {} engine {} | {:.0} % | {} ({share:.0} %) | {} | {} | {:.2} |",
                bench.name(),
                size_name(size),
                r.variant.scheme,
                r.variant.engines,
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

/// Why `r` differs from `base`: the busiest engine's cycles per message in each, and the
/// kinds of step whose cycles per message on it changed most.
fn cause(r: &Row, base: &Row) -> String {
    let per = |x: &Row, c: u64| c as f64 / x.messages().max(1) as f64;
    let mut moved: Vec<(f64, StepKind)> = StepKind::ALL
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            (
                per(r, r.bound_cycles[i]) - per(base, base.bound_cycles[i]),
                k,
            )
        })
        .filter(|(d, _)| d.abs() >= 1.0)
        .collect();
    moved.sort_by(|a, b| b.0.abs().total_cmp(&a.0.abs()));
    let changes: Vec<String> = moved
        .iter()
        .take(3)
        .map(|(d, k)| format!("`{}` {d:+.0}", k.name()))
        .collect();
    format!(
        "the busiest engine spends {:.0} cycles per message against the base case's {:.0} \
         ({}){}; {:.2} copies active at its MOPED on average against {:.2}",
        per(r, r.bound_busy_cycles),
        per(base, base.bound_busy_cycles),
        if changes.is_empty() {
            "no step moved".into()
        } else {
            changes.join(", ")
        },
        if r.handoffs > 0 {
            format!(", {} hand-offs", r.handoffs)
        } else {
            String::new()
        },
        r.active_copies_mean,
        base.active_copies_mean,
    )
}
