//! MOPED's page walker (paper, section 4.2): the copy unit translates buffer addresses
//! page by page, reading the page tables the OS keeps in simulated memory. Their format
//! and the OS's address spaces are `os::pagetable`'s; the walker only reads them.

use crate::mem::{line_of, LineAddr, LineData};
use crate::os::pagetable::{PageTableFormat, XlateError};

/// How a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkResult {
    /// The page's physical frame.
    Translated(u64),
    /// A non-present entry (or an address outside the format's space): the walked address.
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
    format: PageTableFormat,
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

    /// A walker of x86-64 tables.
    pub fn new(staging_lines: usize) -> Self {
        Self::with_format(staging_lines, PageTableFormat::X86_64)
    }

    /// A walker of tables in `format`.
    pub fn with_format(staging_lines: usize, format: PageTableFormat) -> Self {
        Walker {
            format,
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
        self.table = root & self.format.frame_mask();
        self.read = None;
        if !self.format.is_canonical(va) {
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
            let line = line_of(self.format.entry_addr(self.table, self.va, self.level));
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
        let f = self.format;
        let entry = f.entry_in_line(data, f.entry_addr(self.table, self.va, self.level));
        match f.entry_frame(entry) {
            None => self.end(WalkResult::Fault(self.va)),
            Some(frame) if self.level == f.levels() - 1 => self.end(WalkResult::Translated(frame)),
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
    use crate::os::pagetable::{AddressSpace, PAGE_BYTES};
    use crate::os::phys::{FlatMem, FrameAllocator, PhysMem};

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
    fn walks_x86_32_tables_in_two_reads() {
        use crate::os::pagetable::PageTableFormat::X86_32;
        let mut frames = FrameAllocator::new(MB..2 * MB).unwrap();
        let mut mem = FlatMem::new();
        let mut space = AddressSpace::with_format(X86_32, &mut frames, &mut mem).unwrap();
        let va = 0x4000_0000 - 2 * PAGE_BYTES; // two pages either side of a directory entry
        space
            .add_region(&mut frames, &mut mem, va..va + 4 * PAGE_BYTES, true)
            .unwrap();
        let mut w = Walker::with_format(0, X86_32);
        for p in 0..4 {
            let page = va + p * PAGE_BYTES;
            let (r, reads) = walk(&mut w, &mem, space.root(), page);
            assert_eq!(
                Some(r),
                space.translate(&mem, page).map(WalkResult::Translated)
            );
            let lines: Vec<_> = space
                .walk_entries(&mem, page)
                .iter()
                .map(|&a| line_of(a))
                .collect();
            assert_eq!(reads, lines);
        }
        // Past 4 GiB: outside the process, faulted without a read.
        let (r, reads) = walk(&mut w, &mem, space.root(), 1 << 32);
        assert_eq!((r, reads.len()), (WalkResult::Fault(1 << 32), 0));
        // An unmapped page of a present page table: two reads, then the fault.
        let (r, reads) = walk(&mut w, &mem, space.root(), va + 4 * PAGE_BYTES);
        assert_eq!(
            (r, reads.len()),
            (WalkResult::Fault(va + 4 * PAGE_BYTES), 2)
        );
    }
}
