//! Discrete-event engine: a deterministic priority queue of timed events.
//!
//! Events are ordered by `(time, tie, seq)`: `tie` is the event's own rank among
//! the events of its cycle ([`Tie`]), `seq` a per-queue insertion counter. Two
//! events of one cycle and one tie therefore pop in the order they were
//! scheduled, which makes every simulation run reproducible; events of different
//! ties pop in tie order whenever they were scheduled, so an owner of a tie can
//! schedule its events earlier or later (or skip some) without moving anyone
//! else's.
//!
//! The queue is a timing wheel: one bucket per cycle of a window of [`WHEEL`]
//! cycles starting at `now`, kept in `(tie, seq)` order (linked lists threaded
//! through one node array, so a freed node is reused while still in the host's
//! cache; nearly every event joins its bucket at the tail), and a binary heap
//! for events beyond the window. Nearly every event of the simulator (cache, network and memory
//! latencies) lands inside the window, so scheduling and popping are O(1).
//! Order stays exactly `(time, tie, seq)` because of one invariant: every
//! pending event earlier than `now + WHEEL` sits in its bucket. Events move from
//! the heap into the window as soon as `now` advances far enough, so they are
//! queued before any later-scheduled event of the same cycle and tie.
//!
//! Time is measured in core cycles ([`Cycle`]); at 1 GHz one cycle is 1 ns.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in core cycles.
pub type Cycle = u64;

/// Cycles covered by the wheel (a power of two).
pub const WHEEL: usize = 256;
const WORDS: usize = WHEEL / 64;
const _: () = assert!(
    WORDS <= 64,
    "the summary word has one bit per occupancy word"
);

/// Where an event stands among the events of its cycle: lower ties pop first, equal ties
/// in the order they were scheduled.
pub trait Tie {
    fn tie(&self) -> u16;
}

/// Bits of a far event's key below its tie: its insertion counter.
const SEQ_BITS: u32 = 48;

/// One heap entry: a packed `(time << 64) | (tie << 48) | seq` key plus the payload.
struct Entry<E> {
    key: u128,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the smallest key first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// End of a bucket list or of the free list.
const NIL: u32 = u32::MAX;

/// The first and last node of one cycle's events (`NIL` when it has none).
#[derive(Clone, Copy)]
struct Bucket {
    head: u32,
    tail: u32,
}

const EMPTY: Bucket = Bucket {
    head: NIL,
    tail: NIL,
};

/// A wheel event and the next node of its bucket (or of the free list).
#[derive(Clone, Copy)]
struct Node<E> {
    ev: E,
    next: u32,
}

/// A min-priority queue of events keyed on `(time, tie, insertion order)`.
pub struct EventQueue<E: Copy + Tie> {
    /// Bucket `t % WHEEL` lists, first to last, the events of cycle `t` for `t` in
    /// `[now, now + WHEEL)`, in `(tie, seq)` order. A bucket's two ends share a host
    /// cache line.
    buckets: Box<[Bucket; WHEEL]>,
    /// Per bucket, the node the last out-of-order insertion placed (`NIL` when none or
    /// popped since): a later one of an equal or greater tie resumes its walk there. At
    /// 256 cores a cycle holds hundreds of events, and a run of insertions in tie order
    /// below the tail walked from the head each time.
    fingers: Box<[u32; WHEEL]>,
    nodes: Vec<Node<E>>,
    free: u32,
    /// Bit `b` set when bucket `b` is non-empty.
    occupied: [u64; WORDS],
    /// Bit `w` set when `occupied[w]` is non-zero: finding the next bucket reads two words.
    summary: u64,
    /// Events at `now + WHEEL` or later.
    far: BinaryHeap<Entry<E>>,
    /// Time of the earliest far event (`Cycle::MAX` when there is none), so advancing
    /// time does not peek into the heap.
    far_min: Cycle,
    seq: u64,
    now: Cycle,
    len: usize,
    /// Largest `len` reached.
    peak: usize,
}

impl<E: Copy + Tie> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Tie> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue at time 0 with room for `n` events beyond the wheel's window.
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            buckets: Box::new([EMPTY; WHEEL]),
            fingers: Box::new([NIL; WHEEL]),
            nodes: Vec::with_capacity(1024),
            free: NIL,
            occupied: [0; WORDS],
            summary: 0,
            far: BinaryHeap::with_capacity(n),
            far_min: Cycle::MAX,
            seq: 0,
            now: 0,
            len: 0,
            peak: 0,
        }
    }

    /// Time of the most recently popped event (0 before the first pop).
    #[inline]
    pub fn now(&self) -> Cycle {
        self.now
    }

    #[inline]
    fn push_bucket(&mut self, at: Cycle, ev: E) {
        let b = at as usize & (WHEEL - 1);
        let node = Node { ev, next: NIL };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = node;
            i
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        match self.buckets[b].tail {
            NIL => {
                self.buckets[b].head = i;
                self.buckets[b].tail = i;
                self.occupied[b / 64] |= 1 << (b % 64);
                self.summary |= 1 << (b / 64);
            }
            t if self.nodes[t as usize].ev.tie() <= ev.tie() => {
                self.nodes[t as usize].next = i;
                self.buckets[b].tail = i;
            }
            _ => self.insert_before_greater_tie(b, i),
        }
    }

    /// Links node `i` into bucket `b` before the first event of a greater tie (the tail's
    /// tie is greater, so there is one).
    #[cold]
    #[inline(never)]
    fn insert_before_greater_tie(&mut self, b: usize, i: u32) {
        let tie = self.nodes[i as usize].ev.tie();
        let mut prev = NIL;
        let mut cur = self.buckets[b].head;
        // Every node before the finger has a tie at most the finger's.
        let f = self.fingers[b];
        if f != NIL && self.nodes[f as usize].ev.tie() <= tie {
            prev = f;
            cur = self.nodes[f as usize].next;
        }
        self.fingers[b] = i;
        while self.nodes[cur as usize].ev.tie() <= tie {
            prev = cur;
            cur = self.nodes[cur as usize].next;
        }
        self.nodes[i as usize].next = cur;
        match prev {
            NIL => self.buckets[b].head = i,
            p => self.nodes[p as usize].next = i,
        }
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug
    /// (checked in debug builds; release builds run it at `now`).
    #[inline(always)]
    pub fn schedule(&mut self, at: Cycle, ev: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: at {at}, now {}",
            self.now
        );
        let at = at.max(self.now);
        self.len += 1;
        self.peak = self.peak.max(self.len);
        if at - self.now < WHEEL as Cycle {
            self.push_bucket(at, ev);
        } else {
            self.push_far(at, ev);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_far(&mut self, at: Cycle, ev: E) {
        debug_assert!(self.seq < 1 << SEQ_BITS, "far-event counter overflow");
        let key = ((at as u128) << 64) | ((ev.tie() as u128) << SEQ_BITS) | self.seq as u128;
        self.seq += 1;
        self.far.push(Entry { key, ev });
        self.far_min = self.far_min.min(at);
    }

    /// Moves every far event earlier than `horizon` into its bucket, in `(time, tie, seq)`
    /// order.
    #[cold]
    #[inline(never)]
    fn pull_far(&mut self, horizon: Cycle) {
        while self
            .far
            .peek()
            .is_some_and(|e| ((e.key >> 64) as Cycle) < horizon)
        {
            let e = self.far.pop().expect("peeked");
            self.push_bucket((e.key >> 64) as Cycle, e.ev);
        }
        self.far_min = self
            .far
            .peek()
            .map_or(Cycle::MAX, |e| (e.key >> 64) as Cycle);
    }

    /// Schedule `ev` `delay` cycles after [`now`](Self::now).
    #[inline]
    pub fn schedule_in(&mut self, delay: Cycle, ev: E) {
        self.schedule(self.now.saturating_add(delay), ev);
    }

    /// The first occupied bucket's time in `(now, now + WHEEL)`, if any.
    #[inline]
    fn next_in_window(&self) -> Option<Cycle> {
        let nb = self.now as usize & (WHEEL - 1);
        let start = (nb + 1) & (WHEEL - 1);
        let w0 = start / 64;
        // Buckets from `start` to the end of its word, then later words, then (wrapping)
        // the words up to and including `w0`, whose bits at or above `start` are known clear.
        let bits = self.occupied[w0] & (!0u64 << (start % 64));
        let b = if bits != 0 {
            w0 * 64 + bits.trailing_zeros() as usize
        } else {
            let later = self.summary & (!1u64 << w0);
            let w = if later != 0 {
                later.trailing_zeros() as usize
            } else if self.summary != 0 {
                self.summary.trailing_zeros() as usize
            } else {
                return None;
            };
            w * 64 + self.occupied[w].trailing_zeros() as usize
        };
        let delta = (b + WHEEL - nb) & (WHEEL - 1);
        Some(self.now + delta as Cycle)
    }

    /// Remove the earliest event, advance `now` to its time and return it.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Cycle, E)> {
        let mut b = self.now as usize & (WHEEL - 1);
        if self.buckets[b].head == NIL {
            if self.len == 0 {
                return None;
            }
            let t = self.next_in_window().unwrap_or(self.far_min);
            self.now = t;
            // Keep the invariant: pull every far event now inside the window.
            if self.far_min < t + WHEEL as Cycle {
                self.pull_far(t + WHEEL as Cycle);
            }
            b = t as usize & (WHEEL - 1);
        }
        let i = self.buckets[b].head;
        debug_assert_ne!(i, NIL, "occupied bucket");
        let Node { ev, next } = self.nodes[i as usize];
        self.buckets[b].head = next;
        if self.fingers[b] == i {
            self.fingers[b] = NIL;
        }
        if next == NIL {
            self.buckets[b].tail = NIL;
            let w = &mut self.occupied[b / 64];
            *w &= !(1 << (b % 64));
            if *w == 0 {
                self.summary &= !(1 << (b / 64));
            }
        }
        self.nodes[i as usize].next = self.free;
        self.free = i;
        self.len -= 1;
        Some((self.now, ev))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Cycle> {
        if self.len == 0 {
            None
        } else if self.buckets[self.now as usize & (WHEEL - 1)].head != NIL {
            Some(self.now)
        } else {
            self.next_in_window().or(Some(self.far_min))
        }
    }

    /// Time and tie of the earliest pending event.
    pub fn peek_key(&self) -> Option<(Cycle, u16)> {
        let t = self.peek_time()?;
        if t - self.now >= WHEEL as Cycle {
            return self.far.peek().map(|e| (t, e.ev.tie()));
        }
        let head = self.buckets[t as usize & (WHEEL - 1)].head;
        Some((t, self.nodes[head as usize].ev.tie()))
    }

    /// Takes every pending event of tie `tie` out of the window (events beyond it stay),
    /// in `(time, seq)` order.
    pub fn take_tie(&mut self, tie: u16) -> Vec<(Cycle, E)> {
        let mut out = Vec::new();
        for d in 0..WHEEL as Cycle {
            let at = self.now + d;
            let b = at as usize & (WHEEL - 1);
            if self.occupied[b / 64] & (1 << (b % 64)) == 0 {
                continue;
            }
            self.fingers[b] = NIL;
            let (mut prev, mut cur) = (NIL, self.buckets[b].head);
            while cur != NIL {
                let Node { ev, next } = self.nodes[cur as usize];
                if ev.tie() == tie {
                    out.push((at, ev));
                    match prev {
                        NIL => self.buckets[b].head = next,
                        p => self.nodes[p as usize].next = next,
                    }
                    if self.buckets[b].tail == cur {
                        self.buckets[b].tail = prev;
                    }
                    self.nodes[cur as usize].next = self.free;
                    self.free = cur;
                    self.len -= 1;
                } else {
                    prev = cur;
                }
                cur = next;
            }
            if self.buckets[b].head == NIL {
                self.occupied[b / 64] &= !(1 << (b % 64));
                if self.occupied[b / 64] == 0 {
                    self.summary &= !(1 << (b / 64));
                }
            }
        }
        out
    }

    /// Sets the time of an empty queue to `at`, earlier or later.
    pub fn restart_at(&mut self, at: Cycle) {
        assert!(self.is_empty(), "restart_at on a queue with events pending");
        self.now = at;
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no events are pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Largest number of events pending at once so far.
    #[inline]
    pub fn peak_len(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain payloads all share tie 0: insertion order alone breaks ties.
    macro_rules! untied {
        ($($t:ty),*) => {$(impl Tie for $t { fn tie(&self) -> u16 { 0 } })*};
    }
    untied!(u64, u32, char, ());

    /// A payload with a tie of its own: `(tie, id)`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    struct Tied(u16, u64);

    impl Tie for Tied {
        fn tie(&self) -> u16 {
            self.0
        }
    }

    #[test]
    fn take_tie_removes_one_ties_events_and_keeps_the_rest_in_order() {
        let mut q = EventQueue::new();
        let evs = [(3, 1), (3, 2), (5, 1), (5, 0), (9, 2), (9, 1), (3, 1)];
        for (i, &(t, tie)) in evs.iter().enumerate() {
            q.schedule(t, Tied(tie, i as u64));
        }
        q.schedule(WHEEL as Cycle + 40, Tied(1, 99));
        let taken = q.take_tie(1);
        let ids: Vec<u64> = taken.iter().map(|(_, e)| e.1).collect();
        assert_eq!(ids, vec![0, 6, 2, 5]);
        assert_eq!(taken[2].0, 5);
        assert_eq!(q.len(), 4);
        for &(t, ev) in &taken {
            q.schedule(t, ev);
        }
        let order: Vec<(Cycle, u64)> =
            std::iter::from_fn(|| q.pop().map(|(t, e)| (t, e.1))).collect();
        assert_eq!(
            order,
            vec![
                (3, 0),
                (3, 6),
                (3, 1),
                (5, 3),
                (5, 2),
                (9, 5),
                (9, 4),
                (WHEEL as Cycle + 40, 99)
            ]
        );
        q.restart_at(2);
        q.schedule(2, Tied(0, 7));
        assert_eq!(q.pop(), Some((2, Tied(0, 7))));
    }

    #[test]
    fn ties_pop_in_tie_order_whenever_scheduled() {
        let mut q = EventQueue::new();
        for (i, &tie) in [3u16, 0, 2, 0, 3, 1, 0].iter().enumerate() {
            q.schedule(4, Tied(tie, i as u64));
        }
        // Beyond the window too, and pulled into it later.
        for (i, &tie) in [2u16, 0, 2].iter().enumerate() {
            q.schedule(WHEEL as Cycle + 9, Tied(tie, 10 + i as u64));
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        let ids: Vec<u64> = order.iter().map(|e| e.1).collect();
        assert_eq!(ids, vec![1, 3, 6, 5, 2, 0, 4, 11, 10, 12]);
    }

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        for &t in &[50u64, 3, 17, 0, 99, 17, 4] {
            q.schedule(t, t);
        }
        let mut out = Vec::new();
        while let Some((t, e)) = q.pop() {
            assert_eq!(t, e);
            assert_eq!(q.now(), t);
            out.push(t);
        }
        assert_eq!(out, vec![0, 3, 4, 17, 17, 50, 99]);
        assert_eq!(q.peak_len(), 7);
        assert!(q.is_empty());
    }

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100u32 {
            q.schedule(10, i);
        }
        q.schedule(5, 1000);
        assert_eq!(q.peek_time(), Some(5));
        assert_eq!(q.pop(), Some((5, 1000)));
        for i in 0..100u32 {
            assert_eq!(q.pop(), Some((10, i)));
        }
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn schedule_in_is_relative_to_now() {
        let mut q = EventQueue::with_capacity(4);
        q.schedule(7, 'a');
        assert_eq!(q.pop(), Some((7, 'a')));
        q.schedule_in(3, 'b');
        q.schedule_in(0, 'c');
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop(), Some((7, 'c')));
        assert_eq!(q.pop(), Some((10, 'b')));
    }

    #[test]
    fn deterministic_across_runs() {
        fn run() -> Vec<(Cycle, u32)> {
            let mut q = EventQueue::new();
            let mut x: u64 = 12345;
            let mut out = Vec::new();
            for i in 0..50u32 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                q.schedule(x >> 60, i);
            }
            let mut n = 50u32;
            while let Some((t, e)) = q.pop() {
                out.push((t, e));
                if n < 500 {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    q.schedule_in(x >> 61, n);
                    n += 1;
                }
            }
            out
        }
        let a = run();
        assert_eq!(a, run());
        assert!(a.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    #[should_panic]
    #[cfg(debug_assertions)]
    fn scheduling_in_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(10, ());
        q.pop();
        q.schedule(9, ());
    }

    /// The wheel against a reference `(time, tie, seq)` sort, with delays that straddle
    /// the window and ties at every distance.
    #[test]
    fn matches_a_reference_order_across_the_window() {
        let mut q = EventQueue::new();
        let mut reference: Vec<(Cycle, Tied)> = Vec::new();
        let mut x: u64 = 99;
        let mut next = 0u64;
        let mut rand = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut popped = Vec::new();
        let mut expected = Vec::new();
        for round in 0..20_000u64 {
            let burst = rand(4);
            for _ in 0..burst {
                let d = match rand(5) {
                    0 => 0,
                    1 => rand(8),
                    2 => rand(WHEEL as u64 * 3),
                    3 => WHEEL as u64 - 1 + rand(3),
                    _ => rand(200),
                };
                let ev = Tied(rand(4) as u16, next);
                q.schedule_in(d, ev);
                reference.push((q.now() + d, ev));
                next += 1;
            }
            if round % 997 == 0 {
                // Taking a tie out of the window (the fast-forward's) leaves the order of
                // the rest, and of later insertions, intact.
                let tie = rand(4) as u16;
                let horizon = q.now() + WHEEL as Cycle;
                let mut want: Vec<(Cycle, Tied)> = reference
                    .iter()
                    .copied()
                    .filter(|&(t, ev)| ev.0 == tie && t < horizon)
                    .collect();
                want.sort_by_key(|&(t, ev)| (t, ev.1));
                reference.retain(|&(t, ev)| !(ev.0 == tie && t < horizon));
                assert_eq!(q.take_tie(tie), want);
            }
            if round % 3 != 0 {
                // Reference: smallest (time, tie, seq); seq is the payload's id here.
                if let Some(i) = (0..reference.len()).min_by_key(|&i| reference[i]) {
                    expected.push(reference.swap_remove(i));
                }
                assert_eq!(q.peek_time(), expected.last().map(|e| e.0));
                popped.extend(q.pop());
            }
        }
        while let Some(i) = (0..reference.len()).min_by_key(|&i| reference[i]) {
            expected.push(reference.swap_remove(i));
            popped.extend(q.pop());
        }
        assert_eq!(popped, expected);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }
}
