//! The outstanding descriptor table (paper, section 4.2 and Figure 7).
//!
//! Every MOPED has one. A process's data-port load reserves an entry here (the local
//! MOPED) and its stores fill it; a complete descriptor is forwarded to the matching
//! MOPED, which holds a copy in its own table until matching pairs it. The copy's `link`
//! names the original, so the matched pair can be sent back to the receiver's MOPED.
//! The Reserved bit tells the two apart: only a process's own reservations have it, and
//! only they answer its stores and polls.

use crate::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag, PORT_RANKS};

use super::ports::{bad_field, Field, Mismatch, PollStatus, PortError, PAYLOAD_MASK};
use super::DescId;

/// Status bits, named RVNMAC as in the paper; the byte reads R V N M A C from bit 5 down.
/// Reserved: a process at this MOPED reserved the entry (forwarded copies lack it).
pub const RESERVED: u8 = 1 << 5;
/// Valid: all fields are stored.
pub const VALID: u8 = 1 << 4;
/// Needs match: waiting for the matching state machine.
pub const NEEDS_MATCH: u8 = 1 << 3;
/// Matched: paired with a partner.
pub const MATCHED: u8 = 1 << 2;
/// Active: in the active match table, being copied.
pub const ACTIVE: u8 = 1 << 1;
/// Completed: copied, kept until its process polls it.
pub const COMPLETED: u8 = 1 << 0;

/// Data-port fields a descriptor takes: envelope, buffer address, buffer size.
pub const FIELDS: u8 = 3;

/// Largest table: deep enough for the posted-receive and unexpected queues the matching
/// engines are built for (32,768 list entries in the two-level queue of Xiong et al.).
/// How many of its entries processes can reserve is the descriptor ID's limit
/// ([`super::IdFormat`]); forwarded copies may use the rest.
pub const MAX_CAPACITY: usize = 32_768;

/// A table index.
pub type DescIndex = u16;

/// Bytes of virtual address space a buffer must lie in.
const VA_SPACE: u64 = PAYLOAD_MASK + 1;

/// One outstanding message descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// RVNMAC bits.
    pub status: u8,
    /// The owner: the program and rank of the port used, and the page-table root (x86
    /// cr3) of the process, so no other process can store to or poll the descriptor.
    pub program: ProgramId,
    pub rank: Rank,
    pub pt_root: u64,
    /// The envelope: `kind` is `None` until field 0 is stored, the rest meaningless.
    pub kind: Option<Kind>,
    pub peer: Peer,
    pub context: u16,
    pub tag: Tag,
    /// The buffer.
    pub va: u64,
    pub size: u64,
    pub fields_stored: u8,
    /// For a copy at the matching MOPED, the original's ID at the local MOPED; for a
    /// matched descriptor at the local MOPED, the partner's ID.
    pub link: Option<DescId>,
    /// Table-wide arrival stamp, assigned on reserve and insert: matching goes in this order.
    pub seq: u64,
    /// The copy failed (a buffer outside the process): a poll answers Failed.
    pub failed: bool,
}

impl Descriptor {
    /// A fresh reservation with no fields stored.
    pub fn reserved(program: ProgramId, rank: Rank, pt_root: u64) -> Descriptor {
        Descriptor {
            status: RESERVED,
            program,
            rank,
            pt_root,
            kind: None,
            peer: Peer::Any,
            context: 0,
            tag: Tag::Any,
            va: 0,
            size: 0,
            fields_stored: 0,
            link: None,
            seq: 0,
            failed: false,
        }
    }

    /// A descriptor with all fields stored, as it travels to the matching MOPED.
    pub fn complete(
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        envelope: Envelope,
        va: u64,
        size: u64,
    ) -> Result<Descriptor, PortError> {
        if rank >= PORT_RANKS {
            return Err(PortError::RankOutOfRange { rank });
        }
        envelope.check()?;
        check_buffer(va, size)?;
        let mut desc = Descriptor::reserved(program, rank, pt_root);
        desc.status = VALID;
        desc.set_envelope(envelope);
        desc.va = va;
        desc.size = size;
        desc.fields_stored = FIELDS;
        Ok(desc)
    }

    /// Whether any of `bits` is set.
    #[inline]
    pub fn has(&self, bits: u8) -> bool {
        self.status & bits != 0
    }

    pub fn is_complete(&self) -> bool {
        self.fields_stored == FIELDS
    }

    /// Matched, being copied, or copied: past the point where backoff may revoke it.
    pub fn is_matched(&self) -> bool {
        self.has(MATCHED | ACTIVE | COMPLETED)
    }

    pub fn envelope(&self) -> Option<Envelope> {
        Some(Envelope {
            kind: self.kind?,
            peer: self.peer,
            context: self.context,
            tag: self.tag,
        })
    }

    fn set_envelope(&mut self, envelope: Envelope) {
        self.kind = Some(envelope.kind);
        self.peer = envelope.peer;
        self.context = envelope.context;
        self.tag = envelope.tag;
    }

    /// What a poll of this descriptor answers, as far as the descriptor alone decides
    /// (Retry, Error and Revoked are the device's answers about the poll itself).
    pub fn poll_status(&self) -> PollStatus {
        match (self.has(COMPLETED), self.failed) {
            (true, true) => PollStatus::Failed,
            (true, false) => PollStatus::Complete,
            (false, _) => PollStatus::Pending,
        }
    }
}

/// A buffer must lie inside the 48-bit virtual address space.
fn check_buffer(va: u64, size: u64) -> Result<(), PortError> {
    if va > PAYLOAD_MASK || size > VA_SPACE - va {
        return Err(bad_field(
            Field::Size,
            size,
            "runs the buffer past the 48-bit address space",
        ));
    }
    Ok(())
}

/// The table of outstanding descriptors, indexed by a descriptor ID's index.
#[derive(Clone, Debug)]
pub struct DescTable {
    entries: Vec<Option<Descriptor>>,
    /// Free indices, lowest first: find-first-free without a scan of a deep table.
    free: std::collections::BTreeSet<DescIndex>,
    next_seq: u64,
}

impl DescTable {
    /// A table of `capacity` entries, 1 to [`MAX_CAPACITY`].
    pub fn new(capacity: usize) -> Result<DescTable, PortError> {
        if !(1..=MAX_CAPACITY).contains(&capacity) {
            return Err(PortError::BadCapacity { capacity });
        }
        Ok(DescTable {
            entries: vec![None; capacity],
            free: (0..capacity as DescIndex).collect(),
            next_seq: 0,
        })
    }

    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Entries in use.
    pub fn occupied(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    /// Entries (reservations and copies) in use by `program`: backoff ends when its count
    /// reaches zero everywhere.
    pub fn count_program(&self, program: ProgramId) -> usize {
        self.iter().filter(|(_, d)| d.program == program).count()
    }

    /// Occupied entries in index order.
    pub fn iter(&self) -> impl Iterator<Item = (DescIndex, &Descriptor)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|d| (i as DescIndex, d)))
    }

    pub fn get(&self, index: DescIndex) -> Option<&Descriptor> {
        self.entries.get(index as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, index: DescIndex) -> Option<&mut Descriptor> {
        self.entries.get_mut(index as usize)?.as_mut()
    }

    /// Reserves the lowest free entry for a process, or `None` when the table is full.
    pub fn reserve(&mut self, program: ProgramId, rank: Rank, pt_root: u64) -> Option<DescIndex> {
        self.reserve_below(program, rank, pt_root, self.capacity())
    }

    /// Reserves the lowest free entry below `limit` (the indices a descriptor ID can name),
    /// or `None` when there is none.
    pub fn reserve_below(
        &mut self,
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
        limit: usize,
    ) -> Option<DescIndex> {
        let lowest = *self.free.first()?;
        if lowest as usize >= limit {
            return None;
        }
        self.place(Descriptor::reserved(program, rank, pt_root), false)
    }

    /// Takes a complete descriptor forwarded for matching: Valid and Needs-match, stamped
    /// after every entry already here, so it is matched after them.
    pub fn insert_forwarded(&mut self, desc: Descriptor) -> Result<DescIndex, PortError> {
        let envelope = desc.envelope().filter(|_| desc.is_complete());
        envelope
            .ok_or(PortError::Incomplete {
                fields: desc.fields_stored,
            })?
            .check()?;
        let capacity = self.capacity();
        let desc = Descriptor {
            status: VALID | NEEDS_MATCH,
            ..desc
        };
        // Copies fill the table from the top, leaving the low indices, the ones a
        // descriptor ID can name, to reservations.
        self.place(desc, true)
            .ok_or(PortError::TableFull { capacity })
    }

    /// Stores `desc` in the lowest free entry (find-first-free), or the highest with
    /// `from_top`, with the next stamp.
    fn place(&mut self, mut desc: Descriptor, from_top: bool) -> Option<DescIndex> {
        let index = if from_top {
            self.free.pop_last()?
        } else {
            self.free.pop_first()?
        };
        desc.seq = self.next_seq;
        self.next_seq += 1;
        self.entries[index as usize] = Some(desc);
        Some(index)
    }

    /// Frees an entry, returning what it held.
    pub fn free(&mut self, index: DescIndex) -> Option<Descriptor> {
        let desc = self.entries.get_mut(index as usize)?.take()?;
        self.free.insert(index);
        Some(desc)
    }

    /// The entry at `index`, if it exists and is occupied.
    pub fn entry_mut(&mut self, index: DescIndex) -> Result<&mut Descriptor, PortError> {
        let capacity = self.capacity();
        match self.entries.get_mut(index as usize) {
            None => Err(PortError::IndexOutOfRange { index, capacity }),
            Some(None) => Err(PortError::Free { index }),
            Some(Some(desc)) => Ok(desc),
        }
    }

    /// The entry at `index` if the accessing process reserved it: the isolation check
    /// every store and poll passes first. A failed check changes nothing.
    pub fn check_owner(
        &mut self,
        index: DescIndex,
        program: ProgramId,
        rank: Rank,
        pt_root: u64,
    ) -> Result<&mut Descriptor, PortError> {
        let desc = self.reserved_mut(index)?;
        let mismatch = if desc.program != program {
            Mismatch::Program
        } else if desc.rank != rank {
            Mismatch::Rank
        } else if desc.pt_root != pt_root {
            Mismatch::PageTableRoot
        } else {
            return Ok(desc);
        };
        Err(PortError::Isolation { index, mismatch })
    }

    /// Stores the next field of a reserved descriptor; `Ok(true)` when that completed it
    /// (it is now Valid). A refused store changes nothing.
    pub fn store_field(&mut self, index: DescIndex, payload: u64) -> Result<bool, PortError> {
        let desc = self.reserved_mut(index)?;
        if desc.is_complete() {
            return Err(PortError::AlreadyComplete { index });
        }
        if payload > PAYLOAD_MASK {
            return Err(PortError::PayloadTooWide { payload });
        }
        match desc.fields_stored {
            0 => desc.set_envelope(Envelope::decode(payload)?),
            1 => desc.va = payload,
            _ => {
                check_buffer(desc.va, payload)?;
                desc.size = payload;
                desc.status |= VALID;
            }
        }
        desc.fields_stored += 1;
        Ok(desc.is_complete())
    }

    /// An entry a process reserved here: forwarded copies are nobody's to touch.
    fn reserved_mut(&mut self, index: DescIndex) -> Result<&mut Descriptor, PortError> {
        let desc = self.entry_mut(index)?;
        if !desc.has(RESERVED) {
            return Err(PortError::Unreserved { index });
        }
        Ok(desc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: u64 = 0x1000;

    fn send_envelope(dest: Rank) -> Envelope {
        Envelope {
            kind: Kind::Send,
            peer: Peer::Rank(dest),
            context: 2,
            tag: Tag::Tag(7),
        }
    }

    /// A table with one reserved entry at index 0 filled with `fields` fields.
    fn filled(fields: u8) -> DescTable {
        let mut table = DescTable::new(4).unwrap();
        assert_eq!(table.reserve(1, 2, ROOT), Some(0));
        let payloads = [send_envelope(3).encode().unwrap(), 0x4000, 64];
        for &payload in &payloads[..fields as usize] {
            table.store_field(0, payload).unwrap();
        }
        table
    }

    #[test]
    fn capacity_is_bounded() {
        for capacity in [0, MAX_CAPACITY + 1, usize::MAX] {
            assert_eq!(
                DescTable::new(capacity).err(),
                Some(PortError::BadCapacity { capacity })
            );
        }
        let mut table = DescTable::new(MAX_CAPACITY).unwrap();
        for i in 0..MAX_CAPACITY {
            assert_eq!(table.reserve(0, 0, ROOT), Some(i as DescIndex));
        }
        assert_eq!(table.reserve(0, 0, ROOT), None);
        assert_eq!(table.occupied(), MAX_CAPACITY);
    }

    #[test]
    fn reserve_takes_the_first_free_entry() {
        let mut table = DescTable::new(4).unwrap();
        assert_eq!(table.reserve(0, 0, ROOT), Some(0));
        assert_eq!(table.reserve(0, 1, ROOT), Some(1));
        assert_eq!(table.reserve(1, 2, ROOT), Some(2));
        assert_eq!(table.free(1).map(|d| d.rank), Some(1));
        assert_eq!(table.free(1), None);
        assert_eq!(table.reserve(0, 3, ROOT), Some(1));
        assert_eq!(table.reserve(0, 4, ROOT), Some(3));
        let seqs: Vec<u64> = table.iter().map(|(_, d)| d.seq).collect();
        assert_eq!(seqs, [0, 3, 2, 4]);
        assert_eq!(table.count_program(0), 3);
        assert_eq!(table.count_program(1), 1);
        assert_eq!(table.count_program(2), 0);
    }

    #[test]
    fn a_full_table_refuses_reservations_and_forwards() {
        let mut table = DescTable::new(1).unwrap();
        assert_eq!(table.reserve(0, 0, ROOT), Some(0));
        assert_eq!(table.reserve(0, 0, ROOT), None);
        let desc = Descriptor::complete(0, 1, ROOT, send_envelope(0), 0, 8).unwrap();
        assert_eq!(
            table.insert_forwarded(desc),
            Err(PortError::TableFull { capacity: 1 })
        );
        assert_eq!(table.free(9), None);
        assert_eq!(table.get(9), None);
    }

    #[test]
    fn fields_are_stored_in_order_and_complete_the_descriptor() {
        let mut table = filled(0);
        let id = DescId { moped: 0, index: 0 };
        let envelope = send_envelope(3);
        assert_eq!(table.store_field(0, envelope.encode().unwrap()), Ok(false));
        assert_eq!(table.get(0).unwrap().envelope(), Some(envelope));
        assert_eq!(table.store_field(0, 0x4000), Ok(false));
        assert!(!table.get(0).unwrap().has(VALID));
        assert_eq!(table.store_field(0, 64), Ok(true));
        let desc = *table.get(0).unwrap();
        assert_eq!(
            (desc.va, desc.size, desc.fields_stored),
            (0x4000, 64, FIELDS)
        );
        assert_eq!(desc.status, RESERVED | VALID);
        assert_eq!(desc.poll_status(), PollStatus::Pending);
        assert_eq!(
            table.store_field(id.index, 1),
            Err(PortError::AlreadyComplete { index: 0 })
        );
        assert_eq!(table.get(0), Some(&desc));
    }

    #[test]
    fn refused_stores_change_nothing() {
        let bad_envelope = 0x7FFF_0000_0001; // a send to ANY_SOURCE
        let cases: [(u8, u64); 4] = [
            (0, bad_envelope),
            (0, 1 << 48),
            (1, 1 << 48),
            (2, PAYLOAD_MASK), // runs the buffer at 0x4000 past the address space
        ];
        for (fields, payload) in cases {
            let mut table = filled(fields);
            let before = *table.get(0).unwrap();
            assert!(
                table.store_field(0, payload).is_err(),
                "{fields} {payload:#x}"
            );
            assert_eq!(table.get(0), Some(&before));
        }
        let mut table = filled(2);
        assert_eq!(table.store_field(0, VA_SPACE - 0x4000), Ok(true));
    }

    #[test]
    fn stores_need_a_reserved_entry() {
        let mut table = DescTable::new(4).unwrap();
        assert_eq!(table.store_field(0, 0), Err(PortError::Free { index: 0 }));
        assert_eq!(
            table.store_field(4, 0),
            Err(PortError::IndexOutOfRange {
                index: 4,
                capacity: 4
            })
        );
        let desc = Descriptor::complete(0, 1, ROOT, send_envelope(0), 0, 8).unwrap();
        let index = table.insert_forwarded(desc).unwrap();
        assert_eq!(
            table.store_field(index, 0),
            Err(PortError::Unreserved { index })
        );
    }

    #[test]
    fn isolation_refuses_every_mismatch_in_every_status() {
        let statuses = [
            RESERVED,
            RESERVED | VALID,
            RESERVED | VALID | MATCHED,
            RESERVED | VALID | MATCHED | ACTIVE,
            RESERVED | VALID | MATCHED | COMPLETED,
        ];
        let wrong = [
            (9, 2, ROOT, Mismatch::Program),
            (1, 9, ROOT, Mismatch::Rank),
            (1, 2, ROOT + 1, Mismatch::PageTableRoot),
            (9, 9, ROOT + 1, Mismatch::Program),
        ];
        for fields in [0, 1, FIELDS] {
            for status in statuses {
                let mut table = filled(fields);
                table.get_mut(0).unwrap().status = status;
                let before = *table.get(0).unwrap();
                for (program, rank, root, mismatch) in wrong {
                    assert_eq!(
                        table.check_owner(0, program, rank, root).err(),
                        Some(PortError::Isolation { index: 0, mismatch })
                    );
                    assert_eq!(table.get(0), Some(&before));
                }
                assert_eq!(table.check_owner(0, 1, 2, ROOT).ok().copied(), Some(before));
            }
        }
    }

    #[test]
    fn isolation_refuses_free_missing_and_forwarded_entries() {
        let mut table = filled(0);
        assert_eq!(
            table.check_owner(1, 1, 2, ROOT).err(),
            Some(PortError::Free { index: 1 })
        );
        assert_eq!(
            table.check_owner(200, 1, 2, ROOT).err(),
            Some(PortError::IndexOutOfRange {
                index: 200,
                capacity: 4
            })
        );
        let desc = Descriptor::complete(1, 2, ROOT, send_envelope(0), 0, 8).unwrap();
        let index = table.insert_forwarded(desc).unwrap();
        assert_eq!(
            table.check_owner(index, 1, 2, ROOT).err(),
            Some(PortError::Unreserved { index })
        );
    }

    #[test]
    fn forwarded_descriptors_need_matching_and_keep_their_link() {
        let mut table = filled(3);
        let mut desc = Descriptor::complete(1, 2, ROOT, send_envelope(0), 0, 8).unwrap();
        desc.link = Some(DescId { moped: 5, index: 6 });
        desc.status = RESERVED | COMPLETED;
        // Copies take the highest free entry, leaving low ones to reservations.
        assert_eq!(table.insert_forwarded(desc), Ok(3));
        assert_eq!(table.reserve(1, 2, ROOT), Some(1));
        let stored = table.get(3).unwrap();
        assert_eq!(stored.status, VALID | NEEDS_MATCH);
        assert_eq!(stored.link, desc.link);
        assert!(stored.seq > table.get(0).unwrap().seq);

        let mut partial = desc;
        partial.fields_stored = 2;
        assert_eq!(
            table.insert_forwarded(partial),
            Err(PortError::Incomplete { fields: 2 })
        );
        let mut no_envelope = desc;
        no_envelope.kind = None;
        assert!(table.insert_forwarded(no_envelope).is_err());
        let mut wild_send = desc;
        wild_send.peer = Peer::Any;
        assert!(table.insert_forwarded(wild_send).is_err());
        assert_eq!(table.occupied(), 3);
    }

    #[test]
    fn complete_descriptors_are_checked() {
        let env = send_envelope(0);
        assert!(Descriptor::complete(0, PORT_RANKS, ROOT, env, 0, 8).is_err());
        assert!(Descriptor::complete(0, 0, ROOT, env, VA_SPACE, 0).is_err());
        assert!(Descriptor::complete(0, 0, ROOT, env, 1, VA_SPACE).is_err());
        assert!(Descriptor::complete(0, 0, ROOT, env, 1, PAYLOAD_MASK).is_ok());
        assert!(Descriptor::complete(0, 0, ROOT, env, u64::MAX, u64::MAX).is_err());
        assert!(Descriptor::complete(0, 0, ROOT, env, 0, VA_SPACE).is_ok());
    }

    #[test]
    fn polls_see_completion_and_failure() {
        let mut desc = Descriptor::reserved(0, 0, ROOT);
        assert_eq!(desc.poll_status(), PollStatus::Pending);
        desc.status |= COMPLETED;
        assert_eq!(desc.poll_status(), PollStatus::Complete);
        desc.failed = true;
        assert_eq!(desc.poll_status(), PollStatus::Failed);
    }
}
