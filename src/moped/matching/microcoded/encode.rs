//! A bit layout of the wide instruction word. The paper gives the word's total (164
//! bits) and its major fields per unit (Figure 4), not the bit positions; this layout
//! is a choice that holds every field of [`Instr`] in 162 bits:
//!
//! | unit | bits | fields |
//! | --- | --- | --- |
//! | input FIFO | 17 | enable, ALU destination, ternary destination (register 0: none), field permute |
//! | ALU | 64 | operation (0: none), destination, A, B, 32-bit immediate, immediate half, SIMD, write mask, combine, guard |
//! | ternary | 23 | negate, M0, M1, mask, ignore, SIMD, write mask (0: unit idle), combine |
//! | predicate | 2 x 15 | destination p1..p7 (0: idle), A, B, truth table |
//! | branch | 14 | enable, predicate, on one, 8-bit target |
//! | data copy | 14 | enable, destination (0: output FIFO, else tN), source, guard |
//!
//! The permute's 40 control bits are the immediate and 8 bits of the SIMD, write-mask
//! and combine fields (section 4.2.2 says the immediate is part of the control).

use super::isa::{
    AluOp, AluSlot, Branch, ByteSel, Combine, CopyDst, CopySlot, Guard, Imm, InSlot, Instr, PredOp,
    TerSlot,
};

/// Bits of the encoded word.
pub const WORD_BITS: u32 = 162;

/// An encoded word, least significant bits in element 0.
pub type Word = [u64; 3];

struct Writer {
    word: Word,
    at: u32,
}

impl Writer {
    fn put(&mut self, width: u32, value: u64) {
        for i in 0..width {
            if value >> i & 1 == 1 {
                let bit = self.at + i;
                self.word[(bit / 64) as usize] |= 1 << (bit % 64);
            }
        }
        self.at += width;
    }
}

struct Reader {
    word: Word,
    at: u32,
}

impl Reader {
    fn get(&mut self, width: u32) -> u64 {
        let v = (0..width).fold(0, |acc, i| {
            let bit = self.at + i;
            acc | ((self.word[(bit / 64) as usize] >> (bit % 64) & 1) << i)
        });
        self.at += width;
        v
    }
    fn small(&mut self, width: u32) -> u8 {
        self.get(width) as u8
    }
}

fn combine_code(c: Combine) -> u64 {
    match c {
        Combine::Set => 0,
        Combine::And => 1,
        Combine::Or => 2,
    }
}

fn combine_of(code: u8) -> Combine {
    match code {
        1 => Combine::And,
        2 => Combine::Or,
        _ => Combine::Set,
    }
}

fn sel_code(s: ByteSel) -> u64 {
    match s {
        ByteSel::A(k) => u64::from(k & 7),
        ByteSel::B(k) => 8 + u64::from(k & 7),
        ByteSel::Zero => 16,
    }
}

fn sel_of(code: u64) -> ByteSel {
    match code {
        0..=7 => ByteSel::A(code as u8),
        8..=15 => ByteSel::B(code as u8 - 8),
        _ => ByteSel::Zero,
    }
}

fn put_guard(w: &mut Writer, g: Guard) {
    w.put(4, u64::from(g.pred));
    w.put(1, u64::from(g.negate));
}

fn get_guard(r: &mut Reader) -> Guard {
    let pred = r.small(4);
    Guard {
        pred,
        negate: r.get(1) == 1,
    }
}

fn put_alu(w: &mut Writer, s: Option<&AluSlot>) {
    let Some(s) = s else {
        w.put(64, 0);
        return;
    };
    let op = AluOp::ALL.iter().position(|(o, _)| *o == s.op).unwrap_or(0) as u64 + 1;
    w.put(4, op);
    for r in [s.dst, s.a, s.b] {
        w.put(4, u64::from(r));
    }
    if s.op == AluOp::Perm {
        let control = s
            .perm
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 5) | sel_code(b));
        w.put(32, control & 0xffff_ffff);
        w.put(2, 0);
        w.put(8, control >> 32);
        w.put(1, 0);
    } else {
        let (half, imm) = match s.imm {
            Imm::None => (0, 0),
            Imm::Lo(v) => (1, v),
            Imm::Hi(v) => (2, v),
        };
        w.put(32, u64::from(imm));
        w.put(2, half);
        w.put(3, u64::from(s.simd));
        w.put(4, u64::from(s.wr));
        w.put(2, combine_code(s.combine));
    }
    put_guard(w, s.guard);
}

fn get_alu(r: &mut Reader) -> Option<AluSlot> {
    let op = r.get(4) as usize;
    let (dst, a, b) = (r.small(4), r.small(4), r.small(4));
    let imm = r.get(32);
    let half = r.get(2);
    let (simd, wr, combine) = (r.small(3), r.small(4), r.small(2));
    let guard = get_guard(r);
    let op = AluOp::ALL.get(op.checked_sub(1)?)?.0;
    let mut slot = AluSlot {
        op,
        dst,
        a,
        b,
        imm: match half {
            1 => Imm::Lo(imm as u32),
            2 => Imm::Hi(imm as u32),
            _ => Imm::None,
        },
        simd,
        wr,
        combine: combine_of(combine),
        guard,
        perm: [ByteSel::Zero; 8],
    };
    if op == AluOp::Perm {
        let control =
            imm | (u64::from(simd) | u64::from(wr) << 3 | u64::from(combine & 1) << 7) << 32;
        for (i, s) in slot.perm.iter_mut().enumerate() {
            *s = sel_of(control >> (5 * i) & 31);
        }
        slot.imm = Imm::None;
        (slot.simd, slot.wr, slot.combine) = (7, 1, Combine::Set);
    }
    Some(slot)
}

fn put_ter(w: &mut Writer, s: Option<&TerSlot>) {
    let Some(s) = s.filter(|s| s.wr != 0) else {
        w.put(23, 0);
        return;
    };
    w.put(1, u64::from(s.ne));
    for r in [s.m0, s.m1, s.mask] {
        w.put(4, u64::from(r));
    }
    w.put(1, u64::from(s.ignore));
    w.put(3, u64::from(s.simd));
    w.put(4, u64::from(s.wr));
    w.put(2, combine_code(s.combine));
}

fn get_ter(r: &mut Reader) -> Option<TerSlot> {
    let ne = r.get(1) == 1;
    let (m0, m1, mask) = (r.small(4), r.small(4), r.small(4));
    let ignore = r.get(1) == 1;
    let (simd, wr, combine) = (r.small(3), r.small(4), r.small(2));
    (wr != 0).then_some(TerSlot {
        ne,
        m0,
        m1,
        mask,
        ignore,
        simd,
        wr,
        combine: combine_of(combine),
    })
}

/// Encodes a word that passes [`Instr::validate`]; fields are masked to their widths.
pub fn encode(i: &Instr) -> Word {
    let mut w = Writer {
        word: [0; 3],
        at: 0,
    };
    match &i.input {
        Some(s) => {
            w.put(1, 1);
            w.put(4, u64::from(s.a.unwrap_or(0)));
            w.put(4, u64::from(s.t.unwrap_or(0)));
            for &k in &s.swz {
                w.put(2, u64::from(k));
            }
        }
        None => w.put(17, 0),
    }
    put_alu(&mut w, i.alu.as_ref());
    put_ter(&mut w, i.ter.as_ref());
    for p in &i.pred {
        match p {
            Some(p) => {
                w.put(3, u64::from(p.dst));
                w.put(4, u64::from(p.a));
                w.put(4, u64::from(p.b));
                w.put(4, u64::from(p.table));
            }
            None => w.put(15, 0),
        }
    }
    match &i.branch {
        Some(b) => {
            w.put(1, 1);
            w.put(4, u64::from(b.pred));
            w.put(1, u64::from(b.on_one));
            w.put(8, u64::from(b.target));
        }
        None => w.put(14, 0),
    }
    match &i.copy {
        Some(c) => {
            w.put(1, 1);
            w.put(
                4,
                match c.dst {
                    CopyDst::Out => 0,
                    CopyDst::T(r) => u64::from(r),
                },
            );
            w.put(4, u64::from(c.src));
            put_guard(&mut w, c.guard);
        }
        None => w.put(14, 0),
    }
    w.word
}

/// Decodes a word. A FIFO destination of register 0 decodes as none (its write is
/// dropped anyway), and an idle ternary or predicate field as an empty slot.
pub fn decode(word: Word) -> Instr {
    let mut r = Reader { word, at: 0 };
    let input = (r.get(1) == 1).then(|| {
        let (a, t) = (r.small(4), r.small(4));
        InSlot {
            a: (a != 0).then_some(a),
            t: (t != 0).then_some(t),
            swz: [r.small(2), r.small(2), r.small(2), r.small(2)],
        }
    });
    if input.is_none() {
        r.get(16);
    }
    let alu = get_alu(&mut r);
    let ter = get_ter(&mut r);
    let mut pred = [None; 2];
    for p in &mut pred {
        let (dst, a, b, table) = (r.small(3), r.small(4), r.small(4), r.small(4));
        *p = (dst != 0).then_some(PredOp { dst, a, b, table });
    }
    let branch_on = r.get(1) == 1;
    let (bp, on_one, target) = (r.small(4), r.get(1) == 1, r.get(8) as u16);
    let branch = branch_on.then_some(Branch {
        pred: bp,
        on_one,
        target,
    });
    let copy_on = r.get(1) == 1;
    let (dst, src) = (r.small(4), r.small(4));
    let guard = get_guard(&mut r);
    let copy = copy_on.then_some(CopySlot {
        dst: if dst == 0 {
            CopyDst::Out
        } else {
            CopyDst::T(dst)
        },
        src,
        guard,
    });
    Instr {
        input,
        alu,
        ter,
        pred,
        branch,
        copy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::moped::matching::microcoded::program::match_program;

    #[test]
    fn the_layout_fills_162_bits() {
        let all = Instr {
            copy: Some(CopySlot {
                dst: CopyDst::T(15),
                src: 15,
                guard: Guard {
                    pred: 15,
                    negate: true,
                },
            }),
            ..Instr::default()
        };
        let w = encode(&all);
        // The copy unit's guard negation is the last field.
        assert_eq!(w[2] >> (WORD_BITS - 128 - 1), 1);
        assert_eq!(w[2] >> (WORD_BITS - 128), 0);
    }

    #[test]
    fn the_match_program_survives_encoding() {
        let p = match match_program() {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        for (pc, i) in p.instrs.iter().enumerate() {
            assert_eq!(decode(encode(i)), *i, "pc {pc}: {i}");
        }
    }
}
