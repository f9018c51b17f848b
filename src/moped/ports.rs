//! The MMIO ports through which processes talk to MOPED (paper, section 4.1).
//!
//! # Address layout
//!
//! The OS gives each parallel program a 64 KiB window of port addresses, mapped into that
//! program's address spaces only, so the address of an access names the program and the
//! process rank that made it. Windows are consecutive from the port base
//! ([`DEFAULT_PORT_BASE`] unless configured otherwise; 64 KiB aligned):
//!
//! | address bits (offset from the base) | meaning                                 |
//! |-------------------------------------|-----------------------------------------|
//! | 23..16                              | program ID (256 windows)                |
//! | 15..4                               | process rank (4096 per program)         |
//! | 3                                   | port: 0 data, 1 poll                    |
//! | 2..0                                | must be 0: every access is 8 bytes wide |
//!
//! # Data port
//!
//! A **load** reserves a descriptor. It returns the descriptor ID (below `0x1_0000`: the
//! MOPED in the high bits, the table index in the low bits, split as
//! [`super::IdFormat`] says; processes treat it as opaque), or [`REFUSED`] when MOPED
//! backs off (the process uses the software path for this message), or [`ERROR`].
//!
//! A **store** fills the reserved descriptor one field at a time, in this order. Its value
//! carries the descriptor ID in bits 63..48 and a 48-bit payload in bits 47..0:
//!
//! | field | payload                                                                    |
//! |-------|----------------------------------------------------------------------------|
//! | 0     | envelope: bit 47 kind (0 send, 1 receive); bits 46..32 peer rank (the      |
//! |       | destination of a send, the source of a receive; `0x7FFF` = ANY_SOURCE, on  |
//! |       | receives only); bits 31..16 context; bits 15..0 tag (`0xFFFF` = ANY_TAG,   |
//! |       | on receives only; 0 to `0xFFFE` otherwise)                                 |
//! | 1     | buffer virtual address                                                     |
//! | 2     | buffer size in bytes; the descriptor is now complete and goes to matching  |
//!
//! The 48-bit payload has no room for MPI's 31-bit tags beside a 15-bit peer and a 16-bit
//! context, so the tag field stays 16 bits and a program using wider tags runs with them
//! renumbered densely (`workload::tags`); the port refuses a tag it cannot carry.
//!
//! # Poll port
//!
//! A **store** names the descriptor to poll: the ID in bits 15..0, every other bit 0.
//! The **load** that follows returns a [`PollStatus`]. MOPED remembers only the last
//! (program, rank) -> descriptor mapping stored, so a context switch between the store
//! and the load shows up as [`PollStatus::Retry`].

use crate::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag, PORT_RANKS};

/// Where the port windows start unless configured otherwise: high in a 48-bit physical
/// address space, clear of memory.
pub const DEFAULT_PORT_BASE: u64 = 0xF000_0000_0000;

/// Bytes of port addresses per program.
pub const WINDOW_BYTES: u64 = 1 << 16;

/// Bytes of port addresses for all 256 programs.
pub const PORTS_BYTES: u64 = 256 * WINDOW_BYTES;

/// Width of every port access.
pub const ACCESS_BYTES: u8 = 8;

/// Data-port load answer: reservation refused (backoff), use the software path.
pub const REFUSED: u64 = u64::MAX - 1;

/// Data-port load answer: the access itself was wrong (see [`PortError`]).
pub const ERROR: u64 = u64::MAX;

/// The peer rank field's ANY_SOURCE encoding.
pub const ANY_SOURCE: u64 = 0x7FFF;

/// The tag field's ANY_TAG encoding.
pub const ANY_TAG: u64 = 0xFFFF;

/// Bits a data-port payload may use.
pub const PAYLOAD_MASK: u64 = (1 << 48) - 1;

/// Why a port access or port value was refused. The device answers [`ERROR`] (data
/// port) or [`PollStatus::Error`] (poll port) and keeps this for statistics and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PortError {
    #[error("address {addr:#x} is not a MOPED port")]
    NotPort { addr: u64 },
    #[error("port access at {addr:#x} is misaligned: ports sit on 8-byte boundaries")]
    Misaligned { addr: u64 },
    #[error("port access at {addr:#x} is {size} bytes wide: ports take 8-byte accesses")]
    WrongSize { addr: u64, size: u8 },
    #[error("port base {base:#x} is unusable: {why}")]
    BadBase { base: u64, why: &'static str },
    #[error("rank {rank} has no port: a program's window holds ranks 0..4096")]
    RankOutOfRange { rank: Rank },
    #[error("payload {payload:#x} is wider than 48 bits")]
    PayloadTooWide { payload: u64 },
    #[error("bad {field} {value:#x}: {why}")]
    BadField {
        field: Field,
        value: u64,
        why: &'static str,
    },
    #[error("poll store {value:#x} has bits set above the 16-bit descriptor ID")]
    BadPollStore { value: u64 },
    #[error("{value:#x} is not a poll status")]
    BadPollStatus { value: u64 },
    #[error("{value:#x} is not a data-port load answer")]
    BadReserveAnswer { value: u64 },
    #[error("descriptor table capacity {capacity} is outside 1..=32768")]
    BadCapacity { capacity: usize },
    #[error("{mopeds} MOPEDs leave no bit of a 16-bit descriptor ID for the table index")]
    TooManyMopeds { mopeds: usize },
    #[error("descriptor table is full ({capacity} entries)")]
    TableFull { capacity: usize },
    #[error("descriptor index {index} is outside the table ({capacity} entries)")]
    IndexOutOfRange { index: u16, capacity: usize },
    #[error("descriptor ID names MOPED {moped}, but the system has {mopeds}")]
    NoSuchMoped { moped: u16, mopeds: usize },
    #[error("descriptor {index} is free")]
    Free { index: u16 },
    #[error("descriptor {index} was not reserved by a process here")]
    Unreserved { index: u16 },
    #[error("descriptor {index} belongs to another process: the {mismatch} differs")]
    Isolation { index: u16, mismatch: Mismatch },
    #[error("descriptor {index} is already complete: it takes no more fields")]
    AlreadyComplete { index: u16 },
    #[error("descriptor has {fields} of its 3 fields: only complete descriptors are matched")]
    Incomplete { fields: u8 },
    #[error("descriptor {index} is already matched: only unmatched descriptors are revoked")]
    AlreadyMatched { index: u16 },
}

/// A data-port field, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Peer,
    Tag,
    Size,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Field::Peer => "peer rank",
            Field::Tag => "tag",
            Field::Size => "buffer size",
        })
    }
}

/// Which part of a descriptor's owner differs from the accessing process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mismatch {
    Program,
    Rank,
    PageTableRoot,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mismatch::Program => "program",
            Mismatch::Rank => "rank",
            Mismatch::PageTableRoot => "page-table root",
        })
    }
}

/// Which of a process's two ports an access hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Port {
    Data,
    Poll,
}

/// A decoded port address: who accessed which port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortAddr {
    pub program: ProgramId,
    pub rank: Rank,
    pub port: Port,
}

/// The placement of the port windows in the physical address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortMap {
    base: u64,
}

impl Default for PortMap {
    fn default() -> Self {
        PortMap {
            base: DEFAULT_PORT_BASE,
        }
    }
}

impl PortMap {
    /// Windows from `base`, which must be 64 KiB aligned (each window is whole pages the OS
    /// maps for one program) and leave room for all 256 windows.
    pub fn new(base: u64) -> Result<PortMap, PortError> {
        if base % WINDOW_BYTES != 0 {
            return Err(PortError::BadBase {
                base,
                why: "not 64 KiB aligned",
            });
        }
        if base.checked_add(PORTS_BYTES - 1).is_none() {
            return Err(PortError::BadBase {
                base,
                why: "the windows run past the top of the address space",
            });
        }
        Ok(PortMap { base })
    }

    pub fn base(&self) -> u64 {
        self.base
    }

    /// Whether `addr` falls in the port windows: the cheap test that routes an access to
    /// MOPED before [`PortMap::decode`] checks it.
    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.base) < PORTS_BYTES
    }

    /// The program, rank and port an access of `size` bytes at `addr` names.
    pub fn decode(&self, addr: u64, size: u8) -> Result<PortAddr, PortError> {
        if !self.contains(addr) {
            return Err(PortError::NotPort { addr });
        }
        if size != ACCESS_BYTES {
            return Err(PortError::WrongSize { addr, size });
        }
        let offset = addr - self.base;
        if offset & 0x7 != 0 {
            return Err(PortError::Misaligned { addr });
        }
        Ok(PortAddr {
            program: (offset >> 16) as ProgramId,
            rank: ((offset >> 4) & 0xFFF) as Rank,
            port: if offset & 0x8 == 0 {
                Port::Data
            } else {
                Port::Poll
            },
        })
    }

    /// The address of a process's port.
    pub fn addr_of(&self, program: ProgramId, rank: Rank, port: Port) -> Result<u64, PortError> {
        if rank >= PORT_RANKS {
            return Err(PortError::RankOutOfRange { rank });
        }
        let port_bit = match port {
            Port::Data => 0,
            Port::Poll => 0x8,
        };
        Ok(self.base + ((program as u64) << 16 | (rank as u64) << 4 | port_bit))
    }
}

/// A data-port store value: the descriptor ID's 16 bits over a 48-bit payload.
pub fn pack_store(id: u16, payload: u64) -> Result<u64, PortError> {
    if payload & !PAYLOAD_MASK != 0 {
        return Err(PortError::PayloadTooWide { payload });
    }
    Ok((id as u64) << 48 | payload)
}

/// The descriptor ID's 16 bits and the payload of a data-port store value.
pub fn unpack_store(value: u64) -> (u16, u64) {
    ((value >> 48) as u16, value & PAYLOAD_MASK)
}

/// An envelope as data-port field 0 carries it. The envelope itself is shared vocabulary
/// (`crate::envelope`); its encoding and the checks a port applies are the device's.
impl Envelope {
    /// The 48-bit payload; an envelope [`Envelope::check`] refuses is an error.
    pub fn encode(&self) -> Result<u64, PortError> {
        self.check()?;
        let peer = match self.peer {
            Peer::Rank(rank) => rank as u64,
            Peer::Any => ANY_SOURCE,
        };
        let tag = match self.tag {
            Tag::Tag(tag) => tag.into(),
            Tag::Any => ANY_TAG,
        };
        let kind = match self.kind {
            Kind::Send => 0,
            Kind::Recv => 1,
        };
        Ok(kind << 47 | peer << 32 | (self.context as u64) << 16 | tag)
    }

    /// The envelope in a field-0 payload, checked.
    pub fn decode(payload: u64) -> Result<Envelope, PortError> {
        if payload & !PAYLOAD_MASK != 0 {
            return Err(PortError::PayloadTooWide { payload });
        }
        let envelope = Envelope {
            kind: if payload >> 47 == 0 {
                Kind::Send
            } else {
                Kind::Recv
            },
            peer: match payload >> 32 & 0x7FFF {
                ANY_SOURCE => Peer::Any,
                rank => Peer::Rank(rank as Rank),
            },
            context: (payload >> 16 & 0xFFFF) as u16,
            tag: match payload & 0xFFFF {
                ANY_TAG => Tag::Any,
                tag => Tag::Tag(tag as u32),
            },
        };
        envelope.check()?;
        Ok(envelope)
    }

    /// Wildcards on a send are errors, and so are peer ranks no port has (such a
    /// descriptor could never match) and a tag written as ANY_TAG's encoding.
    pub fn check(&self) -> Result<(), PortError> {
        match self.peer {
            Peer::Rank(rank) if rank >= PORT_RANKS => {
                return Err(bad_field(
                    Field::Peer,
                    rank as u64,
                    "is beyond the ranks with ports",
                ))
            }
            Peer::Any if self.kind == Kind::Send => {
                return Err(bad_field(
                    Field::Peer,
                    ANY_SOURCE,
                    "is ANY_SOURCE on a send",
                ))
            }
            _ => {}
        }
        match self.tag {
            Tag::Tag(tag) if u64::from(tag) == ANY_TAG => Err(bad_field(
                Field::Tag,
                ANY_TAG,
                "is the ANY_TAG encoding: write Tag::Any",
            )),
            Tag::Tag(tag) if u64::from(tag) > ANY_TAG => Err(bad_field(
                Field::Tag,
                tag.into(),
                "is wider than the 16-bit tag field (tags this wide are renumbered)",
            )),
            Tag::Any if self.kind == Kind::Send => {
                Err(bad_field(Field::Tag, ANY_TAG, "is ANY_TAG on a send"))
            }
            _ => Ok(()),
        }
    }
}

pub(crate) fn bad_field(field: Field, value: u64, why: &'static str) -> PortError {
    PortError::BadField { field, value, why }
}

/// The answer to a data-port load (a reservation), as a value and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveAnswer {
    /// The descriptor ID's 16 bits.
    Granted(u16),
    /// Backoff: use the software path.
    Refused,
    Error,
}

impl ReserveAnswer {
    pub fn to_value(self) -> u64 {
        match self {
            ReserveAnswer::Granted(id) => id as u64,
            ReserveAnswer::Refused => REFUSED,
            ReserveAnswer::Error => ERROR,
        }
    }

    pub fn from_value(value: u64) -> Result<ReserveAnswer, PortError> {
        match value {
            REFUSED => Ok(ReserveAnswer::Refused),
            ERROR => Ok(ReserveAnswer::Error),
            bits if bits <= u16::MAX as u64 => Ok(ReserveAnswer::Granted(bits as u16)),
            _ => Err(PortError::BadReserveAnswer { value }),
        }
    }
}

/// The poll-port store value naming the descriptor whose ID's bits are `id`.
pub fn pack_poll(id: u16) -> u64 {
    id as u64
}

/// The descriptor ID's bits a poll-port store names.
pub fn unpack_poll(value: u64) -> Result<u16, PortError> {
    if value > u16::MAX as u64 {
        return Err(PortError::BadPollStore { value });
    }
    Ok(value as u16)
}

/// The answer to a poll-port load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum PollStatus {
    /// Not finished yet: poll again later.
    Pending = 0,
    /// The message has been copied; the descriptor is now free.
    Complete = 1,
    /// MOPED's single cached (program, rank) -> descriptor mapping is not this port's
    /// (another process polled in between): store the ID to the poll port again, then load.
    Retry = 2,
    /// The poll itself was wrong: a bad store value, or a descriptor the process does not own.
    Error = 3,
    /// Backoff removed the unmatched descriptor: complete the message on the software path.
    Revoked = 4,
    /// The copy failed: a buffer lies outside the process's address space.
    Failed = 5,
}

impl PollStatus {
    pub fn to_value(self) -> u64 {
        self as u64
    }

    /// The answer as a program's `expect=` names it, with its meaning.
    pub fn describe(self) -> &'static str {
        match self {
            PollStatus::Pending => "pending (not finished yet)",
            PollStatus::Complete => "complete (the message has been copied)",
            PollStatus::Retry => "retry (another process polled in between)",
            PollStatus::Error => {
                "error (a bad poll value, or a descriptor the process does not own)"
            }
            PollStatus::Revoked => "revoked (backoff removed the unmatched descriptor)",
            PollStatus::Failed => {
                "failed (the copy failed: a buffer lies outside the process's memory)"
            }
        }
    }

    pub fn from_value(value: u64) -> Result<PollStatus, PortError> {
        Ok(match value {
            0 => PollStatus::Pending,
            1 => PollStatus::Complete,
            2 => PollStatus::Retry,
            3 => PollStatus::Error,
            4 => PollStatus::Revoked,
            5 => PollStatus::Failed,
            _ => return Err(PortError::BadPollStatus { value }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(kind: Kind, peer: Peer, context: u16, tag: Tag) -> Envelope {
        Envelope {
            kind,
            peer,
            context,
            tag,
        }
    }

    #[test]
    fn port_addresses_round_trip_through_decode() {
        let map = PortMap::default();
        for program in [0, 1, 0x7f, 255] {
            for rank in [0, 1, 0x123, PORT_RANKS - 1] {
                for port in [Port::Data, Port::Poll] {
                    let addr = map.addr_of(program, rank, port).unwrap();
                    assert!(map.contains(addr));
                    let decoded = map.decode(addr, 8).unwrap();
                    assert_eq!(
                        decoded,
                        PortAddr {
                            program,
                            rank,
                            port
                        }
                    );
                }
            }
        }
    }

    #[test]
    fn layout_puts_program_rank_and_port_in_their_bits() {
        let map = PortMap::new(0x1_0000).unwrap();
        assert_eq!(map.addr_of(3, 5, Port::Poll), Ok(0x1_0000 + 0x3_0058));
        assert_eq!(map.addr_of(0, 0, Port::Data), Ok(0x1_0000));
        assert_eq!(map.addr_of(255, 4095, Port::Poll), Ok(0x1_0000 + 0xFF_FFF8));
    }

    #[test]
    fn contains_is_exactly_the_windows() {
        let map = PortMap::default();
        let base = DEFAULT_PORT_BASE;
        assert!(!map.contains(base - 1));
        assert!(map.contains(base));
        assert!(map.contains(base + PORTS_BYTES - 1));
        assert!(!map.contains(base + PORTS_BYTES));
        assert!(!map.contains(0));
        assert!(!map.contains(u64::MAX));
        let top = PortMap::new(u64::MAX - PORTS_BYTES + 1).unwrap();
        assert!(top.contains(u64::MAX));
        assert!(!top.contains(0));
    }

    #[test]
    fn decode_refuses_bad_accesses() {
        let map = PortMap::default();
        let addr = map.addr_of(1, 2, Port::Data).unwrap();
        assert_eq!(map.decode(7, 8), Err(PortError::NotPort { addr: 7 }));
        for size in [0, 1, 2, 4, 16] {
            assert_eq!(
                map.decode(addr, size),
                Err(PortError::WrongSize { addr, size })
            );
        }
        for low in 1..8 {
            let addr = addr + low;
            assert_eq!(map.decode(addr, 8), Err(PortError::Misaligned { addr }));
        }
    }

    #[test]
    fn bad_bases_and_ranks_are_refused() {
        assert!(matches!(
            PortMap::new(0x8000),
            Err(PortError::BadBase { .. })
        ));
        assert!(matches!(
            PortMap::new(u64::MAX - 0xFFFF),
            Err(PortError::BadBase { .. })
        ));
        assert_eq!(PortMap::new(0).map(|m| m.base()), Ok(0));
        let map = PortMap::default();
        assert_eq!(
            map.addr_of(0, PORT_RANKS, Port::Data),
            Err(PortError::RankOutOfRange { rank: PORT_RANKS })
        );
        assert!(map.addr_of(0, Rank::MAX, Port::Poll).is_err());
    }

    #[test]
    fn store_values_carry_the_id_over_the_payload() {
        let id = 0xABCD;
        let value = pack_store(id, 0x1234_5678_9ABC).unwrap();
        assert_eq!(value, 0xABCD_1234_5678_9ABC);
        assert_eq!(unpack_store(value), (id, 0x1234_5678_9ABC));
        assert_eq!(unpack_store(u64::MAX), (0xFFFF, PAYLOAD_MASK));
        assert_eq!(
            pack_store(id, 1 << 48),
            Err(PortError::PayloadTooWide { payload: 1 << 48 })
        );
    }

    #[test]
    fn envelopes_encode_in_the_documented_bits() {
        let send = envelope(Kind::Send, Peer::Rank(5), 1, Tag::Tag(7));
        assert_eq!(send.encode(), Ok(0x0005_0001_0007));
        let recv = envelope(Kind::Recv, Peer::Any, 0x1234, Tag::Any);
        assert_eq!(recv.encode(), Ok(0xFFFF_1234_FFFF));
    }

    #[test]
    fn envelopes_round_trip() {
        for kind in [Kind::Send, Kind::Recv] {
            for peer in [Peer::Rank(0), Peer::Rank(PORT_RANKS - 1), Peer::Any] {
                for context in [0, 1, u16::MAX] {
                    for tag in [Tag::Tag(0), Tag::Tag(0xFFFE), Tag::Any] {
                        let env = envelope(kind, peer, context, tag);
                        let wild = peer == Peer::Any || tag == Tag::Any;
                        match env.encode() {
                            Ok(payload) => {
                                assert!(kind == Kind::Recv || !wild);
                                assert_eq!(Envelope::decode(payload), Ok(env));
                            }
                            Err(_) => assert!(kind == Kind::Send && wild),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn decode_names_the_bad_field() {
        let field_of = |payload| match Envelope::decode(payload) {
            Err(PortError::BadField { field, .. }) => Some(field),
            _ => None,
        };
        // A send to ANY_SOURCE, a send with ANY_TAG, a peer rank beyond the ports.
        assert_eq!(field_of(0x7FFF_0000_0001), Some(Field::Peer));
        assert_eq!(field_of(0x0001_0000_FFFF), Some(Field::Tag));
        assert_eq!(field_of(0x1000_0000_0001), Some(Field::Peer));
        assert_eq!(field_of(0x8000_1000_0000_0001), None);
        assert!(matches!(
            Envelope::decode(1 << 48),
            Err(PortError::PayloadTooWide { .. })
        ));
        let message = Envelope::decode(0x0001_0000_FFFF).unwrap_err().to_string();
        assert!(
            message.contains("tag") && message.contains("ANY_TAG on a send"),
            "{message}"
        );
        let message = Envelope::decode(0x7FFF_0000_0001).unwrap_err().to_string();
        assert!(message.contains("peer rank"), "{message}");
    }

    #[test]
    fn encode_refuses_what_decode_would() {
        let bad = [
            envelope(Kind::Send, Peer::Any, 0, Tag::Tag(1)),
            envelope(Kind::Send, Peer::Rank(1), 0, Tag::Any),
            envelope(Kind::Recv, Peer::Rank(PORT_RANKS), 0, Tag::Any),
            envelope(Kind::Recv, Peer::Rank(0x7FFF), 0, Tag::Any),
            envelope(Kind::Recv, Peer::Rank(Rank::MAX), 0, Tag::Any),
            envelope(Kind::Recv, Peer::Any, 0, Tag::Tag(0xFFFF)),
            envelope(Kind::Send, Peer::Rank(1), 0, Tag::Tag(0x1_0000)),
            envelope(Kind::Recv, Peer::Any, 0, Tag::Tag(crate::envelope::TAG_UB)),
        ];
        for env in bad {
            assert!(
                matches!(env.encode(), Err(PortError::BadField { .. })),
                "{env:?}"
            );
        }
    }

    #[test]
    fn reserve_answers_round_trip() {
        let id = 0x0309;
        for answer in [
            ReserveAnswer::Granted(id),
            ReserveAnswer::Refused,
            ReserveAnswer::Error,
        ] {
            assert_eq!(ReserveAnswer::from_value(answer.to_value()), Ok(answer));
        }
        assert_eq!(ReserveAnswer::Granted(id).to_value(), 0x0309);
        assert_eq!(ReserveAnswer::Refused.to_value(), u64::MAX - 1);
        assert_eq!(
            ReserveAnswer::from_value(0x1_0000),
            Err(PortError::BadReserveAnswer { value: 0x1_0000 })
        );
    }

    #[test]
    fn poll_stores_carry_only_the_id() {
        let id = 0x0102;
        assert_eq!(unpack_poll(pack_poll(id)), Ok(id));
        for value in [0x1_0000, 0x8000_0000_0000_0102, u64::MAX] {
            assert_eq!(unpack_poll(value), Err(PortError::BadPollStore { value }));
        }
    }

    #[test]
    fn poll_statuses_round_trip() {
        for value in 0..=5 {
            assert_eq!(PollStatus::from_value(value).unwrap().to_value(), value);
        }
        assert_eq!(PollStatus::Revoked.to_value(), 4);
        for value in [6, u64::MAX] {
            assert_eq!(
                PollStatus::from_value(value),
                Err(PortError::BadPollStatus { value })
            );
        }
    }
}
