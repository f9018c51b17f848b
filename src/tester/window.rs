//! What a MOPED line read may legally return while cores store to the line: the tester's
//! acceptance rule for `M_GETS` data.
//!
//! The L2 serialises a MOPED read with the stores to its line, so the line it returns is
//! the line as it stood at one instant between the read's issue and its answer. The tester
//! knows, for each byte, the value every completed store left (its reference) and the
//! stores that have not completed yet; a store is visible to others from some instant
//! between its issue and its completion. So a byte may read as its reference value at the
//! read's issue, or as the value of any store to it that was in flight at the issue or
//! issued before the answer, and as nothing else. A check the read claims has no store in
//! flight (the tester serialises each check's accesses), so for it the rule is exact: the
//! latest value. Bytes no check covers are never stored to and must read as zero.
//!
//! The rule is per byte: it does not ask that a check with a store in flight read as one
//! whole value (its bytes are stored one at a time anyway); the claimed check, read
//! exactly, covers whole values.

use crate::mem::{LineAddr, LineData, LINE_BYTES};

/// The values each byte of one line may read as, over one MOPED read's window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadWindow {
    pub line: LineAddr,
    /// The tester's reference bytes of the line when the read was issued.
    start: LineData,
    /// (offset, value) of every store to the line in flight at the issue or issued since.
    stores: Vec<(u8, u8)>,
}

/// A byte a read returned that the line never held during the read's window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub offset: usize,
    pub got: u8,
    /// Every value the byte could legally have read as, the reference first.
    pub allowed: Vec<u8>,
}

impl ReadWindow {
    /// A window opening on `line` whose reference bytes are `start`.
    pub fn new(line: LineAddr, start: LineData) -> ReadWindow {
        ReadWindow {
            line,
            start,
            stores: Vec::new(),
        }
    }

    /// A store of `value` into byte `offset` of the line is in flight or was issued.
    pub fn note_store(&mut self, offset: usize, value: u8) {
        debug_assert!(offset < LINE_BYTES);
        self.stores.push((offset as u8, value));
    }

    /// True if a store to the line was in flight at some point of the window (the read
    /// raced a store).
    pub fn raced(&self) -> bool {
        !self.stores.is_empty()
    }

    /// The first byte of `data` (in address order) that breaks the rule, if any.
    pub fn check(&self, data: &LineData) -> Option<Violation> {
        (0..LINE_BYTES).find_map(|o| {
            let got = data[o];
            let stored = |&(so, v): &(u8, u8)| so as usize == o && v == got;
            if got == self.start[o] || self.stores.iter().any(stored) {
                return None;
            }
            let mut allowed = vec![self.start[o]];
            for &(so, v) in &self.stores {
                if so as usize == o && !allowed.contains(&v) {
                    allowed.push(v);
                }
            }
            Some(Violation {
                offset: o,
                got,
                allowed,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_with(bytes: &[(usize, u8)]) -> LineData {
        let mut d = [0; LINE_BYTES];
        for &(o, v) in bytes {
            d[o] = v;
        }
        d
    }

    #[test]
    fn the_reference_at_issue_is_accepted() {
        let start = line_with(&[(4, 7), (5, 8)]);
        let w = ReadWindow::new(0x1000, start);
        assert_eq!(w.check(&start), None);
    }

    #[test]
    fn a_store_in_the_window_may_or_may_not_be_seen() {
        let start = line_with(&[(4, 7)]);
        let mut w = ReadWindow::new(0x1000, start);
        w.note_store(4, 9);
        w.note_store(6, 1);
        assert_eq!(w.check(&start), None, "before the stores");
        assert_eq!(w.check(&line_with(&[(4, 9)])), None, "one store seen");
        assert_eq!(w.check(&line_with(&[(4, 9), (6, 1)])), None, "both seen");
    }

    #[test]
    fn a_value_the_line_never_held_is_refused() {
        let start = line_with(&[(4, 7)]);
        let mut w = ReadWindow::new(0x1000, start);
        w.note_store(4, 9);
        // A value nobody stored: the wrong check must fail, naming what was allowed.
        let v = w.check(&line_with(&[(4, 8)])).expect("8 was never stored");
        assert_eq!(
            v,
            Violation {
                offset: 4,
                got: 8,
                allowed: vec![7, 9]
            }
        );
        // A stored value in the wrong byte.
        let v = w
            .check(&line_with(&[(4, 7), (5, 9)]))
            .expect("9 went to byte 4");
        assert_eq!((v.offset, v.got, v.allowed), (5, 9, vec![0]));
        // A stale value: the store completed before the read was issued (it is the
        // reference now), so the old byte is refused.
        let w = ReadWindow::new(0x1000, line_with(&[(4, 9)]));
        assert_eq!(w.check(&start).map(|v| v.got), Some(7));
    }
}
