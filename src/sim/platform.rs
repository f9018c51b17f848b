//! A simulated system as its cores and MOPEDs see it, whatever models its caches: the
//! events, each core's state and TLB, what the MOPEDs' hosting keeps (their messages in
//! flight and when each ticks next), and the [`Platform`] trait through which the functions
//! of `cores` and `moped_host` run them. Both of those finish a core's access here
//! ([`finish_access`]): a hit or a memory answer in `cores`, a port value that another
//! MOPED sent in `moped_host`.

use std::collections::VecDeque;

use crate::coherence::{AccessKind, Completed, CoreReq, MopedReq};
use crate::config::SystemConfig;
use crate::engine::EventQueue;
use crate::mem::{LineAddr, LineData};
use crate::moped::device::{DevMsg, Moped};
use crate::moped::ports::PortMap;
use crate::moped::MopedId;
use crate::net::{MsgClass, Network};
use crate::os::phys::PhysMem;
use crate::os::{Os, ProcId};

use super::tlb::CoreWalk;
pub(crate) use super::tlb::Tlb;
use super::{Driver, LineOp, SimError, VirtualMemory};

/// An event of a simulated system.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// Deliver the coherence message in slab slot `n` (the embedded simulator's).
    Deliver(u32),
    /// A core asks its driver for the next access.
    Step(u16),
    /// A core's page walk issues its next load, or ends.
    Walk(u16),
    /// A core retries its blocked load.
    RetryLoad(u16),
    /// A core retries draining its store buffer.
    RetryStore(u16),
    /// A hit completes (the completion waits in the core's slot).
    HitDone(u16, bool),
    /// A hit of a load in the core's window completes (`window`).
    WindowHit(u16),
    /// Periodic watchdog check.
    Watchdog,
    /// Deliver the MOPED message in device slab slot `n`.
    DevDeliver(u32),
    /// A MOPED's tick.
    MopedTick(u16),
    /// The OS finished MOPED `m`'s page fault for active slot `s`: (m, s, mapped).
    FaultDone(u16, u16, bool),
    /// A NIC's tick (`[nic]`): host accesses that reached it, VL commands, messages to
    /// divide.
    NicTick(u16),
}

/// Within a cycle, the events of the memory system, the network and the devices first, in
/// the order they were scheduled, then each core's own events by core id: so a core's
/// events can be scheduled at other moments, or skipped (fast-forward), without moving
/// anyone else's among the events of their cycle.
impl crate::engine::Tie for Ev {
    #[inline]
    fn tie(&self) -> u16 {
        match *self {
            Ev::Step(c)
            | Ev::Walk(c)
            | Ev::RetryLoad(c)
            | Ev::RetryStore(c)
            | Ev::HitDone(c, _)
            | Ev::WindowHit(c) => 1 + c,
            Ev::Deliver(_)
            | Ev::Watchdog
            | Ev::DevDeliver(_)
            | Ev::MopedTick(_)
            | Ev::FaultDone(..)
            | Ev::NicTick(_) => 0,
        }
    }
}

/// Events processed, by kind: where a run's events go (`sim.event_kinds.*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventKinds {
    pub deliver: u64,
    pub step: u64,
    pub walk: u64,
    pub retry_load: u64,
    pub retry_store: u64,
    pub load_hit: u64,
    pub store_hit: u64,
    pub window_hit: u64,
    pub watchdog: u64,
    pub dev_deliver: u64,
    pub moped_tick: u64,
    pub fault_done: u64,
    pub nic_tick: u64,
}

impl EventKinds {
    #[inline]
    pub(crate) fn count(&mut self, ev: &Ev) {
        let n = match ev {
            Ev::Deliver(_) => &mut self.deliver,
            Ev::Step(_) => &mut self.step,
            Ev::Walk(_) => &mut self.walk,
            Ev::RetryLoad(_) => &mut self.retry_load,
            Ev::RetryStore(_) => &mut self.retry_store,
            Ev::HitDone(_, true) => &mut self.load_hit,
            Ev::HitDone(_, false) => &mut self.store_hit,
            Ev::WindowHit(_) => &mut self.window_hit,
            Ev::Watchdog => &mut self.watchdog,
            Ev::DevDeliver(_) => &mut self.dev_deliver,
            Ev::MopedTick(_) => &mut self.moped_tick,
            Ev::FaultDone(..) => &mut self.fault_done,
            Ev::NicTick(_) => &mut self.nic_tick,
        };
        *n += 1;
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct CoreState {
    /// The blocking load in progress (issued or waiting to issue).
    pub load: Option<CoreReq>,
    pub load_issued_at: u64,
    /// When the blocking load last went into the memory system (for its miss latency).
    pub load_sent_at: u64,
    pub load_outstanding: bool,
    pub store_buffer: VecDeque<CoreReq>,
    pub store_issued_at: u64,
    /// When the store at the buffer's front went into the memory system.
    pub store_sent_at: u64,
    /// The cycles of the accesses that missed the L1, by where they were served.
    pub miss_latency: super::latency::MissLatency,
    pub store_outstanding: bool,
    /// Completions of hits waiting for their latency, per path.
    pub hit_load: Option<Completed>,
    pub hit_store: Option<Completed>,
    /// The blocking load (physical address, size) that hit the L1 and went to the driver
    /// at once (`sim.short_hits`), until the core's next step or walk step: what the pass's
    /// first load was, for the fast-forward.
    pub short_hit: Option<(u64, u8)>,
    /// A load of the window or a store completed at its L1 hit in the step in progress
    /// (`sim.short_hits`): the fast-forward sees it as the hit's event.
    pub short_in_step: bool,
    /// Loads and stores whose L1 hit went to the driver as it hit, without an event
    /// (`sim.short_hits`).
    pub short_hits: u64,
    pub waiting_for_completion: bool,
    pub stepping: bool,
    pub done: bool,
    pub last_progress: u64,
    pub stalled_load: bool,
    pub stalled_store: bool,
    pub next_id: u64,
    pub accesses: u64,
    pub finish_cycle: u64,
    /// The process this core runs (its accesses are virtual).
    pub proc: Option<ProcId>,
    /// The core is in the OS (a MOPED page fault) until this cycle.
    pub busy_until: u64,
    /// Loads issued without blocking the core (an `mlp` core's; empty otherwise).
    pub window: super::window::Window,
    /// The page walk of a TLB miss; its loads occupy `load`.
    pub walk: Option<CoreWalk>,
    /// A `clflush` waiting for its line to settle (physical address).
    pub flush: Option<u64>,
}

impl CoreState {
    /// Whether the core has nothing in flight but its blocking load and waits for nothing
    /// else: no step queued, no store buffered, no window load, nothing stalled.
    #[inline]
    pub fn alone(&self) -> bool {
        !self.stepping
            && !self.waiting_for_completion
            && !self.stalled_load
            && !self.stalled_store
            && !self.store_outstanding
            && self.store_buffer.is_empty()
            && self.window.is_empty()
            && self.hit_store.is_none()
    }

    /// Whether a store to `addr`'s line, just issued from the store buffer that holds it
    /// alone, may complete at its L1 hit without its event (`cores::short_store`): no
    /// blocking load or walk, no stalled load a store's completion would retry, and no load
    /// of the window waiting to issue or to that line.
    pub fn store_may_complete_now(&self, addr: u64) -> bool {
        self.store_buffer.len() == 1
            && self.load.is_none()
            && self.walk.is_none()
            && !self.stalled_load
            && !self.waiting_for_completion
            && self.window.settled_apart_from(addr)
    }

    /// Whether a store to `addr`'s line waits in the store buffer: a load to that line
    /// waits for it (no store forwarding).
    #[inline]
    pub fn buffers_store_to(&self, addr: u64) -> bool {
        let line = crate::mem::line_of(addr);
        self.store_buffer
            .iter()
            .any(|s| crate::mem::line_of(s.addr) == line)
    }

    /// The access this core waits for, if one is outstanding or stalled, with the cycle it
    /// was issued at (the load first: it blocks the core).
    pub fn pending(&self) -> Option<(CoreReq, u64)> {
        self.load
            .filter(|_| self.load_outstanding || self.stalled_load)
            .map(|r| (r, self.load_issued_at))
            .or_else(|| {
                self.store_buffer
                    .front()
                    .filter(|_| self.store_outstanding || self.stalled_store)
                    .map(|r| (*r, self.store_issued_at))
            })
            .or_else(|| self.window.oldest())
    }
}

/// The MOPEDs and what carries their messages, borrowed together.
pub(crate) struct Devices<'a> {
    pub mopeds: &'a mut [Moped],
    pub dev: &'a mut DevNet,
    pub net: &'a mut Network,
    pub q: &'a mut EventQueue<Ev>,
}

/// A simulated system as the cores and the MOPEDs see it. The implementor owns the state;
/// the functions of `cores`, `moped_host` and this module run the cores and the devices on
/// it.
pub(crate) trait Platform: VirtualMemory + Sized {
    /// Physical memory as the OS writes it (page tables, fresh frames).
    type Mem<'a>: PhysMem
    where
        Self: 'a;

    fn cfg(&self) -> &SystemConfig;
    /// The design's name, for error messages.
    fn design(&self) -> &str;
    fn cores(&self) -> &[CoreState];
    fn cores_mut(&mut self) -> &mut [CoreState];
    fn queue(&mut self) -> &mut EventQueue<Ev>;
    fn os(&self) -> &Os;
    /// The OS, the TLBs and the memory the OS writes, borrowed together.
    fn os_parts(&mut self) -> (&mut Os, &mut Tlb, Self::Mem<'_>);
    fn dev(&self) -> &DevNet;
    fn mopeds(&self) -> &[Moped];
    fn devices(&mut self) -> Devices<'_>;

    /// Issues core `c`'s load or store (a physical address, not a port) into the memory
    /// system. The platform marks it outstanding, stalled or pending as a hit in the core,
    /// and later calls [`finish_access`].
    fn memory_access<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        req: CoreReq,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError>;

    /// Core `c`'s blocking load or store `req` (physical, cached) as a plain L1 hit, done and counted
    /// in the cache, where the platform hands such hits over at once (`sim.short_hits`):
    /// its value; `None`, with nothing changed, where it is anything else.
    fn l1_hit(&mut self, _c: usize, _req: &CoreReq) -> Option<u64> {
        None
    }

    /// Delivers a coherence message ([`Ev::Deliver`]).
    fn deliver<D: Driver + ?Sized>(
        &mut self,
        slot: u32,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError>;

    /// The periodic watchdog check ([`Ev::Watchdog`]).
    fn watchdog(&mut self, now: u64) -> Result<(), SimError>;

    /// Hands MOPED `m` (or the driver, for its [`LineOp`]s) what its memory system has for
    /// it at the start of its tick.
    fn moped_inputs<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError>;

    /// Carries out a driver's line operation for MOPED `m` ([`super::Next::Moped`]): into
    /// the L2 as the device's own requests go, answered through [`Driver::moped_done`].
    fn driver_line<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        op: LineOp,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError>;

    /// MOPED `m`'s line request (answered later through [`Moped::line_done`]).
    fn line_request(&mut self, m: usize, req: MopedReq, now: u64) -> Result<(), SimError>;

    /// MOPED `m`'s copy-unit write into a granted line (answered through
    /// [`Moped::write_done`]).
    fn line_write(&mut self, m: usize, addr: LineAddr, data: LineData, mask: u64, now: u64);

    /// Whether MOPED `m` has a line request its memory system has not answered.
    fn lines_waiting(&self, m: usize) -> bool;
    /// Whether the cores reach `addr` without their caches: a NIC's uncacheable or
    /// write-combining window (`[nic]`).
    fn is_uncached(&self, _addr: u64) -> bool {
        false
    }

    /// Whether `addr` lies in the NICs' windows: a physical address, never translated.
    fn is_nic(&self, _addr: u64) -> bool {
        false
    }

    /// Core `c`'s access to a NIC's uncached window; the platform marks it outstanding
    /// and completes it later.
    fn nic_access(&mut self, c: usize, req: CoreReq, now: u64) -> Result<(), SimError> {
        Err(SimError::check(
            now,
            format!(
                "core {c}: access to NIC address {:#x}: this host models no NICs ([nic] runs \
                 on the embedded simulator)",
                req.addr
            ),
        ))
    }

    /// NIC `n`'s tick ([`Ev::NicTick`]).
    fn nic_tick<D: Driver + ?Sized>(
        &mut self,
        n: usize,
        now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        Err(SimError::check(
            now,
            format!("NIC {n} ticked on a host that models no NICs"),
        ))
    }

    /// Core `c`'s `clflush` of physical `addr`; false while the line is busy (the core
    /// tries again).
    fn flush_line(&mut self, c: usize, addr: u64, now: u64) -> Result<bool, SimError> {
        Err(SimError::check(
            now,
            format!("core {c}: clflush of {addr:#x}: not modelled on this host"),
        ))
    }

    /// Core `c`'s software prefetch of physical `addr`.
    fn software_prefetch(&mut self, c: usize, addr: u64, now: u64) -> Result<(), SimError> {
        Err(SimError::check(
            now,
            format!("core {c}: software prefetch of {addr:#x}: not modelled on this host"),
        ))
    }

    /// Core `c`'s step at `now` began a pass of its driver's polling loop (`idle`: see
    /// [`Driver::take_pass_start`]); a platform that fast-forwards polling watches it.
    fn pass_started(&mut self, _c: usize, _now: u64, _idle: bool) {}

    /// Core `c` completed a window load or a store at its L1 hit, with no hit event
    /// (`sim.short_hits`); a platform that fast-forwards polling sees it as that event.
    fn own_event_skipped(&mut self, _c: usize) {}
}

/// What any host keeps beside its MOPEDs: the port window, the messages between MOPEDs in
/// flight, and when each MOPED ticks next. Only `moped_host` moves its messages and ticks.
pub(crate) struct DevNet {
    ports: PortMap,
    /// Whether MOPEDs exist (a port access without them is an error).
    present: bool,
    /// Messages between MOPEDs in flight: (destination, message); `Ev::DevDeliver` names a
    /// slot.
    pub(super) slab: Vec<(MopedId, DevMsg)>,
    pub(super) free: Vec<u32>,
    /// Network class of each message kind.
    pub(super) classes: Vec<MsgClass>,
    /// The OS's count of pages mapped when the MOPEDs last dropped their kept
    /// page-table lines.
    pub(super) maps_seen: u64,
    /// Cycle of each MOPED's scheduled tick.
    pub(super) tick_at: Vec<Option<u64>>,
    /// Port loads answered by another MOPED (the process moved).
    pub forwarded_loads: u64,
    pub dev_messages: u64,
}

impl DevNet {
    /// `n` MOPEDs (0 for a design without them) whose messages cross `net`.
    pub(crate) fn new(cfg: &SystemConfig, net: &mut Network, n: usize) -> DevNet {
        let vnet = crate::coherence::MsgType::VNETS;
        let first = crate::coherence::MsgType::NAMES.len();
        let header = cfg.network.header_bytes;
        // Only a system with MOPEDs has their message classes (and statistics).
        let kinds = if n > 0 {
            DevMsg::PAYLOAD_BYTES.len()
        } else {
            0
        };
        let classes = DevMsg::PAYLOAD_BYTES[..kinds]
            .iter()
            .enumerate()
            .map(|(k, payload)| net.class(first + k, vnet, header + payload))
            .collect();
        DevNet {
            ports: PortMap::new(cfg.moped.port_base).unwrap_or_default(),
            present: n > 0,
            slab: Vec::new(),
            free: Vec::new(),
            classes,
            maps_seen: 0,
            tick_at: vec![None; n],
            forwarded_loads: 0,
            dev_messages: 0,
        }
    }

    /// True if `addr` is a MOPED port address (the MMIO window), MOPEDs or not.
    #[inline]
    pub(crate) fn is_port(&self, addr: u64) -> bool {
        self.ports.contains(addr)
    }

    pub(crate) fn present(&self) -> bool {
        self.present
    }
}

/// Has core `c` ask its driver for its next access at cycle `at`, unless it already will.
pub(crate) fn schedule_step<P: Platform>(p: &mut P, c: usize, at: u64) {
    let core = &mut p.cores_mut()[c];
    if !core.stepping {
        core.stepping = true;
        p.queue().schedule(at, Ev::Step(c as u16));
    }
}

/// Core `c`'s access finished: the load returns or the store leaves the buffer, the driver
/// hears of it, and what waited on it moves on.
pub(crate) fn finish_access<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    comp: &Completed,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let core = &mut p.cores_mut()[c];
    core.last_progress = now;
    let sent = match comp.req.kind {
        AccessKind::Load => core.load_sent_at,
        AccessKind::Store => core.store_sent_at,
    };
    core.miss_latency.sample(comp.level, now - sent);
    if comp.req.kind == AccessKind::Load && core.walk.is_some() {
        // A walk's load: the walk, not the driver, waits for it.
        core.load = None;
        core.load_outstanding = false;
        p.queue().schedule(now + 1, Ev::Walk(c as u16));
        return Ok(());
    }
    match comp.req.kind {
        AccessKind::Load => {
            core.load = None;
            core.load_outstanding = false;
        }
        AccessKind::Store => {
            core.store_buffer.pop_front();
            core.store_outstanding = false;
            core.store_issued_at = now;
        }
    }
    driver
        .completed(c, comp, now)
        .map_err(|detail| SimError::check(now, detail))?;
    let core = &mut p.cores_mut()[c];
    let retry_store = comp.req.kind == AccessKind::Store && !core.store_buffer.is_empty();
    let retry_load = std::mem::take(&mut core.stalled_load);
    let step = core.waiting_for_completion || comp.req.kind == AccessKind::Load;
    if step {
        core.waiting_for_completion = false;
    }
    let done = core.done;
    if retry_store {
        p.queue().schedule(now + 1, Ev::RetryStore(c as u16));
    }
    if retry_load {
        p.queue().schedule(now + 1, Ev::RetryLoad(c as u16));
    }
    if step && !done {
        schedule_step(p, c, now + 1);
    }
    Ok(())
}
