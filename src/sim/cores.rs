//! The cores of a simulated system, whatever models its caches: each runs what its
//! [`Driver`] asks, one blocking load at a time, stores through a bounded store buffer that
//! drains one store at a time, virtual addresses translated through the process's page
//! tables behind a per-core data TLB whose misses walk the tables with the core's own loads
//! (`tlb`), and MOPED port accesses answered by the core's own MOPED. The embedded simulator ([`Sim`](super::Sim)) and the gem5 host
//! (`crate::ffi`) both run this code and the MOPED hosting of `moped_host`; they differ
//! only where a [`Platform`] meets its memory system. [`handle`] runs every kind of event,
//! the MOPEDs' included, so this module stands above `moped_host`.

use crate::coherence::{AccessKind, Completed, CoreReq, HitLevel};
use crate::config::CoreModel;
use crate::mem::{line_of, LineAddr, LineData};
use crate::moped::device::{PortAnswer, PortCtx};
use crate::os::pagetable::{page_of, AddressSpace, PAGE_BYTES};
use crate::os::phys::PhysMem;
use crate::os::ProcId;

use super::mlp;
use super::moped_host;
use super::platform::{schedule_step, CoreState, Ev, Platform};
use super::tlb::CoreWalk;
use super::{Driver, Next, SimError};

/// Where the gem5 host finds the completion of a window load Ruby answered.
pub(crate) use super::mlp::finish as finish_window_load;
/// Where the gem5 host, which completes the accesses Ruby answers, finds it beside the rest
/// of the cores' functions.
pub(crate) use super::platform::finish_access;

/// Cycle at which the last core finished.
pub(crate) fn cycles(cores: &[CoreState]) -> u64 {
    cores.iter().map(|c| c.finish_cycle).max().unwrap_or(0)
}

/// The stores still in the store buffers of the cores running `proc`, core by core, oldest
/// first (physical addresses).
pub(crate) fn buffered_stores(cores: &[CoreState], proc: ProcId) -> impl Iterator<Item = &CoreReq> {
    cores
        .iter()
        .filter(move |c| c.proc == Some(proc))
        .flat_map(|c| c.store_buffer.iter())
}

/// The bytes at `[va, va + len)` of the address space `space` as its process sees them:
/// `line` gives each line's current value, `stores` (still in store buffers) go on top.
/// Page tables are walked through `tables`; unmapped pages read as zero.
pub(crate) fn read_process(
    space: &AddressSpace,
    tables: &impl PhysMem,
    line: impl Fn(LineAddr) -> LineData,
    stores: &[&CoreReq],
    va: u64,
    len: usize,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut a = va;
    let end = va.saturating_add(len as u64);
    // The frame of the last page walked: one walk per page, not per line.
    let mut page: Option<(u64, Option<u64>)> = None;
    while a < end {
        let vline = line_of(a);
        let n = ((vline + 64).min(end) - a) as usize;
        let vpage = vline & !(PAGE_BYTES - 1);
        let frame = match page {
            Some((p, f)) if p == vpage => f,
            _ => {
                let f = space.translate(tables, vpage);
                page = Some((vpage, f));
                f
            }
        };
        match frame.map(|f| f | (vline - vpage)) {
            Some(pa) => {
                let mut d = line(pa);
                for s in stores.iter().filter(|s| line_of(s.addr) == pa) {
                    let o = (s.addr - pa) as usize;
                    for b in 0..(s.size as usize).min(64 - o) {
                        d[o + b] = (s.value >> (8 * b)) as u8;
                    }
                }
                let o = (a - vline) as usize;
                out.extend_from_slice(&d[o..o + n]);
            }
            None => out.resize(out.len() + n, 0),
        }
        a += n as u64;
    }
    out
}

/// Runs one event.
pub(crate) fn handle<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    now: u64,
    ev: Ev,
    driver: &mut D,
) -> Result<(), SimError> {
    match ev {
        Ev::Deliver(slot) => p.deliver(slot, now, driver),
        Ev::Step(c) => step(p, c as usize, now, driver),
        Ev::Walk(c) => walk_next(p, c as usize, now, driver),
        Ev::RetryLoad(c) => {
            p.cores_mut()[c as usize].stalled_load = false;
            issue_load(p, c as usize, now, driver)?;
            mlp::retry(p, c as usize, now, driver)
        }
        Ev::RetryStore(c) => {
            p.cores_mut()[c as usize].stalled_store = false;
            drain_store(p, c as usize, now, driver)
        }
        Ev::HitDone(c, is_load) => hit_done(p, c as usize, is_load, now, driver),
        Ev::WindowHit(c) => mlp::hit_done(p, c as usize, now, driver),
        Ev::DevDeliver(slot) => {
            moped_host::dev_deliver(p, slot, now);
            Ok(())
        }
        Ev::MopedTick(m) => moped_host::moped_tick(p, m as usize, now, driver),
        Ev::FaultDone(m, slot, mapped) => {
            p.devices().mopeds[m as usize].fault_done(slot as usize, mapped);
            moped_host::wake_moped(p, m as usize, now);
            Ok(())
        }
        Ev::Watchdog => p.watchdog(now),
        Ev::NicTick(n) => p.nic_tick(n as usize, now, driver),
    }
}

/// Core `c` asks its driver what to do next.
fn step<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    core.stepping = false;
    core.short_hit = None;
    core.short_in_step = false;
    if driver.wants_memory() {
        driver
            .read_memory(&*p, now)
            .map_err(|detail| SimError::check(now, detail))?;
    }
    let core = &p.cores()[c];
    if core.done || core.load.is_some() || core.walk.is_some() {
        return Ok(());
    }
    let sys = &p.cfg().system;
    if core.window.full(core.accesses, sys) {
        p.cores_mut()[c].window.block();
        return Ok(());
    }
    if core.store_buffer.len() >= sys.store_buffer_entries {
        // A window load's completion can step a core whose store buffer is full.
        p.cores_mut()[c].waiting_for_completion = true;
        return Ok(());
    }
    if core.busy_until > now {
        // In the OS, serving a MOPED page fault.
        let at = core.busy_until;
        schedule_step(p, c, at);
        return Ok(());
    }
    if let Some(addr) = core.flush {
        return flush(p, c, addr, now);
    }
    let mlp = p.cfg().system.core_model == CoreModel::Mlp;
    let mut next = driver
        .next(c, now)
        .map_err(|detail| SimError::check(now, detail))?;
    let pass = driver.take_pass_start(c);
    let mut independent = false;
    if let Next::Independent(req) = next {
        // A blocking core, and any core for a port (whose loads the MOPED may answer
        // late), waits for the value all the same; its driver still hears the load's id.
        let uncached = p.dev().is_port(req.addr) || p.is_uncached(req.addr);
        if !mlp || req.kind != AccessKind::Load || uncached {
            next = Next::Access(req);
            independent = true;
        }
    }
    match next {
        Next::Done => {
            let core = &mut p.cores_mut()[c];
            if core.store_buffer.is_empty() && !core.store_outstanding && core.window.is_empty() {
                core.done = true;
                core.finish_cycle = now;
            } else {
                core.waiting_for_completion = true;
            }
        }
        Next::Wait(n) => {
            let Some(at) = now.checked_add(n.max(1)) else {
                return Err(SimError::check(now, format!(
                        "core {c}: a wait of {n} cycles from cycle {now} ends past the last cycle of simulated time"
                    )));
            };
            schedule_step(p, c, at)
        }
        Next::WaitForCompletion => {
            let core = &mut p.cores_mut()[c];
            if core.load.is_none() && core.store_buffer.is_empty() && core.window.is_empty() {
                schedule_step(p, c, now + 1);
            } else {
                core.waiting_for_completion = true;
            }
        }
        Next::Moped(op) => {
            p.driver_line(c, op, now, driver)?;
            schedule_step(p, c, now + 1);
        }
        Next::Flush(addr) => match quiet_physical(p, c, addr) {
            Some(pa) => flush(p, c, pa, now)?,
            None => schedule_step(p, c, now + 1),
        },
        Next::Prefetch(addr) => {
            if let Some(pa) = quiet_physical(p, c, addr) {
                p.software_prefetch(c, pa, now)?;
            }
            schedule_step(p, c, now + 1);
        }
        Next::Switch(proc) => {
            if let Some(proc) = proc.filter(|&x| x >= p.os().procs.len()) {
                return Err(SimError::check(
                    now,
                    format!("core {c}: switch to process {proc}, which does not exist"),
                ));
            }
            p.cores_mut()[c].proc = proc;
            schedule_step(p, c, now + 1);
        }
        // Only an mlp core's loads (not to a port) are still independent here.
        Next::Independent(req) => access(p, c, req, true, now, driver)?,
        Next::Access(req) => access(p, c, req, independent, now, driver)?,
    }
    if let Some(idle) = pass {
        p.pass_started(c, now, idle);
    }
    // A pass start forgets what its step saw; a hit that completed in the step counts
    // for the pass it began, as its event after the step would.
    if p.cores()[c].short_in_step {
        p.own_event_skipped(c);
    }
    Ok(())
}

/// Core `c` takes access `req` (virtual if it runs a process): translated, it enters the
/// core; a TLB miss walks the page tables first. `independent`: the driver hears the load's
/// id (see [`enter`]).
fn access<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    mut req: CoreReq,
    independent: bool,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let sb_entries = p.cfg().system.store_buffer_entries.max(1);
    if req.kind == AccessKind::Store && p.cores()[c].store_buffer.len() >= sb_entries {
        return Err(SimError::check(
            now,
            format!("core {c}: driver issued a store into a full store buffer"),
        ));
    }
    match physical(p, c, req, independent, now)? {
        Some(pa) => {
            req.addr = pa;
            enter(p, c, req, independent, now, driver)
        }
        // A TLB miss: the walk's loads first (stores are translated as they enter the
        // store buffer, so a walk never waits behind the buffer).
        None => walk_next(p, c, now, driver),
    }
}

/// A translated access enters the core: an independent load of an mlp core its window, any
/// other load blocks the core, a store goes into the buffer. `independent`: the driver
/// hears the load's id (a blocking core's independent loads block, but are still told).
fn enter<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    mut req: CoreReq,
    independent: bool,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let mlp = p.cfg().system.core_model == CoreModel::Mlp;
    let uncached = p.dev().is_port(req.addr) || p.is_uncached(req.addr);
    if independent && mlp && req.kind == AccessKind::Load && !uncached {
        return mlp::take(p, c, req, now, driver);
    }
    let sb_entries = p.cfg().system.store_buffer_entries.max(1);
    let core = &mut p.cores_mut()[c];
    req.id = core.next_id;
    core.next_id += 1;
    core.accesses += 1;
    if independent {
        driver.independent_issued(c, req.id);
    }
    match req.kind {
        AccessKind::Load => {
            core.load = Some(req);
            core.load_issued_at = now;
            issue_load(p, c, now, driver)?;
        }
        AccessKind::Store => {
            core.store_buffer.push_back(req);
            let full = core.store_buffer.len() >= sb_entries;
            if core.store_buffer.len() == 1 {
                core.store_issued_at = now;
                if full || !short_store(p, c, req, now, driver)? {
                    drain_store(p, c, now, driver)?;
                }
            }
            if full {
                p.cores_mut()[c].waiting_for_completion = true;
            } else {
                schedule_step(p, c, now + 1);
            }
        }
    }
    Ok(())
}

/// The physical address of a core's access: virtual addresses of a core running a process
/// are translated (the OS mapping a lazy page at its first touch); port addresses are
/// physical. `None` when a TLB miss started a page walk (in `walk`).
fn physical<P: Platform>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    independent: bool,
    now: u64,
) -> Result<Option<u64>, SimError> {
    let Some(proc) = p.cores()[c].proc else {
        return Ok(Some(req.addr));
    };
    if p.dev().is_port(req.addr) || p.is_nic(req.addr) {
        return Ok(Some(req.addr));
    }
    let offset = req.addr - page_of(req.addr);
    let (os, tlb, mut mem) = p.os_parts();
    if let Some(frame) = tlb.lookup(c, proc, page_of(req.addr)) {
        return Ok(Some(frame | offset));
    }
    let pa = os
        .translate(&mut mem, proc, req.addr)
        .map_err(|e| SimError::check(now, format!("core {c}: {e}")))?;
    if !tlb.walks() {
        tlb.fill(c, proc, page_of(req.addr), page_of(pa));
        return Ok(Some(pa));
    }
    let space = &os.procs[proc].space;
    let walk = CoreWalk {
        req,
        independent,
        proc,
        pa,
        entries: space.walk_entries(&mem, req.addr).into(),
        entry_bytes: space.format().entry_bytes() as u8,
        started: now,
    };
    drop(mem);
    p.cores_mut()[c].walk = Some(walk);
    Ok(None)
}

/// Core `c`'s page walk goes on: its next entry load, or, after the last, the access that
/// missed, translated.
fn walk_next<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    core.short_hit = None;
    let Some(walk) = core.walk.as_mut() else {
        return Err(SimError::check(
            now,
            format!("core {c}: a page walk went on that never started"),
        ));
    };
    if let Some(entry) = walk.entries.pop_front() {
        let load = CoreReq {
            id: core.next_id,
            kind: AccessKind::Load,
            addr: entry,
            size: walk.entry_bytes,
            value: 0,
        };
        core.next_id += 1;
        core.load = Some(load);
        core.load_issued_at = now;
        let (_, tlb, _) = p.os_parts();
        tlb.stats_mut(c).walk_loads += 1;
        return issue_load(p, c, now, driver);
    }
    let walk = core.walk.take().expect("a walk");
    let (_, tlb, _) = p.os_parts();
    tlb.fill(c, walk.proc, page_of(walk.req.addr), page_of(walk.pa));
    tlb.stats_mut(c).walk_cycles += now - walk.started;
    let mut req = walk.req;
    req.addr = walk.pa;
    enter(p, c, req, walk.independent, now, driver)
}

fn issue_load<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &p.cores()[c];
    // A retry meant for the window's loads leaves a blocking load in flight alone.
    let Some(req) = core.load.filter(|_| !core.load_outstanding) else {
        return Ok(());
    };
    // A load waits for older stores to the same line to drain (no store forwarding);
    // a port load thus follows the port stores before it.
    if core.buffers_store_to(req.addr) {
        p.cores_mut()[c].stalled_load = true;
        return Ok(());
    }
    issue(p, c, req, now, driver)
}

fn drain_store<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &p.cores()[c];
    if core.store_outstanding {
        return Ok(());
    }
    let Some(&req) = core.store_buffer.front() else {
        return Ok(());
    };
    issue(p, c, req, now, driver)
}

/// Sends core `c`'s access to its MOPED port or into the memory system.
fn issue<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    match req.kind {
        AccessKind::Load => core.load_sent_at = now,
        AccessKind::Store => core.store_sent_at = now,
    }
    if p.dev().is_port(req.addr) {
        port_access(p, c, req, now)
    } else if p.is_uncached(req.addr) {
        p.nic_access(c, req, now)
    } else if req.kind == AccessKind::Store && p.is_nic(req.addr) {
        Err(SimError::check(
            now,
            format!(
                "core {c}: a store to {:#x}, a NIC's LH buffer, which only the NIC writes",
                req.addr
            ),
        ))
    } else if req.kind == AccessKind::Load && p.cores()[c].alone() {
        match p.l1_hit(c, &req) {
            Some(value) => short_hit(p, c, req, value, now, driver),
            None => p.memory_access(c, req, now, driver),
        }
    } else {
        p.memory_access(c, req, now, driver)
    }
}

/// Core `c`'s blocking load `req` hit its L1 (`sim.short_hits`): it completes now, as the
/// hit's event would after the L1's latency, so the core's next step (or its walk's) is
/// queued at once with no event between. Exact because the core has nothing else in flight
/// ([`CoreState::alone`]), so no event of its own falls before that step and nothing it
/// does is queued in another order, and the driver says no one else reads what the
/// completion changes meanwhile ([`Driver::completes_privately`]); the value is the one
/// read at the hit either way.
fn short_hit<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    value: u64,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let comp = Completed {
        req,
        value,
        level: HitLevel::L1,
    };
    let core = &mut p.cores_mut()[c];
    core.short_hit = Some((req.addr, req.size));
    core.short_hits += 1;
    let at = now + p.cfg().l1.latency;
    finish_access(p, c, &comp, at, driver)
}

/// Core `c`'s store `req`, alone in its store buffer as the core's step (or walk) issues
/// it, completes at once if it is a plain L1 hit (`sim.short_hits`), stamped with the
/// cycle its hit event would complete it at: true if it did. With a one-cycle L1 that event
/// would come before the core's next step, queued after it; the core's own events that may
/// come first (another window load's hit or retry) read nothing it changes, because no
/// load of the window waits to issue or is to the store's line, no load is stalled for a
/// store to retry, and the line already holds the store's bytes as it hits, for anyone
/// who reads the buffer meanwhile ([`buffered_stores`]). The fast-forward sees it as the
/// hit's event.
fn short_store<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    req: CoreReq,
    now: u64,
    driver: &mut D,
) -> Result<bool, SimError> {
    let addr = req.addr;
    if p.cfg().l1.latency != 1
        || p.dev().is_port(addr)
        || p.is_uncached(addr)
        || p.is_nic(addr)
        || !p.cores()[c].store_may_complete_now(addr)
    {
        return Ok(false);
    }
    let Some(value) = p.l1_hit(c, &req) else {
        return Ok(false);
    };
    let comp = Completed {
        req,
        value,
        level: HitLevel::L1,
    };
    let core = &mut p.cores_mut()[c];
    core.short_hits += 1;
    core.short_in_step = true;
    // Again after a pass start in the same step (see `step`).
    p.own_event_skipped(c);
    finish_access(p, c, &comp, now + 1, driver)?;
    Ok(true)
}

/// The physical address of `addr` for core `c`'s flush or prefetch, without a walk's
/// loads or a page fault: `None` for a page not mapped.
fn quiet_physical<P: Platform>(p: &mut P, c: usize, addr: u64) -> Option<u64> {
    let proc = p.cores()[c].proc;
    let Some(proc) = proc.filter(|_| !p.dev().is_port(addr) && !p.is_nic(addr)) else {
        return Some(addr);
    };
    let offset = addr - page_of(addr);
    let (os, tlb, mem) = p.os_parts();
    if let Some(frame) = tlb.lookup(c, proc, page_of(addr)) {
        return Some(frame | offset);
    }
    let frame = os.procs.get(proc)?.space.translate(&mem, page_of(addr))?;
    Some(frame | offset)
}

/// Core `c`'s `clflush` of physical `addr`: done, the core busy for `nic.flush_cycles`;
/// or kept until the line settles, tried again next cycle.
fn flush<P: Platform>(p: &mut P, c: usize, addr: u64, now: u64) -> Result<(), SimError> {
    let done = p.flush_line(c, addr, now)?;
    let cycles = p.cfg().nic.flush_cycles.max(1);
    p.cores_mut()[c].flush = (!done).then_some(addr);
    schedule_step(p, c, now + if done { cycles } else { 1 });
    Ok(())
}

/// A core's load or store to a port: answered by its local MOPED after the port latency,
/// or later if the MOPED forwarded it.
fn port_access<P: Platform>(p: &mut P, c: usize, req: CoreReq, now: u64) -> Result<(), SimError> {
    if !p.dev().present() {
        return Err(SimError::check(
            now,
            format!(
                "core {c}: access to MOPED port {:#x}, but protocol `{}` has no MOPED",
                req.addr,
                p.design()
            ),
        ));
    }
    let pt_root = p.cores()[c]
        .proc
        .and_then(|x| p.os().procs.get(x))
        .map_or(0, |x| x.space.root());
    let ctx = PortCtx {
        core: c as u16,
        pt_root,
    };
    let is_load = req.kind == AccessKind::Load;
    let d = p.devices();
    let m = &mut d.mopeds[c];
    let value = if is_load {
        match m.port_load(now, ctx, req.addr, req.size) {
            PortAnswer::Value(v) => Some(v),
            PortAnswer::Later => None,
        }
    } else {
        // Errors are the device's to count; a store is posted either way.
        let _ = m.port_store(now, ctx, req.addr, req.size, req.value);
        Some(req.value)
    };
    if value.is_none() {
        d.dev.forwarded_loads += 1;
    }
    moped_host::wake_moped(p, c, now);
    let at = now + p.cfg().moped.port_latency;
    let core = &mut p.cores_mut()[c];
    match value {
        Some(v) => {
            let comp = Completed {
                req,
                value: v,
                level: HitLevel::Port,
            };
            if is_load {
                core.hit_load = Some(comp);
                core.load_outstanding = true;
            } else {
                core.hit_store = Some(comp);
                core.store_outstanding = true;
            }
            p.queue().schedule(at, Ev::HitDone(c as u16, is_load));
        }
        None => core.load_outstanding = true,
    }
    Ok(())
}

fn hit_done<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    is_load: bool,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    let comp = if is_load {
        core.hit_load.take()
    } else {
        core.hit_store.take()
    };
    let Some(comp) = comp else {
        return Err(SimError::check(
            now,
            format!("core {c}: a hit completed that was never pending"),
        ));
    };
    finish_access(p, c, &comp, now, driver)
}
