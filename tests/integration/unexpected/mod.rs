//! A workload shared by the tests of the unexpected queue (`lhs.rs`, `nic.rs`):
//! a run of messages that all arrive before their receives.

use moped::envelope::{Peer, Tag};
use moped::workload::{BufRef, Call, RankProgram, Workload, CTX_PT2PT};

/// Rank 1 sends `bytes` with tags 1 to `n` and then tag 0; rank 0 receives tag 0 first,
/// so the others are all unexpected, and then the tags in `order`.
pub fn out_of_order(n: u32, bytes: u64, order: &[u32]) -> Workload {
    let mut ranks = vec![RankProgram::default(), RankProgram::default()];
    let buf = |b: u16| BufRef::new(b, 0);
    let sb = ranks[1].buffer("send", bytes);
    for t in (1..=n).chain([0]) {
        ranks[1].calls.push(Call::Isend {
            req: t,
            dst: 0,
            tag: t,
            ctx: CTX_PT2PT,
            buf: buf(sb),
            bytes,
        });
    }
    ranks[1].calls.push(Call::Waitall((0..=n).collect()));
    let rb = ranks[0].buffer("recv", bytes);
    for (i, &t) in std::iter::once(&0).chain(order).enumerate() {
        let req = i as u32;
        ranks[0].calls.push(Call::Irecv {
            req,
            src: Peer::Rank(1),
            tag: Tag::Tag(t),
            ctx: CTX_PT2PT,
            buf: buf(rb),
            bytes,
        });
        ranks[0].calls.push(Call::Wait(req));
    }
    Workload {
        name: format!("out-of-order-{n}"),
        ranks,
        notes: vec![],
        origins: None,
    }
}
