//! Stopping a run before the host runs out of memory. Simulated memory is kept on the host
//! as it is written (page by page), so a run whose ranks touch more than the host holds
//! would grow until the OS kills it, losing hours of work without a word: IMB Alltoall of
//! 16 kB on 256 ranks with its warm-up writes the whole ch3:shm segment of 256² queues
//! (17 GB). The event loop asks [`exhausted`] every [`EVERY`] events (a fraction of a
//! second of host time) and stops the run with a message instead.

/// Events between two looks at the host's memory: a power of two, tested with a mask
/// only on the events where the loop looks at its stop flags.
pub const EVERY: u64 = 1 << 22;
const _: () = assert!(EVERY % super::interrupt::EVERY == 0);

/// Host memory this process and the host have, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMemory {
    /// This process's resident set.
    pub resident: u64,
    /// `MemAvailable`: what the host can still give without swapping.
    pub available: u64,
    /// `MemTotal`.
    pub total: u64,
}

/// Reads the host's memory; `None` where `/proc` does not tell.
pub fn read() -> Option<HostMemory> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()?
            .checked_mul(1024)
    };
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(HostMemory {
        resident: pages.checked_mul(4096)?,
        available: field("MemAvailable:")?,
        total: field("MemTotal:")?,
    })
}

/// Why the run must stop, if it must: the host has less than 2 % of its memory (and under
/// 512 MiB) left, and this process holds more than half of it, so it is the one the OS
/// would kill. A host filled by others is not this run's to stop.
pub fn verdict(m: HostMemory) -> Option<String> {
    let low = m.available < (m.total / 50).min(512 << 20);
    let ours = m.resident > m.total / 2;
    (low && ours).then(|| {
        format!(
            "the host is nearly out of memory ({} MiB of {} MiB left) and this run holds {} \
             MiB, most of it simulated memory that its programs wrote; stopped before the OS \
             kills the process. Fewer ranks, fewer iterations (--iterations) or no warm-up \
             (--no-warmup) write less",
            m.available >> 20,
            m.total >> 20,
            m.resident >> 20
        )
    })
}

/// Why the run must stop for want of host memory, if it must.
pub fn exhausted() -> Option<String> {
    read().and_then(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn stops_only_a_run_that_holds_most_of_a_nearly_full_host() {
        let m = |resident, available| HostMemory {
            resident,
            available,
            total: 24 * GIB,
        };
        let why = verdict(m(20 * GIB, 300 << 20)).unwrap();
        assert!(why.contains("300 MiB of 24576 MiB left"), "{why}");
        assert!(why.contains("holds 20480 MiB"), "{why}");
        // Plenty left.
        assert_eq!(verdict(m(20 * GIB, 3 * GIB)), None);
        // Nearly full, but by others.
        assert_eq!(verdict(m(2 * GIB, 300 << 20)), None);
    }

    #[test]
    fn this_host_can_be_read() {
        if let Some(m) = read() {
            assert!(m.resident > 0 && m.resident < m.total && m.available <= m.total);
        }
    }
}
