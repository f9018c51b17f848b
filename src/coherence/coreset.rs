//! A set of cores (a directory entry's sharers, the MOPEDs an episode has drained): one bit per core, for up to [`MAX_CORES`] cores.
//!
//! The first 64 cores' bits sit inline; the others in a boxed block allocated only when a
//! core numbered 64 or above joins, so a directory entry of a 16- or 64-core system stays
//! two words and copies without allocating. The set is canonical: the block is dropped when
//! it empties, so equal sets compare and hash equal.

use super::msg::NodeId;

/// Largest supported core count: the directory keeps each line's sharers, and MOPED the
/// MOPEDs a backoff episode has drained, in a set of this many bits.
pub const MAX_CORES: usize = 1024;

/// Words beyond the inline one.
const HI_WORDS: usize = MAX_CORES / 64 - 1;

/// A set of cores (node ids below [`MAX_CORES`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CoreSet {
    lo: u64,
    hi: Option<Box<[u64; HI_WORDS]>>,
}

impl CoreSet {
    /// No core.
    pub const EMPTY: CoreSet = CoreSet { lo: 0, hi: None };

    /// The cores whose bits are set in `mask` (cores 0 to 63).
    pub fn from_mask(mask: u64) -> CoreSet {
        CoreSet { lo: mask, hi: None }
    }

    /// The set of cores 0 to 63 as a mask, or `None` when a higher core is in it.
    pub fn as_mask(&self) -> Option<u64> {
        self.hi.is_none().then_some(self.lo)
    }

    pub fn is_empty(&self) -> bool {
        self.lo == 0 && self.hi.is_none()
    }

    pub fn contains(&self, n: NodeId) -> bool {
        let n = n as usize;
        match n {
            0..=63 => self.lo & (1 << n) != 0,
            _ => self
                .hi
                .as_ref()
                .is_some_and(|h| h.get(n / 64 - 1).is_some_and(|w| w & (1 << (n % 64)) != 0)),
        }
    }

    /// Adds core `n`; a node id of [`MAX_CORES`] or more is not a core and is a bug.
    pub fn insert(&mut self, n: NodeId) {
        let n = n as usize;
        assert!(
            n < MAX_CORES,
            "sharer {n} is not a core (at most {MAX_CORES})"
        );
        match n {
            0..=63 => self.lo |= 1 << n,
            _ => {
                self.hi.get_or_insert_with(|| Box::new([0; HI_WORDS]))[n / 64 - 1] |= 1 << (n % 64)
            }
        }
    }

    /// Removes core `n` (a node that is not in the set, a directory's or `NOBODY`, changes
    /// nothing).
    pub fn remove(&mut self, n: NodeId) {
        let n = n as usize;
        match n {
            0..=63 => self.lo &= !(1 << n),
            _ => {
                if let Some(h) = self.hi.as_mut() {
                    if let Some(w) = h.get_mut(n / 64 - 1) {
                        *w &= !(1 << (n % 64));
                    }
                    if h.iter().all(|&w| w == 0) {
                        self.hi = None;
                    }
                }
            }
        }
    }

    /// The set without core `n`.
    pub fn without(&self, n: NodeId) -> CoreSet {
        let mut s = self.clone();
        s.remove(n);
        s
    }

    /// Cores in the set.
    pub fn count(&self) -> u32 {
        self.lo.count_ones()
            + self
                .hi
                .as_ref()
                .map_or(0, |h| h.iter().map(|w| w.count_ones()).sum())
    }

    /// The cores in the set, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = NodeId> + '_ {
        let words = std::iter::once(self.lo).chain(self.hi.iter().flat_map(|h| h.iter().copied()));
        words.enumerate().flat_map(|(i, mut w)| {
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    (i * 64 + b) as NodeId
                })
            })
        })
    }

    /// The set with every core renamed by `rename` (the checker's symmetry reduction).
    pub fn renamed(&self, rename: &dyn Fn(NodeId) -> NodeId) -> CoreSet {
        let mut s = CoreSet::EMPTY;
        for c in self.iter() {
            s.insert(rename(c));
        }
        s
    }
}

/// `{0,5,63}`: the cores, lowest first.
impl std::fmt::Display for CoreSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cores: Vec<String> = self.iter().map(|c| c.to_string()).collect();
        write!(f, "{{{}}}", cores.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_and_high_cores_are_kept_and_the_set_stays_canonical() {
        let mut s = CoreSet::EMPTY;
        for n in [0, 5, 63, 64, 700, 1023] {
            s.insert(n);
        }
        assert_eq!(s.count(), 6);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 5, 63, 64, 700, 1023]);
        assert!(s.contains(700) && !s.contains(701) && !s.contains(NodeId::MAX));
        assert_eq!(s.as_mask(), None);
        assert_eq!(
            s.without(700).without(64).without(1023),
            CoreSet::from_mask(1 | 1 << 5 | 1 << 63)
        );
        let mut t = s.clone();
        for n in [64, 700, 1023] {
            t.remove(n);
        }
        assert_eq!(t, CoreSet::from_mask(1 | 1 << 5 | 1 << 63));
        assert_eq!(t.as_mask(), Some(1 | 1 << 5 | 1 << 63));
        t.remove(NodeId::MAX);
        assert_eq!(t.count(), 3);
        let r = s.renamed(&|c| 1023 - c);
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            vec![0, 323, 959, 960, 1018, 1023]
        );
        assert_eq!(t.to_string(), "{0,5,63}");
    }

    #[test]
    #[should_panic(expected = "is not a core")]
    fn a_node_beyond_the_cores_is_refused() {
        let mut s = CoreSet::EMPTY;
        s.insert(MAX_CORES as NodeId);
    }
}
