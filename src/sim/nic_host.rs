//! The NICs of the LHS paper's setting (`nic`, `[nic]`) in the embedded simulator: one
//! beside every core, reached through physical windows that the cores access without
//! their caches (registers, send window, Read Window, and an LH buffer mapped uncacheable
//! or write-combining) or, for an LH buffer mapped write-back, through their caches as
//! memory, where its bytes live.
//!
//! Timing. A host access crosses the same path as a memory access (the NIC sits in a DIMM
//! slot): half an uncontended miss's round trip to reach the NIC, the home directory
//! bank's memory channel for its bytes (`memory.channel_cycles`, at least half a line: a
//! burst of four 8-byte beats), `nic.access_cycles`, then half the round trip back for a
//! load. Accesses reach a NIC in the order they were issued. A load completes when its
//! value is back; an uncacheable store when the NIC has taken it; a write-combining store
//! is posted (the core goes on the next cycle).
//!
//! The dividing controller's writes into the LH buffer reach memory as a DMA engine's
//! would, once no controller has a request for the line in flight, and take any copy the
//! cores hold out of their caches (only the NIC writes these lines, so a core holds at
//! most a shared copy, whose eviction sends nothing). DIMMnet's NIC does not snoop the
//! host's caches: its library flushes lines instead (`nic.flush`), which this model keeps
//! as a cost, correct with or without it.

use std::collections::VecDeque;

use crate::coherence::{AccessKind, Completed, CoreReq, HitLevel};
use crate::config::{MemAttr, SystemConfig};
use crate::mem::{line_of, LINE_BYTES};
use crate::net::Network;
use crate::nic::{Nic, NicMap, NicParams, Region};

use super::platform::Ev;
use super::{violation_at, Driver, Sim, SimError};

/// A core's access on its way to a NIC.
#[derive(Clone, Copy, Debug)]
struct HostOp {
    /// The cycle it reaches the NIC.
    at: u64,
    core: u16,
    req: CoreReq,
}

/// The NICs and what carries the cores' accesses to them.
pub(crate) struct NicHost {
    pub map: NicMap,
    pub nics: Vec<Nic>,
    lh_attr: MemAttr,
    /// Per NIC, the accesses on their way, in the order they reach it.
    ops: Vec<VecDeque<HostOp>>,
    /// Per NIC, the cycle its tick is scheduled for.
    tick_at: Vec<Option<u64>>,
    /// Per core, the cycles from the core to a NIC (and back).
    one_way: Vec<u64>,
}

impl NicHost {
    /// The NICs of `cfg`, if `[nic]` is on; `round_trip(c)` is core `c`'s uncontended
    /// round trip to memory and back.
    pub fn new(cfg: &SystemConfig, round_trip: impl Fn(usize) -> u64) -> Option<NicHost> {
        let nic = &cfg.nic;
        if !nic.enabled {
            return None;
        }
        let (ghz, n) = (cfg.system.core_ghz, cfg.system.cores);
        let entry_bytes = NicMap::entry_bytes(cfg);
        let params = NicParams {
            positions: cfg.mpi.lhs_entries,
            entry_bytes,
            size_offset: nic.size_offset,
            slot_bytes: nic.slot_bytes,
            window_bytes: nic.window_bytes,
            vl_cycles: nic.nic_cycles(nic.vl_cycles, ghz),
            bulk_cycles_per_line: nic.nic_cycles(64u64.div_ceil(nic.bulk_bytes_per_cycle), ghz),
            divide_cycles: nic.nic_cycles(nic.divide_cycles, ghz),
            wire_cycles: crate::config::NicSection::core_cycles(nic.wire_ns, ghz),
            wire_bytes_per_cycle: nic.wire_bytes_per_ns / ghz,
        };
        Some(NicHost {
            map: NicMap::of(cfg),
            nics: (0..n).map(|i| nic_of(cfg, i, params)).collect(),
            lh_attr: nic.lh_attribute,
            ops: vec![VecDeque::new(); n],
            tick_at: vec![None; n],
            one_way: (0..n)
                .map(|c| (round_trip(c) + nic.access_cycles).div_ceil(2))
                .collect(),
        })
    }

    /// Whether the cores reach `addr` without their caches: every NIC window but an LH
    /// buffer mapped write-back.
    #[inline]
    pub fn is_uncached(&self, addr: u64) -> bool {
        match self.map.locate(addr) {
            Some((_, Region::Lh, _)) => self.lh_attr != MemAttr::WriteBack,
            Some(_) => true,
            None => false,
        }
    }

    /// Whether the stores of `region` are posted (write-combining).
    fn posted(&self, region: Region) -> bool {
        match region {
            Region::Send => true,
            Region::Lh => self.lh_attr == MemAttr::WriteCombining,
            _ => false,
        }
    }
}

/// NIC `i` of `cfg`, with its matching engine if it has one (`nic.matcher`).
fn nic_of(cfg: &SystemConfig, i: usize, params: NicParams) -> Nic {
    let nic = Nic::new(i, params);
    match cfg.nic.matcher {
        crate::config::NicMatcher::Host => nic,
        crate::config::NicMatcher::Engine(kind) => {
            let clocks = (cfg.nic.matcher_mhz, cfg.system.core_ghz);
            let m =
                crate::nic::matching::NicMatch::new(kind, &cfg.moped.matching, clocks, i as u16);
            nic.with_matcher(m)
        }
    }
}

impl Sim {
    pub(super) fn nic_host(&self) -> Option<&NicHost> {
        self.nics.as_ref()
    }

    /// Whether a NIC has work in hand at `now` that moves a run on: a message to divide
    /// (not one waiting for a free position), a VL command, its matching engine busy. A
    /// core's loads of its registers are not: a rank polling a full ring is stuck.
    pub(super) fn nics_busy(&self, now: u64) -> bool {
        self.nics
            .as_ref()
            .is_some_and(|h| h.nics.iter().any(|n| n.busy(now)))
    }

    /// What the NICs add to a report of a stuck run: full receive rings.
    pub(super) fn nic_notes(&self) -> String {
        let Some(h) = &self.nics else {
            return String::new();
        };
        h.nics
            .iter()
            .filter_map(|n| n.blocked())
            .map(|b| format!("\n  {b}"))
            .collect()
    }

    fn nic_error(&self, c: usize, now: u64, detail: String) -> SimError {
        SimError::check(now, format!("core {c}: {detail}"))
    }

    /// Core `c`'s uncacheable or write-combining access `req` to a NIC: on its way.
    pub(super) fn nic_access(&mut self, c: usize, req: CoreReq, now: u64) -> Result<(), SimError> {
        let Some(host) = self.nics.as_mut() else {
            return Err(self.nic_error(c, now, format!("access to {:#x}, but no NIC", req.addr)));
        };
        let Some((n, region, _)) = host.map.locate(req.addr) else {
            let detail = format!("access to {:#x}, which no NIC window maps", req.addr);
            return Err(self.nic_error(c, now, detail));
        };
        let posted = req.kind == AccessKind::Store && host.posted(region);
        let after = host.ops[n].back().map_or(0, |o| o.at);
        let arrive = (now + host.one_way[c]).max(after);
        let bank = crate::coherence::home_bank(line_of(req.addr), self.dirs.len());
        let at = self.dirs[bank].take_channel(arrive, u64::from(req.size));
        let host = self.nics.as_mut().expect("checked");
        host.ops[n].push_back(HostOp {
            at,
            core: c as u16,
            req,
        });
        self.schedule_nic(n, at);
        let core = &mut self.cores[c];
        match req.kind {
            AccessKind::Load => core.load_outstanding = true,
            AccessKind::Store => core.store_outstanding = true,
        }
        if posted {
            self.complete_at(c, req, req.value, now + 1);
        }
        Ok(())
    }

    /// Has core `c`'s access `req` complete at `at` with `value`.
    fn complete_at(&mut self, c: usize, req: CoreReq, value: u64, at: u64) {
        let comp = Completed {
            req,
            value,
            level: HitLevel::Device,
        };
        let is_load = req.kind == AccessKind::Load;
        let core = &mut self.cores[c];
        if is_load {
            core.hit_load = Some(comp);
        } else {
            core.hit_store = Some(comp);
        }
        self.wire.q.schedule(at, Ev::HitDone(c as u16, is_load));
    }

    /// Schedules NIC `n`'s tick at `at`, unless one is due sooner.
    fn schedule_nic(&mut self, n: usize, at: u64) {
        let host = self.nics.as_mut().expect("NICs");
        match host.tick_at[n] {
            Some(t) if t <= at => {}
            _ => {
                host.tick_at[n] = Some(at);
                self.wire.q.schedule(at, Ev::NicTick(n as u16));
            }
        }
    }

    /// NIC `n`'s tick: the host accesses that reached it, its VL commands, the messages
    /// its dividing controller takes.
    pub(super) fn nic_tick<D: Driver + ?Sized>(
        &mut self,
        n: usize,
        now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        let host = self.nics.as_mut().expect("a NIC tick without NICs");
        // A tick moved to an earlier cycle leaves a stale event behind: skip it.
        if host.tick_at[n] != Some(now) {
            return Ok(());
        }
        host.tick_at[n] = None;
        while let Some(op) = self.nics.as_ref().and_then(|h| h.ops[n].front().copied()) {
            if op.at > now {
                break;
            }
            self.nics.as_mut().expect("NICs").ops[n].pop_front();
            self.host_op(n, op, now)?;
        }
        let retry = self.divide(n, now)?;
        let host = self.nics.as_ref().expect("NICs");
        let next = [
            host.nics[n].next_event(),
            host.ops[n].front().map(|o| o.at),
            retry.then_some(now + 1),
        ];
        if let Some(t) = next.into_iter().flatten().min() {
            self.schedule_nic(n, t.max(now + 1));
        }
        Ok(())
    }

    /// A core's access reaches NIC `n` at `now`.
    fn host_op(&mut self, n: usize, op: HostOp, now: u64) -> Result<(), SimError> {
        let (c, req) = (op.core as usize, op.req);
        let host = self.nics.as_mut().expect("NICs");
        let (_, region, off) = host.map.locate(req.addr).expect("located when issued");
        let back = host.one_way[c];
        let posted = host.posted(region);
        let nic = &mut host.nics[n];
        let err = |e: crate::nic::NicError| SimError::check(now, format!("core {c}: {e}"));
        match (req.kind, region) {
            (AccessKind::Load, Region::Regs | Region::ReadWindow) => {
                let window = region == Region::ReadWindow;
                let v = nic.load(window, off, req.size, now).map_err(err)?;
                self.complete_at(c, req, v, now + back);
            }
            (AccessKind::Load, Region::Cq) => {
                let v = nic.load_cq(off, now).map_err(err)?;
                self.complete_at(c, req, v, now + back);
            }
            (AccessKind::Load, Region::Lh) => {
                nic.stats.lh_loads += 1;
                let line = line_of(req.addr);
                let bank = crate::coherence::home_bank(line, self.dirs.len());
                let data = self.dirs[bank].mem.read(line);
                let o = (req.addr - line) as usize;
                let v = crate::mem::read_bytes(&data, o, req.size as usize);
                self.complete_at(c, req, v, now + back);
            }
            (AccessKind::Store, Region::Send) => {
                nic.store_send(off, req.size, req.value).map_err(err)?;
            }
            (AccessKind::Store, Region::Regs) => {
                if let Some(sent) = nic.store_reg(off, req.value, now).map_err(err)? {
                    self.send_packet(n, sent, now)?;
                }
            }
            (kind, region) => {
                let detail = format!(
                    "NIC {n}: a {} of {region:?} byte {off}, which the host may not do",
                    if kind == AccessKind::Load {
                        "load"
                    } else {
                        "store"
                    }
                );
                return Err(SimError::check(now, detail));
            }
        }
        if req.kind == AccessKind::Store && !posted {
            self.complete_at(c, req, req.value, now);
        }
        Ok(())
    }

    /// A message NIC `n` put on the wire, to its destination NIC.
    fn send_packet(&mut self, n: usize, sent: crate::nic::Sent, now: u64) -> Result<(), SimError> {
        let host = self.nics.as_mut().expect("NICs");
        let Some(dst) = host.nics.get_mut(sent.dst) else {
            return Err(SimError::check(
                now,
                format!("NIC {n}: a message for node {}, which has none", sent.dst),
            ));
        };
        dst.arrive(sent.at, sent.packet);
        if let Some(t) = dst.next_event() {
            self.schedule_nic(sent.dst, t.max(now + 1));
        }
        Ok(())
    }

    /// NIC `n`'s dividing controller takes what it can at `now`; true if an LH write must
    /// wait for a line in flight.
    fn divide(&mut self, n: usize, now: u64) -> Result<bool, SimError> {
        loop {
            let host = self.nics.as_mut().expect("NICs");
            host.nics[n].finish_vl(now);
            let next = host.nics[n]
                .next_division(now)
                .map_err(|e| SimError::check(now, e.to_string()))?;
            let Some(d) = next else {
                return Ok(false);
            };
            if !d.head.is_empty() {
                let at = host.map.addr(n, Region::Lh, d.lh_offset);
                if !self.device_write(n, at, &d.head, now)? {
                    return Ok(true);
                }
            }
            let nic = &mut self.nics.as_mut().expect("NICs").nics[n];
            nic.commit_division(now)
                .map_err(|e| SimError::check(now, e.to_string()))?;
        }
    }

    /// NIC `n` writes `bytes` at physical `addr` (its LH buffer), line by line, taking the
    /// cores' copies out of their caches; false, writing nothing, while a controller has a
    /// request for one of the lines in flight.
    fn device_write(
        &mut self,
        n: usize,
        addr: u64,
        bytes: &[u8],
        now: u64,
    ) -> Result<bool, SimError> {
        let end = addr + bytes.len() as u64;
        let lines: Vec<u64> = (line_of(addr)..end).step_by(LINE_BYTES).collect();
        let banks = self.dirs.len();
        for &l in &lines {
            let d = &self.dirs[crate::coherence::home_bank(l, banks)];
            let busy = !d.table().is_stable(d.entry(l).state)
                || self
                    .caches
                    .iter()
                    .any(|c| c.tbes().iter().any(|t| t.addr == l));
            if busy {
                return Ok(false);
            }
        }
        for &l in &lines {
            for c in 0..self.caches.len() {
                if self.caches[c].state(l) != self.caches[c].ids().i {
                    self.caches[c]
                        .evict(l, &mut self.wire, &mut self.done)
                        .map_err(violation_at(now))?;
                    self.nics.as_mut().expect("NICs").nics[n]
                        .stats
                        .invalidations += 1;
                }
            }
            let bank = crate::coherence::home_bank(l, banks);
            let mut data = self.dirs[bank].mem.read(l);
            let from = addr.max(l);
            let to = end.min(l + LINE_BYTES as u64);
            let src = &bytes[(from - addr) as usize..(to - addr) as usize];
            data[(from - l) as usize..(to - l) as usize].copy_from_slice(src);
            self.dirs[bank].mem.write(l, &data);
        }
        Ok(true)
    }

    /// Core `c`'s `clflush` of physical `addr`: false while the line is busy.
    pub(super) fn flush_line(&mut self, c: usize, addr: u64, now: u64) -> Result<bool, SimError> {
        self.caches[c]
            .flush(addr, &mut self.wire, &mut self.done)
            .map_err(violation_at(now))
    }

    /// Core `c`'s software prefetch of physical `addr`: dropped for an address its caches
    /// never hold (x86 does not prefetch uncacheable or write-combining memory).
    pub(super) fn software_prefetch(
        &mut self,
        c: usize,
        addr: u64,
        now: u64,
    ) -> Result<(), SimError> {
        if self.nics.as_ref().is_some_and(|h| h.is_uncached(addr)) {
            self.caches[c].stats.sw_prefetches_dropped += 1;
            return Ok(());
        }
        self.caches[c]
            .software_prefetch(addr, &mut self.wire, &mut self.done)
            .map_err(violation_at(now))
    }
}

/// Core 0's uncontended load from memory on `cfg`'s system, in core cycles: what an L2
/// miss served by memory takes, and a NIC access (`[nic]`) before its own cycles.
pub fn memory_load_cycles(cfg: &SystemConfig) -> u64 {
    memory_round_trip(cfg, &super::moped_host::network(cfg, &[]), 0)
}

/// Core `c`'s uncontended round trip to memory and back through directory bank 0: its L1
/// and L2 lookups, the request's and the data's network paths, the directory and memory.
pub(super) fn memory_round_trip(cfg: &SystemConfig, net: &Network, c: usize) -> u64 {
    let dir = net.dir_node(0);
    let header = cfg.network.header_bytes;
    let data = header + crate::mem::LINE_BYTES as u32;
    cfg.l1.latency
        + cfg.l2.latency
        + net.uncontended_latency(c, dir, header)
        + cfg.directory.latency
        + cfg.memory.latency
        + net.uncontended_latency(dir, c, data)
}
