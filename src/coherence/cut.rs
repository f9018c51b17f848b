//! Controller-under-test harnesses: put one line of one controller in a state, deliver one
//! event, and look at the next state, the messages sent and the data. Every transition of
//! the protocol tables can be driven alone this way (see `tests/integration/transitions.rs`).

use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::mem::{LineAddr, LineData, LINE_BYTES};
use crate::protocol::{Machine, Permission, TransitionCounts};

use super::cache::{
    AccessKind, CacheCtrl, CacheParams, Completed, CoreOutcome, CoreReq, MopedDone, MopedKind,
    MopedReq, Placement, Tbe,
};
use super::dir::{DirCtrl, DirEntry, DirParams, NOBODY};
use super::msg::{Msg, MsgType, NodeId, Outgoing};
use super::{CoreSet, Delivery, Protocol, Violation};

/// Cores in the harness system; the controller under test is core [`ME`].
pub const CORES: usize = 4;
pub const ME: NodeId = 1;
pub const OTHER: NodeId = 2;
pub const THIRD: NodeId = 3;
/// The single directory bank.
pub const DIR: NodeId = CORES as NodeId;
/// The line every harness works on.
pub const ADDR: LineAddr = 0x40;

thread_local! {
    /// Transition cells fired by harnesses dropped inside [`record_fired`] on this thread.
    static FIRED: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

/// Runs `f` and returns the transition cells (`"Machine: (state, event)"`) that the
/// harnesses it used fired, so a test can check that its tests cover a table.
pub fn record_fired(f: impl FnOnce()) -> BTreeSet<String> {
    FIRED.with(|r| *r.borrow_mut() = Some(BTreeSet::new()));
    f();
    FIRED.with(|r| r.borrow_mut().take().unwrap_or_default())
}

/// The transition cells a controller's counters show fired.
pub fn fired_cells(machine: &Machine, counts: &TransitionCounts) -> BTreeSet<String> {
    counts
        .iter()
        .enumerate()
        .filter(|&(_, n)| n > 0)
        .map(|(k, _)| machine.counted_cell(k))
        .map(|(st, ev)| {
            format!(
                "{}: ({}, {})",
                machine.name(),
                machine.state_name(st),
                machine.event_name(ev)
            )
        })
        .collect()
}

fn note_fired(machine: &Machine, counts: &TransitionCounts) {
    FIRED.with(|r| {
        if let Some(set) = r.borrow_mut().as_mut() {
            set.extend(fired_cells(machine, counts));
        }
    });
}

/// A line's data filled with one byte value, so tests can tell copies apart.
pub fn line_of_byte(b: u8) -> LineData {
    [b; LINE_BYTES]
}

/// An L2 controller under test.
pub struct CacheCut {
    pub ctrl: CacheCtrl,
    pub out: Vec<Outgoing>,
    pub done: Vec<Completed>,
}

impl Drop for CacheCut {
    fn drop(&mut self) {
        note_fired(self.ctrl.table(), &self.ctrl.transitions);
    }
}

impl CacheCut {
    pub fn new(protocol: &Protocol) -> CacheCut {
        let p = CacheParams {
            node: ME,
            n_cores: CORES,
            dir_banks: 1,
            l1_sets: 1,
            l1_ways: 2,
            l2_sets: 1,
            l2_ways: 2,
            l1_latency: 1,
            l2_latency: 10,
            prefetch: Default::default(),
        };
        CacheCut {
            ctrl: CacheCtrl::new(p, protocol.l2.clone()).expect("protocol binds"),
            out: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Puts [`ADDR`] in `state` holding `data`. Transient states get a TBE; the writeback
    /// states (whose permission is Busy and which keep data only in the TBE) get no way.
    /// `req` is the core request a miss state waits for.
    pub fn put(
        &mut self,
        state: &str,
        data: LineData,
        dirty: bool,
        req: Option<AccessKind>,
    ) -> &mut Self {
        let m = self.ctrl.table();
        let s = m
            .state_id(state)
            .unwrap_or_else(|| panic!("no state {state}"));
        let stable = m.is_stable(s);
        let tbe_only = matches!(state, "MI" | "OI" | "II" | "ID");
        let tbe = (!stable).then(|| {
            let mut t = Tbe::new(ADDR);
            t.data = data;
            t.dirty = dirty;
            t.req = req.map(|kind| CoreReq {
                id: 7,
                kind,
                addr: ADDR + 8,
                size: 8,
                value: 0x1122_3344_5566_7788,
            });
            t
        });
        let place = if tbe_only {
            Placement::TbeOnly
        } else {
            Placement::L1
        };
        if s != m.state_id("I").expect("I") || tbe.is_some() {
            self.ctrl.place_line(ADDR, s, data, dirty, place, tbe);
        }
        self
    }

    /// Makes the line's TBE serve a MOPED request instead of a core request.
    pub fn for_moped(&mut self, kind: MopedKind, write: Option<(LineData, u64)>) -> &mut Self {
        let t = self.tbe_mut();
        t.req = None;
        t.moped = Some(MopedReq {
            kind,
            addr: ADDR,
            write,
            page_table: false,
        });
        self
    }

    /// A MOPED request on the line; `write` is stored when rights are granted.
    pub fn moped(
        &mut self,
        kind: MopedKind,
        write: Option<(LineData, u64)>,
    ) -> Result<CoreOutcome, Box<Violation>> {
        self.out.clear();
        self.done.clear();
        let req = MopedReq {
            kind,
            addr: ADDR,
            write,
            page_table: false,
        };
        self.ctrl.moped_request(req, &mut self.out, &mut self.done)
    }

    /// The answers the controller gave its MOPED since the last call.
    pub fn moped_done(&mut self) -> Vec<MopedDone> {
        self.ctrl.take_moped_done().collect()
    }

    /// Where the line sits.
    pub fn placement(&self) -> Placement {
        self.ctrl.placement(ADDR)
    }

    /// Sets the ack bookkeeping of the line's TBE.
    pub fn acks(&mut self, pending: i32, known: bool) -> &mut Self {
        let t = self.tbe_mut();
        t.acks_pending = pending;
        t.acks_known = known;
        self
    }

    fn tbe_mut(&mut self) -> &mut Tbe {
        self.ctrl.tbe_for_test(ADDR)
    }

    /// Delivers a message of type `ty` from `src` on behalf of `requestor`.
    pub fn deliver(
        &mut self,
        ty: MsgType,
        src: NodeId,
        requestor: NodeId,
        acks: i16,
        data: LineData,
        dirty: bool,
    ) -> Result<Delivery, Box<Violation>> {
        let mut m = Msg::control(ty, ADDR, src, ME, requestor);
        m.acks = acks;
        m.data = data;
        m.dirty = dirty;
        self.out.clear();
        self.done.clear();
        self.ctrl.deliver(&m, &mut self.out, &mut self.done)
    }

    /// A core load or store of 8 bytes at offset 8 of the line.
    pub fn request(&mut self, kind: AccessKind, value: u64) -> Result<CoreOutcome, Box<Violation>> {
        self.out.clear();
        self.done.clear();
        let req = CoreReq {
            id: 1,
            kind,
            addr: ADDR + 8,
            size: 8,
            value,
        };
        self.ctrl.core_request(req, &mut self.out, &mut self.done)
    }

    /// A replacement of the line.
    pub fn replace(&mut self) -> Result<bool, Box<Violation>> {
        self.out.clear();
        self.done.clear();
        self.ctrl.evict(ADDR, &mut self.out, &mut self.done)
    }

    pub fn state(&self) -> &str {
        self.ctrl.state_name(ADDR)
    }

    pub fn permission(&self) -> Permission {
        self.ctrl.table().permission(self.ctrl.state(ADDR))
    }

    /// The messages sent, as (type, destination, requestor, acks).
    pub fn sent(&self) -> Vec<(MsgType, NodeId, NodeId, i16)> {
        self.out
            .iter()
            .map(|o| (o.msg.ty, o.msg.dst, o.msg.requestor, o.msg.acks))
            .collect()
    }

    /// The line's data and dirty bit, wherever it is (a way or the TBE).
    pub fn data(&self) -> Option<(LineData, bool)> {
        self.ctrl
            .line_copy(ADDR)
            .map(|l| (l.data, l.dirty))
            .or_else(|| {
                self.ctrl
                    .tbes()
                    .iter()
                    .find(|t| t.addr == ADDR)
                    .map(|t| (t.data, t.dirty))
            })
    }

    pub fn has_tbe(&self) -> bool {
        self.ctrl.tbes().iter().any(|t| t.addr == ADDR)
    }
}

/// A directory bank under test.
pub struct DirCut {
    pub ctrl: DirCtrl,
    pub out: Vec<Outgoing>,
}

impl Drop for DirCut {
    fn drop(&mut self) {
        note_fired(self.ctrl.table(), &self.ctrl.transitions);
    }
}

impl DirCut {
    pub fn new(protocol: &Protocol) -> DirCut {
        let p = DirParams {
            node: DIR,
            bank: 0,
            banks: 1,
            n_cores: CORES,
            latency: 2,
            mem_latency: 35,
            mem_channel_cycles: 0,
            device: None,
        };
        DirCut {
            ctrl: DirCtrl::new(p, protocol.dir.clone()).expect("protocol binds"),
            out: Vec::new(),
        }
    }

    /// Puts [`ADDR`] in `state` with an owner, a sharer bitmask and the core being served.
    pub fn put(
        &mut self,
        state: &str,
        owner: Option<NodeId>,
        sharers: &[NodeId],
        requestor: Option<NodeId>,
    ) -> &mut Self {
        let s = self
            .ctrl
            .table()
            .state_id(state)
            .unwrap_or_else(|| panic!("no state {state}"));
        let sharers = sharers.iter().fold(CoreSet::EMPTY, |mut m, &c| {
            m.insert(c);
            m
        });
        self.ctrl.place_entry(
            ADDR,
            DirEntry {
                state: s,
                owner: owner.unwrap_or(NOBODY),
                sharers,
                requestor: requestor.unwrap_or(NOBODY),
            },
        );
        self
    }

    /// Sets the memory contents of the line.
    pub fn memory(&mut self, data: LineData) -> &mut Self {
        self.ctrl.mem.write(ADDR, &data);
        self
    }

    pub fn deliver(
        &mut self,
        ty: MsgType,
        src: NodeId,
        data: LineData,
    ) -> Result<Delivery, Box<Violation>> {
        let mut m = Msg::control(ty, ADDR, src, DIR, src);
        m.data = data;
        self.out.clear();
        self.ctrl.deliver(&m, &mut self.out)
    }

    pub fn state(&self) -> &str {
        let e = self.ctrl.entry(ADDR);
        self.ctrl.table().state_name(e.state)
    }

    pub fn entry(&self) -> DirEntry {
        self.ctrl.entry(ADDR)
    }

    /// The messages sent, as (type, destination, requestor, acks).
    pub fn sent(&self) -> Vec<(MsgType, NodeId, NodeId, i16)> {
        self.out
            .iter()
            .map(|o| (o.msg.ty, o.msg.dst, o.msg.requestor, o.msg.acks))
            .collect()
    }

    /// The data of the first message sent.
    pub fn sent_data(&self) -> Option<LineData> {
        self.out.first().map(|o| o.msg.data)
    }
}
