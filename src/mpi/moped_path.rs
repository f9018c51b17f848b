//! The MOPED path (paper, section 4): a send or receive reserves a descriptor with a load
//! from the data port, stores its three fields (envelope, buffer address, size), and is
//! polled (a store and a load on the poll port) until complete. A refused reservation or
//! a revoked descriptor is backoff: the rank tells the program through the shared backoff
//! word, resolves its outstanding descriptors in posting order, and takes the shared-memory
//! path until the next barrier (section 4.4).

use crate::envelope::{Envelope, Kind};
use crate::moped::ports::{pack_poll, pack_store, PollStatus, ERROR, REFUSED};
use crate::workload::ReqId;

use super::ops::{load, store, Mark, Micro};
use super::rank::{Path, Rank, Step, Task};

/// Where a rank reaches its MOPED and its program's backoff word.
pub(super) struct MopedPorts {
    pub data: u64,
    pub poll: u64,
    pub backoff: u64,
    /// Instructions between two polls of a descriptor.
    pub poll_instructions: u64,
}

impl Rank {
    /// Reserves a descriptor for request `req` (step 0) and, if MOPED grants one, stores
    /// its fields (step 1).
    pub(super) fn moped_post(
        &mut self,
        ports: &MopedPorts,
        req: ReqId,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.me;
        if step == 0 {
            self.stack.push(Task::MopedPost { req, step: 1 });
            return Ok(Step::Issue(load(ports.data, 8)));
        }
        let v = value.ok_or("no reservation value")?;
        if v == REFUSED {
            // Backoff: tell every rank through the shared word, then shared memory.
            self.stats.refused += 1;
            self.back_off(ports, req);
            return Ok(Step::Again);
        }
        if v == ERROR {
            return Err(format!(
                "rank {me}: MOPED answered a reservation with an error"
            ));
        }
        let id = v as u16;
        let q = self.reqs.get_mut(&req).ok_or("posting a missing request")?;
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
            self.ops.push_back(Micro::Store {
                addr: ports.data,
                size: 8,
                value,
            });
        }
        q.path = Path::Moped(id);
        match q.kind {
            Kind::Send => self.stats.moped_sends += 1,
            Kind::Recv => self.stats.moped_recvs += 1,
        }
        Ok(Step::Again)
    }

    /// Backoff seen by this rank while posting or polling `req`: the shared word says so
    /// to every rank, `req` goes to shared memory once the rank's other descriptors are
    /// resolved.
    fn back_off(&mut self, ports: &MopedPorts, req: ReqId) {
        self.software = true;
        self.ops.push_back(Micro::Store {
            addr: ports.backoff,
            size: 8,
            value: self.epoch,
        });
        self.stack.push(Task::Post { req, step: 2 });
        self.push_drain(Some(req));
    }

    /// Polls request `req`'s descriptor: the poll store (step 0), the load (step 1), then
    /// its status (step 2). `drain`: the poll resolves descriptors before a switch to
    /// shared memory, which is under way.
    pub(super) fn moped_poll(
        &mut self,
        ports: &MopedPorts,
        req: ReqId,
        step: u8,
        drain: bool,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let q = self.reqs.get(&req).ok_or("polling a missing request")?;
        let Path::Moped(id) = q.path else {
            return Ok(Step::Again);
        };
        match step {
            0 => {
                self.stats.polls += 1;
                self.stack.push(Task::MopedPoll {
                    req,
                    step: 1,
                    drain,
                });
                Ok(Step::Issue(store(ports.poll, 8, pack_poll(id))))
            }
            1 => {
                self.stack.push(Task::MopedPoll {
                    req,
                    step: 2,
                    drain,
                });
                Ok(Step::Issue(load(ports.poll, 8)))
            }
            _ => {
                let v = value.ok_or("no poll value")?;
                self.poll_status(ports, req, drain, v)?;
                Ok(Step::Again)
            }
        }
    }

    /// Acts on the value `v` a poll of request `req` read.
    fn poll_status(
        &mut self,
        ports: &MopedPorts,
        req: ReqId,
        drain: bool,
        v: u64,
    ) -> Result<(), String> {
        let me = self.me;
        let status = PollStatus::from_value(v)
            .map_err(|e| format!("rank {me}: request {req}: poll answered {v:#x}: {e}"))?;
        let q = self.reqs.get_mut(&req).ok_or("polling a missing request")?;
        match status {
            PollStatus::Complete => {
                let mark = match q.kind {
                    Kind::Send => Mark::SendDone(req),
                    Kind::Recv => Mark::RecvDone(req),
                };
                self.ops.push_back(Micro::Mark(mark));
            }
            PollStatus::Pending | PollStatus::Retry => {
                self.ops.push_back(Micro::Compute(ports.poll_instructions));
                self.stack.push(Task::MopedPoll {
                    req,
                    step: 0,
                    drain,
                });
            }
            PollStatus::Revoked => {
                self.stats.revoked += 1;
                q.path = Path::New;
                if drain {
                    self.stack.push(Task::Post { req, step: 2 });
                } else {
                    self.back_off(ports, req);
                }
            }
            s => {
                return Err(format!(
                "rank {me}: MOPED {s:?} for request {req} ({:?} {:?} tag {:?}, {} bytes at {:#x})",
                q.kind, q.peer, self.tags.program(q.tag), q.bytes, q.va
            ))
            }
        }
        Ok(())
    }

    /// Switches the rank to shared memory: first polls every outstanding MOPED descriptor
    /// (except `skip`) in posting order, so revoked ones move over in order.
    pub(super) fn push_drain(&mut self, skip: Option<ReqId>) {
        let mut out: Vec<(u64, ReqId)> = self
            .reqs
            .iter()
            .filter(|(&r, q)| Some(r) != skip && !q.done && matches!(q.path, Path::Moped(_)))
            .map(|(&r, q)| (q.seq, r))
            .collect();
        out.sort_unstable();
        self.stack.push(Task::Drain {
            reqs: out.into_iter().map(|x| x.1).collect(),
            i: 0,
        });
    }

    /// Polls the descriptors of `reqs[i..]` that are still outstanding, in order.
    pub(super) fn drain(&mut self, reqs: Vec<ReqId>, i: usize) -> Step {
        if let Some(&r) = reqs.get(i) {
            self.stack.push(Task::Drain { reqs, i: i + 1 });
            if matches!(self.reqs.get(&r), Some(q) if !q.done && matches!(q.path, Path::Moped(_))) {
                self.stack.push(Task::MopedPoll {
                    req: r,
                    step: 0,
                    drain: true,
                });
            }
        }
        Step::Again
    }
}
