//! The loops of [`super::ops`] as an out-of-order core runs them (`system.core_model =
//! "mlp"`): every load is [`Next::Independent`], issued without waiting for the loads
//! before it, and each store goes into the store buffer in program order once the loads
//! its value comes from have completed. The loop ends only when all of its loads have
//! completed and all of its stores have issued, so what follows it (a flag release, a
//! request's completion) stays after the copy, as it does on the blocking core.

use std::collections::VecDeque;

use crate::coherence::CoreReq;
use crate::sim::Next;
use crate::workload::SweepKind;

use super::ops::{add_lanes, combine_size, load, store, sweep_value, word};

/// How a word's store value follows from its loads' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    /// The first load's value (memcpy).
    Copied,
    /// The first load's value plus one (an update sweep).
    Incremented,
    /// Lane-wise sum of the two loads' values (a reduction's combine).
    Summed,
    /// A value of its own (a store sweep).
    Fixed(u64),
}

/// One word of a loop: up to two loads, then perhaps a store made of their values.
#[derive(Clone, Copy, Debug)]
struct Word {
    loads: [(u64, u8); 2],
    n_loads: u8,
    /// Loads issued so far, and their ids and values as they come.
    issued: u8,
    ids: [u64; 2],
    values: [Option<u64>; 2],
    store: Option<(u64, u8, Value)>,
}

impl Word {
    fn new(loads: &[(u64, u8)], store: Option<(u64, u8, Value)>) -> Word {
        let mut l = [(0, 0); 2];
        l[..loads.len()].copy_from_slice(loads);
        Word {
            loads: l,
            n_loads: loads.len() as u8,
            issued: 0,
            ids: [u64::MAX; 2],
            values: [None; 2],
            store,
        }
    }

    fn complete(&self) -> bool {
        self.issued == self.n_loads
            && self.values[..self.n_loads as usize]
                .iter()
                .all(Option::is_some)
    }

    fn store_value(&self, how: Value) -> u64 {
        let v = |k: usize| self.values[k].expect("a completed word's load value");
        match how {
            Value::Copied => v(0),
            Value::Incremented => v(0).wrapping_add(1),
            Value::Summed => add_lanes(v(0), v(1), self.store.map_or(8, |s| s.1)),
            Value::Fixed(x) => x,
        }
    }

    /// Whether this word's store writes any byte of `[a, a + size)`.
    fn stores_into(&self, a: u64, size: u8) -> bool {
        self.store
            .is_some_and(|(s, n, _)| s < a + size as u64 && a < s + n as u64)
    }
}

/// What the loop walks.
#[derive(Clone, Debug)]
enum Walk {
    Copy {
        src: u64,
        dst: u64,
        len: u64,
    },
    Sweep {
        at: u64,
        bytes: u64,
        stride: u64,
        kind: SweepKind,
        stamp: u64,
    },
    Combine {
        acc: u64,
        src: u64,
        len: u64,
    },
}

/// A loop in progress on an `mlp` core.
#[derive(Clone, Debug)]
pub struct Overlap {
    walk: Walk,
    off: u64,
    /// Words whose loads have begun to issue and whose store has not, in program order.
    words: VecDeque<Word>,
    /// The bytes `[lo, hi)` that cover the stores of every word queued since `words` was
    /// last empty: a load outside them passes no older store without a look at each word.
    stores: Option<(u64, u64)>,
    /// The word whose load the core is about to number ([`Overlap::issued`]).
    numbering: Option<(usize, usize)>,
}

impl Overlap {
    pub fn copy(src: u64, dst: u64, len: u64) -> Overlap {
        Overlap::new(Walk::Copy { src, dst, len })
    }

    /// A sweep of `bytes` at `at`; a zero stride is taken as 1.
    pub fn sweep(at: u64, bytes: u64, stride: u64, kind: SweepKind, stamp: u64) -> Overlap {
        let stride = stride.max(1);
        Overlap::new(Walk::Sweep {
            at,
            bytes,
            stride,
            kind,
            stamp,
        })
    }

    pub fn combine(acc: u64, src: u64, len: u64) -> Overlap {
        Overlap::new(Walk::Combine { acc, src, len })
    }

    fn new(walk: Walk) -> Overlap {
        Overlap {
            walk,
            off: 0,
            words: VecDeque::new(),
            stores: None,
            numbering: None,
        }
    }

    /// The next word of the walk, if any.
    fn next_word(&mut self) -> Option<Word> {
        let off = self.off;
        let (w, step) = match self.walk {
            Walk::Copy { src, dst, len } => {
                if off >= len {
                    return None;
                }
                let n = word(src + off, dst + off, len - off);
                let w = Word::new(&[(src + off, n)], Some((dst + off, n, Value::Copied)));
                (w, n as u64)
            }
            Walk::Sweep {
                at,
                bytes,
                stride,
                kind,
                stamp,
            } => {
                if off >= bytes {
                    return None;
                }
                let a = at + off;
                let w = match kind {
                    SweepKind::Load => Word::new(&[(a, 8)], None),
                    SweepKind::Store => {
                        Word::new(&[], Some((a, 8, Value::Fixed(sweep_value(a, stamp)))))
                    }
                    SweepKind::Update => Word::new(&[(a, 8)], Some((a, 8, Value::Incremented))),
                };
                (w, stride)
            }
            Walk::Combine { acc, src, len } => {
                if off >= len {
                    return None;
                }
                let n = combine_size(acc + off, src + off, len - off);
                let loads = [(acc + off, n), (src + off, n)];
                (
                    Word::new(&loads, Some((acc + off, n, Value::Summed))),
                    n as u64,
                )
            }
        };
        self.off += step;
        Some(w)
    }

    /// What the core does next; `None` when the loop is over.
    pub fn next(&mut self) -> Option<Next> {
        loop {
            // Stores leave in program order, each once its loads are in.
            if self.words.front().is_some_and(Word::complete) {
                let w = self.words.pop_front().expect("a front word");
                if self.words.is_empty() {
                    self.stores = None;
                }
                match w.store {
                    Some((a, n, how)) => return Some(store(a, n, w.store_value(how))),
                    None => continue,
                }
            }
            let pending = self.words.back().is_some_and(|w| w.issued < w.n_loads);
            if !pending {
                match self.next_word() {
                    Some(w) => {
                        if let Some((a, n, _)) = w.store {
                            let (lo, hi) = self.stores.unwrap_or((a, a));
                            self.stores = Some((lo.min(a), hi.max(a + u64::from(n))));
                        }
                        self.words.push_back(w);
                    }
                    None if self.words.is_empty() => return None,
                    None => return Some(Next::WaitForCompletion),
                }
                continue;
            }
            let i = self.words.len() - 1;
            let w = &self.words[i];
            let (a, n) = w.loads[w.issued as usize];
            let issued = w.issued;
            // A load may not pass an older store to its bytes that has not yet issued
            // (the store buffer's own order covers those that have).
            let near = self
                .stores
                .is_some_and(|(lo, hi)| a < hi && lo < a + u64::from(n));
            if near && self.words.iter().take(i).any(|o| o.stores_into(a, n)) {
                return Some(Next::WaitForCompletion);
            }
            self.numbering = Some((i, issued as usize));
            self.words[i].issued += 1;
            return Some(match load(a, n) {
                Next::Access(r) => Next::Independent(r),
                other => other,
            });
        }
    }

    /// The core numbered the load [`Overlap::next`] just gave it.
    pub fn issued(&mut self, id: u64) {
        if let Some((i, k)) = self.numbering.take() {
            self.words[i].ids[k] = id;
        }
    }

    /// Load `req` completed with `value`; false if it is not one of this loop's.
    pub fn completed(&mut self, req: &CoreReq, value: u64) -> bool {
        for w in self.words.iter_mut() {
            for k in 0..w.issued as usize {
                if w.ids[k] == req.id && w.values[k].is_none() {
                    w.values[k] = Some(value);
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coherence::AccessKind;

    /// Runs `o` with every load answered at once by `mem(addr)`, ids counted from 0.
    fn run(mut o: Overlap, mem: impl Fn(u64) -> u64) -> Vec<(AccessKind, u64, u64)> {
        let mut got = Vec::new();
        let mut id = 0;
        while let Some(n) = o.next() {
            match n {
                Next::Independent(r) => {
                    o.issued(id);
                    got.push((r.kind, r.addr, 0));
                    let r = CoreReq { id, ..r };
                    assert!(o.completed(&r, mem(r.addr)));
                    id += 1;
                }
                Next::Access(r) => got.push((r.kind, r.addr, r.value)),
                other => panic!("unexpected {other:?}"),
            }
        }
        got
    }

    #[test]
    fn a_copy_stores_each_loaded_word() {
        use AccessKind::*;
        let got = run(Overlap::copy(0x1000, 0x2004, 12), |a| a + 7);
        assert_eq!(
            got,
            vec![
                (Load, 0x1000, 0),
                (Store, 0x2004, 0x1007),
                (Load, 0x1004, 0),
                (Store, 0x2008, 0x100B),
                (Load, 0x1008, 0),
                (Store, 0x200C, 0x100F),
            ]
        );
    }

    #[test]
    fn loads_run_ahead_of_missing_values_and_stores_keep_order() {
        let mut o = Overlap::copy(0x1000, 0x2000, 32);
        let mut ids = Vec::new();
        for id in 0..4 {
            assert!(matches!(o.next(), Some(Next::Independent(_))));
            o.issued(id);
            ids.push(id);
        }
        assert_eq!(o.next(), Some(Next::WaitForCompletion));
        // The second word's value comes first: nothing may store before the first's.
        let r = |id| CoreReq {
            id,
            kind: AccessKind::Load,
            addr: 0,
            size: 8,
            value: 0,
        };
        assert!(o.completed(&r(1), 11));
        assert_eq!(o.next(), Some(Next::WaitForCompletion));
        assert!(o.completed(&r(0), 10));
        for (k, v) in [(0u64, 10u64), (1, 11)] {
            match o.next() {
                Some(Next::Access(s)) => assert_eq!((s.addr, s.value), (0x2000 + 8 * k, v)),
                other => panic!("{other:?}"),
            }
        }
        assert!(!o.completed(&r(9), 0));
    }

    #[test]
    fn a_load_waits_for_an_older_store_to_its_bytes() {
        // An update sweep with a stride under a word: each load reads the last store.
        let mut o = Overlap::sweep(0x1000, 16, 4, SweepKind::Update, 0);
        assert!(matches!(o.next(), Some(Next::Independent(_))));
        o.issued(0);
        assert_eq!(o.next(), Some(Next::WaitForCompletion));
    }

    /// Core 0 runs `o` on physical addresses, polling `poll` first if given; the rest
    /// finish at once. Records when the poll's value came and when core 0 next asked.
    struct OneCore {
        o: Overlap,
        poll: Option<u64>,
        polled_at: Option<u64>,
        asked_after_poll: Option<u64>,
    }

    impl crate::sim::Driver for OneCore {
        fn next(&mut self, core: usize, now: u64) -> Result<Next, String> {
            if core != 0 {
                return Ok(Next::Done);
            }
            if self.polled_at.is_some() && self.asked_after_poll.is_none() {
                self.asked_after_poll = Some(now);
            }
            if let Some(a) = self.poll.take() {
                return Ok(load(a, 8));
            }
            Ok(self.o.next().unwrap_or(Next::Done))
        }

        fn completed(
            &mut self,
            _core: usize,
            c: &crate::coherence::Completed,
            now: u64,
        ) -> Result<(), String> {
            if c.req.kind == AccessKind::Load && !self.o.completed(&c.req, c.value) {
                self.polled_at = Some(now);
            }
            Ok(())
        }

        fn independent_issued(&mut self, _core: usize, id: u64) {
            self.o.issued(id);
        }
    }

    /// (cycles, L1 misses, L2 misses served by memory) of a 64-line memcpy from cold
    /// memory on core 0, after a poll of another cold line.
    fn copy_run(
        model: crate::config::CoreModel,
        regs: usize,
        window: usize,
    ) -> (u64, u64, u64, OneCore) {
        let mut cfg = crate::config::SystemConfig::default();
        cfg.system.cores = 4;
        cfg.system.core_model = model;
        cfg.system.outstanding_loads = regs;
        cfg.system.window = window;
        let mut sim =
            crate::sim::Sim::new(&cfg, crate::coherence::Protocol::baseline(), 1).unwrap();
        let mut d = OneCore {
            o: Overlap::copy(0x10_0000, 0x20_0000, 64 * 64),
            poll: Some(0x30_0000),
            polled_at: None,
            asked_after_poll: None,
        };
        let cycles = sim.run(&mut d).unwrap();
        let st = sim.stats(0.0);
        let int = |n: &str| match st.get(n).unwrap().value {
            crate::stats::StatValue::Int(v) => v,
            crate::stats::StatValue::Float(f) => f as u64,
        };
        let misses = int("system.total.l1d.misses");
        let memory = int("system.total.l2.misses_memory");
        (cycles, misses, memory, d)
    }

    #[test]
    fn an_mlp_core_copies_64_lines_from_memory_in_far_fewer_cycles() {
        use crate::config::CoreModel::*;
        let (blocking, b_misses, b_memory, _) = copy_run(Blocking, 4, 126);
        let (mlp, m_misses, m_memory, _) = copy_run(Mlp, 4, 126);
        assert_eq!((m_misses, m_memory), (b_misses, b_memory));
        assert!(
            b_memory >= 64 * 2,
            "source and destination lines come from memory"
        );
        // Four load misses in flight instead of one; the store buffer still drains one
        // store miss at a time, which bounds the gain (about a third fewer cycles).
        assert!(mlp * 4 < blocking * 3, "mlp {mlp} blocking {blocking}");
        // One miss register and a window of one access are the blocking core.
        let (one, o_misses, _, _) = copy_run(Mlp, 1, 1);
        assert_eq!((one, o_misses), (blocking, b_misses));
    }

    #[test]
    fn a_poll_still_waits_for_its_value_on_an_mlp_core() {
        let (_, _, _, d) = copy_run(crate::config::CoreModel::Mlp, 4, 126);
        let (polled, asked) = (d.polled_at.unwrap(), d.asked_after_poll.unwrap());
        // The poll misses to memory; the core asks for its next access only after.
        assert!(polled > 35, "the poll came back at {polled}");
        assert_eq!(asked, polled + 1);
    }
}
