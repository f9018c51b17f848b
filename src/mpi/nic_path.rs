//! The NIC path (`[nic]`, the LHS paper's setting): every message goes from the sender's
//! NIC to the receiver's over the wire, eager, whatever its size.
//!
//! A send writes the message's header (the match word, then the payload size where the
//! Size Information Location Register says) and its payload into the rank's own NIC's
//! send window, then rings the doorbell with the destination node; the send is then
//! complete. A rank sends to itself through its own NIC the same way.
//!
//! The progress engine reads the NIC's tail register; each new position is a message the
//! dividing controller put in the receive ring: its match word is read (from the LH
//! buffer, or through a VL command and the Read Window without LHS) and the posted-receive
//! queue searched for it. A message matched at once, or later by a receive's search of the
//! ring (`queues`, `lhs`), is copied into the receive's buffer: its head from the LH
//! entry, the rest (or all of it, without LHS) block by block through VL commands and the
//! Read Window. Only then does the rank store its new head into the NIC's head register,
//! which lets the NIC fill the positions behind it again.
//!
//! With an LH buffer mapped write-back and `nic.flush`, the rank flushes each LH line once
//! it has read the entries it holds, as DIMMnet's library must for a memory the host's
//! caches do not snoop.
//!
//! Where the NIC matches (`nic.matcher`), the rank neither reads arrivals nor searches:
//! it posts each receive to the NIC (its match word, then its request number), reads the
//! NIC's count of pairs made, and for each new pair (a request and a position) copies the
//! message out as above and hands the position back by the NIC's done register.

use crate::envelope::{Peer, Tag};
use crate::nic::{reg, HEADER_BYTES};
use crate::sim::Next;
use crate::workload::ReqId;

use super::layout::{Layout, NicLayout};
use super::ops::{load, Mark, Micro};
use super::queues::{entry_word, tag_value, Search};
use super::rank::{Rank, Step, Task};

/// The envelope a match word packs: source, tag, context.
fn envelope_of(word: u64) -> (Peer, Tag, u16) {
    let f = |sh: u32| ((word >> sh) & 0xFFFF) as u16;
    (Peer::Rank(f(0)), Tag::Tag(f(16).into()), f(32))
}

/// The NIC layout, which the NIC path needs.
fn nic_of(layout: &Layout) -> Result<&NicLayout, String> {
    layout
        .nic
        .as_ref()
        .ok_or_else(|| "the NIC path without [nic]".to_string())
}

impl Rank {
    /// Posts request `req` on the NIC path: a send goes out at once; a receive searches
    /// the unexpected queue (the NIC's receive ring) first, or is posted to a NIC that
    /// matches.
    pub(super) fn post_nic(&mut self, layout: &Layout, req: ReqId) -> Result<Step, String> {
        let q = self.reqs.get_mut(&req).ok_or("posting a missing request")?;
        q.path = super::rank::Path::Nic;
        let (kind, peer, tag, ctx) = (q.kind, q.peer, q.tag, q.ctx);
        match kind {
            crate::envelope::Kind::Send => self.nic_send(layout, req)?,
            crate::envelope::Kind::Recv if nic_of(layout)?.matcher => {
                let n = nic_of(layout)?;
                let word = entry_word(peer, tag, ctx);
                for (addr, value) in [
                    (n.reg(self.me, reg::POST_KEY), word),
                    (n.reg(self.me, reg::POST_REQ), u64::from(req)),
                ] {
                    self.ops.push_back(Micro::Store {
                        addr,
                        size: 8,
                        value,
                    });
                }
            }
            crate::envelope::Kind::Recv => {
                self.stack.push(Task::RecvPosted { req });
                self.stack.push(Task::Search {
                    posted: false,
                    key: entry_word(peer, tag, ctx),
                    i: 0,
                    step: 0,
                });
            }
        }
        Ok(Step::Again)
    }

    /// Sends request `req` through the rank's NIC: its header and payload into the send
    /// window, then the doorbell.
    pub(super) fn nic_send(&mut self, layout: &Layout, req: ReqId) -> Result<(), String> {
        let me = self.me;
        let n = nic_of(layout)?;
        let q = self
            .reqs
            .get(&req)
            .ok_or("sending a missing request")?
            .clone();
        let (Peer::Rank(dst), Tag::Tag(tag)) = (q.peer, q.tag) else {
            return Err(format!("rank {me}: a send needs a rank and a tag"));
        };
        let total = HEADER_BYTES + q.bytes;
        if total > n.slot_bytes {
            return Err(format!(
                "rank {me}: a message of {} bytes does not fit a NIC's {}-byte send window \
                 with its {HEADER_BYTES}-byte header (nic.slot_bytes)",
                q.bytes, n.slot_bytes
            ));
        }
        let window = n.send(me);
        let word = entry_word(Peer::Rank(me), Tag::Tag(tag), q.ctx);
        let size = (q.bytes & 0xFFFF_FFFF) << (8 * (n.size_offset - 8));
        for (addr, value) in [(window, word), (window + 8, size)] {
            self.ops.push_back(Micro::Store {
                addr,
                size: 8,
                value,
            });
        }
        if q.bytes > 0 {
            self.ops.push_back(Micro::Copy {
                src: q.va,
                dst: window + HEADER_BYTES,
                len: q.bytes,
            });
        }
        self.ops.push_back(Micro::Store {
            addr: n.reg(me, reg::SEND),
            size: 8,
            value: (dst as u64) << 32 | total,
        });
        self.ops.push_back(Micro::Mark(Mark::SendDone(req)));
        self.stats.eager += 1;
        Ok(())
    }

    /// One step of a look at the NIC: read its tail (step 0, the value at step 1), then
    /// take each new position in turn (step 2).
    pub(super) fn nic_poll(
        &mut self,
        layout: &Layout,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.me;
        let n = nic_of(layout)?;
        if n.matcher {
            return self.nic_poll_pairs(n, step, value);
        }
        match step {
            0 => {
                self.stats.polls += 1;
                self.stack.push(Task::NicPoll { step: 1 });
                Ok(Step::Issue(load(n.reg(me, reg::TAIL), 8)))
            }
            1 => {
                let tail = value.ok_or("no tail value")?;
                if tail < self.queues.nic_next() {
                    return Err(format!(
                        "rank {me}: the NIC's tail went back to {tail} from {}",
                        self.queues.nic_next()
                    ));
                }
                self.nic_tail = tail;
                self.stack.push(Task::NicPoll { step: 2 });
                Ok(Step::Again)
            }
            _ => {
                let seq = self.queues.nic_next();
                if seq < self.nic_tail {
                    self.stack.push(Task::NicPoll { step: 2 });
                    self.stack.push(Task::NicArrival { seq, step: 0 });
                }
                Ok(Step::Again)
            }
        }
    }

    /// A look at a matching NIC: its pairs' count (step 0, the value at step 1), then each
    /// new pair in turn (step 2).
    fn nic_poll_pairs(
        &mut self,
        n: &NicLayout,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        match step {
            0 => {
                self.stats.polls += 1;
                self.stack.push(Task::NicPoll { step: 1 });
                Ok(Step::Issue(load(n.reg(self.me, reg::PAIRS), 8)))
            }
            1 => {
                self.nic_tail = value.ok_or("no pairs' count")?;
                self.stack.push(Task::NicPoll { step: 2 });
                Ok(Step::Again)
            }
            _ => {
                if self.nic_pairs < self.nic_tail {
                    self.stack.push(Task::NicPoll { step: 2 });
                    let i = self.nic_pairs;
                    self.nic_pairs += 1;
                    self.stack.push(Task::NicPair { i, step: 0, req: 0 });
                }
                Ok(Step::Again)
            }
        }
    }

    /// One step of taking pair `i` of a matching NIC: its request's load (step 0), its
    /// position's (step 1), then the delivery (step 2).
    pub(super) fn nic_pair(
        &mut self,
        layout: &Layout,
        i: u64,
        (step, req): (u8, u32),
        value: Option<u64>,
    ) -> Result<Step, String> {
        let n = nic_of(layout)?;
        let at = n.pair(self.me, i);
        match step {
            0 => {
                self.stack.push(Task::NicPair { i, step: 1, req: 0 });
                Ok(Step::Issue(load(at, 8)))
            }
            1 => {
                let req = u32::try_from(value.ok_or("no request number")?)
                    .map_err(|_| "a pair's request number past 32 bits")?;
                self.stack.push(Task::NicPair { i, step: 2, req });
                Ok(Step::Issue(load(at + 8, 8)))
            }
            _ => {
                let pos = value.ok_or("no position")?;
                if !self.reqs.contains_key(&req) {
                    return Err(format!(
                        "rank {}: the NIC paired request {req}, which is not posted",
                        self.me
                    ));
                }
                self.nic_deliver(pos, req)
            }
        }
    }

    /// The message at position `seq`: its match word read (step 0, the value at step 1),
    /// then the posted-receive queue searched for it.
    pub(super) fn nic_arrival(
        &mut self,
        layout: &Layout,
        seq: u64,
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let me = self.me;
        if step == 0 {
            self.stack.push(Task::NicArrival { seq, step: 1 });
            return self.read_word(layout, seq, 0);
        }
        let word = value.ok_or("no match word")?;
        if word >> 63 != 1 {
            return Err(format!(
                "rank {me}: NIC position {seq} holds no envelope ({word:#x})"
            ));
        }
        self.stack.push(Task::NicIncoming { seq, word });
        self.stack.push(Task::Search {
            posted: true,
            key: word,
            i: 0,
            step: 0,
        });
        Ok(Step::Again)
    }

    /// Reads word `k` (0: the match word, 1: the size) of position `seq`'s header: a
    /// load of its LH entry, or a VL command for the header and a load of the Read Window.
    fn read_word(&mut self, layout: &Layout, seq: u64, k: u64) -> Result<Step, String> {
        let n = nic_of(layout)?;
        let me = self.me;
        if layout.lh_entry_bytes > 0 {
            let at = super::lhs::LhBuffer::entry_addr(layout, me, seq) + 8 * k;
            return Ok(Step::Issue(load(at, 8)));
        }
        let window = n.window(me) + 8 * k;
        if k > 0 && !n.matcher {
            // The header read for the match word is still in the Read Window (a matching
            // NIC's pair comes with no header read).
            return Ok(Step::Issue(load(window, 8)));
        }
        self.push_vl(n.slot(seq, layout.lh_entries), HEADER_BYTES, Some(window));
        Ok(Step::Again)
    }

    /// Pushes a VL command for `bytes` at bulk address `addr`, then (`then`) a load whose
    /// value goes to the task below.
    pub(super) fn push_vl(&mut self, addr: u64, bytes: u64, then: Option<u64>) {
        self.nic_vl += 1;
        self.stack.push(Task::Vl {
            addr,
            bytes,
            step: 0,
            target: self.nic_vl,
            then: then.unwrap_or(0),
        });
    }

    /// One step of a VL command: the command's store (step 0), then loads of the NIC's
    /// completion count until it reaches `target` (steps 1 and 2), then the load `then`,
    /// if any.
    pub(super) fn vl(
        &mut self,
        layout: &Layout,
        (addr, bytes, target, then): (u64, u64, u64, u64),
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let n = nic_of(layout)?;
        let me = self.me;
        let next = |step| Task::Vl {
            addr,
            bytes,
            step,
            target,
            then,
        };
        match step {
            0 => {
                self.stack.push(next(1));
                Ok(Step::Issue(super::ops::store(
                    n.reg(me, reg::VL),
                    8,
                    addr << 16 | bytes,
                )))
            }
            1 => {
                self.stack.push(next(2));
                Ok(Step::Issue(load(n.reg(me, reg::VL_DONE), 8)))
            }
            _ if value.ok_or("no VL count")? < target => {
                self.stack.push(next(2));
                Ok(Step::Issue(load(n.reg(me, reg::VL_DONE), 8)))
            }
            _ if then != 0 => Ok(Step::Issue(load(then, 8))),
            _ => Ok(Step::Again),
        }
    }

    /// The message at `seq` with match word `word`, after the posted-receive queue was
    /// searched for it: delivered to the receive found, or left waiting in the ring.
    pub(super) fn nic_incoming(
        &mut self,
        layout: &Layout,
        seq: u64,
        word: u64,
    ) -> Result<Step, String> {
        let me = self.me;
        let found = self.queues.found.take();
        let matched = match found {
            Some(i) => match self.queues.unlink(layout, true, i, &mut self.ops).what {
                super::entry::Unexp::Posted(r) => Some(r),
                other => return Err(format!("rank {me}: posted list holds {other:?}")),
            },
            None => None,
        };
        let envelope = envelope_of(word);
        self.queues.nic_arrived(envelope, matched.is_some())?;
        match matched {
            Some(r) => self.nic_deliver(seq, r),
            None => {
                self.flush_entry(layout, seq, 16);
                Ok(Step::Again)
            }
        }
    }

    /// Copies the message at `seq` into receive `req`'s buffer: its size read first, once
    /// the work queued before has issued.
    pub(super) fn nic_deliver(&mut self, seq: u64, req: ReqId) -> Result<Step, String> {
        self.stack.push(Task::NicDeliver { seq, req, step: 0 });
        Ok(Step::Again)
    }

    /// A step of a delivery: the size word's read (step 0), then the copy (step 1).
    pub(super) fn nic_delivery(
        &mut self,
        layout: &Layout,
        (seq, req): (u64, ReqId),
        step: u8,
        value: Option<u64>,
    ) -> Result<Step, String> {
        if step == 0 {
            self.stack.push(Task::NicDeliver { seq, req, step: 1 });
            return self.read_word(layout, seq, 1);
        }
        self.nic_copy(layout, seq, req, value)
    }

    /// The size word of the message at `seq` is `value`: its payload goes to `req`'s
    /// buffer, head first, then the rest block by block.
    fn nic_copy(
        &mut self,
        layout: &Layout,
        seq: u64,
        req: ReqId,
        value: Option<u64>,
    ) -> Result<Step, String> {
        let n = nic_of(layout)?;
        let me = self.me;
        let size = value.ok_or("no size word")? >> (8 * (n.size_offset - 8)) & 0xFFFF_FFFF;
        let q = self
            .reqs
            .get(&req)
            .ok_or("a receive without its request")?
            .clone();
        if size > q.bytes {
            // The envelope as the rank read it, or (a matching NIC's pair) the receive's.
            let (src, tag, _) = self
                .queues
                .nic_word(seq)
                .map_or((q.peer, q.tag, q.ctx), envelope_of);
            let src = match src {
                Peer::Rank(s) => s,
                Peer::Any => me,
            };
            return Err(self.truncated(src, tag_value(tag), size, q.bytes));
        }
        let e = layout.lh_entry_bytes;
        let inline = size.min(e.saturating_sub(HEADER_BYTES));
        if inline > 0 {
            let at = super::lhs::LhBuffer::entry_addr(layout, me, seq) + HEADER_BYTES;
            self.ops.push_back(Micro::Copy {
                src: at,
                dst: q.va,
                len: inline,
            });
        }
        self.stack.push(Task::NicDone { seq, req, size });
        // The rest is at its slot's start with LHS; without, after the header there.
        let slot = n.slot(seq, layout.lh_entries) + if e > 0 { 0 } else { HEADER_BYTES };
        if size > inline {
            self.stack.push(Task::NicBlocks {
                from: slot,
                to: q.va + inline,
                left: size - inline,
            });
        }
        Ok(Step::Again)
    }

    /// The next block of a payload in the bulk memory: a VL command, then a copy out of
    /// the Read Window.
    pub(super) fn nic_blocks(
        &mut self,
        layout: &Layout,
        from: u64,
        to: u64,
        left: u64,
    ) -> Result<Step, String> {
        let block = left.min(nic_of(layout)?.window_bytes);
        if left > block {
            self.stack.push(Task::NicBlocks {
                from: from + block,
                to: to + block,
                left: left - block,
            });
        }
        self.stack.push(Task::NicCopyOut { to, bytes: block });
        self.push_vl(from, block, None);
        Ok(Step::Again)
    }

    /// The block a VL command put in the Read Window goes to `to`.
    pub(super) fn nic_copy_out(
        &mut self,
        layout: &Layout,
        to: u64,
        bytes: u64,
    ) -> Result<Step, String> {
        let n = nic_of(layout)?;
        self.ops.push_back(Micro::Copy {
            src: n.window(self.me),
            dst: to,
            len: bytes,
        });
        Ok(Step::Again)
    }

    /// The message at `seq` is in receive `req`'s buffer: its LH lines flushed, the head
    /// handed back to the NIC if it moved, the receive complete.
    pub(super) fn nic_done(
        &mut self,
        layout: &Layout,
        seq: u64,
        req: ReqId,
        size: u64,
    ) -> Result<Step, String> {
        let n = nic_of(layout)?;
        self.flush_entry(layout, seq, HEADER_BYTES + size);
        // The position goes back: by the head, or, where the NIC matches, by itself.
        let back = match n.matcher {
            true => Some((reg::DONE, seq)),
            false => self.queues.take_nic_head().map(|h| (reg::HEAD, h)),
        };
        if let Some((r, value)) = back {
            self.ops.push_back(Micro::Store {
                addr: n.reg(self.me, r),
                size: 8,
                value,
            });
        }
        self.ops.push_back(Micro::Mark(Mark::RecvDone(req)));
        Ok(Step::Again)
    }

    /// Flushes the LH lines of the entry at `seq` that its first `bytes` cover, where the
    /// library flushes (`nic.flush`, write-back).
    fn flush_entry(&mut self, layout: &Layout, seq: u64, bytes: u64) {
        if !layout.nic.as_ref().is_some_and(|n| n.flush) || layout.lh_entry_bytes == 0 {
            return;
        }
        let at = super::lhs::LhBuffer::entry_addr(layout, self.me, seq);
        let end = at + bytes.min(layout.lh_entry_bytes);
        let mut line = crate::mem::line_of(at);
        while line < end {
            self.ops.push_back(Micro::Flush(line));
            line += crate::mem::LINE_BYTES as u64;
        }
    }

    /// After a search step compared position `s.i` of the ring (with a NIC's LH buffer
    /// mapped write-back and flushed): the line is flushed once the search leaves it,
    /// unless it matched (its delivery reads the entry on, and flushes it).
    pub(super) fn flush_passed(&mut self, layout: &Layout, s: Search, matched: bool) {
        if matched || s.posted || !layout.nic.as_ref().is_some_and(|n| n.flush) {
            return;
        }
        let Some(at) = self.queues.ring_addr(layout, s.i) else {
            return;
        };
        let next = self.queues.ring_addr(layout, s.i + 1);
        let line = crate::mem::line_of(at);
        if next.map(crate::mem::line_of) != Some(line) {
            self.ops.push_back(Micro::Flush(line));
        }
    }

    /// The software prefetch a search issues before reading ring position `s.i` at `at`
    /// (`mpi.search_prefetch`), if it does.
    pub(super) fn search_prefetch(&self, layout: &Layout, s: Search, at: u64) -> Option<Next> {
        let off = layout.search_prefetch?;
        let in_ring = !s.posted && self.queues.ring_addr(layout, s.i).is_some();
        (in_ring && s.step == 0).then_some(Next::Prefetch(at + off))
    }
}
