//! The network interface of the LHS paper's setting (Tanabe and Ohta, "Network interface
//! architecture with scalable low-latency message receiving mechanism", IEICE Trans. Inf.
//! & Syst. E96-D(12), 2013): DIMMnet-2, a NIC in a DIMM slot, one per node (`[nic]`).
//!
//! What a NIC holds, as its host sees it through four windows of physical addresses:
//! - registers (uncacheable): the receive ring's tail and the host's head, the VL command
//!   and its completion count, the send doorbell, and the receive dividing controller's
//!   Entry Length Register and Size Information Location Register;
//! - the send window (write-combining): the host writes a message (its 16-byte header,
//!   then the payload) and rings the doorbell; the NIC sends it over the wire;
//! - the Read Window (uncacheable): a VL command copies a block of the bulk memory
//!   (DIMMnet-2's SO-DIMM, which the host cannot load from) into it;
//! - the LH buffer, mapped with `nic.lh_attribute`: a ring of entries, each the head of a
//!   message (its envelope and first payload bytes) in arrival order.
//!
//! The receive dividing controller takes each message off the wire into the next position
//! of the receive ring: with LHS (an Entry Length Register above 0) its first
//! `entry_bytes` into the LH buffer and the rest into the bulk memory's slot of the same
//! position (so the pointer the paper's LH entry carries is the position itself); without,
//! the whole message into the slot. The host learns of arrivals from the tail register
//! and hands positions back by writing its head.
//!
//! Like the MOPED device, the NIC knows nothing of the event engine: its host hands it
//! the host's accesses at the cycle they reach it and asks when it next has work
//! (`sim::nic_host`). The LH buffer's bytes live in the host's memory system at the
//! window's addresses, where a write-back mapping's line fills read them; the NIC says
//! what to write there and its host writes it.

mod device;
pub mod matching;

pub use device::{Division, Nic, NicError, NicParams, NicStats, Packet, Sent};

/// Bytes from one NIC's window to the next.
pub use crate::config::NIC_STRIDE;

/// Where each part of a NIC's window starts, from the window's base.
pub const REGS_OFFSET: u64 = 0;
pub const SEND_OFFSET: u64 = 1 << 20;
pub const READ_WINDOW_OFFSET: u64 = 4 << 20;
pub const CQ_OFFSET: u64 = 8 << 20;
pub const LH_OFFSET: u64 = 64 << 20;
/// Bytes of the registers: the receive ring's and the VL engine's in the first line, the
/// matching engine's in the second.
pub const REGS_BYTES: u64 = 128;
/// Pairs the completion queue holds (`nic.matcher`): 16 bytes each, the receive's request
/// number then the message's position; pair `i` at `16 * (i % CQ_PAIRS)`.
pub const CQ_PAIRS: u64 = 1 << 19;
/// The largest LH buffer a window holds (`mpi.lhs_entries * mpi.lhs_entry_bytes` is at
/// most this).
pub const LH_MAX_BYTES: u64 = 64 << 20;

/// The registers, 8 bytes each, all in the window's first line so that the core orders a
/// load of one after a store to another (`sim::cores` holds a load behind stores to its
/// line).
pub mod reg {
    /// Read: receive-ring positions filled so far (the next message's sequence number).
    pub const TAIL: u64 = 0x00;
    /// Write: the host's head: positions before it may be filled again.
    pub const HEAD: u64 = 0x08;
    /// Write: a VL command, `bulk address << 16 | bytes`: copy that block of the bulk
    /// memory to the Read Window's start.
    pub const VL: u64 = 0x10;
    /// Read: VL commands completed so far.
    pub const VL_DONE: u64 = 0x18;
    /// Write: the send doorbell, `destination node << 32 | bytes`: send the send window's
    /// first `bytes`.
    pub const SEND: u64 = 0x20;
    /// Read: the Entry Length Register (0: no LHS, whole messages to the bulk memory).
    pub const ENTRY_LENGTH: u64 = 0x28;
    /// Read: the Size Information Location Register.
    pub const SIZE_LOCATION: u64 = 0x30;
    /// Write (with `nic.matcher`): a receive's match word, then its request number, which
    /// posts it to the NIC's matching engine.
    pub const POST_KEY: u64 = 0x40;
    pub const POST_REQ: u64 = 0x48;
    /// Read (with `nic.matcher`): pairs the engine has made so far (the completion queue's
    /// tail).
    pub const PAIRS: u64 = 0x50;
    /// Write (with `nic.matcher`): the host has copied out the message at this position.
    pub const DONE: u64 = 0x58;
}

/// Bytes of a message's header: the match word, then the payload size at
/// `nic.size_offset`.
pub const HEADER_BYTES: u64 = 16;

/// The part of a NIC's window an address falls in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    Regs,
    Send,
    ReadWindow,
    /// The completion queue of a NIC that matches (`nic.matcher`).
    Cq,
    Lh,
}

/// The windows of a system's NICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicMap {
    pub base: u64,
    pub nics: usize,
    /// Bytes of each part, as configured.
    pub send_bytes: u64,
    pub window_bytes: u64,
    pub lh_bytes: u64,
}

impl NicMap {
    /// The windows of `cfg`'s NICs, one per core: the LH buffer's entries are
    /// `mpi.lhs_entry_bytes` with LHS, none without.
    pub fn of(cfg: &crate::config::SystemConfig) -> NicMap {
        let lhs = cfg.mpi.unexpected_queue == crate::config::UnexpectedQueue::Lhs;
        NicMap {
            base: cfg.nic.base,
            nics: cfg.system.cores,
            send_bytes: cfg.nic.slot_bytes,
            window_bytes: cfg.nic.window_bytes,
            lh_bytes: if lhs {
                cfg.mpi.lhs_entries * cfg.mpi.lhs_entry_bytes
            } else {
                0
            },
        }
    }

    /// Bytes of each LH-buffer entry (0 without LHS), for `cfg`.
    pub fn entry_bytes(cfg: &crate::config::SystemConfig) -> u64 {
        match cfg.mpi.unexpected_queue {
            crate::config::UnexpectedQueue::Lhs => cfg.mpi.lhs_entry_bytes,
            crate::config::UnexpectedQueue::List => 0,
        }
    }

    /// The NIC, the region and the offset in it of `addr`, if it is a NIC's.
    #[inline]
    pub fn locate(&self, addr: u64) -> Option<(usize, Region, u64)> {
        let rel = addr.checked_sub(self.base)?;
        let n = (rel / NIC_STRIDE) as usize;
        if n >= self.nics {
            return None;
        }
        let off = rel % NIC_STRIDE;
        let within = |start: u64, bytes: u64| (start..start + bytes).contains(&off);
        let region = if within(REGS_OFFSET, REGS_BYTES) {
            (Region::Regs, off - REGS_OFFSET)
        } else if within(SEND_OFFSET, self.send_bytes) {
            (Region::Send, off - SEND_OFFSET)
        } else if within(READ_WINDOW_OFFSET, self.window_bytes) {
            (Region::ReadWindow, off - READ_WINDOW_OFFSET)
        } else if within(CQ_OFFSET, 16 * CQ_PAIRS) {
            (Region::Cq, off - CQ_OFFSET)
        } else if within(LH_OFFSET, self.lh_bytes) {
            (Region::Lh, off - LH_OFFSET)
        } else {
            return None;
        };
        Some((n, region.0, region.1))
    }

    /// Whether `addr` is in any NIC's windows' range (mapped or not): such addresses are
    /// physical, never translated.
    #[inline]
    pub fn covers(&self, addr: u64) -> bool {
        addr.checked_sub(self.base)
            .is_some_and(|rel| rel / NIC_STRIDE < self.nics as u64)
    }

    /// The address of `region`'s byte `off` at NIC `n`.
    pub fn addr(&self, n: usize, region: Region, off: u64) -> u64 {
        let start = match region {
            Region::Regs => REGS_OFFSET,
            Region::Send => SEND_OFFSET,
            Region::ReadWindow => READ_WINDOW_OFFSET,
            Region::Cq => CQ_OFFSET,
            Region::Lh => LH_OFFSET,
        };
        self.base + n as u64 * NIC_STRIDE + start + off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_nic_region_and_offset() {
        let m = NicMap {
            base: 0xE000_0000_0000,
            nics: 2,
            send_bytes: 16384,
            window_bytes: 4096,
            lh_bytes: 65536,
        };
        for (n, r, off) in [
            (0, Region::Regs, reg::VL_DONE),
            (1, Region::Send, 100),
            (1, Region::ReadWindow, 4095),
            (0, Region::Lh, 65535),
        ] {
            assert_eq!(m.locate(m.addr(n, r, off)), Some((n, r, off)));
        }
        // Past a region's end, or past the last NIC: nothing.
        assert_eq!(m.locate(m.addr(0, Region::ReadWindow, 4096)), None);
        assert_eq!(m.locate(m.addr(0, Region::Lh, 65536)), None);
        assert_eq!(m.locate(m.base + 2 * NIC_STRIDE), None);
        assert!(m.covers(m.base + NIC_STRIDE + 5) && !m.covers(m.base - 1));
    }
}
