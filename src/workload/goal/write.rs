//! Workloads written as GOAL schedules: the inverse of the reader, so that a built
//! workload (a spec's benchmark, its collectives already expanded) can run in LogGOPSim or
//! be read back.
//!
//! Each rank's calls become a chain of operations in program order, labelled `l0`, `l1`,
//! ...:
//!
//! - [`Call::Isend`] becomes `send`, [`Call::Irecv`] `recv` (`from -1` and `tag -1` for
//!   the wildcards). The next operation `irequires` it: GOAL would otherwise start
//!   operations in any order, and the order receives are posted in decides what they
//!   match.
//! - [`Call::Wait`] and [`Call::Waitall`] are no operations: the next operation `requires`
//!   what they waited for (the reader puts a wait there again, and waits at the end for
//!   what nothing requires).
//! - [`Call::Compute`] becomes `calc` with its instructions; a sweep, copy or combine
//!   becomes `calc` of its 8-byte word accesses (a combine: three per 4-byte float), as
//!   GOAL has no memory operations: its time is kept roughly, its cache effects are not.
//!   The next operation `requires` a calc.
//! - [`Call::Barrier`] becomes the runtime's dissemination barrier (`mpi::calls`): in
//!   round k a zero-byte send to rank + 2^k and a receive from rank - 2^k, each round
//!   requiring the one before.
//! - [`Call::ResetStats`] becomes a comment: GOAL has no timer.
//!
//! GOAL has one tag space and no communicators. Context 0 ([`CTX_PT2PT`]) keeps its tags;
//! every other (context, tag) pair, and the barrier's messages, get tags of their own above
//! the largest context-0 tag, so that no receive matches across contexts. A receive with
//! ANY_TAG would, so a workload with one and messages of more than one context (barriers
//! included) is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use super::MAX_RANKS;
use crate::envelope::{Peer, Tag, TAG_UB};
use crate::workload::{Call, RankProgram, ReqId, SweepKind, Workload, CTX_PT2PT};

/// The tag space of a message: a context, or the barrier's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Space {
    Ctx(u16),
    Barrier,
}

/// The GOAL tag of each (space, tag) pair the workload uses.
struct Tags {
    map: BTreeMap<(Space, u32), u32>,
}

impl Tags {
    /// Context 0 keeps its tags; the other pairs follow the largest of them.
    fn of(w: &Workload) -> Result<Tags, String> {
        let used = used_tags(w);
        let mut next = used
            .iter()
            .filter(|(s, _)| *s == Space::Ctx(CTX_PT2PT))
            .map(|&(_, t)| t + 1)
            .max()
            .unwrap_or(0);
        let mut map = BTreeMap::new();
        for &(space, tag) in &used {
            let goal_tag = if space == Space::Ctx(CTX_PT2PT) {
                tag
            } else {
                next += 1;
                next - 1
            };
            if goal_tag > TAG_UB {
                return Err(format!(
                    "the workload's contexts need more than {TAG_UB} GOAL tags"
                ));
            }
            map.insert((space, tag), goal_tag);
        }
        Ok(Tags { map })
    }

    fn get(&self, space: Space, tag: u32) -> u32 {
        self.map[&(space, tag)]
    }
}

/// Every (space, tag) pair of a send or a receive with a tag, and the barrier's.
fn used_tags(w: &Workload) -> BTreeSet<(Space, u32)> {
    let mut used = BTreeSet::new();
    for c in w.ranks.iter().flat_map(|r| &r.calls) {
        match c {
            Call::Isend { tag, ctx, .. }
            | Call::Irecv {
                tag: Tag::Tag(tag),
                ctx,
                ..
            } => {
                used.insert((Space::Ctx(*ctx), *tag));
            }
            Call::Barrier => {
                used.insert((Space::Barrier, 0));
            }
            _ => {}
        }
    }
    used
}

/// Refuses an ANY_TAG receive when messages of another space exist.
fn check_wildcards(w: &Workload) -> Result<(), String> {
    let spaces: BTreeSet<Space> = used_tags(w).into_iter().map(|(s, _)| s).collect();
    for (r, p) in w.ranks.iter().enumerate() {
        for (i, c) in p.calls.iter().enumerate() {
            let Call::Irecv {
                tag: Tag::Any, ctx, ..
            } = c
            else {
                continue;
            };
            if let Some(other) = spaces.iter().find(|&&s| s != Space::Ctx(*ctx)) {
                let other = match other {
                    Space::Ctx(c) => format!("messages in context {c}"),
                    Space::Barrier => "barriers".to_string(),
                };
                return Err(format!(
                    "rank {r} call {i}: a receive with ANY_TAG in context {ctx}, and the \
                     workload has {other}: GOAL has one tag space and no communicators, so \
                     the wildcard could match them"
                ));
            }
        }
    }
    Ok(())
}

/// The GOAL schedule of `w`; an error says what GOAL cannot express.
pub fn write_goal(w: &Workload) -> Result<String, String> {
    let p = w.ranks.len();
    if p == 0 || p > MAX_RANKS as usize {
        return Err(format!(
            "a GOAL schedule has 1 to {MAX_RANKS} ranks, not {p}"
        ));
    }
    check_wildcards(w)?;
    let tags = Tags::of(w)?;
    let mut out = format!("// workload {}\n", w.name);
    for note in &w.notes {
        let _ = writeln!(out, "// note: {note}");
    }
    let _ = writeln!(out, "num_ranks {p}");
    for (r, prog) in w.ranks.iter().enumerate() {
        let mut rw = RankWriter::new(r, p, &tags);
        rw.program(prog)?;
        let _ = write!(out, "rank {r} {{\n{}}}\n", rw.out);
    }
    Ok(out)
}

/// One rank's block being written.
struct RankWriter<'a> {
    rank: usize,
    ranks: usize,
    tags: &'a Tags,
    out: String,
    /// The next label.
    next: usize,
    /// The previous operation, and whether the next must wait for it to complete (a calc)
    /// or only to start (a send or receive).
    prev: Option<(usize, bool)>,
    /// Operations waited for since the previous operation.
    due: Vec<usize>,
    /// The operation of each outstanding request.
    reqs: HashMap<ReqId, usize>,
}

impl<'a> RankWriter<'a> {
    fn new(rank: usize, ranks: usize, tags: &'a Tags) -> Self {
        RankWriter {
            rank,
            ranks,
            tags,
            out: String::new(),
            next: 0,
            prev: None,
            due: Vec::new(),
            reqs: HashMap::new(),
        }
    }

    fn program(&mut self, prog: &RankProgram) -> Result<(), String> {
        for (i, c) in prog.calls.iter().enumerate() {
            self.call(c)
                .map_err(|e| format!("rank {} call {i}: {e}", self.rank))?;
        }
        Ok(())
    }

    fn call(&mut self, c: &Call) -> Result<(), String> {
        match c {
            Call::Isend {
                req,
                dst,
                tag,
                ctx,
                bytes,
                ..
            } => {
                let t = self.tags.get(Space::Ctx(*ctx), *tag);
                let l = self.op(&format!("send {bytes}b to {dst} tag {t}"), false);
                self.started(*req, l)?;
            }
            Call::Irecv {
                req,
                src,
                tag,
                ctx,
                bytes,
                ..
            } => {
                let from = match src {
                    Peer::Rank(s) => s.to_string(),
                    Peer::Any => "-1".to_string(),
                };
                let t = match tag {
                    Tag::Tag(t) => self.tags.get(Space::Ctx(*ctx), *t).to_string(),
                    Tag::Any => "-1".to_string(),
                };
                let l = self.op(&format!("recv {bytes}b from {from} tag {t}"), false);
                self.started(*req, l)?;
            }
            Call::Wait(req) => self.waited(*req)?,
            Call::Waitall(reqs) => {
                for req in reqs {
                    self.waited(*req)?;
                }
            }
            Call::Barrier => self.barrier(),
            Call::ResetStats => self.out.push_str("// the timer starts here\n"),
            Call::StopStats => self.out.push_str("// the timer stops here\n"),
            _ => {
                self.op(&format!("calc {}", calc_amount(c)), true);
            }
        }
        Ok(())
    }

    /// Writes operation `text` with its dependencies; `calc`: the next operation waits for
    /// it to complete.
    fn op(&mut self, text: &str, calc: bool) -> usize {
        let l = self.next;
        self.next += 1;
        let _ = writeln!(self.out, "l{l}: {text}");
        let mut needs = std::mem::take(&mut self.due);
        match self.prev {
            Some((p, true)) => needs.push(p),
            Some((p, false)) if !needs.contains(&p) => {
                let _ = writeln!(self.out, "l{l} irequires l{p}");
            }
            _ => {}
        }
        needs.sort_unstable();
        needs.dedup();
        for n in needs {
            let _ = writeln!(self.out, "l{l} requires l{n}");
        }
        self.prev = Some((l, calc));
        l
    }

    fn started(&mut self, req: ReqId, op: usize) -> Result<(), String> {
        match self.reqs.insert(req, op) {
            None => Ok(()),
            Some(_) => Err(format!("request {req} is reused while outstanding")),
        }
    }

    fn waited(&mut self, req: ReqId) -> Result<(), String> {
        let op = self
            .reqs
            .remove(&req)
            .ok_or_else(|| format!("waits for request {req}, which is not outstanding"))?;
        self.due.push(op);
        Ok(())
    }

    /// MPICH's dissemination barrier, as the runtime runs it: per round a send, then a
    /// receive, then a wait for both.
    fn barrier(&mut self) {
        let (me, p) = (self.rank, self.ranks);
        let rounds = usize::BITS - (p - 1).leading_zeros();
        let t = self.tags.get(Space::Barrier, 0);
        for k in 0..rounds {
            let d = 1usize << k;
            let to = (me + d) % p;
            let from = (me + p - d % p) % p;
            let s = self.op(&format!("send 0b to {to} tag {t}"), false);
            let r = self.op(&format!("recv 0b from {from} tag {t}"), false);
            self.due = vec![s, r];
        }
    }
}

/// A local operation's GOAL calc amount: instructions, or 8-byte word accesses.
fn calc_amount(c: &Call) -> u64 {
    let words = |bytes: u64, per: u64| bytes.div_ceil(per);
    match *c {
        Call::Compute(n) => n,
        Call::Sweep {
            bytes,
            stride,
            kind,
            ..
        } => {
            let n = words(bytes, stride.max(1));
            match kind {
                SweepKind::Update => n.saturating_mul(2),
                SweepKind::Load | SweepKind::Store => n,
            }
        }
        Call::Copy { bytes, .. } => words(bytes, 8).saturating_mul(2),
        Call::Combine { bytes, .. } => words(bytes, 4).saturating_mul(3),
        _ => 0,
    }
}

#[cfg(test)]
mod tests;
