//! Discrete-event engine: a deterministic priority queue of timed events.
//!
//! Events are ordered by `(time, seq)`, where `seq` is a per-queue insertion
//! counter. Two events scheduled for the same cycle therefore pop in the order
//! they were scheduled, which makes every simulation run reproducible.
//!
//! Time is measured in core cycles ([`Cycle`]); at 1 GHz one cycle is 1 ns.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in core cycles.
pub type Cycle = u64;

/// One heap entry: a packed `(time << 64) | seq` key plus the payload.
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

/// A min-heap of events keyed on `(time, insertion order)`.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Cycle,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue at time 0 with room for `n` events.
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(n),
            seq: 0,
            now: 0,
            popped: 0,
        }
    }

    /// Time of the most recently popped event (0 before the first pop).
    #[inline]
    pub fn now(&self) -> Cycle {
        self.now
    }

    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug
    /// (checked in debug builds).
    #[inline]
    pub fn schedule(&mut self, at: Cycle, ev: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: at {at}, now {}",
            self.now
        );
        let key = ((at as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.heap.push(Entry { key, ev });
    }

    /// Schedule `ev` `delay` cycles after [`now`](Self::now).
    #[inline]
    pub fn schedule_in(&mut self, delay: Cycle, ev: E) {
        self.schedule(self.now.saturating_add(delay), ev);
    }

    /// Remove the earliest event, advance `now` to its time and return it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Cycle, E)> {
        let Entry { key, ev } = self.heap.pop()?;
        let t = (key >> 64) as Cycle;
        self.now = t;
        self.popped += 1;
        Some((t, ev))
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Cycle> {
        self.heap.peek().map(|e| (e.key >> 64) as Cycle)
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no events are pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Total number of events popped so far.
    #[inline]
    pub fn events_popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(q.events_popped(), 7);
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
}
