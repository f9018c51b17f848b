//! Actions of `protocols/baseline/Directory.sm`, the blocking MOESI directory: the TBE (the
//! requestor being served), memory reads and writes, forwards to the owner, invalidations,
//! writeback acks, and the owner and sharer bookkeeping.
//!
//! `protocols/optcopy/Directory.sm` calls `v_allocateTBE`, `w_deallocateTBE` and
//! `d_sendDataFromMemory` again for its GET_COPY rows; `protocols/optcache/Directory.sm`
//! calls `v_allocateTBE`, `w_deallocateTBE` and `ss_setOwnerToRequestor` for its GET_FILL
//! rows.

use crate::coherence::dir::{Ctx, DirCtrl, NOBODY};
use crate::coherence::msg::MsgType;

use super::Action;
use crate::coherence::CoreSet;

pub(super) const ACTIONS: &[(&str, Action)] = &[
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
];

impl DirCtrl {
    fn v_allocate_tbe(&mut self, ctx: &mut Ctx) {
        ctx.e.requestor = ctx.msg.src;
    }

    fn w_deallocate_tbe(&mut self, ctx: &mut Ctx) {
        ctx.e.requestor = NOBODY;
    }

    fn d_send_data_from_memory(&mut self, ctx: &mut Ctx) {
        self.stats.memory_reads += 1;
        // MOESI serves a shared line from memory, not from a sharer: counted, because a
        // line on chip read from memory is a global miss the caches could have served.
        if !ctx.e.sharers.without(ctx.msg.src).is_empty() {
            self.stats.memory_reads_shared += 1;
        }
        let data = self.mem.read(ctx.msg.addr);
        let delay = self.memory_access(ctx) + self.params.mem_latency;
        let r = ctx.msg.src;
        let mut m = self.message(ctx, MsgType::Data, r, r);
        m.data = data;
        ctx.out.send(m, delay);
    }

    fn dd_send_exclusive_data_from_memory(&mut self, ctx: &mut Ctx) {
        self.stats.memory_reads += 1;
        let data = self.mem.read(ctx.msg.addr);
        let r = ctx.msg.src;
        let acks = ctx.e.sharers.without(r).count() as i16;
        let delay = self.memory_access(ctx) + self.params.mem_latency;
        let mut m = self.message(ctx, MsgType::DataExclusive, r, r);
        m.data = data;
        m.acks = acks;
        ctx.out.send(m, delay);
    }

    fn f_forward_to_owner(&mut self, ctx: &mut Ctx) {
        self.stats.forwards += 1;
        let r = ctx.msg.src;
        let owner = ctx.e.owner;
        let (ty, acks) = match ctx.msg.ty {
            MsgType::Gets => (MsgType::FwdGets, 0),
            _ => (
                MsgType::FwdGetx,
                ctx.e.sharers.without(r).without(owner).count() as i16,
            ),
        };
        let mut m = self.message(ctx, ty, owner, r);
        m.acks = acks;
        ctx.out.send(m, self.params.latency);
    }

    fn i_send_inv_to_sharers(&mut self, ctx: &mut Ctx) {
        let r = ctx.msg.src;
        let targets = ctx.e.sharers.without(r).without(ctx.e.owner);
        self.send_invs(ctx, &targets, r);
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
        self.memory_access(ctx);
    }

    /// Takes the memory channel for one line after the directory's latency, behind the
    /// accesses already queued on it: the cycles from now until the access starts (with a
    /// device's extra cycles, for a line of its memory).
    fn memory_access(&mut self, ctx: &mut Ctx) -> u32 {
        let extra = self.device_cycles(ctx.msg.addr);
        self.line_access(ctx).saturating_add(extra)
    }

    fn line_access(&mut self, ctx: &mut Ctx) -> u32 {
        let now = ctx.out.now();
        let ready = now + u64::from(self.params.latency);
        let channel = self.params.mem_channel_cycles;
        if channel == 0 {
            return self.params.latency;
        }
        let start = ready.max(self.mem_free_at);
        self.mem_free_at = start + channel;
        self.stats.memory_queue_cycles += start - ready;
        u32::try_from(start - now).unwrap_or(u32::MAX)
    }

    fn c_clear_owner(&mut self, ctx: &mut Ctx) {
        ctx.e.owner = NOBODY;
    }

    fn s_add_requestor_to_sharers(&mut self, ctx: &mut Ctx) {
        let e = &mut ctx.e;
        e.sharers.insert(e.requestor);
    }

    fn ss_set_owner_to_requestor(&mut self, ctx: &mut Ctx) {
        let e = &mut ctx.e;
        e.owner = e.requestor;
        e.sharers = CoreSet::EMPTY;
    }
}
