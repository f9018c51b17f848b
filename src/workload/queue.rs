//! MPI queue benchmarks: programs that put a known number of entries ahead of a measured
//! match in the posted-receive queue (PRQ) or the unexpected-message queue (UMQ), to
//! measure how a matching engine's cost grows with the queue.
//!
//! - [`QueueBenchmark::Preposted`]: the preposted receive latency benchmark of Underwood
//!   and Brightwell ("The impact of MPI queue usage on message latency", ICPP 2004; also
//!   used by Underwood et al., "A hardware acceleration unit for MPI queue processing",
//!   IPDPS 2005, for the ALPU). Rank 0 preposts `depth - 1` receives no message matches until the
//!   end (from rank 1, [`PREPOSTED_TAG`]), then the measured receive, which sits at
//!   position `depth` of the PRQ, and tells rank 1 so with a zero-byte message
//!   ([`READY_TAG`]). Then rank 1 and rank 0 ping-pong `iterations` times with `bytes`
//!   bytes each way: each ping ([`PING_TAG`]) is matched at PRQ position `depth`; rank 0
//!   reposts the measured receive before its pong ([`PONG_TAG`]), so the preposted
//!   receives stay posted across iterations, as in the original, and the pong tells rank
//!   1 that the next ping will find its receive posted. Rank 1 posts its pong receive
//!   before each ping, so every timed message is expected. Last, rank 1 sends the
//!   `depth - 1` messages that drain the preposted receives (the model has no
//!   MPI_Cancel).
//! - [`QueueBenchmark::Unload`]: the queue-unload benchmark of Mattheakis and
//!   Papaefstathiou (ACM TACO 2013), as used by Xiong et al. (2019). Rank 0 preposts
//!   `depth` receives with distinct tags `1..=depth`, naming their sources by
//!   [`Sources`]; each sender sends its messages in decreasing tag order, so the last
//!   receive posted is matched first and every match is at the end of the PRQ (of the
//!   sender's part of it when there are several senders: how their messages interleave
//!   is left to timing); rank 0 waits for all of them in one Waitall. Senders start when
//!   a zero-byte message from rank 0 ([`GO_TAG`]) says the receives are posted. More
//!   iterations repeat all of it, posting included; the timer starts in the first.
//! - [`QueueBenchmark::Unexpected`]: a search of the UMQ. Rank 1 sends
//!   `depth + iterations - 1` messages with tags `1, 2, ...` and then a zero-byte message
//!   ([`READY_TAG`]) on the same channel, so that when rank 0 has received it every
//!   earlier message sits in its UMQ. Iteration `i` (from 0) then receives tag
//!   `position + i`, which is at UMQ position `position` with `depth + iterations - 1 - i`
//!   messages queued (`depth` in the last iteration); the rest are drained in the order
//!   they were sent.
//!
//! The ranks synchronise by zero-byte messages, not barriers: a barrier's messages would
//! search the queue being measured, and a MOPED design that backed off to shared memory
//! (more receives posted than it has descriptors) returns to MOPED at the next barrier
//! even while receives posted through shared memory are outstanding, which a message
//! then sent through MOPED never meets (the runtime deadlocks). The timer starts (a
//! [`Call::ResetStats`], when the run has a warm-up) once the queue is set up: when rank 1
//! has the ready message (preposted), when a sender has its go (unload), when rank 0 has
//! the ready message (unexpected). It stops (a [`Call::StopStats`] on every rank) after
//! the measured matches, so the drains that follow are left out of the statistics.
//!
//! Tags stay at most `0xFFFE` (the 16-bit tag fields, `workload::tags`).

use super::coll::Builder;
use super::{BufRef, Call, ReqId, SweepKind, Workload, CTX_PT2PT};
use crate::envelope::{Peer, Tag};

/// Largest `depth` a spec may ask for.
pub const MAX_DEPTH: u32 = 32768;

/// Tags of the preposted benchmark: the ping (measured), the pong, and the preposted
/// receives that nothing matches until the drain.
pub const PING_TAG: u32 = 1;
pub const PONG_TAG: u32 = 2;
pub const PREPOSTED_TAG: u32 = 3;
/// Unload: rank 0's zero-byte message that lets a sender start.
pub const GO_TAG: u32 = 0;
/// Preposted: rank 0's zero-byte message once its receives are posted. Unexpected: the
/// sender's zero-byte message after its `depth + iterations - 1`.
pub const READY_TAG: u32 = 0;
/// Largest tag used (the 16-bit tag fields' largest, `tags::WIRE_TAG_MAX`).
const MAX_TAG: u32 = super::tags::WIRE_TAG_MAX;

/// Stride of the sweep that fills a send buffer (one store per 64-byte line).
const FILL_STRIDE: u64 = 64;

/// A queue benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueBenchmark {
    Preposted,
    Unload,
    Unexpected,
}

impl QueueBenchmark {
    pub fn name(self) -> &'static str {
        match self {
            QueueBenchmark::Preposted => "preposted",
            QueueBenchmark::Unload => "unload",
            QueueBenchmark::Unexpected => "unexpected",
        }
    }
}

/// Which rank each of the unload benchmark's receives names as its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sources {
    /// Round-robin over the senders: receive `k` (from 1) names rank `1 + (k - 1) % (P - 1)`.
    Uniform,
    /// Nine in ten from rank 1: receive `k` names rank 1, except every tenth (`k % 10 == 0`),
    /// which names rank `2 + (k / 10 - 1) % (P - 2)`; needs P >= 3.
    Skewed,
}

impl Sources {
    /// The source of receive `k` (from 1) among `ranks` ranks.
    pub fn source(self, k: u32, ranks: usize) -> usize {
        let k = k as usize;
        match self {
            Sources::Uniform => 1 + (k - 1) % (ranks - 1),
            Sources::Skewed if k % 10 == 0 => 2 + (k / 10 - 1) % (ranks - 2),
            Sources::Skewed => 1,
        }
    }
}

/// What a queue benchmark is built with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueParams {
    pub benchmark: QueueBenchmark,
    /// Entries in the searched queue at the measured match.
    pub depth: u32,
    /// Unexpected: the place (from 1) of the measured message in the UMQ.
    pub position: u32,
    pub bytes: u64,
    pub iterations: u32,
    pub ranks: usize,
    /// Unload: the receives' sources.
    pub sources: Sources,
}

impl QueueParams {
    /// `benchmark` at `depth` with the defaults: 8 bytes, 2 ranks, uniform sources,
    /// position `depth`, 10 iterations for preposted and 1 for the others.
    pub fn new(benchmark: QueueBenchmark, depth: u32) -> QueueParams {
        QueueParams {
            benchmark,
            depth,
            position: depth,
            bytes: 8,
            iterations: default_iterations(benchmark),
            ranks: 2,
            sources: Sources::Uniform,
        }
    }

    /// Messages the sender queues in the unexpected benchmark.
    fn unexpected_messages(&self) -> u64 {
        self.depth as u64 + self.iterations as u64 - 1
    }
}

/// Iterations when a spec does not say.
pub fn default_iterations(b: QueueBenchmark) -> u32 {
    match b {
        QueueBenchmark::Preposted => 10,
        QueueBenchmark::Unload | QueueBenchmark::Unexpected => 1,
    }
}

/// Why `depth` is refused, if it is.
pub fn check_depth(depth: u32) -> Result<(), String> {
    if (1..=MAX_DEPTH).contains(&depth) {
        return Ok(());
    }
    Err(format!("depth must be 1 to {MAX_DEPTH}, not {depth}"))
}

/// Why `position` is refused at `depth`, if it is.
pub fn check_position(position: u32, depth: u32) -> Result<(), String> {
    if (1..=depth).contains(&position) {
        return Ok(());
    }
    Err(format!(
        "position must be 1 to depth ({depth}), not {position}"
    ))
}

/// Why `ranks` is refused for `b` with `sources`, if it is.
pub fn check_ranks(b: QueueBenchmark, ranks: usize, sources: Sources) -> Result<(), String> {
    let max = crate::envelope::PORT_RANKS as usize;
    match b {
        QueueBenchmark::Unload if sources == Sources::Skewed && !(3..=max).contains(&ranks) => Err(
            format!("skewed sources need 3 to {max} ranks (rank 0 and two senders), not {ranks}"),
        ),
        QueueBenchmark::Unload if !(2..=max).contains(&ranks) => {
            Err(format!("unload needs 2 to {max} ranks, not {ranks}"))
        }
        QueueBenchmark::Unload => Ok(()),
        _ if ranks != 2 => Err(format!(
            "{} runs on 2 ranks, not {ranks} (only unload spreads its senders over more)",
            b.name()
        )),
        _ => Ok(()),
    }
}

/// Why the iteration count is refused, if it is: the unexpected benchmark's messages each
/// have a tag of their own.
pub fn check_iterations(p: &QueueParams) -> Result<(), String> {
    if p.iterations == 0 {
        return Err("iterations must be at least 1".into());
    }
    let n = p.unexpected_messages();
    if p.benchmark == QueueBenchmark::Unexpected && n > MAX_TAG as u64 {
        return Err(format!(
            "unexpected sends depth + iterations - 1 = {n} messages, each with a tag of its \
             own: at most {MAX_TAG}"
        ));
    }
    Ok(())
}

/// Why the buffers cannot be sized, if they cannot: up to `depth` outstanding receives
/// of `bytes` each.
pub fn check_bytes(depth: u32, bytes: u64) -> Result<(), String> {
    match bytes.checked_mul(depth as u64) {
        Some(_) => Ok(()),
        None => Err(format!("{depth} receives of {bytes} bytes pass 2^64 bytes")),
    }
}

/// The workload of one queue benchmark; with `warmup`, a [`Call::ResetStats`] where its
/// timer starts (see the module documentation).
pub fn build(p: &QueueParams, warmup: bool) -> Result<Workload, String> {
    check_depth(p.depth)?;
    if p.benchmark == QueueBenchmark::Unexpected {
        check_position(p.position, p.depth)?;
    }
    check_ranks(p.benchmark, p.ranks, p.sources)?;
    check_iterations(p)?;
    check_bytes(p.depth, p.bytes)?;
    let mut b = Builder::new(p.ranks);
    let drained = match p.benchmark {
        QueueBenchmark::Preposted => preposted(&mut b, p, warmup),
        QueueBenchmark::Unload => unload(&mut b, p, warmup),
        QueueBenchmark::Unexpected => unexpected(&mut b, p, warmup),
    };
    let mut w = b.finish(&format!("{}-{}", p.benchmark.name(), p.depth));
    if drained > 0 {
        w.notes.push(format!(
            "after the timer stops, {drained} messages drain the queue, each matched at its \
             head"
        ));
    }
    Ok(w)
}

/// A buffer of at least one byte (a zero-byte message still names one).
fn buffer(b: &mut Builder, rank: usize, name: &str, bytes: u64) -> BufRef {
    BufRef::new(b.buffer(rank, name, bytes.max(1)), 0)
}

/// A send buffer, written first as a program sets its data up.
fn send_buffer(b: &mut Builder, rank: usize, bytes: u64) -> BufRef {
    let s = buffer(b, rank, "queue.s_buffer", bytes);
    b.sweep(rank, s, bytes, FILL_STRIDE, SweepKind::Store);
    s
}

fn at(r: BufRef, off: u64) -> BufRef {
    BufRef::new(r.buf, r.offset + off)
}

fn from(rank: usize) -> Peer {
    Peer::Rank(rank as u16)
}

fn timer_start(b: &mut Builder, rank: usize, warmup: bool) {
    if warmup {
        b.push(rank, Call::ResetStats);
    }
}

/// The measured part ends here for `rank`: the statistics stop once every rank is past
/// its mark, so draining the queue is left out.
fn timer_stop(b: &mut Builder, rank: usize) {
    b.push(rank, Call::StopStats);
}

/// The preposted benchmark; returns the messages that drain the preposted receives.
fn preposted(b: &mut Builder, p: &QueueParams, warmup: bool) -> u64 {
    let (x, ahead) = (p.bytes, p.depth as u64 - 1);
    let s = [send_buffer(b, 0, x), send_buffer(b, 1, x)];
    let r = [
        buffer(b, 0, "queue.r_buffer", x),
        buffer(b, 1, "queue.r_buffer", x),
    ];
    // Each preposted receive has bytes of its own, as outstanding receives must.
    let pre = buffer(b, 0, "queue.preposted", ahead * x);
    let tag = Tag::Tag(PREPOSTED_TAG);
    let preposted: Vec<ReqId> = (0..ahead)
        .map(|k| b.irecv(0, from(1), tag, CTX_PT2PT, at(pre, k * x), x))
        .collect();
    let mut measured = b.irecv(0, from(1), Tag::Tag(PING_TAG), CTX_PT2PT, r[0], x);
    b.send(0, 1, READY_TAG, CTX_PT2PT, s[0], 0);
    b.recv(1, from(0), Tag::Tag(READY_TAG), CTX_PT2PT, r[1], 0);
    flush(b, 0, 1, (s, r));
    timer_start(b, 1, warmup);
    for i in 0..p.iterations {
        let pong = b.irecv(1, from(0), Tag::Tag(PONG_TAG), CTX_PT2PT, r[1], x);
        b.send(1, 0, PING_TAG, CTX_PT2PT, s[1], x);
        b.wait(1, pong);
        b.wait(0, measured);
        if i + 1 < p.iterations {
            measured = b.irecv(0, from(1), Tag::Tag(PING_TAG), CTX_PT2PT, r[0], x);
        }
        b.send(0, 1, PONG_TAG, CTX_PT2PT, s[0], x);
    }
    timer_stop(b, 0);
    timer_stop(b, 1);
    for _ in 0..ahead {
        b.send(1, 0, PREPOSTED_TAG, CTX_PT2PT, s[1], x);
    }
    b.waitall(0, preposted);
    ahead
}

/// A zero-byte round trip from `peer` to `receiver` and back. A matching engine checks
/// arrivals in order, so the first message is matched only once every receive posted
/// before it has been checked: the timer then starts with the queue in place, not with a
/// slow engine's backlog of checks (the software path's queue is in place at once).
fn flush(b: &mut Builder, receiver: usize, peer: usize, (s, r): ([BufRef; 2], [BufRef; 2])) {
    for (src, dst) in [(peer, receiver), (receiver, peer)] {
        b.send(src, dst, READY_TAG, CTX_PT2PT, s[src.min(1)], 0);
        b.recv(
            dst,
            from(src),
            Tag::Tag(READY_TAG),
            CTX_PT2PT,
            r[dst.min(1)],
            0,
        );
    }
}

/// The unload benchmark (nothing to drain).
fn unload(b: &mut Builder, p: &QueueParams, warmup: bool) -> u64 {
    let (x, d, ranks) = (p.bytes, p.depth, p.ranks);
    let arena = buffer(b, 0, "queue.r_buffer", d as u64 * x);
    let go = buffer(b, 0, "queue.s_buffer", 0);
    let senders: Vec<(BufRef, BufRef)> = (1..ranks)
        .map(|s| (send_buffer(b, s, x), buffer(b, s, "queue.r_buffer", 0)))
        .collect();
    for cycle in 0..p.iterations {
        let reqs: Vec<ReqId> = (1..=d)
            .map(|k| {
                let src = from(p.sources.source(k, ranks));
                let into = at(arena, (k - 1) as u64 * x);
                b.irecv(0, src, Tag::Tag(k), CTX_PT2PT, into, x)
            })
            .collect();
        // Rank 1's zero-byte message is checked after every receive above (see `flush`):
        // the senders start once the queue is in place.
        b.send(1, 0, GO_TAG, CTX_PT2PT, senders[0].0, 0);
        b.recv(0, from(1), Tag::Tag(GO_TAG), CTX_PT2PT, go, 0);
        let gos: Vec<ReqId> = (1..ranks)
            .map(|s| b.isend(0, s, GO_TAG, CTX_PT2PT, go, 0))
            .collect();
        b.waitall(0, gos);
        for (s, &(sbuf, rbuf)) in (1..ranks).zip(&senders) {
            b.recv(s, from(0), Tag::Tag(GO_TAG), CTX_PT2PT, rbuf, 0);
            if cycle == 0 {
                timer_start(b, s, warmup);
            }
            for k in (1..=d).rev().filter(|&k| p.sources.source(k, ranks) == s) {
                b.send(s, 0, k, CTX_PT2PT, sbuf, x);
            }
        }
        b.waitall(0, reqs);
    }
    (0..ranks).for_each(|r| timer_stop(b, r));
    0
}

/// The unexpected benchmark; returns the messages drained after the measured ones.
fn unexpected(b: &mut Builder, p: &QueueParams, warmup: bool) -> u64 {
    let (x, n) = (p.bytes, p.unexpected_messages() as u32);
    let s = send_buffer(b, 1, x);
    let r = buffer(b, 0, "queue.r_buffer", x);
    // Nonblocking sends: a rendezvous send completes only once rank 0 receives it.
    let sends: Vec<ReqId> = (1..=n).map(|t| b.isend(1, 0, t, CTX_PT2PT, s, x)).collect();
    b.send(1, 0, READY_TAG, CTX_PT2PT, s, 0);
    // Under MOPED a send completes only once matched: rank 1's part of the measurement
    // ends before it waits for them.
    timer_stop(b, 1);
    b.waitall(1, sends);
    b.recv(0, from(1), Tag::Tag(READY_TAG), CTX_PT2PT, r, 0);
    timer_start(b, 0, warmup);
    let measured = p.position..p.position + p.iterations;
    for t in measured.clone() {
        b.recv(0, from(1), Tag::Tag(t), CTX_PT2PT, r, x);
    }
    timer_stop(b, 0);
    let rest: Vec<u32> = (1..=n).filter(|t| !measured.contains(t)).collect();
    for &t in &rest {
        b.recv(0, from(1), Tag::Tag(t), CTX_PT2PT, r, x);
    }
    rest.len() as u64
}

#[cfg(test)]
mod tests;
