//! The tester's MOPED side: line reads, owns and fills by the MOPED beside the picking core,
//! issued as [`LineOp`]s into its L2 (the path the copy unit's requests take), and the
//! checks of what they return.
//!
//! A read claims a check in its reading phase and completes it as a core's load would; the
//! rest of the line is checked by the rule of [`ReadWindow`] while cores keep storing to
//! the other checks in it. An own claims a check in its writing phase and, once granted,
//! writes the check's remaining bytes; a fill claims every check of the line and writes the
//! whole line (the old data never comes). A write that finds the rights lost asks again, as
//! the copy unit does. Each MOPED keeps at most one operation per line in flight.

use rand::distributions::Distribution;

use crate::coherence::{MopedDone, MopedKind, MopedReq};
use crate::mem::{line_of, LineAddr, LineData, LINE_BYTES};
use crate::sim::{LineAnswer, LineOp};

use super::window::ReadWindow;
use super::{Phase, RandomTester};

/// Line operations each MOPED keeps in flight at most.
const MAX_OPS_PER_MOPED: usize = 2;

/// A MOPED read in flight: the check it claimed and the window the rest is checked by.
#[derive(Clone, Debug)]
pub(super) struct PendingRead {
    m: usize,
    check: usize,
    window: ReadWindow,
}

/// Where an own or fill stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OwnState {
    /// Asked for; the grant has not come.
    Asked,
    /// Granted; the write is next.
    Granted,
    /// The write found the rights lost; the line is asked for again next.
    Revoked,
}

/// A MOPED own (or fill) in flight and the checks it claimed.
#[derive(Clone, Debug)]
pub(super) struct PendingOwn {
    m: usize,
    line: LineAddr,
    kind: MopedKind,
    checks: Vec<usize>,
    state: OwnState,
}

impl RandomTester {
    /// A MOPED operation on idle check `i` for the MOPED beside `core`, claiming what it
    /// needs; `None` if this MOPED is busy enough or the line's checks are not free.
    pub(super) fn moped_pick(&mut self, core: usize, i: usize) -> Option<LineOp> {
        let line = line_of(self.checks[i].addr);
        let mine = |m: usize, l: LineAddr| m == core && l == line;
        let ops = self.reads.iter().filter(|r| r.m == core).count()
            + self.owns.iter().filter(|o| o.m == core).count();
        if ops >= MAX_OPS_PER_MOPED
            || self.reads.iter().any(|r| mine(r.m, r.window.line))
            || self.owns.iter().any(|o| mine(o.m, o.line))
        {
            return None;
        }
        let kind = match self.checks[i].phase {
            Phase::Reading => return Some(self.start_read(core, i, line)),
            Phase::Writing { .. } if self.fill && self.coin.sample(&mut self.rng) => {
                MopedKind::Fill
            }
            Phase::Writing { .. } => MopedKind::Own,
        };
        let checks = match kind {
            MopedKind::Fill => self.line_checks[&line].clone(),
            _ => vec![i],
        };
        if checks.iter().any(|&k| self.checks[k].busy) {
            return None;
        }
        for &k in &checks {
            self.checks[k].busy = true;
        }
        self.owns.push(PendingOwn {
            m: core,
            line,
            kind,
            checks,
            state: OwnState::Asked,
        });
        Some(self.ask(kind, line))
    }

    /// An `M_GETS` of `line` claiming check `i`: its window opens on the reference bytes,
    /// with the core stores to the line still in flight.
    fn start_read(&mut self, core: usize, i: usize, line: LineAddr) -> LineOp {
        self.checks[i].busy = true;
        let mut window = ReadWindow::new(line, self.reference_line(line));
        for &k in &self.line_checks[&line] {
            let c = &self.checks[k];
            if let (true, Phase::Writing { written }) = (c.storing, c.phase) {
                let offset = (c.addr - line) as usize + written as usize;
                window.note_store(offset, c.value.wrapping_add(written));
            }
        }
        self.reads.push(PendingRead {
            m: core,
            check: i,
            window,
        });
        self.ask(MopedKind::Read, line)
    }

    /// A line request, counted.
    fn ask(&mut self, kind: MopedKind, addr: LineAddr) -> LineOp {
        match kind {
            MopedKind::Read => self.report.moped_reads += 1,
            MopedKind::Own => self.report.moped_owns += 1,
            MopedKind::Fill => self.report.moped_fills += 1,
        }
        LineOp::Request(MopedReq {
            kind,
            addr,
            write: None,
            page_table: false,
        })
    }

    /// The line's bytes as the completed stores left them.
    fn reference_line(&self, line: LineAddr) -> LineData {
        let mut d = [0; LINE_BYTES];
        for &k in &self.line_checks[&line] {
            let c = &self.checks[k];
            let o = (c.addr - line) as usize;
            d[o..o + 4].copy_from_slice(&c.bytes);
        }
        d
    }

    /// A store of `value` to `addr` was issued: every open read of its line may see it.
    pub(super) fn note_store(&mut self, addr: u64, value: u8) {
        let line = line_of(addr);
        for r in self.reads.iter_mut().filter(|r| r.window.line == line) {
            r.window.note_store((addr - line) as usize, value);
        }
    }

    /// Work the MOPED beside `core` has on a line it was granted or lost: the write, or
    /// asking again. Done at a random later step, so other requests can race it.
    /// Whether the MOPED beside `core` has an own or a fill in flight.
    pub(super) fn owns_pending(&self, core: usize) -> bool {
        self.owns.iter().any(|o| o.m == core)
    }

    pub(super) fn granted_work(&mut self, core: usize) -> Option<LineOp> {
        let k = self
            .owns
            .iter()
            .position(|o| o.m == core && o.state != OwnState::Asked)?;
        if !self.coin.sample(&mut self.rng) {
            return None;
        }
        let (kind, line) = (self.owns[k].kind, self.owns[k].line);
        match self.owns[k].state {
            OwnState::Granted => Some(self.write_of(k)),
            _ => {
                self.owns[k].state = OwnState::Asked;
                Some(self.ask(kind, line))
            }
        }
    }

    /// The copy unit's write for own `k`: a fill writes the whole line (the checks being
    /// written get their new value, the others keep theirs, the rest stays zero); an own
    /// writes the remaining bytes of its check.
    fn write_of(&self, k: usize) -> LineOp {
        let o = &self.owns[k];
        let mut data = self.reference_line(o.line);
        let mut mask = if o.kind == MopedKind::Fill {
            u64::MAX
        } else {
            0
        };
        for &i in &o.checks {
            let c = &self.checks[i];
            if let Phase::Writing { written } = c.phase {
                let at = (c.addr - o.line) as usize;
                for b in written..4 {
                    data[at + b as usize] = c.value.wrapping_add(b);
                    mask |= 1 << (at + b as usize);
                }
            }
        }
        LineOp::Write {
            addr: o.line,
            data,
            mask,
        }
    }

    /// An answer to one of MOPED `m`'s operations.
    pub(super) fn moped_answer(
        &mut self,
        m: usize,
        a: &LineAnswer,
        now: u64,
    ) -> Result<(), String> {
        match *a {
            LineAnswer::Line(MopedDone::Data { addr, data }) => self.read_done(m, addr, &data, now),
            LineAnswer::Line(MopedDone::Granted { addr }) => {
                let o = self.own_of(m, addr, OwnState::Asked)?;
                self.owns[o].state = OwnState::Granted;
                Ok(())
            }
            LineAnswer::Line(MopedDone::Written { addr }) => Err(format!(
                "MOPED {m}: line {addr:#x} written by its grant, but the tester sends no data with its requests"
            )),
            LineAnswer::Written { addr, ok } => {
                let o = self.own_of(m, addr, OwnState::Granted)?;
                if ok {
                    self.write_performed(o);
                } else {
                    self.report.moped_writes_revoked += 1;
                    self.owns[o].state = OwnState::Revoked;
                }
                Ok(())
            }
        }
    }

    /// MOPED `m`'s own of `line` in `state`.
    fn own_of(&self, m: usize, line: LineAddr, state: OwnState) -> Result<usize, String> {
        self.owns
            .iter()
            .position(|o| o.m == m && o.line == line && o.state == state)
            .ok_or_else(|| {
                format!(
                    "MOPED {m}: an answer on line {line:#x} that no own in state {state:?} awaits"
                )
            })
    }

    /// A granted write went in: the reference takes its bytes, open reads may see them,
    /// and its checks are released (read next).
    fn write_performed(&mut self, k: usize) {
        let o = self.owns.swap_remove(k);
        self.report.moped_writes += 1;
        for i in o.checks {
            let c = &mut self.checks[i];
            c.busy = false;
            let Phase::Writing { written } = c.phase else {
                continue;
            };
            let (addr, value) = (c.addr, c.value);
            for b in written..4 {
                c.bytes[b as usize] = value.wrapping_add(b);
            }
            c.phase = Phase::Reading;
            for b in written..4 {
                self.note_store(addr + b as u64, value.wrapping_add(b));
            }
        }
    }

    /// The data of MOPED `m`'s read of `line`: the claimed check exactly, as a load, then
    /// every byte by the window's rule; the claimed check completes.
    fn read_done(
        &mut self,
        m: usize,
        line: LineAddr,
        data: &LineData,
        now: u64,
    ) -> Result<(), String> {
        let k = self
            .reads
            .iter()
            .position(|r| r.m == m && r.window.line == line)
            .ok_or_else(|| format!("MOPED {m}: data for line {line:#x}, which it did not read"))?;
        let r = self.reads.swap_remove(k);
        let c = &self.checks[r.check];
        let o = (c.addr - line) as usize;
        let got = u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]) as u64;
        let want = c.expected();
        let place =
            format!("MOPED {m} (controller L2Cache[{m}], event M_GETS) read line {line:#x}");
        if got != want {
            let what = format!(
                "{place}: {got:#010x} at {:#x}, expected {want:#010x}",
                c.addr
            );
            return Err(self.mismatch(what, now));
        }
        if let Some(v) = r.window.check(data) {
            let what = format!(
                "{place}: byte {:#x} read as {:#04x}, a value it never held between the read's issue and its answer (allowed: {})",
                line + v.offset as u64,
                v.got,
                v.allowed.iter().map(|b| format!("{b:#04x}")).collect::<Vec<_>>().join(", ")
            );
            return Err(self.mismatch(what, now));
        }
        self.report.moped_values_checked += self.line_checks[&line].len() as u64;
        self.report.moped_reads_raced += r.window.raced() as u64;
        self.complete_check(r.check);
        Ok(())
    }
}
