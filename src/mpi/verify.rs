//! Byte-for-byte checks of every message: the sender's buffer is read when the send is
//! posted, the receiver's when the receive completes, and the two must be equal.
//!
//! Which send a receive got follows MPI's rules: a receive naming its source and tag gets
//! the n-th send on that (source, destination, context, tag) if it is the n-th such
//! receive (non-overtaking); a wildcard receive gets one of the sends not yet taken that
//! matches its envelope, the one whose bytes it holds. (A wildcard receive and a specific
//! receive competing for the same sends are told apart by contents only.)

use std::collections::BTreeMap;

use crate::envelope::{Peer, Tag};
use crate::os::ProcId;
use crate::sim::VirtualMemory;

/// Sends on one (source, destination, context, tag).
pub type Key = (u16, u16, u16, u32);

/// A send no receive took, for a finished run's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unreceived {
    pub src: u16,
    pub dst: u16,
    pub ctx: u16,
    pub tag: u32,
    pub bytes: u64,
    /// The sender's call that posted it.
    pub call: usize,
}

#[derive(Debug, Default)]
struct SendList {
    /// Snapshots in posting order; `None` once taken or not yet read.
    data: Vec<Option<Vec<u8>>>,
    /// The posting call and size of each send, in the same order.
    posts: Vec<(usize, u64)>,
    /// Specific receives posted so far (each claims the next index).
    claimed: usize,
}

/// A read the verifier waits to make.
#[derive(Debug)]
enum Pending {
    Snapshot {
        key: Key,
        index: usize,
        proc: ProcId,
        va: u64,
        len: u64,
    },
    Check(Check),
}

#[derive(Debug)]
struct Check {
    dst: u16,
    src: Peer,
    tag: Tag,
    ctx: u16,
    /// The claimed index, for a receive naming source and tag.
    index: Option<usize>,
    proc: ProcId,
    va: u64,
    len: u64,
}

impl Check {
    /// The message of `n` bytes from `src` with `tag` this receive got, in words.
    fn message(&self, src: u16, tag: u32, n: usize) -> String {
        format!(
            "message from rank {src} to rank {} (tag {tag}, context {}, {n} bytes)",
            self.dst, self.ctx
        )
    }
}

/// What a posted receive will be checked against.
#[derive(Clone, Copy, Debug)]
pub struct Claim(Option<usize>);

/// The checker of a run's messages.
#[derive(Debug, Default)]
pub struct Verifier {
    sends: BTreeMap<Key, SendList>,
    pending: Vec<Pending>,
    /// Messages checked and bytes compared.
    pub messages: u64,
    pub bytes: u64,
}

impl Verifier {
    /// A send was posted: read `[va, va + len)` of `proc` before it can change.
    pub fn send_posted(&mut self, key: Key, at: (ProcId, u64), len: u64, call: usize) {
        let list = self.sends.entry(key).or_default();
        list.data.push(None);
        list.posts.push((call, len));
        self.pending.push(Pending::Snapshot {
            key,
            index: list.data.len() - 1,
            proc: at.0,
            va: at.1,
            len,
        });
    }

    /// A receive was posted by rank `dst`.
    pub fn recv_posted(&mut self, dst: u16, src: Peer, tag: Tag, ctx: u16) -> Claim {
        match (src, tag) {
            (Peer::Rank(s), Tag::Tag(t)) => {
                let list = self.sends.entry((s, dst, ctx, t)).or_default();
                list.claimed += 1;
                Claim(Some(list.claimed - 1))
            }
            _ => Claim(None),
        }
    }

    /// A receive completed: its buffer `[va, va + len)` of `proc` is checked at the next
    /// read.
    #[allow(clippy::too_many_arguments)]
    pub fn recv_completed(
        &mut self,
        dst: u16,
        src: Peer,
        tag: Tag,
        ctx: u16,
        claim: Claim,
        at: (ProcId, u64),
        len: u64,
    ) {
        self.pending.push(Pending::Check(Check {
            dst,
            src,
            tag,
            ctx,
            index: claim.0,
            proc: at.0,
            va: at.1,
            len,
        }));
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Makes the waiting reads, in the order they were asked for.
    pub fn read(&mut self, mem: &dyn VirtualMemory) -> Result<(), String> {
        for p in std::mem::take(&mut self.pending) {
            match p {
                Pending::Snapshot {
                    key,
                    index,
                    proc,
                    va,
                    len,
                } => {
                    let bytes = mem.read(proc, va, len as usize);
                    self.sends.get_mut(&key).expect("posted send").data[index] = Some(bytes);
                }
                Pending::Check(c) => self.check(mem, c)?,
            }
        }
        Ok(())
    }

    fn check(&mut self, mem: &dyn VirtualMemory, c: Check) -> Result<(), String> {
        let got = mem.read(c.proc, c.va, c.len as usize);
        if let (Some(index), Peer::Rank(src), Tag::Tag(tag)) = (c.index, c.src, c.tag) {
            return self.check_claimed(&c, (src, tag, index), &got);
        }
        // A wildcard: the earliest untaken matching send whose bytes the buffer holds;
        // failing that, for the report, the one that differs from them in fewest bytes.
        let (key, i) = match self.find_wildcard_send(&c, &got) {
            Ok(found) => found,
            Err(nearest) => return Err(self.no_send_holds(&c, &got, nearest)),
        };
        let sent = self.sends.get_mut(&key).expect("key").data[i]
            .take()
            .expect("found");
        self.messages += 1;
        self.bytes += sent.len() as u64;
        Ok(())
    }

    /// A receive naming source and tag got the send it claimed, the `index`-th on its
    /// (source, destination, context, tag).
    fn check_claimed(
        &mut self,
        c: &Check,
        (src, tag, index): (u16, u32, usize),
        got: &[u8],
    ) -> Result<(), String> {
        let list = self.sends.get_mut(&(src, c.dst, c.ctx, tag));
        let Some(sent) = list
            .and_then(|l| l.data.get_mut(index))
            .and_then(Option::take)
        else {
            return Err(format!(
                "rank {} completed receive {index} from rank {src} (tag {tag}, context {}) \
                 but no such send was posted",
                c.dst, c.ctx
            ));
        };
        if sent.len() > got.len() {
            return Err(format!(
                "{}: the receive buffer holds only {} bytes",
                c.message(src, tag, sent.len()),
                got.len()
            ));
        }
        if let Some(off) = (0..sent.len()).find(|&i| got[i] != sent[i]) {
            return Err(format!(
                "{}: byte at offset {off} is {:#04x}, the sender sent {:#04x}",
                c.message(src, tag, sent.len()),
                got[off],
                sent[off]
            ));
        }
        self.messages += 1;
        self.bytes += sent.len() as u64;
        Ok(())
    }

    /// The earliest untaken send matching wildcard receive `c` whose bytes it holds, or
    /// else the nearest such send (fewest differing bytes), if any.
    fn find_wildcard_send(
        &self,
        c: &Check,
        got: &[u8],
    ) -> Result<(Key, usize), Option<(Key, usize)>> {
        let mut nearest: Option<(usize, Key, usize)> = None;
        for (key, list) in &self.sends {
            let &(s, d, ctx, t) = key;
            let src_ok = matches!(c.src, Peer::Any) || c.src == Peer::Rank(s);
            let tag_ok = matches!(c.tag, Tag::Any) || c.tag == Tag::Tag(t);
            if d != c.dst || ctx != c.ctx || !src_ok || !tag_ok {
                continue;
            }
            for (i, sent) in list.data.iter().enumerate().skip(list.claimed) {
                let Some(sent) = sent else { continue };
                if sent.len() <= got.len() && got[..sent.len()] == sent[..] {
                    return Ok((*key, i));
                }
                let held = sent.len().min(got.len());
                let diff = (0..held).filter(|&k| got[k] != sent[k]).count() + sent.len() - held;
                if nearest.map_or(true, |n| diff < n.0) {
                    nearest = Some((diff, *key, i));
                }
            }
        }
        Err(nearest.map(|(_, key, i)| (key, i)))
    }

    /// The failure of a wildcard receive whose bytes no send holds, naming the nearest.
    fn no_send_holds(&self, c: &Check, got: &[u8], nearest: Option<(Key, usize)>) -> String {
        let near = nearest.map_or(String::new(), |(key, i)| {
            let (src, _, _, tag) = key;
            let sent = self.sends[&key].data[i].as_deref().unwrap_or_default();
            let at = (0..sent.len()).find(|&k| got.get(k) != Some(&sent[k]));
            match at.filter(|&k| k < got.len()) {
                Some(off) => format!(
                    "; the nearest, the {}, differs first at offset {off}: {:#04x} \
                     here, the sender sent {:#04x}",
                    c.message(src, tag, sent.len()),
                    got[off],
                    sent[off]
                ),
                None => format!(
                    "; the nearest, the {}, does not fit the buffer",
                    c.message(src, tag, sent.len())
                ),
            }
        });
        format!(
            "rank {} completed a receive from {:?} (tag {:?}, context {}) whose {} \
             bytes equal no send posted to it (first bytes {:02x?}){near}",
            c.dst,
            c.src,
            c.tag,
            c.ctx,
            got.len(),
            &got[..got.len().min(16)]
        )
    }

    /// Sends whose bytes no receive has been checked against.
    pub fn unchecked(&self) -> usize {
        self.sends
            .values()
            .map(|l| l.data.iter().filter(|d| d.is_some()).count())
            .sum()
    }

    /// The sends [`Verifier::unchecked`] counts, in (source, destination, context, tag)
    /// then posting order.
    pub fn unreceived(&self) -> Vec<Unreceived> {
        let mut left = Vec::new();
        for (&(src, dst, ctx, tag), l) in &self.sends {
            for (d, &(call, bytes)) in l.data.iter().zip(&l.posts) {
                if d.is_some() {
                    left.push(Unreceived {
                        src,
                        dst,
                        ctx,
                        tag,
                        bytes,
                        call,
                    });
                }
            }
        }
        left
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A memory of one process whose bytes a test sets.
    struct Mem(RefCell<Vec<u8>>);

    impl VirtualMemory for Mem {
        fn read(&self, _proc: ProcId, va: u64, len: usize) -> Vec<u8> {
            self.0.borrow()[va as usize..va as usize + len].to_vec()
        }
    }

    #[test]
    fn a_changed_byte_fails_naming_ranks_tag_and_offset() {
        let mem = Mem(RefCell::new((0..64).collect()));
        let mut v = Verifier::default();
        v.send_posted((1, 0, 0, 5), (0, 0), 16, 0);
        v.read(&mem).unwrap();
        let claim = v.recv_posted(0, Peer::Rank(1), Tag::Tag(5), 0);
        // The receive buffer at 32 got the message, but byte 3 is wrong.
        mem.0.borrow_mut().copy_within(0..16, 32);
        mem.0.borrow_mut()[35] ^= 0xFF;
        v.recv_completed(0, Peer::Rank(1), Tag::Tag(5), 0, claim, (0, 32), 16);
        let e = v.read(&mem).unwrap_err();
        assert!(
            e.contains("from rank 1 to rank 0 (tag 5, context 0, 16 bytes)")
                && e.contains("offset 3"),
            "{e}"
        );
    }

    #[test]
    fn wildcard_receives_take_the_send_they_hold() {
        let mem = Mem(RefCell::new((0..=255).collect()));
        let mut v = Verifier::default();
        v.send_posted((1, 0, 0, 5), (0, 0), 8, 0);
        v.send_posted((2, 0, 0, 6), (0, 100), 8, 1);
        v.read(&mem).unwrap();
        let claim = v.recv_posted(0, Peer::Any, Tag::Any, 0);
        v.recv_completed(0, Peer::Any, Tag::Any, 0, claim, (0, 100), 8);
        v.read(&mem).unwrap();
        assert_eq!(v.unchecked(), 1);
        let claim = v.recv_posted(0, Peer::Any, Tag::Any, 0);
        // Bytes that match no remaining send: the report names the nearest one.
        v.recv_completed(0, Peer::Any, Tag::Any, 0, claim, (0, 50), 8);
        let e = v.read(&mem).unwrap_err();
        assert!(
            e.contains("equal no send")
                && e.contains("the nearest, the message from rank 1 to rank 0 (tag 5")
                && e.contains("offset 0: 0x32 here, the sender sent 0x00"),
            "{e}"
        );
    }
}
