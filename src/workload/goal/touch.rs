//! GOAL schedules with data (`workload.touch_buffers`): a schedule says which messages
//! travel, not what the program does with them, so by itself no core ever touches a
//! message's bytes and the designs' difference (where the data sits when the program
//! next uses it) cannot show. Touched, each sender writes its send buffer before each
//! send and each receiver reads its receive buffer after the wait that completes the
//! receive, one 8-byte word every `stride` bytes (64: every line).
//!
//! Each send then needs bytes of its own while it is outstanding (writing a buffer a send
//! in flight still reads would change that message), so sends get ranges of a send arena,
//! placed first fit from the `Isend` to the wait that completes it, as receives do in the
//! receive arena; both arenas place 8-byte aligned ranges, as a sweep's words are.

use std::collections::HashMap;

use super::{Arena, RECV_BUF, SEND_BUF};
use crate::workload::{BufRef, Call, ReqId, SweepKind, Workload};

/// A request's range, while it is outstanding.
struct Held {
    buf: u16,
    off: u64,
    bytes: u64,
}

/// Rounds a message's length up to whole 8-byte words, so every range starts aligned.
fn words(bytes: u64) -> Option<u64> {
    bytes.checked_add(7).map(|b| b & !7)
}

/// Touches every message of a GOAL workload's ranks, one word every `stride` bytes (a
/// positive multiple of 8); the workload's notes say so. An error names the rank whose
/// arena would pass 2^64 bytes.
pub fn touch_buffers(w: &mut Workload, stride: u64) -> Result<(), String> {
    if stride == 0 || stride % 8 != 0 {
        return Err(format!(
            "touching buffers needs a stride that is a positive multiple of 8 bytes, not {stride}"
        ));
    }
    let mut origins = w.origins.take();
    for (r, prog) in w.ranks.iter_mut().enumerate() {
        let from = origins.as_mut().and_then(|o| o.ranks.get_mut(r));
        let (calls, at, peaks) =
            touch_rank(std::mem::take(&mut prog.calls), from.as_deref(), stride)
                .ok_or_else(|| format!("rank {r}: a touched buffer would pass 2^64 bytes"))?;
        prog.calls = calls;
        if let (Some(from), Some(at)) = (from, at) {
            *from = at;
        }
        for (buf, peak) in [(SEND_BUF, peaks.0), (RECV_BUF, peaks.1)] {
            if let Some(b) = prog.buffers.get_mut(buf as usize) {
                b.bytes = peak;
            }
        }
    }
    w.origins = origins;
    w.notes.push(format!(
        "message buffers touched: a sender writes, a receiver reads, one word every {stride} bytes"
    ));
    Ok(())
}

type Touched = (Vec<Call>, Option<Vec<(u32, u32)>>, (u64, u64));

/// One rank's calls with the sweeps added, their origins (a sweep has its message's),
/// and the two arenas' sizes; `None` when an arena would overflow.
fn touch_rank(calls: Vec<Call>, origins: Option<&Vec<(u32, u32)>>, stride: u64) -> Option<Touched> {
    let (mut sends, mut recvs) = (Arena::default(), Arena::default());
    let mut held: HashMap<ReqId, Held> = HashMap::new();
    let mut out = Vec::with_capacity(calls.len() * 2);
    let mut at = origins.map(|_| Vec::with_capacity(calls.len() * 2));
    let sweep = |buf, off, bytes, kind| Call::Sweep {
        at: BufRef::new(buf, off),
        bytes,
        stride,
        kind,
    };
    for (i, mut call) in calls.into_iter().enumerate() {
        let origin = origins.and_then(|o| o.get(i)).copied().unwrap_or((0, 0));
        let mut before = None;
        let mut after = Vec::new();
        match &mut call {
            Call::Isend {
                req, buf, bytes, ..
            } => {
                let off = sends.alloc(words(*bytes)?, *req as usize)?;
                *buf = BufRef::new(SEND_BUF, off);
                held.insert(
                    *req,
                    Held {
                        buf: SEND_BUF,
                        off,
                        bytes: *bytes,
                    },
                );
                if *bytes > 0 {
                    before = Some(sweep(SEND_BUF, off, *bytes, SweepKind::Store));
                }
            }
            Call::Irecv {
                req, buf, bytes, ..
            } => {
                let off = recvs.alloc(words(*bytes)?, *req as usize)?;
                *buf = BufRef::new(RECV_BUF, off);
                held.insert(
                    *req,
                    Held {
                        buf: RECV_BUF,
                        off,
                        bytes: *bytes,
                    },
                );
            }
            Call::Wait(r) => after.extend(release(&mut held, &mut sends, &mut recvs, &[*r])),
            Call::Waitall(rs) => after.extend(release(&mut held, &mut sends, &mut recvs, rs)),
            _ => {}
        }
        let loads = after
            .into_iter()
            .filter(|h| h.bytes > 0)
            .map(|h| sweep(h.buf, h.off, h.bytes, SweepKind::Load));
        let added: Vec<Call> = before.into_iter().chain([call]).chain(loads).collect();
        if let Some(at) = at.as_mut() {
            at.extend(std::iter::repeat(origin).take(added.len()));
        }
        out.extend(added);
    }
    Some((out, at, (sends.peak, recvs.peak)))
}

/// Frees the ranges of requests `reqs`, completed by a wait; returns the receives', whose
/// data the rank then reads.
fn release(
    held: &mut HashMap<ReqId, Held>,
    sends: &mut Arena,
    recvs: &mut Arena,
    reqs: &[ReqId],
) -> Vec<Held> {
    let mut read = Vec::new();
    for r in reqs {
        let Some(h) = held.remove(r) else { continue };
        if h.buf == SEND_BUF {
            sends.free(*r as usize);
        } else {
            recvs.free(*r as usize);
            read.push(h);
        }
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::check::check;
    use crate::workload::goal::parse_goal;

    const PINGPONG: &str = "num_ranks 2
rank 0 {
  s1: send 1000b to 1
  r1: recv 1000b from 1
  r1 requires s1
  s2: send 1000b to 1
  s2 requires r1
  s3: send 1000b to 1
}
rank 1 {
  r1: recv 1000b from 0
  s1: send 1000b to 0
  s1 requires r1
  r2: recv 1000b from 0
  r3: recv 1000b from 0
}
";

    #[test]
    fn sends_are_written_before_and_receives_read_after_their_wait() {
        let mut w = parse_goal(PINGPONG, "pp.goal").unwrap();
        touch_buffers(&mut w, 64).unwrap();
        let calls = &w.ranks[0].calls;
        // A store sweep right before each send, over that send's own range.
        for (i, c) in calls.iter().enumerate() {
            if let Call::Isend { buf, bytes, .. } = c {
                assert_eq!(
                    calls[i - 1],
                    Call::Sweep {
                        at: *buf,
                        bytes: *bytes,
                        stride: 64,
                        kind: SweepKind::Store
                    }
                );
                assert_eq!(buf.offset % 8, 0);
            }
        }
        // Rank 1 reads each receive after the wait that completes it.
        let loads = w.ranks[1]
            .calls
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Call::Sweep {
                        kind: SweepKind::Load,
                        ..
                    }
                )
            })
            .count();
        assert_eq!(loads, 3);
        // Two sends outstanding at once (s1 and s3) never share bytes; the checker's hazard
        // rules agree, and the origins still name a line for every call.
        assert!(w.ranks[0].buffers[SEND_BUF as usize].bytes >= 2000);
        check(&w).unwrap();
        let o = w.origins.as_ref().unwrap();
        for (r, prog) in w.ranks.iter().enumerate() {
            assert_eq!(o.ranks[r].len(), prog.calls.len());
        }
        assert!(w.notes.iter().any(|n| n.contains("every 64 bytes")));
    }

    #[test]
    fn a_stride_that_is_not_whole_words_is_refused() {
        let mut w = parse_goal(PINGPONG, "pp.goal").unwrap();
        assert!(touch_buffers(&mut w, 12)
            .unwrap_err()
            .contains("multiple of 8"));
        assert!(touch_buffers(&mut w, 0).is_err());
    }
}
