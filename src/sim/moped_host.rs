//! The simulator as the MOPEDs' host: port accesses routed to the local MOPED, messages
//! between MOPEDs on a virtual network of their own, line requests into the L2 controller
//! (retried while it stalls them), copy-unit writes, and page faults served by the OS.

use std::collections::VecDeque;

use crate::coherence::{
    AccessKind, Completed, CoreOutcome, CoreReq, HitLevel, MopedDone, MopedReq, Protocol,
};
use crate::config::SystemConfig;
use crate::moped::device::{DevMsg, DevOut, Moped, MopedParams, PortAnswer, PortCtx};
use crate::moped::ports::PortMap;
use crate::moped::MopedId;
use crate::net::{MsgClass, Network};
use crate::os::MemView;
use crate::stats::StatsRegistry;

use super::{violation_at, Driver, Ev, Sim, SimError};

/// Translations each core keeps (direct-mapped by virtual page).
pub(super) const TLB_ENTRIES: usize = 64;

/// The MOPEDs of a system running `protocol`: one per core, or none if the protocol has no
/// MOPED events.
pub(super) fn build_mopeds(
    cfg: &SystemConfig,
    protocol: &Protocol,
) -> Result<Vec<Moped>, SimError> {
    if !protocol.has_moped() {
        return Ok(Vec::new());
    }
    let n = cfg.system.cores;
    let ports = PortMap::new(cfg.moped.port_base).map_err(|e| SimError::Config(e.to_string()))?;
    (0..n)
        .map(|i| {
            Moped::new(MopedParams {
                id: i as MopedId,
                mopeds: n,
                descriptor_entries: cfg.moped.descriptor_entries,
                active_matches: cfg.moped.active_matches,
                copy_lines: cfg.moped.copy_send_lines,
                staging_lines: cfg.moped.staging_lines,
                walk_cache_lines: cfg.moped.walk_cache_lines,
                ops_per_cycle: cfg.moped.ops_per_cycle,
                fill: protocol.l2.event_id("M_FILL").is_some(),
                ports,
            })
            .map_err(|e| SimError::Config(format!("moped: {e}")))
        })
        .collect()
}

/// Host-side state of the MOPEDs.
pub(super) struct MopedHost {
    ports: PortMap,
    /// Whether MOPEDs exist (a port access without them is an error).
    present: bool,
    /// Messages between MOPEDs in flight: (destination, message); `Ev::DevDeliver` names a
    /// slot.
    slab: Vec<(MopedId, DevMsg)>,
    free: Vec<u32>,
    /// Network class of each message kind.
    classes: Vec<MsgClass>,
    /// Line requests the L2 stalled, per MOPED, in order.
    stalled: Vec<VecDeque<MopedReq>>,
    /// The OS's count of pages mapped when the MOPEDs last dropped their kept
    /// page-table lines.
    maps_seen: u64,
    /// Answers of L2 hits, waiting for the L2's latency: (due cycle, answer).
    answers: Vec<VecDeque<(u64, MopedDone)>>,
    /// Cycle of each MOPED's scheduled tick.
    tick_at: Vec<Option<u64>>,
    /// Port loads answered by another MOPED (the process moved).
    pub(super) forwarded_loads: u64,
    pub(super) dev_messages: u64,
    pub(super) line_stalls: u64,
}

impl MopedHost {
    pub(super) fn new(cfg: &SystemConfig, net: &mut Network, n: usize) -> MopedHost {
        let vnet = crate::coherence::MsgType::VNETS;
        let first = crate::coherence::MsgType::NAMES.len();
        let header = cfg.network.header_bytes;
        // Only a system with MOPEDs has their message classes (and statistics).
        let kinds = if n > 0 {
            DevMsg::PAYLOAD_BYTES.len()
        } else {
            0
        };
        let classes = DevMsg::PAYLOAD_BYTES[..kinds]
            .iter()
            .enumerate()
            .map(|(k, payload)| net.class(first + k, vnet, header + payload))
            .collect();
        MopedHost {
            ports: PortMap::new(cfg.moped.port_base).unwrap_or_default(),
            present: n > 0,
            slab: Vec::new(),
            free: Vec::new(),
            classes,
            stalled: vec![VecDeque::new(); n],
            maps_seen: 0,
            answers: vec![VecDeque::new(); n],
            tick_at: vec![None; n],
            forwarded_loads: 0,
            dev_messages: 0,
            line_stalls: 0,
        }
    }

    /// True if `addr` is a MOPED port address (the MMIO window), MOPEDs or not.
    #[inline]
    pub(super) fn is_port(&self, addr: u64) -> bool {
        self.ports.contains(addr)
    }

    pub(super) fn has_stalled(&self, m: usize) -> bool {
        self.stalled.get(m).is_some_and(|q| !q.is_empty())
    }
}

impl Sim {
    /// A core address made physical: virtual addresses of a core running a process are
    /// translated (mapping a lazy page at its first touch); port addresses are physical.
    pub(super) fn physical(&mut self, c: usize, addr: u64, now: u64) -> Result<u64, SimError> {
        let Some(p) = self.cores[c].proc else {
            return Ok(addr);
        };
        if self.moped_host.is_port(addr) {
            return Ok(addr);
        }
        // A software TLB: pages are never unmapped or moved, so a translation stays valid.
        let vpage = addr >> 12;
        let slot = c * TLB_ENTRIES + (vpage as usize % TLB_ENTRIES);
        let (tp, tv, frame) = self.tlb[slot];
        if tp == p && tv == vpage {
            return Ok(frame | (addr & 0xFFF));
        }
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        let pa = self
            .os
            .translate(&mut mem, p, addr)
            .map_err(|e| SimError::Check {
                cycle: now,
                detail: format!("core {c}: {e}"),
            })?;
        self.tlb[slot] = (p, vpage, pa & !0xFFF);
        Ok(pa)
    }

    /// A core's load or store to a port: answered by its local MOPED after the port latency,
    /// or later if the MOPED forwarded it.
    pub(super) fn port_access(&mut self, c: usize, req: CoreReq, now: u64) -> Result<(), SimError> {
        if !self.moped_host.present {
            return Err(SimError::Check {
                cycle: now,
                detail: format!(
                    "core {c}: access to MOPED port {:#x}, but protocol `{}` has no MOPED",
                    req.addr, self.protocol.name
                ),
            });
        }
        let pt_root = self.cores[c]
            .proc
            .map(|p| self.os.procs[p].space.root())
            .unwrap_or(0);
        let ctx = PortCtx {
            core: c as u16,
            pt_root,
        };
        let m = &mut self.mopeds[c];
        let is_load = req.kind == AccessKind::Load;
        let value = if is_load {
            match m.port_load(ctx, req.addr, req.size) {
                PortAnswer::Value(v) => Some(v),
                PortAnswer::Later => None,
            }
        } else {
            // Errors are the device's to count; a store is posted either way.
            let _ = m.port_store(ctx, req.addr, req.size, req.value);
            Some(req.value)
        };
        self.wake_moped(c, now);
        let core = &mut self.cores[c];
        match value {
            Some(v) => {
                let comp = Completed {
                    req,
                    value: v,
                    level: HitLevel::Port,
                };
                if is_load {
                    core.hit_load = Some(comp);
                    core.load_outstanding = true;
                } else {
                    core.hit_store = Some(comp);
                    core.store_outstanding = true;
                }
                let at = now + self.cfg.moped.port_latency;
                self.wire.q.schedule(at, Ev::HitDone(c as u16, is_load));
            }
            None => {
                self.moped_host.forwarded_loads += 1;
                core.load_outstanding = true;
            }
        }
        Ok(())
    }

    /// Schedules MOPED `m`'s tick for the next cycle, unless one is due sooner.
    pub(super) fn wake_moped(&mut self, m: usize, now: u64) {
        self.schedule_moped(m, now + 1);
    }

    fn schedule_moped(&mut self, m: usize, at: u64) {
        match self.moped_host.tick_at[m] {
            Some(t) if t <= at => {}
            _ => {
                self.moped_host.tick_at[m] = Some(at);
                self.wire.q.schedule(at, Ev::MopedTick(m as u16));
            }
        }
    }

    /// A message between MOPEDs arrives.
    pub(super) fn dev_deliver(&mut self, slot: u32, now: u64) {
        let (dst, msg) = self.moped_host.slab[slot as usize];
        self.moped_host.free.push(slot);
        self.mopeds[dst as usize].receive(msg);
        self.wake_moped(dst as usize, now);
    }

    /// Answers the L2 of core `m` produced for its MOPED while taking a message: they reach
    /// the device at once (the message's latency is paid).
    pub(super) fn pass_moped_answers(&mut self, m: usize, now: u64) {
        let answers: Vec<MopedDone> = self.caches[m].take_moped_done().collect();
        for a in answers {
            self.mopeds[m].line_done(a);
        }
        self.wake_moped(m, now);
    }

    /// One MOPED tick: due L2 answers in, stalled line requests retried, the device's work,
    /// and its requests out.
    pub(super) fn moped_tick<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        // A tick moved to a later cycle leaves a stale event behind: skip it.
        if self.moped_host.tick_at[m].is_some_and(|t| t > now) {
            return Ok(());
        }
        self.moped_host.tick_at[m] = None;
        // Pages mapped since the MOPEDs last walked: their kept page-table lines may be
        // stale.
        if self.os.demand_maps != self.moped_host.maps_seen {
            self.moped_host.maps_seen = self.os.demand_maps;
            for d in &mut self.mopeds {
                d.flush_walks();
            }
        }
        while let Some(&(due, a)) = self.moped_host.answers[m].front() {
            if due > now {
                self.schedule_moped(m, due);
                break;
            }
            self.moped_host.answers[m].pop_front();
            self.mopeds[m].line_done(a);
        }
        let stalled = std::mem::take(&mut self.moped_host.stalled[m]);
        for req in stalled {
            self.line_request(m, req, now)?;
        }
        let next = self.mopeds[m].tick(now);
        self.drain_moped(m, now, driver)?;
        if let Some(t) = next {
            self.schedule_moped(m, t.max(now + 1));
        }
        Ok(())
    }

    /// Carries out what MOPED `m` asked for.
    fn drain_moped<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let outs: Vec<DevOut> = self.mopeds[m].take_out().collect();
        for o in outs {
            match o {
                DevOut::Send { dst, msg } => self.send_dev(m, dst, msg, now),
                DevOut::Line(req) => self.line_request(m, req, now)?,
                DevOut::Write { addr, data, mask } => {
                    let ok = self.caches[m].moped_write(addr, &data, mask);
                    self.mopeds[m].write_done(addr, ok);
                    self.wake_moped(m, now);
                }
                DevOut::Fault {
                    slot, pt_root, va, ..
                } => self.moped_fault(m, slot, pt_root, va, now),
                DevOut::PortValue { core, value } => {
                    self.forwarded_load_done(core as usize, value, now, driver)?
                }
            }
        }
        Ok(())
    }

    fn send_dev(&mut self, src: usize, dst: MopedId, msg: DevMsg, now: u64) {
        self.moped_host.dev_messages += 1;
        let class = self.moped_host.classes[msg.index()];
        // No random delay: channels between two MOPEDs stay FIFO.
        let t = self
            .wire
            .net
            .send_class(now + 1, src, dst as usize, &class, 0);
        let h = &mut self.moped_host;
        let slot = match h.free.pop() {
            Some(s) => {
                h.slab[s as usize] = (dst, msg);
                s
            }
            None => {
                h.slab.push((dst, msg));
                (h.slab.len() - 1) as u32
            }
        };
        self.wire.q.schedule(t, Ev::DevDeliver(slot));
    }

    /// Issues a line request into MOPED `m`'s L2, keeping it for a retry if stalled.
    fn line_request(&mut self, m: usize, req: MopedReq, now: u64) -> Result<(), SimError> {
        let out = self.caches[m]
            .moped_request(req, &mut self.wire, &mut self.done)
            .map_err(violation_at(now))?;
        debug_assert!(
            self.done.is_empty(),
            "a MOPED request completed a core access"
        );
        match out {
            CoreOutcome::Stalled => {
                self.moped_host.line_stalls += 1;
                self.moped_host.stalled[m].push_back(req);
            }
            CoreOutcome::Hit(_) => {
                let due = now + self.cfg.l2.latency;
                let answers: Vec<MopedDone> = self.caches[m].take_moped_done().collect();
                for a in answers {
                    self.moped_host.answers[m].push_back((due, a));
                }
                self.schedule_moped(m, due);
            }
            CoreOutcome::Miss => {}
        }
        Ok(())
    }

    /// MOPED reported an unmapped page: the process's core (if it runs) spends the fault
    /// penalty in the OS, which maps the page if it lies in the process.
    fn moped_fault(&mut self, m: usize, slot: usize, pt_root: u64, va: u64, now: u64) {
        let penalty = self.cfg.moped.fault_penalty;
        if let Some(p) = self.os.proc_of_root(pt_root) {
            if let Some(c) = self.cores.iter().position(|c| c.proc == Some(p)) {
                let core = &mut self.cores[c];
                core.busy_until = core.busy_until.max(now) + penalty;
            }
        }
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        let mapped = self.os.service_fault(&mut mem, pt_root, va);
        self.wire.q.schedule(
            now + penalty.max(1),
            Ev::FaultDone(m as u16, slot as u16, mapped),
        );
    }

    /// The value of a port load that MOPED forwarded to another MOPED.
    fn forwarded_load_done<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        value: u64,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let Some(req) = self.cores[c]
            .load
            .filter(|r| self.moped_host.is_port(r.addr))
        else {
            return Err(SimError::Check {
                cycle: now,
                detail: format!("core {c}: a forwarded port value arrived without a port load"),
            });
        };
        let comp = Completed {
            req,
            value,
            level: HitLevel::Port,
        };
        self.finish_access(c, &comp, now, driver)
    }

    /// MOPEDs with work left when the run ends: a copy or a line request that never
    /// finished is a deadlock.
    pub(super) fn check_mopeds_quiescent(&self) -> Result<(), SimError> {
        for (m, d) in self.mopeds.iter().enumerate() {
            if self.moped_host.has_stalled(m) || !d.copies_idle() {
                return Err(SimError::Watchdog {
                    cycle: self.now(),
                    detail: format!(
                        "MOPED {m}: a copy or line request still outstanding when every core finished"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The MOPEDs' statistics, each with its description and unit.
    pub(super) fn register_moped_stats(&self, r: &mut StatsRegistry) {
        if self.mopeds.is_empty() {
            return;
        }
        type Get = fn(&crate::moped::device::MopedStats) -> u64;
        let items: &[(&str, Get, &str)] = &[
            (
                "reserved",
                |s| s.reserved,
                "Descriptors reserved by data-port loads",
            ),
            (
                "refused",
                |s| s.refused,
                "Reservations refused (table full or backoff)",
            ),
            (
                "forwarded",
                |s| s.forwarded,
                "Complete descriptors sent to their matching MOPED",
            ),
            (
                "forward_refusals",
                |s| s.forward_refusals,
                "Forwarded descriptors refused by a full table here",
            ),
            ("matched", |s| s.matched, "Send/receive pairs matched here"),
            (
                "match_searches",
                |s| s.match_searches,
                "Match searches run here",
            ),
            (
                "match_search_entries",
                |s| s.match_search_entries,
                "Table entries examined by match searches (sum of search lengths)",
            ),
            (
                "match_search_max",
                |s| s.match_search_max,
                "Longest match search",
            ),
            (
                "activated",
                |s| s.activated,
                "Matched pairs moved into the active match table",
            ),
            (
                "completed",
                |s| s.completed,
                "Copies finished here (receive side)",
            ),
            (
                "failed",
                |s| s.failed,
                "Copies finished with an error (outside the process, truncation)",
            ),
            (
                "truncated",
                |s| s.truncated,
                "Messages longer than their receive buffer",
            ),
            ("revoked", |s| s.revoked, "Descriptors revoked by backoff"),
            ("polls", |s| s.polls, "Poll-port loads"),
            (
                "poll_retries",
                |s| s.poll_retries,
                "Polls answered Retry (the cached poll mapping did not match)",
            ),
            (
                "port_errors",
                |s| s.port_errors,
                "Port accesses refused (bad address, isolation, bad value)",
            ),
            (
                "port_forwards",
                |s| s.port_forwards,
                "Port accesses forwarded to the descriptor's MOPED",
            ),
            (
                "backoffs_set",
                |s| s.backoffs_set,
                "Times a program's backoff bit was set here",
            ),
            (
                "backoffs_cleared",
                |s| s.backoffs_cleared,
                "Times a program's backoff bit was cleared here",
            ),
            (
                "line_reads",
                |s| s.line_reads,
                "Line reads for the copy unit and page walks (M_GETS)",
            ),
            (
                "line_owns",
                |s| s.line_owns,
                "Receive lines requested with their data (M_GETX)",
            ),
            (
                "line_fills",
                |s| s.line_fills,
                "Receive lines requested without their data (M_FILL)",
            ),
            (
                "line_writes",
                |s| s.line_writes,
                "Receive lines written by the copy unit",
            ),
            (
                "write_retries",
                |s| s.write_retries,
                "Copy-unit writes that found the rights lost",
            ),
            ("faults", |s| s.faults, "Page faults reported to the OS"),
            ("walks", |s| s.walks, "Page walks"),
            (
                "walk_line_reads",
                |s| s.walk_line_reads,
                "Page-table lines read by walks",
            ),
            (
                "walk_staging_hits",
                |s| s.walk_staging_hits,
                "Page-table entries found in the staging buffer",
            ),
            (
                "op_limit_cycles",
                |s| s.op_limit_cycles,
                "Cycles the copy units used every coherence-operation slot",
            ),
            (
                "anomalies",
                |s| s.anomalies,
                "Answers the device did not expect (must be 0)",
            ),
        ];
        for (name, get, desc) in items {
            let mut total = 0;
            for (i, d) in self.mopeds.iter().enumerate() {
                let v = get(&d.stats);
                total += v;
                r.scalar(format!("system.moped{i}.{name}"), v, desc, "Count");
            }
            r.scalar(format!("system.moped.{name}"), total, desc, "Count");
        }
        type CacheGet = fn(&crate::coherence::cache::CacheStats) -> u64;
        let l2: &[(&str, CacheGet, &str)] = &[
            (
                "moped_reads",
                |s| s.moped_reads,
                "MOPED line reads (M_GETS) taken by the L2s",
            ),
            (
                "moped_owns",
                |s| s.moped_owns,
                "MOPED exclusive requests (M_GETX) taken by the L2s",
            ),
            (
                "moped_fills",
                |s| s.moped_fills,
                "MOPED fill requests (M_FILL) taken by the L2s",
            ),
            (
                "moped_local",
                |s| s.moped_local,
                "MOPED requests answered from the core's own caches",
            ),
            (
                "moped_misses_memory",
                |s| s.moped_misses_memory,
                "MOPED requests that missed in the L2 and were served by memory",
            ),
            (
                "moped_misses_other_cache",
                |s| s.moped_misses_other_cache,
                "MOPED requests that missed in the L2 and were served by another cache",
            ),
            (
                "moped_misses_no_data",
                |s| s.moped_misses_no_data,
                "MOPED requests that missed in the L2 and were granted without data (fills, upgrades)",
            ),
            (
                "copy_requests",
                |s| s.copy_requests,
                "GET_COPY requests sent (OPTCOPY)",
            ),
            (
                "fill_requests",
                |s| s.fill_requests,
                "GET_FILL requests sent (OPTCACHE)",
            ),
            (
                "moped_writes",
                |s| s.moped_writes,
                "Copy-unit writes into granted lines",
            ),
            (
                "moped_writes_revoked",
                |s| s.moped_writes_revoked,
                "Copy-unit writes that found the rights lost",
            ),
        ];
        for (name, get, desc) in l2 {
            let total: u64 = self.caches.iter().map(|c| get(&c.stats)).sum();
            r.scalar(format!("system.total.l2.{name}"), total, desc, "Count");
        }
        let copies: u64 = self.dirs.iter().map(|d| d.stats.copy_requests).sum();
        let fills: u64 = self.dirs.iter().map(|d| d.stats.fill_requests).sum();
        r.scalar(
            "system.total.dir.copy_requests",
            copies,
            "GET_COPY requests the directories took",
            "Count",
        );
        r.scalar(
            "system.total.dir.fill_requests",
            fills,
            "GET_FILL requests the directories took",
            "Count",
        );
        let h = &self.moped_host;
        r.scalar(
            "system.moped.messages",
            h.dev_messages,
            "Messages between MOPEDs",
            "Count",
        );
        r.scalar(
            "system.moped.line_stalls",
            h.line_stalls,
            "MOPED line requests the L2 stalled (retried)",
            "Count",
        );
        r.scalar(
            "system.moped.forwarded_loads",
            h.forwarded_loads,
            "Port loads answered by another MOPED",
            "Count",
        );
    }
}

impl Sim {
    /// Creates a process (see [`crate::os::Os::spawn`]).
    pub fn spawn(
        &mut self,
        program: crate::moped::ProgramId,
        rank: crate::moped::Rank,
        regions: &[crate::os::Region],
    ) -> Result<crate::os::ProcId, crate::os::OsError> {
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        self.os.spawn(&mut mem, program, rank, regions)
    }

    /// Maps `[va, va + bytes)` of the processes to shared frames (see [`crate::os::Os::share`]).
    pub fn share(
        &mut self,
        procs: &[crate::os::ProcId],
        va: u64,
        bytes: u64,
    ) -> Result<(), crate::os::OsError> {
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        self.os.share(&mut mem, procs, va, bytes)
    }

    /// Runs process `proc` on core `core` from the start (drivers switch later with
    /// [`super::Next::Switch`]).
    pub fn place(&mut self, core: usize, proc: Option<crate::os::ProcId>) {
        self.cores[core].proc = proc;
    }

    /// Writes bytes at a process's virtual address straight into memory, mapping lazy pages:
    /// for setting up buffers before a run, while no cache holds them.
    pub fn write_virtual(
        &mut self,
        proc: crate::os::ProcId,
        va: u64,
        bytes: &[u8],
    ) -> Result<(), crate::os::OsError> {
        use crate::moped::xlate::PhysMem;
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        let mut off = 0;
        while off < bytes.len() {
            let a = va + off as u64;
            let pa = self.os.translate(&mut mem, proc, a)?;
            // Up to the end of the page.
            let room =
                (crate::moped::xlate::PAGE_BYTES - (a % crate::moped::xlate::PAGE_BYTES)) as usize;
            let n = room.min(bytes.len() - off);
            mem.write_range(pa, &bytes[off..off + n]);
            off += n;
        }
        Ok(())
    }

    /// The current value of a line: a cache's modified copy if one has it, else memory.
    /// Exact when the system is quiescent (after a run).
    pub fn read_line_coherent(&self, line: crate::mem::LineAddr) -> crate::mem::LineData {
        for c in &self.caches {
            if let Some(l) = c.line_copy(line) {
                if l.dirty {
                    return l.data;
                }
            }
        }
        self.dirs[crate::coherence::home_bank(line, self.dirs.len())]
            .mem
            .read(line)
    }

    /// Reads bytes at a process's virtual address as the program would see them after a
    /// run; unmapped pages read as zero.
    pub fn read_virtual(&self, proc: crate::os::ProcId, va: u64, len: usize) -> Vec<u8> {
        let view = ReadView { sim: self };
        let space = &self.os.procs[proc].space;
        // One walk and one coherent read per line, not per byte.
        let mut line: Option<(u64, Option<crate::mem::LineData>)> = None;
        (0..len as u64)
            .map(|i| {
                let a = va + i;
                let vline = crate::mem::line_of(a);
                if line.map(|l| l.0) != Some(vline) {
                    let data = space
                        .translate(&view, vline)
                        .map(|pa| self.read_line_coherent(pa));
                    line = Some((vline, data));
                }
                line.and_then(|l| l.1).map_or(0, |d| d[(a % 64) as usize])
            })
            .collect()
    }
}

/// Memory as page walks see it at rest (page tables are never cached).
struct ReadView<'a> {
    sim: &'a Sim,
}

impl crate::moped::xlate::PhysMem for ReadView<'_> {
    fn read_line(&self, line: crate::mem::LineAddr) -> crate::mem::LineData {
        self.sim.read_line_coherent(line)
    }

    fn write_line(&mut self, _line: crate::mem::LineAddr, _data: &crate::mem::LineData) {
        unreachable!("a read-only view")
    }
}

impl Sim {
    /// A line's current value at any moment of a run: a cache's modified copy, else a
    /// writeback in progress (its TBE, then its data message in flight), else memory.
    /// `live` marks the message slots in flight.
    fn read_line_current(&self, line: crate::mem::LineAddr, live: &[bool]) -> crate::mem::LineData {
        for c in &self.caches {
            if let Some(l) = c.line_copy(line) {
                if l.dirty {
                    return l.data;
                }
            }
        }
        for c in &self.caches {
            if let Some(t) = c
                .tbes()
                .iter()
                .find(|t| t.addr == line && t.state.is_some() && t.dirty)
            {
                return t.data;
            }
        }
        if let Some(m) = self
            .wire_slab()
            .iter()
            .zip(live)
            .find(|(m, &l)| l && m.addr == line && m.dirty)
        {
            return m.0.data;
        }
        self.dirs[crate::coherence::home_bank(line, self.dirs.len())]
            .mem
            .read(line)
    }
}

impl super::VirtualMemory for Sim {
    fn read(&self, proc: crate::os::ProcId, va: u64, len: usize) -> Vec<u8> {
        let view = ReadView { sim: self };
        let Some(p) = self.os.procs.get(proc) else {
            return vec![0; len];
        };
        let live = self.wire_live();
        let stores: Vec<&CoreReq> = self.buffered_stores(proc).collect();
        let mut out = Vec::with_capacity(len);
        let mut a = va;
        let end = va + len as u64;
        while a < end {
            let vline = crate::mem::line_of(a);
            let n = ((vline + 64).min(end) - a) as usize;
            match p.space.translate(&view, vline) {
                Some(pa) => {
                    let mut d = self.read_line_current(pa, &live);
                    for s in stores.iter().filter(|s| crate::mem::line_of(s.addr) == pa) {
                        let o = (s.addr - pa) as usize;
                        for b in 0..s.size as usize {
                            d[o + b] = (s.value >> (8 * b)) as u8;
                        }
                    }
                    let o = (a - vline) as usize;
                    out.extend_from_slice(&d[o..o + n]);
                }
                None => out.resize(out.len() + n, 0),
            }
            a += n as u64;
        }
        out
    }
}
