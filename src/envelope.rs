//! The vocabulary of MPI messages that every floor shares: who a process is (program ID
//! and rank) and a message's envelope.
//!
//! MPI calls the matching information of a point-to-point message its envelope: source,
//! destination, tag and communicator (MPI 3.1, section 3.2.3). Here the envelope of a
//! posted send or receive holds its kind, its peer (the destination of a send, the source
//! of a receive, or ANY_SOURCE), its context (the communicator's) and its tag (or
//! ANY_TAG). Workloads write programs in these terms, the OS names processes by program
//! and rank, the MPI runtime turns calls into them and MOPED matches them, so they sit
//! below all of those rather than in the device.
//!
//! Only the meaning lives here. How an envelope travels through a MOPED port (the 48-bit
//! field-0 payload with `0x7FFF` for ANY_SOURCE and a 16-bit tag field with `0xFFFF` for
//! ANY_TAG, and the checks a port applies) is the device's interface and stays in
//! `moped::ports`, as do descriptor IDs and the port map.
//!
//! Tags here are MPI's: `0..=TAG_UB`, MPICH's MPI_TAG_UB (the standard only promises
//! 32,767; traces of real runs use tags of 2^20 and more). The 16-bit tag fields of the
//! device and of the MPI library model are narrower; a program whose tags do not fit has
//! them renumbered densely before it runs (`workload::tags`).

/// A parallel program's identifier, conveyed by the port address.
pub type ProgramId = u8;

/// A process's rank within its program.
pub type Rank = u16;

/// Ranks a program may have: ranks are `0..PORT_RANKS`, as many as a program's window of
/// MOPED ports has ports for.
pub const PORT_RANKS: u16 = 1 << 12;

/// Send or receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Send,
    Recv,
}

/// The rank a message must come from (receives) or goes to (sends).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    Rank(Rank),
    /// MPI_ANY_SOURCE: receives only.
    Any,
}

/// The largest tag: MPICH's MPI_TAG_UB, 2^31 - 1.
pub const TAG_UB: u32 = (1 << 31) - 1;

/// A message tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tag {
    /// `0..=TAG_UB`.
    Tag(u32),
    /// MPI_ANY_TAG: receives only.
    Any,
}

/// The matching information of a send or receive: data-port field 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Envelope {
    pub kind: Kind,
    pub peer: Peer,
    pub context: u16,
    pub tag: Tag,
}

/// A send or receive as a stuck run's report names it: `recv from rank 0 tag 5, 1024 bytes`.
pub fn describe_call(kind: Kind, peer: Peer, tag: Tag, bytes: u64) -> String {
    let peer = match peer {
        Peer::Rank(r) => format!("rank {r}"),
        Peer::Any => "any rank".to_string(),
    };
    let tag = match tag {
        Tag::Tag(t) => format!("tag {t}"),
        Tag::Any => "any tag".to_string(),
    };
    match kind {
        Kind::Send => format!("send to {peer} {tag}, {bytes} bytes"),
        Kind::Recv => format!("recv from {peer} {tag}, {bytes} bytes"),
    }
}
