//! The bytes of every message: a pattern of its sender and number, which the sending host
//! writes and the receiving host checks, byte for byte.

use std::sync::Arc;

/// The 8 bytes at word `i` of message `seq` from `src`.
fn word(src: usize, seq: u64, i: u64) -> [u8; 8] {
    let mut z = ((seq << 1) | src as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ i.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 31;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 29)).to_le_bytes()
}

/// The contents of message `seq` from `src`: every message's bytes differ.
pub(super) fn pattern(src: usize, seq: u64, bytes: u64) -> Arc<[u8]> {
    let mut v = Vec::with_capacity(bytes as usize + 8);
    for i in 0..bytes.div_ceil(8) {
        v.extend_from_slice(&word(src, seq, i));
    }
    v.truncate(bytes as usize);
    v.into()
}

/// The first byte of `buf` that is not message `seq` from `src`'s.
pub(super) fn first_wrong(src: usize, seq: u64, buf: &[u8]) -> Option<usize> {
    buf.chunks(8).enumerate().find_map(|(i, chunk)| {
        let want = word(src, seq, i as u64);
        let at = chunk.iter().zip(want).position(|(a, b)| *a != b)?;
        Some(i * 8 + at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_its_own_and_no_other_message_s() {
        let p = pattern(0, 7, 29);
        assert_eq!(p.len(), 29);
        assert_eq!(first_wrong(0, 7, &p), None);
        assert_eq!(first_wrong(1, 7, &p), Some(0));
        let mut q = p.to_vec();
        q[17] ^= 1;
        assert_eq!(first_wrong(0, 7, &q), Some(17));
        assert_ne!(pattern(0, 8, 29), p);
    }
}
