//! The pipeline's timing rules, one small program each: forwarding, FIFO stalls and
//! the read-before-write FIFO port, delay slots, predicate timing, constant registers
//! and the errors the interpreter reports.

use super::asm::assemble;
use super::isa::{AluOp, AluSlot, ByteSel, Combine, Guard, Imm, Instr};
use super::pipeline::{MatchUnit, RunError};

fn unit(src: &str) -> MatchUnit {
    match assemble("t.mu", src) {
        Ok(p) => MatchUnit::new(p.instrs),
        Err(e) => panic!("{e}"),
    }
}

/// Runs to idle; every test program ends in a word that waits for input.
fn run(u: &mut MatchUnit) -> u64 {
    match u.run_until_idle(1000) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

const WAIT: &str = "\nstop: in ; jmp stop\nnop\nnop\n";

#[test]
fn forwarding_gives_the_next_word_the_result() {
    let src = format!("alu add a1, a0, a0 lo=5\nalu add a2, a1, a0{WAIT}");
    let mut u = unit(&src);
    run(&mut u);
    assert_eq!(u.a(2), 5);
    // Without the forwarding path the second word reads a1 before the first writes it.
    let mut u = unit(&src);
    u.forwarding = false;
    run(&mut u);
    assert_eq!((u.a(1), u.a(2)), (5, 0));
}

#[test]
fn a_word_two_behind_reads_the_register_file() {
    let src = format!("alu add a1, a0, a0 lo=5\nnop\nalu add a2, a1, a0{WAIT}");
    let mut u = unit(&src);
    u.forwarding = false;
    run(&mut u);
    assert_eq!(u.a(2), 5);
}

#[test]
fn three_words_take_five_cycles() {
    // Issue in cycles 0, 1, 2; the last leaves W in cycle 4.
    let mut u = unit(&format!("nop\nnop\nalu add a1, a0, a0 lo=1{WAIT}"));
    assert_eq!(run(&mut u), 5);
}

#[test]
fn an_empty_fifo_holds_the_whole_word() {
    let mut u = unit(&format!(
        "in a1 ; alu add a2, a0, a0 lo=9\nalu add a3, a1, a0{WAIT}"
    ));
    run(&mut u);
    assert_eq!((u.pc(), u.a(2)), (0, 0), "nothing issued");
    u.stream_input([0, 0, 0, 42]);
    // The stream delivers one word a cycle; the first pop takes the first word.
    run(&mut u);
    assert_eq!((u.a(1), u.a(2), u.a(3)), (0, 9, 0));
    let mut u = unit(&format!("nop\nnop\nin a1{WAIT}"));
    u.stream_input([]);
    run(&mut u);
    let cycle_before = u.cycle();
    // Feed arrives later: the word issues in the cycle its input arrives.
    for _ in 0..3 {
        let _ = u.step();
    }
    u.push_input([7]);
    run(&mut u);
    let (issued_at, _) = u.issues()[2];
    assert_eq!(issued_at, cycle_before + 3);
    assert_eq!(u.a(1), 7);
}

#[test]
fn the_fifo_port_is_read_before_write() {
    let mut u = unit(&format!(
        "alu add a1, a0, a0 lo=3\nin a1 ; alu add a2, a1, a0\nalu add a3, a1, a0{WAIT}"
    ));
    u.push_input([8]);
    run(&mut u);
    // The word that pops reads the old a1; the next reads the popped one.
    assert_eq!((u.a(1), u.a(2), u.a(3)), (8, 3, 8));
}

#[test]
fn the_ternary_copy_goes_through_the_field_permute() {
    let mut u = unit(&format!("in a1, t1 swz=3210{WAIT}"));
    u.push_input([0x4444_3333_2222_1111]);
    run(&mut u);
    assert_eq!(u.a(1), 0x4444_3333_2222_1111);
    assert_eq!(u.t(1), 0x1111_2222_3333_4444);
}

#[test]
fn a_taken_branch_runs_two_delay_slots() {
    let src = "jmp target\n\
               alu add a1, a0, a0 lo=1\n\
               alu add a2, a0, a0 lo=2\n\
               alu add a3, a0, a0 lo=3\n\
               target: alu add a4, a0, a0 lo=4\n\
               stop: in ; jmp stop\nnop\nnop\n";
    let mut u = unit(src);
    run(&mut u);
    assert_eq!((u.a(1), u.a(2), u.a(3), u.a(4)), (1, 2, 0, 4));
}

#[test]
fn a_taken_branch_cancels_branches_in_its_delay_slots() {
    let src = "jmp target\n\
               jmp other\n\
               nop\n\
               target: alu add a1, a0, a0 lo=1\n\
               stop: in ; jmp stop\nnop\nnop\n\
               other: alu add a2, a0, a0 lo=2\n\
               in ; jmp stop\nnop\nnop\n";
    let mut u = unit(src);
    run(&mut u);
    assert_eq!((u.a(1), u.a(2)), (1, 0));
}

#[test]
fn a_branch_in_the_slot_of_an_untaken_branch_acts() {
    let src = "brz p0, nowhere\n\
               jmp other\n\
               alu add a3, a0, a0 lo=3\n\
               alu add a1, a0, a0 lo=1\n\
               nowhere: in ; jmp nowhere\nnop\nnop\n\
               other: alu add a2, a0, a0 lo=2\n\
               in ; jmp nowhere\nnop\nnop\n";
    let mut u = unit(src);
    run(&mut u);
    // jmp other issues second: its slots are the next two words (a3 and a1).
    assert_eq!((u.a(1), u.a(2), u.a(3)), (1, 2, 3));
}

#[test]
fn a_branch_waits_for_a_delay_slot_that_needs_input() {
    let src = "jmp target\n\
               in a1\n\
               alu add a2, a0, a0 lo=2\n\
               alu add a3, a0, a0 lo=3\n\
               target: alu add a4, a0, a0 lo=4\n\
               stop: in ; jmp stop\nnop\nnop\n";
    let mut u = unit(src);
    run(&mut u);
    assert_eq!((u.pc(), u.a(4)), (1, 0), "held at the delay slot");
    u.push_input([5]);
    run(&mut u);
    assert_eq!((u.a(1), u.a(2), u.a(3), u.a(4)), (5, 2, 0, 4));
}

#[test]
fn a_comparison_decides_the_next_words_branch() {
    let src = "alu cmpeq a0, a0 wr=0b0001\n\
               br p8, yes\n\
               nop\n\
               nop\n\
               alu add a1, a0, a0 lo=1\n\
               yes: alu add a2, a0, a0 lo=2\n\
               stop: in ; jmp stop\nnop\nnop\n";
    let mut u = unit(src);
    run(&mut u);
    assert_eq!((u.a(1), u.a(2)), (0, 2));
}

#[test]
fn comparisons_combine_with_the_old_predicate() {
    let src = format!(
        "alu cmpeq a0, a0 wr=0b0001\n\
         alu cmpne a0, a0 wr=0b0001 or\n\
         alu cmpne a0, a0 wr=0b0010\n\
         alu cmpeq a0, a0 wr=0b0010 or\n\
         alu cmpeq a0, a0 wr=0b0100\n\
         alu cmpne a0, a0 wr=0b0100 and{WAIT}"
    );
    let mut u = unit(&src);
    run(&mut u);
    assert_eq!((u.p(8), u.p(9), u.p(10)), (true, true, false));
}

#[test]
fn the_predicate_unit_reads_the_previous_words_results() {
    let src = format!(
        "alu cmpeq a0, a0 wr=0b0001 ; ter ne t0, t0, t0 care wr=0b0001\n\
         pa and p1, p8, p12 ; pb andn p2, p8, p12\n\
         pa not p3, p2 ; alu add a1, a0, a0 lo=1 @p2\n\
         alu add a2, a0, a0 lo=2 @!p3{WAIT}"
    );
    let mut u = unit(&src);
    run(&mut u);
    assert_eq!((u.p(1), u.p(2), u.p(3)), (false, true, false));
    assert_eq!((u.a(1), u.a(2)), (1, 2));
}

#[test]
fn register_zero_and_p0_stay_constant() {
    let mut u = unit(&format!(
        "alu add a0, a0, a0 lo=5\nalu add a1, a0, a0\nin a0, t0\nalu add a2, a0, a0{WAIT}"
    ));
    u.push_input([99]);
    run(&mut u);
    assert_eq!(
        (u.a(0), u.a(1), u.a(2), u.t(0), u.p(0)),
        (0, 0, 0, u64::MAX, true)
    );
}

#[test]
fn the_copy_unit_writes_the_output_fifo_in_w() {
    let mut u = unit(&format!(
        "alu add a1, a0, a0 lo=6\ncp out, a1\ncp t2, a1 @!p0\ncp t3, a1{WAIT}"
    ));
    run(&mut u);
    let out: Vec<(u64, u64)> = u.output().iter().map(|o| (o.cycle, o.value)).collect();
    assert_eq!(out, vec![(3, 6)]);
    assert_eq!((u.t(2), u.t(3)), (0, 6));
}

fn bad_alu(dst: u8) -> Instr {
    Instr {
        alu: Some(AluSlot {
            op: AluOp::Add,
            dst,
            a: 0,
            b: 0,
            imm: Imm::None,
            simd: 7,
            wr: 1,
            combine: Combine::Set,
            guard: Guard::ALWAYS,
            perm: [ByteSel::Zero; 8],
        }),
        ..Instr::default()
    }
}

#[test]
fn an_invalid_register_names_cycle_pc_and_instruction() {
    let mut u = MatchUnit::new(vec![Instr::default(), bad_alu(20)]);
    let err = u.run_until_idle(10);
    let Err(RunError::BadInstr {
        cycle, pc, instr, ..
    }) = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*cycle, *pc), (1, 1));
    assert_eq!(instr, "alu add a20, a0, a0");
    let text = err.map_or_else(|e| e.to_string(), |_| String::new());
    assert!(
        text.contains("cycle 1, pc 1") && text.contains("ALU register 20"),
        "{text}"
    );
}

#[test]
fn running_off_the_program_or_forever_is_an_error() {
    let mut u = MatchUnit::new(vec![Instr::default()]);
    assert!(matches!(
        u.run_until_idle(10),
        Err(RunError::PcOutOfRange { pc: 1, .. })
    ));
    let mut u = unit("loop: jmp loop\nnop\nnop\n");
    assert_eq!(
        u.run_until_idle(50),
        Err(RunError::CycleLimit {
            limit: 50,
            pc: u.pc()
        })
    );
}
