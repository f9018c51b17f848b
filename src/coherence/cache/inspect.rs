//! What tests, controller-under-test harnesses and the exhaustive checker read and set
//! directly: a line's state and data, the outstanding TBEs, a canonical encoding of the
//! whole controller, and lines put straight into a state.

use crate::mem::{LineAddr, LineData};
use crate::protocol::{Permission, StateId};

use super::line::{Line, Tbe, Way};
use super::{CacheCtrl, Loc};

/// The lists [`CacheCtrl::encode`] sorts, kept by its caller from one call to the next.
#[derive(Debug, Default)]
pub struct EncodeBuf {
    lines: Vec<(LineAddr, u8, Way)>,
    tbes: Vec<usize>,
}

/// Where [`CacheCtrl::place_line`] puts a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    L1,
    L2,
    /// No way: the state lives in the TBE (writebacks).
    TbeOnly,
}

impl CacheCtrl {
    /// The coherence state of a line in this core.
    pub fn state(&self, addr: LineAddr) -> StateId {
        match self.loc(addr) {
            Loc::L1(s) => self.l1.get(s).state,
            Loc::L2(s) => self.l2.get(s).state,
            Loc::Tbe => self.tbe(addr).and_then(|t| t.state).unwrap_or(self.ids.i),
            Loc::Absent => self.ids.i,
        }
    }

    pub fn state_name(&self, addr: LineAddr) -> &str {
        self.table.state_name(self.state(addr))
    }

    /// The data this core holds for a line, if its state grants read permission.
    pub fn readable_data(&self, addr: LineAddr) -> Option<&LineData> {
        let st = self.state(addr);
        match self.table.permission(st) {
            Permission::ReadOnly | Permission::ReadWrite => {
                self.way(addr).map(|w| self.store.get(w.data))
            }
            _ => None,
        }
    }

    /// Whether the line is in the L1 array (for tests and statistics).
    pub fn in_l1(&self, addr: LineAddr) -> bool {
        self.l1.find(addr).is_some()
    }

    /// True when no transaction is outstanding.
    pub fn is_quiescent(&self) -> bool {
        self.tbes.is_empty()
    }

    /// Outstanding TBEs (for watchdogs and error reports).
    pub fn tbes(&self) -> &[Tbe] {
        &self.tbes
    }

    /// Every line with a way, sorted by address, and TBE-only states.
    pub fn lines(&self) -> Vec<(LineAddr, StateId, Option<&LineData>)> {
        let mut v: Vec<_> = self
            .l1
            .iter()
            .chain(self.l2.iter())
            .map(|(_, a, w)| (a, w.state, Some(self.store.get(w.data))))
            .collect();
        for t in &self.tbes {
            if let Some(s) = t.state {
                v.push((t.addr, s, None));
            }
        }
        v.sort_by_key(|(a, _, _)| *a);
        v
    }

    /// Appends a canonical encoding of the coherence-relevant state (lines, placement, TBEs;
    /// not statistics or LRU clocks) for the exhaustive checker's visited set. `buf` holds
    /// the sorting's lists between calls, so a state's key allocates nothing here.
    pub fn encode(&self, out: &mut Vec<u8>, buf: &mut EncodeBuf) {
        let lines = &mut buf.lines;
        lines.clear();
        lines.extend(self.l1.iter().map(|(_, a, w)| (a, 1u8, *w)));
        lines.extend(self.l2.iter().map(|(_, a, w)| (a, 2u8, *w)));
        lines.sort_by_key(|(a, _, _)| *a);
        out.push(lines.len() as u8);
        for (addr, level, l) in lines.iter() {
            out.extend_from_slice(&addr.to_le_bytes());
            out.push(*level);
            out.extend_from_slice(&l.state.to_le_bytes());
            out.push(l.dirty as u8);
            out.extend_from_slice(self.store.get(l.data));
        }
        let tbes = &mut buf.tbes;
        tbes.clear();
        tbes.extend(0..self.tbes.len());
        tbes.sort_by_key(|&i| self.tbes[i].addr);
        out.push(tbes.len() as u8);
        for &i in tbes.iter() {
            encode_tbe(&self.tbes[i], out);
        }
    }

    /// Puts a line straight into a state, for controller-under-test harnesses: in a way of
    /// the L1 (or the L2 with `in_l2`) unless `in_array` is false, with an optional TBE.
    /// Replaces whatever this controller held for the line.
    pub fn place_line(
        &mut self,
        addr: LineAddr,
        state: StateId,
        data: LineData,
        dirty: bool,
        place: Placement,
        tbe: Option<Tbe>,
    ) {
        self.drop_empty_line(addr);
        self.tbes.retain(|t| t.addr != addr);
        let line = match place {
            Placement::TbeOnly => None,
            _ => Some(self.new_way(state, data, dirty)),
        };
        match (place, line) {
            (Placement::L1, Some(line)) => {
                let slot = self
                    .l1
                    .free_slot(addr)
                    .expect("free L1 way for the placed line");
                self.l1.insert(slot, addr, line);
            }
            (Placement::L2, Some(line)) => {
                let slot = self
                    .l2
                    .free_slot(addr)
                    .expect("free L2 way for the placed line");
                self.l2.insert(slot, addr, line);
            }
            _ => {}
        }
        if let Some(mut t) = tbe {
            t.addr = addr;
            if place == Placement::TbeOnly {
                t.state = Some(state);
            }
            self.tbes.push(t);
        }
    }

    /// Gives every clean copy this controller holds of `addr` (in a way or a TBE) the
    /// value `data`: the OS's stores to page tables, which cores and MOPEDs only read, reach
    /// the copies their walks left on chip without simulating the OS's own accesses.
    pub fn patch_clean(&mut self, addr: LineAddr, data: &LineData) {
        let slot = match self.way_of(addr) {
            Loc::L1(s) => Some((true, s)),
            Loc::L2(s) => Some((false, s)),
            _ => None,
        };
        if let Some((in_l1, s)) = slot {
            let way = if in_l1 {
                self.l1.get(s)
            } else {
                self.l2.get(s)
            };
            if !way.dirty {
                *self.store.get_mut(way.data) = *data;
            }
        }
        for t in self.tbes.iter_mut().filter(|t| t.addr == addr && !t.dirty) {
            t.data = *data;
        }
    }

    /// A copy of the line in a way, if any.
    pub fn line_copy(&self, addr: LineAddr) -> Option<Line> {
        self.line(addr)
    }

    /// Where the line sits.
    pub fn placement(&self, addr: LineAddr) -> Placement {
        match self.loc(addr) {
            Loc::L1(_) => Placement::L1,
            Loc::L2(_) => Placement::L2,
            _ => Placement::TbeOnly,
        }
    }

    /// The line's TBE, for harnesses that set up ack counts.
    pub fn tbe_for_test(&mut self, addr: LineAddr) -> &mut Tbe {
        self.tbe_mut(addr)
    }
}

/// One TBE's part of [`CacheCtrl::encode`]: every field, the core or MOPED request included.
fn encode_tbe(t: &Tbe, out: &mut Vec<u8>) {
    out.extend_from_slice(&t.addr.to_le_bytes());
    out.extend_from_slice(&t.state.map(|s| s + 1).unwrap_or(0).to_le_bytes());
    out.push(t.dirty as u8);
    out.extend_from_slice(&t.data);
    out.extend_from_slice(&t.acks_pending.to_le_bytes());
    out.push(t.acks_known as u8);
    out.push(t.source as u8);
    match t.req {
        None => out.push(0),
        Some(r) => {
            out.push(1 + r.kind as u8);
            out.extend_from_slice(&r.addr.to_le_bytes());
            out.push(r.size);
            out.extend_from_slice(&r.value.to_le_bytes());
        }
    }
    match t.moped {
        None => out.push(0),
        Some(m) => {
            out.push(1 + m.kind as u8);
            match m.write {
                None => out.push(0),
                Some((data, mask)) => {
                    out.push(1);
                    out.extend_from_slice(&mask.to_le_bytes());
                    out.extend_from_slice(&data);
                }
            }
        }
    }
}
