//! The device's engines: MOPED's work as steps, each with a cost in device cycles, run by
//! one or more engines that a scheme assigns them to (Shivam, Wyckoff and Panda, "Can
//! User-Level Protocols Take Advantage of Multi-CPU NICs?", IPDPS 2002).
//!
//! The steps follow that paper's two paths. The send path: the reservation and the field
//! stores of a descriptor ("send bookkeeping"), forwarding its copy to the matching MOPED
//! ("transmission"), and the completion notice arriving back at the sender's MOPED ("receive
//! acknowledgment", which the paper's DSR splits into its arrival and the update of the
//! send descriptor). The receive path: matching ("receive bookkeeping"), setting up an
//! active match ("receive frame"), each page the copy unit starts and each line request it
//! issues ("receiving"), and the receive completion with its notice to the sender's MOPED
//! ("send acknowledgment").
//!
//! A step of cost 0 is the device's fixed-function logic: it happens on arrival, waits for
//! nothing and holds nothing, as everything but matching does in the MOPED paper's device.
//! A step with a cost is a program on an engine: it starts when an engine its scheme gives
//! it is free and the locks it takes are free, holds both until it ends, and its effects
//! show when it ends. A step that follows another step of the same message on a different
//! engine first pays `handoff_cycles` on its own engine (the paper's inter-CPU event). The
//! defaults (every cost 0 but matching's, which is the matching engine's own time; one
//! engine; scheme `base`) are the device as it was before engines were modelled, cycle for
//! cycle.
//!
//! Locks are per descriptor-table entry (the fine-grained bookkeeping the paper's section
//! 4.2 argues for) and one for the match queues; a step takes every lock it names for its
//! whole length, so no two engines ever change one descriptor at once.
//!
//! One file per scheme, behind [`Assignment`]: [`base`] (every step on the first engine),
//! [`so`], [`ro`], [`dsr`] and [`sr`] (the paper's Table 2).

pub mod base;
pub mod dsr;
pub mod ro;
pub mod so;
pub mod sr;

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::desc::DescIndex;

/// A kind of step, in path order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepKind {
    /// A data-port load that reserves a descriptor.
    Reserve,
    /// A data-port store of one descriptor field.
    Store,
    /// Sending a complete descriptor's copy to its matching MOPED.
    Forward,
    /// The arrival of a completion notice at the sender's MOPED.
    Ack,
    /// Marking the send descriptor complete.
    SendComplete,
    /// One check of the matching engine (on top of the engine's own cycles).
    Match,
    /// Moving a matched pair into an active match entry and starting its copy unit.
    Activate,
    /// The copy unit starting a new page of a buffer (per page, beside its line request).
    Page,
    /// One line request of the copy unit.
    Line,
    /// Marking the receive descriptor complete and notifying the sender's MOPED.
    RecvComplete,
}

/// The two paths of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Send,
    Receive,
}

impl StepKind {
    pub const ALL: [StepKind; 10] = [
        StepKind::Reserve,
        StepKind::Store,
        StepKind::Forward,
        StepKind::Ack,
        StepKind::SendComplete,
        StepKind::Match,
        StepKind::Activate,
        StepKind::Page,
        StepKind::Line,
        StepKind::RecvComplete,
    ];

    /// The name in `moped.steps` and in statistics.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Reserve => "reserve",
            StepKind::Store => "store",
            StepKind::Forward => "forward",
            StepKind::Ack => "ack",
            StepKind::SendComplete => "send_complete",
            StepKind::Match => "match",
            StepKind::Activate => "activate",
            StepKind::Page => "page",
            StepKind::Line => "line",
            StepKind::RecvComplete => "recv_complete",
        }
    }

    /// The step of the multi-CPU NIC paper it stands for.
    pub fn emp_name(self) -> &'static str {
        match self {
            StepKind::Reserve | StepKind::Store => "send bookkeep",
            StepKind::Forward => "transmission",
            StepKind::Ack | StepKind::SendComplete => "recv ack",
            StepKind::Match => "recv bookkeep",
            StepKind::Activate => "recv frame",
            StepKind::Page | StepKind::Line => "receiving",
            StepKind::RecvComplete => "send ack",
        }
    }

    pub fn path(self) -> Path {
        match self {
            StepKind::Reserve
            | StepKind::Store
            | StepKind::Forward
            | StepKind::Ack
            | StepKind::SendComplete => Path::Send,
            _ => Path::Receive,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Cycles each step costs an engine (`[moped.steps]`). `match` is added to the matching
/// engine's own cycles; `page` is paid once per page a buffer's copy starts, `line` once per
/// line request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StepCosts {
    /// A data-port load that reserves a descriptor.
    pub reserve: u64,
    /// A data-port store of one descriptor field.
    pub store: u64,
    /// Sending a complete descriptor's copy to its matching MOPED.
    pub forward: u64,
    /// The arrival of a completion notice at the sender's MOPED.
    pub ack: u64,
    /// Marking the send descriptor complete.
    pub send_complete: u64,
    /// One check of the matching engine (on top of the engine's own cycles).
    #[serde(rename = "match")]
    pub match_: u64,
    /// Moving a matched pair into an active match entry and starting its copy unit.
    pub activate: u64,
    /// The copy unit starting a new page of a buffer.
    pub page: u64,
    /// One line request of the copy unit.
    pub line: u64,
    /// Marking the receive descriptor complete and notifying the sender's MOPED.
    pub recv_complete: u64,
}

/// The clock of the Tigon2's processors (88 MHz), which ran EMP's firmware.
pub const TIGON2_MHZ: f64 = 88.0;

/// Table 1 of the multi-CPU NIC paper: the time EMP spends in each major step of a 64-byte
/// ping-pong on the Tigon2, in microseconds, with Table 2's split of the receive
/// acknowledgment (DSR runs 3.25 us of it on the receive processor, 2.50 us on the send
/// processor).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EmpTimes {
    pub send_bookkeeping: f64,
    pub transmission: f64,
    pub receive_ack: f64,
    /// The part of `receive_ack` that takes in the acknowledgment frame (Table 2, DSR's
    /// cpu B); the rest updates the send records.
    pub receive_ack_arrival: f64,
    pub recv_bookkeeping: f64,
    pub receive_frame: f64,
    pub receiving: f64,
    pub send_ack: f64,
}

/// Table 1's times (and Table 2's split of the receive acknowledgment).
pub const TABLE_1: EmpTimes = EmpTimes {
    send_bookkeeping: 5.25,
    transmission: 5.50,
    receive_ack: 5.75,
    receive_ack_arrival: 3.25,
    recv_bookkeeping: 6.25,
    receive_frame: 4.25,
    receiving: 2.75,
    send_ack: 2.50,
};

impl StepCosts {
    pub fn of(&self, step: StepKind) -> u64 {
        match step {
            StepKind::Reserve => self.reserve,
            StepKind::Store => self.store,
            StepKind::Forward => self.forward,
            StepKind::Ack => self.ack,
            StepKind::SendComplete => self.send_complete,
            StepKind::Match => self.match_,
            StepKind::Activate => self.activate,
            StepKind::Page => self.page,
            StepKind::Line => self.line,
            StepKind::RecvComplete => self.recv_complete,
        }
    }

    /// A device whose steps are firmware as costly as EMP's: Table 1's times (a 64-byte
    /// ping-pong on the Tigon2) as cycles of an 88 MHz processor, so an engine at the
    /// CMP's clock runs the same instructions. Send bookkeeping (5.25 us, 462 cycles) is
    /// spread over the reservation and the three field stores of a descriptor; the receive
    /// acknowledgment (5.75 us) is split as the paper's DSR splits it, 3.25 us for its
    /// arrival and 2.50 us for the send side's update; "receiving" (2.75 us per frame) is
    /// paid per page, the copy unit's frame, and the line requests themselves stay the copy
    /// unit's hardware, as the Tigon's DMA assist moved EMP's data.
    pub fn emp() -> StepCosts {
        let c = |us: f64| (us * TIGON2_MHZ).round() as u64;
        let t = TABLE_1;
        StepCosts {
            reserve: c(t.send_bookkeeping) - 3 * 115,
            store: 115,
            forward: c(t.transmission),
            ack: c(t.receive_ack_arrival),
            send_complete: c(t.receive_ack - t.receive_ack_arrival),
            match_: c(t.recv_bookkeeping),
            activate: c(t.receive_frame),
            page: c(t.receiving),
            line: 0,
            recv_complete: c(t.send_ack),
        }
    }
}

/// Which of a two-processor NIC's processors runs a step (Table 2's "cpu A" and "cpu B").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    A,
    B,
}

/// A scheme's assignment of steps to processors: one file per scheme.
pub trait Assignment: Sync {
    /// The processor that runs `step`.
    fn role(&self, step: StepKind) -> Role;
}

/// How the steps are shared among the engines (`moped.scheme`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum Scheme {
    /// Every step on one engine.
    #[default]
    #[serde(rename = "base")]
    Base,
    /// The send path split: forwarding on the second engine.
    #[serde(rename = "SO")]
    So,
    /// The receive path split: the active match and the copy on the second engine.
    #[serde(rename = "RO")]
    Ro,
    /// One engine for the send path, one for the receive path.
    #[serde(rename = "DSR")]
    Dsr,
    /// Both paths split (SO and RO together).
    #[serde(rename = "SR")]
    Sr,
}

impl Scheme {
    pub const ALL: [Scheme; 5] = [
        Scheme::Base,
        Scheme::So,
        Scheme::Ro,
        Scheme::Dsr,
        Scheme::Sr,
    ];

    /// The name in `moped.scheme` and the experiments' CSV.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Base => "base",
            Scheme::So => "SO",
            Scheme::Ro => "RO",
            Scheme::Dsr => "DSR",
            Scheme::Sr => "SR",
        }
    }

    pub fn assignment(self) -> &'static dyn Assignment {
        match self {
            Scheme::Base => &base::Base,
            Scheme::So => &so::SendOnly,
            Scheme::Ro => &ro::ReceiveOnly,
            Scheme::Dsr => &dsr::Dedicated,
            Scheme::Sr => &sr::SendReceive,
        }
    }

    /// Engines that may run `step` among `engines`: processor A is engine 0, processor B
    /// the others (engine 0 too when there is one engine).
    pub fn engines_for(self, step: StepKind, engines: usize) -> std::ops::Range<usize> {
        let n = engines.max(1);
        match self.assignment().role(step) {
            Role::A => 0..1,
            Role::B if n == 1 => 0..1,
            Role::B => 1..n,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;

    fn from_str(s: &str) -> Result<Scheme, String> {
        Scheme::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown scheme `{s}`, expected one of base, SO, RO, DSR, SR"))
    }
}

/// The engines' configuration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineParams {
    pub engines: usize,
    pub scheme: Scheme,
    pub handoff_cycles: u64,
    pub costs: StepCosts,
}

/// A lock a step takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lock {
    /// One descriptor-table entry.
    Desc(DescIndex),
    /// The match queues.
    Queues,
}

/// Where and when a step ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub engine: u8,
    pub start: u64,
    pub end: u64,
}

/// One engine's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Cycles running steps, hand-offs included.
    pub busy: u64,
    /// Steps run, by [`StepKind`] (fixed-function steps of cost 0 included).
    pub steps: [u64; 10],
    /// Busy cycles by [`StepKind`], hand-offs included.
    pub cycles: [u64; 10],
    /// Cycles steps waited for a lock another engine held, once their engine was free.
    pub lock_wait: u64,
    /// Steps that came from another engine.
    pub handoffs: u64,
}

impl EngineStats {
    pub fn steps_of(&self, step: StepKind) -> u64 {
        self.steps[step.index()]
    }

    pub fn cycles_of(&self, step: StepKind) -> u64 {
        self.cycles[step.index()]
    }
}

/// A MOPED's engines and locks.
#[derive(Clone, Debug)]
pub struct Engines {
    params: EngineParams,
    free_at: Vec<u64>,
    desc_locks: Vec<u64>,
    queue_lock: u64,
    pub stats: Vec<EngineStats>,
}

impl Engines {
    pub fn new(params: EngineParams, descriptors: usize) -> Engines {
        let n = params.engines.max(1);
        Engines {
            params,
            free_at: vec![0; n],
            desc_locks: vec![0; descriptors],
            queue_lock: 0,
            stats: vec![EngineStats::default(); n],
        }
    }

    pub fn params(&self) -> &EngineParams {
        &self.params
    }

    /// The configured cost of `step`.
    pub fn cost(&self, step: StepKind) -> u64 {
        self.params.costs.of(step)
    }

    /// The first cycle an engine that may run `step` is free.
    pub fn free_at(&self, step: StepKind) -> u64 {
        let r = self.params.scheme.engines_for(step, self.free_at.len());
        self.free_at[r].iter().copied().min().unwrap_or(0)
    }

    fn lock_free_at(&self, lock: Lock) -> u64 {
        match lock {
            Lock::Desc(i) => self.desc_locks.get(i as usize).copied().unwrap_or(0),
            Lock::Queues => self.queue_lock,
        }
    }

    fn hold(&mut self, lock: Lock, until: u64) {
        match lock {
            Lock::Desc(i) => {
                if let Some(l) = self.desc_locks.get_mut(i as usize) {
                    *l = (*l).max(until);
                }
            }
            Lock::Queues => self.queue_lock = self.queue_lock.max(until),
        }
    }

    /// Runs a step of `cost` cycles that is ready at `ready`, taking `locks`, after a step
    /// of the same message on engine `prev`. A step of cost 0 is fixed-function logic: it
    /// ends when it is ready. Otherwise it goes to the engine its scheme allows that can
    /// start it first (the lowest-numbered on a tie).
    pub fn run(
        &mut self,
        step: StepKind,
        cost: u64,
        ready: u64,
        locks: &[Lock],
        prev: Option<u8>,
    ) -> Slot {
        let range = self.params.scheme.engines_for(step, self.free_at.len());
        if cost == 0 {
            let engine = prev
                .filter(|&e| range.contains(&(e as usize)))
                .unwrap_or(range.start as u8);
            self.stats[engine as usize].steps[step.index()] += 1;
            return Slot {
                engine,
                start: ready,
                end: ready,
            };
        }
        let held = locks
            .iter()
            .map(|&l| self.lock_free_at(l))
            .max()
            .unwrap_or(0);
        let mut best: Option<(u64, u64, usize)> = None;
        for e in range {
            let handoff = match prev {
                Some(p) if p as usize != e => self.params.handoff_cycles,
                _ => 0,
            };
            let free = ready.max(self.free_at[e]);
            let start = free.max(held);
            if best.map_or(true, |(s, _, _)| start < s) {
                best = Some((start, handoff, e));
            }
        }
        let (start, handoff, e) = best.expect("every scheme gives a step an engine");
        let end = start + handoff + cost;
        let free = ready.max(self.free_at[e]);
        let st = &mut self.stats[e];
        st.steps[step.index()] += 1;
        st.busy += handoff + cost;
        st.cycles[step.index()] += handoff + cost;
        st.lock_wait += start - free;
        st.handoffs += prev.is_some_and(|p| p as usize != e) as u64;
        self.free_at[e] = end;
        for &l in locks {
            self.hold(l, end);
        }
        Slot {
            engine: e as u8,
            start,
            end,
        }
    }

    /// Goes on with a step already running on `engine` for `cost` more cycles from `ready`,
    /// taking `locks` for them: a critical section at the end of a step, which waits (its
    /// engine held) until the locks are free. Not a new step: no hand-off, and the step is
    /// not counted again.
    pub fn continue_step(
        &mut self,
        step: StepKind,
        cost: u64,
        ready: u64,
        locks: &[Lock],
        engine: u8,
    ) -> Slot {
        let e = engine as usize;
        let free = ready.max(self.free_at[e]);
        let held = locks
            .iter()
            .map(|&l| self.lock_free_at(l))
            .max()
            .unwrap_or(0);
        let start = free.max(held);
        let end = start + cost;
        let st = &mut self.stats[e];
        st.busy += cost;
        st.cycles[step.index()] += cost;
        st.lock_wait += start - free;
        self.free_at[e] = end;
        for &l in locks {
            self.hold(l, end);
        }
        Slot { engine, start, end }
    }

    /// The number of engines.
    pub fn len(&self) -> usize {
        self.free_at.len()
    }

    /// Never: there is always at least one engine.
    pub fn is_empty(&self) -> bool {
        self.free_at.is_empty()
    }
}

#[cfg(test)]
mod tests;
