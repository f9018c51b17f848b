//! Physical memory and its frames: [`PhysMem`], the line-granular view of memory through
//! which the OS builds page tables and fills fresh frames, and which every host (the
//! embedded simulator's directories, gem5's memory) offers; [`FlatMem`], a sparse memory
//! for tests; and [`FrameAllocator`], which hands page frames to address spaces. They sit
//! with the OS, below the device, because the OS owns physical memory's layout; MOPED
//! only reads and writes through [`PhysMem`].

use std::ops::Range;

use rustc_hash::FxHashMap;

use crate::mem::{line_of, LineAddr, LineData, LINE_BYTES};

const LINE: u64 = LINE_BYTES as u64;

/// Bytes per page.
pub const PAGE_BYTES: u64 = 4096;
/// Bits of the page offset.
pub const PAGE_SHIFT: u32 = 12;

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

#[cfg(test)]
mod tests {
    use super::*;

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
