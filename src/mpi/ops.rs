//! Straight-line work a rank's core does: single accesses, and the loops (memcpy, array
//! sweeps, a reduction's combine) that expand into one access per word.

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
    /// Runtime bookkeeping, in order with the accesses around it.
    Mark(Mark),
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
    Copy {
        src: u64,
        dst: u64,
        len: u64,
        off: u64,
        /// The size of the load waiting for its value.
        loaded: Option<u8>,
    },
    Sweep {
        at: u64,
        bytes: u64,
        stride: u64,
        kind: SweepKind,
        off: u64,
        loaded: bool,
        stamp: u64,
    },
    Combine {
        acc: u64,
        src: u64,
        len: u64,
        off: u64,
        /// Loads done for the current word: 0, 1 (acc) or 2 (acc and src).
        step: u8,
        a: u64,
        size: u8,
    },
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
fn add_lanes(a: u64, b: u64, size: u8) -> u64 {
    match size {
        8 => {
            let lo = (a as u32).wrapping_add(b as u32) as u64;
            let hi = ((a >> 32) as u32).wrapping_add((b >> 32) as u32) as u64;
            hi << 32 | lo
        }
        _ => (a as u32).wrapping_add(b as u32) as u64,
    }
}

impl Loop {
    /// The loop's next access, given the value of its last load; `None` when finished.
    /// Accesses counted into `accesses`.
    pub fn next(&mut self, value: Option<u64>) -> Option<Next> {
        match self {
            Loop::Copy {
                src,
                dst,
                len,
                off,
                loaded,
            } => {
                if let Some(size) = loaded.take() {
                    let v = value.expect("a copy's load value");
                    let a = *dst + *off;
                    *off += size as u64;
                    return Some(store(a, size, v));
                }
                if *off >= *len {
                    return None;
                }
                let size = word(*src + *off, *dst + *off, *len - *off);
                *loaded = Some(size);
                Some(load(*src + *off, size))
            }
            Loop::Sweep {
                at,
                bytes,
                stride,
                kind,
                off,
                loaded,
                stamp,
            } => {
                if *loaded {
                    *loaded = false;
                    let a = *at + *off;
                    *off += *stride;
                    let v = value.expect("a sweep's load value").wrapping_add(1);
                    return Some(store(a, 8, v));
                }
                if *off >= *bytes {
                    return None;
                }
                let a = *at + *off;
                match kind {
                    SweepKind::Load => {
                        *off += *stride;
                        Some(load(a, 8))
                    }
                    SweepKind::Store => {
                        *off += *stride;
                        Some(store(a, 8, a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ *stamp))
                    }
                    SweepKind::Update => {
                        *loaded = true;
                        Some(load(a, 8))
                    }
                }
            }
            Loop::Combine {
                acc,
                src,
                len,
                off,
                step,
                a,
                size,
            } => match *step {
                0 => {
                    if *off >= *len {
                        return None;
                    }
                    *size = if (*acc + *off) % 8 == 0 && (*src + *off) % 8 == 0 && *len - *off >= 8
                    {
                        8
                    } else {
                        4
                    };
                    *step = 1;
                    Some(load(*acc + *off, *size))
                }
                1 => {
                    *a = value.expect("a combine's load value");
                    *step = 2;
                    Some(load(*src + *off, *size))
                }
                _ => {
                    let b = value.expect("a combine's load value");
                    let at = *acc + *off;
                    *off += *size as u64;
                    *step = 0;
                    Some(store(at, *size, add_lanes(*a, b, *size)))
                }
            },
        }
    }

    /// Whether the access just returned was a load whose value the loop needs.
    pub fn wants_value(&self) -> bool {
        match self {
            Loop::Copy { loaded, .. } => loaded.is_some(),
            Loop::Sweep { loaded, .. } => *loaded,
            Loop::Combine { step, .. } => *step != 0,
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
        let mut l = Loop::Copy {
            src: 0x1000,
            dst: 0x2004,
            len: 12,
            off: 0,
            loaded: None,
        };
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
