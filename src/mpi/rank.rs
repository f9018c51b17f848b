//! One rank of the runtime: its program, the work it has queued, the decisions in progress
//! and its requests, and the state of both paths.
//!
//! A rank runs its calls in program order. Work that does not depend on loaded values is
//! queued as [`Micro`]s (stores, copies, sweeps); decisions that do (a flag polled, a
//! packet header read, a queue entry compared, a port answer) are [`Task`]s on a stack,
//! each issuing one load and acting on its value when the core steps again.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use crate::coherence::HitLevel;
use crate::envelope::{Kind, Peer, Tag};
use crate::sim::Next;
use crate::stats::Distribution;
use crate::workload::tags::TagMap;
use crate::workload::{Call, Origins, ReqId};

use super::activity::{Activity, Breakdown};
use super::layout::Layout;
use super::ops::{Loop, Micro};
use super::overlap::Overlap;
use super::queues::{Arena, Queues};
use super::shm::PktHeader;
use super::verify::Claim;

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// Not posted yet.
    New,
    /// Posted to MOPED.
    /// The descriptor ID's 16 bits, as the reservation answered them.
    Moped(u16),
    /// On the shared-memory path.
    Shm,
    /// Through the NICs (`[nic]`).
    Nic,
}

/// A send or receive request.
#[derive(Clone, Debug)]
pub(super) struct Req {
    pub kind: Kind,
    /// Destination (sends) or source (receives).
    pub peer: Peer,
    pub tag: Tag,
    pub ctx: u16,
    pub va: u64,
    pub bytes: u64,
    pub path: Path,
    pub done: bool,
    pub claim: Option<Claim>,
    /// Posting order, for draining MOPED descriptors in order.
    pub seq: u64,
    /// The call that started it (index into the rank's calls), for reports.
    pub call: usize,
    /// The cycle it was posted, for its latency.
    pub posted_at: u64,
}

impl Req {
    /// A request with no buffer yet, not posted.
    pub fn new(kind: Kind, peer: Peer, tag: Tag, ctx: u16) -> Req {
        Req {
            kind,
            peer,
            tag,
            ctx,
            va: 0,
            bytes: 0,
            path: Path::New,
            done: false,
            claim: None,
            seq: 0,
            call: 0,
            posted_at: 0,
        }
    }
}

/// A packet waiting to be written into a ch3:shm queue.
#[derive(Clone, Debug)]
pub(super) struct OutPkt {
    pub header: Option<[u64; 4]>,
    pub data: u64,
    pub len: u64,
    pub sent: u64,
    /// The send request that completes once the data is written.
    pub completes: Option<ReqId>,
}

/// A rendezvous payload arriving from one source.
#[derive(Clone, Copy, Debug)]
pub(super) struct Stream {
    pub rreq: ReqId,
    pub total: u64,
    pub got: u64,
}

/// A decision in progress.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Task {
    /// Take the next call of the program.
    NextCall,
    /// Post a send or receive: check the backoff word, then MOPED or shared memory.
    Post { req: ReqId, step: u8 },
    /// Reserve a descriptor and store its fields.
    MopedPost { req: ReqId, step: u8 },
    /// Poll a MOPED descriptor until it is not pending.
    MopedPoll { req: ReqId, step: u8, drain: bool },
    /// Resolve every outstanding MOPED descriptor (before switching to shared memory).
    Drain { reqs: Vec<ReqId>, i: usize },
    /// Wait for requests, in order.
    Wait { reqs: Vec<ReqId>, i: usize },
    /// One pass of the shared-memory progress engine.
    Progress { i: usize },
    /// Write pending packets into the queue to `dst`.
    Push { dst: u16, step: u8, tail: u64 },
    /// Look at the queue from `src` and handle one packet.
    Poll {
        src: u16,
        step: u8,
        head: u64,
        nb: u64,
        w: [u64; 4],
    },
    /// Search a list for a matching entry; the result is left in `found`.
    Search {
        posted: bool,
        key: u64,
        i: usize,
        step: u8,
    },
    /// After a search: act on an incoming packet.
    Incoming {
        src: u16,
        head: u64,
        nb: u64,
        hdr: PktHeader,
    },
    /// After a search: act on a receive being posted.
    RecvPosted { req: ReqId },
    /// After a search: a send to the rank itself.
    SelfSend { req: ReqId },
    /// The dissemination barrier, round `k`.
    Barrier { k: u32, step: u8 },
    /// A look at the NIC: its tail read, then each new position taken; or, where the NIC
    /// matches, its pairs' count, then each new pair taken.
    NicPoll { step: u8 },
    /// Pair `i` of the NIC's completion queue: its receive's request (step 0, the value at
    /// step 1), its message's position (the value at step 2), then the delivery.
    NicPair { i: u64, step: u8, req: u32 },
    /// The NIC's message at position `seq`: its match word read, then the posted-receive
    /// queue searched.
    NicArrival { seq: u64, step: u8 },
    /// After that search: the message delivered or left waiting.
    NicIncoming { seq: u64, word: u64 },
    /// The message at `seq` copied into receive `req`'s buffer: its size read (step 0),
    /// then the copy (step 1).
    NicDeliver { seq: u64, req: ReqId, step: u8 },
    /// More of a payload in the bulk memory, block by block.
    NicBlocks { from: u64, to: u64, left: u64 },
    /// A block in the Read Window copied to `to`.
    NicCopyOut { to: u64, bytes: u64 },
    /// The message at `seq` delivered: flushes, the head, the receive's completion.
    NicDone { seq: u64, req: ReqId, size: u64 },
    /// A VL command: its store, the completion count polled until it reaches `target`,
    /// then a load of `then` (0: none) whose value goes to the task below.
    Vl {
        addr: u64,
        bytes: u64,
        step: u8,
        target: u64,
        then: u64,
    },
}

impl Task {
    /// The activity of a task's steps; `None` for [`Task::NextCall`], whose call decides,
    /// and for a VL command, which serves the search or copy that pushed it.
    pub(super) fn activity(&self) -> Option<Activity> {
        Some(match self {
            Task::NextCall | Task::Vl { .. } => return None,
            Task::Wait { .. }
            | Task::Progress { .. }
            | Task::Poll { step: 0..=2, .. }
            | Task::NicPoll { .. } => Activity::Poll,
            Task::NicDeliver { .. }
            | Task::NicBlocks { .. }
            | Task::NicCopyOut { .. }
            | Task::NicDone { .. } => Activity::Copy,
            Task::NicArrival { .. } | Task::NicIncoming { .. } | Task::NicPair { .. } => {
                Activity::Call
            }
            Task::Search { .. } => Activity::Search,
            Task::MopedPost { .. } => Activity::MopedPort,
            Task::MopedPoll { .. } | Task::Drain { .. } => Activity::MopedWait,
            Task::Post { .. }
            | Task::Push { .. }
            | Task::Poll { .. }
            | Task::Incoming { .. }
            | Task::RecvPosted { .. }
            | Task::SelfSend { .. }
            | Task::Barrier { .. } => Activity::Call,
        })
    }
}

/// What a task does at a step.
pub(super) enum Step {
    /// Issue this access or wait; a load's value goes back to the task.
    Issue(Next),
    /// Look at the stack again (the task changed it).
    Again,
}

/// Counters of one rank.
#[derive(Clone, Debug)]
pub struct RankStats {
    pub instructions: u64,
    pub sends: u64,
    pub send_bytes: u64,
    pub moped_sends: u64,
    pub moped_recvs: u64,
    pub eager: u64,
    pub rendezvous: u64,
    pub self_sends: u64,
    pub polls: u64,
    pub progress_passes: u64,
    pub refused: u64,
    pub revoked: u64,
    pub list_searched: u64,
    /// Unexpected messages whose head went to the LH buffer, and those put on the list
    /// because it was full.
    pub lhs_heads: u64,
    pub lhs_overflows: u64,
    /// The software path's search depths, posted-receive queue then unexpected queue: the
    /// matched entry's position (from 1), or the list's length when none matched.
    pub depths: [Distribution; 2],
    /// Payload bytes of each message sent.
    pub message_bytes: Distribution,
    /// Cycles from each request's post to its completion: sends, then receives.
    pub latency: [Distribution; 2],
    /// The core's accesses that missed its L1, and those served by memory, per
    /// [`Activity`] the core was in when they completed.
    pub l1_misses_in: [u64; ACTIVITIES],
    pub memory_in: [u64; ACTIVITIES],
}

impl Default for RankStats {
    fn default() -> Self {
        RankStats {
            instructions: 0,
            sends: 0,
            send_bytes: 0,
            moped_sends: 0,
            moped_recvs: 0,
            eager: 0,
            rendezvous: 0,
            self_sends: 0,
            polls: 0,
            progress_passes: 0,
            refused: 0,
            revoked: 0,
            list_searched: 0,
            lhs_heads: 0,
            lhs_overflows: 0,
            depths: [Distribution::queue_depths(), Distribution::queue_depths()],
            message_bytes: Distribution::message_sizes(),
            latency: [Distribution::latencies(), Distribution::latencies()],
            l1_misses_in: [0; ACTIVITIES],
            memory_in: [0; ACTIVITIES],
        }
    }
}

/// Every plain counter of [`RankStats`] (all but the distributions), listed once: `$m!(s;
/// field, ...)`.
macro_rules! rank_counters {
    ($m:ident, $s:expr) => {
        $m!($s; instructions, sends, send_bytes, moped_sends, moped_recvs, eager, rendezvous,
            self_sends, polls, progress_passes, refused, revoked, list_searched, lhs_heads,
            lhs_overflows)
    };
}

/// Number of [`RankStats`] plain counters named in `rank_counters`...
const PLAIN_COUNTERS: usize = 15;
/// ... and in all, with the per-activity miss counts after them.
pub(super) const RANK_COUNTERS: usize = PLAIN_COUNTERS + 2 * ACTIVITIES;
const ACTIVITIES: usize = Activity::ALL.len();

impl RankStats {
    /// The plain counters, in declaration order.
    pub(super) fn counters(&self) -> [u64; RANK_COUNTERS] {
        macro_rules! get {
            ($s:expr; $($f:ident),*) => { [$($s.$f),*] };
        }
        let plain: [u64; PLAIN_COUNTERS] = rank_counters!(get, self);
        let mut out = [0; RANK_COUNTERS];
        let per_activity = self.l1_misses_in.iter().chain(&self.memory_in);
        for (o, v) in out.iter_mut().zip(plain.iter().chain(per_activity)) {
            *o = *v;
        }
        out
    }

    /// Adds `times` times `d` (counters in declaration order) to the plain counters.
    pub(super) fn add_counters(&mut self, d: &[u64; RANK_COUNTERS], times: u64) {
        macro_rules! put {
            ($s:expr; $($f:ident),*) => {{
                let mut d = d.iter();
                $($s.$f += d.next().expect("one per counter") * times;)*
            }};
        }
        rank_counters!(put, self);
        let (l1, memory) = d[PLAIN_COUNTERS..].split_at(ACTIVITIES);
        for (mine, v) in self.l1_misses_in.iter_mut().zip(l1) {
            *mine += v * times;
        }
        for (mine, v) in self.memory_in.iter_mut().zip(memory) {
            *mine += v * times;
        }
    }

    /// Counts a completed access of the core's, served at `level`, in activity `a`.
    pub(super) fn served(&mut self, a: Activity, level: HitLevel) {
        match level {
            HitLevel::L1 | HitLevel::Port | HitLevel::Device => {}
            HitLevel::Memory => {
                self.l1_misses_in[a as usize] += 1;
                self.memory_in[a as usize] += 1;
            }
            _ => self.l1_misses_in[a as usize] += 1,
        }
    }

    /// Adds another rank's counters to these.
    pub fn add(&mut self, s: &RankStats) {
        self.add_counters(&s.counters(), 1);
        for (mine, theirs) in self.depths.iter_mut().zip(&s.depths) {
            // Both come from `Distribution::queue_depths`, so their buckets agree.
            mine.merge(theirs).ok();
        }
        self.message_bytes.merge(&s.message_bytes).ok();
        for (mine, theirs) in self.latency.iter_mut().zip(&s.latency) {
            mine.merge(theirs).ok();
        }
    }
}

/// One rank.
pub(super) struct Rank {
    pub me: u16,
    /// The calls, their tags as they travel (`workload::tags`).
    pub calls: Vec<Call>,
    /// How the program's tags travel, to name its own tags in errors.
    pub tags: Arc<TagMap>,
    pub pc: usize,
    pub ops: VecDeque<Micro>,
    pub looping: Option<Loop>,
    /// A loop run with its loads overlapped (`system.core_model = "mlp"`).
    pub overlap: Option<Overlap>,
    pub stack: Vec<Task>,
    pub loaded: Option<u64>,
    pub waiting: bool,
    /// The rank just reached [`Call::ResetStats`] (the driver takes it).
    pub marked: bool,
    /// The rank just reached [`Call::StopStats`] (the driver takes it).
    pub stopped: bool,
    pub reqs: BTreeMap<ReqId, Req>,
    pub seq: u64,
    /// The shared-memory path for the rest of this barrier epoch.
    pub software: bool,
    pub epoch: u64,
    /// The posted-receive and unexpected queues.
    pub queues: Queues,
    /// Per destination, the packets waiting for room in its ch3:shm queue.
    pub outgoing: Vec<VecDeque<OutPkt>>,
    /// Per source, the rendezvous payload arriving from it.
    pub incoming: Vec<Option<Stream>>,
    /// Unexpected eager messages' buffers.
    pub tmp: Arena,
    /// Sweeps started, so each writes values of its own.
    pub stamp: u64,
    pub finished: bool,
    pub stats: RankStats,
    /// Whether the rank's progress-engine passes repeat (see [`PassWatch`]).
    pub pass: PassWatch,
    /// What the task being stepped does, for the work it queues ...
    pub activity: Activity,
    /// ... and what the loop in progress does.
    pub loop_activity: Activity,
    /// Where the rank's cycles went.
    pub time: Breakdown,
    /// The NIC path: VL commands issued, the NIC's tail (or pairs' count) as last read,
    /// and the pairs taken where the NIC matches.
    pub nic_vl: u64,
    pub nic_tail: u64,
    pub nic_pairs: u64,
    /// The last cycle of the program's own work (a compute phase, a sweep, a copy or a
    /// combine) the rank has started: a rank at work is not stuck in MPI, however long
    /// the work runs (the MPI watchdog's progress).
    pub own_work_until: u64,
}

/// What the simulator's fast-forward of polling needs to know of a rank
/// (`sim::fastforward`): whether a pass of the progress engine just began, and whether the
/// pass before it only polled and left the rank where it stood when that pass began, so
/// that, as long as the memory it polls does not change, every pass after it is the same.
#[derive(Debug)]
pub(super) struct PassWatch {
    /// A pass began in the step being run.
    pub started: bool,
    /// Since the last pass began, the rank did something other than poll empty queues.
    pub dirty: bool,
    /// The task stack and the counters when the last pass began (after its first step).
    pub stack: Vec<Task>,
    pub counters: [u64; RANK_COUNTERS],
    /// The counters one idle pass adds.
    pub delta: [u64; RANK_COUNTERS],
}

impl Default for PassWatch {
    fn default() -> Self {
        PassWatch {
            started: false,
            dirty: false,
            stack: Vec::new(),
            counters: [0; RANK_COUNTERS],
            delta: [0; RANK_COUNTERS],
        }
    }
}

impl PassWatch {
    /// At a pass's start (after its first step): whether the pass before it was idle. The
    /// task stack and counters are kept for the next pass's start to compare with. Not
    /// inlined: the driver asks at every step, and a pass starts at few of them.
    #[inline(never)]
    pub fn begin(&mut self, stack: &[Task], counters: [u64; RANK_COUNTERS]) -> bool {
        let idle = !self.dirty && self.stack == stack;
        if idle {
            for (d, (now, then)) in self
                .delta
                .iter_mut()
                .zip(counters.iter().zip(&self.counters))
            {
                *d = now - then;
            }
        }
        self.stack.clear();
        self.stack.extend_from_slice(stack);
        self.counters = counters;
        self.dirty = false;
        idle
    }
}

impl Rank {
    /// A fresh stamp for a store sweep's values, so each sweep writes values of its own.
    pub fn next_stamp(&mut self) -> u64 {
        self.stamp += 1;
        self.stamp << 48 | (self.me as u64) << 40
    }

    /// Rank `me` of `p` running `calls`; `moped` says whether the design has MOPED.
    /// Rank `me` of `p`, running `calls` whose tags travel as `tags` numbers them.
    pub fn new(
        me: u16,
        p: usize,
        (calls, tags): (Vec<Call>, Arc<TagMap>),
        layout: &Layout,
        moped: bool,
    ) -> Rank {
        Rank {
            me,
            calls,
            tags,
            pc: 0,
            ops: VecDeque::new(),
            looping: None,
            overlap: None,
            stack: vec![Task::NextCall],
            loaded: None,
            waiting: false,
            marked: false,
            stopped: false,
            reqs: BTreeMap::new(),
            seq: 0,
            software: !moped,
            epoch: 0,
            queues: Queues::new(layout.list_entries, layout.lh_entries > 0, me),
            outgoing: vec![VecDeque::new(); p],
            incoming: vec![None; p],
            tmp: Arena::new(layout.tmp_base, layout.tmp_bytes),
            stamp: 0,
            finished: false,
            stats: RankStats::default(),
            pass: PassWatch::default(),
            activity: Activity::Call,
            loop_activity: Activity::Call,
            time: Breakdown::default(),
            nic_vl: 0,
            nic_tail: 0,
            nic_pairs: 0,
            own_work_until: 0,
        }
    }
}

impl Rank {
    /// MPI_ERR_TRUNCATE: a message longer than the receive that matched it; `tag` as it
    /// travelled, named as the program wrote it.
    pub(super) fn truncated(&self, src: u16, tag: u16, sent: u64, room: u64) -> String {
        let (me, tag) = (self.me, self.tags.program_tag(tag.into()));
        format!(
            "rank {me}: message from rank {src} (tag {tag}) has {sent} bytes but the receive \
             holds {room} (MPI_ERR_TRUNCATE)"
        )
    }

    /// Whether the rank waits inside an MPI call (a wait, a barrier, a drain, or
    /// MPI_Finalize finishing what others wait for) rather than running its own code.
    pub fn in_blocking_call(&self) -> bool {
        self.pc >= self.calls.len()
            || self.stack.iter().any(|t| {
                matches!(
                    t,
                    Task::Wait { .. } | Task::Barrier { .. } | Task::Drain { .. }
                )
            })
    }

    /// The call the rank is in and its requests not yet done, for a stuck run's report:
    /// kind, peer, tag, size and where each was posted (a MOPED descriptor or shared
    /// memory); `origins` says where the workload's calls were written, when it knows.
    pub fn pending_calls(&self, origins: Option<&Origins>) -> String {
        let at = |i: usize| match origins.and_then(|o| o.at(self.me as usize, i)) {
            Some(place) => format!(" at {place}"),
            None => String::new(),
        };
        let call = match self.pc.checked_sub(1).and_then(|i| self.calls.get(i)) {
            Some(c) if self.pc < self.calls.len() || !self.stack.is_empty() => {
                format!("call {}{} ({})", self.pc - 1, at(self.pc - 1), call_name(c))
            }
            _ => "MPI_Finalize".to_string(),
        };
        let reqs: Vec<String> = self
            .reqs
            .iter()
            .filter(|(_, q)| !q.done)
            .map(|(id, q)| {
                let path = match q.path {
                    Path::New => "not posted".to_string(),
                    Path::Moped(d) => format!("MOPED descriptor {d:#06x}"),
                    Path::Shm => "shared memory".to_string(),
                    Path::Nic => "the NIC".to_string(),
                };
                let what = crate::envelope::describe_call(
                    q.kind,
                    q.peer,
                    self.tags.program(q.tag),
                    q.bytes,
                );
                if *id >= super::calls::INTERNAL_REQ {
                    // The runtime's own message: its tag and number mean nothing to the
                    // program's author.
                    let (dir, peer) = match (q.kind, q.peer) {
                        (Kind::Send, Peer::Rank(r)) => ("to", r.to_string()),
                        (_, Peer::Rank(r)) => ("from", r.to_string()),
                        (_, Peer::Any) => ("from", "any rank".to_string()),
                    };
                    return format!(
                        "\n    the barrier's message {dir} rank {peer} ({path}; call {}{})",
                        q.call,
                        at(q.call)
                    );
                }
                format!(
                    "\n    request {id}: {what} ({path}; call {}{})",
                    q.call,
                    at(q.call)
                )
            })
            .collect();
        let what = if reqs.is_empty() {
            format!(" {}", self.waiting_without_requests())
        } else {
            reqs.concat()
        };
        format!("\n  rank {}: {call}, waiting for:{what}", self.me)
    }

    /// What a rank with no request of its own outstanding waits for, from its task stack.
    fn waiting_without_requests(&self) -> &'static str {
        let barrier = |t: &Task| matches!(t, Task::Barrier { .. });
        let drain = |t: &Task| matches!(t, Task::Drain { .. });
        if self.stack.iter().any(barrier) {
            "the other ranks to reach the barrier (no request of its own outstanding)"
        } else if self.stack.iter().any(drain) {
            "its last sends' data to be taken by their receivers (MPI_Finalize's drain)"
        } else if self.pc >= self.calls.len() {
            "the other ranks to finish (MPI_Finalize; no request of its own outstanding)"
        } else {
            "no request of its own (it polls for the other ranks' messages)"
        }
    }
}

/// The MPI name of a call, for reports.
fn call_name(c: &Call) -> &'static str {
    match c {
        Call::Compute(_) => "compute",
        Call::Sweep { .. } => "sweep",
        Call::Isend { .. } => "MPI_Isend",
        Call::Irecv { .. } => "MPI_Irecv",
        Call::Wait(_) => "MPI_Wait",
        Call::Waitall(_) => "MPI_Waitall",
        Call::Barrier => "MPI_Barrier",
        Call::ResetStats => "the timer's start",
        Call::StopStats => "the timer's stop",
        Call::Combine { .. } => "combine",
        Call::Copy { .. } => "copy",
    }
}
