//! The list manager's side of the FIFOs (paper, section 3.2): it sends the header, then
//! streams list items, 8 words each, one word per cycle, reading the unit's reports as
//! they come. It never runs more than one item ahead of the item being matched, so when
//! the match (or the end of the list) is reported, exactly one item has been sent past
//! it: the next list item, or the end-of-list sentinel. The paper's list manager hides
//! memory latency with a small cache of items; here every item is ready at once.
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
    let stream = run_stream(program, &[(*h, items)])?;
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
    let mut unit = MatchUnit::new(program.to_vec());
    unit.run_until_idle(CYCLE_LIMIT)?;
    let origin = unit.cycle();
    let (pops0, out0) = (unit.pops().len(), unit.output().len());
    // (words sent, pops before, output words before, output words of its reports)
    let mut marks = Vec::with_capacity(requests.len());
    let (mut pops_before, mut out_before) = (pops0, out0);
    for (h, items) in requests {
        let (sent, reports) = feed_one(&mut unit, origin, h, items, out_before)?;
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
    h: &Header,
    items: &[ListItem],
    out_before: usize,
) -> Result<(usize, Reports), RunError> {
    let mut list: Vec<[u64; 8]> = items.iter().map(ListItem::words).collect();
    list.push(ListItem::end().words());
    let words: Vec<u64> = h.words().into_iter().chain(list.concat()).collect();
    let mut sent = 0;
    loop {
        let reports = read_reports(&unit.output()[out_before..]);
        let limit_words = 8 * (last_sendable(&reports, items.len()) + 2);
        if sent < limit_words.min(words.len()) {
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
