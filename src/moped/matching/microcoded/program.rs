//! The match program (`match.mu`) and the data it works on: header and list-item
//! layouts (a choice of this model: the paper gives field sizes, not positions), the
//! output words, a harness that plays the list manager's part of sending one item past
//! the match, and Figure 1 of the paper as the reference the program must agree with.

use super::asm::{assemble, AsmError, Program};
use super::isa::Instr;
use super::pipeline::{MatchUnit, OutWord, RunError};

/// The match program's text: copy and change it, then [`assemble`] it.
pub const SOURCE: &str = include_str!("match.mu");

/// The match program as shipped.
pub fn match_program() -> Result<Program, AsmError> {
    assemble("match.mu", SOURCE)
}

/// `match.mu`'s flush, which drains the item the list manager sent past a match.
const FLUSH: &str = "flush:  in
        in
        in
        in
        in
        in ; jmp header
        in
        in
";

/// The flush of the variant whose list manager drops that item itself: straight to the
/// next header (the jump's two delay slots idle).
const NO_FLUSH: &str = "flush:  jmp header
        nop
        nop
";

/// The match program, with the flush (`flush`, as shipped) or without it (the list
/// manager then drops the item past a match: [`super::list_manager::Feed::flush`]).
pub fn match_program_for(flush: bool) -> Result<Program, AsmError> {
    if flush {
        return match_program();
    }
    assert!(SOURCE.contains(FLUSH), "match.mu's flush changed");
    assemble("match-no-flush.mu", &SOURCE.replace(FLUSH, NO_FLUSH))
}

/// A list item's nid or pid that matches any source.
pub const ANY: u16 = 0xffff;

/// List item flags (bits 32-47 of word 2).
pub mod flags {
    pub const VALID: u16 = 0x01;
    pub const PUT: u16 = 0x02;
    pub const GET: u16 = 0x04;
    pub const USE_REMOTE_OFFSET: u16 = 0x08;
    pub const USE_MAX_SIZE: u16 = 0x10;
    pub const TRUNCATE: u16 = 0x20;
    /// The list manager's end-of-list sentinel (choice: the paper's "end list"
    /// command travels as an item with this flag and every match bit ignored).
    pub const END: u16 = 0x40;
}

/// Output words of the program.
pub const OUT_FAIL: u64 = 0;
pub const OUT_MATCH: u64 = 1;
pub const OUT_NO_MATCH: u64 = 2;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Op {
    #[default]
    Put,
    Get,
}

/// An incoming message header (8 words on the FIFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub match_bits: u64,
    pub src_nid: u16,
    pub src_pid: u16,
    pub op: Op,
    pub length: u64,
    pub remote_offset: u64,
    pub hdr_data: u64,
}

impl Header {
    pub fn words(&self) -> [u64; 8] {
        let op: u64 = match self.op {
            Op::Put => 1,
            Op::Get => 2,
        };
        [
            self.match_bits,
            u64::from(self.src_pid) | (op << 32),
            self.length,
            self.remote_offset,
            self.hdr_data,
            0,
            0,
            u64::from(self.src_nid),
        ]
    }
}

/// A 64-byte match entry with its memory descriptor (8 words on the FIFO).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListItem {
    pub match_bits: u64,
    pub ignore_bits: u64,
    pub nid: u16,
    pub pid: u16,
    pub flags: u16,
    pub threshold: u16,
    pub md_length: u64,
    pub local_offset: u64,
    pub max_size: u64,
}

impl ListItem {
    pub fn words(&self) -> [u64; 8] {
        let w2 = u64::from(self.nid)
            | (u64::from(self.pid) << 16)
            | (u64::from(self.flags) << 32)
            | (u64::from(self.threshold) << 48);
        [
            self.match_bits,
            self.ignore_bits,
            w2,
            self.md_length,
            self.local_offset,
            self.max_size,
            0,
            0,
        ]
    }

    /// The end-of-list sentinel.
    pub fn end() -> Self {
        ListItem {
            ignore_bits: u64::MAX,
            flags: flags::END,
            ..ListItem::default()
        }
    }

    /// An MPI-style receive: any offset rules off, threshold 1, puts only.
    pub fn mpi(match_bits: u64, nid: u16, pid: u16, md_length: u64) -> Self {
        ListItem {
            match_bits,
            nid,
            pid,
            flags: flags::VALID | flags::PUT,
            threshold: 1,
            md_length,
            ..ListItem::default()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Match {
        index: usize,
        offset: u64,
        length: u64,
    },
    NoMatch,
}

/// Figure 1 of the paper over this layout. Ops other than put need "respond to gets"
/// (the layout has only the two); the remaining length wraps as in the C code.
pub fn reference(h: &Header, items: &[ListItem]) -> Outcome {
    items
        .iter()
        .enumerate()
        .take_while(|(_, it)| it.flags & flags::END == 0)
        .find_map(|(index, it)| {
            reference_item(h, it).map(|(offset, length)| Outcome::Match {
                index,
                offset,
                length,
            })
        })
        .unwrap_or(Outcome::NoMatch)
}

fn reference_item(h: &Header, it: &ListItem) -> Option<(u64, u64)> {
    let has = |f: u16| it.flags & f != 0;
    let source_ok = |want: u16, got: u16| want == ANY || want == got;
    let op_ok = match h.op {
        Op::Put => has(flags::PUT),
        Op::Get => has(flags::GET),
    };
    if (it.match_bits ^ h.match_bits) & !it.ignore_bits != 0
        || !source_ok(it.nid, h.src_nid)
        || !source_ok(it.pid, h.src_pid)
        || !has(flags::VALID)
        || it.threshold == 0
        || !op_ok
    {
        return None;
    }
    let offset = if has(flags::USE_REMOTE_OFFSET) {
        h.remote_offset.min(it.md_length)
    } else {
        it.local_offset
    };
    let remain = it.md_length.wrapping_sub(offset);
    if has(flags::USE_MAX_SIZE) && !has(flags::TRUNCATE) && remain < it.max_size {
        return None;
    }
    if h.length <= remain {
        Some((offset, h.length))
    } else if has(flags::TRUNCATE) {
        Some((offset, remain))
    } else {
        None
    }
}

/// One header matched by the unit, with the cycle-level record of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRun {
    pub outcome: Outcome,
    /// Items the program reported as failed, in order.
    pub failed: usize,
    /// From the first cycle after boot to the last word's W stage.
    pub cycles: u64,
    /// Cycle (from the same origin) of every FIFO pop.
    pub pops: Vec<u64>,
    /// Output words with their cycles (same origin).
    pub output: Vec<OutWord>,
}

/// How the harness delivers the words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// All words wait in the FIFO before the header starts.
    Preloaded,
    /// One word per cycle, as the list manager streams them.
    Streamed,
}

/// What the list manager sends for one header: the header, the items up to the match,
/// one item past it (the next item or the sentinel), or all items and the sentinel.
pub fn list_manager_words(h: &Header, items: &[ListItem]) -> Vec<u64> {
    let sent = match reference(h, items) {
        Outcome::Match { index, .. } => index + 1,
        Outcome::NoMatch => items.len(),
    };
    let mut list: Vec<ListItem> = items[..sent].to_vec();
    list.push(items.get(sent).copied().unwrap_or_else(ListItem::end));
    h.words()
        .into_iter()
        .chain(list.iter().flat_map(ListItem::words))
        .collect()
}

/// The most cycles the unit may take over one header (or, with the list manager, one
/// stream of them) before the run is an error: a program that loops forever ends there.
pub const CYCLE_LIMIT: u64 = 1_000_000;

/// Boots the unit on `program`, then matches one header against `items`.
pub fn run_match(
    program: &[Instr],
    h: &Header,
    items: &[ListItem],
    delivery: Delivery,
) -> Result<MatchRun, RunError> {
    let mut unit = MatchUnit::new(program.to_vec());
    unit.run_until_idle(CYCLE_LIMIT)?;
    let origin = unit.cycle();
    let pops_before = unit.pops().len();
    let out_before = unit.output().len();
    let words = list_manager_words(h, items);
    match delivery {
        Delivery::Preloaded => unit.push_input(words),
        Delivery::Streamed => unit.stream_input(words),
    }
    let cycles = unit.run_until_idle(CYCLE_LIMIT)?;
    let (output, pops) = since(&unit, out_before, pops_before, origin);
    let reports = read_reports(&output);
    Ok(MatchRun {
        outcome: reports.outcome.unwrap_or(Outcome::NoMatch),
        failed: reports.failed,
        cycles,
        pops,
        output,
    })
}

/// What the list manager has learnt from the output FIFO so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Reports {
    pub failed: usize,
    pub outcome: Option<Outcome>,
}

/// Reads the output words: a fail per item, then 1, offset, length or a no-match.
pub(super) fn read_reports(out: &[OutWord]) -> Reports {
    let mut r = Reports::default();
    let mut i = 0;
    while let Some(w) = out.get(i) {
        match w.value {
            OUT_FAIL => r.failed += 1,
            OUT_MATCH => {
                if let (Some(offset), Some(length)) = (out.get(i + 1), out.get(i + 2)) {
                    r.outcome = Some(Outcome::Match {
                        index: r.failed,
                        offset: offset.value,
                        length: length.value,
                    });
                }
                return r;
            }
            OUT_NO_MATCH => {
                r.outcome = Some(Outcome::NoMatch);
                return r;
            }
            _ => {}
        }
        i += 1;
    }
    r
}

/// The output words and FIFO pops since `out_before` and `pops_before`, their cycles
/// counted from `origin`.
pub(super) fn since(
    unit: &MatchUnit,
    out_before: usize,
    pops_before: usize,
    origin: u64,
) -> (Vec<OutWord>, Vec<u64>) {
    let output = unit.output()[out_before..]
        .iter()
        .map(|o| OutWord {
            cycle: o.cycle - origin,
            value: o.value,
        })
        .collect();
    let pops = unit.pops()[pops_before..]
        .iter()
        .map(|c| c - origin)
        .collect();
    (output, pops)
}
