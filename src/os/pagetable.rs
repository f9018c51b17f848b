//! Page tables in simulated memory and the OS's model of one process's address space
//! (paper, section 4.2): the OS builds the tables, the cores' and MOPED's page walkers
//! read them, so the formats live here, below all of them.
//!
//! # Page-table formats ([`PageTableFormat`])
//!
//! Both are radix trees of 4 KiB tables over 4 KiB pages, reduced to what the walkers
//! need: entry bit 0 = present, the frame bits point at the next-level table or, at the
//! last level, at the page itself; every other bit is 0. A non-present entry at any level
//! means the page is not mapped. A process's root ("cr3") is the physical address of its
//! level-0 table. Entries are little-endian.
//!
//! - `x86_32`: IA-32 without PAE, the format of the paper's machine (a 32-bit Pentium 4,
//!   section 5), as Intel's SDM vol. 3A, section 4.3 ("32-bit paging") gives it: 32-bit
//!   virtual addresses, 2 levels of 1,024 4-byte entries; VA bits 31..22 index the page
//!   directory, 21..12 the page table; entry bits 31..12 are the frame, so every table and
//!   page lies below 4 GiB.
//! - `x86_64`: 48-bit virtual addresses, 4 levels of 512 8-byte entries; VA bits 47..39
//!   index level 0, 38..30 level 1, 29..21 level 2 and 20..12 level 3; entry bits 51..12
//!   are the frame.
//!
//! A virtual address at or above 2^`va_bits` is outside every process.
//!
//! [`AddressSpace`] builds and extends tables functionally; the walkers read them one load
//! or one line at a time through whatever memory system hosts them.

use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mem::{LineData, LINE_BYTES};

// The page size and the error type live with the frames (phys); the table formats here.
use super::phys::{FrameAllocator, PhysMem};
pub use super::phys::{XlateError, PAGE_BYTES, PAGE_SHIFT};

/// Entry bit 0: the entry points somewhere.
pub const PRESENT: u64 = 1;

/// The layout of a process's page tables (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PageTableFormat {
    /// IA-32 without PAE: 2 levels of 4-byte entries, 32-bit virtual addresses; the
    /// paper's machine's.
    #[default]
    #[serde(rename = "x86_32")]
    X86_32,
    /// x86-64: 4 levels of 8-byte entries, 48-bit virtual addresses.
    #[serde(rename = "x86_64")]
    X86_64,
}

impl PageTableFormat {
    /// The name a configuration gives it.
    pub const fn name(self) -> &'static str {
        match self {
            PageTableFormat::X86_32 => "x86_32",
            PageTableFormat::X86_64 => "x86_64",
        }
    }

    /// Bits of a virtual address.
    pub const fn va_bits(self) -> u32 {
        match self {
            PageTableFormat::X86_32 => 32,
            PageTableFormat::X86_64 => 48,
        }
    }

    /// Bits of a physical address an entry can name (tables and pages lie below).
    pub const fn pa_bits(self) -> u32 {
        match self {
            PageTableFormat::X86_32 => 32,
            PageTableFormat::X86_64 => 52,
        }
    }

    /// Levels of the radix tree.
    pub const fn levels(self) -> usize {
        match self {
            PageTableFormat::X86_32 => 2,
            PageTableFormat::X86_64 => 4,
        }
    }

    /// Bytes of one entry.
    pub const fn entry_bytes(self) -> u64 {
        match self {
            PageTableFormat::X86_32 => 4,
            PageTableFormat::X86_64 => 8,
        }
    }

    /// VA bits each level's index takes (a table is one page of entries).
    const fn index_bits(self) -> u32 {
        (PAGE_BYTES / self.entry_bytes()).trailing_zeros()
    }

    /// The entry bits that hold a frame.
    pub const fn frame_mask(self) -> u64 {
        ((1 << self.pa_bits()) - 1) & !(PAGE_BYTES - 1)
    }

    /// The index into the level-`level` table for `va`.
    #[inline]
    pub fn level_index(self, va: u64, level: usize) -> usize {
        let shift = PAGE_SHIFT + self.index_bits() * (self.levels() - 1 - level) as u32;
        ((va >> shift) & ((1 << self.index_bits()) - 1)) as usize
    }

    /// The physical address of `va`'s entry in the level table at `table`.
    #[inline]
    pub fn entry_addr(self, table: u64, va: u64, level: usize) -> u64 {
        (table & self.frame_mask()) + self.entry_bytes() * self.level_index(va, level) as u64
    }

    /// A present entry pointing at `frame`.
    #[inline]
    pub fn make_entry(self, frame: u64) -> u64 {
        (frame & self.frame_mask()) | PRESENT
    }

    /// The frame an entry points at, if present.
    #[inline]
    pub fn entry_frame(self, entry: u64) -> Option<u64> {
        (entry & PRESENT != 0).then_some(entry & self.frame_mask())
    }

    /// True for addresses a process can have (below 2^`va_bits`).
    #[inline]
    pub fn is_canonical(self, va: u64) -> bool {
        va >> self.va_bits() == 0
    }

    /// The entry at `addr` read out of the line holding it.
    pub fn entry_in_line(self, line: &LineData, addr: u64) -> u64 {
        let off = (addr % LINE_BYTES as u64) as usize;
        let mut b = [0; 8];
        let n = self.entry_bytes() as usize;
        b[..n].copy_from_slice(&line[off..off + n]);
        u64::from_le_bytes(b)
    }

    fn read_entry(self, mem: &impl PhysMem, addr: u64) -> u64 {
        let mut b = [0; 8];
        mem.read_range(addr, &mut b[..self.entry_bytes() as usize]);
        u64::from_le_bytes(b)
    }

    fn write_entry(self, mem: &mut impl PhysMem, addr: u64, entry: u64) {
        mem.write_range(addr, &entry.to_le_bytes()[..self.entry_bytes() as usize]);
    }
}

/// The page containing a byte address.
#[inline]
pub fn page_of(addr: u64) -> u64 {
    addr & !(PAGE_BYTES - 1)
}

/// The last-level table a run of [`AddressSpace::map_shared_via`] went into: the root of
/// its address space, the span of addresses it maps (`va` shifted right by the bits a
/// last-level table resolves) and its address.
#[derive(Clone, Copy, Debug, Default)]
pub struct Leaf(Option<(u64, u64, u64)>);

/// The OS's view of one process: its page-table root and its valid regions (VMAs). Frames
/// and memory are passed in, so that processes can share them.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    format: PageTableFormat,
    root: u64,
    /// Page-aligned, disjoint.
    regions: Vec<Range<u64>>,
}

impl AddressSpace {
    /// An x86-64 address space with an empty level-0 table and no regions.
    pub fn new(frames: &mut FrameAllocator, mem: &mut impl PhysMem) -> Result<Self, XlateError> {
        Self::with_format(PageTableFormat::X86_64, frames, mem)
    }

    /// An address space of tables in `format`, with an empty level-0 table and no regions.
    pub fn with_format(
        format: PageTableFormat,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
    ) -> Result<Self, XlateError> {
        let root = alloc_zeroed(format, frames, mem)?;
        Ok(AddressSpace {
            format,
            root,
            regions: Vec::new(),
        })
    }

    /// The format of the tables.
    pub fn format(&self) -> PageTableFormat {
        self.format
    }

    /// The physical address of the level-0 table ("cr3").
    pub fn root(&self) -> u64 {
        self.root
    }

    /// The valid regions, page-aligned.
    pub fn regions(&self) -> &[Range<u64>] {
        &self.regions
    }

    /// Declares `va` valid, widened to whole pages; with `populate`, maps every page of it
    /// now to zero-filled frames. A populate that runs out of frames leaves the region
    /// declared and partly mapped.
    pub fn add_region(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: Range<u64>,
        populate: bool,
    ) -> Result<(), XlateError> {
        let bad = XlateError::BadRegion {
            start: va.start,
            end: va.end,
        };
        let end = va.end.checked_add(PAGE_BYTES - 1).ok_or(bad.clone())?;
        let pages = page_of(va.start)..page_of(end);
        if va.is_empty() {
            return Err(bad);
        }
        let bits = self.format.va_bits();
        if pages.end > 1 << bits {
            return Err(XlateError::BeyondVa {
                start: va.start,
                end: va.end,
                bits,
            });
        }
        if self
            .regions
            .iter()
            .any(|r| r.start < pages.end && pages.start < r.end)
        {
            return Err(XlateError::Overlap {
                start: va.start,
                end: va.end,
            });
        }
        self.regions.push(pages.clone());
        if populate {
            for page in pages.step_by(PAGE_BYTES as usize) {
                self.map_page(frames, mem, page)?;
            }
        }
        Ok(())
    }

    /// True when `va` lies in a valid region.
    pub fn contains(&self, va: u64) -> bool {
        self.regions.iter().any(|r| r.contains(&va))
    }

    /// Maps the page of `va` to a fresh zero-filled frame, as the OS does on a fault,
    /// creating missing tables on the way. Returns the frame.
    pub fn map_page(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
    ) -> Result<u64, XlateError> {
        self.map_to(frames, mem, va, None, &mut Leaf::default())
    }

    /// Maps the page of `va` to `frame`, a frame another address space maps too (shared
    /// memory between processes). Returns the frame.
    pub fn map_shared(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
        frame: u64,
    ) -> Result<u64, XlateError> {
        self.map_shared_via(frames, mem, va, frame, &mut Leaf::default())
    }

    /// [`AddressSpace::map_shared`] for one page of a run: `leaf` keeps the last-level
    /// table the run's last page went into, so the levels above it are walked once per
    /// table instead of once per page (a shared segment maps tens of thousands of pages
    /// into every process at set-up). Give each address space a `leaf` of its own.
    pub fn map_shared_via(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
        frame: u64,
        leaf: &mut Leaf,
    ) -> Result<u64, XlateError> {
        self.map_to(frames, mem, va, Some(frame & !(PAGE_BYTES - 1)), leaf)
    }

    fn map_to(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
        frame: Option<u64>,
        leaf: &mut Leaf,
    ) -> Result<u64, XlateError> {
        if !self.contains(va) {
            return Err(XlateError::NotInRegion(va));
        }
        let f = self.format;
        let last = f.levels() - 1;
        let span = va >> (PAGE_SHIFT + f.index_bits());
        let table = match leaf.0 {
            // Tables are never taken away: the entries above it still lead there.
            Some((root, s, table)) if root == self.root && s == span => table,
            _ => {
                let table = self.leaf_table(frames, mem, va)?;
                leaf.0 = Some((self.root, span, table));
                table
            }
        };
        let at = f.entry_addr(table, va, last);
        if f.entry_frame(f.read_entry(mem, at)).is_some() {
            return Err(XlateError::AlreadyMapped(va));
        }
        let frame = match frame {
            Some(frame) => frame,
            None => alloc_zeroed(f, frames, mem)?,
        };
        f.write_entry(mem, at, f.make_entry(frame));
        Ok(frame)
    }

    /// The last-level table that maps `va`, creating the tables on the way to it.
    fn leaf_table(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
    ) -> Result<u64, XlateError> {
        let f = self.format;
        let mut table = self.root;
        for level in 0..f.levels() - 1 {
            let at = f.entry_addr(table, va, level);
            table = match f.entry_frame(f.read_entry(mem, at)) {
                Some(next) => next,
                None => {
                    let next = alloc_zeroed(f, frames, mem)?;
                    f.write_entry(mem, at, f.make_entry(next));
                    next
                }
            };
        }
        Ok(table)
    }

    /// The physical address of `va`, walking the tables functionally; `None` when unmapped.
    pub fn translate(&self, mem: &impl PhysMem, va: u64) -> Option<u64> {
        let f = self.format;
        if !f.is_canonical(va) {
            return None;
        }
        let mut table = self.root;
        for level in 0..f.levels() {
            table = f.entry_frame(f.read_entry(mem, f.entry_addr(table, va, level)))?;
        }
        Some(table | (va & (PAGE_BYTES - 1)))
    }

    /// The physical addresses of the entries a walk of `va` reads, level 0 first, as the
    /// tables are now: all levels' when `va` is mapped, else up to the first non-present
    /// entry.
    pub fn walk_entries(&self, mem: &impl PhysMem, va: u64) -> Vec<u64> {
        let f = self.format;
        let mut out = Vec::with_capacity(f.levels());
        if !f.is_canonical(va) {
            return out;
        }
        let mut table = self.root;
        for level in 0..f.levels() {
            let at = f.entry_addr(table, va, level);
            out.push(at);
            match f.entry_frame(f.read_entry(mem, at)) {
                Some(next) => table = next,
                None => break,
            }
        }
        out
    }
}

/// A fresh zero-filled frame that entries of `format` can point at.
fn alloc_zeroed(
    format: PageTableFormat,
    frames: &mut FrameAllocator,
    mem: &mut impl PhysMem,
) -> Result<u64, XlateError> {
    let frame = frames.alloc()?;
    if frame & !format.frame_mask() != 0 {
        return Err(XlateError::FrameOutOfReach(frame));
    }
    zero_frame(mem, frame);
    Ok(frame)
}

/// Zeroes a frame's lines. Memory is zero-filled, so a frame never written reads as zero
/// already and only the lines a previous use left non-zero are written: storing every
/// fresh frame's zeros took most of the host memory and time of mapping a shared segment
/// at set-up (hundreds of megabytes of explicit zero lines).
fn zero_frame(mem: &mut impl PhysMem, frame: u64) {
    const ZERO: [u8; LINE_BYTES] = [0; LINE_BYTES];
    for line in (frame..frame + PAGE_BYTES).step_by(LINE_BYTES) {
        if mem.read_line(line) != ZERO {
            mem.write_line(line, &ZERO);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::phys::FlatMem;

    const MB: u64 = 1 << 20;
    const X64: PageTableFormat = PageTableFormat::X86_64;
    const X32: PageTableFormat = PageTableFormat::X86_32;

    fn setup() -> (FrameAllocator, FlatMem, AddressSpace) {
        let mut frames = FrameAllocator::new(MB..2 * MB).unwrap();
        let mut mem = FlatMem::new();
        let space = AddressSpace::new(&mut frames, &mut mem).unwrap();
        (frames, mem, space)
    }

    #[test]
    fn entries_follow_the_documented_format() {
        let (mut frames, mut mem, mut space) = setup();
        // VA 0x7f12_3456_7abc: indices 0x0fe, 0x048, 0x1a2, 0x167, offset 0xabc.
        let va = 0x7f12_3456_7abc;
        assert_eq!(
            (0..4).map(|l| X64.level_index(va, l)).collect::<Vec<_>>(),
            [0x0fe, 0x048, 0x1a2, 0x167]
        );
        space
            .add_region(&mut frames, &mut mem, va..va + 1, true)
            .unwrap();
        // Frames in address order: root, then the level-1, -2, -3 tables, then the page.
        assert_eq!(space.root(), 0x10_0000);
        assert_eq!(mem.read_u64(0x10_0000 + 8 * 0x0fe), 0x10_1001);
        assert_eq!(mem.read_u64(0x10_1000 + 8 * 0x048), 0x10_2001);
        assert_eq!(mem.read_u64(0x10_2000 + 8 * 0x1a2), 0x10_3001);
        assert_eq!(mem.read_u64(0x10_3000 + 8 * 0x167), 0x10_4001);
        // Little-endian: the low byte first.
        assert_eq!(mem.read_line(0x10_3000 + 0xb00)[0x38], 0x01);
        assert_eq!(mem.read_line(0x10_3000 + 0xb00)[0x39], 0x40);
        assert_eq!(space.translate(&mem, va), Some(0x10_4abc));
        assert_eq!(space.translate(&mem, va + 0x1000), None);
    }

    #[test]
    fn entry_helpers_mask_the_frame_bits() {
        assert_eq!(X64.make_entry(0x000f_ffff_ffff_f000), 0x000f_ffff_ffff_f001);
        assert_eq!(X64.make_entry(0xfff0_0000_0000_0fff), 0x1);
        assert_eq!(X64.entry_frame(0x0123_4567_8000), None);
        assert_eq!(
            X64.entry_frame(0x8000_0123_4567_8001),
            Some(0x0123_4567_8000)
        );
        assert_eq!(
            X64.entry_addr(0x5000, 0xffff_ffff_ffff, 3),
            0x5000 + 8 * 511
        );
    }

    /// A run of shared pages mapped through one `Leaf` builds the tables page-by-page
    /// mapping builds, frame for frame, across last-level tables and in both formats; a
    /// `Leaf` carried over into another address space walks that one's own tables.
    #[test]
    fn a_run_through_one_leaf_maps_as_page_by_page() {
        for (format, span) in [(X64, 2 * MB), (X32, 4 * MB)] {
            let build = |via: bool| {
                let mut frames = FrameAllocator::new(MB..64 * MB).unwrap();
                let mut mem = FlatMem::new();
                let mut a = AddressSpace::with_format(format, &mut frames, &mut mem).unwrap();
                let mut b = AddressSpace::with_format(format, &mut frames, &mut mem).unwrap();
                let (lo, hi) = (3 * span - 5 * PAGE_BYTES, 4 * span + 7 * PAGE_BYTES);
                a.add_region(&mut frames, &mut mem, lo..hi, false).unwrap();
                b.add_region(&mut frames, &mut mem, lo..hi, false).unwrap();
                let mut leaf = Leaf::default();
                let mut out = Vec::new();
                for (i, va) in (lo..hi).step_by(PAGE_BYTES as usize).enumerate() {
                    let frame = 32 * MB + i as u64 * PAGE_BYTES;
                    let space = if i % 3 == 0 { &mut b } else { &mut a };
                    let got = if via {
                        space.map_shared_via(&mut frames, &mut mem, va, frame, &mut leaf)
                    } else {
                        space.map_shared(&mut frames, &mut mem, va, frame)
                    };
                    assert_eq!(got, Ok(frame));
                    out.push((a.translate(&mem, va), b.translate(&mem, va)));
                }
                out.push((Some(frames.alloc().unwrap()), None));
                out
            };
            assert_eq!(build(true), build(false), "{format:?}");
        }
    }

    #[test]
    fn map_page_maps_on_demand_inside_regions_only() {
        let (mut frames, mut mem, mut space) = setup();
        space
            .add_region(&mut frames, &mut mem, 0x40_0100..0x40_2001, false)
            .unwrap();
        assert_eq!(space.regions().to_vec(), vec![0x40_0000..0x40_3000]);
        assert!(space.contains(0x40_0000) && space.contains(0x40_2fff));
        assert!(!space.contains(0x40_3000));
        assert_eq!(space.translate(&mem, 0x40_1000), None);
        let frame = space.map_page(&mut frames, &mut mem, 0x40_1234).unwrap();
        assert_eq!(space.translate(&mem, 0x40_1234), Some(frame + 0x234));
        assert_eq!(
            space.map_page(&mut frames, &mut mem, 0x40_1000),
            Err(XlateError::AlreadyMapped(0x40_1000))
        );
        assert_eq!(
            space.map_page(&mut frames, &mut mem, 0x40_3000),
            Err(XlateError::NotInRegion(0x40_3000))
        );
    }

    #[test]
    fn bad_regions_are_refused() {
        let (mut frames, mut mem, mut space) = setup();
        let add = |s: &mut AddressSpace, f: &mut _, m: &mut _, r| s.add_region(f, m, r, false);
        assert!(matches!(
            add(&mut space, &mut frames, &mut mem, 5..5),
            Err(XlateError::BadRegion { .. })
        ));
        assert!(matches!(
            add(
                &mut space,
                &mut frames,
                &mut mem,
                (1 << 48) - 1..(1 << 48) + 1
            ),
            Err(XlateError::BeyondVa { bits: 48, .. })
        ));
        assert!(matches!(
            add(&mut space, &mut frames, &mut mem, u64::MAX - 1..u64::MAX),
            Err(XlateError::BadRegion { .. })
        ));
        add(&mut space, &mut frames, &mut mem, 0x1000..0x2000).unwrap();
        assert!(matches!(
            add(&mut space, &mut frames, &mut mem, 0x1fff..0x2001),
            Err(XlateError::Overlap { .. })
        ));
        add(&mut space, &mut frames, &mut mem, 0x2000..0x2001).unwrap();
    }

    #[test]
    fn populate_stops_cleanly_when_frames_run_out() {
        let mut frames = FrameAllocator::new(0..6 * PAGE_BYTES).unwrap();
        let mut mem = FlatMem::new();
        let mut space = AddressSpace::new(&mut frames, &mut mem).unwrap();
        // Root + 3 tables + 2 pages fit; the third page does not.
        let r = space.add_region(&mut frames, &mut mem, 0..3 * PAGE_BYTES, true);
        assert_eq!(r, Err(XlateError::OutOfFrames));
        assert!(space.translate(&mem, PAGE_BYTES).is_some());
    }

    #[test]
    fn x86_32_entries_follow_ia32_paging() {
        // VA 0x8040_3abc: directory index 0x201, table index 0x003, offset 0xabc.
        let va = 0x8040_3abc;
        assert_eq!(
            (X32.level_index(va, 0), X32.level_index(va, 1)),
            (0x201, 0x003)
        );
        assert_eq!(X32.entry_addr(0x7000, va, 0), 0x7000 + 4 * 0x201);
        assert_eq!(X32.entry_addr(0x7fff, 0xffff_ffff, 1), 0x7000 + 4 * 1023);
        assert_eq!(X32.make_entry(0x1_2345_6000), 0x2345_6001);
        assert_eq!(X32.entry_frame(0xdead_b001), Some(0xdead_b000));
        assert_eq!(X32.entry_frame(0xdead_b000), None);
        let mut frames = FrameAllocator::new(MB..2 * MB).unwrap();
        let mut mem = FlatMem::new();
        let mut space = AddressSpace::with_format(X32, &mut frames, &mut mem).unwrap();
        space
            .add_region(&mut frames, &mut mem, va..va + 1, true)
            .unwrap();
        // Root, then the page table, then the page; 4-byte entries, little-endian.
        assert_eq!(mem.read_u64(0x10_0000 + 4 * 0x201) & 0xffff_ffff, 0x10_1001);
        assert_eq!(mem.read_u64(0x10_1000 + 4 * 0x003) & 0xffff_ffff, 0x10_2001);
        assert_eq!(
            mem.read_line(0x10_1000)[0x0c..0x10],
            [0x01, 0x20, 0x10, 0x00]
        );
        assert_eq!(space.translate(&mem, va), Some(0x10_2abc));
        assert_eq!(
            space.walk_entries(&mem, va),
            vec![0x10_0000 + 4 * 0x201, 0x10_1000 + 4 * 0x003]
        );
        // Neighbouring entries stay untouched by 4-byte writes.
        assert_eq!(space.translate(&mem, va + PAGE_BYTES), None);
        assert_eq!(space.translate(&mem, va - PAGE_BYTES), None);
    }

    #[test]
    fn x86_32_refuses_addresses_past_4_gib() {
        let mut frames = FrameAllocator::new(MB..2 * MB).unwrap();
        let mut mem = FlatMem::new();
        let mut space = AddressSpace::with_format(X32, &mut frames, &mut mem).unwrap();
        let r = space.add_region(&mut frames, &mut mem, 0xffff_f000..0x1_0000_1000, false);
        assert_eq!(
            r.unwrap_err().to_string(),
            "region 0xfffff000..0x100001000 does not fit the 32-bit virtual addresses of the \
             page-table format (os.page_table)"
        );
        space
            .add_region(&mut frames, &mut mem, 0xffff_f000..0x1_0000_0000, true)
            .unwrap();
        assert!(space.translate(&mem, 0xffff_f000).is_some());
        assert_eq!(space.translate(&mem, 0x1_ffff_f000), None);
        assert!(space.walk_entries(&mem, 1 << 32).is_empty());
        // Frames above 4 GiB cannot be named by a 32-bit entry.
        let mut high = FrameAllocator::new(1 << 32..(1 << 32) + MB).unwrap();
        assert_eq!(
            AddressSpace::with_format(X32, &mut high, &mut mem).unwrap_err(),
            XlateError::FrameOutOfReach(1 << 32)
        );
    }
}
