//! Actions of `protocols/optcopy/L2Cache.sm`: its overriding `M_GETS` row asks for a copy
//! of the send line (GET_COPY) that leaves every cache's state unchanged. Its
//! `Fwd_GET_COPY` rows answer with the baseline's `e_sendDataToRequestor` and
//! `et_sendDataFromTBEToRequestor`, and the reply is taken by BASEMOPED's `ID` rows.

use crate::coherence::cache::{CacheCtrl, Ctx};
use crate::coherence::msg::MsgType;

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] = &[("ac_issueGETCOPY", CacheCtrl::ac_issue_get_copy)];

impl CacheCtrl {
    fn ac_issue_get_copy(&mut self, ctx: &mut Ctx) {
        self.stats.copy_requests += 1;
        self.send_to_home(ctx, MsgType::GetCopy);
    }
}
