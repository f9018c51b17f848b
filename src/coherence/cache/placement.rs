//! The exclusive L1/L2 hierarchy under one coherence state: which way a line sits in, making
//! room for a new line (a victim leaves through the table's `Replacement` event), and moving
//! lines between the levels. A line is in at most one of the two arrays; moving it changes
//! no coherence state, so the protocol tables never see these moves.

use crate::mem::{LineAddr, Room, Slot, LINE_BYTES};

use crate::coherence::msg::Outbox;
use crate::coherence::{Delivery, Violation};

use super::line::Way;
use super::request::Completed;
use super::{CacheCtrl, Ctx, Loc};

impl CacheCtrl {
    /// The way holding the line, if any (`Loc::L1`, `Loc::L2` or `Loc::Absent`).
    #[inline(always)]
    pub(super) fn way_of(&self, addr: LineAddr) -> Loc {
        let (a, slot, in_l1) = self.hint.get();
        if a == addr {
            if in_l1 && self.l1.holds(slot, addr) {
                return Loc::L1(slot);
            }
            if !in_l1 && self.l2.holds(slot, addr) {
                return Loc::L2(slot);
            }
        }
        if let Some(s) = self.l1.find(addr) {
            self.hint.set((addr, s, true));
            Loc::L1(s)
        } else if let Some(s) = self.l2.find(addr) {
            self.hint.set((addr, s, false));
            Loc::L2(s)
        } else {
            Loc::Absent
        }
    }

    /// Where the line's state lives: a way, else a TBE holding it, else nowhere.
    #[inline]
    pub(super) fn loc(&self, addr: LineAddr) -> Loc {
        match self.way_of(addr) {
            Loc::Absent
                if self
                    .tbes
                    .iter()
                    .any(|t| t.addr == addr && t.state.is_some()) =>
            {
                Loc::Tbe
            }
            l => l,
        }
    }

    fn evictable(&self) -> impl Fn(&Way) -> bool + '_ {
        move |l| self.table.is_stable(l.state) && l.state != self.ids.i
    }

    /// Makes a way for a new line in the L1 (or the L2 when there is no L1), evicting a
    /// victim through the table's Replacement event. False if every candidate is busy.
    pub(super) fn make_room(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Box<Violation>> {
        if self.l1.ways() > 0 {
            let v = match self.l1.room(addr, self.evictable()) {
                Room::Free(slot) => {
                    let empty = self.new_way(self.ids.i, [0; LINE_BYTES], false);
                    self.l1.insert(slot, addr, empty);
                    return Ok(true);
                }
                Room::Victim(v) => v,
                Room::Busy => return Ok(false),
            };
            let vaddr = self.l1.tag(v);
            // The L1 victim moves down into the L2 (exclusive hierarchy).
            if !self.make_l2_way(vaddr, out, done)? {
                return Ok(false);
            }
            let victim = self.l1.remove(v);
            let l2slot = self.l2.free_slot(vaddr).expect("way made");
            self.l2.insert(l2slot, vaddr, victim);
            let empty = self.new_way(self.ids.i, [0; LINE_BYTES], false);
            self.l1.insert(v, addr, empty);
            Ok(true)
        } else {
            if !self.make_l2_way(addr, out, done)? {
                return Ok(false);
            }
            let slot = self.l2.free_slot(addr).expect("way made");
            let empty = self.new_way(self.ids.i, [0; LINE_BYTES], false);
            self.l2.insert(slot, addr, empty);
            Ok(true)
        }
    }

    /// Ensures a free L2 way in `addr`'s set, replacing the LRU stable line if needed.
    pub(super) fn make_l2_way(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Box<Violation>> {
        if self.l2.free_slot(addr).is_some() {
            return Ok(true);
        }
        let Some(v) = self.l2.victim(addr, self.evictable()) else {
            return Ok(false);
        };
        let vaddr = self.l2.tag(v);
        let mut ctx = Ctx::new(vaddr, self.params.l2_latency, out, done);
        let r = self.handle(self.ids.replacement, &mut ctx)?;
        Ok(r == Delivery::Done && self.l2.free_slot(addr).is_some())
    }

    /// Moves a stable line from the L1 down into the L2, replacing in the L2 if needed.
    /// False if no L2 way can be freed now.
    pub(super) fn demote(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Box<Violation>> {
        if !self.make_l2_way(addr, out, done)? {
            return Ok(false);
        }
        let Loc::L1(s) = self.loc(addr) else {
            return Ok(true);
        };
        let line = self.l1.remove(s);
        let slot = self.l2.free_slot(addr).expect("way made");
        self.l2.insert(slot, addr, line);
        Ok(true)
    }

    pub(super) fn drop_empty_line(&mut self, addr: LineAddr) {
        let way = match self.loc(addr) {
            Loc::L1(s) => self.l1.remove(s),
            Loc::L2(s) => self.l2.remove(s),
            _ => return,
        };
        self.drop_way(way);
    }

    /// After a miss completes on a line that sits in the L2, move it up to the L1.
    pub(super) fn promote_completed(&mut self, addr: LineAddr) {
        if let Loc::L2(_) = self.loc(addr) {
            if self.table.is_stable(self.state(addr)) {
                self.try_swap_up(addr);
            }
        }
    }

    /// Moves a line just hit in the L2 into the L1, sending the L1's victim down.
    pub(super) fn promote(&mut self, addr: LineAddr) {
        if let Loc::L2(from) = self.loc(addr) {
            self.promote_from(addr, from);
        }
    }

    /// [`CacheCtrl::promote`] for a line known to sit in L2 slot `from`.
    #[inline]
    pub(super) fn promote_from(&mut self, addr: LineAddr, from: Slot) {
        if !self.swap_up(addr, from) {
            // A line that could not move up is still the L2's most recently used.
            self.l2.touch(from);
        }
    }

    /// Best-effort swap of an L2 line into the L1: only when the L1 victim can take a way
    /// in the L2 without another replacement (its set has a free way once this line leaves).
    pub(super) fn try_swap_up(&mut self, addr: LineAddr) {
        if let Loc::L2(from) = self.loc(addr) {
            self.swap_up(addr, from);
        }
    }

    /// [`CacheCtrl::try_swap_up`] for the line in L2 slot `from`; true if it moved.
    fn swap_up(&mut self, addr: LineAddr, from: Slot) -> bool {
        if self.l1.ways() == 0 {
            return false;
        }
        let v = match self.l1.room(addr, self.evictable()) {
            Room::Free(slot) => {
                let w = self.l2.remove(from);
                self.l1.insert(slot, addr, w);
                return true;
            }
            Room::Victim(v) => v,
            Room::Busy => return false,
        };
        let vaddr = self.l1.tag(v);
        // The victim's L2 way: the first free one of its set once this line has left it
        // (this line's own, where the two share a set and no way before it is free).
        let slot = match (self.l2.free_slot(vaddr), self.l2.same_set(from, vaddr)) {
            (Some(free), true) => free.min(from),
            (Some(free), false) => free,
            (None, true) => from,
            (None, false) => return false,
        };
        let w = self.l2.remove(from);
        let victim = self.l1.remove(v);
        self.l1.insert(v, addr, w);
        self.l2.insert(slot, vaddr, victim);
        true
    }
}
