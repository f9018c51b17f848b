//! `moped lhs`'s report.md: a like-for-like comparison first, then the paper's claims one
//! by one (each quoted, beside ours, within 25 % or with its measured cause), then the
//! tables behind its Figs. 4 to 6 and the counters per message searched.

use std::fmt::Write;

use super::{
    Condition, Host, Lhs, LhsOptions, ALPU, ALPU_CELLS, FIG5, FIG6, MAPPINGS_D2, N, WITHOUT,
};
use crate::api::lhs_csv::LhsRow;

/// The paper's numbers (section 4.2): the speed-up with LHS on DIMMnet-2, its time per
/// message searched, and the part the memory organisation explains (about 600 ns through
/// VL commands against about 100 ns for the LH buffer).
pub const PAPER_SPEEDUP: f64 = 14.3;
pub const PAPER_NS: f64 = 44.4;
pub const PAPER_LAYOUT: f64 = 6.0;
/// The depth past which the paper's ALPU (128 cells, 500 MHz) searches slower than the
/// emulated DIMMnet-3 with LHS ("more than 600").
pub const PAPER_CROSSOVER: f64 = 600.0;
/// How far ours may be from the paper's before a measured cause is due.
pub const TOLERANCE: f64 = 0.25;

/// Two searches that differ in one factor only: same host, the same hardware and software
/// prefetch, the same depth and position. What a report leads with.
#[derive(Clone, Copy, Debug)]
pub struct Comparison<'a> {
    pub slow: &'a LhsRow,
    pub fast: &'a LhsRow,
}

impl<'a> Comparison<'a> {
    /// The pair, if it is like for like.
    pub fn new(slow: &'a LhsRow, fast: &'a LhsRow) -> Option<Comparison<'a>> {
        let same = slow.setting.name == fast.setting.name
            && slow.prefetch == fast.prefetch
            && slow.setting.sw_prefetch == fast.setting.sw_prefetch
            && (slow.depth, slow.position) == (fast.depth, fast.position);
        same.then_some(Comparison { slow, fast })
    }

    /// How many times faster `fast` searches, per entry passed over.
    pub fn ratio(&self) -> Option<f64> {
        let (s, f) = (self.slow.per_entry()?, self.fast.per_entry()?);
        (f > 0.0).then(|| s / f)
    }
}

/// The row of `c` searching for the `x`-th of `d`.
fn row<'a>(rows: &'a [LhsRow], c: &Condition, d: u32, x: u32) -> Option<&'a LhsRow> {
    rows.iter().find(|r| {
        r.setting.name == c.host.name()
            && r.setting.condition == c.label
            && (r.depth, r.position) == (d, x)
    })
}

/// The depth the paper's conditions ran at: its 1,024, or less in a quick run.
fn n_of(rows: &[LhsRow]) -> u32 {
    let c = FIG5[1];
    if row(rows, &c, N, N).is_some() {
        N
    } else {
        rows.iter()
            .filter(|r| r.setting.condition == c.label)
            .map(|r| r.depth)
            .max()
            .unwrap_or(N)
    }
}

/// ns per message searched of `c` at the paper's depth.
fn ns(rows: &[LhsRow], c: &Condition) -> Option<f64> {
    let n = n_of(rows);
    row(rows, c, n, n)?.ns_per_entry()
}

/// The report's headline: DIMMnet-2 without LHS against with LHS, the hardware
/// prefetcher on both sides (the paper's machines' default), at the paper's depth.
pub fn headline(rows: &[LhsRow]) -> Option<Comparison<'_>> {
    let n = n_of(rows);
    Comparison::new(row(rows, &WITHOUT[0], n, n)?, row(rows, &FIG5[1], n, n)?)
}

fn f1(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

fn fx(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}x"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Whether `ours` is within the tolerance of `paper`, in words.
fn verdict(ours: Option<f64>, paper: f64) -> String {
    match ours {
        Some(v) => {
            let off = v / paper - 1.0;
            let word = if off.abs() <= TOLERANCE {
                "within 25 %"
            } else {
                "off by more than 25 %"
            };
            format!("{word} ({:+.1} %)", 100.0 * off)
        }
        None => "not measured".into(),
    }
}

/// report.md.
pub fn report(l: &Lhs, opts: &LhsOptions) -> String {
    let rows = &l.rows;
    let mut s = String::from("# The LHS paper in its own setting\n\n");
    s.push_str(&lead(rows));
    s.push_str(&claims(l));
    s.push_str(&fig4(rows));
    s.push_str(&fig5(rows));
    s.push_str(&fig6(rows));
    s.push_str(&counters(rows));
    s.push_str(&setting_notes(l, opts));
    s
}

/// The like-for-like comparison, first.
fn lead(rows: &[LhsRow]) -> String {
    let Some(h) = headline(rows) else {
        return "The like-for-like comparison did not run.\n\n".into();
    };
    let n = h.slow.depth;
    format!(
        "Like for like first. On DIMMnet-2 (Table 2's Pentium 4 with its hardware \
         prefetcher on, as in every comparison the paper makes), N = {n} messages wait and \
         the receive takes the {n}th: without LHS the search takes {} ns per message \
         searched, with LHS {} ns: **{} faster** (the paper: {PAPER_SPEEDUP}x, 635 ns \
         against {PAPER_NS} ns). Both sides run the same host, prefetcher, software and \
         search; only where the envelopes sit differs.\n\n",
        f1(h.slow.ns_per_entry()),
        f1(h.fast.ns_per_entry()),
        fx(h.ratio()),
    )
}

/// The paper's claims, quoted, each beside ours.
fn claims(l: &Lhs) -> String {
    let rows = &l.rows;
    let mut s = String::from("## The paper's claims\n\n");
    let speedup = headline(rows).and_then(|h| h.ratio());
    let _ = writeln!(
        s,
        "- \"Using LHS on DIMMnet-2, acceleration ratio of time for searching unexpected \
         message queue is 14.3\": ours {}, {}.",
        fx(speedup),
        verdict(speedup, PAPER_SPEEDUP)
    );
    let lhs = ns(rows, &FIG5[1]);
    let _ = writeln!(
        s,
        "- \"44.4ns per message for searching unexpected message queue is needed on \
         DIMMnet-2 with LHS\": ours {} ns, {}.",
        f1(lhs),
        verdict(lhs, PAPER_NS)
    );
    let layout = ratio(ns(rows, &WITHOUT[1]), ns(rows, &FIG5[0]));
    let _ = writeln!(
        s,
        "- \"acceleration ratio caused by the special memory organization is about 6\": \
         with the hardware prefetcher off on both sides, so that only where the envelopes \
         sit changes, ours {}, {}.",
        fx(layout),
        verdict(layout, PAPER_LAYOUT)
    );
    let caching = ratio(ns(rows, &FIG5[0]), lhs);
    let _ = writeln!(
        s,
        "- \"The remaining acceleration is caused by the effects of caching and \
         prefetching\" ({PAPER_SPEEDUP} / {PAPER_LAYOUT} = {:.2}x): LHS with the hardware \
         prefetcher against LHS without it, ours {}, {}. The two factors multiply to {} \
         (a product of two changes, not a measurement of one).",
        PAPER_SPEEDUP / PAPER_LAYOUT,
        fx(caching),
        verdict(caching, PAPER_SPEEDUP / PAPER_LAYOUT),
        fx(layout.zip(caching).map(|(a, b)| a * b)),
    );
    s.push_str(&best_prefetch(rows));
    s.push_str(&fig6_claims(l));
    s.push_str(&alpu_claims(l));
    s.push('\n');
    s
}

/// Fig. 5's best condition.
fn best_prefetch(rows: &[LhsRow]) -> String {
    let measured: Vec<(&Condition, f64)> = FIG5
        .iter()
        .filter_map(|c| Some((c, ns(rows, c)?)))
        .collect();
    let Some(best) = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
        return String::new();
    };
    let holds = best.0.label == FIG5[1].label;
    let two = ns(rows, &FIG5[1]);
    let mut s = format!(
        "- \"For DIMMnet-2, condition (2) which uses only hardware prefetcher was best\": \
         {}; the fastest here is {} ({}) at {:.1} ns against condition 2's {} ns.",
        if holds { "holds" } else { "does not hold" },
        best.0.label,
        best.0.describe(),
        best.1,
        f1(two)
    );
    if !holds {
        let _ = write!(
            s,
            " Cause: {}.",
            prefetch_cause(rows, best.0).unwrap_or_else(|| "the counters are missing".into())
        );
    }
    s.push('\n');
    s
}

/// Why `c` beat condition 2: the counters per message searched of both.
fn prefetch_cause(rows: &[LhsRow], c: &Condition) -> Option<String> {
    let n = n_of(rows);
    let (a, b) = (row(rows, c, n, n)?, row(rows, &FIG5[1], n, n)?);
    let per = |r: &LhsRow, f: fn(&LhsRow) -> u64| r.counter_per_entry(rows, f);
    let misses = per(b, |r| r.l1_misses)?;
    Some(format!(
        "condition 2's loads miss the L1 {} times per message searched, {:.1} in every 4 KiB \
         page of 64 entries: the hardware prefetcher starts a stream only after two misses \
         in a page and never crosses into the next, so each page begins with misses of \
         the full memory latency; {} misses {} times per message ({} software prefetches \
         per message), its prefetches running {} bytes ahead whatever the page",
        f2(Some(misses)),
        misses * 64.0,
        c.label,
        f2(per(a, |r| r.l1_misses)),
        f2(per(a, |r| r.sw_prefetches)),
        c.swp.unwrap_or(0),
    ))
}

fn f2(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// Fig. 6's claims on the emulated DIMMnet-3.
fn fig6_claims(l: &Lhs) -> String {
    let rows = &l.rows;
    let [uc, off, on, forced, _] = FIG6.map(|c| ns(rows, &c));
    let near = |a: Option<f64>| ratio(a, forced);
    let small = |r: Option<f64>| r.is_some_and(|r| r <= 1.0 + TOLERANCE);
    let holds = small(near(off)) && small(near(on));
    let mut s = format!(
        "- \"For DIMMnet-3, performances in condition (2) and (3) do not have big difference \
         from that in condition (4) in which all access for LH buffer is forced on cache\": \
         {} (taking a big difference as more than 25 %): (2) {} ns and (3) {} ns per \
         message against (4)'s {} ns, {} and {} of it.",
        if holds { "holds" } else { "does not hold" },
        f1(off),
        f1(on),
        f1(forced),
        fx(near(off)),
        fx(near(on)),
    );
    if !holds {
        s.push_str(&format!(" Cause: {}.", forced_cause(rows)));
    }
    let cached = ratio(uc, on);
    let _ = writeln!(
        s,
        "\n- \"The difference between cache-enabling or not is very big\": uncacheable {} ns \
         against write-back with the prefetcher {} ns, {} ({}).",
        f1(uc),
        f1(on),
        fx(cached),
        if cached.is_some_and(|r| r > 2.0) {
            "holds"
        } else {
            "does not hold"
        }
    );
    let d2 = ratio(ns(rows, &FIG5[0]), ns(rows, &FIG5[1]));
    let d3 = ratio(off, on);
    let _ = writeln!(
        s,
        "- \"Since DIMMnet-2 does not have enough host interface bandwidth, sensitivity of \
         the setting of prefetching is bigger\" than DIMMnet-3's: the hardware prefetcher \
         speeds DIMMnet-2's search by {} and DIMMnet-3's by {} ({}).",
        fx(d2),
        fx(d3),
        if d2.zip(d3).is_some_and(|(a, b)| a > b) {
            "holds".to_string()
        } else {
            format!("does not hold. Cause: {}", sensitivity_cause(l, forced))
        }
    );
    s
}

/// What bounds each host's prefetched stream: its bus, or the prefetcher's lead.
fn sensitivity_cause(l: &Lhs, forced: Option<f64>) -> String {
    let bound = |h: Host| -> Option<(f64, f64, f64)> {
        let (_, cfg, mem) = l.hosts.iter().find(|x| x.0 == h)?;
        let bus = cfg.memory.channel_cycles as f64 / cfg.system.core_ghz;
        let lead = cfg.l1.prefetch_degree() as f64;
        Some((bus, mem / lead, *mem))
    };
    let (Some(d2), Some(d3)) = (bound(Host::Dimmnet2), bound(Host::Dimmnet3)) else {
        return "the hosts' configurations are missing".into();
    };
    let on = |c: &Condition| f1(ns(&l.rows, c));
    format!(
        "with the prefetcher, DIMMnet-2's search takes {} ns a message, about its bus's \
         {:.0} ns a line, and DIMMnet-3's {} ns, about the {:.0} ns the prefetcher's lead \
         of {} lines hides of a {:.0} ns load, well above its bus's {:.0} ns: the prefetcher \
         gains more where the bus is faster. The paper's DIMMnet-3 search was bounded by \
         its host's loop instead (section 4.3), which costs {} ns a message here when every \
         line is cached",
        on(&FIG5[1]),
        d2.0,
        on(&FIG6[2]),
        d3.1,
        l.hosts
            .iter()
            .find(|x| x.0 == Host::Dimmnet3)
            .map_or(0, |x| x.1.l1.prefetch_degree()),
        d3.2,
        d3.0,
        f1(forced),
    )
}

/// Why forced caching is faster here than the paper saw.
fn forced_cause(rows: &[LhsRow]) -> String {
    let n = n_of(rows);
    let get = |c: &Condition| row(rows, c, n, n);
    let (Some(forced), Some(on)) = (get(&FIG6[3]), get(&FIG6[2])) else {
        return "the counters are missing".into();
    };
    let per = |r: &LhsRow, f: fn(&LhsRow) -> u64| f2(r.counter_per_entry(rows, f));
    format!(
        "forced on cache, the search finds the lines the progress engine read as each \
         message arrived (to match it against the posted receives) still in the caches: \
         {} L1 misses and {} L2 hits per message, against {} L1 misses, {} prefetches hit \
         and {} flushes with the flushes on; the host's loop is one 8-byte load and a \
         compare per entry here, where the paper's copies each 16-byte envelope to main \
         memory and compares three integers, so a cached search costs the paper's host far \
         more (its Pentium D is the bottleneck, section 4.3)",
        per(forced, |r| r.l1_misses),
        per(forced, |r| r.l2_hits),
        per(on, |r| r.l1_misses),
        per(on, |r| r.prefetches_useful),
        per(on, |r| r.flushes),
    )
}

/// The receive's whole time in ns for the `d`-th of `d` under `c`.
fn receive_ns(rows: &[LhsRow], c: &Condition, d: u32) -> Option<f64> {
    let r = row(rows, c, d, d)?;
    Some(r.cycles as f64 / r.setting.core_ghz)
}

/// The depths swept, ascending.
fn swept_depths(rows: &[LhsRow]) -> Vec<u32> {
    let mut d: Vec<u32> = rows
        .iter()
        .filter(|r| r.setting.condition == FIG5[1].label && r.position == r.depth)
        .map(|r| r.depth)
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// Where `alpu`'s receive is faster than `lhs`'s: from the depth where it first becomes
/// faster to the depth past which it stays slower, each linear between the swept depths
/// that bracket it (`None` for a bound the sweep does not reach: faster from the start, or
/// to the end); `None` where the ALPU is never faster.
#[allow(clippy::type_complexity)]
fn faster_range(
    rows: &[LhsRow],
    alpu: &Condition,
    lhs: &Condition,
) -> Option<(Option<f64>, Option<f64>)> {
    let gap = |d: u32| Some(receive_ns(rows, alpu, d)? - receive_ns(rows, lhs, d)?);
    let p: Vec<(f64, f64)> = swept_depths(rows)
        .into_iter()
        .filter_map(|d| Some((f64::from(d), gap(d)?)))
        .collect();
    let first = p.iter().position(|x| x.1 < 0.0)?;
    let last = p.iter().rposition(|x| x.1 < 0.0)?;
    let cross = |(d0, g0): (f64, f64), (d1, g1): (f64, f64)| d0 + (d1 - d0) * g0 / (g0 - g1);
    let from = (first > 0).then(|| cross(p[first - 1], p[first]));
    let to = p.get(last + 1).map(|&next| cross(p[last], next));
    Some((from, to))
}

/// ns of `c`'s receive at depth `d` between the swept depths (linear).
fn receive_at(rows: &[LhsRow], c: &Condition, d: f64) -> Option<f64> {
    let ds = swept_depths(rows);
    let w = ds
        .windows(2)
        .find(|w| f64::from(w[0]) <= d && d <= f64::from(w[1]))?;
    let (a, b) = (receive_ns(rows, c, w[0])?, receive_ns(rows, c, w[1])?);
    let t = (d - f64::from(w[0])) / f64::from(w[1] - w[0]);
    Some(a + t * (b - a))
}

/// The ALPU claims: faster than DIMMnet-2's LHS, slower than DIMMnet-3's past about 600.
fn alpu_claims(l: &Lhs) -> String {
    let rows = &l.rows;
    let mut s = String::new();
    let range = |alpu: &Condition, lhs: &Condition| match faster_range(rows, alpu, lhs) {
        None => "the ALPU is slower at every depth swept".to_string(),
        Some((from, to)) => format!(
            "the ALPU is faster {} {}",
            from.map_or("from the shallowest search".into(), |d| format!(
                "from a depth of {d:.0}"
            )),
            to.map_or("to the deepest swept".into(), |d| format!(
                "up to {d:.0}, slower beyond"
            )),
        ),
    };
    let always = faster_range(rows, &ALPU[0], &FIG5[1]) == Some((None, None));
    let _ = writeln!(
        s,
        "- \"500MHz ALPU with 128 cells always a little faster than 100MHz DIMMnet-2 with \
         LHS\": on DIMMnet-2's host path, {} ({}).",
        range(&ALPU[0], &FIG5[1]),
        if always { "holds" } else { "does not hold" }
    );
    let d3 = faster_range(rows, &ALPU[1], &FIG6[2]).and_then(|r| r.1);
    let _ = write!(
        s,
        "- \"When the depth on 500MHz ALPU with 128 cells becomes more than 600, it takes \
         more time than 200MHz DIMMnet-3\": on the emulated DIMMnet-3's host path, {}; \
         that depth {}.",
        range(&ALPU[1], &FIG6[2]),
        verdict(d3, PAPER_CROSSOVER)
    );
    if !always || !d3.is_some_and(|d| (d / PAPER_CROSSOVER - 1.0).abs() <= TOLERANCE) {
        let _ = write!(s, " Cause (of both): {}.", alpu_cause(l));
    }
    s.push('\n');
    s
}

/// What sets the crossover: the ALPU's overflow walk, a configured cost.
fn alpu_cause(l: &Lhs) -> String {
    let rows = &l.rows;
    let Some((_, cfg, _)) = l.hosts.iter().find(|h| h.0 == Host::Dimmnet3) else {
        return "the host's configuration is missing".into();
    };
    let cells = ALPU_CELLS as u32;
    let alpu = &cfg.moped.matching.alpu;
    let ns_per = alpu.walk_cycles as f64 * 1000.0 / alpu.nic_mhz;
    let within = receive_ns(rows, &ALPU[1], cells);
    let needed = within
        .zip(receive_at(rows, &FIG6[2], PAPER_CROSSOVER))
        .map(|(a, b)| (b - a) / (PAPER_CROSSOVER - f64::from(cells)));
    format!(
        "by construction: within its {cells} cells the ALPU answers in one cycle, and the \
         receive takes {} ns however deep the match (the host's posting of the receive, its \
         polls of the pairs' count and its loads of the pair, each a trip to the NIC, make \
         it slower than LHS on the shallowest searches); past them its NIC's processor walks \
         the overflow list at `moped.matching.alpu.walk_cycles` = {} cycles ({ns_per:.0} ns \
         at {} MHz) an element (Hemmert et al.: over three times its 10-cycle memory \
         latency per item), which sets where it falls behind. To fall behind DIMMnet-3's LHS at a depth of 600, the walk would take {} ns \
         an element",
        f1(within),
        alpu.walk_cycles,
        alpu.nic_mhz,
        f1(needed),
    )
}

/// Fig. 4's table: ns per message searched, and the receive's time, by depth.
fn fig4(rows: &[LhsRow]) -> String {
    let swept = super::swept();
    let mut s = String::from(
        "## Fig. 4: the search by depth\n\nns per message searched (the receive for the \
         d-th of d, less that for the first, over d - 1), and in brackets the receive's \
         whole time in µs:\n\n| depth | ",
    );
    let heads: Vec<String> = swept
        .iter()
        .map(|c| format!("{} {}", c.host.name(), c.label))
        .collect();
    let _ = writeln!(s, "{} |", heads.join(" | "));
    let _ = writeln!(s, "|---:|{}", "---:|".repeat(swept.len()));
    for d in swept_depths(rows).into_iter().filter(|&d| d > 1) {
        let cells: Vec<String> = swept
            .iter()
            .map(|c| match row(rows, c, d, d) {
                Some(r) => format!(
                    "{} ({:.1})",
                    f1(r.ns_per_entry()),
                    r.cycles as f64 / r.setting.core_ghz / 1000.0
                ),
                None => "-".into(),
            })
            .collect();
        let _ = writeln!(s, "| {d} | {} |", cells.join(" | "));
    }
    s.push('\n');
    for c in &swept {
        let _ = writeln!(s, "- {} {}: {}.", c.host.name(), c.label, c.describe());
    }
    s.push('\n');
    s
}

/// A table of conditions at the paper's depth, with their counters per message searched.
fn table(rows: &[LhsRow], title: &str, conds: &[Condition]) -> String {
    let n = n_of(rows);
    let mut s = format!(
        "## {title}\n\nN = {n}, the receive for the {n}th; per message searched: ns, L1 \
         misses, L2 hits, prefetched lines hit, software prefetches, flushes, VL commands, \
         uncached LH loads.\n\n| condition | what | ns | L1 misses | L2 hits | prefetches hit \
         | SW prefetches | flushes | VL | LH loads |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for c in conds {
        let Some(r) = row(rows, c, n, n) else {
            continue;
        };
        let per = |f: fn(&LhsRow) -> u64| f2(r.counter_per_entry(rows, f));
        let _ = writeln!(
            s,
            "| {} {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.host.name(),
            c.label,
            c.describe(),
            f1(r.ns_per_entry()),
            per(|r| r.l1_misses),
            per(|r| r.l2_hits),
            per(|r| r.prefetches_useful),
            per(|r| r.sw_prefetches),
            per(|r| r.flushes),
            per(|r| r.vl_commands),
            per(|r| r.lh_loads),
        );
    }
    s.push('\n');
    s
}

fn fig5(rows: &[LhsRow]) -> String {
    let conds: Vec<Condition> = FIG5.iter().chain(&WITHOUT).copied().collect();
    let mut s = table(rows, "Fig. 5: prefetching on DIMMnet-2", &conds);
    let (two, three) = (ns(rows, &FIG5[1]), ns(rows, &FIG5[2]));
    if ratio(three, two).is_some_and(|r| r > 1.0 + TOLERANCE) {
        s.push_str(
            "A software prefetch at offset 0 asks for the line the next load needs, so the \
             load waits for it as for a miss (the paper: \"Timing of prefetching is \
             late\"). With the hardware prefetcher on as well (condition 3), the loads then \
             never miss, and the prefetcher here is trained by demand misses (a choice: \
             Intel's manual says the Pentium 4's trains on misses of the last-level cache, \
             not whether a software prefetch's count), so it stops running ahead: \
             condition 3 is as slow as condition 4.\n\n",
        );
    }
    s
}

fn fig6(rows: &[LhsRow]) -> String {
    let conds: Vec<Condition> = FIG6.iter().chain(&MAPPINGS_D2).copied().collect();
    table(
        rows,
        "Fig. 6: the LH buffer's mapping (DIMMnet-3, and DIMMnet-2 beside it)",
        &conds,
    )
}

/// Where the time goes per message, in words, for the headline's two sides.
fn counters(rows: &[LhsRow]) -> String {
    let Some(h) = headline(rows) else {
        return String::new();
    };
    let per = |r: &LhsRow, f: fn(&LhsRow) -> u64| f2(r.counter_per_entry(rows, f));
    format!(
        "## Where the time goes\n\nWithout LHS, each envelope the search reads costs {} VL \
         commands (a store to the NIC's command register, loads of its completion count \
         until the block is in the Read Window) and {} Read Window loads per message. With \
         LHS each LH entry is one line of the write-back LH buffer: {} L1 misses, {} lines \
         the prefetcher brought ahead and {} flushes per message; the memory bus, 40 ns a \
         line at PC-1600's 1.6 GB/s, bounds a prefetched stream of 64-byte entries.\n\n",
        per(h.slow, |r| r.vl_commands),
        per(h.slow, |r| r.window_loads),
        per(h.fast, |r| r.l1_misses),
        per(h.fast, |r| r.prefetches_useful),
        per(h.fast, |r| r.flushes),
    )
}

/// The hosts as run and what the model chooses where the paper is silent.
fn setting_notes(l: &Lhs, opts: &LhsOptions) -> String {
    let mut s = String::from("## The setting\n\n");
    for (h, cfg, ns) in &l.hosts {
        let _ = writeln!(
            s,
            "- {} (`configs/{}.toml`{}): {} GHz, L1 {} kB, L2 {} kB, a load from memory \
             {ns:.0} ns, the memory channel {:.1} GB/s; the NIC at {} MHz.",
            match h {
                Host::Dimmnet2 => "DIMMnet-2, Table 2",
                Host::Dimmnet3 => "emulated DIMMnet-3, Table 3",
            },
            h.name(),
            if opts.overrides.is_empty() {
                String::new()
            } else {
                " with the --set overrides".into()
            },
            cfg.system.core_ghz,
            cfg.l1.size_bytes / 1024,
            cfg.l2.size_bytes / 1024,
            if cfg.memory.channel_cycles > 0 {
                64.0 * cfg.system.core_ghz / cfg.memory.channel_cycles as f64
            } else {
                f64::INFINITY
            },
            cfg.nic.mhz,
        );
    }
    let _ = writeln!(
        s,
        "- {} simulations, {} messages verified byte for byte at their receivers, {} events, \
         {:.1} s of host time on {} threads.",
        l.runs, l.messages_verified, l.events, l.host_seconds, opts.jobs
    );
    s.push_str(
        "- By construction: main memory's and the LH buffer's 100 ns (the presets' \
         `memory.latency`), the VL command's time (`nic.vl_cycles`, set so that an \
         envelope read through it takes about the paper's 600 ns; the host polls the \
         completion count every 100 ns), the memory channels' bandwidth. Emergent: every \
         time with LHS, and so the speed-up and its split.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::lhs_csv::{with_searches, Layout, Setting};
    use crate::config::UnexpectedQueue;

    /// Rows of `c` at the paper's N, `per` cycles per entry searched.
    fn rows_of(c: &Condition, per: f64) -> Vec<LhsRow> {
        let layout = Layout {
            queue: if c.lhs {
                UnexpectedQueue::Lhs
            } else {
                UnexpectedQueue::List
            },
            entry_bytes: if c.lhs { 64 } else { 0 },
        };
        let setting = Setting {
            name: c.host.name(),
            condition: c.label.into(),
            sw_prefetch: c.swp,
            attribute: Some(c.attribute),
            flush: Some(c.flush),
            core_ghz: 1.0,
            matcher: "host",
        };
        [1, N]
            .into_iter()
            .map(|x| LhsRow {
                setting: setting.clone(),
                layout,
                prefetch: if c.hwp { "stride" } else { "none" },
                depth: N,
                position: x,
                cycles: (1000.0 + per * f64::from(x - 1)) as u64,
                search_cycles: None,
                l1_hits: 0,
                l1_misses: 0,
                l2_hits: 0,
                prefetches_issued: 0,
                prefetches_useful: 0,
                sw_prefetches: 0,
                flushes: 0,
                vl_commands: 0,
                window_loads: 0,
                lh_loads: 0,
                messages_verified: 1,
            })
            .collect()
    }

    /// The report leads with the like-for-like comparison, never with LHS and its
    /// prefetcher against the list without one, however much bigger that number is.
    #[test]
    fn the_report_leads_with_a_like_for_like_comparison() {
        // Without LHS: 600 cycles with the prefetcher, 600 without; with LHS: 40 with it,
        // 100 without. Like for like: 15x; mixing (600 without over 40 with) also 15x here,
        // so make the mixed pair bigger: without LHS and no prefetcher, 900.
        let mut rows = Vec::new();
        for (c, per) in [
            (WITHOUT[0], 600.0),
            (WITHOUT[1], 900.0),
            (FIG5[0], 100.0),
            (FIG5[1], 40.0),
        ] {
            rows.extend(rows_of(&c, per));
        }
        let rows = with_searches(rows);
        let h = headline(&rows).expect("a headline");
        assert_eq!(h.slow.prefetch, h.fast.prefetch);
        assert_eq!(h.ratio(), Some(15.0));
        let l = Lhs {
            rows,
            runs: 8,
            messages_verified: 8,
            events: 0,
            host_seconds: 0.0,
            hosts: Vec::new(),
            reused: 0,
        };
        let opts = LhsOptions {
            out: "x".into(),
            overrides: Vec::new(),
            jobs: 1,
            quick: false,
            reuse: None,
        };
        let text = report(&l, &opts);
        let first = crate::api::matching::lhs::first_speedup(&text);
        assert_eq!(first, "15.00x", "{text}");
        // The mixed pair (22.5x) is never a comparison.
        let mixed = Comparison::new(
            row(&l.rows, &WITHOUT[1], N, N).unwrap(),
            row(&l.rows, &FIG5[1], N, N).unwrap(),
        );
        assert!(mixed.is_none());
        // The split: 9x from the layout (both without the prefetcher), 2.5x from it.
        assert!(text.contains("ours 9.00x"), "{text}");
        assert!(text.contains("ours 2.50x"), "{text}");
    }
}
