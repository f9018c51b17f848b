//! The CMP model's invariants, checked on every reachable state: bounded buffers per
//! (destination, virtual network), SWMR, M_GETS's unallocated wait, the data-value
//! invariant (every core with read permission holds the last value written), and directory
//! agreement in stable states; and what makes a state quiescent.

use crate::coherence::dir::NOBODY;
use crate::coherence::{MsgType, NodeId};
use crate::mem::LineAddr;
use crate::protocol::Permission;

use super::super::report::FailureKind;
use super::state::{Fault, State};
use super::CmpModel;

impl CmpModel<'_> {
    /// Nothing in flight, nothing outstanding, every controller idle.
    pub(super) fn is_quiescent(&self, st: &State) -> bool {
        st.net.is_empty()
            && st.pending.iter().all(|p| p.is_none())
            && st.moped.iter().all(|p| p.is_none())
            && st.caches.iter().all(|c| c.is_quiescent())
            && st.dir.is_quiescent()
    }

    /// Largest (destination, vnet) occupancy, with that destination and vnet.
    pub(super) fn buffer_occupancy(&self, st: &State) -> (usize, NodeId, usize) {
        let mut counts = [[0usize; MsgType::VNETS]; 9];
        let mut best = (0, 0, 0);
        for m in &st.net {
            let d = (m.dst as usize).min(8);
            let v = m.ty.vnet();
            counts[d][v] += 1;
            if counts[d][v] > best.0 {
                best = (counts[d][v], d as NodeId, v);
            }
        }
        best
    }

    /// Every invariant, address by address; the first broken one.
    pub(super) fn check_state(&self, st: &State) -> Result<(), Fault> {
        let (occ, dst, vnet) = self.buffer_occupancy(st);
        if occ > self.cfg.buffer_capacity {
            return Err(Fault::new(
                FailureKind::BufferOverflow,
                format!(
                    "{occ} messages for node {dst} on vnet {vnet}, capacity {}",
                    self.cfg.buffer_capacity
                ),
            ));
        }
        for (ai, &addr) in self.cfg.addrs.iter().enumerate() {
            self.check_swmr(st, addr)?;
            self.check_id_unallocated(st, addr)?;
            self.check_readable_values(st, ai, addr)?;
            self.check_dir_agreement(st, addr)?;
        }
        Ok(())
    }

    /// Single writer or multiple readers.
    fn check_swmr(&self, st: &State, addr: LineAddr) -> Result<(), Fault> {
        let mut writers = Vec::new();
        let mut readers = Vec::new();
        for (i, c) in st.caches.iter().enumerate() {
            match self.l2.permission(c.state(addr)) {
                Permission::ReadWrite => writers.push(i),
                Permission::ReadOnly => readers.push(i),
                _ => {}
            }
        }
        if writers.len() > 1 || (writers.len() == 1 && !readers.is_empty()) {
            return Err(Fault::new(
                FailureKind::Swmr,
                format!(
                    "address {addr:#x}: cores {writers:?} have Read_Write and cores {readers:?} Read_Only ({})",
                    self.line_summary(st, addr)
                ),
            ));
        }
        Ok(())
    }

    /// M_GETS's data is never installed: a line waiting in ID has no way.
    fn check_id_unallocated(&self, st: &State, addr: LineAddr) -> Result<(), Fault> {
        let Some(id) = self.cache_id else {
            return Ok(());
        };
        for (i, c) in st.caches.iter().enumerate() {
            if c.state(addr) == id && c.line_copy(addr).is_some() {
                return Err(Fault::moped(format!(
                    "address {addr:#x}: core {i} waits in ID with a way allocated"
                )));
            }
        }
        Ok(())
    }

    /// Every readable copy holds the last value written.
    fn check_readable_values(&self, st: &State, ai: usize, addr: LineAddr) -> Result<(), Fault> {
        for (i, c) in st.caches.iter().enumerate() {
            if let Some(d) = c.readable_data(addr) {
                if d[0] != st.ghost[ai] {
                    return Err(Fault::new(
                        FailureKind::DataValue,
                        format!(
                            "address {addr:#x}: core {i} in {} holds {}, but the last value written is {}",
                            c.state_name(addr),
                            d[0],
                            st.ghost[ai]
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Directory agreement, in stable states with nothing in flight for the line.
    fn check_dir_agreement(&self, st: &State, addr: LineAddr) -> Result<(), Fault> {
        let e = st.dir.entry(addr);
        let all_stable = self.dirm.is_stable(e.state)
            && st.caches.iter().all(|c| self.l2.is_stable(c.state(addr)))
            && !st.net.iter().any(|m| m.addr == addr);
        if !all_stable {
            return Ok(());
        }
        match self.dir_disagreement(st, addr) {
            Some(why) => Err(Fault::new(
                FailureKind::DirectoryAgreement,
                format!("address {addr:#x}: {why} ({})", self.line_summary(st, addr)),
            )),
            None => Ok(()),
        }
    }

    /// How the directory's view of a stable line differs from the caches', if it does.
    fn dir_disagreement(&self, st: &State, addr: LineAddr) -> Option<String> {
        let e = st.dir.entry(addr);
        let holders: Vec<(usize, u16)> = st
            .caches
            .iter()
            .enumerate()
            .map(|(i, c)| (i, c.state(addr)))
            .filter(|&(_, s)| s != self.cache_i)
            .collect();
        let view = DirView {
            owner: e.owner,
            sharers: &e.sharers,
            holders: &holders,
            caches: st.caches.len(),
        };
        let is = |want: Option<u16>| Some(e.state) == want;
        if is(self.dir_m) {
            self.disagrees_in_m(&view)
        } else if is(self.dir_o) {
            let owner_in_o = |o: NodeId| Some(st.caches[o as usize].state(addr)) == self.cache_o;
            self.disagrees_in_o(&view, owner_in_o)
        } else if is(self.dir_s) {
            self.disagrees_in_s(&view)
        } else if is(self.dir_i) {
            disagrees_in_i(&view)
        } else {
            None
        }
    }

    /// M: the owner alone holds the line, with Read_Write.
    fn disagrees_in_m(&self, v: &DirView) -> Option<String> {
        let owner = v.owner;
        if owner == NOBODY || owner as usize >= v.caches {
            return Some("directory M without an owner".into());
        }
        for &(i, s) in v.holders {
            if i == owner as usize {
                if self.l2.permission(s) != Permission::ReadWrite {
                    return Some(format!("directory M, owner {i} lacks Read_Write"));
                }
            } else {
                return Some(format!(
                    "directory M with owner {owner}, but core {i} holds the line"
                ));
            }
        }
        if !v.holders.iter().any(|&(i, _)| i == owner as usize) {
            return Some(format!(
                "directory M, but owner {owner} does not hold the line"
            ));
        }
        None
    }

    /// O: the owner in O, every other holder a sharer in S.
    fn disagrees_in_o(&self, v: &DirView, owner_in_o: impl Fn(NodeId) -> bool) -> Option<String> {
        let owner = v.owner;
        if owner == NOBODY || owner as usize >= v.caches {
            return Some("directory O without an owner".into());
        }
        if !owner_in_o(owner) {
            return Some(format!("directory O, but owner {owner} is not in O"));
        }
        for &(i, s) in v.holders {
            if i != owner as usize && !self.shares(v, i, s) {
                return Some(format!(
                    "directory O, core {i} holds the line outside the sharer set"
                ));
            }
        }
        None
    }

    /// S: no owner, every holder a sharer in S.
    fn disagrees_in_s(&self, v: &DirView) -> Option<String> {
        if v.owner != NOBODY {
            return Some(format!("directory S with owner {}", v.owner));
        }
        for &(i, s) in v.holders {
            if !self.shares(v, i, s) {
                return Some(format!(
                    "directory S, core {i} holds the line outside the sharer set"
                ));
            }
        }
        None
    }

    /// Core `i`, holding the line in state `s`, is a sharer the directory knows of.
    fn shares(&self, v: &DirView, i: usize, s: u16) -> bool {
        Some(s) == self.cache_s && v.sharers.contains(i as NodeId)
    }
}

/// The directory's entry for a line beside the caches that hold it (state not I).
struct DirView<'a> {
    owner: NodeId,
    sharers: &'a crate::coherence::CoreSet,
    holders: &'a [(usize, u16)],
    caches: usize,
}

/// I: no owner and no holder.
fn disagrees_in_i(v: &DirView) -> Option<String> {
    if v.owner != NOBODY {
        return Some(format!("directory I with owner {}", v.owner));
    }
    if let Some(&(i, _)) = v.holders.first() {
        return Some(format!("directory I, but core {i} holds the line"));
    }
    None
}
