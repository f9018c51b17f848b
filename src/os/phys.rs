//! Physical memory and its frames: [`PhysMem`], the line-granular view of memory through
//! which the OS builds page tables and fills fresh frames, and which every host (the
//! embedded simulator's directories, gem5's memory) offers; [`FlatMem`], a sparse memory
//! for tests; and [`FrameAllocator`], which hands page frames to address spaces. They sit
//! with the OS, below the device, because the OS owns physical memory's layout; MOPED
//! only reads and writes through [`PhysMem`].

use std::ops::Range;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::mem::{line_of, LineAddr, LineData, LINE_BYTES};

const LINE: u64 = LINE_BYTES as u64;

pub use crate::mem::{PAGE_BYTES, PAGE_SHIFT};

/// Errors of the OS model and the walker's interface.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XlateError {
    #[error("frame range {start:#x}..{end:#x} is empty or not page-aligned")]
    BadFrameRange { start: u64, end: u64 },
    #[error(
        "out of physical frames: the OS hands out the upper half of memory.size_bytes and \
         all of it is in use (a larger memory.size_bytes costs the host only what is written)"
    )]
    OutOfFrames,
    #[error("frame {0:#x} lies above what a page-table entry can name")]
    FrameOutOfReach(u64),
    #[error("region {start:#x}..{end:#x} is empty or runs past 2^64")]
    BadRegion { start: u64, end: u64 },
    #[error(
        "region {start:#x}..{end:#x} does not fit the {bits}-bit virtual addresses of the \
         page-table format (os.page_table)"
    )]
    BeyondVa { start: u64, end: u64, bits: u32 },
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

/// The order in which an OS hands out physical frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FrameOrder {
    /// A seeded pseudo-random order, as the free lists of an OS that has been up a while
    /// give them: the pages of a buffer or of a shared segment land in unrelated frames.
    #[default]
    Random,
    /// Increasing addresses, as from a freshly booted, never fragmented memory.
    Address,
}

/// Hands out 4 KiB frames of a physical range, each once, in address order or in a seeded
/// random order.
#[derive(Clone, Debug)]
pub struct FrameAllocator {
    base: u64,
    frames: u64,
    handed: u64,
    /// The random order's state; `None` for address order.
    shuffle: Option<Shuffle>,
}

/// A Fisher-Yates shuffle of the frame indices built one draw at a time: the `k`-th
/// frame handed out is the one at a position drawn uniformly from `k..frames`, whose place
/// then takes the frame at `k`. Only the positions a draw has disturbed are stored, so a
/// 256 MB range costs nothing until its frames are used.
#[derive(Clone, Debug)]
struct Shuffle {
    rng: Xoshiro256PlusPlus,
    /// Position -> frame index, for the positions whose frame is not their own index.
    moved: FxHashMap<u64, u64>,
}

impl FrameAllocator {
    /// Frames of `range` in address order.
    pub fn new(range: Range<u64>) -> Result<Self, XlateError> {
        let (start, end) = (range.start, range.end);
        if start >= end || start % PAGE_BYTES != 0 || end % PAGE_BYTES != 0 {
            return Err(XlateError::BadFrameRange { start, end });
        }
        Ok(FrameAllocator {
            base: start,
            frames: (end - start) >> PAGE_SHIFT,
            handed: 0,
            shuffle: None,
        })
    }

    /// Frames of `range` in a random order that `seed` fixes.
    pub fn shuffled(range: Range<u64>, seed: u64) -> Result<Self, XlateError> {
        let mut a = Self::new(range)?;
        a.shuffle = Some(Shuffle {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            moved: FxHashMap::default(),
        });
        Ok(a)
    }

    /// Frames of `range` in `order` (`seed` picks a random order).
    pub fn ordered(range: Range<u64>, order: FrameOrder, seed: u64) -> Result<Self, XlateError> {
        match order {
            FrameOrder::Random => Self::shuffled(range, seed),
            FrameOrder::Address => Self::new(range),
        }
    }

    /// A frame not handed out before.
    pub fn alloc(&mut self) -> Result<u64, XlateError> {
        if self.handed == self.frames {
            return Err(XlateError::OutOfFrames);
        }
        let k = self.handed;
        let i = match &mut self.shuffle {
            None => k,
            Some(s) => {
                let j = s.rng.gen_range(k..self.frames);
                let at_j = s.moved.get(&j).copied().unwrap_or(j);
                // Position k is never drawn again: only j needs to remember what was there.
                let at_k = s.moved.remove(&k).unwrap_or(k);
                if j != k {
                    s.moved.insert(j, at_k);
                }
                at_j
            }
        };
        self.handed += 1;
        Ok(self.base + (i << PAGE_SHIFT))
    }

    /// Frames still available.
    pub fn remaining(&self) -> u64 {
        self.frames - self.handed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_allocator_runs_out() {
        assert!(FrameAllocator::new(0..0).is_err());
        assert!(FrameAllocator::new(0x800..0x2000).is_err());
        assert!(FrameAllocator::shuffled(0x800..0x2000, 1).is_err());
        let mut a = FrameAllocator::new(0x1000..0x3000).unwrap();
        assert_eq!((a.alloc(), a.alloc()), (Ok(0x1000), Ok(0x2000)));
        assert_eq!(a.alloc(), Err(XlateError::OutOfFrames));
    }

    fn draw(seed: u64, frames: u64) -> Vec<u64> {
        let mut s = FrameAllocator::shuffled(0x4000..(4 + frames) * PAGE_BYTES, seed).unwrap();
        let got = (0..frames).map(|_| s.alloc().unwrap()).collect();
        assert_eq!(s.remaining(), 0);
        assert_eq!(s.alloc(), Err(XlateError::OutOfFrames));
        got
    }

    #[test]
    fn shuffled_frames_are_a_seeded_permutation() {
        let got = draw(7, 512);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        let all: Vec<u64> = (0..512).map(|i| 0x4000 + i * PAGE_BYTES).collect();
        assert_eq!(sorted, all, "every frame once");
        assert_eq!(draw(7, 512), got, "same seed, same order");
        assert_ne!(draw(8, 512), got);
        // Far from address order: a uniform permutation of 512 has about 1 frame following
        // its predecessor; a page-by-page allocation would have 511.
        let adjacent = got.windows(2).filter(|w| w[1] == w[0] + PAGE_BYTES).count();
        assert!(adjacent < 8, "{adjacent} frames follow their predecessor");
        // Every frame is as likely first: over 4,000 seeds of 4 frames each comes first
        // about 1,000 times.
        let mut first = [0u32; 4];
        for seed in 0..4000 {
            first[((draw(seed, 4)[0] - 0x4000) / PAGE_BYTES) as usize] += 1;
        }
        assert!(first.iter().all(|&n| (850..1150).contains(&n)), "{first:?}");
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
