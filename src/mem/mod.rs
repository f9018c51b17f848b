//! Memory structures: line data, set-associative arrays with LRU replacement, and the
//! backing store. Every cached line has its 64 bytes somewhere, so loads return values
//! tests can check.

mod paged;
mod signature;

pub use paged::{PagedMap, Place};

/// Bytes per cache line (the paper's Table 1).
pub const LINE_BYTES: usize = 64;
/// The data of one line.
pub type LineData = [u8; LINE_BYTES];

/// Bytes per page: the OS's frames and the granule in which [`PagedMap`] stores a bank's
/// lines.
pub const PAGE_BYTES: u64 = 4096;
/// Bits of the page offset.
pub const PAGE_SHIFT: u32 = 12;
/// A line-aligned physical address.
pub type LineAddr = u64;

/// The line containing a byte address.
#[inline]
pub fn line_of(addr: u64) -> LineAddr {
    addr & !(LINE_BYTES as u64 - 1)
}

/// The low `size` bytes (1..=8) of a word.
#[inline]
fn byte_mask(size: usize) -> u64 {
    u64::MAX >> (64 - 8 * size as u32)
}

/// Reads `size` bytes (1..=8) at `offset` as a little-endian value.
#[inline]
pub fn read_bytes(data: &LineData, offset: usize, size: usize) -> u64 {
    debug_assert!((1..=8).contains(&size) && offset + size <= LINE_BYTES);
    if offset + 8 <= LINE_BYTES {
        // One fixed 8-byte load and a mask instead of a variable-length copy.
        let w = u64::from_le_bytes(data[offset..offset + 8].try_into().expect("8 bytes"));
        w & byte_mask(size)
    } else {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(&data[offset..offset + size]);
        u64::from_le_bytes(b)
    }
}

/// Writes the low `size` bytes (1..=8) of `value` at `offset`, little-endian.
#[inline]
pub fn write_bytes(data: &mut LineData, offset: usize, size: usize, value: u64) {
    debug_assert!((1..=8).contains(&size) && offset + size <= LINE_BYTES);
    if offset + 8 <= LINE_BYTES {
        let window: &mut [u8; 8] = (&mut data[offset..offset + 8]).try_into().expect("8 bytes");
        let m = byte_mask(size);
        *window = ((u64::from_le_bytes(*window) & !m) | (value & m)).to_le_bytes();
    } else {
        data[offset..offset + size].copy_from_slice(&value.to_le_bytes()[..size]);
    }
}

/// A set-associative array with LRU replacement. Each way's tag and its small payload
/// (a cache's state bits, not its data) sit side by side in one dense array, so a lookup
/// and the state it wants share a host cache line, and the last-use stamps in another, so
/// a victim scan reads two host lines per set. A way is occupied when its tag is set; an
/// empty way's payload is `T::default()`. A zero-way array holds nothing (used to model
/// "no L1" in the exhaustive checker).
#[derive(Debug)]
pub struct SetAssoc<T> {
    sets: usize,
    ways: usize,
    set_shift: u32,
    /// Line address ([`NO_TAG`] when empty) and payload, per way.
    entries: Vec<(LineAddr, T)>,
    /// Last-use stamp per way.
    stamps: Vec<u64>,
    clock: u64,
    /// One bit per slot whose line, payload or stamp changed since the last
    /// [`SetAssoc::refresh_signature`] (see `signature.rs`).
    changed: Vec<u64>,
    /// The signature the last refresh left, `2 * ways` words per set; empty before the first.
    signed: Vec<u64>,
}

crate::reuse::clone_by_fields!(SetAssoc<T> {
    sets,
    ways,
    set_shift,
    entries,
    stamps,
    clock,
    changed,
    signed,
});

/// Tag of an empty way.
const NO_TAG: LineAddr = LineAddr::MAX;

/// Where a line sits in a [`SetAssoc`]: flat slot index.
pub type Slot = usize;

impl<T: Default> SetAssoc<T> {
    /// `sets` must be a power of two (checked by config validation).
    pub fn new(sets: usize, ways: usize) -> Self {
        let sets = sets.max(1);
        let mut entries = Vec::with_capacity(sets * ways);
        entries.resize_with(sets * ways, || (NO_TAG, T::default()));
        SetAssoc {
            sets,
            ways,
            set_shift: LINE_BYTES.trailing_zeros(),
            entries,
            stamps: vec![0; sets * ways],
            clock: 0,
            changed: vec![0; (sets * ways).div_ceil(64)],
            signed: Vec::new(),
        }
    }

    pub fn ways(&self) -> usize {
        self.ways
    }

    #[inline]
    fn set_of(&self, addr: LineAddr) -> usize {
        ((addr >> self.set_shift) as usize) & (self.sets - 1)
    }

    #[inline]
    fn set_range(&self, addr: LineAddr) -> std::ops::Range<usize> {
        let base = self.set_of(addr) * self.ways;
        base..base + self.ways
    }

    #[inline]
    fn occupied(&self, slot: Slot) -> bool {
        self.entries[slot].0 != NO_TAG
    }

    /// Notes that `slot` changed, for the next [`SetAssoc::refresh_signature`]: one bit
    /// set, no branch, on every change of a way.
    #[inline(always)]
    fn note_change(&mut self, slot: Slot) {
        self.changed[slot / 64] |= 1 << (slot % 64);
    }

    /// The slot holding `addr`, if any.
    #[inline]
    pub fn find(&self, addr: LineAddr) -> Option<Slot> {
        let r = self.set_range(addr);
        let base = r.start;
        self.entries[r]
            .iter()
            .position(|e| e.0 == addr)
            .map(|i| base + i)
    }

    /// True when `slot` holds `addr` (validates a remembered slot).
    #[inline]
    pub fn holds(&self, slot: Slot, addr: LineAddr) -> bool {
        self.entries.get(slot).is_some_and(|e| e.0 == addr)
    }

    /// The line address in an occupied slot.
    #[inline]
    pub fn tag(&self, slot: Slot) -> LineAddr {
        debug_assert!(self.occupied(slot), "empty slot");
        self.entries[slot].0
    }

    /// The payload in an occupied slot.
    #[inline]
    pub fn get(&self, slot: Slot) -> &T {
        debug_assert!(self.occupied(slot), "empty slot");
        &self.entries[slot].1
    }

    /// The payload in an occupied `slot`, to change it (the line stays where it is).
    #[inline]
    pub fn get_mut(&mut self, slot: Slot) -> &mut T {
        debug_assert!(self.occupied(slot), "empty slot");
        self.note_change(slot);
        &mut self.entries[slot].1
    }

    /// Marks a slot most recently used.
    #[inline]
    pub fn touch(&mut self, slot: Slot) {
        if self.occupied(slot) {
            self.clock += 1;
            self.stamps[slot] = self.clock;
            self.note_change(slot);
        }
    }

    /// A free slot in `addr`'s set, if any.
    #[inline]
    pub fn free_slot(&self, addr: LineAddr) -> Option<Slot> {
        let r = self.set_range(addr);
        let base = r.start;
        self.entries[r]
            .iter()
            .position(|e| e.0 == NO_TAG)
            .map(|i| base + i)
    }

    /// The least recently used slot of `addr`'s set among those `evictable` accepts.
    pub fn victim(&self, addr: LineAddr, evictable: impl Fn(&T) -> bool) -> Option<Slot> {
        self.set_range(addr)
            .filter(|&i| self.occupied(i))
            .min_by_key(|&i| self.stamps[i])
            .filter(|&i| evictable(self.get(i)))
            // The LRU way is busy (rare): the LRU among the evictable ones.
            .or_else(|| {
                self.set_range(addr)
                    .filter(|&i| self.occupied(i) && evictable(self.get(i)))
                    .min_by_key(|&i| self.stamps[i])
            })
    }

    /// Where a line of `addr`'s set can go: the slot [`SetAssoc::free_slot`] gives, else
    /// the one [`SetAssoc::victim`] gives, found in one pass over the set (an L2 hit moving
    /// up into the L1 asks both, every time).
    #[inline]
    pub fn room(&self, addr: LineAddr, evictable: impl Fn(&T) -> bool) -> Room {
        let mut lru: Option<Slot> = None;
        for i in self.set_range(addr) {
            if !self.occupied(i) {
                return Room::Free(i);
            }
            if lru.map_or(true, |l| self.stamps[i] < self.stamps[l]) {
                lru = Some(i);
            }
        }
        match lru {
            Some(l) if evictable(self.get(l)) => Room::Victim(l),
            // The LRU way is busy (rare), or there is no way.
            _ => self
                .victim(addr, evictable)
                .map_or(Room::Busy, Room::Victim),
        }
    }

    /// Places a line in a free slot; the caller made room first.
    #[inline]
    pub fn insert(&mut self, slot: Slot, addr: LineAddr, payload: T) {
        debug_assert!(!self.occupied(slot), "occupied slot");
        debug_assert_eq!(self.set_of(addr), slot / self.ways.max(1));
        self.clock += 1;
        self.entries[slot] = (addr, payload);
        self.stamps[slot] = self.clock;
        self.note_change(slot);
    }

    /// Removes and returns the line in `slot`.
    #[inline]
    pub fn remove(&mut self, slot: Slot) -> T {
        assert!(self.occupied(slot), "empty slot");
        self.note_change(slot);
        std::mem::replace(&mut self.entries[slot], (NO_TAG, T::default())).1
    }

    /// Occupied ways as (slot, line address, payload), in slot order (deterministic).
    pub fn iter(&self) -> impl Iterator<Item = (Slot, LineAddr, &T)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.0 != NO_TAG)
            .map(|(i, e)| (i, e.0, &e.1))
    }

    /// True if the slot belongs to `addr`'s set (used when swapping between levels).
    pub fn same_set(&self, slot: Slot, addr: LineAddr) -> bool {
        self.ways > 0 && slot / self.ways == self.set_of(addr)
    }
}

/// Where a new line can go in its set ([`SetAssoc::room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// A free slot.
    Free(Slot),
    /// No free slot: the least recently used evictable line's.
    Victim(Slot),
    /// No free slot and no line evictable.
    Busy,
}

/// Main memory of one directory bank: sparse, zero-filled, holding real bytes.
#[derive(Debug)]
pub struct BackingStore {
    lines: PagedMap<LineData>,
}

crate::reuse::clone_by_fields!(BackingStore { lines });

impl Default for BackingStore {
    fn default() -> Self {
        Self::new()
    }
}

impl BackingStore {
    /// Memory for every line (one bank of one).
    pub fn new() -> Self {
        Self::for_bank(0, 1)
    }

    /// Memory for the lines of `bank` out of `banks` (a power of two), interleaved by line.
    pub fn for_bank(bank: usize, banks: usize) -> Self {
        Self::for_bank_paged(bank, banks, None)
    }

    /// As [`BackingStore::for_bank`], with pages of `2^page_shift` lines (`None`: one
    /// frame's; see [`PagedMap::with_page_shift`]).
    pub fn for_bank_paged(bank: usize, banks: usize, page_shift: Option<u32>) -> Self {
        let (shift, low) = bank_stride(bank, banks);
        BackingStore {
            lines: PagedMap::with_page_shift(shift, low, [0; LINE_BYTES], page_shift),
        }
    }

    #[inline]
    pub fn read(&self, addr: LineAddr) -> LineData {
        self.lines.get(addr).copied().unwrap_or([0; LINE_BYTES])
    }

    #[inline]
    pub fn write(&mut self, addr: LineAddr, data: &LineData) {
        self.lines.insert(addr, *data);
    }

    /// Lines ever written, sorted by address (for deterministic encodings and dumps).
    pub fn sorted_lines(&self) -> Vec<(LineAddr, LineData)> {
        self.lines.sorted()
    }

    /// Lines ever written, by address, without copying them.
    pub fn lines(&self) -> impl Iterator<Item = (LineAddr, &LineData)> + '_ {
        self.lines.iter()
    }

    /// How many lines were ever written.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// The key stride and low bits of the lines of `bank` out of `banks` (a power of two)
/// when lines are interleaved across banks.
pub fn bank_stride(bank: usize, banks: usize) -> (u32, u64) {
    let bank_bits = banks.max(1).trailing_zeros();
    let line_bits = LINE_BYTES.trailing_zeros();
    (line_bits + bank_bits, (bank as u64) << line_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_match_a_byte_by_byte_reference() {
        let mut d = [0u8; LINE_BYTES];
        let mut r = [0u8; LINE_BYTES];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let size = 1 + (x % 8) as usize;
            let offset = (x >> 8) as usize % (LINE_BYTES - size + 1);
            let value = x.rotate_left(17);
            write_bytes(&mut d, offset, size, value);
            for i in 0..size {
                r[offset + i] = (value >> (8 * i)) as u8;
            }
            assert_eq!(d, r);
            let want = (0..size).fold(0u64, |v, i| v | (r[offset + i] as u64) << (8 * i));
            assert_eq!(read_bytes(&d, offset, size), want);
        }
    }

    #[test]
    fn bytes_round_trip_little_endian() {
        let mut d = [0u8; LINE_BYTES];
        write_bytes(&mut d, 3, 4, 0xA1B2C3D4);
        assert_eq!(d[3], 0xD4);
        assert_eq!(read_bytes(&d, 3, 4), 0xA1B2C3D4);
    }

    #[test]
    fn lru_victim_is_least_recently_used() {
        let mut a: SetAssoc<u8> = SetAssoc::new(1, 2);
        let s0 = a.free_slot(0).unwrap();
        a.insert(s0, 0, 0);
        let s1 = a.free_slot(64).unwrap();
        a.insert(s1, 64, 1);
        a.touch(s0);
        assert_eq!(a.victim(128, |_| true), Some(s1));
        assert_eq!(a.victim(128, |&w| w == 0), Some(s0));
        assert_eq!((a.tag(s0), a.tag(s1)), (0, 64));
        a.remove(s1);
        assert_eq!(a.victim(128, |_| true), Some(s0));
    }

    /// Random operation `op` on `line`'s way: 0 inserts it (payload `v`) where its set has
    /// room, 1 touches, 2 removes and 3 changes its payload to `v`, each only where it
    /// applies; any other `op` does nothing.
    pub(super) fn apply(a: &mut SetAssoc<u8>, op: u8, line: u64, v: u8) {
        let addr = line * LINE_BYTES as u64;
        match (op, a.find(addr)) {
            (0, None) => {
                if let Some(s) = a.free_slot(addr) {
                    a.insert(s, addr, v);
                }
            }
            (1, Some(s)) => a.touch(s),
            (2, Some(s)) => {
                a.remove(s);
            }
            (3, Some(s)) => *a.get_mut(s) = v,
            _ => {}
        }
    }

    /// Up to `most` random operations for [`apply`], each `(op, line, payload)` with `op`
    /// below `kinds`, over 64 lines.
    pub(super) fn random_ops(
        kinds: u8,
        most: usize,
    ) -> impl proptest::strategy::Strategy<Value = Vec<(u8, u64, u8)>> {
        proptest::collection::vec((0..kinds, 0u64..64, 0u8..8), 0..most)
    }

    proptest::proptest! {
        /// After any inserts, touches, removals and payload changes, at 1 to 12 ways,
        /// `room` gives the free slot `free_slot` gives, else the victim `victim` gives,
        /// whichever lines are evictable.
        #[test]
        fn room_is_the_free_slot_else_the_victim(
            ways in 1usize..12,
            ops in random_ops(4, 200),
            busy in 0u8..8,
        ) {
            let mut a: SetAssoc<u8> = SetAssoc::new(4, ways);
            for (op, line, v) in ops {
                apply(&mut a, op, line, v);
                let addr = line * LINE_BYTES as u64;
                let evictable = |&p: &u8| p != busy;
                let want = match (a.free_slot(addr), a.victim(addr, evictable)) {
                    (Some(s), _) => Room::Free(s),
                    (None, Some(v)) => Room::Victim(v),
                    (None, None) => Room::Busy,
                };
                proptest::prop_assert_eq!(a.room(addr, evictable), want);
            }
        }
    }

    #[test]
    fn zero_way_array_holds_nothing() {
        let a: SetAssoc<u8> = SetAssoc::new(1, 0);
        assert_eq!(a.free_slot(0), None);
        assert_eq!(a.find(0), None);
        assert_eq!(a.room(0, |_| true), Room::Busy);
    }

    #[test]
    fn memory_is_zero_filled() {
        let mut m = BackingStore::new();
        assert_eq!(m.read(64), [0; LINE_BYTES]);
        let d = [7; LINE_BYTES];
        m.write(64, &d);
        assert_eq!(m.read(64), d);
    }
}
