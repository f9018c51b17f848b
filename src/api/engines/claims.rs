//! The multi-CPU NIC paper's claims, quoted as the paper words them, each checked on the
//! paper's testbed and in the MOPED transplant (at one and at two active copies, the same
//! for every scheme), by one reading of the claim for both hosts.

use std::fmt::Write;

use super::tigon::paper_setup;
use super::tigon::TigonResults;
use super::tigon_report::{find, latency, measured, peak};
use super::{Bench as CmpBench, Row, Variant};
use crate::moped::engines::Scheme;
use crate::tigon::Bench;

/// One host's figures as the claims read them: bandwidth peaks and latencies, in the
/// host's own units (the claims compare schemes, never units).
trait Figures {
    fn name(&self) -> String;
    /// `scheme`'s highest bandwidth over the sizes of `bench`.
    fn bandwidth(&self, scheme: Scheme, bench: Bench) -> Option<f64>;
    fn latency(&self, scheme: Scheme, bytes: u64) -> Option<f64>;
    /// Share of its limit the wire carried at that peak, where the host has a wire.
    fn wire_share(&self, scheme: Scheme, bench: Bench) -> Option<f64>;
    /// What bounds `scheme` on `bench`, measured: at `bytes`, or at its peak.
    fn measured(&self, scheme: Scheme, bench: Bench, bytes: Option<u64>) -> String;
}

struct Testbed<'a>(&'a TigonResults);

impl Figures for Testbed<'_> {
    fn name(&self) -> String {
        "testbed".into()
    }

    fn bandwidth(&self, scheme: Scheme, bench: Bench) -> Option<f64> {
        peak(&self.0.rows, scheme, bench).map(|m| m.bandwidth_mbit())
    }

    fn latency(&self, scheme: Scheme, bytes: u64) -> Option<f64> {
        latency(&self.0.rows, scheme, bytes)
    }

    fn wire_share(&self, scheme: Scheme, bench: Bench) -> Option<f64> {
        let m = peak(&self.0.rows, scheme, bench)?;
        Some(m.bandwidth_mbit() / self.0.cfg.wire_limit_mbit())
    }

    fn measured(&self, scheme: Scheme, bench: Bench, bytes: Option<u64>) -> String {
        let m = match bytes {
            Some(b) => find(&self.0.rows, paper_setup(scheme), bench, b),
            None => peak(&self.0.rows, scheme, bench),
        };
        m.map_or_else(String::new, measured)
    }
}

/// The transplant at `active` copies: two engines against the base case's one.
struct Cmp<'a> {
    rows: &'a [Row],
    active: usize,
}

impl Cmp<'_> {
    fn variant(&self, scheme: Scheme) -> Variant {
        let engines = if scheme == Scheme::Base { 1 } else { 2 };
        Variant {
            scheme,
            engines,
            active: self.active,
        }
    }

    fn bench(bench: Bench) -> CmpBench {
        match bench {
            Bench::Latency => CmpBench::Pingpong,
            Bench::Unidirectional => CmpBench::Uniband,
            Bench::Bidirectional => CmpBench::Biband,
        }
    }

    /// `scheme`'s row on `bench` at `bytes`.
    fn row(&self, scheme: Scheme, bench: Bench, bytes: u64) -> Option<&Row> {
        let v = self.variant(scheme);
        self.rows.iter().find(|r| {
            r.variant == v && r.point.bench == Self::bench(bench) && r.point.bytes == bytes
        })
    }

    fn peak(&self, scheme: Scheme, bench: Bench) -> Option<&Row> {
        let v = self.variant(scheme);
        self.rows
            .iter()
            .filter(|r| r.variant == v && r.point.bench == Self::bench(bench))
            .max_by(|a, b| {
                a.bandwidth_bytes_per_cycle
                    .total_cmp(&b.bandwidth_bytes_per_cycle)
            })
    }
}

impl Figures for Cmp<'_> {
    fn name(&self) -> String {
        let copies = if self.active == 1 { "copy" } else { "copies" };
        format!("CMP, {} active {copies}", self.active)
    }

    fn bandwidth(&self, scheme: Scheme, bench: Bench) -> Option<f64> {
        self.peak(scheme, bench)
            .map(|r| r.bandwidth_bytes_per_cycle)
    }

    fn latency(&self, scheme: Scheme, bytes: u64) -> Option<f64> {
        self.row(scheme, Bench::Latency, bytes)
            .map(|r| r.latency_cycles)
    }
    fn wire_share(&self, _: Scheme, _: Bench) -> Option<f64> {
        None
    }

    fn measured(&self, scheme: Scheme, bench: Bench, bytes: Option<u64>) -> String {
        let row = match bytes {
            Some(b) => self.row(scheme, bench, b),
            None => self.peak(scheme, bench),
        };
        row.map_or_else(String::new, super::report::bound)
    }
}

/// A claim's verdict on one host, with the figures it rests on.
struct Verdict {
    holds: bool,
    text: String,
}

fn gain(f: &dyn Figures, scheme: Scheme, bench: Bench) -> Option<f64> {
    let (s, b) = (
        f.bandwidth(scheme, bench)?,
        f.bandwidth(Scheme::Base, bench)?,
    );
    (b > 0.0).then(|| (s / b - 1.0) * 100.0)
}

fn cut(f: &dyn Figures, scheme: Scheme, bytes: u64) -> Option<f64> {
    let (s, b) = (f.latency(scheme, bytes)?, f.latency(Scheme::Base, bytes)?);
    (b > 0.0).then(|| (1.0 - s / b) * 100.0)
}

/// The best two-processor scheme on `bench`, and its bandwidth.
fn best(f: &dyn Figures, bench: Bench) -> Option<(Scheme, f64)> {
    Scheme::ALL
        .into_iter()
        .filter(|&k| k != Scheme::Base)
        .filter_map(|k| f.bandwidth(k, bench).map(|b| (k, b)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Below this spread of the schemes' peaks (1 %) a bandwidth claim cannot tell them apart.
const TIE: f64 = 0.01;

/// How far apart the schemes' peaks on `bench` are: the highest over the lowest, less 1.
fn spread(f: &dyn Figures, bench: Bench) -> Option<f64> {
    let peaks: Vec<f64> = Scheme::ALL
        .into_iter()
        .filter_map(|k| f.bandwidth(k, bench))
        .collect();
    let lo = peaks.iter().copied().reduce(f64::min)?;
    let hi = peaks.iter().copied().reduce(f64::max)?;
    (peaks.len() > 1 && lo > 0.0).then(|| hi / lo - 1.0)
}

/// Whether `scheme` is the best on `bench`, within 1 %.
fn is_best(f: &dyn Figures, scheme: Scheme, bench: Bench) -> Option<Verdict> {
    let (top, b) = best(f, bench)?;
    let own = f.bandwidth(scheme, bench)?;
    Some(Verdict {
        holds: own >= 0.99 * b,
        text: format!(
            "{scheme} {:+.1} % over the base case, the best {top} {:+.1} %",
            gain(f, scheme, bench)?,
            gain(f, top, bench)?
        ),
    })
}

/// One claim: its words, where the paper makes it, and its reading.
struct Claim {
    quote: &'static str,
    place: &'static str,
    /// What the reading tests, in words.
    reading: &'static str,
    check: fn(&dyn Figures) -> Option<Verdict>,
    /// The schemes, test and size (or each scheme's peak) whose measured state explains a
    /// failure.
    cause: (&'static [Scheme], Bench, Option<u64>),
}

const CLAIMS: [Claim; 9] = [
    Claim {
        quote: "parallelizing the receive path can deliver 964 Mbps of bandwidth, close to \
                the maximum achievable on Gigabit Ethernet",
        place: "abstract",
        reading: "RO's unidirectional peak over the base case's within 5 points of 964 over \
                  840 (+14.8 %), and where there is a wire, at least 97 % of its limit",
        check: |f| {
            let g = gain(f, Scheme::Ro, Bench::Unidirectional)?;
            let wire = f.wire_share(Scheme::Ro, Bench::Unidirectional);
            let full = wire.map_or(true, |w| w >= 0.97);
            let at = wire.map_or(String::new(), |w| {
                format!(", {:.1} % of the wire's limit", w * 100.0)
            });
            Some(Verdict {
                holds: (g - 14.8).abs() <= 5.0 && full,
                text: format!("RO {g:+.1} % over the base case{at}"),
            })
        },
        cause: (&[Scheme::Base, Scheme::Ro], Bench::Unidirectional, None),
    },
    Claim {
        quote: "The best results were obtained with the RO scheme for unidirectional traffic",
        place: "section 1",
        reading: "RO's unidirectional peak within 1 % of the best scheme's",
        check: |f| is_best(f, Scheme::Ro, Bench::Unidirectional),
        cause: (&[Scheme::Ro], Bench::Unidirectional, None),
    },
    Claim {
        quote: "The unidirectional bandwidth (Figure 1) is the same as in the base case.",
        place: "section 6.2, SO",
        reading: "SO's unidirectional peak within 2 % of the base case's",
        check: |f| {
            let g = gain(f, Scheme::So, Bench::Unidirectional)?;
            Some(Verdict {
                holds: g.abs() <= 2.0,
                text: format!("SO {g:+.1} %"),
            })
        },
        cause: (&[Scheme::Base, Scheme::So], Bench::Unidirectional, None),
    },
    Claim {
        quote: "The unidirectional bandwidth (Figure 1) is marginally better than the base \
                case.",
        place: "section 6.2, DSR",
        reading: "DSR's unidirectional peak above the base case's by more than 0 and at most \
                  5 %",
        check: |f| {
            let g = gain(f, Scheme::Dsr, Bench::Unidirectional)?;
            Some(Verdict {
                holds: g > 0.0 && g <= 5.0,
                text: format!("DSR {g:+.1} %"),
            })
        },
        cause: (&[Scheme::Base, Scheme::Dsr], Bench::Unidirectional, None),
    },
    Claim {
        quote: "This alternative gives the best unidirectional bandwidth, allowing almost \
                complete utilization of what is physically available.",
        place: "section 6.2, SR",
        reading: "SR's unidirectional peak within 1 % of the best scheme's, and where there is \
                  a wire, at least 97 % of its limit",
        check: |f| {
            let mut v = is_best(f, Scheme::Sr, Bench::Unidirectional)?;
            if let Some(w) = f.wire_share(Scheme::Sr, Bench::Unidirectional) {
                v.holds &= w >= 0.97;
                let _ = write!(v.text, ", {:.1} % of the wire's limit", w * 100.0);
            }
            Some(v)
        },
        cause: (&[Scheme::Sr], Bench::Unidirectional, None),
    },
    Claim {
        quote: "For bidirectional traffic the best results were achieved with the SO scheme \
                where the total bandwidth peaked at 1100 Mbps as compared to 940 Mbps in the \
                base case, a gain of 17%.",
        place: "section 1",
        reading: "SO's bidirectional peak within 1 % of the best scheme's, and its gain over \
                  the base case within 5 points of 17 %",
        check: |f| {
            let mut v = is_best(f, Scheme::So, Bench::Bidirectional)?;
            let g = gain(f, Scheme::So, Bench::Bidirectional)?;
            v.holds &= (g - 17.0).abs() <= 5.0;
            Some(v)
        },
        cause: (&[Scheme::So, Scheme::Sr], Bench::Bidirectional, None),
    },
    Claim {
        quote: "For 10-byte messages we obtained a gain of about 7%.",
        place: "section 6.2, RO",
        reading: "RO's latency at 10 B below the base case's by 7 %, within 2 points",
        check: |f| {
            let c = cut(f, Scheme::Ro, 10)?;
            Some(Verdict {
                holds: (c - 7.0).abs() <= 2.0,
                text: format!("RO {c:.1} % less"),
            })
        },
        cause: (&[Scheme::Base, Scheme::Ro], Bench::Latency, Some(10)),
    },
    Claim {
        quote: "For a message size of 14 kB we were able to achieve a latency improvement of \
                about 8.3%, indicating that the rate of latency improvement increases with \
                increasing message size.",
        place: "section 6.2, RO",
        reading: "RO's latency at 14 kB below the base case's by 8.3 %, within 2 points, and \
                  by more than at 10 B",
        check: |f| {
            let (c, small) = (cut(f, Scheme::Ro, 14 * 1024)?, cut(f, Scheme::Ro, 10)?);
            Some(Verdict {
                holds: (c - 8.3).abs() <= 2.0 && c > small,
                text: format!("RO {c:.1} % less at 14 kB, {small:.1} % at 10 B"),
            })
        },
        cause: (&[Scheme::Base, Scheme::Ro], Bench::Latency, Some(14 * 1024)),
    },
    Claim {
        quote: "For a 10-byte message, we get a latency improvement of 6%.",
        place: "section 6.2, DSR",
        reading: "DSR's latency at 10 B below the base case's by 6 %, within 2 points",
        check: |f| {
            let c = cut(f, Scheme::Dsr, 10)?;
            Some(Verdict {
                holds: (c - 6.0).abs() <= 2.0,
                text: format!("DSR {c:.1} % less"),
            })
        },
        cause: (&[Scheme::Base, Scheme::Dsr], Bench::Latency, Some(10)),
    },
];

/// The claims section: every claim quoted, its reading, and its verdict on each host
/// there are figures for, with the measured state behind a failure.
pub fn section(testbed: Option<&TigonResults>, cmp: &[Row]) -> String {
    let mut hosts: Vec<Box<dyn Figures + '_>> = Vec::new();
    if let Some(t) = testbed {
        hosts.push(Box::new(Testbed(t)));
    }
    for active in [1, 2] {
        if cmp.iter().any(|r| r.variant.active == active) {
            hosts.push(Box::new(Cmp { rows: cmp, active }));
        }
    }
    let mut s = String::from(
        "## The paper's claims, checked on both hosts\n\nEach claim as the paper words it, the \
         reading that checks it, and its verdict on the testbed and in the transplant (two \
         engines against the base case's one, every scheme at the same number of active \
         copies). Bandwidths are peaks over the sizes, latencies half round trips; where every \
         scheme's peak is within 1 % of the others', a bandwidth claim cannot tell them \
         apart and says so.\n\n",
    );
    for c in &CLAIMS {
        let _ = writeln!(
            s,
            "- \"{}\" ({}). Reading: {}.",
            c.quote, c.place, c.reading
        );
        for h in &hosts {
            let (schemes, bench, bytes) = c.cause;
            let tie = (bench != Bench::Latency)
                .then(|| spread(h.as_ref(), bench))
                .flatten()
                .filter(|&d| d < TIE);
            let line = match (c.check)(h.as_ref()) {
                None => "not measured (the runs it needs were not made)".to_string(),
                Some(v) if tie.is_some() => format!(
                    "cannot tell: at their peaks every scheme is within {:.1} % of the others, \
                     so the schemes are not told apart ({}); measured: base: {}",
                    tie.unwrap_or(0.0) * 100.0,
                    v.text,
                    h.measured(Scheme::Base, bench, None)
                ),
                Some(v) if v.holds => format!("holds: {}", v.text),
                Some(v) => {
                    let why: Vec<String> = schemes
                        .iter()
                        .map(|&k| format!("{k}: {}", h.measured(k, bench, bytes)))
                        .collect();
                    format!(
                        "**does not hold**: {}; measured: {}",
                        v.text,
                        why.join("; ")
                    )
                }
            };
            let _ = writeln!(s, "  - {}: {line}.", h.name());
        }
    }
    s.push('\n');
    s
}
