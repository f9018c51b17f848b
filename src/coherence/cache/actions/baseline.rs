//! Actions of `protocols/baseline/L2Cache.sm`, the directory MOESI L2 controller: TBEs,
//! requests to the directory, hits and miss completions, answers to forwarded requests,
//! invalidation acks, and writebacks.
//!
//! The overlays' rows call many of them again: `protocols/basemoped/L2Cache.sm`,
//! `protocols/optcopy/L2Cache.sm` and `protocols/optcache/L2Cache.sm` allocate and free TBEs,
//! issue GETS/GETX/PUTX, ack invalidations, count acks, unblock the directory and answer
//! forwarded requests with these same actions.

use crate::coherence::msg::MsgType;
use crate::mem::LineData;

use crate::coherence::cache::line::{Source, Tbe};
use crate::coherence::cache::request::HitLevel;
use crate::coherence::cache::{CacheCtrl, Ctx, Loc};

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] = &[
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
];

impl CacheCtrl {
    // ---- TBEs ----

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

    fn t_copy_data_to_tbe(&mut self, ctx: &mut Ctx) {
        let (data, dirty) = (*self.entry_data(ctx), self.entry(ctx).dirty);
        let tbe = self.tbe_in(ctx);
        tbe.data = data;
        tbe.dirty = dirty;
    }

    // ---- Requests to the directory ----

    fn a_issue_gets(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::Gets);
    }

    fn b_issue_getx(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::Getx);
    }

    fn c_issue_puto(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::Puto);
    }

    fn cc_issue_putx(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::Putx);
    }

    /// Counts a demand miss; a prefetch's is counted apart, where it is issued.
    fn uu_profile_miss(&mut self, ctx: &mut Ctx) {
        let prefetch = ctx
            .tbe
            .and_then(|i| self.tbes[i].req)
            .is_some_and(|r| r.id == super::super::PREFETCH_ID);
        if !prefetch {
            self.stats.l2_misses += 1;
        }
    }

    // ---- The core's access completes ----

    fn h_load_hit(&mut self, ctx: &mut Ctx) {
        let req = ctx.req.take().expect("load hit without a request");
        self.complete(ctx, req, HitLevel::L1);
    }

    fn hh_store_hit(&mut self, ctx: &mut Ctx) {
        let req = ctx.req.take().expect("store hit without a request");
        self.complete(ctx, req, HitLevel::L1);
    }

    /// Completes the TBE's core request, if it has one, booked by who supplied the data.
    fn miss_complete(&mut self, ctx: &mut Ctx) {
        let tbe = self.tbe_in(ctx);
        let req = tbe.req.take();
        let level = match tbe.source {
            Source::Cache => HitLevel::OtherCache,
            Source::Memory => HitLevel::Memory,
            Source::None => HitLevel::Upgrade,
        };
        let Some(req) = req else { return };
        if req.id == super::super::PREFETCH_ID {
            return;
        }
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

    fn rr_deallocate_line(&mut self, ctx: &mut Ctx) {
        let state = self.state_in(ctx);
        let way = match std::mem::replace(&mut ctx.entry, Loc::Absent) {
            Loc::L1(s) => Some(self.l1.remove(s)),
            Loc::L2(s) => Some(self.l2.remove(s)),
            _ => None,
        };
        if let Some(way) = way {
            self.drop_way(way);
        }
        // A line leaving for a writeback keeps its state in the TBE until the next state is set.
        if let Some(i) = ctx.tbe {
            self.tbes[i].state = Some(state);
        }
    }

    // ---- Answers to a forwarded request (this core owns the line) ----

    /// Sends the line to the requestor of the message being handled, passing on its ack
    /// count.
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
        let data = *self.entry_data(ctx);
        // A shared copy is clean for its holder: this owner keeps the writeback duty.
        self.send_line(ctx, MsgType::Data, data, false);
    }

    fn ee_send_exclusive_data_to_requestor(&mut self, ctx: &mut Ctx) {
        let (data, dirty) = (*self.entry_data(ctx), self.entry(ctx).dirty);
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

    // ---- Invalidations and acks ----

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

    // ---- Data for this core's request ----

    fn u_write_data_to_line(&mut self, ctx: &mut Ctx) {
        let m = Self::msg(ctx);
        let from_cache = (m.src as usize) < self.params.n_cores;
        let (data, dirty) = (m.data, m.dirty);
        let (way, line) = self.entry_mut(ctx);
        *line = data;
        way.dirty = dirty;
        self.tbe_in(ctx).source = if from_cache {
            Source::Cache
        } else {
            Source::Memory
        };
    }

    fn j_send_unblock(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::Unblock);
    }

    fn jj_send_exclusive_unblock(&mut self, ctx: &mut Ctx) {
        self.send_to_home(ctx, MsgType::ExclusiveUnblock);
    }

    // ---- Writebacks ----

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
}
