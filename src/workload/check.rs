//! A logical run of a workload with MPI semantics, to catch a wrong program before a
//! simulation spends time on it.
//!
//! Ranks run round-robin, each until it blocks, with no notion of time. A send is
//! delivered when it is issued; a receive completes when it is matched with a send of
//! the same context, the same tag (or ANY_TAG) and the same source (or ANY_SOURCE),
//! messages between two ranks in one context matching in the order they were sent.
//! With [`SendMode::Buffered`] a send completes at once; with
//! [`SendMode::Synchronous`] only when it is matched, as a rendezvous send (or a MOPED
//! send descriptor) does, which finds programs that need MPI to buffer;
//! [`SendMode::Eager`] buffers only messages up to an eager limit. A barrier
//! completes when every rank has reached it.
//!
//! It also holds the program to MPI's rules on buffers and requests: ranges inside
//! their buffers, no receive larger than its buffer, no request number reused while
//! outstanding or waited twice or never, and no buffer of an outstanding request
//! touched (a receive buffer read or written, a send buffer written) until it is waited
//! for.
//!
//! [`check_matches`] also reports every match and where its search found it: the
//! position in the posted-receive queue (PRQ) an arriving message reached, or in the
//! unexpected-message queue (UMQ) a receive being posted reached, with the queue's length
//! then. Both queues hold every context in posting or arrival order, as MPICH's do.

use super::{BufRef, Call, ReqId, SweepKind, Workload};
use crate::envelope::{Peer, Tag, TAG_UB};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;

/// When a send completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// At once: MPI buffers the message (eager sends).
    Buffered,
    /// When a receive has matched it (rendezvous sends).
    Synchronous,
    /// At once for a message of at most `max_bytes` to another rank (eager), when matched
    /// for a longer one or one to the rank itself (rendezvous and self sends).
    Eager { max_bytes: u64 },
}

impl SendMode {
    /// Whether a send of `bytes` completes when it is issued.
    fn buffers(self, bytes: u64, to_itself: bool) -> bool {
        match self {
            SendMode::Buffered => true,
            SendMode::Synchronous => false,
            SendMode::Eager { max_bytes } => bytes <= max_bytes && !to_itself,
        }
    }
}

/// What one rank did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankCounts {
    pub sends: u64,
    pub send_bytes: u64,
    pub recvs: u64,
    pub recv_bytes: u64,
    /// Messages sent, by size in bytes.
    pub send_sizes: BTreeMap<u64, u64>,
    pub copies: u64,
    pub copy_bytes: u64,
    pub combines: u64,
    pub combine_bytes: u64,
    pub sweeps: u64,
    pub sweep_bytes: u64,
    pub compute_instructions: u64,
    pub barriers: u64,
    /// Messages this rank sent to itself.
    pub self_sends: u64,
}

/// What every rank did in a run that completed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub ranks: Vec<RankCounts>,
}

impl CheckReport {
    /// Messages sent by all ranks.
    pub fn messages(&self) -> u64 {
        self.ranks.iter().map(|r| r.sends).sum()
    }

    /// Bytes sent by all ranks (at most 2^64 - 1: each rank's count is checked, their sum
    /// saturates).
    pub fn bytes(&self) -> u64 {
        self.ranks
            .iter()
            .fold(0, |sum, r| sum.saturating_add(r.send_bytes))
    }

    /// Local copies by all ranks.
    pub fn copies(&self) -> u64 {
        self.ranks.iter().map(|r| r.copies).sum()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} messages, {} bytes, {} copies",
            self.messages(),
            self.bytes(),
            self.copies()
        )?;
        for (i, r) in self.ranks.iter().enumerate() {
            let sizes: Vec<String> = r
                .send_sizes
                .iter()
                .map(|(s, n)| format!("{n} x {s} B"))
                .collect();
            writeln!(
                f,
                "rank {i}: sent {} ({} B: {}), received {} ({} B), {} copies, {} sweeps ({} B), {} instructions, {} barriers",
                r.sends,
                r.send_bytes,
                sizes.join(", "),
                r.recvs,
                r.recv_bytes,
                r.copies,
                r.sweeps,
                r.sweep_bytes,
                r.compute_instructions,
                r.barriers
            )?;
        }
        Ok(())
    }
}

/// How a truncation error ends: a message longer than the receive it matched.
pub const TRUNCATION: &str = "(truncation)";

/// Runs `w` with buffered sends.
pub fn check(w: &Workload) -> Result<CheckReport, String> {
    check_with(w, SendMode::Buffered)
}

/// The queue a match was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// An arriving message found its receive in the posted-receive queue.
    Posted,
    /// A receive being posted found its message in the unexpected-message queue.
    Unexpected,
}

/// One match of a message with a receive, and where the search found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Match {
    /// The receiving rank, and the index of its receive call.
    pub rank: usize,
    pub recv_call: usize,
    /// The sending rank, and the index of its send call.
    pub src: usize,
    pub send_call: usize,
    pub tag: u32,
    pub ctx: u16,
    pub bytes: u64,
    pub queue: Queue,
    /// The matched entry's place in the queue, from 1: how many entries the search read.
    pub position: usize,
    /// The entries the queue held when the search began.
    pub depth: usize,
}

/// Runs `w` like [`check_with`] and also returns every match, in the order they happen.
pub fn check_matches(w: &Workload, mode: SendMode) -> Result<(CheckReport, Vec<Match>), String> {
    let mut log = Some(Vec::new());
    let rep = run(w, mode, &mut log)?;
    Ok((rep, log.unwrap_or_default()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dir {
    Send,
    Recv,
}

/// An outstanding request.
#[derive(Clone, Debug)]
struct Req {
    dir: Dir,
    call: usize,
    buf: u16,
    lo: u64,
    hi: u64,
    done: bool,
    /// For describing a blocked receive or send.
    what: String,
}

/// A message not yet received.
#[derive(Clone, Debug)]
struct Msg {
    src: usize,
    tag: u32,
    ctx: u16,
    bytes: u64,
    /// The send's request (marked done when matched in synchronous mode) and call.
    req: ReqId,
    call: usize,
}

/// A posted receive not yet matched.
#[derive(Clone, Debug)]
struct Posted {
    src: Peer,
    tag: Tag,
    ctx: u16,
    bytes: u64,
    req: ReqId,
    call: usize,
}

struct Rank {
    pc: usize,
    reqs: HashMap<ReqId, Req>,
    posted: VecDeque<Posted>,
    unexpected: VecDeque<Msg>,
    at_barrier: bool,
    counts: RankCounts,
}

fn peer_str(p: Peer) -> String {
    match p {
        Peer::Rank(r) => format!("rank {r}"),
        Peer::Any => "any rank".to_string(),
    }
}

fn tag_str(t: Tag) -> String {
    match t {
        Tag::Tag(t) => format!("tag {t}"),
        Tag::Any => "any tag".to_string(),
    }
}

fn matches(p: &Posted, m: &Msg) -> bool {
    p.ctx == m.ctx
        && match p.src {
            Peer::Rank(r) => r as usize == m.src,
            Peer::Any => true,
        }
        && match p.tag {
            Tag::Tag(t) => t == m.tag,
            Tag::Any => true,
        }
}

/// Runs `w` with the given send semantics; the error names the rank, the call index
/// (in the rank's `calls`) and what went wrong.
pub fn check_with(w: &Workload, mode: SendMode) -> Result<CheckReport, String> {
    run(w, mode, &mut None)
}

/// Where matches are logged, when they are.
type Log = Option<Vec<Match>>;

fn run(w: &Workload, mode: SendMode, log: &mut Log) -> Result<CheckReport, String> {
    let n = w.ranks.len();
    if n == 0 {
        return Err("the workload has no ranks".to_string());
    }
    let mut ranks: Vec<Rank> = (0..n)
        .map(|_| Rank {
            pc: 0,
            reqs: HashMap::new(),
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            at_barrier: false,
            counts: RankCounts::default(),
        })
        .collect();
    let here = |r: usize, i: usize| format!("rank {r} {}", call_at(w, r, i));

    // Checks a buffer range of rank `r` and returns it as (buf, lo, hi).
    let range = |r: usize, i: usize, at: BufRef, bytes: u64| -> Result<(u16, u64, u64), String> {
        let bufs = &w.ranks[r].buffers;
        let Some(b) = bufs.get(at.buf as usize) else {
            return Err(format!(
                "{}: buffer {} does not exist (the rank has {})",
                here(r, i),
                at.buf,
                bufs.len()
            ));
        };
        let hi = at.offset.checked_add(bytes);
        match hi {
            Some(hi) if hi <= b.bytes => Ok((at.buf, at.offset, hi)),
            _ => Err(format!(
                "{}: bytes {}..{}+{} lie outside buffer {} `{}` of {} bytes",
                here(r, i),
                at.offset,
                at.offset,
                bytes,
                at.buf,
                b.name,
                b.bytes
            )),
        }
    };

    loop {
        let mut progress = false;
        for r in 0..n {
            loop {
                let calls = &w.ranks[r].calls;
                let i = ranks[r].pc;
                if i >= calls.len() || ranks[r].at_barrier {
                    break;
                }
                let advanced = step(w, &mut ranks, r, i, mode, log, &range)?;
                if !advanced {
                    break;
                }
                progress = true;
            }
        }
        // A barrier completes when every rank waits at it.
        if ranks.iter().all(|k| k.at_barrier) {
            for k in ranks.iter_mut() {
                k.at_barrier = false;
                k.pc += 1;
                k.counts.barriers += 1;
            }
            progress = true;
        }
        let finished = (0..n).all(|r| ranks[r].pc >= w.ranks[r].calls.len());
        if finished {
            break;
        }
        if !progress {
            return Err(deadlock(w, &ranks));
        }
    }

    for (r, k) in ranks.iter().enumerate() {
        if let Some((id, q)) = k.reqs.iter().min_by_key(|(id, _)| **id) {
            return Err(format!(
                "{}: request {id} ({}) is never waited for",
                here(r, q.call),
                q.what
            ));
        }
        if let Some(m) = k.unexpected.front() {
            return Err(format!(
                "{}: its message to rank {r} (tag {}, context {}, {} bytes) is never received",
                here(m.src, m.call),
                m.tag,
                m.ctx,
                m.bytes
            ));
        }
    }
    Ok(CheckReport {
        ranks: ranks.into_iter().map(|k| k.counts).collect(),
    })
}

type RangeFn<'a> = dyn Fn(usize, usize, BufRef, u64) -> Result<(u16, u64, u64), String> + 'a;

/// Fails if `[lo, hi)` of buffer `buf` overlaps an outstanding request of rank `r` in
/// one of `dirs`.
fn hazard(
    w: &Workload,
    ranks: &[Rank],
    r: usize,
    i: usize,
    (buf, lo, hi): (u16, u64, u64),
    dirs: &[Dir],
    doing: &str,
) -> Result<(), String> {
    if lo == hi {
        return Ok(());
    }
    let mut clash: Vec<(&ReqId, &Req)> = ranks[r]
        .reqs
        .iter()
        .filter(|(_, q)| dirs.contains(&q.dir) && q.buf == buf && q.lo < hi && lo < q.hi)
        .collect();
    clash.sort_by_key(|(id, _)| **id);
    if let Some((id, q)) = clash.first() {
        return Err(format!(
            "rank {r} {}: {doing} bytes {lo}..{hi} of buffer {buf}, which request {id} \
             ({}: {}) still uses",
            call_at(w, r, i),
            call_at(w, r, q.call),
            q.what
        ));
    }
    Ok(())
}

/// Adds `n` to a rank's count `total`; past 2^64 it is an error at `here`.
fn count(total: &mut u64, n: u64, here: &str, what: &str) -> Result<(), String> {
    *total = total
        .checked_add(n)
        .ok_or_else(|| format!("{here}: the rank's {what} pass 2^64"))?;
    Ok(())
}

/// Runs call `i` of rank `r` if it can; false when the rank blocks there.
fn step(
    w: &Workload,
    ranks: &mut [Rank],
    r: usize,
    i: usize,
    mode: SendMode,
    log: &mut Log,
    range: &RangeFn,
) -> Result<bool, String> {
    let n = ranks.len();
    let call = &w.ranks[r].calls[i];
    let here = format!("rank {r} {}", call_at(w, r, i));
    match call {
        Call::ResetStats | Call::StopStats => {}
        Call::Compute(k) => count(
            &mut ranks[r].counts.compute_instructions,
            *k,
            &here,
            "compute instructions",
        )?,
        Call::Sweep {
            at,
            bytes,
            stride,
            kind,
        } => {
            if *bytes == 0 || *stride == 0 || stride % 8 != 0 || at.offset % 8 != 0 {
                return Err(format!(
                    "{here}: a sweep needs bytes > 0 and an 8-byte aligned offset and stride \
                     (offset {}, {} bytes, stride {})",
                    at.offset, bytes, stride
                ));
            }
            let rg = range(r, i, *at, *bytes)?;
            let (dirs, doing): (&[Dir], _) = match kind {
                SweepKind::Load => (&[Dir::Recv], "reads"),
                SweepKind::Store | SweepKind::Update => (&[Dir::Recv, Dir::Send], "writes"),
            };
            hazard(w, ranks, r, i, rg, dirs, doing)?;
            let c = &mut ranks[r].counts;
            c.sweeps += 1;
            count(&mut c.sweep_bytes, *bytes, &here, "swept bytes")?;
        }
        Call::Copy { dst, src, bytes } => {
            let s = range(r, i, *src, *bytes)?;
            let d = range(r, i, *dst, *bytes)?;
            hazard(w, ranks, r, i, s, &[Dir::Recv], "copies from")?;
            hazard(w, ranks, r, i, d, &[Dir::Recv, Dir::Send], "copies into")?;
            if s.0 == d.0 && s.1 < d.2 && d.1 < s.2 && *bytes > 0 {
                return Err(format!("{here}: a copy's source and destination overlap"));
            }
            let c = &mut ranks[r].counts;
            c.copies += 1;
            count(&mut c.copy_bytes, *bytes, &here, "copied bytes")?;
        }
        Call::Combine { acc, src, bytes } => {
            if bytes % 4 != 0 {
                return Err(format!(
                    "{here}: a combine works on 4-byte floats, not {bytes} bytes"
                ));
            }
            let s = range(r, i, *src, *bytes)?;
            let a = range(r, i, *acc, *bytes)?;
            hazard(w, ranks, r, i, s, &[Dir::Recv], "combines from")?;
            hazard(w, ranks, r, i, a, &[Dir::Recv, Dir::Send], "combines into")?;
            let c = &mut ranks[r].counts;
            c.combines += 1;
            count(&mut c.combine_bytes, *bytes, &here, "combined bytes")?;
        }
        Call::Isend {
            req,
            dst,
            tag,
            ctx,
            buf,
            bytes,
        } => {
            let dst = *dst as usize;
            if dst >= n {
                return Err(format!(
                    "{here}: sends to rank {dst}, but the workload has {n} ranks"
                ));
            }
            if *tag > TAG_UB {
                return Err(format!("{here}: tag {tag} is above MPI_TAG_UB ({TAG_UB})"));
            }
            let rg = range(r, i, *buf, *bytes)?;
            hazard(w, ranks, r, i, rg, &[Dir::Recv], "sends from")?;
            new_req(w, ranks, r, i, *req)?;
            let what = format!("send of {bytes} B to rank {dst}, tag {tag}, context {ctx}");
            let msg = Msg {
                src: r,
                tag: *tag,
                ctx: *ctx,
                bytes: *bytes,
                req: *req,
                call: i,
            };
            ranks[r].reqs.insert(
                *req,
                Req {
                    dir: Dir::Send,
                    call: i,
                    buf: rg.0,
                    lo: rg.1,
                    hi: rg.2,
                    done: mode.buffers(*bytes, dst == r),
                    what,
                },
            );
            let c = &mut ranks[r].counts;
            c.sends += 1;
            count(&mut c.send_bytes, *bytes, &here, "bytes sent")?;
            *c.send_sizes.entry(*bytes).or_default() += 1;
            if dst == r {
                c.self_sends += 1;
            }
            let depth = ranks[dst].posted.len();
            let pos = ranks[dst].posted.iter().position(|p| matches(p, &msg));
            match pos {
                Some(k) => {
                    let p = ranks[dst].posted.remove(k).expect("position is in range");
                    deliver(w, ranks, dst, &p, &msg)?;
                    record(log, dst, &p, &msg, (Queue::Posted, k + 1, depth));
                }
                None => ranks[dst].unexpected.push_back(msg),
            }
        }
        Call::Irecv {
            req,
            src,
            tag,
            ctx,
            buf,
            bytes,
        } => {
            if let Peer::Rank(s) = src {
                if *s as usize >= n {
                    return Err(format!(
                        "{here}: receives from rank {s}, but the workload has {n} ranks"
                    ));
                }
            }
            if let Tag::Tag(t) = *tag {
                if t > TAG_UB {
                    return Err(format!("{here}: tag {t} is above MPI_TAG_UB ({TAG_UB})"));
                }
            }
            let rg = range(r, i, *buf, *bytes)?;
            hazard(w, ranks, r, i, rg, &[Dir::Recv, Dir::Send], "receives into")?;
            new_req(w, ranks, r, i, *req)?;
            let what = format!(
                "receive of up to {bytes} B from {}, {}, context {ctx}",
                peer_str(*src),
                tag_str(*tag)
            );
            ranks[r].reqs.insert(
                *req,
                Req {
                    dir: Dir::Recv,
                    call: i,
                    buf: rg.0,
                    lo: rg.1,
                    hi: rg.2,
                    done: false,
                    what,
                },
            );
            let p = Posted {
                src: *src,
                tag: *tag,
                ctx: *ctx,
                bytes: *bytes,
                req: *req,
                call: i,
            };
            let depth = ranks[r].unexpected.len();
            let pos = ranks[r].unexpected.iter().position(|m| matches(&p, m));
            match pos {
                Some(k) => {
                    let m = ranks[r].unexpected.remove(k).expect("position is in range");
                    deliver(w, ranks, r, &p, &m)?;
                    record(log, r, &p, &m, (Queue::Unexpected, k + 1, depth));
                }
                None => ranks[r].posted.push_back(p),
            }
        }
        Call::Wait(req) => {
            if !wait_ready(ranks, r, i, std::slice::from_ref(req))? {
                return Ok(false);
            }
        }
        Call::Waitall(reqs) => {
            for (k, a) in reqs.iter().enumerate() {
                if reqs[..k].contains(a) {
                    return Err(format!("{here}: request {a} appears twice in a waitall"));
                }
            }
            if !wait_ready(ranks, r, i, reqs)? {
                return Ok(false);
            }
        }
        Call::Barrier => {
            ranks[r].at_barrier = true;
            return Ok(false);
        }
    }
    ranks[r].pc += 1;
    Ok(true)
}

fn new_req(w: &Workload, ranks: &[Rank], r: usize, i: usize, req: ReqId) -> Result<(), String> {
    if let Some(q) = ranks[r].reqs.get(&req) {
        return Err(format!(
            "rank {r} {}: request {req} is reused while still outstanding ({}: {})",
            call_at(w, r, i),
            call_at(w, r, q.call),
            q.what
        ));
    }
    Ok(())
}

/// Completes the receive `p` of rank `dst` with message `m`.
fn deliver(
    w: &Workload,
    ranks: &mut [Rank],
    dst: usize,
    p: &Posted,
    m: &Msg,
) -> Result<(), String> {
    if m.bytes > p.bytes {
        return Err(format!(
            "rank {dst} {}: receives up to {} bytes, but the matching message from rank {} \
             ({}, tag {}) has {} bytes {TRUNCATION}",
            call_at(w, dst, p.call),
            p.bytes,
            m.src,
            call_at(w, m.src, m.call),
            m.tag,
            m.bytes
        ));
    }
    if let Some(q) = ranks[dst].reqs.get_mut(&p.req) {
        q.done = true;
    }
    let c = &mut ranks[dst].counts;
    c.recvs += 1;
    let here = format!("rank {dst} {}", call_at(w, dst, p.call));
    count(&mut c.recv_bytes, m.bytes, &here, "bytes received")?;
    if let Some(q) = ranks[m.src].reqs.get_mut(&m.req) {
        if q.dir == Dir::Send && q.call == m.call {
            q.done = true;
        }
    }
    Ok(())
}

/// Logs the match of receive `p` of rank `dst` with message `m`, found at `position` of
/// `queue`, which held `depth` entries.
fn record(log: &mut Log, dst: usize, p: &Posted, m: &Msg, found: (Queue, usize, usize)) {
    let Some(log) = log else { return };
    let (queue, position, depth) = found;
    log.push(Match {
        rank: dst,
        recv_call: p.call,
        src: m.src,
        send_call: m.call,
        tag: m.tag,
        ctx: m.ctx,
        bytes: m.bytes,
        queue,
        position,
        depth,
    });
}

/// True (and the requests freed) when every request in `reqs` is complete.
fn wait_ready(ranks: &mut [Rank], r: usize, i: usize, reqs: &[ReqId]) -> Result<bool, String> {
    for req in reqs {
        match ranks[r].reqs.get(req) {
            None => {
                return Err(format!(
                    "rank {r} call {i}: waits for request {req}, which is not outstanding \
                     (never started, or already waited for)"
                ))
            }
            Some(q) if !q.done => return Ok(false),
            Some(_) => {}
        }
    }
    for req in reqs {
        ranks[r].reqs.remove(req);
    }
    Ok(true)
}

/// `call I`, and `at file:line:col` where the workload knows where the call was written.
fn call_at(w: &Workload, r: usize, i: usize) -> String {
    match w.origin(r, i) {
        Some(at) => format!("call {i} at {at}"),
        None => format!("call {i}"),
    }
}

fn deadlock(w: &Workload, ranks: &[Rank]) -> String {
    let mut lines = vec!["deadlock:".to_string()];
    for (r, k) in ranks.iter().enumerate() {
        let calls = &w.ranks[r].calls;
        let line = if k.pc >= calls.len() {
            format!("rank {r} has finished")
        } else if k.at_barrier {
            format!("rank {r} {} waits at a barrier", call_at(w, r, k.pc))
        } else {
            let reqs: Vec<ReqId> = match &calls[k.pc] {
                Call::Wait(q) => vec![*q],
                Call::Waitall(qs) => qs.clone(),
                _ => Vec::new(),
            };
            let pending: Vec<String> = reqs
                .iter()
                .filter_map(|q| k.reqs.get(q).filter(|x| !x.done).map(|x| (q, x)))
                .map(|(q, x)| format!("request {q} ({}: {})", call_at(w, r, x.call), x.what))
                .collect();
            format!(
                "rank {r} {} waits for {}",
                call_at(w, r, k.pc),
                pending.join(" and ")
            )
        };
        lines.push(line);
    }
    lines.join("\n  ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{RankProgram, CTX_PT2PT};

    fn prog(bufs: &[u64], calls: Vec<Call>) -> RankProgram {
        let mut p = RankProgram::default();
        for (i, &b) in bufs.iter().enumerate() {
            p.buffer(&format!("b{i}"), b);
        }
        p.calls = calls;
        p
    }

    fn wl(ranks: Vec<RankProgram>) -> Workload {
        Workload {
            name: "t".into(),
            ranks,
            notes: Vec::new(),
            origins: None,
        }
    }

    /// Found by fuzzing (a GOAL `calc 18446744073709551615` after a `calc 1`): a rank's
    /// counts past 2^64 overflowed.
    #[test]
    fn counts_past_2_64_are_errors() {
        let w = wl(vec![prog(
            &[],
            vec![Call::Compute(1), Call::Compute(u64::MAX)],
        )]);
        assert_eq!(
            check(&w).unwrap_err(),
            "rank 0 call 1: the rank's compute instructions pass 2^64"
        );
    }

    fn isend(req: ReqId, dst: u16, tag: u32, bytes: u64) -> Call {
        Call::Isend {
            req,
            dst,
            tag,
            ctx: CTX_PT2PT,
            buf: BufRef::new(0, 0),
            bytes,
        }
    }

    fn irecv(req: ReqId, src: Peer, tag: Tag, bytes: u64) -> Call {
        Call::Irecv {
            req,
            src,
            tag,
            ctx: CTX_PT2PT,
            buf: BufRef::new(0, 0),
            bytes,
        }
    }

    #[test]
    fn counts_a_pingpong() {
        let w = wl(vec![
            prog(
                &[64],
                vec![
                    isend(0, 1, 5, 64),
                    Call::Wait(0),
                    irecv(0, Peer::Any, Tag::Any, 64),
                    Call::Wait(0),
                ],
            ),
            prog(
                &[64],
                vec![
                    irecv(3, Peer::Rank(0), Tag::Tag(5), 64),
                    Call::Wait(3),
                    isend(3, 0, 6, 32),
                    Call::Wait(3),
                ],
            ),
        ]);
        for mode in [SendMode::Buffered, SendMode::Synchronous] {
            let rep = check_with(&w, mode).unwrap();
            assert_eq!(rep.messages(), 2);
            assert_eq!(rep.bytes(), 96);
            assert_eq!(rep.ranks[0].recv_bytes, 32);
            assert_eq!(rep.ranks[1].send_sizes.get(&32), Some(&1));
        }
    }

    /// Rank 1 preposts tags 1 and 2 before the barrier; after it rank 0 sends tags 2 and
    /// 1, then 3 and 4, which rank 1 then takes from the unexpected queue, 4 first.
    #[test]
    fn matches_say_which_queue_and_where() {
        let w = wl(vec![
            prog(
                &[8],
                vec![
                    Call::Barrier,
                    isend(0, 1, 2, 8),
                    isend(1, 1, 1, 8),
                    isend(2, 1, 3, 8),
                    isend(3, 1, 4, 8),
                    Call::Waitall(vec![0, 1, 2, 3]),
                ],
            ),
            prog(
                &[32],
                vec![
                    irecv_at(0, 1, 0),
                    irecv_at(1, 2, 8),
                    Call::Barrier,
                    irecv_at(2, 4, 16),
                    irecv_at(3, 3, 24),
                    Call::Waitall(vec![0, 1, 2, 3]),
                ],
            ),
        ]);
        let (rep, log) = check_matches(&w, SendMode::Buffered).unwrap();
        assert_eq!(rep, check(&w).unwrap());
        let found: Vec<(u32, Queue, usize, usize)> = log
            .iter()
            .map(|m| (m.tag, m.queue, m.position, m.depth))
            .collect();
        assert_eq!(
            found,
            vec![
                (2, Queue::Posted, 2, 2),
                (1, Queue::Posted, 1, 1),
                (4, Queue::Unexpected, 2, 2),
                (3, Queue::Unexpected, 1, 1),
            ]
        );
        assert_eq!(
            (log[0].rank, log[0].recv_call, log[0].src, log[0].send_call),
            (1, 1, 0, 1)
        );
    }

    fn irecv_at(req: ReqId, tag: u32, offset: u64) -> Call {
        Call::Irecv {
            req,
            src: Peer::Rank(0),
            tag: Tag::Tag(tag),
            ctx: CTX_PT2PT,
            buf: BufRef::new(0, offset),
            bytes: 8,
        }
    }

    #[test]
    fn head_to_head_blocking_sends_need_buffering() {
        let side = |other| {
            prog(
                &[64],
                vec![
                    isend(0, other, 1, 64),
                    Call::Wait(0),
                    irecv(0, Peer::Rank(other), Tag::Tag(1), 64),
                    Call::Wait(0),
                ],
            )
        };
        let w = wl(vec![side(1), side(0)]);
        assert!(check(&w).is_ok());
        let e = check_with(&w, SendMode::Synchronous).unwrap_err();
        assert!(e.starts_with("deadlock"), "{e}");
        assert!(
            e.contains("rank 0 call 1 waits for request 0 (call 0: send of 64 B to rank 1"),
            "{e}"
        );
    }

    #[test]
    fn deadlock_names_each_blocked_rank() {
        let w = wl(vec![
            prog(
                &[8],
                vec![irecv(0, Peer::Rank(1), Tag::Tag(1), 8), Call::Wait(0)],
            ),
            prog(&[8], vec![Call::Barrier]),
        ]);
        let e = check(&w).unwrap_err();
        assert!(e.contains("rank 0 call 1 waits for request 0 (call 0: receive of up to 8 B from rank 1, tag 1"), "{e}");
        assert!(e.contains("rank 1 call 0 waits at a barrier"), "{e}");
    }

    #[test]
    fn messages_do_not_overtake() {
        // Two sends with the same envelope: the first receive gets the first (smaller)
        // one, so nothing is truncated.
        let w = wl(vec![
            prog(
                &[64],
                vec![
                    isend(0, 1, 1, 8),
                    isend(1, 1, 1, 64),
                    Call::Waitall(vec![0, 1]),
                ],
            ),
            prog(
                &[64],
                vec![
                    irecv(0, Peer::Rank(0), Tag::Any, 8),
                    Call::Wait(0),
                    irecv(0, Peer::Any, Tag::Tag(1), 64),
                    Call::Wait(0),
                ],
            ),
        ]);
        assert!(check(&w).is_ok());
        let swapped = wl(vec![
            prog(
                &[64],
                vec![
                    isend(0, 1, 1, 64),
                    isend(1, 1, 1, 8),
                    Call::Waitall(vec![0, 1]),
                ],
            ),
            w.ranks[1].clone(),
        ]);
        let e = check(&swapped).unwrap_err();
        assert!(e.contains("rank 1 call 0: receives up to 8 bytes, but the matching message from rank 0 (call 0, tag 1) has 64 bytes (truncation)"), "{e}");
    }

    #[test]
    fn contexts_and_tags_separate_messages() {
        let mut r1 = irecv(0, Peer::Rank(0), Tag::Tag(1), 8);
        if let Call::Irecv { ctx, .. } = &mut r1 {
            *ctx = 1;
        }
        let w = wl(vec![
            prog(&[8], vec![isend(0, 1, 1, 8), Call::Wait(0)]),
            prog(&[8], vec![r1, Call::Wait(0)]),
        ]);
        let e = check(&w).unwrap_err();
        assert!(e.starts_with("deadlock"), "{e}");
    }

    #[test]
    fn buffer_errors() {
        let e = check(&wl(vec![prog(
            &[8],
            vec![Call::Copy {
                dst: BufRef::new(1, 0),
                src: BufRef::new(0, 0),
                bytes: 8,
            }],
        )]))
        .unwrap_err();
        assert_eq!(e, "rank 0 call 0: buffer 1 does not exist (the rank has 1)");
        let e = check(&wl(vec![prog(
            &[8, 16],
            vec![Call::Copy {
                dst: BufRef::new(1, 12),
                src: BufRef::new(0, 0),
                bytes: 8,
            }],
        )]))
        .unwrap_err();
        assert_eq!(
            e,
            "rank 0 call 0: bytes 12..12+8 lie outside buffer 1 `b1` of 16 bytes"
        );
        let sweep = Call::Sweep {
            at: BufRef::new(0, 4),
            bytes: 8,
            stride: 8,
            kind: SweepKind::Load,
        };
        assert!(check(&wl(vec![prog(&[16], vec![sweep])]))
            .unwrap_err()
            .contains("8-byte aligned"));
    }

    #[test]
    fn request_errors() {
        let one = |calls| check(&wl(vec![prog(&[64, 64], calls)])).unwrap_err();
        let e = one(vec![Call::Wait(4)]);
        assert!(
            e.starts_with("rank 0 call 0: waits for request 4, which is not outstanding"),
            "{e}"
        );
        let e = one(vec![
            isend(0, 0, 1, 8),
            Call::Irecv {
                req: 1,
                src: Peer::Rank(0),
                tag: Tag::Tag(1),
                ctx: CTX_PT2PT,
                buf: BufRef::new(1, 0),
                bytes: 8,
            },
            Call::Wait(0),
            Call::Wait(1),
            Call::Wait(1),
        ]);
        assert!(
            e.starts_with("rank 0 call 4: waits for request 1, which is not outstanding"),
            "{e}"
        );
        let e = one(vec![isend(0, 0, 1, 8)]);
        assert!(
            e.contains("request 0 (send of 8 B to rank 0, tag 1, context 0) is never waited for"),
            "{e}"
        );
        let e = one(vec![isend(2, 0, 1, 8), isend(2, 0, 1, 8)]);
        assert!(
            e.starts_with("rank 0 call 1: request 2 is reused while still outstanding (call 0"),
            "{e}"
        );
        let e = one(vec![isend(0, 0, 1, 8), Call::Wait(0)]);
        assert!(e.contains("is never received"), "{e}");
    }

    #[test]
    fn outstanding_buffers_are_not_touched() {
        let store = Call::Sweep {
            at: BufRef::new(0, 0),
            bytes: 64,
            stride: 8,
            kind: SweepKind::Store,
        };
        let w = wl(vec![
            prog(
                &[64],
                vec![isend(0, 1, 1, 64), store.clone(), Call::Wait(0)],
            ),
            prog(
                &[64],
                vec![irecv(0, Peer::Rank(0), Tag::Tag(1), 64), Call::Wait(0)],
            ),
        ]);
        let e = check(&w).unwrap_err();
        assert!(
            e.starts_with(
                "rank 0 call 1: writes bytes 0..64 of buffer 0, which request 0 (call 0: send"
            ),
            "{e}"
        );
        let w = wl(vec![
            prog(&[64], vec![isend(0, 1, 1, 64), Call::Wait(0)]),
            prog(
                &[64],
                vec![
                    irecv(0, Peer::Rank(0), Tag::Tag(1), 64),
                    Call::Sweep {
                        at: BufRef::new(0, 56),
                        bytes: 8,
                        stride: 8,
                        kind: SweepKind::Load,
                    },
                    Call::Wait(0),
                ],
            ),
        ]);
        assert!(check(&w).unwrap_err().contains("reads bytes 56..64"));
    }
}
