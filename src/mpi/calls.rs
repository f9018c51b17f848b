//! A rank's program, call by call: nonblocking sends and receives become requests
//! (posted by the runtime on one path or the other), waits poll or progress until their
//! requests are done, the barrier is MPICH's dissemination barrier over point-to-point
//! messages, and MPI_Finalize lets the rank finish what other ranks wait for. Compute
//! phases and the program's own memory work are queued as they are.

use crate::envelope::{Kind, Peer, Tag};
use crate::workload::tags::{WIRE_TAGS, WIRE_TAG_MAX};
use crate::workload::{BufRef, Call, ReqId, CTX_COLL};

use super::activity::Activity;
use super::layout::Layout;
use super::ops::Micro;
use super::rank::{Path, Rank, Req, Step, Task};

/// The tag of the barrier's messages (in the collective context): the first above the
/// numbers a renumbered program's tags travel as.
const BARRIER_TAG: u32 = WIRE_TAGS;
/// Request numbers the runtime uses for its own messages (barrier rounds).
pub(super) const INTERNAL_REQ: ReqId = 0xFFFF_0000;

/// What a rank's calls need to know of the run.
pub(super) struct CallCtx<'a> {
    pub layout: &'a Layout,
    /// Ranks in the run.
    pub ranks: usize,
    /// Instructions of an MPI call's entry.
    pub call_instructions: u64,
    /// Whether the design has MOPED.
    pub moped: bool,
}

impl Rank {
    /// Takes the rank's next call, or finishes the rank.
    pub(super) fn next_call(&mut self, cx: &CallCtx) -> Result<Step, String> {
        let Some(call) = self.calls.get(self.pc).cloned() else {
            return self.finalize();
        };
        self.pc += 1;
        self.stack.push(Task::NextCall);
        self.begin_call(cx, call)?;
        Ok(Step::Again)
    }

    /// The address of `at` in this rank's memory.
    fn va(&self, layout: &Layout, at: BufRef) -> u64 {
        layout.buf_va[self.me as usize][at.buf as usize] + at.offset
    }

    /// Queues the work and tasks of `call`.
    fn begin_call(&mut self, cx: &CallCtx, call: Call) -> Result<(), String> {
        let (me, p, entry) = (self.me, cx.ranks, cx.call_instructions);
        if let Call::Isend { tag, .. }
        | Call::Irecv {
            tag: Tag::Tag(tag), ..
        } = call
        {
            if tag > WIRE_TAG_MAX {
                return Err(format!(
                    "rank {me}: tag {tag} does not fit the 16-bit tag field"
                ));
            }
        }
        self.activity = Activity::of_call(&call);
        match call {
            Call::Compute(n) => self.ops.push_back(Micro::Compute(n)),
            Call::Sweep {
                at,
                bytes,
                stride,
                kind,
            } => {
                let at = self.va(cx.layout, at);
                self.ops.push_back(Micro::Sweep {
                    at,
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
                let q = Req::new(Kind::Send, Peer::Rank(dst), Tag::Tag(tag), ctx);
                self.start(cx, req, q, (buf, bytes))?;
            }
            Call::Irecv {
                req,
                src,
                tag,
                ctx,
                buf,
                bytes,
            } => self.start(cx, req, Req::new(Kind::Recv, src, tag, ctx), (buf, bytes))?,
            Call::Wait(r) => self.enter(
                entry,
                Task::Wait {
                    reqs: vec![r],
                    i: 0,
                },
            ),
            Call::Waitall(reqs) => self.enter(entry, Task::Wait { reqs, i: 0 }),
            Call::Barrier => self.enter(entry, Task::Barrier { k: 0, step: 0 }),
            Call::ResetStats => self.marked = true,
            Call::StopStats => self.stopped = true,
            Call::Combine { acc, src, bytes } => {
                let (acc, src) = (self.va(cx.layout, acc), self.va(cx.layout, src));
                let len = bytes;
                self.ops.push_back(Micro::Combine { acc, src, len });
            }
            Call::Copy { dst, src, bytes } => {
                let (dst, src) = (self.va(cx.layout, dst), self.va(cx.layout, src));
                let len = bytes;
                self.ops.push_back(Micro::Copy { src, dst, len });
            }
        }
        Ok(())
    }

    /// A new request on `bytes` of buffer `buf`: counted, then posted.
    fn start(
        &mut self,
        cx: &CallCtx,
        req: ReqId,
        mut q: Req,
        (buf, bytes): (BufRef, u64),
    ) -> Result<(), String> {
        if self.reqs.contains_key(&req) {
            return Err(format!(
                "rank {}: request {req} reused while active",
                self.me
            ));
        }
        q.va = self.va(cx.layout, buf);
        q.bytes = bytes;
        q.call = self.pc - 1;
        self.seq += 1;
        q.seq = self.seq;
        self.reqs.insert(req, q);
        self.enter(cx.call_instructions, Task::Post { req, step: 0 });
        Ok(())
    }

    /// Enters an MPI call that runs as `task`, after the call's entry instructions.
    fn enter(&mut self, call_instructions: u64, task: Task) {
        self.ops.push_back(Micro::Compute(call_instructions));
        self.stack.push(task);
    }

    /// Waits for requests `reqs[i..]` in order, then forgets them all.
    pub(super) fn wait(&mut self, reqs: Vec<ReqId>, i: usize) -> Result<Step, String> {
        let me = self.me;
        let Some(&r) = reqs.get(i) else {
            for r in &reqs {
                self.reqs.remove(r);
            }
            return Ok(Step::Again);
        };
        let q = self
            .reqs
            .get(&r)
            .ok_or_else(|| format!("rank {me}: wait for request {r}, which is not active"))?;
        if q.done {
            self.stack.push(Task::Wait { reqs, i: i + 1 });
            return Ok(Step::Again);
        }
        let path = q.path;
        self.stack.push(Task::Wait { reqs, i });
        match path {
            Path::Moped(_) => self.stack.push(Task::MopedPoll {
                req: r,
                step: 0,
                drain: false,
            }),
            Path::Shm => {
                self.stats.progress_passes += 1;
                self.pass.started = true;
                self.stack.push(Task::Progress { i: 0 })
            }
            // A NIC's registers change without any line reaching the core's caches, so
            // these passes are never fast-forwarded.
            Path::Nic => {
                self.stats.progress_passes += 1;
                self.stack.push(Task::NicPoll { step: 0 })
            }
            Path::New => return Err(format!("rank {me}: request {r} was never posted")),
        }
        Ok(Step::Again)
    }

    /// Round `k` of the dissemination barrier: a message to the rank `2^k` ahead and one
    /// from the rank `2^k` behind (step 0), then the next round (step 1).
    pub(super) fn barrier(&mut self, cx: &CallCtx, k: u32, step: u8) -> Step {
        let p = cx.ranks;
        let rounds = usize::BITS - (p - 1).leading_zeros();
        if step == 1 {
            self.stack.push(Task::Barrier { k: k + 1, step: 0 });
            return Step::Again;
        }
        if k >= rounds {
            // Every rank has entered: a backed-off program may use MOPED again.
            self.epoch += 1;
            self.software = !cx.moped;
            return Step::Again;
        }
        let me = self.me as usize;
        let d = 1usize << k;
        let (s, r) = (INTERNAL_REQ + 2 * k, INTERNAL_REQ + 2 * k + 1);
        let to = ((me + d) % p) as u16;
        let from = ((me + p - d % p) % p) as u16;
        let tag = Tag::Tag(BARRIER_TAG);
        self.stats.instructions += cx.call_instructions;
        // The barrier's own messages belong to the barrier call.
        let call = self.pc.saturating_sub(1);
        let send = Req::new(Kind::Send, Peer::Rank(to), tag, CTX_COLL);
        let recv = Req::new(Kind::Recv, Peer::Rank(from), tag, CTX_COLL);
        self.reqs.insert(s, Req { call, ..send });
        self.reqs.insert(r, Req { call, ..recv });
        self.stack.push(Task::Barrier { k, step: 1 });
        self.stack.push(Task::Wait {
            reqs: vec![s, r],
            i: 0,
        });
        self.stack.push(Task::Post { req: r, step: 0 });
        self.stack.push(Task::Post { req: s, step: 0 });
        Step::Again
    }

    /// MPI_Finalize: finish what other ranks wait for from this rank.
    fn finalize(&mut self) -> Result<Step, String> {
        if self.outgoing.iter().any(|q| !q.is_empty()) || self.incoming.iter().any(Option::is_some)
        {
            self.stack.push(Task::NextCall);
            self.stack.push(Task::Progress { i: 0 });
            return Ok(Step::Again);
        }
        if let Some((r, _)) = self.reqs.iter().next() {
            return Err(format!(
                "rank {} finished with request {r} never waited for",
                self.me
            ));
        }
        Ok(Step::Again)
    }
}
