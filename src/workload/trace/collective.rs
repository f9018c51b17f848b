//! A recorded run's collectives: the members of a communicator that have all reached their
//! next collective on it are checked against each other and the call expanded among them,
//! by MPICH's algorithms ([`coll`]) on a builder of the members alone whose calls are then
//! carried over to the members' world ranks and buffers.

use super::{
    compute_before, place, Buffers, Coll, Comm, Op, RankState, RankTrace, Rec, TraceOptions,
};
use crate::envelope::Peer;
use crate::workload::coll::{self, Builder};
use crate::workload::{BufRef, Call, CTX_COLL};

/// `MPIR_BARRIER_TAG`: the tag of MPICH's dissemination barrier's messages.
const BARRIER_TAG: u32 = 1;

/// The world ranks of `comm` in a run of `p` ranks.
fn members_of(comm: &Comm, p: usize) -> Result<Vec<usize>, String> {
    match comm {
        Comm::World => Ok((0..p).collect()),
        Comm::Members(m) => m
            .iter()
            .map(|&r| {
                usize::try_from(r)
                    .ok()
                    .filter(|&r| r < p)
                    .ok_or_else(|| format!("communicator member {r} is no rank of the {p}"))
            })
            .collect(),
    }
}

/// Expands the next collective some communicator's members have all reached.
pub(super) fn next(
    b: &mut Builder,
    bufs: &mut Buffers,
    traces: &[RankTrace],
    st: &mut [RankState],
    opts: TraceOptions,
) -> Result<(), String> {
    let p = traces.len();
    let at = |r: usize| traces[r].recs.get(st[r].next);
    let place_of = |r: usize, rec: &Rec| format!("{}:{}:{}", traces[r].file, rec.at.0, rec.at.1);
    let coll_of = |rec: &Rec| match &rec.op {
        Op::Coll(c, comm) => (c.clone(), comm.clone()),
        _ => unreachable!("only collectives stop a rank"),
    };
    let mut waiting = None;
    for r in 0..p {
        let Some(rec) = at(r) else { continue };
        let (c, comm) = coll_of(rec);
        let members = members_of(&comm, p).map_err(|e| format!("{}: {e}", place_of(r, rec)))?;
        if !members.contains(&r) {
            return Err(format!(
                "{}: rank {r} calls {} on a communicator it is not in",
                place_of(r, rec),
                c.name()
            ));
        }
        let ready = members
            .iter()
            .all(|&m| at(m).is_some_and(|x| matches!(&x.op, Op::Coll(_, cm) if *cm == comm)));
        if ready {
            return expand_among(b, bufs, traces, st, &members, opts);
        }
        waiting.get_or_insert((r, rec, c, members));
    }
    let (r, rec, c, members) = waiting.expect("some rank has a collective");
    let (m, why) = members
        .iter()
        .find_map(|&m| match at(m) {
            None => Some((m, "its trace ends first".to_string())),
            Some(x) if !matches!(&x.op, Op::Coll(_, cm) if *cm == coll_of(rec).1) => Some((
                m,
                format!(
                    "it calls {} at {} first",
                    coll_of(x).0.name(),
                    place_of(m, x)
                ),
            )),
            _ => None,
        })
        .expect("a member is not there");
    Err(format!(
        "{}: rank {r} calls {} that rank {m} does not reach: {why}",
        place_of(r, rec),
        c.name()
    ))
}

/// Checks the members' calls against each other and expands the collective.
fn expand_among(
    b: &mut Builder,
    bufs: &mut Buffers,
    traces: &[RankTrace],
    st: &mut [RankState],
    members: &[usize],
    opts: TraceOptions,
) -> Result<(), String> {
    let recs: Vec<&Rec> = members
        .iter()
        .map(|&m| &traces[m].recs[st[m].next])
        .collect();
    let colls: Vec<&Coll> = recs
        .iter()
        .map(|rec| match &rec.op {
            Op::Coll(c, _) => c,
            _ => unreachable!("checked by the caller"),
        })
        .collect();
    let place_of = |i: usize| {
        let rec = recs[i];
        format!("{}:{}:{}", traces[members[i]].file, rec.at.0, rec.at.1)
    };
    for (i, c) in colls.iter().enumerate() {
        if c.signature() != colls[0].signature() {
            return Err(format!(
                "{}: rank {} calls {} where rank {} calls {} ({}): the ranks' collectives \
                 do not match",
                place_of(i),
                members[i],
                c.signature(),
                members[0],
                colls[0].signature(),
                place_of(0)
            ));
        }
    }
    let world = members.len() == traces.len();
    let before: Vec<usize> = members
        .iter()
        .zip(&recs)
        .map(|(&m, rec)| {
            compute_before(b, &mut st[m], m, rec, opts);
            b.program(m).calls.len()
        })
        .collect();
    let mut sub = Sub::new(members);
    sub.expand(b, bufs, &colls, world)
        .map_err(|e| format!("{}: {e}", place_of(0)))?;
    sub.splice(b);
    for (i, &m) in members.iter().enumerate() {
        place(b, &mut st[m], m, before[i], recs[i].at);
        st[m].next += 1;
    }
    Ok(())
}

/// A collective built among a communicator's members alone (member i is rank i of the
/// builder), with the world buffer each of its buffers stands for.
struct Sub<'a> {
    members: &'a [usize],
    b: Builder,
    /// Per member, the world buffer of each of its buffers here, in order.
    maps: Vec<Vec<BufRef>>,
}

impl<'a> Sub<'a> {
    fn new(members: &'a [usize]) -> Sub<'a> {
        Sub {
            members,
            b: Builder::new(members.len()),
            maps: vec![Vec::new(); members.len()],
        }
    }

    /// Member `i`'s buffer at `addr` for `bytes` bytes, as a buffer of its own here.
    fn user(
        &mut self,
        world: &mut Builder,
        bufs: &mut Buffers,
        i: usize,
        addr: u64,
        bytes: u64,
    ) -> BufRef {
        let at = bufs.at(world, self.members[i], addr, bytes);
        let id = self.b.buffer(i, "trace.user", bytes.max(1));
        debug_assert_eq!(usize::from(id), self.maps[i].len());
        self.maps[i].push(at);
        BufRef::new(id, 0)
    }

    /// Every member's buffer of the collective, as `f` finds it in the member's call.
    fn users(
        &mut self,
        world: &mut Builder,
        bufs: &mut Buffers,
        colls: &[&Coll],
        f: &dyn Fn(&Coll) -> (u64, u64),
    ) -> Vec<BufRef> {
        (0..self.members.len())
            .map(|i| {
                let (addr, bytes) = f(colls[i]);
                self.user(world, bufs, i, addr, bytes)
            })
            .collect()
    }

    /// The collective's calls among the members.
    fn expand(
        &mut self,
        world: &mut Builder,
        bufs: &mut Buffers,
        colls: &[&Coll],
        on_world: bool,
    ) -> Result<(), String> {
        let k = self.members.len();
        let root_of = |x: i64| {
            usize::try_from(x)
                .ok()
                .and_then(|x| self.members.iter().position(|&m| m == x))
                .ok_or_else(|| format!("root {x} is no member of the communicator"))
        };
        let total = |count: u64, ts: u64| {
            count
                .checked_mul(ts)
                .ok_or_else(|| format!("{count} elements of {ts} bytes pass 2^64 bytes"))
        };
        match *colls[0] {
            Coll::Barrier if on_world => {
                for i in 0..k {
                    self.b.push(i, Call::Barrier);
                }
            }
            Coll::Barrier => self.dissemination_barrier(world, bufs),
            Coll::Bcast { root, bytes, .. } => {
                let root = root_of(root)?;
                let v = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Bcast { addr, bytes, .. } => (addr, bytes),
                    _ => (0, 0),
                });
                coll::bcast(&mut self.b, &v, bytes, root);
            }
            Coll::Reduce {
                root, count, ts, ..
            } => {
                let root = root_of(root)?;
                let n = total(count, ts)?;
                let s = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Reduce { s, .. } => (s, n),
                    _ => (0, 0),
                });
                let Coll::Reduce { r, .. } = *colls[root] else {
                    unreachable!("every member's collective matches")
                };
                let rr = self.user(world, bufs, root, r, n);
                coll::reduce(&mut self.b, &s, rr, count, ts, root);
            }
            Coll::Allreduce { count, ts, .. } => {
                let n = total(count, ts)?;
                let s = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Allreduce { s, .. } => (s, n),
                    _ => (0, 0),
                });
                let q = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Allreduce { r, .. } => (r, n),
                    _ => (0, 0),
                });
                coll::allreduce(&mut self.b, &s, &q, count, ts);
            }
            Coll::Gather { root, bytes, .. } => {
                let root = root_of(root)?;
                let s = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Gather { s, bytes, .. } => (s, bytes),
                    _ => (0, 0),
                });
                let Coll::Gather { r, .. } = *colls[root] else {
                    unreachable!("every member's collective matches")
                };
                let rr = self.user(world, bufs, root, r, total(bytes, k as u64)?);
                coll::gather(&mut self.b, &s, rr, bytes, root);
            }
            Coll::Alltoall { bytes, .. } => {
                let n = total(bytes, k as u64)?;
                let s = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Alltoall { s, .. } => (s, n),
                    _ => (0, 0),
                });
                let q = self.users(world, bufs, colls, &|c| match *c {
                    Coll::Alltoall { r, .. } => (r, n),
                    _ => (0, 0),
                });
                coll::alltoall(&mut self.b, &s, &q, bytes);
            }
        }
        Ok(())
    }

    /// MPICH's barrier on a communicator (`MPIR_Barrier_intra`): in round d = 1, 2, 4, ...
    /// each member sends an empty message to the member d after it and receives one from
    /// the member d before it.
    fn dissemination_barrier(&mut self, world: &mut Builder, bufs: &mut Buffers) {
        let k = self.members.len();
        let empty: Vec<BufRef> = (0..k).map(|i| self.user(world, bufs, i, 0, 0)).collect();
        let mut d = 1;
        while d < k {
            for (i, &none) in empty.iter().enumerate() {
                let (to, from) = ((i + d) % k, (i + k - d) % k);
                self.b
                    .sendrecv(i, BARRIER_TAG, CTX_COLL, (none, 0, to), (none, 0, from));
            }
            d *= 2;
        }
    }

    /// The members' calls carried over to their world ranks, requests and buffers.
    fn splice(mut self, world: &mut Builder) {
        for (i, &w) in self.members.iter().enumerate() {
            let prog = self.b.program(i).clone();
            // The collective's own temporary buffers, allocated once per world rank.
            for t in &prog.buffers[self.maps[i].len()..] {
                let id = world.temp(w, &t.name, t.bytes);
                self.maps[i].push(BufRef::new(id, 0));
            }
            let map = |r: BufRef| {
                let base = self.maps[i][usize::from(r.buf)];
                BufRef::new(base.buf, base.offset + r.offset)
            };
            let rank = |x: u16| self.members[usize::from(x)];
            let mut reqs = std::collections::HashMap::new();
            for call in prog.calls {
                match call {
                    Call::Isend {
                        req,
                        dst,
                        tag,
                        ctx,
                        buf,
                        bytes,
                    } => {
                        let q = world.isend(w, rank(dst), tag, ctx, map(buf), bytes);
                        reqs.insert(req, q);
                    }
                    Call::Irecv {
                        req,
                        src,
                        tag,
                        ctx,
                        buf,
                        bytes,
                    } => {
                        let src = match src {
                            Peer::Rank(x) => Peer::Rank(rank(x) as u16),
                            Peer::Any => Peer::Any,
                        };
                        let q = world.irecv(w, src, tag, ctx, map(buf), bytes);
                        reqs.insert(req, q);
                    }
                    Call::Wait(req) => world.wait(w, reqs[&req]),
                    Call::Waitall(v) => world.waitall(w, v.iter().map(|r| reqs[r]).collect()),
                    Call::Copy { dst, src, bytes } => world.copy(w, map(dst), map(src), bytes),
                    Call::Combine { acc, src, bytes } => {
                        world.combine(w, map(acc), map(src), bytes)
                    }
                    Call::Sweep {
                        at,
                        bytes,
                        stride,
                        kind,
                    } => world.sweep(w, map(at), bytes, stride, kind),
                    call @ (Call::Compute(_)
                    | Call::Barrier
                    | Call::ResetStats
                    | Call::StopStats) => world.push(w, call),
                }
            }
        }
    }
}
