//! Page tables in simulated memory and the OS's model of one process's address space
//! (paper, section 4.2): the OS builds the tables, MOPED's page walker (`moped::xlate`)
//! reads them, so the format lives here, below both.
//!
//! # Page-table format
//!
//! A 4-level radix tree, x86-64 style but reduced to what MOPED needs:
//! - 4 KiB pages and 48-bit virtual addresses; a virtual address at or above 2^48 is
//!   outside every process.
//! - Each table is one 4 KiB frame of 512 little-endian 8-byte entries. VA bits 47..39
//!   index the level-0 table, 38..30 level 1, 29..21 level 2 and 20..12 level 3.
//! - Entry bit 0 = present; bits 51..12 = the physical frame of the next-level table, or at
//!   level 3 of the page itself; every other bit is 0. A non-present entry at any level
//!   means the page is not mapped.
//! - A process's page-table root ("cr3") is the physical address of its level-0 table.
//!
//! [`AddressSpace`] builds and extends tables functionally; the device's walker reads them
//! one line at a time through whatever memory system hosts it.

use std::ops::Range;

use crate::mem::LINE_BYTES;

// The page size and the error type live with the frames (phys); the table format here.
use super::phys::{FrameAllocator, PhysMem};
pub use super::phys::{XlateError, PAGE_BYTES, PAGE_SHIFT};

/// Bits of a virtual address.
pub const VA_BITS: u32 = 48;
/// Levels of the radix tree.
pub const LEVELS: usize = 4;
/// Entries per table.
pub const ENTRIES: usize = 512;
/// Entry bit 0: the entry points somewhere.
pub const PRESENT: u64 = 1;
/// Entry bits 51..12: the physical frame.
pub const FRAME_MASK: u64 = ((1 << 52) - 1) & !(PAGE_BYTES - 1);

/// The page containing a byte address.
#[inline]
pub fn page_of(addr: u64) -> u64 {
    addr & !(PAGE_BYTES - 1)
}

/// The index into the level-`level` table for `va`.
#[inline]
pub fn level_index(va: u64, level: usize) -> usize {
    ((va >> (PAGE_SHIFT + 9 * (LEVELS - 1 - level) as u32)) as usize) & (ENTRIES - 1)
}

/// The physical address of `va`'s entry in the level table at `table`.
#[inline]
pub fn entry_addr(table: u64, va: u64, level: usize) -> u64 {
    (table & FRAME_MASK) + 8 * level_index(va, level) as u64
}

/// A present entry pointing at `frame`.
#[inline]
pub fn make_entry(frame: u64) -> u64 {
    (frame & FRAME_MASK) | PRESENT
}

/// The frame an entry points at, if present.
#[inline]
pub fn entry_frame(entry: u64) -> Option<u64> {
    (entry & PRESENT != 0).then_some(entry & FRAME_MASK)
}

/// True for addresses a process can have (below 2^48).
#[inline]
pub fn is_canonical(va: u64) -> bool {
    va >> VA_BITS == 0
}

/// The OS's view of one process: its page-table root and its valid regions (VMAs). Frames
/// and memory are passed in, so that processes can share them.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    root: u64,
    /// Page-aligned, disjoint.
    regions: Vec<Range<u64>>,
}

impl AddressSpace {
    /// An address space with an empty level-0 table and no regions.
    pub fn new(frames: &mut FrameAllocator, mem: &mut impl PhysMem) -> Result<Self, XlateError> {
        let root = frames.alloc()?;
        zero_frame(mem, root);
        Ok(AddressSpace {
            root,
            regions: Vec::new(),
        })
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
        if va.is_empty() || pages.end > 1 << VA_BITS {
            return Err(bad);
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
        self.map_to(frames, mem, va, None)
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
        self.map_to(frames, mem, va, Some(frame & !(PAGE_BYTES - 1)))
    }

    fn map_to(
        &mut self,
        frames: &mut FrameAllocator,
        mem: &mut impl PhysMem,
        va: u64,
        frame: Option<u64>,
    ) -> Result<u64, XlateError> {
        if !self.contains(va) {
            return Err(XlateError::NotInRegion(va));
        }
        let mut table = self.root;
        for level in 0..LEVELS - 1 {
            let at = entry_addr(table, va, level);
            table = match entry_frame(mem.read_u64(at)) {
                Some(next) => next,
                None => {
                    let next = frames.alloc()?;
                    zero_frame(mem, next);
                    mem.write_u64(at, make_entry(next));
                    next
                }
            };
        }
        let at = entry_addr(table, va, LEVELS - 1);
        if entry_frame(mem.read_u64(at)).is_some() {
            return Err(XlateError::AlreadyMapped(va));
        }
        let frame = match frame {
            Some(f) => f,
            None => {
                let f = frames.alloc()?;
                zero_frame(mem, f);
                f
            }
        };
        mem.write_u64(at, make_entry(frame));
        Ok(frame)
    }

    /// The physical address of `va`, walking the tables functionally; `None` when unmapped.
    pub fn translate(&self, mem: &impl PhysMem, va: u64) -> Option<u64> {
        if !is_canonical(va) {
            return None;
        }
        let mut table = self.root;
        for level in 0..LEVELS {
            table = entry_frame(mem.read_u64(entry_addr(table, va, level)))?;
        }
        Some(table | (va & (PAGE_BYTES - 1)))
    }
}

fn zero_frame(mem: &mut impl PhysMem, frame: u64) {
    for line in (frame..frame + PAGE_BYTES).step_by(LINE_BYTES) {
        mem.write_line(line, &[0; LINE_BYTES]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::phys::FlatMem;

    const MB: u64 = 1 << 20;

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
            (0..4).map(|l| level_index(va, l)).collect::<Vec<_>>(),
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
        assert_eq!(make_entry(0x000f_ffff_ffff_f000), 0x000f_ffff_ffff_f001);
        assert_eq!(make_entry(0xfff0_0000_0000_0fff), 0x1);
        assert_eq!(entry_frame(0x0123_4567_8000), None);
        assert_eq!(entry_frame(0x8000_0123_4567_8001), Some(0x0123_4567_8000));
        assert_eq!(entry_addr(0x5000, 0xffff_ffff_ffff, 3), 0x5000 + 8 * 511);
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
            Err(XlateError::BadRegion { .. })
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
}
