//! A sparse map over line addresses stored in pages of 64 consecutive keys.
//!
//! The directory and memory of one bank are touched line after line by streaming code, and
//! a hash map probe per line costs a host cache miss once the map outgrows the host's cache.
//! Here one probe finds a page of 64 lines and the last page is remembered, so a sweep
//! probes once per 64 of the bank's lines.

use std::cell::Cell;

use rustc_hash::FxHashMap;

use super::LineAddr;

const PAGE: usize = 64;

#[derive(Clone, Debug)]
struct Page<V> {
    /// Bit `i` set when slot `i` holds a value.
    present: u64,
    vals: [V; PAGE],
}

/// A key's page and slot in a [`PagedMap`] (valid until the map is dropped: pages are
/// never freed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    page: u32,
    slot: u8,
}

/// Keys are line addresses that share their low `stride_shift` bits (`low`): one bank's
/// lines, whose index `key >> stride_shift` is dense.
#[derive(Clone, Debug)]
pub struct PagedMap<V> {
    stride_shift: u32,
    low: u64,
    index: FxHashMap<u64, u32>,
    pages: Vec<Page<V>>,
    len: usize,
    /// Value of absent slots in a new page.
    fill: V,
    /// `(page number, page index)` of the last page found.
    last: Cell<(u64, u32)>,
}

impl<V: Clone> PagedMap<V> {
    /// A map for keys `k` with `k & ((1 << stride_shift) - 1) == low`; `fill` is any value
    /// (it is never read back).
    pub fn new(stride_shift: u32, low: u64, fill: V) -> Self {
        debug_assert!(stride_shift < 64 && low >> stride_shift == 0);
        PagedMap {
            stride_shift,
            low,
            index: FxHashMap::default(),
            pages: Vec::new(),
            len: 0,
            fill,
            last: Cell::new((u64::MAX, 0)),
        }
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
        (i / PAGE as u64, (i % PAGE as u64) as usize)
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

    #[inline]
    pub fn get(&self, key: LineAddr) -> Option<&V> {
        let (no, slot) = self.split(key);
        let p = &self.pages[self.page_of(no)? as usize];
        (p.present >> slot & 1 == 1).then(|| &p.vals[slot])
    }

    #[inline]
    pub fn get_mut(&mut self, key: LineAddr) -> Option<&mut V> {
        let (no, slot) = self.split(key);
        let ix = self.page_of(no)?;
        let p = &mut self.pages[ix as usize];
        (p.present >> slot & 1 == 1).then(|| &mut p.vals[slot])
    }

    /// Sets the value of `key`, returning a reference to it.
    #[inline]
    pub fn insert(&mut self, key: LineAddr, v: V) -> &mut V {
        let at = self.place(key);
        self.set_at(at, v);
        &mut self.pages[at.page as usize].vals[at.slot as usize]
    }

    /// Where `key`'s value lives, allocating its page if needed: a read-modify-write
    /// through [`get_at`](Self::get_at) and [`set_at`](Self::set_at) looks the key up once.
    #[inline]
    pub fn place(&mut self, key: LineAddr) -> Place {
        let (no, slot) = self.split(key);
        let page = match self.page_of(no) {
            Some(ix) => ix,
            None => {
                let ix = self.pages.len() as u32;
                self.pages.push(Page {
                    present: 0,
                    vals: std::array::from_fn(|_| self.fill.clone()),
                });
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
        let p = &self.pages[at.page as usize];
        (p.present >> at.slot & 1 == 1).then(|| &p.vals[at.slot as usize])
    }

    #[inline]
    pub fn set_at(&mut self, at: Place, v: V) {
        let p = &mut self.pages[at.page as usize];
        if p.present >> at.slot & 1 == 0 {
            p.present |= 1 << at.slot;
            self.len += 1;
        }
        p.vals[at.slot as usize] = v;
    }

    #[inline]
    pub fn remove_at(&mut self, at: Place) {
        let p = &mut self.pages[at.page as usize];
        if p.present >> at.slot & 1 == 1 {
            p.present &= !(1 << at.slot);
            self.len -= 1;
        }
    }

    /// Removes `key`; its page stays allocated for the next use.
    #[inline]
    pub fn remove(&mut self, key: LineAddr) {
        let (no, slot) = self.split(key);
        if let Some(ix) = self.page_of(no) {
            let p = &mut self.pages[ix as usize];
            if p.present >> slot & 1 == 1 {
                p.present &= !(1 << slot);
                self.len -= 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every (key, value), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (LineAddr, &V)> + '_ {
        let mut nos: Vec<(u64, u32)> = self.index.iter().map(|(&n, &i)| (n, i)).collect();
        nos.sort_unstable();
        nos.into_iter().flat_map(move |(no, ix)| {
            let p = &self.pages[ix as usize];
            (0..PAGE)
                .filter(move |&s| p.present >> s & 1 == 1)
                .map(move |s| {
                    let i = no * PAGE as u64 + s as u64;
                    ((i << self.stride_shift) | self.low, &p.vals[s])
                })
        })
    }

    /// Every value, mutably, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> + '_ {
        self.pages.iter_mut().flat_map(|p| {
            let present = p.present;
            p.vals
                .iter_mut()
                .enumerate()
                .filter(move |(s, _)| present >> s & 1 == 1)
                .map(|(_, v)| v)
        })
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

    /// Against a BTreeMap over keys of one bank of four (stride 256 bytes, low 0x80).
    #[test]
    fn matches_a_reference_map() {
        let mut m: PagedMap<u32> = PagedMap::new(8, 0x80, 0);
        let mut r: BTreeMap<u64, u32> = BTreeMap::new();
        let mut x: u64 = 7;
        for step in 0..50_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = ((x % 5000) << 8) | 0x80;
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
}
