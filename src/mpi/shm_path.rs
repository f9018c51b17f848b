//! The shared-memory path: MPICH2 1.2's ch3:shm channel driven by a rank's progress
//! engine. A send is an eager packet (header and data) up to [`shm::EAGER_MAX`], else a
//! rendezvous: request to send (RTS), clear to send (CTS) from the receiver once a receive
//! matches, then the data. Incoming eager and RTS packets are matched against the
//! posted-receive queue; a receive being posted against the unexpected queue; a send to
//! the rank itself goes through the same queues without a packet.

use crate::envelope::Kind;
use crate::envelope::{Peer, Tag};
use crate::workload::ReqId;

use super::layout::Layout;
use super::ops::{load, Mark, Micro};
use super::queues::{entry_word, lh_head_bytes, tag_value, Probe, Search, Unexp};
use super::rank::{OutPkt, Path, Rank, Step, Stream, Task};
use super::shm::{self, PktHeader, PktType};

/// Where a look at the queue from `src` stands: its head slot, the slot's byte count and
/// the packet header words read so far. Steps: 0 load the head index, 1 load the slot's
/// `avail`, 2 load its `num_bytes`, 3 and on the header's four words.
#[derive(Clone, Copy)]
pub(super) struct PollAt {
    pub src: u16,
    pub step: u8,
    pub head: u64,
    pub nb: u64,
    pub w: [u64; 4],
}

impl PollAt {
    /// This look, continued at `step`.
    fn task(self, step: u8) -> Task {
        Task::Poll {
            src: self.src,
            step,
            head: self.head,
            nb: self.nb,
            w: self.w,
        }
    }
}

impl Rank {
    /// Posts request `req` on the shared-memory path.
    pub(super) fn post_shm(&mut self, req: ReqId) -> Result<Step, String> {
        let me = self.me;
        let q = self.reqs.get_mut(&req).ok_or("posting a missing request")?;
        q.path = Path::Shm;
        let q = q.clone();
        match (q.kind, q.peer, q.tag) {
            (Kind::Send, Peer::Rank(dst), Tag::Tag(tag)) => {
                let key = entry_word(Peer::Rank(me), Tag::Tag(tag), q.ctx);
                if dst == me {
                    self.stats.self_sends += 1;
                    self.stack.push(Task::SelfSend { req });
                    self.push_search(true, key);
                    return Ok(Step::Again);
                }
                self.send_packet(req, dst, tag_value(q.tag), q.ctx, q.va, q.bytes);
                Ok(Step::Again)
            }
            (Kind::Recv, src, tag) => {
                self.stack.push(Task::RecvPosted { req });
                self.push_search(false, entry_word(src, tag, q.ctx));
                Ok(Step::Again)
            }
            _ => Err(format!("rank {me}: a send needs a rank and a tag")),
        }
    }

    /// Queues send `req`'s first packet to `dst`: eager with its data, or an RTS.
    fn send_packet(&mut self, req: ReqId, dst: u16, tag: u16, ctx: u16, va: u64, bytes: u64) {
        let eager = bytes + shm::PKT_HEADER <= shm::EAGER_MAX;
        let hdr = PktHeader {
            ty: if eager { PktType::Eager } else { PktType::Rts },
            src: self.me,
            tag,
            ctx,
            bytes,
            sreq: req,
            rreq: 0,
        };
        self.outgoing[dst as usize].push_back(OutPkt {
            header: Some(hdr.encode()),
            data: va,
            len: if eager { bytes } else { 0 },
            sent: 0,
            completes: eager.then_some(req),
        });
        if eager {
            self.stats.eager += 1;
        } else {
            self.stats.rendezvous += 1;
        }
        self.push_task(dst);
    }

    /// Pushes a search of a list (`posted`: the PRQ, else the UMQ) for `key`.
    fn push_search(&mut self, posted: bool, key: u64) {
        self.stack.push(Task::Search {
            posted,
            key,
            i: 0,
            step: 0,
        });
    }

    fn push_task(&mut self, dst: u16) {
        self.stack.push(Task::Push {
            dst,
            step: 0,
            tail: 0,
        });
    }

    /// Step `i` of a pass of the progress engine: first the queues to each destination
    /// with packets waiting, then a look at the queue from each other rank.
    pub(super) fn progress(&mut self, i: usize) -> Step {
        let p = self.outgoing.len();
        if i < p {
            self.stack.push(Task::Progress { i: i + 1 });
            if !self.outgoing[i].is_empty() {
                self.push_task(i as u16);
            }
        } else if i < 2 * p {
            let src = (i - p) as u16;
            self.stack.push(Task::Progress { i: i + 1 });
            if src != self.me {
                self.stack.push(Task::Poll {
                    src,
                    step: 0,
                    head: 0,
                    nb: 0,
                    w: [0; 4],
                });
            }
        }
        Step::Again
    }

    /// Writes the first waiting packet to `dst` into the queue's tail slot: load the tail
    /// index (step 0), the slot's `avail` (step 1), then fill the slot if it is free.
    pub(super) fn push(
        &mut self,
        layout: &Layout,
        dst: u16,
        step: u8,
        tail: u64,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.me;
        let q = layout.queue(me, dst);
        if self.outgoing[dst as usize].is_empty() {
            return Ok(Step::Again);
        }
        match step {
            0 => {
                self.stack.push(Task::Push { dst, step: 1, tail });
                Ok(Step::Issue(load(q + shm::TAIL, 4)))
            }
            1 => {
                let tail = value.ok_or("no tail value")?;
                if tail >= shm::SLOTS {
                    return Err(format!("rank {me}: queue to rank {dst} has tail {tail}"));
                }
                self.stack.push(Task::Push { dst, step: 2, tail });
                Ok(Step::Issue(load(q + shm::slot(tail), 4)))
            }
            _ => {
                if value.ok_or("no avail value")? == shm::FILLED {
                    // The ring is full: the progress engine tries again later.
                    return Ok(Step::Again);
                }
                self.fill_slot(q, dst, tail);
                self.push_task(dst);
                Ok(Step::Again)
            }
        }
    }

    /// Writes as much of the first packet to `dst` as fits into slot `tail` of queue `q`
    /// (its header first, if not yet written) and hands the slot to the reader.
    fn fill_slot(&mut self, q: u64, dst: u16, tail: u64) {
        let Some(pkt) = self.outgoing[dst as usize].front_mut() else {
            return;
        };
        let data = q + shm::slot_data(tail);
        let mut at = data;
        if let Some(h) = pkt.header.take() {
            for w in h {
                self.ops.push_back(Micro::Store {
                    addr: at,
                    size: 8,
                    value: w,
                });
                at += 8;
            }
        }
        let n = (shm::SLOT_DATA - (at - data)).min(pkt.len - pkt.sent);
        if n > 0 {
            self.ops.push_back(Micro::Copy {
                src: pkt.data + pkt.sent,
                dst: at,
                len: n,
            });
        }
        pkt.sent += n;
        let filled = at - data + n;
        let slot = q + shm::slot(tail);
        for (addr, value) in [
            (slot + 4, filled),
            (slot, shm::FILLED),
            (q + shm::TAIL, (tail + 1) % shm::SLOTS),
        ] {
            self.ops.push_back(Micro::Store {
                addr,
                size: 4,
                value,
            });
        }
        if pkt.sent == pkt.len {
            if let Some(r) = pkt.completes {
                self.ops.push_back(Micro::Mark(Mark::SendDone(r)));
            }
            self.outgoing[dst as usize].pop_front();
        }
    }

    /// The stores that hand slot `head` of the queue from `src` back to its writer.
    fn release(&mut self, layout: &Layout, src: u16, head: u64) {
        let q = layout.queue(src, self.me);
        self.ops.push_back(Micro::Store {
            addr: q + shm::slot(head),
            size: 4,
            value: shm::EMPTY,
        });
        self.ops.push_back(Micro::Store {
            addr: q + shm::HEAD,
            size: 4,
            value: (head + 1) % shm::SLOTS,
        });
    }

    /// One step of a look at the queue from `at.src` (see [`PollAt`]).
    pub(super) fn poll(
        &mut self,
        layout: &Layout,
        mut at: PollAt,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let (me, src) = (self.me, at.src);
        let q = layout.queue(src, me);
        match at.step {
            0 => {
                self.stack.push(
                    PollAt {
                        head: 0,
                        nb: 0,
                        ..at
                    }
                    .task(1),
                );
                Ok(Step::Issue(load(q + shm::HEAD, 4)))
            }
            1 => {
                let head = value.ok_or("no head value")?;
                if head >= shm::SLOTS {
                    return Err(format!("rank {me}: queue from rank {src} has head {head}"));
                }
                self.stack.push(PollAt { head, nb: 0, ..at }.task(2));
                Ok(Step::Issue(load(q + shm::slot(head), 4)))
            }
            2 => {
                if value.ok_or("no avail value")? != shm::FILLED {
                    return Ok(Step::Again);
                }
                self.stack.push(PollAt { nb: 0, ..at }.task(3));
                Ok(Step::Issue(load(q + shm::slot(at.head) + 4, 4)))
            }
            3 => self.poll_size(layout, at, value.ok_or("no size value")?),
            4..=7 => {
                let k = (at.step - 4) as usize;
                at.w[k] = value.ok_or("no header value")?;
                if k < 3 {
                    self.stack.push(at.task(at.step + 1));
                    let word = q + shm::slot_data(at.head) + 8 * (k as u64 + 1);
                    return Ok(Step::Issue(load(word, 8)));
                }
                self.on_packet(layout, at)?;
                Ok(Step::Again)
            }
            _ => unreachable!("poll step {}", at.step),
        }
    }

    /// A filled slot holds `nb` bytes: more of a rendezvous payload from its source, or a
    /// packet whose header is read next.
    fn poll_size(&mut self, layout: &Layout, at: PollAt, nb: u64) -> Result<Step, String> {
        let (me, src, head) = (self.me, at.src, at.head);
        if nb > shm::SLOT_DATA {
            return Err(format!(
                "rank {me}: slot {head} from rank {src} holds {nb} bytes"
            ));
        }
        let Some(mut s) = self.incoming[src as usize] else {
            self.stack.push(PollAt { nb, ..at }.task(4));
            let q = layout.queue(src, me);
            return Ok(Step::Issue(load(q + shm::slot_data(head), 8)));
        };
        // More of a rendezvous payload.
        let r = self
            .reqs
            .get(&s.rreq)
            .ok_or("a stream for a missing request")?;
        if s.got + nb > s.total {
            return Err(format!(
                "rank {me}: rendezvous data from rank {src} overruns {} bytes",
                s.total
            ));
        }
        self.ops.push_back(Micro::Copy {
            src: layout.queue(src, me) + shm::slot_data(head),
            dst: r.va + s.got,
            len: nb,
        });
        s.got += nb;
        self.stream_progress(layout, src, head, s);
        Ok(Step::Again)
    }

    /// Records rendezvous payload `s` from `src` after slot `head` was copied out: the
    /// slot goes back, and the receive completes once all its data is in.
    fn stream_progress(&mut self, layout: &Layout, src: u16, head: u64, s: Stream) {
        let finished = s.got == s.total;
        self.incoming[src as usize] = (!finished).then_some(s);
        self.release(layout, src, head);
        if finished {
            self.ops.push_back(Micro::Mark(Mark::RecvDone(s.rreq)));
        }
    }

    /// A packet's header, read whole from slot `at.head`.
    fn on_packet(&mut self, layout: &Layout, at: PollAt) -> Result<(), String> {
        let (me, src, head, w) = (self.me, at.src, at.head, at.w);
        let hdr = PktHeader::decode(w).ok_or_else(|| {
            format!("rank {me}: slot {head} from rank {src} holds no packet header: {w:x?}")
        })?;
        if hdr.src != src {
            return Err(format!(
                "rank {me}: a packet from rank {} in rank {src}'s queue",
                hdr.src
            ));
        }
        match hdr.ty {
            PktType::Eager | PktType::Rts => {
                let nb = at.nb;
                self.stack.push(Task::Incoming { src, head, nb, hdr });
                self.push_search(
                    true,
                    entry_word(Peer::Rank(src), Tag::Tag(hdr.tag.into()), hdr.ctx),
                );
            }
            PktType::Cts => self.on_cts(layout, src, head, hdr)?,
            PktType::RndvData => self.on_rndv_data(layout, at, hdr)?,
        }
        Ok(())
    }

    /// A CTS for send `hdr.sreq`: its data follows, headed for receive `hdr.rreq`.
    fn on_cts(
        &mut self,
        layout: &Layout,
        src: u16,
        head: u64,
        hdr: PktHeader,
    ) -> Result<(), String> {
        let me = self.me;
        let sreq = hdr.sreq;
        let s = self
            .reqs
            .get(&sreq)
            .ok_or_else(|| format!("rank {me}: clear-to-send for missing request {sreq}"))?;
        let data = PktHeader {
            ty: PktType::RndvData,
            src: me,
            tag: 0,
            ctx: 0,
            bytes: s.bytes,
            sreq,
            rreq: hdr.rreq,
        };
        self.outgoing[src as usize].push_back(OutPkt {
            header: Some(data.encode()),
            data: s.va,
            len: s.bytes,
            sent: 0,
            completes: Some(sreq),
        });
        self.release(layout, src, head);
        Ok(())
    }

    /// The first slot of a rendezvous payload: what follows the header is data.
    fn on_rndv_data(&mut self, layout: &Layout, at: PollAt, hdr: PktHeader) -> Result<(), String> {
        let (me, src, head) = (self.me, at.src, at.head);
        let r = self
            .reqs
            .get(&hdr.rreq)
            .ok_or_else(|| format!("rank {me}: data for missing request {}", hdr.rreq))?;
        let first = at.nb.saturating_sub(shm::PKT_HEADER).min(hdr.bytes);
        self.ops.push_back(Micro::Copy {
            src: layout.queue(src, me) + shm::slot_data(head) + shm::PKT_HEADER,
            dst: r.va,
            len: first,
        });
        let s = Stream {
            rreq: hdr.rreq,
            total: hdr.bytes,
            got: first,
        };
        self.stream_progress(layout, src, head, s);
        Ok(())
    }

    /// One step of a search of the PRQ or UMQ.
    pub(super) fn search(
        &mut self,
        layout: &Layout,
        s: Search,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let probe = self
            .queues
            .search_step(layout, self.me, s, value, &mut self.ops)?;
        if s.step == 1 {
            let matched = matches!(probe, Probe::Done) && self.queues.found.is_some();
            self.flush_passed(layout, s, matched);
        }
        let again = |step| Task::Search {
            posted: s.posted,
            key: s.key,
            i: s.i,
            step,
        };
        match probe {
            Probe::Load(at) => {
                if let Some(prefetch) = self.search_prefetch(layout, s, at) {
                    self.stack.push(again(2));
                    return Ok(Step::Issue(prefetch));
                }
                self.stats.list_searched += 1;
                self.stack.push(again(1));
                Ok(Step::Issue(load(at, 8)))
            }
            Probe::Vl(addr) => {
                self.stats.list_searched += 1;
                self.stack.push(again(1));
                let window = layout
                    .nic
                    .as_ref()
                    .ok_or("a VL read without a NIC")?
                    .window(self.me);
                self.push_vl(addr, crate::nic::HEADER_BYTES, Some(window));
                Ok(Step::Again)
            }
            Probe::Next => {
                self.stack.push(Task::Search {
                    posted: s.posted,
                    key: s.key,
                    i: s.i + 1,
                    step: 0,
                });
                Ok(Step::Again)
            }
            Probe::Done => {
                // Entries read: up to the one found (LH holes included), or all of them.
                let depth = if self.queues.found.is_some() {
                    s.i + 1
                } else {
                    s.i
                };
                self.stats.depths[usize::from(!s.posted)].sample(depth as i64);
                Ok(Step::Again)
            }
        }
    }

    /// An eager or RTS packet from `src` in slot `head`, after the posted-receive queue
    /// was searched: delivered to the receive found, or queued as unexpected.
    pub(super) fn incoming(
        &mut self,
        layout: &Layout,
        src: u16,
        head: u64,
        nb: u64,
        hdr: PktHeader,
    ) -> Result<Step, String> {
        let me = self.me;
        let matched = match self.queues.found.take() {
            Some(i) => match self.queues.unlink(layout, true, i, &mut self.ops).what {
                Unexp::Posted(r) => Some(r),
                other => return Err(format!("rank {me}: posted list holds {other:?}")),
            },
            None => None,
        };
        let Some(r) = matched else {
            self.unexpected_packet(layout, src, head, hdr)?;
            return Ok(Step::Again);
        };
        let rq = self
            .reqs
            .get(&r)
            .ok_or("a posted receive without request")?;
        if hdr.bytes > rq.bytes {
            return Err(self.truncated(src, hdr.tag, hdr.bytes, rq.bytes));
        }
        match hdr.ty {
            PktType::Eager => {
                if nb != shm::PKT_HEADER + hdr.bytes {
                    return Err(format!(
                        "rank {me}: eager slot from rank {src} holds {nb} bytes"
                    ));
                }
                let payload = layout.queue(src, me) + shm::slot_data(head) + shm::PKT_HEADER;
                self.ops.push_back(Micro::Copy {
                    src: payload,
                    dst: rq.va,
                    len: hdr.bytes,
                });
                self.release(layout, src, head);
                self.ops.push_back(Micro::Mark(Mark::RecvDone(r)));
            }
            PktType::Rts => {
                self.send_cts(src, hdr.sreq, r);
                self.release(layout, src, head);
            }
            _ => unreachable!("only eager and rendezvous requests are matched"),
        }
        Ok(Step::Again)
    }

    /// An eager or RTS packet no posted receive matched: eager data is copied out to a
    /// buffer of its own (with LHS, its first bytes to the LH entry and only the rest),
    /// and either goes on the unexpected queue.
    fn unexpected_packet(
        &mut self,
        layout: &Layout,
        src: u16,
        head: u64,
        hdr: PktHeader,
    ) -> Result<(), String> {
        let me = self.me;
        let what = match hdr.ty {
            PktType::Eager => {
                let payload = layout.queue(src, me) + shm::slot_data(head) + shm::PKT_HEADER;
                self.unexpected_eager(layout, payload, hdr.bytes)?
            }
            PktType::Rts => Unexp::Rts {
                sreq: hdr.sreq,
                bytes: hdr.bytes,
            },
            _ => unreachable!("only eager and rendezvous requests are matched"),
        };
        self.release(layout, src, head);
        let envelope = (Peer::Rank(src), Tag::Tag(hdr.tag.into()), hdr.ctx);
        self.link_unexpected(layout, envelope, what)
    }

    /// Puts a message on the unexpected queue, counting where it went under LHS.
    fn link_unexpected(
        &mut self,
        layout: &Layout,
        envelope: (Peer, Tag, u16),
        what: Unexp,
    ) -> Result<(), String> {
        if self.queues.has_lhs() {
            match self.queues.next_lh_entry(layout) {
                Some(_) => self.stats.lhs_heads += 1,
                None => self.stats.lhs_overflows += 1,
            }
        }
        let me = self.me;
        self.queues
            .link(layout, me, false, envelope, what, &mut self.ops)
    }

    /// Copies an unexpected eager payload of `bytes` at `payload` out of its slot: to a
    /// buffer of its own, or with LHS its first bytes to the next LH entry (after the
    /// envelope) and the rest, if any, to a buffer.
    fn unexpected_eager(
        &mut self,
        layout: &Layout,
        payload: u64,
        bytes: u64,
    ) -> Result<Unexp, String> {
        let me = self.me;
        let lh = self.queues.next_lh_entry(layout);
        let inline = lh.map_or(0, |_| lh_head_bytes(layout.lh_entry_bytes, bytes));
        let head = lh.map(|at| (at + super::lhs::ENVELOPE_BYTES, inline));
        if let Some((at, n)) = head.filter(|h| h.1 > 0) {
            self.ops.push_back(Micro::Copy {
                src: payload,
                dst: at,
                len: n,
            });
        }
        let rest = bytes - inline;
        let tmp = if lh.is_none() || rest > 0 {
            let tmp = self
                .tmp
                .alloc(rest)
                .ok_or_else(|| format!("rank {me}: unexpected-message buffers full"))?;
            self.ops.push_back(Micro::Copy {
                src: payload + inline,
                dst: tmp,
                len: rest,
            });
            tmp
        } else {
            0
        };
        Ok(Unexp::Eager { tmp, bytes, head })
    }

    /// Answers an RTS from `to`'s send `sreq` for receive `rreq`.
    fn send_cts(&mut self, to: u16, sreq: u32, rreq: ReqId) {
        let cts = PktHeader {
            ty: PktType::Cts,
            src: self.me,
            tag: 0,
            ctx: 0,
            bytes: 0,
            sreq,
            rreq,
        };
        self.outgoing[to as usize].push_back(OutPkt {
            header: Some(cts.encode()),
            data: 0,
            len: 0,
            sent: 0,
            completes: None,
        });
        self.push_task(to);
    }

    /// A receive being posted, after the unexpected queue was searched: it takes the
    /// message found, or goes on the posted-receive queue.
    pub(super) fn recv_posted(&mut self, layout: &Layout, req: ReqId) -> Result<Step, String> {
        let me = self.me;
        let q = self
            .reqs
            .get(&req)
            .ok_or("posting a missing request")?
            .clone();
        let Some(i) = self.queues.found.take() else {
            let envelope = (q.peer, q.tag, q.ctx);
            let what = Unexp::Posted(req);
            self.queues
                .link(layout, me, true, envelope, what, &mut self.ops)?;
            return Ok(Step::Again);
        };
        let e = self.queues.unlink(layout, false, i, &mut self.ops);
        let src = match e.src {
            Peer::Rank(s) => s,
            Peer::Any => return Err(format!("rank {me}: an unexpected entry without source")),
        };
        let tag = tag_value(e.tag);
        match e.what {
            Unexp::Eager { tmp, bytes, head } => {
                if bytes > q.bytes {
                    return Err(self.truncated(src, tag, bytes, q.bytes));
                }
                // The payload assembled from its head in the LH entry and its rest.
                let (at, n) = head.unwrap_or((0, 0));
                for (from, to, len) in [(at, q.va, n), (tmp, q.va + n, bytes - n)] {
                    if from != 0 && (len > 0 || head.is_none()) {
                        self.ops.push_back(Micro::Copy {
                            src: from,
                            dst: to,
                            len,
                        });
                    }
                }
                if tmp != 0 {
                    self.ops.push_back(Micro::Mark(Mark::FreeTmp(tmp)));
                }
                self.ops.push_back(Micro::Mark(Mark::RecvDone(req)));
            }
            Unexp::Rts { sreq, bytes } => {
                if bytes > q.bytes {
                    return Err(self.truncated(src, tag, bytes, q.bytes));
                }
                self.send_cts(src, sreq, req);
            }
            Unexp::SelfSend(sreq) => self.copy_to_self(sreq, req)?,
            Unexp::Nic => return self.nic_deliver(e.slot, req),
            Unexp::Posted(_) => return Err(format!("rank {me}: unexpected list holds a receive")),
        }
        Ok(Step::Again)
    }

    /// A send to the rank itself, after the posted-receive queue was searched.
    pub(super) fn self_send(&mut self, layout: &Layout, req: ReqId) -> Result<Step, String> {
        let me = self.me;
        let s = self.reqs.get(&req).ok_or("a missing self send")?.clone();
        let Some(i) = self.queues.found.take() else {
            let envelope = (Peer::Rank(me), s.tag, s.ctx);
            self.link_unexpected(layout, envelope, Unexp::SelfSend(req))?;
            return Ok(Step::Again);
        };
        let Unexp::Posted(r) = self.queues.unlink(layout, true, i, &mut self.ops).what else {
            return Err(format!("rank {me}: posted list holds no receive"));
        };
        self.copy_to_self(req, r)?;
        Ok(Step::Again)
    }

    /// The rank's send `sreq` to itself meets its receive `rreq`: the rank copies the
    /// data, and both complete.
    fn copy_to_self(&mut self, sreq: ReqId, rreq: ReqId) -> Result<(), String> {
        let me = self.me;
        let (Some(s), Some(r)) = (self.reqs.get(&sreq), self.reqs.get(&rreq)) else {
            return Err(format!("rank {me}: a send to itself without its requests"));
        };
        if s.bytes > r.bytes {
            return Err(self.truncated(me, tag_value(s.tag), s.bytes, r.bytes));
        }
        let copy = Micro::Copy {
            src: s.va,
            dst: r.va,
            len: s.bytes,
        };
        self.ops.push_back(copy);
        self.ops.push_back(Micro::Mark(Mark::SendDone(sreq)));
        self.ops.push_back(Micro::Mark(Mark::RecvDone(rreq)));
        Ok(())
    }
}
