//! MPI matching at the matching MOPED (paper, section 4.2), behind one seam for the
//! matching hardware other designs proposed, and backoff's revocation of unmatched
//! descriptors (section 4.4).
//!
//! The matching MOPED keeps MPI's two queues for each receiving process: the
//! posted-receive queue (PRQ) and the unexpected-message queue (UMQ), each in posting
//! order. Forwarded copies land in the descriptor table and are checked one at a time in
//! arrival order: an arriving send searches its receiver's PRQ, an arriving receive the
//! UMQ; the earliest eligible entry is its partner, and an unmatched arrival joins the
//! queue of its own kind. Two descriptors match when they come from the same program, one
//! is a send and the other a receive, their contexts are equal, the send goes to the
//! receiver's rank, and the receive's source and tag are the send's or wildcards. That is
//! MPI's discipline, so messages between a pair of processes do not overtake one another
//! when their descriptors arrive in posting order. [`reference`] is the textbook model,
//! kept as the oracle for tests.
//!
//! Where the queues live and what an operation costs is the engine's, one file each behind
//! [`Engine`], chosen by `moped.matcher` ([`MatcherKind`]):
//! - [`fsm`]: the paper's state machine, one walk over the waiting copies, one per cycle;
//! - [`cam`] (`cam`, `cam4`, `cam64`): the two-level queue of Xiong, Skjellum and
//!   Herbordt, a CAM over 1, 4 or 64 hardware linked lists;
//! - [`alpu`]: the associative list processing unit of Underwood et al. (IPDPS 2005);
//! - [`hash`]: the hash-based MPI processor of Mattheakis and Papaefstathiou (ACM TACO
//!   2013), buckets by source rank;
//! - [`microcoded`]: the microcoded match unit of a NIC ("An Architecture to Perform NIC
//!   Based MPI Matching"), every search run by its match program on the interpreter.
//!
//! Matching works on the copies forwarded to this MOPED (entries without the Reserved
//! bit); a MOPED that is its own descriptor's matching MOPED forwards a copy to itself.

pub mod alpu;
pub mod cam;
pub mod fsm;
pub mod hash;
pub mod microcoded;
pub mod nic_cpu;
pub mod reference;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::envelope::{Kind, Peer, ProgramId, Rank, Tag};

use super::desc::{DescIndex, DescTable, Descriptor, MATCHED, NEEDS_MATCH};
use super::ports::PortError;

/// The matching hardware of every MOPED (`moped.matcher`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MatcherKind {
    /// The MOPED paper's state machine.
    #[default]
    Fsm,
    /// Two-level queue: CAM over one hardware linked list.
    Cam,
    /// Two-level queue over 4 parallel lists ("Parallel-two-level").
    Cam4,
    /// Two-level queue over 64 parallel lists ("Parallel-two-level-64").
    Cam64,
    /// Associative list processing unit.
    Alpu,
    /// Hash-based MPI processor.
    Hash,
    /// Microcoded match unit running its match program.
    Microcoded,
}

impl MatcherKind {
    pub const ALL: [MatcherKind; 7] = [
        MatcherKind::Fsm,
        MatcherKind::Cam,
        MatcherKind::Cam4,
        MatcherKind::Cam64,
        MatcherKind::Alpu,
        MatcherKind::Hash,
        MatcherKind::Microcoded,
    ];

    /// The name `moped.matcher` and the experiments' CSV use.
    pub fn name(self) -> &'static str {
        match self {
            MatcherKind::Fsm => "fsm",
            MatcherKind::Cam => "cam",
            MatcherKind::Cam4 => "cam4",
            MatcherKind::Cam64 => "cam64",
            MatcherKind::Alpu => "alpu",
            MatcherKind::Hash => "hash",
            MatcherKind::Microcoded => "microcoded",
        }
    }

    /// Builds this engine.
    pub fn build(self, params: &MatchingParams) -> Box<dyn Engine> {
        match self {
            MatcherKind::Fsm => Box::new(fsm::Fsm::default()),
            MatcherKind::Cam => Box::new(cam::TwoLevel::new(params, 1)),
            MatcherKind::Cam4 => Box::new(cam::TwoLevel::new(params, 4)),
            MatcherKind::Cam64 => Box::new(cam::TwoLevel::new(params, 64)),
            MatcherKind::Alpu => Box::new(alpu::Alpu::new(params)),
            MatcherKind::Hash => Box::new(hash::Hash::new(params)),
            MatcherKind::Microcoded => Box::new(microcoded::engine::Microcoded::new(params)),
        }
    }
}

impl fmt::Display for MatcherKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MatcherKind {
    type Err = String;

    fn from_str(s: &str) -> Result<MatcherKind, String> {
        MatcherKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = MatcherKind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown matcher `{s}`, expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// Sizes, cycle costs and clocks of the engines (`[moped.matching]`). An engine counts its
/// own cycles at its own clock (`moped.matching.<engine>.mhz`); the MOPED waits the time
/// they take at its clock. Where a paper gives the number it is cited; the rest are
/// choices, said as such.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MatchingParams {
    /// Entries of the two-level queue's CAM, per queue (Xiong et al.: 256, 1 cycle to insert
    /// and to match).
    pub cam_entries: usize,
    /// Entries of its hardware linked lists, all lists of one queue together (32,768).
    pub list_entries: usize,
    /// Cycles per list element traversed (3), in the two-level queue and the hash buckets,
    /// whose lists the two-level queue's were modelled on.
    pub list_cycles: u64,
    /// ALPU cells (Xiong et al. compare against a 256-entry ALPU).
    pub alpu_cells: usize,
    /// Buckets of the hash-based processor (64, by source rank).
    pub hash_buckets: usize,
    /// When a check's result (a pair to forward, a copy to refuse) takes effect.
    pub result_at: ResultAt,
    /// The MOPED paper's state machine: the MOPED's own clock by default.
    pub fsm: Clock,
    /// The two-level queue over one list: its Fmax, 321.3 MHz (Xiong et al., section V.B).
    pub cam: Clock,
    /// Over 4 lists ("Parallel-two-level"): 234 MHz (section V.B).
    pub cam4: Clock,
    /// Over 64 lists ("Parallel-two-level-64"): 168 MHz (section V.B).
    pub cam64: Clock,
    /// The hash-based processor: the MOPED's clock by default, a choice (its paper's clock
    /// was not available to us; Xiong et al. compare times, not clocks).
    pub hash: Clock,
    /// The microcoded match unit and its list manager.
    pub microcoded: MicrocodedParams,
    /// The ALPU and the NIC that walks its overflow list.
    pub alpu: AlpuParams,
}

/// An engine's clock (`moped.matching.<engine>.mhz`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Clock {
    /// Clock in MHz; 0 runs the engine at the MOPED's clock (`system.core_ghz`).
    pub mhz: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock { mhz: 0.0 }
    }
}

impl Clock {
    pub const fn mhz(mhz: f64) -> Clock {
        Clock { mhz }
    }
}

/// The microcoded match unit of Hemmert, Underwood and Rodrigues (CLUSTER 2007) and the
/// list manager that streams its list to it (`[moped.matching.microcoded]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MicrocodedParams {
    /// The unit's clock in MHz: 150, its FPGA prototype (section 7; 750 is the paper's
    /// ASIC estimate); 0 for the MOPED's.
    pub mhz: f64,
    /// Cycles from the list manager's request to its local memory to the first word: 10,
    /// the memory latency of every design point the paper compares (Tables 2 and 3).
    pub memory_cycles: u64,
    /// List items the list manager keeps cached from the list's head: 2 ("two or three
    /// 64 byte items", section 3.2).
    pub cache_items: usize,
    /// The program flushes the item the list manager sent past a match (the paper's,
    /// section 4.3); false: the manager drops it from the FIFO and the program goes
    /// straight to the next header.
    pub flush: bool,
}

impl Default for MicrocodedParams {
    fn default() -> Self {
        MicrocodedParams {
            mhz: 150.0,
            memory_cycles: 10,
            cache_items: 2,
            flush: true,
        }
    }
}

impl MicrocodedParams {
    /// What the list manager does.
    pub fn feed(&self) -> microcoded::list_manager::Feed {
        microcoded::list_manager::Feed {
            memory_cycles: self.memory_cycles,
            cache_items: self.cache_items,
            flush: self.flush,
        }
    }
}

/// The ALPU of Underwood et al. (IPDPS 2005) in the NIC it was designed for
/// (`[moped.matching.alpu]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AlpuParams {
    /// The ALPU's clock in MHz: 500, the ALPU the LHS paper compares with (its Fig. 4 and
    /// section 4: an ASIC at five times DIMMnet-2's 100 MHz).
    pub mhz: f64,
    /// The clock of the NIC's embedded processor, which keeps the entries past the cells in
    /// a list in its memory: 500 MHz, the PowerPC 440 of the NIC the ALPU accelerates
    /// (Hemmert et al., CLUSTER 2007, sections 2 and 6).
    pub nic_mhz: f64,
    /// The processor's cycles per overflow element it walks: 30, "over 3x the memory
    /// access latency" per item (Hemmert et al., CLUSTER 2007, section 1) of its
    /// 10-cycle memory (their Table 2).
    pub walk_cycles: u64,
    /// The offload round trip of the ALPU's NIC in ns, host to NIC processor to ALPU and
    /// back, which the two-level queue's custom instruction does not make: 1,000, the
    /// "about 1 µs" Xiong et al. give it (section V.A.1). Only the engines' own setting
    /// (`moped matching`'s `setting` rows) adds it: in the CMP the MOPED feeds the ALPU.
    pub offload_ns: f64,
}

impl Default for AlpuParams {
    fn default() -> Self {
        AlpuParams {
            mhz: 500.0,
            nic_mhz: 500.0,
            walk_cycles: 30,
            offload_ns: 1000.0,
        }
    }
}

/// When a match check's result leaves the engine (`moped.matching.result_at`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResultAt {
    /// Once the engine has finished the search that found it, as the paper's state machine
    /// forwards a pair "once a match has been found" (section 4.2): the default, and what
    /// the queue experiments (`moped matching`) measure.
    #[default]
    End,
    /// On the cycle the search begins, its length only delaying the next check: an early
    /// forward the paper does not describe, kept so that the Figure 10 published with the
    /// simulator before this default changed can be reproduced exactly.
    Start,
}

impl Default for MatchingParams {
    fn default() -> Self {
        MatchingParams {
            cam_entries: 256,
            list_entries: 32_768,
            list_cycles: 3,
            alpu_cells: 256,
            hash_buckets: 64,
            result_at: ResultAt::End,
            fsm: Clock::default(),
            cam: Clock::mhz(321.3),
            cam4: Clock::mhz(234.0),
            cam64: Clock::mhz(168.0),
            hash: Clock::default(),
            microcoded: MicrocodedParams::default(),
            alpu: AlpuParams::default(),
        }
    }
}

impl MatchingParams {
    /// The first key path and reason of a value no engine can be built with.
    pub fn check(&self) -> Result<(), (String, String)> {
        for (key, v) in [
            ("moped.matching.cam_entries", self.cam_entries),
            ("moped.matching.list_entries", self.list_entries),
            ("moped.matching.alpu_cells", self.alpu_cells),
            ("moped.matching.hash_buckets", self.hash_buckets),
        ] {
            if !(1..=1 << 20).contains(&v) {
                return Err((key.into(), format!("{v} is outside 1..=1048576")));
            }
        }
        for (key, v) in [
            ("moped.matching.list_cycles", self.list_cycles),
            ("moped.matching.alpu.walk_cycles", self.alpu.walk_cycles),
        ] {
            if !(1..=1 << 20).contains(&v) {
                return Err((key.into(), format!("{v} is outside 1..=1048576")));
            }
        }
        for (key, v) in [
            (
                "moped.matching.microcoded.memory_cycles",
                self.microcoded.memory_cycles,
            ),
            (
                "moped.matching.microcoded.cache_items",
                self.microcoded.cache_items as u64,
            ),
        ] {
            if v > 1 << 20 {
                return Err((key.into(), format!("{v} is outside 0..=1048576")));
            }
        }
        let clocks = MatcherKind::ALL
            .into_iter()
            .map(|k| (format!("moped.matching.{k}.mhz"), self.clock(k), true))
            .chain([(
                "moped.matching.alpu.nic_mhz".into(),
                self.alpu.nic_mhz,
                false,
            )]);
        for (key, mhz, core) in clocks {
            let lowest = if core { 0.0 } else { 1.0 };
            if !(mhz == 0.0 && core || (1.0..=100_000.0).contains(&mhz)) {
                return Err((
                    key,
                    format!("{mhz} MHz: expected {lowest} (the MOPED's clock) or 1 to 100000"),
                ));
            }
        }
        let ns = self.alpu.offload_ns;
        if !(0.0..=1e9).contains(&ns) {
            return Err((
                "moped.matching.alpu.offload_ns".into(),
                format!("{ns} is outside 0 to 1e9 ns"),
            ));
        }
        Ok(())
    }

    /// `kind`'s clock as configured (0: the MOPED's).
    pub fn clock(&self, kind: MatcherKind) -> f64 {
        match kind {
            MatcherKind::Fsm => self.fsm.mhz,
            MatcherKind::Cam => self.cam.mhz,
            MatcherKind::Cam4 => self.cam4.mhz,
            MatcherKind::Cam64 => self.cam64.mhz,
            MatcherKind::Alpu => self.alpu.mhz,
            MatcherKind::Hash => self.hash.mhz,
            MatcherKind::Microcoded => self.microcoded.mhz,
        }
    }

    /// `kind`'s clock in MHz beside a MOPED at `core_mhz`.
    pub fn mhz(&self, kind: MatcherKind, core_mhz: f64) -> f64 {
        match self.clock(kind) {
            0.0 => core_mhz,
            mhz => mhz,
        }
    }

    /// MOPED cycles (at `core_mhz`) that `cycles` of `kind`'s clock take, rounded up; the
    /// same count for an engine at the MOPED's clock.
    pub fn moped_cycles(&self, kind: MatcherKind, cycles: u64, core_mhz: f64) -> u64 {
        let mhz = self.mhz(kind, core_mhz);
        if mhz == core_mhz {
            return cycles;
        }
        // The tiny slack keeps an exact ratio from rounding up past its whole count.
        (cycles as f64 * core_mhz / mhz - 1e-9).ceil().max(0.0) as u64
    }

    /// Nanoseconds of `cycles` at `kind`'s clock.
    pub fn ns(&self, kind: MatcherKind, cycles: f64, core_mhz: f64) -> f64 {
        cycles * 1000.0 / self.mhz(kind, core_mhz)
    }
}

/// What an engine compares: an envelope with the process whose queues hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub kind: Kind,
    pub program: ProgramId,
    /// The receiving process: a receive's own rank, a send's destination.
    pub receiver: Rank,
    pub context: u16,
    /// A send's own rank; a receive's source, or `Peer::Any`.
    pub source: Peer,
    pub tag: Tag,
}

impl Key {
    /// The key of a complete descriptor; `None` without an envelope or for a send to
    /// ANY_SOURCE (ports refuse both).
    pub fn of(d: &Descriptor) -> Option<Key> {
        let kind = d.kind?;
        let (receiver, source) = match (kind, d.peer) {
            (Kind::Send, Peer::Rank(dest)) => (dest, Peer::Rank(d.rank)),
            (Kind::Send, Peer::Any) => return None,
            (Kind::Recv, peer) => (d.rank, peer),
        };
        Some(Key {
            kind,
            program: d.program,
            receiver,
            context: d.context,
            source,
            tag: d.tag,
        })
    }

    /// MPI's matching rule, in either order.
    pub fn matches(&self, other: &Key) -> bool {
        let (send, recv) = match (self.kind, other.kind) {
            (Kind::Send, Kind::Recv) => (self, other),
            (Kind::Recv, Kind::Send) => (other, self),
            _ => return false,
        };
        send.program == recv.program
            && send.receiver == recv.receiver
            && send.context == recv.context
            && (recv.source == Peer::Any || recv.source == send.source)
            && (recv.tag == Tag::Any || recv.tag == send.tag)
    }

    /// A receive with ANY_SOURCE or ANY_TAG: what a CAM without wildcards cannot hold.
    pub fn has_wildcard(&self) -> bool {
        self.source == Peer::Any || self.tag == Tag::Any
    }

    /// Which of the receiver's queues an unmatched one joins.
    pub fn queue(&self) -> Queue {
        match self.kind {
            Kind::Send => Queue::Unexpected,
            Kind::Recv => Queue::Posted,
        }
    }
}

/// MPI's two queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Queue {
    /// Posted receives, searched by arriving sends.
    Posted,
    /// Unexpected sends, searched by arriving receives.
    Unexpected,
}

impl Queue {
    pub fn name(self) -> &'static str {
        match self {
            Queue::Posted => "prq",
            Queue::Unexpected => "umq",
        }
    }
}

/// A queued send or receive: its key, its arrival stamp (MPI order) and its table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: Key,
    pub seq: u64,
    pub handle: DescIndex,
}

/// What a search found and cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    /// The earliest entry the probe matches, now removed from its queue.
    pub partner: Option<Entry>,
    /// Entries read one after another (list elements, table entries); a CAM's parallel
    /// compare reads none.
    pub traversed: u64,
    /// Engine cycles, removal and any refill included.
    pub cycles: u64,
}

/// What an insertion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inserted {
    /// Queued; `overflow` when it went past the engine's fast level (CAM, cells) into a
    /// slower one.
    Queued { cycles: u64, overflow: bool },
    /// No room: the copy is refused and its program backs off.
    Full,
}

/// A matching engine: MPI's PRQ and UMQ for every receiving process matched at one MOPED,
/// with the engine's own storage, timing and capacity. Every engine keeps MPI's semantics
/// exactly; only cycles and capacity differ.
pub trait Engine: fmt::Debug + Send {
    fn kind(&self) -> MatcherKind;

    /// Searches the queue opposite `probe`'s kind for the earliest entry (by `seq`) it
    /// matches, and removes that entry: hardware invalidates or unlinks a partner in the
    /// same operation.
    fn search(&mut self, probe: &Key) -> Found;

    /// Appends an unmatched arrival to its kind's queue; its `seq` is later than every
    /// queued entry's.
    fn insert(&mut self, entry: Entry) -> Inserted;

    /// Removes a queued entry (backoff's revocation); `None` when it is not queued.
    fn remove(&mut self, handle: DescIndex) -> Option<u64>;

    /// Entries queued.
    fn len(&self) -> usize;

    /// The engine cycle the next operation starts at (never earlier than the last one's).
    /// Engines whose parts work side by side (the two-level queue's two BRAMs and its data
    /// mover) keep their parts' busy times against it; the others ignore it.
    fn at(&mut self, _cycle: u64) {}

    /// The first cycle every part of the engine is idle.
    fn idle_at(&self) -> u64 {
        0
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One check of an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub probe: Key,
    /// The queue searched, and the partner's position in it (from 1), or the queue's
    /// length when nothing matched: MPI's search depth, the same for every engine.
    pub searched: Queue,
    pub depth: u64,
    pub traversed: u64,
    pub cycles: u64,
    /// The (send, receive) entries paired, now both Matched.
    pub matched: Option<(DescIndex, DescIndex)>,
    /// Queued past the engine's fast level.
    pub overflow: bool,
    /// The engine had no room: the copy left the table and must be refused.
    pub refused: Option<Descriptor>,
}

/// The matching MOPED's matcher: arrivals waiting for their check, the engine, and the
/// queues' order kept apart from the engine so every engine reports the same depths.
#[derive(Debug)]
pub struct MatchUnit {
    engine: Box<dyn Engine>,
    /// Copies waiting for their check, in arrival order: (entry, stamp). A stamp that no
    /// longer matches the entry's was revoked before its check.
    arrivals: VecDeque<(DescIndex, u64)>,
    /// Per receiving process and queue, the queued stamps in order.
    order: BTreeMap<(ProgramId, Rank, Queue), VecDeque<u64>>,
    /// The engine's clock: the cycle its next operation may start.
    clock: u64,
}

impl MatchUnit {
    pub fn new(kind: MatcherKind, params: &MatchingParams) -> MatchUnit {
        MatchUnit {
            engine: kind.build(params),
            arrivals: VecDeque::new(),
            order: BTreeMap::new(),
            clock: 0,
        }
    }

    /// The engine's clock has reached `cycle` (an idle engine's parts finish their work
    /// meanwhile).
    pub fn advance_to(&mut self, cycle: u64) {
        self.clock = self.clock.max(cycle);
    }

    /// Lets the engine finish its background work (insertions, refills): the next check
    /// finds it idle, as a message arriving long after the last posting does.
    pub fn quiesce(&mut self) {
        self.clock = self.clock.max(self.engine.idle_at());
    }

    pub fn kind(&self) -> MatcherKind {
        self.engine.kind()
    }

    /// Takes a complete descriptor forwarded for matching into the table; it waits for its
    /// check behind every earlier arrival.
    pub fn arrive(
        &mut self,
        table: &mut DescTable,
        desc: Descriptor,
    ) -> Result<DescIndex, PortError> {
        let index = table.insert_forwarded(desc)?;
        let seq = table.get(index).map_or(0, |d| d.seq);
        self.arrivals.push_back((index, seq));
        Ok(index)
    }

    /// Whether an arrival waits for its check.
    pub fn has_work(&self) -> bool {
        !self.arrivals.is_empty()
    }

    /// Entries queued in the engine.
    pub fn queued(&self) -> usize {
        self.engine.len()
    }

    /// Checks the earliest waiting arrival; `None` when none waits.
    pub fn step(&mut self, table: &mut DescTable) -> Option<Step> {
        loop {
            let (index, seq) = self.arrivals.pop_front()?;
            let Some(desc) = table
                .get_mut(index)
                .filter(|d| d.seq == seq && d.has(NEEDS_MATCH))
            else {
                continue;
            };
            desc.status &= !NEEDS_MATCH;
            let Some(probe) = Key::of(desc) else {
                continue;
            };
            return Some(self.check(table, probe, index, seq));
        }
    }

    fn check(&mut self, table: &mut DescTable, probe: Key, index: DescIndex, seq: u64) -> Step {
        self.engine.at(self.clock);
        let found = self.engine.search(&probe);
        self.clock += found.cycles;
        let searched = match probe.kind {
            Kind::Send => Queue::Posted,
            Kind::Recv => Queue::Unexpected,
        };
        let mut step = Step {
            probe,
            searched,
            depth: self.depth(&probe, searched, found.partner.map(|p| p.seq)),
            traversed: found.traversed,
            cycles: found.cycles,
            matched: None,
            overflow: false,
            refused: None,
        };
        if let Some(partner) = found.partner {
            for i in [index, partner.handle] {
                if let Some(d) = table.get_mut(i) {
                    d.status = (d.status | MATCHED) & !NEEDS_MATCH;
                }
            }
            step.matched = Some(match probe.kind {
                Kind::Send => (index, partner.handle),
                Kind::Recv => (partner.handle, index),
            });
            return step;
        }
        let entry = Entry {
            key: probe,
            seq,
            handle: index,
        };
        self.engine.at(self.clock);
        match self.engine.insert(entry) {
            Inserted::Queued { cycles, overflow } => {
                self.clock += cycles;
                step.cycles += cycles;
                step.overflow = overflow;
                self.order_of(&probe, probe.queue()).push_back(seq);
            }
            Inserted::Full => step.refused = table.free(index),
        }
        step
    }

    /// The partner's position in its queue (from 1), removing it; the queue's length when
    /// there is no partner.
    fn depth(&mut self, probe: &Key, queue: Queue, partner: Option<u64>) -> u64 {
        let q = self.order_of(probe, queue);
        match partner {
            Some(seq) => match q.binary_search(&seq) {
                Ok(at) => {
                    q.remove(at);
                    at as u64 + 1
                }
                Err(_) => 0,
            },
            None => q.len() as u64,
        }
    }

    fn order_of(&mut self, key: &Key, queue: Queue) -> &mut VecDeque<u64> {
        self.order
            .entry((key.program, key.receiver, queue))
            .or_default()
    }

    /// Removes an unmatched descriptor (backoff's revocation), returning it. Matched ones
    /// stay: the copy will finish them.
    pub fn revoke(
        &mut self,
        table: &mut DescTable,
        index: DescIndex,
    ) -> Result<Descriptor, PortError> {
        let desc = *table.entry_mut(index)?;
        if desc.is_matched() {
            return Err(PortError::AlreadyMatched { index });
        }
        if !desc.has(NEEDS_MATCH) {
            self.engine.remove(index);
            if let Some(key) = Key::of(&desc) {
                let q = self.order_of(&key, key.queue());
                if let Ok(at) = q.binary_search(&desc.seq) {
                    q.remove(at);
                }
            }
        }
        table.free(index).ok_or(PortError::Free { index })
    }
}

/// MPI's matching rule between two descriptors, in either order.
pub fn matches(a: &Descriptor, b: &Descriptor) -> bool {
    match (Key::of(a), Key::of(b)) {
        (Some(a), Some(b)) => a.matches(&b),
        _ => false,
    }
}

/// The earliest entry in `list` (in `seq` order) that `probe` matches, with its position,
/// and the entries read to find it (all of them when none matches). The engines' lists
/// share it.
pub(crate) fn first_match<'a>(
    list: impl IntoIterator<Item = &'a Entry>,
    probe: &Key,
) -> (Option<(usize, Entry)>, u64) {
    let mut read = 0;
    for (at, e) in list.into_iter().enumerate() {
        read += 1;
        if probe.matches(&e.key) {
            return (Some((at, *e)), read);
        }
    }
    (None, read)
}
#[cfg(test)]
mod tests {
    use super::reference::{Matcher, Post};
    use super::*;
    use crate::envelope::{Envelope, Rank};
    use crate::moped::desc::{ACTIVE, COMPLETED, VALID};
    use crate::moped::DescId;

    fn env(kind: Kind, peer: Peer, context: u16, tag: Tag) -> Envelope {
        Envelope {
            kind,
            peer,
            context,
            tag,
        }
    }

    fn send(to: Rank, tag: u32) -> Envelope {
        env(Kind::Send, Peer::Rank(to), 0, Tag::Tag(tag))
    }

    fn recv(from: Peer, tag: Tag) -> Envelope {
        env(Kind::Recv, from, 0, tag)
    }

    /// A table with the paper's state machine.
    fn fsm(entries: usize) -> (MatchUnit, DescTable) {
        (
            MatchUnit::new(MatcherKind::Fsm, &MatchingParams::default()),
            DescTable::new(entries).unwrap(),
        )
    }

    /// Forwards a descriptor of `rank` in program 0 to the table.
    fn arrive(unit: &mut (MatchUnit, DescTable), rank: Rank, envelope: Envelope) -> DescIndex {
        let desc = Descriptor::complete(0, rank, 0x1000, envelope, 0, 8).unwrap();
        unit.0.arrive(&mut unit.1, desc).unwrap()
    }

    fn step(unit: &mut (MatchUnit, DescTable)) -> Option<(u64, Option<(DescIndex, DescIndex)>)> {
        unit.0.step(&mut unit.1).map(|s| (s.traversed, s.matched))
    }

    fn drain(unit: &mut (MatchUnit, DescTable)) -> Vec<(DescIndex, DescIndex)> {
        std::iter::from_fn(|| step(unit))
            .filter_map(|s| s.1)
            .collect()
    }

    #[test]
    fn a_send_and_its_receive_match_either_way_round() {
        let mut u = fsm(8);
        assert_eq!(step(&mut u), None);
        let s = arrive(&mut u, 1, send(2, 5));
        u.1.get_mut(s).unwrap().link = Some(DescId { moped: 3, index: 4 });
        assert_eq!(step(&mut u), Some((0, None)));
        assert_eq!(u.1.get(s).unwrap().status, VALID);
        let r = arrive(&mut u, 2, recv(Peer::Rank(1), Tag::Tag(5)));
        assert_eq!(step(&mut u), Some((1, Some((s, r)))));
        assert_eq!(step(&mut u), None);
        for i in [s, r] {
            assert_eq!(u.1.get(i).unwrap().status, VALID | MATCHED);
        }
        assert_eq!(
            u.1.get(s).unwrap().link,
            Some(DescId { moped: 3, index: 4 })
        );

        let mut u = fsm(8);
        let r = arrive(&mut u, 2, recv(Peer::Any, Tag::Any));
        let s = arrive(&mut u, 1, send(2, 5));
        assert_eq!(drain(&mut u), [(s, r)]);
    }

    #[test]
    fn reservations_are_never_matched() {
        let mut u = fsm(8);
        let local = u.1.reserve(0, 1, 0x1000).unwrap();
        for payload in [send(2, 5).encode().unwrap(), 0, 8] {
            u.1.store_field(local, payload).unwrap();
        }
        let r = arrive(&mut u, 2, recv(Peer::Any, Tag::Any));
        assert_eq!(drain(&mut u), []);
        let copy = *u.1.get(local).unwrap();
        let s = u.0.arrive(&mut u.1, copy).unwrap();
        assert_eq!(drain(&mut u), [(s, r)]);
        assert!(!u.1.get(local).unwrap().is_matched());
    }

    #[test]
    fn each_rule_of_matching_is_needed() {
        let base = Descriptor::complete(0, 2, 0, recv(Peer::Rank(1), Tag::Tag(5)), 0, 8).unwrap();
        let sender = Descriptor::complete(0, 1, 0, send(2, 5), 0, 8).unwrap();
        assert!(matches(&base, &sender) && matches(&sender, &base));
        let mut other_program = sender;
        other_program.program = 1;
        let mut other_context = sender;
        other_context.context = 1;
        let mut other_dest = sender;
        other_dest.peer = Peer::Rank(3);
        let mut other_source = sender;
        other_source.rank = 3;
        let mut other_tag = sender;
        other_tag.tag = Tag::Tag(6);
        let mut no_envelope = sender;
        no_envelope.kind = None;
        for s in [
            other_program,
            other_context,
            other_dest,
            other_source,
            other_tag,
        ] {
            assert!(!matches(&base, &s) && !matches(&s, &base), "{s:?}");
        }
        assert!(!matches(&base, &no_envelope));
        assert!(!matches(&sender, &sender) && !matches(&base, &base));
        let mut wild = base;
        (wild.peer, wild.tag) = (Peer::Any, Tag::Any);
        for s in [other_source, other_tag] {
            assert!(matches(&wild, &s));
        }
    }

    #[test]
    fn a_later_arrival_never_takes_an_earlier_receives_send() {
        // W is checked before Z arrives; X arrives between them. Z belongs to W, the first
        // receive posted that matches it, even though X is checked after Z arrived.
        let mut u = fsm(8);
        let w = arrive(&mut u, 2, recv(Peer::Rank(1), Tag::Tag(5)));
        assert_eq!(drain(&mut u), []);
        let x = arrive(&mut u, 2, recv(Peer::Any, Tag::Tag(5)));
        let z = arrive(&mut u, 1, send(2, 5));
        assert_eq!(drain(&mut u), [(z, w)]);
        assert!(!u.1.get(x).unwrap().is_matched());
    }

    #[test]
    fn searched_counts_candidates_up_to_the_partner() {
        let mut u = fsm(8);
        arrive(&mut u, 2, recv(Peer::Rank(3), Tag::Any));
        let r = arrive(&mut u, 2, recv(Peer::Rank(1), Tag::Any));
        arrive(&mut u, 2, recv(Peer::Rank(1), Tag::Any));
        assert_eq!(drain(&mut u), []);
        let s = arrive(&mut u, 1, send(2, 0));
        assert_eq!(step(&mut u), Some((2, Some((s, r)))));
        arrive(&mut u, 3, send(2, 0));
        assert_eq!(step(&mut u).unwrap().0, 1);
        arrive(&mut u, 3, send(1, 0));
        assert_eq!(step(&mut u).unwrap().0, 1);
    }

    #[test]
    fn revoke_removes_only_unmatched_descriptors() {
        let mut u = fsm(8);
        let s = arrive(&mut u, 1, send(2, 5));
        let r = arrive(&mut u, 2, recv(Peer::Any, Tag::Any));
        let pending = arrive(&mut u, 3, send(2, 5));
        drain(&mut u);
        let waiting = arrive(&mut u, 3, send(2, 6));
        for index in [s, r] {
            assert_eq!(
                u.0.revoke(&mut u.1, index),
                Err(PortError::AlreadyMatched { index })
            );
        }
        for status in [ACTIVE, COMPLETED] {
            u.1.get_mut(s).unwrap().status = VALID | status;
            assert!(u.0.revoke(&mut u.1, s).is_err());
        }
        assert_eq!(u.0.revoke(&mut u.1, pending).map(|d| d.rank), Ok(3));
        assert_eq!(
            u.0.revoke(&mut u.1, waiting).map(|d| d.tag),
            Ok(Tag::Tag(6))
        );
        assert_eq!(
            u.0.revoke(&mut u.1, pending),
            Err(PortError::Free { index: pending })
        );
        assert!(matches!(
            u.0.revoke(&mut u.1, 8),
            Err(PortError::IndexOutOfRange { .. })
        ));
        assert_eq!(step(&mut u), None);
        assert_eq!(u.1.occupied(), 2);
    }

    #[test]
    fn the_reference_model_follows_the_two_queues() {
        let post = |id, rank, envelope| Post {
            id,
            program: 0,
            rank,
            envelope,
        };
        let mut model = Matcher::new();
        assert!(model
            .arrive(post(9, 1, env(Kind::Send, Peer::Any, 0, Tag::Tag(1))))
            .is_err());
        model
            .arrive(post(0, 2, recv(Peer::Rank(1), Tag::Tag(5))))
            .unwrap();
        model
            .arrive(post(1, 2, recv(Peer::Any, Tag::Tag(5))))
            .unwrap();
        model.arrive(post(2, 1, send(2, 5))).unwrap();
        model.arrive(post(3, 1, send(2, 5))).unwrap();
        model.arrive(post(4, 1, send(2, 5))).unwrap();
        assert!(model.revoke(4));
        let steps: Vec<_> = std::iter::from_fn(|| model.step()).collect();
        assert_eq!(steps, [None, None, Some((2, 0)), Some((3, 1))]);
        assert!(!model.revoke(0) && !model.revoke(4));
    }
}
