//! Exact fast-forward of idle polling (`sim.fast_forward`).
//!
//! A rank waiting for a message runs pass after pass of its progress engine, each reading
//! the same queue words, which hit in its L1 and which nothing changes until a message
//! comes. When the driver says a pass only polled and left the rank where it stood
//! ([`Driver::take_pass_start`]), and the simulator saw nothing but the core's steps and
//! L1 load hits in it and nothing reach the core's node, every later pass is the same
//! until something reaches that node. The core then sleeps: its pending events leave the
//! queue and none of its passes runs. It wakes when something reaches its node (a
//! coherence message for its caches, an event of its MOPED), when the run pauses for the
//! timed region, or when nothing else is left to run; then
//! - the whole passes it skipped are accounted as if run: each adds what the last pass
//!   added to the core's, its caches', its TLB's and its rank's counters, and moves the
//!   core's time stamps and request ids on by one pass;
//! - the pass in progress is run for real, event by event, up to the waking moment, in a
//!   queue of its own, and what is left of it joins the event queue.
//!
//! The core then stands exactly where the event-by-event simulation has it. What makes
//! that exact rather than close:
//! - A core's events come after every other event of their cycle, by core id
//!   ([`Tie`](crate::engine::Tie)), so taking them out and putting them back later moves
//!   no one else's, and they fall where they would have fallen.
//! - Replacement in the L1 and the TLB compares last-use stamps only with each other; each
//!   skipped pass would renew the same entries in the same order, above every other
//!   entry's stamp, so the order the stamps give is the one the real passes leave.
//! - A pass that sends nothing draws no random delay and touches nothing shared.
//!
//! Statistics are the same with and without it (a test compares every line of `stats.txt`
//! but the simulator's own event counts and host time); `sim.fast_forward.passes` counts
//! the passes skipped.

use crate::coherence::cache::CacheStats;
use crate::coherence::HitLevel;
use crate::engine::{EventQueue, Tie};

use super::cores;
use super::platform::Ev;
use super::tlb::TlbStats;
use super::{Driver, Sim, SimError};

/// A core's counters that a pass of its own L1 load hits advances.
#[derive(Clone, Debug)]
struct Counters {
    next_id: u64,
    accesses: u64,
    cache: CacheStats,
    tlb: TlbStats,
    transitions: Vec<u64>,
}

/// What one idle pass adds to a core's counters.
#[derive(Clone, Debug)]
struct Delta {
    /// Loads: request ids, accesses and L1 hits alike.
    loads: u64,
    tlb_hits: u64,
    /// Transition counters that moved: (counter, runs).
    transitions: Vec<(usize, u64)>,
}

impl Delta {
    /// What the pass from `a` to `b` added, if it was nothing but L1 load hits (every
    /// access an L1 hit, translated by a TLB hit if at all, with nothing else counted).
    fn between(a: &Counters, b: &Counters) -> Option<Delta> {
        let loads = b.next_id - a.next_id;
        let hits = b.cache.l1_hits - a.cache.l1_hits;
        if loads == 0 || b.accesses - a.accesses != loads || hits != loads {
            return None;
        }
        let only_hits = CacheStats {
            l1_hits: b.cache.l1_hits,
            ..a.cache.clone()
        };
        let tlb_hits = b.tlb.hits - a.tlb.hits;
        let tlb_same = TlbStats {
            hits: b.tlb.hits,
            ..a.tlb
        };
        if only_hits != b.cache || tlb_same != b.tlb || (tlb_hits != 0 && tlb_hits != loads) {
            return None;
        }
        let transitions = (a.transitions.iter().zip(&b.transitions).enumerate())
            .filter(|(_, (x, y))| x != y)
            .map(|(k, (x, y))| (k, y - x))
            .collect();
        Some(Delta {
            loads,
            tlb_hits,
            transitions,
        })
    }
}

/// A core's state when its last pass began, and the cycle.
#[derive(Clone, Debug)]
struct Mark {
    at: u64,
    counters: Counters,
    /// Where the pass's first load hit, when the core waits for nothing else: its latency
    /// is part of the pass's length, but its count belongs to the pass before.
    first: Option<HitLevel>,
}

/// A sleeping core: its state is as it was right after the first step of the pass that
/// began at `at`; every `period` cycles another pass begins.
#[derive(Clone, Debug)]
struct Sleep {
    at: u64,
    period: u64,
    delta: Delta,
    /// The core's events that were pending at `at`.
    pending: Vec<(u64, Ev)>,
}

#[derive(Clone, Debug, Default)]
struct Watch {
    mark: Option<Mark>,
    /// Since the mark, the core ran only steps and load hits, and nothing else reached its
    /// node.
    clean: bool,
    sleep: Option<Sleep>,
}

/// Every core's watch, and what the fast-forward skipped.
pub(crate) struct FastForward {
    on: bool,
    cores: Vec<Watch>,
    asleep: usize,
    /// Passes skipped.
    pub passes: u64,
    /// A waking core's pass in progress runs here.
    scratch: EventQueue<Ev>,
    replaying: bool,
}

impl FastForward {
    pub fn new(on: bool, cores: usize) -> FastForward {
        FastForward {
            on,
            cores: vec![Watch::default(); cores],
            asleep: 0,
            passes: 0,
            scratch: EventQueue::new(),
            replaying: false,
        }
    }

    /// Whether fast-forward watches this run.
    #[inline]
    pub fn on(&self) -> bool {
        self.on
    }

    pub fn asleep(&self, c: usize) -> bool {
        self.asleep > 0 && self.cores[c].sleep.is_some()
    }
}

/// The tie of core `c`'s events.
fn tie_of(c: usize) -> u16 {
    Ev::Step(c as u16).tie()
}

impl Sim {
    /// Before event `ev` runs: the node it reaches is no longer left alone (a sleeping core
    /// there wakes first).
    #[inline]
    pub(super) fn ff_observe<D: Driver + ?Sized>(
        &mut self,
        now: u64,
        ev: &Ev,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let (node, own_hit) = match *ev {
            Ev::Step(c) | Ev::HitDone(c, true) => (c as usize, true),
            Ev::Walk(c)
            | Ev::RetryLoad(c)
            | Ev::RetryStore(c)
            | Ev::HitDone(c, false)
            | Ev::WindowHit(c) => (c as usize, false),
            Ev::Deliver(slot) => (self.wire.slab[slot as usize].dst as usize, false),
            Ev::MopedTick(m) | Ev::FaultDone(m, ..) => (m as usize, false),
            Ev::DevDeliver(slot) => (self.moped_host.dev.slab[slot as usize].0 as usize, false),
            Ev::Watchdog => return Ok(()),
        };
        let Some(w) = self.ff.cores.get_mut(node) else {
            // A directory bank.
            return Ok(());
        };
        w.clean &= own_hit;
        if w.sleep.is_some() {
            self.ff_wake(node, (now, 0), driver)?;
        }
        Ok(())
    }

    /// Core `c`'s step at `now` began a pass of its polling loop; `idle`: the driver says
    /// the pass before it only polled and left the core's work where it stood.
    pub(super) fn ff_pass_started(&mut self, c: usize, now: u64, idle: bool) {
        if !self.ff.on || self.ff.replaying {
            return;
        }
        let counters = self.ff_counters(c);
        let first = self.ff_first_hit(c, now);
        let w = &mut self.ff.cores[c];
        let clean = std::mem::replace(&mut w.clean, true);
        let Some(prev) = w.mark.replace(Mark {
            at: now,
            counters: counters.clone(),
            first,
        }) else {
            return;
        };
        if !idle || !clean || first.is_none() || first != prev.first {
            return;
        }
        let Some(delta) = Delta::between(&prev.counters, &counters) else {
            return;
        };
        // The pass's first load hit is all that is pending (checked by `ff_can_sleep`).
        let pending = self.wire.q.take_tie(tie_of(c));
        if pending.len() != 1 {
            for (t, ev) in pending {
                self.wire.q.schedule(t, ev);
            }
            return;
        }
        self.ff.cores[c].sleep = Some(Sleep {
            at: now,
            period: now - prev.at,
            delta,
            pending,
        });
        self.ff.asleep += 1;
    }

    /// Where the load of core `c`'s pass's first step hit, if the core waits for nothing
    /// but that hit.
    fn ff_first_hit(&self, c: usize, now: u64) -> Option<HitLevel> {
        let k = &self.cores[c];
        let alone = !k.done
            && !k.stepping
            && k.load.is_some()
            && k.load_outstanding
            && k.hit_load.is_some()
            && k.hit_store.is_none()
            && k.store_buffer.is_empty()
            && !k.store_outstanding
            && !k.stalled_load
            && !k.stalled_store
            && !k.waiting_for_completion
            && k.walk.is_none()
            && k.window.is_empty()
            && k.busy_until <= now;
        k.hit_load.filter(|_| alone).map(|h| h.level)
    }

    fn ff_counters(&self, c: usize) -> Counters {
        let core = &self.cores[c];
        let cache = &self.caches[c];
        Counters {
            next_id: core.next_id,
            accesses: core.accesses,
            cache: cache.stats.clone(),
            tlb: self.tlb.stats(c),
            transitions: cache.transitions.iter().collect(),
        }
    }

    /// Wakes sleeping core `c` where the event-by-event run would stand just before the
    /// event at `until` (a cycle and a tie): whole passes accounted, the pass in progress
    /// run up to there.
    pub(super) fn ff_wake<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        until: (u64, u16),
        driver: &mut D,
    ) -> Result<(), SimError> {
        let Some(s) = self.ff.cores[c].sleep.take() else {
            return Ok(());
        };
        self.ff.asleep -= 1;
        self.ff.cores[c].mark = None;
        self.ff.cores[c].clean = false;
        let tie = tie_of(c);
        // Pass j >= 1 ends with the step at `at + j * period` (the next one's first).
        let d = until.0.saturating_sub(s.at);
        let k = match d / s.period {
            // The last pass that may have ended ends at `until`'s cycle: before it only if
            // the core's events come before `until`'s tie.
            j if d % s.period == 0 && until.1 <= tie => j.saturating_sub(1),
            j => j,
        };
        let shift = k * s.period;
        if k > 0 {
            self.ff_account(c, k, &s.delta, shift, driver);
        }
        // The pass in progress, by itself.
        // The scratch queue takes the event queue's place while the pass replays, so the
        // core's handlers schedule into it.
        self.ff.scratch.restart_at(s.at + shift);
        for &(t, ev) in &s.pending {
            self.ff.scratch.schedule(t + shift, ev);
        }
        std::mem::swap(&mut self.wire.q, &mut self.ff.scratch);
        self.ff.replaying = true;
        let mut result = Ok(());
        while self.wire.q.peek_key().is_some_and(|key| key < until) {
            let (t, ev) = self.wire.q.pop().expect("peeked");
            self.counters.events += 1;
            self.counters.kinds.count(&ev);
            result = cores::handle(self, t, ev, driver);
            if result.is_err() {
                break;
            }
        }
        self.ff.replaying = false;
        std::mem::swap(&mut self.wire.q, &mut self.ff.scratch);
        // What is left of the pass joins the event queue (the scratch queue is left empty).
        while let Some((t, ev)) = self.ff.scratch.pop() {
            if ev.tie() != tie && result.is_ok() {
                result = Err(SimError::Check {
                    cycle: t,
                    detail: format!(
                        "fast-forward: waking core {c}'s pass scheduled {ev:?}, not an event of \
                         the core (replay with sim.fast_forward = false)"
                    ),
                });
            }
            self.wire.q.schedule(t, ev);
        }
        result
    }

    /// Accounts `k` skipped passes of core `c`, `shift` cycles in all.
    fn ff_account<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        k: u64,
        d: &Delta,
        shift: u64,
        driver: &mut D,
    ) {
        let ids = k * d.loads;
        let core = &mut self.cores[c];
        core.next_id += ids;
        core.accesses += ids;
        core.load_issued_at += shift;
        core.last_progress += shift;
        if let Some(l) = core.load.as_mut() {
            l.id += ids;
        }
        if let Some(h) = core.hit_load.as_mut() {
            h.req.id += ids;
        }
        let cache = &mut self.caches[c];
        cache.stats.l1_hits += ids;
        for &(counter, runs) in &d.transitions {
            cache.transitions.add(counter, k * runs);
        }
        self.tlb.stats_mut(c).hits += k * d.tlb_hits;
        driver.skip_passes(c, k);
        self.ff.passes += k;
    }

    /// Wakes every sleeping core where the run stands just before `until`.
    pub(super) fn ff_wake_all<D: Driver + ?Sized>(
        &mut self,
        until: (u64, u16),
        driver: &mut D,
    ) -> Result<(), SimError> {
        for c in 0..self.cores.len() {
            if self.ff.asleep == 0 {
                break;
            }
            self.ff_wake(c, until, driver)?;
        }
        Ok(())
    }

    /// Nothing but sleeping cores is left: the event-by-event run would poll on until the
    /// watchdog. Wake them and run the rest event by event, so it does the same.
    pub(super) fn ff_give_up<D: Driver + ?Sized>(
        &mut self,
        driver: &mut D,
    ) -> Result<bool, SimError> {
        if self.ff.asleep == 0 {
            return Ok(false);
        }
        let now = self.now();
        self.ff_wake_all((now + 1, 0), driver)?;
        self.ff.on = false;
        Ok(true)
    }
}
