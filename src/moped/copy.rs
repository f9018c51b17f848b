//! The copy unit (paper, section 4.2, Figures 8 and 9): moves one active match's message
//! from the send buffer to the receive buffer, line by line, through the coherence
//! protocol.
//!
//! Each buffer has an address generator and a cyclic queue of N lines. The generator
//! translates its buffer page by page with the shared [`Walker`], double-buffered: it holds
//! the frame of the page it is giving addresses from and of the page after it, and drops a
//! page's frame once every line of that page has its physical address (lines keep their
//! own). Reservation assigns the next line's address to the next queue slot when that slot
//! is Free; issuing its coherence request makes it Requested; the answer makes it Present.
//!
//! The merge logic copies bytes from Present send lines into Present receive lines. The
//! buffers' offsets within a line differ by a fixed shift, so each line exchanges bytes
//! with at most two lines of the other buffer: its left partner (holding its first bytes)
//! and its right partner. The left/right-copied flags record which halves are done; a line
//! with a single partner starts with its right half done. The cycle mark (lap parity of
//! the line's index) tells whether a partner's slot holds the partner or the line one lap
//! earlier; one bit suffices because a send line is reserved only after the line a lap
//! before it was consumed, which needed that line's receive partners reserved, so the
//! queues never drift two laps apart. A send line is Free once both halves are copied; a receive line is written
//! back once both are filled, and Free once the write is acknowledged.
//!
//! Each unit has its own walker; its staging buffer starts empty, or with the page-table
//! lines its MOPED kept from earlier transfers ([`CopyUnit::seed_walker`]). It is flushed
//! after the OS resolves a fault, since the tables changed under it.
//!
//! The unit is untimed: its host calls [`CopyUnit::next_request`] as often as it can issue
//! per cycle and feeds answers back whenever they arrive, in any order.

use crate::mem::{LineAddr, LineData, LINE_BYTES};
use crate::os::pagetable::{page_of, PageTableFormat, PAGE_BYTES};

use super::xlate::{WalkResult, WalkState, WalkStats, Walker};

const LINE: u64 = LINE_BYTES as u64;

/// Which buffer of the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Send,
    Recv,
}

/// A buffer in a process's virtual address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub va: u64,
    /// The process's page-table root ("cr3").
    pub root: u64,
}

/// One active match's data movement: `len` bytes from `send` to `recv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub send: Buffer,
    pub recv: Buffer,
    pub len: u64,
}

/// Sizes of the copy unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyConfig {
    /// Send lines, and as many receive lines (the paper's N).
    pub lines: usize,
    /// Page-table lines in the walker's staging buffer.
    pub staging_lines: usize,
    /// The format of the tables the walker reads.
    pub page_table: PageTableFormat,
}

impl Default for CopyConfig {
    fn default() -> Self {
        CopyConfig {
            lines: 4,
            staging_lines: Walker::DEFAULT_STAGING_LINES,
            page_table: PageTableFormat::X86_64,
        }
    }
}

/// A line's state (Figure 9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LineState {
    #[default]
    Free,
    /// Has a physical address, no request issued yet.
    Reserved,
    /// Its coherence request is outstanding.
    Requested,
    /// Send line: data arrived. Receive line: held exclusively.
    Present,
}

/// A send or receive line (Figure 9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub addr: LineAddr,
    pub state: LineState,
    /// First line of its buffer.
    pub first: bool,
    /// Last line of its buffer.
    pub last: bool,
    /// Lap parity of the line's index in its buffer.
    pub mark: bool,
    /// Bytes exchanged with the left partner are copied.
    pub left_copied: bool,
    /// Bytes exchanged with the right partner are copied.
    pub right_copied: bool,
    pub data: LineData,
    /// Receive line: its write is outstanding (the write back logic's busy bit).
    pub writing: bool,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            addr: 0,
            state: LineState::Free,
            first: false,
            last: false,
            mark: false,
            left_copied: false,
            right_copied: false,
            data: [0; LINE_BYTES],
            writing: false,
        }
    }
}

impl Line {
    fn is_merged(&self) -> bool {
        self.left_copied && self.right_copied
    }
}

/// A request to the memory system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CopyReq {
    /// A coherent read of a send-buffer or page-table line; answer with
    /// [`CopyUnit::on_read`].
    Read { line: LineAddr },
    /// Exclusive rights to a receive line; `whole` when the transfer writes all 64 bytes,
    /// so the old data is not needed. Answer with [`CopyUnit::on_granted`].
    Own { line: LineAddr, whole: bool },
    /// Store the bytes of `data` selected by `mask` (bit i = byte i) into a receive line
    /// still held exclusively. Answer with [`CopyUnit::on_write`].
    Write {
        line: LineAddr,
        data: LineData,
        mask: u64,
    },
    /// A page of `side`'s buffer is not mapped; answer with
    /// [`CopyUnit::on_fault_resolved`].
    Fault { side: Side, va: u64 },
}

/// Why a transfer failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The OS found `va` outside the process.
    Unmapped { side: Side, va: u64 },
}

/// Where the transfer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyStatus {
    Running,
    Done,
    Failed(Failure),
}

/// Copy unit counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Send lines read (requests issued).
    pub lines_read: u64,
    /// Receive lines requested exclusively, re-requests after lost rights included.
    pub lines_owned: u64,
    /// Receive lines written (writes acknowledged).
    pub lines_written: u64,
    /// Writes refused because exclusive rights were lost first.
    pub write_retries: u64,
    /// Times an address generator had a Free line but waited for its page's translation.
    pub translation_stalls: u64,
    /// Page faults reported.
    pub faults: u64,
    /// Answers the unit had not asked for (host misuse), ignored.
    pub anomalies: u64,
    /// The page walker's counters.
    pub walk: WalkStats,
}

/// Host misuse of the copy unit's interface; the unit ignores the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    #[error("a copy unit needs at least one send and one receive line")]
    NoLines,
    #[error("a buffer of the transfer runs past the end of the address space")]
    BadTransfer,
    #[error("read answer for line {0:#x}, which no request asked for")]
    UnexpectedRead(LineAddr),
    #[error("grant for line {0:#x}, which no request asked for")]
    UnexpectedGrant(LineAddr),
    #[error("write answer for line {0:#x}, which no write asked for")]
    UnexpectedWrite(LineAddr),
    #[error("fault answer while no fault is reported")]
    UnexpectedFaultAnswer,
}

/// A page fault being handled by the OS.
#[derive(Clone, Copy, Debug)]
struct Fault {
    side: Side,
    va: u64,
    reported: bool,
}

/// One buffer: its address generator, its translations and its cyclic queue of lines.
#[derive(Clone, Debug)]
struct Stream {
    va: u64,
    root: u64,
    /// The buffer's offset within its first line.
    align: u64,
    /// The other buffer's offset within its first line (the merge logic's fixed shift).
    other_align: u64,
    len: u64,
    /// Lines the buffer spans.
    lines: u64,
    /// Index of the next line to reserve.
    tail: u64,
    /// Lines freed so far.
    freed: u64,
    queue: Vec<Line>,
    /// Translated `(page, frame)`: the current page and the next, double-buffered.
    pages: [Option<(u64, u64)>; 2],
    /// A Free line waits for translation.
    stalled: bool,
    stalls: u64,
}

impl Stream {
    fn new(buf: Buffer, other: Buffer, len: u64, n: usize) -> Self {
        let align = buf.va % LINE;
        Stream {
            va: buf.va,
            root: buf.root,
            align,
            other_align: other.va % LINE,
            len,
            lines: if len == 0 {
                0
            } else {
                (align + len).div_ceil(LINE)
            },
            tail: 0,
            freed: 0,
            queue: vec![Line::default(); n],
            pages: [None; 2],
            stalled: false,
            stalls: 0,
        }
    }

    fn n(&self) -> u64 {
        self.queue.len() as u64
    }

    fn slot(&self, index: u64) -> usize {
        (index % self.n()) as usize
    }

    fn lap(&self, index: u64) -> bool {
        (index / self.n()) & 1 == 1
    }

    /// The index of the line now in an occupied `slot`.
    fn index_of(&self, slot: usize) -> u64 {
        let n = self.n();
        let back = ((self.tail - 1) % n + n - slot as u64) % n;
        self.tail - 1 - back
    }

    /// Indices of lines that may occupy the queue, oldest first.
    fn window(&self) -> std::ops::Range<u64> {
        self.tail.saturating_sub(self.n())..self.tail
    }

    /// The virtual address of line `index`.
    fn vline(&self, index: u64) -> u64 {
        self.va - self.align + index * LINE
    }

    /// The buffer offsets line `index` holds.
    fn span(&self, index: u64) -> (u64, u64) {
        let start = (index * LINE).saturating_sub(self.align);
        (start, ((index + 1) * LINE - self.align).min(self.len))
    }

    /// The other buffer's line holding buffer offset `offset`.
    fn partner_at(&self, offset: u64) -> u64 {
        (offset + self.other_align) / LINE
    }

    /// Left and right partners of line `index` (equal when it has one).
    fn partners(&self, index: u64) -> (u64, u64) {
        let (start, end) = self.span(index);
        (self.partner_at(start), self.partner_at(end - 1))
    }

    /// The bytes of `line` inside the buffer, as a byte mask (First and Last lines may be
    /// partial).
    fn mask(&self, line: &Line) -> u64 {
        let lo = if line.first { self.align } else { 0 };
        let hi = if line.last {
            (self.align + self.len - 1) % LINE + 1
        } else {
            LINE
        };
        (u64::MAX >> (LINE - (hi - lo))) << lo
    }

    fn frame_of(&self, page: u64) -> Option<u64> {
        self.pages
            .iter()
            .flatten()
            .find(|p| p.0 == page)
            .map(|p| p.1)
    }

    /// The page to translate next, and whether the generator is waiting for it.
    fn wanted_page(&self) -> Option<(u64, bool)> {
        if self.tail >= self.lines {
            return None;
        }
        let current = page_of(self.vline(self.tail));
        if self.frame_of(current).is_none() {
            return Some((current, true));
        }
        let next = current + PAGE_BYTES;
        let last = page_of(self.vline(self.lines - 1));
        (next <= last && self.frame_of(next).is_none()).then_some((next, false))
    }

    /// The buffer address a walk for `page` translates (the buffer may start mid-page).
    fn walk_va(&self, page: u64) -> u64 {
        page.max(self.va)
    }

    fn add_page(&mut self, page: u64, frame: u64) {
        let free = self.pages.iter().position(Option::is_none);
        debug_assert!(free.is_some(), "more than two pages translated");
        self.pages[free.unwrap_or(1)] = Some((page, frame));
    }

    /// Gives addresses to Free slots in queue order while translations allow.
    fn reserve(&mut self) -> bool {
        let mut progress = false;
        while self.tail < self.lines {
            let index = self.tail;
            let slot = self.slot(index);
            if self.queue[slot].state != LineState::Free {
                break;
            }
            let vline = self.vline(index);
            let Some(frame) = self.frame_of(page_of(vline)) else {
                self.stalls += u64::from(!self.stalled);
                self.stalled = true;
                break;
            };
            self.stalled = false;
            let (left, right) = self.partners(index);
            self.queue[slot] = Line {
                addr: frame + vline % PAGE_BYTES,
                state: LineState::Reserved,
                first: index == 0,
                last: index == self.lines - 1,
                mark: self.lap(index),
                left_copied: false,
                right_copied: left == right,
                data: [0; LINE_BYTES],
                writing: false,
            };
            self.tail += 1;
            self.drop_done_page(vline);
            progress = true;
        }
        progress
    }

    /// Discards the frame of `vline`'s page once the page's last line has its address.
    fn drop_done_page(&mut self, vline: u64) {
        let page = page_of(vline);
        if self.tail == self.lines || page_of(self.vline(self.tail)) != page {
            for p in &mut self.pages {
                if p.is_some_and(|(pg, _)| pg == page) {
                    *p = None;
                }
            }
        }
    }

    /// The oldest line matching `pred`.
    fn oldest(&self, pred: impl Fn(&Line) -> bool) -> Option<usize> {
        self.window()
            .map(|i| self.slot(i))
            .find(|&s| pred(&self.queue[s]))
    }

    /// The oldest line in `state` at `addr`.
    fn oldest_at(&self, addr: LineAddr, state: LineState) -> Option<usize> {
        self.oldest(|l| l.addr == addr && l.state == state)
    }

    fn free(&mut self, slot: usize) {
        self.queue[slot].state = LineState::Free;
        self.queue[slot].writing = false;
        self.freed += 1;
    }

    fn occupancy(&self) -> usize {
        self.queue
            .iter()
            .filter(|l| l.state != LineState::Free)
            .count()
    }
}

/// The copy unit serving one transfer.
#[derive(Clone, Debug)]
pub struct CopyUnit {
    send: Stream,
    recv: Stream,
    walker: Walker,
    /// The page the walk in progress translates.
    walk_for: Option<(Side, u64)>,
    fault: Option<Fault>,
    status: CopyStatus,
    stats: CopyStats,
}

impl CopyUnit {
    /// A unit ready to copy `t`; translation of the send buffer's first page starts at once.
    pub fn new(cfg: &CopyConfig, t: &Transfer) -> Result<Self, CopyError> {
        if cfg.lines == 0 {
            return Err(CopyError::NoLines);
        }
        let fits = |b: &Buffer| b.va.checked_add(t.len).and_then(|e| e.checked_add(LINE));
        if fits(&t.send).is_none() || fits(&t.recv).is_none() {
            return Err(CopyError::BadTransfer);
        }
        let mut unit = CopyUnit {
            send: Stream::new(t.send, t.recv, t.len, cfg.lines),
            recv: Stream::new(t.recv, t.send, t.len, cfg.lines),
            walker: Walker::with_format(cfg.staging_lines, cfg.page_table),
            walk_for: None,
            fault: None,
            status: CopyStatus::Running,
            stats: CopyStats::default(),
        };
        unit.settle();
        Ok(unit)
    }

    pub fn status(&self) -> CopyStatus {
        self.status
    }

    pub fn stats(&self) -> CopyStats {
        CopyStats {
            translation_stalls: self.send.stalls + self.recv.stalls,
            walk: self.walker.stats(),
            ..self.stats
        }
    }

    /// Lines per queue (N).
    pub fn capacity(&self) -> usize {
        self.send.queue.len()
    }

    /// Lines of `side` not Free.
    pub fn occupancy(&self, side: Side) -> usize {
        self.stream(side).occupancy()
    }

    /// `side`'s lines, by slot.
    pub fn lines(&self, side: Side) -> &[Line] {
        &self.stream(side).queue
    }

    /// True while `side` has a Free line but no translation to give it an address.
    pub fn waiting_for_translation(&self, side: Side) -> bool {
        self.stream(side).stalled
    }

    /// The next request to issue, by priority: a fault report, the walker's read (a
    /// translation holds up a whole page), a write of a merged receive line (frees a line),
    /// a send read, then a receive line's exclusive rights.
    pub fn next_request(&mut self) -> Option<CopyReq> {
        if self.status != CopyStatus::Running {
            return None;
        }
        if let Some(f) = self.fault.as_mut().filter(|f| !f.reported) {
            f.reported = true;
            return Some(CopyReq::Fault {
                side: f.side,
                va: f.va,
            });
        }
        if let Some(line) = self.walker.next_read() {
            return Some(CopyReq::Read { line });
        }
        self.issue_write()
            .or_else(|| self.issue_read())
            .or_else(|| self.issue_own())
    }

    /// True when `line` is the page-table line the walker waits for: a `Read` of it is a
    /// page walk's, not the copy's.
    pub fn walk_awaits(&self, line: LineAddr) -> bool {
        self.walker.awaiting() == Some(line)
    }

    /// Data of a line asked for by `Read`: the walk's line first, else a send line.
    pub fn on_read(&mut self, line: LineAddr, data: &LineData) -> Result<(), CopyError> {
        if self.walk_awaits(line) {
            self.walker
                .on_line(line, data)
                .expect("the walker awaits this line");
        } else {
            let Some(slot) = self.send.oldest_at(line, LineState::Requested) else {
                return self.anomaly(CopyError::UnexpectedRead(line));
            };
            let l = &mut self.send.queue[slot];
            l.state = LineState::Present;
            l.data = *data;
        }
        self.settle();
        Ok(())
    }

    /// Exclusive rights to a receive line asked for by `Own`.
    pub fn on_granted(&mut self, line: LineAddr) -> Result<(), CopyError> {
        let Some(slot) = self.recv.oldest_at(line, LineState::Requested) else {
            return self.anomaly(CopyError::UnexpectedGrant(line));
        };
        self.recv.queue[slot].state = LineState::Present;
        self.settle();
        Ok(())
    }

    /// The outcome of a `Write`: done, or refused because the rights were lost first, in
    /// which case the line goes back to Reserved, keeping its merged data, to be owned
    /// and written again.
    pub fn on_write(&mut self, line: LineAddr, ok: bool) -> Result<(), CopyError> {
        let Some(slot) = self.recv.oldest(|l| l.addr == line && l.writing) else {
            return self.anomaly(CopyError::UnexpectedWrite(line));
        };
        if ok {
            self.stats.lines_written += 1;
            self.recv.free(slot);
        } else {
            self.stats.write_retries += 1;
            let l = &mut self.recv.queue[slot];
            l.state = LineState::Reserved;
            l.writing = false;
        }
        self.settle();
        Ok(())
    }

    /// Starts the walker with page-table lines kept from earlier transfers.
    pub fn seed_walker(&mut self, lines: &[(LineAddr, LineData)]) {
        self.walker.seed(lines);
    }

    /// The walker's staged page-table lines, least recently used first.
    pub fn walker_lines(&self) -> &[(LineAddr, LineData)] {
        self.walker.staged()
    }

    /// Forgets the staged page-table lines (the OS changed the tables).
    pub fn flush_walker(&mut self) {
        self.walker.flush();
    }

    /// The OS's answer to a `Fault`: the page is now mapped (walk again), or the address
    /// is outside the process (the transfer fails).
    pub fn on_fault_resolved(&mut self, mapped: bool) -> Result<(), CopyError> {
        let Some(f) = self.fault.filter(|f| f.reported) else {
            return self.anomaly(CopyError::UnexpectedFaultAnswer);
        };
        if mapped {
            self.fault = None;
            // The OS changed the tables under the staged lines.
            self.walker.flush();
            self.settle();
        } else if self.status == CopyStatus::Running {
            self.status = CopyStatus::Failed(Failure::Unmapped {
                side: f.side,
                va: f.va,
            });
        }
        Ok(())
    }

    fn stream(&self, side: Side) -> &Stream {
        match side {
            Side::Send => &self.send,
            Side::Recv => &self.recv,
        }
    }

    fn stream_mut(&mut self, side: Side) -> &mut Stream {
        match side {
            Side::Send => &mut self.send,
            Side::Recv => &mut self.recv,
        }
    }

    fn anomaly(&mut self, e: CopyError) -> Result<(), CopyError> {
        self.stats.anomalies += 1;
        if cfg!(debug_assertions) {
            panic!("copy unit misuse: {e}");
        }
        Err(e)
    }

    /// Runs merge, reservation and translation until none makes progress.
    fn settle(&mut self) {
        if self.status != CopyStatus::Running {
            return;
        }
        while self.merge() | self.send.reserve() | self.recv.reserve() | self.drive_walker() {}
        if self.recv.freed == self.recv.lines {
            debug_assert_eq!(self.send.freed, self.send.lines);
            self.status = CopyStatus::Done;
        }
    }

    /// Copies every pair of Present lines with bytes still to exchange; frees send lines
    /// whose bytes are all consumed.
    fn merge(&mut self) -> bool {
        let mut progress = false;
        for i in self.send.window() {
            let slot = self.send.slot(i);
            if self.send.queue[slot].state != LineState::Present {
                continue;
            }
            let (left, right) = self.send.partners(i);
            if !self.send.queue[slot].left_copied && self.copy_pair(i, left) {
                self.send.queue[slot].left_copied = true;
                progress = true;
            }
            if !self.send.queue[slot].right_copied && self.copy_pair(i, right) {
                self.send.queue[slot].right_copied = true;
                progress = true;
            }
            if self.send.queue[slot].is_merged() {
                self.send.free(slot);
            }
        }
        progress
    }

    /// Copies the bytes send line `i` holds for receive line `k` if `k` is Present and
    /// not being written; marks `k`'s half done.
    fn copy_pair(&mut self, i: u64, k: u64) -> bool {
        let (send, recv) = (&self.send, &mut self.recv);
        let r = recv.slot(k);
        let target = &recv.queue[r];
        // The mark tells `k` from the line one lap earlier still in its slot.
        if target.state != LineState::Present || target.writing || target.mark != recv.lap(k) {
            return false;
        }
        debug_assert_eq!(recv.index_of(r), k);
        let (s0, s1) = send.span(i);
        let (r0, r1) = recv.span(k);
        let (o0, o1) = (s0.max(r0), s1.min(r1));
        debug_assert!(o0 < o1, "send line {i} and receive line {k} share no byte");
        let src = (o0 + send.align - i * LINE) as usize;
        let dst = (o0 + recv.align - k * LINE) as usize;
        let n = (o1 - o0) as usize;
        let from = &send.queue[send.slot(i)].data[src..src + n];
        let is_left = recv.partner_at(r0) == i;
        let target = &mut recv.queue[r];
        target.data[dst..dst + n].copy_from_slice(from);
        if is_left {
            target.left_copied = true;
        } else {
            target.right_copied = true;
        }
        true
    }

    /// Hands a finished walk's frame to its generator and starts the next walk; a fault
    /// blocks the walker until the OS answers.
    fn drive_walker(&mut self) -> bool {
        if self.fault.is_some() {
            return false;
        }
        let mut progress = false;
        if let Some(result) = self.walker.take_result() {
            let (side, page) = self.walk_for.take().expect("walks start with their page");
            match result {
                WalkResult::Translated(frame) => self.stream_mut(side).add_page(page, frame),
                WalkResult::Fault(va) => {
                    self.stats.faults += 1;
                    self.fault = Some(Fault {
                        side,
                        va,
                        reported: false,
                    });
                    return true;
                }
            }
            progress = true;
        }
        if self.walker.state() == WalkState::Idle {
            if let Some((side, page)) = self.pick_walk() {
                let s = self.stream(side);
                let (root, va) = (s.root, s.walk_va(page));
                if self.walker.start(root, va).is_ok() {
                    self.walk_for = Some((side, page));
                    progress = true;
                }
            }
        }
        progress
    }

    /// The page to walk next: a page a generator is waiting for before a prefetch, the
    /// send side first within each.
    fn pick_walk(&self) -> Option<(Side, u64)> {
        let send = self
            .send
            .wanted_page()
            .map(|(p, urgent)| (Side::Send, p, urgent));
        let recv = self
            .recv
            .wanted_page()
            .map(|(p, urgent)| (Side::Recv, p, urgent));
        [send, recv]
            .into_iter()
            .flatten()
            .min_by_key(|&(side, _, urgent)| (!urgent, side == Side::Recv))
            .map(|(side, page, _)| (side, page))
    }

    fn issue_write(&mut self) -> Option<CopyReq> {
        let slot = self
            .recv
            .oldest(|l| l.state == LineState::Present && !l.writing && l.is_merged())?;
        let mask = self.recv.mask(&self.recv.queue[slot]);
        let l = &mut self.recv.queue[slot];
        l.writing = true;
        Some(CopyReq::Write {
            line: l.addr,
            data: l.data,
            mask,
        })
    }

    fn issue_read(&mut self) -> Option<CopyReq> {
        let slot = self.send.oldest(|l| l.state == LineState::Reserved)?;
        self.stats.lines_read += 1;
        let l = &mut self.send.queue[slot];
        l.state = LineState::Requested;
        Some(CopyReq::Read { line: l.addr })
    }

    fn issue_own(&mut self) -> Option<CopyReq> {
        let slot = self.recv.oldest(|l| l.state == LineState::Reserved)?;
        self.stats.lines_owned += 1;
        let whole = self.recv.mask(&self.recv.queue[slot]) == u64::MAX;
        let l = &mut self.recv.queue[slot];
        l.state = LineState::Requested;
        Some(CopyReq::Own {
            line: l.addr,
            whole,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::pagetable::AddressSpace;
    use crate::os::phys::{FlatMem, FrameAllocator, PhysMem};

    /// One process holding both buffers, its pages mapped, the send buffer filled with a
    /// pattern and the receive buffer's lines with 0xee.
    struct Os {
        frames: FrameAllocator,
        mem: FlatMem,
        space: AddressSpace,
        t: Transfer,
    }

    impl Os {
        fn new(send_va: u64, recv_va: u64, len: u64) -> Self {
            let mut frames = FrameAllocator::new(1 << 20..1 << 24).unwrap();
            let mut mem = FlatMem::new();
            let mut space = AddressSpace::new(&mut frames, &mut mem).unwrap();
            for va in [send_va, recv_va] {
                let r = va..va + len.max(1);
                space.add_region(&mut frames, &mut mem, r, true).unwrap();
            }
            let mut os = Os {
                frames,
                mem,
                space,
                t: Transfer {
                    send: Buffer {
                        va: send_va,
                        root: 0,
                    },
                    recv: Buffer {
                        va: recv_va,
                        root: 0,
                    },
                    len,
                },
            };
            os.t.send.root = os.space.root();
            os.t.recv.root = os.space.root();
            for j in 0..len {
                let s = os.phys(send_va + j);
                os.mem.write_range(s, &[j as u8 ^ 0x5a]);
                let r = os.phys(recv_va + j);
                os.mem.write_range(r, &[0xee]);
            }
            os
        }

        fn phys(&self, va: u64) -> u64 {
            self.space.translate(&self.mem, va).unwrap()
        }

        fn unit(&self, lines: usize) -> CopyUnit {
            let cfg = CopyConfig {
                lines,
                ..CopyConfig::default()
            };
            CopyUnit::new(&cfg, &self.t).unwrap()
        }

        /// Answers the walker's reads until it needs none.
        fn walk(&self, u: &mut CopyUnit) {
            while let Some(line) = u.walker.awaiting().or_else(|| u.walker.next_read()) {
                u.on_read(line, &self.mem.read_line(line)).unwrap();
            }
        }

        /// Answers every request at once until the transfer ends.
        fn run(&mut self, u: &mut CopyUnit) {
            while let Some(req) = u.next_request() {
                self.answer(u, req);
            }
        }

        fn answer(&mut self, u: &mut CopyUnit, req: CopyReq) {
            match req {
                CopyReq::Read { line } => u.on_read(line, &self.mem.read_line(line)),
                CopyReq::Own { line, .. } => u.on_granted(line),
                CopyReq::Write { line, data, mask } => {
                    self.write(line, &data, mask);
                    u.on_write(line, true)
                }
                CopyReq::Fault { va, .. } => {
                    let mapped = self.space.contains(va);
                    if mapped {
                        let (f, m) = (&mut self.frames, &mut self.mem);
                        self.space.map_page(f, m, va).unwrap();
                    }
                    u.on_fault_resolved(mapped)
                }
            }
            .unwrap();
        }

        fn write(&mut self, line: LineAddr, data: &LineData, mask: u64) {
            let mut old = self.mem.read_line(line);
            for (b, (o, &d)) in old.iter_mut().zip(data).enumerate() {
                if mask >> b & 1 == 1 {
                    *o = d;
                }
            }
            self.mem.write_line(line, &old);
        }

        fn bytes(&self, va: u64, len: u64) -> Vec<u8> {
            (0..len)
                .map(|j| {
                    let mut b = [0];
                    self.mem.read_range(self.phys(va + j), &mut b);
                    b[0]
                })
                .collect()
        }

        fn assert_copied(&self) {
            let t = &self.t;
            assert_eq!(self.bytes(t.recv.va, t.len), self.bytes(t.send.va, t.len));
        }
    }

    const SEND: u64 = 0x10_0000;
    const RECV: u64 = 0x7f00_0020_0000;

    #[test]
    fn send_line_goes_reserved_requested_present_free() {
        let os = Os::new(SEND, RECV, 64);
        let mut u = os.unit(4);
        assert_eq!(u.lines(Side::Send)[0].state, LineState::Free);
        assert!(u.waiting_for_translation(Side::Send));
        os.walk(&mut u);
        let s = u.lines(Side::Send)[0].clone();
        assert_eq!(s.state, LineState::Reserved);
        assert_eq!(s.addr, os.phys(SEND));
        assert!(s.first && s.last && !s.mark);
        assert!(
            !s.left_copied && s.right_copied,
            "one partner: right half done"
        );
        assert_eq!(u.next_request(), Some(CopyReq::Read { line: s.addr }));
        assert_eq!(u.lines(Side::Send)[0].state, LineState::Requested);
        let recv_line = os.phys(RECV);
        assert_eq!(
            u.next_request(),
            Some(CopyReq::Own {
                line: recv_line,
                whole: true
            })
        );
        assert_eq!(u.next_request(), None);
        u.on_read(os.phys(SEND), &os.mem.read_line(os.phys(SEND)))
            .unwrap();
        // Present, but its receive line is not yet held.
        assert_eq!(u.lines(Side::Send)[0].state, LineState::Present);
        u.on_granted(recv_line).unwrap();
        assert_eq!(u.lines(Side::Send)[0].state, LineState::Free);
        assert_eq!(u.occupancy(Side::Send), 0);
    }

    #[test]
    fn receive_line_goes_reserved_requested_present_written_free() {
        let mut os = Os::new(SEND, RECV, 64);
        let mut u = os.unit(4);
        os.walk(&mut u);
        let line = os.phys(RECV);
        assert_eq!(u.lines(Side::Recv)[0].state, LineState::Reserved);
        u.next_request(); // the send read
        assert!(matches!(u.next_request(), Some(CopyReq::Own { .. })));
        assert_eq!(u.lines(Side::Recv)[0].state, LineState::Requested);
        u.on_granted(line).unwrap();
        assert_eq!(u.lines(Side::Recv)[0].state, LineState::Present);
        assert_eq!(u.next_request(), None, "nothing to write before the data");
        let src = os.phys(SEND);
        u.on_read(src, &os.mem.read_line(src)).unwrap();
        let r = &u.lines(Side::Recv)[0];
        assert!(r.left_copied && r.right_copied && !r.writing);
        let Some(CopyReq::Write {
            line: l,
            data,
            mask,
        }) = u.next_request()
        else {
            panic!("a write");
        };
        assert_eq!((l, mask), (line, u64::MAX));
        assert!(u.lines(Side::Recv)[0].writing);
        assert_eq!(u.status(), CopyStatus::Running);
        os.write(l, &data, mask);
        u.on_write(l, true).unwrap();
        assert_eq!(u.lines(Side::Recv)[0].state, LineState::Free);
        assert_eq!(u.status(), CopyStatus::Done);
        os.assert_copied();
        let st = u.stats();
        assert_eq!((st.lines_read, st.lines_owned, st.lines_written), (1, 1, 1));
    }

    #[test]
    fn lost_rights_send_a_merged_line_back_to_reserved() {
        let mut os = Os::new(SEND, RECV, 64);
        let mut u = os.unit(4);
        os.walk(&mut u);
        let (src, dst) = (os.phys(SEND), os.phys(RECV));
        u.next_request();
        u.next_request();
        u.on_granted(dst).unwrap();
        u.on_read(src, &os.mem.read_line(src)).unwrap();
        let Some(CopyReq::Write { data, .. }) = u.next_request() else {
            panic!("a write");
        };
        u.on_write(dst, false).unwrap();
        let r = &u.lines(Side::Recv)[0];
        assert_eq!(r.state, LineState::Reserved);
        assert!(r.left_copied && r.right_copied && !r.writing);
        assert_eq!(r.data, data, "merged data kept");
        assert_eq!(
            u.next_request(),
            Some(CopyReq::Own {
                line: dst,
                whole: true
            })
        );
        u.on_granted(dst).unwrap();
        os.run(&mut u);
        assert_eq!(u.status(), CopyStatus::Done);
        os.assert_copied();
        let st = u.stats();
        assert_eq!(
            (st.lines_owned, st.write_retries, st.lines_written),
            (2, 1, 1)
        );
    }

    #[test]
    fn shifted_lines_merge_from_two_partners_with_partial_masks() {
        // Send at offset 8, receive at 40: each receive line takes from two send lines.
        let mut os = Os::new(SEND + 8, RECV + 40, 150);
        let mut u = os.unit(2);
        os.walk(&mut u);
        let owns: Vec<_> = std::iter::from_fn(|| u.next_request()).collect();
        // 150 bytes from offset 8 span 3 send lines, from offset 40 span 3 receive lines.
        let dst = os.phys(RECV) & !63;
        assert_eq!(
            owns,
            [
                CopyReq::Read {
                    line: os.phys(SEND) & !63
                },
                CopyReq::Read {
                    line: (os.phys(SEND) & !63) + 64
                },
                CopyReq::Own {
                    line: dst,
                    whole: false
                },
                CopyReq::Own {
                    line: dst + 64,
                    whole: true
                },
            ]
        );
        for req in owns {
            os.answer(&mut u, req);
        }
        let write = u.next_request().unwrap();
        let CopyReq::Write { line, mask, .. } = write else {
            panic!("first line merged");
        };
        assert_eq!((line, mask), (dst, u64::MAX << 40));
        os.answer(&mut u, write);
        os.run(&mut u);
        assert_eq!(u.status(), CopyStatus::Done);
        os.assert_copied();
        // The bytes around the receive buffer keep their old value.
        assert_eq!(os.mem.read_line(dst)[39], 0);
        assert_eq!(os.mem.read_line(dst + 128)[(40 + 150) % 64], 0);
    }

    #[test]
    fn walks_come_before_writes_before_reads_before_owns() {
        let mut os = Os::new(SEND, RECV, 4 * 64);
        let mut u = os.unit(2);
        // The send page is translated first; the receive walk still outranks its read.
        for _ in 0..4 {
            let line = u.walker.next_read().unwrap();
            u.on_read(line, &os.mem.read_line(line)).unwrap();
        }
        assert_eq!(u.lines(Side::Send)[0].state, LineState::Reserved);
        let Some(CopyReq::Read { line }) = u.next_request() else {
            panic!("a read");
        };
        assert_ne!(line, os.phys(SEND), "the walk's read comes first");
        os.answer(&mut u, CopyReq::Read { line });
        os.walk(&mut u);
        let reqs: Vec<_> = std::iter::from_fn(|| u.next_request()).collect();
        assert!(matches!(
            reqs[..],
            [
                CopyReq::Read { .. },
                CopyReq::Read { .. },
                CopyReq::Own { .. },
                CopyReq::Own { .. }
            ]
        ));
        for req in reqs {
            os.answer(&mut u, req);
        }
        // Receive lines 0 and 1 merged, send lines 2 and 3 reserved: the writes go first.
        let order: Vec<_> = std::iter::from_fn(|| u.next_request())
            .map(|r| match r {
                CopyReq::Read { .. } => 'r',
                CopyReq::Own { .. } => 'o',
                CopyReq::Write { .. } => 'w',
                CopyReq::Fault { .. } => 'f',
            })
            .collect();
        assert_eq!(order, ['w', 'w', 'r', 'r']);
    }

    #[test]
    fn translation_is_double_buffered() {
        let pages = 3;
        let mut os = Os::new(SEND, RECV, pages * PAGE_BYTES);
        let mut u = os.unit(4);
        os.walk(&mut u);
        for s in [&u.send, &u.recv] {
            let have: Vec<_> = s.pages.iter().flatten().map(|p| p.0).collect();
            assert_eq!(have.len(), 2, "current and next page");
            assert!(have.contains(&page_of(s.va)) && have.contains(&(page_of(s.va) + PAGE_BYTES)));
        }
        assert_eq!(u.walker.state(), WalkState::Idle, "no third page");
        assert_eq!(u.stats().walk.walks, 4);
        // Once page 0's lines all have addresses its frame goes and page 2 is walked.
        while u.send.tail < 64 {
            let req = u.next_request().unwrap();
            os.answer(&mut u, req);
        }
        let have: Vec<_> = u.send.pages.iter().flatten().map(|p| p.0).collect();
        assert!(!have.contains(&SEND), "{have:x?}");
        assert!(u.send.pages.iter().flatten().count() <= 2);
        os.run(&mut u);
        assert_eq!(u.status(), CopyStatus::Done);
        os.assert_copied();
        assert_eq!(u.stats().walk.walks, 6);
    }

    #[test]
    fn a_free_line_waits_for_its_page() {
        let os = Os::new(SEND, RECV, 64);
        let mut u = os.unit(1);
        assert!(u.waiting_for_translation(Side::Send));
        assert_eq!(u.occupancy(Side::Send), 0);
        assert_eq!(u.stats().translation_stalls, 2);
        os.walk(&mut u);
        assert!(!u.waiting_for_translation(Side::Send));
        assert_eq!(u.occupancy(Side::Send), 1);
    }

    #[test]
    fn a_fault_is_reported_and_resolved_by_mapping() {
        let mut frames = FrameAllocator::new(1 << 20..1 << 24).unwrap();
        let mut mem = FlatMem::new();
        let mut space = AddressSpace::new(&mut frames, &mut mem).unwrap();
        let range = SEND..SEND + 2 * PAGE_BYTES;
        space
            .add_region(&mut frames, &mut mem, range, false)
            .unwrap();
        space.map_page(&mut frames, &mut mem, SEND).unwrap();
        let len = 2 * PAGE_BYTES - 100;
        space
            .add_region(&mut frames, &mut mem, RECV..RECV + len, true)
            .unwrap();
        let buf = |va| Buffer {
            va,
            root: space.root(),
        };
        let t = Transfer {
            send: buf(SEND + 100),
            recv: buf(RECV),
            len,
        };
        let mut os = Os {
            frames,
            mem,
            space,
            t,
        };
        let mut u = CopyUnit::new(&CopyConfig::default(), &t).unwrap();
        let mut faults = Vec::new();
        while let Some(req) = u.next_request() {
            if let CopyReq::Fault { side, va } = req {
                faults.push((side, va));
            }
            os.answer(&mut u, req);
        }
        assert_eq!(faults, [(Side::Send, SEND + PAGE_BYTES)]);
        assert_eq!(u.status(), CopyStatus::Done);
        os.assert_copied();
        assert_eq!(u.stats().faults, 1);
    }

    #[test]
    fn an_address_outside_the_process_fails_the_transfer() {
        let mut os = Os::new(SEND, RECV, PAGE_BYTES);
        os.t.len = 2 * PAGE_BYTES;
        let mut u = os.unit(4);
        os.run(&mut u);
        assert_eq!(
            u.status(),
            CopyStatus::Failed(Failure::Unmapped {
                side: Side::Send,
                va: SEND + PAGE_BYTES
            })
        );
        assert_eq!(u.next_request(), None);
    }

    #[test]
    fn an_empty_transfer_is_done_at_once() {
        let os = Os::new(SEND, RECV + 3, 0);
        let mut u = os.unit(4);
        assert_eq!(u.status(), CopyStatus::Done);
        assert_eq!(u.next_request(), None);
        assert_eq!(u.stats(), CopyStats::default());
    }

    #[test]
    fn bad_configurations_and_buffers_are_refused() {
        let os = Os::new(SEND, RECV, 64);
        let cfg = CopyConfig {
            lines: 0,
            ..CopyConfig::default()
        };
        assert_eq!(CopyUnit::new(&cfg, &os.t).err(), Some(CopyError::NoLines));
        let mut t = os.t;
        t.recv.va = u64::MAX - 70;
        let r = CopyUnit::new(&CopyConfig::default(), &t);
        assert_eq!(r.err(), Some(CopyError::BadTransfer));
    }

    #[test]
    fn answers_nobody_asked_for_are_counted_and_ignored() {
        let os = Os::new(SEND, RECV, 64);
        type Answer = fn(&mut CopyUnit) -> Result<(), CopyError>;
        let misuses: [Answer; 4] = [
            |u| u.on_read(0x40, &[0; 64]),
            |u| u.on_granted(0x40),
            |u| u.on_write(0x40, true),
            |u| u.on_fault_resolved(true),
        ];
        for misuse in misuses {
            let mut u = os.unit(4);
            let before = u.lines(Side::Send).to_vec();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| misuse(&mut u)));
            if cfg!(debug_assertions) {
                assert!(r.is_err(), "debug builds stop at misuse");
            } else {
                assert!(r.unwrap().is_err());
                assert_eq!(u.stats().anomalies, 1);
                assert_eq!(u.lines(Side::Send), &before[..]);
            }
        }
    }
}
