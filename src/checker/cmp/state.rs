//! The CMP model's state and actions.

use crate::coherence::{CacheCtrl, DirCtrl, MopedKind, Msg, NodeId, Violation};
use crate::protocol::TransitionCounts;
use std::rc::Rc;

use super::super::report::FailureKind;

/// A core's outstanding (missed) request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pending {
    pub store: bool,
    pub addr: u8,
    pub value: u8,
}

/// The controllers, the network and the ghost values of one reachable state. A step
/// changes one or two controllers, so a state shares the others with the state it came
/// from: each controller is copied only when a step changes it (`Rc::make_mut`).
pub(super) struct State {
    pub caches: Vec<Rc<CacheCtrl>>,
    pub dir: Rc<DirCtrl>,
    /// In-flight messages, sorted (a canonical multiset).
    pub net: Vec<Msg>,
    pub pending: Vec<Option<Pending>>,
    /// Each core's MOPED's outstanding request.
    pub moped: Vec<Option<MopedPending>>,
    /// Last value written to byte 0 of each address.
    pub ghost: Vec<u8>,
}

crate::reuse::clone_by_fields!(State {
    caches,
    dir,
    net,
    pending,
    moped,
    ghost,
});

/// A MOPED's outstanding request. A read may return any value the line held while it was
/// outstanding (a copy is taken at some instant): `seen` has bit `v` set for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MopedPending {
    pub kind: MopedKind,
    pub addr: u8,
    pub value: u8,
    pub seen: u8,
}

/// One step of the model; addresses and cores are indices into the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    Load {
        core: u8,
        addr: u8,
    },
    Store {
        core: u8,
        addr: u8,
        value: u8,
    },
    Evict {
        core: u8,
        addr: u8,
    },
    /// Deliver `net[index]`.
    Deliver {
        index: u16,
    },
    /// A core's MOPED reads, owns or fills a line; owns and fills store `value`.
    Moped {
        core: u8,
        addr: u8,
        kind: MopedKind,
        value: u8,
    },
}

/// A cell that fired during a step: machine 0 = an L2 controller (with its node), 1 = the
/// directory; `cell` indexes `state * events + event`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fired {
    pub node: NodeId,
    pub dir: bool,
    pub cell: usize,
}

/// The cells one step fired, and the counters its controllers count them in: kept from
/// one step to the next, every counter back at zero between steps, so a step allocates
/// none.
#[derive(Default)]
pub(super) struct Firing {
    pub cells: Vec<Fired>,
    pub cache: TransitionCounts,
    pub dir: TransitionCounts,
}

/// A broken property: which one, and what was seen.
pub(super) struct Fault {
    pub kind: FailureKind,
    pub detail: String,
}

impl Fault {
    pub fn new(kind: FailureKind, detail: String) -> Fault {
        Fault { kind, detail }
    }

    pub fn moped(detail: String) -> Fault {
        Fault::new(FailureKind::Moped, detail)
    }

    pub fn mismatch(detail: String) -> Fault {
        Fault::new(FailureKind::CompletionMismatch, detail)
    }
}

impl From<Box<Violation>> for Fault {
    fn from(v: Box<Violation>) -> Fault {
        Fault::new(FailureKind::InvalidTransition, v.to_string())
    }
}

/// A message as traces and failures show it.
pub(super) fn msg_text(m: &Msg) -> String {
    let mut s = format!("{}({}->{} addr {:#x}", m.ty.name(), m.src, m.dst, m.addr);
    if m.requestor != m.src && m.requestor != m.dst {
        s.push_str(&format!(" req {}", m.requestor));
    }
    if m.acks != 0 {
        s.push_str(&format!(" acks {}", m.acks));
    }
    if m.ty.carries_data() {
        s.push_str(&format!(" data {}", m.data[0]));
        if m.dirty {
            s.push_str(" dirty");
        }
    }
    s.push(')');
    s
}
