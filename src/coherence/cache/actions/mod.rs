//! The actions `protocols/*/L2Cache.sm` name, bound to Rust functions, one file per
//! protocol layer: the actions a layer's file introduced live in that layer's file here, so
//! a row of `protocols/optcopy/L2Cache.sm` is read beside `optcopy.rs` (and `baseline.rs`
//! for the actions it reuses). Every file opens with the rows that call its actions.
//!
//! | layer       | protocol file                    | actions            |
//! |-------------|----------------------------------|--------------------|
//! | baseline    | `protocols/baseline/L2Cache.sm`  | [`baseline`]       |
//! | BASEMOPED   | `protocols/basemoped/L2Cache.sm` | [`basemoped`]      |
//! | OPTCOPY     | `protocols/optcopy/L2Cache.sm`   | [`optcopy`]        |
//! | OPTCACHE    | `protocols/optcache/L2Cache.sm`  | [`optcache`]       |

mod baseline;
mod basemoped;
mod optcache;
mod optcopy;

use crate::coherence::msg::{Msg, MsgType, NodeId};
use crate::coherence::{concat_layers, home_bank, layers_len};
use crate::mem::LineAddr;

use super::request::{Completed, CoreReq, HitLevel};
use super::{CacheCtrl, Ctx};

/// An action: one step of a transition on the transition's line.
pub(super) type Action = fn(&mut CacheCtrl, &mut Ctx);

/// The layers' action lists, in the order designs stack them.
const LAYERS: &[&[(&str, Action)]] = &[
    baseline::ACTIONS,
    basemoped::ACTIONS,
    optcopy::ACTIONS,
    optcache::ACTIONS,
];

/// The action registry: every layer's actions, baseline first. A table's action ids index
/// it, so the controller runs an action with one array index and no name lookup.
pub(super) const ACTIONS: &[(&str, Action)] = &concat_layers::<_, { layers_len(LAYERS) }>(LAYERS);

/// Names of the L2 controller's actions, in registry order.
pub fn action_names() -> Vec<&'static str> {
    ACTIONS.iter().map(|(n, _)| *n).collect()
}

// ---- Helpers the actions of every layer share ----

impl CacheCtrl {
    fn home(&self, addr: LineAddr) -> NodeId {
        (self.params.n_cores + home_bank(addr, self.params.dir_banks)) as NodeId
    }

    /// A control message about the transition's line, from this controller.
    fn message(&self, ctx: &Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) -> Msg {
        Msg::control(ty, ctx.addr, self.params.node, dst, requestor)
    }

    fn send(&self, ctx: &mut Ctx, ty: MsgType, dst: NodeId, requestor: NodeId) {
        let m = self.message(ctx, ty, dst, requestor);
        ctx.out.send(m, ctx.delay);
    }

    /// Sends a request for the transition's line to its home directory, as this core.
    fn send_to_home(&self, ctx: &mut Ctx, ty: MsgType) {
        let home = self.home(ctx.addr);
        self.send(ctx, ty, home, self.params.node);
    }

    fn msg<'m>(ctx: &Ctx<'m>) -> &'m Msg {
        ctx.msg.expect("action needs a message")
    }

    /// Performs a core's access on the transition's line and reports it done.
    fn complete(&mut self, ctx: &mut Ctx, req: CoreReq, level: HitLevel) {
        // A prefetch's load has no core to answer: it only brought the line.
        if req.id == super::PREFETCH_ID {
            return;
        }
        let (way, data) = self.entry_mut(ctx);
        let value = super::line::access(way, data, &req);
        ctx.done.push(Completed { req, value, level });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_name_is_bound_once() {
        let names = action_names();
        let n = names.len();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), n, "an action name is bound twice: {names:?}");
    }
}
