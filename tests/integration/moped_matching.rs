//! Every matching engine against the textbook two-queue model of MPI matching: random
//! arrivals with wildcards, several programs and contexts, lagging checks and revocations
//! must pair the same descriptors in the same order. The engines run with small fast
//! levels (4 CAM entries or cells, 4 hash buckets, 2 lists for the two-level queues'
//! second level is as configured) so overflow, refill and the lists are exercised.

use moped::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag};
use moped::moped::desc::{DescIndex, DescTable, Descriptor};
use moped::moped::matching::reference::{Matcher, Post};
use moped::moped::matching::{MatchUnit, MatcherKind, MatchingParams};
use moped::moped::ports::PortError;
use moped::moped::DescId;
use proptest::prelude::*;
use proptest::sample::Index;

/// One thing that happens at the matching MOPED.
#[derive(Clone, Debug)]
enum Event {
    /// A complete descriptor is forwarded here.
    Arrive(ProgramId, Rank, Envelope),
    /// Up to this many checks.
    Search(u8),
    /// Checks until no arrival waits.
    Drain,
    /// Backoff revokes a descriptor (refused when it is matched).
    Revoke(Index),
    /// A matched pair finishes copying and leaves the table.
    Complete(Index),
}

/// Small fast levels, so a few dozen arrivals reach the engines' second levels.
fn small() -> MatchingParams {
    MatchingParams {
        cam_entries: 4,
        list_entries: 48,
        alpu_cells: 4,
        hash_buckets: 4,
        ..MatchingParams::default()
    }
}

/// The matching MOPED's table and engine beside the model, fed the same events.
struct Pair {
    table: DescTable,
    unit: MatchUnit,
    model: Matcher,
    arrivals: u16,
    /// Matched (send, receive) entries still in the table.
    matched: Vec<(DescIndex, DescIndex)>,
    /// Every pair matched, as (send, receive) arrival numbers.
    log: Vec<(u64, u64)>,
}

impl Pair {
    fn new(kind: MatcherKind) -> Pair {
        Pair {
            table: DescTable::new(256).unwrap(),
            unit: MatchUnit::new(kind, &small()),
            model: Matcher::new(),
            arrivals: 0,
            matched: Vec::new(),
            log: Vec::new(),
        }
    }

    /// The arrival number of an entry, carried in its link as the forwarder's ID would be.
    fn id_of(&self, index: DescIndex) -> u64 {
        self.table.get(index).unwrap().link.unwrap().index as u64
    }

    fn arrive(&mut self, program: ProgramId, rank: Rank, envelope: Envelope) -> u64 {
        let id = self.arrivals as u64;
        self.arrivals += 1;
        let mut desc = Descriptor::complete(program, rank, 0x1000, envelope, 0x4000, 64).unwrap();
        desc.link = Some(DescId {
            moped: 0,
            index: id as DescIndex,
        });
        self.unit.arrive(&mut self.table, desc).unwrap();
        let post = Post {
            id,
            program,
            rank,
            envelope,
        };
        self.model.arrive(post).unwrap();
        id
    }

    /// One check in both; false when neither had anything to check.
    fn step(&mut self) -> bool {
        let got = self.unit.step(&mut self.table);
        let want = self.model.step();
        let kind = self.unit.kind();
        let got_ids = got.map(|s| s.matched.map(|(sd, rv)| (self.id_of(sd), self.id_of(rv))));
        if let Some(refused) = got.and_then(|s| s.refused) {
            // The engine was full: the copy left, as a refused forward would.
            let id = refused.link.unwrap().index as u64;
            assert_eq!(
                want,
                Some(None),
                "{kind}: refused {id} but the model matched it"
            );
            assert!(self.model.revoke(id), "{kind}: model lost {id}");
            return true;
        }
        assert_eq!(got_ids, want, "{kind} and the model disagree");
        if let Some(Some((send, recv))) = got.map(|s| s.matched) {
            self.matched.push((send, recv));
            self.log.extend(want.flatten());
        }
        got.is_some()
    }

    fn drain(&mut self) {
        while self.step() {}
    }

    fn apply(&mut self, event: &Event) {
        match *event {
            Event::Arrive(program, rank, envelope) => {
                self.arrive(program, rank, envelope);
            }
            Event::Search(steps) => {
                for _ in 0..steps {
                    self.step();
                }
            }
            Event::Drain => self.drain(),
            Event::Revoke(pick) => {
                let occupied: Vec<DescIndex> = self.table.iter().map(|(i, _)| i).collect();
                if !occupied.is_empty() {
                    self.revoke(*pick.get(&occupied));
                }
            }
            Event::Complete(pick) => self.complete(pick),
        }
    }

    /// Revokes the entry at `index` in both, which must agree on whether it is matched.
    fn revoke(&mut self, index: DescIndex) {
        let id = self.id_of(index);
        let was_matched = self.table.get(index).unwrap().is_matched();
        match self.unit.revoke(&mut self.table, index) {
            Ok(_) => assert!(self.model.revoke(id), "model had matched {id}"),
            Err(PortError::AlreadyMatched { .. }) => {
                assert!(was_matched);
                assert!(!self.model.revoke(id), "model had {id} unmatched");
            }
            Err(err) => panic!("revoke {index}: {err}"),
        }
    }

    fn complete(&mut self, pick: Index) {
        if self.matched.is_empty() {
            return;
        }
        let (send, recv) = self.matched.remove(pick.index(self.matched.len()));
        self.table.free(send).unwrap();
        self.table.free(recv).unwrap();
    }
}

/// A tiny domain, so matches, wildcards and non-overtaking conflicts are common.
fn envelope() -> impl Strategy<Value = Envelope> {
    let wild_peer = prop_oneof![3 => (0..4u16).prop_map(Peer::Rank), 1 => Just(Peer::Any)];
    let wild_tag = prop_oneof![3 => (0..4u32).prop_map(Tag::Tag), 1 => Just(Tag::Any)];
    let send = (0..4u16, 0..3u16, 0..4u32).prop_map(|(to, context, tag)| Envelope {
        kind: Kind::Send,
        peer: Peer::Rank(to),
        context,
        tag: Tag::Tag(tag),
    });
    let recv = (wild_peer, 0..3u16, wild_tag).prop_map(|(peer, context, tag)| Envelope {
        kind: Kind::Recv,
        peer,
        context,
        tag,
    });
    prop_oneof![send, recv]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        8 => (0..2u8, 0..4u16, envelope()).prop_map(|(p, r, e)| Event::Arrive(p, r, e)),
        2 => (1..4u8).prop_map(Event::Search),
        1 => Just(Event::Drain),
        1 => any::<Index>().prop_map(Event::Revoke),
        1 => any::<Index>().prop_map(Event::Complete),
    ]
}

/// Applies `events` to `kind` and the model, which must agree throughout.
fn follows_the_model(kind: MatcherKind, events: &[Event]) {
    let mut pair = Pair::new(kind);
    for event in events {
        pair.apply(event);
    }
    pair.drain();
    assert_eq!(pair.table.occupied(), pair.table.iter().count());
    let matched = 2 * pair.matched.len();
    assert_eq!(
        pair.unit.queued() + matched,
        pair.table.occupied(),
        "{kind}"
    );
}

macro_rules! differential {
    ($($name:ident => $kind:expr;)*) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(10_000))]
            $(
                #[test]
                fn $name(events in prop::collection::vec(event(), 0..64)) {
                    follows_the_model($kind, &events);
                }
            )*
        }
    };
}

differential! {
    fsm_follows_the_two_queue_model => MatcherKind::Fsm;
    cam_follows_the_two_queue_model => MatcherKind::Cam;
    cam4_follows_the_two_queue_model => MatcherKind::Cam4;
    cam64_follows_the_two_queue_model => MatcherKind::Cam64;
    alpu_follows_the_two_queue_model => MatcherKind::Alpu;
    hash_follows_the_two_queue_model => MatcherKind::Hash;
    microcoded_follows_the_two_queue_model => MatcherKind::Microcoded;
}

fn send(to: Rank, tag: u32) -> Envelope {
    Envelope {
        kind: Kind::Send,
        peer: Peer::Rank(to),
        context: 0,
        tag: Tag::Tag(tag),
    }
}

fn recv(from: Peer, tag: Tag) -> Envelope {
    Envelope {
        kind: Kind::Recv,
        peer: from,
        context: 0,
        tag,
    }
}

/// Arrivals of program 0, drained after every `lag` arrivals; the matched pairs' ids,
/// the same from every engine.
fn run(arrivals: &[(Rank, Envelope)], lag: usize) -> Vec<(u64, u64)> {
    let logs: Vec<_> = MatcherKind::ALL
        .into_iter()
        .map(|kind| {
            let mut pair = Pair::new(kind);
            for (n, &(rank, envelope)) in arrivals.iter().enumerate() {
                pair.arrive(0, rank, envelope);
                if (n + 1) % lag == 0 {
                    pair.drain();
                }
            }
            pair.drain();
            pair.log
        })
        .collect();
    assert!(logs.windows(2).all(|w| w[0] == w[1]), "{logs:?}");
    logs[0].clone()
}

#[test]
fn wildcards_take_sends_in_arrival_order() {
    let arrivals = [
        (1, send(0, 7)),
        (2, send(0, 3)),
        (0, recv(Peer::Any, Tag::Tag(3))),
        (0, recv(Peer::Rank(1), Tag::Any)),
        (0, recv(Peer::Any, Tag::Any)),
        (3, send(0, 9)),
    ];
    for lag in 1..=arrivals.len() {
        assert_eq!(run(&arrivals, lag), [(1, 2), (0, 3), (5, 4)], "lag {lag}");
    }
}

#[test]
fn the_first_send_wins_a_receive_both_match() {
    let arrivals = [
        (1, send(0, 5)),
        (1, send(0, 5)),
        (0, recv(Peer::Rank(1), Tag::Tag(5))),
    ];
    for lag in 1..=3 {
        assert_eq!(run(&arrivals, lag), [(0, 2)], "lag {lag}");
    }
    // Non-overtaking across wildcards: the receive for any tag still takes the first send.
    let arrivals = [
        (1, send(0, 5)),
        (1, send(0, 6)),
        (0, recv(Peer::Rank(1), Tag::Tag(6))),
        (0, recv(Peer::Any, Tag::Any)),
    ];
    for lag in 1..=4 {
        assert_eq!(run(&arrivals, lag), [(1, 2), (0, 3)], "lag {lag}");
    }
}

#[test]
fn the_first_posted_receive_wins_a_send_both_match() {
    let arrivals = [
        (0, recv(Peer::Rank(1), Tag::Tag(5))),
        (0, recv(Peer::Any, Tag::Any)),
        (1, send(0, 5)),
    ];
    for lag in 1..=3 {
        assert_eq!(run(&arrivals, lag), [(2, 0)], "lag {lag}");
    }
    let arrivals = [
        (0, recv(Peer::Any, Tag::Any)),
        (0, recv(Peer::Rank(1), Tag::Tag(5))),
        (1, send(0, 5)),
        (1, send(0, 5)),
    ];
    for lag in 1..=4 {
        assert_eq!(run(&arrivals, lag), [(2, 0), (3, 1)], "lag {lag}");
    }
}

#[test]
fn programs_and_contexts_keep_apart() {
    for kind in MatcherKind::ALL {
        programs_and_contexts_keep_apart_in(kind);
    }
}

fn programs_and_contexts_keep_apart_in(kind: MatcherKind) {
    let mut pair = Pair::new(kind);
    pair.arrive(1, 1, send(0, 5));
    let mut other_context = send(0, 5);
    other_context.context = 1;
    pair.arrive(0, 1, other_context);
    pair.arrive(0, 0, recv(Peer::Any, Tag::Any));
    pair.drain();
    assert!(pair.log.is_empty());
    pair.arrive(0, 1, send(0, 5));
    pair.drain();
    assert_eq!(pair.log, [(3, 2)]);
}

#[test]
fn a_revoked_receive_leaves_its_send_to_the_next() {
    for kind in MatcherKind::ALL {
        a_revoked_receive_leaves_its_send_to_the_next_in(kind);
    }
}

fn a_revoked_receive_leaves_its_send_to_the_next_in(kind: MatcherKind) {
    let mut pair = Pair::new(kind);
    pair.arrive(0, 0, recv(Peer::Any, Tag::Any));
    pair.arrive(0, 0, recv(Peer::Rank(1), Tag::Any));
    pair.drain();
    let first = pair
        .table
        .iter()
        .find(|(_, d)| d.link.map(|l| l.index) == Some(0))
        .map(|(i, _)| i)
        .unwrap();
    pair.revoke(first);
    pair.arrive(0, 1, send(0, 5));
    pair.drain();
    assert_eq!(pair.log, [(2, 1)]);
}

/// The two-level queue's two BRAMs and its data mover work beside the checks: an insertion
/// holds only its own queue's port, so the next check searching the other queue starts at
/// once and one searching the same queue waits a cycle; a refill after a CAM match does
/// not lengthen the match.
#[test]
fn the_two_level_queues_ports_and_mover_work_beside_the_checks() {
    let params = MatchingParams {
        cam_entries: 2,
        ..MatchingParams::default()
    };
    let send = |tag| Envelope {
        kind: Kind::Send,
        peer: Peer::Rank(0),
        context: 0,
        tag: Tag::Tag(tag),
    };
    let recv = |tag| Envelope {
        kind: Kind::Recv,
        peer: Peer::Rank(1),
        context: 0,
        tag: Tag::Tag(tag),
    };
    let setup = |posted: &[u32]| {
        let mut p = Pair::new(MatcherKind::Cam);
        p.unit = MatchUnit::new(MatcherKind::Cam, &params);
        for &t in posted {
            p.arrive(0, 0, recv(t));
            p.step();
        }
        p.unit.quiesce();
        p
    };
    let cycles = |p: &mut Pair, rank, env| {
        p.arrive(0, rank, env);
        p.unit.step(&mut p.table).unwrap().cycles
    };
    // A receive searches the UMQ (1 cycle) and is inserted into the PRQ after it.
    let mut p = setup(&[]);
    assert_eq!(cycles(&mut p, 0, recv(1)), 1);
    // A receive next searches the UMQ at once; a send waits for the PRQ's port.
    let mut q = setup(&[]);
    cycles(&mut q, 0, recv(1));
    assert_eq!(cycles(&mut q, 0, recv(2)), 1);
    assert_eq!(cycles(&mut p, 1, send(1)), 2);
    // A CAM match that makes the mover refill from the list costs the compare alone,
    // as one with nothing to refill does.
    let mut full = setup(&[1, 2, 3]);
    assert_eq!(cycles(&mut full, 1, send(1)), 1);
    let mut fits = setup(&[1, 2]);
    assert_eq!(cycles(&mut fits, 1, send(1)), 1);
}
