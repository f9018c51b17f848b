//! The per-rank MPI runtime: each rank's calls become the loads, stores and compute of
//! its core, as MPICH2 1.2 over ch3:shm would issue them ([`super::shm_path`]), or
//! through MOPED's ports ([`super::moped_path`]).
//!
//! The driver here is the part both paths share: it steps each rank's queued work and
//! tasks (see [`super::rank`]), hands each task to the file that implements it (the
//! program's calls, waits and the barrier in [`super::calls`], then the two paths),
//! chooses a request's path when it is posted, and does what involves the whole run:
//! the processes, the MOPED ports and the message checks.

use std::sync::Arc;

use crate::coherence::{AccessKind, Completed};
use crate::config::{CoreModel, CoreSection, MpiSection, WatchdogSection};
use crate::envelope::{Kind, Peer, Tag};
use crate::moped::ports::{Port, PortMap};
use crate::sim::{Driver, Next, VirtualMemory};
use crate::workload::tags::TagMap;
use crate::workload::{Call, ReqId, Workload};

use super::activity::{Activity, Breakdown};
use super::calls::CallCtx;
use super::layout::Layout;
use super::moped_path::MopedPorts;
use super::ops::{load, store, Loop, Mark, Micro};
use super::overlap::Overlap;
use super::queues::Search;
use super::rank::{Rank, Step, Task};
use super::shm_path::PollAt;
use super::verify::Verifier;

pub use super::rank::RankStats;

/// Costs of the runtime's own code, in instructions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MpiParams {
    /// Instructions of an MPI call's entry (argument checks, request set-up).
    pub call_instructions: u64,
    /// Instructions between two polls of a MOPED descriptor.
    pub poll_instructions: u64,
}

impl From<&MpiSection> for MpiParams {
    fn from(m: &MpiSection) -> Self {
        MpiParams {
            call_instructions: m.call_instructions,
            poll_instructions: m.poll_instructions,
        }
    }
}

/// The costs of the default `[mpi]` section.
impl Default for MpiParams {
    fn default() -> Self {
        MpiParams::from(&MpiSection::default())
    }
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
    /// The cores overlap the loads of copies, sweeps and combines (`system.core_model`).
    mlp: bool,
    pub verifier: Verifier,
    /// The numbers the program's tags travel as; the verifier sees the program's own.
    tags: Arc<TagMap>,
    /// The cycle of the step being run.
    now: u64,
    /// The last cycle a rank completed a call or a request, a packet moved, or a rank ran
    /// outside MPI's waits (see [`Driver::stuck`]).
    last_progress: u64,
    /// Where the workload's calls were written, for reports.
    origins: Option<crate::workload::Origins>,
    /// A rank reached a [`Call::ResetStats`]: the timed region has started...
    region_started: bool,
    /// ... and the simulator has not yet been told.
    region_pending: bool,
    /// Ranks with a [`Call::StopStats`] that have not reached it: the timed region ends
    /// when the last one does...
    stops_left: usize,
    /// ... and the simulator has not yet been told.
    stop_pending: bool,
    /// The messages the workload sends, where known before the run: the end of the run's
    /// heartbeat.
    pub expected_messages: Option<u64>,
}

impl MpiDriver {
    /// The driver of `w`'s ranks, their tags travelling as `tags` numbers them
    /// (`workload::tags`); an error names a tag that has no number.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        w: &Workload,
        tags: TagMap,
        procs: Vec<crate::os::ProcId>,
        layout: Layout,
        ports: PortMap,
        params: MpiParams,
        moped: bool,
        cores: &CoreSection,
    ) -> Result<MpiDriver, String> {
        let p = w.ranks.len();
        let tags = Arc::new(tags);
        let ranks = w
            .ranks
            .iter()
            .enumerate()
            .map(|(r, prog)| {
                let calls = tags.apply(&prog.calls)?;
                Ok(Rank::new(
                    r as u16,
                    p,
                    (calls, Arc::clone(&tags)),
                    &layout,
                    moped,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(MpiDriver {
            ranks,
            procs,
            layout,
            ports,
            params,
            moped,
            cpi: cores.cpi,
            mlp: cores.core_model == CoreModel::Mlp,
            verifier: Verifier::default(),
            tags,
            now: 0,
            last_progress: 0,
            origins: w.origins.clone(),
            region_started: false,
            stops_left: w
                .ranks
                .iter()
                .filter(|r| r.calls.contains(&Call::StopStats))
                .count(),
            stop_pending: false,
            region_pending: false,
            expected_messages: None,
        })
    }

    pub fn rank_stats(&self, r: usize) -> &RankStats {
        &self.ranks[r].stats
    }

    /// Where rank `r`'s cycles went.
    pub fn rank_time(&self, r: usize) -> &Breakdown {
        &self.ranks[r].time
    }

    /// The process of each rank.
    pub fn procs(&self) -> &[crate::os::ProcId] {
        &self.procs
    }

    pub fn n_ranks(&self) -> usize {
        self.ranks.len()
    }

    /// The sends no receive took, each with where it was posted, for a finished run's
    /// report.
    pub fn describe_unreceived(&self) -> String {
        self.verifier
            .unreceived()
            .iter()
            .map(|u| {
                let at = self
                    .origins
                    .as_ref()
                    .and_then(|o| o.at(usize::from(u.src), u.call))
                    .map(|p| format!(" at {p}"))
                    .unwrap_or_default();
                format!(
                    "\n  rank {}: call {}{at}: send to rank {} tag {}, context {}, {} bytes",
                    u.src, u.call, u.dst, u.tag, u.ctx, u.bytes
                )
            })
            .collect()
    }

    /// What each unfinished rank is doing, for a stuck run's report.
    pub fn describe(&self) -> String {
        self.ranks
            .iter()
            .filter(|r| !r.finished)
            .map(|r| r.pending_calls(self.origins.as_ref()))
            .collect()
    }
}

impl Driver for MpiDriver {
    fn next(&mut self, core: usize, now: u64) -> Result<Next, String> {
        if core >= self.ranks.len() {
            return Ok(Next::Done);
        }
        self.now = now;
        self.ranks[core].time.charge(now);
        if self.ranks[core].waiting {
            return Ok(Next::WaitForCompletion);
        }
        let (next, activity) = self.advance(core)?;
        let rank = &mut self.ranks[core];
        rank.time.switch(activity);
        if matches!(
            activity,
            Activity::Compute | Activity::Copy | Activity::Reduce
        ) {
            let end = match next {
                Next::Wait(n) => now.saturating_add(n),
                _ => now,
            };
            rank.own_work_until = rank.own_work_until.max(end);
        }
        Ok(next)
    }

    fn completed(&mut self, core: usize, c: &Completed, _now: u64) -> Result<(), String> {
        if let Some(r) = self.ranks.get_mut(core) {
            // Attributed to what the core does as the access completes: for a load that
            // blocks the core, what issued it; a store or an overlapped load may complete
            // in the activity after.
            r.stats.served(r.time.current(), c.level);
        }
        if c.req.kind == AccessKind::Load && core < self.ranks.len() {
            let r = &mut self.ranks[core];
            if r.overlap
                .as_mut()
                .is_some_and(|o| o.completed(&c.req, c.value))
            {
                return Ok(());
            }
            r.waiting = false;
            r.loaded = Some(c.value);
        }
        Ok(())
    }

    /// A load's completion changes only its own rank (whether it waits, the value it got,
    /// its overlapped loads' values, kept by request id), an L1 hit adds to none of its
    /// counters, and the counters completions add to add up alike in any order.
    fn completes_privately(&self) -> bool {
        true
    }

    #[inline]
    fn take_pass_start(&mut self, core: usize) -> Option<bool> {
        let Rank {
            pass, stack, stats, ..
        } = self.ranks.get_mut(core)?;
        if !std::mem::take(&mut pass.started) {
            return None;
        }
        Some(pass.begin(stack, stats.counters()))
    }

    fn skip_passes(&mut self, core: usize, passes: u64) {
        let r = &mut self.ranks[core];
        r.stats.add_counters(&r.pass.delta, passes);
        r.pass.counters = r.stats.counters();
    }

    fn independent_issued(&mut self, core: usize, id: u64) {
        if let Some(o) = self.ranks.get_mut(core).and_then(|r| r.overlap.as_mut()) {
            o.issued(id);
        }
    }

    fn wants_memory(&self) -> bool {
        self.verifier.has_pending()
    }

    fn take_region_start(&mut self) -> bool {
        std::mem::take(&mut self.region_pending)
    }

    fn take_region_end(&mut self) -> bool {
        std::mem::take(&mut self.stop_pending)
    }

    fn read_memory(&mut self, mem: &dyn VirtualMemory, _now: u64) -> Result<(), String> {
        self.verifier.read(mem)
    }

    /// A rank running its own code (computing, copying) will call MPI again: only when
    /// every unfinished rank waits inside MPI and nothing completes or moves for
    /// `watchdog.mpi_cycles` is the run stuck.
    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.verifier.messages, self.expected_messages?))
    }

    fn device_progress(&mut self, now: u64) {
        self.last_progress = now;
    }

    fn stuck(&mut self, now: u64, limits: &WatchdogSection) -> Option<String> {
        let waiting = self.ranks.iter().filter(|r| !r.finished);
        if waiting.clone().any(|r| !r.in_blocking_call()) {
            self.last_progress = now;
        }
        // A rank's own work was progress until it ended, even where the rank is now in
        // its last MPI call (a compute phase after the last message).
        let worked = waiting.clone().map(|r| r.own_work_until.min(now)).max();
        self.last_progress = self.last_progress.max(worked.unwrap_or(0));
        let quiet = now.saturating_sub(self.last_progress);
        if quiet <= limits.mpi_cycles {
            return None;
        }
        let ranks: String = waiting
            .map(|r| r.pending_calls(self.origins.as_ref()))
            .collect();
        Some(format!(
            "no MPI rank completed a call or a request and no message moved for {quiet} \
             cycles (watchdog.mpi_cycles = {}), every unfinished rank waiting in MPI:{ranks}",
            limits.mpi_cycles
        ))
    }
}

impl MpiDriver {
    fn port(&self, r: usize, port: Port) -> u64 {
        // Ranks were checked against the port map when the run was set up.
        self.ports
            .addr_of(0, r as u16, port)
            .unwrap_or(self.ports.base())
    }

    fn moped_ports(&self, r: usize) -> MopedPorts {
        MopedPorts {
            data: self.port(r, Port::Data),
            poll: self.port(r, Port::Poll),
            backoff: self.layout.flag_va,
            poll_instructions: self.params.poll_instructions,
        }
    }

    /// The next thing core `c` does, and the activity it is part of.
    fn advance(&mut self, c: usize) -> Result<(Next, Activity), String> {
        loop {
            let value = self.ranks[c].loaded.take();
            let rank = &mut self.ranks[c];
            if let Some(o) = rank.overlap.as_mut() {
                rank.pass.dirty = true;
                match o.next() {
                    Some(n) => {
                        if matches!(n, Next::Access(_) | Next::Independent(_)) {
                            rank.stats.instructions += 1;
                        }
                        return Ok((n, rank.loop_activity));
                    }
                    None => {
                        rank.overlap = None;
                        continue;
                    }
                }
            }
            if let Some(l) = rank.looping.as_mut() {
                rank.pass.dirty = true;
                match l.next(value) {
                    Some(n) => {
                        rank.waiting = l.wants_value();
                        rank.stats.instructions += 1;
                        return Ok((n, rank.loop_activity));
                    }
                    None => {
                        rank.looping = None;
                        continue;
                    }
                }
            }
            if let Some(m) = rank.ops.pop_front() {
                rank.pass.dirty = true;
                let activity = m.activity().unwrap_or(rank.activity);
                rank.loop_activity = activity;
                match self.run_micro(c, m)? {
                    Some(n) => return Ok((n, activity)),
                    None => continue,
                }
            }
            let Some(task) = self.ranks[c].stack.pop() else {
                self.ranks[c].finished = true;
                return Ok((Next::Done, Activity::Idle));
            };
            if let Some(a) = task.activity() {
                self.ranks[c].activity = a;
            }
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
                    return Ok((n, rank.activity));
                }
                Step::Again => continue,
            }
        }
    }

    /// Starts queued work `m` of rank `c`: the access or wait it issues first, if any.
    fn run_micro(&mut self, c: usize, m: Micro) -> Result<Option<Next>, String> {
        if self.mlp {
            if let Some(o) = overlapped(&m, &mut self.ranks[c]) {
                self.ranks[c].overlap = Some(o);
                return Ok(None);
            }
        }
        let rank = &mut self.ranks[c];
        let started = match m {
            Micro::Load { addr, size } => {
                rank.waiting = true;
                rank.stats.instructions += 1;
                return Ok(Some(load(addr, size)));
            }
            Micro::Store { addr, size, value } => {
                rank.stats.instructions += 1;
                return Ok(Some(store(addr, size, value)));
            }
            Micro::Flush(addr) => {
                rank.stats.instructions += 1;
                return Ok(Some(Next::Flush(addr)));
            }
            Micro::Compute(n) => {
                rank.stats.instructions += n;
                let call = rank.pc.saturating_sub(1);
                return Next::compute(n, self.cpi, self.now)
                    .map_err(|e| format!("rank {} call {call}: {e}", rank.me));
            }
            // A receive to check: its bytes are read before the rank can touch the
            // buffer again.
            Micro::Mark(mark) => return Ok(self.mark(c, mark)?.then_some(Next::Wait(1))),
            Micro::Copy { src, dst, len } => Loop::copy(src, dst, len),
            Micro::Sweep {
                at,
                bytes,
                stride,
                kind,
            } => Loop::sweep(at, bytes, stride, kind, rank.next_stamp()),
            Micro::Combine { acc, src, len } => Loop::combine(acc, src, len),
        };
        rank.looping = Some(started);
        Ok(None)
    }

    /// Bookkeeping; true when a receive was completed and its check is pending.
    fn mark(&mut self, c: usize, mark: Mark) -> Result<bool, String> {
        let proc = self.procs[c];
        let rank = &mut self.ranks[c];
        match mark {
            Mark::SendDone(req) => {
                self.last_progress = self.now;
                if let Some(r) = rank.reqs.get_mut(&req) {
                    r.done = true;
                    let cycles = self.now.saturating_sub(r.posted_at);
                    rank.stats.latency[0].sample(i64::try_from(cycles).unwrap_or(i64::MAX));
                }
                Ok(false)
            }
            Mark::RecvDone(req) => {
                self.last_progress = self.now;
                let me = rank.me;
                let r = rank
                    .reqs
                    .get_mut(&req)
                    .ok_or_else(|| format!("rank {me}: receive {req} completed twice"))?;
                r.done = true;
                let cycles = self.now.saturating_sub(r.posted_at);
                rank.stats.latency[1].sample(i64::try_from(cycles).unwrap_or(i64::MAX));
                let claim = r.claim.expect("a posted receive has a claim");
                self.verifier.recv_completed(
                    me,
                    r.peer,
                    self.tags.program(r.tag),
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
        // Only these, with the slot found empty (a filled one goes on to step 3), make up
        // an idle pass of the progress engine.
        let polling = matches!(
            task,
            Task::Wait { .. } | Task::Progress { .. } | Task::Poll { step: 0..=2, .. }
        );
        if !polling {
            self.ranks[c].pass.dirty = true;
        }
        let layout = &self.layout;
        let cx = CallCtx {
            layout,
            ranks: self.ranks.len(),
            call_instructions: self.params.call_instructions,
            moped: self.moped,
        };
        match task {
            Task::NextCall => {
                self.last_progress = self.now;
                let step = self.ranks[c].next_call(&cx);
                if std::mem::take(&mut self.ranks[c].marked) && !self.region_started {
                    self.region_started = true;
                    self.region_pending = true;
                }
                if std::mem::take(&mut self.ranks[c].stopped) && self.stops_left > 0 {
                    self.stops_left -= 1;
                    self.stop_pending = self.stops_left == 0;
                }
                step
            }
            Task::Post { req, step } => self.post(c, req, step, value),
            Task::Barrier { k, step } => Ok(self.ranks[c].barrier(&cx, k, step)),
            Task::Wait { reqs, i } => self.ranks[c].wait(reqs, i),
            Task::MopedPost { req, step } => {
                let ports = self.moped_ports(c);
                self.ranks[c].moped_post(&ports, req, step, value)
            }
            Task::MopedPoll { req, step, drain } => {
                let ports = self.moped_ports(c);
                self.ranks[c].moped_poll(&ports, req, step, drain, value)
            }
            Task::Drain { reqs, i } => Ok(self.ranks[c].drain(reqs, i)),
            Task::Progress { i } => Ok(self.ranks[c].progress(i)),
            Task::Push { dst, step, tail } => self.ranks[c].push(layout, dst, step, tail, value),
            Task::Poll {
                src,
                step,
                head,
                nb,
                w,
            } => {
                let at = PollAt {
                    src,
                    step,
                    head,
                    nb,
                    w,
                };
                self.ranks[c].poll(layout, at, value)
            }
            Task::Search {
                posted,
                key,
                i,
                step,
            } => {
                let s = Search {
                    posted,
                    key,
                    i,
                    step,
                };
                self.ranks[c].search(layout, s, value)
            }
            Task::Incoming { src, head, nb, hdr } => {
                self.last_progress = self.now;
                self.ranks[c].incoming(layout, src, head, nb, hdr)
            }
            Task::RecvPosted { req } => self.ranks[c].recv_posted(layout, req),
            Task::SelfSend { req } => self.ranks[c].self_send(layout, req),
            task => self.nic_step(c, task, value),
        }
    }

    /// One step of a task of the NIC path (`nic_path`).
    fn nic_step(&mut self, c: usize, task: Task, value: Option<u64>) -> Result<Step, String> {
        let (layout, rank) = (&self.layout, &mut self.ranks[c]);
        match task {
            Task::NicPoll { step } => rank.nic_poll(layout, step, value),
            Task::NicArrival { seq, step } => rank.nic_arrival(layout, seq, step, value),
            Task::NicIncoming { seq, word } => {
                self.last_progress = self.now;
                rank.nic_incoming(layout, seq, word)
            }
            Task::NicDeliver { seq, req, step } => {
                rank.nic_delivery(layout, (seq, req), step, value)
            }
            Task::NicBlocks { from, to, left } => rank.nic_blocks(layout, from, to, left),
            Task::NicCopyOut { to, bytes } => rank.nic_copy_out(layout, to, bytes),
            Task::NicDone { seq, req, size } => rank.nic_done(layout, seq, req, size),
            Task::NicPair { i, step, req } => rank.nic_pair(layout, i, (step, req), value),
            Task::Vl {
                addr,
                bytes,
                step,
                target,
                then,
            } => rank.vl(layout, (addr, bytes, target, then), step, value),
            other => Err(format!(
                "rank {}: task {other:?} reached the NIC path",
                rank.me
            )),
        }
    }

    /// Posts request `req`: registered with the verifier (step 0); under a MOPED design
    /// the backoff word is read (step 1) to choose MOPED or shared memory; step 2 takes
    /// shared memory.
    fn post(&mut self, c: usize, req: ReqId, step: u8, value: Option<u64>) -> Result<Step, String> {
        let rank = &mut self.ranks[c];
        match step {
            0 => {
                self.register(c, req)?;
                let rank = &mut self.ranks[c];
                if self.layout.nic.is_some() {
                    return rank.post_nic(&self.layout, req);
                }
                if !self.moped || rank.software {
                    return rank.post_shm(req);
                }
                rank.stack.push(Task::Post { req, step: 1 });
                Ok(Step::Issue(load(self.layout.flag_va, 8)))
            }
            1 => {
                let flag = value.ok_or("no backoff word")?;
                if flag == rank.epoch {
                    // Another rank backed off in this epoch: shared memory until the
                    // next barrier, after this rank's descriptors are resolved.
                    rank.software = true;
                    rank.stack.push(Task::Post { req, step: 2 });
                    rank.push_drain(None);
                    return Ok(Step::Again);
                }
                rank.stack.push(Task::MopedPost { req, step: 0 });
                Ok(Step::Again)
            }
            _ => rank.post_shm(req),
        }
    }

    /// Tells the verifier about a posted send or receive.
    fn register(&mut self, c: usize, req: ReqId) -> Result<(), String> {
        let me = self.ranks[c].me;
        let proc = self.procs[c];
        let rank = &mut self.ranks[c];
        let q = rank.reqs.get_mut(&req).ok_or("posting a missing request")?;
        q.posted_at = self.now;
        match (q.kind, q.peer, q.tag) {
            (Kind::Send, Peer::Rank(dst), Tag::Tag(tag)) => {
                let tag = self.tags.program_tag(tag);
                self.verifier
                    .send_posted((me, dst, q.ctx, tag), (proc, q.va), q.bytes, q.call);
                rank.stats.sends += 1;
                rank.stats.send_bytes += q.bytes;
                let bytes = i64::try_from(q.bytes).unwrap_or(i64::MAX);
                rank.stats.message_bytes.sample(bytes);
            }
            (Kind::Send, ..) => return Err(format!("rank {me}: a send needs a rank and a tag")),
            (Kind::Recv, src, tag) => {
                let tag = self.tags.program(tag);
                q.claim = Some(self.verifier.recv_posted(me, src, tag, q.ctx))
            }
        }
        Ok(())
    }
}

/// Loop work `m` as an `mlp` core runs it, overlapping its loads; `None` for other work.
fn overlapped(m: &Micro, rank: &mut Rank) -> Option<Overlap> {
    Some(match *m {
        Micro::Copy { src, dst, len } => Overlap::copy(src, dst, len),
        Micro::Sweep {
            at,
            bytes,
            stride,
            kind,
        } => Overlap::sweep(at, bytes, stride, kind, rank.next_stamp()),
        Micro::Combine { acc, src, len } => Overlap::combine(acc, src, len),
        _ => return None,
    })
}
