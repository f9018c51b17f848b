//! A set-associative array's signature: its lines and their payloads' keys in LRU order,
//! set by set. Two arrays with equal signatures hit, miss and pick victims alike from then
//! on, whatever their stamps' values, so the fast-forward of polling (`sim::fastforward`)
//! compares signatures to tell that a pass left the caches as it found them.
//!
//! A signature is taken whole ([`SetAssoc::lru_signature`]), or kept in the array and
//! refreshed ([`SetAssoc::refresh_signature`]): then only the sets with a slot changed
//! since the last refresh are signed again, where signing every set of a 256 kB L2 cost as
//! much as a pass of a hundred ranks.

use super::{SetAssoc, Slot, NO_TAG};

/// Bits of a packed (stamp, way) word below the stamp.
const WAY_BITS: u32 = 6;

impl<T: Default> SetAssoc<T> {
    /// Appends each set's occupied ways, least recently used first, as their tag and
    /// `key(payload)`, each set closed by an empty tag. Two arrays with equal signatures
    /// hit, miss and pick victims alike from then on, whatever their stamps' values: only
    /// the stamps' order within a set decides.
    pub fn lru_signature(&self, key: impl Fn(&T) -> u64, out: &mut Vec<u64>) {
        // Each occupied way as its stamp and way number in one word (stamps are distinct:
        // every insert and touch takes the next clock value), sorted as plain integers on
        // the stack; with no way, past 64 ways or past 2^57 stamps, by the
        // stamps themselves.
        if self.ways == 0 || self.ways > 1 << WAY_BITS || self.clock >= 1 << (64 - WAY_BITS - 1) {
            return self.lru_signature_by_stamps(key, out);
        }
        out.reserve(self.entries.len() * 2 + self.sets);
        let mut order = [0u64; 1 << WAY_BITS];
        for (set, ways) in self.entries.chunks_exact(self.ways).enumerate() {
            let base = set * self.ways;
            let mut n = 0;
            for (w, e) in ways.iter().enumerate() {
                if e.0 != NO_TAG {
                    order[n] = (self.stamps[base + w] << WAY_BITS) | w as u64;
                    n += 1;
                }
            }
            // Each way's place is the number of smaller keys (the keys are distinct, each
            // with its way number): a few comparisons without branches where a sort's
            // mispredicted most of a signature's time.
            let keys = &order[..n];
            let seg = out.len();
            out.resize(seg + 2 * n, 0);
            for &k in keys {
                let rank = keys.iter().filter(|&&other| other < k).count();
                let e = &ways[(k & ((1 << WAY_BITS) - 1)) as usize];
                out[seg + 2 * rank] = e.0;
                out[seg + 2 * rank + 1] = key(&e.1);
            }
            out.push(NO_TAG);
        }
    }

    /// [`SetAssoc::lru_signature`] for any number of ways and any stamp.
    fn lru_signature_by_stamps(&self, key: impl Fn(&T) -> u64, out: &mut Vec<u64>) {
        let mut ways: Vec<Slot> = Vec::with_capacity(self.ways);
        for set in 0..self.sets {
            self.lru_slots(set, &mut ways);
            for &i in &ways {
                out.extend([self.entries[i].0, key(&self.entries[i].1)]);
            }
            out.push(NO_TAG);
        }
    }

    /// Set `set`'s occupied slots, least recently used first, into `ways` (stamps are
    /// distinct: every insert and touch takes the next clock value).
    fn lru_slots(&self, set: usize, ways: &mut Vec<Slot>) {
        let base = set * self.ways;
        ways.clear();
        ways.extend((base..base + self.ways).filter(|&i| self.occupied(i)));
        ways.sort_unstable_by_key(|&i| self.stamps[i]);
    }

    /// Signs the sets with a slot changed since the last call into the signature kept in
    /// the array (each set's occupied ways least recently used first as tag and
    /// `key(payload)`, then empty tags up to `2 * ways` words, so a set's words stay in
    /// place), and says whether any set signs otherwise than at the last call. The first
    /// call signs every set and says true (an array of no ways says false: it never
    /// changes). Equal kept signatures at two calls are equal
    /// [`SetAssoc::lru_signature`]s: the padding stands where the closing empty tag stood.
    pub fn refresh_signature(&mut self, key: impl Fn(&T) -> u64) -> bool {
        if self.ways == 0 {
            // Nothing is ever held: the signature never changes.
            return false;
        }
        let stride = 2 * self.ways;
        let mut ways = Vec::with_capacity(self.ways);
        if self.signed.len() != self.sets * stride {
            self.signed = vec![NO_TAG; self.sets * stride];
            self.changed.fill(0);
            for set in 0..self.sets {
                self.sign_set(set, &key, &mut ways);
            }
            return true;
        }
        let mut differs = false;
        let mut last = usize::MAX;
        for w in 0..self.changed.len() {
            let mut bits = std::mem::take(&mut self.changed[w]);
            while bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                // A set's slots are consecutive: its changed slots come one after another.
                let set = slot / self.ways;
                if set != last {
                    last = set;
                    differs |= self.sign_set(set, &key, &mut ways);
                }
            }
        }
        differs
    }

    /// Writes set `set`'s words of the kept signature (`ways`: scratch); true if they
    /// changed.
    fn sign_set(&mut self, set: usize, key: &impl Fn(&T) -> u64, ways: &mut Vec<Slot>) -> bool {
        self.lru_slots(set, ways);
        let seg = 2 * set * self.ways;
        let mut changed = false;
        for k in 0..self.ways {
            let (tag, value) = match ways.get(k) {
                Some(&i) => (self.entries[i].0, key(&self.entries[i].1)),
                None => (NO_TAG, NO_TAG),
            };
            let at = seg + 2 * k;
            changed |= self.signed[at] != tag || self.signed[at + 1] != value;
            self.signed[at] = tag;
            self.signed[at + 1] = value;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{apply, random_ops};
    use super::*;

    /// The whole signature, payloads as their own keys.
    fn whole(a: &SetAssoc<u8>) -> Vec<u64> {
        let mut out = Vec::new();
        a.lru_signature(|&v| u64::from(v), &mut out);
        out
    }

    /// Two arrays holding the same lines in the same LRU order sign alike, whatever their
    /// stamps and slots; a touch that reorders a set, or another line, changes the
    /// signature.
    #[test]
    fn lru_signatures_compare_contents_and_order_not_stamps() {
        let sign = whole;
        // Lines 0x000 and 0x100 share set 0 of 4 sets.
        let mut a = SetAssoc::new(4, 2);
        a.insert(0, 0x000, 1);
        a.insert(1, 0x100, 2);
        let mut b = SetAssoc::new(4, 2);
        b.insert(1, 0x000, 1);
        b.touch(1);
        b.insert(0, 0x100, 2);
        assert_eq!(sign(&a), sign(&b));
        // Renewing both in the same order keeps it.
        a.touch(0);
        a.touch(1);
        assert_eq!(sign(&a), sign(&b));
        // Reordering does not.
        a.touch(0);
        assert_ne!(sign(&a), sign(&b));
        b.touch(1);
        assert_eq!(sign(&a), sign(&b));
        // Nor does another payload or another line.
        *b.get_mut(1) = 3;
        assert_ne!(sign(&a), sign(&b));
        *b.get_mut(1) = 1;
        b.remove(0);
        b.insert(0, 0x200, 2);
        assert_ne!(sign(&a), sign(&b));
    }

    proptest::proptest! {
        /// The signature sorted on the stack lists what sorting by the stamps lists, after
        /// any inserts, touches, removals and payload changes, at 1 to 12 ways.
        #[test]
        fn both_signature_orders_agree(
            ways in 1usize..12,
            ops in random_ops(4, 200),
        ) {
            let mut a: SetAssoc<u8> = SetAssoc::new(4, ways);
            for (op, line, v) in ops {
                apply(&mut a, op, line, v);
            }
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            a.lru_signature(|&v| u64::from(v), &mut fast);
            a.lru_signature_by_stamps(|&v| u64::from(v), &mut slow);
            proptest::prop_assert_eq!(fast, slow);
        }

        /// After any inserts, touches, removals and payload changes, a refresh of the kept
        /// signature says it changed exactly when the whole signature differs from the one
        /// at the last refresh, at 1 to 12 ways.
        #[test]
        fn a_refresh_tells_what_a_whole_signature_tells(
            ways in 1usize..12,
            ops in random_ops(5, 300),
        ) {
            let mut a: SetAssoc<u8> = SetAssoc::new(4, ways);
            proptest::prop_assert!(a.refresh_signature(|&v| u64::from(v)));
            let mut last = whole(&a);
            for (op, line, v) in ops {
                if op == 4 {
                    let now = whole(&a);
                    let differs = a.refresh_signature(|&v| u64::from(v));
                    proptest::prop_assert_eq!(differs, now != last);
                    last = now;
                } else {
                    apply(&mut a, op, line, v);
                }
            }
        }
    }
}
