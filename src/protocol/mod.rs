//! Protocol tables as data: a small DSL close to gem5's SLICC transition syntax.
//!
//! Each controller machine is described by one text file. Loading resolves every
//! name (states, events, Rust action functions from a caller-supplied registry) and
//! compiles the table into a dense `(state, event) -> Cell` array, so the simulator's
//! hot path does a single vector index and no string work.
//!
//! # Grammar
//!
//! Whitespace, `// line comments` and `/* block comments */` may appear between any
//! two tokens. Identifiers are `[A-Za-z_][A-Za-z0-9_]*`; strings are `"..."` on one
//! line, with the escapes `\"` and `\\` only.
//!
//! ```text
//! machine_file  := header state_block event_block item*
//! overlay_file  := overlay_hdr state_block? event_block? item*
//! header        := 'machine' '(' IDENT [',' desc] ')' ';'
//! overlay_hdr   := 'overlay' '(' IDENT [',' desc] ')' ';'
//! desc          := 'desc' '=' STRING
//! state_block   := 'state_declaration' '(' 'State' [',' desc] ')' '{' state_entry+ '}'
//! state_entry   := IDENT ',' 'AccessPermission' ':' PERM ',' KIND [',' desc] ';'
//! PERM          := 'Invalid' | 'NotPresent' | 'Busy' | 'Read_Only' | 'Read_Write'
//! KIND          := 'stable' | 'transient'
//! event_block   := 'enumeration' '(' 'Event' [',' desc] ')' '{' event_entry+ '}'
//! event_entry   := IDENT [',' desc] ';'
//! item          := ['override'] ( transition | stall | impossible )
//! transition    := 'transition' '(' set ',' set [',' IDENT] ')' '{' (IDENT ';')* '}'
//! stall         := 'stall' '(' set ',' set ')' ';'
//! impossible    := 'impossible' '(' set ',' set ')' ';'
//! set           := IDENT | '{' IDENT (',' IDENT)* '}'
//! ```
//!
//! A transition without a next state leaves the line in the state it was in. `stall`
//! cells make the request wait until the line's state changes; reaching an
//! `impossible` cell is an internal error. `override` is only allowed in overlay
//! files (see [`apply_overlay`]) and replaces a cell of the base machine; without it,
//! redefining any cell is a duplicate error.
//!
//! # Validation
//!
//! Loading stops at the first problem in file order and reports it as one line,
//! `file:line:col: reason` (1-based, columns counted in characters): syntax errors
//! (at the offending token, saying what was expected), unknown state / event / action
//! / next-state names, duplicate declarations, duplicate cells (naming the first
//! definition), an overlay for another machine, and finally an incomplete table,
//! reported at the declaration of the state whose row has the first missing cell.
//! Duplicate-cell errors point at the keyword that starts the second definition.

mod markdown;
mod parse;

use std::collections::HashMap;

pub use parse::{apply_overlay, lint, parse_machine};

/// Index of a state in [`Machine::states`].
pub type StateId = u16;
/// Index of an event in [`Machine::events`].
pub type EventId = u16;
/// Index of an action in the registry passed to [`parse_machine`] / [`apply_overlay`].
pub type ActionId = u16;

/// SLICC access permission of a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Permission {
    Invalid,
    NotPresent,
    Busy,
    ReadOnly,
    ReadWrite,
}

impl Permission {
    /// The DSL spelling (`Read_Only`, ...).
    pub fn dsl_name(self) -> &'static str {
        match self {
            Permission::Invalid => "Invalid",
            Permission::NotPresent => "NotPresent",
            Permission::Busy => "Busy",
            Permission::ReadOnly => "Read_Only",
            Permission::ReadWrite => "Read_Write",
        }
    }

    /// Parses the DSL spelling.
    pub fn from_dsl(s: &str) -> Option<Permission> {
        Some(match s {
            "Invalid" => Permission::Invalid,
            "NotPresent" => Permission::NotPresent,
            "Busy" => Permission::Busy,
            "Read_Only" => Permission::ReadOnly,
            "Read_Write" => Permission::ReadWrite,
            _ => return None,
        })
    }
}

/// One declared state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDecl {
    pub name: String,
    pub stable: bool,
    pub permission: Permission,
    pub desc: String,
    pub line: u32,
    pub col: u32,
}

/// One declared event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventDecl {
    pub name: String,
    pub desc: String,
    pub line: u32,
    pub col: u32,
}

/// What happens when `event` arrives for a line in `state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Run `actions(first_action, n_actions)` in order, then move to `next`.
    Transition {
        next: StateId,
        // Narrow fields keep a cell in 8 bytes, so the table's busy rows share host
        // cache lines; loading rejects tables that would not fit.
        first_action: u16,
        n_actions: u8,
        /// This cell's slot among the machine's transition counters: only transition
        /// cells are counted, so a controller's counters stay small (and in the host's
        /// cache) however sparse the table is.
        counter: u16,
    },
    /// The request waits until the line's state changes.
    Stall,
    /// Reaching this cell is an internal error.
    Impossible,
}

const _: () = assert!(std::mem::size_of::<Cell>() == 8);

/// Source-level description of one cell of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransitionInfo {
    pub state: StateId,
    pub event: EventId,
    pub cell: Cell,
    pub action_names: Vec<String>,
    /// File that defined the cell (an overlay file for cells an overlay added or replaced),
    /// named as it was given to the loader.
    pub file: String,
    /// Position of the statement's first keyword (`transition`, `stall`, `impossible`, or
    /// the `override` before it); merging overlays keeps it.
    pub line: u32,
    pub col: u32,
}

/// An overlay that was applied to build a [`Machine`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlayInfo {
    pub file: String,
    pub desc: String,
}

/// A loading error: `file:line:col: msg`.
pub type ProtocolError = crate::textparse::PosError;

/// A loaded, complete protocol table for one controller machine.
#[derive(Clone, Debug)]
pub struct Machine {
    name: String,
    desc: String,
    file: String,
    states: Vec<StateDecl>,
    /// File that declared each state (differs from `file` for overlay states).
    state_files: Vec<String>,
    events: Vec<EventDecl>,
    state_index: HashMap<String, StateId>,
    event_index: HashMap<String, EventId>,
    /// Position of the `state_declaration` and `enumeration` keywords in `file`.
    states_pos: (u32, u32),
    events_pos: (u32, u32),
    n_events: usize,
    /// `cells[s * n_events + e]`.
    cells: Vec<Cell>,
    action_seq: Vec<ActionId>,
    /// The `(state, event)` of each transition counter, in counter order.
    counted: Vec<(StateId, EventId)>,
    transitions: Vec<TransitionInfo>,
    overlays: Vec<OverlayInfo>,
}

impl Machine {
    /// Machine name from the `machine(...)` header.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Description from the `machine(...)` header.
    pub fn desc(&self) -> &str {
        &self.desc
    }

    /// The base file the machine was loaded from.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Overlays applied on top of the base file, in order.
    pub fn overlays(&self) -> &[OverlayInfo] {
        &self.overlays
    }

    pub fn states(&self) -> &[StateDecl] {
        &self.states
    }

    pub fn events(&self) -> &[EventDecl] {
        &self.events
    }

    /// Dense lookup of the cell for `(s, e)`. Panics if either id is out of range.
    #[inline]
    pub fn cell(&self, s: StateId, e: EventId) -> Cell {
        self.cells[s as usize * self.n_events + e as usize]
    }

    /// The action sequence of a [`Cell::Transition`].
    #[inline]
    pub fn actions(&self, first_action: u16, n_actions: u8) -> &[ActionId] {
        let start = first_action as usize;
        &self.action_seq[start..start + n_actions as usize]
    }

    pub fn state_id(&self, name: &str) -> Option<StateId> {
        self.state_index.get(name).copied()
    }

    pub fn event_id(&self, name: &str) -> Option<EventId> {
        self.event_index.get(name).copied()
    }

    pub fn state_name(&self, s: StateId) -> &str {
        &self.states[s as usize].name
    }

    pub fn event_name(&self, e: EventId) -> &str {
        &self.events[e as usize].name
    }

    pub fn permission(&self, s: StateId) -> Permission {
        self.states[s as usize].permission
    }

    pub fn is_stable(&self, s: StateId) -> bool {
        self.states[s as usize].stable
    }

    /// Number of transition cells, the length of a controller's transition counters.
    pub fn n_counters(&self) -> usize {
        self.counted.len()
    }

    /// The `(state, event)` cell counted by transition counter `k`.
    pub fn counted_cell(&self, k: usize) -> (StateId, EventId) {
        self.counted[k]
    }

    /// Every cell (transition, stall and impossible), in `(state, event)` order.
    pub fn transitions(&self) -> &[TransitionInfo] {
        &self.transitions
    }

    /// Looks up states the simulator relies on; the error names the file and the
    /// first missing state and points at the `state_declaration` block.
    pub fn require_states(&self, names: &[&str]) -> Result<Vec<StateId>, ProtocolError> {
        names
            .iter()
            .map(|n| {
                self.state_id(n).ok_or_else(|| ProtocolError {
                    file: self.file.clone(),
                    line: self.states_pos.0,
                    col: self.states_pos.1,
                    msg: format!(
                        "machine '{}' has no state '{}' (required by the simulator)",
                        self.name, n
                    ),
                })
            })
            .collect()
    }

    /// Looks up events the simulator relies on; see [`Machine::require_states`].
    pub fn require_events(&self, names: &[&str]) -> Result<Vec<EventId>, ProtocolError> {
        names
            .iter()
            .map(|n| {
                self.event_id(n).ok_or_else(|| ProtocolError {
                    file: self.file.clone(),
                    line: self.events_pos.0,
                    col: self.events_pos.1,
                    msg: format!(
                        "machine '{}' has no event '{}' (required by the simulator)",
                        self.name, n
                    ),
                })
            })
            .collect()
    }

    /// Renders the machine as GitHub-flavoured Markdown: heading, states, events,
    /// transitions (impossible cells counted, not listed), each with the `file:line` of
    /// the statement that defined it, and a compact matrix.
    pub fn to_markdown(&self) -> String {
        markdown::render(self)
    }
}

/// One controller's transition counts, indexed by the cells' counters
/// ([`Machine::counted_cell`]). Sixteen bits per cell keep a controller's counts in a few
/// host cache lines, which every transition touches; the carries go to a wide array that
/// only every 65,536th count reaches, allocated then.
#[derive(Debug, Default)]
pub struct TransitionCounts {
    low: Vec<u16>,
    /// Carries per counter: empty until the first carry.
    high: Vec<u64>,
}

crate::reuse::clone_by_fields!(TransitionCounts { low, high });

impl TransitionCounts {
    /// `n` counters at zero.
    pub fn new(n: usize) -> Self {
        TransitionCounts {
            low: vec![0; n],
            high: Vec::new(),
        }
    }

    /// Counts one run of the transition with counter `k`.
    #[inline(always)]
    pub fn bump(&mut self, k: usize) {
        let c = &mut self.low[k];
        *c = c.wrapping_add(1);
        if *c == 0 {
            self.carry(k);
        }
    }

    #[cold]
    #[inline(never)]
    fn carry(&mut self, k: usize) {
        if self.high.is_empty() {
            self.high = vec![0; self.low.len()];
        }
        self.high[k] += 1;
    }

    /// Counts `n` more runs of the transition with counter `k`.
    pub fn add(&mut self, k: usize, n: u64) {
        let total = self.get(k) + n;
        self.low[k] = total as u16;
        if total >> 16 != 0 || !self.high.is_empty() {
            if self.high.is_empty() {
                self.high = vec![0; self.low.len()];
            }
            self.high[k] = total >> 16;
        }
    }

    /// Runs counted by counter `k`.
    pub fn get(&self, k: usize) -> u64 {
        let high = self.high.get(k).copied().unwrap_or(0);
        (high << 16) | self.low[k] as u64
    }

    /// Number of counters.
    pub fn len(&self) -> usize {
        self.low.len()
    }

    /// True when there are no counters (a controller that does not count).
    pub fn is_empty(&self) -> bool {
        self.low.is_empty()
    }

    /// Calls `f` with each counter that counted a run, in counter order, and sets every
    /// counter back to zero.
    pub fn drain_counted(&mut self, mut f: impl FnMut(usize)) {
        let high = &self.high;
        for (k, low) in self.low.iter_mut().enumerate() {
            if *low != 0 || high.get(k).is_some_and(|&h| h != 0) {
                f(k);
                *low = 0;
            }
        }
        self.high.clear();
    }

    /// Every counter's runs, in counter order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.len()).map(|k| self.get(k))
    }
}

#[cfg(test)]
mod tests;
