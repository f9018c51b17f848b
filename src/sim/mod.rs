//! The timing simulator: cores, the L2 controllers and directory banks of `coherence`, the
//! on-chip network and a deterministic event queue. Whatever generates accesses (program
//! cores, the random tester) plugs in as a [`Driver`].

// Sibling modules form a DAG: platform <- moped_host <- cores <- memory, fastforward,
// nic_host; stats uses none.
pub(crate) mod cores;
mod error;
mod fastforward;
pub mod heartbeat;
pub mod host_memory;
pub mod interrupt;
pub(crate) mod latency;
mod memory;
mod mlp;
pub(crate) mod moped_host;
mod nic_host;
pub(crate) mod platform;
pub use error::{SimError, Stop};
pub use platform::EventKinds;
mod stats;
pub(crate) mod tlb;
mod window;

use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::coherence::cache::PrefetchParams;
use crate::coherence::{
    AccessKind, CacheCtrl, CacheParams, Completed, CoreOutcome, CoreReq, Delivery, DirCtrl,
    DirParams, MopedDone, MopedReq, Msg, MsgType, NodeId, Outbox, Protocol, Violation,
};
use crate::config::{SystemConfig, WatchdogSection};
use crate::engine::{EventQueue, Tie};
use crate::mem::{line_of, LineAddr, LineData};
use crate::moped::device::Moped;
use crate::net::{MsgClass, Network};
use crate::os::{Os, ProcId};

use moped_host::MopedHost;
pub use nic_host::memory_load_cycles;
use platform::{CoreState, DevNet, Devices, Ev, Platform, Tlb};

/// What a driver wants a core to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Issue an access: loads block the core, stores enter its store buffer.
    Access(CoreReq),
    /// Issue a load whose value decides nothing the core does next (it only feeds a later
    /// store, or nothing): an `mlp` core goes on without waiting for it (see `window`),
    /// telling the driver its id first ([`Driver::independent_issued`]); a blocking core
    /// issues it as an [`Next::Access`] (and tells its id too).
    Independent(CoreReq),
    /// Compute for this many cycles, then ask again.
    Wait(u64),
    /// Wait until one of this core's outstanding accesses completes, then ask again.
    WaitForCompletion,
    /// Run process `Some(p)` on this core from now on (its addresses are virtual), or none
    /// (physical addresses); a context switch or a migration.
    Switch(Option<ProcId>),
    /// Flush the line of this address out of the core's caches (x86 `clflush`): the core
    /// is busy `nic.flush_cycles` cycles; a line with a request in flight is flushed once
    /// it settles. A virtual address is translated without a walk's loads; an unmapped
    /// page holds nothing to flush.
    Flush(u64),
    /// Prefetch the line of this address into the L1 (an SSE `prefetch` instruction, one
    /// cycle): dropped for an uncacheable address or an unmapped page.
    Prefetch(u64),
    /// Have the MOPED beside this core carry out a line operation, as its copy unit would
    /// (physical, line-aligned addresses); the answer comes through [`Driver::moped_done`].
    /// The core steps again next cycle.
    Moped(LineOp),
    /// The core has finished.
    Done,
}

impl Next {
    /// Computing `instructions` at `cpi` cycles each from cycle `now`: one wait however
    /// long (none for 0 cycles), or an error when it would end past the last cycle
    /// simulated time can hold (2^64 - 1).
    pub fn compute(instructions: u64, cpi: f64, now: u64) -> Result<Option<Next>, String> {
        let cycles = (instructions as f64 * cpi).ceil();
        // 2^64 is the first float the cycle count cannot hold; NaN fails the test too.
        let fits = cycles < 18_446_744_073_709_551_616.0;
        match fits.then(|| now.checked_add(cycles as u64)).flatten() {
            Some(_) => Ok((cycles > 0.0).then_some(Next::Wait(cycles as u64))),
            None => Err(format!(
                "compute {instructions}: {cycles} cycles at CPI {cpi} from cycle {now} end past \
                 the last cycle of simulated time (2^64 - 1)"
            )),
        }
    }
}

/// A line operation of a MOPED's copy unit, issued by a driver (the random tester) through
/// the path the device's own requests take into its L2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineOp {
    /// A line request: `M_GETS`, `M_GETX`, or `M_FILL` where the design has it.
    Request(MopedReq),
    /// A write of the bytes `mask` selects into a line the MOPED was granted.
    Write {
        addr: LineAddr,
        data: LineData,
        mask: u64,
    },
}

/// What the memory system answers a driver's [`LineOp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineAnswer {
    /// The L2's answer to a line request.
    Line(MopedDone),
    /// Whether a write found its rights still there (false: the line was taken or evicted
    /// since the grant, and must be asked for again).
    Written { addr: LineAddr, ok: bool },
}

/// Something that generates core accesses and checks their results.
pub trait Driver {
    /// What core `core` does next; an error fails the run at once.
    fn next(&mut self, core: usize, now: u64) -> Result<Next, String>;
    /// A completed access; an error fails the run.
    fn completed(&mut self, core: usize, c: &Completed, now: u64) -> Result<(), String>;
    /// Fast-forward of polling (`fastforward`): asked after each [`Driver::next`] of
    /// `core`, `Some(idle)` when that step began a pass of a polling loop. `idle`: the pass
    /// before it only polled memory, with loads, and left the driver's state for the core
    /// as it was when that pass began (counters aside), so that the next pass, reading the
    /// same memory, does the same.
    fn take_pass_start(&mut self, _core: usize) -> Option<bool> {
        None
    }
    /// Counts `passes` more idle passes of `core`'s polling loop, as if run: its counters
    /// grow by what its last idle pass added to them.
    fn skip_passes(&mut self, _core: usize, _passes: u64) {}
    /// The request id the core gave the [`Next::Independent`] load it just took: its
    /// completion, whenever it comes, carries this id (a blocking core's too).
    fn independent_issued(&mut self, _core: usize, _id: u64) {}
    /// The answer to a [`Next::Moped`] operation MOPED `m` carried out; an error fails the
    /// run. Drivers that issue none never hear of one.
    fn moped_done(&mut self, m: usize, _a: &LineAnswer, _now: u64) -> Result<(), String> {
        Err(format!(
            "MOPED {m}: an answer to a line operation this driver never issued"
        ))
    }
    /// Whether the driver wants to read simulated memory ([`Driver::read_memory`]) before
    /// the next core steps: snapshots and checks of message buffers.
    fn wants_memory(&self) -> bool {
        false
    }
    /// Reads simulated memory as the program would see it now; an error fails the run.
    fn read_memory(&mut self, _mem: &dyn VirtualMemory, _now: u64) -> Result<(), String> {
        Ok(())
    }
    /// The driver's own watchdog, asked between events about once a watchdog period: what
    /// its cores wait for, if they have waited past `limits` with nothing moving (polling
    /// completes accesses, so the per-request watchdog never sees such a wait).
    fn stuck(&mut self, _now: u64, _limits: &WatchdogSection) -> Option<String> {
        None
    }
    /// A device works on the driver's behalf at `now` (a NIC's engine searching, a message
    /// on its wire): the driver's own watchdog counts it as progress.
    fn device_progress(&mut self, _now: u64) {}
    /// Progress toward a known end, `(done, of)`, for the run's heartbeat
    /// ([`heartbeat`]); `None` where the end is not known.
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }
    /// Whether a load's completion of any core changes nothing that another core's
    /// [`Driver::next`] or [`Driver::completed`], the region marks, or what the driver
    /// counts by time read before that core's next step, and one core's completions of
    /// one cycle may come in any order: then the simulator may call [`Driver::completed`]
    /// for a load as its L1 hit happens, with the cycle it completes at
    /// (`sim.short_hits`).
    fn completes_privately(&self) -> bool {
        false
    }
    /// Whether the timed region started since last asked (gem5's `m5 resetstats`): the run
    /// pauses there so its caller can take the statistics the region's are relative to.
    fn take_region_start(&mut self) -> bool {
        false
    }
    /// Whether the timed region ended since last asked (gem5's `m5 dumpstats`): the run
    /// pauses there so its caller can take the region's statistics.
    fn take_region_end(&mut self) -> bool {
        false
    }
}

/// Simulated memory through a process's page tables, as a driver reads it between events.
pub trait VirtualMemory {
    /// The bytes at `[va, va + len)` of process `proc` as that process sees them now: every
    /// line's current value wherever it is (a cache, a writeback in progress, a message in
    /// flight, memory), with the stores still in the store buffers of the cores running
    /// the process applied on top.
    fn read(&self, proc: ProcId, va: u64, len: usize) -> Vec<u8>;
}

/// Counters of the simulator itself.
#[derive(Clone, Debug, Default)]
pub struct SimCounters {
    pub events: u64,
    /// The events by kind.
    pub kinds: platform::EventKinds,
    pub messages: u64,
    pub message_stalls: u64,
    /// Largest number of pending events seen.
    pub max_queue: u64,
}

/// The network side of the simulator: everything a sent message touches until its delivery
/// is queued. Controllers send into it directly (it is their [`Outbox`]), so a message is
/// timed and queued as the action that produces it runs, with no staging list.
struct Wire {
    net: Network,
    q: EventQueue<Ev>,
    /// Messages in flight; `Ev::Deliver` names a slot.
    slab: Vec<Msg>,
    free: Vec<u32>,
    /// Draws the random injection delays.
    rng: Xoshiro256PlusPlus,
    /// Number of possible extra injection delays, `network.random_delay_max + 1` (delays
    /// are `0..=random_delay_max` cycles); 0 when the delays are off.
    delay_span: u64,
    /// Network class of each message type, indexed by `MsgType as usize`.
    classes: Vec<MsgClass>,
}

impl Outbox for Wire {
    #[inline]
    fn now(&self) -> u64 {
        self.q.now()
    }

    #[inline]
    fn send(&mut self, m: Msg, delay: u32) {
        // Multiply-high maps a uniform word onto `0..delay_span`: the draw `rand`'s
        // `Uniform` makes, without its rejection test, which discards under
        // `delay_span / 2^64` of the words (never in practice).
        let extra = if self.delay_span != 0 {
            ((self.rng.next_u64() as u128 * self.delay_span as u128) >> 64) as u64
        } else {
            0
        };
        let class = &self.classes[m.ty as usize];
        let t = self.net.send_class(
            // Controllers' delays count from the event being processed.
            self.q.now() + delay as u64,
            m.src as usize,
            m.dst as usize,
            class,
            extra,
        );
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = m;
                s
            }
            None => {
                self.slab.push(m);
                (self.slab.len() - 1) as u32
            }
        };
        self.q.schedule(t, Ev::Deliver(slot));
    }
}

/// A whole CMP: cores, caches, directory banks, network.
pub struct Sim {
    pub cfg: SystemConfig,
    pub protocol: Protocol,
    pub caches: Vec<CacheCtrl>,
    pub dirs: Vec<DirCtrl>,
    /// The network, the messages in flight and the event queue.
    wire: Wire,
    cores: Vec<CoreState>,
    /// Stalled messages per controller (node id), in arrival order.
    stalled: Vec<Vec<u32>>,
    /// Per controller, bit `line_bit(line)` set for each line with a stalled message: most
    /// wake-ups find their line's bit clear and skip the list.
    stalled_lines: Vec<u64>,
    done: Vec<Completed>,
    pub counters: SimCounters,
    /// One MOPED per core, for protocols that have MOPED events.
    pub mopeds: Vec<Moped>,
    pub os: Os,
    moped_host: MopedHost,
    tlb: Tlb,
    /// The cores' first steps are queued (a run resumed after a pause queues none).
    started: bool,
    /// Polling passes skipped (`sim.fast_forward`).
    ff: fastforward::FastForward,
    /// `sim.short_hits`, where the running driver allows it ([`Driver::completes_privately`]).
    short_hits: bool,
    /// The NICs of the LHS paper's setting (`[nic]`), if on.
    nics: Option<nic_host::NicHost>,
}

/// Where [`Sim::run_to_mark`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// The driver's timed region starts at this cycle; the run goes on when called again.
    RegionStart(u64),
    /// The driver's timed region ends at this cycle; the run goes on when called again.
    RegionEnd(u64),
    /// Every core is done and the system is quiescent, at this cycle.
    Done(u64),
}

impl Sim {
    pub fn new(cfg: &SystemConfig, protocol: Protocol, seed: u64) -> Result<Sim, SimError> {
        cfg.validate()
            .map_err(|e| SimError::config(e.to_string()))?;
        if let Some(host) = crate::config::host_memory_bytes() {
            cfg.check_host_memory(host)
                .map_err(|e| SimError::config(e.to_string()))?;
        }
        let n = cfg.system.cores;
        let banks = cfg.directory.banks;
        let mut caches = Vec::with_capacity(n);
        for c in 0..n {
            let p = CacheParams {
                node: c as NodeId,
                n_cores: n,
                dir_banks: banks,
                l1_sets: cfg.l1_sets(),
                l1_ways: cfg.l1.assoc,
                l2_sets: cfg.l2_sets(),
                l2_ways: cfg.l2.assoc,
                l1_latency: cfg.l1.latency as u32,
                l2_latency: cfg.l2.latency as u32,
                prefetch: PrefetchParams {
                    kind: cfg.l1.prefetch_kind(),
                    degree: cfg.l1.prefetch_degree(),
                    distance: cfg.l1.prefetch_distance(),
                    page_bytes: crate::os::pagetable::PAGE_BYTES,
                },
            };
            caches.push(
                CacheCtrl::new(p, protocol.l2.clone())
                    .map_err(|e| SimError::config(e.to_string()))?,
            );
        }
        let mut dirs = Vec::with_capacity(banks);
        for b in 0..banks {
            let p = DirParams {
                node: (n + b) as NodeId,
                bank: b,
                banks,
                n_cores: n,
                latency: cfg.directory.latency as u32,
                mem_latency: cfg.memory.latency as u32,
                mem_channel_cycles: cfg.memory.channel_cycles,
                device: cfg.nic.enabled.then(|| {
                    let end = cfg.nic.base + n as u64 * crate::nic::NIC_STRIDE;
                    let extra = u32::try_from(cfg.nic.access_cycles).unwrap_or(u32::MAX);
                    (cfg.nic.base, end, extra)
                }),
            };
            dirs.push(
                DirCtrl::new(p, protocol.dir.clone())
                    .map_err(|e| SimError::config(e.to_string()))?,
            );
        }
        let mut net = moped_host::network(cfg, &[]);
        let nics = nic_host::NicHost::new(cfg, |c| nic_host::memory_round_trip(cfg, &net, c));
        let mopeds = moped_host::build_mopeds(cfg, &protocol)?;
        let moped_host = MopedHost::new(cfg, &mut net, mopeds.len());
        let classes = MsgType::ALL
            .iter()
            .map(|&ty| net.class(ty as usize, ty.vnet(), ty.bytes(cfg.network.header_bytes)))
            .collect();
        Ok(Sim {
            cfg: cfg.clone(),
            protocol,
            caches,
            dirs,
            wire: Wire {
                net,
                q: EventQueue::with_capacity(1024),
                slab: Vec::new(),
                free: Vec::new(),
                rng: Xoshiro256PlusPlus::seed_from_u64(seed),
                delay_span: match cfg.network.random_delay_max {
                    0 => 0,
                    m => m.saturating_add(1),
                },
                classes,
            },
            started: false,
            cores: vec![CoreState::default(); n],
            stalled: vec![Vec::new(); n + banks],
            stalled_lines: vec![0; n + banks],
            done: Vec::new(),
            counters: SimCounters::default(),
            mopeds,
            os: Os::new(
                cfg.memory.size_bytes,
                cfg.os.frame_order,
                seed,
                cfg.os.page_table,
            ),
            moped_host,
            tlb: Tlb::new(n, cfg.system.tlb_entries, cfg.system.page_walks),
            ff: fastforward::FastForward::new(cfg.sim.fast_forward, n),
            short_hits: false,
            nics,
        })
    }

    pub fn n_cores(&self) -> usize {
        self.cores.len()
    }

    pub fn now(&self) -> u64 {
        self.wire.q.now()
    }

    /// Every message slot, in flight or free (see [`Sim::wire_live`]).
    fn wire_slab(&self) -> &[Msg] {
        &self.wire.slab
    }

    /// Which message slots are in flight (delivered or stalled ones are not free).
    fn wire_live(&self) -> Vec<bool> {
        let mut live = vec![true; self.wire.slab.len()];
        for &f in &self.wire.free {
            live[f as usize] = false;
        }
        live
    }

    /// Runs until every core is done and the system is quiescent, through any timed
    /// region's start.
    pub fn run<D: Driver + ?Sized>(&mut self, driver: &mut D) -> Result<u64, SimError> {
        loop {
            if let Pause::Done(cycles) = self.run_to_mark(driver)? {
                return Ok(cycles);
            }
        }
    }

    /// Runs until every core is done and the system is quiescent, or until the driver's
    /// timed region starts; called again, it goes on from there.
    pub fn run_to_mark<D: Driver + ?Sized>(&mut self, driver: &mut D) -> Result<Pause, SimError> {
        let r = self.run_events(driver);
        // Every message is counted by the network; the counter mirrors it for callers.
        self.counters.messages = self.wire.net.total_msgs();
        self.counters.max_queue = self.wire.q.peak_len() as u64;
        r
    }

    fn run_events<D: Driver + ?Sized>(&mut self, driver: &mut D) -> Result<Pause, SimError> {
        self.short_hits = self.cfg.sim.short_hits && driver.completes_privately();
        if !self.started {
            self.started = true;
            for c in 0..self.cores.len() {
                self.cores[c].stepping = true;
                self.wire.q.schedule(0, Ev::Step(c as u16));
            }
        }
        // The watchdog looks at the cores between events, at most once a period: no event
        // of its own, so a core computing for 10^15 cycles costs one event, not one per
        // period, and a request stuck behind such a wait is seen at the wait's end.
        let period = self.watchdog_period();
        let mut check_at = self.now().saturating_add(period);
        loop {
            while let Some((now, ev)) = self.wire.q.pop() {
                self.counters.events += 1;
                self.counters.kinds.count(&ev);
                if self.counters.events % interrupt::EVERY == 0 {
                    if interrupt::requested() {
                        return Err(SimError::Interrupted);
                    }
                    if self.counters.events % host_memory::EVERY == 0 {
                        if let Some(detail) = host_memory::exhausted() {
                            return Err(SimError::host_memory(now, detail));
                        }
                        let events = self.counters.events;
                        heartbeat::tick(|host_seconds| heartbeat::Beat {
                            cycle: now,
                            events,
                            host_seconds,
                            done: driver.progress(),
                        });
                    }
                }
                if now >= check_at {
                    self.check_watchdog(now)?;
                    if self.nics_busy(now) {
                        driver.device_progress(now);
                    }
                    if let Some(detail) = driver.stuck(now, &self.cfg.watchdog) {
                        let detail = detail + &self.nic_notes();
                        return Err(SimError::watchdog(now, detail));
                    }
                    check_at = now.saturating_add(period);
                }
                if self.ff.watching() {
                    self.ff_observe(now, &ev, driver)?;
                }
                // Sleeping cores whose events come before the pause's are woken to it.
                let after = (now, ev.tie() + 1);
                cores::handle(self, now, ev, driver)?;
                if driver.take_region_start() {
                    self.ff_wake_all(after, driver)?;
                    return Ok(Pause::RegionStart(now));
                }
                if driver.take_region_end() {
                    self.ff_wake_all(after, driver)?;
                    return Ok(Pause::RegionEnd(now));
                }
            }
            if !self.ff_give_up(driver)? {
                break;
            }
        }
        self.check_quiescent()?;
        Ok(Pause::Done(self.cycles()))
    }

    /// Cycles until the last core finished.
    pub fn cycles(&self) -> u64 {
        cores::cycles(&self.cores)
    }

    fn watchdog_period(&self) -> u64 {
        (self.cfg.watchdog.progress_cycles / 4).max(1)
    }

    fn check_quiescent(&self) -> Result<(), SimError> {
        // With no watchdog event to wait for, a request that can never complete is seen
        // when the queue drains: named by its core first, as the watchdog would.
        let now = self.now();
        for (i, c) in self.cores.iter().enumerate() {
            if let Some((req, since)) = c.pending().filter(|_| !c.done) {
                let quiet = now.saturating_sub(c.last_progress.max(since));
                return Err(self.stuck_core(i, req, since, now, quiet));
            }
        }
        moped_host::check_mopeds_quiescent(self, self.now())?;
        self.check_driver_lines(self.now(), 0)?;
        for c in &self.caches {
            if let Some(t) = c.tbes().first() {
                return Err(SimError::watchdog(self.now(), format!(
                        "event queue drained with a transaction outstanding: controller {}, address {:#x}, state {}",
                        c.name(),
                        t.addr,
                        c.state_name(t.addr)
                    )));
            }
        }
        for (n, s) in self.stalled.iter().enumerate() {
            if let Some(&slot) = s.first() {
                let m = &self.wire.slab[slot as usize];
                return Err(SimError::watchdog(self.now(), format!(
                        "deadlock: message {} for {:#x} from node {} stalled forever at node {}: {}",
                        m.ty.name(),
                        m.addr,
                        m.src,
                        n,
                        self.describe_line(m.addr)
                    )));
            }
        }
        Ok(())
    }

    /// States of a line in every controller that knows it (for error reports).
    pub fn describe_line(&self, addr: LineAddr) -> String {
        let mut parts = Vec::new();
        for c in &self.caches {
            let s = c.state_name(addr);
            if s != "I" || c.tbes().iter().any(|t| t.addr == addr) {
                parts.push(format!("{}={}", c.name(), s));
            }
        }
        let d = &self.dirs[crate::coherence::home_bank(addr, self.dirs.len())];
        let e = d.entry(addr);
        parts.push(format!(
            "{}={} owner={} sharers={}",
            d.name(),
            d.table().state_name(e.state),
            if e.owner == crate::coherence::dir::NOBODY {
                "-".to_string()
            } else {
                e.owner.to_string()
            },
            e.sharers
        ));
        parts.join(", ")
    }

    fn check_watchdog(&self, now: u64) -> Result<(), SimError> {
        let wd = &self.cfg.watchdog;
        self.check_driver_lines(now, wd.request_cycles)?;
        for (i, c) in self.cores.iter().enumerate() {
            // A sleeping core polls on, as far as it knows (`fastforward`).
            if c.done || self.ff.asleep(i) {
                continue;
            }
            if let Some((req, since)) = c.pending() {
                // A core that computed for a long time has made no accesses, but no lack
                // of progress either: count from the later of its last completion and
                // this request.
                let quiet = now.saturating_sub(c.last_progress.max(since));
                if now.saturating_sub(since) > wd.request_cycles || quiet > wd.progress_cycles {
                    return Err(self.stuck_core(i, req, since, now, quiet));
                }
            }
        }
        Ok(())
    }

    /// Core `i`'s request `req`, issued at cycle `since`, made no progress for `quiet`
    /// cycles up to `now`.
    fn stuck_core(&self, i: usize, req: CoreReq, since: u64, now: u64, quiet: u64) -> SimError {
        let addr = line_of(req.addr);
        let cache = &self.caches[i];
        let event = match req.kind {
            AccessKind::Load => "Load",
            AccessKind::Store => "Store",
        };
        SimError::watchdog(now, format!(
                "core {i} made no progress for {quiet} cycles: controller {}, state {}, event {event}, address {addr:#x}, cycle {now}, request issued at cycle {since}; line: {}",
                cache.name(),
                cache.state_name(addr),
                self.describe_line(addr)
            ))
    }

    // ---- Cores ----

    /// Cycles from a core request to its completion when it hits at `level`.
    fn hit_latency(&self, level: crate::coherence::HitLevel) -> u64 {
        match level {
            crate::coherence::HitLevel::L1 => self.cfg.l1.latency,
            crate::coherence::HitLevel::Port => self.cfg.moped.port_latency,
            _ => self.cfg.l1.latency + self.cfg.l2.latency,
        }
    }

    /// Books the L2 controller's answer to a load of core `c`'s window (see
    /// `memory_access`).
    fn window_outcome<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        id: u64,
        outcome: CoreOutcome,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        match outcome {
            CoreOutcome::Hit(level) => {
                let at = now + self.hit_latency(level);
                let comp = self.done.pop().expect("hit completion");
                self.cores[c].window.hit(comp, at);
                self.wire.q.schedule(at, Ev::WindowHit(c as u16));
            }
            CoreOutcome::Miss => self.cores[c].window.answered(id, true),
            CoreOutcome::Stalled => {
                // `wake` retries it once the line it stalled on changes.
                self.cores[c].window.answered(id, false);
                self.cores[c].stalled_load = true;
            }
        }
        self.take_completions(c, now, driver)
    }

    /// Routes completions produced by core `c`'s controller to that core.
    fn take_completions<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        while let Some(comp) = self.done.pop() {
            let windowed =
                comp.req.kind == AccessKind::Load && self.cores[c].window.holds(comp.req.id);
            debug_assert!(match comp.req.kind {
                AccessKind::Load => windowed || self.cores[c].load == Some(comp.req),
                AccessKind::Store => self.cores[c].store_buffer.front() == Some(&comp.req),
            });
            if windowed {
                mlp::finish(self, c, &comp, now, driver)?;
            } else {
                cores::finish_access(self, c, &comp, now, driver)?;
            }
        }
        Ok(())
    }

    // ---- Network ----

    fn deliver_msg<D: Driver + ?Sized>(
        &mut self,
        slot: u32,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        // A copy: the slab may grow while the controller sends (the slot stays reserved).
        let msg = self.wire.slab[slot as usize];
        let (node, addr) = (msg.dst as usize, msg.addr);
        let n = self.cores.len();
        let r = if node < n {
            self.caches[node].deliver(&msg, &mut self.wire, &mut self.done)
        } else {
            self.dirs[node - n].deliver(&msg, &mut self.wire)
        }
        .map_err(violation_at(now))?;
        match r {
            Delivery::Stalled => {
                self.counters.message_stalls += 1;
                self.stalled[node].push(slot);
                self.stalled_lines[node] |= line_bit(addr);
            }
            Delivery::Done => {
                self.wire.free.push(slot);
                self.wake(node, addr, now);
                if node < n {
                    self.take_completions(node, now, driver)?;
                    if self.caches[node].has_moped_done() {
                        self.pass_moped_answers(node, now, driver)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// After a line changed in a controller, retry what was stalled on it.
    fn wake(&mut self, node: usize, addr: LineAddr, now: u64) {
        if self.stalled_lines[node] & line_bit(addr) != 0 {
            // Retry, in arrival order, every message stalled on this line.
            let Wire { slab, q, .. } = &mut self.wire;
            let mut left = 0;
            self.stalled[node].retain(|&s| {
                let a = slab[s as usize].addr;
                if a == addr {
                    q.schedule(now + 1, Ev::Deliver(s));
                    false
                } else {
                    left |= line_bit(a);
                    true
                }
            });
            self.stalled_lines[node] = left;
        }
        if node < self.cores.len() && self.moped_host.has_stalled(node) {
            moped_host::wake_moped(self, node, now);
        }
        if node < self.cores.len() {
            let core = &mut self.cores[node];
            if core.stalled_load {
                core.stalled_load = false;
                self.wire.q.schedule(now + 1, Ev::RetryLoad(node as u16));
            }
            let core = &mut self.cores[node];
            if core.stalled_store {
                core.stalled_store = false;
                self.wire.q.schedule(now + 1, Ev::RetryStore(node as u16));
            }
        }
    }

    /// Accesses each core issued.
    pub fn accesses(&self, core: usize) -> u64 {
        self.cores[core].accesses
    }
}

/// The embedded simulator's platform: its own L2 controllers, directories and network.
impl Platform for Sim {
    type Mem<'a> = memory::LiveMem<'a>;

    fn cfg(&self) -> &SystemConfig {
        &self.cfg
    }

    fn design(&self) -> &str {
        &self.protocol.name
    }

    fn cores(&self) -> &[CoreState] {
        &self.cores
    }

    fn cores_mut(&mut self) -> &mut [CoreState] {
        &mut self.cores
    }

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.wire.q
    }

    fn os(&self) -> &Os {
        &self.os
    }

    fn os_parts(&mut self) -> (&mut Os, &mut Tlb, memory::LiveMem<'_>) {
        let mem = memory::LiveMem {
            dirs: &mut self.dirs,
            caches: &mut self.caches,
            slab: &mut self.wire.slab,
        };
        (&mut self.os, &mut self.tlb, mem)
    }

    fn dev(&self) -> &DevNet {
        &self.moped_host.dev
    }

    fn mopeds(&self) -> &[Moped] {
        &self.mopeds
    }

    fn devices(&mut self) -> Devices<'_> {
        Devices {
            mopeds: &mut self.mopeds,
            dev: &mut self.moped_host.dev,
            net: &mut self.wire.net,
            q: &mut self.wire.q,
        }
    }

    fn memory_access<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        req: CoreReq,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        // The L2 controller (the L1 beneath it) takes the access: a hit completes after
        // its latency, a miss when the answer arrives, a stall when the line changes.
        let outcome = self.caches[c]
            .core_request(req, &mut self.wire, &mut self.done)
            .map_err(violation_at(now))?;
        let is_load = req.kind == AccessKind::Load;
        let core = &mut self.cores[c];
        if is_load && core.window.holds(req.id) {
            return self.window_outcome(c, req.id, outcome, now, driver);
        }
        match outcome {
            CoreOutcome::Hit(level) => {
                let lat = self.hit_latency(level);
                let comp = self.done.pop().expect("hit completion");
                let core = &mut self.cores[c];
                if is_load {
                    core.hit_load = Some(comp);
                    core.load_outstanding = true;
                } else {
                    core.hit_store = Some(comp);
                    core.store_outstanding = true;
                }
                self.wire
                    .q
                    .schedule(now + lat, Ev::HitDone(c as u16, is_load));
            }
            CoreOutcome::Miss if is_load => core.load_outstanding = true,
            CoreOutcome::Miss => core.store_outstanding = true,
            CoreOutcome::Stalled if is_load => core.stalled_load = true,
            CoreOutcome::Stalled => core.stalled_store = true,
        }
        self.take_completions(c, now, driver)
    }

    fn l1_hit(&mut self, c: usize, req: &CoreReq) -> Option<u64> {
        if !self.short_hits {
            return None;
        }
        self.caches[c].l1_plain_hit(req)
    }

    fn own_event_skipped(&mut self, c: usize) {
        self.ff_own_event_skipped(c);
    }

    fn deliver<D: Driver + ?Sized>(
        &mut self,
        slot: u32,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        self.deliver_msg(slot, now, driver)
    }

    /// The embedded simulator schedules no watchdog events (see [`Sim::run`]).
    fn watchdog(&mut self, now: u64) -> Result<(), SimError> {
        self.check_watchdog(now)
    }

    fn moped_inputs<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        self.take_moped_inputs(m, now, driver)
    }

    fn driver_line<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        op: LineOp,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        self.driver_line_op(m, op, now, driver)
    }

    fn line_request(&mut self, m: usize, req: MopedReq, now: u64) -> Result<(), SimError> {
        self.l2_line_request(m, req, now)
    }

    fn line_write(&mut self, m: usize, addr: LineAddr, data: LineData, mask: u64, now: u64) {
        self.l2_line_write(m, addr, data, mask, now)
    }

    fn lines_waiting(&self, m: usize) -> bool {
        self.moped_host.has_stalled(m)
    }

    fn pass_started(&mut self, c: usize, now: u64, idle: bool) {
        self.ff_pass_started(c, now, idle)
    }

    #[inline]
    fn is_uncached(&self, addr: u64) -> bool {
        self.nics.as_ref().is_some_and(|h| h.is_uncached(addr))
    }

    #[inline]
    fn is_nic(&self, addr: u64) -> bool {
        self.nics.as_ref().is_some_and(|h| h.map.covers(addr))
    }

    fn nic_access(&mut self, c: usize, req: CoreReq, now: u64) -> Result<(), SimError> {
        Sim::nic_access(self, c, req, now)
    }

    fn nic_tick<D: Driver + ?Sized>(
        &mut self,
        n: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        Sim::nic_tick(self, n, now, driver)
    }

    fn flush_line(&mut self, c: usize, addr: u64, now: u64) -> Result<bool, SimError> {
        Sim::flush_line(self, c, addr, now)
    }

    fn software_prefetch(&mut self, c: usize, addr: u64, now: u64) -> Result<(), SimError> {
        Sim::software_prefetch(self, c, addr, now)
    }
}

/// Stamps a controller's violation with the cycle of the event that raised it (the
/// simulator does not keep every controller's clock current: one store per event into a
/// controller's otherwise cold line).
pub(crate) fn violation_at(now: u64) -> impl FnOnce(Box<Violation>) -> SimError {
    move |mut v| {
        v.cycle = now;
        SimError::from(v)
    }
}

/// A line's bit in a controller's `stalled_lines` mask (a multiplicative hash: a directory
/// bank's lines share their low line-address bits).
#[inline]
fn line_bit(addr: LineAddr) -> u64 {
    1 << ((addr >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
}
