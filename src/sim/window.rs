//! The loads an `mlp` core ([`CoreModel::Mlp`](crate::config::CoreModel)) has issued
//! without waiting for their values: a driver marks such a load [`Next::Independent`]
//! (its value feeds only a later store, or nothing), the core goes on stepping, and the
//! load's completion reaches the driver by its request id ([`Driver::independent_issued`]).
//!
//! The core stops asking its driver while `system.outstanding_loads` lines are missing (its
//! miss status holding registers) or `system.window` accesses have issued since its oldest
//! incomplete load (its instruction window). The memory system sees nothing new: each
//! load is an ordinary core request, and a load to a line an older load of the window still
//! waits for is held in the core until that one completes (it merges into the miss, as a
//! load to a line being filled waits on the fill), so the L2 controller never holds two of
//! one core's loads to a line. A load also waits for the core's older buffered stores to
//! its line, as the blocking load does (no store forwarding).

//!
//! This module holds the window's state; `super::mlp` moves loads through it.

use std::ops::{Deref, DerefMut};

use crate::coherence::{Completed, CoreReq};
use crate::config::CoreSection;
use crate::mem::line_of;

#[cfg(doc)]
use super::{Driver, Next};

/// Where a load of the window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LoadState {
    /// Held in the core behind an older load of the window to the same line.
    Merged,
    /// Waiting to (re)issue: behind a buffered store to its line, or stalled by the L2
    /// controller on a line in transition.
    Waiting,
    /// In the memory system: a miss.
    Missing,
    /// Hit; completes at the cycle given.
    Hit(u64),
    /// Left the window: its record stays, matching no search, until every older load has
    /// left too (taking a load out of the middle of the window moved every load after it).
    Gone,
}

/// A gone load's line: no load's line (a line address has its low bits clear).
const GONE_LINE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) struct WinLoad {
    pub req: CoreReq,
    /// The core's access count before it issued: the window is measured from the oldest.
    pub seq: u64,
    pub issued_at: u64,
    /// When it last went into the memory system (for its miss latency).
    pub sent_at: u64,
    /// The hit's completion, kept until its latency has passed.
    pub hit: Option<Completed>,
}

/// What the window's searches read of a load: its id, its line and its state.
#[derive(Clone, Copy, Debug)]
struct Key {
    id: u64,
    line: u64,
    state: LoadState,
}

/// A core's loads in flight without blocking it, oldest first. Their ids rise from the
/// oldest to the newest (a core numbers its accesses in order), so a load is found by
/// binary search; each load's id, line and state sit apart from its record in a dense
/// copy, so a search reads 32 bytes per load instead of 128; and the window counts its
/// loads that hold a miss register and those merged behind another, so a step's "is the
/// window full" reads two numbers instead of every load. A load that leaves is marked
/// gone in place and its record dropped once it is the oldest, so the oldest record is
/// always a load still in the window.
#[derive(Clone, Debug, Default)]
pub(crate) struct Window {
    loads: Run<WinLoad>,
    /// The key of each load of `loads`, in the same order.
    keys: Run<Key>,
    /// Loads that hold a miss register: `Missing` or `Waiting`.
    registers: usize,
    /// Loads `Merged` behind an older one.
    merged: usize,
    /// The core stopped for room in the window: only a window load's completion steps it
    /// again (a store's does not, as it does not step a core blocked on a load).
    pub(super) blocked: bool,
    /// The list a retry's loads are gathered in, kept so that a retry allocates nothing.
    ready: Vec<u64>,
}

impl LoadState {
    /// Whether a load in this state holds one of the core's miss registers (a waiting one
    /// will need one as it issues).
    fn holds_register(self) -> bool {
        matches!(self, LoadState::Missing | LoadState::Waiting)
    }
}

impl Window {
    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// The core stops until a load of the window completes.
    pub fn block(&mut self) {
        self.blocked = true;
    }

    /// Where the newest load stands (the window holds at least one).
    pub(super) fn newest(&self) -> usize {
        self.loads.len() - 1
    }

    /// Whether load `id` is one of the window's.
    pub fn holds(&self, id: u64) -> bool {
        self.index(id).is_some()
    }

    /// Where load `id` stands in the window, oldest first.
    #[inline]
    pub(super) fn index(&self, id: u64) -> Option<usize> {
        // Most often the load just taken, as it issues and hits; a store or a blocking
        // load issued after the newest window load is none of the window's.
        let last = self.keys.last()?;
        let i = if last.id == id {
            self.keys.len() - 1
        } else if id > last.id || id < self.keys[0].id {
            return None;
        } else {
            self.keys.binary_search_by_key(&id, |k| k.id).ok()?
        };
        (!matches!(self.keys[i].state, LoadState::Gone)).then_some(i)
    }

    /// The load at `i`, oldest first.
    #[inline]
    pub(super) fn load(&self, i: usize) -> &WinLoad {
        &self.loads[i]
    }

    /// Load `l` joins the window as its newest (its id above every other's), merged: it
    /// issues as the window lets it.
    pub(super) fn push(&mut self, l: WinLoad) {
        debug_assert!(self.keys.last().map_or(true, |b| b.id < l.req.id));
        self.merged += 1;
        self.keys.push_back(Key {
            id: l.req.id,
            line: line_of(l.req.addr),
            state: LoadState::Merged,
        });
        self.loads.push_back(l);
    }

    /// Load `i` (not gone) leaves the window; the records of the loads gone from its
    /// oldest end are dropped. The cycle it last went into the memory system.
    pub(super) fn remove(&mut self, i: usize) -> Option<u64> {
        let sent_at = self.loads.get(i)?.sent_at;
        self.set_state(i, LoadState::Gone);
        self.keys[i].line = GONE_LINE;
        while self
            .keys
            .first()
            .is_some_and(|k| matches!(k.state, LoadState::Gone))
        {
            self.keys.pop_front();
            self.loads.pop_front();
        }
        Some(sent_at)
    }

    /// Load `i` moves to state `s`.
    fn set_state(&mut self, i: usize, s: LoadState) {
        let k = &mut self.keys[i];
        self.registers -= usize::from(k.state.holds_register());
        self.merged -= usize::from(matches!(k.state, LoadState::Merged));
        self.registers += usize::from(s.holds_register());
        self.merged += usize::from(matches!(s, LoadState::Merged));
        k.state = s;
    }

    /// Load `id` went into the memory system at `now` (for its miss latency).
    pub(super) fn sent(&mut self, id: u64, now: u64) {
        if let Some(i) = self.index(id) {
            self.loads[i].sent_at = now;
        }
    }

    /// The completion of the oldest load whose hit completes at `now`, taken.
    pub(super) fn take_hit_due(&mut self, now: u64) -> Option<Completed> {
        let i = self
            .keys
            .iter()
            .position(|k| k.state == LoadState::Hit(now))?;
        self.loads[i].hit.take()
    }

    /// Whether a load merged behind another waits for `line`.
    pub(super) fn merged_on(&self, line: u64) -> bool {
        self.merged > 0
            && self
                .keys
                .iter()
                .any(|k| k.line == line && matches!(k.state, LoadState::Merged))
    }

    /// Whether the core must wait for a load of the window before it issues anything
    /// more, having issued `accesses` accesses so far.
    pub fn full(&self, accesses: u64, sys: &CoreSection) -> bool {
        // A merged load needs no register of its own; a waiting one will need one.
        self.registers >= sys.outstanding_loads
            || self
                .loads
                .first()
                .is_some_and(|l| accesses - l.seq >= sys.window as u64)
    }

    /// Whether every load of the window is in the memory system or hit (none waits to
    /// issue, so a retry issues nothing) and none is to `addr`'s line.
    pub fn settled_apart_from(&self, addr: u64) -> bool {
        let line = line_of(addr);
        self.keys
            .iter()
            .all(|k| !matches!(k.state, LoadState::Merged | LoadState::Waiting) && k.line != line)
    }

    /// The oldest load and the cycle it issued, for the watchdog (the oldest record is
    /// never a gone load's).
    pub fn oldest(&self) -> Option<(CoreReq, u64)> {
        self.loads.first().map(|l| (l.req, l.issued_at))
    }

    /// The L2 controller's answer to load `id`: a miss, or a stall to retry.
    pub fn answered(&mut self, id: u64, missed: bool) {
        if let Some(i) = self.index(id) {
            let s = if missed {
                LoadState::Missing
            } else {
                LoadState::Waiting
            };
            self.set_state(i, s);
        }
    }

    /// Load `id` will hit, its completion delivered by another host (gem5's Ruby): it holds
    /// no miss register, as a hit does, until it completes.
    pub fn answered_hit(&mut self, id: u64) {
        if let Some(i) = self.index(id) {
            self.set_state(i, LoadState::Hit(u64::MAX));
        }
    }

    /// Load `id` hit; it completes with `comp` at cycle `at` ([`hit_done`]).
    pub fn hit(&mut self, comp: Completed, at: u64) {
        if let Some(i) = self.index(comp.req.id) {
            self.set_state(i, LoadState::Hit(at));
            self.loads[i].hit = Some(comp);
        }
    }

    /// Whether an older load than the one at `i` waits for the same line.
    pub(super) fn behind_older(&self, i: usize) -> bool {
        behind_older(&self.keys, i)
    }

    /// Whether the load at `i` may issue now: it waits to (re)issue, or it is merged and
    /// no older load to its line is left.
    pub(super) fn may_issue(&self, i: usize) -> bool {
        may_issue(&self.keys, i)
    }

    /// The ids of the loads that may issue now, oldest first, in a list the window keeps
    /// between retries (hand it back with [`Window::keep_ready`]), so that a retry
    /// allocates nothing.
    pub(super) fn take_ready(&mut self) -> Vec<u64> {
        let mut ids = std::mem::take(&mut self.ready);
        ids.clear();
        if self.registers == 0 && self.merged == 0 {
            return ids;
        }
        let keys: &[Key] = &self.keys;
        ids.extend(
            (0..keys.len())
                .filter(|&i| may_issue(keys, i))
                .map(|i| keys[i].id),
        );
        ids
    }

    /// The list [`Window::take_ready`] gave, kept for the next retry.
    pub(super) fn keep_ready(&mut self, ids: Vec<u64>) {
        self.ready = ids;
    }
}

/// Whether an older load than the one at `i` of `keys` waits for the same line.
#[inline]
fn behind_older(keys: &[Key], i: usize) -> bool {
    let line = keys[i].line;
    // Newest first: the load a merged one waits behind is usually just before it.
    keys[..i].iter().rev().any(|k| k.line == line)
}

/// Whether the load at `i` of `keys` may issue now (see [`Window::may_issue`]).
#[inline]
fn may_issue(keys: &[Key], i: usize) -> bool {
    match keys[i].state {
        LoadState::Waiting => true,
        LoadState::Merged => !behind_older(keys, i),
        _ => false,
    }
}

/// A queue kept in a `Vec` whose front moves on, so that its items are one slice (a
/// search is a slice's binary search, an index one addition): the items popped from the
/// front are dropped once they are half the `Vec`, so a push and a pop cost O(1) amortized.
#[derive(Clone, Debug)]
struct Run<T> {
    items: Vec<T>,
    start: usize,
}

impl<T> Default for Run<T> {
    fn default() -> Run<T> {
        Run {
            items: Vec::new(),
            start: 0,
        }
    }
}

impl<T> Run<T> {
    fn push_back(&mut self, item: T) {
        self.items.push(item);
    }

    fn pop_front(&mut self) {
        debug_assert!(self.start < self.items.len(), "pop from an empty run");
        self.start += 1;
        if self.start == self.items.len() {
            self.items.clear();
            self.start = 0;
        } else if self.start >= 32 && 2 * self.start >= self.items.len() {
            self.items.drain(..self.start);
            self.start = 0;
        }
    }
}

impl<T> Deref for Run<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.items[self.start..]
    }
}

impl<T> DerefMut for Run<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::Run;

    /// A run pops and pushes as a queue does, across the moments it drops its front.
    #[test]
    fn a_run_is_a_queue() {
        let mut run = Run::default();
        let mut model = std::collections::VecDeque::new();
        let mut x = 7u64;
        for step in 0..5_000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            if x >> 63 == 0 || model.len() < 40 {
                run.push_back(step);
                model.push_back(step);
            } else {
                run.pop_front();
                model.pop_front();
            }
            assert!(run.iter().eq(model.iter()), "after step {step}");
        }
    }
}
