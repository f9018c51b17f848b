//! The list manager's side of the FIFOs (paper, section 3.2): it sends the header, then
//! streams list items, 8 words each, one word per cycle, reading the unit's reports as
//! they come. It never runs more than one item ahead of the item being matched, so when
//! the match (or the end of the list) is reported, exactly one item has been sent past
//! it: the next list item, or the end-of-list sentinel.
//!
//! Its list is in a local memory ([`Feed`]): "The list manager manages a small cache of
//! list items (two or three 64 byte items) to cover the round-trip time to the local
//! memory" (section 3.2). The cache holds the list's first items (the manager refetches
//! a removed one's successor while the unit flushes and takes the next header); when a
//! header arrives it starts the memory requests for the first item not in the cache,
//! whose words then arrive `memory_cycles` later, one a cycle, as fast as the FIFO takes
//! them. Without the flush ([`Feed::flush`] off), the manager resets the FIFO when a
//! match is reported, dropping the item it sent past the match, and the program jumps
//! straight to the next header.
//!
//! A stream of headers (the paper's benchmark matches 64 incoming messages back to back)
//! runs on one booted unit: the manager sends the next header as soon as it knows the
//! outcome of the one before and has sent the item past it, so the next header's words
//! wait in the FIFO while the unit flushes.

use super::isa::Instr;
use super::pipeline::{MatchUnit, RunError};
use super::program::{
    read_reports, since, Header, ListItem, MatchRun, Outcome, Reports, CYCLE_LIMIT,
};
use serde::{Deserialize, Serialize};

/// How the list manager reaches its list and ends a match.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feed {
    /// Cycles from a memory request to its first word.
    pub memory_cycles: u64,
    /// List items the manager keeps cached from the list's head.
    pub cache_items: usize,
    /// The unit flushes the item sent past a match (the paper's program); off, the manager
    /// drops it from the FIFO instead.
    pub flush: bool,
}

impl Feed {
    /// Every item ready at once, the paper's flush: the unit's own time.
    pub const READY: Feed = Feed {
        memory_cycles: 0,
        cache_items: 0,
        flush: true,
    };

    /// The cycle, from the header's arrival, word `w` of a request (header first, then
    /// the items) is in the manager's hands.
    fn ready_at(&self, w: usize) -> u64 {
        let item = (w / 8).checked_sub(1);
        match item {
            Some(i) if i >= self.cache_items && self.memory_cycles > 0 => {
                let first = 8 * (self.cache_items + 1);
                self.memory_cycles + (w - first) as u64
            }
            _ => 0,
        }
    }
}

/// The item (counting the sentinel as the last) the manager may send up to: one past
/// the item under match, and no further once the outcome is known.
fn last_sendable(r: &Reports, items: usize) -> usize {
    let under_match = match r.outcome {
        Some(Outcome::Match { index, .. }) => index,
        _ => r.failed,
    };
    (under_match + 1).min(items)
}

/// Boots the unit on `program` and matches one header against `items` with the list
/// manager feeding the FIFO and reading the reports. Returns the run and the words sent.
pub fn run_with_list_manager(
    program: &[Instr],
    h: &Header,
    items: &[ListItem],
) -> Result<(MatchRun, usize), RunError> {
    run_with_feed(program, h, items, Feed::READY)
}

/// [`run_with_list_manager`] with the list manager's memory and flush as `feed` says.
pub fn run_with_feed(
    program: &[Instr],
    h: &Header,
    items: &[ListItem],
    feed: Feed,
) -> Result<(MatchRun, usize), RunError> {
    let stream = run_stream_with(program, &[(*h, items)], feed)?;
    let s = stream
        .searches
        .into_iter()
        .next()
        .expect("one request, one search");
    Ok((s.run, s.sent))
}

/// One search of a stream. Cycles count from the stream's origin (the cycle after boot).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streamed {
    /// The search's reports, pops and output; `cycles` is `end - start`.
    pub run: MatchRun,
    /// Words the manager sent for it: the header, the items up to one past the outcome.
    pub sent: usize,
    /// The cycle the unit popped its header's first word (the stream's origin for the
    /// first search), and the next search's start (one past the last word's W stage for
    /// the last): the searches tile the stream's time.
    pub start: u64,
    pub end: u64,
}

/// A stream's searches and its cycles from origin to the last word's W stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    pub searches: Vec<Streamed>,
    pub cycles: u64,
}

/// Boots the unit on `program` and matches each header against its list in turn, the
/// list manager streaming them back to back.
pub fn run_stream(
    program: &[Instr],
    requests: &[(Header, &[ListItem])],
) -> Result<Stream, RunError> {
    run_stream_with(program, requests, Feed::READY)
}

/// [`run_stream`] with the list manager's memory and flush as `feed` says.
pub fn run_stream_with(
    program: &[Instr],
    requests: &[(Header, &[ListItem])],
    feed: Feed,
) -> Result<Stream, RunError> {
    let mut unit = MatchUnit::new(program.to_vec());
    unit.run_until_idle(CYCLE_LIMIT)?;
    let origin = unit.cycle();
    let (pops0, out0) = (unit.pops().len(), unit.output().len());
    // (words sent, pops before, output words before, output words of its reports)
    let mut marks = Vec::with_capacity(requests.len());
    let (mut pops_before, mut out_before) = (pops0, out0);
    for (h, items) in requests {
        let (sent, reports) = feed_one(&mut unit, origin, (h, items), out_before, feed)?;
        let outcome_words = match reports.outcome {
            Some(Outcome::Match { .. }) => 3,
            _ => 1,
        };
        let out_words = reports.failed + outcome_words;
        marks.push((sent, pops_before, out_before, out_words, reports));
        pops_before += sent;
        out_before += out_words;
    }
    while !unit.is_idle() {
        check_limit(&unit, origin)?;
        unit.step()?;
    }
    let cycles = unit.last_retire().map_or(0, |c| c + 1 - origin);
    let pops = unit.pops();
    let starts: Vec<u64> = marks
        .iter()
        .enumerate()
        .map(|(i, m)| if i == 0 { 0 } else { pops[m.1] - origin })
        .collect();
    let searches = marks
        .into_iter()
        .enumerate()
        .map(|(i, (sent, pops_at, out_at, out_words, reports))| {
            let (start, end) = (starts[i], starts.get(i + 1).copied().unwrap_or(cycles));
            let (output, pops) = since(&unit, out_at, pops_at, origin);
            let output = output.into_iter().take(out_words).collect();
            let pops = pops.into_iter().take(sent).collect();
            let run = MatchRun {
                outcome: reports.outcome.unwrap_or(Outcome::NoMatch),
                failed: reports.failed,
                cycles: end - start,
                pops,
                output,
            };
            Streamed {
                run,
                sent,
                start,
                end,
            }
        })
        .collect();
    Ok(Stream { searches, cycles })
}

/// Feeds one header and its list until the outcome is reported and every word the
/// manager may send is on its way; the reports read from `out_before` on.
fn feed_one(
    unit: &mut MatchUnit,
    origin: u64,
    (h, items): (&Header, &[ListItem]),
    out_before: usize,
    feed: Feed,
) -> Result<(usize, Reports), RunError> {
    let mut list: Vec<[u64; 8]> = items.iter().map(ListItem::words).collect();
    list.push(ListItem::end().words());
    let words: Vec<u64> = h.words().into_iter().chain(list.concat()).collect();
    let arrived = unit.cycle();
    let mut sent = 0;
    loop {
        let reports = read_reports(&unit.output()[out_before..]);
        if let (false, Some(Outcome::Match { .. })) = (feed.flush, reports.outcome) {
            // The item past the match never reaches the program.
            sent -= unit.drop_input();
            return Ok((sent, reports));
        }
        let limit_words = 8 * (last_sendable(&reports, items.len()) + 2);
        let ready = |w: usize| unit.cycle() >= arrived + feed.ready_at(w);
        if sent < limit_words.min(words.len()) && ready(sent) {
            unit.stream_input([words[sent]]);
            sent += 1;
        } else if reports.outcome.is_some() {
            return Ok((sent, reports));
        }
        check_limit(unit, origin)?;
        unit.step()?;
    }
}

fn check_limit(unit: &MatchUnit, origin: u64) -> Result<(), RunError> {
    if unit.cycle() - origin >= CYCLE_LIMIT {
        return Err(RunError::CycleLimit {
            limit: CYCLE_LIMIT,
            pc: unit.pc(),
        });
    }
    Ok(())
}
