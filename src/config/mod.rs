//! The simulator's configuration: one schema, read from TOML, every field
//! defaulting to the paper's Table 1.
//!
//! ```toml
//! [system]      # cores = 16, core_ghz = 1.0, cpi = 1.0, store_buffer_entries = 8, line_bytes = 64,
//!               # core_model = "mlp", outstanding_loads = 4, window = 126,
//!               # tlb_entries = 64, page_walks = true
//! [l1]          # size_bytes = 32768, assoc = 4, latency = 1, prefetch = "none",
//!               # prefetch_degree = 2, prefetch_distance = 1
//! [l2]          # size_bytes = 524288, assoc = 8, latency = 10 (exclusive of the L1)
//! [directory]   # banks = 4, latency = 2
//! [memory]      # size_bytes = 536870912, latency = 35
//! [network]     # topology = "hierarchical_switch", net_mhz = 500.0, cores_per_leaf = 4,
//!               # hop_latency = 1, link_bytes_per_cycle = 16, header_bytes = 8, random_delay_max = 0
//! [moped]       # ops_per_cycle = 2, copy_send_lines = 4, copy_recv_lines = 4,
//!               # descriptor_entries = 64, active_matches = 1, staging_lines = 4,
//!               # walk_cache_lines = 0,
//!               # port_base = 0xF000_0000_0000, port_latency = 10, fault_penalty = 2000,
//!               # engines = 1, scheme = "base", handoff_cycles = 10, [moped.steps] costs
//! [watchdog]    # progress_cycles = 50000, request_cycles = 500000,
//!               # mpi_cycles = 10000000, poll_cycles = 10000000
//! [os]          # frame_order = "random", page_table = "x86_32"
//! [mpi]         # queue_stride = "mpich", call_instructions = 253, poll_instructions = 10,
//!               # list_entries = 2048, unexpected_queue = "list", lhs_entry_bytes = 64,
//!               # lhs_entries = 1024, search_prefetch = false, search_prefetch_offset = 0
//! [nic]         # enabled = false (the LHS paper's DIMMnet-2 NICs; see `nic`)
//! [tigon]       # cpu_mhz = 88.0, ... (the multi-CPU NIC paper's testbed; see `tigon`)
//! [workload]    # warmup = true, buffer_align = 16
//! [sim]         # fast_forward = true
//! ```
//!
//! All latencies are in core cycles except the network's `hop_latency`,
//! which is in network cycles. Unknown keys are rejected and every error
//! names the file, line, column (1-based, when known) and the dotted key
//! path: `cfg.toml:2:1: key `l2.asoc`: unknown field `asoc`, expected one of
//! size_bytes, assoc, latency`.
//!
//! A section given only in part keeps the defaults of its other keys; in
//! particular `[l1]` and `[l2]` fill missing keys from their own (different)
//! defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::path::Path;

use crate::os::pagetable::PageTableFormat;
use crate::os::phys::FrameOrder;
use crate::textparse::{line_col, toml_message};

mod nic;
mod parse;
mod runtime;
mod tigon;
mod validate;

pub use nic::{MemAttr, NicMatcher, NicSection, NIC_STRIDE};
pub use runtime::{
    MpiSection, QueueStride, SimSection, UnexpectedQueue, WorkloadSection, MPI_LIST_ENTRIES,
};
pub use tigon::{
    EmpStep, TigonSection, MAC_FRAME_BYTES, MAC_GAP_BYTES, MIN_FRAME_BYTES, TICKS_PER_US,
};

pub use validate::host_memory_bytes;

use parse::{
    int_out_of_range, locate_key, looks_like_integer, path_string, sections_are_tables,
    tidy_message,
};

/// The only network topology implemented.
pub const TOPOLOGY_HIERARCHICAL_SWITCH: &str = "hierarchical_switch";

/// Largest supported core count (see [`CoreSet`](crate::coherence::CoreSet)).
pub use crate::coherence::coreset::MAX_CORES;

/// Largest number of directory banks.
pub const MAX_DIR_BANKS: usize = 1024;

/// Checks a core count against [`MAX_CORES`]; the error names `system.cores`.
pub fn check_cores(cores: usize) -> Result<(), ConfigError> {
    if cores == 0 || cores > MAX_CORES {
        return invalid(
            "system.cores",
            format!("must be between 1 and {MAX_CORES}, got {cores}"),
        );
    }
    Ok(())
}

/// A configuration error, located as precisely as known.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", render(.file, *.line, *.col, .key_path, .msg))]
pub struct ConfigError {
    /// File name as given by the caller (empty when not from a file).
    pub file: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column (in characters).
    pub col: Option<u32>,
    /// Dotted key path such as `l2.assoc` (empty when unknown).
    pub key_path: String,
    pub msg: String,
}

fn render(file: &str, line: Option<u32>, col: Option<u32>, key: &str, msg: &str) -> String {
    let mut loc = file.to_string();
    if let Some(l) = line {
        loc.push_str(&format!(":{l}"));
        if let Some(c) = col {
            loc.push_str(&format!(":{c}"));
        }
    }
    let loc = loc.trim_start_matches(':').to_string();
    let mut parts = Vec::new();
    if !loc.is_empty() {
        parts.push(loc);
    }
    if !key.is_empty() {
        parts.push(format!("key `{key}`"));
    }
    parts.push(msg.to_string());
    parts.join(": ")
}

impl ConfigError {
    fn key(key_path: &str, msg: impl Into<String>) -> Self {
        ConfigError {
            file: String::new(),
            line: None,
            col: None,
            key_path: key_path.to_string(),
            msg: msg.into(),
        }
    }
}

/// Cores and the cache-line size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CoreSection {
    /// Number of cores (1 to 1024).
    // 1024 is `MAX_CORES`; a unit test holds the two together.
    pub cores: usize,
    /// Core clock in GHz.
    pub core_ghz: f64,
    /// Cycles per non-memory instruction.
    pub cpi: f64,
    /// Stores a core may have written but not yet performed in its caches; a store to a
    /// full buffer stalls the core.
    pub store_buffer_entries: usize,
    /// Cache-line size in bytes (a power of two).
    pub line_bytes: usize,
    /// Entries of each core's data TLB (fully associative, LRU).
    pub tlb_entries: usize,
    /// A TLB miss walks the page tables with the core's own loads through its caches;
    /// false: translation takes no time and page-table lines come on chip only by MOPED.
    pub page_walks: bool,
    /// Whether a core waits for every load or overlaps the misses of loads whose value
    /// decides nothing.
    pub core_model: CoreModel,
    /// Lines an `mlp` core may have missing at once (its miss status holding registers).
    pub outstanding_loads: usize,
    /// Accesses an `mlp` core may issue from its oldest incomplete load on (its
    /// instruction window).
    pub window: usize,
}

/// How a core treats its loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CoreModel {
    /// One load at a time: the core waits for each load's value.
    Blocking,
    /// Memory-level parallelism, as an out-of-order core has: a load whose value only
    /// feeds a later store or nothing (a memcpy's, a sweep's, a reduction's) does not stop
    /// the core; a load the program branches on (a poll) still does.
    #[default]
    Mlp,
}

impl Default for CoreSection {
    fn default() -> Self {
        CoreSection {
            cores: 16,
            core_ghz: 1.0,
            cpi: 1.0,
            store_buffer_entries: 8,
            line_bytes: 64,
            // The paper's cores are out-of-order Pentium 4s (FeS2): they overlap misses.
            core_model: CoreModel::Mlp,
            // The Pentium 4 allows four load misses outstanding (Intel, "A Detailed Look
            // Inside the Intel NetBurst Micro-Architecture of the Intel Pentium 4
            // Processor", 2000, p. 17) ...
            outstanding_loads: 4,
            // ... and at most 126 instructions in flight (Intel 64 and IA-32
            // Architectures Software Developer's Manual, vol. 1, p. 2-9).
            window: 126,
            // The Pentium 4's data TLB (see `sim::tlb`).
            tlb_entries: 64,
            page_walks: true,
        }
    }
}

pub use crate::coherence::cache::PrefetchKind;

/// Lines a prefetcher fetches per trigger, and how far ahead the first is, by default.
pub const PREFETCH_DEGREE: u32 = 2;
pub const PREFETCH_DISTANCE: u32 = 1;

/// One cache level. Its defaults depend on the level, see
/// [`CacheSection::l1_default`] and [`CacheSection::l2_default`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheSection {
    /// Capacity in bytes (sets times ways times the line size).
    pub size_bytes: u64,
    /// Ways per set (LRU replacement).
    pub assoc: usize,
    /// Access latency in core cycles.
    pub latency: u64,
    /// The L1's data prefetcher (the L2 has none).
    // The L2's prefetch fields are None, so its section has no such keys; read them
    // through `CacheSection::prefetch_kind` and its neighbours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<PrefetchKind>,
    /// Lines the L1 prefetcher fetches per trigger (1 to 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_degree: Option<u32>,
    /// How many lines ahead of the trigger the prefetcher's first line is (1 to 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_distance: Option<u32>,
}

impl CacheSection {
    /// Private L1 data cache: 32 kB, 4-way, 1 cycle.
    pub fn l1_default() -> Self {
        CacheSection {
            size_bytes: 32 * 1024,
            assoc: 4,
            latency: 1,
            prefetch: Some(PrefetchKind::None),
            prefetch_degree: Some(PREFETCH_DEGREE),
            prefetch_distance: Some(PREFETCH_DISTANCE),
        }
    }

    /// Private L2: 512 kB, 8-way, 10 cycles.
    pub fn l2_default() -> Self {
        CacheSection {
            size_bytes: 512 * 1024,
            assoc: 8,
            latency: 10,
            prefetch: None,
            prefetch_degree: None,
            prefetch_distance: None,
        }
    }

    /// The prefetcher (none for a level without one).
    pub fn prefetch_kind(&self) -> PrefetchKind {
        self.prefetch.unwrap_or_default()
    }

    /// Lines the prefetcher fetches per trigger.
    pub fn prefetch_degree(&self) -> u32 {
        self.prefetch_degree.unwrap_or(PREFETCH_DEGREE)
    }

    /// How many lines ahead of the trigger its first prefetch is.
    pub fn prefetch_distance(&self) -> u32 {
        self.prefetch_distance.unwrap_or(PREFETCH_DISTANCE)
    }

    /// Number of sets for `line_bytes`-byte lines (0 if degenerate).
    pub fn sets(&self, line_bytes: usize) -> usize {
        let way_bytes = (self.assoc as u64).saturating_mul(line_bytes as u64);
        self.size_bytes
            .checked_div(way_bytes)
            .map_or(0, |s| s as usize)
    }
}

/// A partially given cache section, applied over the level's defaults.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of cache parameters (size_bytes, assoc, latency)"
)]
struct CachePatch {
    size_bytes: Option<u64>,
    assoc: Option<usize>,
    latency: Option<u64>,
}

/// A partially given L1 section: a cache's keys and its prefetcher's.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table of L1 parameters (size_bytes, assoc, latency, prefetch, \
                 prefetch_degree, prefetch_distance)"
)]
struct L1Patch {
    size_bytes: Option<u64>,
    assoc: Option<usize>,
    latency: Option<u64>,
    prefetch: Option<PrefetchKind>,
    prefetch_degree: Option<u32>,
    prefetch_distance: Option<u32>,
}

impl L1Patch {
    fn apply(self, base: CacheSection) -> CacheSection {
        let cache = CachePatch {
            size_bytes: self.size_bytes,
            assoc: self.assoc,
            latency: self.latency,
        };
        CacheSection {
            prefetch: self.prefetch.or(base.prefetch),
            prefetch_degree: self.prefetch_degree.or(base.prefetch_degree),
            prefetch_distance: self.prefetch_distance.or(base.prefetch_distance),
            ..cache.apply(base)
        }
    }
}

impl CachePatch {
    fn apply(self, mut base: CacheSection) -> CacheSection {
        if let Some(v) = self.size_bytes {
            base.size_bytes = v;
        }
        if let Some(v) = self.assoc {
            base.assoc = v;
        }
        if let Some(v) = self.latency {
            base.latency = v;
        }
        base
    }
}

fn de_l1<'de, D: Deserializer<'de>>(d: D) -> Result<CacheSection, D::Error> {
    Ok(L1Patch::deserialize(d)?.apply(CacheSection::l1_default()))
}

fn de_l2<'de, D: Deserializer<'de>>(d: D) -> Result<CacheSection, D::Error> {
    Ok(CachePatch::deserialize(d)?.apply(CacheSection::l2_default()))
}

/// The MOESI directory at memory, banked by line address.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DirSection {
    /// Number of banks (a power of two).
    pub banks: usize,
    /// Directory lookup latency in core cycles.
    pub latency: u64,
}

impl Default for DirSection {
    fn default() -> Self {
        DirSection {
            banks: 4,
            latency: 2,
        }
    }
}

/// Main memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MemSection {
    /// Physical memory in bytes: the OS hands the upper half out as frames.
    pub size_bytes: u64,
    /// Access latency in core cycles.
    pub latency: u64,
    /// Core cycles each directory bank's memory channel is busy per line read or written;
    /// later accesses queue behind it. 0: no bandwidth limit (the paper states only the
    /// latency). 40 at 4 banks and 1 GHz is 6.4 GB/s in all.
    pub channel_cycles: u64,
}

impl Default for MemSection {
    fn default() -> Self {
        MemSection {
            size_bytes: 512 * 1024 * 1024,
            latency: 35,
            channel_cycles: 0,
        }
    }
}

/// The on-chip network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NetSection {
    /// Only `"hierarchical_switch"` is accepted.
    pub topology: String,
    /// Network clock in MHz.
    pub net_mhz: f64,
    /// Cores on each leaf switch; more leaves than this add switch levels above them.
    pub cores_per_leaf: usize,
    /// Per-hop (switch + wire) latency in network cycles.
    pub hop_latency: u32,
    /// Link bandwidth in bytes per network cycle.
    pub link_bytes_per_cycle: u32,
    /// Bytes of header on every message (a data message is header + line).
    pub header_bytes: u32,
    /// Maximum random extra delay per message in core cycles (tester only;
    /// 0 disables).
    pub random_delay_max: u64,
}

impl Default for NetSection {
    fn default() -> Self {
        NetSection {
            topology: TOPOLOGY_HIERARCHICAL_SWITCH.to_string(),
            net_mhz: 500.0,
            cores_per_leaf: 4,
            hop_latency: 1,
            link_bytes_per_cycle: 16,
            header_bytes: 8,
            random_delay_max: 0,
        }
    }
}

/// Most engines a MOPED may have.
pub const MAX_ENGINES: usize = 64;

/// The MOPED device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MopedSection {
    /// Coherence operations issued per cycle.
    pub ops_per_cycle: u32,
    /// Copy-unit lines in flight on the send side.
    pub copy_send_lines: usize,
    /// Copy-unit lines in flight on the receive side.
    pub copy_recv_lines: usize,
    /// Entries of each MOPED's descriptor table (posted sends and receives).
    pub descriptor_entries: usize,
    /// Matched pairs whose copies a MOPED runs at once (its active match entries).
    pub active_matches: usize,
    /// Page-table lines the page walker's staging buffer keeps during a transfer: the
    /// paper's "slightly larger set" than one line (section 4.2), enough for the upper
    /// levels' lines and the last level's line of consecutive pages at once.
    pub staging_lines: usize,
    /// Page-table lines a MOPED keeps across transfers (a page-walk cache), for sensitivity
    /// studies; 0, the paper's design, discards them once a transfer ends, and its next
    /// walks find the lines where the cores' own walks (`system.page_walks`) left them.
    pub walk_cache_lines: usize,
    /// Physical address of the first program's port window (64 KiB aligned).
    pub port_base: u64,
    /// Cycles from a core's port access to its answer at the local MOPED.
    pub port_latency: u64,
    /// Cycles the owning core spends in the OS when MOPED reports an unmapped page.
    pub fault_penalty: u64,
    /// The matching hardware: `fsm` (the paper's state machine), `cam`, `cam4`, `cam64`
    /// (the two-level CAM and list queue), `alpu`, `hash` or `microcoded` (the microcoded
    /// match unit running its match program) (`moped::matching`).
    pub matcher: crate::moped::matching::MatcherKind,
    /// The engines' sizes and cycle costs (`[moped.matching]`).
    pub matching: crate::moped::matching::MatchingParams,
    /// Engines that run the device's steps (1 to 64; `moped::engines`).
    pub engines: usize,
    /// How steps are shared among the engines: `base`, `SO`, `RO`, `DSR` or `SR` (the
    /// multi-CPU NIC paper's Table 2).
    pub scheme: crate::moped::engines::Scheme,
    /// Cycles an engine spends taking a step over from another engine.
    pub handoff_cycles: u64,
    /// Cycles each step costs an engine (`[moped.steps]`); 0 is fixed-function logic.
    pub steps: crate::moped::engines::StepCosts,
}

impl Default for MopedSection {
    fn default() -> Self {
        MopedSection {
            ops_per_cycle: 2,
            copy_send_lines: 4,
            copy_recv_lines: 4,
            descriptor_entries: 64,
            active_matches: 1,
            staging_lines: 4,
            walk_cache_lines: 0,
            port_base: crate::moped::ports::DEFAULT_PORT_BASE,
            // An uncached access to a device beside the L2: about an L2 access.
            port_latency: 10,
            fault_penalty: 2_000,
            matcher: Default::default(),
            matching: Default::default(),
            engines: 1,
            scheme: Default::default(),
            // A write to the other engine's event register and its read: about a port
            // access.
            handoff_cycles: 10,
            steps: Default::default(),
        }
    }
}

/// Deadlock/livelock watchdogs; they cannot be disabled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WatchdogSection {
    /// Maximum cycles without any core making progress.
    pub progress_cycles: u64,
    /// Maximum cycles one request may stay outstanding.
    pub request_cycles: u64,
    /// Maximum cycles, while every unfinished MPI rank waits inside an MPI call, in which no
    /// rank completes a call or a request and no packet moves (polling does not count).
    pub mpi_cycles: u64,
    /// Maximum cycles a program core's `moped_poll` may see only Pending.
    pub poll_cycles: u64,
}

impl Default for WatchdogSection {
    fn default() -> Self {
        WatchdogSection {
            progress_cycles: 50_000,
            request_cycles: 500_000,
            // Far above the longest message copy of the paper's workloads (1 MiB), and
            // about a host second of two ranks polling.
            mpi_cycles: 10_000_000,
            poll_cycles: 10_000_000,
        }
    }
}

/// The simulated OS.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OsSection {
    /// The order in which physical frames are handed to pages and page tables: `"random"`
    /// (seeded by the run's seed) or `"address"`.
    pub frame_order: FrameOrder,
    /// The page-table format the OS builds and the walkers read: `"x86_32"` (IA-32
    /// without PAE, the paper's Pentium 4's) or `"x86_64"`.
    pub page_table: PageTableFormat,
}

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SystemConfig {
    pub system: CoreSection,
    #[serde(deserialize_with = "de_l1")]
    pub l1: CacheSection,
    #[serde(deserialize_with = "de_l2")]
    pub l2: CacheSection,
    pub directory: DirSection,
    pub memory: MemSection,
    pub network: NetSection,
    pub moped: MopedSection,
    pub watchdog: WatchdogSection,
    pub os: OsSection,
    pub mpi: MpiSection,
    pub nic: NicSection,
    pub tigon: TigonSection,
    pub workload: WorkloadSection,
    pub sim: SimSection,
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            system: CoreSection::default(),
            l1: CacheSection::l1_default(),
            l2: CacheSection::l2_default(),
            directory: DirSection::default(),
            memory: MemSection::default(),
            network: NetSection::default(),
            moped: MopedSection::default(),
            watchdog: WatchdogSection::default(),
            os: OsSection::default(),
            mpi: MpiSection::default(),
            nic: NicSection::default(),
            tigon: TigonSection::default(),
            workload: WorkloadSection::default(),
            sim: SimSection::default(),
        }
    }
}

fn is_pow2(x: u64) -> bool {
    x != 0 && x & (x - 1) == 0
}

impl SystemConfig {
    /// Fits the system to an MPI run of `ranks` ranks, one per core, whose pages may take
    /// up to `need` bytes of frames (`mpi::frame_need`; 0 for a run without MPI): at least
    /// as many cores, and past the paper's 16 the x86-64 page tables and the memory that
    /// `need` asks for, at least 16 GiB (the OS hands out frames from memory's upper half;
    /// the ch3:shm segment of `ranks`² queues is 17 GB at 256 ranks). Memory costs the host
    /// only what the run writes. Fields the user changed from the Table-1 defaults are
    /// kept: more cores, another memory size, x86-64 tables already.
    pub fn fit_ranks(&mut self, ranks: usize, need: u64) {
        self.system.cores = self.system.cores.max(ranks);
        if ranks > CoreSection::default().cores {
            if self.os.page_table == OsSection::default().page_table {
                self.os.page_table = crate::os::pagetable::PageTableFormat::X86_64;
            }
            if self.memory.size_bytes == MemSection::default().size_bytes {
                let fits = need.saturating_mul(2).checked_next_power_of_two();
                self.memory.size_bytes = fits.unwrap_or(u64::MAX).max(16 << 30);
            }
        }
    }

    /// Parse and validate a configuration. `file` is used only in errors.
    pub fn from_toml_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        if let Err(mut e) = sections_are_tables(text) {
            e.file = file.to_string();
            if let Some((l, c)) = locate_key(text, &e.key_path) {
                (e.line, e.col) = (Some(l), Some(c));
            }
            return Err(e);
        }
        let de = toml::Deserializer::new(text);
        let cfg: SystemConfig = match serde_path_to_error::deserialize(de) {
            Ok(c) => c,
            Err(e) => {
                let mut key_path = path_string(e.path());
                let inner = e.inner();
                let msg = tidy_message(&toml_message(text, inner));
                // Name the offending key itself for unknown fields.
                if let Some(rest) = msg.strip_prefix("unknown field `") {
                    if let Some(end) = rest.find('`') {
                        let field = &rest[..end];
                        if !key_path.ends_with(field) || key_path.is_empty() {
                            key_path = if key_path.is_empty() {
                                field.to_string()
                            } else {
                                format!("{key_path}.{field}")
                            };
                        }
                    }
                }
                let (line, col) = match inner.span() {
                    Some(sp) => {
                        let (l, c) = line_col(text, sp.start);
                        (Some(l), Some(c))
                    }
                    None => match locate_key(text, &key_path) {
                        Some((l, c)) => (Some(l), Some(c)),
                        None => (None, None),
                    },
                };
                return Err(ConfigError {
                    file: file.to_string(),
                    line,
                    col,
                    key_path,
                    msg,
                });
            }
        };
        if let Err(mut e) = cfg.validate() {
            e.file = file.to_string();
            if let Some((l, c)) = locate_key(text, &e.key_path) {
                e.line = Some(l);
                e.col = Some(c);
            }
            return Err(e);
        }
        Ok(cfg)
    }

    /// Read, parse and validate a configuration file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: name.clone(),
            line: None,
            col: None,
            key_path: String::new(),
            msg: format!("cannot read config: {e}"),
        })?;
        Self::from_toml_str(&text, &name)
    }

    /// The resolved configuration as TOML (every key, saved beside results).
    pub fn to_toml_string(&self) -> String {
        match toml::to_string_pretty(self) {
            Ok(s) => s,
            Err(e) => format!("# cannot serialize configuration: {e}\n"),
        }
    }

    /// Override one key, e.g. `set("l2.latency", "12")`. The value is parsed
    /// as a TOML value; if it is not valid TOML it is taken as a string
    /// (so `set("network.topology", "hierarchical_switch")` works unquoted).
    /// Unknown keys and wrong types are errors naming the path. The result is
    /// not validated (several overrides may be needed to reach a valid
    /// configuration): call [`validate`](Self::validate) afterwards.
    pub fn set(&mut self, key_path: &str, value: &str) -> Result<(), ConfigError> {
        let parsed = match format!("v = {value}").parse::<toml::Table>() {
            Ok(mut t) if t.len() == 1 && t.contains_key("v") => t.remove("v"),
            _ => None,
        };
        let mut root = toml::Value::try_from(&*self)
            .map_err(|e| ConfigError::key(key_path, format!("cannot serialize config: {e}")))?;
        let out_of_range = parsed.is_none() && looks_like_integer(value);
        let new_value = parsed.unwrap_or_else(|| toml::Value::String(value.to_string()));
        let segs: Vec<&str> = key_path.split('.').collect();
        if segs.iter().any(|s| s.is_empty()) {
            return Err(ConfigError::key(key_path, "malformed key path"));
        }
        let mut node = &mut root;
        for (i, seg) in segs.iter().enumerate() {
            let here = segs[..=i].join(".");
            let table = match node {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(ConfigError::key(
                        &here,
                        format!("`{}` is not a section", segs[..i].join(".")),
                    ))
                }
            };
            if !table.contains_key(*seg) {
                let names: Vec<&str> = table.keys().map(String::as_str).collect();
                return Err(ConfigError::key(
                    &here,
                    format!(
                        "unknown field `{seg}`, expected one of {}",
                        names.join(", ")
                    ),
                ));
            }
            node = table.get_mut(*seg).expect("checked");
        }
        if out_of_range {
            return Err(int_out_of_range(&root, key_path, value));
        }
        if node.is_table() && !new_value.is_table() {
            return Err(ConfigError::key(
                key_path,
                "is a section; set one of its keys (e.g. `section.key`)",
            ));
        }
        *node = new_value;
        let cfg: SystemConfig = serde_path_to_error::deserialize(root).map_err(|e| {
            let p = path_string(e.path());
            ConfigError::key(
                if p.is_empty() { key_path } else { &p },
                tidy_message(e.inner().message()),
            )
        })?;
        *self = cfg;
        Ok(())
    }

    /// Check the configuration for values the simulator cannot model: each section in file
    /// order, the first bad value an error.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let s = &self.system;
        s.validate()?;
        self.l1.validate("l1", s.line_bytes)?;
        self.l2.validate("l2", s.line_bytes)?;
        self.directory.validate()?;
        self.memory.validate(s.line_bytes)?;
        self.network.validate(s.core_ghz)?;
        self.moped.validate()?;
        self.mpi.validate()?;
        let (memory, port_base) = (self.memory.size_bytes, self.moped.port_base);
        self.nic.validate(memory, s.cores, port_base)?;
        self.tigon.validate()?;
        self.watchdog.validate()?;
        self.os.validate(self.memory.size_bytes)?;
        self.workload.validate()
    }

    /// Sets in each L1.
    pub fn l1_sets(&self) -> usize {
        self.l1.sets(self.system.line_bytes)
    }

    /// Sets in each L2.
    pub fn l2_sets(&self) -> usize {
        self.l2.sets(self.system.line_bytes)
    }

    /// The network parameters (one directory node per bank).
    pub fn net_config(&self) -> crate::net::NetConfig {
        crate::net::NetConfig {
            n_cores: self.system.cores,
            n_dirs: self.directory.banks,
            cores_per_leaf: self.network.cores_per_leaf,
            core_ghz: self.system.core_ghz,
            net_mhz: self.network.net_mhz,
            hop_latency: self.network.hop_latency,
            link_bytes_per_cycle: self.network.link_bytes_per_cycle,
        }
    }
}

/// A value the simulator cannot model: the error for `key`.
fn invalid(key: &str, msg: impl Into<String>) -> Result<(), ConfigError> {
    Err(ConfigError::key(key, msg))
}

impl fmt::Display for SystemConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_toml_string())
    }
}

#[cfg(test)]
mod tests;
