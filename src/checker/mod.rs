//! Exhaustive explicit-state checker of the coherence protocol (verification target G1).
//!
//! A breadth-first search over the *real* controllers: the model state is a set of
//! [`CacheCtrl`]s, one [`DirCtrl`], the multiset of in-flight messages (an unordered
//! network: any message may be delivered next), each core's outstanding request and a ghost
//! "last written value" per address. Nothing of the protocol is re-implemented here; every
//! step calls `core_request`, `evict` or `deliver` on a clone of the controllers.
//!
//! Actions from a state:
//! - a core with no outstanding request loads byte 0 of an address, or stores a value of the
//!   data domain into it (`Stalled` means the action is not enabled);
//! - a core voluntarily evicts a stable line it holds;
//! - one in-flight message is delivered (identical duplicates are explored once; `Stalled`
//!   means not enabled, the message stays in the network).
//!
//! Properties: SWMR, the data-value invariant (every load completion returns the ghost value;
//! every core with read permission holds it), directory agreement in stable states, bounded
//! buffers per (destination, virtual network), deadlock freedom, liveness (a quiescent state
//! is reachable from every reachable state, checked on the stored state graph), and no
//! impossible table cell. A failure carries the shortest action sequence that reaches it,
//! replayed step by step with the cells that fired and the resulting line states.
//!
//! Symmetry reduction (optional) keys the visited set by the minimum encoding over all
//! permutations of the cache indices; the stored representative of each orbit stays the
//! concrete state first reached, so traces are concrete executions with stable node ids.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use rustc_hash::FxHashMap;

use crate::coherence::dir::NOBODY;
use crate::coherence::{
    AccessKind, CacheCtrl, CacheParams, Completed, CoreOutcome, CoreReq, Delivery, DirCtrl,
    DirParams, MopedDone, MopedKind, MopedReq, Msg, MsgType, NodeId, Outgoing, Protocol, Violation,
};
use crate::mem::LineAddr;
use crate::protocol::{Cell, Machine, Permission, TransitionCounts};

/// One configuration of the explorer.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckConfig {
    pub name: String,
    /// Number of caches (cores); the single directory bank is node `caches`.
    pub caches: usize,
    /// Line addresses explored (all homed at the one directory bank).
    pub addrs: Vec<LineAddr>,
    pub l1_sets: usize,
    pub l1_ways: usize,
    pub l2_sets: usize,
    pub l2_ways: usize,
    /// Values stores write into byte 0 (memory starts at 0).
    pub values: Vec<u8>,
    /// Key the visited set by the minimum encoding over permutations of cache indices.
    pub symmetry: bool,
    /// Capacity of each (destination, virtual network) buffer; exceeding it is a failure.
    pub buffer_capacity: usize,
    /// Give up (with an error) beyond this many unique states.
    pub max_states: usize,
    /// The MOPEDs of cores `0..moped_cores` issue requests too (needs a MOPED design).
    /// Symmetry reduction then permutes only cores of the same kind.
    pub moped_cores: usize,
}

impl CheckConfig {
    /// The per-PR configurations of G1: `c1`, `c2`, `c3`.
    pub fn named(name: &str) -> Option<CheckConfig> {
        let base = |caches: usize,
                    addrs: Vec<LineAddr>,
                    l1_ways: usize,
                    symmetry: bool,
                    values: Vec<u8>| {
            // Buffer capacity: each core has at most one transaction per address in flight
            // (requests and writebacks of a line are mutually exclusive in its states), the
            // blocking directory serves one transaction per address, and a transaction sends
            // a core at most one request, one forward or invalidation, and its data plus at
            // most `caches - 2` acks. So no buffer holds more than `caches * addresses`
            // messages; the extra slot covers a WB_NACK answered without blocking.
            let cap = caches * addrs.len() + 1;
            CheckConfig {
                name: name.to_string(),
                caches,
                addrs,
                l1_sets: 1,
                l1_ways,
                l2_sets: 1,
                l2_ways: 1,
                values,
                symmetry,
                buffer_capacity: cap,
                max_states: 30_000_000,
                moped_cores: 0,
            }
        };
        let with_moped = |mut c: CheckConfig, k: usize| {
            c.moped_cores = k;
            c
        };
        Some(match name {
            "c1" => base(2, vec![0x0], 1, false, vec![1, 2]),
            "c2" => base(3, vec![0x0], 1, true, vec![1, 2]),
            // Two lines that conflict in a one-line L2 (no L1, so every second line evicts
            // the first): the replacement races. One store value keeps the space at about
            // 0.6 M orbits; stale data is still caught as 0-for-1, and c1/c2 distinguish
            // successive values. `c3-full` stores two values (about 14 M orbits, minutes).
            "c3" => base(2, vec![0x0, 0x40], 0, true, vec![1]),
            "c3-full" => base(2, vec![0x0, 0x40], 0, true, vec![1, 2]),
            "c4" => base(4, vec![0x0], 1, true, vec![1, 2]),
            // The MOPED designs: each core's MOPED reads, owns and (OPTCACHE) fills lines
            // beside its core's loads and stores.
            "m1" => with_moped(base(2, vec![0x0], 1, false, vec![1, 2]), 2),
            "m2" => with_moped(base(3, vec![0x0], 1, true, vec![1]), 3),
            // The replacement races with one MOPED (the receiver's); `m3-full` gives both
            // cores one (minutes).
            "m3" => with_moped(base(2, vec![0x0, 0x40], 0, false, vec![1]), 1),
            "m3-full" => with_moped(base(2, vec![0x0, 0x40], 0, true, vec![1]), 2),
            _ => return None,
        })
    }

    /// Names accepted by [`CheckConfig::named`]; `c3-full` and `c4` are manual runs; the
    /// `m` configurations need a MOPED design.
    pub fn names() -> &'static [&'static str] {
        &[
            "c1", "c2", "c3", "c3-full", "c4", "m1", "m2", "m3", "m3-full",
        ]
    }
}

/// One (machine, state, event) cell of a protocol table, by name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellName {
    pub machine: String,
    pub state: String,
    pub event: String,
}

impl fmt::Display for CellName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ({}, {})", self.machine, self.state, self.event)
    }
}

/// The result of a passing exploration.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub config: String,
    pub protocol: String,
    /// Unique states (symmetry orbits when symmetry reduction is on).
    pub states: usize,
    /// Unique (state, successor) pairs of the state graph.
    pub edges: usize,
    pub quiescent_states: usize,
    /// Breadth-first depth of the deepest state.
    pub depth: usize,
    pub max_in_flight: usize,
    pub buffer_capacity: usize,
    pub max_buffer_occupancy: usize,
    /// Transition cells that fired, sorted.
    pub cells_reached: Vec<CellName>,
    /// Cells the tables mark as transitions that never fired.
    pub cells_possible_not_reached: Vec<CellName>,
    /// Fired cells the tables do not mark as transitions (must be 0).
    pub cells_reached_outside_table: usize,
    pub seconds: f64,
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let possible = self.cells_reached.len() + self.cells_possible_not_reached.len();
        writeln!(
            f,
            "{} ({}): {} states, {} edges, {} quiescent, depth {}, {:.2} s",
            self.config,
            self.protocol,
            self.states,
            self.edges,
            self.quiescent_states,
            self.depth,
            self.seconds
        )?;
        writeln!(
            f,
            "  in flight: max {} messages; buffers: max {} of capacity {} per (destination, vnet)",
            self.max_in_flight, self.max_buffer_occupancy, self.buffer_capacity
        )?;
        write!(
            f,
            "  table cells: {}/{} transition cells reached, {} reached outside the table; 0 violations",
            self.cells_reached.len(),
            possible,
            self.cells_reached_outside_table
        )
    }
}

/// Union of the table coverage of several runs of the same protocol.
#[derive(Clone, Debug)]
pub struct Coverage {
    pub possible: Vec<CellName>,
    pub reached: Vec<CellName>,
    pub unreached: Vec<CellName>,
}

impl Coverage {
    pub fn percent(&self) -> f64 {
        if self.possible.is_empty() {
            100.0
        } else {
            100.0 * self.reached.len() as f64 / self.possible.len() as f64
        }
    }
}

/// Table coverage over several reports (e.g. c1, c2 and c3).
pub fn union_coverage(reports: &[CheckReport]) -> Coverage {
    use std::collections::BTreeSet;
    let mut possible = BTreeSet::new();
    let mut reached = BTreeSet::new();
    for r in reports {
        possible.extend(r.cells_reached.iter().cloned());
        possible.extend(r.cells_possible_not_reached.iter().cloned());
        reached.extend(r.cells_reached.iter().cloned());
    }
    let unreached = possible.difference(&reached).cloned().collect();
    Coverage {
        possible: possible.into_iter().collect(),
        reached: reached.into_iter().collect(),
        unreached,
    }
}

/// What kind of property failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A controller reached an impossible cell or could not take a message.
    InvalidTransition,
    Swmr,
    DataValue,
    DirectoryAgreement,
    BufferOverflow,
    Deadlock,
    Liveness,
    /// A completion without a matching outstanding request, or similar harness mismatch.
    CompletionMismatch,
    /// The state space exceeded `max_states`.
    StateLimit,
    /// A MOPED request broke its design's promise (M_GETS allocated, a copy changed the
    /// owner, a fill left another valid copy).
    Moped,
}

impl FailureKind {
    pub fn describe(self) -> &'static str {
        match self {
            FailureKind::InvalidTransition => "invalid transition",
            FailureKind::Swmr => "SWMR violation",
            FailureKind::DataValue => "data-value violation",
            FailureKind::DirectoryAgreement => "directory-agreement violation",
            FailureKind::BufferOverflow => "buffer overflow",
            FailureKind::Deadlock => "deadlock",
            FailureKind::Liveness => "liveness violation (no quiescent state reachable)",
            FailureKind::CompletionMismatch => "completion mismatch",
            FailureKind::StateLimit => "state limit exceeded",
            FailureKind::Moped => "MOPED property violation",
        }
    }
}

/// A failed check: the property, what was seen, and a counterexample trace.
#[derive(Clone, Debug)]
pub struct Failure {
    pub config: String,
    pub kind: FailureKind,
    pub detail: String,
    /// The trace, one entry per line, starting with the initial state.
    pub trace: Vec<String>,
    pub states_explored: usize,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {}: {}",
            self.config,
            self.kind.describe(),
            self.detail
        )?;
        writeln!(
            f,
            "after {} states; counterexample trace:",
            self.states_explored
        )?;
        for l in &self.trace {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}

/// Runs a named configuration on the baseline protocol.
pub fn run_named(name: &str) -> Result<CheckReport, String> {
    run_with_protocol(name, Protocol::baseline())
}

/// Runs a named configuration on a given (possibly mutated) protocol.
pub fn run_with_protocol(name: &str, protocol: Protocol) -> Result<CheckReport, String> {
    let cfg = CheckConfig::named(name).ok_or_else(|| {
        format!(
            "unknown checker configuration `{name}`, expected one of: {}",
            CheckConfig::names().join(", ")
        )
    })?;
    check(&cfg, &protocol).map_err(|f| f.to_string())
}

/// Explores every reachable state of `cfg` under `protocol`.
pub fn check(cfg: &CheckConfig, protocol: &Protocol) -> Result<CheckReport, Failure> {
    let model = Model::new(cfg, protocol).map_err(|detail| Failure {
        config: cfg.name.clone(),
        kind: FailureKind::InvalidTransition,
        detail,
        trace: Vec::new(),
        states_explored: 0,
    })?;
    model.explore()
}

// ---------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------

/// A core's outstanding (missed) request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    store: bool,
    addr: u8,
    value: u8,
}

#[derive(Clone)]
struct State {
    caches: Vec<CacheCtrl>,
    dir: DirCtrl,
    /// In-flight messages, sorted (a canonical multiset).
    net: Vec<Msg>,
    pending: Vec<Option<Pending>>,
    /// Each core's MOPED's outstanding request.
    moped: Vec<Option<MopedPending>>,
    /// Last value written to byte 0 of each address.
    ghost: Vec<u8>,
}

/// A MOPED's outstanding request. A read may return any value the line held while it was
/// outstanding (a copy is taken at some instant): `seen` has bit `v` set for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MopedPending {
    kind: MopedKind,
    addr: u8,
    value: u8,
    seen: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Load {
        core: u8,
        addr: u8,
    },
    Store {
        core: u8,
        addr: u8,
        value: u8,
    },
    Evict {
        core: u8,
        addr: u8,
    },
    /// Deliver `net[index]`.
    Deliver {
        index: u16,
    },
    /// A core's MOPED reads, owns or fills a line; owns and fills store `value`.
    Moped {
        core: u8,
        addr: u8,
        kind: MopedKind,
        value: u8,
    },
}

/// A cell that fired during a step: machine 0 = an L2 controller (with its node), 1 = the
/// directory; `cell` indexes `state * events + event`.
#[derive(Clone, Copy, Debug)]
struct Fired {
    node: NodeId,
    dir: bool,
    cell: usize,
}

struct StepFail {
    kind: FailureKind,
    detail: String,
}

impl From<Violation> for StepFail {
    fn from(v: Violation) -> StepFail {
        StepFail {
            kind: FailureKind::InvalidTransition,
            detail: v.to_string(),
        }
    }
}

struct Model<'a> {
    cfg: &'a CheckConfig,
    l2: Arc<Machine>,
    dirm: Arc<Machine>,
    cache_cells: usize,
    dir_cells: usize,
    perms: Vec<Vec<NodeId>>,
    cache_i: u16,
    cache_s: Option<u16>,
    cache_o: Option<u16>,
    dir_i: Option<u16>,
    dir_s: Option<u16>,
    dir_o: Option<u16>,
    dir_m: Option<u16>,
    /// OPTCOPY's directory states that hold a line still for a copy.
    dir_copy_states: Vec<u16>,
    cache_id: Option<u16>,
    has_fill: bool,
    protocol_name: String,
}

fn permutations(n: usize) -> Vec<Vec<NodeId>> {
    fn rec(cur: &mut Vec<NodeId>, used: &mut Vec<bool>, out: &mut Vec<Vec<NodeId>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i as NodeId);
                rec(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    rec(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

/// Zero-run-length compaction of an encoding: a non-zero byte stands for itself, a run of
/// `k` zeros (1..=255) becomes `[0, k]`. Injective, so keys stay exact.
fn compact(raw: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(raw.len() / 4 + 8);
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != 0 {
            out.push(raw[i]);
            i += 1;
        } else {
            let mut k = 0usize;
            while i < raw.len() && raw[i] == 0 && k < 255 {
                k += 1;
                i += 1;
            }
            out.push(0);
            out.push(k as u8);
        }
    }
    out.into_boxed_slice()
}

const MSG_ENC: usize = 8 + 64;

impl<'a> Model<'a> {
    fn new(cfg: &'a CheckConfig, protocol: &Protocol) -> Result<Model<'a>, String> {
        if cfg.caches == 0 || cfg.caches > 8 {
            return Err(format!(
                "{} caches: the checker supports 1 to 8",
                cfg.caches
            ));
        }
        if cfg.addrs.is_empty() || cfg.addrs.len() > 8 || cfg.addrs.iter().any(|a| a % 64 != 0) {
            return Err("addresses: 1 to 8 line-aligned addresses".into());
        }
        if cfg.values.iter().any(|&v| v >= 8) {
            return Err("values: 0 to 7 (a MOPED read's seen values are a bit set)".into());
        }
        if cfg.moped_cores > cfg.caches {
            return Err(format!(
                "{} MOPEDs issue requests, but there are {} caches",
                cfg.moped_cores, cfg.caches
            ));
        }
        if cfg.moped_cores > 0 && !protocol.has_moped() {
            return Err(format!(
                "configuration {} issues MOPED requests: protocol `{}` has none (use basemoped, optcopy or optcache)",
                cfg.name, protocol.name
            ));
        }
        let l2 = Arc::clone(&protocol.l2);
        let dirm = Arc::clone(&protocol.dir);
        let cache_i = l2.state_id("I").ok_or("L2Cache has no state I")?;
        let perms = if cfg.symmetry {
            // Cores with a requesting MOPED are only interchangeable among themselves.
            let k = cfg.moped_cores;
            permutations(cfg.caches)
                .into_iter()
                .filter(|p| {
                    p.iter()
                        .enumerate()
                        .all(|(i, &j)| (i < k) == ((j as usize) < k))
                })
                .collect()
        } else {
            vec![(0..cfg.caches as NodeId).collect()]
        };
        Ok(Model {
            cfg,
            cache_cells: l2.states().len() * l2.events().len(),
            dir_cells: dirm.states().len() * dirm.events().len(),
            perms,
            cache_i,
            cache_s: l2.state_id("S"),
            cache_o: l2.state_id("O"),
            dir_i: dirm.state_id("I"),
            dir_s: dirm.state_id("S"),
            dir_o: dirm.state_id("O"),
            dir_m: dirm.state_id("M"),
            dir_copy_states: ["IC", "SC", "OC", "MC"]
                .iter()
                .filter_map(|n| dirm.state_id(n))
                .collect(),
            cache_id: l2.state_id("ID"),
            has_fill: l2.event_id("M_FILL").is_some(),
            protocol_name: protocol.name.clone(),
            l2,
            dirm,
        })
    }

    fn dir_node(&self) -> NodeId {
        self.cfg.caches as NodeId
    }

    fn initial(&self) -> Result<State, String> {
        let n = self.cfg.caches;
        let mut caches = Vec::with_capacity(n);
        for node in 0..n {
            let p = CacheParams {
                node: node as NodeId,
                n_cores: n,
                dir_banks: 1,
                l1_sets: self.cfg.l1_sets,
                l1_ways: self.cfg.l1_ways,
                l2_sets: self.cfg.l2_sets,
                l2_ways: self.cfg.l2_ways,
                l1_latency: 1,
                l2_latency: 1,
            };
            let mut c = CacheCtrl::new(p, Arc::clone(&self.l2)).map_err(|e| e.to_string())?;
            c.transitions = TransitionCounts::default();
            caches.push(c);
        }
        let dp = DirParams {
            node: self.dir_node(),
            bank: 0,
            banks: 1,
            n_cores: n,
            latency: 1,
            mem_latency: 1,
        };
        let mut dir = DirCtrl::new(dp, Arc::clone(&self.dirm)).map_err(|e| e.to_string())?;
        dir.transitions = TransitionCounts::default();
        Ok(State {
            caches,
            dir,
            net: Vec::new(),
            pending: vec![None; n],
            moped: vec![None; n],
            ghost: vec![0; self.cfg.addrs.len()],
        })
    }

    fn addr_index(&self, addr: LineAddr) -> Option<usize> {
        self.cfg.addrs.iter().position(|&a| a == addr)
    }

    // ---- Canonical encoding ----

    fn encode_msg(&self, m: &Msg, perm: &[NodeId], out: &mut [u8; MSG_ENC]) {
        let n = self.cfg.caches as NodeId;
        let r = |x: NodeId| if x < n { perm[x as usize] } else { x };
        out[0] = m.ty as u8;
        out[1] = self.addr_index(m.addr).map(|i| i as u8).unwrap_or(0xff);
        out[2] = r(m.src) as u8;
        out[3] = r(m.dst) as u8;
        out[4] = if m.requestor == NOBODY {
            0xff
        } else {
            r(m.requestor) as u8
        };
        out[5..7].copy_from_slice(&m.acks.to_le_bytes());
        out[7] = m.dirty as u8;
        out[8..].copy_from_slice(&m.data);
    }

    /// The visited-set key of a state: its encoding, minimized over the cache permutations.
    fn key(&self, st: &State, scratch: &mut Scratch) -> Box<[u8]> {
        let n = self.cfg.caches;
        scratch.cache_enc.resize_with(n, Vec::new);
        for (c, e) in st.caches.iter().zip(scratch.cache_enc.iter_mut()) {
            e.clear();
            c.encode(e);
        }
        scratch.best.clear();
        let mut first = true;
        for perm in &self.perms {
            let buf = &mut scratch.buf;
            buf.clear();
            // inv[new] = old
            let mut inv = [0usize; 8];
            for (old, &new) in perm.iter().enumerate() {
                inv[new as usize] = old;
            }
            for &old in inv.iter().take(n) {
                buf.extend_from_slice(&scratch.cache_enc[old]);
                match st.pending[old] {
                    None => buf.push(0),
                    Some(p) => buf.extend_from_slice(&[1 + p.store as u8, p.addr, p.value]),
                }
                match st.moped[old] {
                    None => buf.push(0),
                    Some(p) => buf.extend_from_slice(&[1 + p.kind as u8, p.addr, p.value, p.seen]),
                }
            }
            buf.extend_from_slice(&st.ghost);
            st.dir.encode(buf, &|x: NodeId| perm[x as usize]);
            scratch.msgs.clear();
            for m in &st.net {
                let mut e = [0u8; MSG_ENC];
                self.encode_msg(m, perm, &mut e);
                scratch.msgs.push(e);
            }
            scratch.msgs.sort_unstable();
            buf.push(scratch.msgs.len() as u8);
            for e in &scratch.msgs {
                buf.extend_from_slice(e);
            }
            if first || *buf < scratch.best {
                std::mem::swap(&mut scratch.best, buf);
                first = false;
            }
        }
        compact(&scratch.best)
    }

    // ---- Transitions ----

    fn enabled_candidates(&self, st: &State) -> Vec<Action> {
        let mut v = Vec::new();
        for core in 0..self.cfg.caches {
            for addr in 0..self.cfg.addrs.len() {
                if st.pending[core].is_none() {
                    v.push(Action::Load {
                        core: core as u8,
                        addr: addr as u8,
                    });
                    for &value in &self.cfg.values {
                        v.push(Action::Store {
                            core: core as u8,
                            addr: addr as u8,
                            value,
                        });
                    }
                }
                if core < self.cfg.moped_cores && st.moped[core].is_none() {
                    let (core, addr) = (core as u8, addr as u8);
                    v.push(Action::Moped {
                        core,
                        addr,
                        kind: MopedKind::Read,
                        value: 0,
                    });
                    for &value in &self.cfg.values {
                        v.push(Action::Moped {
                            core,
                            addr,
                            kind: MopedKind::Own,
                            value,
                        });
                        if self.has_fill {
                            v.push(Action::Moped {
                                core,
                                addr,
                                kind: MopedKind::Fill,
                                value,
                            });
                        }
                    }
                }
                let c = &st.caches[core];
                let s = c.state(self.cfg.addrs[addr]);
                if s != self.cache_i && self.l2.is_stable(s) {
                    v.push(Action::Evict {
                        core: core as u8,
                        addr: addr as u8,
                    });
                }
            }
        }
        for i in 0..st.net.len() {
            if i > 0 && st.net[i] == st.net[i - 1] {
                continue;
            }
            v.push(Action::Deliver { index: i as u16 });
        }
        v
    }

    fn collect_fired(
        &self,
        node: NodeId,
        dir: bool,
        counts: &TransitionCounts,
        fired: &mut Vec<Fired>,
    ) {
        let m = if dir { &self.dirm } else { &self.l2 };
        let ne = m.events().len();
        for (k, n) in counts.iter().enumerate() {
            if n > 0 {
                let (st, ev) = m.counted_cell(k);
                let cell = st as usize * ne + ev as usize;
                fired.push(Fired { node, dir, cell });
            }
        }
    }

    /// Runs `f` on cache controller `core` with its transitions counted, and records the
    /// cells that fired. Stored states keep no counters, so they stay cheap to clone.
    fn counted<R>(
        &self,
        c: &mut CacheCtrl,
        core: usize,
        fired: &mut Vec<Fired>,
        f: impl FnOnce(&mut CacheCtrl) -> R,
    ) -> R {
        c.transitions = TransitionCounts::new(self.l2.n_counters());
        let r = f(c);
        self.collect_fired(core as NodeId, false, &c.transitions, fired);
        c.transitions = TransitionCounts::default();
        r
    }

    /// Applies one action to a clone of `st`. `Ok(None)`: the action is not enabled.
    fn step(
        &self,
        st: &State,
        a: Action,
        fired: &mut Vec<Fired>,
    ) -> Result<Option<State>, StepFail> {
        let mut s = st.clone();
        let mut out: Vec<Outgoing> = Vec::new();
        let mut done: Vec<Completed> = Vec::new();
        fired.clear();
        // Completions are attributed to this core.
        let completing: usize;
        match a {
            Action::Load { core, addr } | Action::Store { core, addr, .. } => {
                let core = core as usize;
                let (store, value) = match a {
                    Action::Store { value, .. } => (true, value),
                    _ => (false, 0),
                };
                let req = CoreReq {
                    id: 0,
                    kind: if store {
                        AccessKind::Store
                    } else {
                        AccessKind::Load
                    },
                    addr: self.cfg.addrs[addr as usize],
                    size: 1,
                    value: value as u64,
                };
                let r = self.counted(&mut s.caches[core], core, fired, |c| {
                    c.core_request(req, &mut out, &mut done)
                });
                match r? {
                    CoreOutcome::Stalled => return Ok(None),
                    CoreOutcome::Hit(_) => {
                        if done.len() != 1 {
                            return Err(StepFail {
                                kind: FailureKind::CompletionMismatch,
                                detail: format!(
                                    "core {core}: a hit produced {} completions",
                                    done.len()
                                ),
                            });
                        }
                        // Make the completion match an outstanding request below.
                        s.pending[core] = Some(Pending { store, addr, value });
                    }
                    CoreOutcome::Miss => {
                        if !done.is_empty() {
                            return Err(StepFail {
                                kind: FailureKind::CompletionMismatch,
                                detail: format!("core {core}: a miss completed at once"),
                            });
                        }
                        s.pending[core] = Some(Pending { store, addr, value });
                    }
                }
                completing = core;
            }
            Action::Evict { core, addr } => {
                let core = core as usize;
                let line = self.cfg.addrs[addr as usize];
                let r = self.counted(&mut s.caches[core], core, fired, |c| {
                    c.evict(line, &mut out, &mut done)
                });
                if !r? {
                    return Ok(None);
                }
                completing = core;
            }
            Action::Moped {
                core,
                addr,
                kind,
                value,
            } => {
                let core = core as usize;
                let line = self.cfg.addrs[addr as usize];
                let mut data = [0u8; 64];
                data[0] = value;
                // An own stores byte 0 alone (a receive line the buffer covers in part), a
                // fill the whole line.
                let write = match kind {
                    MopedKind::Read => None,
                    MopedKind::Own => Some((data, 1)),
                    MopedKind::Fill => Some((data, u64::MAX)),
                };
                let req = MopedReq {
                    kind,
                    addr: line,
                    write,
                };
                let r = self.counted(&mut s.caches[core], core, fired, |c| {
                    c.moped_request(req, &mut out, &mut done)
                });
                if r? == CoreOutcome::Stalled {
                    return Ok(None);
                }
                s.moped[core] = Some(MopedPending {
                    kind,
                    addr,
                    value,
                    seen: 1 << s.ghost[addr as usize],
                });
                completing = core;
            }
            Action::Deliver { index } => {
                let m = s.net.remove(index as usize);
                let dst = m.dst as usize;
                let before = self.copy_snapshot(&s, &m);
                let r = if dst < self.cfg.caches {
                    self.counted(&mut s.caches[dst], dst, fired, |c| {
                        c.deliver(&m, &mut out, &mut done)
                    })
                } else if dst == self.cfg.caches {
                    s.dir.transitions = TransitionCounts::new(self.dirm.n_counters());
                    let r = s.dir.deliver(&m, &mut out);
                    self.collect_fired(dst as NodeId, true, &s.dir.transitions, fired);
                    s.dir.transitions = TransitionCounts::default();
                    r
                } else {
                    return Err(StepFail {
                        kind: FailureKind::InvalidTransition,
                        detail: format!("message {} sent to unknown node {dst}", msg_text(&m)),
                    });
                };
                if r? == Delivery::Stalled {
                    return Ok(None);
                }
                if let Some(before) = before {
                    self.check_copy(&s, &m, before, &out)?;
                }
                completing = dst;
            }
        }
        for c in &done {
            let core = completing;
            if core >= self.cfg.caches {
                return Err(StepFail {
                    kind: FailureKind::CompletionMismatch,
                    detail: "the directory produced a core completion".into(),
                });
            }
            let Some(ai) = self.addr_index(c.req.addr & !63) else {
                return Err(StepFail {
                    kind: FailureKind::CompletionMismatch,
                    detail: format!(
                        "core {core}: completion for unknown address {:#x}",
                        c.req.addr
                    ),
                });
            };
            let store = c.req.kind == AccessKind::Store;
            match s.pending[core] {
                Some(p) if p.store == store && p.addr as usize == ai && (!store || p.value as u64 == c.req.value) => {}
                other => {
                    return Err(StepFail {
                        kind: FailureKind::CompletionMismatch,
                        detail: format!(
                            "core {core}: completion of a {} to {:#x} while the outstanding request is {:?}",
                            if store { "store" } else { "load" },
                            c.req.addr,
                            other
                        ),
                    })
                }
            }
            s.pending[core] = None;
            if store {
                s.ghost[ai] = c.req.value as u8;
            } else if c.value != s.ghost[ai] as u64 {
                return Err(StepFail {
                    kind: FailureKind::DataValue,
                    detail: format!(
                        "core {core} loaded {} from {:#x}, but the last value written is {}",
                        c.value, self.cfg.addrs[ai], s.ghost[ai]
                    ),
                });
            }
        }
        if completing < self.cfg.caches {
            let answers: Vec<MopedDone> = s.caches[completing].take_moped_done().collect();
            let from_network = matches!(a, Action::Deliver { .. });
            for d in answers {
                self.moped_completion(&mut s, completing, d, from_network)?;
            }
        }
        for p in s.moped.iter_mut().flatten() {
            p.seen |= 1 << s.ghost[p.addr as usize];
        }
        for o in out {
            let pos = s.net.partition_point(|m| *m <= o.msg);
            s.net.insert(pos, o.msg);
        }
        Ok(Some(s))
    }

    fn moped_fail(detail: String) -> StepFail {
        StepFail {
            kind: FailureKind::Moped,
            detail,
        }
    }

    /// Checks an answer a core's L2 gave its MOPED against the MOPED's request.
    fn moped_completion(
        &self,
        s: &mut State,
        core: usize,
        d: MopedDone,
        from_network: bool,
    ) -> Result<(), StepFail> {
        let Some(p) = s.moped[core] else {
            return Err(StepFail {
                kind: FailureKind::CompletionMismatch,
                detail: format!("core {core}: MOPED answer {d:?} without a request"),
            });
        };
        let addr = self.cfg.addrs[p.addr as usize];
        if d.addr() != addr {
            return Err(StepFail {
                kind: FailureKind::CompletionMismatch,
                detail: format!("core {core}: MOPED answer {d:?} for a request to {addr:#x}"),
            });
        }
        match (d, p.kind) {
            (MopedDone::Data { data, .. }, MopedKind::Read) => {
                if p.seen >> data[0] & 1 == 0 {
                    return Err(StepFail {
                        kind: FailureKind::DataValue,
                        detail: format!(
                            "core {core}'s MOPED read {} from {addr:#x}, a value the line never held while the read was outstanding (seen {:#b})",
                            data[0], p.seen
                        ),
                    });
                }
                if from_network && s.caches[core].line_copy(addr).is_some() {
                    return Err(Self::moped_fail(format!(
                        "M_GETS allocated {addr:#x} in the requester's cache (core {core}, {})",
                        s.caches[core].state_name(addr)
                    )));
                }
            }
            (MopedDone::Written { .. }, MopedKind::Own | MopedKind::Fill) => {
                s.ghost[p.addr as usize] = p.value;
                if p.kind == MopedKind::Fill {
                    for (i, c) in s.caches.iter().enumerate() {
                        let perm = self.l2.permission(c.state(addr));
                        if i != core && matches!(perm, Permission::ReadOnly | Permission::ReadWrite)
                        {
                            return Err(Self::moped_fail(format!(
                                "a fill granted {addr:#x} to core {core} while core {i} holds a valid copy in {}",
                                c.state_name(addr)
                            )));
                        }
                    }
                }
            }
            _ => {
                return Err(StepFail {
                    kind: FailureKind::CompletionMismatch,
                    detail: format!("core {core}: MOPED answer {d:?} for a {:?} request", p.kind),
                })
            }
        }
        s.moped[core] = None;
        Ok(())
    }

    /// What a copy request must leave unchanged, taken before delivering `m`: the owner's
    /// line for a forwarded copy, the directory's owner and sharers for a GET_COPY or for
    /// the UNBLOCK that ends one.
    fn copy_snapshot(&self, s: &State, m: &Msg) -> Option<CopySnapshot> {
        let dst = m.dst as usize;
        match m.ty {
            MsgType::FwdGetCopy if dst < self.cfg.caches => {
                let c = &s.caches[dst];
                Some(CopySnapshot::Owner(
                    c.state(m.addr),
                    c.line_copy(m.addr).map(|l| (l.data, l.dirty)),
                    c.placement(m.addr),
                ))
            }
            MsgType::GetCopy if dst == self.cfg.caches => {
                let e = s.dir.entry(m.addr);
                Some(CopySnapshot::Dir(e.owner, e.sharers))
            }
            MsgType::Unblock if dst == self.cfg.caches => {
                let e = s.dir.entry(m.addr);
                self.dir_copy_states
                    .contains(&e.state)
                    .then_some(CopySnapshot::Dir(e.owner, e.sharers))
            }
            _ => None,
        }
    }

    /// OPTCOPY's promise: a copy changes no cache's state and returns the current value.
    fn check_copy(
        &self,
        s: &State,
        m: &Msg,
        before: CopySnapshot,
        out: &[Outgoing],
    ) -> Result<(), StepFail> {
        let after = self.copy_snapshot(s, m);
        let unchanged = match (&before, m.ty) {
            // The UNBLOCK takes the line out of the copy state: compare owner and sharers.
            (CopySnapshot::Dir(o, sh), MsgType::Unblock) => {
                let e = s.dir.entry(m.addr);
                e.owner == *o && e.sharers == *sh
            }
            _ => after.as_ref() == Some(&before),
        };
        if !unchanged {
            return Err(Self::moped_fail(format!(
                "{} changed the line: before {before:?}, after {after:?}",
                msg_text(m)
            )));
        }
        let Some(ai) = self.addr_index(m.addr) else {
            return Ok(());
        };
        for o in out {
            if o.msg.ty == MsgType::Data && o.msg.data[0] != s.ghost[ai] {
                return Err(Self::moped_fail(format!(
                    "{} answered with {}, but the current value is {}",
                    msg_text(m),
                    o.msg.data[0],
                    s.ghost[ai]
                )));
            }
        }
        Ok(())
    }

    // ---- Properties ----

    fn is_quiescent(&self, st: &State) -> bool {
        st.net.is_empty()
            && st.pending.iter().all(|p| p.is_none())
            && st.moped.iter().all(|p| p.is_none())
            && st.caches.iter().all(|c| c.is_quiescent())
            && st.dir.is_quiescent()
    }

    /// Largest (destination, vnet) occupancy.
    fn buffer_occupancy(&self, st: &State) -> (usize, NodeId, usize) {
        let mut counts = [[0usize; MsgType::VNETS]; 9];
        let mut best = (0, 0, 0);
        for m in &st.net {
            let d = (m.dst as usize).min(8);
            let v = m.ty.vnet();
            counts[d][v] += 1;
            if counts[d][v] > best.0 {
                best = (counts[d][v], d as NodeId, v);
            }
        }
        best
    }

    fn check_state(&self, st: &State) -> Result<(), StepFail> {
        let (occ, dst, vnet) = self.buffer_occupancy(st);
        if occ > self.cfg.buffer_capacity {
            return Err(StepFail {
                kind: FailureKind::BufferOverflow,
                detail: format!(
                    "{occ} messages for node {dst} on vnet {vnet}, capacity {}",
                    self.cfg.buffer_capacity
                ),
            });
        }
        for (ai, &addr) in self.cfg.addrs.iter().enumerate() {
            // (a) SWMR.
            let mut writers = Vec::new();
            let mut readers = Vec::new();
            for (i, c) in st.caches.iter().enumerate() {
                match self.l2.permission(c.state(addr)) {
                    Permission::ReadWrite => writers.push(i),
                    Permission::ReadOnly => readers.push(i),
                    _ => {}
                }
            }
            if writers.len() > 1 || (writers.len() == 1 && !readers.is_empty()) {
                return Err(StepFail {
                    kind: FailureKind::Swmr,
                    detail: format!(
                        "address {addr:#x}: cores {writers:?} have Read_Write and cores {readers:?} Read_Only ({})",
                        self.line_summary(st, addr)
                    ),
                });
            }
            // M_GETS's data is never installed: a line waiting in ID has no way.
            if let Some(id) = self.cache_id {
                for (i, c) in st.caches.iter().enumerate() {
                    if c.state(addr) == id && c.line_copy(addr).is_some() {
                        return Err(Self::moped_fail(format!(
                            "address {addr:#x}: core {i} waits in ID with a way allocated"
                        )));
                    }
                }
            }
            // (b) Every readable copy holds the last value written.
            for (i, c) in st.caches.iter().enumerate() {
                if let Some(d) = c.readable_data(addr) {
                    if d[0] != st.ghost[ai] {
                        return Err(StepFail {
                            kind: FailureKind::DataValue,
                            detail: format!(
                                "address {addr:#x}: core {i} in {} holds {}, but the last value written is {}",
                                c.state_name(addr),
                                d[0],
                                st.ghost[ai]
                            ),
                        });
                    }
                }
            }
            // (c) Directory agreement, in stable states with nothing in flight for the line.
            let e = st.dir.entry(addr);
            let all_stable = self.dirm.is_stable(e.state)
                && st.caches.iter().all(|c| self.l2.is_stable(c.state(addr)))
                && !st.net.iter().any(|m| m.addr == addr);
            if all_stable {
                if let Some(why) = self.dir_disagreement(st, addr) {
                    return Err(StepFail {
                        kind: FailureKind::DirectoryAgreement,
                        detail: format!(
                            "address {addr:#x}: {why} ({})",
                            self.line_summary(st, addr)
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    fn dir_disagreement(&self, st: &State, addr: LineAddr) -> Option<String> {
        let e = st.dir.entry(addr);
        let holders: Vec<(usize, u16)> = st
            .caches
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.state(addr)))
            .filter(|&(_, s)| s != self.cache_i)
            .collect();
        let in_sharers = |i: usize| e.sharers & (1u64 << i) != 0;
        let is = |s: u16, want: Option<u16>| Some(s) == want;
        let owner = e.owner;
        if is(e.state, self.dir_m) {
            if owner == NOBODY || owner as usize >= st.caches.len() {
                return Some("directory M without an owner".into());
            }
            for &(i, s) in &holders {
                if i == owner as usize {
                    if self.l2.permission(s) != Permission::ReadWrite {
                        return Some(format!("directory M, owner {i} lacks Read_Write"));
                    }
                } else {
                    return Some(format!(
                        "directory M with owner {owner}, but core {i} holds the line"
                    ));
                }
            }
            if !holders.iter().any(|&(i, _)| i == owner as usize) {
                return Some(format!(
                    "directory M, but owner {owner} does not hold the line"
                ));
            }
        } else if is(e.state, self.dir_o) {
            if owner == NOBODY || owner as usize >= st.caches.len() {
                return Some("directory O without an owner".into());
            }
            if !is(st.caches[owner as usize].state(addr), self.cache_o) {
                return Some(format!("directory O, but owner {owner} is not in O"));
            }
            for &(i, s) in &holders {
                if i != owner as usize && !(is(s, self.cache_s) && in_sharers(i)) {
                    return Some(format!(
                        "directory O, core {i} holds the line outside the sharer set"
                    ));
                }
            }
        } else if is(e.state, self.dir_s) {
            if owner != NOBODY {
                return Some(format!("directory S with owner {owner}"));
            }
            for &(i, s) in &holders {
                if !(is(s, self.cache_s) && in_sharers(i)) {
                    return Some(format!(
                        "directory S, core {i} holds the line outside the sharer set"
                    ));
                }
            }
        } else if is(e.state, self.dir_i) {
            if owner != NOBODY {
                return Some(format!("directory I with owner {owner}"));
            }
            if let Some(&(i, _)) = holders.first() {
                return Some(format!("directory I, but core {i} holds the line"));
            }
        }
        None
    }

    // ---- Printing ----

    fn line_summary(&self, st: &State, addr: LineAddr) -> String {
        let ai = self.addr_index(addr).unwrap_or(0);
        let caches: Vec<String> = st
            .caches
            .iter()
            .map(|c| c.state_name(addr).to_string())
            .collect();
        let e = st.dir.entry(addr);
        let who = |n: NodeId| {
            if n == NOBODY {
                "-".to_string()
            } else {
                n.to_string()
            }
        };
        let sharers: Vec<String> = (0..st.caches.len())
            .filter(|i| e.sharers & (1 << i) != 0)
            .map(|i| i.to_string())
            .collect();
        format!(
            "{addr:#x}: caches [{}], dir {} owner {} sharers {{{}}} requestor {}, memory {}, last written {}",
            caches.join(", "),
            self.dirm.state_name(e.state),
            who(e.owner),
            sharers.join(","),
            who(e.requestor),
            st.dir.mem.read(addr)[0],
            st.ghost[ai]
        )
    }

    fn state_text(&self, st: &State) -> Vec<String> {
        let mut v: Vec<String> = self
            .cfg
            .addrs
            .iter()
            .map(|&a| format!("       {}", self.line_summary(st, a)))
            .collect();
        let pend: Vec<String> = st
            .pending
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.map(|p| {
                    let a = self.cfg.addrs[p.addr as usize];
                    if p.store {
                        format!("core {i}: store {} to {a:#x}", p.value)
                    } else {
                        format!("core {i}: load {a:#x}")
                    }
                })
            })
            .collect();
        let moped = st.moped.iter().enumerate().filter_map(|(i, p)| {
            p.map(|p| {
                let a = self.cfg.addrs[p.addr as usize];
                match p.kind {
                    MopedKind::Read => format!("core {i}'s MOPED: read {a:#x}"),
                    k => format!("core {i}'s MOPED: {k:?} {a:#x} with {}", p.value),
                }
            })
        });
        let pend: Vec<String> = pend.into_iter().chain(moped).collect();
        if !pend.is_empty() {
            v.push(format!("       outstanding: {}", pend.join("; ")));
        }
        let net: Vec<String> = st.net.iter().map(msg_text).collect();
        v.push(format!("       in flight: [{}]", net.join(", ")));
        v
    }

    fn action_text(&self, st: &State, a: Action) -> String {
        match a {
            Action::Load { core, addr } => {
                format!("core {core} loads {:#x}", self.cfg.addrs[addr as usize])
            }
            Action::Store { core, addr, value } => {
                format!(
                    "core {core} stores {value} to {:#x}",
                    self.cfg.addrs[addr as usize]
                )
            }
            Action::Evict { core, addr } => {
                format!("core {core} evicts {:#x}", self.cfg.addrs[addr as usize])
            }
            Action::Moped {
                core,
                addr,
                kind,
                value,
            } => {
                let a = self.cfg.addrs[addr as usize];
                match kind {
                    MopedKind::Read => format!("core {core}'s MOPED reads {a:#x} (M_GETS)"),
                    MopedKind::Own => {
                        format!("core {core}'s MOPED owns {a:#x} and writes {value} (M_GETX)")
                    }
                    MopedKind::Fill => {
                        format!("core {core}'s MOPED fills {a:#x} with {value} (M_FILL)")
                    }
                }
            }
            Action::Deliver { index } => match st.net.get(index as usize) {
                Some(m) => format!("deliver {}", msg_text(m)),
                None => format!("deliver message #{index} (absent)"),
            },
        }
    }

    fn fired_text(&self, fired: &[Fired]) -> String {
        let cells: Vec<String> = fired
            .iter()
            .map(|f| {
                let (m, name) = if f.dir {
                    (&self.dirm, "Directory".to_string())
                } else {
                    (&self.l2, format!("L2Cache[{}]", f.node))
                };
                let ne = m.events().len();
                format!(
                    "{name} ({}, {})",
                    m.state_name((f.cell / ne) as u16),
                    m.event_name((f.cell % ne) as u16)
                )
            })
            .collect();
        if cells.is_empty() {
            "no cell".into()
        } else {
            cells.join(" + ")
        }
    }

    /// Replays `actions` from the initial state, printing each step; `last` is a final
    /// failing action, printed with its outcome.
    fn trace(&self, actions: &[Action], last: Option<(Action, &str)>) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(mut st) = self.initial() else {
            return out;
        };
        out.push("  0. initial state".to_string());
        out.extend(self.state_text(&st));
        let mut fired = Vec::new();
        for (k, &a) in actions.iter().enumerate() {
            let text = self.action_text(&st, a);
            match self.step(&st, a, &mut fired) {
                Ok(Some(next)) => {
                    out.push(format!("{:3}. {text}: {}", k + 1, self.fired_text(&fired)));
                    st = next;
                    out.extend(self.state_text(&st));
                }
                _ => {
                    out.push(format!("{:3}. {text}: replay diverged", k + 1));
                    return out;
                }
            }
        }
        if let Some((a, what)) = last {
            let text = self.action_text(&st, a);
            let _ = self.step(&st, a, &mut fired);
            out.push(format!(
                "{:3}. {text}: {} -> {what}",
                actions.len() + 1,
                self.fired_text(&fired)
            ));
        }
        out
    }

    fn path_to(&self, parents: &[(u32, Action)], mut id: u32) -> Vec<Action> {
        let mut v = Vec::new();
        while id != 0 {
            let (p, a) = parents[id as usize];
            v.push(a);
            id = p;
        }
        v.reverse();
        v
    }

    fn cell_name(&self, dir: bool, cell: usize) -> CellName {
        let (m, machine) = if dir {
            (&self.dirm, "Directory")
        } else {
            (&self.l2, "L2Cache")
        };
        let ne = m.events().len();
        CellName {
            machine: machine.to_string(),
            state: m.state_name((cell / ne) as u16).to_string(),
            event: m.event_name((cell % ne) as u16).to_string(),
        }
    }

    // ---- Search ----

    fn explore(&self) -> Result<CheckReport, Failure> {
        let t0 = Instant::now();
        let fail = |kind: FailureKind, detail: String, trace: Vec<String>, n: usize| Failure {
            config: self.cfg.name.clone(),
            kind,
            detail,
            trace,
            states_explored: n,
        };
        let init = self
            .initial()
            .map_err(|d| fail(FailureKind::InvalidTransition, d, Vec::new(), 0))?;
        let mut scratch = Scratch::default();
        let mut visited: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        // parents[id] = (parent id, action from the parent's stored representative).
        let mut parents: Vec<(u32, Action)> = Vec::new();
        let mut depth: Vec<u16> = Vec::new();
        let mut quiescent: Vec<bool> = Vec::new();
        // Successor lists in CSR form (states are expanded in id order).
        let mut succ_start: Vec<u64> = vec![0];
        let mut succ: Vec<u32> = Vec::new();
        let mut queue: VecDeque<(u32, State)> = VecDeque::new();
        let mut cache_reached = vec![false; self.cache_cells];
        let mut dir_reached = vec![false; self.dir_cells];
        let mut max_in_flight = 0usize;
        let mut max_occ = 0usize;

        if let Err(e) = self.check_state(&init) {
            return Err(fail(e.kind, e.detail, self.trace(&[], None), 1));
        }
        visited.insert(self.key(&init, &mut scratch), 0);
        parents.push((0, Action::Deliver { index: 0 }));
        depth.push(0);
        quiescent.push(self.is_quiescent(&init));
        queue.push_back((0, init));

        let mut fired = Vec::new();
        let mut succ_ids: Vec<u32> = Vec::new();
        let progress = std::env::var_os("MOPED_CHECKER_PROGRESS").is_some();
        while let Some((id, st)) = queue.pop_front() {
            if progress && id % 100_000 == 0 {
                eprintln!(
                    "{}: expanded {id}, {} states, depth {}, queue {}, {:.1} s",
                    self.cfg.name,
                    parents.len(),
                    depth[id as usize],
                    queue.len(),
                    t0.elapsed().as_secs_f64()
                );
            }
            succ_ids.clear();
            for a in self.enabled_candidates(&st) {
                let next = match self.step(&st, a, &mut fired) {
                    Ok(Some(n)) => n,
                    Ok(None) => continue,
                    Err(e) => {
                        let path = self.path_to(&parents, id);
                        let n = visited.len();
                        return Err(fail(
                            e.kind,
                            e.detail.clone(),
                            self.trace(&path, Some((a, &e.detail))),
                            n,
                        ));
                    }
                };
                for f in &fired {
                    if f.dir {
                        dir_reached[f.cell] = true;
                    } else {
                        cache_reached[f.cell] = true;
                    }
                }
                let key = self.key(&next, &mut scratch);
                let nid = match visited.get(&key) {
                    Some(&n) => n,
                    None => {
                        let nid = parents.len() as u32;
                        visited.insert(key, nid);
                        parents.push((id, a));
                        depth.push(depth[id as usize] + 1);
                        if let Err(e) = self.check_state(&next) {
                            let path = self.path_to(&parents, nid);
                            return Err(fail(
                                e.kind,
                                e.detail,
                                self.trace(&path, None),
                                visited.len(),
                            ));
                        }
                        max_in_flight = max_in_flight.max(next.net.len());
                        max_occ = max_occ.max(self.buffer_occupancy(&next).0);
                        quiescent.push(self.is_quiescent(&next));
                        if parents.len() > self.cfg.max_states {
                            return Err(fail(
                                FailureKind::StateLimit,
                                format!("more than {} states", self.cfg.max_states),
                                Vec::new(),
                                parents.len(),
                            ));
                        }
                        queue.push_back((nid, next));
                        nid
                    }
                };
                succ_ids.push(nid);
            }
            if succ_ids.is_empty() && !quiescent[id as usize] {
                let path = self.path_to(&parents, id);
                let mut trace = self.trace(&path, None);
                trace.push("       no action is enabled in this non-quiescent state".into());
                return Err(fail(
                    FailureKind::Deadlock,
                    format!("no enabled action after {} steps", path.len()),
                    trace,
                    visited.len(),
                ));
            }
            succ_ids.sort_unstable();
            succ_ids.dedup();
            succ.extend_from_slice(&succ_ids);
            succ_start.push(succ.len() as u64);
        }
        drop(visited);

        // Liveness: backward reachability from the quiescent states.
        let n = parents.len();
        let mut pred_start = vec![0u64; n + 1];
        for &t in &succ {
            pred_start[t as usize + 1] += 1;
        }
        for i in 0..n {
            pred_start[i + 1] += pred_start[i];
        }
        let mut fill = pred_start.clone();
        let mut pred = vec![0u32; succ.len()];
        for s in 0..n {
            for &t in &succ[succ_start[s] as usize..succ_start[s + 1] as usize] {
                pred[fill[t as usize] as usize] = s as u32;
                fill[t as usize] += 1;
            }
        }
        drop(fill);
        let mut good = quiescent.clone();
        let mut stack: Vec<u32> = (0..n as u32).filter(|&i| quiescent[i as usize]).collect();
        while let Some(t) = stack.pop() {
            for &p in &pred[pred_start[t as usize] as usize..pred_start[t as usize + 1] as usize] {
                if !good[p as usize] {
                    good[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        if let Some(bad) = (0..n).find(|&i| !good[i]) {
            let path = self.path_to(&parents, bad as u32);
            let mut trace = self.trace(&path, None);
            trace.push("       from this state no quiescent state is reachable".into());
            let stuck = (0..n).filter(|&i| !good[i]).count();
            return Err(fail(
                FailureKind::Liveness,
                format!("{stuck} of {n} states cannot reach a quiescent state; the shallowest after {} steps", path.len()),
                trace,
                n,
            ));
        }

        let mut cells_reached = Vec::new();
        let mut outside = 0;
        for (dir, reached, m) in [
            (false, &cache_reached, &self.l2),
            (true, &dir_reached, &self.dirm),
        ] {
            let ne = m.events().len();
            for (cell, &r) in reached.iter().enumerate() {
                if r {
                    if !matches!(
                        m.cell((cell / ne) as u16, (cell % ne) as u16),
                        Cell::Transition { .. }
                    ) {
                        outside += 1;
                    }
                    cells_reached.push(self.cell_name(dir, cell));
                }
            }
        }
        let mut not_reached = Vec::new();
        for (dir, reached, m) in [
            (false, &cache_reached, &self.l2),
            (true, &dir_reached, &self.dirm),
        ] {
            let ne = m.events().len();
            for t in m.transitions() {
                let cell = t.state as usize * ne + t.event as usize;
                if matches!(t.cell, Cell::Transition { .. }) && !reached[cell] {
                    not_reached.push(self.cell_name(dir, cell));
                }
            }
        }
        cells_reached.sort();
        not_reached.sort();
        not_reached.dedup();
        Ok(CheckReport {
            config: self.cfg.name.clone(),
            protocol: self.protocol_name.clone(),
            states: n,
            edges: succ.len(),
            quiescent_states: quiescent.iter().filter(|&&q| q).count(),
            depth: depth.iter().copied().max().unwrap_or(0) as usize,
            max_in_flight,
            buffer_capacity: self.cfg.buffer_capacity,
            max_buffer_occupancy: max_occ,
            cells_reached,
            cells_possible_not_reached: not_reached,
            cells_reached_outside_table: outside,
            seconds: t0.elapsed().as_secs_f64(),
        })
    }
}

/// See [`Model::copy_snapshot`].
#[derive(Clone, Debug, PartialEq)]
enum CopySnapshot {
    Owner(
        u16,
        Option<(crate::mem::LineData, bool)>,
        crate::coherence::Placement,
    ),
    Dir(NodeId, u64),
}

#[derive(Default)]
struct Scratch {
    cache_enc: Vec<Vec<u8>>,
    buf: Vec<u8>,
    best: Vec<u8>,
    msgs: Vec<[u8; MSG_ENC]>,
}

fn msg_text(m: &Msg) -> String {
    let mut s = format!("{}({}->{} addr {:#x}", m.ty.name(), m.src, m.dst, m.addr);
    if m.requestor != m.src && m.requestor != m.dst {
        s.push_str(&format!(" req {}", m.requestor));
    }
    if m.acks != 0 {
        s.push_str(&format!(" acks {}", m.acks));
    }
    if m.ty.carries_data() {
        s.push_str(&format!(" data {}", m.data[0]));
        if m.dirty {
            s.push_str(" dirty");
        }
    }
    s.push(')');
    s
}
