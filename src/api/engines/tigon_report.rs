//! The testbed's part of report.md: its figures beside the paper's, each within 15 % or
//! with the measured cause; the full tables; where each scheme's time goes; the
//! one-processor check; and how the figures move with each value the paper does not give.

use std::fmt::Write;

use super::report::size_name;
use super::tigon::{paper_setup, sizes, TigonResults, Variation, PROBES};
use crate::config::TigonSection;
use crate::moped::engines::{Scheme, StepKind, TABLE_1};
use crate::tigon::{Bench, Measurement, Setup, TICKS_PER_US};

/// The run of `setup` on `bench` at `bytes`.
pub fn find(rows: &[Measurement], setup: Setup, bench: Bench, bytes: u64) -> Option<&Measurement> {
    rows.iter()
        .find(|m| m.setup == setup && m.bench == bench && m.bytes == bytes)
}

/// `scheme`'s highest bandwidth on `bench` over the sizes (the paper's figures are peaks).
pub fn peak(rows: &[Measurement], scheme: Scheme, bench: Bench) -> Option<&Measurement> {
    let setup = paper_setup(scheme);
    rows.iter()
        .filter(|m| m.setup == setup && m.bench == bench)
        .max_by(|a, b| a.bandwidth_mbit().total_cmp(&b.bandwidth_mbit()))
}

/// `scheme`'s latency at `bytes`.
pub fn latency(rows: &[Measurement], scheme: Scheme, bytes: u64) -> Option<f64> {
    find(rows, paper_setup(scheme), Bench::Latency, bytes).map(Measurement::latency_us)
}

/// How much less latency `scheme` has than the base case at `bytes`, in %.
pub fn latency_cut(rows: &[Measurement], scheme: Scheme, bytes: u64) -> Option<f64> {
    let (l, b) = (
        latency(rows, scheme, bytes)?,
        latency(rows, Scheme::Base, bytes)?,
    );
    Some((1.0 - l / b) * 100.0)
}

/// The busiest processor of a run: which, its busy share, and its processor time per data
/// frame each way.
fn busiest(m: &Measurement) -> (usize, usize, f64, f64) {
    let mut best = (0, 0, 0.0);
    for n in 0..2 {
        for c in 0..m.setup.cpus {
            let u = m.busy_share(n, c);
            if u > best.2 {
                best = (n, c, u);
            }
        }
    }
    let frames: u64 = m.nics.iter().map(|n| n.data_frames).sum();
    let each_way = match m.bench {
        Bench::Bidirectional => frames / 2,
        _ => frames,
    };
    let busy = m.nics[best.0].cpus.get(best.1).map_or(0, |c| c.busy);
    let per = busy as f64 / TICKS_PER_US as f64 / each_way.max(1) as f64;
    (best.0, best.1, best.2, per)
}

fn cpu_name(c: usize) -> &'static str {
    if c == 0 {
        "A"
    } else {
        "B"
    }
}

/// What bounds a bandwidth run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// A processor busy 90 % of the time or more.
    Processor,
    /// The wire carrying frames 95 % of the time or more.
    Wire,
    /// Neither: the benchmark's two messages in flight (a send completes at its last
    /// frame's acknowledgment, and the next is posted only then).
    InFlight,
}

impl Bound {
    fn of(m: &Measurement) -> Bound {
        let (_, _, u, _) = busiest(m);
        if u >= 0.9 {
            Bound::Processor
        } else if m.wire_share() >= 0.95 {
            Bound::Wire
        } else {
            Bound::InFlight
        }
    }

    fn text(self) -> &'static str {
        match self {
            Bound::Processor => "bound by that processor",
            Bound::Wire => "bound by the wire",
            Bound::InFlight => {
                "bound by the two messages in flight (neither a processor nor the wire is full)"
            }
        }
    }

    /// One letter, for the tables.
    fn mark(self) -> &'static str {
        match self {
            Bound::Processor => "P",
            Bound::Wire => "W",
            Bound::InFlight => "F",
        }
    }
}

/// Processor time per message by EMP step, over both NICs' processors (a latency run's
/// path, as Table 1 names its steps).
fn step_times(m: &Measurement) -> String {
    let msgs = (m.iterations * 2).max(1) as f64;
    let mut by: Vec<(&str, u64)> = Vec::new();
    for kind in StepKind::ALL {
        let cycles: u64 = m
            .nics
            .iter()
            .flat_map(|n| &n.cpus)
            .map(|c| c.cycles_of(kind))
            .sum();
        match by.iter_mut().find(|(name, _)| *name == kind.emp_name()) {
            Some(e) => e.1 += cycles,
            None => by.push((kind.emp_name(), cycles)),
        }
    }
    let parts: Vec<String> = by
        .iter()
        .filter(|(_, c)| *c > 0)
        .map(|(name, c)| format!("{name} {:.2}", *c as f64 / TICKS_PER_US as f64 / msgs))
        .collect();
    format!("processor us per message by step: {}", parts.join(", "))
}

/// A run's measured state: its busiest processor, the wire, the semaphore, the hand-offs;
/// for a bandwidth run what bounds it, for a latency run where its processors' time goes.
pub fn measured(m: &Measurement) -> String {
    let (n, c, u, per) = busiest(m);
    let msgs = (m.iterations
        * if m.bench == Bench::Unidirectional {
            1
        } else {
            2
        })
    .max(1);
    let sem = m.semaphore_wait_ticks() as f64 / TICKS_PER_US as f64 / msgs as f64;
    let per_frame = match m.bench {
        Bench::Latency => String::new(),
        _ => format!(" ({per:.2} us per frame each way)"),
    };
    let tail = match m.bench {
        Bench::Latency => step_times(m),
        _ => Bound::of(m).text().to_string(),
    };
    format!(
        "at {}: NIC {n} cpu {} busy {:.0} %{per_frame}, wire {:.0} %, semaphore waits \
         {sem:.2} us and {:.1} hand-offs per message; {tail}",
        size_name(m.bytes),
        cpu_name(c),
        u * 100.0,
        m.wire_share() * 100.0,
        m.handoffs() as f64 / msgs as f64
    )
}

/// One figure of the paper set beside the testbed's.
struct Figure {
    what: String,
    paper: f64,
    ours: Option<f64>,
    unit: &'static str,
    /// The run behind `ours`, for its measured state.
    run: Option<Measurement>,
    /// Time per frame each way at the paper's bandwidth, for a bandwidth figure.
    need_per_frame: Option<f64>,
}

fn figures(t: &TigonResults) -> Vec<Figure> {
    let rows = &t.rows;
    let payload = t.cfg.frame_payload() as f64 * 8.0;
    let bw = |scheme: Scheme, bench: Bench, paper: f64, what: &str| {
        let m = peak(rows, scheme, bench);
        let per_way = if bench == Bench::Bidirectional {
            paper / 2.0
        } else {
            paper
        };
        Figure {
            what: format!("{scheme} {what} (Mbit/s, peak over sizes)"),
            paper,
            ours: m.map(Measurement::bandwidth_mbit),
            unit: "Mbit/s",
            run: m.cloned(),
            need_per_frame: Some(payload / per_way),
        }
    };
    let lat = |scheme: Scheme, bytes: u64, paper: f64, what: String| Figure {
        what,
        paper,
        ours: latency(rows, scheme, bytes),
        unit: "us",
        run: find(rows, paper_setup(scheme), Bench::Latency, bytes).cloned(),
        need_per_frame: None,
    };
    let cut = |scheme: Scheme, bytes: u64, paper: f64| Figure {
        what: format!("{scheme}'s latency cut at {} (%)", size_name(bytes)),
        paper,
        ours: latency_cut(rows, scheme, bytes),
        unit: "%",
        run: find(rows, paper_setup(scheme), Bench::Latency, bytes).cloned(),
        need_per_frame: None,
    };
    vec![
        bw(Scheme::Base, Bench::Unidirectional, 840.0, "unidirectional"),
        bw(Scheme::Ro, Bench::Unidirectional, 964.0, "unidirectional"),
        bw(
            Scheme::So,
            Bench::Unidirectional,
            840.0,
            "unidirectional (the paper: the same as the base case's)",
        ),
        bw(Scheme::Base, Bench::Bidirectional, 940.0, "bidirectional"),
        bw(Scheme::So, Bench::Bidirectional, 1100.0, "bidirectional"),
        lat(Scheme::Base, 10, 24.0, "base latency at 10 B (us)".into()),
        lat(Scheme::Ro, 10, 22.0, "RO latency at 10 B (us)".into()),
        cut(Scheme::Ro, 14 * 1024, 8.3),
        cut(Scheme::Dsr, 10, 6.0),
    ]
}

/// The figures beside the paper's: each within 15 % of it, or the measured cause.
fn beside_the_paper(t: &TigonResults) -> String {
    let mut s = String::from(
        "### The testbed beside the paper\n\nThe base case on one processor per NIC (EMP as \
         it was), every other scheme on two; a figure is within 15 % of the paper's or \
         says what the testbed measured instead.\n\n| figure | paper | testbed | \
         difference | within 15 % | measured |\n|---|---:|---:|---:|---|---|\n",
    );
    for f in figures(t) {
        let Some(ours) = f.ours else { continue };
        let diff = (ours / f.paper - 1.0) * 100.0;
        let within = diff.abs() <= 15.0;
        let mut what = f.run.as_ref().map(measured).unwrap_or_default();
        if let (false, Some(need), Some(m)) = (within, f.need_per_frame, &f.run) {
            let (_, _, _, per) = busiest(m);
            let _ = write!(
                what,
                "; at the paper's {} Mbit/s a frame each way takes {need:.2} us, and the \
                 busiest processor spends {per:.2} us of Table 1's steps on it: the paper's \
                 figure holds {:.2} us per frame that Table 1's 64-byte profile does not \
                 time",
                f.paper,
                need - per
            );
        }
        if let (false, "us", Some(m)) = (within, f.unit, &f.run) {
            let _ = write!(what, "; {}", path_excess(ours, m));
        }
        let _ = writeln!(
            s,
            "| {} | {} | {ours:.2} | {diff:+.1} % | {} | {what} |",
            f.what,
            f.paper,
            if within { "yes" } else { "**no**" },
        );
    }
    s.push('\n');
    s
}

/// Why a latency exceeds Table 1's path: what the testbed adds to its five steps.
fn path_excess(ours: f64, m: &Measurement) -> String {
    let t = TABLE_1;
    let path =
        t.send_bookkeeping + t.transmission + t.recv_bookkeeping + t.receive_frame + t.receiving;
    format!(
        "Table 1's five steps on a message's path sum to {path:.2} us at {} B; the testbed \
         adds {:.2} us: the host's post and poll, the completion word's DMA, and steps \
         queued behind others (the send ack on the same processor)",
        m.bytes,
        ours - path
    )
}

/// Latency (us) or bandwidth (Mbit/s) of every scheme at every size.
fn tables(t: &TigonResults, quick: bool) -> String {
    let mut s = String::new();
    for bench in Bench::ALL {
        let (what, value): (&str, fn(&Measurement) -> f64) = match bench {
            Bench::Latency => ("half round trip, us", Measurement::latency_us),
            _ => ("payload Mbit/s", Measurement::bandwidth_mbit),
        };
        let head: Vec<String> = sizes(quick).iter().map(|&b| size_name(b)).collect();
        let _ = writeln!(
            s,
            "### {} ({what})\n\n| scheme | cpus | {} |\n|---|---|{}",
            bench.name(),
            head.join(" | "),
            "---:|".repeat(head.len())
        );
        for scheme in Scheme::ALL {
            let setup = paper_setup(scheme);
            let cell = |m: &Measurement| match bench {
                Bench::Latency => format!("{:.2}", value(m)),
                _ => format!("{:.2} {}", value(m), Bound::of(m).mark()),
            };
            let cells: Vec<String> = sizes(quick)
                .iter()
                .map(|&b| find(&t.rows, setup, bench, b).map_or("-".into(), cell))
                .collect();
            if cells.iter().all(|c| c == "-") {
                continue;
            }
            let _ = writeln!(s, "| {scheme} | {} | {} |", setup.cpus, cells.join(" | "));
        }
        if bench != Bench::Latency {
            s.push_str(
                "\nP: a processor was busy 90 % of the time or more; W: the wire carried \
                 frames 95 % of the time or more; F: neither, the two messages in flight \
                 bound the test.\n",
            );
        }
        s.push('\n');
    }
    s
}

/// Where each scheme's time goes at each test's largest size.
fn time_goes(t: &TigonResults, quick: bool) -> String {
    let largest = *sizes(quick).last().expect("sizes");
    let mut s = format!(
        "### Where the time goes ({})\n\nEach processor's busy share of the timed region \
         (hand-offs included, spinning on the semaphore not), the semaphore waits and \
         hand-offs per message, and the busier direction of the wire.\n\n| test | scheme | \
         NIC 0 A | NIC 0 B | NIC 1 A | NIC 1 B | semaphore wait (us/msg) | hand-offs/msg | \
         wire |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        size_name(largest)
    );
    for bench in Bench::ALL {
        for scheme in Scheme::ALL {
            let Some(m) = find(&t.rows, paper_setup(scheme), bench, largest) else {
                continue;
            };
            let msgs = (m.iterations * if bench == Bench::Unidirectional { 1 } else { 2 }).max(1);
            let share = |n, c| {
                if c < m.setup.cpus {
                    format!("{:.0} %", m.busy_share(n, c) * 100.0)
                } else {
                    "-".into()
                }
            };
            let _ = writeln!(
                s,
                "| {} | {scheme} | {} | {} | {} | {} | {:.2} | {:.1} | {:.0} % |",
                bench.name(),
                share(0, 0),
                share(0, 1),
                share(1, 0),
                share(1, 1),
                m.semaphore_wait_ticks() as f64 / TICKS_PER_US as f64 / msgs as f64,
                m.handoffs() as f64 / msgs as f64,
                m.wire_share() * 100.0
            );
        }
    }
    s.push('\n');
    s
}

/// With one processor every scheme gives it every step, and takes no semaphore: the
/// base case, tick for tick.
pub fn one_processor_check(rows: &[Measurement]) -> String {
    let differing: Vec<String> = rows
        .iter()
        .filter(|m| m.setup.cpus == 1 && m.setup.scheme != Scheme::Base)
        .filter(|m| {
            let base = Setup {
                scheme: Scheme::Base,
                cpus: 1,
            };
            find(rows, base, m.bench, m.bytes).is_some_and(|b| {
                (b.ticks, &b.nics, b.messages_verified) != (m.ticks, &m.nics, m.messages_verified)
            })
        })
        .map(|m| format!("{} {} {}", m.setup.scheme, m.bench.name(), m.bytes))
        .collect();
    if differing.is_empty() {
        "With one processor per NIC, SO, RO, DSR and SR run exactly as the base case: every \
         step on that processor, no semaphore, every counter equal.\n\n"
            .into()
    } else {
        format!(
            "With one processor some schemes differ from the base case: {} (a bug: with one \
             processor every step runs on it).\n\n",
            differing.join(", ")
        )
    }
}

/// The chosen values, one at a time: the headline figures at each value.
fn sensitivity(t: &TigonResults, defaults: &TigonSection) -> String {
    let mut s = String::from(
        "### Sensitivity to the values the paper does not give\n\nOne value varied at a \
         time, the rest as chosen; each scheme as in the table above. Bandwidths at 64 kB \
         (Mbit/s), latency at 10 B (us) and the latency cuts (%).\n\n",
    );
    let keys: Vec<&str> = {
        let mut k: Vec<&str> = t.sensitivity.iter().map(|(v, _)| v.key).collect();
        k.dedup();
        k
    };
    for key in keys {
        let sweep: Vec<&(Variation, Vec<Measurement>)> =
            t.sensitivity.iter().filter(|(v, _)| v.key == key).collect();
        let Some((first, _)) = sweep.first() else {
            continue;
        };
        let _ = writeln!(
            s,
            "`{}`:\n\n| value | base uni | RO uni | base bi | SO bi | best bi | base lat | RO \
             cut 10 B | DSR cut 10 B | RO cut 14 kB |\n|---|---:|---:|---:|---:|---|---:|---:|\
             ---:|---:|",
            first.name()
        );
        for (v, rows) in sweep {
            let chosen = is_default(v, defaults);
            let _ = writeln!(s, "{}", sensitivity_row(v, rows, chosen));
        }
        s.push('\n');
    }
    s
}

fn is_default(v: &Variation, d: &TigonSection) -> bool {
    let now = match v.key {
        "ack_group_frames" => d.ack_group_frames as f64,
        "classify_share" => d.classify_share,
        "event_post_cycles" => d.event_post_cycles as f64,
        "dma_read_ns" => d.dma_read_ns,
        _ => f64::NAN,
    };
    now == v.value
}

fn sensitivity_row(v: &Variation, rows: &[Measurement], chosen: bool) -> String {
    let [(_, small), (_, mid), (uni, big), (bi, _)] = PROBES;
    let bw = |scheme, bench| {
        find(rows, paper_setup(scheme), bench, big)
            .map_or("-".into(), |m| format!("{:.0}", m.bandwidth_mbit()))
    };
    let cut =
        |scheme, bytes| latency_cut(rows, scheme, bytes).map_or("-".into(), |c| format!("{c:+.1}"));
    let best = Scheme::ALL
        .into_iter()
        .filter_map(|k| find(rows, paper_setup(k), bi, big).map(|m| (m.bandwidth_mbit(), k)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or("-".into(), |(_, k)| k.to_string());
    format!(
        "| {}{} | {} | {} | {} | {} | {best} | {} | {} | {} | {} |",
        v.value,
        if chosen { " (chosen)" } else { "" },
        bw(Scheme::Base, uni),
        bw(Scheme::Ro, uni),
        bw(Scheme::Base, bi),
        bw(Scheme::So, bi),
        latency(rows, Scheme::Base, small).map_or("-".into(), |l| format!("{l:.2}")),
        cut(Scheme::Ro, small),
        cut(Scheme::Dsr, small),
        cut(Scheme::Ro, mid),
    )
}

/// The testbed's section of report.md. `params` are the `[tigon]` keys with their values
/// and descriptions.
pub fn section(t: &TigonResults, quick: bool, params: &[(String, String, String)]) -> String {
    let mut s = String::from("## On the paper's testbed: two Tigon2 NICs running EMP\n\n");
    let _ = writeln!(
        s,
        "{} runs of the paper's tests ({} iterations each; the sensitivity runs {}), \
         {} messages checked byte for byte at their receivers; host time {:.1} s. The wire \
         carries at most {:.1} Mbit/s of payload ({}-byte frames, {} bytes of EMP header, \
         Ethernet's framing).\n",
        t.runs(),
        t.rows.first().map_or(0, |m| m.iterations),
        t.sensitivity
            .first()
            .and_then(|(_, r)| r.first())
            .map_or(0, |m| m.iterations),
        t.messages_verified(),
        t.host_seconds,
        t.cfg.wire_limit_mbit(),
        t.cfg.mtu_bytes,
        t.cfg.emp_header_bytes,
    );
    s.push_str("The testbed's values (`[tigon]`, each the paper's or a named choice):\n\n");
    for (key, value, doc) in params {
        let _ = writeln!(s, "- `{key} = {value}`: {doc}");
    }
    s.push('\n');
    s.push_str(&beside_the_paper(t));
    s.push_str(&tables(t, quick));
    s.push_str(&time_goes(t, quick));
    s.push_str(&one_processor_check(&t.rows));
    s.push_str(&sensitivity(t, &t.cfg));
    s
}
