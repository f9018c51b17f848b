//! The match unit cycle by cycle: a three-stage pipeline (paper, section 4.1) of
//! read (R), execute (X) and write (W).
//!
//! - R: the word at the program counter issues unless it needs input and the input
//!   FIFO is empty (section 4.2.5); then the whole word waits, the counter holds and a
//!   bubble enters X. On issue it pops the FIFO and reads its ALU and ternary operands,
//!   taking the result of the word now in X from the forwarding path (Figure 3), so
//!   every word sees the results of the one before it (section 4.1).
//! - X: the units compute. Predicates are read here, after the word in W has written
//!   them (the predicate file is write-before-read, section 4.2.4): write guards, the
//!   old value a comparison combines with, the predicate unit's inputs and the branch
//!   condition.
//! - W: results land in the register files and the output FIFO, in program order. A
//!   FIFO pop lands here too; reading the operands before the pop's own write is the
//!   paper's read-before-write FIFO port.
//!
//! A taken branch redirects the fetch after two more words have issued: the two delay
//! slots (section 4.2.5). Their branch slots are cancelled. The count is of words
//! issued, not of cycles, so a delay slot that waits for input holds the branch back.

use std::collections::VecDeque;

use thiserror::Error;

use super::isa::{CopyDst, Guard, Instr, ALU_PRED_BASE, NUM_PREDS, NUM_REGS, TER_PRED_BASE};
use super::units;

/// The interpreter stopped: what went wrong, where and when.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RunError {
    #[error("cycle {cycle}, pc {pc}, `{instr}`: {message}")]
    BadInstr {
        cycle: u64,
        pc: usize,
        instr: String,
        message: String,
    },
    #[error("cycle {cycle}: pc {pc} is outside the program (0..{len})")]
    PcOutOfRange { cycle: u64, pc: usize, len: usize },
    #[error("still busy after {limit} cycles (pc {pc})")]
    CycleLimit { limit: u64, pc: usize },
}

/// Operand values read in R.
#[derive(Clone, Copy, Debug, Default)]
struct Operands {
    alu_a: u64,
    alu_b: u64,
    ter: [u64; 3],
    copy: u64,
}

/// What a word writes in W, computed in X.
#[derive(Clone, Debug, Default)]
struct Results {
    a: Vec<(u8, u64)>,
    t: Vec<(u8, u64)>,
    p: Vec<(u8, bool)>,
    out: Option<u64>,
}

#[derive(Clone, Debug)]
struct Flight {
    instr: Instr,
    ops: Operands,
    popped: Option<u64>,
    /// Issued in the delay slot of a taken branch: its own branch is cancelled.
    branch_cancelled: bool,
    results: Results,
}

/// A taken branch waiting for its delay slots to issue.
#[derive(Clone, Copy, Debug)]
struct Redirect {
    target: usize,
    slots_left: u8,
}

/// One word the unit pushed to its output FIFO, with the cycle of its W stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutWord {
    pub cycle: u64,
    pub value: u64,
}

/// The match unit: microcode, register files, FIFOs and pipeline latches.
#[derive(Clone, Debug)]
pub struct MatchUnit {
    program: Vec<Instr>,
    a: [u64; NUM_REGS as usize],
    t: [u64; NUM_REGS as usize],
    p: [bool; NUM_PREDS as usize],
    pc: usize,
    cycle: u64,
    input: VecDeque<u64>,
    /// Words a feeder (the list manager) delivers into `input`, one per cycle.
    feed: VecDeque<u64>,
    x: Option<Flight>,
    w: Option<Flight>,
    redirect: Option<Redirect>,
    /// Off only to show the hazard the forwarding paths remove.
    pub forwarding: bool,
    output: Vec<OutWord>,
    /// Cycle of every FIFO pop, in order.
    pops: Vec<u64>,
    /// (cycle, pc) of every issued word.
    issues: Vec<(u64, usize)>,
    last_retire: Option<u64>,
}

impl MatchUnit {
    pub fn new(program: Vec<Instr>) -> Self {
        let mut t = [0; NUM_REGS as usize];
        t[0] = u64::MAX;
        let mut p = [false; NUM_PREDS as usize];
        p[0] = true;
        MatchUnit {
            program,
            a: [0; NUM_REGS as usize],
            t,
            p,
            pc: 0,
            cycle: 0,
            input: VecDeque::new(),
            feed: VecDeque::new(),
            x: None,
            w: None,
            redirect: None,
            forwarding: true,
            output: Vec::new(),
            pops: Vec::new(),
            issues: Vec::new(),
            last_retire: None,
        }
    }

    /// Words already waiting in the input FIFO.
    pub fn push_input(&mut self, words: impl IntoIterator<Item = u64>) {
        self.input.extend(words);
    }

    /// Words streamed into the input FIFO one per cycle, from the next cycle on.
    pub fn stream_input(&mut self, words: impl IntoIterator<Item = u64>) {
        self.feed.extend(words);
    }

    /// Discards every word waiting in the input FIFO or on its way to it (the list
    /// manager's reset of the FIFO); how many.
    pub fn drop_input(&mut self) -> usize {
        let n = self.input.len() + self.feed.len();
        self.input.clear();
        self.feed.clear();
        n
    }

    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    pub fn pc(&self) -> usize {
        self.pc
    }
    pub fn output(&self) -> &[OutWord] {
        &self.output
    }
    pub fn pops(&self) -> &[u64] {
        &self.pops
    }
    pub fn issues(&self) -> &[(u64, usize)] {
        &self.issues
    }
    pub fn a(&self, r: u8) -> u64 {
        self.a[usize::from(r % NUM_REGS)]
    }
    pub fn t(&self, r: u8) -> u64 {
        self.t[usize::from(r % NUM_REGS)]
    }
    pub fn p(&self, r: u8) -> bool {
        self.p[usize::from(r % NUM_PREDS)]
    }
    /// The cycle the last word left W, if any has.
    pub fn last_retire(&self) -> Option<u64> {
        self.last_retire
    }

    /// Nothing in flight, nothing to deliver, and the next word waits for input.
    pub fn is_idle(&self) -> bool {
        self.x.is_none()
            && self.w.is_none()
            && self.input.is_empty()
            && self.feed.is_empty()
            && self.program.get(self.pc).is_some_and(Instr::needs_input)
    }

    /// Runs until idle; returns the cycles from the call to the last word's W stage.
    pub fn run_until_idle(&mut self, limit: u64) -> Result<u64, RunError> {
        let start = self.cycle;
        while !self.is_idle() {
            if self.cycle - start >= limit {
                return Err(RunError::CycleLimit { limit, pc: self.pc });
            }
            self.step()?;
        }
        Ok(self
            .last_retire
            .filter(|&c| c >= start)
            .map_or(0, |c| c + 1 - start))
    }

    /// One clock: W, then X, then R, so each stage sees what the older words did.
    pub fn step(&mut self) -> Result<(), RunError> {
        if let Some(word) = self.feed.pop_front() {
            self.input.push_back(word);
        }
        if let Some(f) = self.w.take() {
            self.write_back(f);
            self.last_retire = Some(self.cycle);
        }
        if let Some(mut f) = self.x.take() {
            f.results = self.execute(&f)?;
            self.w = Some(f);
        }
        self.issue()?;
        self.cycle += 1;
        Ok(())
    }

    fn bad(&self, pc: usize, instr: &Instr, message: String) -> RunError {
        RunError::BadInstr {
            cycle: self.cycle,
            pc,
            instr: instr.to_string(),
            message,
        }
    }

    /// R stage.
    fn issue(&mut self) -> Result<(), RunError> {
        let len = self.program.len();
        let instr = *self.program.get(self.pc).ok_or(RunError::PcOutOfRange {
            cycle: self.cycle,
            pc: self.pc,
            len,
        })?;
        instr
            .validate(len)
            .map_err(|m| self.bad(self.pc, &instr, m))?;
        if instr.needs_input() && self.input.is_empty() {
            return Ok(());
        }
        let ops = self.read_operands(&instr);
        let popped = if instr.needs_input() {
            self.pops.push(self.cycle);
            self.input.pop_front()
        } else {
            None
        };
        let branch_cancelled = self.redirect.is_some();
        self.issues.push((self.cycle, self.pc));
        self.x = Some(Flight {
            instr,
            ops,
            popped,
            branch_cancelled,
            results: Results::default(),
        });
        self.pc = match &mut self.redirect {
            Some(r) if r.slots_left <= 1 => {
                let target = r.target;
                self.redirect = None;
                target
            }
            Some(r) => {
                r.slots_left -= 1;
                self.pc + 1
            }
            None => self.pc + 1,
        };
        Ok(())
    }

    /// Register reads of R, through the forwarding path from the word in X.
    fn read_operands(&self, instr: &Instr) -> Operands {
        let fwd = if self.forwarding {
            self.w.as_ref()
        } else {
            None
        };
        let a = |r: u8| {
            fwd.filter(|_| r != 0)
                .and_then(|f| f.results.a.iter().rev().find(|(d, _)| *d == r))
                .map_or(self.a[usize::from(r)], |(_, v)| *v)
        };
        let t = |r: u8| {
            fwd.filter(|_| r != 0)
                .and_then(|f| f.results.t.iter().rev().find(|(d, _)| *d == r))
                .map_or(self.t[usize::from(r)], |(_, v)| *v)
        };
        let mut ops = Operands::default();
        if let Some(s) = &instr.alu {
            ops.alu_a = a(s.a);
            ops.alu_b = a(s.b);
        }
        if let Some(s) = &instr.ter {
            ops.ter = [t(s.m0), t(s.m1), t(s.mask)];
        }
        if let Some(c) = &instr.copy {
            ops.copy = a(c.src);
        }
        ops
    }

    fn guard(&self, g: Guard) -> bool {
        self.p[usize::from(g.pred)] != g.negate
    }

    /// X stage: every unit of the word, on the operands read in R.
    fn execute(&mut self, f: &Flight) -> Result<Results, RunError> {
        let mut r = Results::default();
        let instr = &f.instr;
        if let (Some(s), Some(word)) = (&instr.input, f.popped) {
            if let Some(d) = s.a {
                r.a.push((d, word));
            }
            if let Some(d) = s.t {
                r.t.push((d, units::swizzle(word, &s.swz)));
            }
        }
        if let Some(s) = &instr.alu {
            let b = units::with_imm(f.ops.alu_b, s.imm);
            if s.op.is_compare() {
                let res = units::alu_compare(s.op, f.ops.alu_a, b, s.simd);
                self.compare_writes(&mut r, ALU_PRED_BASE, res, s.wr, s.combine);
            } else if let Some(v) = units::alu_value(s.op, f.ops.alu_a, b, s.simd, &s.perm) {
                if self.guard(s.guard) {
                    r.a.push((s.dst, v));
                }
            }
        }
        if let Some(s) = &instr.ter {
            let [m0, m1, mask] = f.ops.ter;
            let mut res = units::ternary(m0, m1, mask, s.ignore, s.simd);
            if s.ne {
                res.iter_mut().for_each(|b| *b = !*b);
            }
            self.compare_writes(&mut r, TER_PRED_BASE, res, s.wr, s.combine);
        }
        for op in instr.pred.iter().flatten() {
            let v = units::pred_logic(
                op.table,
                self.p[usize::from(op.a)],
                self.p[usize::from(op.b)],
            );
            r.p.push((op.dst, v));
        }
        if let Some(c) = &instr.copy {
            if self.guard(c.guard) {
                match c.dst {
                    CopyDst::Out => r.out = Some(f.ops.copy),
                    CopyDst::T(d) => r.t.push((d, f.ops.copy)),
                }
            }
        }
        if let Some(b) = &instr.branch {
            if !f.branch_cancelled && self.p[usize::from(b.pred)] == b.on_one {
                self.redirect = Some(Redirect {
                    target: usize::from(b.target),
                    slots_left: 2,
                });
            }
        }
        Ok(r)
    }

    fn compare_writes(
        &self,
        r: &mut Results,
        base: u8,
        res: [bool; 4],
        wr: u8,
        mode: super::isa::Combine,
    ) {
        for (reg, v) in units::section_writes(base, res, wr) {
            let old = self.p[usize::from(reg)];
            r.p.push((reg, units::combine(mode, old, v)));
        }
    }

    /// W stage: register 0 of each file and p0 stay constant.
    fn write_back(&mut self, f: Flight) {
        for (d, v) in f.results.a {
            if d != 0 {
                self.a[usize::from(d)] = v;
            }
        }
        for (d, v) in f.results.t {
            if d != 0 {
                self.t[usize::from(d)] = v;
            }
        }
        for (d, v) in f.results.p {
            if d != 0 {
                self.p[usize::from(d)] = v;
            }
        }
        if let Some(value) = f.results.out {
            self.output.push(OutWord {
                cycle: self.cycle,
                value,
            });
        }
    }
}
