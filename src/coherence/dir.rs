//! The directory at memory, one controller per address bank. It executes the `Directory`
//! table and owns its bank's memory, so memory reads and writes carry real bytes.

use std::sync::Arc;

use crate::mem::{bank_stride, BackingStore, LineAddr, PagedMap};
use crate::protocol::{Cell, EventId, Machine, ProtocolError, StateId, TransitionCounts};

use super::msg::{Msg, MsgType, NodeId, Outbox};
use super::{Delivery, Violation};

/// No core.
pub const NOBODY: NodeId = NodeId::MAX;

/// Directory state of one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DirEntry {
    pub state: StateId,
    /// The core holding the line in M or O.
    pub owner: NodeId,
    /// Cores that may hold the line in S (a superset: S evictions are silent).
    pub sharers: u64,
    /// The core whose request is in progress (the directory TBE).
    pub requestor: NodeId,
}

impl DirEntry {
    /// A line the directory holds no record of: in state `invalid`, no owner, no sharers.
    pub fn untracked(invalid: StateId) -> DirEntry {
        DirEntry {
            state: invalid,
            owner: NOBODY,
            sharers: 0,
            requestor: NOBODY,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DirParams {
    pub node: NodeId,
    pub bank: usize,
    /// Banks in the system (a power of two); lines are interleaved across them.
    pub banks: usize,
    pub n_cores: usize,
    pub latency: u32,
    pub mem_latency: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    pub memory_reads: u64,
    pub memory_writes: u64,
    pub forwards: u64,
    pub invalidations_sent: u64,
    pub stalls: u64,
    /// GET_COPY and GET_FILL requests taken (OPTCOPY, OPTCACHE).
    pub copy_requests: u64,
    pub fill_requests: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirIds {
    pub i: StateId,
    pub gets: EventId,
    pub getx: EventId,
    pub putx: EventId,
    pub puto: EventId,
    pub put_not_owner: EventId,
    pub unblock: EventId,
    pub exclusive_unblock: EventId,
    pub dirty_writeback: EventId,
    pub clean_writeback: EventId,
    /// MOPED requests, present in the OPTCOPY and OPTCACHE overlays only.
    pub get_copy: Option<EventId>,
    pub get_fill: Option<EventId>,
}

impl DirIds {
    pub fn resolve(m: &Machine) -> Result<DirIds, ProtocolError> {
        let s = m.require_states(&["I"])?;
        let e = m.require_events(&[
            "GETS",
            "GETX",
            "PUTX",
            "PUTO",
            "PUT_NotOwner",
            "Unblock",
            "Exclusive_Unblock",
            "Dirty_Writeback",
            "Clean_Writeback",
        ])?;
        Ok(DirIds {
            i: s[0],
            gets: e[0],
            getx: e[1],
            putx: e[2],
            puto: e[3],
            put_not_owner: e[4],
            unblock: e[5],
            exclusive_unblock: e[6],
            dirty_writeback: e[7],
            clean_writeback: e[8],
            get_copy: m.event_id("GET_COPY"),
            get_fill: m.event_id("GET_FILL"),
        })
    }
}

struct Ctx<'a> {
    msg: &'a Msg,
    /// The line's directory entry, read once and written back after the actions.
    e: DirEntry,
    out: &'a mut dyn Outbox,
}

type Action = fn(&mut DirCtrl, &mut Ctx);

/// The action registry: names used in `protocols/*/Directory.sm`.
const ACTIONS: &[(&str, Action)] = &[
    ("v_allocateTBE", DirCtrl::v_allocate_tbe),
    ("w_deallocateTBE", DirCtrl::w_deallocate_tbe),
    ("d_sendDataFromMemory", DirCtrl::d_send_data_from_memory),
    (
        "dd_sendExclusiveDataFromMemory",
        DirCtrl::dd_send_exclusive_data_from_memory,
    ),
    ("f_forwardToOwner", DirCtrl::f_forward_to_owner),
    ("i_sendInvToSharers", DirCtrl::i_send_inv_to_sharers),
    ("a_sendWritebackAck", DirCtrl::a_send_writeback_ack),
    ("b_sendWritebackNack", DirCtrl::b_send_writeback_nack),
    ("m_writeDataToMemory", DirCtrl::m_write_data_to_memory),
    ("c_clearOwner", DirCtrl::c_clear_owner),
    (
        "s_addRequestorToSharers",
        DirCtrl::s_add_requestor_to_sharers,
    ),
    ("ss_setOwnerToRequestor", DirCtrl::ss_set_owner_to_requestor),
    ("fc_forwardCopyToOwner", DirCtrl::fc_forward_copy_to_owner),
    ("gf_sendFillGrant", DirCtrl::gf_send_fill_grant),
    (
        "io_sendInvToSharersAndOwner",
        DirCtrl::io_send_inv_to_sharers_and_owner,
    ),
];

/// Names of the directory's actions, in registry order.
pub fn action_names() -> Vec<&'static str> {
    ACTIONS.iter().map(|(n, _)| *n).collect()
}

/// One directory bank with its memory.
#[derive(Clone, Debug)]
pub struct DirCtrl {
    pub params: DirParams,
    table: Arc<Machine>,
    ids: DirIds,
    entries: PagedMap<DirEntry>,
    pub mem: BackingStore,
    pub stats: DirStats,
    /// Transition counts, indexed by the cells' `counter` (see [`Machine::counted_cell`]).
    pub transitions: TransitionCounts,
}

#[inline]
fn bit(n: NodeId) -> u64 {
    1u64 << n
}

impl DirCtrl {
    pub fn new(params: DirParams, table: Arc<Machine>) -> Result<DirCtrl, ProtocolError> {
        let ids = DirIds::resolve(&table)?;
        let n = table.n_counters();
        let invalid = DirEntry::untracked(ids.i);
        let (shift, low) = bank_stride(params.bank, params.banks);
        Ok(DirCtrl {
            mem: BackingStore::for_bank(params.bank, params.banks),
            params,
            table,
            ids,
            entries: PagedMap::new(shift, low, invalid),
            stats: DirStats::default(),
            transitions: TransitionCounts::new(n),
        })
    }

    pub fn table(&self) -> &Machine {
        &self.table
    }

    pub fn ids(&self) -> &DirIds {
        &self.ids
    }

    pub fn name(&self) -> String {
        format!("Directory[{}]", self.params.bank)
    }

    pub fn entry(&self, addr: LineAddr) -> DirEntry {
        self.entries
            .get(addr)
            .copied()
            .unwrap_or(DirEntry::untracked(self.ids.i))
    }

    /// Every tracked line, sorted by address.
    pub fn sorted_entries(&self) -> Vec<(LineAddr, DirEntry)> {
        self.entries.sorted()
    }

    /// Appends a canonical encoding of the directory entries and memory contents, with core
    /// ids renamed by `rename` (the checker's symmetry reduction permutes cores).
    pub fn encode(&self, out: &mut Vec<u8>, rename: &dyn Fn(NodeId) -> NodeId) {
        let entries = self.sorted_entries();
        out.push(entries.len() as u8);
        for (addr, e) in entries {
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&e.state.to_le_bytes());
            let r = |n: NodeId| if n == NOBODY { NOBODY } else { rename(n) };
            out.extend_from_slice(&r(e.owner).to_le_bytes());
            out.extend_from_slice(&r(e.requestor).to_le_bytes());
            let mut sharers = 0u64;
            let mut s = e.sharers;
            while s != 0 {
                let c = s.trailing_zeros() as NodeId;
                s &= s - 1;
                sharers |= 1u64 << rename(c);
            }
            out.extend_from_slice(&sharers.to_le_bytes());
        }
        let lines = self.mem.sorted_lines();
        out.push(lines.len() as u8);
        for (addr, data) in lines {
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&data);
        }
    }

    /// Renames core ids in every entry (the checker applies a symmetry permutation).
    pub fn rename_cores(&mut self, rename: &dyn Fn(NodeId) -> NodeId) {
        for e in self.entries.values_mut() {
            let r = |n: NodeId| if n == NOBODY { NOBODY } else { rename(n) };
            e.owner = r(e.owner);
            e.requestor = r(e.requestor);
            let mut sharers = 0u64;
            let mut s = e.sharers;
            while s != 0 {
                let c = s.trailing_zeros() as NodeId;
                s &= s - 1;
                sharers |= 1u64 << rename(c);
            }
            e.sharers = sharers;
        }
    }

    /// Puts a line straight into a directory state, for controller-under-test harnesses.
    pub fn place_entry(&mut self, addr: LineAddr, entry: DirEntry) {
        self.entries.insert(addr, entry);
    }

    /// True when no line is in a transient state.
    pub fn is_quiescent(&self) -> bool {
        self.entries
            .iter()
            .all(|(_, e)| self.table.is_stable(e.state))
    }

    fn event_for(&self, msg: &Msg, owner: NodeId) -> Option<EventId> {
        let ids = &self.ids;
        Some(match msg.ty {
            MsgType::Gets => ids.gets,
            MsgType::Getx => ids.getx,
            MsgType::Putx if owner == msg.src => ids.putx,
            MsgType::Puto if owner == msg.src => ids.puto,
            MsgType::Putx | MsgType::Puto => ids.put_not_owner,
            MsgType::Unblock => ids.unblock,
            MsgType::ExclusiveUnblock => ids.exclusive_unblock,
            MsgType::WbDirtyData => ids.dirty_writeback,
            MsgType::WbCleanData => ids.clean_writeback,
            MsgType::GetCopy => ids.get_copy?,
            MsgType::GetFill => ids.get_fill?,
            _ => return None,
        })
    }

    /// Delivers a network message. A stalled message is left to the caller to retry.
    pub fn deliver(&mut self, msg: &Msg, out: &mut dyn Outbox) -> Result<Delivery, Violation> {
        // One lookup for the read and the write-back of the entry.
        let place = self.entries.place(msg.addr);
        let entry = self
            .entries
            .get_at(place)
            .copied()
            .unwrap_or(DirEntry::untracked(self.ids.i));
        let state = entry.state;
        let Some(event) = self.event_for(msg, entry.owner) else {
            return Err(Violation {
                controller: self.name(),
                cycle: 0,
                addr: msg.addr,
                state: self.table.state_name(state).to_string(),
                event: msg.ty.name().to_string(),
                detail: "message type not handled by a directory".into(),
            });
        };
        let is_response = matches!(
            msg.ty,
            MsgType::Unblock
                | MsgType::ExclusiveUnblock
                | MsgType::WbDirtyData
                | MsgType::WbCleanData
        );
        if is_response && !self.table.is_stable(state) && entry.requestor != msg.src {
            return Err(Violation {
                controller: self.name(),
                cycle: 0,
                addr: msg.addr,
                state: self.table.state_name(state).to_string(),
                event: self.table.event_name(event).to_string(),
                detail: format!(
                    "response from core {} while serving core {}",
                    msg.src, entry.requestor
                ),
            });
        }
        match self.table.cell(state, event) {
            Cell::Transition {
                next,
                first_action,
                n_actions,
                counter,
            } => {
                self.transitions.bump(counter as usize);
                match msg.ty {
                    MsgType::GetCopy => self.stats.copy_requests += 1,
                    MsgType::GetFill => self.stats.fill_requests += 1,
                    _ => {}
                }
                let mut ctx = Ctx { msg, e: entry, out };
                // Index the list afresh each time: the table's borrow must end before an
                // action borrows the controller mutably.
                for k in 0..n_actions as usize {
                    let a = self.table.actions(first_action, n_actions)[k];
                    (ACTIONS[a as usize].1)(self, &mut ctx);
                }
                let mut e = ctx.e;
                e.state = next;
                if next == self.ids.i && e.sharers == 0 && e.owner == NOBODY {
                    self.entries.remove_at(place);
                } else {
                    self.entries.set_at(place, e);
                }
                Ok(Delivery::Done)
            }
            Cell::Stall => {
                self.stats.stalls += 1;
                Ok(Delivery::Stalled)
            }
            Cell::Impossible => Err(Violation {
                controller: self.name(),
                cycle: 0,
                addr: msg.addr,
                state: self.table.state_name(state).to_string(),
                event: self.table.event_name(event).to_string(),
                detail: "impossible cell reached".into(),
            }),
        }
    }

    /// A control message about the message's line, from this directory.
    fn message(&self, ctx: &Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) -> Msg {
        Msg::control(ty, ctx.msg.addr, self.params.node, dst, requestor)
    }

    fn send(&self, ctx: &mut Ctx, ty: MsgType, dst: NodeId, requestor: NodeId, delay: u32) {
        let m = self.message(ctx, ty, dst, requestor);
        ctx.out.send(m, delay);
    }

    // ---- Actions (names as in the protocol file) ----

    fn v_allocate_tbe(&mut self, ctx: &mut Ctx) {
        ctx.e.requestor = ctx.msg.src;
    }

    fn w_deallocate_tbe(&mut self, ctx: &mut Ctx) {
        ctx.e.requestor = NOBODY;
    }

    fn d_send_data_from_memory(&mut self, ctx: &mut Ctx) {
        self.stats.memory_reads += 1;
        let data = self.mem.read(ctx.msg.addr);
        let delay = self.params.latency + self.params.mem_latency;
        let r = ctx.msg.src;
        let mut m = self.message(ctx, MsgType::Data, r, r);
        m.data = data;
        ctx.out.send(m, delay);
    }

    fn dd_send_exclusive_data_from_memory(&mut self, ctx: &mut Ctx) {
        self.stats.memory_reads += 1;
        let data = self.mem.read(ctx.msg.addr);
        let r = ctx.msg.src;
        let acks = (ctx.e.sharers & !bit(r)).count_ones() as i16;
        let delay = self.params.latency + self.params.mem_latency;
        let mut m = self.message(ctx, MsgType::DataExclusive, r, r);
        m.data = data;
        m.acks = acks;
        ctx.out.send(m, delay);
    }

    fn f_forward_to_owner(&mut self, ctx: &mut Ctx) {
        self.stats.forwards += 1;
        let e = ctx.e;
        let r = ctx.msg.src;
        let (ty, acks) = match ctx.msg.ty {
            MsgType::Gets => (MsgType::FwdGets, 0),
            _ => (
                MsgType::FwdGetx,
                (e.sharers & !bit(r) & !bit(e.owner)).count_ones() as i16,
            ),
        };
        let mut m = self.message(ctx, ty, e.owner, r);
        m.acks = acks;
        ctx.out.send(m, self.params.latency);
    }

    fn i_send_inv_to_sharers(&mut self, ctx: &mut Ctx) {
        let e = ctx.e;
        let r = ctx.msg.src;
        let mut targets = e.sharers & !bit(r);
        if e.owner != NOBODY {
            targets &= !bit(e.owner);
        }
        while targets != 0 {
            let core = targets.trailing_zeros() as NodeId;
            targets &= targets - 1;
            self.stats.invalidations_sent += 1;
            self.send(ctx, MsgType::Inv, core, r, self.params.latency);
        }
    }

    fn a_send_writeback_ack(&mut self, ctx: &mut Ctx) {
        let s = ctx.msg.src;
        self.send(ctx, MsgType::WbAck, s, s, self.params.latency);
    }

    fn b_send_writeback_nack(&mut self, ctx: &mut Ctx) {
        let s = ctx.msg.src;
        self.send(ctx, MsgType::WbNack, s, s, self.params.latency);
    }

    fn m_write_data_to_memory(&mut self, ctx: &mut Ctx) {
        self.stats.memory_writes += 1;
        self.mem.write(ctx.msg.addr, &ctx.msg.data);
    }

    fn c_clear_owner(&mut self, ctx: &mut Ctx) {
        ctx.e.owner = NOBODY;
    }

    fn s_add_requestor_to_sharers(&mut self, ctx: &mut Ctx) {
        let e = &mut ctx.e;
        e.sharers |= bit(e.requestor);
    }

    fn ss_set_owner_to_requestor(&mut self, ctx: &mut Ctx) {
        let e = &mut ctx.e;
        e.owner = e.requestor;
        e.sharers = 0;
    }

    // ---- MOPED actions (overlays in protocols/optcopy, optcache) ----

    fn fc_forward_copy_to_owner(&mut self, ctx: &mut Ctx) {
        self.stats.forwards += 1;
        let (owner, r) = (ctx.e.owner, ctx.msg.src);
        self.send(ctx, MsgType::FwdGetCopy, owner, r, self.params.latency);
    }

    /// Every valid copy but the requestor's: the sharers and the owner.
    fn others(e: &DirEntry, r: NodeId) -> u64 {
        let owner = if e.owner == NOBODY { 0 } else { bit(e.owner) };
        (e.sharers | owner) & !bit(r)
    }

    fn gf_send_fill_grant(&mut self, ctx: &mut Ctx) {
        let r = ctx.msg.src;
        let acks = Self::others(&ctx.e, r).count_ones() as i16;
        let mut m = self.message(ctx, MsgType::FillGrant, r, r);
        m.acks = acks;
        ctx.out.send(m, self.params.latency);
    }

    fn io_send_inv_to_sharers_and_owner(&mut self, ctx: &mut Ctx) {
        let r = ctx.msg.src;
        let mut targets = Self::others(&ctx.e, r);
        while targets != 0 {
            let core = targets.trailing_zeros() as NodeId;
            targets &= targets - 1;
            self.stats.invalidations_sent += 1;
            self.send(ctx, MsgType::Inv, core, r, self.params.latency);
        }
    }
}
