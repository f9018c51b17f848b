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

use std::collections::VecDeque;

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
}

#[derive(Clone, Copy, Debug)]
pub(super) struct WinLoad {
    pub req: CoreReq,
    /// The core's access count before it issued: the window is measured from the oldest.
    pub seq: u64,
    pub issued_at: u64,
    /// When it last went into the memory system (for its miss latency).
    pub sent_at: u64,
    pub state: LoadState,
    /// The hit's completion, kept until its latency has passed.
    pub hit: Option<Completed>,
}

/// A core's loads in flight without blocking it, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Window {
    pub(super) loads: VecDeque<WinLoad>,
    /// The core stopped for room in the window: only a window load's completion steps it
    /// again (a store's does not, as it does not step a core blocked on a load).
    pub(super) blocked: bool,
}

impl Window {
    pub fn is_empty(&self) -> bool {
        self.loads.is_empty()
    }

    /// The core stops until a load of the window completes.
    pub fn block(&mut self) {
        self.blocked = true;
    }

    /// Whether load `id` is one of the window's.
    pub fn holds(&self, id: u64) -> bool {
        self.loads.iter().any(|l| l.req.id == id)
    }

    /// Whether the core must wait for a load of the window before it issues anything
    /// more, having issued `accesses` accesses so far.
    pub fn full(&self, accesses: u64, sys: &CoreSection) -> bool {
        // A merged load needs no register of its own; a waiting one will need one.
        let missing = self
            .loads
            .iter()
            .filter(|l| matches!(l.state, LoadState::Missing | LoadState::Waiting))
            .count();
        missing >= sys.outstanding_loads
            || self
                .loads
                .front()
                .is_some_and(|l| accesses - l.seq >= sys.window as u64)
    }

    /// Whether every load of the window is in the memory system or hit (none waits to
    /// issue, so a retry issues nothing) and none is to `addr`'s line.
    pub fn settled_apart_from(&self, addr: u64) -> bool {
        let line = line_of(addr);
        self.loads.iter().all(|l| {
            !matches!(l.state, LoadState::Merged | LoadState::Waiting)
                && line_of(l.req.addr) != line
        })
    }

    /// The oldest load and the cycle it issued, for the watchdog.
    pub fn oldest(&self) -> Option<(CoreReq, u64)> {
        self.loads.front().map(|l| (l.req, l.issued_at))
    }

    /// The L2 controller's answer to load `id`: a miss, or a stall to retry.
    pub fn answered(&mut self, id: u64, missed: bool) {
        if let Some(l) = self.loads.iter_mut().find(|l| l.req.id == id) {
            l.state = if missed {
                LoadState::Missing
            } else {
                LoadState::Waiting
            };
        }
    }

    /// Load `id` will hit, its completion delivered by another host (gem5's Ruby): it holds
    /// no miss register, as a hit does, until it completes.
    pub fn answered_hit(&mut self, id: u64) {
        if let Some(l) = self.loads.iter_mut().find(|l| l.req.id == id) {
            l.state = LoadState::Hit(u64::MAX);
        }
    }

    /// Load `id` hit; it completes with `comp` at cycle `at` ([`hit_done`]).
    pub fn hit(&mut self, comp: Completed, at: u64) {
        if let Some(l) = self.loads.iter_mut().find(|l| l.req.id == comp.req.id) {
            l.state = LoadState::Hit(at);
            l.hit = Some(comp);
        }
    }

    /// Whether an older load than the one at `i` waits for the same line.
    pub(super) fn behind_older(&self, i: usize) -> bool {
        let line = line_of(self.loads[i].req.addr);
        self.loads
            .iter()
            .take(i)
            .any(|l| line_of(l.req.addr) == line)
    }

    /// The loads that may issue now, oldest first.
    pub(super) fn ready(&self) -> Vec<u64> {
        (0..self.loads.len())
            .filter(|&i| match self.loads[i].state {
                LoadState::Waiting => true,
                LoadState::Merged => !self.behind_older(i),
                _ => false,
            })
            .map(|i| self.loads[i].req.id)
            .collect()
    }
}
