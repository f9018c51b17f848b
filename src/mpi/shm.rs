//! MPICH2 1.2's ch3:shm channel as laid out in simulated shared memory.
//!
//! One queue per directed pair of ranks (`mpidi_ch3_impl.h`): a header with the reader's
//! `head_index` and the writer's `tail_index` (4 bytes each, on one line: MPICH leaves the
//! padding commented out), then 16 packets of a 16-byte slot header (`avail`, `num_bytes`,
//! `offset`, pad) and 16 kB of data. A writer fills the slot at its tail, sets `num_bytes`,
//! then `avail`; the reader polls `avail` at its head, consumes, and clears it. A CH3 packet
//! header and its payload are written back to back (`writev`), so a long payload streams on
//! through the following slots. The P x P queues are one array in one shared segment that
//! every process attaches, so by default a queue starts where the last one ended
//! ([`QueueStride`]).

use crate::config::QueueStride;
use crate::os::pagetable::PAGE_BYTES;

/// Slots per queue (`MPIDI_CH3I_NUM_PACKETS`).
pub const SLOTS: u64 = 16;
/// Data bytes per slot (`MPIDI_CH3I_PACKET_SIZE`).
pub const SLOT_DATA: u64 = 16 * 1024;
/// The slot header: `avail`, `num_bytes`, `offset`, pad.
pub const SLOT_HEADER: u64 = 16;
/// The queue header: `head_index`, `tail_index`.
pub const QUEUE_HEADER: u64 = 8;
/// Bytes of one queue.
pub const QUEUE_BYTES: u64 = QUEUE_HEADER + SLOTS * (SLOT_HEADER + SLOT_DATA);

impl QueueStride {
    /// Bytes from one queue to the next.
    pub fn bytes(self) -> u64 {
        match self {
            QueueStride::Mpich => QUEUE_BYTES,
            QueueStride::Page => QUEUE_BYTES.div_ceil(PAGE_BYTES) * PAGE_BYTES,
        }
    }
}

/// Bytes of a CH3 packet header as this model encodes it (type and envelope, size, the
/// sender's and the receiver's request handles); MPICH's union is a few tens of bytes.
pub const PKT_HEADER: u64 = 32;
/// Largest eager message: MPICH sends eagerly when `data + header <= 10000`
/// (`MPIDI_CH3_EAGER_MAX_MSG_SIZE`).
pub const EAGER_MAX: u64 = 10_000;

/// `avail` values.
pub const EMPTY: u64 = 0;
pub const FILLED: u64 = 1;

/// Offset of `head_index` and `tail_index` in a queue.
pub const HEAD: u64 = 0;
pub const TAIL: u64 = 4;

/// Offset of slot `i`'s header in its queue.
pub fn slot(i: u64) -> u64 {
    QUEUE_HEADER + i * (SLOT_HEADER + SLOT_DATA)
}

/// Offset of slot `i`'s data.
pub fn slot_data(i: u64) -> u64 {
    slot(i) + SLOT_HEADER
}

/// CH3 packet types this model uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktType {
    /// Envelope and data in one packet.
    Eager = 1,
    /// Request to send (rendezvous): envelope and size.
    Rts = 2,
    /// Clear to send: the receiver's request handle.
    Cts = 3,
    /// Rendezvous data: header, then the payload streamed through the slots.
    RndvData = 4,
}

impl PktType {
    pub fn from_u8(v: u8) -> Option<PktType> {
        Some(match v {
            1 => PktType::Eager,
            2 => PktType::Rts,
            3 => PktType::Cts,
            4 => PktType::RndvData,
            _ => return None,
        })
    }
}

/// A packet header: four 8-byte words in the slot's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktHeader {
    pub ty: PktType,
    pub src: u16,
    pub tag: u16,
    pub ctx: u16,
    pub bytes: u64,
    /// The sender's request number.
    pub sreq: u32,
    /// The receiver's request number (CTS and data).
    pub rreq: u32,
}

impl PktHeader {
    pub fn encode(&self) -> [u64; 4] {
        [
            self.ty as u64
                | (self.src as u64) << 8
                | (self.tag as u64) << 24
                | (self.ctx as u64) << 40,
            self.bytes,
            self.sreq as u64,
            self.rreq as u64,
        ]
    }

    /// Decodes the words read from a slot; `None` for a word that is no packet header.
    pub fn decode(w: [u64; 4]) -> Option<PktHeader> {
        Some(PktHeader {
            ty: PktType::from_u8(w[0] as u8)?,
            src: (w[0] >> 8) as u16,
            tag: (w[0] >> 24) as u16,
            ctx: (w[0] >> 40) as u16,
            bytes: w[1],
            sreq: u32::try_from(w[2]).ok()?,
            rreq: u32::try_from(w[3]).ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imbs_warm_up_knows_the_queue_capacity() {
        assert_eq!(
            crate::workload::imb::SHM_QUEUE_DATA_BYTES,
            SLOTS * SLOT_DATA
        );
        assert_eq!(crate::workload::imb::SHM_SLOT_DATA_BYTES, SLOT_DATA);
    }

    #[test]
    fn queue_geometry_follows_mpich() {
        assert_eq!(QUEUE_BYTES, 8 + 16 * 16400);
        assert_eq!(slot_data(0), 24);
        assert_eq!(slot(1) - slot(0), 16400);
        assert_eq!(QueueStride::Mpich.bytes(), 262_408);
        assert_eq!(QueueStride::Page.bytes(), 65 * 4096);
        // Every queue starts 8-byte aligned, so its words never straddle a line.
        assert_eq!(QueueStride::Mpich.bytes() % 8, 0);
        // Payloads start 8-byte aligned, so copies move whole words.
        assert_eq!((slot_data(5) + PKT_HEADER) % 8, 0);
    }

    #[test]
    fn headers_round_trip() {
        let h = PktHeader {
            ty: PktType::Rts,
            src: 15,
            tag: 0xFFFE,
            ctx: 1,
            bytes: 1 << 20,
            sreq: 7,
            rreq: 0,
        };
        assert_eq!(PktHeader::decode(h.encode()), Some(h));
        assert_eq!(PktHeader::decode([0, 0, 0, 0]), None);
    }
}
