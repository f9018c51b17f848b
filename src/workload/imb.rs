//! Intel MPI Benchmarks 3.x as workloads (`IMB_pingpong.c`, `IMB_pingping.c`,
//! `IMB_bcast.c`, `IMB_reduce.c`, `IMB_gather.c`, `IMB_alltoall.c`).
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

/// Iterations of the warm-up call for `bytes`-byte messages.
pub fn warmup_iterations(bytes: u64) -> usize {
    let wrap = SHM_QUEUE_DATA_BYTES.div_ceil(bytes.max(1)) + 1;
    (wrap as usize).max(N_WARMUP)
}

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
    if bench == ImbBenchmark::Reduce && bytes % 4 != 0 {
        return Err(format!(
            "Reduce sends MPI_FLOATs: {bytes} bytes is not a whole number of 4-byte floats"
        ));
    }
    let x = bytes;
    // IMB_set_buf: Gather's root receives P blocks (every rank is root in turn) and
    // Alltoall sends and receives P blocks.
    let (s_len, r_len) = match bench {
        ImbBenchmark::Gather => (x, p as u64 * x),
        ImbBenchmark::Alltoall => (p as u64 * x, p as u64 * x),
        _ => (x, x),
    };
    let mut b = Builder::new(p);
    let mut s = Vec::with_capacity(p);
    let mut r = Vec::with_capacity(p);
    for rank in 0..p {
        s.push(BufRef::new(b.buffer(rank, "imb.s_buffer", s_len.max(1)), 0));
        r.push(BufRef::new(b.buffer(rank, "imb.r_buffer", r_len.max(1)), 0));
        let active = !two_ranks || rank < 2;
        if active {
            b.sweep(rank, s[rank], s_len, FILL_STRIDE, SweepKind::Store);
        }
    }
    let bufs = Bufs { s, r, x };
    if warmup {
        for _ in 0..N_BARR {
            b.barrier_all();
        }
        for i in 0..warmup_iterations(x) {
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
}
