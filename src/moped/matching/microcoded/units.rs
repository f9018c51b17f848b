//! The functional units as pure functions of their operands (paper, section 4.2): the
//! SIMD ALU with its comparisons and byte permute, the ternary unit and its 16-bit field
//! permute, and the predicate unit's logic. The pipeline decides when they run.

use super::isa::{AluOp, ByteSel, Combine, Imm, ALU_PRED_BASE};

/// Bits of the 16-bit sections `lo..=hi`.
fn span_mask(lo: usize, hi: usize) -> u64 {
    let bits = 16 * (hi - lo + 1);
    let ones = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    ones << (16 * lo)
}

/// The groups of sections the SIMD bits join: (first section, last section) each.
/// Bit k of `simd` joins section k to section k+1 (section 4.2.2).
pub fn simd_groups(simd: u8) -> Vec<(usize, usize)> {
    let mut groups = Vec::new();
    let mut start = 0;
    for k in 0..3 {
        if simd & (1 << k) == 0 {
            groups.push((start, k));
            start = k + 1;
        }
    }
    groups.push((start, 3));
    groups
}

/// Operand B after the immediate replaced one half (section 4.2.2).
pub fn with_imm(b: u64, imm: Imm) -> u64 {
    match imm {
        Imm::None => b,
        Imm::Lo(v) => (b & !0xffff_ffff) | u64::from(v),
        Imm::Hi(v) => (b & 0xffff_ffff) | (u64::from(v) << 32),
    }
}

/// Add or subtract with the carry chain cut at the boundaries the SIMD bits leave open.
fn arith(a: u64, b: u64, simd: u8, sub: bool) -> u64 {
    simd_groups(simd)
        .into_iter()
        .map(|(lo, hi)| {
            let m = span_mask(lo, hi);
            let (x, y) = ((a & m) >> (16 * lo), (b & m) >> (16 * lo));
            let r = if sub {
                x.wrapping_sub(y)
            } else {
                x.wrapping_add(y)
            };
            (r << (16 * lo)) & m
        })
        .fold(0, |acc, part| acc | part)
}

/// The value an ALU operation writes; `None` for comparisons.
pub fn alu_value(op: AluOp, a: u64, b: u64, simd: u8, perm: &[ByteSel; 8]) -> Option<u64> {
    Some(match op {
        AluOp::Add => arith(a, b, simd, false),
        AluOp::Sub => arith(a, b, simd, true),
        AluOp::And => a & b,
        AluOp::Or => a | b,
        AluOp::Xor => a ^ b,
        AluOp::Andn => a & !b,
        AluOp::Perm => permute(a, b, perm),
        _ => return None,
    })
}

/// Each output byte from any byte of A or B, or zero (section 4.2.2).
pub fn permute(a: u64, b: u64, sel: &[ByteSel; 8]) -> u64 {
    sel.iter().enumerate().fold(0, |acc, (i, s)| {
        let byte = match *s {
            ByteSel::A(k) => (a >> (8 * u32::from(k & 7))) & 0xff,
            ByteSel::B(k) => (b >> (8 * u32::from(k & 7))) & 0xff,
            ByteSel::Zero => 0,
        };
        acc | (byte << (8 * i))
    })
}

/// One result per section: a joined group gives all its sections the group's result.
fn per_section(simd: u8, mut f: impl FnMut(u64, usize) -> bool) -> [bool; 4] {
    let mut out = [false; 4];
    for (lo, hi) in simd_groups(simd) {
        let r = f(span_mask(lo, hi), lo);
        out[lo..=hi].iter_mut().for_each(|o| *o = r);
    }
    out
}

/// Unsigned SIMD comparison: one result per 16-bit section.
pub fn alu_compare(op: AluOp, a: u64, b: u64, simd: u8) -> [bool; 4] {
    per_section(simd, |m, lo| {
        let (x, y) = ((a & m) >> (16 * lo), (b & m) >> (16 * lo));
        match op {
            AluOp::CmpEq => x == y,
            AluOp::CmpNe => x != y,
            AluOp::CmpLt => x < y,
            AluOp::CmpLe => x <= y,
            AluOp::CmpGt => x > y,
            AluOp::CmpGe => x >= y,
            _ => false,
        }
    })
}

/// Equality of `m0` and `m1` on the bits the mask selects (section 4.2.3); with
/// `ignore`, the mask names the bits to leave out instead.
pub fn ternary(m0: u64, m1: u64, mask: u64, ignore: bool, simd: u8) -> [bool; 4] {
    let care = if ignore { !mask } else { mask };
    per_section(simd, |m, _| (m0 ^ m1) & care & m == 0)
}

/// The 16-bit field permute on the FIFO's way into the ternary file (section 4.2.3):
/// output section k is input section `swz[k]`.
pub fn swizzle(word: u64, swz: &[u8; 4]) -> u64 {
    swz.iter().enumerate().fold(0, |acc, (k, &s)| {
        let field = (word >> (16 * u32::from(s & 3))) & 0xffff;
        acc | (field << (16 * k))
    })
}

/// Any boolean function of two predicates, as a 4-entry truth table (section 4.2.4).
pub fn pred_logic(table: u8, a: bool, b: bool) -> bool {
    let idx = (u8::from(a) << 1) | u8::from(b);
    table & (1 << idx) != 0
}

/// A comparison result landing in a predicate (section 4.2.2).
pub fn combine(mode: Combine, old: bool, new: bool) -> bool {
    match mode {
        Combine::Set => new,
        Combine::And => old && new,
        Combine::Or => old || new,
    }
}

/// Predicate writes of a comparison: (register, result) for the sections in `wr`.
pub fn section_writes(base: u8, results: [bool; 4], wr: u8) -> Vec<(u8, bool)> {
    (0..4u8)
        .filter(|k| wr & (1 << k) != 0)
        .map(|k| (base + k, results[usize::from(k)]))
        .collect()
}

/// For tests and docs: the predicate an ALU section writes.
pub fn alu_pred(section: u8) -> u8 {
    ALU_PRED_BASE + section
}

#[cfg(test)]
mod tests {
    use super::super::isa::{SIMD_16, SIMD_32, SIMD_64};
    use super::*;

    const NO_PERM: [ByteSel; 8] = [ByteSel::Zero; 8];

    #[test]
    fn simd_add_cuts_the_carry_at_open_boundaries() {
        let a = 0x0001_ffff_0001_ffff;
        let b = 0x0000_0001_0000_0001;
        assert_eq!(
            alu_value(AluOp::Add, a, b, SIMD_64, &NO_PERM),
            Some(0x0002_0000_0002_0000)
        );
        assert_eq!(
            alu_value(AluOp::Add, a, b, SIMD_16, &NO_PERM),
            Some(0x0001_0000_0001_0000)
        );
        assert_eq!(
            alu_value(AluOp::Add, a, b, SIMD_32, &NO_PERM),
            Some(0x0002_0000_0002_0000)
        );
        assert_eq!(
            alu_value(AluOp::Sub, 0, 1, SIMD_16, &NO_PERM),
            Some(0x0000_0000_0000_ffff)
        );
        assert_eq!(
            alu_value(AluOp::Sub, 0, 1, SIMD_64, &NO_PERM),
            Some(u64::MAX)
        );
    }

    #[test]
    fn logic_ops_and_compares_write_no_value() {
        assert_eq!(
            alu_value(AluOp::Andn, 0b1100, 0b1010, 0, &NO_PERM),
            Some(0b0100)
        );
        assert_eq!(
            alu_value(AluOp::Xor, 0b1100, 0b1010, 0, &NO_PERM),
            Some(0b0110)
        );
        assert_eq!(alu_value(AluOp::CmpEq, 1, 1, 0, &NO_PERM), None);
    }

    #[test]
    fn compares_give_one_result_per_section_or_per_group() {
        let a = 0x0005_0003_0000_0009;
        let b = 0x0005_0004_0000_0001;
        assert_eq!(
            alu_compare(AluOp::CmpEq, a, b, SIMD_16),
            [false, true, false, true]
        );
        assert!(alu_compare(AluOp::CmpLt, a, b, SIMD_16)[2]);
        // As one 64-bit number a < b, because section 2 decides before section 0.
        assert_eq!(alu_compare(AluOp::CmpLt, a, b, SIMD_64), [true; 4]);
        assert_eq!(
            alu_compare(AluOp::CmpGe, a, b, SIMD_32),
            [true, true, false, false]
        );
    }

    #[test]
    fn immediate_replaces_one_half_of_b() {
        let b = 0x1111_2222_3333_4444;
        assert_eq!(with_imm(b, Imm::Lo(0xabcd)), 0x1111_2222_0000_abcd);
        assert_eq!(with_imm(b, Imm::Hi(7)), 0x0000_0007_3333_4444);
        assert_eq!(with_imm(b, Imm::None), b);
    }

    #[test]
    fn permute_takes_bytes_from_either_input_or_zero() {
        let a = 0x8877_6655_4433_2211;
        let b = 0xffee_ddcc_bbaa_9988;
        let sel = [
            ByteSel::A(0),
            ByteSel::A(1),
            ByteSel::B(7),
            ByteSel::Zero,
            ByteSel::B(0),
            ByteSel::A(7),
            ByteSel::Zero,
            ByteSel::Zero,
        ];
        assert_eq!(permute(a, b, &sel), 0x0000_8888_00ff_2211);
    }

    #[test]
    fn ternary_compares_under_care_or_ignore_mask() {
        let m0 = 0b1010_1111;
        let m1 = 0b1010_0000;
        assert_eq!(ternary(m0, m1, 0xf0, false, SIMD_64), [true; 4]);
        assert_eq!(ternary(m0, m1, 0xff, false, SIMD_64), [false; 4]);
        assert_eq!(ternary(m0, m1, 0x0f, true, SIMD_64), [true; 4]);
        // Per section: only section 0 differs.
        assert_eq!(
            ternary(m0, m1, u64::MAX, false, SIMD_16),
            [false, true, true, true]
        );
        // !a && b && !c on flags a=bit0, b=bit1, c=bit2: pattern 0b010 under mask 0b111.
        assert!(ternary(0b010, 0b010, 0b111, false, SIMD_16)[0]);
        assert!(!ternary(0b011, 0b010, 0b111, false, SIMD_16)[0]);
    }

    #[test]
    fn field_permute_moves_16_bit_sections() {
        let w = 0x4444_3333_2222_1111;
        assert_eq!(swizzle(w, &[0, 1, 2, 3]), w);
        assert_eq!(swizzle(w, &[2, 2, 2, 2]), 0x3333_3333_3333_3333);
        assert_eq!(swizzle(w, &[3, 2, 1, 0]), 0x1111_2222_3333_4444);
    }

    #[test]
    fn predicate_logic_follows_the_truth_table() {
        let and = 0b1000;
        let andn = 0b0100;
        assert!(pred_logic(and, true, true));
        assert!(!pred_logic(and, true, false));
        assert!(pred_logic(andn, true, false));
        assert!(!pred_logic(andn, true, true));
        assert!(combine(Combine::Or, true, false));
        assert!(!combine(Combine::And, true, false));
        assert!(!combine(Combine::Set, true, false));
    }

    #[test]
    fn section_writes_follow_the_mask() {
        let w = section_writes(alu_pred(0), [true, false, true, false], 0b0101);
        assert_eq!(w, vec![(8, true), (10, true)]);
    }
}
