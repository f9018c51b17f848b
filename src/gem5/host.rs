//! [`Gem5Host`]: one simulated system for gem5 to drive, in plain Rust (the C ABI of
//! `ffi` wraps it). It builds what `moped mpi` builds (the workload's ranks on the cores,
//! their processes' page tables and buffers written into gem5's memory) and runs the same
//! cores, OS and MOPEDs as the embedded simulator; only the caches are gem5's.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use crate::coherence::{AccessKind, Completed, HitLevel, MopedDone, MopedKind, Protocol};
use crate::config::{PrefetchKind, SystemConfig};
use crate::design::Design;
use crate::engine::EventQueue;
use crate::mem::{LineData, LINE_BYTES};
use crate::moped::device::DevMsg;
use crate::mpi::runtime::MpiDriver;
use crate::mpi::MpiParams;
use crate::os::phys::PhysMem;
use crate::os::Os;
use crate::sim::platform::{CoreState, DevNet, Ev, Tlb};
use crate::sim::{cores, moped_host};
use crate::sim::{Driver, SimError};
use crate::stats::{StatValue, StatsRegistry};

use super::platform::{Counted, G5Platform, Pending, Request};
use super::ruby_net::{RubyMsg, RubyNet, RubyTypes, RUBY_NAMES};

/// What to simulate: the arguments of `moped_g5_host_new`.
#[derive(Clone, Debug, PartialEq)]
pub struct HostOptions {
    /// A workload spec (`.toml`) or a GOAL schedule (`.goal`).
    pub workload: PathBuf,
    pub design: Design,
    /// Scales the workload's iteration counts, in (0, 1]; 1 runs them as specified.
    pub iterations: f64,
    pub seed: u64,
    /// A system config file; the defaults (the paper's Table 1) without one.
    pub config: Option<PathBuf>,
    /// Overrides applied after the config file, in order, as `moped mpi --set` takes them.
    pub sets: Vec<(String, String)>,
}

impl HostOptions {
    /// The workload under `design` as specified, seed 1, default system.
    pub fn new(workload: impl Into<PathBuf>, design: Design) -> HostOptions {
        HostOptions {
            workload: workload.into(),
            design,
            iterations: 1.0,
            seed: 1,
            config: None,
            sets: Vec::new(),
        }
    }

    /// Reads `KEY=VALUE;KEY=VALUE` overrides (blank items are skipped).
    pub fn parse_sets(text: &str) -> Result<Vec<(String, String)>, String> {
        text.split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| match item.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), v.trim().to_string()))
                }
                _ => Err(format!("sets: `{item}` is not KEY=VALUE")),
            })
            .collect()
    }

    /// The system these options describe, checked.
    fn config(&self) -> Result<SystemConfig, String> {
        let mut cfg = match &self.config {
            Some(p) => SystemConfig::from_file(p).map_err(|e| e.to_string())?,
            None => SystemConfig::default(),
        };
        for (key, value) in &self.sets {
            cfg.set(key, value)
                .map_err(|e| format!("sets: {key}={value}: {e}"))?;
        }
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// Where a run stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    Running,
    /// Every core finished, the system is quiet and every message was verified.
    Finished,
    /// The run stopped; the message says why.
    Failed(String),
}

/// Where the workload's timed region starts or ends (gem5's `m5 resetstats` and
/// `m5 dumpstats`): the cycle of the event that reached it. The host stops there, the
/// rest of that cycle left for the next call, so that its caller can take the mark
/// ([`Gem5Host::take_mark`]) and reset or dump gem5's statistics between the two: they
/// then cover the region as the embedded run's do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    Start(u64),
    End(u64),
}

/// One simulated system driven by gem5: requests out ([`Gem5Host::take_request`]),
/// completions in ([`Gem5Host::complete`]), time forward ([`Gem5Host::advance`]).
pub struct Gem5Host<M: PhysMem> {
    sys: G5Platform<M>,
    driver: MpiDriver,
    workload: String,
    notes: Vec<String>,
    /// The host's current cycle: the latest it was told of.
    now: u64,
    state: RunState,
    events: u64,
    /// Calls that named a cycle before the current one (taken as at the current one).
    late_calls: u64,
    /// Core accesses completed, per core, by where gem5 says they were served: L1, L2,
    /// another cache, memory, upgrade, unknown.
    served: Vec<[u64; 6]>,
    /// The last mark reached, until taken.
    mark: Option<Mark>,
    /// The statistics where the timed region started, with its cycle.
    region_start: Option<(u64, StatsRegistry)>,
    /// The timed region's statistics, once it ended.
    region: Option<StatsRegistry>,
    /// The cycle of the region's end mark, if the workload has one.
    region_end: Option<u64>,
}

impl<M: PhysMem> Gem5Host<M> {
    /// Builds the system `opts` describe, writing its initial memory image (page tables,
    /// buffers) into `mem`.
    pub fn new(opts: &HostOptions, mem: M) -> Result<Gem5Host<M>, String> {
        if !(opts.iterations > 0.0 && opts.iterations <= 1.0) {
            return Err(format!(
                "iterations {}: expected a factor in (0, 1]",
                opts.iterations
            ));
        }
        let cfg = opts.config()?;
        if cfg.nic.enabled || cfg.mpi.search_prefetch {
            return Err(
                "nic.enabled and mpi.search_prefetch (the LHS paper's NICs, flushes and \
                 software prefetch) run on the embedded simulator only; `moped lhs` runs \
                 them there"
                    .into(),
            );
        }
        if let Some(kind) = cfg.l1.prefetch.filter(|&k| k != PrefetchKind::None) {
            return Err(format!(
                "l1.prefetch = {kind:?}: the gem5 companion's L1 has no prefetcher (its \
                 protocol issues no prefetch requests, so a Ruby prefetcher would have nothing \
                 to train on); the embedded simulator models it"
            ));
        }
        let scale = (opts.iterations < 1.0).then_some(opts.iterations);
        // As `moped mpi` loads it: with its warm-up (and the timed region's marks) unless
        // the config says otherwise, a GOAL schedule's buffers touched.
        let how = (cfg.workload.warmup, cfg.workload.touch_buffers);
        let (w, _) = crate::workload::load_workload_touched(&opts.workload, None, scale, how)?;
        let protocol = Protocol::of(opts.design);
        let n = cfg.system.cores;
        let mopeds = moped_host::build_mopeds(&cfg, &protocol).map_err(|e| e.to_string())?;
        let mut net = moped_host::network(&cfg, &RUBY_NAMES);
        let dev = DevNet::new(&cfg, &mut net, mopeds.len());
        let mut sys = G5Platform {
            fill: protocol.l2.event_id("M_FILL").is_some(),
            design: opts.design,
            mem: Counted {
                inner: mem,
                reads: Cell::new(0),
                writes: 0,
            },
            os: Os::new(
                cfg.memory.size_bytes,
                cfg.os.frame_order,
                opts.seed,
                cfg.os.page_table,
            ),
            tlb: Tlb::new(n, cfg.system.tlb_entries, cfg.system.page_walks),
            cores: vec![CoreState::default(); n],
            mopeds,
            dev,
            net,
            q: EventQueue::with_capacity(1024),
            requests: VecDeque::new(),
            outstanding: BTreeMap::new(),
            next_id: 1,
            issued: [0; 5],
            watchdog_armed: true,
            hit_probe: None,
            cfg,
        };
        let driver = crate::mpi::prepare(
            &sys.cfg,
            &w,
            protocol.has_moped(),
            opts.seed,
            MpiParams::from(&sys.cfg.mpi),
            &mut sys.os,
            &mut sys.mem,
        )
        .map_err(|e| e.to_string())?;
        for (r, &proc) in driver.procs().iter().enumerate() {
            sys.cores[r].proc = Some(proc);
        }
        for c in 0..n {
            sys.cores[c].stepping = true;
            sys.q.schedule(0, Ev::Step(c as u16));
        }
        let period = sys.watchdog_period();
        sys.q.schedule(period, Ev::Watchdog);
        Ok(Gem5Host {
            sys,
            driver,
            workload: w.name,
            notes: w.notes,
            now: 0,
            state: RunState::Running,
            events: 0,
            late_calls: 0,
            served: vec![[0; 6]; n],
            mark: None,
            region_start: None,
            region: None,
            region_end: None,
        })
    }

    /// Lets gem5 say, as a core's window load enters Ruby, whether it will hit its L1 or
    /// L2 (`probe(core, paddr)`), so that such a load holds no miss register, as in the
    /// embedded model, whose L1 answers as the load issues. Without it every window load
    /// counts against `system.outstanding_loads` until it completes.
    pub fn set_hit_probe(&mut self, probe: super::platform::HitProbe) {
        self.sys.hit_probe = Some(probe);
    }

    /// Cores (= L2s = MOPEDs) of the system.
    pub fn cores(&self) -> usize {
        self.sys.cores.len()
    }

    /// Whether the design has MOPEDs.
    pub fn has_moped(&self) -> bool {
        !self.sys.mopeds.is_empty()
    }

    /// Sends a Ruby message on the host's network, beside the MOPEDs' messages (see
    /// [`super::ruby_net::send`]); an error fails the run.
    pub fn ruby_send(&mut self, m: RubyMsg) -> Result<u64, String> {
        let types = RubyTypes {
            first: crate::coherence::MsgType::NAMES.len() + DevMsg::NAMES.len(),
            header_bytes: self.sys.cfg.network.header_bytes,
        };
        super::ruby_net::send(&mut self.sys.net, types, m).inspect_err(|e| {
            self.fail_with(format!("gem5's network: {e}"));
        })
    }

    /// Whether `net` has the links of this host's network (the same parameters).
    pub fn net_matches(&self, net: &RubyNet) -> bool {
        net.describes(&self.sys.cfg)
    }

    /// Bytes of physical memory the OS hands frames from (gem5's memory must cover them).
    pub fn memory_bytes(&self) -> u64 {
        self.sys.cfg.memory.size_bytes
    }

    /// The workload's notes (a scaled iteration count).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// The failure message, if the run failed.
    pub fn error(&self) -> Option<&str> {
        match &self.state {
            RunState::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Cycle at which the last core finished (so far).
    pub fn cycles(&self) -> u64 {
        cores::cycles(&self.sys.cores)
    }

    /// Runs everything due up to cycle `now`. Returns the next cycle the host needs a call
    /// at even if no request completes, or `None` (finished, failed, or waiting for gem5).
    pub fn advance(&mut self, now: u64) -> Option<u64> {
        if self.state != RunState::Running {
            return None;
        }
        let marked = match self.run_until(now) {
            Ok(marked) => marked,
            Err(e) => {
                self.fail(e);
                return None;
            }
        };
        self.check_finished();
        match self.state {
            // Called again at once: the rest of the cycle runs after the mark.
            RunState::Running if marked => Some(self.now),
            RunState::Running => self.sys.q.peek_time(),
            _ => None,
        }
    }

    /// The timed region's start or end, if the run just reached it: the caller resets
    /// (start) or dumps (end) its statistics before it advances the host again.
    pub fn take_mark(&mut self) -> Option<Mark> {
        self.mark.take()
    }

    /// The next request to issue, if any.
    pub fn take_request(&mut self) -> Option<Request> {
        self.sys.requests.pop_front()
    }

    /// How many data bytes the completion of request `id` carries: a load's size, a line
    /// for an M_GETS, none for the others (or an unknown id).
    pub fn completion_bytes(&self, id: u64) -> usize {
        match self.sys.outstanding.get(&id) {
            Some(Pending::Core { req, .. }) if req.kind == AccessKind::Load => req.size as usize,
            Some(Pending::Window { req, .. }) => req.size as usize,
            Some(Pending::Line {
                kind: MopedKind::Read,
                ..
            }) => LINE_BYTES,
            _ => 0,
        }
    }

    /// Request `id` finished at cycle `now`; `data` holds what
    /// [`completion_bytes`](Self::completion_bytes) asks for, `level` where a core access
    /// was served (0 L1, 1 L2, 2 another cache, 3 memory, 4 upgrade, anything else
    /// unknown). An error fails the run (and every later call).
    pub fn complete(
        &mut self,
        id: u64,
        data: Option<&[u8]>,
        level: i32,
        now: u64,
    ) -> Result<(), String> {
        if let RunState::Failed(e) = &self.state {
            return Err(e.clone());
        }
        let r = self
            .run_until(now)
            .and_then(|_| self.resume(id, data, level));
        if let Err(e) = r {
            self.fail(e);
        }
        self.check_finished();
        match &self.state {
            RunState::Failed(e) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Stops the run with `why` (the C ABI's answer to a panic, too).
    pub fn fail_with(&mut self, why: String) {
        if !matches!(self.state, RunState::Failed(_)) {
            self.state = RunState::Failed(why);
        }
    }

    fn fail(&mut self, e: SimError) {
        let why = match e {
            SimError::Watchdog(w) => format!(
                "watchdog at cycle {}: {}\nMPI ranks:{}",
                w.cycle,
                w.detail,
                self.driver.describe()
            ),
            e => e.to_string(),
        };
        self.fail_with(format!(
            "{} under {}: {why}",
            self.workload, self.sys.design
        ));
    }

    /// Moves the clock to `now` (a cycle before the current one counts as the current one)
    /// and runs the events due, up to a mark of the timed region if one comes (true).
    fn run_until(&mut self, now: u64) -> Result<bool, SimError> {
        if now < self.now {
            self.late_calls += 1;
        }
        self.now = self.now.max(now);
        while self.sys.q.peek_time().is_some_and(|t| t <= self.now) {
            let Some((t, ev)) = self.sys.q.pop() else {
                break;
            };
            self.events += 1;
            cores::handle(&mut self.sys, t, ev, &mut self.driver)?;
            if self.driver.take_region_start() {
                self.region_start = Some((t, self.stats_at(t)));
                self.mark = Some(Mark::Start(t));
                return Ok(true);
            }
            if self.driver.take_region_end() {
                self.region = Some(self.region_stats(t)?);
                self.region_end = Some(t);
                self.mark = Some(Mark::End(t));
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Hands a finished request to whoever waits for it.
    fn resume(&mut self, id: u64, data: Option<&[u8]>, level: i32) -> Result<(), SimError> {
        let now = self.now;
        let need = self.completion_bytes(id);
        let Some(p) = self.sys.outstanding.remove(&id) else {
            return Err(SimError::check(
                now,
                format!("completion of request {id}, which is not outstanding"),
            ));
        };
        let bytes = match data {
            Some(d) if d.len() >= need => &d[..need],
            _ if need == 0 => &[][..],
            _ => {
                return Err(SimError::check(
                    now,
                    format!("completion of request {id} without its {need} data bytes"),
                ))
            }
        };
        match p {
            Pending::Core { c, req } => {
                let core = &self.sys.cores[c];
                let waiting = match req.kind {
                    AccessKind::Load => core.load == Some(req) && core.load_outstanding,
                    AccessKind::Store => {
                        core.store_buffer.front() == Some(&req) && core.store_outstanding
                    }
                };
                if !waiting {
                    return Err(SimError::check(
                        now,
                        format!("core {c}: request {id} completed out of its order"),
                    ));
                }
                let value = match req.kind {
                    AccessKind::Load => {
                        let mut b = [0; 8];
                        b[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
                        u64::from_le_bytes(b)
                    }
                    AccessKind::Store => req.value,
                };
                let (slot, lvl) = served_level(level);
                self.served[c][slot] += 1;
                let comp = Completed {
                    req,
                    value,
                    level: lvl,
                };
                cores::finish_access(&mut self.sys, c, &comp, now, &mut self.driver)?;
            }
            Pending::Window { c, req } => {
                if !self.sys.cores[c].window.holds(req.id) {
                    return Err(SimError::check(
                        now,
                        format!("core {c}: window load {id} completed, not in its window"),
                    ));
                }
                let mut b = [0; 8];
                b[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
                let (slot, lvl) = served_level(level);
                self.served[c][slot] += 1;
                let comp = Completed {
                    req,
                    value: u64::from_le_bytes(b),
                    level: lvl,
                };
                cores::finish_window_load(&mut self.sys, c, &comp, now, &mut self.driver)?;
            }
            Pending::Line {
                m,
                kind,
                addr,
                written,
            } => {
                let answer = match kind {
                    MopedKind::Read => {
                        let mut line: LineData = [0; LINE_BYTES];
                        line.copy_from_slice(bytes);
                        MopedDone::Data { addr, data: line }
                    }
                    // As the L2 reports a grant: with the request's bytes stored, or not.
                    _ if written => MopedDone::Written { addr },
                    _ => MopedDone::Granted { addr },
                };
                self.sys.mopeds[m].line_done(answer);
                moped_host::wake_moped(&mut self.sys, m, now);
            }
            Pending::Write { m, addr } => {
                self.sys.mopeds[m].write_done(addr, true);
                moped_host::wake_moped(&mut self.sys, m, now);
            }
        }
        Ok(())
    }

    /// Once every core is done and nothing is left to do but the watchdog, the final
    /// checks: no MOPED work left, every message received and verified.
    fn check_finished(&mut self) {
        let s = &self.sys;
        let quiet = s.q.len() == usize::from(s.watchdog_armed)
            && s.outstanding.is_empty()
            && s.requests.is_empty()
            && s.cores.iter().all(|c| c.done);
        if self.state != RunState::Running || !quiet {
            return;
        }
        let now = self.now;
        let mut r = moped_host::check_mopeds_quiescent(&self.sys, now);
        if r.is_ok() && self.driver.wants_memory() {
            r = self
                .driver
                .read_memory(&self.sys, now)
                .map_err(|detail| SimError::check(now, detail));
        }
        let r = r.map_err(|e| e.to_string()).and_then(|()| {
            crate::mpi::check_all_received(&self.driver, self.cycles()).map_err(|e| e.to_string())
        });
        // A region that never ended (no `m5 dumpstats` in the workload) ends with the run,
        // as the embedded run's does.
        let r = r.and_then(|()| match (&self.region_start, &self.region) {
            (Some(_), None) => {
                self.region = Some(
                    self.region_stats(self.cycles())
                        .map_err(|e| e.to_string())?,
                );
                Ok(())
            }
            _ => Ok(()),
        });
        match r {
            Ok(()) => self.state = RunState::Finished,
            Err(e) => self.fail_with(format!("{} under {}: {e}", self.workload, self.sys.design)),
        }
    }

    /// The run's statistics, each with its description and unit: over its timed region
    /// once that has ended (as the embedded run's, `sim.timed_from` its first cycle), else
    /// over the run so far.
    pub fn stats(&self) -> StatsRegistry {
        if let Some(r) = &self.region {
            return r.clone();
        }
        let mut r = self.stats_at(self.cycles());
        r.level("sim.timed_from", 0, TIMED_FROM, "Cycle");
        r
    }

    /// The statistics from the region's start to cycle `to`, where it ends.
    fn region_stats(&self, to: u64) -> Result<StatsRegistry, SimError> {
        let mut r = self.stats_at(to);
        let Some((from, start)) = &self.region_start else {
            return Err(SimError::check(
                to,
                "the timed region ended where it never started",
            ));
        };
        r.level("sim.timed_from", *from, TIMED_FROM, "Cycle");
        r.since(start)
            .map_err(|e| SimError::check(to, format!("the timed region's statistics: {e}")))
    }

    /// The statistics as they stand at `cycles` (the run's cycles so far).
    fn stats_at(&self, cycles: u64) -> StatsRegistry {
        let mut r = StatsRegistry::new();
        let s = &self.sys;
        r.scalar(
            "sim.cycles",
            cycles,
            "Cycles until the last core finished",
            "Cycle",
        );
        r.scalar(
            "sim.events",
            self.events,
            "Events of the cores and MOPEDs processed by the host",
            "Count",
        );
        const LEVELS: [(&str, &str); 6] = [
            ("l1", "L1 hits"),
            ("l2", "L2 hits"),
            ("other_cache", "L2 misses served by another cache"),
            ("memory", "L2 misses served by memory"),
            ("upgrade", "L2 misses that needed only permission"),
            ("unknown", "accesses gem5 did not say where it served"),
        ];
        // gem5's packets do not carry where a miss was served, so a host that never says
        // gets no breakdown rather than a table of zeros; its Ruby stats hold the misses.
        let levels_known = self.served.iter().any(|n| n[..5].iter().any(|&k| k > 0));
        for (i, c) in s.cores.iter().enumerate() {
            r.scalar(
                format!("system.cpu{i}.accesses"),
                c.accesses,
                "Loads and stores the core issued",
                "Count",
            );
            if !levels_known {
                continue;
            }
            for (k, (name, what)) in LEVELS.iter().enumerate() {
                r.scalar(
                    format!("system.cpu{i}.served.{name}"),
                    self.served[i][k],
                    &format!("Core accesses completed by gem5 as {what}"),
                    "Count",
                );
            }
        }
        crate::mpi::add_stats(&mut r, &self.driver, cycles, levels_known);
        if !s.mopeds.is_empty() {
            moped_host::register_device_stats(&mut r, &s.mopeds, &s.dev);
        }
        r.scalar(
            "system.os.demand_maps",
            s.os.demand_maps,
            "Pages the OS mapped at a first touch or for a MOPED page fault",
            "Count",
        );
        const OPS: [(&str, &str); 5] = [
            ("load", "Core loads"),
            ("store", "Core stores"),
            ("m_gets", "MOPED line reads (M_GETS)"),
            (
                "m_getx",
                "MOPED exclusive requests and copy-unit writes (M_GETX)",
            ),
            ("m_fill", "MOPED fill requests (M_FILL)"),
        ];
        for (k, (name, what)) in OPS.iter().enumerate() {
            r.scalar(
                format!("gem5.requests.{name}"),
                s.issued[k],
                &format!("{what} handed to gem5"),
                "Count",
            );
        }
        r.scalar(
            "gem5.functional_reads",
            s.mem.reads.get(),
            "Lines read through the functional callback (page walks, message checks)",
            "Count",
        );
        r.scalar(
            "gem5.functional_writes",
            s.mem.writes,
            "Lines written through the functional callback (the initial image, page tables)",
            "Count",
        );
        r.scalar(
            "gem5.late_calls",
            self.late_calls,
            "Calls from gem5 that named a cycle before the host's current one",
            "Count",
        );
        r
    }

    /// [`stats`](Self::stats) as JSON (the format of `stats.json`), with the run's state
    /// and its headline numbers at the top (`cycles`, `messages_verified`,
    /// `bytes_verified`, each `{value, unit, desc}`).
    pub fn summary_json(&self) -> String {
        let stats = self.stats();
        let mut v = stats.to_json();
        if let Some(o) = v.as_object_mut() {
            let (state, error) = match &self.state {
                RunState::Running => ("running", None),
                RunState::Finished => ("finished", None),
                RunState::Failed(e) => ("failed", Some(e.clone())),
            };
            o.insert("workload".into(), self.workload.clone().into());
            o.insert("design".into(), self.sys.design.name().into());
            o.insert("state".into(), state.into());
            o.insert("error".into(), error.into());
            o.insert("notes".into(), self.notes.clone().into());
            // What gem5's stats.txt covers: from the region's start mark (reset) to its end
            // mark (dumped) or, without one, to the run's end.
            let from = self.region_start.as_ref().map_or(0, |s| s.0);
            o.insert(
                "timed_region".into(),
                serde_json::json!({
                    "from": from,
                    "to": self.region_end.unwrap_or(self.cycles()),
                    "end_dumped": self.region_end.is_some(),
                }),
            );
            // The cycles are the timed region's, the messages verified the whole run's (a
            // warm-up's included), as `moped mpi` prints them.
            let whole = self.stats_at(self.cycles());
            for (key, name, from) in [
                ("cycles", "sim.cycles", &stats),
                ("messages_verified", "mpi.messages_verified", &whole),
                ("bytes_verified", "mpi.bytes_verified", &whole),
            ] {
                if let Some(st) = from.get(name) {
                    let value = match st.value {
                        StatValue::Int(v) => serde_json::Value::from(v),
                        StatValue::Float(f) => serde_json::Value::from(f),
                    };
                    let entry = serde_json::json!({
                        "value": value,
                        "unit": st.unit,
                        "desc": st.desc,
                    });
                    o.insert(key.into(), entry);
                }
            }
        }
        v.to_string()
    }
}

const TIMED_FROM: &str =
    "Cycle the timed region started: the statistics count from there (0: the whole run)";

/// The counter slot and the level a completion reports (the MPI driver does not look at
/// the level; unknown ones count apart and pass on as memory).
fn served_level(level: i32) -> (usize, HitLevel) {
    match level {
        0 => (0, HitLevel::L1),
        1 => (1, HitLevel::L2),
        2 => (2, HitLevel::OtherCache),
        3 => (3, HitLevel::Memory),
        4 => (4, HitLevel::Upgrade),
        _ => (5, HitLevel::Memory),
    }
}
