//! The CMP model's actions: which are candidates in a state, and what each does to a clone
//! of the controllers.

use crate::coherence::{
    AccessKind, CacheCtrl, Completed, CoreOutcome, CoreReq, Delivery, MopedDone, MopedKind,
    MopedReq, NodeId, Outgoing,
};
use crate::protocol::TransitionCounts;
use std::rc::Rc;

use super::super::report::FailureKind;
use super::state::{msg_text, Action, Fault, Fired, Firing, MopedPending, Pending, State};
use super::CmpModel;

/// What the controllers did in one step: the messages they sent and the core requests
/// they completed.
#[derive(Default)]
struct Effects {
    out: Vec<Outgoing>,
    done: Vec<Completed>,
}

impl CmpModel<'_> {
    /// The candidate actions from `st`, in the order the search tries them; a candidate
    /// that stalls turns out not enabled when taken.
    pub(super) fn enabled_candidates(&self, st: &State, v: &mut Vec<Action>) {
        for core in 0..self.cfg.caches {
            for addr in 0..self.cfg.addrs.len() {
                if st.pending[core].is_none() {
                    self.core_candidates(core as u8, addr as u8, v);
                }
                if core < self.cfg.moped_cores && st.moped[core].is_none() {
                    self.moped_candidates(core as u8, addr as u8, v);
                }
                let c = &st.caches[core];
                let s = c.state(self.cfg.addrs[addr]);
                if s != self.cache_i && self.l2.is_stable(s) {
                    v.push(Action::Evict {
                        core: core as u8,
                        addr: addr as u8,
                    });
                }
            }
        }
        for i in 0..st.net.len() {
            if i > 0 && st.net[i] == st.net[i - 1] {
                continue;
            }
            v.push(Action::Deliver { index: i as u16 });
        }
    }

    fn core_candidates(&self, core: u8, addr: u8, v: &mut Vec<Action>) {
        v.push(Action::Load { core, addr });
        for &value in &self.cfg.values {
            v.push(Action::Store { core, addr, value });
        }
    }

    fn moped_candidates(&self, core: u8, addr: u8, v: &mut Vec<Action>) {
        let moped = |kind, value| Action::Moped {
            core,
            addr,
            kind,
            value,
        };
        v.push(moped(MopedKind::Read, 0));
        for &value in &self.cfg.values {
            v.push(moped(MopedKind::Own, value));
            if self.has_fill {
                v.push(moped(MopedKind::Fill, value));
            }
        }
    }

    /// Records the cells whose counters in `counts` counted, and sets them back to zero.
    fn collect_fired(
        &self,
        node: NodeId,
        dir: bool,
        counts: &mut TransitionCounts,
        fired: &mut Vec<Fired>,
    ) {
        let m = if dir { &self.dirm } else { &self.l2 };
        let ne = m.events().len();
        counts.drain_counted(|k| {
            let (st, ev) = m.counted_cell(k);
            let cell = st as usize * ne + ev as usize;
            fired.push(Fired { node, dir, cell });
        });
    }

    /// Runs `f` on cache controller `core` with its transitions counted in `fired`'s
    /// counters, and records the cells that fired. Stored states keep no counters, so they
    /// stay cheap to clone.
    fn counted<R>(
        &self,
        c: &mut Rc<CacheCtrl>,
        core: usize,
        fired: &mut Firing,
        f: impl FnOnce(&mut CacheCtrl) -> R,
    ) -> R {
        // The controller this step changes is the state's own from here on.
        let c = Rc::make_mut(c);
        self.counted_on(c, core as NodeId, false, |c| &mut c.transitions, fired, f)
    }

    /// Runs `f` on controller `ctrl` (node `node`, the directory when `dir`) with the
    /// counters `transitions` finds in it swapped for `fired`'s, kept at zero between steps
    /// and sized at their first use, then records the cells that fired.
    fn counted_on<C, R>(
        &self,
        ctrl: &mut C,
        node: NodeId,
        dir: bool,
        transitions: fn(&mut C) -> &mut TransitionCounts,
        fired: &mut Firing,
        f: impl FnOnce(&mut C) -> R,
    ) -> R {
        let (machine, kept) = if dir {
            (&self.dirm, &mut fired.dir)
        } else {
            (&self.l2, &mut fired.cache)
        };
        if kept.is_empty() {
            *kept = TransitionCounts::new(machine.n_counters());
        }
        std::mem::swap(transitions(ctrl), kept);
        let r = f(ctrl);
        std::mem::swap(transitions(ctrl), kept);
        self.collect_fired(node, dir, kept, &mut fired.cells);
        r
    }

    /// Applies one action to a clone of `st`, made in a spent state of `spare` when it
    /// holds one (its buffers reused). `Ok(None)`: the action is not enabled (the clone
    /// goes back to `spare`).
    pub(super) fn step(
        &self,
        st: &State,
        a: Action,
        fired: &mut Firing,
        spare: &mut Vec<State>,
    ) -> Result<Option<State>, Fault> {
        let mut s = match spare.pop() {
            Some(mut s) => {
                s.clone_from(st);
                s
            }
            None => st.clone(),
        };
        let mut fx = Effects::default();
        fired.cells.clear();
        let taken = match a {
            Action::Load { core, addr } => self.access(&mut s, core, addr, None, fired, &mut fx),
            Action::Store { core, addr, value } => {
                self.access(&mut s, core, addr, Some(value), fired, &mut fx)
            }
            Action::Evict { core, addr } => self.evict(&mut s, core, addr, fired, &mut fx),
            Action::Moped {
                core,
                addr,
                kind,
                value,
            } => self.moped_request(&mut s, core, addr, kind, value, fired, &mut fx),
            Action::Deliver { index } => self.deliver(&mut s, index, fired, &mut fx),
        }?;
        // Completions are attributed to the core that acted or received.
        let Some(completing) = taken else {
            spare.push(s);
            return Ok(None);
        };
        self.complete_core(&mut s, completing, &fx.done)?;
        if completing < self.cfg.caches {
            // The cache that completes is the one the step changed: already the state's own.
            let answers: Vec<MopedDone> = Rc::make_mut(&mut s.caches[completing])
                .take_moped_done()
                .collect();
            let from_network = matches!(a, Action::Deliver { .. });
            for d in answers {
                self.moped_completion(&mut s, completing, d, from_network)?;
            }
        }
        for p in s.moped.iter_mut().flatten() {
            p.seen |= 1 << s.ghost[p.addr as usize];
        }
        for o in fx.out {
            let pos = s.net.partition_point(|m| *m <= o.msg);
            s.net.insert(pos, o.msg);
        }
        Ok(Some(s))
    }

    /// A core loads (`store` is `None`) or stores byte 0 of an address. Returns the core,
    /// or `None` when the request stalls.
    fn access(
        &self,
        s: &mut State,
        core: u8,
        addr: u8,
        store: Option<u8>,
        fired: &mut Firing,
        fx: &mut Effects,
    ) -> Result<Option<usize>, Fault> {
        let core = core as usize;
        let value = store.unwrap_or(0);
        let req = CoreReq {
            id: 0,
            kind: if store.is_some() {
                AccessKind::Store
            } else {
                AccessKind::Load
            },
            addr: self.cfg.addrs[addr as usize],
            size: 1,
            value: value as u64,
        };
        let r = self.counted(&mut s.caches[core], core, fired, |c| {
            c.core_request(req, &mut fx.out, &mut fx.done)
        });
        match r? {
            CoreOutcome::Stalled => return Ok(None),
            CoreOutcome::Hit(_) if fx.done.len() != 1 => {
                return Err(Fault::mismatch(format!(
                    "core {core}: a hit produced {} completions",
                    fx.done.len()
                )));
            }
            CoreOutcome::Miss if !fx.done.is_empty() => {
                return Err(Fault::mismatch(format!(
                    "core {core}: a miss completed at once"
                )));
            }
            // A hit's completion then matches an outstanding request like a miss's.
            CoreOutcome::Hit(_) | CoreOutcome::Miss => {}
        }
        let store = store.is_some();
        s.pending[core] = Some(Pending { store, addr, value });
        Ok(Some(core))
    }

    fn evict(
        &self,
        s: &mut State,
        core: u8,
        addr: u8,
        fired: &mut Firing,
        fx: &mut Effects,
    ) -> Result<Option<usize>, Fault> {
        let core = core as usize;
        let line = self.cfg.addrs[addr as usize];
        let r = self.counted(&mut s.caches[core], core, fired, |c| {
            c.evict(line, &mut fx.out, &mut fx.done)
        });
        Ok(r?.then_some(core))
    }

    /// A core's MOPED reads, owns or fills a line.
    #[allow(clippy::too_many_arguments)]
    fn moped_request(
        &self,
        s: &mut State,
        core: u8,
        addr: u8,
        kind: MopedKind,
        value: u8,
        fired: &mut Firing,
        fx: &mut Effects,
    ) -> Result<Option<usize>, Fault> {
        let core = core as usize;
        let line = self.cfg.addrs[addr as usize];
        let mut data = [0u8; 64];
        data[0] = value;
        // An own stores byte 0 alone (a receive line the buffer covers in part), a
        // fill the whole line.
        let write = match kind {
            MopedKind::Read => None,
            MopedKind::Own => Some((data, 1)),
            MopedKind::Fill => Some((data, u64::MAX)),
        };
        let req = MopedReq {
            kind,
            addr: line,
            write,
            page_table: false,
        };
        let r = self.counted(&mut s.caches[core], core, fired, |c| {
            c.moped_request(req, &mut fx.out, &mut fx.done)
        });
        if r? == CoreOutcome::Stalled {
            return Ok(None);
        }
        s.moped[core] = Some(MopedPending {
            kind,
            addr,
            value,
            seen: 1 << s.ghost[addr as usize],
        });
        Ok(Some(core))
    }

    /// Delivers `net[index]` to its cache or to the directory.
    fn deliver(
        &self,
        s: &mut State,
        index: u16,
        fired: &mut Firing,
        fx: &mut Effects,
    ) -> Result<Option<usize>, Fault> {
        let m = s.net.remove(index as usize);
        let dst = m.dst as usize;
        let before = self.copy_snapshot(s, &m);
        let r = if dst < self.cfg.caches {
            self.counted(&mut s.caches[dst], dst, fired, |c| {
                c.deliver(&m, &mut fx.out, &mut fx.done)
            })
        } else if dst == self.cfg.caches {
            let dir = Rc::make_mut(&mut s.dir);
            self.counted_on(
                dir,
                dst as NodeId,
                true,
                |d| &mut d.transitions,
                fired,
                |d| d.deliver(&m, &mut fx.out),
            )
        } else {
            return Err(Fault::new(
                FailureKind::InvalidTransition,
                format!("message {} sent to unknown node {dst}", msg_text(&m)),
            ));
        };
        if r? == Delivery::Stalled {
            return Ok(None);
        }
        if let Some(before) = before {
            self.check_copy(s, &m, before, &fx.out)?;
        }
        Ok(Some(dst))
    }

    /// Matches the core completions of a step against the outstanding request of `core`
    /// and checks a load's value against the ghost.
    fn complete_core(&self, s: &mut State, core: usize, done: &[Completed]) -> Result<(), Fault> {
        for c in done {
            if core >= self.cfg.caches {
                return Err(Fault::mismatch(
                    "the directory produced a core completion".into(),
                ));
            }
            let Some(ai) = self.addr_index(c.req.addr & !63) else {
                return Err(Fault::mismatch(format!(
                    "core {core}: completion for unknown address {:#x}",
                    c.req.addr
                )));
            };
            let store = c.req.kind == AccessKind::Store;
            match s.pending[core] {
                Some(p) if p.store == store && p.addr as usize == ai && (!store || p.value as u64 == c.req.value) => {}
                other => {
                    return Err(Fault::mismatch(format!(
                        "core {core}: completion of a {} to {:#x} while the outstanding request is {:?}",
                        if store { "store" } else { "load" },
                        c.req.addr,
                        other
                    )))
                }
            }
            s.pending[core] = None;
            if store {
                s.ghost[ai] = c.req.value as u8;
            } else if c.value != s.ghost[ai] as u64 {
                return Err(Fault::new(
                    FailureKind::DataValue,
                    format!(
                        "core {core} loaded {} from {:#x}, but the last value written is {}",
                        c.value, self.cfg.addrs[ai], s.ghost[ai]
                    ),
                ));
            }
        }
        Ok(())
    }
}
