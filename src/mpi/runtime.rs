//! The per-rank MPI runtime: each rank's calls become the loads, stores and compute of
//! its core, as MPICH2 1.2 over ch3:shm would issue them, or through MOPED's ports.
//!
//! A rank runs its calls in program order. Work that does not depend on loaded values is
//! queued as [`Micro`]s (stores, copies, sweeps); decisions that do (a flag polled, a
//! packet header read, a queue entry compared, a port answer) are [`Task`]s on a stack,
//! each issuing one load and acting on its value when the core steps again.

use std::collections::{BTreeMap, VecDeque};

use crate::coherence::{AccessKind, Completed};
use crate::envelope::{Envelope, Kind, Peer, Tag};
use crate::moped::ports::{pack_poll, pack_store, PollStatus, Port, PortMap, ERROR, REFUSED};
use crate::moped::DescId;
use crate::sim::{Driver, Next, VirtualMemory};
use crate::workload::{Call, ReqId, Workload, CTX_COLL};

use super::layout::Layout;
use super::ops::{load, store, Loop, Mark, Micro};
use super::shm::{self, PktHeader, PktType};
use super::verify::{Claim, Verifier};
use super::MpiParams;

/// The tag of the barrier's messages (in the collective context).
const BARRIER_TAG: u16 = 0xFFF0;
/// Request numbers the runtime uses for its own messages (barrier rounds).
const INTERNAL_REQ: ReqId = 0xFFFF_0000;
/// "No backoff" in the shared backoff word.
pub const NO_BACKOFF: u64 = u64::MAX;
/// Posted-receive and unexpected entries each list can hold.
pub const LIST_ENTRIES: u64 = 2048;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// Not posted yet.
    New,
    /// Posted to MOPED.
    Moped(DescId),
    /// On the shared-memory path.
    Shm,
}

#[derive(Clone, Debug)]
struct Req {
    kind: Kind,
    /// Destination (sends) or source (receives).
    peer: Peer,
    tag: Tag,
    ctx: u16,
    va: u64,
    bytes: u64,
    path: Path,
    done: bool,
    claim: Option<Claim>,
    /// Posting order, for draining MOPED descriptors in order.
    seq: u64,
}

/// An entry of the posted-receive or unexpected list.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Index of its 64-byte record in the list's memory.
    slot: u64,
    src: Peer,
    tag: Tag,
    ctx: u16,
    what: Unexp,
}

/// What an entry stands for.
#[derive(Clone, Copy, Debug)]
enum Unexp {
    /// A posted receive.
    Posted(ReqId),
    /// Eager data copied to a temporary buffer.
    Eager { tmp: u64, bytes: u64 },
    /// A rendezvous request from `src`'s request `sreq`.
    Rts { sreq: u32, bytes: u64 },
    /// A send to the rank itself, waiting for its receive.
    SelfSend(ReqId),
}

fn entry_word(src: Peer, tag: Tag, ctx: u16) -> u64 {
    let s = match src {
        Peer::Rank(r) => r as u64,
        Peer::Any => 0xFFFF,
    };
    let t = tag_value(tag) as u64;
    1 << 63 | (ctx as u64) << 32 | t << 16 | s
}

fn word_matches(recv: u64, msg: u64) -> bool {
    let f = |w: u64, sh: u32| (w >> sh) & 0xFFFF;
    f(recv, 32) == f(msg, 32)
        && (f(recv, 16) == 0xFFFF || f(recv, 16) == f(msg, 16))
        && (f(recv, 0) == 0xFFFF || f(recv, 0) == f(msg, 0))
}

/// A packet waiting to be written into a queue.
#[derive(Clone, Debug)]
struct OutPkt {
    header: Option<[u64; 4]>,
    data: u64,
    len: u64,
    sent: u64,
    /// The send request that completes once the data is written.
    completes: Option<ReqId>,
}

/// A rendezvous payload arriving from one source.
#[derive(Clone, Copy, Debug)]
struct Stream {
    rreq: ReqId,
    total: u64,
    got: u64,
}

/// A decision in progress.
#[derive(Clone, Debug)]
enum Task {
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
}

/// Counters of one rank.
#[derive(Clone, Debug, Default)]
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
}

/// One rank.
struct Rank {
    me: u16,
    calls: Vec<Call>,
    pc: usize,
    ops: VecDeque<Micro>,
    looping: Option<Loop>,
    stack: Vec<Task>,
    loaded: Option<u64>,
    waiting: bool,
    reqs: BTreeMap<ReqId, Req>,
    seq: u64,
    /// The shared-memory path for the rest of this barrier epoch.
    software: bool,
    epoch: u64,
    posted: Vec<Entry>,
    unexpected: Vec<Entry>,
    free_slots: [Vec<u64>; 2],
    found: Option<usize>,
    outgoing: Vec<VecDeque<OutPkt>>,
    incoming: Vec<Option<Stream>>,
    tmp: Arena,
    stamp: u64,
    finished: bool,
    stats: RankStats,
}

/// Runs a [`Workload`]'s ranks on cores `0..P` and checks every message.
pub struct MpiDriver {
    ranks: Vec<Rank>,
    procs: Vec<crate::os::ProcId>,
    layout: Layout,
    ports: PortMap,
    params: MpiParams,
    moped: bool,
    cpi: f64,
    pub verifier: Verifier,
    /// A rank's error, reported at the next chance the simulator gives.
    failure: Option<String>,
}

impl MpiDriver {
    pub fn new(
        w: &Workload,
        procs: Vec<crate::os::ProcId>,
        layout: Layout,
        ports: PortMap,
        params: MpiParams,
        moped: bool,
        cpi: f64,
    ) -> MpiDriver {
        let p = w.ranks.len();
        let ranks = w
            .ranks
            .iter()
            .enumerate()
            .map(|(r, prog)| Rank {
                me: r as u16,
                calls: prog.calls.clone(),
                pc: 0,
                ops: VecDeque::new(),
                looping: None,
                stack: vec![Task::NextCall],
                loaded: None,
                waiting: false,
                reqs: BTreeMap::new(),
                seq: 0,
                software: !moped,
                epoch: 0,
                posted: Vec::new(),
                unexpected: Vec::new(),
                free_slots: [
                    (0..LIST_ENTRIES).rev().collect(),
                    (0..LIST_ENTRIES).rev().collect(),
                ],
                found: None,
                outgoing: vec![VecDeque::new(); p],
                incoming: vec![None; p],
                tmp: Arena::new(layout.tmp_base, layout.tmp_bytes),
                stamp: 0,
                finished: false,
                stats: RankStats::default(),
            })
            .collect();
        MpiDriver {
            ranks,
            procs,
            layout,
            ports,
            params,
            moped,
            cpi,
            verifier: Verifier::default(),
            failure: None,
        }
    }

    pub fn rank_stats(&self, r: usize) -> &RankStats {
        &self.ranks[r].stats
    }

    /// The process of each rank.
    pub fn procs(&self) -> &[crate::os::ProcId] {
        &self.procs
    }

    pub fn n_ranks(&self) -> usize {
        self.ranks.len()
    }

    /// What each unfinished rank is doing, for a stuck run's report.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for r in self.ranks.iter().filter(|r| !r.finished) {
            out.push_str(&format!(
                "\n  rank {}: call {} of {} ({:?}), task {:?}",
                r.me,
                r.pc,
                r.calls.len(),
                r.calls.get(r.pc.saturating_sub(1)),
                r.stack.last()
            ));
        }
        out
    }
}

impl Driver for MpiDriver {
    fn next(&mut self, core: usize, _now: u64) -> Next {
        if core >= self.ranks.len() {
            return Next::Done;
        }
        if self.ranks[core].waiting {
            return Next::WaitForCompletion;
        }
        match self.advance(core) {
            Ok(n) => n,
            Err(e) => {
                // Reported at the next completion (drivers fail through `completed`).
                self.ranks[core].stack.clear();
                self.ranks[core].calls.clear();
                self.failure.get_or_insert(e);
                Next::Done
            }
        }
    }

    fn completed(&mut self, core: usize, c: &Completed, _now: u64) -> Result<(), String> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        if c.req.kind == AccessKind::Load && core < self.ranks.len() {
            let r = &mut self.ranks[core];
            r.waiting = false;
            r.loaded = Some(c.value);
        }
        Ok(())
    }

    fn wants_memory(&self) -> bool {
        self.verifier.has_pending() || self.failure.is_some()
    }

    fn read_memory(&mut self, mem: &dyn VirtualMemory, _now: u64) -> Result<(), String> {
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        self.verifier.read(mem)
    }
}

/// What a task does at a step.
enum Step {
    /// Issue this access or wait; a load's value goes back to the task.
    Issue(Next),
    /// Look at the stack again (the task changed it).
    Again,
}

impl MpiDriver {
    fn rank_va(&self, r: usize, at: crate::workload::BufRef) -> u64 {
        self.layout.buf_va[r][at.buf as usize] + at.offset
    }

    fn port(&self, r: usize, port: Port) -> u64 {
        // Ranks were checked against the port map when the run was set up.
        self.ports
            .addr_of(0, r as u16, port)
            .unwrap_or(self.ports.base())
    }

    /// The next thing core `c` does.
    fn advance(&mut self, c: usize) -> Result<Next, String> {
        loop {
            let value = self.ranks[c].loaded.take();
            let rank = &mut self.ranks[c];
            if let Some(l) = rank.looping.as_mut() {
                match l.next(value) {
                    Some(n) => {
                        rank.waiting = l.wants_value();
                        rank.stats.instructions += 1;
                        return Ok(n);
                    }
                    None => {
                        rank.looping = None;
                        continue;
                    }
                }
            }
            if let Some(m) = rank.ops.pop_front() {
                match m {
                    Micro::Load { addr, size } => {
                        rank.waiting = true;
                        rank.stats.instructions += 1;
                        return Ok(load(addr, size));
                    }
                    Micro::Store { addr, size, value } => {
                        rank.stats.instructions += 1;
                        return Ok(store(addr, size, value));
                    }
                    Micro::Copy { src, dst, len } => {
                        rank.looping = Some(Loop::Copy {
                            src,
                            dst,
                            len,
                            off: 0,
                            loaded: None,
                        })
                    }
                    Micro::Sweep {
                        at,
                        bytes,
                        stride,
                        kind,
                    } => {
                        rank.stamp += 1;
                        rank.looping = Some(Loop::Sweep {
                            at,
                            bytes,
                            stride: stride.max(1),
                            kind,
                            off: 0,
                            loaded: false,
                            stamp: rank.stamp << 48 | (rank.me as u64) << 40,
                        })
                    }
                    Micro::Combine { acc, src, len } => {
                        rank.looping = Some(Loop::Combine {
                            acc,
                            src,
                            len,
                            off: 0,
                            step: 0,
                            a: 0,
                            size: 8,
                        })
                    }
                    Micro::Compute(n) => {
                        rank.stats.instructions += n;
                        let cycles = (n as f64 * self.cpi).ceil() as u64;
                        if cycles > 0 {
                            return Ok(Next::Wait(cycles));
                        }
                    }
                    Micro::Mark(mark) => {
                        if self.mark(c, mark)? {
                            // A receive to check: its bytes are read before the rank
                            // can touch the buffer again.
                            return Ok(Next::Wait(1));
                        }
                    }
                }
                continue;
            }
            let Some(task) = self.ranks[c].stack.pop() else {
                self.ranks[c].finished = true;
                return Ok(Next::Done);
            };
            match self.step(c, task, value)? {
                Step::Issue(n) => {
                    let rank = &mut self.ranks[c];
                    if let Next::Access(r) = n {
                        rank.stats.instructions += 1;
                        if r.kind == AccessKind::Load {
                            debug_assert!(rank.ops.is_empty());
                            rank.waiting = true;
                        }
                    }
                    return Ok(n);
                }
                Step::Again => continue,
            }
        }
    }

    /// Bookkeeping; true when a receive was completed and its check is pending.
    fn mark(&mut self, c: usize, mark: Mark) -> Result<bool, String> {
        let proc = self.procs[c];
        let rank = &mut self.ranks[c];
        match mark {
            Mark::SendDone(req) => {
                if let Some(r) = rank.reqs.get_mut(&req) {
                    r.done = true;
                }
                Ok(false)
            }
            Mark::RecvDone(req) => {
                let me = rank.me;
                let r = rank
                    .reqs
                    .get_mut(&req)
                    .ok_or_else(|| format!("rank {me}: receive {req} completed twice"))?;
                r.done = true;
                let claim = r.claim.expect("a posted receive has a claim");
                self.verifier.recv_completed(
                    me,
                    r.peer,
                    r.tag,
                    r.ctx,
                    claim,
                    (proc, r.va),
                    r.bytes,
                );
                Ok(true)
            }
            Mark::FreeTmp(at) => {
                rank.tmp.release(at);
                Ok(false)
            }
        }
    }

    /// Runs one step of task `task` of rank `c`; `value` is the value of the load the task
    /// issued last (if it did).
    fn step(&mut self, c: usize, task: Task, value: Option<u64>) -> Result<Step, String> {
        let p = self.ranks.len();
        let me = self.ranks[c].me;
        match task {
            Task::NextCall => self.next_call(c),
            Task::Post { req, step } => {
                if step == 0 {
                    self.register(c, req)?;
                    if !self.moped || self.ranks[c].software {
                        return self.post_shm(c, req);
                    }
                    self.ranks[c].stack.push(Task::Post { req, step: 1 });
                    return Ok(Step::Issue(load(self.layout.flag_va, 8)));
                }
                if step == 1 {
                    let flag = value.ok_or("no backoff word")?;
                    if flag == self.ranks[c].epoch {
                        // Another rank backed off in this epoch: shared memory until the
                        // next barrier, after this rank's descriptors are resolved.
                        self.ranks[c].software = true;
                        self.ranks[c].stack.push(Task::Post { req, step: 2 });
                        self.push_drain(c, None);
                        return Ok(Step::Again);
                    }
                    self.ranks[c].stack.push(Task::MopedPost { req, step: 0 });
                    return Ok(Step::Again);
                }
                self.post_shm(c, req)
            }
            Task::MopedPost { req, step } => self.moped_post(c, req, step, value),
            Task::MopedPoll { req, step, drain } => self.moped_poll(c, req, step, drain, value),
            Task::Drain { reqs, i } => {
                let rank = &mut self.ranks[c];
                if let Some(&r) = reqs.get(i) {
                    rank.stack.push(Task::Drain { reqs, i: i + 1 });
                    if matches!(rank.reqs.get(&r), Some(q) if !q.done && matches!(q.path, Path::Moped(_)))
                    {
                        rank.stack.push(Task::MopedPoll {
                            req: r,
                            step: 0,
                            drain: true,
                        });
                    }
                }
                Ok(Step::Again)
            }
            Task::Wait { reqs, i } => {
                let rank = &mut self.ranks[c];
                let Some(&r) = reqs.get(i) else {
                    for r in &reqs {
                        rank.reqs.remove(r);
                    }
                    return Ok(Step::Again);
                };
                let q = rank.reqs.get(&r).ok_or_else(|| {
                    format!("rank {me}: wait for request {r}, which is not active")
                })?;
                if q.done {
                    rank.stack.push(Task::Wait { reqs, i: i + 1 });
                    return Ok(Step::Again);
                }
                let path = q.path;
                rank.stack.push(Task::Wait { reqs, i });
                match path {
                    Path::Moped(_) => rank.stack.push(Task::MopedPoll {
                        req: r,
                        step: 0,
                        drain: false,
                    }),
                    Path::Shm => {
                        rank.stats.progress_passes += 1;
                        rank.stack.push(Task::Progress { i: 0 })
                    }
                    Path::New => return Err(format!("rank {me}: request {r} was never posted")),
                }
                Ok(Step::Again)
            }
            Task::Progress { i } => {
                let rank = &mut self.ranks[c];
                if i < p {
                    rank.stack.push(Task::Progress { i: i + 1 });
                    if !rank.outgoing[i].is_empty() {
                        rank.stack.push(Task::Push {
                            dst: i as u16,
                            step: 0,
                            tail: 0,
                        });
                    }
                } else if i < 2 * p {
                    let src = (i - p) as u16;
                    rank.stack.push(Task::Progress { i: i + 1 });
                    if src != me {
                        rank.stack.push(Task::Poll {
                            src,
                            step: 0,
                            head: 0,
                            nb: 0,
                            w: [0; 4],
                        });
                    }
                }
                Ok(Step::Again)
            }
            Task::Push { dst, step, tail } => self.push(c, dst, step, tail, value),
            Task::Poll {
                src,
                step,
                head,
                nb,
                w,
            } => self.poll(c, src, step, head, nb, w, value),
            Task::Search {
                posted,
                key,
                i,
                step,
            } => self.search(c, posted, key, i, step, value),
            Task::Incoming { src, head, nb, hdr } => self.incoming(c, src, head, nb, hdr),
            Task::RecvPosted { req } => self.recv_posted(c, req),
            Task::SelfSend { req } => self.self_send(c, req),
            Task::Barrier { k, step } => {
                let rounds = usize::BITS - (p - 1).leading_zeros();
                let rank = &mut self.ranks[c];
                if step == 1 {
                    rank.stack.push(Task::Barrier { k: k + 1, step: 0 });
                    return Ok(Step::Again);
                }
                if k >= rounds {
                    // Every rank has entered: a backed-off program may use MOPED again.
                    rank.epoch += 1;
                    rank.software = !self.moped;
                    return Ok(Step::Again);
                }
                let d = 1usize << k;
                let (s, r) = (INTERNAL_REQ + 2 * k, INTERNAL_REQ + 2 * k + 1);
                let to = ((me as usize + d) % p) as u16;
                let from = ((me as usize + p - d % p) % p) as u16;
                rank.stats.instructions += self.params.call_instructions;
                rank.reqs.insert(
                    s,
                    new_req(Kind::Send, Peer::Rank(to), Tag::Tag(BARRIER_TAG), CTX_COLL),
                );
                rank.reqs.insert(
                    r,
                    new_req(
                        Kind::Recv,
                        Peer::Rank(from),
                        Tag::Tag(BARRIER_TAG),
                        CTX_COLL,
                    ),
                );
                rank.stack.push(Task::Barrier { k, step: 1 });
                rank.stack.push(Task::Wait {
                    reqs: vec![s, r],
                    i: 0,
                });
                rank.stack.push(Task::Post { req: r, step: 0 });
                rank.stack.push(Task::Post { req: s, step: 0 });
                Ok(Step::Again)
            }
        }
    }

    fn next_call(&mut self, c: usize) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let p = self.ranks.len();
        let rank = &mut self.ranks[c];
        let Some(call) = rank.calls.get(rank.pc).cloned() else {
            // MPI_Finalize: finish what others wait for from this rank.
            if rank.outgoing.iter().any(|q| !q.is_empty())
                || rank.incoming.iter().any(Option::is_some)
            {
                rank.stack.push(Task::NextCall);
                rank.stack.push(Task::Progress { i: 0 });
                return Ok(Step::Again);
            }
            if let Some((r, _)) = rank.reqs.iter().next() {
                return Err(format!(
                    "rank {me} finished with request {r} never waited for"
                ));
            }
            return Ok(Step::Again);
        };
        rank.pc += 1;
        rank.stack.push(Task::NextCall);
        match call {
            Call::Compute(n) => rank.ops.push_back(Micro::Compute(n)),
            Call::Sweep {
                at,
                bytes,
                stride,
                kind,
            } => {
                let va = self.rank_va(c, at);
                self.ranks[c].ops.push_back(Micro::Sweep {
                    at: va,
                    bytes,
                    stride,
                    kind,
                });
            }
            Call::Isend {
                req,
                dst,
                tag,
                ctx,
                buf,
                bytes,
            } => {
                if dst as usize >= p {
                    return Err(format!("rank {me}: send to rank {dst} of {p}"));
                }
                let va = self.rank_va(c, buf);
                let mut q = new_req(Kind::Send, Peer::Rank(dst), Tag::Tag(tag), ctx);
                q.va = va;
                q.bytes = bytes;
                self.start(c, req, q)?;
            }
            Call::Irecv {
                req,
                src,
                tag,
                ctx,
                buf,
                bytes,
            } => {
                let va = self.rank_va(c, buf);
                let mut q = new_req(Kind::Recv, src, tag, ctx);
                q.va = va;
                q.bytes = bytes;
                self.start(c, req, q)?;
            }
            Call::Wait(r) => {
                let rank = &mut self.ranks[c];
                rank.ops
                    .push_back(Micro::Compute(self.params.call_instructions));
                rank.stack.push(Task::Wait {
                    reqs: vec![r],
                    i: 0,
                });
            }
            Call::Waitall(reqs) => {
                let rank = &mut self.ranks[c];
                rank.ops
                    .push_back(Micro::Compute(self.params.call_instructions));
                rank.stack.push(Task::Wait { reqs, i: 0 });
            }
            Call::Barrier => {
                let rank = &mut self.ranks[c];
                rank.ops
                    .push_back(Micro::Compute(self.params.call_instructions));
                rank.stack.push(Task::Barrier { k: 0, step: 0 });
            }
            Call::Combine { acc, src, bytes } => {
                let (acc, src) = (self.rank_va(c, acc), self.rank_va(c, src));
                self.ranks[c].ops.push_back(Micro::Combine {
                    acc,
                    src,
                    len: bytes,
                });
            }
            Call::Copy { dst, src, bytes } => {
                let (dst, src) = (self.rank_va(c, dst), self.rank_va(c, src));
                self.ranks[c].ops.push_back(Micro::Copy {
                    src,
                    dst,
                    len: bytes,
                });
            }
        }
        Ok(Step::Again)
    }

    /// A new request: counted, then posted.
    fn start(&mut self, c: usize, req: ReqId, mut q: Req) -> Result<(), String> {
        let rank = &mut self.ranks[c];
        if rank.reqs.contains_key(&req) {
            return Err(format!(
                "rank {}: request {req} reused while active",
                rank.me
            ));
        }
        rank.seq += 1;
        q.seq = rank.seq;
        rank.reqs.insert(req, q);
        rank.ops
            .push_back(Micro::Compute(self.params.call_instructions));
        rank.stack.push(Task::Post { req, step: 0 });
        Ok(())
    }

    /// Tells the verifier about a posted send or receive.
    fn register(&mut self, c: usize, req: ReqId) -> Result<(), String> {
        let me = self.ranks[c].me;
        let proc = self.procs[c];
        let q = self.ranks[c]
            .reqs
            .get_mut(&req)
            .ok_or("posting a missing request")?;
        match (q.kind, q.peer, q.tag) {
            (Kind::Send, Peer::Rank(dst), Tag::Tag(tag)) => {
                self.verifier
                    .send_posted(me, dst, q.ctx, tag, (proc, q.va), q.bytes);
                let bytes = q.bytes;
                let st = &mut self.ranks[c].stats;
                st.sends += 1;
                st.send_bytes += bytes;
            }
            (Kind::Send, ..) => return Err(format!("rank {me}: a send needs a rank and a tag")),
            (Kind::Recv, src, tag) => {
                q.claim = Some(self.verifier.recv_posted(me, src, tag, q.ctx))
            }
        }
        Ok(())
    }

    /// Switches rank `c` to shared memory: first polls every outstanding MOPED descriptor
    /// (except `skip`) in posting order, so revoked ones move over in order.
    fn push_drain(&mut self, c: usize, skip: Option<ReqId>) {
        let rank = &mut self.ranks[c];
        let mut out: Vec<(u64, ReqId)> = rank
            .reqs
            .iter()
            .filter(|(&r, q)| Some(r) != skip && !q.done && matches!(q.path, Path::Moped(_)))
            .map(|(&r, q)| (q.seq, r))
            .collect();
        out.sort_unstable();
        rank.stack.push(Task::Drain {
            reqs: out.into_iter().map(|x| x.1).collect(),
            i: 0,
        });
    }

    fn moped_post(
        &mut self,
        c: usize,
        req: ReqId,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let data = self.port(c, Port::Data);
        if step == 0 {
            self.ranks[c].stack.push(Task::MopedPost { req, step: 1 });
            return Ok(Step::Issue(load(data, 8)));
        }
        let rank = &mut self.ranks[c];
        let v = value.ok_or("no reservation value")?;
        if v == REFUSED {
            // Backoff: tell every rank through the shared word, then shared memory.
            rank.stats.refused += 1;
            rank.software = true;
            rank.ops.push_back(Micro::Store {
                addr: self.layout.flag_va,
                size: 8,
                value: rank.epoch,
            });
            rank.stack.push(Task::Post { req, step: 2 });
            self.push_drain(c, Some(req));
            return Ok(Step::Again);
        }
        if v == ERROR {
            return Err(format!(
                "rank {me}: MOPED answered a reservation with an error"
            ));
        }
        let id = DescId::from_bits(v as u16);
        let q = rank.reqs.get_mut(&req).ok_or("posting a missing request")?;
        let env = Envelope {
            kind: q.kind,
            peer: q.peer,
            context: q.ctx,
            tag: q.tag,
        };
        let e = env
            .encode()
            .map_err(|e| format!("rank {me}: request {req}: {e}"))?;
        for payload in [e, q.va, q.bytes] {
            let value = pack_store(id, payload).map_err(|e| format!("rank {me}: {e}"))?;
            rank.ops.push_back(Micro::Store {
                addr: data,
                size: 8,
                value,
            });
        }
        q.path = Path::Moped(id);
        match q.kind {
            Kind::Send => rank.stats.moped_sends += 1,
            Kind::Recv => rank.stats.moped_recvs += 1,
        }
        Ok(Step::Again)
    }

    fn moped_poll(
        &mut self,
        c: usize,
        req: ReqId,
        step: u8,
        drain: bool,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let poll = self.port(c, Port::Poll);
        let rank = &mut self.ranks[c];
        let q = rank.reqs.get(&req).ok_or("polling a missing request")?;
        let Path::Moped(id) = q.path else {
            return Ok(Step::Again);
        };
        match step {
            0 => {
                rank.stats.polls += 1;
                rank.stack.push(Task::MopedPoll {
                    req,
                    step: 1,
                    drain,
                });
                Ok(Step::Issue(store(poll, 8, pack_poll(id))))
            }
            1 => {
                rank.stack.push(Task::MopedPoll {
                    req,
                    step: 2,
                    drain,
                });
                Ok(Step::Issue(load(poll, 8)))
            }
            _ => {
                let v = value.ok_or("no poll value")?;
                let status = PollStatus::from_value(v)
                    .map_err(|e| format!("rank {me}: request {req}: poll answered {v:#x}: {e}"))?;
                match status {
                    PollStatus::Complete => {
                        let mark = match q.kind {
                            Kind::Send => Mark::SendDone(req),
                            Kind::Recv => Mark::RecvDone(req),
                        };
                        rank.ops.push_back(Micro::Mark(mark));
                    }
                    PollStatus::Pending | PollStatus::Retry => {
                        rank.ops.push_back(Micro::Compute(self.params.poll_instructions));
                        rank.stack.push(Task::MopedPoll { req, step: 0, drain });
                    }
                    PollStatus::Revoked => {
                        rank.stats.revoked += 1;
                        if let Some(q) = rank.reqs.get_mut(&req) {
                            q.path = Path::New;
                        }
                        rank.stack.push(Task::Post { req, step: 2 });
                        if !drain {
                            rank.software = true;
                            rank.ops.push_back(Micro::Store {
                                addr: self.layout.flag_va,
                                size: 8,
                                value: rank.epoch,
                            });
                            self.push_drain(c, Some(req));
                        }
                    }
                    s => {
                        return Err(format!(
                            "rank {me}: MOPED {s:?} for request {req} ({:?} {:?} tag {:?}, {} bytes at {:#x})",
                            q.kind, q.peer, q.tag, q.bytes, q.va
                        ))
                    }
                }
                Ok(Step::Again)
            }
        }
    }

    /// Posts a request on the shared-memory path.
    fn post_shm(&mut self, c: usize, req: ReqId) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let rank = &mut self.ranks[c];
        let q = rank.reqs.get_mut(&req).ok_or("posting a missing request")?;
        q.path = Path::Shm;
        let q = q.clone();
        match (q.kind, q.peer, q.tag) {
            (Kind::Send, Peer::Rank(dst), Tag::Tag(tag)) => {
                let key = entry_word(Peer::Rank(me), Tag::Tag(tag), q.ctx);
                if dst == me {
                    rank.stats.self_sends += 1;
                    rank.stack.push(Task::SelfSend { req });
                    rank.stack.push(Task::Search {
                        posted: true,
                        key,
                        i: 0,
                        step: 0,
                    });
                    return Ok(Step::Again);
                }
                let eager = q.bytes + shm::PKT_HEADER <= shm::EAGER_MAX;
                let hdr = PktHeader {
                    ty: if eager { PktType::Eager } else { PktType::Rts },
                    src: me,
                    tag,
                    ctx: q.ctx,
                    bytes: q.bytes,
                    sreq: req,
                    rreq: 0,
                };
                rank.outgoing[dst as usize].push_back(OutPkt {
                    header: Some(hdr.encode()),
                    data: q.va,
                    len: if eager { q.bytes } else { 0 },
                    sent: 0,
                    completes: eager.then_some(req),
                });
                if eager {
                    rank.stats.eager += 1;
                } else {
                    rank.stats.rendezvous += 1;
                }
                rank.stack.push(Task::Push {
                    dst,
                    step: 0,
                    tail: 0,
                });
                Ok(Step::Again)
            }
            (Kind::Recv, src, tag) => {
                rank.stack.push(Task::RecvPosted { req });
                rank.stack.push(Task::Search {
                    posted: false,
                    key: entry_word(src, tag, q.ctx),
                    i: 0,
                    step: 0,
                });
                Ok(Step::Again)
            }
            _ => Err(format!("rank {me}: a send needs a rank and a tag")),
        }
    }

    fn queue(&self, src: u16, dst: u16) -> u64 {
        self.layout.queue(src, dst)
    }

    fn push(
        &mut self,
        c: usize,
        dst: u16,
        step: u8,
        tail: u64,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let q = self.queue(me, dst);
        let rank = &mut self.ranks[c];
        let Some(pkt) = rank.outgoing[dst as usize].front_mut() else {
            return Ok(Step::Again);
        };
        match step {
            0 => {
                rank.stack.push(Task::Push { dst, step: 1, tail });
                Ok(Step::Issue(load(q + shm::TAIL, 4)))
            }
            1 => {
                let tail = value.ok_or("no tail value")?;
                if tail >= shm::SLOTS {
                    return Err(format!("rank {me}: queue to rank {dst} has tail {tail}"));
                }
                rank.stack.push(Task::Push { dst, step: 2, tail });
                Ok(Step::Issue(load(q + shm::slot(tail), 4)))
            }
            _ => {
                if value.ok_or("no avail value")? == shm::FILLED {
                    // The ring is full: the progress engine tries again later.
                    return Ok(Step::Again);
                }
                let data = q + shm::slot_data(tail);
                let mut at = data;
                if let Some(h) = pkt.header.take() {
                    for w in h {
                        rank.ops.push_back(Micro::Store {
                            addr: at,
                            size: 8,
                            value: w,
                        });
                        at += 8;
                    }
                }
                let n = (shm::SLOT_DATA - (at - data)).min(pkt.len - pkt.sent);
                if n > 0 {
                    rank.ops.push_back(Micro::Copy {
                        src: pkt.data + pkt.sent,
                        dst: at,
                        len: n,
                    });
                }
                pkt.sent += n;
                let filled = at - data + n;
                let slot = q + shm::slot(tail);
                for (addr, value) in [
                    (slot + 4, filled),
                    (slot, shm::FILLED),
                    (q + shm::TAIL, (tail + 1) % shm::SLOTS),
                ] {
                    rank.ops.push_back(Micro::Store {
                        addr,
                        size: 4,
                        value,
                    });
                }
                if pkt.sent == pkt.len {
                    if let Some(r) = pkt.completes {
                        rank.ops.push_back(Micro::Mark(Mark::SendDone(r)));
                    }
                    rank.outgoing[dst as usize].pop_front();
                }
                rank.stack.push(Task::Push {
                    dst,
                    step: 0,
                    tail: 0,
                });
                Ok(Step::Again)
            }
        }
    }

    /// The stores that hand slot `head` of the queue from `src` back to its writer.
    fn release(&mut self, c: usize, src: u16, head: u64) {
        let q = self.queue(src, self.ranks[c].me);
        let ops = &mut self.ranks[c].ops;
        ops.push_back(Micro::Store {
            addr: q + shm::slot(head),
            size: 4,
            value: shm::EMPTY,
        });
        ops.push_back(Micro::Store {
            addr: q + shm::HEAD,
            size: 4,
            value: (head + 1) % shm::SLOTS,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn poll(
        &mut self,
        c: usize,
        src: u16,
        step: u8,
        head: u64,
        nb: u64,
        mut w: [u64; 4],
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let q = self.queue(src, me);
        let again = |rank: &mut Rank, step: u8, head: u64, nb: u64, w: [u64; 4]| {
            rank.stack.push(Task::Poll {
                src,
                step,
                head,
                nb,
                w,
            })
        };
        let rank = &mut self.ranks[c];
        match step {
            0 => {
                again(rank, 1, 0, 0, w);
                Ok(Step::Issue(load(q + shm::HEAD, 4)))
            }
            1 => {
                let head = value.ok_or("no head value")?;
                if head >= shm::SLOTS {
                    return Err(format!("rank {me}: queue from rank {src} has head {head}"));
                }
                again(rank, 2, head, 0, w);
                Ok(Step::Issue(load(q + shm::slot(head), 4)))
            }
            2 => {
                if value.ok_or("no avail value")? != shm::FILLED {
                    return Ok(Step::Again);
                }
                again(rank, 3, head, 0, w);
                Ok(Step::Issue(load(q + shm::slot(head) + 4, 4)))
            }
            3 => {
                let nb = value.ok_or("no size value")?;
                if nb > shm::SLOT_DATA {
                    return Err(format!(
                        "rank {me}: slot {head} from rank {src} holds {nb} bytes"
                    ));
                }
                if let Some(mut s) = rank.incoming[src as usize] {
                    // More of a rendezvous payload.
                    let r = rank
                        .reqs
                        .get(&s.rreq)
                        .ok_or("a stream for a missing request")?;
                    if s.got + nb > s.total {
                        return Err(format!(
                            "rank {me}: rendezvous data from rank {src} overruns {} bytes",
                            s.total
                        ));
                    }
                    rank.ops.push_back(Micro::Copy {
                        src: q + shm::slot_data(head),
                        dst: r.va + s.got,
                        len: nb,
                    });
                    s.got += nb;
                    let finished = s.got == s.total;
                    rank.incoming[src as usize] = (!finished).then_some(s);
                    self.release(c, src, head);
                    if finished {
                        self.ranks[c]
                            .ops
                            .push_back(Micro::Mark(Mark::RecvDone(s.rreq)));
                    }
                    return Ok(Step::Again);
                }
                again(rank, 4, head, nb, w);
                Ok(Step::Issue(load(q + shm::slot_data(head), 8)))
            }
            4..=7 => {
                let k = (step - 4) as usize;
                w[k] = value.ok_or("no header value")?;
                if k < 3 {
                    again(rank, step + 1, head, nb, w);
                    return Ok(Step::Issue(load(
                        q + shm::slot_data(head) + 8 * (k as u64 + 1),
                        8,
                    )));
                }
                let hdr = PktHeader::decode(w).ok_or_else(|| {
                    format!("rank {me}: slot {head} from rank {src} holds no packet header: {w:x?}")
                })?;
                if hdr.src != src {
                    return Err(format!(
                        "rank {me}: a packet from rank {} in rank {src}'s queue",
                        hdr.src
                    ));
                }
                match hdr.ty {
                    PktType::Eager | PktType::Rts => {
                        rank.stack.push(Task::Incoming { src, head, nb, hdr });
                        rank.stack.push(Task::Search {
                            posted: true,
                            key: entry_word(Peer::Rank(src), Tag::Tag(hdr.tag), hdr.ctx),
                            i: 0,
                            step: 0,
                        });
                    }
                    PktType::Cts => {
                        let sreq = hdr.sreq;
                        let s = rank.reqs.get(&sreq).ok_or_else(|| {
                            format!("rank {me}: clear-to-send for missing request {sreq}")
                        })?;
                        let data = PktHeader {
                            ty: PktType::RndvData,
                            src: me,
                            tag: 0,
                            ctx: 0,
                            bytes: s.bytes,
                            sreq,
                            rreq: hdr.rreq,
                        };
                        rank.outgoing[src as usize].push_back(OutPkt {
                            header: Some(data.encode()),
                            data: s.va,
                            len: s.bytes,
                            sent: 0,
                            completes: Some(sreq),
                        });
                        self.release(c, src, head);
                    }
                    PktType::RndvData => {
                        let r = rank.reqs.get(&hdr.rreq).ok_or_else(|| {
                            format!("rank {me}: data for missing request {}", hdr.rreq)
                        })?;
                        let first = nb.saturating_sub(shm::PKT_HEADER).min(hdr.bytes);
                        rank.ops.push_back(Micro::Copy {
                            src: q + shm::slot_data(head) + shm::PKT_HEADER,
                            dst: r.va,
                            len: first,
                        });
                        let s = Stream {
                            rreq: hdr.rreq,
                            total: hdr.bytes,
                            got: first,
                        };
                        let finished = s.got == s.total;
                        rank.incoming[src as usize] = (!finished).then_some(s);
                        self.release(c, src, head);
                        if finished {
                            self.ranks[c]
                                .ops
                                .push_back(Micro::Mark(Mark::RecvDone(hdr.rreq)));
                        }
                    }
                }
                Ok(Step::Again)
            }
            _ => unreachable!("poll step {step}"),
        }
    }

    fn list_addr(&self, posted: bool, slot: u64) -> u64 {
        let base = if posted {
            self.layout.posted_base
        } else {
            self.layout.unexpected_base
        };
        base + slot * 64
    }

    fn search(
        &mut self,
        c: usize,
        posted: bool,
        key: u64,
        i: usize,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let list = if posted {
            &self.ranks[c].posted
        } else {
            &self.ranks[c].unexpected
        };
        let Some(e) = list.get(i).copied() else {
            self.ranks[c].found = None;
            return Ok(Step::Again);
        };
        let at = self.list_addr(posted, e.slot);
        let rank = &mut self.ranks[c];
        if step == 0 {
            rank.stats.list_searched += 1;
            rank.stack.push(Task::Search {
                posted,
                key,
                i,
                step: 1,
            });
            return Ok(Step::Issue(load(at, 8)));
        }
        let got = value.ok_or("no entry value")?;
        let want = entry_word(e.src, e.tag, e.ctx);
        if got != want {
            return Err(format!(
                "rank {me}: {} entry {i} reads {got:#x}, but {want:#x} was stored",
                if posted {
                    "posted-receive"
                } else {
                    "unexpected"
                }
            ));
        }
        let hit = if posted {
            word_matches(got, key)
        } else {
            word_matches(key, got)
        };
        if hit {
            rank.found = Some(i);
            return Ok(Step::Again);
        }
        // Follow the next pointer.
        rank.ops.push_back(Micro::Load {
            addr: at + 16,
            size: 8,
        });
        rank.stack.push(Task::Search {
            posted,
            key,
            i: i + 1,
            step: 0,
        });
        Ok(Step::Again)
    }

    /// Removes entry `i` of a list: the stores that unlink it.
    fn unlink(&mut self, c: usize, posted: bool, i: usize) -> Entry {
        let list = if posted {
            &self.ranks[c].posted
        } else {
            &self.ranks[c].unexpected
        };
        let e = list[i];
        let next = list
            .get(i + 1)
            .map_or(0, |n| self.list_addr(posted, n.slot));
        let prev_link = match i {
            0 => self.layout.list_heads + if posted { 0 } else { 64 },
            _ => self.list_addr(posted, list[i - 1].slot) + 16,
        };
        let rank = &mut self.ranks[c];
        rank.ops.push_back(Micro::Store {
            addr: prev_link,
            size: 8,
            value: next,
        });
        let (list, free) = if posted {
            (&mut rank.posted, &mut rank.free_slots[0])
        } else {
            (&mut rank.unexpected, &mut rank.free_slots[1])
        };
        list.remove(i);
        free.push(e.slot);
        e
    }

    /// Appends an entry to a list: the stores that fill and link it.
    fn link(
        &mut self,
        c: usize,
        posted: bool,
        src: Peer,
        tag: Tag,
        ctx: u16,
        what: Unexp,
    ) -> Result<(), String> {
        let me = self.ranks[c].me;
        let idx = usize::from(!posted);
        let slot = self.ranks[c].free_slots[idx].pop().ok_or_else(|| {
            format!(
                "rank {me}: more than {LIST_ENTRIES} {} entries",
                if posted {
                    "posted-receive"
                } else {
                    "unexpected"
                }
            )
        })?;
        let at = self.list_addr(posted, slot);
        let list = if posted {
            &self.ranks[c].posted
        } else {
            &self.ranks[c].unexpected
        };
        let prev_link = match list.last() {
            None => self.layout.list_heads + if posted { 0 } else { 64 },
            Some(l) => self.list_addr(posted, l.slot) + 16,
        };
        let payload = match what {
            Unexp::Posted(r) | Unexp::SelfSend(r) => r as u64,
            Unexp::Eager { tmp, .. } => tmp,
            Unexp::Rts { sreq, .. } => sreq as u64,
        };
        let rank = &mut self.ranks[c];
        for (addr, value) in [
            (at, entry_word(src, tag, ctx)),
            (at + 8, payload),
            (at + 16, 0),
            (prev_link, at),
        ] {
            rank.ops.push_back(Micro::Store {
                addr,
                size: 8,
                value,
            });
        }
        let e = Entry {
            slot,
            src,
            tag,
            ctx,
            what,
        };
        if posted {
            rank.posted.push(e);
        } else {
            rank.unexpected.push(e);
        }
        Ok(())
    }

    /// An eager or rendezvous packet, after the posted-receive list was searched.
    fn incoming(
        &mut self,
        c: usize,
        src: u16,
        head: u64,
        nb: u64,
        hdr: PktHeader,
    ) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let q = self.queue(src, me);
        let payload = q + shm::slot_data(head) + shm::PKT_HEADER;
        let found = self.ranks[c].found.take();
        let matched = match found {
            Some(i) => match self.unlink(c, true, i).what {
                Unexp::Posted(r) => Some(r),
                other => return Err(format!("rank {me}: posted list holds {other:?}")),
            },
            None => None,
        };
        if let Some(r) = matched {
            let rq = self.ranks[c]
                .reqs
                .get(&r)
                .ok_or("a posted receive without request")?;
            if hdr.bytes > rq.bytes {
                return Err(truncated(me, src, hdr.tag, hdr.bytes, rq.bytes));
            }
        }
        match (hdr.ty, matched) {
            (PktType::Eager, Some(r)) => {
                if nb != shm::PKT_HEADER + hdr.bytes {
                    return Err(format!(
                        "rank {me}: eager slot from rank {src} holds {nb} bytes"
                    ));
                }
                let va = self.ranks[c].reqs[&r].va;
                self.ranks[c].ops.push_back(Micro::Copy {
                    src: payload,
                    dst: va,
                    len: hdr.bytes,
                });
                self.release(c, src, head);
                self.ranks[c].ops.push_back(Micro::Mark(Mark::RecvDone(r)));
            }
            (PktType::Eager, None) => {
                let tmp = self.ranks[c]
                    .tmp
                    .alloc(hdr.bytes)
                    .ok_or_else(|| format!("rank {me}: unexpected-message buffers full"))?;
                self.ranks[c].ops.push_back(Micro::Copy {
                    src: payload,
                    dst: tmp,
                    len: hdr.bytes,
                });
                self.release(c, src, head);
                self.link(
                    c,
                    false,
                    Peer::Rank(src),
                    Tag::Tag(hdr.tag),
                    hdr.ctx,
                    Unexp::Eager {
                        tmp,
                        bytes: hdr.bytes,
                    },
                )?;
            }
            (PktType::Rts, Some(r)) => {
                self.send_cts(c, src, hdr.sreq, r);
                self.release(c, src, head);
            }
            (PktType::Rts, None) => {
                self.release(c, src, head);
                self.link(
                    c,
                    false,
                    Peer::Rank(src),
                    Tag::Tag(hdr.tag),
                    hdr.ctx,
                    Unexp::Rts {
                        sreq: hdr.sreq,
                        bytes: hdr.bytes,
                    },
                )?;
            }
            _ => unreachable!("only eager and rendezvous requests are matched"),
        }
        Ok(Step::Again)
    }

    fn send_cts(&mut self, c: usize, to: u16, sreq: u32, rreq: ReqId) {
        let me = self.ranks[c].me;
        let cts = PktHeader {
            ty: PktType::Cts,
            src: me,
            tag: 0,
            ctx: 0,
            bytes: 0,
            sreq,
            rreq,
        };
        let rank = &mut self.ranks[c];
        rank.outgoing[to as usize].push_back(OutPkt {
            header: Some(cts.encode()),
            data: 0,
            len: 0,
            sent: 0,
            completes: None,
        });
        rank.stack.push(Task::Push {
            dst: to,
            step: 0,
            tail: 0,
        });
    }

    /// A receive being posted, after the unexpected list was searched.
    fn recv_posted(&mut self, c: usize, req: ReqId) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let q = self.ranks[c]
            .reqs
            .get(&req)
            .ok_or("posting a missing request")?
            .clone();
        let Some(i) = self.ranks[c].found.take() else {
            self.link(c, true, q.peer, q.tag, q.ctx, Unexp::Posted(req))?;
            return Ok(Step::Again);
        };
        let e = self.unlink(c, false, i);
        let src = match e.src {
            Peer::Rank(s) => s,
            Peer::Any => return Err(format!("rank {me}: an unexpected entry without source")),
        };
        let tag = tag_value(e.tag);
        match e.what {
            Unexp::Eager { tmp, bytes } => {
                if bytes > q.bytes {
                    return Err(truncated(me, src, tag, bytes, q.bytes));
                }
                let ops = &mut self.ranks[c].ops;
                ops.push_back(Micro::Copy {
                    src: tmp,
                    dst: q.va,
                    len: bytes,
                });
                ops.push_back(Micro::Mark(Mark::FreeTmp(tmp)));
                ops.push_back(Micro::Mark(Mark::RecvDone(req)));
            }
            Unexp::Rts { sreq, bytes } => {
                if bytes > q.bytes {
                    return Err(truncated(me, src, tag, bytes, q.bytes));
                }
                self.send_cts(c, src, sreq, req);
            }
            Unexp::SelfSend(sreq) => self.copy_to_self(c, sreq, req)?,
            Unexp::Posted(_) => return Err(format!("rank {me}: unexpected list holds a receive")),
        }
        Ok(Step::Again)
    }

    /// A send to the rank itself, after the posted-receive list was searched.
    fn self_send(&mut self, c: usize, req: ReqId) -> Result<Step, String> {
        let me = self.ranks[c].me;
        let s = self.ranks[c]
            .reqs
            .get(&req)
            .ok_or("a missing self send")?
            .clone();
        let Some(i) = self.ranks[c].found.take() else {
            self.link(c, false, Peer::Rank(me), s.tag, s.ctx, Unexp::SelfSend(req))?;
            return Ok(Step::Again);
        };
        let Unexp::Posted(r) = self.unlink(c, true, i).what else {
            return Err(format!("rank {me}: posted list holds no receive"));
        };
        self.copy_to_self(c, req, r)?;
        Ok(Step::Again)
    }

    /// A rank's send `sreq` to itself meets its receive `rreq`: the rank copies the data,
    /// and both complete.
    fn copy_to_self(&mut self, c: usize, sreq: ReqId, rreq: ReqId) -> Result<(), String> {
        let rank = &mut self.ranks[c];
        let me = rank.me;
        let (Some(s), Some(r)) = (rank.reqs.get(&sreq), rank.reqs.get(&rreq)) else {
            return Err(format!("rank {me}: a send to itself without its requests"));
        };
        if s.bytes > r.bytes {
            return Err(truncated(me, me, tag_value(s.tag), s.bytes, r.bytes));
        }
        let copy = Micro::Copy {
            src: s.va,
            dst: r.va,
            len: s.bytes,
        };
        rank.ops.push_back(copy);
        rank.ops.push_back(Micro::Mark(Mark::SendDone(sreq)));
        rank.ops.push_back(Micro::Mark(Mark::RecvDone(rreq)));
        Ok(())
    }
}

/// A tag as MPICH stores it, with ANY_TAG as 0xFFFF.
fn tag_value(tag: Tag) -> u16 {
    match tag {
        Tag::Tag(t) => t,
        Tag::Any => 0xFFFF,
    }
}

fn new_req(kind: Kind, peer: Peer, tag: Tag, ctx: u16) -> Req {
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
    }
}

fn truncated(me: u16, src: u16, tag: u16, sent: u64, room: u64) -> String {
    format!(
        "rank {me}: message from rank {src} (tag {tag}) has {sent} bytes but the receive \
         holds {room} (MPI_ERR_TRUNCATE)"
    )
}

/// The unexpected-message buffers of a rank: first fit in 64-byte units.
#[derive(Clone, Debug)]
struct Arena {
    free: BTreeMap<u64, u64>,
    used: BTreeMap<u64, u64>,
}

impl Arena {
    fn new(base: u64, bytes: u64) -> Arena {
        Arena {
            free: BTreeMap::from([(base, bytes)]),
            used: BTreeMap::new(),
        }
    }

    fn alloc(&mut self, bytes: u64) -> Option<u64> {
        let need = bytes.max(1).div_ceil(64) * 64;
        let (&at, &len) = self.free.iter().find(|(_, &len)| len >= need)?;
        self.free.remove(&at);
        if len > need {
            self.free.insert(at + need, len - need);
        }
        self.used.insert(at, need);
        Some(at)
    }

    fn release(&mut self, at: u64) {
        let Some(mut len) = self.used.remove(&at) else {
            return;
        };
        let mut start = at;
        if let Some((&p, &pl)) = self.free.range(..at).next_back() {
            if p + pl == at {
                self.free.remove(&p);
                start = p;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&(start + len)) {
            len += nl;
        }
        self.free.insert(start, len);
    }
}
