//! What MOPED's requests promise, checked as they complete: a read returns a value the
//! line held while it was outstanding and (M_GETS) allocates nothing; an own or a fill
//! leaves no other valid copy; OPTCOPY's copy changes no cache's state.

use crate::coherence::{MopedDone, MopedKind, Msg, MsgType, NodeId, Outgoing};
use crate::mem::LineAddr;
use crate::protocol::Permission;

use super::super::report::FailureKind;
use super::state::{msg_text, Fault, MopedPending, State};
use super::CmpModel;

/// See [`CmpModel::copy_snapshot`].
#[derive(Clone, Debug, PartialEq)]
pub(super) enum CopySnapshot {
    Owner(
        u16,
        Option<(crate::mem::LineData, bool)>,
        crate::coherence::Placement,
    ),
    Dir(NodeId, crate::coherence::CoreSet),
}

impl CmpModel<'_> {
    /// Checks an answer a core's L2 gave its MOPED against the MOPED's request.
    pub(super) fn moped_completion(
        &self,
        s: &mut State,
        core: usize,
        d: MopedDone,
        from_network: bool,
    ) -> Result<(), Fault> {
        let Some(p) = s.moped[core] else {
            return Err(Fault::mismatch(format!(
                "core {core}: MOPED answer {d:?} without a request"
            )));
        };
        let addr = self.cfg.addrs[p.addr as usize];
        if d.addr() != addr {
            return Err(Fault::mismatch(format!(
                "core {core}: MOPED answer {d:?} for a request to {addr:#x}"
            )));
        }
        match (d, p.kind) {
            (MopedDone::Data { data, .. }, MopedKind::Read) => {
                self.check_moped_read(s, core, p, data[0], from_network)?
            }
            (MopedDone::Written { .. }, MopedKind::Own | MopedKind::Fill) => {
                s.ghost[p.addr as usize] = p.value;
                if p.kind == MopedKind::Fill {
                    self.check_fill(s, core, addr)?;
                }
            }
            _ => {
                return Err(Fault::mismatch(format!(
                    "core {core}: MOPED answer {d:?} for a {:?} request",
                    p.kind
                )))
            }
        }
        s.moped[core] = None;
        Ok(())
    }

    /// A MOPED read returns a value the line held while it was outstanding; M_GETS's data
    /// is not installed in the requester's cache.
    fn check_moped_read(
        &self,
        s: &State,
        core: usize,
        p: MopedPending,
        value: u8,
        from_network: bool,
    ) -> Result<(), Fault> {
        let addr = self.cfg.addrs[p.addr as usize];
        if p.seen >> value & 1 == 0 {
            return Err(Fault::new(
                FailureKind::DataValue,
                format!(
                    "core {core}'s MOPED read {value} from {addr:#x}, a value the line never held while the read was outstanding (seen {:#b})",
                    p.seen
                ),
            ));
        }
        if from_network && s.caches[core].line_copy(addr).is_some() {
            return Err(Fault::moped(format!(
                "M_GETS allocated {addr:#x} in the requester's cache (core {core}, {})",
                s.caches[core].state_name(addr)
            )));
        }
        Ok(())
    }

    /// A fill leaves no valid copy of the line in another cache.
    fn check_fill(&self, s: &State, core: usize, addr: LineAddr) -> Result<(), Fault> {
        for (i, c) in s.caches.iter().enumerate() {
            let perm = self.l2.permission(c.state(addr));
            if i != core && matches!(perm, Permission::ReadOnly | Permission::ReadWrite) {
                return Err(Fault::moped(format!(
                    "a fill granted {addr:#x} to core {core} while core {i} holds a valid copy in {}",
                    c.state_name(addr)
                )));
            }
        }
        Ok(())
    }

    /// What a copy request must leave unchanged, taken before delivering `m`: the owner's
    /// line for a forwarded copy, the directory's owner and sharers for a GET_COPY or for
    /// the UNBLOCK that ends one.
    pub(super) fn copy_snapshot(&self, s: &State, m: &Msg) -> Option<CopySnapshot> {
        let dst = m.dst as usize;
        match m.ty {
            MsgType::FwdGetCopy if dst < self.cfg.caches => {
                let c = &s.caches[dst];
                Some(CopySnapshot::Owner(
                    c.state(m.addr),
                    c.line_copy(m.addr).map(|l| (l.data, l.dirty)),
                    c.placement(m.addr),
                ))
            }
            MsgType::GetCopy if dst == self.cfg.caches => {
                let e = s.dir.entry(m.addr);
                Some(CopySnapshot::Dir(e.owner, e.sharers.clone()))
            }
            MsgType::Unblock if dst == self.cfg.caches => {
                let e = s.dir.entry(m.addr);
                self.dir_copy_states
                    .contains(&e.state)
                    .then(|| CopySnapshot::Dir(e.owner, e.sharers.clone()))
            }
            _ => None,
        }
    }

    /// OPTCOPY's promise: a copy changes no cache's state and returns the current value.
    pub(super) fn check_copy(
        &self,
        s: &State,
        m: &Msg,
        before: CopySnapshot,
        out: &[Outgoing],
    ) -> Result<(), Fault> {
        let after = self.copy_snapshot(s, m);
        let unchanged = match (&before, m.ty) {
            // The UNBLOCK takes the line out of the copy state: compare owner and sharers.
            (CopySnapshot::Dir(o, sh), MsgType::Unblock) => {
                let e = s.dir.entry(m.addr);
                e.owner == *o && e.sharers == *sh
            }
            _ => after.as_ref() == Some(&before),
        };
        if !unchanged {
            return Err(Fault::moped(format!(
                "{} changed the line: before {before:?}, after {after:?}",
                msg_text(m)
            )));
        }
        let Some(ai) = self.addr_index(m.addr) else {
            return Ok(());
        };
        for o in out {
            if o.msg.ty == MsgType::Data && o.msg.data[0] != s.ghost[ai] {
                return Err(Fault::moped(format!(
                    "{} answered with {}, but the current value is {}",
                    msg_text(m),
                    o.msg.data[0],
                    s.ghost[ai]
                )));
            }
        }
        Ok(())
    }
}
