//! The assembler: errors at file:line:col naming what was expected, and the printed
//! form of every instruction assembling back to itself.

use super::asm::{assemble, AsmError};
use super::isa::{AluOp, CopyDst, Imm, SIMD_16};
use super::program::match_program;

fn error(src: &str) -> AsmError {
    match assemble("bad.mu", src) {
        Ok(p) => panic!("assembled: {p:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_missing_operand_is_reported_at_its_column() {
    let e = error("in a1\nalu add a1, a2\n");
    assert_eq!(
        e.to_string(),
        "bad.mu:2:15: expected `,`, found end of line"
    );
}

#[test]
fn errors_name_what_was_expected() {
    let cases = [
        ("fpu add a1, a2, a3", 1, "expected a unit"),
        ("alu mul a1, a2, a3", 5, "expected an ALU operation"),
        (
            "alu add a16, a2, a3",
            9,
            "expected ALU register a0..a15, found `a16`",
        ),
        ("alu add.8 a1, a2, a3", 5, "expected width .16, .32 or .64"),
        ("ter eq t1, t2, a3", 16, "expected ternary register t0..t15"),
        (
            "alu add a1, a2, a3 wr=1",
            20,
            "expected one of lo, hi, simd, @pN, found `wr`",
        ),
        (
            "alu add a1, a2, a3 lo=0x100000000",
            23,
            "expected a 32-bit immediate",
        ),
        ("in a1 swz=0124", 11, "expected four digits 0..3"),
        (
            "pa and p8, p1, p2",
            1,
            "the predicate unit writes p1..p7 only",
        ),
        ("in a1 ; in a2", 9, "unit `in` already has a slot"),
        (
            "brz p1, nowhere",
            9,
            "expected a defined label, found `nowhere`",
        ),
        (
            "alu perm a1, a2, a3, [a0 a1 c2 z z z z z]",
            29,
            "expected a byte selector",
        ),
        ("cp a1, a2", 4, "expected `out` or a ternary register"),
        ("in a1 $", 7, "expected a word, a number or one of"),
        (
            "alu add a1, a0, a0 lo=0x1_0000_0000_0000_0000",
            23,
            "fits 64 bits",
        ),
        ("alu add a1, a0, a0 _lo=1", 20, "expected one of lo, hi"),
        ("in a1 ; alu add a1, a0, a0", 1, "two units write a1"),
    ];
    for (src, col, want) in cases {
        let e = error(src);
        assert_eq!((e.line, e.col), (1, col), "{src}: {e}");
        assert!(e.message.contains(want), "{src}: {e}");
    }
}

#[test]
fn labels_comments_and_blank_lines() {
    let src = "# comment\n\nstart:\n  nop   # trailing\nagain: jmp start\nnop\nnop\n";
    let p = match assemble("ok.mu", src) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(p.instrs.len(), 4);
    assert_eq!((p.label("start"), p.label("again")), (Some(0), Some(1)));
    assert_eq!(p.instrs[1].branch.map(|b| b.target), Some(0));
    let dup = error("a: nop\na: nop\n");
    assert_eq!((dup.line, dup.col), (2, 1));
}

#[test]
fn slots_decode_to_the_fields_they_name() {
    let src = "in a6, t6 swz=2222 ; alu cmpeq.16 a6, a1 hi=1 wr=0b1011 or ; cp t4, a10 @!p10";
    let p = match assemble("ok.mu", src) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let i = p.instrs[0];
    let input = i.input.unwrap_or_else(|| panic!("no input slot"));
    assert_eq!((input.a, input.t, input.swz), (Some(6), Some(6), [2; 4]));
    let alu = i.alu.unwrap_or_else(|| panic!("no alu slot"));
    assert_eq!(
        (alu.op, alu.simd, alu.wr, alu.imm),
        (AluOp::CmpEq, SIMD_16, 0b1011, Imm::Hi(1))
    );
    let cp = i.copy.unwrap_or_else(|| panic!("no copy slot"));
    assert_eq!(
        (cp.dst, cp.src, cp.guard.pred, cp.guard.negate),
        (CopyDst::T(4), 10, 10, true)
    );
}

#[test]
fn every_match_program_instruction_prints_and_assembles_back() {
    let p = match match_program() {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    // Branch targets print as addresses; pad the program so they resolve.
    let printed: Vec<String> = p.instrs.iter().map(ToString::to_string).collect();
    let again = match assemble("printed.mu", &printed.join("\n")) {
        Ok(q) => q,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(again.instrs, p.instrs);
}
