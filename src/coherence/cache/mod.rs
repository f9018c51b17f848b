//! The per-core L2 controller: the core's coherence agent. It executes the `L2Cache`
//! table; the L1 D-cache is a placement level beneath it (exclusive of the L2), holding the
//! data of lines whose coherence state lives here.
//!
//! - `request`: what a core and the MOPED ask of the controller, and its answers;
//! - `controller`: the entry points (a network message, a core access, a MOPED request) and
//!   the loop that runs the table's cells;
//! - `placement`: the exclusive L1/L2 hierarchy under one coherence state;
//! - `line`: lines, TBEs, and the transition's view of them that actions use;
//! - `actions`: the actions `protocols/*/L2Cache.sm` name, one file per protocol layer;
//! - `inspect`: what tests, harnesses and the checker read and set directly.

mod actions;
mod controller;
mod inspect;
mod line;
mod placement;
mod prefetch;
mod request;

use std::cell::Cell as HintCell;
use std::sync::Arc;

use crate::mem::{LineAddr, SetAssoc, Slot};
use crate::protocol::{Cell, EventId, Machine, ProtocolError, StateId, TransitionCounts};

use super::msg::{Msg, NodeId, Outbox};

pub use actions::action_names;
use actions::ACTIONS;
pub use inspect::{EncodeBuf, Placement};
use line::{DataStore, Way};
pub use line::{Line, Tbe};
use prefetch::Prefetcher;
pub use prefetch::{PrefetchKind, PrefetchParams};
pub use request::{
    AccessKind, Completed, CoreOutcome, CoreReq, HitLevel, MopedDone, MopedKind, MopedReq,
};

/// The id of the L1 prefetcher's requests: their completions reach no core (the cores
/// number their accesses from 0).
pub const PREFETCH_ID: u64 = u64::MAX;
/// Prefetches a controller keeps outstanding at once.
pub const MAX_PREFETCHES_IN_FLIGHT: usize = 8;

/// Geometry and latencies of one core's caches.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheParams {
    pub node: NodeId,
    pub n_cores: usize,
    pub dir_banks: usize,
    pub l1_sets: usize,
    pub l1_ways: usize,
    pub l2_sets: usize,
    pub l2_ways: usize,
    pub l1_latency: u32,
    pub l2_latency: u32,
    /// The L1 data prefetcher.
    pub prefetch: PrefetchParams,
}

/// Per-core counters; descriptions and units are given where they are registered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub l1_hits: u64,
    pub l1_misses: u64,
    pub l2_hits: u64,
    pub l2_misses: u64,
    pub l2_misses_other_cache: u64,
    pub l2_misses_memory: u64,
    pub l2_misses_upgrade: u64,
    pub writebacks_dirty: u64,
    pub writebacks_clean: u64,
    pub invalidations: u64,
    pub forwarded_requests: u64,
    pub stalls: u64,
    /// MOPED requests taken, by kind.
    pub moped_reads: u64,
    pub moped_owns: u64,
    pub moped_fills: u64,
    /// MOPED requests answered from this core's own caches.
    pub moped_local: u64,
    /// MOPED requests that missed in the L2, by what served them: memory, another cache,
    /// or the directory's grant without data (a fill, an upgrade).
    pub moped_misses_memory: u64,
    pub moped_misses_other_cache: u64,
    pub moped_misses_no_data: u64,
    /// Of the reads served by memory, those of page walks.
    pub moped_walk_misses_memory: u64,
    /// GET_COPY and GET_FILL requests sent (OPTCOPY, OPTCACHE).
    pub copy_requests: u64,
    pub fill_requests: u64,
    /// Copy-unit writes into granted lines, and those that found the rights gone.
    pub moped_writes: u64,
    pub moped_writes_revoked: u64,
    /// The L1 prefetcher's requests, apart from the demand counts above: issued (the next
    /// two together), lines moved up from this L2, lines requested from the directory,
    /// lines a demand access then found in the L1, and candidates dropped (present, busy,
    /// or no room without a stall).
    pub l1_prefetches_issued: u64,
    pub l1_prefetches_l2: u64,
    pub l1_prefetches_network: u64,
    pub l1_prefetches_useful: u64,
    pub l1_prefetches_dropped: u64,
    /// Software prefetches (the core's `prefetch` instructions): lines requested (up from
    /// this L2 or from the directory) and those dropped as the hardware's are; a demand hit
    /// on such a line counts in `l1_prefetches_useful` too.
    pub sw_prefetches: u64,
    pub sw_prefetches_dropped: u64,
    /// Lines the core's `clflush` instructions took out of its caches.
    pub flushes: u64,
}

/// State and event ids the Rust side needs, resolved once when the table is loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheIds {
    pub i: StateId,
    pub load: EventId,
    pub store: EventId,
    pub replacement: EventId,
    pub fwd_gets: EventId,
    pub fwd_getx: EventId,
    pub own_getx: EventId,
    pub inv: EventId,
    pub ack: EventId,
    pub data: EventId,
    pub exclusive_data: EventId,
    pub all_acks: EventId,
    pub writeback_ack: EventId,
    pub writeback_nack: EventId,
    /// MOPED events, present in the MOPED designs' overlays only.
    pub m_gets: Option<EventId>,
    pub m_getx: Option<EventId>,
    pub m_fill: Option<EventId>,
    pub fwd_get_copy: Option<EventId>,
    pub fill_grant: Option<EventId>,
}

impl CacheIds {
    pub fn resolve(m: &Machine) -> Result<CacheIds, ProtocolError> {
        let s = m.require_states(&["I"])?;
        let e = m.require_events(&[
            "Load",
            "Store",
            "Replacement",
            "Fwd_GETS",
            "Fwd_GETX",
            "Own_GETX",
            "Inv",
            "Ack",
            "Data",
            "Exclusive_Data",
            "All_Acks",
            "Writeback_Ack",
            "Writeback_Nack",
        ])?;
        Ok(CacheIds {
            i: s[0],
            load: e[0],
            store: e[1],
            replacement: e[2],
            fwd_gets: e[3],
            fwd_getx: e[4],
            own_getx: e[5],
            inv: e[6],
            ack: e[7],
            data: e[8],
            exclusive_data: e[9],
            all_acks: e[10],
            writeback_ack: e[11],
            writeback_nack: e[12],
            m_gets: m.event_id("M_GETS"),
            m_getx: m.event_id("M_GETX"),
            m_fill: m.event_id("M_FILL"),
            fwd_get_copy: m.event_id("Fwd_GET_COPY"),
            fill_grant: m.event_id("Fill_Grant"),
        })
    }
}

/// Where a line's state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    L1(Slot),
    L2(Slot),
    Tbe,
    Absent,
}

/// Everything an action may need about the event being processed.
struct Ctx<'a> {
    addr: LineAddr,
    msg: Option<&'a Msg>,
    req: Option<CoreReq>,
    moped: Option<MopedReq>,
    /// Controller latency before messages sent by this transition leave.
    delay: u32,
    out: &'a mut dyn Outbox,
    done: &'a mut Vec<Completed>,
    trigger: bool,
    /// The line's cache entry (SLICC's `cache_entry`): its way, or `Loc::Absent`. Resolved
    /// once per transition; actions that move the line keep it current.
    entry: Loc,
    /// The line's TBE (SLICC's `tbe`): its index in `tbes`, if any.
    tbe: Option<usize>,
}

impl<'a> Ctx<'a> {
    /// The context of an event on `addr` that no message or request raised (a
    /// replacement); the entry points fill in what raised theirs.
    fn new(
        addr: LineAddr,
        delay: u32,
        out: &'a mut dyn Outbox,
        done: &'a mut Vec<Completed>,
    ) -> Ctx<'a> {
        Ctx {
            addr,
            msg: None,
            req: None,
            moped: None,
            delay,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        }
    }
}

/// One core's L2 controller with its L1 placement level.
#[derive(Debug)]
pub struct CacheCtrl {
    pub params: CacheParams,
    table: Arc<Machine>,
    ids: CacheIds,
    l1: SetAssoc<Way>,
    l2: SetAssoc<Way>,
    /// The bytes of the lines in `l1` and `l2`, apart from their tags and states.
    store: DataStore,
    tbes: Vec<Tbe>,
    /// The last line found in an array, `(addr, slot, in_l1)`: one transition looks its
    /// line up several times. Checked against the tags before use, so it never goes stale.
    hint: HintCell<(LineAddr, Slot, bool)>,
    /// Per state, for loads (`[0]`) and stores (`[1]`): the next state and the cell's
    /// transition counter when the table's cell is a plain hit (its only action
    /// `h_loadHit` or `hh_storeHit`), the same cell for a line in the L1 or the L2.
    /// Derived from the table at load time, so the fast paths in `core_request` are the
    /// same transition.
    hit_next: Vec<[Option<(StateId, u16)>; 2]>,
    pub stats: CacheStats,
    /// Transition counts, indexed by the cells' `counter` (see [`Machine::counted_cell`]).
    pub transitions: TransitionCounts,
    /// Answers for the MOPED, in the order they happened; the host drains them.
    moped_done: Vec<MopedDone>,
    prefetcher: Prefetcher,
    /// A prefetch (the prefetcher's or a software one) has brought a line: demand hits then
    /// look for the line's prefetched bit, to count the prefetch useful.
    prefetched_lines: bool,
}

crate::reuse::clone_by_fields!(CacheCtrl {
    params,
    table,
    ids,
    l1,
    l2,
    store,
    tbes,
    hint,
    hit_next,
    stats,
    transitions,
    moped_done,
    prefetcher,
    prefetched_lines,
});

impl CacheCtrl {
    pub fn new(params: CacheParams, table: Arc<Machine>) -> Result<CacheCtrl, ProtocolError> {
        let ids = CacheIds::resolve(&table)?;
        let n = table.n_counters();
        let hit_next = Self::plain_hits(&table, &ids);
        let prefetcher = Prefetcher::new(params.prefetch);
        Ok(CacheCtrl {
            l1: SetAssoc::new(params.l1_sets, params.l1_ways),
            l2: SetAssoc::new(params.l2_sets, params.l2_ways),
            store: DataStore::with_capacity(
                params.l1_sets * params.l1_ways + params.l2_sets * params.l2_ways,
            ),
            params,
            table,
            ids,
            tbes: Vec::new(),
            hint: HintCell::new((LineAddr::MAX, 0, false)),
            hit_next,
            stats: CacheStats::default(),
            transitions: TransitionCounts::new(n),
            moped_done: Vec::new(),
            prefetcher,
            prefetched_lines: false,
        })
    }

    pub fn table(&self) -> &Machine {
        &self.table
    }

    /// The cells whose whole effect is a hit completion (see `hit_next`).
    fn plain_hits(table: &Machine, ids: &CacheIds) -> Vec<[Option<(StateId, u16)>; 2]> {
        let id_of = |name: &str| ACTIONS.iter().position(|(n, _)| *n == name);
        let (load_hit, store_hit) = (id_of("h_loadHit"), id_of("hh_storeHit"));
        (0..table.states().len() as StateId)
            .map(|st| {
                let plain = |event: EventId, action: Option<usize>| match table.cell(st, event) {
                    Cell::Transition {
                        next,
                        first_action,
                        n_actions,
                        counter,
                    } => {
                        let list = table.actions(first_action, n_actions);
                        (list.len() == 1 && Some(list[0] as usize) == action)
                            .then_some((next, counter))
                    }
                    _ => None,
                };
                [plain(ids.load, load_hit), plain(ids.store, store_hit)]
            })
            .collect()
    }

    pub fn ids(&self) -> &CacheIds {
        &self.ids
    }

    /// The L1's and the L2's lines with their states, in LRU order set by set (see
    /// [`SetAssoc::lru_signature`]): equal signatures replace alike.
    pub fn lru_signature(&self, out: &mut Vec<u64>) {
        self.l1.lru_signature(|l| u64::from(l.state), out);
        self.l2.lru_signature(|l| u64::from(l.state), out);
    }

    /// Refreshes the L1's and the L2's kept signatures ([`SetAssoc::refresh_signature`]):
    /// true if either differs from the last refresh, false if the two arrays hold what
    /// they held then in the same order (so [`CacheCtrl::lru_signature`] would be equal).
    pub fn refresh_lru_signature(&mut self) -> bool {
        let l1 = self.l1.refresh_signature(|l| u64::from(l.state));
        let l2 = self.l2.refresh_signature(|l| u64::from(l.state));
        l1 || l2
    }

    pub fn name(&self) -> String {
        format!("L2Cache[{}]", self.params.node)
    }
}
