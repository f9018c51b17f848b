//! Checks of a configuration's values against what the simulator can model, section by
//! section, and of the host memory the caches need.

use super::*;

/// The first of `counts` that is 0, as the error for its key: each must be >= 1.
fn at_least_one(counts: &[(&str, u64)]) -> Result<(), ConfigError> {
    match counts.iter().find(|(_, v)| *v == 0) {
        Some((key, _)) => invalid(key, "must be >= 1"),
        None => Ok(()),
    }
}

/// Host bytes each cache way takes beyond its line of data: tag, state and dirty bit,
/// rounded up.
const WAY_OVERHEAD_BYTES: u64 = 16;

impl SystemConfig {
    /// Fails, naming the larger cache's `size_bytes`, if the caches of every core (which
    /// the simulator allocates when it starts) need more than `host_bytes` of host memory;
    /// better than an allocation that aborts the process.
    pub fn check_host_memory(&self, host_bytes: u64) -> Result<(), ConfigError> {
        let line = self.system.line_bytes as u64;
        let ways =
            |c: &CacheSection| (c.size_bytes / line).saturating_mul(line + WAY_OVERHEAD_BYTES);
        let need = ways(&self.l1)
            .saturating_add(ways(&self.l2))
            .saturating_mul(self.system.cores as u64);
        if need <= host_bytes {
            return Ok(());
        }
        let key = if self.l2.size_bytes >= self.l1.size_bytes {
            "l2.size_bytes"
        } else {
            "l1.size_bytes"
        };
        invalid(
            key,
            format!(
                "the caches of {} cores need about {} MiB of host memory, more than the \
                 {} MiB this host has",
                self.system.cores,
                need >> 20,
                host_bytes >> 20
            ),
        )
    }
}

/// The host's physical memory in bytes (`MemTotal` of /proc/meminfo), or None where it
/// cannot be read.
pub fn host_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

impl CoreSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        check_cores(self.cores)?;
        if !(self.core_ghz.is_finite() && self.core_ghz > 0.0) {
            return invalid(
                "system.core_ghz",
                format!("must be a positive finite frequency, got {}", self.core_ghz),
            );
        }
        if !(self.cpi.is_finite() && self.cpi > 0.0) {
            return invalid(
                "system.cpi",
                format!("must be positive and finite, got {}", self.cpi),
            );
        }
        at_least_one(&[
            (
                "system.store_buffer_entries",
                self.store_buffer_entries as u64,
            ),
            ("system.outstanding_loads", self.outstanding_loads as u64),
            ("system.window", self.window as u64),
            ("system.tlb_entries", self.tlb_entries as u64),
        ])?;
        if !is_pow2(self.line_bytes as u64) || !(8..=4096).contains(&self.line_bytes) {
            return invalid(
                "system.line_bytes",
                format!(
                    "must be a power of two between 8 and 4096, got {}",
                    self.line_bytes
                ),
            );
        }
        Ok(())
    }
}

impl CacheSection {
    /// The prefetcher's keys, each in its range.
    fn validate_prefetch(&self, name: &str) -> Result<(), ConfigError> {
        if !(1..=16).contains(&self.prefetch_degree()) {
            return invalid(&format!("{name}.prefetch_degree"), "must be from 1 to 16");
        }
        if !(1..=64).contains(&self.prefetch_distance()) {
            return invalid(&format!("{name}.prefetch_distance"), "must be from 1 to 64");
        }
        Ok(())
    }

    /// Checks the cache `[name]` for lines of `line_bytes`.
    pub(super) fn validate(&self, name: &str, line_bytes: usize) -> Result<(), ConfigError> {
        self.validate_prefetch(name)?;
        if self.assoc == 0 {
            return invalid(&format!("{name}.assoc"), "must be >= 1");
        }
        if self.size_bytes == 0 {
            return invalid(&format!("{name}.size_bytes"), "must be > 0");
        }
        let Some(way) = (self.assoc as u64).checked_mul(line_bytes as u64) else {
            return invalid(
                &format!("{name}.assoc"),
                format!(
                    "{} ways of {line_bytes} bytes exceed 2^64 bytes",
                    self.assoc
                ),
            );
        };
        if self.size_bytes % way != 0 {
            return invalid(
                &format!("{name}.size_bytes"),
                format!(
                    "{} is not divisible by assoc * line_bytes = {} * {} = {way}",
                    self.size_bytes, self.assoc, line_bytes
                ),
            );
        }
        let sets = self.size_bytes / way;
        if !is_pow2(sets) {
            return invalid(
                &format!("{name}.size_bytes"),
                format!(
                    "number of sets ({} / {way} = {sets}) must be a power of two",
                    self.size_bytes
                ),
            );
        }
        if self.latency == 0 {
            return invalid(&format!("{name}.latency"), "must be >= 1 cycle");
        }
        Ok(())
    }
}

impl DirSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !is_pow2(self.banks as u64) || self.banks > MAX_DIR_BANKS {
            return invalid(
                "directory.banks",
                format!(
                    "must be a power of two between 1 and {MAX_DIR_BANKS}, got {}",
                    self.banks
                ),
            );
        }
        if self.latency == 0 {
            return invalid("directory.latency", "must be >= 1 cycle");
        }
        Ok(())
    }
}

impl MemSection {
    /// Checks memory for lines of `line_bytes`.
    pub(super) fn validate(&self, line_bytes: usize) -> Result<(), ConfigError> {
        if self.size_bytes == 0 || self.size_bytes % line_bytes as u64 != 0 {
            return invalid(
                "memory.size_bytes",
                format!(
                    "must be a positive multiple of line_bytes ({}), got {}",
                    line_bytes, self.size_bytes
                ),
            );
        }
        if self.size_bytes > i64::MAX as u64 {
            return invalid("memory.size_bytes", "is too large");
        }
        if self.latency == 0 {
            return invalid("memory.latency", "must be >= 1 cycle");
        }
        // A bound that keeps a channel's queue of waits within the directory's delays.
        if self.channel_cycles > 100_000 {
            return invalid(
                "memory.channel_cycles",
                format!(
                    "must be at most 100000 cycles per line, got {}",
                    self.channel_cycles
                ),
            );
        }
        Ok(())
    }
}

impl NetSection {
    /// Checks the network of cores clocked at `core_ghz`.
    pub(super) fn validate(&self, core_ghz: f64) -> Result<(), ConfigError> {
        if self.topology != TOPOLOGY_HIERARCHICAL_SWITCH {
            return invalid(
                "network.topology",
                format!(
                    "unsupported topology {:?}; the only one implemented is {:?}",
                    self.topology, TOPOLOGY_HIERARCHICAL_SWITCH
                ),
            );
        }
        if !(self.net_mhz.is_finite() && self.net_mhz > 0.0) {
            return invalid(
                "network.net_mhz",
                format!("must be a positive finite frequency, got {}", self.net_mhz),
            );
        }
        let ratio = core_ghz * 1000.0 / self.net_mhz;
        if !(ratio.is_finite() && (1e-3..=1e6).contains(&ratio)) {
            return invalid(
                "network.net_mhz",
                format!("core/network clock ratio {ratio} is out of range"),
            );
        }
        at_least_one(&[("network.cores_per_leaf", self.cores_per_leaf as u64)])?;
        if self.hop_latency == 0 {
            return invalid("network.hop_latency", "must be >= 1 network cycle");
        }
        at_least_one(&[
            (
                "network.link_bytes_per_cycle",
                self.link_bytes_per_cycle as u64,
            ),
            ("network.header_bytes", self.header_bytes as u64),
        ])
    }
}

impl MopedSection {
    /// The engines as the device takes them.
    pub fn engine_params(&self) -> crate::moped::engines::EngineParams {
        crate::moped::engines::EngineParams {
            engines: self.engines,
            scheme: self.scheme,
            handoff_cycles: self.handoff_cycles,
            costs: self.steps,
        }
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_ENGINES).contains(&self.engines) {
            return invalid(
                "moped.engines",
                format!("must be from 1 to {MAX_ENGINES}, got {}", self.engines),
            );
        }
        for (k, v) in [
            ("moped.ops_per_cycle", self.ops_per_cycle as usize),
            ("moped.copy_send_lines", self.copy_send_lines),
            ("moped.copy_recv_lines", self.copy_recv_lines),
            ("moped.descriptor_entries", self.descriptor_entries),
            ("moped.active_matches", self.active_matches),
            ("moped.staging_lines", self.staging_lines),
            ("moped.port_latency", self.port_latency as usize),
        ] {
            if v == 0 {
                return invalid(k, "must be >= 1");
            }
        }
        if self.copy_recv_lines != self.copy_send_lines {
            return invalid(
                "moped.copy_recv_lines",
                format!(
                    "must equal moped.copy_send_lines ({}): the copy unit pairs N send with N receive lines",
                    self.copy_send_lines
                ),
            );
        }
        if self.descriptor_entries > crate::moped::desc::MAX_CAPACITY {
            return invalid(
                "moped.descriptor_entries",
                format!("must be <= {}", crate::moped::desc::MAX_CAPACITY),
            );
        }
        if let Err((key, why)) = self.matching.check() {
            return invalid(&key, why);
        }
        if let Err(e) = crate::moped::ports::PortMap::new(self.port_base) {
            return invalid("moped.port_base", e.to_string());
        }
        Ok(())
    }
}

impl WatchdogSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.progress_cycles == 0 {
            return invalid(
                "watchdog.progress_cycles",
                "must be > 0 (the watchdog cannot be disabled)",
            );
        }
        let limits = [
            ("watchdog.request_cycles", self.request_cycles),
            ("watchdog.mpi_cycles", self.mpi_cycles),
            ("watchdog.poll_cycles", self.poll_cycles),
        ];
        if let Some((key, _)) = limits.iter().find(|(_, v)| *v == 0) {
            return invalid(key, "must be > 0 (the watchdog cannot be disabled)");
        }
        Ok(())
    }
}

impl OsSection {
    /// Checks the OS of a machine with `memory_bytes` of physical memory.
    pub(super) fn validate(&self, memory_bytes: u64) -> Result<(), ConfigError> {
        let reach = 1u64 << self.page_table.pa_bits();
        if memory_bytes > reach {
            return invalid(
                "memory.size_bytes",
                format!(
                    "must be at most {reach} ({} GiB) with os.page_table = {:?}, whose \
                     entries name frames below that, got {memory_bytes}",
                    reach >> 30,
                    self.page_table.name()
                ),
            );
        }
        Ok(())
    }
}
