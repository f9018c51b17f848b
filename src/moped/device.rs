//! One MOPED (paper, sections 4.1 to 4.4): the ports, the outstanding descriptor table,
//! the matching state machine, the active match table with its copy units, polls, backoff
//! and revocation, and forwarding for processes that moved cores.
//!
//! # Host interface
//!
//! The device keeps no clock and touches nothing but its own state. Its host (the embedded
//! simulator, or gem5 through the C ABI) calls it with the cycle of each input:
//! - [`Moped::port_load`] and [`Moped::port_store`]: a core's access to a port address;
//! - [`Moped::receive`]: a message from another MOPED, in the order the network delivers
//!   them (channels between two MOPEDs must be FIFO: revocation relies on it);
//! - [`Moped::line_done`], [`Moped::write_done`], [`Moped::fault_done`]: the L2 controller's
//!   answers to the device's line requests, and the OS's answer to a page fault;
//! - [`Moped::tick`]: let the matcher and the copy units work; it returns the next cycle
//!   the device wants a tick at, or `None` until its next input.
//!
//! Everything the device asks of the world comes out of [`Moped::take_out`] as [`DevOut`]:
//! messages to other MOPEDs (a message to itself included), line requests for its L2
//! (which the host retries while the L2 stalls them), copy-unit writes, page faults for the
//! OS, and the answers to port loads that had to be forwarded.
//!
//! # Life of a message
//!
//! The sender and the receiver each reserve a descriptor at their local MOPED and store its
//! fields. A complete descriptor goes, as a copy, to the matching MOPED chosen by hashing
//! (program, receiver rank). There the matcher pairs copies in MPI order; the pair goes to
//! the receiver's local MOPED (which gets the send buffer's address, size and page-table
//! root) and the sender's local MOPED learns its descriptor is matched. The receiver's MOPED
//! moves the pair into a free active match entry, and its copy unit moves the data. Then
//! both descriptors are marked Completed, and each is freed when its process polls it.
//!
//! # Backoff (section 4.4)
//!
//! A refused reservation, or a matching MOPED whose table is full, asks the program's
//! backoff home (MOPED `program mod n`) to set the program's backoff bit on every MOPED.
//! While a MOPED's bit is set, reservations there are refused, and a poll of an unmatched
//! descriptor revokes it: at once if its copy never left, else by asking the matching
//! MOPED to drop the copy (if the copy was matched meanwhile, the match wins; FIFO channels
//! make the answer arrive after the match). The bit clears when the program's count of
//! outstanding descriptors reaches zero, counted over every table: each MOPED tells the
//! home when it holds none of the program's descriptors (from then on it refuses copies
//! for the program), and once all have, the home clears the bit everywhere. Both the set
//! and the clear come from the home, so every MOPED sees them in order. The runtime must
//! still meet in a barrier before it uses MOPED again, as the paper requires: a message
//! whose sender backed off must not be received through MOPED.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::coherence::{CoreSet, MopedDone, MopedKind, MopedReq};
use crate::envelope::{Kind, Peer, ProgramId, Rank};
use crate::mem::{LineAddr, LineData};
use crate::os::pagetable::PageTableFormat;

use super::copy::{Buffer, CopyConfig, CopyReq, CopyStatus, CopyUnit, Failure, Side, Transfer};
use super::desc::DescIndex;
use super::desc::{DescTable, Descriptor, ACTIVE, COMPLETED, MATCHED, RESERVED};
use super::engines::{EngineParams, Engines, Lock, Slot, StepKind};
use super::matching::{self, MatchUnit, MatcherKind, MatchingParams};
use super::ports::{
    unpack_poll, unpack_store, PollStatus, Port, PortAddr, PortError, PortMap, ERROR, REFUSED,
};
use super::{DescId, IdFormat, MopedId};
use crate::stats::Distribution;

/// A MOPED's sizes and its place in the system.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MopedParams {
    pub id: MopedId,
    /// MOPEDs in the system (one per core).
    pub mopeds: usize,
    pub descriptor_entries: usize,
    pub active_matches: usize,
    /// The copy unit's N send and N receive lines.
    pub copy_lines: usize,
    pub staging_lines: usize,
    /// Page-table lines the MOPED keeps across transfers (a page-walk cache); 0 starts
    /// every transfer's walks from an empty staging buffer.
    pub walk_cache_lines: usize,
    /// The format of the page tables the walkers read.
    pub page_table: PageTableFormat,
    /// Coherence operations the device may start per cycle.
    pub ops_per_cycle: u32,
    /// The protocol grants a whole receive line without its old data (OPTCACHE's M_FILL).
    pub fill: bool,
    pub ports: PortMap,
    /// The matching engine and its sizes and clocks.
    pub matcher: MatcherKind,
    pub matching: MatchingParams,
    /// The MOPED's clock (the cores'), which the engine's cycles are converted to.
    pub core_mhz: f64,
    /// The engines that run the device's steps, and what each step costs.
    pub engines: EngineParams,
}

/// The core behind a port access: who to answer, and its current page-table root (the
/// hardware's cr3, which a process cannot forge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortCtx {
    pub core: u16,
    pub pt_root: u64,
}

/// The answer to a port load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortAnswer {
    Value(u64),
    /// Forwarded to the descriptor's MOPED: the value comes later as [`DevOut::PortValue`].
    Later,
}

/// The send side of a matched pair, as the receiver's MOPED needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendSide {
    pub id: DescId,
    pub program: ProgramId,
    pub rank: Rank,
    pub va: u64,
    pub size: u64,
    pub pt_root: u64,
}

/// Messages between MOPEDs over the on-chip network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevMsg {
    /// A complete descriptor's copy for the matching MOPED; `link` names the original.
    Forward {
        desc: Descriptor,
    },
    /// The matching MOPED's table was full: the copy was dropped.
    Refused {
        origin: DescId,
    },
    /// To the program's backoff home: a reservation or a copy was refused.
    BackoffReq {
        program: ProgramId,
    },
    /// From the home: set the program's backoff bit.
    Backoff {
        program: ProgramId,
    },
    /// To the receiver's local MOPED: its descriptor `recv` is matched with `send`.
    Matched {
        recv: DescId,
        send: SendSide,
    },
    /// To the sender's local MOPED: its descriptor is matched.
    SendMatched {
        send: DescId,
    },
    /// To the sender's local MOPED: the copy is over.
    Complete {
        send: DescId,
        failed: bool,
    },
    /// To the home: this MOPED holds none of the program's descriptors.
    Drained {
        program: ProgramId,
        from: MopedId,
    },
    /// From the home: every table is drained; clear the bit.
    Clear {
        program: ProgramId,
    },
    /// To the matching MOPED: drop the copy of `origin` if it is not matched yet.
    Revoke {
        origin: DescId,
    },
    RevokeReply {
        origin: DescId,
        revoked: bool,
    },
    /// A data-port store of a process that moved away from the descriptor's MOPED.
    PortStore {
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        value: u64,
    },
    /// A poll-port load of a process that moved away from the descriptor's MOPED.
    PollLoad {
        core: u16,
        reply: MopedId,
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        id: DescId,
    },
    PollReply {
        core: u16,
        value: u64,
    },
}

impl DevMsg {
    /// Bytes of payload after the network header, per kind: a descriptor is about 24 B
    /// (paper, section 4.6), as is a matched send side (buffer, size, root); forwarded port
    /// values carry a word.
    pub const PAYLOAD_BYTES: [u32; 14] = [24, 0, 0, 0, 0, 0, 24, 0, 0, 0, 0, 8, 8, 8];

    pub fn payload_bytes(&self) -> u32 {
        Self::PAYLOAD_BYTES[self.index()]
    }

    /// Names of the message kinds, in [`DevMsg::index`] order, as statistics show them.
    pub const NAMES: [&'static str; 14] = [
        "MOPED_FORWARD",
        "MOPED_REFUSED",
        "MOPED_BACKOFF",
        "MOPED_BACKOFF_REQ",
        "MOPED_DRAINED",
        "MOPED_CLEAR",
        "MOPED_MATCHED",
        "MOPED_SEND_MATCHED",
        "MOPED_COMPLETE",
        "MOPED_REVOKE",
        "MOPED_REVOKE_REPLY",
        "MOPED_PORT_STORE",
        "MOPED_POLL_LOAD",
        "MOPED_POLL_REPLY",
    ];

    /// The message's kind, an index into [`DevMsg::NAMES`].
    pub fn index(&self) -> usize {
        match self {
            DevMsg::Forward { .. } => 0,
            DevMsg::Refused { .. } => 1,
            DevMsg::Backoff { .. } => 2,
            DevMsg::BackoffReq { .. } => 3,
            DevMsg::Drained { .. } => 4,
            DevMsg::Clear { .. } => 5,
            DevMsg::Matched { .. } => 6,
            DevMsg::SendMatched { .. } => 7,
            DevMsg::Complete { .. } => 8,
            DevMsg::Revoke { .. } => 9,
            DevMsg::RevokeReply { .. } => 10,
            DevMsg::PortStore { .. } => 11,
            DevMsg::PollLoad { .. } => 12,
            DevMsg::PollReply { .. } => 13,
        }
    }

    pub fn name(&self) -> &'static str {
        Self::NAMES[self.index()]
    }
}

/// What the device asks of its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DevOut {
    /// Send a message to MOPED `dst` (possibly this one).
    Send { dst: MopedId, msg: DevMsg },
    /// A line request for this MOPED's L2; retry it while the L2 stalls it.
    Line(MopedReq),
    /// The copy unit's write into a receive line it was granted; answer with
    /// [`Moped::write_done`].
    Write {
        addr: LineAddr,
        data: LineData,
        mask: u64,
    },
    /// A page of a buffer is not mapped: interrupt the process's core; the OS maps the page
    /// (if it is inside the process) and answers with [`Moped::fault_done`].
    Fault {
        slot: usize,
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        va: u64,
    },
    /// The value of a forwarded port load, for core `core`.
    PortValue { core: u16, value: u64 },
    /// The value of a port load of core `core` at this MOPED that an engine answered late
    /// (the reservation waited for it): answer the core after the port latency.
    LocalValue { core: u16, value: u64 },
}

/// Counters; descriptions and units are given where they are registered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MopedStats {
    pub reserved: u64,
    pub refused: u64,
    pub forwarded: u64,
    pub forward_refusals: u64,
    pub matched: u64,
    pub match_searches: u64,
    pub match_search_entries: u64,
    pub match_search_max: u64,
    /// The matching engine's busy cycles, insertions past its fast level, and copies it
    /// had no room for.
    pub match_cycles: u64,
    pub match_overflows: u64,
    pub match_full: u64,
    pub activated: u64,
    pub completed: u64,
    pub failed: u64,
    pub truncated: u64,
    pub revoked: u64,
    pub polls: u64,
    pub poll_retries: u64,
    pub port_errors: u64,
    pub port_forwards: u64,
    pub backoffs_set: u64,
    pub backoffs_cleared: u64,
    pub line_reads: u64,
    pub line_owns: u64,
    pub line_fills: u64,
    pub line_writes: u64,
    pub write_retries: u64,
    pub faults: u64,
    pub walks: u64,
    pub walk_line_reads: u64,
    pub walk_staging_hits: u64,
    /// Ticks in which the copy units used every coherence operation slot.
    pub op_limit_cycles: u64,
    pub anomalies: u64,
}

/// Bookkeeping of a local reservation beside its table entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Local {
    /// The copy went to the matching MOPED.
    forwarded: bool,
    /// The matching MOPED refused the copy.
    refused: bool,
    /// A revocation request is out.
    revoking: bool,
    /// Revoked: the next poll answers Revoked and frees the entry.
    revoked: bool,
    /// For a matched receive: the send side.
    send: Option<SendSide>,
    /// The engine of the descriptor's last step here, for hand-offs.
    engine: Option<u8>,
}

/// An active match: a receive descriptor of this MOPED being filled by a copy unit.
#[derive(Debug)]
struct Active {
    recv: DescIndex,
    send: SendSide,
    unit: CopyUnit,
    /// The activation step ends, and the copy may start, at this cycle.
    ready_at: u64,
    /// A request whose line step has not ended yet, and the cycle it ends.
    held: Option<(u64, CopyReq)>,
    /// The engine of the copy's last step.
    engine: Option<u8>,
    /// The page (frame number + 1) of the last data line requested, per [`Side`].
    pages: [u64; 2],
}

/// Work whose step ends later than it began: its effect shows when the step ends.
#[derive(Clone, Copy, Debug)]
enum Later {
    Out(DevOut),
    /// A completion notice's update of the send descriptor.
    SendDone {
        send: DescId,
        failed: bool,
    },
    /// A receive completion and its notice to the sender's MOPED.
    RecvDone {
        recv: DescIndex,
        send: SendSide,
        send_failed: bool,
        recv_failed: bool,
    },
}

/// One MOPED.
#[derive(Debug)]
pub struct Moped {
    params: MopedParams,
    table: DescTable,
    local: Vec<Local>,
    /// Matched receives waiting for an active match entry, in match order.
    matched: VecDeque<DescIndex>,
    /// The matching engine with the copies waiting for their check.
    matcher: MatchUnit,
    /// The check the engine is busy with: its result (a pair to forward, a refusal) takes
    /// effect when the engine is done, at `matcher_free_at`, as the paper's state machine
    /// forwards a pair once its walk found it.
    checking: Option<matching::Step>,
    /// How descriptor IDs look in port values.
    ids: IdFormat,
    active: Vec<Option<Active>>,
    /// Outstanding line requests, by line: the active slots waiting for a read's data, and
    /// for exclusive rights (in request order).
    reads: FxHashMap<LineAddr, Vec<usize>>,
    owns: FxHashMap<LineAddr, VecDeque<usize>>,
    writes: FxHashMap<LineAddr, VecDeque<usize>>,
    /// The matcher is busy walking the table until this cycle.
    matcher_free_at: u64,
    /// Programs whose backoff bit is set.
    backoff: [u64; 4],
    /// Programs for which this MOPED told the home it is drained (this episode).
    drained: [u64; 4],
    /// At the home: per program in backoff, the MOPEDs that reported drained.
    episodes: FxHashMap<ProgramId, CoreSet>,
    /// The one cached poll mapping: (program, rank) -> descriptor. `None` inside: the last
    /// poll store named no descriptor, so that process's next poll load answers Error (a
    /// posted store's error reaches the process at its next poll).
    poll_cache: Option<(ProgramId, Rank, Option<DescId>)>,
    /// Round-robin start among active slots when issuing.
    next_slot: usize,
    /// Page-table lines kept from the last transfer's walks (see `walk_cache_lines`).
    walk_cache: Vec<(LineAddr, crate::mem::LineData)>,
    out: Vec<DevOut>,
    /// The engines that run steps with a cost, and their locks.
    pub engines: Engines,
    /// Work waiting for its step's end, by (cycle, sequence).
    later: BinaryHeap<Reverse<(u64, u64, usize)>>,
    later_items: Vec<Option<Later>>,
    later_seq: u64,
    /// Messages waiting in `later`: while any does, later messages wait behind it, so
    /// the channels between MOPEDs stay FIFO.
    later_sends: usize,
    /// The latest cycle a waiting message leaves at.
    sends_at: u64,
    /// The cycle of the input or tick being handled.
    now: u64,
    /// Cycles with each number of copies active, from the first activation on.
    pub active_copies: Distribution,
    active_since: Option<u64>,
    pub stats: MopedStats,
    /// MPI's search depths at this matching MOPED, per queue searched ([`matching::Queue`] order):
    /// the partner's position (from 1), or the queue's length when nothing matched.
    pub depths: [Distribution; 2],
    /// The last port error, for tests and reports.
    pub last_error: Option<PortError>,
}

impl Moped {
    pub fn new(params: MopedParams) -> Result<Moped, PortError> {
        let table = DescTable::new(params.descriptor_entries)?;
        Ok(Moped {
            local: vec![Local::default(); params.descriptor_entries],
            table,
            matched: VecDeque::new(),
            matcher: MatchUnit::new(params.matcher, &params.matching),
            checking: None,
            ids: IdFormat::for_mopeds(params.mopeds)?,
            active: (0..params.active_matches.max(1)).map(|_| None).collect(),
            reads: FxHashMap::default(),
            owns: FxHashMap::default(),
            writes: FxHashMap::default(),
            matcher_free_at: 0,
            backoff: [0; 4],
            drained: [0; 4],
            episodes: FxHashMap::default(),
            poll_cache: None,
            next_slot: 0,
            walk_cache: Vec::new(),
            out: Vec::new(),
            engines: Engines::new(params.engines, params.descriptor_entries),
            later: BinaryHeap::new(),
            later_items: Vec::new(),
            later_seq: 0,
            later_sends: 0,
            sends_at: 0,
            now: 0,
            active_copies: Distribution::new(0, params.active_matches.max(1) as i64, 1)
                .expect("a range from 0 up is valid"),
            active_since: None,
            stats: MopedStats::default(),
            depths: [Distribution::queue_depths(), Distribution::queue_depths()],
            last_error: None,
            params,
        })
    }

    pub fn id(&self) -> MopedId {
        self.params.id
    }

    pub fn params(&self) -> &MopedParams {
        &self.params
    }

    /// Forgets every kept and staged page-table line: the OS changed some tables.
    pub fn flush_walks(&mut self) {
        self.walk_cache.clear();
        for a in self.active.iter_mut().flatten() {
            a.unit.flush_walker();
        }
    }

    pub fn table(&self) -> &DescTable {
        &self.table
    }

    /// The requests produced since the last call.
    pub fn take_out(&mut self) -> std::vec::Drain<'_, DevOut> {
        self.out.drain(..)
    }

    pub fn has_out(&self) -> bool {
        !self.out.is_empty()
    }

    /// Whether the program's backoff bit is set here.
    pub fn backoff(&self, program: ProgramId) -> bool {
        self.backoff[program as usize / 64] >> (program % 64) & 1 == 1
    }

    /// True when nothing is outstanding: no descriptor, match or line request.
    pub fn is_idle(&self) -> bool {
        self.table.occupied() == 0 && self.copies_idle()
    }

    /// True when no copy runs or waits and no line request is outstanding (descriptors may
    /// remain, waiting for their processes' polls).
    pub fn copies_idle(&self) -> bool {
        self.later.is_empty()
            && self.matched.is_empty()
            && self.checking.is_none()
            && self.active.iter().all(|a| a.is_none())
            && self.reads.is_empty()
            && self.owns.is_empty()
            && self.writes.is_empty()
    }

    /// The MOPED where descriptors for (program, receiver rank) are matched.
    pub fn matching_moped(&self, program: ProgramId, receiver: Rank) -> MopedId {
        matching_moped(program, receiver, self.params.mopeds)
    }

    fn send(&mut self, dst: MopedId, msg: DevMsg) {
        self.send_at(self.now, dst, msg);
    }

    /// Sends a message when the step that produced it ends, behind every message still
    /// waiting for its step.
    fn send_at(&mut self, at: u64, dst: MopedId, msg: DevMsg) {
        if at <= self.now && self.later_sends == 0 {
            self.out.push(DevOut::Send { dst, msg });
            return;
        }
        let at = at.max(self.sends_at).max(self.now);
        self.sends_at = at;
        self.later_sends += 1;
        self.defer(at, Later::Out(DevOut::Send { dst, msg }));
    }

    fn defer(&mut self, at: u64, work: Later) {
        let slot = match self.later_items.iter().position(|w| w.is_none()) {
            Some(i) => {
                self.later_items[i] = Some(work);
                i
            }
            None => {
                self.later_items.push(Some(work));
                self.later_items.len() - 1
            }
        };
        self.later.push(Reverse((at, self.later_seq, slot)));
        self.later_seq += 1;
    }

    /// Work whose steps have ended by `now` takes effect, in the order the steps ended.
    fn release(&mut self, now: u64) -> bool {
        let mut any = false;
        while let Some(&Reverse((at, _, slot))) = self.later.peek() {
            if at > now {
                break;
            }
            self.later.pop();
            any = true;
            match self.later_items[slot].take() {
                Some(Later::Out(o)) => {
                    if matches!(o, DevOut::Send { .. }) {
                        self.later_sends -= 1;
                    }
                    self.out.push(o);
                }
                Some(Later::SendDone { send, failed }) => self.send_done(send, failed),
                Some(Later::RecvDone {
                    recv,
                    send,
                    send_failed,
                    recv_failed,
                }) => self.complete(recv, send, send_failed, recv_failed),
                None => self.stats.anomalies += 1,
            }
        }
        any
    }

    fn error(&mut self, e: PortError) -> PortError {
        self.stats.port_errors += 1;
        self.last_error = Some(e);
        e
    }

    // ---- Ports ----

    /// A core's 8-byte load from a port address at cycle `now`.
    pub fn port_load(&mut self, now: u64, ctx: PortCtx, addr: u64, size: u8) -> PortAnswer {
        self.now = self.now.max(now);
        let port = match self.params.ports.decode(addr, size) {
            Ok(p) => p,
            Err(e) => {
                self.error(e);
                return PortAnswer::Value(ERROR);
            }
        };
        match port.port {
            Port::Data => self.reserve(ctx, port),
            Port::Poll => self.poll_load(ctx, port),
        }
    }

    /// A core's 8-byte store to a port address. Stores are posted: the error is for tests
    /// and statistics; the process learns of it from its next poll.
    pub fn port_store(
        &mut self,
        now: u64,
        ctx: PortCtx,
        addr: u64,
        size: u8,
        value: u64,
    ) -> Result<(), PortError> {
        self.now = self.now.max(now);
        let port = self
            .params
            .ports
            .decode(addr, size)
            .map_err(|e| self.error(e))?;
        match port.port {
            Port::Data => self.data_store(port.program, port.rank, ctx.pt_root, value),
            Port::Poll => {
                let ids = self.ids;
                let id = unpack_poll(value).map_err(|e| self.error(e));
                let id = id.map(|bits| ids.decode(bits));
                self.poll_cache = Some((port.program, port.rank, id.as_ref().ok().copied()));
                id.map(|_| ())
            }
        }
    }

    /// A data-port load: the reservation step, answered when it ends.
    fn reserve(&mut self, ctx: PortCtx, port: PortAddr) -> PortAnswer {
        let value = self.reserve_entry(port, ctx.pt_root);
        let ids = self.ids;
        // A refused reservation changes no entry.
        let lock = (value != REFUSED).then(|| Lock::Desc(ids.decode(value as u16).index));
        let cost = self.engines.cost(StepKind::Reserve);
        let slot = self
            .engines
            .run(StepKind::Reserve, cost, self.now, lock.as_slice(), None);
        if let Some(Lock::Desc(i)) = lock {
            self.local[i as usize].engine = Some(slot.engine);
        }
        if slot.end <= self.now {
            return PortAnswer::Value(value);
        }
        let core = ctx.core;
        self.defer(slot.end, Later::Out(DevOut::LocalValue { core, value }));
        PortAnswer::Later
    }

    /// Reserves a descriptor: its ID's bits, or REFUSED.
    fn reserve_entry(&mut self, port: PortAddr, pt_root: u64) -> u64 {
        if self.backoff(port.program) {
            self.stats.refused += 1;
            return REFUSED;
        }
        let limit = self.ids.max_index();
        match self
            .table
            .reserve_below(port.program, port.rank, pt_root, limit)
        {
            Some(index) => {
                self.stats.reserved += 1;
                self.local[index as usize] = Local::default();
                let id = DescId {
                    moped: self.params.id,
                    index,
                };
                self.ids.encode(id) as u64
            }
            None => {
                self.stats.refused += 1;
                self.request_backoff(port.program);
                REFUSED
            }
        }
    }

    /// A data-port store: the next field of a descriptor, forwarded if the descriptor is
    /// another MOPED's (the process moved).
    fn data_store(
        &mut self,
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        value: u64,
    ) -> Result<(), PortError> {
        let (bits, payload) = unpack_store(value);
        let id = self.ids.decode(bits);
        if id.moped != self.params.id {
            if id.moped as usize >= self.params.mopeds {
                return Err(self.error(PortError::NoSuchMoped {
                    moped: id.moped,
                    mopeds: self.params.mopeds,
                }));
            }
            self.stats.port_forwards += 1;
            self.send(
                id.moped,
                DevMsg::PortStore {
                    program,
                    rank,
                    pt_root,
                    value,
                },
            );
            return Ok(());
        }
        if let Err(e) = self.table.check_owner(id.index, program, rank, pt_root) {
            return Err(self.error(e));
        }
        let prev = self.local[id.index as usize].engine;
        let cost = self.engines.cost(StepKind::Store);
        let lock = [Lock::Desc(id.index)];
        let slot = self
            .engines
            .run(StepKind::Store, cost, self.now, &lock, prev);
        self.local[id.index as usize].engine = Some(slot.engine);
        let complete = self
            .table
            .store_field(id.index, payload)
            .map_err(|e| self.error(e))?;
        if complete {
            self.forward(id, slot);
        }
        Ok(())
    }

    /// The forwarding step after the store `after` completed the descriptor: its copy
    /// leaves for the matching MOPED when the step ends.
    fn forward(&mut self, id: DescId, after: Slot) {
        let Some(d) = self.table.get(id.index).copied() else {
            return;
        };
        let receiver = self.receiver_of(&d);
        let Some(env) = d.envelope() else { return };
        let Ok(mut copy) = Descriptor::complete(d.program, d.rank, d.pt_root, env, d.va, d.size)
        else {
            return;
        };
        copy.link = Some(id);
        let cost = self.engines.cost(StepKind::Forward);
        let lock = [Lock::Desc(id.index)];
        let prev = Some(after.engine);
        let slot = self
            .engines
            .run(StepKind::Forward, cost, after.end, &lock, prev);
        let local = &mut self.local[id.index as usize];
        local.forwarded = true;
        local.engine = Some(slot.engine);
        self.stats.forwarded += 1;
        let dst = self.matching_moped(d.program, receiver);
        self.send_at(slot.end, dst, DevMsg::Forward { desc: copy });
    }

    /// A poll-port load.
    fn poll_load(&mut self, ctx: PortCtx, port: PortAddr) -> PortAnswer {
        self.stats.polls += 1;
        let id = match self.poll_cache {
            Some((p, r, Some(id))) if p == port.program && r == port.rank => id,
            Some((p, r, None)) if p == port.program && r == port.rank => {
                return PortAnswer::Value(PollStatus::Error.to_value());
            }
            _ => {
                // Another process stored its poll in between (a context switch).
                self.stats.poll_retries += 1;
                return PortAnswer::Value(PollStatus::Retry.to_value());
            }
        };
        if id.moped != self.params.id {
            if id.moped as usize >= self.params.mopeds {
                self.error(PortError::NoSuchMoped {
                    moped: id.moped,
                    mopeds: self.params.mopeds,
                });
                return PortAnswer::Value(PollStatus::Error.to_value());
            }
            self.stats.port_forwards += 1;
            self.send(
                id.moped,
                DevMsg::PollLoad {
                    core: ctx.core,
                    reply: self.params.id,
                    program: port.program,
                    rank: port.rank,
                    pt_root: ctx.pt_root,
                    id,
                },
            );
            return PortAnswer::Later;
        }
        PortAnswer::Value(self.poll(port.program, port.rank, ctx.pt_root, id.index))
    }

    /// Polls one of this MOPED's descriptors for its owner.
    fn poll(&mut self, program: ProgramId, rank: Rank, pt_root: u64, index: DescIndex) -> u64 {
        let d = match self.table.check_owner(index, program, rank, pt_root) {
            Ok(d) => *d,
            Err(e) => {
                self.error(e);
                return PollStatus::Error.to_value();
            }
        };
        let local = self.local[index as usize];
        if d.has(COMPLETED) {
            self.free(index);
            return d.poll_status().to_value();
        }
        if local.revoked {
            self.free(index);
            return PollStatus::Revoked.to_value();
        }
        if self.backoff(program) && !d.is_matched() {
            if !local.forwarded || local.refused {
                self.stats.revoked += 1;
                self.free(index);
                return PollStatus::Revoked.to_value();
            }
            if !local.revoking {
                self.local[index as usize].revoking = true;
                let receiver = self.receiver_of(&d);
                let dst = self.matching_moped(program, receiver);
                self.send(
                    dst,
                    DevMsg::Revoke {
                        origin: DescId {
                            moped: self.params.id,
                            index,
                        },
                    },
                );
            }
        }
        PollStatus::Pending.to_value()
    }

    fn receiver_of(&self, d: &Descriptor) -> Rank {
        match (d.kind, d.peer) {
            (Some(Kind::Send), Peer::Rank(r)) => r,
            _ => d.rank,
        }
    }

    /// Frees a table entry; the program may be drained here now.
    fn free(&mut self, index: DescIndex) {
        if let Some(d) = self.table.free(index) {
            self.local[index as usize] = Local::default();
            self.check_drained(d.program);
        }
    }

    fn bit(set: &[u64; 4], program: ProgramId) -> bool {
        set[program as usize / 64] >> (program % 64) & 1 == 1
    }

    fn put_bit(set: &mut [u64; 4], program: ProgramId, on: bool) {
        let (w, b) = (program as usize / 64, program % 64);
        if on {
            set[w] |= 1 << b;
        } else {
            set[w] &= !(1 << b);
        }
    }

    /// The MOPED that counts a program's backoff episodes.
    fn home(&self, program: ProgramId) -> MopedId {
        (program as usize % self.params.mopeds.max(1)) as MopedId
    }

    /// Asks the program's home to set the backoff bit everywhere.
    fn request_backoff(&mut self, program: ProgramId) {
        if !self.backoff(program) {
            let home = self.home(program);
            self.send(home, DevMsg::BackoffReq { program });
        }
    }

    /// In backoff and holding none of the program's descriptors: tell the home, once.
    fn check_drained(&mut self, program: ProgramId) {
        if self.backoff(program)
            && !Self::bit(&self.drained, program)
            && self.table.count_program(program) == 0
        {
            Self::put_bit(&mut self.drained, program, true);
            let home = self.home(program);
            let from = self.params.id;
            self.send(home, DevMsg::Drained { program, from });
        }
    }

    /// At the home: a backoff request starts an episode unless one runs.
    fn start_episode(&mut self, program: ProgramId) {
        if self.episodes.contains_key(&program) {
            return;
        }
        self.episodes.insert(program, CoreSet::EMPTY);
        for m in 0..self.params.mopeds {
            self.send(m as MopedId, DevMsg::Backoff { program });
        }
    }

    /// At the home: one more MOPED is drained; the last one ends the episode.
    fn take_drained(&mut self, program: ProgramId, from: MopedId) {
        let Some(drained) = self.episodes.get_mut(&program) else {
            self.stats.anomalies += 1;
            return;
        };
        drained.insert(from);
        if drained.count() as usize == self.params.mopeds {
            self.episodes.remove(&program);
            for m in 0..self.params.mopeds {
                self.send(m as MopedId, DevMsg::Clear { program });
            }
        }
    }

    // ---- Messages from other MOPEDs ----

    /// A message from another MOPED (or from this one), arriving at cycle `now`.
    pub fn receive(&mut self, now: u64, msg: DevMsg) {
        self.now = self.now.max(now);
        match msg {
            DevMsg::Forward { desc } => self.take_forward(desc),
            DevMsg::Refused { origin } => {
                if let Some(l) = self.local.get_mut(origin.index as usize) {
                    l.refused = true;
                }
            }
            DevMsg::BackoffReq { program } => self.start_episode(program),
            DevMsg::Backoff { program } => {
                if !self.backoff(program) {
                    self.stats.backoffs_set += 1;
                }
                Self::put_bit(&mut self.backoff, program, true);
                Self::put_bit(&mut self.drained, program, false);
                self.check_drained(program);
            }
            DevMsg::Drained { program, from } => self.take_drained(program, from),
            DevMsg::Clear { program } => {
                if self.backoff(program) {
                    self.stats.backoffs_cleared += 1;
                }
                Self::put_bit(&mut self.backoff, program, false);
                Self::put_bit(&mut self.drained, program, false);
            }
            DevMsg::Matched { recv, send } => self.take_matched(recv, send),
            DevMsg::SendMatched { send } => {
                if let Some(d) = self.table.get_mut(send.index) {
                    d.status |= MATCHED;
                    self.local[send.index as usize].revoking = false;
                }
            }
            DevMsg::Complete { send, failed } => self.take_complete(send, failed),
            DevMsg::Revoke { origin } => self.take_revoke(origin),
            DevMsg::RevokeReply { origin, revoked } => {
                let i = origin.index as usize;
                if i >= self.local.len() {
                    self.stats.anomalies += 1;
                    return;
                }
                self.local[i].revoking = false;
                let matched = self.table.get(origin.index).is_some_and(|d| d.is_matched());
                if revoked || (!matched && self.local[i].refused) {
                    self.stats.revoked += 1;
                    self.local[i].revoked = true;
                }
            }
            DevMsg::PortStore {
                program,
                rank,
                pt_root,
                value,
            } => {
                let _ = self.data_store(program, rank, pt_root, value);
            }
            DevMsg::PollLoad {
                core,
                reply,
                program,
                rank,
                pt_root,
                id,
            } => {
                let value = self.poll(program, rank, pt_root, id.index);
                self.send(reply, DevMsg::PollReply { core, value });
            }
            DevMsg::PollReply { core, value } => self.out.push(DevOut::PortValue { core, value }),
        }
    }

    /// A copy arriving at its matching MOPED.
    fn take_forward(&mut self, desc: Descriptor) {
        let Some(origin) = desc.link else {
            self.stats.anomalies += 1;
            return;
        };
        // A MOPED that reported itself drained takes no more copies of the program: its
        // count must stay zero until the episode ends.
        let drained = self.backoff(desc.program) && Self::bit(&self.drained, desc.program);
        if drained || self.matcher.arrive(&mut self.table, desc).is_err() {
            self.stats.forward_refusals += 1;
            self.request_backoff(desc.program);
            self.send(origin.moped, DevMsg::Refused { origin });
        }
    }

    /// The receiver's MOPED learns its descriptor is matched.
    fn take_matched(&mut self, recv: DescId, send: SendSide) {
        let i = recv.index as usize;
        let Some(d) = self.table.get_mut(recv.index) else {
            self.stats.anomalies += 1;
            return;
        };
        d.status |= MATCHED;
        self.local[i].revoking = false;
        self.local[i].send = Some(send);
        self.matched.push_back(recv.index);
    }

    /// A completion notice at the sender's MOPED: its arrival step, then the update of the
    /// send descriptor.
    fn take_complete(&mut self, send: DescId, failed: bool) {
        let lock = [Lock::Desc(send.index)];
        let cost = self.engines.cost(StepKind::Ack);
        let ack = self.engines.run(StepKind::Ack, cost, self.now, &lock, None);
        let cost = self.engines.cost(StepKind::SendComplete);
        let prev = Some(ack.engine);
        let done = self
            .engines
            .run(StepKind::SendComplete, cost, ack.end, &lock, prev);
        if done.end <= self.now {
            self.send_done(send, failed);
        } else {
            self.defer(done.end, Later::SendDone { send, failed });
        }
    }

    fn send_done(&mut self, send: DescId, failed: bool) {
        if let Some(d) = self.table.get_mut(send.index) {
            d.status = (d.status | COMPLETED) & !(MATCHED | ACTIVE);
            d.failed = failed;
        }
    }

    /// The matching MOPED drops an unmatched copy on its origin's request.
    fn take_revoke(&mut self, origin: DescId) {
        let found = self
            .table
            .iter()
            .find(|(_, d)| d.link == Some(origin) && !d.has(RESERVED))
            .map(|(i, d)| (i, d.program));
        let revoked = found.is_some_and(|(i, _)| self.matcher.revoke(&mut self.table, i).is_ok());
        self.send(origin.moped, DevMsg::RevokeReply { origin, revoked });
        if let Some((_, program)) = found.filter(|_| revoked) {
            self.check_drained(program);
        }
    }

    // ---- Work ----

    /// Lets the matcher and the copy units work at cycle `now`. Returns the next cycle the
    /// device wants a tick at; `None` means not before its next input.
    pub fn tick(&mut self, now: u64) -> Option<u64> {
        self.now = self.now.max(now);
        let mut progress = self.release(now);
        let mut next: Option<u64> = None;
        if now >= self.matcher_free_at {
            if let Some(done) = self.checking.take() {
                progress = true;
                self.conclude(done);
            }
        }
        if now >= self.matcher_free_at && now >= self.engines.free_at(StepKind::Match) {
            if self.matcher.has_work() {
                let p = &self.params;
                let mhz = p.matching.mhz(p.matcher, p.core_mhz);
                self.matcher
                    .advance_to((now as f64 * mhz / p.core_mhz).floor() as u64);
            }
            if let Some(step) = self.matcher.step(&mut self.table) {
                progress = true;
                self.account(&step);
                // The engine's cycles at its own clock, waited for at the MOPED's.
                let p = &self.params;
                let busy = p
                    .matching
                    .moped_cycles(p.matcher, step.cycles.max(1), p.core_mhz);
                let cost = busy + self.engines.cost(StepKind::Match);
                let slot = self
                    .engines
                    .run(StepKind::Match, cost, now, &[Lock::Queues], None);
                self.matcher_free_at = slot.end;
                match self.params.matching.result_at {
                    matching::ResultAt::End => self.checking = Some(step),
                    matching::ResultAt::Start => self.conclude(step),
                }
            }
        }
        if self.checking.is_some() {
            next = Some(self.matcher_free_at.max(now + 1));
        }
        if self.matcher.has_work() {
            let free = self.engines.free_at(StepKind::Match);
            next = Some(self.matcher_free_at.max(free).max(now + 1));
        }
        progress |= self.activate(now);
        progress |= self.issue(now);
        progress |= self.finish_done(now);
        if progress {
            next = Some(now + 1);
        }
        match (next, self.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b.max(now + 1))),
            (a, b) => a.or(b.map(|b| b.max(now + 1))),
        }
    }

    /// The first cycle deferred work or a held copy request is due.
    fn next_due(&self) -> Option<u64> {
        let later = self.later.peek().map(|Reverse((at, _, _))| *at);
        let copies = self.active.iter().flatten().filter_map(|a| match a.held {
            Some((at, _)) => Some(at),
            None => Some(a.ready_at).filter(|&t| t > self.now),
        });
        later.into_iter().chain(copies).min()
    }

    /// The number of active copies changes at `now`: the cycles since the last change
    /// count for the old number.
    fn note_active(&mut self, now: u64) {
        let n = self.active.iter().filter(|a| a.is_some()).count() as i64;
        if let Some(since) = self.active_since {
            self.active_copies.sample_n(n, now - since.min(now));
        }
        self.active_since = Some(now);
    }

    /// A finished check takes effect: its pair is forwarded, or its copy refused.
    fn conclude(&mut self, step: matching::Step) {
        if let Some((si, ri)) = step.matched {
            self.pair(si, ri);
        }
        if let Some(copy) = step.refused {
            self.refuse(copy);
        }
    }

    fn account(&mut self, step: &matching::Step) {
        self.stats.match_searches += 1;
        self.stats.match_search_entries += step.traversed;
        self.stats.match_search_max = self.stats.match_search_max.max(step.traversed);
        self.stats.match_cycles += step.cycles;
        self.stats.match_overflows += step.overflow as u64;
        self.depths[step.searched as usize].sample(step.depth as i64);
    }

    /// The engine had no room for a copy: refuse it as a full table would.
    fn refuse(&mut self, copy: Descriptor) {
        self.stats.match_full += 1;
        self.stats.forward_refusals += 1;
        self.check_drained(copy.program);
        self.request_backoff(copy.program);
        if let Some(origin) = copy.link {
            self.send(origin.moped, DevMsg::Refused { origin });
        }
    }

    /// The matcher paired copies `si` (send) and `ri` (receive): tell both local MOPEDs and
    /// free the copies.
    fn pair(&mut self, si: DescIndex, ri: DescIndex) {
        let (Some(s), Some(r)) = (self.table.get(si).copied(), self.table.get(ri).copied()) else {
            self.stats.anomalies += 1;
            return;
        };
        let (Some(send_id), Some(recv_id)) = (s.link, r.link) else {
            self.stats.anomalies += 1;
            return;
        };
        self.stats.matched += 1;
        self.table.free(si);
        self.table.free(ri);
        self.check_drained(s.program);
        let send = SendSide {
            id: send_id,
            program: s.program,
            rank: s.rank,
            va: s.va,
            size: s.size,
            pt_root: s.pt_root,
        };
        self.send(send_id.moped, DevMsg::SendMatched { send: send_id });
        self.send(
            recv_id.moped,
            DevMsg::Matched {
                recv: recv_id,
                send,
            },
        );
    }

    /// Moves matched receives into free active match entries: the activation step, after
    /// which the copy unit starts.
    fn activate(&mut self, now: u64) -> bool {
        let mut progress = false;
        while let Some(slot) = self.active.iter().position(|a| a.is_none()) {
            let Some(ri) = self.matched.pop_front() else {
                break;
            };
            let (Some(r), Some(send)) = (self.table.get(ri).copied(), self.local[ri as usize].send)
            else {
                self.stats.anomalies += 1;
                continue;
            };
            progress = true;
            let len = send.size.min(r.size);
            if send.size > r.size {
                self.stats.truncated += 1;
            }
            let t = Transfer {
                send: Buffer {
                    va: send.va,
                    root: send.pt_root,
                },
                recv: Buffer {
                    va: r.va,
                    root: r.pt_root,
                },
                len,
            };
            let cfg = CopyConfig {
                lines: self.params.copy_lines.max(1),
                staging_lines: self.params.staging_lines.max(1) + self.params.walk_cache_lines,
                page_table: self.params.page_table,
            };
            match CopyUnit::new(&cfg, &t) {
                Ok(mut unit) => {
                    unit.seed_walker(&self.walk_cache);
                    self.stats.activated += 1;
                    if let Some(d) = self.table.get_mut(ri) {
                        d.status |= ACTIVE;
                    }
                    let cost = self.engines.cost(StepKind::Activate);
                    let lock = [Lock::Desc(ri)];
                    let step = self.engines.run(StepKind::Activate, cost, now, &lock, None);
                    self.note_active(now);
                    self.active[slot] = Some(Active {
                        recv: ri,
                        send,
                        unit,
                        ready_at: step.end,
                        held: None,
                        engine: Some(step.engine),
                        pages: [0; 2],
                    });
                }
                Err(_) => {
                    // A buffer that runs off the address space: fail both sides.
                    self.finish(now, ri, send, None, (true, true));
                }
            }
        }
        progress
    }

    /// Issues up to `ops_per_cycle` of the copy units' requests, round robin, each when its
    /// line step ends. Page-fault reports are not coherence operations and do not count.
    fn issue(&mut self, now: u64) -> bool {
        let n = self.active.len();
        let mut budget = self.params.ops_per_cycle.max(1);
        let mut issued = false;
        let mut idle_in_a_row = 0;
        let mut slot = self.next_slot % n;
        while idle_in_a_row < n && budget > 0 {
            match self.next_request(slot, now) {
                Some(r) => {
                    if !matches!(r, CopyReq::Fault { .. }) {
                        budget -= 1;
                    }
                    self.start(slot, r);
                    issued = true;
                    idle_in_a_row = 0;
                }
                None => idle_in_a_row += 1,
            }
            slot = (slot + 1) % n;
        }
        if budget == 0 {
            self.stats.op_limit_cycles += 1;
        }
        self.next_slot = slot;
        issued
    }

    /// Slot `slot`'s next request whose step has ended by `now`. A request that needs an
    /// engine's time waits in the slot until its step ends.
    fn next_request(&mut self, slot: usize, now: u64) -> Option<CopyReq> {
        let a = self.active[slot].as_mut()?;
        if a.ready_at > now {
            return None;
        }
        if let Some((at, _)) = a.held {
            if at > now {
                return None;
            }
            return a.held.take().map(|(_, r)| r);
        }
        let r = a.unit.next_request()?;
        let page = match r {
            CopyReq::Read { line } if !a.unit.walk_awaits(line) => Some((Side::Send, line)),
            CopyReq::Own { line, .. } => Some((Side::Recv, line)),
            _ => None,
        };
        let new_page = page.and_then(|(side, line)| {
            let frame = line / crate::os::pagetable::PAGE_BYTES + 1;
            let last = &mut a.pages[side as usize];
            (std::mem::replace(last, frame) != frame).then_some(())
        });
        if matches!(r, CopyReq::Write { .. } | CopyReq::Fault { .. }) {
            return Some(r);
        }
        let mut prev = a.engine;
        let mut ready = now;
        if new_page.is_some() {
            let cost = self.engines.cost(StepKind::Page);
            let step = self.engines.run(StepKind::Page, cost, ready, &[], prev);
            (prev, ready) = (Some(step.engine), step.end);
        }
        let cost = self.engines.cost(StepKind::Line);
        let step = self.engines.run(StepKind::Line, cost, ready, &[], prev);
        let a = self.active[slot].as_mut()?;
        a.engine = Some(step.engine);
        if step.end > now {
            a.held = Some((step.end, r));
            return None;
        }
        Some(r)
    }

    /// Starts one copy-unit request.
    fn start(&mut self, slot: usize, r: CopyReq) {
        match r {
            CopyReq::Read { line } => {
                let page_table = self.active[slot]
                    .as_ref()
                    .is_some_and(|a| a.unit.walk_awaits(line));
                let waiting = self.reads.entry(line).or_default();
                let first = waiting.is_empty();
                waiting.push(slot);
                if first {
                    self.stats.line_reads += 1;
                    self.out.push(DevOut::Line(MopedReq {
                        kind: MopedKind::Read,
                        addr: line,
                        write: None,
                        page_table,
                    }));
                }
            }
            CopyReq::Own { line, whole } => {
                let kind = if whole && self.params.fill {
                    self.stats.line_fills += 1;
                    MopedKind::Fill
                } else {
                    self.stats.line_owns += 1;
                    MopedKind::Own
                };
                self.owns.entry(line).or_default().push_back(slot);
                self.out.push(DevOut::Line(MopedReq {
                    kind,
                    addr: line,
                    write: None,
                    page_table: false,
                }));
            }
            CopyReq::Write { line, data, mask } => {
                self.stats.line_writes += 1;
                self.writes.entry(line).or_default().push_back(slot);
                self.out.push(DevOut::Write {
                    addr: line,
                    data,
                    mask,
                });
            }
            CopyReq::Fault { side, va } => {
                self.stats.faults += 1;
                let Some(a) = self.active[slot].as_ref() else {
                    return;
                };
                let (program, rank, pt_root) = match side {
                    Side::Send => (a.send.program, a.send.rank, a.send.pt_root),
                    Side::Recv => {
                        let d = self.table.get(a.recv).copied().unwrap_or_else(|| {
                            Descriptor::reserved(a.send.program, a.send.rank, a.send.pt_root)
                        });
                        (d.program, d.rank, d.pt_root)
                    }
                };
                self.out.push(DevOut::Fault {
                    slot,
                    program,
                    rank,
                    pt_root,
                    va,
                });
            }
        }
    }

    /// The L2's answer to a line request.
    pub fn line_done(&mut self, d: MopedDone) {
        match d {
            MopedDone::Data { addr, data } => {
                for slot in self.reads.remove(&addr).unwrap_or_default() {
                    if let Some(a) = self.active[slot].as_mut() {
                        if a.unit.on_read(addr, &data).is_err() {
                            self.stats.anomalies += 1;
                        }
                    }
                }
            }
            MopedDone::Granted { addr } => {
                let slot = self.owns.get_mut(&addr).and_then(|q| q.pop_front());
                if self.owns.get(&addr).is_some_and(|q| q.is_empty()) {
                    self.owns.remove(&addr);
                }
                match slot.and_then(|s| self.active[s].as_mut()) {
                    Some(a) => {
                        if a.unit.on_granted(addr).is_err() {
                            self.stats.anomalies += 1;
                        }
                    }
                    None => self.stats.anomalies += 1,
                }
            }
            // The copy unit never sends data with its requests.
            MopedDone::Written { .. } => self.stats.anomalies += 1,
        }
    }

    /// The answer to a [`DevOut::Write`]: false if the rights were lost before it.
    pub fn write_done(&mut self, addr: LineAddr, ok: bool) {
        let slot = self.writes.get_mut(&addr).and_then(|q| q.pop_front());
        if self.writes.get(&addr).is_some_and(|q| q.is_empty()) {
            self.writes.remove(&addr);
        }
        if !ok {
            self.stats.write_retries += 1;
        }
        match slot.and_then(|s| self.active[s].as_mut()) {
            Some(a) => {
                if a.unit.on_write(addr, ok).is_err() {
                    self.stats.anomalies += 1;
                }
            }
            None => self.stats.anomalies += 1,
        }
    }

    /// The OS's answer to [`DevOut::Fault`]: `mapped` false if the address is outside the
    /// process (the transfer fails).
    pub fn fault_done(&mut self, slot: usize, mapped: bool) {
        match self.active.get_mut(slot).and_then(|a| a.as_mut()) {
            Some(a) => {
                if a.unit.on_fault_resolved(mapped).is_err() {
                    self.stats.anomalies += 1;
                }
            }
            None => self.stats.anomalies += 1,
        }
    }

    /// Retires finished copies: both descriptors complete.
    fn finish_done(&mut self, now: u64) -> bool {
        let mut progress = false;
        for slot in 0..self.active.len() {
            let status = match &self.active[slot] {
                Some(a) => a.unit.status(),
                None => continue,
            };
            if status == CopyStatus::Running {
                continue;
            }
            self.note_active(now);
            let a = self.active[slot].take().expect("checked");
            if self.params.walk_cache_lines > 0 {
                let lines = a.unit.walker_lines();
                let skip = lines.len().saturating_sub(self.params.walk_cache_lines);
                self.walk_cache = lines[skip..].to_vec();
            }
            let st = a.unit.stats();
            self.stats.walks += st.walk.walks;
            self.stats.walk_line_reads += st.walk.line_reads;
            self.stats.walk_staging_hits += st.walk.staging_hits;
            self.stats.anomalies += st.anomalies;
            let (send_failed, recv_failed) = match status {
                CopyStatus::Failed(Failure::Unmapped { side, .. }) => (side == Side::Send, true),
                _ => (false, false),
            };
            self.finish(now, a.recv, a.send, a.engine, (send_failed, recv_failed));
            progress = true;
        }
        progress
    }

    /// The receive-completion step of a copy whose last step ran on engine `prev`; its
    /// effects show when it ends.
    fn finish(
        &mut self,
        now: u64,
        recv: DescIndex,
        send: SendSide,
        prev: Option<u8>,
        (send_failed, recv_failed): (bool, bool),
    ) {
        let cost = self.engines.cost(StepKind::RecvComplete);
        let lock = [Lock::Desc(recv)];
        let step = self
            .engines
            .run(StepKind::RecvComplete, cost, now, &lock, prev);
        if step.end <= now {
            self.complete(recv, send, send_failed, recv_failed);
        } else {
            let work = Later::RecvDone {
                recv,
                send,
                send_failed,
                recv_failed,
            };
            self.defer(step.end, work);
        }
    }

    /// Marks the receive descriptor complete here and tells the sender's MOPED.
    fn complete(&mut self, recv: DescIndex, send: SendSide, send_failed: bool, recv_failed: bool) {
        let truncated = self.table.get(recv).is_some_and(|d| send.size > d.size);
        if let Some(d) = self.table.get_mut(recv) {
            d.status = (d.status | COMPLETED) & !(MATCHED | ACTIVE);
            d.failed = recv_failed || truncated;
        }
        self.stats.completed += 1;
        if recv_failed || send_failed || truncated {
            self.stats.failed += 1;
        }
        self.send(
            send.id.moped,
            DevMsg::Complete {
                send: send.id,
                failed: send_failed,
            },
        );
    }
}

/// The matching MOPED of (program, receiver rank): ranks spread over the MOPEDs, shifted
/// per program, so a program whose rank r runs on core r matches at the receiver's core.
pub fn matching_moped(program: ProgramId, receiver: Rank, mopeds: usize) -> MopedId {
    ((receiver as usize + 7 * program as usize) % mopeds.max(1)) as MopedId
}
