//! Address translation for MOPED (paper, section 4.2): page tables in simulated memory, the
//! OS's model of one process's address space, and the device's page walker.
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
//! The OS side ([`AddressSpace`]) builds and extends tables functionally; the device side
//! ([`Walker`]) reads them one line at a time through whatever memory system hosts it.

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::mem::{line_of, LineAddr, LineData, LINE_BYTES};

/// Bytes per page.
pub const PAGE_BYTES: u64 = 4096;
/// Bits of the page offset.
pub const PAGE_SHIFT: u32 = 12;
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

const LINE: u64 = LINE_BYTES as u64;

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

/// Errors of the OS model and the walker's interface.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XlateError {
    #[error("frame range {start:#x}..{end:#x} is empty or not page-aligned")]
    BadFrameRange { start: u64, end: u64 },
    #[error("out of physical frames")]
    OutOfFrames,
    #[error("region {start:#x}..{end:#x} is empty or outside the 48-bit address space")]
    BadRegion { start: u64, end: u64 },
    #[error("region {start:#x}..{end:#x} overlaps an existing region")]
    Overlap { start: u64, end: u64 },
    #[error("address {0:#x} is outside every region")]
    NotInRegion(u64),
    #[error("page of {0:#x} is already mapped")]
    AlreadyMapped(u64),
    #[error("the walker is busy with another walk")]
    WalkerBusy,
    #[error("the walker did not ask for line {0:#x}")]
    UnexpectedLine(LineAddr),
}

/// Physical memory as lines, with helpers for words and byte ranges on top.
pub trait PhysMem {
    fn read_line(&self, line: LineAddr) -> LineData;
    fn write_line(&mut self, line: LineAddr, data: &LineData);

    /// Reads `out.len()` bytes starting at `addr`, across lines as needed.
    fn read_range(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let a = addr + done as u64;
            let off = (a % LINE) as usize;
            let n = (LINE_BYTES - off).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.read_line(line_of(a))[off..off + n]);
            done += n;
        }
    }

    /// Writes `bytes` starting at `addr`, across lines as needed.
    fn write_range(&mut self, addr: u64, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            let a = addr + done as u64;
            let off = (a % LINE) as usize;
            let n = (LINE_BYTES - off).min(bytes.len() - done);
            let mut data = self.read_line(line_of(a));
            data[off..off + n].copy_from_slice(&bytes[done..done + n]);
            self.write_line(line_of(a), &data);
            done += n;
        }
    }

    /// Reads a little-endian word.
    fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0; 8];
        self.read_range(addr, &mut b);
        u64::from_le_bytes(b)
    }

    /// Writes a little-endian word.
    fn write_u64(&mut self, addr: u64, value: u64) {
        self.write_range(addr, &value.to_le_bytes());
    }
}

impl<T: PhysMem + ?Sized> PhysMem for &mut T {
    fn read_line(&self, line: LineAddr) -> LineData {
        (**self).read_line(line)
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        (**self).write_line(line, data)
    }
}

/// Sparse, zero-filled physical memory.
#[derive(Clone, Debug, Default)]
pub struct FlatMem {
    lines: FxHashMap<LineAddr, LineData>,
}

impl FlatMem {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lines ever written, sorted by address.
    pub fn sorted_lines(&self) -> Vec<(LineAddr, LineData)> {
        let mut v: Vec<_> = self.lines.iter().map(|(&a, &d)| (a, d)).collect();
        v.sort_unstable_by_key(|&(a, _)| a);
        v
    }
}

impl PhysMem for FlatMem {
    fn read_line(&self, line: LineAddr) -> LineData {
        debug_assert_eq!(line, line_of(line), "unaligned line address");
        self.lines.get(&line).copied().unwrap_or([0; LINE_BYTES])
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        debug_assert_eq!(line, line_of(line), "unaligned line address");
        self.lines.insert(line, *data);
    }
}

/// Hands out 4 KiB frames of a physical range, each once. Frames come either in address
/// order or scattered over the range (a fixed stride coprime to the frame count), so that
/// consecutive pages of a buffer land in far-apart frames.
#[derive(Clone, Debug)]
pub struct FrameAllocator {
    base: u64,
    frames: u64,
    handed: u64,
    stride: u64,
    offset: u64,
}

impl FrameAllocator {
    /// Frames of `range` in address order.
    pub fn new(range: Range<u64>) -> Result<Self, XlateError> {
        Self::with_order(range, 1, 0)
    }

    /// Frames of `range` in an order picked by `seed`.
    pub fn scattered(range: Range<u64>, seed: u64) -> Result<Self, XlateError> {
        let frames = (range.end.saturating_sub(range.start)) >> PAGE_SHIFT;
        // A stride near the golden ratio of the range, nudged until coprime.
        let mut stride = ((frames as f64 * 0.618_033_988_75) as u64 | 1).max(1);
        while frames > 1 && gcd(stride, frames) != 1 {
            stride += 2;
        }
        Self::with_order(range, stride, seed)
    }

    fn with_order(range: Range<u64>, stride: u64, seed: u64) -> Result<Self, XlateError> {
        let (start, end) = (range.start, range.end);
        if start >= end || start % PAGE_BYTES != 0 || end % PAGE_BYTES != 0 {
            return Err(XlateError::BadFrameRange { start, end });
        }
        let frames = (end - start) >> PAGE_SHIFT;
        Ok(FrameAllocator {
            base: start,
            frames,
            handed: 0,
            stride: stride % frames.max(1),
            offset: seed % frames,
        })
    }

    /// A frame not handed out before.
    pub fn alloc(&mut self) -> Result<u64, XlateError> {
        if self.handed == self.frames {
            return Err(XlateError::OutOfFrames);
        }
        let k = self.handed as u128;
        let i = (self.offset as u128 + k * self.stride.max(1) as u128) % self.frames as u128;
        self.handed += 1;
        Ok(self.base + ((i as u64) << PAGE_SHIFT))
    }

    /// Frames still available.
    pub fn remaining(&self) -> u64 {
        self.frames - self.handed
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkResult {
    /// The page's physical frame.
    Translated(u64),
    /// A non-present entry (or an address outside the 48-bit space): the walked address.
    Fault(u64),
}

/// Where the walker is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkState {
    Idle,
    Walking,
    Done(WalkResult),
}

/// Walker counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WalkStats {
    /// Walks started.
    pub walks: u64,
    /// Page-table lines read through the memory system (staging misses).
    pub line_reads: u64,
    /// Page-table lines found in the staging buffer.
    pub staging_hits: u64,
    /// Walks that ended in a fault.
    pub faults: u64,
}

/// MOPED's page walker. A staging buffer of a few page-table lines, LRU, catches the
/// locality of walks for consecutive pages of a virtually contiguous buffer: neighbouring
/// pages share their upper-level entries and, eight at a time, their level-3 line.
///
/// The buffer is not kept coherent with the tables: whoever drives the walker flushes it
/// when the OS may have changed them (a new transfer, a resolved fault).
#[derive(Clone, Debug)]
pub struct Walker {
    /// Most recently used last.
    staging: Vec<(LineAddr, LineData)>,
    capacity: usize,
    state: WalkState,
    va: u64,
    level: usize,
    table: u64,
    /// A line the walk needs: `(line, handed out)`.
    read: Option<(LineAddr, bool)>,
    stats: WalkStats,
}

impl Walker {
    /// The paper's staging buffer default.
    pub const DEFAULT_STAGING_LINES: usize = 4;

    pub fn new(staging_lines: usize) -> Self {
        Walker {
            staging: Vec::with_capacity(staging_lines),
            capacity: staging_lines,
            state: WalkState::Idle,
            va: 0,
            level: 0,
            table: 0,
            read: None,
            stats: WalkStats::default(),
        }
    }

    pub fn state(&self) -> WalkState {
        self.state
    }

    pub fn stats(&self) -> WalkStats {
        self.stats
    }

    /// Begins translating `va` in the tables rooted at `root`; walks as far as the staging
    /// buffer allows at once.
    pub fn start(&mut self, root: u64, va: u64) -> Result<(), XlateError> {
        if self.state == WalkState::Walking {
            return Err(XlateError::WalkerBusy);
        }
        self.stats.walks += 1;
        self.state = WalkState::Walking;
        self.va = va;
        self.level = 0;
        self.table = root & FRAME_MASK;
        self.read = None;
        if !is_canonical(va) {
            self.end(WalkResult::Fault(va));
        } else {
            self.advance();
        }
        Ok(())
    }

    /// The next page-table line to read, once per line.
    pub fn next_read(&mut self) -> Option<LineAddr> {
        match &mut self.read {
            Some((line, handed @ false)) => {
                *handed = true;
                self.stats.line_reads += 1;
                Some(*line)
            }
            _ => None,
        }
    }

    /// The line handed out and not yet answered.
    pub fn awaiting(&self) -> Option<LineAddr> {
        match self.read {
            Some((line, true)) => Some(line),
            _ => None,
        }
    }

    /// The data of the line handed out; the walk goes on.
    pub fn on_line(&mut self, line: LineAddr, data: &LineData) -> Result<(), XlateError> {
        if self.awaiting() != Some(line) {
            return Err(XlateError::UnexpectedLine(line));
        }
        self.read = None;
        self.stage(line, data);
        self.step(data);
        if self.state == WalkState::Walking {
            self.advance();
        }
        Ok(())
    }

    /// Takes a finished walk's result, leaving the walker idle.
    pub fn take_result(&mut self) -> Option<WalkResult> {
        match self.state {
            WalkState::Done(r) => {
                self.state = WalkState::Idle;
                Some(r)
            }
            _ => None,
        }
    }

    /// Forgets every staged line.
    pub fn flush(&mut self) {
        self.staging.clear();
    }

    /// Fills the staging buffer with lines kept from earlier walks (least recently used
    /// first), up to its capacity.
    pub fn seed(&mut self, lines: &[(LineAddr, LineData)]) {
        let skip = lines.len().saturating_sub(self.capacity);
        self.staging.clear();
        self.staging.extend_from_slice(&lines[skip..]);
    }

    /// The staged lines, least recently used first.
    pub fn staged(&self) -> &[(LineAddr, LineData)] {
        &self.staging
    }

    /// Consumes staged lines until the walk ends or needs a line from memory.
    fn advance(&mut self) {
        while self.state == WalkState::Walking {
            let line = line_of(entry_addr(self.table, self.va, self.level));
            match self.staging.iter().position(|&(l, _)| l == line) {
                Some(i) => {
                    self.stats.staging_hits += 1;
                    let hit = self.staging.remove(i);
                    self.staging.push(hit);
                    self.step(&hit.1);
                }
                None => {
                    self.read = Some((line, false));
                    return;
                }
            }
        }
    }

    /// Reads this level's entry out of its line.
    fn step(&mut self, data: &LineData) {
        let off = (entry_addr(self.table, self.va, self.level) % LINE) as usize;
        let entry = u64::from_le_bytes(data[off..off + 8].try_into().expect("8 bytes"));
        match entry_frame(entry) {
            None => self.end(WalkResult::Fault(self.va)),
            Some(frame) if self.level == LEVELS - 1 => self.end(WalkResult::Translated(frame)),
            Some(frame) => {
                self.table = frame;
                self.level += 1;
            }
        }
    }

    fn stage(&mut self, line: LineAddr, data: &LineData) {
        if self.capacity == 0 {
            return;
        }
        if self.staging.len() == self.capacity {
            self.staging.remove(0);
        }
        self.staging.push((line, *data));
    }

    fn end(&mut self, result: WalkResult) {
        if let WalkResult::Fault(_) = result {
            self.stats.faults += 1;
        }
        self.state = WalkState::Done(result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn setup() -> (FrameAllocator, FlatMem, AddressSpace) {
        let mut frames = FrameAllocator::new(MB..2 * MB).unwrap();
        let mut mem = FlatMem::new();
        let space = AddressSpace::new(&mut frames, &mut mem).unwrap();
        (frames, mem, space)
    }

    /// Runs a walk against `mem`, returning its result and the lines read.
    fn walk(w: &mut Walker, mem: &FlatMem, root: u64, va: u64) -> (WalkResult, Vec<LineAddr>) {
        w.start(root, va).unwrap();
        let mut reads = Vec::new();
        while let Some(line) = w.next_read() {
            reads.push(line);
            w.on_line(line, &mem.read_line(line)).unwrap();
        }
        (w.take_result().expect("walk ended"), reads)
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
    fn frame_allocator_runs_out_and_scatters() {
        assert!(FrameAllocator::new(0..0).is_err());
        assert!(FrameAllocator::new(0x800..0x2000).is_err());
        let mut a = FrameAllocator::new(0x1000..0x3000).unwrap();
        assert_eq!((a.alloc(), a.alloc()), (Ok(0x1000), Ok(0x2000)));
        assert_eq!(a.alloc(), Err(XlateError::OutOfFrames));
        let mut s = FrameAllocator::scattered(0..64 * PAGE_BYTES, 7).unwrap();
        let got: Vec<u64> = (0..64).map(|_| s.alloc().unwrap()).collect();
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 64, "every frame once");
        let adjacent = got.windows(2).filter(|w| w[1] == w[0] + PAGE_BYTES).count();
        assert_eq!(adjacent, 0);
        assert_eq!(s.remaining(), 0);
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
    fn walker_agrees_with_the_functional_walk() {
        let (mut frames, mut mem, mut space) = setup();
        let va = 0x1234_5678_9000;
        space
            .add_region(&mut frames, &mut mem, va..va + 16 * PAGE_BYTES, true)
            .unwrap();
        let mut w = Walker::new(4);
        for p in 0..16 {
            let page = va + p * PAGE_BYTES;
            let (r, _) = walk(&mut w, &mem, space.root(), page);
            assert_eq!(
                Some(r),
                space.translate(&mem, page).map(WalkResult::Translated)
            );
        }
    }

    #[test]
    fn staging_buffer_catches_neighbouring_pages() {
        let (mut frames, mut mem, mut space) = setup();
        let va = 0x40_0000; // level-3 index 0
        space
            .add_region(&mut frames, &mut mem, va..va + 9 * PAGE_BYTES, true)
            .unwrap();
        let mut w = Walker::new(4);
        let (_, reads) = walk(&mut w, &mem, space.root(), va);
        assert_eq!(reads.len(), 4);
        // The next page's entries share all four lines.
        let (_, reads) = walk(&mut w, &mem, space.root(), va + PAGE_BYTES);
        assert!(reads.is_empty());
        // Page 8's level-3 entry starts the next line.
        let (_, reads) = walk(&mut w, &mem, space.root(), va + 8 * PAGE_BYTES);
        assert_eq!(reads.len(), 1);
        assert_eq!(
            w.stats(),
            WalkStats {
                walks: 3,
                line_reads: 5,
                staging_hits: 7,
                faults: 0
            }
        );
        // One line of staging keeps only the level-3 line, evicted by the next walk's reads.
        let mut one = Walker::new(1);
        walk(&mut one, &mem, space.root(), va);
        let (_, reads) = walk(&mut one, &mem, space.root(), va + PAGE_BYTES);
        assert_eq!(reads.len(), 4);
        // Flushing forgets everything.
        w.flush();
        let (_, reads) = walk(&mut w, &mem, space.root(), va);
        assert_eq!(reads.len(), 4);
    }

    #[test]
    fn walks_fault_at_each_level() {
        let (mut frames, mut mem, mut space) = setup();
        let va = 0x0000_8040_2010_0000; // no index is 0 or 511 at any level
        space
            .add_region(&mut frames, &mut mem, va..va + 1, true)
            .unwrap();
        // Flip one index bit per level: the walk reads that level's line and faults.
        let cases = [
            (va ^ 1 << 39, 1),
            (va ^ 1 << 30, 2),
            (va ^ 1 << 21, 3),
            (va ^ 1 << 12, 4),
        ];
        for (other, reads_wanted) in cases {
            let mut w = Walker::new(0);
            let (r, reads) = walk(&mut w, &mem, space.root(), other);
            assert_eq!(r, WalkResult::Fault(other));
            assert_eq!(reads.len(), reads_wanted, "{other:#x}");
            assert_eq!(w.stats().faults, 1);
        }
        let mut w = Walker::new(0);
        let (r, reads) = walk(&mut w, &mem, space.root(), 1 << 48);
        assert_eq!((r, reads.len()), (WalkResult::Fault(1 << 48), 0));
    }

    #[test]
    fn walker_refuses_misuse() {
        let (_, mem, space) = setup();
        let mut w = Walker::new(4);
        assert_eq!(w.on_line(0, &[0; 64]), Err(XlateError::UnexpectedLine(0)));
        w.start(space.root(), 0x1000).unwrap();
        assert_eq!(w.start(space.root(), 0x2000), Err(XlateError::WalkerBusy));
        let line = w.next_read().unwrap();
        assert_eq!(w.next_read(), None, "each line handed out once");
        assert!(w.on_line(line + 64, &[0; 64]).is_err());
        w.on_line(line, &mem.read_line(line)).unwrap();
        assert_eq!(w.take_result(), Some(WalkResult::Fault(0x1000)));
        assert_eq!(w.state(), WalkState::Idle);
    }

    #[test]
    fn byte_ranges_cross_lines() {
        let mut mem = FlatMem::new();
        let bytes: Vec<u8> = (0..200).map(|i| i as u8).collect();
        mem.write_range(60, &bytes);
        let mut back = vec![0; 200];
        mem.read_range(60, &mut back);
        assert_eq!(back, bytes);
        assert_eq!(mem.read_line(0)[59], 0);
        assert_eq!(mem.read_line(0)[60], 0);
        assert_eq!(mem.read_line(64)[0], 4);
        mem.write_u64(0x7c, 0x0102_0304_0506_0708);
        assert_eq!(mem.read_u64(0x7c), 0x0102_0304_0506_0708);
        assert_eq!(mem.read_line(0x40)[0x3c], 0x08);
    }
}
