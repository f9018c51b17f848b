//! Actions of `protocols/optcache/Directory.sm`: its GET_FILL row grants the line without
//! data and invalidates every other copy, the owner's included (the requestor overwrites
//! the whole line, so the owner's data is not needed).

use crate::coherence::dir::{Ctx, DirCtrl, DirEntry, NOBODY};
use crate::coherence::msg::{MsgType, NodeId};
use crate::coherence::CoreSet;

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] = &[
    ("gf_sendFillGrant", DirCtrl::gf_send_fill_grant),
    (
        "io_sendInvToSharersAndOwner",
        DirCtrl::io_send_inv_to_sharers_and_owner,
    ),
];

/// Every valid copy but the requestor's: the sharers and the owner.
fn others(e: &DirEntry, r: NodeId) -> CoreSet {
    let mut s = e.sharers.clone();
    if e.owner != NOBODY {
        s.insert(e.owner);
    }
    s.without(r)
}

impl DirCtrl {
    fn gf_send_fill_grant(&mut self, ctx: &mut Ctx) {
        let r = ctx.msg.src;
        let acks = others(&ctx.e, r).count() as i16;
        let mut m = self.message(ctx, MsgType::FillGrant, r, r);
        m.acks = acks;
        ctx.out.send(m, self.params.latency);
    }

    fn io_send_inv_to_sharers_and_owner(&mut self, ctx: &mut Ctx) {
        let r = ctx.msg.src;
        let targets = others(&ctx.e, r);
        self.send_invs(ctx, &targets, r);
    }
}
