//! The directory at memory, one controller per address bank. It executes the `Directory`
//! table and owns its bank's memory, so memory reads and writes carry real bytes. The
//! actions `protocols/*/Directory.sm` name are in `actions`, one file per protocol layer.

mod actions;

use std::sync::Arc;

use crate::mem::{bank_stride, BackingStore, LineAddr, PagedMap};
use crate::protocol::{Cell, EventId, Machine, ProtocolError, StateId, TransitionCounts};

use super::coreset::CoreSet;
use super::msg::{Msg, MsgType, NodeId, Outbox};
use super::{Delivery, Violation};

pub use actions::action_names;
use actions::ACTIONS;

/// No core.
pub const NOBODY: NodeId = NodeId::MAX;

/// Directory state of one line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DirEntry {
    pub state: StateId,
    /// The core holding the line in M or O.
    pub owner: NodeId,
    /// Cores that may hold the line in S (a superset: S evictions are silent).
    pub sharers: CoreSet,
    /// The core whose request is in progress (the directory TBE).
    pub requestor: NodeId,
}

impl DirEntry {
    /// A line the directory holds no record of: in state `invalid`, no owner, no sharers.
    pub fn untracked(invalid: StateId) -> DirEntry {
        DirEntry {
            state: invalid,
            owner: NOBODY,
            sharers: CoreSet::EMPTY,
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
    /// Cycles the bank's memory channel is busy per line (0: no limit).
    pub mem_channel_cycles: u64,
    /// Memory a device holds at these addresses, `[start, end)`, and the cycles its
    /// accesses add to memory's (a NIC's LH buffer: `[nic]`); none: all memory is DRAM.
    pub device: Option<(u64, u64, u32)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    pub memory_reads: u64,
    /// Reads served by memory while the directory listed other sharers (a superset of the
    /// caches holding the line: S evictions are silent).
    pub memory_reads_shared: u64,
    /// Cycles memory accesses waited for the bank's busy channel.
    pub memory_queue_cycles: u64,
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

/// One directory bank with its memory.
#[derive(Debug)]
pub struct DirCtrl {
    pub params: DirParams,
    table: Arc<Machine>,
    ids: DirIds,
    entries: PagedMap<DirEntry>,
    pub mem: BackingStore,
    pub stats: DirStats,
    /// Transition counts, indexed by the cells' `counter` (see [`Machine::counted_cell`]).
    pub transitions: TransitionCounts,
    /// The cycle the memory channel is free again: timing only, not protocol state.
    mem_free_at: u64,
}

crate::reuse::clone_by_fields!(DirCtrl {
    params,
    table,
    ids,
    entries,
    mem,
    stats,
    transitions,
    mem_free_at,
});

impl DirCtrl {
    pub fn new(params: DirParams, table: Arc<Machine>) -> Result<DirCtrl, ProtocolError> {
        Self::paged(params, table, None)
    }

    /// A controller whose entries and memory sit in pages of `2^page_shift` lines (`None`:
    /// one frame's lines, as [`DirCtrl::new`] makes). The exhaustive checker clones its
    /// directory at every step, for configurations of one or two lines.
    pub fn paged(
        params: DirParams,
        table: Arc<Machine>,
        page_shift: Option<u32>,
    ) -> Result<DirCtrl, ProtocolError> {
        let ids = DirIds::resolve(&table)?;
        let n = table.n_counters();
        let invalid = DirEntry::untracked(ids.i);
        let (shift, low) = bank_stride(params.bank, params.banks);
        Ok(DirCtrl {
            mem: BackingStore::for_bank_paged(params.bank, params.banks, page_shift),
            params,
            table,
            ids,
            entries: PagedMap::with_page_shift(shift, low, invalid, page_shift),
            stats: DirStats::default(),
            transitions: TransitionCounts::new(n),
            mem_free_at: 0,
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

    /// Takes the bank's memory channel at cycle `at` for a transfer of `bytes` that is not
    /// a line's (a device's register or uncached access: at least half a line, a burst of
    /// four 8-byte beats), behind what is queued on it: the cycle the transfer starts.
    pub fn take_channel(&mut self, at: u64, bytes: u64) -> u64 {
        let per_line = self.params.mem_channel_cycles;
        if per_line == 0 {
            return at;
        }
        let busy = (per_line * bytes.clamp(32, 64)).div_ceil(64);
        let start = at.max(self.mem_free_at);
        self.mem_free_at = start + busy;
        self.stats.memory_queue_cycles += start - at;
        start
    }

    /// The cycles a device adds to a memory access of `addr`'s line (0 for DRAM).
    fn device_cycles(&self, addr: LineAddr) -> u32 {
        match self.params.device {
            Some((start, end, extra)) if (start..end).contains(&addr) => extra,
            _ => 0,
        }
    }

    pub fn entry(&self, addr: LineAddr) -> DirEntry {
        self.entries
            .get(addr)
            .cloned()
            .unwrap_or(DirEntry::untracked(self.ids.i))
    }

    /// Every tracked line, sorted by address, into `out` (cleared first).
    pub fn sorted_entries_into(&self, out: &mut Vec<(LineAddr, DirEntry)>) {
        out.clear();
        out.extend(self.entries.iter().map(|(a, e)| (a, e.clone())));
    }

    /// Appends a canonical encoding of directory entries (as [`DirCtrl::sorted_entries_into`]
    /// lists them), with core ids renamed by `rename` (the checker's symmetry reduction
    /// permutes cores).
    pub fn encode_entries(
        entries: &[(LineAddr, DirEntry)],
        out: &mut Vec<u8>,
        rename: &dyn Fn(NodeId) -> NodeId,
    ) {
        out.push(entries.len() as u8);
        for (addr, e) in entries {
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&e.state.to_le_bytes());
            let r = |n: NodeId| if n == NOBODY { NOBODY } else { rename(n) };
            out.extend_from_slice(&r(e.owner).to_le_bytes());
            out.extend_from_slice(&r(e.requestor).to_le_bytes());
            for c in e.sharers.renamed(rename).iter() {
                out.extend_from_slice(&c.to_le_bytes());
            }
            out.extend_from_slice(&NOBODY.to_le_bytes());
        }
    }

    /// Appends a canonical encoding of the memory's contents (no core ids: the same under
    /// every renaming), to follow the entries' encoding.
    pub fn encode_memory(&self, out: &mut Vec<u8>) {
        out.push(self.mem.len() as u8);
        for (addr, data) in self.mem.lines() {
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(data);
        }
    }

    /// Renames core ids in every entry (the checker applies a symmetry permutation).
    pub fn rename_cores(&mut self, rename: &dyn Fn(NodeId) -> NodeId) {
        for e in self.entries.values_mut() {
            let r = |n: NodeId| if n == NOBODY { NOBODY } else { rename(n) };
            e.owner = r(e.owner);
            e.requestor = r(e.requestor);
            e.sharers = e.sharers.renamed(rename);
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

    fn violation(
        &self,
        addr: LineAddr,
        state: StateId,
        event: &str,
        detail: String,
    ) -> Box<Violation> {
        Box::new(Violation {
            controller: self.name(),
            cycle: 0,
            addr,
            state: self.table.state_name(state).to_string(),
            event: event.to_string(),
            detail,
        })
    }

    /// Delivers a network message. A stalled message is left to the caller to retry.
    pub fn deliver(&mut self, msg: &Msg, out: &mut dyn Outbox) -> Result<Delivery, Box<Violation>> {
        // One lookup for the read and the write-back of the entry.
        let place = self.entries.place(msg.addr);
        let entry = self
            .entries
            .get_at(place)
            .cloned()
            .unwrap_or(DirEntry::untracked(self.ids.i));
        let state = entry.state;
        let Some(event) = self.event_for(msg, entry.owner) else {
            let detail = "message type not handled by a directory".into();
            return Err(self.violation(msg.addr, state, msg.ty.name(), detail));
        };
        self.check_responder(msg, &entry, event)?;
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
                if next == self.ids.i && e.sharers.is_empty() && e.owner == NOBODY {
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
            Cell::Impossible => {
                let detail = "impossible cell reached".into();
                Err(self.violation(msg.addr, state, self.table.event_name(event), detail))
            }
        }
    }

    /// A response (UNBLOCK or writeback data) to a line in a transient state must come from
    /// the core whose request the directory is serving.
    fn check_responder(
        &self,
        msg: &Msg,
        entry: &DirEntry,
        event: EventId,
    ) -> Result<(), Box<Violation>> {
        let is_response = matches!(
            msg.ty,
            MsgType::Unblock
                | MsgType::ExclusiveUnblock
                | MsgType::WbDirtyData
                | MsgType::WbCleanData
        );
        if is_response && !self.table.is_stable(entry.state) && entry.requestor != msg.src {
            let detail = format!(
                "response from core {} while serving core {}",
                msg.src, entry.requestor
            );
            return Err(self.violation(
                msg.addr,
                entry.state,
                self.table.event_name(event),
                detail,
            ));
        }
        Ok(())
    }
}
