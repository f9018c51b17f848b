//! The list manager's side of the FIFOs (paper, section 3.2): it sends the header, then
//! streams list items, 8 words each, one word per cycle, reading the unit's reports as
//! they come. It never runs more than one item ahead of the item being matched, so when
//! the match (or the end of the list) is reported, exactly one item has been sent past
//! it: the next list item, or the end-of-list sentinel. The paper's list manager hides
//! memory latency with a small cache of items; here every item is ready at once.

use super::isa::Instr;
use super::pipeline::{MatchUnit, RunError};
use super::program::{read_reports, since, Header, ListItem, MatchRun, Outcome, Reports};

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
/// manager feeding the FIFO and reading the reports.
pub fn run_with_list_manager(
    program: &[Instr],
    h: &Header,
    items: &[ListItem],
) -> Result<(MatchRun, usize), RunError> {
    const LIMIT: u64 = 1_000_000;
    let mut unit = MatchUnit::new(program.to_vec());
    unit.run_until_idle(LIMIT)?;
    let origin = unit.cycle();
    let (pops_before, out_before) = (unit.pops().len(), unit.output().len());
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
        } else if reports.outcome.is_some() && unit.is_idle() {
            break;
        }
        if unit.cycle() - origin >= LIMIT {
            return Err(RunError::CycleLimit {
                limit: LIMIT,
                pc: unit.pc(),
            });
        }
        unit.step()?;
    }
    let last = unit.last_retire().unwrap_or(origin);
    let (output, pops) = since(&unit, out_before, pops_before, origin);
    let reports = read_reports(&output);
    let run = MatchRun {
        outcome: reports.outcome.unwrap_or(Outcome::NoMatch),
        failed: reports.failed,
        cycles: last + 1 - origin,
        pops,
        output,
    };
    Ok((run, sent))
}
