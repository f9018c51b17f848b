//! MPI matching at the matching MOPED (paper, section 4.2), and backoff's revocation of
//! unmatched descriptors (section 4.4).
//!
//! The matching state machine takes the first descriptor that needs a match check and
//! walks the table for a partner. Two descriptors match when they come from the same
//! program, one is a send and the other a receive, their contexts are equal, the send goes
//! to the receiver's rank, and the receive's source and tag are the send's or wildcards.
//!
//! Matching works on the copies forwarded to this MOPED (entries without the Reserved
//! bit); a MOPED that is its own descriptor's matching MOPED forwards a copy to itself.
//!
//! Descriptors are checked in arrival order (their `seq`), and each is compared only with
//! descriptors already checked, earliest first: that is MPI's posted-receive and
//! unexpected-message queue discipline, so messages between a pair of processes do not
//! overtake one another when their descriptors arrive in posting order. [`reference`] is
//! that textbook model, kept as the oracle for tests.

use crate::envelope::{Kind, Peer, Tag};

use super::desc::{DescTable, Descriptor, MATCHED, NEEDS_MATCH, RESERVED, VALID};
use super::ports::PortError;

/// One step of the matching state machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Search {
    /// Entries compared with the checked descriptor, the partner included: the
    /// "match search length" statistic.
    pub searched: usize,
    /// The (send, receive) entry indices paired, now both Matched.
    pub matched: Option<(u8, u8)>,
}

/// Checks the earliest descriptor that needs a match, pairing it with the earliest
/// checked, unmatched descriptor it matches. `None` when no descriptor needs a check.
///
/// Only checked descriptors are candidates: a later arrival gets its own check, and
/// pairing it early could steal it from an earlier descriptor that also matches it.
/// Links are left alone: the matched copies' links still name the originals.
pub fn search(table: &mut DescTable) -> Option<Search> {
    let (index, probe) = first_needing_match(table)?;
    if let Some(desc) = table.get_mut(index) {
        desc.status &= !NEEDS_MATCH;
    }
    let partner = table
        .iter()
        .filter(|&(i, d)| i != index && is_candidate(d) && matches(&probe, d))
        .min_by_key(|(_, d)| d.seq)
        .map(|(i, d)| (i, d.seq));
    let last_seq = partner.map_or(u64::MAX, |(_, seq)| seq);
    let searched = table
        .iter()
        .filter(|&(i, d)| i != index && is_candidate(d) && d.seq <= last_seq)
        .count();
    let matched = partner.map(|(other, _)| pair(table, index, other, &probe));
    Some(Search { searched, matched })
}

/// Removes an unmatched descriptor (backoff's revocation), returning it. Matched ones
/// stay: the copy will finish them.
pub fn revoke(table: &mut DescTable, index: u8) -> Result<Descriptor, PortError> {
    if table.entry_mut(index)?.is_matched() {
        return Err(PortError::AlreadyMatched { index });
    }
    table.free(index).ok_or(PortError::Free { index })
}

fn first_needing_match(table: &DescTable) -> Option<(u8, Descriptor)> {
    table
        .iter()
        .filter(|(_, d)| is_copy(d) && d.has(NEEDS_MATCH) && !d.is_matched())
        .min_by_key(|(_, d)| d.seq)
        .map(|(i, d)| (i, *d))
}

/// A copy forwarded for matching, already checked, not yet matched.
fn is_candidate(desc: &Descriptor) -> bool {
    is_copy(desc) && !desc.has(NEEDS_MATCH) && !desc.is_matched()
}

/// Matching sees only forwarded copies: a process's own reservation in the same table is
/// matched through its copy, so it must not be matched a second time.
fn is_copy(desc: &Descriptor) -> bool {
    desc.has(VALID) && !desc.has(RESERVED)
}

/// Marks both Matched; returns them as (send, receive).
fn pair(table: &mut DescTable, index: u8, other: u8, probe: &Descriptor) -> (u8, u8) {
    for i in [index, other] {
        if let Some(desc) = table.get_mut(i) {
            desc.status = (desc.status | MATCHED) & !NEEDS_MATCH;
        }
    }
    match probe.kind {
        Some(Kind::Send) => (index, other),
        _ => (other, index),
    }
}

/// MPI's matching rule between two descriptors, in either order.
pub fn matches(a: &Descriptor, b: &Descriptor) -> bool {
    let (send, recv) = match (a.kind, b.kind) {
        (Some(Kind::Send), Some(Kind::Recv)) => (a, b),
        (Some(Kind::Recv), Some(Kind::Send)) => (b, a),
        _ => return false,
    };
    send.program == recv.program
        && send.context == recv.context
        && send.peer == Peer::Rank(recv.rank)
        && (recv.peer == Peer::Any || recv.peer == Peer::Rank(send.rank))
        && (recv.tag == Tag::Any || recv.tag == send.tag)
}

/// The textbook model of MPI matching, written apart from the table: each receiving
/// process has a posted-receive queue and an unexpected-message queue, both searched from
/// the front. Arrivals wait in a pending queue until [`reference::Matcher::step`]
/// handles the next, so the model can lag arrivals exactly as the state machine does.
pub mod reference {
    use std::collections::{BTreeMap, VecDeque};

    use crate::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag};
    use crate::moped::ports::PortError;

    /// A send or receive, named by a caller-chosen `id`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Post {
        pub id: u64,
        pub program: ProgramId,
        pub rank: Rank,
        pub envelope: Envelope,
    }

    #[derive(Clone, Debug, Default)]
    struct Queues {
        posted: VecDeque<Post>,
        unexpected: VecDeque<Post>,
    }

    #[derive(Clone, Debug, Default)]
    pub struct Matcher {
        pending: VecDeque<Post>,
        /// Keyed by the receiving process: (program, rank).
        queues: BTreeMap<(ProgramId, Rank), Queues>,
    }

    impl Matcher {
        pub fn new() -> Matcher {
            Matcher::default()
        }

        /// Queues an arrival; an envelope the ports would refuse is an error.
        pub fn arrive(&mut self, post: Post) -> Result<(), PortError> {
            post.envelope.check()?;
            self.pending.push_back(post);
            Ok(())
        }

        /// Handles the earliest pending arrival: `Some(Some((send id, receive id)))` when
        /// it matched, `Some(None)` when it was queued, `None` when nothing was pending.
        pub fn step(&mut self) -> Option<Option<(u64, u64)>> {
            let post = self.pending.pop_front()?;
            Some(match post.envelope.kind {
                Kind::Send => self.deliver_send(post),
                Kind::Recv => self.post_recv(post),
            })
        }

        /// Removes a pending or queued post; false when it is matched or unknown.
        pub fn revoke(&mut self, id: u64) -> bool {
            let queues = self
                .queues
                .values_mut()
                .flat_map(|q| [&mut q.posted, &mut q.unexpected]);
            for queue in std::iter::once(&mut self.pending).chain(queues) {
                if let Some(at) = queue.iter().position(|p| p.id == id) {
                    queue.remove(at);
                    return true;
                }
            }
            false
        }

        fn deliver_send(&mut self, send: Post) -> Option<(u64, u64)> {
            let Peer::Rank(dest) = send.envelope.peer else {
                return None;
            };
            let queues = self.queues.entry((send.program, dest)).or_default();
            match queues.posted.iter().position(|recv| accepts(recv, &send)) {
                Some(at) => queues.posted.remove(at).map(|recv| (send.id, recv.id)),
                None => {
                    queues.unexpected.push_back(send);
                    None
                }
            }
        }

        fn post_recv(&mut self, recv: Post) -> Option<(u64, u64)> {
            let queues = self.queues.entry((recv.program, recv.rank)).or_default();
            match queues
                .unexpected
                .iter()
                .position(|send| accepts(&recv, send))
            {
                Some(at) => queues.unexpected.remove(at).map(|send| (send.id, recv.id)),
                None => {
                    queues.posted.push_back(recv);
                    None
                }
            }
        }
    }

    /// Whether a receive accepts a send already routed to the receiver's queues.
    fn accepts(recv: &Post, send: &Post) -> bool {
        let (r, s) = (&recv.envelope, &send.envelope);
        r.context == s.context
            && match r.peer {
                Peer::Any => true,
                Peer::Rank(source) => source == send.rank,
            }
            && match r.tag {
                Tag::Any => true,
                tag => tag == s.tag,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::reference::{Matcher, Post};
    use super::*;
    use crate::envelope::{Envelope, Rank};
    use crate::moped::desc::{ACTIVE, COMPLETED};
    use crate::moped::DescId;

    fn env(kind: Kind, peer: Peer, context: u16, tag: Tag) -> Envelope {
        Envelope {
            kind,
            peer,
            context,
            tag,
        }
    }

    fn send(to: Rank, tag: u32) -> Envelope {
        env(Kind::Send, Peer::Rank(to), 0, Tag::Tag(tag))
    }

    fn recv(from: Peer, tag: Tag) -> Envelope {
        env(Kind::Recv, from, 0, tag)
    }

    /// Forwards a descriptor of `rank` in program 0 to the table.
    fn arrive(table: &mut DescTable, rank: Rank, envelope: Envelope) -> u8 {
        let desc = Descriptor::complete(0, rank, 0x1000, envelope, 0, 8).unwrap();
        table.insert_forwarded(desc).unwrap()
    }

    fn drain(table: &mut DescTable) -> Vec<(u8, u8)> {
        std::iter::from_fn(|| search(table))
            .filter_map(|s| s.matched)
            .collect()
    }

    #[test]
    fn a_send_and_its_receive_match_either_way_round() {
        let mut table = DescTable::new(8).unwrap();
        assert_eq!(search(&mut table), None);
        let s = arrive(&mut table, 1, send(2, 5));
        table.get_mut(s).unwrap().link = Some(DescId { moped: 3, index: 4 });
        assert_eq!(
            search(&mut table),
            Some(Search {
                searched: 0,
                matched: None
            })
        );
        assert_eq!(table.get(s).unwrap().status, VALID);
        let r = arrive(&mut table, 2, recv(Peer::Rank(1), Tag::Tag(5)));
        assert_eq!(
            search(&mut table),
            Some(Search {
                searched: 1,
                matched: Some((s, r))
            })
        );
        assert_eq!(search(&mut table), None);
        for i in [s, r] {
            assert_eq!(table.get(i).unwrap().status, VALID | MATCHED);
        }
        assert_eq!(
            table.get(s).unwrap().link,
            Some(DescId { moped: 3, index: 4 })
        );

        let mut table = DescTable::new(8).unwrap();
        let r = arrive(&mut table, 2, recv(Peer::Any, Tag::Any));
        let s = arrive(&mut table, 1, send(2, 5));
        assert_eq!(drain(&mut table), [(s, r)]);
    }

    #[test]
    fn reservations_are_matched_only_through_their_copies() {
        let mut table = DescTable::new(8).unwrap();
        let local = table.reserve(0, 1, 0x1000).unwrap();
        for payload in [send(2, 5).encode().unwrap(), 0, 8] {
            table.store_field(local, payload).unwrap();
        }
        let r = arrive(&mut table, 2, recv(Peer::Any, Tag::Any));
        assert_eq!(drain(&mut table), []);
        table.get_mut(local).unwrap().status |= NEEDS_MATCH;
        assert_eq!(drain(&mut table), []);
        let copy = *table.get(local).unwrap();
        let s = table.insert_forwarded(copy).unwrap();
        assert_eq!(drain(&mut table), [(s, r)]);
        assert!(!table.get(local).unwrap().is_matched());
    }

    #[test]
    fn each_rule_of_matching_is_needed() {
        let base = Descriptor::complete(0, 2, 0, recv(Peer::Rank(1), Tag::Tag(5)), 0, 8).unwrap();
        let sender = Descriptor::complete(0, 1, 0, send(2, 5), 0, 8).unwrap();
        assert!(matches(&base, &sender) && matches(&sender, &base));
        let mut other_program = sender;
        other_program.program = 1;
        let mut other_context = sender;
        other_context.context = 1;
        let mut other_dest = sender;
        other_dest.peer = Peer::Rank(3);
        let mut other_source = sender;
        other_source.rank = 3;
        let mut other_tag = sender;
        other_tag.tag = Tag::Tag(6);
        let mut no_envelope = sender;
        no_envelope.kind = None;
        for s in [
            other_program,
            other_context,
            other_dest,
            other_source,
            other_tag,
        ] {
            assert!(!matches(&base, &s) && !matches(&s, &base), "{s:?}");
        }
        assert!(!matches(&base, &no_envelope));
        assert!(!matches(&sender, &sender) && !matches(&base, &base));
        let mut wild = base;
        (wild.peer, wild.tag) = (Peer::Any, Tag::Any);
        for s in [other_source, other_tag] {
            assert!(matches(&wild, &s));
        }
    }

    #[test]
    fn a_later_arrival_never_takes_an_earlier_receives_send() {
        // W is checked before Z arrives; X arrives between them. Z belongs to W, the first
        // receive posted that matches it, even though X is checked after Z arrived.
        let mut table = DescTable::new(8).unwrap();
        let w = arrive(&mut table, 2, recv(Peer::Rank(1), Tag::Tag(5)));
        assert_eq!(drain(&mut table), []);
        let x = arrive(&mut table, 2, recv(Peer::Any, Tag::Tag(5)));
        let z = arrive(&mut table, 1, send(2, 5));
        assert_eq!(drain(&mut table), [(z, w)]);
        assert!(!table.get(x).unwrap().is_matched());
    }

    #[test]
    fn searched_counts_candidates_up_to_the_partner() {
        let mut table = DescTable::new(8).unwrap();
        arrive(&mut table, 2, recv(Peer::Rank(3), Tag::Any));
        let r = arrive(&mut table, 2, recv(Peer::Rank(1), Tag::Any));
        arrive(&mut table, 2, recv(Peer::Rank(1), Tag::Any));
        assert_eq!(drain(&mut table), []);
        let s = arrive(&mut table, 1, send(2, 0));
        let step = search(&mut table).unwrap();
        assert_eq!(step.matched, Some((s, r)));
        assert_eq!(step.searched, 2);
        arrive(&mut table, 3, send(2, 0));
        assert_eq!(search(&mut table).unwrap().searched, 1);
        arrive(&mut table, 3, send(1, 0));
        assert_eq!(search(&mut table).unwrap().searched, 1);
    }

    #[test]
    fn revoke_removes_only_unmatched_descriptors() {
        let mut table = DescTable::new(8).unwrap();
        let s = arrive(&mut table, 1, send(2, 5));
        let r = arrive(&mut table, 2, recv(Peer::Any, Tag::Any));
        let pending = arrive(&mut table, 3, send(2, 5));
        drain(&mut table);
        let waiting = arrive(&mut table, 3, send(2, 6));
        for index in [s, r] {
            assert_eq!(
                revoke(&mut table, index),
                Err(PortError::AlreadyMatched { index })
            );
        }
        for status in [ACTIVE, COMPLETED] {
            table.get_mut(s).unwrap().status = VALID | status;
            assert!(revoke(&mut table, s).is_err());
        }
        assert_eq!(revoke(&mut table, pending).map(|d| d.rank), Ok(3));
        assert_eq!(revoke(&mut table, waiting).map(|d| d.tag), Ok(Tag::Tag(6)));
        assert_eq!(
            revoke(&mut table, pending),
            Err(PortError::Free { index: pending })
        );
        assert!(matches!(
            revoke(&mut table, 8),
            Err(PortError::IndexOutOfRange { .. })
        ));
        assert_eq!(search(&mut table), None);
        assert_eq!(table.occupied(), 2);
    }

    #[test]
    fn the_reference_model_follows_the_two_queues() {
        let post = |id, rank, envelope| Post {
            id,
            program: 0,
            rank,
            envelope,
        };
        let mut model = Matcher::new();
        assert!(model
            .arrive(post(9, 1, env(Kind::Send, Peer::Any, 0, Tag::Tag(1))))
            .is_err());
        model
            .arrive(post(0, 2, recv(Peer::Rank(1), Tag::Tag(5))))
            .unwrap();
        model
            .arrive(post(1, 2, recv(Peer::Any, Tag::Tag(5))))
            .unwrap();
        model.arrive(post(2, 1, send(2, 5))).unwrap();
        model.arrive(post(3, 1, send(2, 5))).unwrap();
        model.arrive(post(4, 1, send(2, 5))).unwrap();
        assert!(model.revoke(4));
        let steps: Vec<_> = std::iter::from_fn(|| model.step()).collect();
        assert_eq!(steps, [None, None, Some((2, 0)), Some((3, 1))]);
        assert!(!model.revoke(0) && !model.revoke(4));
    }
}
