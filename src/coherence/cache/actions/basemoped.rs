//! Actions of `protocols/basemoped/L2Cache.sm`: answering the MOPED beside this L2. Its
//! `M_GETS` rows read a send line for the copy unit (from this core's caches, or from a
//! reply that is not installed here); its `M_GETX` rows grant a receive line, at once or
//! when the store-miss path completes.
//!
//! `protocols/optcache/L2Cache.sm` calls `mg_grantToMoped` and `mx_notifyMopedGranted` again
//! for its `M_FILL` rows.

use crate::coherence::cache::line::{write_masked, Source};
use crate::coherence::cache::request::{MopedDone, MopedKind, MopedReq};
use crate::coherence::cache::{CacheCtrl, Ctx};

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] = &[
    ("mr_sendLineToMoped", CacheCtrl::mr_send_line_to_moped),
    ("md_sendDataToMoped", CacheCtrl::md_send_data_to_moped),
    (
        "tx_copyMessageDataToTBE",
        CacheCtrl::tx_copy_message_data_to_tbe,
    ),
    ("mg_grantToMoped", CacheCtrl::mg_grant_to_moped),
    ("mx_notifyMopedGranted", CacheCtrl::mx_notify_moped_granted),
];

impl CacheCtrl {
    /// The MOPED request that raised the transition; the table calls this only from a
    /// MOPED event's cell.
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
                let (way, line) = self.entry_mut(ctx);
                write_masked(line, &data, mask);
                way.dirty = true;
                self.stats.moped_writes += 1;
                MopedDone::Written { addr }
            }
            None => MopedDone::Granted { addr },
        };
        self.moped_done.push(answer);
    }

    // ---- M_GETS: a send line for the copy unit ----

    fn mr_send_line_to_moped(&mut self, ctx: &mut Ctx) {
        let _ = self.moped_req(ctx);
        let data = *self.entry_data(ctx);
        self.moped_done.push(MopedDone::Data {
            addr: ctx.addr,
            data,
        });
    }

    fn md_send_data_to_moped(&mut self, ctx: &mut Ctx) {
        let data = Self::msg(ctx).data;
        let from_memory = (Self::msg(ctx).src as usize) >= self.params.n_cores;
        let addr = ctx.addr;
        let served = self.tbe_in(ctx).moped.take();
        debug_assert!(served.is_some_and(|m| m.kind == MopedKind::Read));
        if !from_memory {
            self.stats.moped_misses_other_cache += 1;
        } else {
            self.stats.moped_misses_memory += 1;
            if served.is_some_and(|m| m.page_table) {
                self.stats.moped_walk_misses_memory += 1;
            }
        }
        self.moped_done.push(MopedDone::Data { addr, data });
    }

    /// Keeps exclusive data that came back for the copy unit, so it can be written back
    /// as if evicted (the line is not installed here).
    fn tx_copy_message_data_to_tbe(&mut self, ctx: &mut Ctx) {
        let m = Self::msg(ctx);
        let (data, dirty) = (m.data, m.dirty);
        let t = self.tbe_in(ctx);
        t.data = data;
        t.dirty = dirty;
    }

    // ---- M_GETX (and OPTCACHE's M_FILL): a receive line's exclusive rights ----

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
}
