//! Straight-line work a rank's core does: single accesses, and the loops (memcpy, array
//! sweeps, a reduction's combine) that expand into one access per word.

use super::activity::Activity;
use crate::coherence::{AccessKind, CoreReq};
use crate::sim::Next;
use crate::workload::SweepKind;

/// One queued piece of work of a rank.
#[derive(Clone, Debug)]
pub enum Micro {
    Load {
        addr: u64,
        size: u8,
    },
    Store {
        addr: u64,
        size: u8,
        value: u64,
    },
    /// memcpy of `len` bytes.
    Copy {
        src: u64,
        dst: u64,
        len: u64,
    },
    Sweep {
        at: u64,
        bytes: u64,
        stride: u64,
        kind: SweepKind,
    },
    /// `acc[i] += src[i]` over 4-byte elements.
    Combine {
        acc: u64,
        src: u64,
        len: u64,
    },
    /// Non-memory instructions.
    Compute(u64),
    /// `clflush` of this physical line (a NIC's LH buffer, `nic.flush`).
    Flush(u64),
    /// Runtime bookkeeping, in order with the accesses around it.
    Mark(Mark),
}

impl Micro {
    /// The activity of queued work, where its kind decides; `None` where the task that
    /// queued it does.
    pub(super) fn activity(&self) -> Option<Activity> {
        match self {
            Micro::Copy { .. } => Some(Activity::Copy),
            Micro::Combine { .. } => Some(Activity::Reduce),
            Micro::Sweep { .. } => Some(Activity::Compute),
            _ => None,
        }
    }
}

/// Bookkeeping a rank does once the accesses queued before it have issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// A send's data has left its buffer: the send request completes.
    SendDone(u32),
    /// A receive's data is in its buffer: check it, complete the request.
    RecvDone(u32),
    /// Free a temporary buffer of the unexpected queue.
    FreeTmp(u64),
}

/// A loop in progress.
#[derive(Clone, Debug)]
pub enum Loop {
    Copy(CopyLoop),
    Sweep(SweepLoop),
    Combine(CombineLoop),
}

/// memcpy: a load and a store per word.
#[derive(Clone, Debug)]
pub struct CopyLoop {
    src: u64,
    dst: u64,
    len: u64,
    off: u64,
    /// The size of the load waiting for its value.
    loaded: Option<u8>,
}

/// An array sweep: one access (or a load and a store, for an update) per `stride`.
#[derive(Clone, Debug)]
pub struct SweepLoop {
    at: u64,
    bytes: u64,
    stride: u64,
    kind: SweepKind,
    off: u64,
    loaded: bool,
    /// Mixed into stored values, so each sweep writes values of its own.
    stamp: u64,
}

/// `acc[i] += src[i]`: two loads and a store per word.
#[derive(Clone, Debug)]
pub struct CombineLoop {
    acc: u64,
    src: u64,
    len: u64,
    off: u64,
    /// Loads done for the current word: 0, 1 (acc) or 2 (acc and src).
    step: u8,
    a: u64,
    size: u8,
}

/// The widest access (8, 4, 2 or 1 bytes) both addresses are aligned to and that fits in
/// `left`; aligned accesses never cross a line.
pub fn word(a: u64, b: u64, left: u64) -> u8 {
    for s in [8u64, 4, 2] {
        if a % s == 0 && b % s == 0 && left >= s {
            return s as u8;
        }
    }
    1
}

pub fn load(addr: u64, size: u8) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind: AccessKind::Load,
        addr,
        size,
        value: 0,
    })
}

pub fn store(addr: u64, size: u8, value: u64) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind: AccessKind::Store,
        addr,
        size,
        value: if size == 8 {
            value
        } else {
            value & ((1u64 << (8 * size)) - 1)
        },
    })
}

/// Lane-wise sum of 4-byte elements (integer arithmetic, so every result is exact).
pub(super) fn add_lanes(a: u64, b: u64, size: u8) -> u64 {
    match size {
        8 => {
            let lo = (a as u32).wrapping_add(b as u32) as u64;
            let hi = ((a >> 32) as u32).wrapping_add((b >> 32) as u32) as u64;
            hi << 32 | lo
        }
        _ => (a as u32).wrapping_add(b as u32) as u64,
    }
}

/// The value a store sweep writes at `a`.
pub(super) fn sweep_value(a: u64, stamp: u64) -> u64 {
    a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stamp
}

/// The width of a combine's next element pair: two lanes when both are 8-byte aligned and
/// that many bytes are left, else one.
pub(super) fn combine_size(acc: u64, src: u64, left: u64) -> u8 {
    if acc % 8 == 0 && src % 8 == 0 && left >= 8 {
        8
    } else {
        4
    }
}

impl Loop {
    pub fn copy(src: u64, dst: u64, len: u64) -> Loop {
        Loop::Copy(CopyLoop {
            src,
            dst,
            len,
            off: 0,
            loaded: None,
        })
    }

    /// A sweep of `bytes` at `at`; a zero stride is taken as 1.
    pub fn sweep(at: u64, bytes: u64, stride: u64, kind: SweepKind, stamp: u64) -> Loop {
        Loop::Sweep(SweepLoop {
            at,
            bytes,
            stride: stride.max(1),
            kind,
            off: 0,
            loaded: false,
            stamp,
        })
    }

    pub fn combine(acc: u64, src: u64, len: u64) -> Loop {
        Loop::Combine(CombineLoop {
            acc,
            src,
            len,
            off: 0,
            step: 0,
            a: 0,
            size: 8,
        })
    }

    /// The loop's next access, given the value of its last load; `None` when finished.
    pub fn next(&mut self, value: Option<u64>) -> Option<Next> {
        match self {
            Loop::Copy(l) => l.next(value),
            Loop::Sweep(l) => l.next(value),
            Loop::Combine(l) => l.next(value),
        }
    }

    /// Whether the access just returned was a load whose value the loop needs.
    pub fn wants_value(&self) -> bool {
        match self {
            Loop::Copy(l) => l.loaded.is_some(),
            Loop::Sweep(l) => l.loaded,
            Loop::Combine(l) => l.step != 0,
        }
    }
}

impl CopyLoop {
    fn next(&mut self, value: Option<u64>) -> Option<Next> {
        if let Some(size) = self.loaded.take() {
            let v = value.expect("a copy's load value");
            let a = self.dst + self.off;
            self.off += size as u64;
            return Some(store(a, size, v));
        }
        if self.off >= self.len {
            return None;
        }
        let (s, d) = (self.src + self.off, self.dst + self.off);
        let size = word(s, d, self.len - self.off);
        self.loaded = Some(size);
        Some(load(s, size))
    }
}

impl SweepLoop {
    fn next(&mut self, value: Option<u64>) -> Option<Next> {
        if self.loaded {
            self.loaded = false;
            let a = self.at + self.off;
            self.off += self.stride;
            let v = value.expect("a sweep's load value").wrapping_add(1);
            return Some(store(a, 8, v));
        }
        if self.off >= self.bytes {
            return None;
        }
        let a = self.at + self.off;
        match self.kind {
            SweepKind::Load => {
                self.off += self.stride;
                Some(load(a, 8))
            }
            SweepKind::Store => {
                self.off += self.stride;
                Some(store(a, 8, sweep_value(a, self.stamp)))
            }
            SweepKind::Update => {
                self.loaded = true;
                Some(load(a, 8))
            }
        }
    }
}

impl CombineLoop {
    fn next(&mut self, value: Option<u64>) -> Option<Next> {
        let (acc, src) = (self.acc + self.off, self.src + self.off);
        match self.step {
            0 => {
                if self.off >= self.len {
                    return None;
                }
                self.size = combine_size(acc, src, self.len - self.off);
                self.step = 1;
                Some(load(acc, self.size))
            }
            1 => {
                self.a = value.expect("a combine's load value");
                self.step = 2;
                Some(load(src, self.size))
            }
            _ => {
                let b = value.expect("a combine's load value");
                self.off += self.size as u64;
                self.step = 0;
                Some(store(acc, self.size, add_lanes(self.a, b, self.size)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_the_widest_aligned_access() {
        assert_eq!(word(0, 64, 100), 8);
        assert_eq!(word(4, 64, 100), 4);
        assert_eq!(word(8, 64, 4), 4);
        assert_eq!(word(3, 64, 100), 1);
        assert_eq!(word(2, 6, 2), 2);
    }

    #[test]
    fn lanes_add_separately() {
        assert_eq!(
            add_lanes(0xFFFF_FFFF_0000_0001, 0x0000_0001_0000_0002, 8),
            0x3
        );
        assert_eq!(add_lanes(5, 7, 4), 12);
    }

    #[test]
    fn a_copy_alternates_loads_and_stores() {
        let mut l = Loop::copy(0x1000, 0x2004, 12);
        let mut got = Vec::new();
        let mut v = None;
        while let Some(n) = l.next(v) {
            if let Next::Access(r) = n {
                got.push((r.kind, r.addr, r.size));
                v = Some(0xAB);
            }
        }
        use AccessKind::*;
        assert_eq!(
            got,
            vec![
                (Load, 0x1000, 4),
                (Store, 0x2004, 4),
                (Load, 0x1004, 4),
                (Store, 0x2008, 4),
                (Load, 0x1008, 4),
                (Store, 0x200C, 4)
            ]
        );
    }
}
