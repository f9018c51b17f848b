//! An `mlp` core's loads issued without waiting for their values, moved through its
//! [`Window`]: taken from the driver, issued into the memory system (or held behind an older
//! load to their line or a buffered store), retried, and finished. See `super::window` for
//! the rules.

use crate::coherence::{AccessKind, Completed, CoreReq, HitLevel};
use crate::mem::line_of;

use super::platform::{schedule_step, Ev, Platform};
use super::window::WinLoad;
use super::{Driver, SimError};

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
    let hit = add(p, c, req, now, driver)?;
    let core = &p.cores()[c];
    let full = core.window.full(core.accesses, &p.cfg().system);
    if let Some(hit) = hit {
        complete_hit(p, c, hit, full, now, driver)?;
    }
    if full {
        p.cores_mut()[c].window.block();
    } else {
        schedule_step(p, c, now + 1);
    }
    Ok(())
}

/// Core `c`'s new window load hit its L1 through the platform's short path ([`issue_new`])
/// and completes next cycle. Unless the core then waits for room in its window, it
/// completes now, stamped with that cycle, and counts as a short hit: its completion queues
/// nothing (no load merged behind it, as it is the newest; no core waiting for room), and
/// its hit event would come before the core's next step, the first event to look at the
/// window without it. The events of the core that may fall in the cycle before that one
/// (another load's hit, a store's) read nothing it changes, and the driver hears the
/// core's completions in another order only within that cycle
/// ([`Driver::completes_privately`]). Otherwise its hit event is queued where the memory
/// system would have queued it (`full`: the window, the load in it, has no room).
fn complete_hit<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    hit: Completed,
    full: bool,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let at = now + 1;
    let core = &p.cores()[c];
    if full || core.window.blocked || core.waiting_for_completion {
        p.queue().schedule(at, Ev::WindowHit(c as u16));
        return Ok(());
    }
    let core = &mut p.cores_mut()[c];
    core.short_hits += 1;
    core.short_in_step = true;
    // Again after a pass start in the same step (see `cores::step`).
    p.own_event_skipped(c);
    finish(p, c, &hit, at, driver)
}

/// Core `c` takes numbered load `req` into its window and issues it unless an older load
/// of the window waits for its line; its completion if it hit the L1 by the platform's
/// short path (no event queued for it yet).
fn add<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<Option<Completed>, SimError> {
    debug_assert_eq!(req.kind, AccessKind::Load);
    let core = &mut p.cores_mut()[c];
    let w = &mut core.window;
    w.push(WinLoad {
        req,
        // The accesses before it: the window counts from the oldest load on, itself in.
        seq: core.accesses - 1,
        issued_at: now,
        sent_at: now,
        hit: None,
    });
    if w.behind_older(w.newest()) {
        return Ok(None);
    }
    issue_new(p, c, req, now, driver)
}

/// Issues a window load just taken, as [`issue`] does, but lets a plain L1 hit go by the
/// platform's short path (`sim.short_hits`, with an L1 that answers in one cycle): it is
/// marked hit, and its completion returned for [`complete_hit`].
fn issue_new<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<Option<Completed>, SimError> {
    if p.cores()[c].buffers_store_to(req.addr) || p.cfg().l1.latency != 1 {
        return issue(p, c, req, now, driver).map(|()| None);
    }
    let Some(value) = p.l1_hit(c, &req) else {
        return issue(p, c, req, now, driver).map(|()| None);
    };
    let hit = Completed {
        req,
        value,
        level: HitLevel::L1,
    };
    p.cores_mut()[c].window.hit(hit, now + 1);
    Ok(Some(hit))
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
    if core.buffers_store_to(req.addr) {
        core.window.answered(req.id, false);
        core.stalled_load = true;
        return Ok(());
    }
    core.window.sent(req.id, now);
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
    let ids = p.cores_mut()[c].window.take_ready();
    for &id in &ids {
        // An earlier issue may have completed or moved another load of the window.
        let w = &p.cores()[c].window;
        let Some(i) = w.index(id) else {
            continue;
        };
        if w.may_issue(i) {
            let req = w.load(i).req;
            issue(p, c, req, now, driver)?;
        }
    }
    p.cores_mut()[c].window.keep_ready(ids);
    Ok(())
}

/// A hit of core `c`'s window whose latency has passed completes.
pub(crate) fn hit_done<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let Some(comp) = p.cores_mut()[c].window.take_hit_due(now) else {
        return Err(SimError::check(
            now,
            format!("core {c}: a windowed load's hit completed that was never pending"),
        ));
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
    if let Some(sent_at) = w.index(comp.req.id).and_then(|i| w.remove(i)) {
        core.miss_latency.sample(comp.level, now - sent_at);
    }
    let merged = w.merged_on(line_of(comp.req.addr));
    driver
        .completed(c, comp, now)
        .map_err(|detail| SimError::check(now, detail))?;
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
