//! The embedded simulator's processes and their memory: creating and placing processes,
//! writing their buffers before a run, and reading what they would read, during a run or
//! after it.

use rustc_hash::FxHashMap;

use crate::os::MemView;

use super::{cores, Sim};

impl Sim {
    /// Creates a process (see [`crate::os::Os::spawn`]).
    pub fn spawn(
        &mut self,
        program: crate::envelope::ProgramId,
        rank: crate::envelope::Rank,
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
        let mut mem = MemView {
            dirs: &mut self.dirs,
        };
        self.os.write_virtual(&mut mem, proc, va, bytes)
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

/// Memory as the OS writes it during a run: page tables, which cores and MOPEDs only read,
/// and fresh frames. Memory holds their current value (no cache holds them modified); a
/// write also reaches every copy the cores' walks left in caches or in messages, as the
/// OS's stores would through coherence (their time is not simulated).
pub(crate) struct LiveMem<'a> {
    pub dirs: &'a mut [crate::coherence::DirCtrl],
    pub caches: &'a mut [crate::coherence::cache::CacheCtrl],
    pub slab: &'a mut [crate::coherence::Msg],
}

impl crate::os::phys::PhysMem for LiveMem<'_> {
    fn read_line(&self, line: crate::mem::LineAddr) -> crate::mem::LineData {
        self.dirs[crate::coherence::home_bank(line, self.dirs.len())]
            .mem
            .read(line)
    }

    fn write_line(&mut self, line: crate::mem::LineAddr, data: &crate::mem::LineData) {
        // Only the OS writes these lines, so every clean copy on chip holds memory's value:
        // when memory already holds `data` (a fresh frame zeroed), no copy changes, and
        // the scan of every cache and message is skipped (a mapped page's 64 lines would
        // cost 64 scans of all the caches).
        if self.read_line(line) == *data {
            return;
        }
        MemView {
            dirs: &mut *self.dirs,
        }
        .write_line(line, data);
        for c in self.caches.iter_mut() {
            c.patch_clean(line, data);
        }
        for m in self.slab.iter_mut().filter(|m| m.addr == line && !m.dirty) {
            m.data = *data;
        }
    }
}

/// Page tables as a walk sees them at any moment: only the OS writes them, straight to
/// memory ([`LiveMem`]), so memory holds their current value and no cache or message
/// holds them modified. Reading memory alone spares a walk's every level a look into
/// every cache (O(cores) per line).
struct ReadView<'a> {
    sim: &'a Sim,
}

impl crate::os::phys::PhysMem for ReadView<'_> {
    fn read_line(&self, line: crate::mem::LineAddr) -> crate::mem::LineData {
        let dirs = &self.sim.dirs;
        debug_assert!(
            self.sim
                .caches
                .iter()
                .all(|c| c.line_copy(line).map_or(true, |l| !l.dirty)),
            "page-table line {line:#x} modified in a cache"
        );
        dirs[crate::coherence::home_bank(line, dirs.len())]
            .mem
            .read(line)
    }

    fn write_line(&mut self, _line: crate::mem::LineAddr, _data: &crate::mem::LineData) {
        unreachable!("a read-only view")
    }
}

/// The modified data in flight at one moment of a run, by line: the first dirty TBE of a
/// writeback in progress (caches in order), else the first dirty data message in flight
/// (slab order). Gathered once per read, so a line costs a lookup, not a scan of every
/// TBE and every message slot (thousands at 256 cores).
struct Writebacks {
    tbes: FxHashMap<crate::mem::LineAddr, crate::mem::LineData>,
    msgs: FxHashMap<crate::mem::LineAddr, crate::mem::LineData>,
}

impl Writebacks {
    fn of(sim: &Sim) -> Self {
        let mut tbes = FxHashMap::default();
        for t in sim.caches.iter().flat_map(|c| c.tbes()) {
            if t.state.is_some() && t.dirty {
                tbes.entry(t.addr).or_insert(t.data);
            }
        }
        let mut msgs = FxHashMap::default();
        for (m, live) in sim.wire_slab().iter().zip(sim.wire_live()) {
            if live && m.dirty {
                msgs.entry(m.addr).or_insert(m.data);
            }
        }
        Writebacks { tbes, msgs }
    }
}

impl Sim {
    /// A line's current value at any moment of a run: a cache's modified copy, else a
    /// writeback in progress (its TBE, then its data message in flight), else memory.
    fn read_line_current(
        &self,
        line: crate::mem::LineAddr,
        wb: &Writebacks,
    ) -> crate::mem::LineData {
        for c in &self.caches {
            if let Some(l) = c.line_copy(line) {
                if l.dirty {
                    return l.data;
                }
            }
        }
        if let Some(d) = wb.tbes.get(&line).or_else(|| wb.msgs.get(&line)) {
            return *d;
        }
        self.dirs[crate::coherence::home_bank(line, self.dirs.len())]
            .mem
            .read(line)
    }
}

impl super::VirtualMemory for Sim {
    fn read(&self, proc: crate::os::ProcId, va: u64, len: usize) -> Vec<u8> {
        let Some(p) = self.os.procs.get(proc) else {
            return vec![0; len];
        };
        let wb = Writebacks::of(self);
        let stores: Vec<_> = cores::buffered_stores(&self.cores, proc).collect();
        cores::read_process(
            &p.space,
            &ReadView { sim: self },
            |pa| self.read_line_current(pa, &wb),
            &stores,
            va,
            len,
        )
    }
}
