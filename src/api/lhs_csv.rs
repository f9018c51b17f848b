//! `lhs.csv`'s rows, both experiments' (the CMP setting that `moped matching` runs with
//! `software-lhs`, and the paper's own settings that `moped lhs` runs): one run of the
//! unexpected search, N messages waiting and the receive for the x-th, its timed region's
//! counters, and its search per entry passed over, measured against the same
//! condition's receive of the first (x = 1) at the same N.

use crate::api::experiments::Outcome;
use crate::config::{MemAttr, UnexpectedQueue};

/// One way of keeping the unexpected queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub queue: UnexpectedQueue,
    /// LH-buffer entry bytes (0 for the list).
    pub entry_bytes: u64,
}

impl Layout {
    /// Its label: `list`, `lhs-64`, `lhs-16`.
    pub fn name(&self) -> String {
        match self.queue {
            UnexpectedQueue::List => "list".into(),
            UnexpectedQueue::Lhs => format!("lhs-{}", self.entry_bytes),
        }
    }
}

/// Where a row's run took place and under what the paper varies there.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// `cmp` (the 16-core CMP, LHS in the receiver's memory), `dimmnet2` or `dimmnet3`.
    pub name: &'static str,
    /// The paper's condition the run stands for (`fig5-2`, ...), empty in the CMP.
    pub condition: String,
    /// The search's software prefetch offset, if any (`mpi.search_prefetch`).
    pub sw_prefetch: Option<u64>,
    /// The LH buffer's mapping and whether its lines are flushed (a NIC's only).
    pub attribute: Option<MemAttr>,
    pub flush: Option<bool>,
    pub core_ghz: f64,
    /// Who searches the queues: `host` (the cores' MPI), or the NIC's engine (`alpu`).
    pub matcher: &'static str,
}

impl Setting {
    /// The CMP's (Table 1's 1 GHz cores unless configured otherwise).
    pub fn cmp(core_ghz: f64) -> Setting {
        Setting {
            name: "cmp",
            condition: String::new(),
            sw_prefetch: None,
            attribute: None,
            flush: None,
            core_ghz,
            matcher: "host",
        }
    }
}

/// One run: a setting, a layout and prefetcher at one point, with its timed region's
/// counters.
#[derive(Clone, Debug, PartialEq)]
pub struct LhsRow {
    pub setting: Setting,
    pub layout: Layout,
    /// The L1 (hardware) prefetcher, by its `l1.prefetch` name.
    pub prefetch: &'static str,
    pub depth: u32,
    pub position: u32,
    /// Cycles of the timed region: the one receive.
    pub cycles: u64,
    /// Its search beyond the first entry: `cycles` less the same condition's at position 1.
    pub search_cycles: Option<f64>,
    pub l1_hits: u64,
    pub l1_misses: u64,
    pub l2_hits: u64,
    pub prefetches_issued: u64,
    pub prefetches_useful: u64,
    pub sw_prefetches: u64,
    pub flushes: u64,
    /// The NIC's: VL commands, Read Window loads, uncached LH-buffer loads.
    pub vl_commands: u64,
    pub window_loads: u64,
    pub lh_loads: u64,
    pub messages_verified: u64,
}

impl LhsRow {
    /// A row from a run's outcome; its search cycles are filled in by [`with_searches`].
    pub fn of(
        setting: Setting,
        layout: Layout,
        prefetch: &'static str,
        (depth, position): (u32, u32),
        o: &Outcome,
    ) -> LhsRow {
        let m = |k: &str| o.record.metrics.get(k).copied().unwrap_or(0.0) as u64;
        LhsRow {
            setting,
            layout,
            prefetch,
            depth,
            position,
            cycles: m("cycles"),
            search_cycles: None,
            l1_hits: m("l1_hits"),
            l1_misses: m("l1_misses"),
            l2_hits: m("l2_hits"),
            prefetches_issued: m("l1_prefetches_issued"),
            prefetches_useful: m("l1_prefetches_useful"),
            sw_prefetches: m("sw_prefetches"),
            flushes: m("flushes"),
            vl_commands: m("nic_vl_commands"),
            window_loads: m("nic_window_loads"),
            lh_loads: m("nic_lh_loads"),
            messages_verified: o.messages_verified,
        }
    }

    /// Search cycles per entry passed over (`x - 1` of them).
    pub fn per_entry(&self) -> Option<f64> {
        let passed = self.position.checked_sub(1).filter(|&p| p > 0)?;
        Some(self.search_cycles? / passed as f64)
    }

    /// The same in ns, at the row's core clock.
    pub fn ns_per_entry(&self) -> Option<f64> {
        Some(self.per_entry()? / self.setting.core_ghz)
    }

    /// Whether `other` ran under the same condition at the same N (the rows a search is
    /// measured against each other by).
    fn same_condition(&self, other: &LhsRow) -> bool {
        self.setting == other.setting
            && self.layout == other.layout
            && self.prefetch == other.prefetch
            && self.depth == other.depth
    }

    /// A counter per entry passed over: this row's less the same condition's at x = 1.
    pub fn counter_per_entry(&self, rows: &[LhsRow], f: impl Fn(&LhsRow) -> u64) -> Option<f64> {
        let first = rows
            .iter()
            .find(|r| r.same_condition(self) && r.position == 1)?;
        let n = self.position.checked_sub(1).filter(|&n| n > 0)? as f64;
        Some(f(self).saturating_sub(f(first)) as f64 / n)
    }
}

/// `rows` with each search measured against its condition's receive at position 1.
pub fn with_searches(rows: Vec<LhsRow>) -> Vec<LhsRow> {
    let firsts: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            rows.iter()
                .find(|f| f.same_condition(r) && f.position == 1)
                .map(|f| r.cycles as f64 - f.cycles as f64)
        })
        .collect();
    rows.into_iter()
        .zip(firsts)
        .map(|(r, s)| LhsRow {
            search_cycles: s,
            ..r
        })
        .collect()
}

pub const CSV_HEADER: [&str; 28] = [
    "queue",
    "entry_bytes",
    "prefetch",
    "depth",
    "position",
    "cycles",
    "search_cycles",
    "search_cycles_per_entry",
    "l1_hits",
    "l1_misses",
    "l2_hits",
    "prefetches_issued",
    "prefetches_useful",
    "messages_verified",
    "layout",
    "setting",
    "condition",
    "sw_prefetch",
    "attribute",
    "flush",
    "core_ghz",
    "search_ns_per_entry",
    "sw_prefetches",
    "flushes",
    "vl_commands",
    "window_loads",
    "lh_loads",
    "matcher",
];

impl LhsRow {
    fn fields(&self) -> Vec<String> {
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        let s = &self.setting;
        vec![
            self.layout.queue.name().into(),
            self.layout.entry_bytes.to_string(),
            self.prefetch.into(),
            self.depth.to_string(),
            self.position.to_string(),
            self.cycles.to_string(),
            opt(self.search_cycles),
            opt(self.per_entry()),
            self.l1_hits.to_string(),
            self.l1_misses.to_string(),
            self.l2_hits.to_string(),
            self.prefetches_issued.to_string(),
            self.prefetches_useful.to_string(),
            self.messages_verified.to_string(),
            self.layout.name(),
            s.name.into(),
            s.condition.clone(),
            s.sw_prefetch.map_or("off".into(), |o| o.to_string()),
            s.attribute.map_or(String::new(), |a| a.name().into()),
            s.flush.map_or(String::new(), |f| f.to_string()),
            s.core_ghz.to_string(),
            opt(self.ns_per_entry()),
            self.sw_prefetches.to_string(),
            self.flushes.to_string(),
            self.vl_commands.to_string(),
            self.window_loads.to_string(),
            self.lh_loads.to_string(),
            s.matcher.into(),
        ]
    }
}

/// lhs.csv's text.
pub fn csv(rows: &[LhsRow]) -> String {
    let header = CSV_HEADER.iter().map(|h| h.to_string()).collect();
    let records = std::iter::once(header).chain(rows.iter().map(LhsRow::fields));
    crate::analysis::write::csv_text(records, csv::Terminator::Any(b'\n'))
}
