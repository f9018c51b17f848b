//! A sparse map over line addresses stored in pages of consecutive keys.
//!
//! The directory and memory of one bank are touched line after line by streaming code, and
//! a hash map probe per line costs a host cache miss once the map outgrows the host's cache.
//! Here one probe finds a page of lines and the last page is remembered, so a sweep probes
//! once per page.
//!
//! A page holds the bank's lines of one 4 KiB frame (16 at four banks, 64 at one). The OS
//! hands out frames in a random order, so neighbouring frames rarely hold neighbouring
//! data; a page wider than a frame would be mostly empty (a 64-line page at four banks
//! was three-quarters empty, and 256 ranks' buffers took four times their size on the
//! host).

use std::cell::Cell;

use rustc_hash::FxHashMap;

use super::{LineAddr, PAGE_SHIFT};

/// Most keys per page (the presence mask's bits).
const MAX_PAGE_SHIFT: u32 = 6;

/// A key's page and slot in a [`PagedMap`] (valid until the map is dropped: pages are
/// never freed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    page: u32,
    slot: u8,
}

/// Keys are line addresses that share their low `stride_shift` bits (`low`): one bank's
/// lines, whose index `key >> stride_shift` is dense. Page `p` holds the values of indices
/// `p << page_shift ..` in `vals[p << page_shift ..]`, with bit `i` of `present[p]` set when
/// slot `i` holds a value.
#[derive(Debug)]
pub struct PagedMap<V> {
    stride_shift: u32,
    low: u64,
    /// log2 of the keys per page.
    page_shift: u32,
    index: FxHashMap<u64, u32>,
    present: Vec<u64>,
    vals: Vec<V>,
    len: usize,
    /// Value of absent slots in a new page.
    fill: V,
    /// `(page number, page index)` of the last page found.
    last: Cell<(u64, u32)>,
}

crate::reuse::clone_by_fields!(PagedMap<V> {
    stride_shift,
    low,
    page_shift,
    index,
    present,
    vals,
    len,
    fill,
    last,
});

impl<V: Clone> PagedMap<V> {
    /// A map for keys `k` with `k & ((1 << stride_shift) - 1) == low`; `fill` is any value
    /// (it is never read back).
    pub fn new(stride_shift: u32, low: u64, fill: V) -> Self {
        Self::with_page_shift(stride_shift, low, fill, None)
    }

    /// A map as [`PagedMap::new`] makes, whose pages hold `2^page_shift` keys (at most 64;
    /// `None`: one frame's): fewer for a map that holds a few keys and is cloned often.
    pub fn with_page_shift(stride_shift: u32, low: u64, fill: V, page_shift: Option<u32>) -> Self {
        debug_assert!(stride_shift < 64 && low >> stride_shift == 0);
        let page_shift = page_shift.unwrap_or(PAGE_SHIFT.saturating_sub(stride_shift));
        PagedMap {
            stride_shift,
            low,
            page_shift: page_shift.min(MAX_PAGE_SHIFT),
            index: FxHashMap::default(),
            present: Vec::new(),
            vals: Vec::new(),
            len: 0,
            fill,
            last: Cell::new((u64::MAX, 0)),
        }
    }

    /// Keys per page.
    #[inline]
    fn page_len(&self) -> usize {
        1 << self.page_shift
    }

    /// Page number and slot of a key.
    #[inline]
    fn split(&self, key: LineAddr) -> (u64, usize) {
        debug_assert_eq!(
            key & ((1u64 << self.stride_shift) - 1),
            self.low,
            "key {key:#x} outside this map's stride"
        );
        let i = key >> self.stride_shift;
        (
            i >> self.page_shift,
            (i & ((1 << self.page_shift) - 1)) as usize,
        )
    }

    #[inline]
    fn page_of(&self, page_no: u64) -> Option<u32> {
        let (last_no, last_ix) = self.last.get();
        if last_no == page_no {
            return Some(last_ix);
        }
        let ix = *self.index.get(&page_no)?;
        self.last.set((page_no, ix));
        Some(ix)
    }

    /// Index into `vals` of a slot of a page.
    #[inline]
    fn at(&self, page: u32, slot: usize) -> usize {
        ((page as usize) << self.page_shift) | slot
    }

    #[inline]
    fn has(&self, page: u32, slot: usize) -> bool {
        self.present[page as usize] >> slot & 1 == 1
    }

    #[inline]
    pub fn get(&self, key: LineAddr) -> Option<&V> {
        let (no, slot) = self.split(key);
        let page = self.page_of(no)?;
        self.has(page, slot)
            .then(|| &self.vals[self.at(page, slot)])
    }

    #[inline]
    pub fn get_mut(&mut self, key: LineAddr) -> Option<&mut V> {
        let (no, slot) = self.split(key);
        let page = self.page_of(no)?;
        let i = self.at(page, slot);
        self.has(page, slot).then(|| &mut self.vals[i])
    }

    /// Sets the value of `key`, returning a reference to it.
    #[inline]
    pub fn insert(&mut self, key: LineAddr, v: V) -> &mut V {
        let at = self.place(key);
        self.set_at(at, v);
        let i = self.at(at.page, at.slot as usize);
        &mut self.vals[i]
    }

    /// Where `key`'s value lives, allocating its page if needed: a read-modify-write
    /// through [`get_at`](Self::get_at) and [`set_at`](Self::set_at) looks the key up once.
    #[inline]
    pub fn place(&mut self, key: LineAddr) -> Place {
        let (no, slot) = self.split(key);
        let page = match self.page_of(no) {
            Some(ix) => ix,
            None => {
                let ix = self.present.len() as u32;
                self.present.push(0);
                let n = self.vals.len() + self.page_len();
                self.vals.resize(n, self.fill.clone());
                self.index.insert(no, ix);
                self.last.set((no, ix));
                ix
            }
        };
        Place {
            page,
            slot: slot as u8,
        }
    }

    #[inline]
    pub fn get_at(&self, at: Place) -> Option<&V> {
        let slot = at.slot as usize;
        self.has(at.page, slot)
            .then(|| &self.vals[self.at(at.page, slot)])
    }

    #[inline]
    pub fn set_at(&mut self, at: Place, v: V) {
        let p = &mut self.present[at.page as usize];
        if *p >> at.slot & 1 == 0 {
            *p |= 1 << at.slot;
            self.len += 1;
        }
        let i = self.at(at.page, at.slot as usize);
        self.vals[i] = v;
    }

    #[inline]
    pub fn remove_at(&mut self, at: Place) {
        let p = &mut self.present[at.page as usize];
        if *p >> at.slot & 1 == 1 {
            *p &= !(1 << at.slot);
            self.len -= 1;
        }
    }

    /// Removes `key`; its page stays allocated for the next use.
    #[inline]
    pub fn remove(&mut self, key: LineAddr) {
        let (no, slot) = self.split(key);
        if let Some(page) = self.page_of(no) {
            self.remove_at(Place {
                page,
                slot: slot as u8,
            });
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every (key, value), in key order.
    pub fn iter(&self) -> impl Iterator<Item = (LineAddr, &V)> + '_ {
        let mut nos: Vec<(u64, u32)> = self.index.iter().map(|(&n, &i)| (n, i)).collect();
        nos.sort_unstable();
        nos.into_iter().flat_map(move |(no, page)| {
            (0..self.page_len())
                .filter(move |&s| self.has(page, s))
                .map(move |s| {
                    let i = no << self.page_shift | s as u64;
                    (
                        (i << self.stride_shift) | self.low,
                        &self.vals[self.at(page, s)],
                    )
                })
        })
    }

    /// Every value, mutably, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        let shift = self.page_shift;
        let present = &self.present;
        self.vals
            .iter_mut()
            .enumerate()
            .filter(move |(i, _)| present[i >> shift] >> (i & ((1 << shift) - 1)) & 1 == 1)
            .map(|(_, v)| v)
    }

    /// Every (key, value) sorted by key.
    pub fn sorted(&self) -> Vec<(LineAddr, V)> {
        // Pages are visited in page-number order, so keys come out ascending.
        self.iter().map(|(k, v)| (k, v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Against a BTreeMap over keys of one bank of one, four (stride 256 bytes, low 0x80),
    /// 64 and 128: pages of 64, 16, 1 and 1 keys.
    #[test]
    fn matches_a_reference_map() {
        for (shift, low) in [(6, 0), (8, 0x80), (12, 0x40), (13, 0x1fc0)] {
            against_a_reference_map(shift, low);
        }
    }

    /// Pages of two keys (the exhaustive checker's), and of one, against the same map.
    #[test]
    fn chosen_page_sizes_match_a_reference_map() {
        for page_shift in [0, 1] {
            against_a_reference(PagedMap::with_page_shift(6, 0, 0, Some(page_shift)), 6, 0);
        }
    }

    fn against_a_reference_map(shift: u32, low: u64) {
        against_a_reference(PagedMap::new(shift, low, 0), shift, low);
    }

    fn against_a_reference(mut m: PagedMap<u32>, shift: u32, low: u64) {
        let mut r: BTreeMap<u64, u32> = BTreeMap::new();
        let mut x: u64 = 7;
        for step in 0..50_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = ((x % 5000) << shift) | low;
            match x % 4 {
                0 => {
                    m.remove(key);
                    r.remove(&key);
                }
                1 => {
                    assert_eq!(m.get(key), r.get(&key));
                }
                2 => {
                    if let Some(v) = m.get_mut(key) {
                        *v += 1;
                    }
                    if let Some(v) = r.get_mut(&key) {
                        *v += 1;
                    }
                }
                _ => {
                    m.insert(key, step);
                    r.insert(key, step);
                }
            }
            assert_eq!(m.len(), r.len());
        }
        let want: Vec<(u64, u32)> = r.into_iter().collect();
        assert_eq!(m.sorted(), want);
        assert_eq!(m.values_mut().count(), want.len());
    }

    /// At four banks a page holds one frame's 16 lines of the bank: a frame's worth of
    /// writes takes one page, not a quarter of a 64-line one.
    #[test]
    fn a_page_is_one_frames_lines_of_the_bank() {
        let mut m: PagedMap<u8> = PagedMap::new(8, 0, 0);
        for line in (0x5000..0x6000).step_by(256) {
            m.insert(line, 1);
        }
        assert_eq!(m.len(), 16);
        assert_eq!((m.present.len(), m.vals.len()), (1, 16));
    }
}
