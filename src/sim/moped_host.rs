//! A system as the MOPEDs' host: port accesses routed to the local MOPED (in `cores`),
//! messages between MOPEDs on a virtual network of their own, line requests and copy-unit
//! writes into the [`Platform`]'s memory system, and page faults served by the OS. The
//! functions here run on any platform; the embedded simulator's part (its L2 controllers
//! take the line requests, retried while they stall them) follows them.

use std::collections::VecDeque;

use crate::coherence::{
    CacheCtrl, Completed, CoreOutcome, DirCtrl, HitLevel, MopedDone, MopedKind, MopedReq, Protocol,
};
use crate::config::SystemConfig;
use crate::mem::{line_of, LineAddr, LineData};
use crate::moped::device::{DevMsg, DevOut, Moped, MopedParams};
use crate::moped::engines::{EngineStats, StepKind};
use crate::moped::matching::Queue;
use crate::moped::ports::PortMap;
use crate::moped::MopedId;
use crate::net::Network;
use crate::stats::{stat_table, StatDef, StatsRegistry};

use super::platform::{finish_access, DevNet, Ev, Platform};
use super::{violation_at, Driver, LineAnswer, LineOp, Sim, SimError};

/// The MOPEDs of a system running `protocol`: one per core, or none if the protocol has no
/// MOPED events.
pub(crate) fn build_mopeds(
    cfg: &SystemConfig,
    protocol: &Protocol,
) -> Result<Vec<Moped>, SimError> {
    if !protocol.has_moped() {
        return Ok(Vec::new());
    }
    let n = cfg.system.cores;
    let ports = PortMap::new(cfg.moped.port_base).map_err(|e| SimError::config(e.to_string()))?;
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
                page_table: cfg.os.page_table,
                ops_per_cycle: cfg.moped.ops_per_cycle,
                fill: protocol.l2.event_id("M_FILL").is_some(),
                ports,
                matcher: cfg.moped.matcher,
                core_mhz: cfg.system.core_ghz * 1000.0,
                matching: cfg.moped.matching,
                engines: cfg.moped.engine_params(),
            })
            .map_err(|e| SimError::config(format!("moped: {e}")))
        })
        .collect()
}

/// The network of a system: the coherence message types, then the MOPEDs' messages on a
/// virtual network of their own, then `extra` types (gem5's Ruby messages).
pub(crate) fn network(cfg: &SystemConfig, extra: &[&'static str]) -> Network {
    let names: Vec<&'static str> = crate::coherence::MsgType::NAMES
        .iter()
        .chain(DevMsg::NAMES.iter())
        .chain(extra.iter())
        .copied()
        .collect();
    Network::new(
        &cfg.net_config(),
        &names,
        crate::coherence::MsgType::VNETS + 1,
    )
}

/// Schedules MOPED `m`'s tick for the next cycle, unless one is due sooner.
pub(crate) fn wake_moped<P: Platform>(p: &mut P, m: usize, now: u64) {
    schedule_moped(p, m, now + 1);
}

pub(crate) fn schedule_moped<P: Platform>(p: &mut P, m: usize, at: u64) {
    let d = p.devices();
    match d.dev.tick_at[m] {
        Some(t) if t <= at => {}
        _ => {
            d.dev.tick_at[m] = Some(at);
            d.q.schedule(at, Ev::MopedTick(m as u16));
        }
    }
}

/// A message between MOPEDs arrives.
pub(crate) fn dev_deliver<P: Platform>(p: &mut P, slot: u32, now: u64) {
    let d = p.devices();
    let (dst, msg) = d.dev.slab[slot as usize];
    d.dev.free.push(slot);
    d.mopeds[dst as usize].receive(now, msg);
    wake_moped(p, dst as usize, now);
}

/// One MOPED tick: the memory system's answers in, the device's work, and its requests
/// out.
pub(crate) fn moped_tick<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    m: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    // A tick moved to a later cycle leaves a stale event behind: skip it.
    if p.dev().tick_at[m].is_some_and(|t| t > now) {
        return Ok(());
    }
    let maps = p.os().demand_maps;
    let d = p.devices();
    d.dev.tick_at[m] = None;
    // Pages mapped since the MOPEDs last walked: their kept page-table lines may be
    // stale.
    if maps != d.dev.maps_seen {
        d.dev.maps_seen = maps;
        for x in d.mopeds.iter_mut() {
            x.flush_walks();
        }
    }
    p.moped_inputs(m, now, driver)?;
    let next = p.devices().mopeds[m].tick(now);
    drain_moped(p, m, now, driver)?;
    if let Some(t) = next {
        schedule_moped(p, m, t.max(now + 1));
    }
    Ok(())
}

/// Carries out what MOPED `m` asked for.
fn drain_moped<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    m: usize,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let outs: Vec<DevOut> = p.devices().mopeds[m].take_out().collect();
    for o in outs {
        match o {
            DevOut::Send { dst, msg } => send_dev(p, m, dst, msg, now),
            DevOut::Line(req) => p.line_request(m, req, now)?,
            DevOut::Write { addr, data, mask } => p.line_write(m, addr, data, mask, now),
            DevOut::Fault {
                slot, pt_root, va, ..
            } => moped_fault(p, m, slot, pt_root, va, now),
            DevOut::PortValue { core, value } => {
                forwarded_load_done(p, core as usize, value, now, driver)?
            }
            DevOut::LocalValue { core, value } => local_load_done(p, core as usize, value, now)?,
        }
    }
    Ok(())
}

fn send_dev<P: Platform>(p: &mut P, src: usize, dst: MopedId, msg: DevMsg, now: u64) {
    let d = p.devices();
    d.dev.dev_messages += 1;
    let class = d.dev.classes[msg.index()];
    // No random delay: channels between two MOPEDs stay FIFO.
    let t = d.net.send_class(now + 1, src, dst as usize, &class, 0);
    let h = d.dev;
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
    d.q.schedule(t, Ev::DevDeliver(slot));
}

/// MOPED reported an unmapped page: the process's core (if it runs) spends the fault
/// penalty in the OS, which maps the page if it lies in the process.
fn moped_fault<P: Platform>(p: &mut P, m: usize, slot: usize, pt_root: u64, va: u64, now: u64) {
    let penalty = p.cfg().moped.fault_penalty;
    if let Some(x) = p.os().proc_of_root(pt_root) {
        if let Some(core) = p.cores_mut().iter_mut().find(|c| c.proc == Some(x)) {
            core.busy_until = core.busy_until.max(now) + penalty;
        }
    }
    let mapped = {
        let (os, _, mut mem) = p.os_parts();
        os.service_fault(&mut mem, pt_root, va)
    };
    p.queue().schedule(
        now + penalty.max(1),
        Ev::FaultDone(m as u16, slot as u16, mapped),
    );
}

/// The value of a port load that MOPED forwarded to another MOPED.
fn forwarded_load_done<P: Platform, D: Driver + ?Sized>(
    p: &mut P,
    c: usize,
    value: u64,
    now: u64,
    driver: &mut D,
) -> Result<(), SimError> {
    let comp = port_answer(p, c, value, now)?;
    finish_access(p, c, &comp, now, driver)
}

/// The value of a port load its local MOPED answered late: the core has it after the port
/// latency, as it has an immediate answer.
fn local_load_done<P: Platform>(p: &mut P, c: usize, value: u64, now: u64) -> Result<(), SimError> {
    let comp = port_answer(p, c, value, now)?;
    let at = now + p.cfg().moped.port_latency;
    p.cores_mut()[c].hit_load = Some(comp);
    p.queue().schedule(at, Ev::HitDone(c as u16, true));
    Ok(())
}

/// Core `c`'s outstanding port load, answered `value`.
fn port_answer<P: Platform>(p: &P, c: usize, value: u64, now: u64) -> Result<Completed, SimError> {
    let Some(req) = p
        .cores()
        .get(c)
        .and_then(|x| x.load)
        .filter(|r| p.dev().is_port(r.addr))
    else {
        return Err(SimError::check(
            now,
            format!("core {c}: a port value arrived without a port load"),
        ));
    };
    Ok(Completed {
        req,
        value,
        level: HitLevel::Port,
    })
}

/// MOPEDs with work left when the run ends: a copy or a line request that never finished
/// is a deadlock.
pub(crate) fn check_mopeds_quiescent<P: Platform>(p: &P, now: u64) -> Result<(), SimError> {
    for (m, d) in p.mopeds().iter().enumerate() {
        if p.lines_waiting(m) || !d.copies_idle() {
            return Err(SimError::watchdog(
                now,
                format!(
                    "MOPED {m}: a copy or line request still outstanding when every core finished"
                ),
            ));
        }
    }
    Ok(())
}

/// Each MOPED's counters, under `system.mopedN`, each followed by its sum over the MOPEDs
/// under `system.moped`.
const DEVICE_STATS: &[StatDef<Moped>] = stat_table!(Moped {
    "reserved" => stats.reserved, "Count", "Descriptors reserved by data-port loads";
    "refused" => stats.refused, "Count", "Reservations refused (table full or backoff)";
    "forwarded" => stats.forwarded, "Count", "Complete descriptors sent to their matching MOPED";
    "forward_refusals" => stats.forward_refusals, "Count",
        "Forwarded descriptors refused by a full table or matching engine here";
    "matched" => stats.matched, "Count", "Send/receive pairs matched here";
    "match_searches" => stats.match_searches, "Count", "Match searches run here";
    "match_search_entries" => stats.match_search_entries, "Count",
        "Entries the matching engine read one after another (table entries, list elements)";
    "match_search_max" => stats.match_search_max, "Count",
        "Most entries read by one match search (over the whole run)", level;
    "match_cycles" => stats.match_cycles, "Cycle",
        "Cycles the matching engine held its checks, at its own clock (`moped.matching.<engine>.mhz`): searches, insertions, waits for its ports";
    "match_overflows" => stats.match_overflows, "Count",
        "Unmatched arrivals queued past the engine's fast level (CAM, cells)";
    "match_full" => stats.match_full, "Count",
        "Arrivals refused because the matching engine's queue was full";
    "activated" => stats.activated, "Count", "Matched pairs moved into the active match table";
    "completed" => stats.completed, "Count", "Copies finished here (receive side)";
    "failed" => stats.failed, "Count",
        "Copies finished with an error (outside the process, truncation)";
    "truncated" => stats.truncated, "Count", "Messages longer than their receive buffer";
    "revoked" => stats.revoked, "Count", "Descriptors revoked by backoff";
    "polls" => stats.polls, "Count", "Poll-port loads";
    "poll_retries" => stats.poll_retries, "Count",
        "Polls answered Retry (the cached poll mapping did not match)";
    "port_errors" => stats.port_errors, "Count",
        "Port accesses refused (bad address, isolation, bad value)";
    "port_forwards" => stats.port_forwards, "Count",
        "Port accesses forwarded to the descriptor's MOPED";
    "backoffs_set" => stats.backoffs_set, "Count", "Times a program's backoff bit was set here";
    "backoffs_cleared" => stats.backoffs_cleared, "Count",
        "Times a program's backoff bit was cleared here";
    "line_reads" => stats.line_reads, "Count",
        "Line reads for the copy unit and page walks (M_GETS)";
    "line_owns" => stats.line_owns, "Count", "Receive lines requested with their data (M_GETX)";
    "line_fills" => stats.line_fills, "Count",
        "Receive lines requested without their data (M_FILL)";
    "line_writes" => stats.line_writes, "Count", "Receive lines written by the copy unit";
    "write_retries" => stats.write_retries, "Count", "Copy-unit writes that found the rights lost";
    "faults" => stats.faults, "Count", "Page faults reported to the OS";
    "walks" => stats.walks, "Count", "Page walks";
    "walk_line_reads" => stats.walk_line_reads, "Count", "Page-table lines read by walks";
    "walk_staging_hits" => stats.walk_staging_hits, "Count",
        "Page-table entries found in the staging buffer";
    "op_limit_cycles" => stats.op_limit_cycles, "Count",
        "Cycles the copy units used every coherence-operation slot";
    "anomalies" => stats.anomalies, "Count", "Answers the device did not expect (must be 0)";
});

/// What the MOPEDs' host counts, under `system.moped`.
const HOST_STATS: &[StatDef<DevNet>] = stat_table!(DevNet {
    "messages" => dev_messages, "Count", "Messages between MOPEDs";
    "forwarded_loads" => forwarded_loads, "Count", "Port loads answered by another MOPED";
});

/// The MOPEDs' own counters and their hosts' (`system.moped{i}.*`, `system.moped.*`), each
/// with its description and unit.
pub(crate) fn register_device_stats(r: &mut StatsRegistry, mopeds: &[Moped], dev: &DevNet) {
    for d in DEVICE_STATS {
        for (i, m) in mopeds.iter().enumerate() {
            r.row(
                format!("system.moped{i}.{}", d.name),
                d,
                std::iter::once((d.get)(m)),
            );
        }
        r.row(
            format!("system.moped.{}", d.name),
            d,
            mopeds.iter().map(d.get),
        );
    }
    r.table("system.moped", HOST_STATS, dev);
    register_depths(r, mopeds);
    register_engines(r, mopeds);
}

/// Each MOPED's engines (`system.moped{i}.engine{e}.*`) and their sums over the MOPEDs
/// (`system.moped.engine{e}.*`), and the number of copies active over time.
fn register_engines(r: &mut StatsRegistry, mopeds: &[Moped]) {
    let Some(first) = mopeds.first() else { return };
    let engines = first.engines.stats.len();
    type Get = fn(&EngineStats) -> u64;
    let counters: [(&str, Get, &str, &str); 3] = [
        (
            "busy_cycles",
            |s| s.busy,
            "Cycle",
            "Cycles the engine ran steps (hand-offs included)",
        ),
        (
            "lock_wait_cycles",
            |s| s.lock_wait,
            "Cycle",
            "Cycles steps waited, with the engine free, for a lock another engine held",
        ),
        (
            "handoffs",
            |s| s.handoffs,
            "Count",
            "Steps the engine took over from another engine",
        ),
    ];
    for e in 0..engines {
        let of = |m: &Moped| m.engines.stats[e].clone();
        let each: Vec<EngineStats> = mopeds.iter().map(of).collect();
        for (name, get, unit, desc) in counters {
            for (i, st) in each.iter().enumerate() {
                r.scalar(
                    format!("system.moped{i}.engine{e}.{name}"),
                    get(st),
                    desc,
                    unit,
                );
            }
            let sum = each.iter().map(get).sum();
            r.scalar(format!("system.moped.engine{e}.{name}"), sum, desc, unit);
        }
        for k in StepKind::ALL {
            let desc = format!("`{}` steps run on the engine ({})", k.name(), k.emp_name());
            for (i, st) in each.iter().enumerate() {
                let name = format!("system.moped{i}.engine{e}.steps.{}", k.name());
                r.scalar(name, st.steps_of(k), &desc, "Count");
            }
            let sum = each.iter().map(|s| s.steps_of(k)).sum();
            r.scalar(
                format!("system.moped.engine{e}.steps.{}", k.name()),
                sum,
                &desc,
                "Count",
            );
            let desc = format!("Cycles the engine spent in `{}` steps", k.name());
            for (i, st) in each.iter().enumerate() {
                let name = format!("system.moped{i}.engine{e}.step_cycles.{}", k.name());
                r.scalar(name, st.cycles_of(k), &desc, "Cycle");
            }
            let sum = each.iter().map(|s| s.cycles_of(k)).sum();
            let name = format!("system.moped.engine{e}.step_cycles.{}", k.name());
            r.scalar(name, sum, &desc, "Cycle");
        }
    }
    let desc = "Cycles with each number of copies active, from the MOPED's first activation";
    let mut all = first.active_copies.clone();
    for (i, m) in mopeds.iter().enumerate() {
        r.dist(
            format!("system.moped{i}.active_copies"),
            &m.active_copies,
            desc,
            "Cycle",
        );
        if i > 0 {
            // Every MOPED's distribution has the same buckets, so merging cannot fail.
            all.merge(&m.active_copies).ok();
        }
    }
    r.dist("system.moped.active_copies", &all, desc, "Cycle");
}

/// MPI's search depths at each matching MOPED and over all of them.
fn register_depths(r: &mut StatsRegistry, mopeds: &[Moped]) {
    for q in [Queue::Posted, Queue::Unexpected] {
        let (name, desc) = match q {
            Queue::Posted => ("prq_depth", "Posted-receive queue search depth per arriving send: the matched receive's position (from 1), or the queue's length when none matched"),
            Queue::Unexpected => ("umq_depth", "Unexpected queue search depth per arriving receive: the matched message's position (from 1), or the queue's length when none matched"),
        };
        let Some(first) = mopeds.first() else { return };
        let mut all = first.depths[q as usize].clone();
        for (i, m) in mopeds.iter().enumerate() {
            let d = &m.depths[q as usize];
            r.dist(format!("system.moped{i}.{name}"), d, desc, "Count");
            if i > 0 {
                // Every MOPED's distribution has the same buckets, so merging cannot fail.
                all.merge(d).ok();
            }
        }
        r.dist(format!("system.moped.{name}"), &all, desc, "Count");
    }
}

/// The MOPED requests of the embedded simulator's L2s, summed over them under
/// `system.total.l2`.
const L2_MOPED_TOTALS: &[StatDef<CacheCtrl>] = stat_table!(CacheCtrl {
    "moped_reads" => stats.moped_reads, "Count", "MOPED line reads (M_GETS) taken by the L2s";
    "moped_owns" => stats.moped_owns, "Count", "MOPED exclusive requests (M_GETX) taken by the L2s";
    "moped_fills" => stats.moped_fills, "Count", "MOPED fill requests (M_FILL) taken by the L2s";
    "moped_local" => stats.moped_local, "Count",
        "MOPED requests answered from the core's own caches";
    "moped_misses_memory" => stats.moped_misses_memory, "Count",
        "MOPED requests that missed in the L2 and were served by memory";
    "moped_misses_other_cache" => stats.moped_misses_other_cache, "Count",
        "MOPED requests that missed in the L2 and were served by another cache";
    "moped_walk_misses_memory" => stats.moped_walk_misses_memory, "Count",
        "MOPED page-walk reads that missed in the L2 and were served by memory";
    "moped_misses_no_data" => stats.moped_misses_no_data, "Count",
        "MOPED requests that missed in the L2 and were granted without data (fills, upgrades)";
    "copy_requests" => stats.copy_requests, "Count", "GET_COPY requests sent (OPTCOPY)";
    "fill_requests" => stats.fill_requests, "Count", "GET_FILL requests sent (OPTCACHE)";
    "moped_writes" => stats.moped_writes, "Count", "Copy-unit writes into granted lines";
    "moped_writes_revoked" => stats.moped_writes_revoked, "Count",
        "Copy-unit writes that found the rights lost";
});

/// The OPTCOPY and OPTCACHE requests of its directories, summed over them under
/// `system.total.dir`.
const DIR_MOPED_TOTALS: &[StatDef<DirCtrl>] = stat_table!(DirCtrl {
    "copy_requests" => stats.copy_requests, "Count", "GET_COPY requests the directories took";
    "fill_requests" => stats.fill_requests, "Count", "GET_FILL requests the directories took";
});

/// What its MOPED host counts, under `system.moped`.
const SIM_HOST_STATS: &[StatDef<MopedHost>] = stat_table!(MopedHost {
    "line_stalls" => line_stalls, "Count", "MOPED line requests the L2 stalled (retried)";
});

/// The embedded simulator's side of its MOPEDs: line requests its L2 controllers stalled
/// and answers of L2 hits waiting for the L2's latency.
pub(super) struct MopedHost {
    pub(super) dev: DevNet,
    /// Line requests the L2 stalled, per MOPED, in order.
    stalled: Vec<VecDeque<MopedReq>>,
    /// Answers of L2 hits, waiting for the L2's latency: (due cycle, answer).
    answers: Vec<VecDeque<(u64, MopedDone)>>,
    /// Line requests a driver issued ([`LineOp::Request`]), per MOPED, oldest first, with
    /// the cycle each was issued at: their answers go to the driver, not the device.
    driver_lines: Vec<Vec<(MopedReq, u64)>>,
    pub(super) line_stalls: u64,
}

impl MopedHost {
    pub(super) fn new(cfg: &SystemConfig, net: &mut Network, n: usize) -> MopedHost {
        MopedHost {
            dev: DevNet::new(cfg, net, n),
            stalled: vec![VecDeque::new(); n],
            answers: vec![VecDeque::new(); n],
            driver_lines: vec![Vec::new(); n],
            line_stalls: 0,
        }
    }

    pub(super) fn has_stalled(&self, m: usize) -> bool {
        self.stalled.get(m).is_some_and(|q| !q.is_empty())
    }
}

impl Sim {
    /// Answers the L2 of core `m` produced for its MOPED while taking a message: they reach
    /// the device (or the driver that asked) at once (the message's latency is paid).
    pub(super) fn pass_moped_answers<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let answers: Vec<MopedDone> = self.caches[m].take_moped_done().collect();
        for a in answers {
            self.route_answer(m, a, now, driver)?;
        }
        wake_moped(self, m, now);
        Ok(())
    }

    /// An L2 answer goes to the driver if it answers the driver's oldest request of its kind
    /// on that line, else to the device.
    fn route_answer<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        a: MopedDone,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let is_data = matches!(a, MopedDone::Data { .. });
        let mine = self.moped_host.driver_lines[m]
            .iter()
            .position(|(r, _)| r.addr == a.addr() && (r.kind == MopedKind::Read) == is_data);
        match mine {
            Some(i) => {
                self.moped_host.driver_lines[m].remove(i);
                let r = driver.moped_done(m, &LineAnswer::Line(a), now);
                r.map_err(|e| self.driver_check_failed(e, a.addr(), now))
            }
            None => {
                self.mopeds[m].line_done(a);
                Ok(())
            }
        }
    }

    /// Due L2 answers in, stalled line requests retried ([`Platform::moped_inputs`]).
    pub(super) fn take_moped_inputs<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        while let Some(&(due, a)) = self.moped_host.answers[m].front() {
            if due > now {
                schedule_moped(self, m, due);
                break;
            }
            self.moped_host.answers[m].pop_front();
            self.route_answer(m, a, now, driver)?;
        }
        let stalled = std::mem::take(&mut self.moped_host.stalled[m]);
        for req in stalled {
            self.l2_line_request(m, req, now)?;
        }
        Ok(())
    }

    /// Issues a line request into MOPED `m`'s L2, keeping it for a retry if stalled.
    pub(super) fn l2_line_request(
        &mut self,
        m: usize,
        req: MopedReq,
        now: u64,
    ) -> Result<(), SimError> {
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
                schedule_moped(self, m, due);
            }
            CoreOutcome::Miss => {}
        }
        Ok(())
    }

    /// The copy unit's write goes into the L2 at once; the device hears whether the rights
    /// were still there.
    pub(super) fn l2_line_write(
        &mut self,
        m: usize,
        addr: LineAddr,
        data: LineData,
        mask: u64,
        now: u64,
    ) {
        let ok = self.caches[m].moped_write(addr, &data, mask);
        self.mopeds[m].write_done(addr, ok);
        wake_moped(self, m, now);
    }

    /// A driver's line operation for MOPED `m` ([`Platform::driver_line`]): a request takes
    /// [`Sim::l2_line_request`], as the device's do, and a write the same
    /// [`CacheCtrl::moped_write`] as the copy unit's.
    pub(super) fn driver_line_op<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        op: LineOp,
        now: u64,
        driver: &mut D,
    ) -> Result<(), SimError> {
        let addr = match op {
            LineOp::Request(r) => r.addr,
            LineOp::Write { addr, .. } => addr,
        };
        if self.mopeds.get(m).is_none() || addr != line_of(addr) {
            return Err(SimError::check(now, format!(
                    "MOPED {m}: line operation on {addr:#x} needs a design with MOPEDs ({} has {}) and a line-aligned address",
                    self.protocol.name,
                    self.mopeds.len()
                )));
        }
        match op {
            LineOp::Request(req) => {
                self.moped_host.driver_lines[m].push((req, now));
                self.l2_line_request(m, req, now)
            }
            LineOp::Write { addr, data, mask } => {
                let ok = self.caches[m].moped_write(addr, &data, mask);
                let r = driver.moped_done(m, &LineAnswer::Written { addr, ok }, now);
                r.map_err(|e| self.driver_check_failed(e, addr, now))
            }
        }
    }

    /// A driver's check of a line answer failed: its message, with the states the line
    /// has in every controller now.
    fn driver_check_failed(&self, detail: String, addr: LineAddr, now: u64) -> SimError {
        SimError::check(
            now,
            format!("{detail}; line {addr:#x} now: {}", self.describe_line(addr)),
        )
    }

    /// A driver's line request unanswered for more than `limit` cycles (any, for 0): an
    /// error naming the controller, the line's state and the event.
    pub(super) fn check_driver_lines(&self, now: u64, limit: u64) -> Result<(), SimError> {
        for (m, lines) in self.moped_host.driver_lines.iter().enumerate() {
            let Some(&(req, since)) = lines.first() else {
                continue;
            };
            if now.saturating_sub(since) < limit {
                continue;
            }
            let cache = &self.caches[m];
            let event = match req.kind {
                MopedKind::Read => "M_GETS",
                MopedKind::Own => "M_GETX",
                MopedKind::Fill if self.protocol.l2.event_id("M_FILL").is_some() => "M_FILL",
                MopedKind::Fill => "M_GETX",
            };
            return Err(SimError::watchdog(now, format!(
                    "MOPED {m}'s line request never answered: controller {}, state {}, event {event}, address {:#x}, cycle {now}, request issued at cycle {since}; line: {}",
                    cache.name(),
                    cache.state_name(req.addr),
                    req.addr,
                    self.describe_line(req.addr)
                )));
        }
        Ok(())
    }

    /// The MOPEDs' statistics, each with its description and unit.
    pub(super) fn register_moped_stats(&self, r: &mut StatsRegistry) {
        if self.mopeds.is_empty() {
            return;
        }
        register_device_stats(r, &self.mopeds, &self.moped_host.dev);
        r.table_sums("system.total.l2", L2_MOPED_TOTALS, &self.caches);
        r.table_sums("system.total.dir", DIR_MOPED_TOTALS, &self.dirs);
        r.table("system.moped", SIM_HOST_STATS, &self.moped_host);
    }
}
