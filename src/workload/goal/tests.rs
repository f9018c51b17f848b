use std::collections::HashMap;
use std::fmt::Write as _;

use proptest::prelude::*;

use super::*;
use crate::workload::Buffer;

fn parse(text: &str) -> Workload {
    parse_goal(text, "t.goal").unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    match parse_goal(text, "t.goal") {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn isend(req: ReqId, dst: u16, tag: u32, bytes: u64) -> Call {
    Call::Isend {
        req,
        dst,
        tag,
        ctx: CTX_PT2PT,
        buf: BufRef::new(SEND_BUF, 0),
        bytes,
    }
}

fn irecv(req: ReqId, src: Peer, tag: Tag, off: u64, bytes: u64) -> Call {
    Call::Irecv {
        req,
        src,
        tag,
        ctx: CTX_PT2PT,
        buf: BufRef::new(RECV_BUF, off),
        bytes,
    }
}

fn buffers(send: u64, recv: u64) -> Vec<Buffer> {
    vec![
        Buffer {
            name: "send".to_string(),
            bytes: send,
        },
        Buffer {
            name: "recv".to_string(),
            bytes: recv,
        },
    ]
}

// ---------------------------------------------------------------------------------------
// A logical MPI run of a workload

/// What [`run_mpi`] saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Delivered {
    messages: usize,
    /// (source, destination, bytes) of each message, in matching order.
    log: Vec<(u16, u16, u64)>,
}

struct Msg {
    src: u16,
    tag: u32,
    ctx: u16,
    bytes: u64,
}

struct Posted {
    req: ReqId,
    src: Peer,
    tag: Tag,
    ctx: u16,
    bytes: u64,
}

/// A started request: done yet, and the receive range it owns until waited for.
struct Live {
    done: bool,
    range: Option<(u64, u64)>,
}

fn matches(p: &Posted, m: &Msg) -> bool {
    p.ctx == m.ctx
        && (p.src == Peer::Any || p.src == Peer::Rank(m.src))
        && (p.tag == Tag::Any || p.tag == Tag::Tag(m.tag))
}

fn in_buffer(p: &RankProgram, at: BufRef, bytes: u64) -> bool {
    p.buffers
        .get(at.buf as usize)
        .is_some_and(|b| at.offset.checked_add(bytes).is_some_and(|e| e <= b.bytes))
}

/// Runs `w` with MPI's semantics: sends are buffered (complete at once); a receive
/// completes when a matching message (same context, its tag or ANY_TAG, its source or
/// ANY_SOURCE) is there; messages between a pair of ranks match in the order sent, and a
/// message takes the earliest posted receive that matches it. Ranks run round robin until
/// each is blocked in a wait. Checks that buffers are in bounds, that receives outstanding
/// together own disjoint bytes, that no message is truncated, that every request is waited
/// for, that nothing deadlocks and that every message is received.
fn run_mpi(w: &Workload) -> Result<Delivered, String> {
    let n = w.ranks.len();
    let mut pc = vec![0usize; n];
    let mut live: Vec<HashMap<ReqId, Live>> = (0..n).map(|_| HashMap::new()).collect();
    let mut unexpected: Vec<Vec<Msg>> = (0..n).map(|_| Vec::new()).collect();
    let mut posted: Vec<Vec<Posted>> = (0..n).map(|_| Vec::new()).collect();
    let mut out = Delivered::default();
    loop {
        let mut progress = false;
        for r in 0..n {
            let prog = &w.ranks[r];
            while let Some(call) = prog.calls.get(pc[r]) {
                match call {
                    Call::Compute(_) => {}
                    &Call::Isend {
                        req,
                        dst,
                        tag,
                        ctx,
                        buf,
                        bytes,
                    } => {
                        if !in_buffer(prog, buf, bytes) {
                            return Err(format!("rank {r}: send outside its buffer"));
                        }
                        if live[r].contains_key(&req) {
                            return Err(format!("rank {r}: request {req} reused while live"));
                        }
                        let d = dst as usize;
                        if d >= n {
                            return Err(format!("rank {r}: send to rank {dst}"));
                        }
                        live[r].insert(
                            req,
                            Live {
                                done: true,
                                range: None,
                            },
                        );
                        let m = Msg {
                            src: r as u16,
                            tag,
                            ctx,
                            bytes,
                        };
                        match posted[d].iter().position(|p| matches(p, &m)) {
                            Some(k) => {
                                let p = posted[d].remove(k);
                                if m.bytes > p.bytes {
                                    return Err(format!("rank {d}: message from {r} truncated"));
                                }
                                if let Some(l) = live[d].get_mut(&p.req) {
                                    l.done = true;
                                }
                                out.messages += 1;
                                out.log.push((m.src, dst, m.bytes));
                            }
                            None => unexpected[d].push(m),
                        }
                    }
                    &Call::Irecv {
                        req,
                        src,
                        tag,
                        ctx,
                        buf,
                        bytes,
                    } => {
                        if !in_buffer(prog, buf, bytes) {
                            return Err(format!("rank {r}: receive outside its buffer"));
                        }
                        if live[r].contains_key(&req) {
                            return Err(format!("rank {r}: request {req} reused while live"));
                        }
                        let range = (buf.buf, buf.offset, buf.offset + bytes);
                        let clash = bytes > 0
                            && live[r].values().any(|l| {
                                l.range.is_some_and(|(s, e)| {
                                    buf.buf == RECV_BUF && s < range.2 && range.1 < e
                                })
                            });
                        if clash {
                            return Err(format!(
                                "rank {r}: receive {req} overlaps an outstanding receive"
                            ));
                        }
                        let p = Posted {
                            req,
                            src,
                            tag,
                            ctx,
                            bytes,
                        };
                        let done = match unexpected[r].iter().position(|m| matches(&p, m)) {
                            Some(k) => {
                                let m = unexpected[r].remove(k);
                                if m.bytes > bytes {
                                    return Err(format!(
                                        "rank {r}: message from {} truncated",
                                        m.src
                                    ));
                                }
                                out.messages += 1;
                                out.log.push((m.src, r as u16, m.bytes));
                                true
                            }
                            None => {
                                posted[r].push(p);
                                false
                            }
                        };
                        let range = (bytes > 0).then_some((range.1, range.2));
                        live[r].insert(req, Live { done, range });
                    }
                    Call::Wait(_) | Call::Waitall(_) => {
                        let reqs: Vec<ReqId> = match call {
                            Call::Waitall(v) => v.clone(),
                            Call::Wait(q) => vec![*q],
                            _ => Vec::new(),
                        };
                        let mut all = true;
                        for q in &reqs {
                            match live[r].get(q) {
                                None => return Err(format!("rank {r}: wait on request {q}")),
                                Some(l) => all &= l.done,
                            }
                        }
                        if !all {
                            break;
                        }
                        for q in &reqs {
                            live[r].remove(q);
                        }
                    }
                    other => return Err(format!("rank {r}: unexpected call {other:?}")),
                }
                pc[r] += 1;
                progress = true;
            }
        }
        if (0..n).all(|r| pc[r] == w.ranks[r].calls.len()) {
            break;
        }
        if !progress {
            let stuck: Vec<String> = (0..n)
                .filter(|&r| pc[r] < w.ranks[r].calls.len())
                .map(|r| format!("rank {r} at {:?}", w.ranks[r].calls[pc[r]]))
                .collect();
            return Err(format!("deadlock: {}", stuck.join("; ")));
        }
    }
    for r in 0..n {
        if !unexpected[r].is_empty() {
            return Err(format!(
                "rank {r}: {} messages never received",
                unexpected[r].len()
            ));
        }
        if !posted[r].is_empty() || !live[r].is_empty() {
            return Err(format!("rank {r}: requests left at the end"));
        }
    }
    Ok(out)
}

#[test]
fn checker_catches_deadlock_truncation_and_leftovers() {
    // Both ranks wait for a receive before sending.
    let dl = parse(
        "num_ranks 2\nrank 0 {\nr: recv 8b from 1\ns: send 8b to 1\ns requires r\n}\n\
         rank 1 {\nr: recv 8b from 0\ns: send 8b to 0\ns requires r\n}\n",
    );
    assert!(run_mpi(&dl).unwrap_err().starts_with("deadlock"));
    let trunc = parse("num_ranks 2\nrank 0 {\nsend 9b to 1\n}\nrank 1 {\nrecv 8b from 0\n}\n");
    assert!(run_mpi(&trunc).unwrap_err().contains("truncated"));
    let lost = parse("num_ranks 2\nrank 0 {\nsend 8b to 1 tag 1\n}\n");
    assert!(run_mpi(&lost).unwrap_err().contains("never received"));
    // Receives sharing bytes while both are outstanding.
    let mut w = parse("num_ranks 2\nrank 0 {\nsend 8b to 1\nsend 8b to 1\n}\nrank 1 {\nrecv 8b from 0\nrecv 8b from 0\n}\n");
    if let Call::Irecv { buf, .. } = &mut w.ranks[1].calls[1] {
        buf.offset = 4;
    }
    assert!(run_mpi(&w).unwrap_err().contains("overlaps"));
}

// ---------------------------------------------------------------------------------------
// Translation

const TWO_RANKS: &str = "\
num_ranks 2

rank 0 {
  a: send 100b to 1 tag 3
  b: recv 200b from 1 tag 4 cpu 0 nic 0
  c: calc 1000
  c requires b
  d: send 8b to 1 tag 5
  d irequires c
  calc 50
}

rank 1 {
  x: recv 100b from 0 tag 3
  y: send 200b to 0 tag 4
  y requires x
  z: recv 8 b from 0 tag 5
  w: calc 7
  w requires y
  w requires z
}
";

#[test]
fn two_ranks_exact_calls() {
    let w = parse(TWO_RANKS);
    assert_eq!(w.name, "t");
    assert_eq!(w.ranks.len(), 2);
    // `calc 50` needs no wait, so it goes before `c`, which waits for `b`; `d` only needs
    // `c` started. The sends are waited for at the end.
    assert_eq!(
        w.ranks[0].calls,
        vec![
            isend(0, 1, 3, 100),
            irecv(1, Peer::Rank(1), Tag::Tag(4), 0, 200),
            Call::Compute(50),
            Call::Wait(1),
            Call::Compute(1000),
            isend(2, 1, 5, 8),
            Call::Waitall(vec![0, 2]),
        ]
    );
    assert_eq!(w.ranks[0].buffers, buffers(100, 200));
    // `z` is posted while `x` is outstanding, so it takes the bytes after `x`'s; `w` waits
    // for both of its sends and receives at once.
    assert_eq!(
        w.ranks[1].calls,
        vec![
            irecv(0, Peer::Rank(0), Tag::Tag(3), 0, 100),
            irecv(1, Peer::Rank(0), Tag::Tag(5), 100, 8),
            Call::Wait(0),
            isend(2, 0, 4, 200),
            Call::Waitall(vec![1, 2]),
            Call::Compute(7),
        ]
    );
    assert_eq!(w.ranks[1].buffers, buffers(200, 108));
    assert_eq!(
        w.notes,
        vec!["GOAL calc amounts taken as instruction counts"]
    );
    let d = run_mpi(&w).unwrap();
    assert_eq!(d.messages, 3);
}

#[test]
fn written_forms_read_alike() {
    let plain = "num_ranks 3\nrank 0 {\nl1: send 8b to 1 tag 2\nl2: recv 0b from 2 tag -1\n\
                 l3: calc 10\nl3 requires l2\n}\nrank 1 {\nrecv 8b from 0 tag 2\n}\n\
                 rank 2 {\nsend 0b to 0 tag 9\n}\n";
    let dressed = "/* schedgen-style\n   header */\r\n\tnum_ranks 3 rank 0 {\r\n\
                   // a dependency may come before its labels\r\n\
                   l3 requires   l2\r\n\
                   l1:send 8 bto 1 tag 2 cpu 1 nic 3 // trailing comment\r\n\
                   \tl2 : recv 0b from -1tag -1\r\n\
                   l3: calc 10 cpu 0\r\n} rank 1 { recv 8b from 0 tag 2\n}\n\
                   rank 2 {\nsend 0b to 0 tag 9}";
    // The last line has no line end before `}`: that is an error, as in txt2bin.
    assert_eq!(
        err(dressed),
        "t.goal:12:19: expected `cpu`, `nic` or end of line, found `}`"
    );
    let dressed = dressed.replace("tag 9}", "tag 9\n}");
    let a = parse(plain);
    let b = parse(&dressed);
    // `from -1` is any source; the plain one names rank 2.
    let mut a_ranks = a.ranks.clone();
    if let Call::Irecv { src, .. } = &mut a_ranks[0].calls[1] {
        *src = Peer::Any;
    }
    assert_eq!(a_ranks, b.ranks);
    assert_eq!(b.notes.len(), 2, "{:?}", b.notes);
    // No line end at the end of the file is fine.
    let c = parse(plain.trim_end());
    assert_eq!(c.ranks, a.ranks);
}

#[test]
fn unlabeled_and_zero_byte_operations() {
    let w = parse("num_ranks 2\nrank 0 {\nsend 0b to 1\ncalc 0\n}\nrank 1 {\nrecv 0b from 0\n}\n");
    assert_eq!(
        w.ranks[0].calls,
        vec![isend(0, 1, 0, 0), Call::Compute(0), Call::Waitall(vec![0])]
    );
    assert_eq!(
        w.ranks[1].calls,
        vec![
            irecv(0, Peer::Rank(0), Tag::Tag(0), 0, 0),
            Call::Waitall(vec![0])
        ]
    );
    assert_eq!(w.ranks[1].buffers, buffers(0, 0));
    assert_eq!(run_mpi(&w).unwrap().messages, 1);
}

#[test]
fn ranks_without_a_block_run_nothing() {
    let w = parse("num_ranks 3\nrank 1 {\n}\n");
    assert_eq!(w.ranks.len(), 3);
    for r in &w.ranks {
        assert!(r.calls.is_empty());
        assert_eq!(r.buffers, buffers(0, 0));
    }
    assert!(w.notes.is_empty());
}

fn example_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/any_source.goal")
}

#[test]
fn any_source_example_file() {
    let w = load_goal(&example_path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.name, "any_source");
    assert_eq!(w.ranks.len(), 4);
    // Three receives outstanding together: three ranges of the arena.
    assert_eq!(
        w.ranks[0].calls,
        vec![
            irecv(0, Peer::Any, Tag::Tag(7), 0, 16384),
            irecv(1, Peer::Any, Tag::Tag(7), 16384, 16384),
            irecv(2, Peer::Any, Tag::Any, 32768, 16384),
            Call::Wait(0),
            Call::Compute(2000),
            Call::Wait(1),
            Call::Compute(2000),
            Call::Wait(2),
            Call::Compute(2000),
            isend(3, 1, 8, 64),
            isend(4, 2, 8, 64),
            isend(5, 3, 8, 64),
            Call::Waitall(vec![3, 4, 5]),
        ]
    );
    assert_eq!(w.ranks[0].buffers, buffers(64, 3 * 16384));
    assert_eq!(
        w.ranks[2].calls,
        vec![
            Call::Compute(1000),
            isend(0, 0, 7, 4096),
            irecv(1, Peer::Rank(0), Tag::Tag(8), 0, 64),
            Call::Wait(1),
            Call::Compute(100),
            Call::Waitall(vec![0]),
        ]
    );
    let d = run_mpi(&w).unwrap();
    assert_eq!(d.messages, 6);
    let mut to_zero: Vec<(u16, u64)> = d
        .log
        .iter()
        .filter(|m| m.1 == 0)
        .map(|m| (m.0, m.2))
        .collect();
    to_zero.sort_unstable();
    assert_eq!(to_zero, vec![(1, 64), (2, 4096), (3, 16384)]);
}

#[test]
fn readme_example() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/README.md");
    let readme = std::fs::read_to_string(readme).unwrap();
    let start = readme.find("```text\n").unwrap() + 8;
    let len = readme[start..].find("```").unwrap();
    let w = parse(&readme[start..start + len]);
    assert_eq!(run_mpi(&w).unwrap().messages, 2);
}

#[test]
fn any_source_takes_messages_in_arrival_order() {
    // Rank 0's first receive names rank 2, the second takes anyone: rank 1's message must
    // not be taken by the first.
    let w = parse(
        "num_ranks 3\nrank 0 {\na: recv 4b from 2 tag 1\nb: recv 8b from -1 tag -1\n\
         c: calc 5\nc requires a\nc requires b\n}\n\
         rank 1 {\nsend 8b to 0 tag 6\n}\nrank 2 {\nsend 4b to 0 tag 1\n}\n",
    );
    assert_eq!(
        w.ranks[0].calls,
        vec![
            irecv(0, Peer::Rank(2), Tag::Tag(1), 0, 4),
            irecv(1, Peer::Any, Tag::Any, 4, 8),
            Call::Waitall(vec![0, 1]),
            Call::Compute(5),
        ]
    );
    assert_eq!(run_mpi(&w).unwrap().messages, 2);
}

// Schedules shaped like schedgen's output: `num_ranks`, one block per rank, labels l1,
// l2, ... in order, tag 0, a comment per phase.

fn schedgen_binomial_bcast(p: usize, bytes: u64) -> String {
    let mut s = format!("num_ranks {p}\n");
    for r in 0..p {
        let _ = write!(s, "\nrank {r} {{\n/* binomial broadcast from 0 */\n");
        let mut id = 0;
        let mut recv = None;
        // The round in which rank r receives: its highest set bit.
        let mut mask = 1;
        while mask < p {
            if r & mask != 0 {
                id += 1;
                let _ = writeln!(s, "l{id}: recv {bytes}b from {} tag 0", r - mask);
                recv = Some(id);
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        if r == 0 {
            mask = p.next_power_of_two() >> 1;
        }
        while mask > 0 {
            if r + mask < p {
                id += 1;
                let _ = writeln!(s, "l{id}: send {bytes}b to {} tag 0", r + mask);
                if let Some(rv) = recv {
                    let _ = writeln!(s, "l{id} requires l{rv}");
                }
            }
            mask >>= 1;
        }
        s.push_str("}\n");
    }
    s
}

fn schedgen_dissemination(p: usize, bytes: u64) -> String {
    let mut s = format!("num_ranks {p}\n");
    for r in 0..p {
        let _ = write!(s, "\nrank {r} {{\n");
        let mut id = 0;
        let mut dist = 1;
        let mut last_recv = None;
        while dist < p {
            id += 1;
            let _ = writeln!(s, "l{id}: send {bytes}b to {} tag 0", (r + dist) % p);
            if let Some(rv) = last_recv {
                let _ = writeln!(s, "l{id} requires l{rv}");
            }
            id += 1;
            let _ = writeln!(s, "l{id}: recv {bytes}b from {} tag 0", (r + p - dist) % p);
            last_recv = Some(id);
            dist *= 2;
        }
        s.push_str("}\n");
    }
    s
}

/// Ring allgather: in step k each rank forwards the block it received in step k-1,
/// with a calc on each received block.
fn schedgen_ring(p: usize, bytes: u64) -> String {
    let mut s = format!("num_ranks {p}\n");
    for r in 0..p {
        let _ = write!(s, "\nrank {r} {{\n");
        let mut id = 0;
        let mut last_recv = None;
        for _step in 0..p - 1 {
            id += 1;
            let send = id;
            let _ = writeln!(s, "l{send}: send {bytes}b to {} tag 0", (r + 1) % p);
            if let Some(rv) = last_recv {
                let _ = writeln!(s, "l{send} requires l{rv}");
            }
            id += 1;
            let _ = writeln!(s, "l{id}: recv {bytes}b from {} tag 0", (r + p - 1) % p);
            let _ = writeln!(s, "l{id} irequires l{send}");
            last_recv = Some(id);
            id += 1;
            let _ = writeln!(s, "l{id}: calc {bytes}");
            let _ = writeln!(s, "l{id} requires l{}", id - 1);
        }
        s.push_str("}\n");
    }
    s
}

#[test]
fn schedgen_style_binomial_broadcast() {
    let w = parse(&schedgen_binomial_bcast(8, 1024));
    // Rank 0 sends to 4, 2, 1; rank 1 receives from 0 and forwards nothing.
    assert_eq!(
        w.ranks[0].calls,
        vec![
            isend(0, 4, 0, 1024),
            isend(1, 2, 0, 1024),
            isend(2, 1, 0, 1024),
            Call::Waitall(vec![0, 1, 2]),
        ]
    );
    assert_eq!(
        w.ranks[2].calls,
        vec![
            irecv(0, Peer::Rank(0), Tag::Tag(0), 0, 1024),
            Call::Wait(0),
            isend(1, 3, 0, 1024),
            Call::Waitall(vec![1]),
        ]
    );
    let d = run_mpi(&w).unwrap();
    assert_eq!(d.messages, 7);
    for p in [2, 3, 5, 13, 16] {
        let w = parse(&schedgen_binomial_bcast(p, 8));
        assert_eq!(run_mpi(&w).unwrap().messages, p - 1, "p = {p}");
    }
}

#[test]
fn schedgen_style_dissemination() {
    for p in [2, 3, 7, 8, 16] {
        let w = parse(&schedgen_dissemination(p, 64));
        let rounds = (usize::BITS - (p - 1).leading_zeros()) as u64;
        assert_eq!(
            run_mpi(&w).unwrap().messages,
            p * rounds as usize,
            "p = {p}"
        );
        // Every receive is posted up front (nothing requires them to wait), so each needs
        // its own range.
        assert_eq!(w.ranks[0].buffers, buffers(64, 64 * rounds), "p = {p}");
    }
}

#[test]
fn schedgen_style_ring() {
    let w = parse(&schedgen_ring(5, 256));
    assert_eq!(run_mpi(&w).unwrap().messages, 5 * 4);
    let c = &w.ranks[0].calls;
    // Step 1: send, post the receive, wait for it, compute; step 2 forwards it.
    assert_eq!(
        &c[..6],
        &[
            isend(0, 1, 0, 256),
            irecv(1, Peer::Rank(4), Tag::Tag(0), 0, 256),
            Call::Wait(1),
            Call::Compute(256),
            isend(2, 1, 0, 256),
            irecv(3, Peer::Rank(4), Tag::Tag(0), 0, 256),
        ]
    );
    // One receive outstanding at a time: its range is reused.
    assert_eq!(w.ranks[0].buffers, buffers(256, 256));
}

#[test]
fn waits_do_not_hold_back_operations_that_can_start() {
    // Each rank has a computation needing its receive, written before the send that
    // would satisfy the other rank's receive. Placing it in file order would wait first
    // and deadlock; the send goes first.
    let w = parse(
        "num_ranks 2\nrank 0 {\na: recv 8b from 1\nc: calc 10\nc requires a\nb: send 8b to 1\n}\n\
         rank 1 {\na: recv 8b from 0\nc: calc 10\nc requires a\nb: send 8b to 0\n}\n",
    );
    assert_eq!(
        w.ranks[0].calls,
        vec![
            irecv(0, Peer::Rank(1), Tag::Tag(0), 0, 8),
            isend(1, 1, 0, 8),
            Call::Wait(0),
            Call::Compute(10),
            Call::Waitall(vec![1]),
        ]
    );
    assert_eq!(run_mpi(&w).unwrap().messages, 2);
}

#[test]
fn many_outstanding_receives() {
    // Every receive is posted before any wait: 20000 ranges side by side.
    let n = 20000;
    let mut s = String::from("num_ranks 2\nrank 0 {\n");
    for k in 0..n {
        let _ = writeln!(s, "recv {}b from 1 tag 1", 8 + k % 3);
    }
    s.push_str("}\nrank 1 {\n");
    for k in 0..n {
        let _ = writeln!(s, "send {}b to 0 tag 1", 8 + k % 3);
    }
    s.push_str("}\n");
    let w = parse(&s);
    let total: u64 = (0..n).map(|k| 8 + k % 3).sum();
    assert_eq!(w.ranks[0].buffers, buffers(0, total));
    assert_eq!(run_mpi(&w).unwrap().messages, n as usize);
}

#[test]
fn arena_is_first_fit() {
    // a (100) and b (50) outstanding; a waited for; c (60) fits in a's hole, d (80) not.
    let w = parse(
        "num_ranks 2\nrank 0 {\na: recv 100b from 1\nb: recv 50b from 1\nx: calc 1\nx requires a\n\
         c: recv 60b from 1\nc irequires x\nd: recv 80b from 1\nd irequires c\n}\n\
         rank 1 {\nsend 100b to 0\nsend 50b to 0\nsend 60b to 0\nsend 80b to 0\n}\n",
    );
    assert_eq!(
        w.ranks[0].calls,
        vec![
            irecv(0, Peer::Rank(1), Tag::Tag(0), 0, 100),
            irecv(1, Peer::Rank(1), Tag::Tag(0), 100, 50),
            Call::Wait(0),
            Call::Compute(1),
            irecv(2, Peer::Rank(1), Tag::Tag(0), 0, 60),
            irecv(3, Peer::Rank(1), Tag::Tag(0), 150, 80),
            Call::Waitall(vec![1, 2, 3]),
        ]
    );
    assert_eq!(w.ranks[0].buffers, buffers(0, 230));
    assert_eq!(run_mpi(&w).unwrap().messages, 4);
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn syntax_errors() {
    let cases = [
        ("", "t.goal:1:1: expected `num_ranks`, found end of file"),
        (
            "num_ranks 2\nrank 0 {\n  l1: send 8 to 1\n}\n",
            "t.goal:3:14: expected `b` after the size, found `to`",
        ),
        (
            "rank 0 {\n}\n",
            "t.goal:1:1: expected `num_ranks` before the first rank block, found `rank`",
        ),
        (
            "num_ranks 1\nrank 0 {\ncalc 5 x\n}\n",
            "t.goal:3:8: expected `cpu` or end of line, found `x`",
        ),
        (
            "num_ranks 1\nrank 0 {\nl1 calc 5\n}\n",
            "t.goal:3:4: expected `:`, `requires` or `irequires`, found `calc`",
        ),
        (
            "num_ranks 2\nrank 0 {\nrecv 8b to 1\n}\n",
            "t.goal:3:9: expected `from`, found `to`",
        ),
        (
            "num_ranks 2\nrank 0 {\nsend 8b to 1 tag\n}\n",
            "t.goal:3:17: expected a tag or -1, found end of line",
        ),
        (
            "num_ranks 1\nrank 0 {\ncalc 5\n",
            "t.goal:4:1: expected `}` to close the block of rank 0, found end of file",
        ),
        (
            "num_ranks 1\nrank 0 {\n/* open\n}\n",
            "t.goal:3:1: unterminated `/*` comment",
        ),
        (
            "num_ranks 1\nrank 0\n{\n}\n",
            "t.goal:2:7: expected `{`, found end of line",
        ),
        (
            "num_ranks 1\nrank 0 {\nrank 1 {\n}\n",
            "t.goal:3:1: expected `}` to close the block of rank 0, found `rank`",
        ),
        ("num_ranks 1\n}\n", "t.goal:2:1: expected `rank`, found `}`"),
        (
            "num_ranks 1\nrank 0 {\n\u{e9}: calc 1\n}\n",
            "t.goal:3:1: expected an operation, a dependency or `}`, found `\u{e9}`",
        ),
        (
            "num_ranks 1\nrank 0 {\na requires\n}\n",
            "t.goal:3:11: expected a label, found end of line",
        ),
        (
            "num_ranks 1\nrank 0 {\na: calc 1\nb: calc 1\na requires b b\n}\n",
            "t.goal:5:14: expected end of line, found `b`",
        ),
        (
            "num_ranks 1\nrank 0 {\ncalc \r5\n}\n",
            "t.goal:3:6: expected an amount of computation, found `\\r`",
        ),
        (
            "num_ranks 2 num_ranks 2\n",
            "t.goal:1:13: `num_ranks` given twice (first on line 1)",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(err(text), want, "input:\n{text}");
    }
}

#[test]
fn label_errors() {
    assert_eq!(
        err("num_ranks 1\nrank 0 {\nl1: calc 5\nl1 requires l9\n}\n"),
        "t.goal:4:13: unknown label `l9` in rank 0"
    );
    assert_eq!(
        err("num_ranks 1\nrank 0 {\nl1: calc 5\nl0 irequires l1\n}\n"),
        "t.goal:4:1: unknown label `l0` in rank 0"
    );
    // Labels are local to their rank.
    assert_eq!(
        err("num_ranks 2\nrank 0 {\nl1: calc 5\n}\nrank 1 {\nl2: calc 1\nl2 requires l1\n}\n"),
        "t.goal:7:13: unknown label `l1` in rank 1"
    );
    assert_eq!(
        err("num_ranks 1\nrank 0 {\nl1: calc 5\n  l1: calc 6\n}\n"),
        "t.goal:4:3: duplicate label `l1` in rank 0 (first defined on line 3)"
    );
}

#[test]
fn rank_block_errors() {
    assert_eq!(
        err("num_ranks 2\nrank 2 {\n}\n"),
        "t.goal:2:6: rank 2 out of range (num_ranks is 2)"
    );
    assert_eq!(
        err("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n"),
        "t.goal:4:6: rank 0 has a second block (the first starts on line 2)"
    );
    assert_eq!(
        err("num_ranks 0\n"),
        "t.goal:1:11: num_ranks 0 out of range (1 to 32767)"
    );
    assert_eq!(
        err("num_ranks 32768\n"),
        "t.goal:1:11: num_ranks 32768 out of range (1 to 32767)"
    );
}

#[test]
fn cycle_errors() {
    assert_eq!(
        err(
            "num_ranks 1\nrank 0 {\na: calc 1\nb: calc 2\nc: calc 3\nb requires a\n\
             a requires c\nc irequires b\n}\n"
        ),
        "t.goal:8:1: dependency cycle in rank 0: `a` requires `c`, `c` irequires `b`, \
         `b` requires `a`"
    );
    assert_eq!(
        err("num_ranks 1\nrank 0 {\nx: calc 1\ny: calc 1\ny requires x\nx requires x\n}\n"),
        "t.goal:6:1: dependency cycle in rank 0: `x` requires `x`"
    );
}

#[test]
fn peer_and_tag_errors() {
    let cases = [
        (
            "send 8b to 2",
            "t.goal:3:12: destination rank 2 out of range (num_ranks is 2)",
        ),
        (
            "recv 8b from 5 tag 1",
            "t.goal:3:14: source rank 5 out of range (num_ranks is 2)",
        ),
        (
            "send 8b to 99999999999",
            "t.goal:3:12: destination rank 99999999999 out of range (num_ranks is 2)",
        ),
        (
            "send 8b to -1",
            "t.goal:3:12: a send needs a destination rank; -1 (ANY_SOURCE) is for receives",
        ),
        (
            "send 8b to 1 tag 2147483648",
            "t.goal:3:18: tag 2147483648 out of range (0 to 2147483647, MPI_TAG_UB; -1 is ANY_TAG)",
        ),
        (
            "recv 8b from 1 tag 99999999999",
            "t.goal:3:20: tag 99999999999 out of range (0 to 2147483647, MPI_TAG_UB; -1 is ANY_TAG)",
        ),
        (
            "send 8b to 1 tag -1",
            "t.goal:3:18: a send needs a tag; -1 (ANY_TAG) is for receives",
        ),
        (
            "send 8b to 1 tag 1 cpu 256",
            "t.goal:3:24: cpu 256 out of range (0 to 255)",
        ),
        (
            "recv 8b from 1 nic 1000",
            "t.goal:3:20: nic 1000 out of range (0 to 255)",
        ),
    ];
    for (stmt, want) in cases {
        let text = format!("num_ranks 2\nrank 0 {{\n{stmt}\n}}\n");
        assert_eq!(err(&text), want, "statement: {stmt}");
    }
}

#[test]
fn size_errors() {
    assert_eq!(
        err("num_ranks 2\nrank 0 {\nsend 18446744073709551616b to 1\n}\n"),
        "t.goal:3:6: message size 18446744073709551616 does not fit in 64 bits"
    );
    assert_eq!(
        err("num_ranks 2\nrank 0 {\nl: calc 99999999999999999999\n}\n"),
        "t.goal:3:9: calc amount 99999999999999999999 does not fit in 64 bits"
    );
    // The largest size is fine alone, but two such receives outstanding together need an
    // arena past 2^64 bytes.
    assert!(
        parse("num_ranks 2\nrank 0 {\nrecv 18446744073709551615b from 1\n}\n").ranks[0]
            .buffers
            .contains(&Buffer {
                name: "recv".to_string(),
                bytes: u64::MAX
            })
    );
    assert_eq!(
        err("num_ranks 2\nrank 0 {\nrecv 10000000000000000000b from 1\n\
             recv 10000000000000000000b from 1\n}\n"),
        "t.goal:4:1: the receive arena of rank 0 would pass 2^64 bytes at this receive"
    );
}

#[test]
fn file_errors() {
    let missing = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/no_such.goal");
    let e = load_goal(&missing).unwrap_err();
    assert_eq!((e.line, e.col), (0, 0));
    assert!(e
        .to_string()
        .starts_with(&format!("{}:0:0: cannot read", missing.display())));

    let dir = std::env::temp_dir().join(format!("moped-goal-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.goal");
    std::fs::write(&bad, b"num_ranks 1\nrank 0 {\n  \xff\n}\n").unwrap();
    let e = load_goal(&bad).unwrap_err();
    assert_eq!(
        (e.line, e.col, e.msg.as_str()),
        (
            3,
            3,
            "invalid UTF-8 (byte 0xff); the file must be UTF-8 text"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------
// Properties

/// Pieces of GOAL, so that random text reaches deep into the grammar.
const WORDS: &[&str] = &[
    "num_ranks",
    "rank",
    "{",
    "}",
    "send",
    "recv",
    "calc",
    "b",
    "to",
    "from",
    "tag",
    "cpu",
    "nic",
    "requires",
    "irequires",
    ":",
    "-1",
    "0",
    "1",
    "3",
    "65535",
    "18446744073709551616",
    "l1",
    "l2",
    "l3",
    "//",
    "/*",
    "*/",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\u{e9}",
];

fn corpus() -> Vec<String> {
    vec![
        TWO_RANKS.to_string(),
        std::fs::read_to_string(example_path()).unwrap(),
        schedgen_ring(3, 16),
    ]
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Insert(usize, usize),
    Replace(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), 0..WORDS.len()).prop_map(|(a, w)| Edit::Insert(a, w)),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Edit::Replace(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_goal(&text, "r.goal");
    }

    #[test]
    fn random_words_never_panic(words in proptest::collection::vec(0..WORDS.len(), 0..80)) {
        let text: String = words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
        let _ = parse_goal(&text, "r.goal");
        let text: String = words.iter().map(|&w| WORDS[w]).collect();
        let _ = parse_goal(&text, "r.goal");
    }

    #[test]
    fn mutated_schedules_never_panic(
        which in 0..3usize,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let mut bytes = corpus()[which].clone().into_bytes();
        for e in edits {
            let n = bytes.len() + 1;
            match e {
                Edit::Delete(a) => {
                    if !bytes.is_empty() {
                        bytes.remove(a % bytes.len());
                    }
                }
                Edit::Insert(a, w) => {
                    let at = a % n;
                    bytes.splice(at..at, WORDS[w].bytes());
                }
                Edit::Replace(a, b) => {
                    if !bytes.is_empty() {
                        let k = a % bytes.len();
                        bytes[k] = b;
                    }
                }
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Err(e) = parse_goal(&text, "m.goal") {
            // Errors point into the text.
            prop_assert!(e.line >= 1 && e.col >= 1, "{e}");
            prop_assert!(e.line as usize <= text.split('\n').count(), "{e}");
        }
    }

    /// Random dependency graphs: the order respects every dependency, every `requires` on
    /// a send or receive is waited for before its dependent, every request is waited for
    /// once, and receives outstanding together own disjoint arena bytes.
    #[test]
    fn schedules_keep_dependencies_and_disjoint_receives(
        kinds in proptest::collection::vec((0..3u8, 0..40u64), 1..24),
        raw_edges in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<bool>()), 0..40),
        perm_seed in proptest::collection::vec(any::<u32>(), 24),
    ) {
        let ops: Vec<OpKind> = kinds
            .iter()
            .map(|&(k, b)| match k {
                0 => OpKind::Send { bytes: b, dst: 0, tag: 0 },
                1 => OpKind::Recv { bytes: b, src: Peer::Any, tag: Tag::Any },
                _ => OpKind::Calc(b),
            })
            .collect();
        let n = ops.len();
        // A random topological rank, so that edges point both ways in file order.
        let mut pos: Vec<usize> = (0..n).collect();
        pos.sort_by_key(|&x| perm_seed[x]);
        let edges: Vec<Edge> = raw_edges
            .iter()
            .filter_map(|&(a, b, s)| {
                let (a, b) = (a % n, b % n);
                if a == b {
                    return None;
                }
                let (pred, succ) = if pos[a] < pos[b] { (a, b) } else { (b, a) };
                Some(Edge { succ, pred, start_only: s })
            })
            .collect();
        let s = schedule(&ops, &edges).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let mut placed = vec![usize::MAX; n];
        for (k, &x) in s.order.iter().enumerate() {
            placed[x] = k;
        }
        prop_assert!(placed.iter().all(|&k| k != usize::MAX));
        for e in &edges {
            prop_assert!(placed[e.pred] < placed[e.succ]);
        }
        // Walk the calls: the k-th non-wait call is order[k].
        let mut step = 0;
        let mut req_of = vec![None; n];
        let mut waited_at: HashMap<ReqId, usize> = HashMap::new();
        let mut started_at = vec![0; n];
        let mut live: HashMap<ReqId, (u64, u64)> = HashMap::new();
        let mut peak = 0;
        for (c, call) in s.program.calls.iter().enumerate() {
            match call {
                Call::Wait(_) | Call::Waitall(_) => {
                    let v = match call {
                        Call::Waitall(v) => v.clone(),
                        Call::Wait(q) => vec![*q],
                        _ => unreachable!(),
                    };
                    prop_assert!(!v.is_empty());
                    for q in v {
                        prop_assert!(waited_at.insert(q, c).is_none(), "waited twice");
                        live.remove(&q);
                    }
                }
                _ => {
                    let x = s.order[step];
                    step += 1;
                    started_at[x] = c;
                    match (call, ops[x]) {
                        (Call::Compute(a), OpKind::Calc(b)) => prop_assert_eq!(*a, b),
                        (Call::Isend { req, bytes, buf, .. }, OpKind::Send { bytes: b, .. }) => {
                            prop_assert_eq!(*bytes, b);
                            prop_assert_eq!(*buf, BufRef::new(SEND_BUF, 0));
                            prop_assert!(b <= s.program.buffers[0].bytes);
                            req_of[x] = Some(*req);
                        }
                        (Call::Irecv { req, bytes, buf, .. }, OpKind::Recv { bytes: b, .. }) => {
                            prop_assert_eq!(*bytes, b);
                            prop_assert_eq!(buf.buf, RECV_BUF);
                            let (lo, hi) = (buf.offset, buf.offset + b);
                            if b > 0 {
                                for &(s2, e2) in live.values() {
                                    prop_assert!(hi <= s2 || e2 <= lo, "overlap");
                                }
                                live.insert(*req, (lo, hi));
                            }
                            peak = peak.max(hi);
                            req_of[x] = Some(*req);
                        }
                        other => prop_assert!(false, "mismatch {:?}", other),
                    }
                }
            }
        }
        prop_assert_eq!(step, n);
        prop_assert_eq!(s.program.buffers[1].bytes, peak);
        let comms = ops.iter().filter(|o| o.is_comm()).count();
        prop_assert_eq!(waited_at.len(), comms, "every request waited for once");
        for e in &edges {
            if !e.start_only && ops[e.pred].is_comm() {
                let r = req_of[e.pred].unwrap();
                prop_assert!(waited_at[&r] < started_at[e.succ], "requires not waited for");
            }
        }
    }

    /// The arena places ranges where a plain first-fit scan over the live ranges would.
    #[test]
    fn arena_is_plain_first_fit(steps in proptest::collection::vec((any::<bool>(), 0..50u64, any::<usize>()), 1..80)) {
        let mut arena = Arena::default();
        // (offset, length, op), by offset.
        let mut naive: Vec<(u64, u64, usize)> = Vec::new();
        let mut peak = 0;
        for (op, &(alloc, len, pick)) in steps.iter().enumerate() {
            if alloc || naive.is_empty() {
                let got = arena.alloc(len, op).unwrap();
                if len == 0 {
                    prop_assert_eq!(got, 0);
                    continue;
                }
                let mut at = 0;
                let mut slot = naive.len();
                for (k, &(o, l, _)) in naive.iter().enumerate() {
                    if o - at >= len {
                        slot = k;
                        break;
                    }
                    at = o + l;
                }
                prop_assert_eq!(got, at);
                naive.insert(slot, (at, len, op));
                peak = peak.max(at + len);
            } else {
                let (_, _, victim) = naive.remove(pick % naive.len());
                arena.free(victim);
            }
            prop_assert_eq!(arena.peak, peak);
        }
    }

    /// With edges in any direction, a cycle found is a real one.
    #[test]
    fn cycles_reported_are_cycles(
        n in 1..10usize,
        raw_edges in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<bool>()), 0..20),
    ) {
        let ops = vec![OpKind::Calc(1); n];
        let edges: Vec<Edge> = raw_edges
            .iter()
            .map(|&(a, b, s)| Edge { succ: a % n, pred: b % n, start_only: s })
            .collect();
        match schedule(&ops, &edges) {
            Ok(s) => prop_assert_eq!(s.order.len(), n),
            Err(SchedError::Cycle(c)) => {
                prop_assert!(!c.is_empty());
                for k in 0..c.len() {
                    let next = c[(k + 1) % c.len()];
                    prop_assert_eq!(edges[c[k]].pred, edges[next].succ);
                }
            }
            Err(e) => prop_assert!(false, "{:?}", e),
        }
    }
}

#[test]
fn each_call_knows_the_line_and_column_of_its_operation() {
    let w = parse(
        "num_ranks 2\nrank 0 {\n  s: send 8b to 1 tag 1\n    r: recv 8b from 1 tag 2\n  \
         r requires s\n}\nrank 1 {\n}\n",
    );
    // Isend (s), its wait (needed by r), Irecv (r), and the final wait nothing needed.
    assert_eq!(w.ranks[0].calls.len(), 4);
    let at: Vec<Option<String>> = (0..4).map(|i| w.origin(0, i)).collect();
    assert_eq!(
        at,
        [
            Some("t.goal:3:3".to_string()),
            Some("t.goal:4:5".to_string()),
            Some("t.goal:4:5".to_string()),
            None
        ]
    );
    assert_eq!(w.origin(1, 0), None);
    assert_eq!(w.origin(2, 0), None);
}
