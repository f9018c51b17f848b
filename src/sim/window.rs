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

use std::collections::VecDeque;

use crate::coherence::{AccessKind, Completed, CoreReq};
use crate::config::CoreSection;
use crate::mem::line_of;

use super::platform::{schedule_step, Platform};
use super::{Driver, SimError};

#[cfg(doc)]
use super::Next;

/// Where a load of the window is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoadState {
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
struct WinLoad {
    req: CoreReq,
    /// The core's access count before it issued: the window is measured from the oldest.
    seq: u64,
    issued_at: u64,
    state: LoadState,
    /// The hit's completion, kept until its latency has passed.
    hit: Option<Completed>,
}

/// A core's loads in flight without blocking it, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct Window {
    loads: VecDeque<WinLoad>,
    /// The core stopped for room in the window: only a window load's completion steps it
    /// again (a store's does not, as it does not step a core blocked on a load).
    blocked: bool,
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

    /// Load `id` hit; it completes with `comp` at cycle `at` ([`hit_done`]).
    pub fn hit(&mut self, comp: Completed, at: u64) {
        if let Some(l) = self.loads.iter_mut().find(|l| l.req.id == comp.req.id) {
            l.state = LoadState::Hit(at);
            l.hit = Some(comp);
        }
    }

    /// Whether an older load than the one at `i` waits for the same line.
    fn behind_older(&self, i: usize) -> bool {
        let line = line_of(self.loads[i].req.addr);
        self.loads
            .iter()
            .take(i)
            .any(|l| line_of(l.req.addr) == line)
    }

    /// The loads that may issue now, oldest first.
    fn ready(&self) -> Vec<u64> {
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

/// Core `c` takes independent load `req` (physical): numbers it, tells the driver, issues
/// it through the window, and steps next cycle unless the window is now full.
pub(crate) fn take<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    mut req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    req.id = core.next_id;
    core.next_id += 1;
    core.accesses += 1;
    driver.independent_issued(c, req.id);
    add(p, c, req, now, driver)?;
    let core = &p.cores()[c];
    if core.window.full(core.accesses, &p.cfg().system) {
        p.cores_mut()[c].window.block();
    } else {
        schedule_step(p, c, now + 1);
    }
    Ok(())
}

/// Core `c` takes numbered load `req` into its window and issues it unless an older load
/// of the window waits for its line.
fn add<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    debug_assert_eq!(req.kind, AccessKind::Load);
    let core = &mut p.cores_mut()[c];
    let w = &mut core.window;
    w.loads.push_back(WinLoad {
        req,
        // The accesses before it: the window counts from the oldest load on, itself in.
        seq: core.accesses - 1,
        issued_at: now,
        state: LoadState::Merged,
        hit: None,
    });
    if w.behind_older(w.loads.len() - 1) {
        return Ok(());
    }
    issue(p, c, req, now, driver)
}

/// Issues window load `req` into the memory system, or leaves it waiting behind a
/// buffered store to its line (the store's completion retries it).
fn issue<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    let blocked = core
        .store_buffer
        .iter()
        .any(|s| line_of(s.addr) == line_of(req.addr));
    if blocked {
        core.window.answered(req.id, false);
        core.stalled_load = true;
        return Ok(());
    }
    // The platform marks it missing, stalled or hit through `answered` and `hit`.
    p.memory_access(c, req, now, driver)
}

/// Issues every load of core `c`'s window that may go now ([`super::platform::Ev::RetryLoad`]).
pub(crate) fn retry<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    for id in p.cores()[c].window.ready() {
        // An earlier issue may have completed or moved another load of the window.
        let w = &p.cores()[c].window;
        let Some(i) = w.loads.iter().position(|l| l.req.id == id) else {
            continue;
        };
        let l = w.loads[i];
        let go = match l.state {
            LoadState::Waiting => true,
            LoadState::Merged => !w.behind_older(i),
            _ => false,
        };
        if go {
            issue(p, c, l.req, now, driver)?;
        }
    }
    Ok(())
}

/// A hit of core `c`'s window whose latency has passed completes.
pub(crate) fn hit_done<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let w = &mut p.cores_mut()[c].window;
    let due = w
        .loads
        .iter_mut()
        .find(|l| l.state == LoadState::Hit(now))
        .and_then(|l| l.hit.take());
    let Some(comp) = due else {
        return Err(SimError::Check {
            cycle: now,
            detail: format!("core {c}: a windowed load's hit completed that was never pending"),
        });
    };
    finish(p, c, &comp, now, driver)
}

/// Load `comp` of core `c`'s window completed: it leaves the window, the driver hears of
/// it, loads merged behind it issue next cycle, and a core waiting for room steps.
pub(crate) fn finish<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    comp: &Completed,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    core.last_progress = now;
    let w = &mut core.window;
    if let Some(i) = w.loads.iter().position(|l| l.req.id == comp.req.id) {
        w.loads.remove(i);
    }
    let line = line_of(comp.req.addr);
    let merged = w
        .loads
        .iter()
        .any(|l| l.state == LoadState::Merged && line_of(l.req.addr) == line);
    driver
        .completed(c, comp, now)
        .map_err(|detail| SimError::Check { cycle: now, detail })?;
    if merged {
        p.queue()
            .schedule(now + 1, super::platform::Ev::RetryLoad(c as u16));
    }
    let core = &mut p.cores_mut()[c];
    let blocked = std::mem::take(&mut core.window.blocked);
    if (blocked || core.waiting_for_completion) && !core.done {
        core.waiting_for_completion = false;
        schedule_step(p, c, now + 1);
    }
    Ok(())
}
