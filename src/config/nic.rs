//! `[nic]`: the LHS paper's setting (Tanabe and Ohta, "Network interface architecture with
//! scalable low-latency message receiving mechanism", IEICE Trans. Inf. & Syst. E96-D(12),
//! 2013): a network interface beside every node, DIMMnet-2's by default, through which MPI
//! messages travel instead of shared memory. Every value the paper gives is its default;
//! each other one is said to be a choice, with its reason (see `nic` for the model).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{invalid, ConfigError};

/// How the host maps a NIC memory, as an x86 memory type (Intel SDM vol. 3, section
/// 11.3): what the LHS paper's Fig. 6 varies for the LH buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemAttr {
    /// Never cached, accesses strongly ordered: each load goes to the NIC and the core
    /// waits for it; prefetchers ignore it.
    Uncacheable,
    /// Never cached; stores combine and are posted (the core does not wait for them);
    /// loads go to the NIC as uncacheable ones do.
    WriteCombining,
    /// Cached like memory: a load that misses fetches the whole line from the NIC, and the
    /// prefetchers run on it.
    #[default]
    WriteBack,
}

impl MemAttr {
    pub const ALL: [MemAttr; 3] = [
        MemAttr::Uncacheable,
        MemAttr::WriteCombining,
        MemAttr::WriteBack,
    ];

    /// The name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            MemAttr::Uncacheable => "uncacheable",
            MemAttr::WriteCombining => "write_combining",
            MemAttr::WriteBack => "write_back",
        }
    }
}

/// Who matches messages with receives when the NICs carry them (`nic.matcher`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(with = "String")]
pub enum NicMatcher {
    /// The host's MPI library searches the queues (the LHS paper's setting).
    #[default]
    Host,
    /// A matching engine of `moped.matcher`'s on each NIC keeps both queues.
    Engine(crate::moped::matching::MatcherKind),
}

impl NicMatcher {
    pub fn name(self) -> &'static str {
        match self {
            NicMatcher::Host => "host",
            NicMatcher::Engine(k) => k.name(),
        }
    }
}

impl TryFrom<String> for NicMatcher {
    type Error = String;

    fn try_from(s: String) -> Result<NicMatcher, String> {
        if s == "host" {
            return Ok(NicMatcher::Host);
        }
        s.parse()
            .map(NicMatcher::Engine)
            .map_err(|e: String| format!("{e}, or host"))
    }
}

impl From<NicMatcher> for String {
    fn from(m: NicMatcher) -> String {
        m.name().to_string()
    }
}

/// Bytes from one NIC's window to the next (`nic::NIC_STRIDE`).
pub const NIC_STRIDE: u64 = 128 << 20;

/// Physical address of NIC 0's window by default: above any memory and below the MOPED
/// ports.
pub const NIC_BASE: u64 = 0xE000_0000_0000;

/// The NICs of the LHS paper's setting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NicSection {
    /// A NIC beside every node, each core a node of its own: MPI messages between ranks
    /// travel from NIC to NIC over a wire, and a NIC's receive dividing controller puts
    /// each message's head into its LH buffer (`mpi.unexpected_queue = "lhs"`) or the
    /// whole message into its bulk memory (`"list"`). Only under the `baseline` design.
    /// false: the CMP, messages through shared memory.
    pub enabled: bool,
    /// Physical address of NIC 0's window (registers, send window, Read Window, LH
    /// buffer); NIC n's is `n * 128 MiB` above it. A multiple of 128 MiB, above memory
    /// and clear of the MOPED ports.
    pub base: u64,
    /// NIC clock in MHz (DIMMnet-2's prototype: 100 MHz, the paper's Fig. 4).
    pub mhz: f64,
    /// How the host maps the LH buffer: `"uncacheable"`, `"write_combining"` or
    /// `"write_back"` (the paper's Fig. 6 conditions).
    pub lh_attribute: MemAttr,
    /// write_back: the library flushes (`clflush`) each LH-buffer line once its search
    /// has read the entries it holds, as a host must for a memory its caches do not
    /// snoop; false: the paper's "forced on cache" condition (Fig. 6, condition 4).
    pub flush: bool,
    /// Core cycles a `clflush` keeps the core (a choice: the instruction's issue; the
    /// eviction proceeds without the core).
    pub flush_cycles: u64,
    /// The Size Information Location Register: the byte of a message's header that holds
    /// its payload size (4 bytes; 8 or 12, the envelope's second word).
    pub size_offset: u64,
    /// Bulk-memory (SO-DIMM) bytes of each receive-ring position: a message's header and
    /// payload must fit (a multiple of 64, up to 1 MiB; a choice: 32 KiB, so that IMB's
    /// 16 kB messages fit).
    pub slot_bytes: u64,
    /// Bytes of the Read Window, the register window a VL command copies a bulk-memory
    /// block into (a power of two, 64 to 65536; a choice: 4 KiB).
    pub window_bytes: u64,
    /// NIC cycles a VL command takes before its block moves (a choice, set so that one
    /// envelope read through a VL command and the Read Window takes the host about the
    /// paper's 600 ns; see `moped lhs`).
    pub vl_cycles: u64,
    /// Bulk-memory bytes moved per NIC cycle (a DDR SO-DIMM at 100 MHz, 64 bits wide:
    /// 16).
    pub bulk_bytes_per_cycle: u64,
    /// NIC cycles the receive dividing controller takes per message (a choice: 4).
    pub divide_cycles: u64,
    /// Core cycles every host access to a NIC's registers or memories adds to a memory
    /// access's (0: DIMMnet's memory sits in a DIMM slot, as fast as main memory, the
    /// paper's "about 100 ns" for both).
    pub access_cycles: u64,
    /// One-way latency of the wire between two NICs in ns (a choice, not given by the
    /// paper; its messages all arrive before the measured search starts).
    pub wire_ns: f64,
    /// Wire bandwidth in bytes per ns (a choice: 1 GB/s).
    pub wire_bytes_per_ns: f64,
    /// Who matches: `"host"` (the host's MPI searches its queues: the LHS paper's
    /// setting) or a matching engine on each NIC that keeps both queues (`"alpu"`, the
    /// LHS paper's comparison, or any `moped.matcher`), sized and costed by
    /// `[moped.matching]`, the host posting receives to it and taking the pairs it makes.
    pub matcher: NicMatcher,
    /// The NIC's matching engine's clock in MHz (500: the ALPU the LHS paper compares
    /// with, its Fig. 4).
    pub matcher_mhz: f64,
}

impl Default for NicSection {
    fn default() -> Self {
        NicSection {
            enabled: false,
            base: NIC_BASE,
            mhz: 100.0,
            lh_attribute: MemAttr::WriteBack,
            flush: true,
            flush_cycles: 2,
            size_offset: 8,
            slot_bytes: 32 * 1024,
            window_bytes: 4096,
            vl_cycles: 30,
            bulk_bytes_per_cycle: 16,
            divide_cycles: 4,
            access_cycles: 0,
            wire_ns: 1000.0,
            wire_bytes_per_ns: 1.0,
            matcher: NicMatcher::Host,
            matcher_mhz: 500.0,
        }
    }
}

impl NicSection {
    /// Core cycles of `ns` nanoseconds at `core_ghz`, rounded up.
    pub fn core_cycles(ns: f64, core_ghz: f64) -> u64 {
        (ns * core_ghz).ceil() as u64
    }

    /// Core cycles of `n` NIC cycles at `core_ghz`, rounded up.
    pub fn nic_cycles(&self, n: u64, core_ghz: f64) -> u64 {
        Self::core_cycles(n as f64 * 1000.0 / self.mhz, core_ghz)
    }

    pub(super) fn validate(
        &self,
        memory_bytes: u64,
        cores: usize,
        port_base: u64,
    ) -> Result<(), ConfigError> {
        // Bounds that keep every time the NIC computes far from overflowing 64 bits.
        for (key, v, lo, hi) in [
            ("nic.mhz", self.mhz, 1.0, 100_000.0),
            ("nic.matcher_mhz", self.matcher_mhz, 1.0, 100_000.0),
            ("nic.wire_ns", self.wire_ns, 0.0, 1e9),
            ("nic.wire_bytes_per_ns", self.wire_bytes_per_ns, 1e-6, 1e6),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return invalid(key, format!("must be a number from {lo} to {hi}, not {v}"));
            }
        }
        for (key, v) in [
            ("nic.flush_cycles", self.flush_cycles),
            ("nic.vl_cycles", self.vl_cycles),
            ("nic.divide_cycles", self.divide_cycles),
            ("nic.access_cycles", self.access_cycles),
        ] {
            if v > 1_000_000_000 {
                return invalid(key, format!("must be at most 1000000000, not {v}"));
            }
        }
        if ![8, 12].contains(&self.size_offset) {
            return invalid(
                "nic.size_offset",
                format!(
                    "must be 8 or 12 (a 4-byte field in the header's second word), not {}",
                    self.size_offset
                ),
            );
        }
        let slot = self.slot_bytes;
        if slot % 64 != 0 || !(64..=1 << 20).contains(&slot) {
            return invalid(
                "nic.slot_bytes",
                format!("must be a multiple of 64 from 64 to 1048576, not {slot}"),
            );
        }
        let w = self.window_bytes;
        if !(w.is_power_of_two() && (64..=65_536).contains(&w)) {
            return invalid(
                "nic.window_bytes",
                format!("must be a power of two from 64 to 65536, not {w}"),
            );
        }
        if !(1..=1 << 20).contains(&self.bulk_bytes_per_cycle) {
            return invalid("nic.bulk_bytes_per_cycle", "must be from 1 to 1048576");
        }
        self.validate_base(memory_bytes, cores, port_base)
    }

    /// The windows of `cores` NICs must lie above memory and clear of the MOPED ports at
    /// `port_base`, aligned to their stride.
    fn validate_base(
        &self,
        memory_bytes: u64,
        cores: usize,
        port_base: u64,
    ) -> Result<(), ConfigError> {
        let stride = NIC_STRIDE;
        let ports_end = port_base.saturating_add(crate::moped::ports::PORTS_BYTES);
        let end = (cores as u64)
            .checked_mul(stride)
            .and_then(|n| n.checked_add(self.base))
            .filter(|&e| e <= 1 << 52);
        let clear = |e: u64| e <= port_base || self.base >= ports_end;
        if self.base % stride == 0 && self.base >= memory_bytes && end.is_some_and(clear) {
            return Ok(());
        }
        invalid(
            "nic.base",
            format!(
                "must be a multiple of {stride:#x} at or above memory.size_bytes, its {cores} \
                 NICs' windows ({stride:#x} bytes each) below 2^52 and clear of the MOPED \
                 ports at {port_base:#x}, not {:#x}",
                self.base
            ),
        )
    }
}
