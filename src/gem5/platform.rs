//! The gem5 host's [`Platform`]: the cores and MOPEDs of `sim::cores` and
//! `sim::moped_host`, with every cache access handed out as a [`Request`] for gem5's Ruby
//! and resumed when gem5 reports it complete.
//!
//! Messages between MOPEDs do not travel through Ruby's network: they take the latency the
//! embedded simulator's network model (`crate::net`) gives them, on a network that carries
//! nothing else.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};

use crate::coherence::{AccessKind, CoreReq, MopedKind, MopedReq};
use crate::config::SystemConfig;
use crate::design::Design;
use crate::engine::EventQueue;
use crate::mem::{LineAddr, LineData, LINE_BYTES};
use crate::moped::device::Moped;
use crate::net::Network;
use crate::os::phys::PhysMem;
use crate::os::{Os, ProcId};
use crate::sim::cores;
use crate::sim::platform::{CoreState, DevNet, Devices, Ev, Platform, Tlb};
use crate::sim::{Driver, LineOp, SimError, VirtualMemory};

/// Which sequencer a request goes to (`enum MopedG5Port`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Port {
    /// The core's sequencer (its L1 first).
    Core = 0,
    /// The MOPED sequencer of the core's L2.
    Moped = 1,
}

/// What a request asks (`enum MopedG5Op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Load = 0,
    Store = 1,
    /// Read a whole line for the MOPED (L2 event `M_GETS`).
    MGets = 2,
    /// Exclusive rights for the MOPED, then the `mask` bytes of `data` written (`M_GETX`).
    MGetx = 3,
    /// As `MGetx`, for a line the copy unit overwrites whole (`M_FILL`).
    MFill = 4,
}

/// A memory request for gem5 to issue (`MopedG5Request`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub port: Port,
    /// Core or L2 index.
    pub unit: u32,
    pub op: Op,
    /// Bytes: 1 to 8 for core accesses, a line for MOPED ones.
    pub size: u32,
    /// Physical address; line-aligned for MOPED requests.
    pub paddr: u64,
    /// `MGetx`/`MFill`: bit `i` selects byte `i` of `data` to write (0: rights only).
    pub mask: u64,
    /// `Store`: the value's bytes, little-endian, in `0..size`; `MGetx`/`MFill`: the line.
    pub data: LineData,
}

/// What a request handed to gem5 is waiting to resume.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pending {
    /// Core `c`'s blocking load or store.
    Core { c: usize, req: CoreReq },
    /// A load of core `c`'s window (an `mlp` core's, `system.core_model`).
    Window { c: usize, req: CoreReq },
    /// MOPED `m`'s line request; `written` when it carried bytes to store.
    Line {
        m: usize,
        kind: MopedKind,
        addr: LineAddr,
        written: bool,
    },
    /// MOPED `m`'s copy-unit write into a granted line.
    Write { m: usize, addr: LineAddr },
}

/// gem5's memory through its functional callbacks, counting the lines that cross them
/// (each is a functional access through Ruby on the gem5 side).
pub(super) struct Counted<M> {
    pub inner: M,
    pub reads: Cell<u64>,
    pub writes: u64,
}

impl<M: PhysMem> PhysMem for Counted<M> {
    fn read_line(&self, line: LineAddr) -> LineData {
        self.reads.set(self.reads.get() + 1);
        self.inner.read_line(line)
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        self.writes += 1;
        self.inner.write_line(line, data)
    }
}

/// Requests handed out, by kind: [`Op`] order.
pub(super) type RequestCounts = [u64; 5];

/// The system a gem5 host simulates apart from its caches.
pub(super) struct G5Platform<M: PhysMem> {
    pub cfg: SystemConfig,
    pub design: Design,
    /// The design grants whole receive lines without their data (`M_FILL`).
    pub fill: bool,
    /// gem5's memory, functionally.
    pub mem: Counted<M>,
    pub os: Os,
    pub tlb: Tlb,
    pub cores: Vec<CoreState>,
    pub mopeds: Vec<Moped>,
    pub dev: DevNet,
    /// Carries only the MOPEDs' messages.
    pub net: Network,
    pub q: EventQueue<Ev>,
    /// Requests not yet taken by gem5, in order.
    pub requests: VecDeque<Request>,
    /// Requests taken or waiting, by id; a map in id order, so nothing depends on hashing.
    pub outstanding: BTreeMap<u64, Pending>,
    pub next_id: u64,
    pub issued: RequestCounts,
    pub watchdog_armed: bool,
    /// Whether core `c`'s L2 controller holds line `paddr` readable, so that a load to it
    /// is an L1 or L2 hit ([`HitProbe`]); none: every load counts as a miss.
    pub hit_probe: Option<HitProbe>,
}

/// gem5's answer, as a core's load enters Ruby, to whether it will hit (its L1 or its L2).
pub type HitProbe = Box<dyn FnMut(usize, u64) -> bool>;

impl<M: PhysMem> G5Platform<M> {
    fn issue(&mut self, port: Port, unit: usize, op: Op, paddr: u64, p: Pending) -> &mut Request {
        let id = self.next_id;
        self.next_id += 1;
        self.outstanding.insert(id, p);
        self.issued[op as usize] += 1;
        self.requests.push_back(Request {
            id,
            port,
            unit: unit as u32,
            op,
            size: LINE_BYTES as u32,
            paddr,
            mask: 0,
            data: [0; LINE_BYTES],
        });
        self.requests.back_mut().expect("just pushed")
    }

    pub(super) fn watchdog_period(&self) -> u64 {
        (self.cfg.watchdog.progress_cycles / 4).max(1)
    }

    /// A core that waits too long for gem5 fails the run, as the embedded simulator's
    /// watchdog would.
    fn check_watchdog(&self, now: u64) -> Result<(), SimError> {
        let wd = &self.cfg.watchdog;
        for (i, c) in self.cores.iter().enumerate().filter(|(_, c)| !c.done) {
            let Some((req, since)) = c.pending() else {
                continue;
            };
            let quiet = now.saturating_sub(c.last_progress.max(since));
            if now.saturating_sub(since) > wd.request_cycles || quiet > wd.progress_cycles {
                let what = match req.kind {
                    AccessKind::Load => "load",
                    AccessKind::Store => "store",
                };
                return Err(SimError::watchdog(
                    now,
                    format!(
                        "core {i} made no progress for {quiet} cycles: its {what} of {} bytes at \
                         {:#x}, issued at cycle {since}, is not complete",
                        req.size, req.addr
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl<M: PhysMem> VirtualMemory for G5Platform<M> {
    fn read(&self, proc: ProcId, va: u64, len: usize) -> Vec<u8> {
        let Some(p) = self.os.procs.get(proc) else {
            return vec![0; len];
        };
        let stores: Vec<_> = cores::buffered_stores(&self.cores, proc).collect();
        cores::read_process(
            &p.space,
            &self.mem,
            |pa| self.mem.read_line(pa),
            &stores,
            va,
            len,
        )
    }
}

impl<M: PhysMem> Platform for G5Platform<M> {
    type Mem<'a>
        = &'a mut Counted<M>
    where
        M: 'a;

    fn cfg(&self) -> &SystemConfig {
        &self.cfg
    }

    fn design(&self) -> &str {
        self.design.name()
    }

    fn cores(&self) -> &[CoreState] {
        &self.cores
    }

    fn cores_mut(&mut self) -> &mut [CoreState] {
        &mut self.cores
    }

    fn queue(&mut self) -> &mut EventQueue<Ev> {
        &mut self.q
    }

    fn os(&self) -> &Os {
        &self.os
    }

    fn os_parts(&mut self) -> (&mut Os, &mut Tlb, &mut Counted<M>) {
        (&mut self.os, &mut self.tlb, &mut self.mem)
    }

    fn dev(&self) -> &DevNet {
        &self.dev
    }

    fn mopeds(&self) -> &[Moped] {
        &self.mopeds
    }

    fn devices(&mut self) -> Devices<'_> {
        Devices {
            mopeds: &mut self.mopeds,
            dev: &mut self.dev,
            net: &mut self.net,
            q: &mut self.q,
        }
    }

    fn memory_access<D: Driver + ?Sized>(
        &mut self,
        c: usize,
        req: CoreReq,
        _now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        let core = &mut self.cores[c];
        let (op, pending) = match req.kind {
            // Ruby holds several of a core's loads at once: the window's each go as their
            // own request (the platform never stalls them). As the embedded L1 answers at
            // once, one that will hit holds no miss register; the others are missing until
            // gem5 answers.
            AccessKind::Load if core.window.holds(req.id) => {
                let hits = self
                    .hit_probe
                    .as_mut()
                    .is_some_and(|hits| hits(c, req.addr));
                let core = &mut self.cores[c];
                if hits {
                    core.window.answered_hit(req.id);
                } else {
                    core.window.answered(req.id, true);
                }
                (Op::Load, Pending::Window { c, req })
            }
            AccessKind::Load => {
                core.load_outstanding = true;
                (Op::Load, Pending::Core { c, req })
            }
            AccessKind::Store => {
                core.store_outstanding = true;
                (Op::Store, Pending::Core { c, req })
            }
        };
        let r = self.issue(Port::Core, c, op, req.addr, pending);
        r.size = req.size as u32;
        if op == Op::Store {
            let n = (req.size as usize).min(8);
            r.data[..n].copy_from_slice(&req.value.to_le_bytes()[..n]);
        }
        Ok(())
    }

    fn deliver<D: Driver + ?Sized>(
        &mut self,
        _slot: u32,
        now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        Err(SimError::check(
            now,
            "a coherence message event in the gem5 host, whose coherence is gem5's",
        ))
    }

    fn watchdog(&mut self, now: u64) -> Result<(), SimError> {
        self.check_watchdog(now)?;
        let busy = self.cores.iter().any(|c| !c.done)
            || !self.q.is_empty()
            || !self.outstanding.is_empty();
        if busy {
            self.q.schedule(now + self.watchdog_period(), Ev::Watchdog);
        } else {
            self.watchdog_armed = false;
        }
        Ok(())
    }

    fn moped_inputs<D: Driver + ?Sized>(
        &mut self,
        _m: usize,
        _now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        // gem5's answers reach the device as they complete.
        Ok(())
    }

    fn driver_line<D: Driver + ?Sized>(
        &mut self,
        m: usize,
        _op: LineOp,
        now: u64,
        _driver: &mut D,
    ) -> Result<(), SimError> {
        Err(SimError::check(
            now,
            format!("MOPED {m}: a driver's line operations run on the embedded simulator only"),
        ))
    }

    fn line_request(&mut self, m: usize, req: MopedReq, _now: u64) -> Result<(), SimError> {
        let op = match req.kind {
            MopedKind::Read => Op::MGets,
            MopedKind::Own => Op::MGetx,
            // A design without M_FILL takes a fill as an M_GETX, as its L2 would.
            MopedKind::Fill if self.fill => Op::MFill,
            MopedKind::Fill => Op::MGetx,
        };
        let pending = Pending::Line {
            m,
            kind: req.kind,
            addr: req.addr,
            written: req.write.is_some(),
        };
        let r = self.issue(Port::Moped, m, op, req.addr, pending);
        if let Some((data, mask)) = req.write {
            r.data = data;
            r.mask = mask;
        }
        Ok(())
    }

    fn line_write(&mut self, m: usize, addr: LineAddr, data: LineData, mask: u64, _now: u64) {
        // gem5 regains the rights if they were lost since the grant, so the write always
        // lands; its completion is the device's `write_done`.
        let r = self.issue(Port::Moped, m, Op::MGetx, addr, Pending::Write { m, addr });
        r.data = data;
        r.mask = mask;
    }

    fn lines_waiting(&self, m: usize) -> bool {
        self.outstanding.values().any(|p| match *p {
            Pending::Line { m: x, .. } | Pending::Write { m: x, .. } => x == m,
            Pending::Core { .. } | Pending::Window { .. } => false,
        })
    }
}
