//! The actions `protocols/*/Directory.sm` name, bound to Rust functions, one file per
//! protocol layer, each opening with the rows that call its actions:
//!
//! | layer     | protocol file                    | actions       |
//! |-----------|----------------------------------|---------------|
//! | baseline  | `protocols/baseline/Directory.sm`| [`baseline`]  |
//! | OPTCOPY   | `protocols/optcopy/Directory.sm` | [`optcopy`]   |
//! | OPTCACHE  | `protocols/optcache/Directory.sm`| [`optcache`]  |
//!
//! BASEMOPED leaves the directory unchanged, so it has no file here.

mod baseline;
mod optcache;
mod optcopy;

use crate::coherence::msg::{Msg, MsgType, NodeId};
use crate::coherence::CoreSet;
use crate::coherence::{concat_layers, layers_len};

use super::{Ctx, DirCtrl};

/// An action: one step of a transition on the message's line.
pub(super) type Action = fn(&mut DirCtrl, &mut Ctx);

/// The layers' action lists, in the order designs stack them.
const LAYERS: &[&[(&str, Action)]] = &[baseline::ACTIONS, optcopy::ACTIONS, optcache::ACTIONS];

/// The action registry: every layer's actions, baseline first; a table's action ids index
/// it.
pub(super) const ACTIONS: &[(&str, Action)] = &concat_layers::<_, { layers_len(LAYERS) }>(LAYERS);

/// Names of the directory's actions, in registry order.
pub fn action_names() -> Vec<&'static str> {
    ACTIONS.iter().map(|(n, _)| *n).collect()
}

// ---- Helpers the actions of every layer share ----

impl DirCtrl {
    /// A control message about the message's line, from this directory.
    fn message(&self, ctx: &Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) -> Msg {
        Msg::control(ty, ctx.msg.addr, self.params.node, dst, requestor)
    }

    fn send(&self, ctx: &mut Ctx, ty: MsgType, dst: NodeId, requestor: NodeId, delay: u32) {
        let m = self.message(ctx, ty, dst, requestor);
        ctx.out.send(m, delay);
    }

    /// Sends an invalidation on behalf of the requestor `r` to every core in `targets`.
    fn send_invs(&mut self, ctx: &mut Ctx, targets: &CoreSet, r: NodeId) {
        for core in targets.iter() {
            self.stats.invalidations_sent += 1;
            self.send(ctx, MsgType::Inv, core, r, self.params.latency);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_name_is_bound_once() {
        let names = action_names();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "an action name is bound twice: {names:?}"
        );
    }
}
