//! Intel MPI Benchmarks 3.x as workloads (`IMB_pingpong.c`, `IMB_pingping.c`,
//! `IMB_bcast.c`, `IMB_reduce.c`, `IMB_gather.c`, `IMB_alltoall.c`), and the bandwidth
//! benchmarks of later IMB versions (`IMB_bandwidth.c`: Uniband, Biband).
//!
//! Each benchmark is IMB 3.x's timing loop for one message size: N_BARR = 2 barriers,
//! then `iterations` calls with no barrier between them (later IMB versions put a
//! barrier after every call). The rooted collectives move the root every iteration
//! (`i1 = (++i1) % num_procs`, so root = i % P). Every rank has IMB's send and receive
//! buffers, sized for the benchmark, and sends from the same place each iteration
//! (IMB's default, without `-off_cache`). Before the barriers each rank writes its send
//! buffer, as IMB fills it with values when it sets the buffers up.
//!
//! With a warm-up, the benchmark first runs as `IMB_warm_up` runs it before the first
//! message size: the same call, barriers included, with [`N_WARMUP`] iterations or, where
//! more, as many as wrap MPICH's queues once ([`warmup_iterations`]: the smaller sizes IMB
//! times first have done that); then the timed call, whose timer (`t1 = MPI_Wtime()`)
//! starts after its barriers: a [`Call::ResetStats`] on every rank there.

use super::coll::{self, Builder};
use super::{BufRef, Call, SweepKind, Workload, CTX_PT2PT};
use crate::envelope::{Peer, Tag};

/// IMB's `N_BARR`: barriers before the timed loop.
pub const N_BARR: usize = 2;

/// IMB 3.x's `N_WARMUP` (`IMB_settings.h`): iterations of the untimed warm-up call.
pub const N_WARMUP: usize = 2;

/// Bytes one ch3:shm queue carries before it wraps (16 slots of 16 kB, `mpi::shm`; a test
/// there holds the two equal). IMB times each message size after the smaller ones, up to
/// 1,000 repetitions each, so by the time a size is timed every slot of every queue in use
/// has been written: the warm-up runs at least enough iterations to wrap each queue once.
pub const SHM_QUEUE_DATA_BYTES: u64 = 16 * 16 * 1024;

/// Data bytes of one ch3:shm slot (`mpi::shm::SLOT_DATA`; a test there holds the two
/// equal): every packet takes at least one slot, however few its bytes.
pub const SHM_SLOT_DATA_BYTES: u64 = 16 * 1024;

/// Iterations of the warm-up call for `bytes`-byte messages: enough to wrap each queue
/// once, counting a message smaller than a slot as the whole slot it takes, so a tiny
/// message needs no more round trips than a slot-sized one (17 at most below 16 kB).
pub fn warmup_iterations(bytes: u64) -> usize {
    let wrap = SHM_QUEUE_DATA_BYTES.div_ceil(bytes.max(SHM_SLOT_DATA_BYTES)) + 1;
    (wrap as usize).max(N_WARMUP)
}

/// IMB's `MAX_WIN_SIZE`: the messages Uniband and Biband have in flight per iteration.
pub const WINDOW: usize = 64;

/// The tag of IMB's point-to-point messages (`s_tag = 1`; receives take ANY_TAG).
pub const IMB_TAG: u32 = 1;

/// Stride of the sweep that fills a send buffer: one store per 64-byte line, which
/// leaves every line written.
const FILL_STRIDE: u64 = 64;

/// An IMB benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImbBenchmark {
    PingPong,
    PingPing,
    Bcast,
    Reduce,
    Gather,
    Alltoall,
    /// Ranks `r < P/2` each send a window of [`WINDOW`] non-blocking messages to
    /// `r + P/2`, wait for them all, then receive a one-byte acknowledgement.
    Uniband,
    /// As Uniband, but both ranks of a pair send a window to each other.
    Biband,
}

impl ImbBenchmark {
    /// The MOPED paper's short name.
    pub fn short_name(self) -> &'static str {
        match self {
            ImbBenchmark::PingPong => "PP",
            ImbBenchmark::PingPing => "XC",
            ImbBenchmark::Bcast => "BC",
            ImbBenchmark::Reduce => "RD",
            ImbBenchmark::Gather => "GA",
            ImbBenchmark::Alltoall => "AA",
            ImbBenchmark::Uniband => "UB",
            ImbBenchmark::Biband => "BB",
        }
    }
}

/// The workload of one IMB benchmark on `ranks` ranks with `bytes`-byte messages
/// (per rank, or per pair for Alltoall) and `iterations` timed calls, after IMB's
/// warm-up call when `warmup`.
pub fn build(
    bench: ImbBenchmark,
    ranks: usize,
    bytes: u64,
    iterations: u32,
    warmup: bool,
) -> Result<Workload, String> {
    let p = ranks;
    let two_ranks = matches!(bench, ImbBenchmark::PingPong | ImbBenchmark::PingPing);
    if two_ranks && p < 2 {
        return Err(format!("{bench:?} needs at least 2 ranks, not {p}"));
    }
    if p == 0 || p > crate::envelope::PORT_RANKS as usize {
        return Err(format!(
            "{p} ranks: a workload has 1 to {} ranks",
            crate::envelope::PORT_RANKS
        ));
    }
    if iterations == 0 {
        return Err("iterations must be at least 1".to_string());
    }
    let pairs = matches!(bench, ImbBenchmark::Uniband | ImbBenchmark::Biband);
    if pairs && (p < 2 || p % 2 == 1) {
        return Err(format!(
            "{bench:?} pairs rank r with r + P/2: it needs an even number of ranks, not {p}"
        ));
    }
    if bench == ImbBenchmark::Reduce && bytes % 4 != 0 {
        return Err(format!(
            "Reduce sends MPI_FLOATs: {bytes} bytes is not a whole number of 4-byte floats"
        ));
    }
    let x = bytes;
    // IMB_set_buf: Gather's root receives P blocks (every rank is root in turn) and
    // Alltoall sends and receives P blocks.
    let blocks = |n: usize| {
        x.checked_mul(n as u64).ok_or_else(|| {
            format!(
                "{bench:?} of {x}-byte messages on {p} ranks needs buffers of {n} x {x} \
                 bytes, past 2^64"
            )
        })
    };
    let (s_len, r_len) = match bench {
        ImbBenchmark::Gather => (x, blocks(p)?),
        ImbBenchmark::Alltoall => (blocks(p)?, blocks(p)?),
        // A window's receives are outstanding together: each gets a place of its own.
        ImbBenchmark::Uniband | ImbBenchmark::Biband => (x, blocks(WINDOW)?),
        _ => (x, x),
    };
    let mut b = Builder::new(p);
    let mut s = Vec::with_capacity(p);
    let mut r = Vec::with_capacity(p);
    let mut ack = Vec::new();
    for rank in 0..p {
        s.push(BufRef::new(b.buffer(rank, "imb.s_buffer", s_len.max(1)), 0));
        r.push(BufRef::new(b.buffer(rank, "imb.r_buffer", r_len.max(1)), 0));
        if pairs {
            ack.push(BufRef::new(b.buffer(rank, "imb.ack", 1), 0));
        }
        let active = !two_ranks || rank < 2;
        if active {
            b.sweep(rank, s[rank], s_len, FILL_STRIDE, SweepKind::Store);
        }
    }
    let bufs = Bufs { s, r, ack, x };
    if warmup {
        for _ in 0..N_BARR {
            b.barrier_all();
        }
        // A window benchmark's N_WARMUP iterations already put 2 x 64 messages through
        // each queue in use, each taking at least one of its 16 slots.
        let warm = if pairs {
            N_WARMUP
        } else {
            warmup_iterations(x)
        };
        for i in 0..warm {
            iteration(&mut b, bench, &bufs, i);
        }
    }
    for _ in 0..N_BARR {
        b.barrier_all();
    }
    if warmup {
        for rank in 0..p {
            b.push(rank, Call::ResetStats);
        }
    }
    for i in 0..iterations as usize {
        iteration(&mut b, bench, &bufs, i);
    }
    Ok(b.finish(bench.short_name()))
}

/// Every rank's send and receive buffer, and the message size.
struct Bufs {
    s: Vec<BufRef>,
    r: Vec<BufRef>,
    /// Uniband's and Biband's one-byte acknowledgement (`char ack`).
    ack: Vec<BufRef>,
    x: u64,
}

/// The calls of timing-loop iteration `i` of `bench`.
fn iteration(b: &mut Builder, bench: ImbBenchmark, bufs: &Bufs, i: usize) {
    let (s, r, x) = (&bufs.s, &bufs.r, bufs.x);
    let p = b.size();
    let root = i % p;
    match bench {
        ImbBenchmark::PingPong => {
            // pair0 sends then receives; pair1 receives then sends.
            b.send(0, 1, IMB_TAG, CTX_PT2PT, s[0], x);
            b.recv(0, Peer::Any, Tag::Any, CTX_PT2PT, r[0], x);
            b.recv(1, Peer::Any, Tag::Any, CTX_PT2PT, r[1], x);
            b.send(1, 0, IMB_TAG, CTX_PT2PT, s[1], x);
        }
        ImbBenchmark::PingPing => {
            for (me, other) in [(0, 1), (1, 0)] {
                let q = b.isend(me, other, IMB_TAG, CTX_PT2PT, s[me], x);
                b.recv(me, Peer::Any, Tag::Any, CTX_PT2PT, r[me], x);
                b.wait(me, q);
            }
        }
        ImbBenchmark::Bcast => {
            // The root broadcasts from s_buffer so the others never overwrite it.
            let bufs: Vec<BufRef> = (0..p)
                .map(|k| if k == root { s[k] } else { r[k] })
                .collect();
            coll::bcast(b, &bufs, x, root);
        }
        ImbBenchmark::Reduce => coll::reduce(b, s, r[root], x / 4, 4, root),
        ImbBenchmark::Gather => coll::gather(b, s, r[root], x, root),
        ImbBenchmark::Alltoall => coll::alltoall(b, s, r, x),
        ImbBenchmark::Uniband => window(b, bufs, false),
        ImbBenchmark::Biband => window(b, bufs, true),
    }
}

/// One iteration of Uniband (`both` false) or Biband: every window message of a rank goes
/// from the same place in its send buffer (IMB's default, without `-off_cache`), all with
/// tag 1 between the pair; then the second rank of each pair acknowledges. IMB also
/// receives the whole window into one place, which MPI leaves undefined for receives
/// outstanding together; here the window's k-th receive lands at `k * bytes`.
fn window(b: &mut Builder, bufs: &Bufs, both: bool) {
    let (s, r, x) = (&bufs.s, &bufs.r, bufs.x);
    let peers = b.size() / 2;
    for first in 0..peers {
        let second = first + peers;
        for (me, other, sends) in [(first, second, true), (second, first, both)] {
            let mut reqs = Vec::new();
            if me == second || both {
                for k in 0..WINDOW as u64 {
                    let src = Peer::Rank(other as u16);
                    let tag = Tag::Tag(IMB_TAG);
                    let at = BufRef::new(r[me].buf, k * x);
                    reqs.push(b.irecv(me, src, tag, CTX_PT2PT, at, x));
                }
            }
            if sends {
                for _ in 0..WINDOW {
                    reqs.push(b.isend(me, other, IMB_TAG, CTX_PT2PT, s[me], x));
                }
            }
            b.waitall(me, reqs);
        }
        let peer = Peer::Rank(second as u16);
        b.recv(
            first,
            peer,
            Tag::Tag(IMB_TAG),
            CTX_PT2PT,
            bufs.ack[first],
            1,
        );
        b.send(second, first, IMB_TAG, CTX_PT2PT, bufs.ack[second], 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::check::{check, check_with, SendMode};

    fn both(w: &Workload) -> crate::workload::check::CheckReport {
        let a = check(w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        let s = check_with(w, SendMode::Synchronous).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        assert_eq!(a, s);
        a
    }

    #[test]
    fn pingpong_two_messages_per_iteration_and_idle_ranks_only_barrier() {
        let w = build(ImbBenchmark::PingPong, 16, 16384, 10, false).unwrap();
        let rep = both(&w);
        assert_eq!(rep.messages(), 20);
        assert_eq!(rep.bytes(), 20 * 16384);
        assert_eq!(rep.ranks[0].sends, 10);
        assert_eq!(rep.ranks[1].recvs, 10);
        for k in 2..16 {
            assert_eq!(w.ranks[k].calls, vec![super::super::Call::Barrier; 2]);
        }
    }

    #[test]
    fn pingping_sends_concurrently() {
        let w = build(ImbBenchmark::PingPing, 16, 1 << 20, 10, false).unwrap();
        let rep = both(&w);
        assert_eq!(rep.messages(), 20);
        assert_eq!(rep.ranks[0].send_bytes, 10 << 20);
        assert_eq!(rep.ranks[1].send_bytes, 10 << 20);
    }

    #[test]
    fn uniband_and_biband_send_a_window_and_an_acknowledgement_per_pair() {
        let w = build(ImbBenchmark::Uniband, 4, 4096, 3, false).unwrap();
        let rep = both(&w);
        // Two pairs, 64 messages and one acknowledgement each per iteration.
        assert_eq!(rep.messages(), 3 * 2 * 65);
        assert_eq!(rep.bytes(), 3 * 2 * (64 * 4096 + 1));
        assert_eq!(rep.ranks[0].send_bytes, 3 * 64 * 4096);
        assert_eq!(rep.ranks[2].send_bytes, 3);
        assert_eq!(rep.ranks[2].recvs, 3 * 64);
        let w = build(ImbBenchmark::Biband, 2, 100, 2, true).unwrap();
        let rep = both(&w);
        // Warm-up and timed iterations: 128 messages and an acknowledgement each.
        assert_eq!(rep.messages(), (N_WARMUP as u64 + 2) * 129);
        assert_eq!(
            rep.ranks[1].send_bytes,
            (N_WARMUP as u64 + 2) * (64 * 100 + 1)
        );
        for p in [1, 3] {
            let e = build(ImbBenchmark::Uniband, p, 8, 1, false).unwrap_err();
            assert!(e.contains("even number of ranks"), "{e}");
        }
    }

    #[test]
    fn collectives_per_iteration_counts() {
        let per_iter = |bench, bytes| {
            let w = build(bench, 16, bytes, 10, false).unwrap();
            let rep = both(&w);
            assert_eq!(rep.messages() % 10, 0);
            (rep.messages() / 10, rep.bytes() / 10, rep.copies())
        };
        assert_eq!(per_iter(ImbBenchmark::Bcast, 16384).0, 79);
        assert_eq!(per_iter(ImbBenchmark::Bcast, 16384).1, 272 * 1024);
        // Bcast 1 MB: 15 scatter + 240 ring messages, 2 MB + 15 MB.
        let (m, by, _) = per_iter(ImbBenchmark::Bcast, 1 << 20);
        assert_eq!((m, by), (255, 17 << 20));
        let (m, by, c) = per_iter(ImbBenchmark::Reduce, 16384);
        assert_eq!((m, by), (79, 272 * 1024));
        assert_eq!(
            c,
            10 * 16,
            "every rank copies its input into the result buffer"
        );
        let (m, by, _) = per_iter(ImbBenchmark::Gather, 16384);
        assert_eq!((m, by), (15, 512 * 1024));
        let (m, by, c) = per_iter(ImbBenchmark::Alltoall, 16384);
        assert_eq!((m, by, c), (240, 240 * 16384, 10 * 16));
    }

    #[test]
    fn roots_rotate() {
        let w = build(ImbBenchmark::Gather, 16, 16384, 16, false).unwrap();
        let rep = both(&w);
        // Every rank is root once and receives 15 blocks then.
        for k in 0..16 {
            assert!(rep.ranks[k].recv_bytes >= 15 * 16384);
        }
    }

    /// Found by fuzzing: a 0-byte Gather (the first size of IMB's sweep) panicked with
    /// `an inner node has a temporary buffer`. Every benchmark runs at 0 bytes.
    #[test]
    fn zero_byte_messages() {
        use ImbBenchmark::*;
        for bench in [PingPong, PingPing, Bcast, Reduce, Gather, Alltoall] {
            let w = build(bench, 16, 0, 2, false).unwrap_or_else(|e| panic!("{bench:?}: {e}"));
            let rep = both(&w);
            assert_eq!(rep.bytes(), 0, "{bench:?}");
        }
        let rep = both(&build(Gather, 16, 0, 2, false).unwrap());
        assert_eq!(
            rep.messages(),
            0,
            "a 0-byte gather sends nothing, as in MPICH"
        );
    }

    #[test]
    fn refuses_what_imb_cannot_run() {
        assert!(build(ImbBenchmark::PingPong, 1, 8, 1, false).is_err());
        assert!(build(ImbBenchmark::Reduce, 4, 6, 1, false).is_err());
        assert!(build(ImbBenchmark::Bcast, 4, 8, 0, false).is_err());
    }

    #[test]
    fn buffers_of_many_blocks_past_2_64_are_refused_before_the_run() {
        for bench in [
            ImbBenchmark::Gather,
            ImbBenchmark::Alltoall,
            ImbBenchmark::Uniband,
        ] {
            let e = build(bench, 16, 1 << 62, 1, false).unwrap_err();
            assert!(e.contains("past 2^64"), "{bench:?}: {e}");
        }
    }
}
