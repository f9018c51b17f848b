//! Figure 10 under the best scheme (part of `moped engines`): the MOPED paper's 16 kB IMB
//! and class S NPB runs under the software baseline, then under the experiment's MOPED
//! design three ways: the device as configured (by default the paper's: every step
//! fixed-function but matching), one engine at the experiment's step costs, and the best
//! two-engine scheme of the bandwidth and latency runs at those costs. Figure 10's
//! configuration is kept otherwise (its 64-entry descriptor tables).

use std::fmt::Write;

use crate::config::SystemConfig;
use crate::design::Design;
use crate::error::MopedError;

use super::super::experiments::{run_all, Outcome, Progress, Task};
use super::super::figure10::{part_specs, Figure10Part};
use super::super::output::{OutDir, RunInfo};
use super::{Bench, Costs, Row, Variant};
use crate::moped::engines::Scheme;

/// How a Figure-10 run's MOPED was set up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Device {
    /// The software baseline, no MOPED.
    Baseline,
    /// The configuration's own device.
    Configured,
    /// A scheme and engine count at the experiment's step costs.
    Variant(Variant),
}

impl Device {
    pub fn label(&self) -> String {
        match self {
            Device::Baseline => "baseline".into(),
            Device::Configured => "configured".into(),
            Device::Variant(v) => v.label(),
        }
    }
}

/// One benchmark under one device.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub device: Device,
    pub benchmark: String,
    pub cycles: f64,
    pub baseline_cycles: f64,
    /// `1 - cycles / baseline_cycles`.
    pub reduction: f64,
    pub messages_verified: u64,
}

/// The two-engine scheme with the largest geometric mean gain over the base case with
/// one engine at the same active copies, over every row with bytes moved: bandwidth for
/// the window benchmarks, the inverse of latency for PingPong.
pub fn best(rows: &[Row]) -> Option<Variant> {
    let base = |r: &Row| {
        let v = Variant {
            scheme: Scheme::Base,
            engines: 1,
            active: r.variant.active,
        };
        rows.iter().find(|b| b.variant == v && b.point == r.point)
    };
    let gain = |r: &Row, b: &Row| match r.point.bench {
        Bench::Pingpong => b.latency_cycles / r.latency_cycles,
        _ => r.bandwidth_bytes_per_cycle / b.bandwidth_bytes_per_cycle,
    };
    let mut best: Option<(f64, Variant)> = None;
    let candidates = super::ACTIVE_COPIES.into_iter().flat_map(|active| {
        Scheme::ALL
            .into_iter()
            .filter(|s| *s != Scheme::Base)
            .map(move |scheme| Variant {
                scheme,
                engines: 2,
                active,
            })
    });
    for v in candidates {
        let logs: Vec<f64> = rows
            .iter()
            .filter(|r| r.variant == v && r.point.bytes > 0)
            .filter_map(|r| base(r).map(|b| gain(r, b).ln()))
            .filter(|x| x.is_finite())
            .collect();
        if logs.is_empty() {
            continue;
        }
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        if best.map_or(true, |(m, _)| mean > m) {
            best = Some((mean, v));
        }
    }
    best.map(|(_, v)| v)
}

/// The runs the part makes.
pub fn run_count() -> usize {
    4 * super::super::figure10::FIGURE10.len()
}

/// Runs the part into `figure10/` of `out`: the baseline, the configured device, then the
/// base case and `best` at the experiment's costs. Returns the rows and the events.
#[allow(clippy::too_many_arguments)]
pub fn run(
    part: &Figure10Part,
    config: &SystemConfig,
    costs: &Costs,
    design: Design,
    best: Variant,
    jobs: usize,
    out: &OutDir,
    (before, progress): (usize, Progress),
) -> Result<(Vec<Bar>, u64), MopedError> {
    let specs = part_specs(part)?;
    let root = out.child("figure10")?;
    let base = Variant {
        scheme: Scheme::Base,
        engines: 1,
        active: best.active,
    };
    let devices = [
        Device::Baseline,
        Device::Configured,
        Device::Variant(base),
        Device::Variant(best),
    ];
    let mut done = before;
    let mut outcomes: Vec<(Device, Vec<Outcome>)> = Vec::new();
    for device in devices {
        let mut cfg = config.clone();
        if let Device::Variant(v) = device {
            v.configure(&mut cfg, costs);
        }
        let d = if device == Device::Baseline {
            Design::Baseline
        } else {
            design
        };
        let tasks: Vec<Task> = specs
            .iter()
            .map(|spec| Task {
                spec: spec.clone(),
                design: d,
                seed: 1,
            })
            .collect();
        let dir = root.child(&device.label())?;
        let counted = |i, n, r: &Result<Outcome, MopedError>| progress(i, done + n, r);
        let got = run_all(&cfg, &tasks, jobs, part.iterations, Some(&dir), &counted);
        let got = dir.finish(got, |_, _| Ok(info(&cfg, d, device)))?;
        done += got.len();
        outcomes.push((device, got));
    }
    let events = outcomes.iter().flat_map(|(_, o)| o).map(|o| o.events).sum();
    let bars = bars(&outcomes);
    root.finish(Ok(()), |_, _| Ok(info(config, design, Device::Configured)))?;
    Ok((bars, events))
}

fn info(cfg: &SystemConfig, design: Design, device: Device) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1u64.into(),
        workload: "Figure 10 (16 kB IMB, class S NPB)".into(),
        design: format!("{design} ({})", device.label()),
    }
}

fn bars(outcomes: &[(Device, Vec<Outcome>)]) -> Vec<Bar> {
    let Some((_, baseline)) = outcomes.first() else {
        return Vec::new();
    };
    let cycles = |o: &Outcome| o.record.metrics.get("cycles").copied().unwrap_or(0.0);
    let mut bars = Vec::new();
    for (device, runs) in outcomes {
        for (o, b) in runs.iter().zip(baseline) {
            let (c, base) = (cycles(o), cycles(b));
            bars.push(Bar {
                device: *device,
                benchmark: o.record.benchmark.clone(),
                cycles: c,
                baseline_cycles: base,
                reduction: if base > 0.0 { 1.0 - c / base } else { 0.0 },
                messages_verified: o.messages_verified,
            });
        }
    }
    bars
}

/// report.md's section: each benchmark's cycle reduction against the baseline under the
/// three devices, and what the best scheme changes.
pub fn section(bars: &[Bar], design: Design) -> String {
    let devices: Vec<Device> = {
        let mut d: Vec<Device> = Vec::new();
        for b in bars.iter().filter(|b| b.device != Device::Baseline) {
            if !d.contains(&b.device) {
                d.push(b.device);
            }
        }
        d
    };
    let mut s = format!(
        "## Figure 10 under the best scheme\n\nCycle reduction against the software \
         baseline under {design}: the configured device, one engine at the step costs above \
         and the best two-engine scheme (largest geometric-mean gain over the bandwidth and \
         latency runs). Figure 10's configuration otherwise (64 descriptor entries).\n\n| \
         benchmark | {} | best - one engine |\n|---|{}---:|\n",
        devices
            .iter()
            .map(Device::label)
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(devices.len())
    );
    let mut names: Vec<&str> = Vec::new();
    for b in bars {
        if !names.contains(&b.benchmark.as_str()) {
            names.push(&b.benchmark);
        }
    }
    let (mut moved, mut most) = (Vec::new(), (0.0f64, ""));
    for name in names {
        let of = |d: &Device| bars.iter().find(|b| b.benchmark == name && b.device == *d);
        let cells: Vec<String> = devices
            .iter()
            .map(|d| of(d).map_or("-".into(), |b| format!("{:.1} %", b.reduction * 100.0)))
            .collect();
        let delta = match (devices.get(1).and_then(&of), devices.get(2).and_then(&of)) {
            (Some(one), Some(best)) => (best.reduction - one.reduction) * 100.0,
            _ => 0.0,
        };
        moved.push(delta);
        if delta.abs() > most.0.abs() {
            most = (delta, name);
        }
        let _ = writeln!(s, "| {name} | {} | {delta:+.1} |", cells.join(" | "));
    }
    let mean = moved.iter().sum::<f64>() / moved.len().max(1) as f64;
    let _ = writeln!(
        s,
        "\nThe best scheme moves the reductions by {mean:+.1} points on average over one \
         engine at the same costs, most for {} ({:+.1} points).\n",
        most.1, most.0
    );
    s
}

pub const CSV_HEADER: [&str; 6] = [
    "device",
    "benchmark",
    "cycles",
    "baseline_cycles",
    "reduction",
    "messages_verified",
];

/// figure10_schemes.csv's text.
pub fn csv(bars: &[Bar]) -> String {
    let header = CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = bars.iter().map(|b| {
        vec![
            b.device.label(),
            b.benchmark.clone(),
            b.cycles.to_string(),
            b.baseline_cycles.to_string(),
            b.reduction.to_string(),
            b.messages_verified.to_string(),
        ]
    });
    crate::analysis::write::csv_text(
        std::iter::once(header).chain(records),
        csv::Terminator::Any(b'\n'),
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::Point;
    use super::*;
    use crate::moped::engines::StepKind;

    /// A row of `scheme` on `engines` at one active copy whose bandwidth is `value` and
    /// latency its inverse.
    pub(in super::super) fn row(
        scheme: Scheme,
        engines: usize,
        bench: Bench,
        bytes: u64,
        value: f64,
    ) -> Row {
        Row {
            variant: Variant {
                scheme,
                engines,
                active: 1,
            },
            point: Point { bench, bytes },
            iterations: 1,
            cycles: 1000,
            bandwidth_bytes_per_cycle: value,
            latency_cycles: 1.0 / value,
            messages_verified: 1,
            active_matches: 1,
            engine_busy: [0, 0],
            lock_wait_cycles: 0,
            handoffs: 0,
            bound_moped: 0,
            bound_engine: 0,
            bound_busy_cycles: 0,
            bound_step: StepKind::Match,
            bound_step_cycles: 0,
            bound_cycles: [0; 10],
            active_copies_mean: 1.0,
            moped_copies: 1,
            backoff_refused: 0,
        }
    }

    #[test]
    fn the_best_scheme_has_the_largest_geometric_mean_gain() {
        let mut rows = Vec::new();
        for (bench, bytes) in [(Bench::Uniband, 64), (Bench::Pingpong, 10)] {
            rows.push(row(Scheme::Base, 1, bench, bytes, 1.0));
            rows.push(row(Scheme::So, 2, bench, bytes, 1.5));
            // RO doubles one and halves the other: a geometric mean of 1.
            let ro = if bench == Bench::Uniband { 2.0 } else { 0.5 };
            rows.push(row(Scheme::Ro, 2, bench, bytes, ro));
        }
        assert_eq!(
            best(&rows),
            Some(Variant {
                scheme: Scheme::So,
                engines: 2,
                active: 1,
            })
        );
        assert_eq!(best(&rows[..1]), None);
    }

    #[test]
    fn the_section_gives_each_benchmark_and_the_largest_move() {
        let v = |scheme, engines| {
            Device::Variant(Variant {
                scheme,
                engines,
                active: 1,
            })
        };
        let bar = |device, benchmark: &str, cycles: f64| Bar {
            device,
            benchmark: benchmark.into(),
            cycles,
            baseline_cycles: 100.0,
            reduction: 1.0 - cycles / 100.0,
            messages_verified: 1,
        };
        let bars = vec![
            bar(Device::Baseline, "PP", 100.0),
            bar(Device::Baseline, "CG", 100.0),
            bar(Device::Configured, "PP", 30.0),
            bar(Device::Configured, "CG", 90.0),
            bar(v(Scheme::Base, 1), "PP", 60.0),
            bar(v(Scheme::Base, 1), "CG", 95.0),
            bar(v(Scheme::Sr, 2), "PP", 40.0),
            bar(v(Scheme::Sr, 2), "CG", 94.0),
        ];
        let s = section(&bars, Design::OptCopy);
        assert!(
            s.contains("| PP | 70.0 % | 40.0 % | 60.0 % | +20.0 |"),
            "{s}"
        );
        assert!(s.contains("| CG | 10.0 % | 5.0 % | 6.0 % | +1.0 |"), "{s}");
        assert!(s.contains("by +10.5 points on average"), "{s}");
        assert!(s.contains("most for PP (+20.0 points)"), "{s}");
        assert_eq!(csv(&bars).lines().count(), 1 + bars.len());
    }
}
