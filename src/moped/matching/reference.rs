//! The textbook model of MPI matching, written apart from the table: each receiving
//! process has a posted-receive queue and an unexpected-message queue, both searched from
//! the front. Arrivals wait in a pending queue until [`Matcher::step`]
//! handles the next, so the model can lag arrivals exactly as the state machine does.

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
