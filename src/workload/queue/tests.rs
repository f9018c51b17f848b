use super::*;
use crate::workload::check::{check, check_matches, check_with, Match, Queue, SendMode};

use QueueBenchmark::{Preposted, Unexpected, Unload};

/// The depths every benchmark is built and checked at.
const DEPTHS: [u32; 5] = [1, 2, 10, 300, 4096];

fn params(bench: QueueBenchmark, depth: u32) -> QueueParams {
    QueueParams::new(bench, depth)
}

/// Checks `w` with buffered and with synchronous sends and returns the matches of the
/// buffered run.
fn matches(w: &Workload) -> Vec<Match> {
    check_with(w, SendMode::Synchronous).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    let (rep, log) =
        check_matches(w, SendMode::Buffered).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    assert_eq!(rep, check(w).unwrap());
    log
}

/// The matches on `rank` of messages with tag `tag`.
fn tagged(log: &[Match], rank: usize, tag: u32) -> Vec<Match> {
    log.iter()
        .filter(|m| m.rank == rank && m.tag == tag)
        .copied()
        .collect()
}

#[test]
fn every_benchmark_builds_and_checks_at_every_depth() {
    for bench in [Preposted, Unload, Unexpected] {
        for depth in DEPTHS {
            for warmup in [false, true] {
                let w = build(&params(bench, depth), warmup).unwrap();
                let rep = check(&w).unwrap_or_else(|e| panic!("{}: {e}", w.name));
                let resets = w.ranks.iter().flat_map(|r| &r.calls);
                let resets = resets.filter(|c| **c == Call::ResetStats).count();
                assert_eq!(resets > 0, warmup, "{} {warmup}", w.name);
                let d = depth as u64;
                let want = match bench {
                    // The ready, the flushing round trip, pings, pongs and the drain.
                    Preposted => 3 + 2 * 10 + d - 1,
                    // Rank 1's flushing message, the go and the messages.
                    Unload => 2 + d,
                    // The messages and the ready.
                    Unexpected => d + 1,
                };
                assert_eq!(rep.messages(), want, "{}", w.name);
            }
        }
    }
}

#[test]
fn synchronous_sends_complete_too() {
    for bench in [Preposted, Unload, Unexpected] {
        let mut p = params(bench, 300);
        p.bytes = 1 << 20;
        p.iterations = 3;
        if bench == Unexpected {
            p.position = 17;
        }
        let w = build(&p, true).unwrap();
        check_with(&w, SendMode::Synchronous).unwrap_or_else(|e| panic!("{}: {e}", w.name));
    }
}

#[test]
fn preposted_pings_are_matched_at_depth() {
    for depth in DEPTHS {
        let w = build(&params(Preposted, depth), true).unwrap();
        let log = matches(&w);
        let pings = tagged(&log, 0, PING_TAG);
        assert_eq!(pings.len(), 10);
        for m in pings {
            let at = (m.queue, m.position, m.depth);
            assert_eq!(at, (Queue::Posted, depth as usize, depth as usize));
        }
        // Rank 1's pong receive is all its queue holds; the drain takes the head.
        for m in tagged(&log, 1, PONG_TAG) {
            assert_eq!((m.queue, m.position, m.depth), (Queue::Posted, 1, 1));
        }
        let drain = tagged(&log, 0, PREPOSTED_TAG);
        assert_eq!(drain.len(), depth as usize - 1);
        assert!(drain
            .iter()
            .all(|m| m.queue == Queue::Posted && m.position == 1));
    }
}

/// The timer starts on rank 1 once rank 0 has posted every receive and said so.
#[test]
fn preposted_timer_starts_after_the_receives_are_posted() {
    let w = build(&params(Preposted, 10), true).unwrap();
    let (r0, r1) = (&w.ranks[0].calls, &w.ranks[1].calls);
    assert!(!r0.contains(&Call::ResetStats));
    let reset = r1.iter().position(|c| *c == Call::ResetStats).unwrap();
    assert!(matches!(
        r1[reset - 2],
        Call::Irecv {
            tag: Tag::Tag(READY_TAG),
            ..
        }
    ));
    let ready = r0
        .iter()
        .position(|c| matches!(c, Call::Isend { .. }))
        .unwrap();
    let posted = r0[..ready]
        .iter()
        .filter(|c| matches!(c, Call::Irecv { .. }))
        .count();
    assert_eq!(posted, 10);
    assert!(!w
        .ranks
        .iter()
        .flat_map(|r| &r.calls)
        .any(|c| *c == Call::Barrier));
    assert_eq!(
        w.notes,
        vec!["after the timer stops, 9 messages drain the queue, each matched at its head"]
    );
}

#[test]
fn unload_matches_the_last_posted_first() {
    for depth in DEPTHS {
        let w = build(&params(Unload, depth), true).unwrap();
        let log = matches(&w);
        let got: Vec<(u32, Queue, usize, usize)> = log
            .iter()
            .filter(|m| m.rank == 0 && m.tag != GO_TAG)
            .map(|m| (m.tag, m.queue, m.position, m.depth))
            .collect();
        let want: Vec<(u32, Queue, usize, usize)> = (1..=depth)
            .rev()
            .map(|k| (k, Queue::Posted, k as usize, k as usize))
            .collect();
        assert_eq!(got, want);
        assert!(w.notes.is_empty());
    }
}

/// With several senders each sender's part of the PRQ is unloaded last one first, and
/// the position the checker reports is the receive's place in the whole queue.
#[test]
fn unload_with_several_senders_unloads_each_senders_part_backwards() {
    for sources in [Sources::Uniform, Sources::Skewed] {
        let mut p = params(Unload, 300);
        p.ranks = 5;
        p.sources = sources;
        let w = build(&p, true).unwrap();
        let mut queue: Vec<(u32, usize)> = (1..=300).map(|k| (k, sources.source(k, 5))).collect();
        let log = matches(&w);
        let unloads: Vec<&Match> = log
            .iter()
            .filter(|m| m.rank == 0 && m.tag != GO_TAG)
            .collect();
        assert_eq!(unloads.len(), 300);
        for m in unloads {
            let k = queue.iter().position(|e| e.0 == m.tag).unwrap();
            let last_of_its_source = queue.iter().rposition(|e| e.1 == m.src).unwrap();
            assert_eq!(k, last_of_its_source, "{sources:?} tag {}", m.tag);
            assert_eq!((m.position, m.depth), (k + 1, queue.len()));
            queue.remove(k);
        }
    }
}

#[test]
fn skewed_sources_send_nine_in_ten_from_rank_1() {
    let mut count = [0; 4];
    for k in 1..=1000 {
        count[Sources::Skewed.source(k, 4)] += 1;
    }
    assert_eq!(count, [0, 900, 50, 50]);
    let mut count = [0; 4];
    for k in 1..=999 {
        count[Sources::Uniform.source(k, 4)] += 1;
    }
    assert_eq!(count, [0, 333, 333, 333]);
}

#[test]
fn unexpected_receive_searches_to_its_position() {
    for depth in DEPTHS {
        for (position, iterations) in [(depth, 1), (1, 1), (depth.div_ceil(2), 3)] {
            let mut p = params(Unexpected, depth);
            p.position = position;
            p.iterations = iterations;
            let w = build(&p, true).unwrap();
            let log = matches(&w);
            let queued = (depth + iterations - 1) as usize;
            // Rank 0 takes nothing before the ready message, by when all are queued.
            assert_eq!(log[0].tag, READY_TAG);
            for i in 0..iterations {
                let m = tagged(&log, 0, position + i)[0];
                let want = (Queue::Unexpected, position as usize, queued - i as usize);
                assert_eq!(
                    (m.queue, m.position, m.depth),
                    want,
                    "{depth} {position} {i}"
                );
            }
            let drain = log.iter().filter(|m| m.tag > 0).count() - iterations as usize;
            assert_eq!(drain, depth as usize - 1);
        }
    }
}

#[test]
fn refusals_say_what_is_expected() {
    let err = |p: QueueParams| build(&p, true).unwrap_err();
    assert_eq!(err(params(Preposted, 0)), "depth must be 1 to 32768, not 0");
    assert_eq!(
        err(params(Unload, MAX_DEPTH + 1)),
        "depth must be 1 to 32768, not 32769"
    );
    let mut p = params(Unexpected, 8);
    p.position = 9;
    assert_eq!(err(p), "position must be 1 to depth (8), not 9");
    let mut p = params(Preposted, 8);
    p.ranks = 4;
    assert_eq!(
        err(p),
        "preposted runs on 2 ranks, not 4 (only unload spreads its senders over more)"
    );
    let mut p = params(Unload, 8);
    p.sources = Sources::Skewed;
    assert_eq!(
        err(p),
        "skewed sources need 3 to 4096 ranks (rank 0 and two senders), not 2"
    );
    let mut p = params(Unexpected, MAX_DEPTH);
    p.iterations = 40000;
    assert!(err(p).starts_with("unexpected sends depth + iterations - 1 = 72767 messages"));
    let mut p = params(Unload, 4);
    p.bytes = u64::MAX / 2;
    assert_eq!(
        err(p),
        format!("4 receives of {} bytes pass 2^64 bytes", u64::MAX / 2)
    );
}

/// The largest depth builds (checking it is left to the smaller depths: the checker's
/// queues are lists, like MPICH's).
#[test]
fn the_largest_depth_builds() {
    for bench in [Preposted, Unload, Unexpected] {
        let w = build(&params(bench, MAX_DEPTH), false).unwrap();
        let irecvs = w.ranks[0]
            .calls
            .iter()
            .filter(|c| matches!(c, Call::Irecv { .. }))
            .count();
        assert!(irecvs >= MAX_DEPTH as usize, "{}", w.name);
    }
}
