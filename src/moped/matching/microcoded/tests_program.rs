//! The match program run on the interpreter: cycle counts against the paper's
//! (section 4.3) and outcomes against Figure 1.

use super::asm::assemble;
use super::isa::Instr;
use super::list_manager::{run_stream, run_with_list_manager};
use super::program::{
    flags, match_program, reference, run_match, Delivery, Header, ListItem, MatchRun, Outcome, ANY,
    SOURCE,
};

fn program() -> Vec<Instr> {
    match match_program() {
        Ok(p) => p.instrs,
        Err(e) => panic!("{e}"),
    }
}

fn header() -> Header {
    Header {
        match_bits: 0x1234_0000_0000_0042,
        src_nid: 7,
        src_pid: 3,
        length: 100,
        ..Header::default()
    }
}

/// `fails` items whose match bits differ, then one that matches, then one more.
fn list(fails: usize) -> Vec<ListItem> {
    let h = header();
    let mut items: Vec<ListItem> = (0..fails)
        .map(|i| ListItem::mpi(h.match_bits ^ (1 + i as u64), 7, 3, 4096))
        .collect();
    items.push(ListItem::mpi(h.match_bits, ANY, 3, 4096));
    items.push(ListItem::mpi(h.match_bits, 7, 3, 4096));
    items
}

fn run(prog: &[Instr], fails: usize, delivery: Delivery) -> MatchRun {
    let items = list(fails);
    match run_match(prog, &header(), &items, delivery) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    }
}

/// Cycles from the matched item's first pop to its last output word's W stage.
fn matched_item_cycles(r: &MatchRun, index: usize) -> u64 {
    let first_pop = r.pops[8 + 8 * index];
    let last_out = r.output.last().map_or(0, |o| o.cycle);
    last_out + 1 - first_pop
}

#[test]
fn first_item_match_takes_31_cycles() {
    let r = run(&program(), 0, Delivery::Preloaded);
    assert_eq!(
        r.outcome,
        Outcome::Match {
            index: 0,
            offset: 0,
            length: 100
        }
    );
    assert_eq!(r.cycles, 31);
    // Header: 9 cycles from its first pop to the first item's.
    assert_eq!(r.pops[8] - r.pops[0], 9);
    assert_eq!(matched_item_cycles(&r, 0), 14);
    // Flush: from the match report's W stage to the end.
    let reported = r.output.last().map_or(0, |o| o.cycle) + 1;
    assert_eq!(r.cycles - reported, 8);
    // Every word of the header, the item and the extra item was popped.
    assert_eq!(r.pops.len(), 24);
}

#[test]
fn each_failed_item_adds_8_cycles() {
    let prog = program();
    for fails in 0..6 {
        let r = run(&prog, fails, Delivery::Preloaded);
        assert_eq!(r.failed, fails);
        assert_eq!(r.cycles, 31 + 8 * fails as u64, "{fails} failed items");
        assert_eq!(matched_item_cycles(&r, fails), 14);
        for k in 0..fails {
            assert_eq!(r.pops[8 + 8 * (k + 1)] - r.pops[8 + 8 * k], 8);
        }
    }
}

#[test]
fn streaming_one_word_per_cycle_costs_the_same() {
    let prog = program();
    for fails in 0..4 {
        let pre = run(&prog, fails, Delivery::Preloaded);
        let streamed = run(&prog, fails, Delivery::Streamed);
        assert_eq!(streamed.outcome, pre.outcome);
        // A word delivered in a cycle can be popped in that cycle, and the program pops
        // at most one a cycle: a stream of one word a cycle never starves it.
        assert_eq!(streamed.cycles, pre.cycles);
        assert_eq!(streamed.pops, pre.pops);
    }
}

/// Overhead of the unit over ideal hardware (8 cycles for the header and 8 per item),
/// for `n` items traversed, the last matching: (end to end, per match only).
fn overheads(prog: &[Instr], n: usize) -> (f64, f64) {
    let r = run(prog, n - 1, Delivery::Preloaded);
    let ideal = 8.0 + 8.0 * n as f64;
    let per_match = matched_item_cycles(&r, n - 1) as f64 - 8.0;
    ((r.cycles as f64 - ideal) / ideal, per_match / ideal)
}

#[test]
fn overhead_over_ideal_hardware_shrinks_with_the_list() {
    let prog = program();
    let (end10, match10) = overheads(&prog, 10);
    let (end30, match30) = overheads(&prog, 30);
    // End to end: 103 against 88 cycles, 263 against 248.
    assert!((end10 - 15.0 / 88.0).abs() < 1e-12, "{end10}");
    assert!((end30 - 15.0 / 248.0).abs() < 1e-12, "{end30}");
    // The paper's accounting (section 6.1): 6 cycles per matched item only.
    assert!((match10 - 6.0 / 88.0).abs() < 1e-12, "{match10}");
    assert!((match30 - 6.0 / 248.0).abs() < 1e-12, "{match30}");
    assert!(match30 < 0.025 && end30 < end10);
}

/// The match program with a `nop` inserted before the line that starts with `at`.
fn with_nop_before(at: &str) -> Vec<Instr> {
    let changed = SOURCE.replace(at, &format!("        nop\n{at}"));
    assert_ne!(changed, SOURCE, "no line {at:?} in the program");
    match assemble("changed.mu", &changed) {
        Ok(p) => p.instrs,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn an_extra_fast_path_instruction_costs_one_cycle_per_matched_item() {
    let prog = with_nop_before("decide: pa and p3");
    for fails in 0..3 {
        let r = run(&prog, fails, Delivery::Preloaded);
        assert_eq!(r.cycles, 32 + 8 * fails as u64);
        assert_eq!(matched_item_cycles(&r, fails), 15);
    }
}

#[test]
fn an_extra_shared_instruction_costs_one_cycle_per_failed_item() {
    let prog = with_nop_before("item2:  in a6");
    for fails in 0..3 {
        let r = run(&prog, fails, Delivery::Preloaded);
        assert_eq!(r.failed, fails);
        assert_eq!(r.cycles, 32 + 9 * fails as u64);
    }
}

/// A small deterministic generator (xorshift64*), so the cases are the same each run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

fn random_item(g: &mut Gen, h: &Header) -> ListItem {
    let all = flags::VALID
        | flags::PUT
        | flags::GET
        | flags::USE_REMOTE_OFFSET
        | flags::USE_MAX_SIZE
        | flags::TRUNCATE;
    let mut f = g.next() as u16 & all;
    if g.below(3) > 0 {
        f |= flags::VALID | flags::PUT | flags::GET;
    }
    ListItem {
        match_bits: h.match_bits ^ g.pick(&[0, 0, 0, 1, 0x100, 1 << 63]),
        ignore_bits: g.pick(&[0, 0, 1, 0xff, u64::MAX]),
        nid: g.pick(&[h.src_nid, h.src_nid, ANY, 9]),
        pid: g.pick(&[h.src_pid, h.src_pid, ANY, 4]),
        flags: f,
        threshold: g.pick(&[0, 1, 1, 5]),
        md_length: g.below(300),
        local_offset: g.below(200),
        max_size: g.below(200),
    }
}

#[test]
fn the_program_agrees_with_figure_1_on_random_lists() {
    let prog = program();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let (mut matches, mut slow_matches, mut ends) = (0, 0, 0);
    for case in 0..400 {
        let h = Header {
            match_bits: g.next(),
            src_nid: g.below(8) as u16,
            src_pid: g.below(8) as u16,
            op: g.pick(&[super::program::Op::Put, super::program::Op::Get]),
            length: g.below(300),
            remote_offset: g.below(300),
            hdr_data: g.next(),
        };
        let items: Vec<ListItem> = (0..g.below(6)).map(|_| random_item(&mut g, &h)).collect();
        let r = match run_match(&prog, &h, &items, Delivery::Streamed) {
            Ok(r) => r,
            Err(e) => panic!("case {case}: {e}"),
        };
        let want = reference(&h, &items);
        assert_eq!(r.outcome, want, "case {case}: {h:?} {items:?}");
        // The list manager, reading the reports, sends the same words at the same time.
        match run_with_list_manager(&prog, &h, &items) {
            Ok((lm, _)) => assert_eq!(lm, r, "case {case}"),
            Err(e) => panic!("case {case}: {e}"),
        }
        let expect_failed = match want {
            Outcome::Match { index, .. } => {
                matches += 1;
                let slow = flags::USE_REMOTE_OFFSET | flags::USE_MAX_SIZE;
                slow_matches += usize::from(items[index].flags & slow != 0);
                index
            }
            Outcome::NoMatch => {
                ends += 1;
                items.len()
            }
        };
        assert_eq!(r.failed, expect_failed, "case {case}");
    }
    // Both paths and the end of the list were exercised.
    assert!(
        matches > 60 && slow_matches > 20 && ends > 60,
        "{matches} {slow_matches} {ends}"
    );
}

#[test]
fn end_of_list_reports_no_match() {
    let h = header();
    let items = vec![ListItem::mpi(!h.match_bits, 7, 3, 4096)];
    let r = match run_match(&program(), &h, &items, Delivery::Preloaded) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(r.outcome, Outcome::NoMatch);
    assert_eq!(r.failed, 1);
}

#[test]
fn later_failures_and_the_slow_path_cost_more() {
    let prog = program();
    let h = header();
    let good = ListItem::mpi(h.match_bits, 7, 3, 4096);
    let wrong_source = ListItem { nid: 9, ..good };
    let remote = ListItem {
        flags: good.flags | flags::USE_REMOTE_OFFSET,
        ..good
    };
    let cost = |items: &[ListItem]| match run_match(&prog, &h, items, Delivery::Preloaded) {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    // A source mismatch is found after all 8 pops: 12 cycles for that item.
    let r = cost(&[wrong_source, good, good]);
    assert_eq!((r.failed, r.pops[16] - r.pops[8]), (1, 12));
    assert_eq!(r.cycles, 31 + 12);
    // A remote-offset item matches through the slow path: 23 cycles to its report.
    let r = cost(&[remote, good]);
    assert_eq!(
        r.outcome,
        Outcome::Match {
            index: 0,
            offset: 0,
            length: 100
        }
    );
    assert_eq!(matched_item_cycles(&r, 0), 23);
    assert_eq!(r.cycles, 9 + 23 + 8);
    // A wrong-flags item fails through the slow path: 21 words, then the next item.
    let invalid = ListItem { flags: 0, ..good };
    let r = cost(&[invalid, good]);
    assert_eq!((r.failed, r.pops[16] - r.pops[8]), (1, 21));
}

#[test]
fn the_list_manager_sends_one_item_past_the_match_and_costs_the_same() {
    let prog = program();
    for fails in 0..5 {
        let items = list(fails);
        let (r, sent) = match run_with_list_manager(&prog, &header(), &items) {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        };
        // Header, the failed items, the match, one item more.
        assert_eq!(sent, 8 * (fails + 3));
        assert_eq!(r, run(&prog, fails, Delivery::Streamed));
        assert_eq!(r.cycles, 31 + 8 * fails as u64);
    }
    // No match: every item and the sentinel.
    let h = header();
    let items = vec![ListItem::mpi(!h.match_bits, 7, 3, 64); 3];
    let (r, sent) = match run_with_list_manager(&prog, &h, &items) {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    };
    assert_eq!((r.outcome, r.failed, sent), (Outcome::NoMatch, 3, 8 * 5));
}

#[test]
fn a_stream_gives_each_search_its_own_outcome_and_tiles_the_time() {
    let prog = program();
    let h = header();
    let nothing = vec![ListItem::mpi(!h.match_bits, 7, 3, 64); 2];
    let lists = [list(0), nothing, list(3)];
    let requests: Vec<(Header, &[ListItem])> = lists.iter().map(|l| (h, l.as_slice())).collect();
    let stream = match run_stream(&prog, &requests) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let mut alone_total = 0;
    for (s, items) in stream.searches.iter().zip(&lists) {
        let (alone, sent) = match run_with_list_manager(&prog, &h, items) {
            Ok(x) => x,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            (s.run.outcome, s.run.failed, s.sent),
            (alone.outcome, alone.failed, sent)
        );
        alone_total += alone.cycles;
    }
    let tiles: u64 = stream.searches.iter().map(|s| s.end - s.start).sum();
    assert_eq!(tiles, stream.cycles);
    assert_eq!(stream.searches[0].start, 0);
    // Back to back, each search after the first starts while the one before drains.
    assert!(
        stream.cycles < alone_total,
        "{} vs {alone_total}",
        stream.cycles
    );
}
