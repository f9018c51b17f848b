//! A program's tags on the 16-bit tag fields it runs through.
//!
//! MPI tags run to MPI_TAG_UB, 2^31 - 1 in MPICH ([`TAG_UB`]), and traces of real runs use
//! tags of 2^20 and more. Two fields that carry a tag are narrower: a MOPED data port's
//! field 0 packs kind, peer rank, context and tag into its 48-bit payload, leaving the tag
//! 16 bits with `0xFFFF` for ANY_TAG (`moped::ports`); and the MPI library model keeps
//! MPICH2's 16-bit tag in its packet headers and in the match words of its queues
//! (`mpi::shm`, `mpi::queues`).
//!
//! A program whose tags all fit (`0..=0xFFFE`) keeps them. Otherwise the runtime renumbers
//! them densely before it runs: the `n`-th smallest tag the program uses becomes `n`
//! (counting from 0), whatever its context. That is a bijection on the tags used, so every
//! receive matches exactly the sends it matched before, and ANY_TAG stays ANY_TAG; the
//! workload's notes say so, and the message checks report the program's own tags. Dense
//! numbers stay below [`WIRE_TAGS`], clear of the tag the runtime's barrier uses.

use std::collections::BTreeSet;

use crate::envelope::{Tag, TAG_UB};

use super::{Call, Workload};

/// The largest tag that fits the 16-bit fields as it is (`0xFFFF` is ANY_TAG).
pub const WIRE_TAG_MAX: u32 = 0xFFFE;

/// How many distinct tags a renumbered program may use: dense numbers run
/// `0..WIRE_TAGS`, below the barrier's tag.
pub const WIRE_TAGS: u32 = 0xFFF0;

/// The program's tags and the 16-bit numbers they travel as.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TagMap {
    /// The distinct tags used, increasing, when they are renumbered; `None` when every
    /// tag fits and travels as it is.
    dense: Option<Vec<u32>>,
}

/// The tag of a send or receive call (ANY_TAG has none).
fn call_tag(c: &Call) -> Option<u32> {
    match c {
        Call::Isend { tag, .. }
        | Call::Irecv {
            tag: Tag::Tag(tag), ..
        } => Some(*tag),
        _ => None,
    }
}

impl TagMap {
    /// The map for `w`'s tags. A tag above [`TAG_UB`] or more than [`WIRE_TAGS`] distinct
    /// tags (when they need renumbering) is an error naming the workload.
    pub fn of(w: &Workload) -> Result<TagMap, String> {
        let used: BTreeSet<u32> = w
            .ranks
            .iter()
            .flat_map(|r| r.calls.iter().filter_map(call_tag))
            .collect();
        let Some(&max) = used.last() else {
            return Ok(TagMap::default());
        };
        if max > TAG_UB {
            return Err(format!(
                "workload {}: tag {max} is above MPI_TAG_UB ({TAG_UB})",
                w.name
            ));
        }
        if max <= WIRE_TAG_MAX {
            return Ok(TagMap::default());
        }
        if used.len() > WIRE_TAGS as usize {
            return Err(format!(
                "workload {} uses {} distinct tags, some above {WIRE_TAG_MAX}: renumbered, \
                 they must fit the 16-bit tag field, which holds {WIRE_TAGS}",
                w.name,
                used.len()
            ));
        }
        Ok(TagMap {
            dense: Some(used.into_iter().collect()),
        })
    }

    /// Whether tags travel renumbered.
    pub fn renumbered(&self) -> bool {
        self.dense.is_some()
    }

    /// The 16-bit number `tag` travels as; `None` for a tag the program does not use.
    pub fn wire(&self, tag: u32) -> Option<u32> {
        match &self.dense {
            None => (tag <= WIRE_TAG_MAX).then_some(tag),
            Some(d) => d.binary_search(&tag).ok().map(|i| i as u32),
        }
    }

    /// The program's tag that travels as `wire` (for reports).
    pub fn program_tag(&self, wire: u32) -> u32 {
        match &self.dense {
            Some(d) => d.get(wire as usize).copied().unwrap_or(wire),
            None => wire,
        }
    }

    /// The program's own form of a tag as it travels (ANY_TAG stays ANY_TAG).
    pub fn program(&self, tag: Tag) -> Tag {
        match tag {
            Tag::Tag(t) => Tag::Tag(self.program_tag(t)),
            Tag::Any => Tag::Any,
        }
    }

    /// `calls` with their tags as they travel; an error names a tag the map lacks.
    pub fn apply(&self, calls: &[Call]) -> Result<Vec<Call>, String> {
        let wire = |t: u32| {
            self.wire(t)
                .ok_or_else(|| format!("tag {t} has no 16-bit number"))
        };
        calls
            .iter()
            .map(|c| {
                let mut c = c.clone();
                match &mut c {
                    Call::Isend { tag, .. }
                    | Call::Irecv {
                        tag: Tag::Tag(tag), ..
                    } => *tag = wire(*tag)?,
                    _ => {}
                }
                Ok(c)
            })
            .collect()
    }

    /// The workload note for a renumbering.
    pub fn note(&self) -> Option<String> {
        let d = self.dense.as_ref()?;
        Some(format!(
            "tags renumbered densely (tag {} travels as 0, ..., tag {} as {}): the 16-bit tag \
             fields of MOPED ports and MPICH's queues hold 0 to {WIRE_TAG_MAX}; matching is \
             unchanged",
            d[0],
            d[d.len() - 1],
            d.len() - 1
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Peer;
    use crate::workload::{BufRef, RankProgram};

    fn workload(calls: Vec<Call>) -> Workload {
        Workload {
            name: "t".into(),
            ranks: vec![RankProgram {
                buffers: vec![],
                calls,
            }],
            notes: vec![],
            origins: None,
        }
    }

    fn send(tag: u32) -> Call {
        Call::Isend {
            req: 0,
            dst: 0,
            tag,
            ctx: 0,
            buf: BufRef::new(0, 0),
            bytes: 8,
        }
    }

    fn recv(tag: Tag) -> Call {
        Call::Irecv {
            req: 1,
            src: Peer::Any,
            tag,
            ctx: 0,
            buf: BufRef::new(0, 0),
            bytes: 8,
        }
    }

    #[test]
    fn tags_that_fit_travel_as_they_are() {
        let calls = vec![send(0xFFFE), recv(Tag::Tag(3)), recv(Tag::Any)];
        let m = TagMap::of(&workload(calls.clone())).unwrap();
        assert!(!m.renumbered());
        assert_eq!(m.note(), None);
        assert_eq!(m.apply(&calls), Ok(calls));
    }

    #[test]
    fn wide_tags_are_renumbered_in_increasing_order() {
        let w = workload(vec![
            send(TAG_UB),
            send(1 << 20),
            recv(Tag::Tag(5)),
            recv(Tag::Tag(1 << 20)),
            recv(Tag::Any),
        ]);
        let m = TagMap::of(&w).unwrap();
        let got = m.apply(&w.ranks[0].calls).unwrap();
        let want = vec![
            send(2),
            send(1),
            recv(Tag::Tag(0)),
            recv(Tag::Tag(1)),
            recv(Tag::Any),
        ];
        assert_eq!(got, want);
        assert_eq!(m.program_tag(2), TAG_UB);
        assert_eq!(m.wire(6), None);
        let note = m.note().unwrap();
        assert!(note.contains("tag 5 travels as 0"), "{note}");
        assert!(note.contains("tag 2147483647 as 2"), "{note}");
    }

    #[test]
    fn tags_beyond_the_bound_or_too_many_are_refused() {
        let e = TagMap::of(&workload(vec![send(TAG_UB + 1)])).unwrap_err();
        assert_eq!(
            e,
            "workload t: tag 2147483648 is above MPI_TAG_UB (2147483647)"
        );
        let many = (0..=WIRE_TAGS).map(|t| send(t + 0x1_0000)).collect();
        let e = TagMap::of(&workload(many)).unwrap_err();
        assert!(e.contains("uses 65521 distinct tags"), "{e}");
    }
}
