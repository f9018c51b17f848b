//! The assembler: one line of text per wide instruction, one `;`-separated slot per
//! unit, parsed with nom. The format is this model's (the paper shows no syntax):
//!
//! ```text
//! label: in a7 ; alu cmpeq.16 a6, a1 wr=0b1011 ; ter eq.16 t6, t3, t4 care wr=0b1111 ; brz p12, fail
//! ```
//!
//! Slots, in any order, each unit at most once:
//! - `in [aN][, tN] [swz=DDDD]`: pop the input FIFO (the word waits while it is empty);
//!   `swz` lists the source section of ternary sections 0..3 (`0123` is the identity);
//!   no destination drains the word.
//! - `alu OP[.16|.32|.64] aD, aA, aB [lo=N|hi=N] [simd=N] [@pN|@!pN]` for add, sub,
//!   and, or, xor, andn; `alu perm aD, aA, aB, [S0 .. S7]` with selectors `aK`, `bK`
//!   or `z`, byte 0 first; `alu cmpXX[.W] aA, aB [lo=N|hi=N] [wr=N] [set|and|or]` for
//!   eq, ne, lt, le, gt, ge (unsigned); section k of a comparison writes p(8+k).
//! - `ter eq|ne[.W] tM0, tM1, tMASK [care|ign] [wr=N] [set|and|or]`: section k
//!   writes p(12+k).
//! - `pa F pD, pA[, pB]` and `pb ...`: the predicate unit's two logic units, F one of
//!   and, or, xor, nand, nor, xnor, andn, orn, mov, not; or `tt pD, pA, pB table=N`.
//! - `br pN, T`, `brz pN, T`, `jmp T`: branch on one, on zero, always; T a label or
//!   an address. Two delay slots follow.
//! - `cp out, aN [@pN]` or `cp tD, aN [@pN]`: the data copy unit.
//! - `nop`: an empty slot (a line with only `nop` is an empty instruction).
//!
//! Numbers are decimal, `0x` hex or `0b` binary; in masks (`wr`, `simd`) bit k is
//! section (or boundary) k. `#` starts a comment; `name:` alone labels the next line.

use std::collections::BTreeMap;

use nom::{
    branch::alt,
    bytes::complete::{tag, take_while, take_while1},
    character::complete::one_of,
    combinator::{map, recognize},
    sequence::{pair, preceded},
    IResult,
};
use thiserror::Error;

use super::isa::{
    AluOp, AluSlot, Branch, ByteSel, Combine, CopyDst, CopySlot, Guard, Imm, InSlot, Instr, PredOp,
    TerSlot, MICROCODE_WORDS, NUM_PREDS, NUM_REGS, PRED_FUNCS, SIMD_16, SIMD_32, SIMD_64,
    SWZ_IDENTITY,
};

/// An assembly error at `file:line:col` (1-based, columns in characters).
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{file}:{line}:{col}: {message}")]
pub struct AsmError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// An assembled program and its labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub instrs: Vec<Instr>,
    pub labels: BTreeMap<String, usize>,
}

impl Program {
    /// The address of a label, if the program defines it.
    pub fn label(&self, name: &str) -> Option<usize> {
        self.labels.get(name).copied()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word,
    Num(u64),
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    text: String,
    col: usize,
}

fn num_body(radix: u32) -> impl Fn(char) -> bool {
    move |c: char| c == '_' || c.is_digit(radix)
}

fn parse_num(text: &str, radix: u32) -> Option<u64> {
    u64::from_str_radix(&text.replace('_', ""), radix).ok()
}

/// One token: a number, a word (letters, digits, `_`, `.`) or a punctuation mark.
fn token(i: &str) -> IResult<&str, (Tok, &str)> {
    let number = |radix: u32, prefix: &'static str| {
        map(
            recognize(preceded(
                tag(prefix),
                pair(
                    take_while1(move |c: char| c.is_digit(radix)),
                    take_while(num_body(radix)),
                ),
            )),
            move |s: &str| {
                (
                    Tok::Num(parse_num(&s[prefix.len()..], radix).unwrap_or(u64::MAX)),
                    s,
                )
            },
        )
    };
    let word = map(
        recognize(pair(
            take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
            take_while(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
        )),
        |s: &str| (Tok::Word, s),
    );
    let punct = map(recognize(one_of(",;:=@![]")), |s: &str| {
        (Tok::Punct(s.chars().next().unwrap_or(' ')), s)
    });
    alt((
        number(16, "0x"),
        number(2, "0b"),
        number(10, ""),
        word,
        punct,
    ))(i)
}

/// Splits a line into tokens, stopping at `#`. Errors give the column.
fn lex(line: &str) -> Result<Vec<Token>, (usize, String)> {
    let col_of = |rest: &str| line[..line.len() - rest.len()].chars().count() + 1;
    let mut rest = line;
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() || rest.starts_with('#') {
            return Ok(out);
        }
        match token(rest) {
            Ok((next, (tok, text))) => {
                if tok == Tok::Num(u64::MAX) && parse_num_any(text).is_none() {
                    return Err((
                        col_of(rest),
                        format!("expected a number that fits 64 bits, found `{text}`"),
                    ));
                }
                out.push(Token {
                    tok,
                    text: text.to_string(),
                    col: col_of(rest),
                });
                rest = next;
            }
            Err(_) => {
                let found = rest.chars().next().unwrap_or(' ');
                return Err((
                    col_of(rest),
                    format!("expected a word, a number or one of , ; : = @ ! [ ], found `{found}`"),
                ));
            }
        }
    }
}

fn parse_num_any(text: &str) -> Option<u64> {
    if let Some(h) = text.strip_prefix("0x") {
        parse_num(h, 16)
    } else if let Some(b) = text.strip_prefix("0b") {
        parse_num(b, 2)
    } else {
        parse_num(text, 10)
    }
}

/// A token cursor over one line.
struct Cursor<'a> {
    toks: &'a [Token],
    pos: usize,
    end_col: usize,
}

type PResult<T> = Result<T, (usize, String)>;

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.pos)
    }
    fn col(&self) -> usize {
        self.peek().map_or(self.end_col, |t| t.col)
    }
    fn at_slot_end(&self) -> bool {
        self.peek().map_or(true, |t| t.tok == Tok::Punct(';'))
    }
    fn fail<T>(&self, expected: &str) -> PResult<T> {
        let found = self
            .peek()
            .map_or("end of line".to_string(), |t| format!("`{}`", t.text));
        Err((self.col(), format!("expected {expected}, found {found}")))
    }
    fn word(&mut self, expected: &str) -> PResult<&'a Token> {
        match self.peek() {
            Some(t) if t.tok == Tok::Word => {
                self.pos += 1;
                Ok(t)
            }
            _ => self.fail(expected),
        }
    }
    fn punct(&mut self, c: char) -> PResult<()> {
        match self.peek() {
            Some(t) if t.tok == Tok::Punct(c) => {
                self.pos += 1;
                Ok(())
            }
            _ => self.fail(&format!("`{c}`")),
        }
    }
    fn eat(&mut self, c: char) -> bool {
        let hit = matches!(self.peek(), Some(t) if t.tok == Tok::Punct(c));
        if hit {
            self.pos += 1;
        }
        hit
    }
    fn number(&mut self, expected: &str) -> PResult<u64> {
        match self.peek() {
            Some(Token {
                tok: Tok::Num(n), ..
            }) => {
                self.pos += 1;
                Ok(*n)
            }
            _ => self.fail(expected),
        }
    }
    /// A register `<prefix>N` with N below `limit`.
    fn reg(&mut self, prefix: char, limit: u8, what: &str) -> PResult<u8> {
        let expected = format!("{what} {prefix}0..{prefix}{}", limit - 1);
        match self.peek() {
            Some(t) if t.tok == Tok::Word && reg_index(&t.text, prefix, limit).is_some() => {
                self.pos += 1;
                Ok(reg_index(&t.text, prefix, limit).unwrap_or(0))
            }
            _ => self.fail(&expected),
        }
    }
    fn comma(&mut self) -> PResult<()> {
        self.punct(',')
    }
}

fn reg_index(text: &str, prefix: char, limit: u8) -> Option<u8> {
    let digits = text.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u8>().ok().filter(|&n| n < limit)
}

/// The options after a slot's operands.
#[derive(Default)]
struct Opts {
    imm: Option<Imm>,
    simd: Option<u8>,
    wr: Option<u8>,
    combine: Option<Combine>,
    guard: Option<Guard>,
    mode_ignore: Option<bool>,
    swz: Option<[u8; 4]>,
    table: Option<u8>,
}

/// Parses options, accepting only those in `allowed` (by key).
fn options(c: &mut Cursor, allowed: &[&str]) -> PResult<Opts> {
    let mut o = Opts::default();
    let list = if allowed.is_empty() {
        "`;` or the end of the line".to_string()
    } else {
        allowed
            .iter()
            .map(|a| if *a == "@" { "@pN" } else { a })
            .collect::<Vec<_>>()
            .join(", ")
    };
    while !c.at_slot_end() {
        if matches!(c.peek(), Some(t) if t.tok == Tok::Punct('@')) {
            if !allowed.contains(&"@") {
                return c.fail(&format!("one of {list}"));
            }
            c.pos += 1;
            let negate = c.eat('!');
            let pred = c.reg('p', NUM_PREDS, "predicate")?;
            o.guard = Some(Guard { pred, negate });
            continue;
        }
        let key = c.word(&format!("one of {list}"))?;
        let name = key.text.as_str();
        if !allowed.contains(&name) {
            return Err((key.col, format!("expected one of {list}, found `{name}`")));
        }
        match name {
            "set" | "and" | "or" => {
                o.combine = Some(match name {
                    "set" => Combine::Set,
                    "and" => Combine::And,
                    _ => Combine::Or,
                })
            }
            "ign" | "care" => o.mode_ignore = Some(name == "ign"),
            _ => {
                c.punct('=')?;
                let vcol = c.col();
                let text = c.peek().map(|t| t.text.clone()).unwrap_or_default();
                let v = c.number("a number")?;
                option_value(&mut o, name, v, &text).map_err(|m| (vcol, m))?;
            }
        }
    }
    Ok(o)
}

fn option_value(o: &mut Opts, key: &str, v: u64, text: &str) -> Result<(), String> {
    let small = |bits: u32| -> Result<u8, String> {
        u8::try_from(v)
            .ok()
            .filter(|&x| u32::from(x) < (1 << bits))
            .ok_or(format!(
                "expected a {bits}-bit value for `{key}`, found `{text}`"
            ))
    };
    let imm =
        || u32::try_from(v).map_err(|_| format!("expected a 32-bit immediate, found `{text}`"));
    match key {
        "lo" | "hi" if o.imm.is_some() => return Err("expected one immediate only".into()),
        "lo" => o.imm = Some(Imm::Lo(imm()?)),
        "hi" => o.imm = Some(Imm::Hi(imm()?)),
        "simd" => o.simd = Some(small(3)?),
        "wr" => o.wr = Some(small(4)?),
        "table" => o.table = Some(small(4)?),
        "swz" => {
            let d: Vec<u8> = text.bytes().map(|b| b.wrapping_sub(b'0')).collect();
            if d.len() != 4 || d.iter().any(|&x| x > 3) {
                return Err(format!(
                    "expected four digits 0..3 for `swz`, found `{text}`"
                ));
            }
            o.swz = Some([d[0], d[1], d[2], d[3]]);
        }
        _ => return Err(format!("unknown option `{key}`")),
    }
    Ok(())
}

/// `name[.16|.32|.64]` split into the name and the SIMD control.
fn op_and_width(c: &mut Cursor, expected: &str) -> PResult<(String, Option<u8>, usize)> {
    let t = c.word(expected)?;
    let (name, width) = match t.text.split_once('.') {
        Some((n, w)) => (n, Some(w)),
        None => (t.text.as_str(), None),
    };
    let simd = match width {
        None => None,
        Some("64") => Some(SIMD_64),
        Some("32") => Some(SIMD_32),
        Some("16") => Some(SIMD_16),
        Some(w) => {
            return Err((
                t.col,
                format!("expected width .16, .32 or .64, found `.{w}`"),
            ));
        }
    };
    Ok((name.to_string(), simd, t.col))
}

fn parse_in(c: &mut Cursor) -> PResult<InSlot> {
    let mut slot = InSlot {
        a: None,
        t: None,
        swz: SWZ_IDENTITY,
    };
    while let Some(t) = c.peek() {
        if let Some(r) = reg_index(&t.text, 'a', NUM_REGS).filter(|_| slot.a.is_none()) {
            slot.a = Some(r);
        } else if let Some(r) = reg_index(&t.text, 't', NUM_REGS).filter(|_| slot.t.is_none()) {
            slot.t = Some(r);
        } else {
            break;
        }
        c.pos += 1;
        if !c.eat(',') {
            break;
        }
    }
    let o = options(c, &["swz"])?;
    slot.swz = o.swz.unwrap_or(SWZ_IDENTITY);
    Ok(slot)
}

fn parse_alu(c: &mut Cursor) -> PResult<AluSlot> {
    let names: Vec<&str> = AluOp::ALL.iter().map(|(_, n)| *n).collect();
    let expected = format!("an ALU operation ({})", names.join(", "));
    let (name, width, col) = op_and_width(c, &expected)?;
    let op = AluOp::ALL
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(op, _)| *op)
        .ok_or((col, format!("expected {expected}, found `{name}`")))?;
    let mut slot = AluSlot {
        op,
        dst: 0,
        a: 0,
        b: 0,
        imm: Imm::None,
        simd: width.unwrap_or(SIMD_64),
        wr: 0b0001,
        combine: Combine::Set,
        guard: Guard::ALWAYS,
        perm: [ByteSel::Zero; 8],
    };
    if !op.is_compare() {
        slot.dst = c.reg('a', NUM_REGS, "ALU register")?;
        c.comma()?;
    }
    slot.a = c.reg('a', NUM_REGS, "ALU register")?;
    c.comma()?;
    slot.b = c.reg('a', NUM_REGS, "ALU register")?;
    if op == AluOp::Perm {
        c.comma()?;
        slot.perm = parse_selectors(c)?;
    }
    let allowed: &[&str] = match op {
        AluOp::Perm => &["@"],
        _ if op.is_compare() => &["lo", "hi", "simd", "wr", "set", "and", "or"],
        _ => &["lo", "hi", "simd", "@"],
    };
    let o = options(c, allowed)?;
    slot.imm = o.imm.unwrap_or(Imm::None);
    slot.simd = o.simd.unwrap_or(slot.simd);
    slot.wr = o.wr.unwrap_or(slot.wr);
    slot.combine = o.combine.unwrap_or(Combine::Set);
    slot.guard = o.guard.unwrap_or(Guard::ALWAYS);
    Ok(slot)
}

fn parse_selectors(c: &mut Cursor) -> PResult<[ByteSel; 8]> {
    c.punct('[')?;
    let mut sel = [ByteSel::Zero; 8];
    for s in &mut sel {
        let t = c.word("a byte selector a0..a7, b0..b7 or z")?;
        *s = if t.text == "z" {
            ByteSel::Zero
        } else if let Some(k) = reg_index(&t.text, 'a', 8) {
            ByteSel::A(k)
        } else if let Some(k) = reg_index(&t.text, 'b', 8) {
            ByteSel::B(k)
        } else {
            return Err((
                t.col,
                format!(
                    "expected a byte selector a0..a7, b0..b7 or z, found `{}`",
                    t.text
                ),
            ));
        };
    }
    c.punct(']')?;
    Ok(sel)
}

fn parse_ter(c: &mut Cursor) -> PResult<TerSlot> {
    let (name, width, col) = op_and_width(c, "a ternary operation (eq, ne)")?;
    if name != "eq" && name != "ne" {
        return Err((
            col,
            format!("expected a ternary operation (eq, ne), found `{name}`"),
        ));
    }
    let m0 = c.reg('t', NUM_REGS, "ternary register")?;
    c.comma()?;
    let m1 = c.reg('t', NUM_REGS, "ternary register")?;
    c.comma()?;
    let mask = c.reg('t', NUM_REGS, "ternary register")?;
    let o = options(c, &["care", "ign", "simd", "wr", "set", "and", "or"])?;
    Ok(TerSlot {
        ne: name == "ne",
        m0,
        m1,
        mask,
        ignore: o.mode_ignore.unwrap_or(false),
        simd: o.simd.or(width).unwrap_or(SIMD_64),
        wr: o.wr.unwrap_or(0b0001),
        combine: o.combine.unwrap_or(Combine::Set),
    })
}

fn parse_pred(c: &mut Cursor) -> PResult<PredOp> {
    let names: Vec<&str> = PRED_FUNCS.iter().map(|(n, _)| *n).collect();
    let expected = format!("a predicate function ({}, tt)", names.join(", "));
    let f = c.word(&expected)?;
    let table = PRED_FUNCS
        .iter()
        .find(|(n, _)| *n == f.text)
        .map(|(_, t)| *t);
    if table.is_none() && f.text != "tt" {
        return Err((f.col, format!("expected {expected}, found `{}`", f.text)));
    }
    let dst = c.reg('p', NUM_PREDS, "predicate")?;
    c.comma()?;
    let a = c.reg('p', NUM_PREDS, "predicate")?;
    let unary = matches!(f.text.as_str(), "mov" | "not");
    let b = if unary {
        a
    } else {
        c.comma()?;
        c.reg('p', NUM_PREDS, "predicate")?
    };
    let o = options(c, if f.text == "tt" { &["table"] } else { &[] })?;
    let table = table
        .or(o.table)
        .ok_or((c.col(), "expected `table=N` for tt".into()))?;
    Ok(PredOp { dst, a, b, table })
}

/// A branch target still to resolve: a label or an address.
#[derive(Clone, Debug)]
enum Target {
    Addr(u64),
    Label(String),
}

fn parse_branch(c: &mut Cursor, kind: &str) -> PResult<(u8, bool, Target, usize)> {
    let (pred, on_one) = match kind {
        "jmp" => (0, true),
        _ => {
            let p = c.reg('p', NUM_PREDS, "predicate")?;
            c.comma()?;
            (p, kind == "br")
        }
    };
    let col = c.col();
    let target = match c.peek() {
        Some(Token {
            tok: Tok::Num(n), ..
        }) => Target::Addr(*n),
        Some(t) if t.tok == Tok::Word => Target::Label(t.text.clone()),
        _ => return c.fail("a label or an address"),
    };
    c.pos += 1;
    options(c, &[])?;
    Ok((pred, on_one, target, col))
}

fn parse_copy(c: &mut Cursor) -> PResult<CopySlot> {
    let dst = match c.peek() {
        Some(t) if t.text == "out" => CopyDst::Out,
        Some(t) if reg_index(&t.text, 't', NUM_REGS).is_some() => {
            CopyDst::T(reg_index(&t.text, 't', NUM_REGS).unwrap_or(0))
        }
        _ => return c.fail("`out` or a ternary register t0..t15"),
    };
    c.pos += 1;
    c.comma()?;
    let src = c.reg('a', NUM_REGS, "ALU register")?;
    let o = options(c, &["@"])?;
    Ok(CopySlot {
        dst,
        src,
        guard: o.guard.unwrap_or(Guard::ALWAYS),
    })
}

/// A branch waiting for label resolution: (instruction, line, column, target).
type Pending = (usize, usize, usize, Target);

/// Parses the slots of one instruction.
fn parse_slots(c: &mut Cursor, index: usize, line: usize) -> PResult<(Instr, Option<Pending>)> {
    let mut instr = Instr::default();
    let mut pending = None;
    let mut used: Vec<String> = Vec::new();
    loop {
        let unit = c.word("a unit (in, alu, ter, pa, pb, br, brz, jmp, cp, nop)")?;
        let key = match unit.text.as_str() {
            "br" | "brz" | "jmp" => "branch",
            other => other,
        };
        if key != "nop" && used.iter().any(|u| u == key) {
            return Err((
                unit.col,
                format!("unit `{key}` already has a slot in this instruction"),
            ));
        }
        used.push(key.to_string());
        match unit.text.as_str() {
            "nop" => {}
            "in" => instr.input = Some(parse_in(c)?),
            "alu" => instr.alu = Some(parse_alu(c)?),
            "ter" => instr.ter = Some(parse_ter(c)?),
            "pa" => instr.pred[0] = Some(parse_pred(c)?),
            "pb" => instr.pred[1] = Some(parse_pred(c)?),
            "cp" => instr.copy = Some(parse_copy(c)?),
            kind @ ("br" | "brz" | "jmp") => {
                let (pred, on_one, target, col) = parse_branch(c, kind)?;
                instr.branch = Some(Branch {
                    pred,
                    on_one,
                    target: 0,
                });
                pending = Some((index, line, col, target));
            }
            other => {
                return Err((
                    unit.col,
                    format!(
                        "expected a unit (in, alu, ter, pa, pb, br, brz, jmp, cp, nop), found `{other}`"
                    ),
                ))
            }
        }
        if c.peek().is_none() {
            return Ok((instr, pending));
        }
        c.punct(';')?;
    }
}

/// Assembles `src`; `file` names it in errors.
pub fn assemble(file: &str, src: &str) -> Result<Program, AsmError> {
    let err = |line: usize, (col, message): (usize, String)| AsmError {
        file: file.to_string(),
        line,
        col,
        message,
    };
    let mut prog = Program::default();
    let mut pending: Vec<Pending> = Vec::new();
    let mut starts: Vec<(usize, usize)> = Vec::new();
    for (n, text) in src.lines().enumerate() {
        let line = n + 1;
        let toks = lex(text).map_err(|e| err(line, e))?;
        let mut c = Cursor {
            toks: &toks,
            pos: 0,
            end_col: text.chars().count() + 1,
        };
        if toks.len() >= 2 && toks[0].tok == Tok::Word && toks[1].tok == Tok::Punct(':') {
            let name = toks[0].text.clone();
            if prog
                .labels
                .insert(name.clone(), prog.instrs.len())
                .is_some()
            {
                return Err(err(
                    line,
                    (toks[0].col, format!("label `{name}` defined twice")),
                ));
            }
            c.pos = 2;
        }
        if c.peek().is_none() {
            continue;
        }
        let index = prog.instrs.len();
        if index >= MICROCODE_WORDS {
            return Err(err(
                line,
                (
                    1,
                    format!("program exceeds {MICROCODE_WORDS} words of microcode"),
                ),
            ));
        }
        starts.push((line, c.col()));
        let (instr, p) = parse_slots(&mut c, index, line).map_err(|e| err(line, e))?;
        prog.instrs.push(instr);
        pending.extend(p);
    }
    for (index, line, col, target) in pending {
        let addr = match &target {
            Target::Addr(a) => *a,
            Target::Label(l) => prog.label(l).map(|a| a as u64).ok_or_else(|| {
                err(
                    line,
                    (col, format!("expected a defined label, found `{l}`")),
                )
            })?,
        };
        let addr = u16::try_from(addr).unwrap_or(u16::MAX);
        if let Some(b) = prog.instrs[index].branch.as_mut() {
            b.target = addr;
        }
    }
    let len = prog.instrs.len();
    for (instr, (line, col)) in prog.instrs.iter().zip(starts) {
        instr.validate(len).map_err(|m| err(line, (col, m)))?;
    }
    Ok(prog)
}
