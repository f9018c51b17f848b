//! Exact fast-forward of idle polling (`sim.fast_forward`).
//!
//! A rank waiting for a message runs pass after pass of its progress engine, each reading
//! the same queue words, which nothing changes until a message comes. When the driver says
//! a pass only polled and left the rank where it stood ([`Driver::take_pass_start`]), and
//! the simulator saw nothing in it but the core's steps, its loads served by its own L1
//! or L2, and its page walks of such loads, and nothing reach the core's node, every later
//! pass is the same until something reaches that node, provided the pass began as the one
//! before it did and, when it moved lines (an L1 miss or a TLB miss: with more queues than
//! the TLB has entries, or than an L1 set has ways), the L1, the L2 and the TLB hold the
//! same lines in the same LRU order at both of its ends. The core then sleeps: its pending
//! events leave the queue and none of its passes runs. It wakes when something reaches its
//! node (a coherence message for its caches, an event of its MOPED), when the run pauses
//! for the timed region, or when nothing else is left to run; then
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
//! - Replacement in the L1, the L2 and the TLB compares last-use stamps only with each
//!   other, within a set; a pass that finds every line it looks at renews the same entries
//!   in the same order, above every other entry's stamp, and one that moves lines but ends
//!   with the same contents in the same order ([`Sim::ff_signature`]) leaves its caches
//!   and TLB as a skipped pass would. Either way the order the stamps give is the one the
//!   real passes leave.
//! - A pass that sends nothing draws no random delay and touches nothing shared.
//!
//! Statistics are the same with and without it (a test compares every line of `stats.txt`
//! but the simulator's own event counts and host time); `sim.fast_forward.passes` counts
//! the passes skipped.

use crate::coherence::cache::{CacheStats, PrefetchKind};
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
    /// Request ids: the pass's loads, its page walks' included.
    ids: u64,
    /// The core's accesses (its walks' loads are not).
    accesses: u64,
    l1_hits: u64,
    /// L1 misses, each an L2 hit.
    l1_misses: u64,
    /// TLB hits, misses, walk loads and walk cycles.
    tlb: TlbStats,
    /// Transition counters that moved: (counter, runs).
    transitions: Vec<(usize, u64)>,
    /// The miss latencies the pass sampled (`sim::latency`): one per L1 miss.
    latencies: Vec<(u8, u64)>,
}

impl Delta {
    /// What the pass from `a` to `b` added, if it was nothing but loads served by the core's
    /// own L1 or L2 (every access translated by a TLB hit, by a walk of such loads, or not
    /// at all), with nothing else counted.
    fn between(a: &Counters, b: &Counters, latencies: Option<Vec<(u8, u64)>>) -> Option<Delta> {
        let ids = b.next_id - a.next_id;
        let accesses = b.accesses - a.accesses;
        let l1_hits = b.cache.l1_hits - a.cache.l1_hits;
        let l1_misses = b.cache.l1_misses - a.cache.l1_misses;
        let tlb = TlbStats {
            hits: b.tlb.hits - a.tlb.hits,
            misses: b.tlb.misses - a.tlb.misses,
            walk_loads: b.tlb.walk_loads - a.tlb.walk_loads,
            walk_cycles: b.tlb.walk_cycles - a.tlb.walk_cycles,
        };
        let translated = tlb.hits + tlb.misses;
        // The pass's samples (those of its misses that completed within it, a miss pending
        // at its start included): each skipped pass, the same pass again, takes the same.
        let latencies = latencies?;
        if ids == 0
            || ids != accesses + tlb.walk_loads
            || l1_hits + l1_misses != ids
            || b.cache.l2_hits - a.cache.l2_hits != l1_misses
            || (translated != 0 && translated != accesses)
        {
            return None;
        }
        let only_these = CacheStats {
            l1_hits: b.cache.l1_hits,
            l1_misses: b.cache.l1_misses,
            l2_hits: b.cache.l2_hits,
            ..a.cache.clone()
        };
        if only_these != b.cache {
            return None;
        }
        let transitions = (a.transitions.iter().zip(&b.transitions).enumerate())
            .filter(|(_, (x, y))| x != y)
            .map(|(k, (x, y))| (k, y - x))
            .collect();
        Some(Delta {
            ids,
            accesses,
            l1_hits,
            l1_misses,
            tlb,
            transitions,
            latencies,
        })
    }

    /// Whether the pass changed which lines the L1, the L2 or the TLB hold, beyond renewing
    /// the stamps of those it found: then the next pass is the same only if the three hold
    /// the same in the same order at both of its ends ([`Sim::ff_signature`]).
    fn moves_lines(&self) -> bool {
        self.l1_misses > 0 || self.tlb.misses > 0
    }
}

/// A core's state when its last pass began, and the cycle.
#[derive(Clone, Debug)]
struct Mark {
    at: u64,
    counters: Counters,
    /// What the core waits for when the pass begins, if only its first load's hit.
    first: Option<Start>,
    /// The pass that ended here was idle and moved lines (see [`Delta::moves_lines`]).
    moved: bool,
    /// Taken when the two passes before moved lines: a wait's first pass after computing
    /// often moves lines (its TLB and L1 refill) where the next ones do not.
    signature: Option<Signature>,
}

/// The L1's, L2's and TLB's contents in LRU order at a pass start ([`Sim::ff_signature`]).
#[derive(Clone, Debug)]
struct Signature {
    /// The L1's and the L2's differ from the last signature taken of them (they keep theirs
    /// and sign only the sets changed since: signing every set of the L2 cost as much as a
    /// pass of a hundred ranks).
    caches_changed: bool,
    /// The TLB's, whole.
    tlb: Vec<u64>,
}

impl Signature {
    /// Whether the caches and the TLB stand as they did at `before`, the last signature
    /// taken of this core's caches.
    fn same_as(&self, before: &Signature) -> bool {
        !self.caches_changed && self.tlb == before.tlb
    }
}

/// What a core waits for as its pass begins: the pass's first load (or its page walk's
/// first load), and where it hit. Its latency is part of the pass's length, but its counts
/// belong to the pass before, so two passes are alike only if they begin alike.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Start {
    level: HitLevel,
    load: (u64, u8),
    /// The page walk in progress: the access's address, the entries still to load, the
    /// physical address it ends at, and the cycles since it began.
    walk: Option<(u64, Vec<u64>, u64, u64)>,
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
    sleep: Option<Sleep>,
}

/// Every core's watch, and what the fast-forward skipped.
pub(crate) struct FastForward {
    on: bool,
    cores: Vec<Watch>,
    /// Per core: since its mark, the core ran only steps and load hits, and nothing else
    /// reached its node. Apart from `cores`, as every event looks at it.
    clean: Vec<bool>,
    /// Cores with a mark: while there are none, no event needs looking at.
    marked: usize,
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
            clean: vec![false; cores],
            marked: 0,
            asleep: 0,
            passes: 0,
            scratch: EventQueue::new(),
            replaying: false,
        }
    }

    /// Whether the events need looking at: some core marked a pass start (or sleeps,
    /// which it does only after one).
    #[inline]
    pub fn watching(&self) -> bool {
        self.marked > 0
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
            Ev::Step(c) | Ev::HitDone(c, true) | Ev::Walk(c) => (c as usize, true),
            Ev::RetryLoad(c) | Ev::RetryStore(c) | Ev::HitDone(c, false) | Ev::WindowHit(c) => {
                (c as usize, false)
            }
            Ev::Deliver(slot) => (self.wire.slab[slot as usize].dst as usize, false),
            Ev::MopedTick(m) | Ev::FaultDone(m, ..) | Ev::NicTick(m) => (m as usize, false),
            Ev::DevDeliver(slot) => (self.moped_host.dev.slab[slot as usize].0 as usize, false),
            Ev::Watchdog => return Ok(()),
        };
        let Some(clean) = self.ff.clean.get_mut(node) else {
            // A directory bank.
            return Ok(());
        };
        *clean &= own_hit;
        if self.ff.asleep > 0 && self.ff.cores[node].sleep.is_some() {
            self.ff_wake(node, (now, 0), driver)?;
        }
        Ok(())
    }

    /// Core `c` completed a window load or a store at its L1 hit (`sim.short_hits`): as the
    /// hit's event would (see [`Sim::ff_observe`]), the core's pass is no longer only its
    /// own blocking loads.
    pub(super) fn ff_own_event_skipped(&mut self, c: usize) {
        if self.ff.watching() {
            self.ff.clean[c] = false;
        }
    }

    /// Core `c`'s step at `now` began a pass of its polling loop; `idle`: the driver says
    /// the pass before it only polled and left the core's work where it stood.
    pub(super) fn ff_pass_started(&mut self, c: usize, now: u64, idle: bool) {
        if !self.ff.on || self.ff.replaying {
            return;
        }
        let counters = self.ff_counters(c);
        let latencies = self.cores[c].miss_latency.start_pass();
        let first = self.ff_first(c, now);
        let clean = std::mem::replace(&mut self.ff.clean[c], true);
        let prev = self.ff.cores[c].mark.take();
        if prev.is_none() {
            self.ff.marked += 1;
        }
        let delta = prev
            .as_ref()
            .filter(|_| idle && clean)
            .and_then(|p| Delta::between(&p.counters, &counters, latencies));
        // The next pass start compares its signature with this one's, when this pass moves
        // lines as the two that just ended did.
        let moved = delta.as_ref().is_some_and(Delta::moves_lines);
        let signature = (moved && prev.as_ref().is_some_and(|p| p.moved))
            .then(|| self.ff_signature(c))
            .flatten();
        // The pass just ended repeats: it began as the one before did and, having moved
        // lines, left the caches and the TLB as that one found them.
        let repeats = match (&prev, &delta) {
            (Some(p), Some(d)) => {
                first.is_some()
                    && first == p.first
                    && (!d.moves_lines()
                        || signature
                            .as_ref()
                            .zip(p.signature.as_ref())
                            .is_some_and(|(s, before)| s.same_as(before)))
            }
            _ => false,
        };
        self.ff.cores[c].mark = Some(Mark {
            at: now,
            counters,
            first,
            moved,
            signature,
        });
        let (Some(prev), Some(delta)) = (prev, delta) else {
            return;
        };
        if !repeats {
            return;
        }
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

    /// What core `c` waits for as its pass begins, if nothing but its first load's hit (a
    /// page walk's load included): pending as its completion event, or handed over as it hit
    /// (`sim.short_hits`) with the core's next step or walk step pending.
    fn ff_first(&self, c: usize, now: u64) -> Option<Start> {
        let k = &self.cores[c];
        // A window load or a store that completed at its hit in this step stood in the
        // window or the store buffer as the pass began.
        let quiet = !k.done
            && !k.short_in_step
            && k.hit_store.is_none()
            && k.store_buffer.is_empty()
            && !k.store_outstanding
            && !k.stalled_load
            && !k.stalled_store
            && !k.waiting_for_completion
            && k.window.is_empty()
            && k.busy_until <= now;
        if !quiet {
            return None;
        }
        let (level, load) = match (k.load, k.hit_load, k.short_hit) {
            (Some(load), Some(hit), None) if k.load_outstanding && !k.stepping => {
                (hit.level, (load.addr, load.size))
            }
            // The step (or the walk's next step) that follows the hit is all that is queued.
            (None, None, Some(load)) if k.stepping != k.walk.is_some() => (HitLevel::L1, load),
            _ => return None,
        };
        Some(Start {
            level,
            load,
            walk: k.walk.as_ref().map(|w| {
                let entries = w.entries.iter().copied().collect();
                (w.req.addr, entries, w.pa, now - w.started)
            }),
        })
    }

    /// Core `c`'s L1, L2 and TLB contents in LRU order: two pass starts with equal
    /// signatures see the same hits, misses and victims from then on. `None` with an L1
    /// prefetcher, whose history a miss moves. The caches' part says only whether they
    /// changed since the last signature of them, so it compares with the mark before
    /// only where that mark took one: every signature is taken at a mark, and a pass start
    /// compares with the mark just before it.
    fn ff_signature(&mut self, c: usize) -> Option<Signature> {
        if self.caches[c].params.prefetch.kind != PrefetchKind::None {
            return None;
        }
        let mut tlb = Vec::new();
        self.tlb.lru_signature(c, &mut tlb);
        Some(Signature {
            caches_changed: self.caches[c].refresh_lru_signature(),
            tlb,
        })
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
        self.cores[c].miss_latency.stop_watching();
        if self.ff.cores[c].mark.take().is_some() {
            self.ff.marked -= 1;
        }
        self.ff.clean[c] = false;
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
                result = Err(SimError::check(
                    t,
                    format!(
                        "fast-forward: waking core {c}'s pass scheduled {ev:?}, not an event of \
                         the core (replay with sim.fast_forward = false)"
                    ),
                ));
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
        let ids = k * d.ids;
        let core = &mut self.cores[c];
        core.next_id += ids;
        core.accesses += k * d.accesses;
        core.load_issued_at += shift;
        core.load_sent_at += shift;
        core.last_progress += shift;
        if let Some(l) = core.load.as_mut() {
            l.id += ids;
        }
        if let Some(h) = core.hit_load.as_mut() {
            h.req.id += ids;
        }
        if let Some(w) = core.walk.as_mut() {
            w.started += shift;
        }
        core.miss_latency.add_passes(&d.latencies, k);
        let cache = &mut self.caches[c];
        cache.stats.l1_hits += k * d.l1_hits;
        cache.stats.l1_misses += k * d.l1_misses;
        cache.stats.l2_hits += k * d.l1_misses;
        for &(counter, runs) in &d.transitions {
            cache.transitions.add(counter, k * runs);
        }
        let t = self.tlb.stats_mut(c);
        t.hits += k * d.tlb.hits;
        t.misses += k * d.tlb.misses;
        t.walk_loads += k * d.tlb.walk_loads;
        t.walk_cycles += k * d.tlb.walk_cycles;
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
