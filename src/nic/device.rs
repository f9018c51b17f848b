//! One NIC: its registers, Read Window and VL engine, send window and wire, the receive
//! ring and the dividing controller, with every time in core cycles (its host converts
//! the configuration's NIC cycles and nanoseconds).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::matching::NicMatch;
use super::{reg, CQ_PAIRS, HEADER_BYTES};

/// A NIC's sizes and costs, in core cycles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NicParams {
    /// Receive-ring positions (`mpi.lhs_entries`).
    pub positions: u64,
    /// The Entry Length Register: bytes of each LH entry, 0 without LHS.
    pub entry_bytes: u64,
    /// The Size Information Location Register.
    pub size_offset: u64,
    pub slot_bytes: u64,
    pub window_bytes: u64,
    /// Cycles a VL command takes before its block moves.
    pub vl_cycles: u64,
    /// Cycles per 64 bytes moved out of the bulk memory.
    pub bulk_cycles_per_line: u64,
    pub divide_cycles: u64,
    pub wire_cycles: u64,
    /// Wire bytes per core cycle.
    pub wire_bytes_per_cycle: f64,
}

/// What one NIC counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NicStats {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    /// Messages whose head the dividing controller wrote to the LH buffer, and bytes it
    /// wrote to the bulk memory.
    pub heads: u64,
    pub bulk_bytes: u64,
    /// Cycles arrived messages waited for a free ring position.
    pub ring_full_cycles: u64,
    pub vl_commands: u64,
    pub vl_bytes: u64,
    /// Host loads of registers and of the Read Window, and host stores the NIC took.
    pub register_loads: u64,
    pub window_loads: u64,
    pub host_stores: u64,
    /// Host loads of an LH buffer mapped uncacheable or write-combining (its host counts
    /// them; a write-back mapping's reads are the caches' misses).
    pub lh_loads: u64,
    /// Cached copies of LH-buffer lines the dividing controller's writes took out of the
    /// cores' caches (its host counts them).
    pub invalidations: u64,
    /// The matching engine's (`nic.matcher`): searches, entries they read one after
    /// another, its busy cycles at its own clock, and pairs made.
    pub match_searches: u64,
    pub match_traversed: u64,
    pub match_engine_cycles: u64,
    pub matches: u64,
}

/// A message on the wire: the sender's node and its bytes (header, then payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: usize,
    pub bytes: Vec<u8>,
}

/// A message the send doorbell put on the wire: to `dst`, arriving at cycle `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    pub dst: usize,
    pub at: u64,
    pub packet: Packet,
}

/// The receive dividing controller's next message: position `seq`, and the bytes it puts
/// into the LH buffer at `lh_offset` (none without LHS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Division {
    pub seq: u64,
    pub lh_offset: u64,
    pub head: Vec<u8>,
}

/// A host access the NIC cannot take, or a message it cannot divide.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("NIC {nic}: {detail}")]
pub struct NicError {
    pub nic: usize,
    pub detail: String,
}

/// A VL command in the engine: the bulk block, and when it is in the Read Window.
#[derive(Clone, Copy, Debug)]
struct Vl {
    addr: u64,
    bytes: u64,
    done_at: u64,
}

#[derive(Debug)]
pub struct Nic {
    pub id: usize,
    p: NicParams,
    /// Receive-ring positions filled, and the host's head.
    tail: u64,
    head: u64,
    /// Messages on the wire or waiting for a position, by arrival cycle and order.
    arrivals: BTreeMap<(u64, u64), Packet>,
    order: u64,
    divider_free: u64,
    /// The bulk memory, by slot (position modulo the ring): only written slots.
    bulk: BTreeMap<u64, Vec<u8>>,
    window: Vec<u8>,
    vl: VecDeque<Vl>,
    vl_done: u64,
    send_window: Vec<u8>,
    wire_free: u64,
    /// The matching engine, if the NIC matches (`nic.matcher`); the key of the receive
    /// being posted to it; positions the host has copied out past the head.
    matcher: Option<NicMatch>,
    post_key: u64,
    done: BTreeSet<u64>,
    pub stats: NicStats,
}

impl Nic {
    pub fn new(id: usize, p: NicParams) -> Nic {
        Nic {
            id,
            p,
            tail: 0,
            head: 0,
            arrivals: BTreeMap::new(),
            order: 0,
            divider_free: 0,
            bulk: BTreeMap::new(),
            window: vec![0; p.window_bytes as usize],
            vl: VecDeque::new(),
            vl_done: 0,
            send_window: vec![0; p.slot_bytes as usize],
            wire_free: 0,
            matcher: None,
            post_key: 0,
            done: BTreeSet::new(),
            stats: NicStats::default(),
        }
    }

    /// The NIC with a matching engine: it matches every message and every receive posted.
    pub fn with_matcher(mut self, m: NicMatch) -> Nic {
        self.matcher = Some(m);
        self
    }

    /// Copies the engine's counters into the NIC's.
    fn sync_match_stats(&mut self) {
        if let Some(m) = &self.matcher {
            let (s, t) = (&mut self.stats, &m.stats);
            s.match_searches = t.searches;
            s.match_traversed = t.traversed;
            s.match_engine_cycles = t.engine_cycles;
            s.matches = t.matches;
        }
    }

    pub fn params(&self) -> &NicParams {
        &self.p
    }

    fn error(&self, detail: String) -> NicError {
        NicError {
            nic: self.id,
            detail,
        }
    }

    /// The next cycle at which the NIC has work of its own: a VL command to finish, or a
    /// message to divide (none while the ring is full: the host's head store wakes it).
    pub fn next_event(&self) -> Option<u64> {
        let vl = self.vl.front().map(|v| v.done_at);
        let divide = self
            .arrivals
            .keys()
            .next()
            .filter(|_| self.has_room())
            .map(|&(at, _)| at.max(self.divider_free));
        vl.into_iter().chain(divide).min()
    }

    fn has_room(&self) -> bool {
        self.tail - self.head < self.p.positions
    }

    /// Whether the NIC has work in hand at `now`: an event of its own to come, or its
    /// matching engine busy.
    pub fn busy(&self, now: u64) -> bool {
        self.next_event().is_some() || self.matcher.as_ref().is_some_and(|m| m.busy(now))
    }

    /// Why arrived messages cannot be taken, if the ring is full with some waiting.
    pub fn blocked(&self) -> Option<String> {
        let waiting = self.arrivals.len();
        (waiting > 0 && !self.has_room()).then(|| {
            format!(
                "NIC {}: {waiting} messages wait for a free position of its receive ring, \
                 all {} of which hold messages no receive has taken yet (mpi.lhs_entries)",
                self.id, self.p.positions
            )
        })
    }

    /// Finishes the VL commands due by `now`: their blocks are in the Read Window.
    pub fn finish_vl(&mut self, now: u64) {
        while let Some(v) = self.vl.front().copied().filter(|v| v.done_at <= now) {
            self.vl.pop_front();
            let (slot, off) = (v.addr / self.p.slot_bytes, v.addr % self.p.slot_bytes);
            let data = self.bulk.get(&slot);
            for k in 0..v.bytes as usize {
                let at = off as usize + k;
                self.window[k] = data.and_then(|d| d.get(at)).copied().unwrap_or(0);
            }
            self.vl_done += 1;
        }
    }

    /// A message arriving from the wire at cycle `at`.
    pub fn arrive(&mut self, at: u64, packet: Packet) {
        self.order += 1;
        self.arrivals.insert((at, self.order), packet);
    }

    /// The next message the dividing controller can take at `now`, checked: its header's
    /// size must account for its length and fit a slot.
    pub fn next_division(&self, now: u64) -> Result<Option<Division>, NicError> {
        let Some((&(at, _), packet)) = self.arrivals.iter().next() else {
            return Ok(None);
        };
        if at > now || self.divider_free > now || !self.has_room() {
            return Ok(None);
        }
        self.check_packet(packet)?;
        let e = self.p.entry_bytes;
        let head = if e > 0 {
            packet.bytes[..packet.bytes.len().min(e as usize)].to_vec()
        } else {
            Vec::new()
        };
        Ok(Some(Division {
            seq: self.tail,
            lh_offset: (self.tail % self.p.positions) * e,
            head,
        }))
    }

    fn check_packet(&self, packet: &Packet) -> Result<(), NicError> {
        let b = &packet.bytes;
        let len = b.len() as u64;
        let so = self.p.size_offset as usize;
        let size = b
            .get(so..so + 4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")) as u64);
        let word0 = b
            .get(..8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8")));
        match (word0, size) {
            (Some(w), Some(size)) if w >> 63 == 1 && HEADER_BYTES + size == len => {
                if len > self.p.slot_bytes {
                    return Err(self.error(format!(
                        "a message of {len} bytes from node {} does not fit a {}-byte bulk \
                         slot (nic.slot_bytes)",
                        packet.src, self.p.slot_bytes
                    )));
                }
                Ok(())
            }
            _ => Err(self.error(format!(
                "a message of {len} bytes from node {} has no valid header (match word \
                 {word0:x?}, size {size:?} at byte {so})",
                packet.src
            ))),
        }
    }

    /// The dividing controller took the next message at `now` (its head, if any, now in
    /// the LH buffer): the rest goes to its slot, the tail moves on; a matching engine
    /// matches it.
    pub fn commit_division(&mut self, now: u64) -> Result<(), NicError> {
        let Some((&key, _)) = self.arrivals.iter().next() else {
            return Ok(());
        };
        let packet = self.arrivals.remove(&key).expect("the first arrival");
        if let Some(m) = self.matcher.as_mut() {
            let word = u64::from_le_bytes(packet.bytes[..8].try_into().expect("checked"));
            let (id, seq) = (self.id, self.tail);
            m.arrive(seq, word, now)
                .map_err(|detail| NicError { nic: id, detail })?;
            self.sync_match_stats();
        }
        self.stats.ring_full_cycles += now.saturating_sub(key.0.max(self.divider_free));
        let e = self.p.entry_bytes as usize;
        let rest = if e > 0 {
            self.stats.heads += 1;
            packet.bytes.get(e..).unwrap_or(&[]).to_vec()
        } else {
            packet.bytes
        };
        self.stats.bulk_bytes += rest.len() as u64;
        let slot = self.tail % self.p.positions;
        if rest.is_empty() {
            self.bulk.remove(&slot);
        } else {
            self.bulk.insert(slot, rest);
        }
        self.stats.packets_received += 1;
        self.tail += 1;
        self.divider_free = now + self.p.divide_cycles;
        Ok(())
    }

    /// A host load of the completion queue's byte `off` at `now`: of pair `off / 16`
    /// (modulo [`CQ_PAIRS`]) among those ready, its request (first 8 bytes) or position.
    pub fn load_cq(&mut self, off: u64, now: u64) -> Result<u64, NicError> {
        let Some(m) = &self.matcher else {
            return Err(self.error(
                "a load of the completion queue, but the NIC does not match (nic.matcher)".into(),
            ));
        };
        let ready = m.ready(now);
        let base = ready / CQ_PAIRS * CQ_PAIRS + off / 16;
        let i = if base >= ready {
            base.checked_sub(CQ_PAIRS)
        } else {
            Some(base)
        };
        let Some(p) = i.and_then(|i| m.pairs.get(i as usize)) else {
            return Err(self.error(format!(
                "a load of completion-queue pair {}, not made yet",
                off / 16
            )));
        };
        self.stats.register_loads += 1;
        Ok(if off % 16 < 8 {
            u64::from(p.req)
        } else {
            p.pos
        })
    }

    /// A host load of register `off` or of the Read Window's byte `off`, at `now`.
    pub fn load(&mut self, window: bool, off: u64, size: u8, now: u64) -> Result<u64, NicError> {
        self.finish_vl(now);
        if window {
            self.stats.window_loads += 1;
            let bytes = self.window.get(off as usize..off as usize + size as usize);
            return bytes.map(le_value).ok_or_else(|| {
                self.error(format!("a load of {size} bytes at Read Window byte {off}"))
            });
        }
        self.stats.register_loads += 1;
        match off {
            reg::TAIL => Ok(self.tail),
            reg::VL_DONE => Ok(self.vl_done),
            reg::ENTRY_LENGTH => Ok(self.p.entry_bytes),
            reg::SIZE_LOCATION => Ok(self.p.size_offset),
            reg::PAIRS => Ok(self.matcher.as_ref().map_or(0, |m| m.ready(now))),
            _ => Err(self.error(format!(
                "a load of register {off:#x}, which is write-only or absent"
            ))),
        }
    }

    /// A host store to the send window's byte `off`.
    pub fn store_send(&mut self, off: u64, size: u8, value: u64) -> Result<(), NicError> {
        self.stats.host_stores += 1;
        let end = off as usize + size as usize;
        let Some(dst) = self.send_window.get_mut(off as usize..end) else {
            return Err(self.error(format!(
                "a store of {size} bytes at send-window byte {off}, past its {} bytes \
                 (nic.slot_bytes)",
                self.p.slot_bytes
            )));
        };
        dst.copy_from_slice(&value.to_le_bytes()[..size as usize]);
        Ok(())
    }

    /// A host store of `value` to register `off` at `now`; a doorbell returns the message
    /// it put on the wire.
    pub fn store_reg(&mut self, off: u64, value: u64, now: u64) -> Result<Option<Sent>, NicError> {
        self.stats.host_stores += 1;
        match off {
            reg::HEAD if value >= self.head && value <= self.tail => {
                self.head = value;
                Ok(None)
            }
            reg::HEAD => Err(self.error(format!(
                "the host's head moved to {value}, outside {}..={} (head to tail)",
                self.head, self.tail
            ))),
            reg::VL => self
                .vl_command(value >> 16, value & 0xFFFF, now)
                .map(|()| None),
            reg::SEND => self.send(value >> 32, value & 0xFFFF_FFFF, now).map(Some),
            reg::POST_KEY => {
                self.post_key = value;
                Ok(None)
            }
            reg::POST_REQ => self.post(value, now).map(|()| None),
            reg::DONE => self.take_done(value).map(|()| None),
            _ => Err(self.error(format!(
                "a store to register {off:#x}, which is read-only or absent"
            ))),
        }
    }

    /// Posts receive `req` (its key latched before) to the matching engine.
    fn post(&mut self, req: u64, now: u64) -> Result<(), NicError> {
        let (id, key) = (self.id, self.post_key);
        let Some(m) = self.matcher.as_mut() else {
            return Err(
                self.error("a receive posted, but the NIC does not match (nic.matcher)".into())
            );
        };
        let req = u32::try_from(req).map_err(|_| NicError {
            nic: id,
            detail: format!("a receive posted with request number {req}, past 32 bits"),
        })?;
        m.post(req, key, now)
            .map_err(|detail| NicError { nic: id, detail })?;
        self.sync_match_stats();
        Ok(())
    }

    /// The host copied out the message at `pos`: the head moves past every position taken.
    fn take_done(&mut self, pos: u64) -> Result<(), NicError> {
        if !(self.head..self.tail).contains(&pos) || !self.done.insert(pos) {
            return Err(self.error(format!(
                "position {pos} handed back twice, or outside {}..{} (head to tail)",
                self.head, self.tail
            )));
        }
        while self.done.remove(&self.head) {
            self.head += 1;
        }
        Ok(())
    }

    /// Queues a VL command for `bytes` at bulk address `addr`.
    fn vl_command(&mut self, addr: u64, bytes: u64, now: u64) -> Result<(), NicError> {
        let end = self.p.positions * self.p.slot_bytes;
        if bytes == 0 || bytes > self.p.window_bytes || addr + bytes > end {
            return Err(self.error(format!(
                "a VL command for {bytes} bytes at bulk address {addr:#x}: at most the Read \
                 Window's {} bytes, inside the bulk memory's {end}",
                self.p.window_bytes
            )));
        }
        let start = self.vl.back().map_or(now, |v| v.done_at.max(now));
        let transfer = bytes.div_ceil(64) * self.p.bulk_cycles_per_line;
        self.vl.push_back(Vl {
            addr,
            bytes,
            done_at: start + self.p.vl_cycles + transfer,
        });
        self.stats.vl_commands += 1;
        self.stats.vl_bytes += bytes;
        Ok(())
    }

    /// Puts the send window's first `bytes` on the wire to node `dst`.
    fn send(&mut self, dst: u64, bytes: u64, now: u64) -> Result<Sent, NicError> {
        if bytes < HEADER_BYTES || bytes > self.p.slot_bytes {
            return Err(self.error(format!(
                "a send of {bytes} bytes: a message is its {HEADER_BYTES}-byte header and \
                 payload, at most the send window's {} bytes",
                self.p.slot_bytes
            )));
        }
        let packet = Packet {
            src: self.id,
            bytes: self.send_window[..bytes as usize].to_vec(),
        };
        let depart = now.max(self.wire_free);
        let serial = (bytes as f64 / self.p.wire_bytes_per_cycle).ceil() as u64;
        self.wire_free = depart + serial.max(1);
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += bytes;
        Ok(Sent {
            dst: dst as usize,
            at: self.wire_free + self.p.wire_cycles,
            packet,
        })
    }
}

/// The little-endian value of up to 8 bytes.
fn le_value(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(entry_bytes: u64) -> NicParams {
        NicParams {
            positions: 4,
            entry_bytes,
            size_offset: 8,
            slot_bytes: 256,
            window_bytes: 64,
            vl_cycles: 100,
            bulk_cycles_per_line: 10,
            divide_cycles: 5,
            wire_cycles: 1000,
            wire_bytes_per_cycle: 1.0,
        }
    }

    /// A message of `payload` bytes 0, 1, 2, ... with match word `word`.
    fn message(word: u64, payload: usize) -> Vec<u8> {
        let mut b = word.to_le_bytes().to_vec();
        b.extend((payload as u64).to_le_bytes());
        b.extend((0..payload).map(|i| i as u8));
        b
    }

    fn send(from: &mut Nic, to: &mut Nic, word: u64, payload: usize, now: u64) -> u64 {
        for (k, chunk) in message(word, payload).chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            from.store_send(8 * k as u64, 8, u64::from_le_bytes(w))
                .unwrap();
        }
        let bytes = (HEADER_BYTES as usize + payload) as u64;
        let sent = from
            .store_reg(reg::SEND, (to.id as u64) << 32 | bytes, now)
            .unwrap()
            .unwrap();
        to.arrive(sent.at, sent.packet);
        sent.at
    }

    /// Divides what has arrived by `now`, one message per `divide_cycles` from then on.
    fn divide_all(n: &mut Nic, mut now: u64) -> Vec<Division> {
        let mut out = Vec::new();
        while let Some(d) = n.next_division(now).unwrap() {
            out.push(d);
            n.commit_division(now).unwrap();
            now += n.params().divide_cycles;
        }
        out
    }

    #[test]
    fn the_dividing_controller_splits_heads_from_the_rest() {
        let (mut a, mut b) = (Nic::new(0, params(32)), Nic::new(1, params(32)));
        let at = send(&mut a, &mut b, 1 << 63 | 7, 40, 0);
        // 56 bytes on a 1-byte-per-cycle wire, then 1,000 cycles of latency.
        assert_eq!(at, 56 + 1000);
        assert_eq!(b.next_division(at - 1).unwrap(), None);
        assert_eq!(b.next_event(), Some(at));
        let d = divide_all(&mut b, at);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].seq, d[0].lh_offset), (0, 0));
        assert_eq!(d[0].head, message(1 << 63 | 7, 40)[..32]);
        assert_eq!(b.load(false, reg::TAIL, 8, at).unwrap(), 1);
        // The rest, payload bytes 16..40, is at the slot's start: a VL command reads it.
        b.store_reg(reg::VL, 24, at).unwrap();
        let done = at + 100 + 10;
        assert_eq!(b.next_event(), Some(done));
        assert_eq!(b.load(false, reg::VL_DONE, 8, done - 1).unwrap(), 0);
        assert_eq!(b.load(false, reg::VL_DONE, 8, done).unwrap(), 1);
        assert_eq!(
            b.load(true, 0, 8, done).unwrap(),
            u64::from_le_bytes([16, 17, 18, 19, 20, 21, 22, 23])
        );
        assert_eq!(b.stats.heads, 1);
        assert_eq!(b.stats.bulk_bytes, 24);
    }

    #[test]
    fn without_lhs_the_whole_message_goes_to_its_slot_and_a_full_ring_waits() {
        let (mut a, mut b) = (Nic::new(0, params(0)), Nic::new(1, params(0)));
        let mut last = 0;
        for k in 0..6 {
            last = send(&mut a, &mut b, 1 << 63 | k, 8, 0);
        }
        let d = divide_all(&mut b, last + 100);
        // Four positions; the fifth and sixth wait for the host's head.
        assert_eq!(d.len(), 4);
        assert!(d.iter().all(|d| d.head.is_empty()));
        assert_eq!(b.next_event(), None);
        assert_eq!(b.stats.packets_received, 4);
        b.store_reg(reg::HEAD, 2, last + 150).unwrap();
        assert!(b.next_event().is_some_and(|t| t <= last + 150));
        assert_eq!(divide_all(&mut b, last + 200).len(), 2);
        assert!(b.stats.ring_full_cycles > 0);
        assert_eq!(b.load(false, reg::TAIL, 8, last + 200).unwrap(), 6);
        // Slot 0 now holds the fifth message: its match word.
        b.store_reg(reg::VL, 8, last + 200).unwrap();
        b.finish_vl(last + 400);
        assert_eq!(b.load(true, 0, 8, last + 400).unwrap(), 1 << 63 | 4);
        assert_eq!(b.stats.bulk_bytes, 6 * 24);
    }

    #[test]
    fn bad_accesses_and_messages_are_errors_naming_the_nic() {
        let mut n = Nic::new(3, params(32));
        let e = n.store_reg(reg::HEAD, 1, 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "NIC 3: the host's head moved to 1, outside 0..=0 (head to tail)"
        );
        assert!(n.load(false, reg::HEAD, 8, 0).is_err());
        assert!(n.store_reg(reg::VL, (4 * 256) << 16 | 8, 0).is_err());
        assert!(n.store_reg(reg::VL, 65, 0).is_err());
        n.arrive(
            0,
            Packet {
                src: 1,
                bytes: message(7, 8),
            },
        );
        let e = n.next_division(0).unwrap_err();
        assert!(e.detail.contains("no valid header"), "{e}");
    }
}
