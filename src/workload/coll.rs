//! MPICH2 1.2's collective algorithms, expanded into point-to-point calls for all ranks.
//!
//! A [`Builder`] holds the programs of all ranks while a workload is built; each
//! collective appends the calls of every rank. The algorithms, their thresholds
//! (`src/include/mpiimpl.h` at MPICH2 v1.2) and the tags (`MPIR_*_TAG`) are MPICH's; the
//! messages use [`CTX_COLL`]. MPICH's `MPIC_Send`/`MPIC_Recv` are an `Isend`/`Irecv` and
//! a `Wait`; `MPIC_Sendrecv` posts the receive, then the send, and waits for the send
//! first (`src/mpi/coll/helper_fns.c`). Temporary buffers (MPICH's `MPIU_Malloc`) are
//! allocated once per rank by name and reused by later collectives, as a C allocator
//! hands the freed block back.
//!
//! Where MPICH sends or receives a non-contiguous datatype, which the IR cannot express,
//! the data goes through a temporary buffer with explicit copies; each case says so.

// A rank number indexes the per-rank buffer slices and names the program the builder
// appends to, so loops run over rank numbers.
#![allow(clippy::needless_range_loop)]

use super::{BufId, BufRef, Call, RankProgram, ReqId, SweepKind, Workload, CTX_COLL};
use crate::envelope::{Peer, Tag};
use std::collections::BTreeSet;

/// `MPIR_BCAST_TAG`.
pub const BCAST_TAG: u32 = 2;
/// `MPIR_GATHER_TAG`.
pub const GATHER_TAG: u32 = 3;
/// `MPIR_ALLTOALL_TAG`.
pub const ALLTOALL_TAG: u32 = 9;
/// `MPIR_REDUCE_TAG`.
pub const REDUCE_TAG: u32 = 11;
/// `MPIR_ALLREDUCE_TAG`.
pub const ALLREDUCE_TAG: u32 = 14;

/// `MPIR_BCAST_SHORT_MSG`: below this a broadcast uses the binomial tree.
pub const BCAST_SHORT_MSG: u64 = 12288;
/// `MPIR_BCAST_LONG_MSG`: below this (and P a power of two) the allgather after the
/// scatter is recursive doubling, else a ring.
pub const BCAST_LONG_MSG: u64 = 524288;
/// `MPIR_BCAST_MIN_PROCS`: with fewer ranks a broadcast always uses the binomial tree.
pub const BCAST_MIN_PROCS: usize = 8;
/// `MPIR_REDUCE_SHORT_MSG`: above this a reduce is Rabenseifner's.
pub const REDUCE_SHORT_MSG: u64 = 2048;
/// `MPIR_ALLREDUCE_SHORT_MSG`: up to this an allreduce is recursive doubling.
pub const ALLREDUCE_SHORT_MSG: u64 = 2048;
/// `MPIR_GATHER_VSMALL_MSG`: below this every inner node copies its own block into the
/// temporary buffer (and the root gathers there when it is not rank 0).
pub const GATHER_VSMALL_MSG: u64 = 1024;
/// `MPIR_ALLTOALL_SHORT_MSG`: up to this (and P >= 8) an alltoall is Bruck's.
pub const ALLTOALL_SHORT_MSG: u64 = 256;
/// `MPIR_ALLTOALL_MEDIUM_MSG`: up to this an alltoall posts isend/irecv in blocks.
pub const ALLTOALL_MEDIUM_MSG: u64 = 32768;
/// `MPIR_ALLTOALL_THROTTLE`: pairs outstanding at once in the medium alltoall.
pub const ALLTOALL_THROTTLE: usize = 4;

/// The programs of all ranks while a workload is built, with each rank's request
/// numbers and temporary buffers.
#[derive(Clone, Debug)]
pub struct Builder {
    ranks: Vec<RankProgram>,
    /// Per rank: request numbers given out and not yet waited for.
    busy: Vec<BTreeSet<ReqId>>,
    /// Per rank: temporary buffers by name.
    temps: Vec<Vec<(String, BufId)>>,
}

impl Builder {
    /// Empty programs for `ranks` ranks.
    pub fn new(ranks: usize) -> Builder {
        Builder {
            ranks: vec![RankProgram::default(); ranks],
            busy: vec![BTreeSet::new(); ranks],
            temps: vec![Vec::new(); ranks],
        }
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// A rank's program so far.
    pub fn program(&self, rank: usize) -> &RankProgram {
        &self.ranks[rank]
    }

    /// Adds a named buffer to a rank.
    pub fn buffer(&mut self, rank: usize, name: &str, bytes: u64) -> BufId {
        self.ranks[rank].buffer(name, bytes)
    }

    /// A rank's temporary buffer `name` of at least `bytes` bytes: allocated on first
    /// use, grown when a later use needs more (the build is over before anything runs,
    /// so growing never invalidates an earlier reference).
    pub fn temp(&mut self, rank: usize, name: &str, bytes: u64) -> BufId {
        if let Some(&(_, id)) = self.temps[rank].iter().find(|(n, _)| n == name) {
            let b = &mut self.ranks[rank].buffers[id as usize];
            b.bytes = b.bytes.max(bytes);
            return id;
        }
        let id = self.ranks[rank].buffer(name, bytes);
        self.temps[rank].push((name.to_string(), id));
        id
    }

    /// Appends a call to a rank's program. Requests are allocated by [`Builder::isend`]
    /// and [`Builder::irecv`] and freed by [`Builder::wait`]; push those through them.
    pub fn push(&mut self, rank: usize, call: Call) {
        self.ranks[rank].calls.push(call);
    }

    /// Non-memory instructions.
    pub fn compute(&mut self, rank: usize, instructions: u64) {
        if instructions > 0 {
            self.push(rank, Call::Compute(instructions));
        }
    }

    /// A sweep over `bytes` bytes from `at`, one 8-byte word every `stride` bytes.
    pub fn sweep(&mut self, rank: usize, at: BufRef, bytes: u64, stride: u64, kind: SweepKind) {
        if bytes > 0 {
            self.push(
                rank,
                Call::Sweep {
                    at,
                    bytes,
                    stride,
                    kind,
                },
            );
        }
    }

    /// A local memcpy (nothing for zero bytes).
    pub fn copy(&mut self, rank: usize, dst: BufRef, src: BufRef, bytes: u64) {
        if bytes > 0 {
            self.push(rank, Call::Copy { dst, src, bytes });
        }
    }

    /// A reduction's local step `acc += src` (nothing for zero bytes).
    pub fn combine(&mut self, rank: usize, acc: BufRef, src: BufRef, bytes: u64) {
        if bytes > 0 {
            self.push(rank, Call::Combine { acc, src, bytes });
        }
    }

    /// MPI_Barrier on every rank.
    pub fn barrier_all(&mut self) {
        for r in 0..self.size() {
            self.push(r, Call::Barrier);
        }
    }

    /// The lowest request number not in use, as MPI reuses freed request handles.
    fn new_req(&mut self, rank: usize) -> ReqId {
        let busy = &mut self.busy[rank];
        // Numbers 0..n all in use (a program posting thousands of receives before it
        // waits): the next is n, found without reading them all.
        let n = busy.len() as ReqId;
        if busy.last().copied() == n.checked_sub(1) {
            busy.insert(n);
            return n;
        }
        let mut req = 0;
        for &r in busy.iter() {
            if r != req {
                break;
            }
            req += 1;
        }
        busy.insert(req);
        req
    }

    /// MPI_Isend.
    pub fn isend(
        &mut self,
        rank: usize,
        dst: usize,
        tag: u32,
        ctx: u16,
        buf: BufRef,
        bytes: u64,
    ) -> ReqId {
        let req = self.new_req(rank);
        self.push(
            rank,
            Call::Isend {
                req,
                dst: dst as u16,
                tag,
                ctx,
                buf,
                bytes,
            },
        );
        req
    }

    /// MPI_Irecv.
    pub fn irecv(
        &mut self,
        rank: usize,
        src: Peer,
        tag: Tag,
        ctx: u16,
        buf: BufRef,
        bytes: u64,
    ) -> ReqId {
        let req = self.new_req(rank);
        self.push(
            rank,
            Call::Irecv {
                req,
                src,
                tag,
                ctx,
                buf,
                bytes,
            },
        );
        req
    }

    /// MPI_Wait: the request number is free again afterwards.
    pub fn wait(&mut self, rank: usize, req: ReqId) {
        let was_busy = self.busy[rank].remove(&req);
        debug_assert!(was_busy, "rank {rank} waits for request {req}, not in use");
        self.push(rank, Call::Wait(req));
    }

    /// MPI_Waitall.
    pub fn waitall(&mut self, rank: usize, reqs: Vec<ReqId>) {
        if reqs.is_empty() {
            return;
        }
        for r in &reqs {
            let was_busy = self.busy[rank].remove(r);
            debug_assert!(was_busy, "rank {rank} waits for request {r}, not in use");
        }
        self.push(rank, Call::Waitall(reqs));
    }

    /// A blocking send (MPI_Send / MPIC_Send): Isend, then Wait.
    pub fn send(&mut self, rank: usize, dst: usize, tag: u32, ctx: u16, buf: BufRef, bytes: u64) {
        let r = self.isend(rank, dst, tag, ctx, buf, bytes);
        self.wait(rank, r);
    }

    /// A blocking receive (MPI_Recv / MPIC_Recv): Irecv, then Wait.
    pub fn recv(&mut self, rank: usize, src: Peer, tag: Tag, ctx: u16, buf: BufRef, bytes: u64) {
        let r = self.irecv(rank, src, tag, ctx, buf, bytes);
        self.wait(rank, r);
    }

    /// MPIC_Sendrecv with one tag on both sides: Irecv, Isend, Wait(send), Wait(recv).
    #[allow(clippy::too_many_arguments)]
    pub fn sendrecv(
        &mut self,
        rank: usize,
        tag: u32,
        ctx: u16,
        (sbuf, sbytes, dst): (BufRef, u64, usize),
        (rbuf, rbytes, src): (BufRef, u64, usize),
    ) {
        let rr = self.irecv(
            rank,
            Peer::Rank(src as u16),
            Tag::Tag(tag),
            ctx,
            rbuf,
            rbytes,
        );
        let sr = self.isend(rank, dst, tag, ctx, sbuf, sbytes);
        self.wait(rank, sr);
        self.wait(rank, rr);
    }

    /// The finished workload. Every request must have been waited for.
    pub fn finish(self, name: &str) -> Workload {
        debug_assert!(
            self.busy.iter().all(|b| b.is_empty()),
            "requests left unwaited: {:?}",
            self.busy
        );
        Workload {
            name: name.to_string(),
            ranks: self.ranks,
            notes: Vec::new(),
            origins: None,
        }
    }
}

fn at(r: BufRef, off: u64) -> BufRef {
    BufRef::new(r.buf, r.offset + off)
}

fn peer(rank: usize) -> Peer {
    Peer::Rank(rank as u16)
}

/// The largest power of two not above `p` (MPICH's `pof2` in reduce and allreduce).
fn pof2_floor(p: usize) -> usize {
    let mut x = 1;
    while x * 2 <= p {
        x *= 2;
    }
    x
}

/// Blocking receive and send on the collective context with a fixed tag.
fn csend(b: &mut Builder, rank: usize, tag: u32, buf: BufRef, bytes: u64, dst: usize) {
    b.send(rank, dst, tag, CTX_COLL, buf, bytes);
}

fn crecv(b: &mut Builder, rank: usize, tag: u32, buf: BufRef, bytes: u64, src: usize) {
    b.recv(rank, peer(src), Tag::Tag(tag), CTX_COLL, buf, bytes);
}

/// MPI_Bcast of `nbytes` bytes from `root`; `bufs[r]` is rank r's buffer
/// (`src/mpi/coll/bcast.c`). Binomial tree when `nbytes < 12288` or P < 8; otherwise a
/// binomial scatter of ceil(nbytes/P)-byte pieces, then an allgather by recursive
/// doubling (nbytes < 512 KiB and P a power of two) or around a ring.
pub fn bcast(b: &mut Builder, bufs: &[BufRef], nbytes: u64, root: usize) {
    let p = b.size();
    assert_eq!(bufs.len(), p);
    if nbytes == 0 || p == 1 {
        return;
    }
    if nbytes < BCAST_SHORT_MSG || p < BCAST_MIN_PROCS {
        bcast_binomial(b, bufs, nbytes, root);
        return;
    }
    // In the scatter relative rank `rel` receives the bytes of its subtree that exist
    // (its lowest set bit counts the subtree's pieces), passes all but its own piece on
    // and keeps that one.
    let ss = nbytes.div_ceil(p as u64);
    let lowbit = |rel: usize| rel & rel.wrapping_neg();
    let received = |rel: usize| -> u64 {
        let left = nbytes.saturating_sub(rel as u64 * ss);
        left.min(lowbit(rel) as u64 * ss)
    };
    let kept = |rel: usize| nbytes.saturating_sub(rel as u64 * ss).min(ss);
    for rank in 0..p {
        let rel = (rank + p - root) % p;
        let buf = bufs[rank];
        let mut curr = if rel == 0 { nbytes } else { 0 };
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                let src = (rank + p - mask) % p;
                let posted = nbytes.saturating_sub(rel as u64 * ss);
                if posted > 0 {
                    crecv(b, rank, BCAST_TAG, at(buf, rel as u64 * ss), posted, src);
                    curr = received(rel);
                }
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                let send = curr.saturating_sub(ss * mask as u64);
                if send > 0 {
                    let dst = (rank + mask) % p;
                    let off = ss * (rel + mask) as u64;
                    csend(b, rank, BCAST_TAG, at(buf, off), send, dst);
                    curr -= send;
                }
            }
            mask >>= 1;
        }
    }
    if nbytes < BCAST_LONG_MSG && p.is_power_of_two() {
        // Recursive doubling: in step i each rank swaps everything it holds with the
        // rank whose relative rank differs in bit i.
        let mut have: Vec<u64> = (0..p).map(kept).collect();
        let mut mask = 1;
        let mut i = 0;
        while mask < p {
            let before = have.clone();
            for rank in 0..p {
                let rel = (rank + p - root) % p;
                let rel_dst = rel ^ mask;
                let dst = (rel_dst + root) % p;
                let dst_tree_root = (rel_dst >> i) << i;
                let my_tree_root = (rel >> i) << i;
                let send_off = my_tree_root as u64 * ss;
                let recv_off = dst_tree_root as u64 * ss;
                // MPICH posts scatter_size*mask bytes; clipped at the buffer's end,
                // which only matters when nbytes is not a multiple of P.
                let posted = (ss * mask as u64).min(nbytes.saturating_sub(recv_off));
                let buf = bufs[rank];
                b.sendrecv(
                    rank,
                    BCAST_TAG,
                    CTX_COLL,
                    (at(buf, send_off), before[rel], dst),
                    (at(buf, recv_off.min(nbytes)), posted, dst),
                );
                have[rel] += before[rel_dst];
            }
            mask <<= 1;
            i += 1;
        }
    } else {
        // Ring: P-1 steps, each passing one piece to the right.
        let cnt = |i: usize| nbytes.saturating_sub(i as u64 * ss).min(ss);
        let disp = |i: usize| (0..i).map(cnt).sum::<u64>();
        for rank in 0..p {
            let left = (rank + p - 1) % p;
            let right = (rank + 1) % p;
            let buf = bufs[rank];
            let mut j = rank;
            let mut jnext = left;
            for _ in 1..p {
                let sj = (j + p - root) % p;
                let rj = (jnext + p - root) % p;
                b.sendrecv(
                    rank,
                    BCAST_TAG,
                    CTX_COLL,
                    (at(buf, disp(sj)), cnt(sj), right),
                    (at(buf, disp(rj)), cnt(rj), left),
                );
                j = jnext;
                jnext = (jnext + p - 1) % p;
            }
        }
    }
}

/// The short-message broadcast: receive from the parent (relative rank with its lowest
/// set bit cleared), then send to the children, farthest first.
fn bcast_binomial(b: &mut Builder, bufs: &[BufRef], nbytes: u64, root: usize) {
    let p = b.size();
    for rank in 0..p {
        let rel = (rank + p - root) % p;
        let mut mask = 1;
        while mask < p {
            if rel & mask != 0 {
                let src = (rank + p - mask) % p;
                crecv(b, rank, BCAST_TAG, bufs[rank], nbytes, src);
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < p {
                csend(b, rank, BCAST_TAG, bufs[rank], nbytes, (rank + mask) % p);
            }
            mask >>= 1;
        }
    }
}

/// Piece counts and displacements (in elements) of Rabenseifner's reduce-scatter:
/// `count / pof2` each, the remainder on the last.
fn rab_pieces(count: u64, pof2: usize) -> (Vec<u64>, Vec<u64>) {
    let mut cnts = vec![count / pof2 as u64; pof2];
    cnts[pof2 - 1] = count - (count / pof2 as u64) * (pof2 as u64 - 1);
    let mut disps = vec![0; pof2];
    for i in 1..pof2 {
        disps[i] = disps[i - 1] + cnts[i - 1];
    }
    (cnts, disps)
}

fn span_sum(cnts: &[u64], from: usize, to: usize) -> u64 {
    cnts[from..to].iter().sum()
}

/// One step of the gather (reduce) or allgather (allreduce) that follows Rabenseifner's
/// reduce-scatter, as the two MPICH files compute it: `(send_cnt, recv_cnt, recv_idx)`
/// in elements, widening `last_idx` when this rank keeps the lower half.
fn doubling_step(
    cnts: &[u64],
    nr: usize,
    newdst: usize,
    mask: usize,
    pof2: usize,
    send_idx: usize,
    last_idx: &mut usize,
) -> (u64, u64, usize) {
    if nr < newdst {
        if mask != pof2 / 2 {
            *last_idx += pof2 / (mask * 2);
        }
        let recv_idx = send_idx + pof2 / (mask * 2);
        (
            span_sum(cnts, send_idx, recv_idx),
            span_sum(cnts, recv_idx, *last_idx),
            recv_idx,
        )
    } else {
        let recv_idx = send_idx - pof2 / (mask * 2);
        (
            span_sum(cnts, send_idx, *last_idx),
            span_sum(cnts, recv_idx, send_idx),
            recv_idx,
        )
    }
}

/// Recursive-halving reduce-scatter among the `pof2` participants of Rabenseifner's
/// algorithm (reduce.c and allreduce.c share it): each step sends the half of the
/// current range the partner keeps and combines the half this rank keeps. Returns
/// `(send_idx, last_idx)` for the gather that follows.
#[allow(clippy::too_many_arguments)]
fn reduce_scatter_halving(
    b: &mut Builder,
    rank: usize,
    newrank: usize,
    real: &dyn Fn(usize) -> usize,
    tag: u32,
    (recvbuf, tmp): (BufRef, BufRef),
    (cnts, disps): (&[u64], &[u64]),
    ts: u64,
) -> (usize, usize) {
    let pof2 = cnts.len();
    let mut mask = 1;
    let (mut send_idx, mut recv_idx, mut last_idx) = (0, 0, pof2);
    while mask < pof2 {
        let newdst = newrank ^ mask;
        let dst = real(newdst);
        let (send_cnt, recv_cnt);
        if newrank < newdst {
            send_idx = recv_idx + pof2 / (mask * 2);
            send_cnt = span_sum(cnts, send_idx, last_idx);
            recv_cnt = span_sum(cnts, recv_idx, send_idx);
        } else {
            recv_idx = send_idx + pof2 / (mask * 2);
            send_cnt = span_sum(cnts, send_idx, recv_idx);
            recv_cnt = span_sum(cnts, recv_idx, last_idx);
        }
        b.sendrecv(
            rank,
            tag,
            CTX_COLL,
            (at(recvbuf, disps[send_idx] * ts), send_cnt * ts, dst),
            (at(tmp, disps[recv_idx] * ts), recv_cnt * ts, dst),
        );
        b.combine(
            rank,
            at(recvbuf, disps[recv_idx] * ts),
            at(tmp, disps[recv_idx] * ts),
            recv_cnt * ts,
        );
        send_idx = recv_idx;
        mask <<= 1;
        if mask < pof2 {
            last_idx = recv_idx + pof2 / mask;
        }
    }
    (send_idx, last_idx)
}

/// MPI_Reduce (MPI_SUM) of `count` elements of `ts` bytes to `root`; `send[r]` is rank
/// r's input, `recv_root` the root's result buffer (`src/mpi/coll/reduce.c`). Every
/// rank first copies its input into the result buffer (a temporary off the root).
/// Rabenseifner's algorithm when `count*ts > 2048` and `count >= pof2`: the odd ranks
/// below 2*rem fold into their left neighbours, a recursive-halving reduce-scatter runs
/// among pof2 ranks and a binomial gather brings the pieces to the root. Otherwise a
/// binomial tree, combining at each parent.
pub fn reduce(
    b: &mut Builder,
    send: &[BufRef],
    recv_root: BufRef,
    count: u64,
    ts: u64,
    root: usize,
) {
    let p = b.size();
    assert_eq!(send.len(), p);
    let nbytes = count * ts;
    if count == 0 {
        return;
    }
    let pof2 = pof2_floor(p);
    let rem = p - pof2;
    let rabenseifner = nbytes > REDUCE_SHORT_MSG && count as usize >= pof2;
    // Odd ranks below 2*rem sit out; the rest are renumbered 0..pof2.
    let real = |newrank: usize| {
        if newrank < rem {
            newrank * 2
        } else {
            newrank + rem
        }
    };
    let (cnts, disps) = rab_pieces(count, pof2);
    for rank in 0..p {
        let tmp = BufRef::new(b.temp(rank, "mpich.tmp_buf", nbytes), 0);
        let recvbuf = if rank == root {
            recv_root
        } else {
            BufRef::new(b.temp(rank, "mpich.recvbuf", nbytes), 0)
        };
        b.copy(rank, recvbuf, send[rank], nbytes);
        if !rabenseifner {
            let rel = (rank + p - root) % p;
            let mut mask = 1;
            while mask < p {
                if rel & mask == 0 {
                    let src = rel | mask;
                    if src < p {
                        crecv(b, rank, REDUCE_TAG, tmp, nbytes, (src + root) % p);
                        b.combine(rank, recvbuf, tmp, nbytes);
                    }
                } else {
                    let parent = ((rel & !mask) + root) % p;
                    csend(b, rank, REDUCE_TAG, recvbuf, nbytes, parent);
                    break;
                }
                mask <<= 1;
            }
            continue;
        }
        let mut newrank: Option<usize> = if rank < 2 * rem {
            if rank % 2 == 1 {
                csend(b, rank, REDUCE_TAG, recvbuf, nbytes, rank - 1);
                None
            } else {
                crecv(b, rank, REDUCE_TAG, tmp, nbytes, rank + 1);
                b.combine(rank, recvbuf, tmp, nbytes);
                Some(rank / 2)
            }
        } else {
            Some(rank - rem)
        };
        let (mut send_idx, mut last_idx) = (0, pof2);
        if let Some(nr) = newrank {
            (send_idx, last_idx) = reduce_scatter_halving(
                b,
                rank,
                nr,
                &real,
                REDUCE_TAG,
                (recvbuf, tmp),
                (&cnts, &disps),
                ts,
            );
        }
        // An excluded (odd) root takes over newrank 0's part and role.
        let root_excluded = root < 2 * rem && root % 2 == 1;
        let newroot = if root < 2 * rem {
            if root_excluded {
                if rank == root {
                    crecv(b, rank, REDUCE_TAG, recvbuf, cnts[0] * ts, 0);
                    newrank = Some(0);
                    send_idx = 0;
                    last_idx = 2;
                } else if newrank == Some(0) {
                    csend(b, rank, REDUCE_TAG, recvbuf, cnts[0] * ts, root);
                    newrank = None;
                }
                0
            } else {
                root / 2
            }
        } else {
            root - rem
        };
        let Some(nr) = newrank else { continue };
        let mut j = pof2.trailing_zeros() as i32 - 1;
        let mut mask = pof2 >> 1;
        while mask > 0 {
            let newdst = nr ^ mask;
            let mut dst = real(newdst);
            if newdst == 0 && root_excluded {
                dst = root;
            }
            let shift = j.max(0) as u32;
            let newdst_tree_root = (newdst >> shift) << shift;
            let newroot_tree_root = (newroot >> shift) << shift;
            let (send_cnt, recv_cnt, recv_idx) =
                doubling_step(&cnts, nr, newdst, mask, pof2, send_idx, &mut last_idx);
            if newdst_tree_root == newroot_tree_root {
                let from = at(recvbuf, disps[send_idx] * ts);
                csend(b, rank, REDUCE_TAG, from, send_cnt * ts, dst);
                break;
            }
            let into = at(recvbuf, disps[recv_idx] * ts);
            crecv(b, rank, REDUCE_TAG, into, recv_cnt * ts, dst);
            if nr > newdst {
                send_idx = recv_idx;
            }
            mask >>= 1;
            j -= 1;
        }
    }
}

/// MPI_Allreduce (MPI_SUM) of `count` elements of `ts` bytes; `send[r]` and `recv[r]`
/// are rank r's input and result (`src/mpi/coll/allreduce.c`). The even ranks below
/// 2*rem fold into their right neighbours and get the result back at the end; among
/// the pof2 others, recursive doubling (`count*ts <= 2048` or `count < pof2`) or
/// Rabenseifner's recursive-halving reduce-scatter then recursive-doubling allgather.
pub fn allreduce(b: &mut Builder, send: &[BufRef], recv: &[BufRef], count: u64, ts: u64) {
    let p = b.size();
    assert_eq!(send.len(), p);
    assert_eq!(recv.len(), p);
    if count == 0 {
        return;
    }
    let nbytes = count * ts;
    let pof2 = pof2_floor(p);
    let rem = p - pof2;
    let real = |newrank: usize| {
        if newrank < rem {
            newrank * 2 + 1
        } else {
            newrank + rem
        }
    };
    let short = nbytes <= ALLREDUCE_SHORT_MSG || (count as usize) < pof2;
    let (cnts, disps) = rab_pieces(count, pof2);
    for rank in 0..p {
        let tmp = BufRef::new(b.temp(rank, "mpich.tmp_buf", nbytes), 0);
        let recvbuf = recv[rank];
        b.copy(rank, recvbuf, send[rank], nbytes);
        let newrank = if rank < 2 * rem {
            if rank % 2 == 0 {
                csend(b, rank, ALLREDUCE_TAG, recvbuf, nbytes, rank + 1);
                None
            } else {
                crecv(b, rank, ALLREDUCE_TAG, tmp, nbytes, rank - 1);
                b.combine(rank, recvbuf, tmp, nbytes);
                Some(rank / 2)
            }
        } else {
            Some(rank - rem)
        };
        if let Some(nr) = newrank {
            if short {
                let mut mask = 1;
                while mask < pof2 {
                    let dst = real(nr ^ mask);
                    b.sendrecv(
                        rank,
                        ALLREDUCE_TAG,
                        CTX_COLL,
                        (recvbuf, nbytes, dst),
                        (tmp, nbytes, dst),
                    );
                    b.combine(rank, recvbuf, tmp, nbytes);
                    mask <<= 1;
                }
            } else {
                let (mut send_idx, mut last_idx) = reduce_scatter_halving(
                    b,
                    rank,
                    nr,
                    &real,
                    ALLREDUCE_TAG,
                    (recvbuf, tmp),
                    (&cnts, &disps),
                    ts,
                );
                let mut mask = pof2 >> 1;
                while mask > 0 {
                    let newdst = nr ^ mask;
                    let dst = real(newdst);
                    let (send_cnt, recv_cnt, recv_idx) =
                        doubling_step(&cnts, nr, newdst, mask, pof2, send_idx, &mut last_idx);
                    b.sendrecv(
                        rank,
                        ALLREDUCE_TAG,
                        CTX_COLL,
                        (at(recvbuf, disps[send_idx] * ts), send_cnt * ts, dst),
                        (at(recvbuf, disps[recv_idx] * ts), recv_cnt * ts, dst),
                    );
                    if nr > newdst {
                        send_idx = recv_idx;
                    }
                    mask >>= 1;
                }
            }
        }
        if rank < 2 * rem {
            if rank % 2 == 1 {
                csend(b, rank, ALLREDUCE_TAG, recvbuf, nbytes, rank - 1);
            } else {
                crecv(b, rank, ALLREDUCE_TAG, recvbuf, nbytes, rank + 1);
            }
        }
    }
}

/// MPI_Gather of `nbytes` bytes per rank to `root`; `send[r]` is rank r's block and
/// `recv_root` the root's P*nbytes buffer (`src/mpi/coll/gather.c`, v1.2 with
/// GATHER_VSMALL_MSG). Binomial tree: a node with relative rank `rel` receives its
/// subtrees' blocks into a temporary buffer and forwards everything to its parent;
/// leaves send straight from their input. Below 1024 bytes every non-root node first
/// copies its own block into the temporary buffer.
///
/// Two datatypes MPICH uses for large blocks become copies: an inner node sends its own
/// block and its temporary buffer as one struct-typed message, so here it copies its
/// block in front of the gathered ones first; and a root that is not rank 0 receives
/// a subtree that wraps past the end of its buffer through an indexed type, so here it
/// receives into a temporary buffer and copies the two pieces out.
pub fn gather(b: &mut Builder, send: &[BufRef], recv_root: BufRef, nbytes: u64, root: usize) {
    let p = b.size();
    assert_eq!(send.len(), p);
    // MPICH's binomial gather returns at once when there is nothing to send or receive.
    if nbytes == 0 {
        return;
    }
    let vsmall = nbytes < GATHER_VSMALL_MSG;
    for rank in 0..p {
        let rel = (rank + p - root) % p;
        // Blocks below this node in a full binomial tree, less those beyond P.
        let mut m = p.next_power_of_two() - 1;
        while rel & m != 0 {
            m >>= 1;
        }
        let missing = ((rel | m) + 1).saturating_sub(p);
        let below = m - missing;
        let mut tmp_blocks = below as u64;
        if vsmall {
            tmp_blocks += 1;
        }
        if rank == root && (root == 0 || !vsmall) {
            tmp_blocks = 0;
        }
        // Inner non-root nodes keep their own block at the front (see above).
        let own_in_tmp = rank != root && tmp_blocks > 0;
        let tmp_bytes = if own_in_tmp {
            (below as u64 + 1) * nbytes
        } else {
            tmp_blocks * nbytes
        };
        let tmp = (tmp_bytes > 0).then(|| BufRef::new(b.temp(rank, "mpich.tmp_buf", tmp_bytes), 0));
        if rank == root {
            b.copy(
                rank,
                at(recv_root, rank as u64 * nbytes),
                send[rank],
                nbytes,
            );
        } else if let (Some(t), true) = (tmp, vsmall) {
            b.copy(rank, t, send[rank], nbytes);
        }
        let mut curr = nbytes;
        let mut copy_out: Option<(usize, usize)> = None;
        let mut mask = 1;
        while mask < p {
            if mask & rel == 0 {
                let src_rel = rel | mask;
                if src_rel < p {
                    let src = (src_rel + root) % p;
                    if rank == root {
                        let mut blks = mask;
                        if 2 * blks > p {
                            blks = p - blks;
                        }
                        let first = (rank + mask) % p;
                        let bytes = blks as u64 * nbytes;
                        if rank + mask + blks == p || first < (rank + mask + blks) % p {
                            let into = at(recv_root, first as u64 * nbytes);
                            crecv(b, rank, GATHER_TAG, into, bytes, src);
                        } else if vsmall {
                            let t = tmp.expect("a nonzero root gathers into a temporary");
                            crecv(b, rank, GATHER_TAG, t, bytes, src);
                            copy_out = Some((rank + mask, blks));
                        } else {
                            let stage = BufRef::new(b.temp(rank, "mpich.gather_stage", bytes), 0);
                            crecv(b, rank, GATHER_TAG, stage, bytes, src);
                            let head = (p - root - mask) as u64 * nbytes;
                            b.copy(
                                rank,
                                at(recv_root, (root + mask) as u64 * nbytes),
                                stage,
                                head,
                            );
                            b.copy(rank, recv_root, at(stage, head), bytes - head);
                        }
                    } else {
                        let mut blks = mask;
                        if src_rel + mask > p {
                            blks -= src_rel + mask - p;
                        }
                        let t = tmp.expect("an inner node has a temporary buffer");
                        let bytes = blks as u64 * nbytes;
                        crecv(b, rank, GATHER_TAG, at(t, mask as u64 * nbytes), bytes, src);
                        curr += bytes;
                    }
                }
            } else {
                let dst = ((rel ^ mask) + root) % p;
                match tmp {
                    None => csend(b, rank, GATHER_TAG, send[rank], nbytes, dst),
                    Some(t) => {
                        if !vsmall {
                            b.copy(rank, t, send[rank], nbytes);
                        }
                        csend(b, rank, GATHER_TAG, t, curr, dst);
                    }
                }
                break;
            }
            mask <<= 1;
        }
        if let (Some((off, blks)), Some(t)) = (copy_out, tmp) {
            let head = (p - off) as u64 * nbytes;
            b.copy(rank, at(recv_root, off as u64 * nbytes), t, head);
            let tail = (blks + off - p) as u64 * nbytes;
            b.copy(rank, recv_root, at(t, head), tail);
        }
    }
}

/// MPI_Alltoall of `nbytes` bytes per pair; `send[r]` and `recv[r]` hold P blocks each
/// (`src/mpi/coll/alltoall.c`). Bruck's algorithm for `nbytes <= 256` and P >= 8;
/// isend/irecv in blocks of ALLTOALL_THROTTLE partners (receive from rank+i, send to
/// rank-i) for `nbytes <= 32768`; otherwise a pairwise exchange (XOR partners when P is
/// a power of two). A rank's own block is a local copy.
///
/// Bruck's steps exchange every block whose index has bit k set; MPICH packs them with
/// an indexed type and receives straight into place. Here the blocks are copied into a
/// temporary buffer, sent, received into a second one and copied into place.
pub fn alltoall(b: &mut Builder, send: &[BufRef], recv: &[BufRef], nbytes: u64) {
    let p = b.size();
    assert_eq!(send.len(), p);
    assert_eq!(recv.len(), p);
    let blk = |i: usize| i as u64 * nbytes;
    if nbytes <= ALLTOALL_SHORT_MSG && p >= 8 {
        for rank in 0..p {
            let (sb, rb) = (send[rank], recv[rank]);
            let tmp = BufRef::new(b.temp(rank, "mpich.tmp_buf", blk(p)), 0);
            let tmp2 = BufRef::new(b.temp(rank, "mpich.tmp_buf2", blk(p)), 0);
            // Phase 1: rotate the input up by `rank` blocks.
            b.copy(rank, rb, at(sb, blk(rank)), blk(p - rank));
            b.copy(rank, at(rb, blk(p - rank)), sb, blk(rank));
            let mut pof2 = 1;
            while pof2 < p {
                let dst = (rank + pof2) % p;
                let src = (rank + p - pof2) % p;
                let blocks: Vec<usize> = (1..p).filter(|blk_i| blk_i & pof2 != 0).collect();
                for (k, &i) in blocks.iter().enumerate() {
                    b.copy(rank, at(tmp, blk(k)), at(rb, blk(i)), nbytes);
                }
                let n = blk(blocks.len());
                b.sendrecv(rank, ALLTOALL_TAG, CTX_COLL, (tmp, n, dst), (tmp2, n, src));
                for (k, &i) in blocks.iter().enumerate() {
                    b.copy(rank, at(rb, blk(i)), at(tmp2, blk(k)), nbytes);
                }
                pof2 *= 2;
            }
            // Phase 3: rotate by rank+1 blocks, then reverse the block order.
            b.copy(rank, tmp, at(rb, blk(rank + 1)), blk(p - rank - 1));
            b.copy(rank, at(tmp, blk(p - rank - 1)), rb, blk(rank + 1));
            for i in 0..p {
                b.copy(rank, at(rb, blk(p - i - 1)), at(tmp, blk(i)), nbytes);
            }
        }
    } else if nbytes <= ALLTOALL_MEDIUM_MSG {
        for rank in 0..p {
            let (sb, rb) = (send[rank], recv[rank]);
            let mut ii = 0;
            while ii < p {
                let ss = ALLTOALL_THROTTLE.min(p - ii);
                let mut reqs = Vec::with_capacity(2 * ss);
                for i in 0..ss {
                    let src = (rank + i + ii) % p;
                    if src != rank {
                        let t = Tag::Tag(ALLTOALL_TAG);
                        reqs.push(b.irecv(rank, peer(src), t, CTX_COLL, at(rb, blk(src)), nbytes));
                    }
                }
                for i in 0..ss {
                    let dst = (rank + p - (i + ii) % p) % p;
                    if dst == rank {
                        b.copy(rank, at(rb, blk(rank)), at(sb, blk(rank)), nbytes);
                    } else {
                        let from = at(sb, blk(dst));
                        reqs.push(b.isend(rank, dst, ALLTOALL_TAG, CTX_COLL, from, nbytes));
                    }
                }
                b.waitall(rank, reqs);
                ii += ALLTOALL_THROTTLE;
            }
        }
    } else {
        for rank in 0..p {
            let (sb, rb) = (send[rank], recv[rank]);
            b.copy(rank, at(rb, blk(rank)), at(sb, blk(rank)), nbytes);
            for i in 1..p {
                let (src, dst) = if p.is_power_of_two() {
                    (rank ^ i, rank ^ i)
                } else {
                    ((rank + p - i) % p, (rank + i) % p)
                };
                b.sendrecv(
                    rank,
                    ALLTOALL_TAG,
                    CTX_COLL,
                    (at(sb, blk(dst)), nbytes, dst),
                    (at(rb, blk(src)), nbytes, src),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::check::{check, check_with, CheckReport, SendMode};

    /// Runs `f` on P ranks with one `bytes`-byte send and receive buffer (P blocks for
    /// the alltoall) per rank, and checks the result both ways.
    fn run(p: usize, bytes: u64, f: impl Fn(&mut Builder, &[BufRef], &[BufRef])) -> CheckReport {
        let mut b = Builder::new(p);
        let mut s = Vec::new();
        let mut r = Vec::new();
        for k in 0..p {
            let len = (bytes * p as u64).max(1);
            s.push(BufRef::new(b.buffer(k, "send", len), 0));
            r.push(BufRef::new(b.buffer(k, "recv", len), 0));
        }
        f(&mut b, &s, &r);
        let w = b.finish("t");
        let a = check(&w).unwrap_or_else(|e| panic!("P={p} {bytes} B: {e}"));
        let sync = check_with(&w, SendMode::Synchronous)
            .unwrap_or_else(|e| panic!("P={p} {bytes} B (synchronous): {e}"));
        assert_eq!(a, sync);
        for k in 0..p {
            for c in &w.ranks[k].calls {
                if let Call::Isend { ctx, .. } | Call::Irecv { ctx, .. } = c {
                    assert_eq!(*ctx, CTX_COLL);
                }
            }
        }
        a
    }

    const SIZES: [usize; 9] = [1, 2, 3, 5, 7, 8, 12, 16, 24];

    #[test]
    fn bcast_counts_at_16_ranks() {
        let rep = run(16, 16384, |b, s, _| bcast(b, s, 16384, 0));
        assert_eq!(rep.messages(), 79);
        assert_eq!(rep.bytes(), 272 * 1024);
        let rep = run(16, 1 << 20, |b, s, _| bcast(b, s, 1 << 20, 3));
        assert_eq!(rep.messages(), 255);
        assert_eq!(rep.bytes(), 17 << 20);
        // Short: a binomial tree of P-1 messages.
        let rep = run(16, 1000, |b, s, _| bcast(b, s, 1000, 5));
        assert_eq!((rep.messages(), rep.bytes()), (15, 15 * 1000));
    }

    #[test]
    fn bcast_every_path_and_size() {
        for p in SIZES {
            for bytes in [8, 12288, 20000, 600000] {
                for root in [0, p / 2, p - 1] {
                    let rep = run(p, bytes, |b, s, _| bcast(b, s, bytes, root));
                    // Every rank but the root receives every byte at least once.
                    for k in (0..p).filter(|&k| k != root) {
                        assert!(
                            rep.ranks[k].recv_bytes >= bytes,
                            "P={p} {bytes} B root {root} rank {k}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reduce_counts_at_16_ranks() {
        let rep = run(16, 16384, |b, s, r| reduce(b, s, r[0], 4096, 4, 0));
        assert_eq!(rep.messages(), 79);
        assert_eq!(rep.bytes(), 272 * 1024);
        // Each rank combines 15/16 of the data in the reduce-scatter.
        let combined: u64 = rep.ranks.iter().map(|k| k.combine_bytes).sum();
        assert_eq!(combined, 16 * 15 * 1024);
        let rep = run(16, 16, |b, s, r| reduce(b, s, r[7], 1, 16, 7));
        assert_eq!((rep.messages(), rep.bytes()), (15, 15 * 16));
    }

    #[test]
    fn reduce_every_path_and_size() {
        for p in SIZES {
            for count in [1u64, 100, 4096, 5000] {
                for root in [0, 1, p / 2, p - 1].into_iter().filter(|&r| r < p) {
                    let rep = run(p, count * 4, |b, s, r| {
                        reduce(b, s, r[root], count, 4, root)
                    });
                    if p > 1 {
                        assert!(rep.ranks[root].recvs > 0, "P={p} count {count} root {root}");
                    }
                }
            }
        }
    }

    #[test]
    fn allreduce_paths() {
        // 8 bytes at 16 ranks: recursive doubling, 4 rounds.
        let rep = run(16, 8, |b, s, r| allreduce(b, s, r, 1, 8));
        assert_eq!((rep.messages(), rep.bytes()), (64, 64 * 8));
        // 16 KiB: reduce-scatter and allgather, 64 + 64 messages.
        let rep = run(16, 16384, |b, s, r| allreduce(b, s, r, 2048, 8));
        assert_eq!((rep.messages(), rep.bytes()), (128, 2 * 240 * 1024));
        for p in SIZES {
            for count in [1u64, 3000] {
                run(p, count * 8, |b, s, r| allreduce(b, s, r, count, 8));
            }
        }
    }

    #[test]
    fn gather_counts_and_paths() {
        let rep = run(16, 16384, |b, s, r| gather(b, s, r[0], 16384, 0));
        assert_eq!((rep.messages(), rep.bytes()), (15, 512 * 1024));
        assert_eq!(rep.ranks[0].recv_bytes, 15 * 16384);
        for p in SIZES {
            for bytes in [8, 1024, 16384] {
                for root in 0..p {
                    let rep = run(p, bytes, |b, s, r| gather(b, s, r[root], bytes, root));
                    assert_eq!(rep.messages(), p as u64 - 1);
                    assert_eq!(rep.ranks[root].recv_bytes, (p as u64 - 1) * bytes);
                }
            }
        }
    }

    #[test]
    fn alltoall_counts_and_paths() {
        let rep = run(16, 16384, |b, s, r| alltoall(b, s, r, 16384));
        assert_eq!(
            (rep.messages(), rep.bytes(), rep.copies()),
            (240, 240 * 16384, 16)
        );
        // At most 4 receives and 4 sends outstanding per block.
        let mut b = Builder::new(16);
        let bufs: Vec<BufRef> = (0..16)
            .map(|k| BufRef::new(b.buffer(k, "x", 16 * 16384), 0))
            .collect();
        let rbufs: Vec<BufRef> = (0..16)
            .map(|k| BufRef::new(b.buffer(k, "y", 16 * 16384), 0))
            .collect();
        alltoall(&mut b, &bufs, &rbufs, 16384);
        for k in 0..16 {
            for c in &b.program(k).calls {
                if let Call::Waitall(q) = c {
                    assert!(q.len() <= 8);
                }
            }
        }
        for p in SIZES {
            for bytes in [8, 256, 2048, 40000] {
                let rep = run(p, bytes, |b, s, r| alltoall(b, s, r, bytes));
                let pairs = (p * (p - 1)) as u64;
                if bytes <= ALLTOALL_SHORT_MSG && p >= 8 {
                    // Bruck: ceil(lg P) messages per rank.
                    let steps = p.next_power_of_two().trailing_zeros() as u64;
                    assert_eq!(rep.messages(), p as u64 * steps);
                } else {
                    assert_eq!((rep.messages(), rep.bytes()), (pairs, pairs * bytes));
                }
                for k in 0..p {
                    assert_eq!(rep.ranks[k].recv_bytes, rep.ranks[k].send_bytes);
                }
            }
        }
    }

    #[test]
    fn temporaries_are_reused() {
        let mut b = Builder::new(16);
        let s: Vec<BufRef> = (0..16)
            .map(|k| BufRef::new(b.buffer(k, "s", 16384), 0))
            .collect();
        let r: Vec<BufRef> = (0..16)
            .map(|k| BufRef::new(b.buffer(k, "r", 16384), 0))
            .collect();
        for root in 0..16 {
            reduce(&mut b, &s, r[root], 4096, 4, root);
        }
        // s, r, tmp_buf and (off the root) recvbuf: four buffers however many reduces.
        for k in 0..16 {
            assert_eq!(b.program(k).buffers.len(), 4);
        }
    }
}
