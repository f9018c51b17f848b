use std::path::Path;

use super::*;
use crate::workload::check::{check, check_matches, CheckReport, Queue, SendMode};
use crate::workload::load_workload;
use crate::workload::queue::{self, QueueBenchmark, QueueParams, Sources};
use crate::workload::{goal::parse_goal, BufRef, CTX_COLL};

/// `w` written and read back.
fn round_trip(w: &Workload) -> Workload {
    let text = write_goal(w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    parse_goal(&text, "w.goal").unwrap_or_else(|e| panic!("{}: {e}\n{text}", w.name))
}

/// The barriers' messages a GOAL schedule of `w` adds: per barrier, one per rank and
/// round.
fn barrier_messages(w: &Workload) -> u64 {
    let p = w.ranks.len();
    let rounds = (usize::BITS - (p - 1).leading_zeros()) as u64;
    let barriers = w.ranks[0].calls.iter().filter(|c| **c == Call::Barrier);
    barriers.count() as u64 * p as u64 * rounds
}

/// Checks `w` and its round trip: the same messages and bytes, plus the barriers'
/// zero-byte messages; returns both reports.
fn same_messages(w: &Workload) -> (CheckReport, CheckReport) {
    let a = check(w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    let b = check(&round_trip(w)).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    assert_eq!(
        b.messages(),
        a.messages() + barrier_messages(w),
        "{}",
        w.name
    );
    assert_eq!(b.bytes(), a.bytes(), "{}", w.name);
    for (x, y) in a.ranks.iter().zip(&b.ranks) {
        assert_eq!(x.recv_bytes, y.recv_bytes, "{}", w.name);
    }
    (a, b)
}

#[test]
fn a_small_program_reads_as_written() {
    let send = Call::Isend {
        req: 0,
        dst: 1,
        tag: 7,
        ctx: CTX_PT2PT,
        buf: BufRef::new(0, 0),
        bytes: 8,
    };
    let recv = Call::Irecv {
        req: 0,
        src: Peer::Any,
        tag: Tag::Tag(7),
        ctx: CTX_PT2PT,
        buf: BufRef::new(0, 0),
        bytes: 8,
    };
    let mut a = RankProgram::default();
    a.buffer("b", 8);
    let mut b = a.clone();
    a.calls = vec![Call::Barrier, send, Call::Wait(0), Call::Compute(5)];
    b.calls = vec![Call::Barrier, Call::ResetStats, recv, Call::Wait(0)];
    let w = Workload {
        name: "t".into(),
        ranks: vec![a, b],
        notes: vec!["n".into()],
        origins: None,
    };
    let want = "// workload t
// note: n
num_ranks 2
rank 0 {
l0: send 0b to 1 tag 8
l1: recv 0b from 1 tag 8
l1 irequires l0
l2: send 8b to 1 tag 7
l2 requires l0
l2 requires l1
l3: calc 5
l3 requires l2
}
rank 1 {
l0: send 0b to 0 tag 8
l1: recv 0b from 0 tag 8
l1 irequires l0
// the timer starts here
l2: recv 8b from -1 tag 7
l2 requires l0
l2 requires l1
}
";
    assert_eq!(write_goal(&w).unwrap(), want);
    same_messages(&w);
}

#[test]
fn queue_benchmarks_keep_their_messages_and_queue_positions() {
    let mut unload = QueueParams::new(QueueBenchmark::Unload, 300);
    unload.ranks = 4;
    unload.sources = Sources::Skewed;
    let mut unexpected = QueueParams::new(QueueBenchmark::Unexpected, 300);
    unexpected.position = 100;
    for p in [
        QueueParams::new(QueueBenchmark::Preposted, 300),
        unload,
        unexpected,
    ] {
        let w = queue::build(&p, true).unwrap();
        same_messages(&w);
        let at = |w: &Workload| {
            let (_, log) = check_matches(w, SendMode::Buffered).unwrap();
            log.iter()
                .map(|m| (m.rank, m.tag, m.queue, m.position, m.depth))
                .collect::<Vec<(usize, u32, Queue, usize, usize)>>()
        };
        assert_eq!(at(&round_trip(&w)), at(&w), "{}", w.name);
    }
}

#[test]
fn imb_and_npb_specs_keep_their_messages() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    for file in [
        "imb/alltoall-16k.toml",
        "imb/bcast-1m.toml",
        "npb/cg-S.toml",
    ] {
        let (w, _) =
            load_workload(&root.join(file), Some(0.2), true).unwrap_or_else(|e| panic!("{e}"));
        let (a, _) = same_messages(&w);
        assert!(a.messages() > 0 && barrier_messages(&w) > 0, "{file}");
    }
}

/// IMB PingPong receives with ANY_TAG between barriers: in GOAL's single tag space the
/// wildcard could take a barrier's message.
#[test]
fn any_tag_beside_other_contexts_is_refused() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let (w, _) = load_workload(&root.join("imb/pingpong-16k.toml"), None, false).unwrap();
    assert_eq!(
        write_goal(&w).unwrap_err(),
        "rank 0 call 5: a receive with ANY_TAG in context 0, and the workload has barriers: \
         GOAL has one tag space and no communicators, so the wildcard could match them"
    );
}

#[test]
fn contexts_get_tags_of_their_own() {
    let msg = |ctx, tag| Call::Isend {
        req: 0,
        dst: 0,
        tag,
        ctx,
        buf: BufRef::new(0, 0),
        bytes: 0,
    };
    let recv = |ctx, tag| Call::Irecv {
        req: 1,
        src: Peer::Rank(0),
        tag: Tag::Tag(tag),
        ctx,
        buf: BufRef::new(0, 0),
        bytes: 0,
    };
    let mut r = RankProgram::default();
    r.buffer("b", 1);
    for (ctx, tag) in [(CTX_COLL, 3), (CTX_PT2PT, 3), (CTX_COLL, 1), (CTX_PT2PT, 9)] {
        r.calls
            .extend([msg(ctx, tag), recv(ctx, tag), Call::Waitall(vec![0, 1])]);
    }
    let w = Workload {
        name: "c".into(),
        ranks: vec![r],
        ..Workload::default()
    };
    let text = write_goal(&w).unwrap();
    let tags: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(": send"))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    // Context 1's tags 1 and 3 follow context 0's largest, 9.
    assert_eq!(tags, ["11", "3", "10", "9"]);
    same_messages(&w);
}
