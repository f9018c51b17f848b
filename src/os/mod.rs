//! The operating system as far as MOPED needs one: processes with their address spaces
//! (page tables in simulated memory, in the format of [`pagetable`]), physical frames for
//! them ([`phys`]), and the page-fault service MOPED's interrupts ask for.
//!
//! Cores run processes and issue virtual addresses, which their TLBs translate, walking the
//! tables on a miss (`sim::tlb`); pages of a region declared lazy are mapped at their first
//! touch, by the core or by MOPED (whose fault costs the owning core `moped.fault_penalty`).
//! Frames are handed out from the upper half of physical memory, so programs that use
//! physical addresses directly keep the lower half to themselves, and by default in a
//! seeded random order (`os.frame_order`), as from the free lists of a system that has run
//! a while rather than in address order.

pub mod pagetable;
pub mod phys;

use std::ops::Range;

use crate::coherence::{home_bank, DirCtrl};
use crate::envelope::{ProgramId, Rank};
use crate::mem::{LineAddr, LineData};

use pagetable::{AddressSpace, Leaf, PageTableFormat, XlateError, PAGE_BYTES};
use phys::{FrameAllocator, FrameOrder, PhysMem};

/// A process's index in [`Os::procs`].
pub type ProcId = usize;

/// One process: who it is to MOPED (program ID and rank) and its address space.
#[derive(Clone, Debug)]
pub struct Process {
    pub program: ProgramId,
    pub rank: Rank,
    pub space: AddressSpace,
}

/// A region of a process's address space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub va: Range<u64>,
    /// Map every page now; otherwise at first touch.
    pub populate: bool,
}

/// Why the OS refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OsError {
    #[error("process {proc}: {source}")]
    Xlate {
        proc: ProcId,
        #[source]
        source: XlateError,
    },
    #[error("no process {0}")]
    NoProcess(ProcId),
    #[error("process {proc} touched {va:#x}, outside its regions")]
    Segfault { proc: ProcId, va: u64 },
}

/// Physical memory seen through the directories that own it, for writes while no cache
/// holds anything (setting up processes and buffers before a run).
pub struct MemView<'a> {
    pub dirs: &'a mut [DirCtrl],
}

impl PhysMem for MemView<'_> {
    fn read_line(&self, line: LineAddr) -> LineData {
        self.dirs[home_bank(line, self.dirs.len())].mem.read(line)
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        let n = self.dirs.len();
        self.dirs[home_bank(line, n)].mem.write(line, data);
    }
}

/// The processes and their frames.
#[derive(Clone, Debug)]
pub struct Os {
    frames: FrameAllocator,
    /// The format of every process's tables.
    format: PageTableFormat,
    pub procs: Vec<Process>,
    /// Pages mapped at a first touch or for a MOPED fault.
    pub demand_maps: u64,
    /// Shared ranges whose pages each process maps at its first touch.
    shared: Vec<Shared>,
}

/// A range shared by processes page by page as they touch it ([`Os::share_at_first_touch`]).
#[derive(Clone, Debug)]
struct Shared {
    va: Range<u64>,
    procs: Vec<ProcId>,
    /// The frame of each page some process has touched.
    frames: rustc_hash::FxHashMap<u64, u64>,
}

impl Os {
    /// An OS handing out frames from the upper half of `memory_bytes` of physical memory,
    /// in `order` (a random one fixed by `seed`); page tables take theirs from the same
    /// frames, in `format`.
    pub fn new(memory_bytes: u64, order: FrameOrder, seed: u64, format: PageTableFormat) -> Os {
        let half = (memory_bytes / 2) & !(PAGE_BYTES - 1);
        let frames = FrameAllocator::ordered(half..2 * half, order, seed)
            .or_else(|_| FrameAllocator::ordered(1 << 28..1 << 29, order, seed))
            .expect("a nonempty frame range");
        Os {
            frames,
            format,
            procs: Vec::new(),
            demand_maps: 0,
            shared: Vec::new(),
        }
    }

    /// Bytes of the frames not yet handed out.
    pub fn free_frame_bytes(&self) -> u64 {
        self.frames.remaining() * PAGE_BYTES
    }

    /// Creates a process with its regions.
    pub fn spawn(
        &mut self,
        mem: &mut impl PhysMem,
        program: ProgramId,
        rank: Rank,
        regions: &[Region],
    ) -> Result<ProcId, OsError> {
        let proc = self.procs.len();
        let x = |source| OsError::Xlate { proc, source };
        let mut space = AddressSpace::with_format(self.format, &mut self.frames, mem).map_err(x)?;
        for r in regions {
            space
                .add_region(&mut self.frames, mem, r.va.clone(), r.populate)
                .map_err(x)?;
        }
        self.procs.push(Process {
            program,
            rank,
            space,
        });
        Ok(proc)
    }

    fn proc(&self, proc: ProcId) -> Result<&Process, OsError> {
        self.procs.get(proc).ok_or(OsError::NoProcess(proc))
    }

    /// The physical address of `va` in `proc`, mapping its page at the first touch.
    pub fn translate(
        &mut self,
        mem: &mut impl PhysMem,
        proc: ProcId,
        va: u64,
    ) -> Result<u64, OsError> {
        if let Some(pa) = self.proc(proc)?.space.translate(mem, va) {
            return Ok(pa);
        }
        self.map(mem, proc, va)?;
        self.procs[proc]
            .space
            .translate(mem, va)
            .ok_or(OsError::Segfault { proc, va })
    }

    fn map(&mut self, mem: &mut impl PhysMem, proc: ProcId, va: u64) -> Result<(), OsError> {
        let p = self.procs.get_mut(proc).ok_or(OsError::NoProcess(proc))?;
        if !p.space.contains(va) {
            return Err(OsError::Segfault { proc, va });
        }
        let page = va & !(PAGE_BYTES - 1);
        let shared = self
            .shared
            .iter_mut()
            .find(|s| s.va.contains(&va) && s.procs.contains(&proc));
        let x = |source| OsError::Xlate { proc, source };
        match shared {
            Some(s) => match s.frames.get(&page) {
                Some(&frame) => p.space.map_shared(&mut self.frames, mem, page, frame),
                None => {
                    let pa = p.space.map_page(&mut self.frames, mem, page).map_err(x)?;
                    s.frames.insert(page, pa & !(PAGE_BYTES - 1));
                    Ok(pa)
                }
            },
            None => p.space.map_page(&mut self.frames, mem, va),
        }
        .map_err(x)?;
        self.demand_maps += 1;
        Ok(())
    }

    /// Shared memory: maps `[va, va + bytes)` of every process in `procs` to the same
    /// frames (mapped fresh through the first), as MPICH maps its shared segment. The range
    /// must lie in a region of each process.
    pub fn share(
        &mut self,
        mem: &mut impl PhysMem,
        procs: &[ProcId],
        va: u64,
        bytes: u64,
    ) -> Result<(), OsError> {
        let Some((&first, rest)) = procs.split_first() else {
            return Ok(());
        };
        let mut page = va & !(PAGE_BYTES - 1);
        let mut leaves = vec![Leaf::default(); rest.len()];
        while page < va + bytes {
            let frame = self.translate(mem, first, page)? & !(PAGE_BYTES - 1);
            for (&p, leaf) in rest.iter().zip(&mut leaves) {
                let proc = self.procs.get_mut(p).ok_or(OsError::NoProcess(p))?;
                proc.space
                    .map_shared_via(&mut self.frames, mem, page, frame, leaf)
                    .map_err(|source| OsError::Xlate { proc: p, source })?;
            }
            page += PAGE_BYTES;
        }
        Ok(())
    }

    /// Shared memory mapped as it is touched: `[va, va + bytes)` of every process in `procs`
    /// maps to the same frames, but a process maps a page only at its first touch of it
    /// (the first toucher takes a fresh frame). For segments too large to map into every
    /// process at set-up, as [`Os::share`] does. The range must lie in a lazy region of
    /// each process.
    pub fn share_at_first_touch(&mut self, procs: &[ProcId], va: u64, bytes: u64) {
        self.shared.push(Shared {
            va: va..va.saturating_add(bytes),
            procs: procs.to_vec(),
            frames: Default::default(),
        });
    }

    /// Writes bytes at a process's virtual address straight into memory, mapping lazy
    /// pages: for setting up buffers before a run, while no cache holds them.
    pub fn write_virtual(
        &mut self,
        mem: &mut impl PhysMem,
        proc: ProcId,
        va: u64,
        bytes: &[u8],
    ) -> Result<(), OsError> {
        let mut off = 0;
        while off < bytes.len() {
            let a = va + off as u64;
            let pa = self.translate(mem, proc, a)?;
            // Up to the end of the page.
            let room = (PAGE_BYTES - (a % PAGE_BYTES)) as usize;
            let n = room.min(bytes.len() - off);
            mem.write_range(pa, &bytes[off..off + n]);
            off += n;
        }
        Ok(())
    }

    /// The process whose page-table root is `pt_root`.
    pub fn proc_of_root(&self, pt_root: u64) -> Option<ProcId> {
        self.procs.iter().position(|p| p.space.root() == pt_root)
    }

    /// MOPED's page fault: maps the page if it lies inside the process. False if the
    /// address is outside it (the transfer fails) or no process has that root.
    pub fn service_fault(&mut self, mem: &mut impl PhysMem, pt_root: u64, va: u64) -> bool {
        let Some(p) = self.proc_of_root(pt_root) else {
            return false;
        };
        // The process may have touched the page since MOPED walked.
        self.procs[p].space.translate(mem, va).is_some() || self.map(mem, p, va).is_ok()
    }
}
