//! The visited-set key of a CMP state, and symmetry reduction.
//!
//! With symmetry on, the key is the minimum encoding over all permutations of the cache
//! indices (among cores of the same kind: cores with a requesting MOPED are only
//! interchangeable among themselves). The stored representative of each orbit stays the
//! concrete state first reached, so traces are concrete executions with stable node ids.

use crate::coherence::cache::EncodeBuf;
use crate::coherence::dir::{DirEntry, NOBODY};
use crate::coherence::{DirCtrl, Msg, NodeId};
use crate::mem::LineAddr;

use super::super::config::CheckConfig;
use super::state::State;
use super::CmpModel;

/// Bytes of one encoded message: its header fields and its line of data.
const MSG_ENC: usize = 8 + 64;

/// Buffers reused across keys.
#[derive(Default)]
pub(super) struct Scratch {
    /// Per cache, what its encoding holds under any renaming: its controller, its core's
    /// pending request and its MOPED's.
    blocks: Vec<Vec<u8>>,
    cache_buf: EncodeBuf,
    entries: Vec<(LineAddr, DirEntry)>,
    /// The directory's memory, the same under every renaming.
    memory: Vec<u8>,
    buf: Vec<u8>,
    best: Vec<u8>,
    msgs: Vec<[u8; MSG_ENC]>,
}

/// The permutations of cache indices a configuration's key minimises over: the identity
/// alone without symmetry reduction.
pub(super) fn permutations_of(cfg: &CheckConfig) -> Vec<Vec<NodeId>> {
    if !cfg.symmetry {
        return vec![(0..cfg.caches as NodeId).collect()];
    }
    let k = cfg.moped_cores;
    permutations(cfg.caches)
        .into_iter()
        .filter(|p| {
            p.iter()
                .enumerate()
                .all(|(i, &j)| (i < k) == ((j as usize) < k))
        })
        .collect()
}

fn permutations(n: usize) -> Vec<Vec<NodeId>> {
    fn rec(cur: &mut Vec<NodeId>, used: &mut Vec<bool>, out: &mut Vec<Vec<NodeId>>) {
        if cur.len() == used.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..used.len() {
            if !used[i] {
                used[i] = true;
                cur.push(i as NodeId);
                rec(cur, used, out);
                cur.pop();
                used[i] = false;
            }
        }
    }
    let mut out = Vec::new();
    rec(&mut Vec::new(), &mut vec![false; n], &mut out);
    out
}

/// Zero-run-length compaction of an encoding: a non-zero byte stands for itself, a run of
/// `k` zeros (1..=255) becomes `[0, k]`. Injective, so keys stay exact.
fn compact(raw: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(raw.len() / 4 + 8);
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != 0 {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        // Most of an encoding is the zero bytes of its lines' data: a run is measured eight
        // bytes at a time while a whole word of zeros fits under the 255 a run can hold.
        let start = i;
        while i + 8 <= raw.len() && i - start + 8 <= 255 && zero_word(&raw[i..i + 8]) {
            i += 8;
        }
        while i < raw.len() && raw[i] == 0 && i - start < 255 {
            i += 1;
        }
        out.push(0);
        out.push((i - start) as u8);
    }
    out.into_boxed_slice()
}

/// Whether the eight bytes of `w` are all zero.
#[inline]
fn zero_word(w: &[u8]) -> bool {
    u64::from_ne_bytes(w.try_into().expect("eight bytes")) == 0
}

impl CmpModel<'_> {
    fn encode_msg(&self, m: &Msg, perm: &[NodeId], out: &mut [u8; MSG_ENC]) {
        let n = self.cfg.caches as NodeId;
        let r = |x: NodeId| if x < n { perm[x as usize] } else { x };
        out[0] = m.ty as u8;
        out[1] = self.addr_index(m.addr).map(|i| i as u8).unwrap_or(0xff);
        out[2] = r(m.src) as u8;
        out[3] = r(m.dst) as u8;
        out[4] = if m.requestor == NOBODY {
            0xff
        } else {
            r(m.requestor) as u8
        };
        out[5..7].copy_from_slice(&m.acks.to_le_bytes());
        out[7] = m.dirty as u8;
        out[8..].copy_from_slice(&m.data);
    }

    /// The visited-set key of a state: its encoding, minimized over the cache permutations.
    /// What no renaming changes is encoded once, before the permutations.
    pub(super) fn canonical_key(&self, st: &State, scratch: &mut Scratch) -> Box<[u8]> {
        scratch.blocks.resize_with(self.cfg.caches, Vec::new);
        for (i, e) in scratch.blocks.iter_mut().enumerate() {
            e.clear();
            st.caches[i].encode(e, &mut scratch.cache_buf);
            match st.pending[i] {
                None => e.push(0),
                Some(p) => e.extend_from_slice(&[1 + p.store as u8, p.addr, p.value]),
            }
            match st.moped[i] {
                None => e.push(0),
                Some(p) => e.extend_from_slice(&[1 + p.kind as u8, p.addr, p.value, p.seen]),
            }
        }
        st.dir.sorted_entries_into(&mut scratch.entries);
        scratch.memory.clear();
        st.dir.encode_memory(&mut scratch.memory);
        scratch.best.clear();
        let mut first = true;
        for perm in &self.perms {
            let mut buf = std::mem::take(&mut scratch.buf);
            buf.clear();
            self.encode(st, perm, scratch, &mut buf);
            if first || buf < scratch.best {
                std::mem::swap(&mut scratch.best, &mut buf);
                first = false;
            }
            scratch.buf = buf;
        }
        compact(&scratch.best)
    }

    /// The encoding of `st` with cache `i` renamed `perm[i]`, appended to `buf`, from the
    /// parts [`CmpModel::canonical_key`] put in `scratch`.
    fn encode(&self, st: &State, perm: &[NodeId], scratch: &mut Scratch, buf: &mut Vec<u8>) {
        // inv[new] = old
        let mut inv = [0usize; 8];
        for (old, &new) in perm.iter().enumerate() {
            inv[new as usize] = old;
        }
        for &old in inv.iter().take(self.cfg.caches) {
            buf.extend_from_slice(&scratch.blocks[old]);
        }
        buf.extend_from_slice(&st.ghost);
        DirCtrl::encode_entries(&scratch.entries, buf, &|x: NodeId| perm[x as usize]);
        buf.extend_from_slice(&scratch.memory);
        scratch.msgs.clear();
        for m in &st.net {
            let mut e = [0u8; MSG_ENC];
            self.encode_msg(m, perm, &mut e);
            scratch.msgs.push(e);
        }
        scratch.msgs.sort_unstable();
        buf.push(scratch.msgs.len() as u8);
        for e in &scratch.msgs {
            buf.extend_from_slice(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::compact;
    use proptest::prelude::*;

    /// The compaction one byte at a time, as the encoding defines it.
    fn bytewise(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            if raw[i] != 0 {
                out.push(raw[i]);
                i += 1;
            } else {
                let mut k = 0u8;
                while i < raw.len() && raw[i] == 0 && k < 255 {
                    k += 1;
                    i += 1;
                }
                out.extend([0, k]);
            }
        }
        out
    }

    proptest! {
        /// Runs of every length up to past two full runs, between non-zero bytes, compact
        /// as the byte-at-a-time definition does.
        #[test]
        fn word_steps_compact_as_byte_steps(
            parts in proptest::collection::vec((0usize..600, 1u8..=255), 0..8),
            tail in 0usize..300,
        ) {
            let mut raw = Vec::new();
            for (zeros, b) in parts {
                raw.resize(raw.len() + zeros, 0);
                raw.push(b);
            }
            raw.resize(raw.len() + tail, 0);
            prop_assert_eq!(&*compact(&raw), &bytewise(&raw)[..]);
        }
    }
}
