//! The multi-CPU NIC paper on its own testbed (part of `moped engines`): two Tigon2 NICs
//! running EMP ([`crate::tigon`]) under each scheme, on one and on two processors per NIC,
//! over the paper's latency, unidirectional and bidirectional tests; `tigon.csv`, and a
//! sensitivity sweep of the testbed's chosen values (`tigon_sensitivity.csv`), one value at a
//! time.

use std::time::Instant;

use crate::config::TigonSection;
use crate::error::MopedError;
use crate::moped::engines::Scheme;
use crate::tigon::{self, Bench, Measurement, Setup, TICKS_PER_US};

use super::super::experiments::run_pool;

/// Message sizes of every test: the paper's 10 bytes (its latency), Table 1's 64 bytes and
/// its 14 kB (RO's latency gain), and powers of four between; the paper's Figure 1 plots
/// sizes in kB without giving its largest, and 64 kB (44 frames) is a choice.
pub fn sizes(quick: bool) -> &'static [u64] {
    if quick {
        &[10, 14 * 1024, 64 * 1024]
    } else {
        &[10, 64, 256, 1024, 4096, 14 * 1024, 16 * 1024, 64 * 1024]
    }
}

/// Iterations of a quick run (the full run takes `tigon.iterations`, the paper's 10,000).
pub const QUICK_ITERATIONS: u64 = 100;

/// Iterations of the sensitivity runs: the model is deterministic and reaches its steady
/// state within a few messages, so a tenth of the paper's count gives the same figures to
/// well under 1 %.
pub const SENSITIVITY_ITERATIONS: u64 = 1_000;

/// Each of `schemes` on one and on two processors per NIC.
pub fn setups(schemes: &[Scheme]) -> Vec<Setup> {
    schemes
        .iter()
        .flat_map(|&scheme| [1, 2].map(|cpus| Setup { scheme, cpus }))
        .collect()
}

/// The setup whose figures stand for `scheme`: the base case on the one processor EMP
/// used, every other scheme on two.
pub fn paper_setup(scheme: Scheme) -> Setup {
    let cpus = if scheme == Scheme::Base { 1 } else { 2 };
    Setup { scheme, cpus }
}

/// One value of the testbed's configuration varied.
#[derive(Clone, Debug, PartialEq)]
pub struct Variation {
    /// The `[tigon]` key.
    pub key: &'static str,
    pub value: f64,
}

impl Variation {
    fn apply(&self, cfg: &mut TigonSection) {
        let v = self.value;
        match self.key {
            "ack_group_frames" => cfg.ack_group_frames = v as u64,
            "classify_share" => cfg.classify_share = v,
            "event_post_cycles" => {
                cfg.event_post_cycles = v as u64;
                cfg.event_pickup_cycles = v as u64;
            }
            "dma_read_ns" => cfg.dma_read_ns = v,
            _ => unreachable!("a key of SWEEPS"),
        }
    }

    /// The key as the report names it.
    pub fn name(&self) -> &'static str {
        match self.key {
            "event_post_cycles" => "event_post_cycles = event_pickup_cycles",
            k => k,
        }
    }
}

/// The chosen values the sweep varies, one at a time, and the values each takes.
pub const SWEEPS: [(&str, &[f64]); 4] = [
    ("ack_group_frames", &[1.0, 2.0, 4.0, 8.0]),
    ("classify_share", &[0.5, 0.75, 1.0]),
    ("event_post_cycles", &[0.0, 20.0, 60.0, 120.0, 250.0]),
    ("dma_read_ns", &[300.0, 600.0, 1000.0]),
];

/// The points every sensitivity run measures: the paper's headline figures.
pub const PROBES: [(Bench, u64); 4] = [
    (Bench::Latency, 10),
    (Bench::Latency, 14 * 1024),
    (Bench::Unidirectional, 64 * 1024),
    (Bench::Bidirectional, 64 * 1024),
];

/// What the testbed runs found.
#[derive(Debug)]
pub struct TigonResults {
    pub cfg: TigonSection,
    pub rows: Vec<Measurement>,
    /// Each variation with its probe rows.
    pub sensitivity: Vec<(Variation, Vec<Measurement>)>,
    pub events: u64,
    pub host_seconds: f64,
}

impl TigonResults {
    pub fn messages_verified(&self) -> u64 {
        let sweep = self.sensitivity.iter().flat_map(|(_, r)| r);
        self.rows
            .iter()
            .chain(sweep)
            .map(|m| m.messages_verified)
            .sum()
    }

    pub fn runs(&self) -> usize {
        self.rows.len() + self.sensitivity.iter().map(|(_, r)| r.len()).sum::<usize>()
    }
}

/// The runs of [`run`]: every setup of `schemes` at every size, then the sweep.
pub fn run_count(schemes: &[Scheme], quick: bool) -> usize {
    let main = setups(schemes).len() * Bench::ALL.len() * sizes(quick).len();
    let values: usize = SWEEPS.iter().map(|(_, v)| v.len()).sum();
    main + values * PROBES.len() * schemes.len()
}

/// One run to make.
struct Job {
    cfg: usize,
    setup: Setup,
    bench: Bench,
    bytes: u64,
    iterations: u64,
}

/// Runs the testbed under `schemes` on `jobs` host threads.
pub fn run(
    cfg: &TigonSection,
    schemes: &[Scheme],
    quick: bool,
    jobs: usize,
) -> Result<TigonResults, MopedError> {
    let started = Instant::now();
    let iterations = if quick {
        cfg.iterations.min(QUICK_ITERATIONS)
    } else {
        cfg.iterations
    };
    let mut cfgs = vec![cfg.clone()];
    let mut work = Vec::new();
    for setup in setups(schemes) {
        for bench in Bench::ALL {
            for &bytes in sizes(quick) {
                work.push(Job {
                    cfg: 0,
                    setup,
                    bench,
                    bytes,
                    iterations,
                });
            }
        }
    }
    let main = work.len();
    let mut variations = Vec::new();
    for (key, values) in SWEEPS {
        for &value in values {
            let v = Variation { key, value };
            let mut c = cfg.clone();
            v.apply(&mut c);
            c.validate()?;
            cfgs.push(c);
            variations.push(v);
            for &scheme in schemes {
                for (bench, bytes) in PROBES {
                    work.push(Job {
                        cfg: cfgs.len() - 1,
                        setup: paper_setup(scheme),
                        bench,
                        bytes,
                        iterations: iterations.min(SENSITIVITY_ITERATIONS),
                    });
                }
            }
        }
    }
    let one = |_: usize, j: &Job| tigon::run(&cfgs[j.cfg], j.setup, j.bench, j.bytes, j.iterations);
    let mut all = run_pool(&work, jobs, one, &|_, _, _| {})?;
    let sweep = all.split_off(main);
    let per = schemes.len() * PROBES.len();
    let sensitivity = variations
        .into_iter()
        .zip(sweep.chunks(per.max(1)))
        .map(|(v, rows)| (v, rows.to_vec()))
        .collect();
    let events = all.iter().map(|m| m.events).sum();
    Ok(TigonResults {
        cfg: cfg.clone(),
        rows: all,
        sensitivity,
        events,
        host_seconds: started.elapsed().as_secs_f64(),
    })
}

/// tigon.csv's columns.
pub const TIGON_CSV_HEADER: [&str; 22] = [
    "scheme",
    "cpus",
    "benchmark",
    "bytes",
    "iterations",
    "time_us",
    "bandwidth_mbit_s",
    "latency_us",
    "nic0_cpu_a_busy",
    "nic0_cpu_b_busy",
    "nic1_cpu_a_busy",
    "nic1_cpu_b_busy",
    "semaphore_wait_us",
    "handoffs",
    "wire_share",
    "pause_us",
    "nic0_pci_share",
    "nic1_pci_share",
    "data_frames",
    "ack_frames",
    "messages_verified",
    "frames_waited",
];

fn fields(m: &Measurement) -> Vec<String> {
    let us = |t: u64| t as f64 / TICKS_PER_US as f64;
    let pci = |n: usize| m.nics[n].pci_ticks as f64 / m.ticks.max(1) as f64;
    let both = |f: fn(&tigon::NicCounters) -> u64| f(&m.nics[0]) + f(&m.nics[1]);
    vec![
        m.setup.scheme.name().into(),
        m.setup.cpus.to_string(),
        m.bench.name().into(),
        m.bytes.to_string(),
        m.iterations.to_string(),
        format!("{}", m.us()),
        format!("{}", m.bandwidth_mbit()),
        format!("{}", m.latency_us()),
        format!("{}", m.busy_share(0, 0)),
        format!("{}", m.busy_share(0, 1)),
        format!("{}", m.busy_share(1, 0)),
        format!("{}", m.busy_share(1, 1)),
        format!("{}", us(m.semaphore_wait_ticks())),
        m.handoffs().to_string(),
        format!("{}", m.wire_share()),
        format!("{}", us(both(|n| n.pause_ticks))),
        format!("{}", pci(0)),
        format!("{}", pci(1)),
        both(|n| n.data_frames).to_string(),
        both(|n| n.ack_frames).to_string(),
        m.messages_verified.to_string(),
        m.frames_waited.to_string(),
    ]
}

/// tigon.csv's text.
pub fn csv(rows: &[Measurement]) -> String {
    let header = TIGON_CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = std::iter::once(header).chain(rows.iter().map(fields));
    crate::analysis::write::csv_text(records, csv::Terminator::Any(b'\n'))
}

/// tigon_sensitivity.csv's text: tigon.csv's columns after the key varied and its value.
pub fn sensitivity_csv(sweep: &[(Variation, Vec<Measurement>)]) -> String {
    let head = ["choice", "value"].into_iter().chain(TIGON_CSV_HEADER);
    let header = head.map(String::from).collect();
    let records = sweep.iter().flat_map(|(v, rows)| {
        rows.iter().map(move |m| {
            let mut f = vec![v.name().to_string(), format!("{}", v.value)];
            f.extend(fields(m));
            f
        })
    });
    let all = std::iter::once(header).chain(records);
    crate::analysis::write::csv_text(all, csv::Terminator::Any(b'\n'))
}
