//! The per-core L2 controller: the core's coherence agent. It executes the `L2Cache`
//! table; the L1 D-cache is a placement level beneath it (exclusive of the L2), holding the
//! data of lines whose coherence state lives here.

use std::cell::Cell as HintCell;
use std::sync::Arc;

use crate::mem::{
    line_of, read_bytes, write_bytes, LineAddr, LineData, SetAssoc, Slot, LINE_BYTES,
};
use crate::protocol::{
    Cell, EventId, Machine, Permission, ProtocolError, StateId, TransitionCounts,
};

use super::msg::{Msg, MsgType, NodeId, Outbox};
use super::{home_bank, Delivery, Violation};

/// A core's memory access, at most 8 bytes within one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoreReq {
    pub id: u64,
    pub kind: AccessKind,
    pub addr: u64,
    pub size: u8,
    /// The value stored (stores only).
    pub value: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
}

/// Where a completed access found its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HitLevel {
    L1,
    L2,
    /// An L2 miss whose data came from another core's cache.
    OtherCache,
    /// An L2 miss whose data came from memory.
    Memory,
    /// An L2 miss that needed only permission (the core owned the data).
    Upgrade,
    /// A MOPED port access (uncached, answered by the device).
    Port,
}

/// A finished core access: the value loaded (or stored) and where it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    pub req: CoreReq,
    pub value: u64,
    pub level: HitLevel,
}

/// The answer to a core request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreOutcome {
    /// Completed at once (an L1 or L2 hit); the completion is in the output list.
    Hit(HitLevel),
    /// A miss is outstanding; the completion comes with a later message.
    Miss,
    /// The line is busy or no way can be freed: retry when this controller changes.
    Stalled,
}

/// What the MOPED beside this L2 asks of it (paper, section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MopedKind {
    /// Read a send-buffer or page-table line for the copy unit (event `M_GETS`).
    Read,
    /// Exclusive rights to a receive-buffer line (event `M_GETX`).
    Own,
    /// Exclusive rights to a receive-buffer line the copy unit overwrites whole (event
    /// `M_FILL`, where the protocol has it; `M_GETX` otherwise).
    Fill,
}

/// A MOPED request on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MopedReq {
    pub kind: MopedKind,
    pub addr: LineAddr,
    /// For `Own` and `Fill`: bytes to store when the rights are granted (bit `i` of the
    /// mask selects byte `i`), so the grant and the copy unit's write are one step.
    pub write: Option<(LineData, u64)>,
}

/// What this L2 tells its MOPED.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MopedDone {
    /// The data of a line the MOPED read.
    Data { addr: LineAddr, data: LineData },
    /// Exclusive rights granted; the MOPED writes the line later ([`CacheCtrl::moped_write`]).
    Granted { addr: LineAddr },
    /// Exclusive rights granted and the request's bytes stored.
    Written { addr: LineAddr },
}

impl MopedDone {
    pub fn addr(&self) -> LineAddr {
        match *self {
            MopedDone::Data { addr, .. }
            | MopedDone::Granted { addr }
            | MopedDone::Written { addr } => addr,
        }
    }
}

/// Stores the bytes of `data` that `mask` selects into `line`.
fn write_masked(line: &mut LineData, data: &LineData, mask: u64) {
    if mask == u64::MAX {
        *line = *data;
        return;
    }
    for (i, b) in line.iter_mut().enumerate() {
        if mask >> i & 1 == 1 {
            *b = data[i];
        }
    }
}

/// A cached line: coherence state, data and dirty bit.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Line {
    pub state: StateId,
    pub data: LineData,
    pub dirty: bool,
}

/// The payload of an empty way (never read as a line).
impl Default for Line {
    fn default() -> Line {
        Line {
            state: 0,
            data: [0; LINE_BYTES],
            dirty: false,
        }
    }
}

impl Line {
    /// Performs a core's load or store on this line's bytes; returns the value loaded or
    /// stored.
    #[inline]
    fn access(&mut self, req: &CoreReq) -> u64 {
        let offset = (req.addr - line_of(req.addr)) as usize;
        let size = req.size as usize;
        match req.kind {
            AccessKind::Load => read_bytes(&self.data, offset, size),
            AccessKind::Store => {
                write_bytes(&mut self.data, offset, size, req.value);
                self.dirty = true;
                req.value
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Source {
    None,
    Cache,
    Memory,
}

/// Transaction buffer entry (an MSHR): an outstanding miss or writeback.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tbe {
    pub addr: LineAddr,
    /// State of a line that left the arrays (writebacks); `None` while the line has a way.
    pub state: Option<StateId>,
    pub data: LineData,
    pub dirty: bool,
    pub acks_pending: i32,
    pub acks_known: bool,
    pub req: Option<CoreReq>,
    /// The MOPED request this transaction serves, instead of a core request.
    pub moped: Option<MopedReq>,
    source: Source,
}

/// Where [`CacheCtrl::place_line`] puts a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    L1,
    L2,
    /// No way: the state lives in the TBE (writebacks).
    TbeOnly,
}

impl Tbe {
    /// An empty TBE for `addr`.
    pub fn new(addr: LineAddr) -> Tbe {
        Tbe {
            addr,
            state: None,
            data: [0; LINE_BYTES],
            dirty: false,
            acks_pending: 0,
            acks_known: false,
            req: None,
            moped: None,
            source: Source::None,
        }
    }
}

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
    /// GET_COPY and GET_FILL requests sent (OPTCOPY, OPTCACHE).
    pub copy_requests: u64,
    pub fill_requests: u64,
    /// Copy-unit writes into granted lines, and those that found the rights gone.
    pub moped_writes: u64,
    pub moped_writes_revoked: u64,
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

type Action = fn(&mut CacheCtrl, &mut Ctx);

/// The action registry: names used in `protocols/*/L2Cache.sm`, bound to Rust functions.
const ACTIONS: &[(&str, Action)] = &[
    ("i_allocateTBE", CacheCtrl::i_allocate_tbe),
    ("s_deallocateTBE", CacheCtrl::s_deallocate_tbe),
    ("a_issueGETS", CacheCtrl::a_issue_gets),
    ("b_issueGETX", CacheCtrl::b_issue_getx),
    ("c_issuePUTO", CacheCtrl::c_issue_puto),
    ("cc_issuePUTX", CacheCtrl::cc_issue_putx),
    ("uu_profileMiss", CacheCtrl::uu_profile_miss),
    ("h_loadHit", CacheCtrl::h_load_hit),
    ("hh_storeHit", CacheCtrl::hh_store_hit),
    ("hx_loadMissComplete", CacheCtrl::hx_load_miss_complete),
    ("hx_storeMissComplete", CacheCtrl::hx_store_miss_complete),
    ("t_copyDataToTBE", CacheCtrl::t_copy_data_to_tbe),
    ("rr_deallocateLine", CacheCtrl::rr_deallocate_line),
    ("e_sendDataToRequestor", CacheCtrl::e_send_data_to_requestor),
    (
        "ee_sendExclusiveDataToRequestor",
        CacheCtrl::ee_send_exclusive_data_to_requestor,
    ),
    (
        "et_sendDataFromTBEToRequestor",
        CacheCtrl::et_send_data_from_tbe_to_requestor,
    ),
    (
        "eet_sendExclusiveDataFromTBEToRequestor",
        CacheCtrl::eet_send_exclusive_data_from_tbe_to_requestor,
    ),
    ("f_sendAckToRequestor", CacheCtrl::f_send_ack_to_requestor),
    ("m_addAcksFromMessage", CacheCtrl::m_add_acks_from_message),
    ("m_decrementAcks", CacheCtrl::m_decrement_acks),
    ("o_checkForCompletion", CacheCtrl::o_check_for_completion),
    ("u_writeDataToLine", CacheCtrl::u_write_data_to_line),
    ("j_sendUnblock", CacheCtrl::j_send_unblock),
    (
        "jj_sendExclusiveUnblock",
        CacheCtrl::jj_send_exclusive_unblock,
    ),
    ("wb_sendWritebackData", CacheCtrl::wb_send_writeback_data),
    ("mr_sendLineToMoped", CacheCtrl::mr_send_line_to_moped),
    ("md_sendDataToMoped", CacheCtrl::md_send_data_to_moped),
    (
        "tx_copyMessageDataToTBE",
        CacheCtrl::tx_copy_message_data_to_tbe,
    ),
    ("mg_grantToMoped", CacheCtrl::mg_grant_to_moped),
    ("mx_notifyMopedGranted", CacheCtrl::mx_notify_moped_granted),
    ("ac_issueGETCOPY", CacheCtrl::ac_issue_get_copy),
    ("af_issueGETFILL", CacheCtrl::af_issue_get_fill),
    ("uz_writeZerosToLine", CacheCtrl::uz_write_zeros_to_line),
];

/// Names of the L2 controller's actions, in registry order.
pub fn action_names() -> Vec<&'static str> {
    ACTIONS.iter().map(|(n, _)| *n).collect()
}

/// One core's L2 controller with its L1 placement level.
#[derive(Clone, Debug)]
pub struct CacheCtrl {
    pub params: CacheParams,
    table: Arc<Machine>,
    ids: CacheIds,
    l1: SetAssoc<Line>,
    l2: SetAssoc<Line>,
    tbes: Vec<Tbe>,
    /// The last line found in an array, `(addr, slot, in_l1)`: one transition looks its
    /// line up several times. Checked against the tags before use, so it never goes stale.
    hint: HintCell<(LineAddr, Slot, bool)>,
    /// Per state, for loads (`[0]`) and stores (`[1]`): the next state and the cell's
    /// transition counter when the table's cell is a plain L1 hit (its only action
    /// `h_loadHit` or `hh_storeHit`). Derived from the table at load time, so the fast path
    /// in `core_request` is the same transition.
    hit_next: Vec<[Option<(StateId, u16)>; 2]>,
    pub stats: CacheStats,
    /// Transition counts, indexed by the cells' `counter` (see [`Machine::counted_cell`]).
    pub transitions: TransitionCounts,
    /// Answers for the MOPED, in the order they happened; the host drains them.
    moped_done: Vec<MopedDone>,
}

impl CacheCtrl {
    pub fn new(params: CacheParams, table: Arc<Machine>) -> Result<CacheCtrl, ProtocolError> {
        let ids = CacheIds::resolve(&table)?;
        let n = table.n_counters();
        let hit_next = Self::plain_hits(&table, &ids);
        Ok(CacheCtrl {
            l1: SetAssoc::new(params.l1_sets, params.l1_ways),
            l2: SetAssoc::new(params.l2_sets, params.l2_ways),
            params,
            table,
            ids,
            tbes: Vec::new(),
            hint: HintCell::new((LineAddr::MAX, 0, false)),
            hit_next,
            stats: CacheStats::default(),
            transitions: TransitionCounts::new(n),
            moped_done: Vec::new(),
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

    pub fn name(&self) -> String {
        format!("L2Cache[{}]", self.params.node)
    }

    // ---- State lookup ----

    /// The way holding the line, if any (`Loc::L1`, `Loc::L2` or `Loc::Absent`).
    #[inline(always)]
    fn way_of(&self, addr: LineAddr) -> Loc {
        let (a, slot, in_l1) = self.hint.get();
        if a == addr {
            if in_l1 && self.l1.holds(slot, addr) {
                return Loc::L1(slot);
            }
            if !in_l1 && self.l2.holds(slot, addr) {
                return Loc::L2(slot);
            }
        }
        if let Some(s) = self.l1.find(addr) {
            self.hint.set((addr, s, true));
            Loc::L1(s)
        } else if let Some(s) = self.l2.find(addr) {
            self.hint.set((addr, s, false));
            Loc::L2(s)
        } else {
            Loc::Absent
        }
    }

    #[inline]
    fn loc(&self, addr: LineAddr) -> Loc {
        match self.way_of(addr) {
            Loc::Absent
                if self
                    .tbes
                    .iter()
                    .any(|t| t.addr == addr && t.state.is_some()) =>
            {
                Loc::Tbe
            }
            l => l,
        }
    }

    fn line(&self, addr: LineAddr) -> Option<&Line> {
        match self.loc(addr) {
            Loc::L1(s) => Some(self.l1.get(s)),
            Loc::L2(s) => Some(self.l2.get(s)),
            _ => None,
        }
    }

    fn tbe(&self, addr: LineAddr) -> Option<&Tbe> {
        self.tbes.iter().find(|t| t.addr == addr)
    }

    fn tbe_mut(&mut self, addr: LineAddr) -> &mut Tbe {
        let node = self.params.node;
        self.tbes
            .iter_mut()
            .find(|t| t.addr == addr)
            .unwrap_or_else(|| panic!("L2Cache[{node}]: no TBE for {addr:#x}"))
    }

    // ---- The transition's line (SLICC's cache_entry and tbe) ----

    /// The line's state as the transition sees it: in its way, else in its TBE, else I.
    #[inline]
    fn state_in(&self, ctx: &Ctx) -> StateId {
        match ctx.entry {
            Loc::L1(s) => self.l1.get(s).state,
            Loc::L2(s) => self.l2.get(s).state,
            _ => ctx
                .tbe
                .and_then(|i| self.tbes[i].state)
                .unwrap_or(self.ids.i),
        }
    }

    #[inline]
    fn set_state_in(&mut self, ctx: &Ctx, next: StateId) {
        match ctx.entry {
            Loc::L1(s) => self.l1.get_mut(s).state = next,
            Loc::L2(s) => self.l2.get_mut(s).state = next,
            _ => match ctx.tbe {
                Some(i) => self.tbes[i].state = Some(next),
                None => {
                    debug_assert_eq!(next, self.ids.i, "a line without a way or TBE must be I")
                }
            },
        }
    }

    /// An action met a line without the cache entry or TBE its table cell guarantees: a bug
    /// in the protocol's tables (out of line, so the accessors below stay small).
    #[cold]
    #[inline(never)]
    fn missing(&self, what: &str, addr: LineAddr) -> ! {
        panic!("{}: no {what} for {addr:#x}", self.name())
    }

    /// The transition's cache entry; actions call this only where the table guarantees one.
    #[inline]
    fn entry<'c>(&'c self, ctx: &Ctx) -> &'c Line {
        match ctx.entry {
            Loc::L1(s) => self.l1.get(s),
            Loc::L2(s) => self.l2.get(s),
            _ => self.missing("cache entry", ctx.addr),
        }
    }

    #[inline]
    fn entry_mut<'c>(&'c mut self, ctx: &Ctx) -> &'c mut Line {
        match ctx.entry {
            Loc::L1(s) => self.l1.get_mut(s),
            Loc::L2(s) => self.l2.get_mut(s),
            _ => self.missing("cache entry", ctx.addr),
        }
    }

    /// The transition's TBE; actions call this only where the table guarantees one.
    #[inline]
    fn tbe_in<'c>(&'c mut self, ctx: &Ctx) -> &'c mut Tbe {
        match ctx.tbe {
            Some(i) => &mut self.tbes[i],
            None => self.missing("TBE", ctx.addr),
        }
    }

    /// The coherence state of a line in this core.
    pub fn state(&self, addr: LineAddr) -> StateId {
        match self.loc(addr) {
            Loc::L1(s) => self.l1.get(s).state,
            Loc::L2(s) => self.l2.get(s).state,
            Loc::Tbe => self.tbe(addr).and_then(|t| t.state).unwrap_or(self.ids.i),
            Loc::Absent => self.ids.i,
        }
    }

    pub fn state_name(&self, addr: LineAddr) -> &str {
        self.table.state_name(self.state(addr))
    }

    /// The data this core holds for a line, if its state grants read permission.
    pub fn readable_data(&self, addr: LineAddr) -> Option<&LineData> {
        let st = self.state(addr);
        match self.table.permission(st) {
            Permission::ReadOnly | Permission::ReadWrite => self.line(addr).map(|l| &l.data),
            _ => None,
        }
    }

    /// Whether the line is in the L1 array (for tests and statistics).
    pub fn in_l1(&self, addr: LineAddr) -> bool {
        self.l1.find(addr).is_some()
    }

    /// True when no transaction is outstanding.
    pub fn is_quiescent(&self) -> bool {
        self.tbes.is_empty()
    }

    /// Outstanding TBEs (for watchdogs and error reports).
    pub fn tbes(&self) -> &[Tbe] {
        &self.tbes
    }

    /// Every line with a way, sorted by address, and TBE-only states.
    pub fn lines(&self) -> Vec<(LineAddr, StateId, Option<&Line>)> {
        let mut v: Vec<_> = self
            .l1
            .iter()
            .chain(self.l2.iter())
            .map(|(_, a, w)| (a, w.state, Some(w)))
            .collect();
        for t in &self.tbes {
            if let Some(s) = t.state {
                v.push((t.addr, s, None));
            }
        }
        v.sort_by_key(|(a, _, _)| *a);
        v
    }

    /// Appends a canonical encoding of the coherence-relevant state (lines, placement, TBEs;
    /// not statistics or LRU clocks) for the exhaustive checker's visited set.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut lines: Vec<(LineAddr, u8, &Line)> = self
            .l1
            .iter()
            .map(|(_, a, w)| (a, 1u8, w))
            .chain(self.l2.iter().map(|(_, a, w)| (a, 2u8, w)))
            .collect();
        lines.sort_by_key(|(a, _, _)| *a);
        out.push(lines.len() as u8);
        for (addr, level, l) in lines {
            out.extend_from_slice(&addr.to_le_bytes());
            out.push(level);
            out.extend_from_slice(&l.state.to_le_bytes());
            out.push(l.dirty as u8);
            out.extend_from_slice(&l.data);
        }
        let mut tbes: Vec<&Tbe> = self.tbes.iter().collect();
        tbes.sort_by_key(|t| t.addr);
        out.push(tbes.len() as u8);
        for t in tbes {
            out.extend_from_slice(&t.addr.to_le_bytes());
            out.extend_from_slice(&t.state.map(|s| s + 1).unwrap_or(0).to_le_bytes());
            out.push(t.dirty as u8);
            out.extend_from_slice(&t.data);
            out.extend_from_slice(&t.acks_pending.to_le_bytes());
            out.push(t.acks_known as u8);
            out.push(t.source as u8);
            match t.req {
                None => out.push(0),
                Some(r) => {
                    out.push(1 + r.kind as u8);
                    out.extend_from_slice(&r.addr.to_le_bytes());
                    out.push(r.size);
                    out.extend_from_slice(&r.value.to_le_bytes());
                }
            }
            match t.moped {
                None => out.push(0),
                Some(m) => {
                    out.push(1 + m.kind as u8);
                    match m.write {
                        None => out.push(0),
                        Some((data, mask)) => {
                            out.push(1);
                            out.extend_from_slice(&mask.to_le_bytes());
                            out.extend_from_slice(&data);
                        }
                    }
                }
            }
        }
    }

    /// Puts a line straight into a state, for controller-under-test harnesses: in a way of
    /// the L1 (or the L2 with `in_l2`) unless `in_array` is false, with an optional TBE.
    /// Replaces whatever this controller held for the line.
    pub fn place_line(
        &mut self,
        addr: LineAddr,
        state: StateId,
        data: LineData,
        dirty: bool,
        place: Placement,
        tbe: Option<Tbe>,
    ) {
        self.drop_empty_line(addr);
        self.tbes.retain(|t| t.addr != addr);
        let line = Line { state, data, dirty };
        match place {
            Placement::L1 => {
                let slot = self
                    .l1
                    .free_slot(addr)
                    .expect("free L1 way for the placed line");
                self.l1.insert(slot, addr, line);
            }
            Placement::L2 => {
                let slot = self
                    .l2
                    .free_slot(addr)
                    .expect("free L2 way for the placed line");
                self.l2.insert(slot, addr, line);
            }
            Placement::TbeOnly => {}
        }
        if let Some(mut t) = tbe {
            t.addr = addr;
            if place == Placement::TbeOnly {
                t.state = Some(state);
            }
            self.tbes.push(t);
        }
    }

    /// A copy of the line in a way, if any.
    pub fn line_copy(&self, addr: LineAddr) -> Option<Line> {
        self.line(addr).cloned()
    }

    /// Where the line sits.
    pub fn placement(&self, addr: LineAddr) -> Placement {
        match self.loc(addr) {
            Loc::L1(_) => Placement::L1,
            Loc::L2(_) => Placement::L2,
            _ => Placement::TbeOnly,
        }
    }

    /// The line's TBE, for harnesses that set up ack counts.
    pub fn tbe_for_test(&mut self, addr: LineAddr) -> &mut Tbe {
        self.tbe_mut(addr)
    }

    // ---- Event processing ----

    fn violation(&self, addr: LineAddr, state: StateId, event: EventId, detail: &str) -> Violation {
        Violation {
            controller: self.name(),
            cycle: 0,
            addr,
            state: self.table.state_name(state).to_string(),
            event: self.table.event_name(event).to_string(),
            detail: detail.to_string(),
        }
    }

    /// Runs one (state, event) cell of the table, then any trigger it raised.
    fn handle(&mut self, event: EventId, ctx: &mut Ctx) -> Result<Delivery, Violation> {
        let addr = ctx.addr;
        ctx.entry = self.way_of(addr);
        ctx.tbe = self.tbes.iter().position(|t| t.addr == addr);
        let mut event = event;
        loop {
            let state = self.state_in(ctx);
            match self.table.cell(state, event) {
                Cell::Transition {
                    next,
                    first_action,
                    n_actions,
                    counter,
                } => {
                    self.transitions.bump(counter as usize);
                    // Index the list afresh each time: the table's borrow must end before
                    // an action borrows the controller mutably.
                    for k in 0..n_actions as usize {
                        let a = self.table.actions(first_action, n_actions)[k];
                        (ACTIONS[a as usize].1)(self, ctx);
                    }
                    self.set_state_in(ctx, next);
                }
                Cell::Stall => {
                    self.stats.stalls += 1;
                    return Ok(Delivery::Stalled);
                }
                Cell::Impossible => {
                    return Err(self.violation(addr, state, event, "impossible cell reached"))
                }
            }
            if !std::mem::take(&mut ctx.trigger) {
                return Ok(Delivery::Done);
            }
            event = self.ids.all_acks;
            ctx.msg = None;
        }
    }

    /// The event a network message raises in this controller.
    fn event_for(&self, msg: &Msg) -> Option<EventId> {
        let ids = &self.ids;
        Some(match msg.ty {
            MsgType::FwdGets => ids.fwd_gets,
            MsgType::FwdGetx if msg.requestor == self.params.node => ids.own_getx,
            MsgType::FwdGetx => ids.fwd_getx,
            MsgType::Inv => ids.inv,
            MsgType::Ack => ids.ack,
            MsgType::Data => ids.data,
            MsgType::DataExclusive => ids.exclusive_data,
            MsgType::WbAck => ids.writeback_ack,
            MsgType::WbNack => ids.writeback_nack,
            MsgType::FwdGetCopy => ids.fwd_get_copy?,
            MsgType::FillGrant => ids.fill_grant?,
            _ => return None,
        })
    }

    /// Delivers a network message. A stalled message is left to the caller to retry.
    pub fn deliver(
        &mut self,
        msg: &Msg,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<Delivery, Violation> {
        let Some(event) = self.event_for(msg) else {
            return Err(Violation {
                controller: self.name(),
                cycle: 0,
                addr: msg.addr,
                state: self.state_name(msg.addr).to_string(),
                event: msg.ty.name().to_string(),
                detail: "message type not handled by an L2 controller".into(),
            });
        };
        match msg.ty {
            MsgType::Inv => self.stats.invalidations += 1,
            MsgType::FwdGets | MsgType::FwdGetx | MsgType::FwdGetCopy => {
                self.stats.forwarded_requests += 1
            }
            _ => {}
        }
        let mut ctx = Ctx {
            addr: msg.addr,
            msg: Some(msg),
            req: None,
            moped: None,
            delay: self.params.l2_latency,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        };
        let n_done = ctx.done.len();
        let r = self.handle(event, &mut ctx)?;
        if r == Delivery::Done && done.len() > n_done {
            self.promote_completed(msg.addr);
        }
        Ok(r)
    }

    /// A core access. Hits complete at once; misses complete with a later message.
    pub fn core_request(
        &mut self,
        req: CoreReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<CoreOutcome, Violation> {
        let addr = line_of(req.addr);
        debug_assert!(
            req.size >= 1
                && req.size <= 8
                && (req.addr - addr) as usize + req.size as usize <= LINE_BYTES
        );
        let event = match req.kind {
            AccessKind::Load => self.ids.load,
            AccessKind::Store => self.ids.store,
        };
        let loc = self.loc(addr);
        if let Loc::L1(slot) = loc {
            // The common case without the generic machinery: a plain hit in the L1.
            let state = self.l1.get(slot).state;
            if let Some((next, counter)) = self.hit_next[state as usize][req.kind as usize] {
                self.transitions.bump(counter as usize);
                let line = self.l1.get_mut(slot);
                let value = line.access(&req);
                line.state = next;
                self.l1.touch(slot);
                done.push(Completed {
                    req,
                    value,
                    level: HitLevel::L1,
                });
                self.stats.l1_hits += 1;
                return Ok(CoreOutcome::Hit(HitLevel::L1));
            }
        }
        if loc == Loc::Absent && !self.make_room(addr, out, done)? {
            self.stats.stalls += 1;
            return Ok(CoreOutcome::Stalled);
        }
        let delay = match loc {
            Loc::L1(_) => self.params.l1_latency,
            _ => self.params.l1_latency + self.params.l2_latency,
        };
        let n_done = done.len();
        let mut ctx = Ctx {
            addr,
            msg: None,
            req: Some(req),
            moped: None,
            delay,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        };
        match self.handle(event, &mut ctx)? {
            Delivery::Stalled => {
                if loc == Loc::Absent {
                    // Room was made for a line that never got its transition.
                    self.drop_empty_line(addr);
                }
                Ok(CoreOutcome::Stalled)
            }
            Delivery::Done if done.len() > n_done => {
                let level = if matches!(loc, Loc::L1(_)) {
                    HitLevel::L1
                } else {
                    HitLevel::L2
                };
                done.last_mut().expect("completion").level = level;
                match level {
                    HitLevel::L1 => {
                        self.stats.l1_hits += 1;
                        if let Loc::L1(slot) = self.loc(addr) {
                            self.l1.touch(slot);
                        }
                    }
                    _ => {
                        self.stats.l1_misses += 1;
                        self.stats.l2_hits += 1;
                        self.promote(addr, out, done)?;
                    }
                }
                Ok(CoreOutcome::Hit(level))
            }
            Delivery::Done => {
                self.stats.l1_misses += 1;
                Ok(CoreOutcome::Miss)
            }
        }
    }

    /// Evicts a line as if it were chosen as a victim (the checker's voluntary eviction).
    /// Returns false if the line is absent or its state does not allow it now.
    pub fn evict(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Violation> {
        let st = self.state(addr);
        if st == self.ids.i || !self.table.is_stable(st) {
            return Ok(false);
        }
        let mut ctx = Ctx {
            addr,
            msg: None,
            req: None,
            moped: None,
            delay: self.params.l2_latency,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        };
        Ok(self.handle(self.ids.replacement, &mut ctx)? == Delivery::Done)
    }

    // ---- The MOPED beside this L2 ----

    /// A MOPED request. A line in the L1 moves into the L2 first (the paper's MOPED works on
    /// L2 lines); a receive line that is not here gets an L2 way, a send line does not.
    /// `Hit` means the answer is already in [`CacheCtrl::take_moped_done`]; `Stalled` means
    /// retry when this controller changes. An error if the protocol has no MOPED events.
    pub fn moped_request(
        &mut self,
        req: MopedReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<CoreOutcome, Violation> {
        let addr = req.addr;
        debug_assert_eq!(addr, line_of(addr));
        let ids = &self.ids;
        let event = match req.kind {
            MopedKind::Read => ids.m_gets,
            MopedKind::Own => ids.m_getx,
            MopedKind::Fill => ids.m_fill.or(ids.m_getx),
        };
        let Some(event) = event else {
            return Err(Violation {
                controller: self.name(),
                cycle: 0,
                addr,
                state: self.state_name(addr).to_string(),
                event: format!("{:?}", req.kind),
                detail: format!("protocol `{}` has no MOPED events", self.table.name()),
            });
        };
        let mut placed = false;
        let ready = match self.loc(addr) {
            Loc::L1(_) if self.table.is_stable(self.state(addr)) => self.demote(addr, out, done)?,
            Loc::Absent if req.kind != MopedKind::Read => {
                let made = self.make_l2_way(addr, out, done)?;
                if made {
                    let slot = self.l2.free_slot(addr).expect("way made");
                    let empty = Line {
                        state: self.ids.i,
                        ..Line::default()
                    };
                    self.l2.insert(slot, addr, empty);
                    placed = true;
                }
                made
            }
            _ => true,
        };
        if !ready {
            self.stats.stalls += 1;
            return Ok(CoreOutcome::Stalled);
        }
        let n_done = self.moped_done.len();
        let mut ctx = Ctx {
            addr,
            msg: None,
            req: None,
            moped: Some(req),
            delay: self.params.l2_latency,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        };
        match self.handle(event, &mut ctx)? {
            Delivery::Stalled => {
                if placed {
                    self.drop_empty_line(addr);
                }
                Ok(CoreOutcome::Stalled)
            }
            Delivery::Done => {
                match req.kind {
                    MopedKind::Read => self.stats.moped_reads += 1,
                    MopedKind::Own => self.stats.moped_owns += 1,
                    MopedKind::Fill => self.stats.moped_fills += 1,
                }
                if self.moped_done.len() > n_done {
                    self.stats.moped_local += 1;
                    Ok(CoreOutcome::Hit(HitLevel::L2))
                } else {
                    Ok(CoreOutcome::Miss)
                }
            }
        }
    }

    /// The copy unit's write into a line it was granted: stores the bytes `mask` selects,
    /// as a store hit would. False when the rights are gone (the line was taken or evicted
    /// since the grant): the MOPED must ask again.
    pub fn moped_write(&mut self, addr: LineAddr, data: &LineData, mask: u64) -> bool {
        let st = self.state(addr);
        let writable = self.table.is_stable(st)
            && self.table.permission(st) == Permission::ReadWrite
            && matches!(self.loc(addr), Loc::L1(_) | Loc::L2(_));
        if !writable {
            self.stats.moped_writes_revoked += 1;
            return false;
        }
        self.stats.moped_writes += 1;
        // The table's store-hit cell says where a written line goes (M -> MM).
        let next = self.hit_next[st as usize][AccessKind::Store as usize].map(|(n, _)| n);
        let line = match self.loc(addr) {
            Loc::L1(s) => self.l1.get_mut(s),
            Loc::L2(s) => self.l2.get_mut(s),
            _ => unreachable!("checked above"),
        };
        write_masked(&mut line.data, data, mask);
        line.dirty = true;
        if let Some(next) = next {
            line.state = next;
        }
        true
    }

    /// Takes the answers for the MOPED produced since the last call.
    pub fn take_moped_done(&mut self) -> std::vec::Drain<'_, MopedDone> {
        self.moped_done.drain(..)
    }

    /// True when answers for the MOPED are waiting.
    pub fn has_moped_done(&self) -> bool {
        !self.moped_done.is_empty()
    }

    /// Moves a stable line from the L1 down into the L2, replacing in the L2 if needed.
    /// False if no L2 way can be freed now.
    fn demote(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Violation> {
        if !self.make_l2_way(addr, out, done)? {
            return Ok(false);
        }
        let Loc::L1(s) = self.loc(addr) else {
            return Ok(true);
        };
        let line = self.l1.remove(s);
        let slot = self.l2.free_slot(addr).expect("way made");
        self.l2.insert(slot, addr, line);
        Ok(true)
    }

    // ---- Placement (the exclusive L1/L2 hierarchy) ----

    fn evictable(&self) -> impl Fn(&Line) -> bool + '_ {
        move |l| self.table.is_stable(l.state) && l.state != self.ids.i
    }

    /// Makes a way for a new line in the L1 (or the L2 when there is no L1), evicting a
    /// victim through the table's Replacement event. False if every candidate is busy.
    fn make_room(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Violation> {
        let empty = Line {
            state: self.ids.i,
            data: [0; LINE_BYTES],
            dirty: false,
        };
        if self.l1.ways() > 0 {
            if let Some(slot) = self.l1.free_slot(addr) {
                self.l1.insert(slot, addr, empty);
                return Ok(true);
            }
            let Some(v) = self.l1.victim(addr, self.evictable()) else {
                return Ok(false);
            };
            let vaddr = self.l1.tag(v);
            // The L1 victim moves down into the L2 (exclusive hierarchy).
            if !self.make_l2_way(vaddr, out, done)? {
                return Ok(false);
            }
            let victim = self.l1.remove(v);
            let l2slot = self.l2.free_slot(vaddr).expect("way made");
            self.l2.insert(l2slot, vaddr, victim);
            self.l1.insert(v, addr, empty);
            Ok(true)
        } else {
            if !self.make_l2_way(addr, out, done)? {
                return Ok(false);
            }
            let slot = self.l2.free_slot(addr).expect("way made");
            self.l2.insert(slot, addr, empty);
            Ok(true)
        }
    }

    /// Ensures a free L2 way in `addr`'s set, replacing the LRU stable line if needed.
    fn make_l2_way(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Violation> {
        if self.l2.free_slot(addr).is_some() {
            return Ok(true);
        }
        let Some(v) = self.l2.victim(addr, self.evictable()) else {
            return Ok(false);
        };
        let vaddr = self.l2.tag(v);
        let mut ctx = Ctx {
            addr: vaddr,
            msg: None,
            req: None,
            moped: None,
            delay: self.params.l2_latency,
            out,
            done,
            trigger: false,
            entry: Loc::Absent,
            tbe: None,
        };
        let r = self.handle(self.ids.replacement, &mut ctx)?;
        Ok(r == Delivery::Done && self.l2.free_slot(addr).is_some())
    }

    fn drop_empty_line(&mut self, addr: LineAddr) {
        if let Loc::L1(s) = self.loc(addr) {
            self.l1.remove(s);
        } else if let Loc::L2(s) = self.loc(addr) {
            self.l2.remove(s);
        }
    }

    /// After a miss completes on a line that sits in the L2, move it up to the L1.
    fn promote_completed(&mut self, addr: LineAddr) {
        if let Loc::L2(_) = self.loc(addr) {
            if self.table.is_stable(self.state(addr)) {
                self.try_swap_up(addr);
            }
        }
    }

    /// Moves a line just hit in the L2 into the L1, sending the L1's victim down.
    fn promote(
        &mut self,
        addr: LineAddr,
        _out: &mut dyn Outbox,
        _done: &mut [Completed],
    ) -> Result<(), Violation> {
        self.try_swap_up(addr);
        // A line that could not move up is still the L2's most recently used.
        if let Loc::L2(slot) = self.loc(addr) {
            self.l2.touch(slot);
        }
        Ok(())
    }

    /// Best-effort swap of an L2 line into the L1: only when the L1 victim can take a way
    /// in the L2 without another replacement (its set has a free way once this line leaves).
    fn try_swap_up(&mut self, addr: LineAddr) {
        if self.l1.ways() == 0 {
            return;
        }
        let Loc::L2(from) = self.loc(addr) else {
            return;
        };
        if let Some(slot) = self.l1.free_slot(addr) {
            let w = self.l2.remove(from);
            self.l1.insert(slot, addr, w);
            return;
        }
        let Some(v) = self.l1.victim(addr, self.evictable()) else {
            return;
        };
        let vaddr = self.l1.tag(v);
        let fits = self.l2.free_slot(vaddr).is_some() || self.l2.same_set(from, vaddr);
        if !fits {
            return;
        }
        let w = self.l2.remove(from);
        let victim = self.l1.remove(v);
        self.l1.insert(v, addr, w);
        let slot = self.l2.free_slot(vaddr).expect("fits");
        self.l2.insert(slot, vaddr, victim);
    }

    // ---- Helpers for actions ----

    fn home(&self, addr: LineAddr) -> NodeId {
        (self.params.n_cores + home_bank(addr, self.params.dir_banks)) as NodeId
    }

    /// A control message about the transition's line, from this controller.
    fn message(&self, ctx: &Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) -> Msg {
        Msg::control(ty, ctx.addr, self.params.node, dst, requestor)
    }

    fn send(&self, ctx: &mut Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) {
        let m = self.message(ctx, ty, dst, requestor);
        ctx.out.send(m, ctx.delay);
    }

    fn msg<'m>(ctx: &Ctx<'m>) -> &'m Msg {
        ctx.msg.expect("action needs a message")
    }

    fn complete(&mut self, ctx: &mut Ctx, req: CoreReq, level: HitLevel) {
        let value = self.entry_mut(ctx).access(&req);
        ctx.done.push(Completed { req, value, level });
    }

    // ---- Actions (names as in the protocol file) ----

    fn i_allocate_tbe(&mut self, ctx: &mut Ctx) {
        debug_assert!(ctx.tbe.is_none() && self.tbe(ctx.addr).is_none());
        self.tbes.push(Tbe::new(ctx.addr));
        let i = self.tbes.len() - 1;
        self.tbes[i].req = ctx.req.take();
        self.tbes[i].moped = ctx.moped.take();
        ctx.tbe = Some(i);
    }

    fn s_deallocate_tbe(&mut self, ctx: &mut Ctx) {
        if let Some(i) = ctx.tbe.take() {
            // TBEs are found by address; their order carries no meaning.
            self.tbes.swap_remove(i);
        }
    }

    fn a_issue_gets(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::Gets, home, self.params.node);
    }

    fn b_issue_getx(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::Getx, home, self.params.node);
    }

    fn c_issue_puto(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::Puto, home, self.params.node);
    }

    fn cc_issue_putx(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::Putx, home, self.params.node);
    }

    fn uu_profile_miss(&mut self, _ctx: &mut Ctx) {
        self.stats.l2_misses += 1;
    }

    fn h_load_hit(&mut self, ctx: &mut Ctx) {
        let req = ctx.req.take().expect("load hit without a request");
        self.complete(ctx, req, HitLevel::L1);
    }

    fn hh_store_hit(&mut self, ctx: &mut Ctx) {
        let req = ctx.req.take().expect("store hit without a request");
        self.complete(ctx, req, HitLevel::L1);
    }

    fn miss_complete(&mut self, ctx: &mut Ctx) {
        let tbe = self.tbe_in(ctx);
        let req = tbe.req.take();
        let level = match tbe.source {
            Source::Cache => HitLevel::OtherCache,
            Source::Memory => HitLevel::Memory,
            Source::None => HitLevel::Upgrade,
        };
        let Some(req) = req else { return };
        match level {
            HitLevel::OtherCache => self.stats.l2_misses_other_cache += 1,
            HitLevel::Memory => self.stats.l2_misses_memory += 1,
            _ => self.stats.l2_misses_upgrade += 1,
        }
        self.complete(ctx, req, level);
    }

    fn hx_load_miss_complete(&mut self, ctx: &mut Ctx) {
        self.miss_complete(ctx);
    }

    fn hx_store_miss_complete(&mut self, ctx: &mut Ctx) {
        self.miss_complete(ctx);
    }

    fn t_copy_data_to_tbe(&mut self, ctx: &mut Ctx) {
        let line = self.entry(ctx);
        let (data, dirty) = (line.data, line.dirty);
        let tbe = self.tbe_in(ctx);
        tbe.data = data;
        tbe.dirty = dirty;
    }

    fn rr_deallocate_line(&mut self, ctx: &mut Ctx) {
        let state = self.state_in(ctx);
        match std::mem::replace(&mut ctx.entry, Loc::Absent) {
            Loc::L1(s) => drop(self.l1.remove(s)),
            Loc::L2(s) => drop(self.l2.remove(s)),
            _ => {}
        }
        // A line leaving for a writeback keeps its state in the TBE until the next state is set.
        if let Some(i) = ctx.tbe {
            self.tbes[i].state = Some(state);
        }
    }

    fn send_line(&self, ctx: &mut Ctx, ty: MsgType, data: LineData, dirty: bool) {
        let m = Self::msg(ctx);
        let (dst, acks) = (m.requestor, m.acks);
        let mut o = self.message(ctx, ty, dst, dst);
        o.data = data;
        o.dirty = dirty;
        o.acks = acks;
        ctx.out.send(o, ctx.delay);
    }

    fn e_send_data_to_requestor(&mut self, ctx: &mut Ctx) {
        let data = self.entry(ctx).data;
        // A shared copy is clean for its holder: this owner keeps the writeback duty.
        self.send_line(ctx, MsgType::Data, data, false);
    }

    fn ee_send_exclusive_data_to_requestor(&mut self, ctx: &mut Ctx) {
        let l = self.entry(ctx);
        let (data, dirty) = (l.data, l.dirty);
        self.send_line(ctx, MsgType::DataExclusive, data, dirty);
    }

    fn et_send_data_from_tbe_to_requestor(&mut self, ctx: &mut Ctx) {
        let data = self.tbe_in(ctx).data;
        self.send_line(ctx, MsgType::Data, data, false);
    }

    fn eet_send_exclusive_data_from_tbe_to_requestor(&mut self, ctx: &mut Ctx) {
        let t = self.tbe_in(ctx);
        let (data, dirty) = (t.data, t.dirty);
        self.send_line(ctx, MsgType::DataExclusive, data, dirty);
    }

    fn f_send_ack_to_requestor(&mut self, ctx: &mut Ctx) {
        let r = Self::msg(ctx).requestor;
        self.send(ctx, MsgType::Ack, r, r);
    }

    fn m_add_acks_from_message(&mut self, ctx: &mut Ctx) {
        let acks = Self::msg(ctx).acks as i32;
        let t = self.tbe_in(ctx);
        t.acks_pending += acks;
        t.acks_known = true;
    }

    fn m_decrement_acks(&mut self, ctx: &mut Ctx) {
        self.tbe_in(ctx).acks_pending -= 1;
    }

    fn o_check_for_completion(&mut self, ctx: &mut Ctx) {
        let t = self.tbe_in(ctx);
        if t.acks_known && t.acks_pending == 0 {
            ctx.trigger = true;
        }
    }

    fn u_write_data_to_line(&mut self, ctx: &mut Ctx) {
        let m = Self::msg(ctx);
        let from_cache = (m.src as usize) < self.params.n_cores;
        let (data, dirty) = (m.data, m.dirty);
        let line = self.entry_mut(ctx);
        line.data = data;
        line.dirty = dirty;
        self.tbe_in(ctx).source = if from_cache {
            Source::Cache
        } else {
            Source::Memory
        };
    }

    fn j_send_unblock(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::Unblock, home, self.params.node);
    }

    fn jj_send_exclusive_unblock(&mut self, ctx: &mut Ctx) {
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::ExclusiveUnblock, home, self.params.node);
    }

    fn wb_send_writeback_data(&mut self, ctx: &mut Ctx) {
        let t = self.tbe_in(ctx);
        let (data, dirty) = (t.data, t.dirty);
        let ty = if dirty {
            MsgType::WbDirtyData
        } else {
            MsgType::WbCleanData
        };
        if dirty {
            self.stats.writebacks_dirty += 1;
        } else {
            self.stats.writebacks_clean += 1;
        }
        let home = self.home(ctx.addr);
        let mut o = self.message(ctx, ty, home, self.params.node);
        o.data = data;
        o.dirty = dirty;
        ctx.out.send(o, ctx.delay);
    }

    // ---- MOPED actions (overlays in protocols/basemoped, optcopy, optcache) ----

    fn moped_req(&self, ctx: &mut Ctx) -> MopedReq {
        match ctx.moped.take() {
            Some(m) => m,
            None => self.missing("MOPED request", ctx.addr),
        }
    }

    /// Grants exclusive rights on the transition's line to the MOPED, storing its bytes if
    /// the request carried them.
    fn grant_to_moped(&mut self, ctx: &mut Ctx, m: MopedReq) {
        let addr = ctx.addr;
        let answer = match m.write {
            Some((data, mask)) => {
                let line = self.entry_mut(ctx);
                write_masked(&mut line.data, &data, mask);
                line.dirty = true;
                self.stats.moped_writes += 1;
                MopedDone::Written { addr }
            }
            None => MopedDone::Granted { addr },
        };
        self.moped_done.push(answer);
    }

    fn mr_send_line_to_moped(&mut self, ctx: &mut Ctx) {
        let _ = self.moped_req(ctx);
        let data = self.entry(ctx).data;
        self.moped_done.push(MopedDone::Data {
            addr: ctx.addr,
            data,
        });
    }

    fn md_send_data_to_moped(&mut self, ctx: &mut Ctx) {
        let data = Self::msg(ctx).data;
        if (Self::msg(ctx).src as usize) < self.params.n_cores {
            self.stats.moped_misses_other_cache += 1;
        } else {
            self.stats.moped_misses_memory += 1;
        }
        let addr = ctx.addr;
        let served = self.tbe_in(ctx).moped.take();
        debug_assert!(served.is_some_and(|m| m.kind == MopedKind::Read));
        self.moped_done.push(MopedDone::Data { addr, data });
    }

    fn tx_copy_message_data_to_tbe(&mut self, ctx: &mut Ctx) {
        let m = Self::msg(ctx);
        let (data, dirty) = (m.data, m.dirty);
        let t = self.tbe_in(ctx);
        t.data = data;
        t.dirty = dirty;
    }

    fn mg_grant_to_moped(&mut self, ctx: &mut Ctx) {
        let m = self.moped_req(ctx);
        self.grant_to_moped(ctx, m);
    }

    fn mx_notify_moped_granted(&mut self, ctx: &mut Ctx) {
        // The same completion serves a core's store miss: only a MOPED's TBE has work here.
        if let Some(m) = self.tbe_in(ctx).moped.take() {
            match self.tbe_in(ctx).source {
                Source::Cache => self.stats.moped_misses_other_cache += 1,
                Source::Memory => self.stats.moped_misses_memory += 1,
                Source::None => self.stats.moped_misses_no_data += 1,
            }
            self.grant_to_moped(ctx, m);
        }
    }

    fn ac_issue_get_copy(&mut self, ctx: &mut Ctx) {
        self.stats.copy_requests += 1;
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::GetCopy, home, self.params.node);
    }

    fn af_issue_get_fill(&mut self, ctx: &mut Ctx) {
        self.stats.fill_requests += 1;
        let home = self.home(ctx.addr);
        self.send(ctx, MsgType::GetFill, home, self.params.node);
    }

    fn uz_write_zeros_to_line(&mut self, ctx: &mut Ctx) {
        let line = self.entry_mut(ctx);
        line.data = [0; LINE_BYTES];
        line.dirty = true;
    }
}
