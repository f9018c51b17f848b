//! The CMP as a [`Model`]: a set of [`CacheCtrl`]s, one [`DirCtrl`], the multiset of
//! in-flight messages (an unordered network: any message may be delivered next), each
//! core's outstanding request and a ghost "last written value" per address. Nothing of the
//! protocol is re-implemented here; every step calls `core_request`, `evict`,
//! `moped_request` or `deliver` on a clone of the controllers.
//!
//! Actions from a state:
//! - a core with no outstanding request loads byte 0 of an address, or stores a value of the
//!   data domain into it (`Stalled` means the action is not enabled);
//! - a core voluntarily evicts a stable line it holds;
//! - a core's MOPED (in the `m` configurations) reads, owns or fills a line;
//! - one in-flight message is delivered (identical duplicates are explored once; `Stalled`
//!   means not enabled, the message stays in the network).
//!
//! Each step also records the table cells that fired, for the trace and the coverage.

mod invariants;
mod moped;
mod print;
mod state;
mod step;
mod symmetry;

use std::rc::Rc;
use std::sync::Arc;

use crate::coherence::{CacheCtrl, CacheParams, DirCtrl, DirParams, NodeId, Protocol};
use crate::mem::LineAddr;
use crate::protocol::{Machine, TransitionCounts};

use super::config::CheckConfig;
use super::report::{CheckReport, Failure, FailureKind};
use super::search::{self, Model};
use state::{Action, Fault, Firing, State};
use symmetry::Scratch;

/// Explores every reachable state of `cfg` under `protocol`.
pub(super) fn check(cfg: &CheckConfig, protocol: &Protocol) -> Result<CheckReport, Failure> {
    let t0 = std::time::Instant::now();
    let model = CmpModel::new(cfg, protocol).map_err(|detail| Failure {
        config: cfg.name.clone(),
        kind: FailureKind::InvalidTransition,
        detail,
        trace: Vec::new(),
        states_explored: 0,
    })?;
    let opts = search::Options {
        max_states: cfg.max_states,
        progress: std::env::var_os("MOPED_CHECKER_PROGRESS").map(|_| cfg.name.clone()),
    };
    match search::bfs(&model, &opts) {
        Ok(done) => Ok(model.report(done, t0)),
        Err(c) => Err(model.failure(c)),
    }
}

/// The model of one configuration under one protocol: the configuration, the tables, and
/// the state ids its properties name.
struct CmpModel<'a> {
    cfg: &'a CheckConfig,
    l2: Arc<Machine>,
    dirm: Arc<Machine>,
    cache_cells: usize,
    dir_cells: usize,
    /// The permutations of cache indices symmetry reduction minimises over.
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

/// What one search tallies besides its states.
struct Work {
    scratch: Scratch,
    /// The cells the step in progress fired.
    fired: Firing,
    /// The cells any step fired, by `state * events + event`.
    cache_reached: Vec<bool>,
    dir_reached: Vec<bool>,
    max_in_flight: usize,
    max_occupancy: usize,
    /// States the search is done with, whose buffers the next steps' clones reuse.
    spare: Vec<State>,
}

/// Spent states kept for reuse: enough for the successors of one state that turn out
/// seen or not enabled, a few kilobytes each.
const SPARE_STATES: usize = 64;

impl<'a> CmpModel<'a> {
    fn new(cfg: &'a CheckConfig, protocol: &Protocol) -> Result<CmpModel<'a>, String> {
        validate(cfg, protocol)?;
        let l2 = Arc::clone(&protocol.l2);
        let dirm = Arc::clone(&protocol.dir);
        let cache_i = l2.state_id("I").ok_or("L2Cache has no state I")?;
        Ok(CmpModel {
            cfg,
            cache_cells: l2.states().len() * l2.events().len(),
            dir_cells: dirm.states().len() * dirm.events().len(),
            perms: symmetry::permutations_of(cfg),
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
                prefetch: Default::default(),
            };
            let mut c = CacheCtrl::new(p, Arc::clone(&self.l2)).map_err(|e| e.to_string())?;
            c.transitions = TransitionCounts::default();
            caches.push(Rc::new(c));
        }
        let dp = DirParams {
            node: self.dir_node(),
            bank: 0,
            banks: 1,
            n_cores: n,
            latency: 1,
            mem_latency: 1,
            mem_channel_cycles: 0,
            device: None,
        };
        // Pages of two lines: a frame's 64 would copy 4 KiB of memory with every state.
        let mut dir =
            DirCtrl::paged(dp, Arc::clone(&self.dirm), Some(1)).map_err(|e| e.to_string())?;
        dir.transitions = TransitionCounts::default();
        Ok(State {
            caches,
            dir: Rc::new(dir),
            net: Vec::new(),
            pending: vec![None; n],
            moped: vec![None; n],
            ghost: vec![0; self.cfg.addrs.len()],
        })
    }

    fn addr_index(&self, addr: LineAddr) -> Option<usize> {
        self.cfg.addrs.iter().position(|&a| a == addr)
    }
}

/// The limits of the state encoding, and MOPED configurations on MOPED designs only.
fn validate(cfg: &CheckConfig, protocol: &Protocol) -> Result<(), String> {
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
    Ok(())
}

impl Model for CmpModel<'_> {
    type State = State;
    type Action = Action;
    type Violation = Fault;
    type Key = Box<[u8]>;
    type Work = Work;

    fn new_work(&self) -> Work {
        Work {
            scratch: Scratch::default(),
            fired: Firing::default(),
            cache_reached: vec![false; self.cache_cells],
            dir_reached: vec![false; self.dir_cells],
            max_in_flight: 0,
            max_occupancy: 0,
            spare: Vec::new(),
        }
    }

    fn init_state(&self) -> Result<State, Fault> {
        self.initial()
            .map_err(|d| Fault::new(FailureKind::InvalidTransition, d))
    }

    fn actions(&self, st: &State, actions: &mut Vec<Action>) {
        self.enabled_candidates(st, actions)
    }

    fn next_state(&self, st: &State, a: Action, work: &mut Work) -> Result<Option<State>, Fault> {
        let next = self.step(st, a, &mut work.fired, &mut work.spare)?;
        if next.is_some() {
            for f in &work.fired.cells {
                if f.dir {
                    work.dir_reached[f.cell] = true;
                } else {
                    work.cache_reached[f.cell] = true;
                }
            }
        }
        Ok(next)
    }

    fn always(&self, st: &State) -> Result<(), Fault> {
        self.check_state(st)
    }

    fn quiescent(&self, st: &State) -> bool {
        self.is_quiescent(st)
    }

    fn key(&self, st: &State, work: &mut Work) -> Box<[u8]> {
        self.canonical_key(st, &mut work.scratch)
    }

    fn recycle(&self, st: State, work: &mut Work) {
        if work.spare.len() < SPARE_STATES {
            work.spare.push(st);
        }
    }

    fn on_new_state(&self, st: &State, work: &mut Work) {
        work.max_in_flight = work.max_in_flight.max(st.net.len());
        work.max_occupancy = work.max_occupancy.max(self.buffer_occupancy(st).0);
    }
}
