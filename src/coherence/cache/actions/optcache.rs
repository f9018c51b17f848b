//! Actions of `protocols/optcache/L2Cache.sm`: its `M_FILL` rows ask for a receive line's
//! exclusive rights without its old data (GET_FILL), and its `Fill_Grant` row places the
//! line zero-filled and dirty. The rest of a fill (acks, the grant to the MOPED) runs on
//! the baseline's and BASEMOPED's actions.

use crate::coherence::cache::{CacheCtrl, Ctx};
use crate::coherence::msg::MsgType;
use crate::mem::LINE_BYTES;

use super::Action;

pub(super) const ACTIONS: &[(&str, Action)] = &[
    ("af_issueGETFILL", CacheCtrl::af_issue_get_fill),
    ("uz_writeZerosToLine", CacheCtrl::uz_write_zeros_to_line),
];

impl CacheCtrl {
    fn af_issue_get_fill(&mut self, ctx: &mut Ctx) {
        self.stats.fill_requests += 1;
        self.send_to_home(ctx, MsgType::GetFill);
    }

    fn uz_write_zeros_to_line(&mut self, ctx: &mut Ctx) {
        let (way, line) = self.entry_mut(ctx);
        *line = [0; LINE_BYTES];
        way.dirty = true;
    }
}
