//! Recorded MPI runs as workloads: the folder `moped trace` fills while a real MPI program
//! runs under its PMPI library (`trace/moped_pmpi.c`), one `rank-R.trace` per process.
//!
//! # The format
//!
//! Each file starts `moped-trace 1 rank R of P`, then `init T`, a line per MPI call the
//! library wraps, and `finalize T`. Times are the process's CPU time in ns (time spent
//! descheduled is no work of the program's); `T0 T1` are a call's entry and return. Peers are ranks of MPI_COMM_WORLD (`-1` any source,
//! `-2` MPI_PROC_NULL), a receive's tag `-1` is any tag, sizes are bytes, addresses are the
//! process's own, and `COMM` is `w` for MPI_COMM_WORLD or its members' world ranks
//! (`0,1`):
//!
//! ```text
//! send T0 T1 DST TAG BYTES ADDR COMM        recv T0 T1 SRC TAG BYTES ADDR COMM
//! isend T0 T1 DST TAG BYTES ADDR REQ COMM   irecv T0 T1 SRC TAG BYTES ADDR REQ COMM
//! wait T0 T1 REQ                            waitall T0 T1 N REQ...
//! test T0 T1 REQ FLAG                       unmodelled T0 T1 MPI_NAME
//! sendrecv T0 T1 DST TAG BYTES ADDR SRC TAG BYTES ADDR COMM
//! barrier T0 T1 COMM                        bcast T0 T1 ROOT BYTES ADDR COMM
//! reduce T0 T1 ROOT COUNT TYPE_BYTES SADDR RADDR COMM
//! allreduce T0 T1 COUNT TYPE_BYTES SADDR RADDR COMM
//! gather T0 T1 ROOT BYTES SADDR RADDR COMM  alltoall T0 T1 BYTES SADDR RADDR COMM
//! ```
//!
//! # The translation
//!
//! - The time between one call's return and the next call's entry (from `init`) is the
//!   program's own work: a [`Call::Compute`] of that many ns times
//!   [`TraceOptions::instructions_per_ns`] instructions.
//! - Point-to-point calls become `Isend`/`Irecv` (context [`CTX_PT2PT`]) with a wait where
//!   the program blocked; the MPI's request handles become request numbers.
//! - Collectives are expanded as the runtime model expands them (MPICH's algorithms,
//!   [`super::coll`]), each member's call checked against the others' (kind, root,
//!   size): on MPI_COMM_WORLD among every rank (its barrier the runtime's own), on another
//!   communicator among its members, ranked as in it (its barrier MPICH's dissemination
//!   barrier). The model has one collective context: a communicator's collectives are told
//!   apart from another's by their order between each pair of ranks, as every member calls
//!   them in the same order.
//! - Buffers keep the program's addresses: each rank's buffer extents, merged where they
//!   overlap or touch, become its buffers, and every call refers to its offset there, so
//!   a buffer reused by the program is reused in the simulation.

mod collective;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use super::coll::Builder;
use super::{BufId, BufRef, Origins, Workload, CTX_PT2PT};
use crate::envelope::{Peer, Tag};
use crate::textparse::{LineIndex, PosError};

/// How a trace's times become work.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceOptions {
    /// Instructions per ns of the program's own time between calls (Table 1's core: 1 GHz
    /// at 1 cycle per instruction, 1.0).
    pub instructions_per_ns: f64,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            instructions_per_ns: 1.0,
        }
    }
}

/// A communicator as the trace names it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Comm {
    World,
    Members(Vec<i64>),
}

/// One recorded call, its times and where it is in its file.
#[derive(Clone, Debug)]
struct Rec {
    t0: u64,
    t1: u64,
    op: Op,
    at: (u32, u32),
}

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Send(Msg),
    Recv(Msg),
    Isend(Msg, i64),
    Irecv(Msg, i64),
    Wait(Vec<i64>),
    Sendrecv(Msg, Msg),
    Coll(Coll, Comm),
}

/// A message as one side sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Msg {
    peer: i64,
    tag: i64,
    bytes: u64,
    addr: u64,
}

/// A collective call: what every member must agree on, and this rank's buffers.
#[derive(Clone, Debug, PartialEq)]
enum Coll {
    Barrier,
    Bcast {
        root: i64,
        bytes: u64,
        addr: u64,
    },
    Reduce {
        root: i64,
        count: u64,
        ts: u64,
        s: u64,
        r: u64,
    },
    Allreduce {
        count: u64,
        ts: u64,
        s: u64,
        r: u64,
    },
    Gather {
        root: i64,
        bytes: u64,
        s: u64,
        r: u64,
    },
    Alltoall {
        bytes: u64,
        s: u64,
        r: u64,
    },
}

impl Coll {
    fn name(&self) -> &'static str {
        match self {
            Coll::Barrier => "MPI_Barrier",
            Coll::Bcast { .. } => "MPI_Bcast",
            Coll::Reduce { .. } => "MPI_Reduce",
            Coll::Allreduce { .. } => "MPI_Allreduce",
            Coll::Gather { .. } => "MPI_Gather",
            Coll::Alltoall { .. } => "MPI_Alltoall",
        }
    }

    /// What every rank of the collective must agree on, in words.
    fn signature(&self) -> String {
        match *self {
            Coll::Barrier => "MPI_Barrier".into(),
            Coll::Bcast { root, bytes, .. } => format!("MPI_Bcast of {bytes} bytes from {root}"),
            Coll::Reduce {
                root, count, ts, ..
            } => format!("MPI_Reduce of {count} x {ts} bytes to {root}"),
            Coll::Allreduce { count, ts, .. } => format!("MPI_Allreduce of {count} x {ts} bytes"),
            Coll::Gather { root, bytes, .. } => format!("MPI_Gather of {bytes} bytes to {root}"),
            Coll::Alltoall { bytes, .. } => format!("MPI_Alltoall of {bytes}-byte blocks"),
        }
    }
}

/// One rank's file, read.
#[derive(Debug)]
struct RankTrace {
    file: String,
    init: u64,
    recs: Vec<Rec>,
}

/// Reads one rank's trace; `rank` and `ranks` are what its name and the folder say.
fn parse_rank(text: &str, file: &str, rank: usize, ranks: usize) -> Result<RankTrace, PosError> {
    let lines = LineIndex::new(text);
    let mut offset = 0;
    let mut recs = Vec::new();
    let mut init = None;
    let mut header = false;
    for line in text.split('\n') {
        let start = offset;
        offset += line.len() + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let mut words = Words::new(line, start, file, &lines);
        let first = words.word("a record")?;
        if !header {
            words.expect_header(first, rank, ranks)?;
            header = true;
            continue;
        }
        match first {
            "init" => init = Some(words.num("the start time")?),
            "finalize" => {
                return Ok(RankTrace {
                    file: file.to_string(),
                    init: init.unwrap_or(0),
                    recs,
                })
            }
            kind => {
                let at = lines.pos(start);
                let (t0, t1) = (words.num("an entry time")?, words.num("a return time")?);
                let op = words.op(kind)?;
                words.end()?;
                recs.push(Rec { t0, t1, op, at });
            }
        }
    }
    let end = lines.pos(text.len());
    Err(PosError::new(
        file,
        end,
        "the trace ends without `finalize`: the process did not reach MPI_Finalize",
    ))
}

/// The words of one line, each with its place, for errors.
struct Words<'a> {
    rest: std::str::SplitWhitespace<'a>,
    line: &'a str,
    start: usize,
    file: &'a str,
    lines: &'a LineIndex<'a>,
    last: usize,
}

impl<'a> Words<'a> {
    fn new(line: &'a str, start: usize, file: &'a str, lines: &'a LineIndex<'a>) -> Self {
        Words {
            rest: line.split_whitespace(),
            line,
            start,
            file,
            lines,
            last: 0,
        }
    }

    fn err(&self, at: usize, msg: String) -> PosError {
        PosError::new(self.file, self.lines.pos(self.start + at), msg)
    }

    fn word(&mut self, what: &str) -> Result<&'a str, PosError> {
        match self.rest.next() {
            Some(w) => {
                self.last = w.as_ptr() as usize - self.line.as_ptr() as usize;
                Ok(w)
            }
            None => Err(self.err(self.line.len(), format!("expected {what}"))),
        }
    }

    fn int(&mut self, what: &str) -> Result<i64, PosError> {
        let w = self.word(what)?;
        w.parse().map_err(|_| {
            self.err(
                self.last,
                format!("expected {what} (an integer), not `{w}`"),
            )
        })
    }

    fn num(&mut self, what: &str) -> Result<u64, PosError> {
        let w = self.word(what)?;
        w.parse().map_err(|_| {
            self.err(
                self.last,
                format!("expected {what} (a whole number), not `{w}`"),
            )
        })
    }

    fn end(&mut self) -> Result<(), PosError> {
        match self.rest.next() {
            None => Ok(()),
            Some(w) => {
                let at = w.as_ptr() as usize - self.line.as_ptr() as usize;
                Err(self.err(at, format!("expected the end of the line, not `{w}`")))
            }
        }
    }

    fn expect_header(&mut self, first: &'a str, rank: usize, ranks: usize) -> Result<(), PosError> {
        let want = format!("moped-trace 1 rank {rank} of {ranks}");
        let words: Vec<&str> = std::iter::once(first).chain(self.rest.by_ref()).collect();
        if words.join(" ") != want {
            return Err(self.err(0, format!("expected the header `{want}`")));
        }
        Ok(())
    }

    fn msg(&mut self, peer: &str) -> Result<Msg, PosError> {
        Ok(Msg {
            peer: self.int(peer)?,
            tag: self.int("a tag")?,
            bytes: self.num("a size in bytes")?,
            addr: self.num("a buffer address")?,
        })
    }

    fn comm(&mut self) -> Result<Comm, PosError> {
        let w = self.word("a communicator (`w` or its members' ranks)")?;
        if w == "w" {
            return Ok(Comm::World);
        }
        let members: Result<Vec<i64>, _> = w.split(',').map(str::parse).collect();
        members.map(Comm::Members).map_err(|_| {
            self.err(
                self.last,
                format!("expected a communicator (`w` or `0,1,...`), not `{w}`"),
            )
        })
    }

    fn op(&mut self, kind: &str) -> Result<Op, PosError> {
        let op = match kind {
            "send" | "recv" => {
                let m = self.msg(if kind == "send" {
                    "a destination"
                } else {
                    "a source"
                })?;
                self.p2p(kind, m)?
            }
            "isend" | "irecv" => {
                let m = self.msg(if kind == "isend" {
                    "a destination"
                } else {
                    "a source"
                })?;
                let req = self.int("a request handle")?;
                self.comm()?;
                if kind == "isend" {
                    Op::Isend(m, req)
                } else {
                    Op::Irecv(m, req)
                }
            }
            "wait" => Op::Wait(vec![self.int("a request handle")?]),
            // A test that found its request complete completes it as a wait would; one
            // that did not changes nothing.
            "test" => {
                let req = self.int("a request handle")?;
                match self.num("a flag (0 or 1)")? {
                    0 => Op::Wait(Vec::new()),
                    _ => Op::Wait(vec![req]),
                }
            }
            "unmodelled" => {
                let name = self.word("the MPI function's name")?;
                return Err(self.err(
                    self.last,
                    format!(
                        "the program calls {name}, which the tracer records but the model \
                         cannot run yet"
                    ),
                ));
            }
            "waitall" => {
                let n = self.num("a request count")?;
                let reqs: Result<Vec<i64>, _> =
                    (0..n).map(|_| self.int("a request handle")).collect();
                Op::Wait(reqs?)
            }
            "sendrecv" => {
                let s = self.msg("a destination")?;
                let r = self.msg("a source")?;
                self.comm()?;
                Op::Sendrecv(s, r)
            }
            _ => {
                let c = self.coll(kind)?;
                Op::Coll(c, self.comm()?)
            }
        };
        Ok(op)
    }

    fn p2p(&mut self, kind: &str, m: Msg) -> Result<Op, PosError> {
        self.comm()?;
        Ok(if kind == "send" {
            Op::Send(m)
        } else {
            Op::Recv(m)
        })
    }

    fn coll(&mut self, kind: &str) -> Result<Coll, PosError> {
        Ok(match kind {
            "barrier" => Coll::Barrier,
            "bcast" => Coll::Bcast {
                root: self.int("a root")?,
                bytes: self.num("a size in bytes")?,
                addr: self.num("a buffer address")?,
            },
            "reduce" => Coll::Reduce {
                root: self.int("a root")?,
                count: self.num("an element count")?,
                ts: self.num("an element size")?,
                s: self.num("a send buffer address")?,
                r: self.num("a receive buffer address")?,
            },
            "allreduce" => Coll::Allreduce {
                count: self.num("an element count")?,
                ts: self.num("an element size")?,
                s: self.num("a send buffer address")?,
                r: self.num("a receive buffer address")?,
            },
            "gather" => Coll::Gather {
                root: self.int("a root")?,
                bytes: self.num("a size in bytes")?,
                s: self.num("a send buffer address")?,
                r: self.num("a receive buffer address")?,
            },
            "alltoall" => Coll::Alltoall {
                bytes: self.num("a size in bytes")?,
                s: self.num("a send buffer address")?,
                r: self.num("a receive buffer address")?,
            },
            other => {
                return Err(self.err(
                    0,
                    format!(
                        "unknown record `{other}`; expected send, recv, isend, irecv, wait, \
                         waitall, test, sendrecv, barrier, bcast, reduce, allreduce, gather, \
                         alltoall, unmodelled, init or finalize"
                    ),
                ))
            }
        })
    }
}

/// Reads the trace folder `dir` (`rank-0.trace` ... `rank-(P-1).trace`) into a workload.
pub fn load_trace(dir: &Path, opts: TraceOptions) -> Result<Workload, String> {
    let mut files = BTreeMap::new();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let rank = name
            .strip_prefix("rank-")
            .and_then(|n| n.strip_suffix(".trace"))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(r) = rank {
            files.insert(r, e.path());
        }
    }
    let ranks = files.len();
    if ranks == 0 {
        return Err(format!(
            "{}: no rank-R.trace files: not a trace folder (`moped trace` writes one)",
            dir.display()
        ));
    }
    if let Some(missing) = (0..ranks).find(|r| !files.contains_key(r)) {
        return Err(format!(
            "{}: rank-{missing}.trace is missing",
            dir.display()
        ));
    }
    let mut traces = Vec::with_capacity(ranks);
    for (r, path) in &files {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = path.display().to_string();
        let text = crate::textparse::utf8_text(&file, &bytes).map_err(|e| e.to_string())?;
        traces.push(parse_rank(text, &file, *r, ranks).map_err(|e| e.to_string())?);
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    build(&name, &traces, opts)
}

/// Each rank's buffers: its extents merged where they overlap or touch.
struct Buffers {
    /// Per rank, (start, end, buffer) sorted by start.
    extents: Vec<Vec<(u64, u64, BufId)>>,
    /// Per rank, a one-byte buffer for empty messages.
    empty: Vec<Option<BufId>>,
}

impl Buffers {
    fn new(b: &mut Builder, traces: &[RankTrace]) -> Buffers {
        let p = traces.len();
        let mut extents = Vec::with_capacity(p);
        for (r, t) in traces.iter().enumerate() {
            let mut spans: Vec<(u64, u64)> = Vec::new();
            for rec in &t.recs {
                for (addr, bytes) in spans_of(&rec.op, r, p) {
                    if bytes > 0 {
                        spans.push((addr, addr.saturating_add(bytes)));
                    }
                }
            }
            spans.sort_unstable();
            let mut merged: Vec<(u64, u64, BufId)> = Vec::new();
            for (s, e) in spans {
                match merged.last_mut() {
                    Some(last) if s <= last.1 => last.1 = last.1.max(e),
                    _ => merged.push((s, e, 0)),
                }
            }
            for m in &mut merged {
                m.2 = b.buffer(r, &format!("trace.{:#x}", m.0), m.1 - m.0);
            }
            extents.push(merged);
        }
        // A rank with no buffer of its own still needs memory to map (its barriers').
        let empty = extents
            .iter()
            .enumerate()
            .map(|(r, e)| e.is_empty().then(|| b.buffer(r, "trace.empty", 1)))
            .collect();
        Buffers { extents, empty }
    }

    /// Rank `r`'s buffer at `addr` for `bytes` bytes.
    fn at(&mut self, b: &mut Builder, r: usize, addr: u64, bytes: u64) -> BufRef {
        let ext = &self.extents[r];
        let i = ext.partition_point(|e| e.0 <= addr);
        match i.checked_sub(1).map(|i| ext[i]) {
            Some((s, e, id)) if bytes > 0 && addr < e => BufRef::new(id, addr - s),
            _ => {
                let id = *self.empty[r].get_or_insert_with(|| b.buffer(r, "trace.empty", 1));
                BufRef::new(id, 0)
            }
        }
    }
}

/// The buffer extents `(address, bytes)` an op of rank `r` of `p` uses.
fn spans_of(op: &Op, r: usize, p: usize) -> Vec<(u64, u64)> {
    let root = |x: i64| x == r as i64;
    match op {
        Op::Send(m) | Op::Recv(m) | Op::Isend(m, _) | Op::Irecv(m, _) => vec![(m.addr, m.bytes)],
        Op::Sendrecv(s, q) => vec![(s.addr, s.bytes), (q.addr, q.bytes)],
        Op::Wait(_) | Op::Coll(Coll::Barrier, _) => vec![],
        Op::Coll(c, _) => match *c {
            Coll::Bcast { addr, bytes, .. } => vec![(addr, bytes)],
            Coll::Reduce {
                root: x,
                count,
                ts,
                s,
                r: rb,
            } => {
                let n = count.saturating_mul(ts);
                let mut v = vec![(s, n)];
                if root(x) {
                    v.push((rb, n));
                }
                v
            }
            Coll::Allreduce {
                count,
                ts,
                s,
                r: rb,
            } => {
                let n = count.saturating_mul(ts);
                vec![(s, n), (rb, n)]
            }
            Coll::Gather {
                root: x,
                bytes,
                s,
                r: rb,
            } => {
                let mut v = vec![(s, bytes)];
                if root(x) {
                    v.push((rb, bytes.saturating_mul(p as u64)));
                }
                v
            }
            Coll::Alltoall { bytes, s, r: rb } => {
                let n = bytes.saturating_mul(p as u64);
                vec![(s, n), (rb, n)]
            }
            Coll::Barrier => vec![],
        },
    }
}

/// The workload of the traces, one per rank.
fn build(name: &str, traces: &[RankTrace], opts: TraceOptions) -> Result<Workload, String> {
    let p = traces.len();
    if p > crate::envelope::PORT_RANKS as usize {
        return Err(format!(
            "{p} ranks: a workload has 1 to {} ranks",
            crate::envelope::PORT_RANKS
        ));
    }
    let mut b = Builder::new(p);
    let mut bufs = Buffers::new(&mut b, traces);
    let mut st: Vec<RankState> = traces
        .iter()
        .map(|t| RankState {
            next: 0,
            last_end: t.init,
            reqs: HashMap::new(),
            places: Vec::new(),
        })
        .collect();
    loop {
        for r in 0..p {
            point_to_point(&mut b, &mut bufs, &traces[r], &mut st[r], r, opts)?;
        }
        let at: Vec<Option<&Rec>> = (0..p).map(|r| traces[r].recs.get(st[r].next)).collect();
        if at.iter().all(Option::is_none) {
            break;
        }
        collective::next(&mut b, &mut bufs, traces, &mut st, opts)?;
    }
    for (r, s) in st.iter_mut().enumerate() {
        // Requests the program never completed (freed, or left at MPI_Finalize).
        let left: Vec<_> = std::mem::take(&mut s.reqs)
            .into_values()
            .flatten()
            .collect();
        let mut left = left;
        left.sort_unstable();
        let before = b.program(r).calls.len();
        b.waitall(r, left);
        place(&mut b, s, r, before, (0, 0));
    }
    let mut w = b.finish(name);
    w.notes.push(format!(
        "recorded MPI run: the time between calls taken as {} instructions per ns",
        opts.instructions_per_ns
    ));
    w.origins = Some(Origins {
        file: traces[0].file.clone(),
        ranks: st.into_iter().map(|s| s.places).collect(),
        files: traces.iter().map(|t| t.file.clone()).collect(),
    });
    Ok(w)
}

/// Where a rank is in its trace.
struct RankState {
    next: usize,
    /// When its last call returned (or MPI_Init, before the first).
    last_end: u64,
    /// The MPI's request handles in flight, as request numbers.
    reqs: HashMap<i64, VecDeque<u32>>,
    /// Each call's place in the trace, as the workload's origins.
    places: Vec<(u32, u32)>,
}

/// Records `at` as the place of the calls rank `r` got since it had `before`.
fn place(b: &mut Builder, s: &mut RankState, r: usize, before: usize, at: (u32, u32)) {
    let now = b.program(r).calls.len();
    s.places.extend(std::iter::repeat(at).take(now - before));
}

/// The program's own work before `rec`.
fn compute_before(b: &mut Builder, s: &mut RankState, r: usize, rec: &Rec, opts: TraceOptions) {
    let gap = rec.t0.saturating_sub(s.last_end);
    let n = (gap as f64 * opts.instructions_per_ns).round() as u64;
    let before = b.program(r).calls.len();
    b.compute(r, n);
    place(b, s, r, before, rec.at);
    s.last_end = rec.t1.max(rec.t0);
}

/// Rank `r`'s calls up to its next collective.
fn point_to_point(
    b: &mut Builder,
    bufs: &mut Buffers,
    t: &RankTrace,
    s: &mut RankState,
    r: usize,
    opts: TraceOptions,
) -> Result<(), String> {
    while let Some(rec) = t.recs.get(s.next) {
        if matches!(rec.op, Op::Coll(..)) {
            return Ok(());
        }
        compute_before(b, s, r, rec, opts);
        let before = b.program(r).calls.len();
        let here = || format!("{}:{}:{}", t.file, rec.at.0, rec.at.1);
        let p = b.size() as i64;
        let peer_of = |x: i64, wild: bool| match x {
            -1 if wild => Ok(Peer::Any),
            x if (0..p).contains(&x) => Ok(Peer::Rank(x as u16)),
            x => Err(format!("{}: peer {x} is no rank of the {p}", here())),
        };
        let tag_of = |x: i64, wild: bool| match x {
            -1 if wild => Ok(Tag::Any),
            x if (0..=i64::from(crate::envelope::TAG_UB)).contains(&x) => Ok(Tag::Tag(x as u32)),
            x => Err(format!("{}: tag {x} is out of range", here())),
        };
        // MPI_PROC_NULL: the call does nothing.
        let null = |m: &Msg| m.peer == -2;
        match &rec.op {
            Op::Send(m) | Op::Isend(m, _) if !null(m) => {
                let Peer::Rank(dst) = peer_of(m.peer, false)? else {
                    unreachable!("a send's peer is a rank")
                };
                let Tag::Tag(tag) = tag_of(m.tag, false)? else {
                    unreachable!("a send's tag is a tag")
                };
                let buf = bufs.at(b, r, m.addr, m.bytes);
                let q = b.isend(r, usize::from(dst), tag, CTX_PT2PT, buf, m.bytes);
                match rec.op {
                    Op::Isend(_, h) => track(s, h, q),
                    _ => b.wait(r, q),
                }
            }
            Op::Recv(m) | Op::Irecv(m, _) if !null(m) => {
                let (src, tag) = (peer_of(m.peer, true)?, tag_of(m.tag, true)?);
                let buf = bufs.at(b, r, m.addr, m.bytes);
                let q = b.irecv(r, src, tag, CTX_PT2PT, buf, m.bytes);
                match rec.op {
                    Op::Irecv(_, h) => track(s, h, q),
                    _ => b.wait(r, q),
                }
            }
            Op::Sendrecv(sm, rm) => {
                let mut reqs = Vec::new();
                if !null(rm) {
                    let (src, tag) = (peer_of(rm.peer, true)?, tag_of(rm.tag, true)?);
                    let buf = bufs.at(b, r, rm.addr, rm.bytes);
                    reqs.push(b.irecv(r, src, tag, CTX_PT2PT, buf, rm.bytes));
                }
                if !null(sm) {
                    let Peer::Rank(dst) = peer_of(sm.peer, false)? else {
                        unreachable!("a send's peer is a rank")
                    };
                    let Tag::Tag(tag) = tag_of(sm.tag, false)? else {
                        unreachable!("a send's tag is a tag")
                    };
                    let buf = bufs.at(b, r, sm.addr, sm.bytes);
                    reqs.push(b.isend(r, usize::from(dst), tag, CTX_PT2PT, buf, sm.bytes));
                }
                b.waitall(r, reqs);
            }
            Op::Wait(handles) => {
                let mut reqs: Vec<u32> = handles.iter().filter_map(|&h| untrack(s, h)).collect();
                reqs.sort_unstable();
                b.waitall(r, reqs);
            }
            _ => {}
        }
        place(b, s, r, before, rec.at);
        s.next += 1;
    }
    Ok(())
}

/// Notes that the MPI's handle `h` stands for request `q`. One handle may stand for
/// several requests at once: an MPI hands out one shared handle for every request already
/// complete when it returns (MPICH's sends that finished at once), so a wait on it takes
/// the earliest.
fn track(s: &mut RankState, h: i64, q: u32) {
    s.reqs.entry(h).or_default().push_back(q);
}

/// The request a wait on handle `h` completes, if the trace started one.
fn untrack(s: &mut RankState, h: i64) -> Option<u32> {
    let queue = s.reqs.get_mut(&h)?;
    let q = queue.pop_front();
    if queue.is_empty() {
        s.reqs.remove(&h);
    }
    q
}
