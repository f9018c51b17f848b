//! Running the `L2Cache` table: the events a network message, a core access and a MOPED
//! request raise, one (state, event) cell at a time, and what each entry point reports.

use crate::mem::{line_of, LineAddr, LineData, Slot, LINE_BYTES};
use crate::protocol::{Cell, EventId, Permission, StateId};

use crate::coherence::msg::{Msg, MsgType, Outbox};
use crate::coherence::{Delivery, Violation};

use super::actions::ACTIONS;
use super::line::{write_masked, Tbe};
use super::request::{
    AccessKind, Completed, CoreOutcome, CoreReq, HitLevel, MopedDone, MopedKind, MopedReq,
};
use super::{CacheCtrl, Ctx, Loc, MAX_PREFETCHES_IN_FLIGHT, PREFETCH_ID};

/// Who asked for a prefetch: the L1's prefetcher, or the core's `prefetch` instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PrefetchBy {
    Hardware,
    Software,
}

impl CacheCtrl {
    fn violation(
        &self,
        addr: LineAddr,
        state: StateId,
        event: EventId,
        detail: &str,
    ) -> Box<Violation> {
        Box::new(Violation {
            controller: self.name(),
            cycle: 0,
            addr,
            state: self.table.state_name(state).to_string(),
            event: self.table.event_name(event).to_string(),
            detail: detail.to_string(),
        })
    }

    /// Runs one (state, event) cell of the table, then any trigger it raised.
    pub(super) fn handle(
        &mut self,
        event: EventId,
        ctx: &mut Ctx,
    ) -> Result<Delivery, Box<Violation>> {
        let addr = ctx.addr;
        ctx.entry = self.way_of(addr);
        ctx.tbe = self.tbes.iter().position(|t| t.addr == addr);
        let mut event = event;
        loop {
            let state = self.state_in(ctx);
            match self.table.cell(state, event) {
                Cell::Transition {
                    next,
                    first_action,
                    n_actions,
                    counter,
                } => {
                    self.transitions.bump(counter as usize);
                    // Index the list afresh each time: the table's borrow must end before
                    // an action borrows the controller mutably.
                    for k in 0..n_actions as usize {
                        let a = self.table.actions(first_action, n_actions)[k];
                        (ACTIONS[a as usize].1)(self, ctx);
                    }
                    self.set_state_in(ctx, next);
                }
                Cell::Stall => {
                    self.stats.stalls += 1;
                    return Ok(Delivery::Stalled);
                }
                Cell::Impossible => {
                    return Err(self.violation(addr, state, event, "impossible cell reached"))
                }
            }
            if !std::mem::take(&mut ctx.trigger) {
                return Ok(Delivery::Done);
            }
            event = self.ids.all_acks;
            ctx.msg = None;
        }
    }

    /// The event a network message raises in this controller.
    fn event_for(&self, msg: &Msg) -> Option<EventId> {
        let ids = &self.ids;
        Some(match msg.ty {
            MsgType::FwdGets => ids.fwd_gets,
            MsgType::FwdGetx if msg.requestor == self.params.node => ids.own_getx,
            MsgType::FwdGetx => ids.fwd_getx,
            MsgType::Inv => ids.inv,
            MsgType::Ack => ids.ack,
            MsgType::Data => ids.data,
            MsgType::DataExclusive => ids.exclusive_data,
            MsgType::WbAck => ids.writeback_ack,
            MsgType::WbNack => ids.writeback_nack,
            MsgType::FwdGetCopy => ids.fwd_get_copy?,
            MsgType::FillGrant => ids.fill_grant?,
            _ => return None,
        })
    }

    /// Delivers a network message. A stalled message is left to the caller to retry.
    pub fn deliver(
        &mut self,
        msg: &Msg,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<Delivery, Box<Violation>> {
        let Some(event) = self.event_for(msg) else {
            return Err(Box::new(Violation {
                controller: self.name(),
                cycle: 0,
                addr: msg.addr,
                state: self.state_name(msg.addr).to_string(),
                event: msg.ty.name().to_string(),
                detail: "message type not handled by an L2 controller".into(),
            }));
        };
        match msg.ty {
            MsgType::Inv => self.stats.invalidations += 1,
            MsgType::FwdGets | MsgType::FwdGetx | MsgType::FwdGetCopy => {
                self.stats.forwarded_requests += 1
            }
            _ => {}
        }
        let n_done = done.len();
        let mut ctx = Ctx {
            msg: Some(msg),
            ..Ctx::new(msg.addr, self.params.l2_latency, out, done)
        };
        let r = self.handle(event, &mut ctx)?;
        if r == Delivery::Done && done.len() > n_done {
            self.promote_completed(msg.addr);
        }
        Ok(r)
    }

    /// A core access. Hits complete at once; misses complete with a later message. The
    /// L1 prefetcher, if any, then trains on it and issues its lines.
    pub fn core_request(
        &mut self,
        req: CoreReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<CoreOutcome, Box<Violation>> {
        let outcome = self.demand_request(req, out, done)?;
        if self.prefetcher.enabled() || self.prefetched_lines {
            self.after_demand(line_of(req.addr), outcome, out, done)?;
        }
        Ok(outcome)
    }

    /// A core access, without the prefetcher.
    fn demand_request(
        &mut self,
        req: CoreReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<CoreOutcome, Box<Violation>> {
        let addr = line_of(req.addr);
        debug_assert!(
            req.size >= 1
                && req.size <= 8
                && (req.addr - addr) as usize + req.size as usize <= LINE_BYTES
        );
        let loc = self.loc(addr);
        match loc {
            Loc::L1(slot) if self.plain_l1_hit(slot, req, done) => {
                return Ok(CoreOutcome::Hit(HitLevel::L1));
            }
            Loc::L2(slot) if self.plain_l2_hit(addr, slot, req, done) => {
                return Ok(CoreOutcome::Hit(HitLevel::L2));
            }
            _ => {}
        }
        if loc == Loc::Absent && !self.make_room(addr, out, done)? {
            self.stats.stalls += 1;
            return Ok(CoreOutcome::Stalled);
        }
        let event = match req.kind {
            AccessKind::Load => self.ids.load,
            AccessKind::Store => self.ids.store,
        };
        let delay = match loc {
            Loc::L1(_) => self.params.l1_latency,
            _ => self.params.l1_latency + self.params.l2_latency,
        };
        let n_done = done.len();
        let mut ctx = Ctx {
            req: Some(req),
            ..Ctx::new(addr, delay, out, done)
        };
        match self.handle(event, &mut ctx)? {
            Delivery::Stalled => {
                if loc == Loc::Absent {
                    // Room was made for a line that never got its transition.
                    self.drop_empty_line(addr);
                }
                Ok(CoreOutcome::Stalled)
            }
            Delivery::Done if done.len() > n_done => {
                Ok(CoreOutcome::Hit(self.hit(addr, loc, done)))
            }
            Delivery::Done => {
                self.stats.l1_misses += 1;
                Ok(CoreOutcome::Miss)
            }
        }
    }

    /// The common case without the generic machinery: a load or store on a line in the L1
    /// whose table cell is a plain hit (see `hit_next`). False if the cell is anything else.
    #[inline]
    fn plain_l1_hit(&mut self, slot: Slot, req: CoreReq, done: &mut Vec<Completed>) -> bool {
        let Some(value) = self.plain_l1_access(slot, &req) else {
            return false;
        };
        done.push(Completed {
            req,
            value,
            level: HitLevel::L1,
        });
        true
    }

    /// The plain hit's transition on a line in the L2 (the same table cell as in the L1,
    /// see `hit_next`), then what [`CacheCtrl::hit`] books for an L2 hit: the counts and
    /// the line's move up into the L1. False, with nothing changed, for another cell.
    #[inline]
    fn plain_l2_hit(
        &mut self,
        addr: LineAddr,
        slot: Slot,
        req: CoreReq,
        done: &mut Vec<Completed>,
    ) -> bool {
        let Some(value) = self.plain_transition(false, slot, &req) else {
            return false;
        };
        done.push(Completed {
            req,
            value,
            level: HitLevel::L2,
        });
        self.stats.l1_misses += 1;
        self.stats.l2_hits += 1;
        self.promote_from(addr, slot);
        true
    }

    /// The plain hit's transition on the line in L1 `slot` (see `hit_next`): the access
    /// done, counted and the line renewed; `None`, with nothing changed, if the line's cell
    /// is anything else.
    #[inline]
    fn plain_l1_access(&mut self, slot: Slot, req: &CoreReq) -> Option<u64> {
        let value = self.plain_transition(true, slot, req)?;
        self.l1.touch(slot);
        self.stats.l1_hits += 1;
        Some(value)
    }

    /// The plain hit's transition itself on the line in `slot` of the L1 (`in_l1`) or the
    /// L2: the cell's counter, the access and the next state; `None`, with nothing
    /// changed, if the line's cell is anything else.
    #[inline(always)]
    fn plain_transition(&mut self, in_l1: bool, slot: Slot, req: &CoreReq) -> Option<u64> {
        let array = if in_l1 { &mut self.l1 } else { &mut self.l2 };
        let state = array.get(slot).state;
        let (next, counter) = self.hit_next[state as usize][req.kind as usize]?;
        self.transitions.bump(counter as usize);
        let way = array.get_mut(slot);
        let value = super::line::access(way, self.store.get_mut(way.data), req);
        way.state = next;
        Some(value)
    }

    /// A core's load or store that is a plain L1 hit, as [`CacheCtrl::core_request`] would do it,
    /// with nothing to hand back but its value: `None`, with nothing changed, for any other
    /// case (not in the L1, another cell, or a prefetcher that watches demand accesses).
    #[inline]
    pub fn l1_plain_hit(&mut self, req: &CoreReq) -> Option<u64> {
        if self.prefetcher.enabled() || self.prefetched_lines {
            return None;
        }
        match self.way_of(line_of(req.addr)) {
            Loc::L1(slot) => self.plain_l1_access(slot, req),
            _ => None,
        }
    }

    /// Books a core access the table completed at once, found in `loc` before the
    /// transition: marks its completion with the level that served it, and moves a line
    /// hit in the L2 up into the L1.
    fn hit(&mut self, addr: LineAddr, loc: Loc, done: &mut [Completed]) -> HitLevel {
        let level = if matches!(loc, Loc::L1(_)) {
            HitLevel::L1
        } else {
            HitLevel::L2
        };
        done.last_mut().expect("completion").level = level;
        match level {
            HitLevel::L1 => {
                self.stats.l1_hits += 1;
                if let Loc::L1(slot) = self.loc(addr) {
                    self.l1.touch(slot);
                }
            }
            _ => {
                self.stats.l1_misses += 1;
                self.stats.l2_hits += 1;
                self.promote(addr);
            }
        }
        level
    }

    /// Evicts a line as if it were chosen as a victim (the checker's voluntary eviction).
    /// Returns false if the line is absent or its state does not allow it now.
    pub fn evict(
        &mut self,
        addr: LineAddr,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Box<Violation>> {
        let st = self.state(addr);
        if st == self.ids.i || !self.table.is_stable(st) {
            return Ok(false);
        }
        let mut ctx = Ctx::new(addr, self.params.l2_latency, out, done);
        Ok(self.handle(self.ids.replacement, &mut ctx)? == Delivery::Done)
    }

    // ---- The L1 prefetcher ----

    /// Trains the prefetcher on a demand access to `addr` and issues the lines it picks:
    /// after an L1 miss, or the first demand hit on a prefetched line (counted useful,
    /// whoever prefetched it).
    fn after_demand(
        &mut self,
        addr: LineAddr,
        outcome: CoreOutcome,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<(), Box<Violation>> {
        if outcome == CoreOutcome::Stalled {
            // It waits (on a prefetch in flight, say) and will come again.
            return Ok(());
        }
        let was_prefetched = self.prefetched_bit(addr).is_some_and(std::mem::take);
        let tagged = match outcome {
            CoreOutcome::Stalled => false,
            CoreOutcome::Hit(HitLevel::L1) if was_prefetched => {
                self.stats.l1_prefetches_useful += 1;
                true
            }
            CoreOutcome::Hit(HitLevel::L1) => return Ok(()),
            CoreOutcome::Hit(_) | CoreOutcome::Miss => false,
        };
        for line in self.prefetcher.train(addr, tagged) {
            self.prefetch(line, PrefetchBy::Hardware, out, done)?;
        }
        Ok(())
    }

    /// Brings `addr` into the L1 for no core: up from the L2, or by a load through the
    /// table whose completion no core sees. Dropped when the line is in the L1 or busy,
    /// when [`MAX_PREFETCHES_IN_FLIGHT`] are outstanding, or when room needs a stall.
    fn prefetch(
        &mut self,
        addr: LineAddr,
        by: PrefetchBy,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<(), Box<Violation>> {
        let busy = self.tbes.iter().any(|t| t.addr == addr);
        let stable = |c: &Self| {
            let st = c.state(addr);
            c.table.is_stable(st) && st != c.ids.i
        };
        match self.loc(addr) {
            Loc::L2(_) if !busy && stable(self) => {
                self.try_swap_up(addr);
                if matches!(self.way_of(addr), Loc::L1(_)) {
                    self.mark_prefetched(addr);
                    self.count_prefetch(by, Some(true));
                } else {
                    self.count_prefetch(by, None);
                }
            }
            Loc::Absent if !busy && self.prefetches_in_flight() < MAX_PREFETCHES_IN_FLIGHT => {
                self.prefetch_miss(addr, by, out, done)?
            }
            _ => self.count_prefetch(by, None),
        }
        Ok(())
    }

    /// Counts a prefetch by `by`: issued (`Some(true)` from this L2, `Some(false)` from the
    /// directory) or dropped (`None`).
    fn count_prefetch(&mut self, by: PrefetchBy, issued: Option<bool>) {
        self.prefetched_lines |= issued.is_some();
        let s = &mut self.stats;
        match (by, issued) {
            (PrefetchBy::Hardware, Some(from_l2)) => {
                s.l1_prefetches_issued += 1;
                if from_l2 {
                    s.l1_prefetches_l2 += 1;
                } else {
                    s.l1_prefetches_network += 1;
                }
            }
            (PrefetchBy::Hardware, None) => s.l1_prefetches_dropped += 1,
            (PrefetchBy::Software, Some(_)) => s.sw_prefetches += 1,
            (PrefetchBy::Software, None) => s.sw_prefetches_dropped += 1,
        }
    }

    /// A software prefetch (the core's `prefetch` instruction) of `addr`'s line into the
    /// L1, taken as the hardware prefetcher's requests are and counted apart from them.
    pub fn software_prefetch(
        &mut self,
        addr: u64,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<(), Box<Violation>> {
        self.prefetch(line_of(addr), PrefetchBy::Software, out, done)
    }

    /// The core's `clflush` of `addr`'s line: out of this core's caches through the
    /// table's `Replacement`, written back if modified. False while the line is busy (a
    /// request of its own in flight): the core tries again.
    pub fn flush(
        &mut self,
        addr: u64,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<bool, Box<Violation>> {
        let line = line_of(addr);
        let st = self.state(line);
        if st == self.ids.i && !self.tbes.iter().any(|t| t.addr == line) {
            return Ok(true);
        }
        let flushed = self.evict(line, out, done)?;
        if flushed {
            self.stats.flushes += 1;
        }
        Ok(flushed)
    }

    /// The prefetched bit of the line's way, wherever it sits.
    fn prefetched_bit(&mut self, addr: LineAddr) -> Option<&mut bool> {
        match self.way_of(addr) {
            Loc::L1(s) => Some(&mut self.l1.get_mut(s).prefetched),
            Loc::L2(s) => Some(&mut self.l2.get_mut(s).prefetched),
            _ => None,
        }
    }

    fn mark_prefetched(&mut self, addr: LineAddr) {
        if let Some(bit) = self.prefetched_bit(addr) {
            *bit = true;
        }
    }

    fn prefetches_in_flight(&self) -> usize {
        let ours = |t: &&Tbe| t.req.is_some_and(|r| r.id == PREFETCH_ID);
        self.tbes.iter().filter(ours).count()
    }

    /// A prefetch of a line this core does not hold: a way, then the table's `Load`.
    fn prefetch_miss(
        &mut self,
        addr: LineAddr,
        by: PrefetchBy,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<(), Box<Violation>> {
        if !self.make_room(addr, out, done)? {
            self.count_prefetch(by, None);
            return Ok(());
        }
        let req = CoreReq {
            id: PREFETCH_ID,
            kind: AccessKind::Load,
            addr,
            size: 8,
            value: 0,
        };
        let delay = self.params.l1_latency + self.params.l2_latency;
        let mut ctx = Ctx {
            req: Some(req),
            ..Ctx::new(addr, delay, out, done)
        };
        match self.handle(self.ids.load, &mut ctx)? {
            Delivery::Stalled => {
                self.drop_empty_line(addr);
                self.count_prefetch(by, None);
            }
            Delivery::Done => {
                self.count_prefetch(by, Some(false));
                self.mark_prefetched(addr);
            }
        }
        Ok(())
    }

    // ---- The MOPED beside this L2 ----

    /// A MOPED request. A line in the L1 moves into the L2 first (the paper's MOPED works on
    /// L2 lines); a receive line that is not here gets an L2 way, a send line does not.
    /// `Hit` means the answer is already in [`CacheCtrl::take_moped_done`]; `Stalled` means
    /// retry when this controller changes. An error if the protocol has no MOPED events.
    pub fn moped_request(
        &mut self,
        req: MopedReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<CoreOutcome, Box<Violation>> {
        let addr = req.addr;
        debug_assert_eq!(addr, line_of(addr));
        let event = self.moped_event(&req)?;
        let Some(placed) = self.ready_for_moped(&req, out, done)? else {
            self.stats.stalls += 1;
            return Ok(CoreOutcome::Stalled);
        };
        let n_done = self.moped_done.len();
        let mut ctx = Ctx {
            moped: Some(req),
            ..Ctx::new(addr, self.params.l2_latency, out, done)
        };
        match self.handle(event, &mut ctx)? {
            Delivery::Stalled => {
                if placed {
                    self.drop_empty_line(addr);
                }
                Ok(CoreOutcome::Stalled)
            }
            Delivery::Done => {
                match req.kind {
                    MopedKind::Read => self.stats.moped_reads += 1,
                    MopedKind::Own => self.stats.moped_owns += 1,
                    MopedKind::Fill => self.stats.moped_fills += 1,
                }
                if self.moped_done.len() > n_done {
                    self.stats.moped_local += 1;
                    Ok(CoreOutcome::Hit(HitLevel::L2))
                } else {
                    Ok(CoreOutcome::Miss)
                }
            }
        }
    }

    /// The event a MOPED request raises: `M_GETS`, `M_GETX`, or `M_FILL` where the protocol
    /// has it. An error if the protocol has no MOPED events.
    fn moped_event(&self, req: &MopedReq) -> Result<EventId, Box<Violation>> {
        let ids = &self.ids;
        let event = match req.kind {
            MopedKind::Read => ids.m_gets,
            MopedKind::Own => ids.m_getx,
            MopedKind::Fill => ids.m_fill.or(ids.m_getx),
        };
        event.ok_or_else(|| {
            Box::new(Violation {
                controller: self.name(),
                cycle: 0,
                addr: req.addr,
                state: self.state_name(req.addr).to_string(),
                event: format!("{:?}", req.kind),
                detail: format!("protocol `{}` has no MOPED events", self.table.name()),
            })
        })
    }

    /// Gets the line where a MOPED request works on it: a stable line in the L1 moves down
    /// into the L2, and a receive line that is not here gets an empty L2 way. `None` if no
    /// L2 way can be freed now; else whether an empty way was put in for the line.
    fn ready_for_moped(
        &mut self,
        req: &MopedReq,
        out: &mut dyn Outbox,
        done: &mut Vec<Completed>,
    ) -> Result<Option<bool>, Box<Violation>> {
        let addr = req.addr;
        let mut placed = false;
        let ready = match self.loc(addr) {
            Loc::L1(_) if self.table.is_stable(self.state(addr)) => self.demote(addr, out, done)?,
            Loc::Absent if req.kind != MopedKind::Read => {
                let made = self.make_l2_way(addr, out, done)?;
                if made {
                    let slot = self.l2.free_slot(addr).expect("way made");
                    let empty = self.new_way(self.ids.i, [0; LINE_BYTES], false);
                    self.l2.insert(slot, addr, empty);
                    placed = true;
                }
                made
            }
            _ => true,
        };
        Ok(ready.then_some(placed))
    }

    /// The copy unit's write into a line it was granted: stores the bytes `mask` selects,
    /// as a store hit would. False when the rights are gone (the line was taken or evicted
    /// since the grant): the MOPED must ask again.
    pub fn moped_write(&mut self, addr: LineAddr, data: &LineData, mask: u64) -> bool {
        let st = self.state(addr);
        let writable = self.table.is_stable(st)
            && self.table.permission(st) == Permission::ReadWrite
            && matches!(self.loc(addr), Loc::L1(_) | Loc::L2(_));
        if !writable {
            self.stats.moped_writes_revoked += 1;
            return false;
        }
        self.stats.moped_writes += 1;
        // The table's store-hit cell says where a written line goes (M -> MM).
        let next = self.hit_next[st as usize][AccessKind::Store as usize].map(|(n, _)| n);
        let way = match self.loc(addr) {
            Loc::L1(s) => self.l1.get_mut(s),
            Loc::L2(s) => self.l2.get_mut(s),
            _ => unreachable!("checked above"),
        };
        write_masked(self.store.get_mut(way.data), data, mask);
        way.dirty = true;
        if let Some(next) = next {
            way.state = next;
        }
        true
    }

    /// Takes the answers for the MOPED produced since the last call.
    pub fn take_moped_done(&mut self) -> std::vec::Drain<'_, MopedDone> {
        self.moped_done.drain(..)
    }

    /// True when answers for the MOPED are waiting.
    pub fn has_moped_done(&self) -> bool {
        !self.moped_done.is_empty()
    }
}
