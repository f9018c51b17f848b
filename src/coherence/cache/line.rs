//! A line as the controller keeps it: in a way of the L1 or the L2 ([`Line`]), and while a
//! transaction is outstanding in its TBE ([`Tbe`]); and the transition's view of both
//! (SLICC's `cache_entry` and `tbe`), which every action goes through.

use crate::mem::{line_of, read_bytes, write_bytes, LineAddr, LineData, LINE_BYTES};
use crate::protocol::StateId;

use super::request::{AccessKind, CoreReq, MopedReq};
use super::{CacheCtrl, Ctx, Loc};

/// Stores the bytes of `data` that `mask` selects into `line`.
pub(super) fn write_masked(line: &mut LineData, data: &LineData, mask: u64) {
    if mask == u64::MAX {
        *line = *data;
        return;
    }
    for (i, b) in line.iter_mut().enumerate() {
        if mask >> i & 1 == 1 {
            *b = data[i];
        }
    }
}

/// A copy of a cached line: coherence state, data and dirty bit, and whether a prefetch
/// brought it and no demand access has touched it since (for the prefetcher's useful count
/// and its tagged trigger). The arrays keep it in two parts ([`Way`] and [`DataStore`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Line {
    pub state: StateId,
    pub data: LineData,
    pub dirty: bool,
    pub prefetched: bool,
}

/// What a way of the L1 or the L2 holds beside its tag: the line's state and bits, and
/// where its 64 bytes sit in the controller's [`DataStore`]. Eight bytes, so a set's tags
/// and states share a host cache line or two and a lookup or a victim choice never reads
/// line data; a line moving between the levels moves only this.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(super) struct Way {
    pub state: StateId,
    pub dirty: bool,
    pub prefetched: bool,
    /// Index of the line's bytes in the [`DataStore`].
    pub data: u32,
}

/// The bytes of the lines a controller's arrays hold, apart from their states: one entry
/// per line, reused through a free list (which entry a line gets decides nothing).
#[derive(Debug, Default)]
pub(super) struct DataStore {
    lines: Vec<LineData>,
    free: Vec<u32>,
}

crate::reuse::clone_by_fields!(DataStore { lines, free });

impl DataStore {
    /// Room for `n` lines (the arrays' ways).
    pub(super) fn with_capacity(n: usize) -> DataStore {
        DataStore {
            lines: Vec::with_capacity(n),
            free: Vec::new(),
        }
    }

    /// An entry holding `data`.
    #[inline]
    pub(super) fn alloc(&mut self, data: LineData) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.lines[i as usize] = data;
                i
            }
            None => {
                self.lines.push(data);
                (self.lines.len() - 1) as u32
            }
        }
    }

    /// Gives entry `i` back (its line left the arrays).
    #[inline]
    pub(super) fn release(&mut self, i: u32) {
        debug_assert!(!self.free.contains(&i), "data entry {i} released twice");
        self.free.push(i);
    }

    #[inline]
    pub(super) fn get(&self, i: u32) -> &LineData {
        &self.lines[i as usize]
    }

    #[inline]
    pub(super) fn get_mut(&mut self, i: u32) -> &mut LineData {
        &mut self.lines[i as usize]
    }
}

/// Performs a core's load or store on a line's bytes; returns the value loaded or stored
/// (a store also sets the way's dirty bit).
#[inline]
pub(super) fn access(way: &mut Way, data: &mut LineData, req: &CoreReq) -> u64 {
    let offset = (req.addr - line_of(req.addr)) as usize;
    let size = req.size as usize;
    match req.kind {
        AccessKind::Load => read_bytes(data, offset, size),
        AccessKind::Store => {
            write_bytes(data, offset, size, req.value);
            way.dirty = true;
            req.value
        }
    }
}

/// Who supplied a miss's data, for the miss statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Source {
    None,
    Cache,
    Memory,
}

/// Transaction buffer entry (an MSHR): an outstanding miss or writeback.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tbe {
    pub addr: LineAddr,
    /// State of a line that left the arrays (writebacks); `None` while the line has a way.
    pub state: Option<StateId>,
    pub data: LineData,
    pub dirty: bool,
    pub acks_pending: i32,
    pub acks_known: bool,
    pub req: Option<CoreReq>,
    /// The MOPED request this transaction serves, instead of a core request.
    pub moped: Option<MopedReq>,
    pub(super) source: Source,
}

impl Tbe {
    /// An empty TBE for `addr`.
    pub fn new(addr: LineAddr) -> Tbe {
        Tbe {
            addr,
            state: None,
            data: [0; LINE_BYTES],
            dirty: false,
            acks_pending: 0,
            acks_known: false,
            req: None,
            moped: None,
            source: Source::None,
        }
    }
}

impl CacheCtrl {
    /// The way holding the line, if any.
    pub(super) fn way(&self, addr: LineAddr) -> Option<&Way> {
        match self.loc(addr) {
            Loc::L1(s) => Some(self.l1.get(s)),
            Loc::L2(s) => Some(self.l2.get(s)),
            _ => None,
        }
    }

    /// A copy of the line in a way, if any.
    pub(super) fn line(&self, addr: LineAddr) -> Option<Line> {
        self.way(addr).map(|w| Line {
            state: w.state,
            data: *self.store.get(w.data),
            dirty: w.dirty,
            prefetched: w.prefetched,
        })
    }

    /// A way for a line entering the arrays, its bytes stored.
    pub(super) fn new_way(&mut self, state: StateId, data: LineData, dirty: bool) -> Way {
        Way {
            state,
            dirty,
            prefetched: false,
            data: self.store.alloc(data),
        }
    }

    /// A line leaves the arrays for good: its bytes' entry is free again.
    pub(super) fn drop_way(&mut self, way: Way) {
        self.store.release(way.data);
    }

    pub(super) fn tbe(&self, addr: LineAddr) -> Option<&Tbe> {
        self.tbes.iter().find(|t| t.addr == addr)
    }

    pub(super) fn tbe_mut(&mut self, addr: LineAddr) -> &mut Tbe {
        let node = self.params.node;
        self.tbes
            .iter_mut()
            .find(|t| t.addr == addr)
            .unwrap_or_else(|| panic!("L2Cache[{node}]: no TBE for {addr:#x}"))
    }

    // ---- The transition's line (SLICC's cache_entry and tbe) ----

    /// The line's state as the transition sees it: in its way, else in its TBE, else I.
    #[inline]
    pub(super) fn state_in(&self, ctx: &Ctx) -> StateId {
        match ctx.entry {
            Loc::L1(s) => self.l1.get(s).state,
            Loc::L2(s) => self.l2.get(s).state,
            _ => ctx
                .tbe
                .and_then(|i| self.tbes[i].state)
                .unwrap_or(self.ids.i),
        }
    }

    #[inline]
    pub(super) fn set_state_in(&mut self, ctx: &Ctx, next: StateId) {
        match ctx.entry {
            Loc::L1(s) => self.l1.get_mut(s).state = next,
            Loc::L2(s) => self.l2.get_mut(s).state = next,
            _ => match ctx.tbe {
                Some(i) => self.tbes[i].state = Some(next),
                None => {
                    debug_assert_eq!(next, self.ids.i, "a line without a way or TBE must be I")
                }
            },
        }
    }

    /// An action met a line without the cache entry or TBE its table cell guarantees: a bug
    /// in the protocol's tables (out of line, so the accessors below stay small).
    #[cold]
    #[inline(never)]
    pub(super) fn missing(&self, what: &str, addr: LineAddr) -> ! {
        panic!("{}: no {what} for {addr:#x}", self.name())
    }

    /// The transition's cache entry; actions call this only where the table guarantees one.
    #[inline]
    pub(super) fn entry<'c>(&'c self, ctx: &Ctx) -> &'c Way {
        match ctx.entry {
            Loc::L1(s) => self.l1.get(s),
            Loc::L2(s) => self.l2.get(s),
            _ => self.missing("cache entry", ctx.addr),
        }
    }

    /// The transition's cache entry's bytes.
    #[inline]
    pub(super) fn entry_data<'c>(&'c self, ctx: &Ctx) -> &'c LineData {
        self.store.get(self.entry(ctx).data)
    }

    /// The transition's cache entry and its bytes, to change them.
    #[inline]
    pub(super) fn entry_mut<'c>(&'c mut self, ctx: &Ctx) -> (&'c mut Way, &'c mut LineData) {
        let way = match ctx.entry {
            Loc::L1(s) => self.l1.get_mut(s),
            Loc::L2(s) => self.l2.get_mut(s),
            _ => self.missing("cache entry", ctx.addr),
        };
        let data = self.store.get_mut(way.data);
        (way, data)
    }

    /// The transition's TBE; actions call this only where the table guarantees one.
    #[inline]
    pub(super) fn tbe_in<'c>(&'c mut self, ctx: &Ctx) -> &'c mut Tbe {
        match ctx.tbe {
            Some(i) => &mut self.tbes[i],
            None => self.missing("TBE", ctx.addr),
        }
    }
}
