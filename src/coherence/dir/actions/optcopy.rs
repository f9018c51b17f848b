//! Actions of `protocols/optcopy/Directory.sm`: its GET_COPY rows in O and M forward the
//! copy request to the owner, who answers without changing its state. In I and S memory
//! answers with the baseline's `d_sendDataFromMemory`.

use crate::coherence::dir::{Ctx, DirCtrl};
use crate::coherence::msg::MsgType;

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] =
    &[("fc_forwardCopyToOwner", DirCtrl::fc_forward_copy_to_owner)];

impl DirCtrl {
    fn fc_forward_copy_to_owner(&mut self, ctx: &mut Ctx) {
        self.stats.forwards += 1;
        let (owner, r) = (ctx.e.owner, ctx.msg.src);
        self.send(ctx, MsgType::FwdGetCopy, owner, r, self.params.latency);
    }
}
