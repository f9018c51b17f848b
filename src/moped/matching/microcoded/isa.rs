//! The wide instruction word of the match unit: one slot per unit (paper, section 4.2 and
//! Figure 4). The model keeps the word decoded; [`Instr::validate`] checks what a field
//! of the real encoding could not hold, and `Display` prints the assembler's text format.
//!
//! Register counts and widths are the paper's (section 4.2.1): 16 ALU and 16 ternary
//! registers of 64 bits, register 0 constant (0 for the ALU, all ones for the ternary
//! file); 16 one-bit predicates, p0 constant 1, p1..p7 written by the predicate unit and
//! p8..p15 by comparisons. Which comparison section writes which predicate is a choice:
//! ALU section k writes p(8+k), ternary section k writes p(12+k), so each of the eight
//! dedicated write ports has one source.

use std::fmt;

/// Entries in each register file (paper, section 4.2.1).
pub const NUM_REGS: u8 = 16;
/// Predicate registers (paper, section 4.2.1).
pub const NUM_PREDS: u8 = 16;
/// First predicate written by ALU comparisons (choice, see the module docs).
pub const ALU_PRED_BASE: u8 = 8;
/// First predicate written by ternary comparisons (choice, see the module docs).
pub const TER_PRED_BASE: u8 = 12;
/// Microcode memory entries. The paper does not give the size; 256 words (an 8-bit
/// branch target) holds its 44-instruction program several times over.
pub const MICROCODE_WORDS: usize = 256;

/// A predicate that gates a register or FIFO write: `@pN` or `@!pN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Guard {
    pub pred: u8,
    pub negate: bool,
}

impl Guard {
    /// p0 is constant 1 (paper, section 4.2.1): the guard of an unconditional write.
    pub const ALWAYS: Guard = Guard {
        pred: 0,
        negate: false,
    };
}

/// How a comparison result lands in its predicate (paper, section 4.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    Set,
    And,
    Or,
}

/// The 32-bit immediate replaces the low or high half of operand B (section 4.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Imm {
    None,
    Lo(u32),
    Hi(u32),
}

/// One output byte of the permute: a byte of A, a byte of B, or zero (section 4.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteSel {
    A(u8),
    B(u8),
    Zero,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluOp {
    Add,
    Sub,
    And,
    Or,
    Xor,
    /// A and not B.
    Andn,
    /// Byte permute of A and B; control in `AluSlot::perm`.
    Perm,
    CmpEq,
    CmpNe,
    CmpLt,
    CmpLe,
    CmpGt,
    CmpGe,
}

impl AluOp {
    pub const ALL: [(AluOp, &'static str); 13] = [
        (AluOp::Add, "add"),
        (AluOp::Sub, "sub"),
        (AluOp::And, "and"),
        (AluOp::Or, "or"),
        (AluOp::Xor, "xor"),
        (AluOp::Andn, "andn"),
        (AluOp::Perm, "perm"),
        (AluOp::CmpEq, "cmpeq"),
        (AluOp::CmpNe, "cmpne"),
        (AluOp::CmpLt, "cmplt"),
        (AluOp::CmpLe, "cmple"),
        (AluOp::CmpGt, "cmpgt"),
        (AluOp::CmpGe, "cmpge"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(op, _)| *op == self)
            .map_or("?", |(_, n)| n)
    }

    /// Comparisons write predicates, never the ALU register file (section 4.2.2).
    pub fn is_compare(self) -> bool {
        matches!(
            self,
            AluOp::CmpEq | AluOp::CmpNe | AluOp::CmpLt | AluOp::CmpLe | AluOp::CmpGt | AluOp::CmpGe
        )
    }
}

/// SIMD control: bit k set means the operation crosses the boundary between 16-bit
/// sections k and k+1 (3 bits, section 4.2.2). 0b111 is one 64-bit operation.
pub const SIMD_64: u8 = 0b111;
pub const SIMD_32: u8 = 0b101;
pub const SIMD_16: u8 = 0b000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AluSlot {
    pub op: AluOp,
    /// Destination (ignored by comparisons); a0 makes the slot a nop.
    pub dst: u8,
    pub a: u8,
    pub b: u8,
    pub imm: Imm,
    pub simd: u8,
    /// Which sections' comparison results are written (4 bits, section 4.2.2).
    pub wr: u8,
    pub combine: Combine,
    pub guard: Guard,
    /// Permute control. The paper says the immediate doubles as part of it; 8 selectors
    /// of 5 bits need 40 bits, so the other 8 are taken (choice) from the SIMD and
    /// write-mask fields, which a permute does not use.
    pub perm: [ByteSel; 8],
}

/// Ternary unit: equality of `m0` and `m1` under `mask` (section 4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerSlot {
    /// Report inequality instead (choice: one bit of negation on the result).
    pub ne: bool,
    pub m0: u8,
    pub m1: u8,
    pub mask: u8,
    /// The mask holds "ignore" bits rather than "don't ignore" bits (footnote 1).
    pub ignore: bool,
    pub simd: u8,
    pub wr: u8,
    pub combine: Combine,
}

/// One of the predicate unit's two logic units: any boolean function of two
/// predicates, given as a truth table (bit `2*a + b` is the result), section 4.2.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PredOp {
    pub dst: u8,
    pub a: u8,
    pub b: u8,
    pub table: u8,
}

/// Named predicate functions for the text format: (name, truth table).
pub const PRED_FUNCS: [(&str, u8); 10] = [
    ("and", 0b1000),
    ("or", 0b1110),
    ("xor", 0b0110),
    ("nand", 0b0111),
    ("nor", 0b0001),
    ("xnor", 0b1001),
    ("andn", 0b0100),
    ("orn", 0b1101),
    ("mov", 0b1100),
    ("not", 0b0011),
];

/// Branch on a predicate being one or zero to an absolute address (section 4.2.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    pub pred: u8,
    pub on_one: bool,
    pub target: u16,
}

/// Input FIFO unit: pop one word into an ALU register, a ternary register, both, or
/// neither (choice: a pop with no destination drains a word). The ternary copy passes
/// through the 16-bit field permute: output section k takes input section `swz[k]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InSlot {
    pub a: Option<u8>,
    pub t: Option<u8>,
    pub swz: [u8; 4],
}

pub const SWZ_IDENTITY: [u8; 4] = [0, 1, 2, 3];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDst {
    Out,
    T(u8),
}

/// Data copy unit: an ALU register to the output FIFO or a ternary register (4.2.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopySlot {
    pub dst: CopyDst,
    pub src: u8,
    pub guard: Guard,
}

/// One wide instruction: every slot may be empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Instr {
    pub input: Option<InSlot>,
    pub alu: Option<AluSlot>,
    pub ter: Option<TerSlot>,
    pub pred: [Option<PredOp>; 2],
    pub branch: Option<Branch>,
    pub copy: Option<CopySlot>,
}

impl Instr {
    /// The whole word waits while the FIFO is empty if this is set (section 4.2.5).
    pub fn needs_input(&self) -> bool {
        self.input.is_some()
    }

    /// What the encoding could not hold, or two writes to one register in one word.
    pub fn validate(&self, program_len: usize) -> Result<(), String> {
        let reg = |r: u8, what: &str| -> Result<(), String> {
            if r < NUM_REGS {
                Ok(())
            } else {
                Err(format!("{what} register {r} out of range 0..{NUM_REGS}"))
            }
        };
        let pred = |p: u8| -> Result<(), String> {
            if p < NUM_PREDS {
                Ok(())
            } else {
                Err(format!("predicate p{p} out of range p0..p15"))
            }
        };
        let mut a_writes = Vec::new();
        let mut t_writes = Vec::new();
        if let Some(i) = &self.input {
            if let Some(r) = i.a {
                reg(r, "ALU")?;
                a_writes.push(r);
            }
            if let Some(r) = i.t {
                reg(r, "ternary")?;
                t_writes.push(r);
            }
            if i.swz.iter().any(|&s| s > 3) {
                return Err("field permute selector out of range 0..4".into());
            }
        }
        if let Some(s) = &self.alu {
            reg(s.dst, "ALU")?;
            reg(s.a, "ALU")?;
            reg(s.b, "ALU")?;
            pred(s.guard.pred)?;
            if s.simd > 7 || s.wr > 15 {
                return Err("SIMD control is 3 bits and the write mask 4 bits".into());
            }
            let bad_sel = |b: &ByteSel| matches!(b, ByteSel::A(i) | ByteSel::B(i) if *i > 7);
            if s.perm.iter().any(bad_sel) {
                return Err("permute byte selector out of range 0..8".into());
            }
            if !s.op.is_compare() && s.dst != 0 {
                a_writes.push(s.dst);
            }
        }
        if let Some(s) = &self.ter {
            reg(s.m0, "ternary")?;
            reg(s.m1, "ternary")?;
            reg(s.mask, "ternary")?;
            if s.simd > 7 || s.wr > 15 {
                return Err("SIMD control is 3 bits and the write mask 4 bits".into());
            }
        }
        let mut p_writes = Vec::new();
        for op in self.pred.iter().flatten() {
            pred(op.a)?;
            pred(op.b)?;
            if !(1..=7).contains(&op.dst) {
                return Err(format!(
                    "the predicate unit writes p1..p7 only, not p{}",
                    op.dst
                ));
            }
            if op.table > 15 {
                return Err("truth table is 4 bits".into());
            }
            p_writes.push(op.dst);
        }
        if let Some(b) = &self.branch {
            pred(b.pred)?;
            if usize::from(b.target) >= program_len {
                return Err(format!(
                    "branch target {} outside the program (0..{program_len})",
                    b.target
                ));
            }
        }
        if let Some(c) = &self.copy {
            reg(c.src, "ALU")?;
            pred(c.guard.pred)?;
            if let CopyDst::T(r) = c.dst {
                reg(r, "ternary")?;
                t_writes.push(r);
            }
        }
        no_duplicates(&a_writes, "a")?;
        no_duplicates(&t_writes, "t")?;
        no_duplicates(&p_writes, "p")
    }
}

fn no_duplicates(writes: &[u8], prefix: &str) -> Result<(), String> {
    for (i, r) in writes.iter().enumerate() {
        if *r != 0 && writes[..i].contains(r) {
            return Err(format!("two units write {prefix}{r} in one instruction"));
        }
    }
    Ok(())
}

fn width_suffix(simd: u8) -> String {
    match simd {
        SIMD_64 => String::new(),
        SIMD_32 => ".32".into(),
        SIMD_16 => ".16".into(),
        other => format!(" simd={other:#05b}"),
    }
}

fn combine_word(c: Combine) -> &'static str {
    match c {
        Combine::Set => "",
        Combine::And => " and",
        Combine::Or => " or",
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Guard::ALWAYS {
            return Ok(());
        }
        let bang = if self.negate { "!" } else { "" };
        write!(f, " @{bang}p{}", self.pred)
    }
}

impl fmt::Display for ByteSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ByteSel::A(i) => write!(f, "a{i}"),
            ByteSel::B(i) => write!(f, "b{i}"),
            ByteSel::Zero => write!(f, "z"),
        }
    }
}

fn fmt_alu(s: &AluSlot) -> String {
    let w = width_suffix(s.simd);
    let (suffix, opts) = if w.starts_with('.') {
        (w, String::new())
    } else {
        (String::new(), w)
    };
    let imm = match s.imm {
        Imm::None => String::new(),
        Imm::Lo(v) => format!(" lo={v:#x}"),
        Imm::Hi(v) => format!(" hi={v:#x}"),
    };
    let name = s.op.name();
    if s.op == AluOp::Perm {
        let sels: Vec<String> = s.perm.iter().map(ToString::to_string).collect();
        return format!(
            "alu perm a{}, a{}, a{}, [{}]{}",
            s.dst,
            s.a,
            s.b,
            sels.join(" "),
            s.guard
        );
    }
    if s.op.is_compare() {
        return format!(
            "alu {name}{suffix} a{}, a{}{imm}{opts} wr={:#06b}{}",
            s.a,
            s.b,
            s.wr,
            combine_word(s.combine)
        );
    }
    format!(
        "alu {name}{suffix} a{}, a{}, a{}{imm}{opts}{}",
        s.dst, s.a, s.b, s.guard
    )
}

fn fmt_ter(s: &TerSlot) -> String {
    let w = width_suffix(s.simd);
    let (suffix, opts) = if w.starts_with('.') {
        (w, String::new())
    } else {
        (String::new(), w)
    };
    format!(
        "ter {}{suffix} t{}, t{}, t{} {}{opts} wr={:#06b}{}",
        if s.ne { "ne" } else { "eq" },
        s.m0,
        s.m1,
        s.mask,
        if s.ignore { "ign" } else { "care" },
        s.wr,
        combine_word(s.combine)
    )
}

fn fmt_pred(unit: &str, op: &PredOp) -> String {
    match PRED_FUNCS.iter().find(|(_, t)| *t == op.table) {
        Some((name, _)) => format!("{unit} {name} p{}, p{}, p{}", op.dst, op.a, op.b),
        None => format!(
            "{unit} tt p{}, p{}, p{} table={:#06b}",
            op.dst, op.a, op.b, op.table
        ),
    }
}

impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut slots = Vec::new();
        if let Some(i) = &self.input {
            let mut s = String::from("in");
            let dsts: Vec<String> =
                i.a.map(|r| format!("a{r}"))
                    .into_iter()
                    .chain(i.t.map(|r| format!("t{r}")))
                    .collect();
            if !dsts.is_empty() {
                s.push(' ');
                s.push_str(&dsts.join(", "));
            }
            if i.swz != SWZ_IDENTITY {
                let d: String = i.swz.iter().map(|x| char::from(b'0' + x)).collect();
                s.push_str(&format!(" swz={d}"));
            }
            slots.push(s);
        }
        if let Some(s) = &self.alu {
            slots.push(fmt_alu(s));
        }
        if let Some(s) = &self.ter {
            slots.push(fmt_ter(s));
        }
        for (unit, op) in ["pa", "pb"].iter().zip(&self.pred) {
            if let Some(op) = op {
                slots.push(fmt_pred(unit, op));
            }
        }
        if let Some(b) = &self.branch {
            if b.pred == 0 && b.on_one {
                slots.push(format!("jmp {}", b.target));
            } else {
                let m = if b.on_one { "br" } else { "brz" };
                slots.push(format!("{m} p{}, {}", b.pred, b.target));
            }
        }
        if let Some(c) = &self.copy {
            let dst = match c.dst {
                CopyDst::Out => "out".to_string(),
                CopyDst::T(r) => format!("t{r}"),
            };
            slots.push(format!("cp {dst}, a{}{}", c.src, c.guard));
        }
        if slots.is_empty() {
            return write!(f, "nop");
        }
        write!(f, "{}", slots.join(" ; "))
    }
}
