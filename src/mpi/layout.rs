//! Where a rank's memory lies in its address space (the same layout in every rank).
//!
//! ```text
//! 0x0800_0000  runtime: posted-receive entries, unexpected entries, list heads,
//!              unexpected-message buffers, and with `mpi.unexpected_queue = "lhs"` the
//!              LH buffer (its head and tail indices in its first line, then the entries)
//! 0x1000_0000  the workload's buffers, in order, each aligned to `workload.buffer_align`
//! 0x3FFF_F000  the backoff word, shared by every rank of the program
//! 0x4000_0000  the ch3:shm queues, one per directed pair: (src -> dst) at
//!              SHM_BASE + (dst * P + src) * stride (`mpi.queue_stride`), in one
//!              segment shared by every rank
//! ```

use crate::os::pagetable::PAGE_BYTES;
use crate::workload::Workload;

use crate::config::QueueStride;

pub const PRIV_BASE: u64 = 0x0800_0000;
pub const BUF_BASE: u64 = 0x1000_0000;
pub const FLAG_VA: u64 = 0x3FFF_F000;
pub const SHM_BASE: u64 = 0x4000_0000;
/// "No backoff" in the shared backoff word.
pub const NO_BACKOFF: u64 = u64::MAX;
/// Posted-receive and unexpected entries each list holds by default (`mpi.list_entries`).
pub use crate::config::MPI_LIST_ENTRIES as LIST_ENTRIES;
/// Bytes of unexpected-message buffers per rank.
pub const TMP_BYTES: u64 = 4 << 20;

/// The addresses of one run's ranks.
#[derive(Clone, Debug)]
pub struct Layout {
    pub ranks: usize,
    /// Per rank, the address of each buffer.
    pub buf_va: Vec<Vec<u64>>,
    /// Per rank, the end of its buffers.
    pub buf_end: Vec<u64>,
    pub posted_base: u64,
    pub unexpected_base: u64,
    pub list_heads: u64,
    /// Entries each list holds.
    pub list_entries: u64,
    pub tmp_base: u64,
    pub tmp_bytes: u64,
    /// The LH buffer's control line (head and tail indices); its entries follow.
    pub lh_base: u64,
    /// Entries of the LH buffer: 0 when the unexpected queue is MPICH's list.
    pub lh_entries: u64,
    pub lh_entry_bytes: u64,
    pub flag_va: u64,
    /// Bytes from one ch3:shm queue to the next.
    pub queue_stride: u64,
    /// With `[nic]` on: every rank's NIC, whose receive ring is its unexpected queue (the
    /// LH buffer's entries in the NIC, `lh_entry_bytes` 0 without LHS).
    pub nic: Option<NicLayout>,
    /// LHS: the search's software prefetch, bytes past the entry read (`mpi.search_prefetch`).
    pub search_prefetch: Option<u64>,
}

/// Where a rank finds its NIC (rank `r`'s is NIC `r`), and how the NIC keeps messages.
#[derive(Clone, Copy, Debug)]
pub struct NicLayout {
    pub map: crate::nic::NicMap,
    /// The Size Information Location Register.
    pub size_offset: u64,
    pub slot_bytes: u64,
    pub window_bytes: u64,
    /// The library flushes an LH-buffer line once it has read it (`nic.flush` with a
    /// write-back mapping).
    pub flush: bool,
    /// The NIC matches (`nic.matcher`): receives are posted to it, pairs taken from its
    /// completion queue.
    pub matcher: bool,
}

impl NicLayout {
    /// Rank `me`'s register `reg` (`nic::reg`).
    pub fn reg(&self, me: u16, reg: u64) -> u64 {
        self.map.addr(me as usize, crate::nic::Region::Regs, reg)
    }

    /// The first byte of rank `me`'s send window, Read Window, LH buffer.
    pub fn send(&self, me: u16) -> u64 {
        self.map.addr(me as usize, crate::nic::Region::Send, 0)
    }

    pub fn window(&self, me: u16) -> u64 {
        self.map
            .addr(me as usize, crate::nic::Region::ReadWindow, 0)
    }

    pub fn lh(&self, me: u16) -> u64 {
        self.map.addr(me as usize, crate::nic::Region::Lh, 0)
    }

    /// The address of pair `i` of rank `me`'s NIC's completion queue.
    pub fn pair(&self, me: u16, i: u64) -> u64 {
        self.map.addr(
            me as usize,
            crate::nic::Region::Cq,
            16 * (i % crate::nic::CQ_PAIRS),
        )
    }

    /// The bulk-memory address of position `seq`'s slot in a ring of `positions`.
    pub fn slot(&self, seq: u64, positions: u64) -> u64 {
        (seq % positions) * self.slot_bytes
    }
}

/// Bytes malloc keeps before each block it hands out (glibc's chunk header, rounded to its
/// 16-byte alignment).
const MALLOC_HEADER: u64 = 16;

fn round_up(x: u64, align: u64) -> u64 {
    x.div_ceil(align) * align
}

/// At most the bytes a buffer of `bytes` moves the next one's start by ([`Layout::new`]):
/// whole pages when page-aligned, else its header and alignment on top.
fn footprint(bytes: u64, align: u64) -> Option<u64> {
    let bytes = bytes.max(1);
    if align >= PAGE_BYTES {
        bytes.checked_next_multiple_of(PAGE_BYTES)
    } else {
        bytes.checked_add(MALLOC_HEADER + align)
    }
}

/// Fails unless every rank's buffers fit both its buffer window (`BUF_BASE` up to
/// `FLAG_VA`) and, all ranks together, the `frame_bytes` of frames the OS hands out (the
/// upper half of `memory.size_bytes`); the error names the rank, its largest buffer and
/// the limit.
pub fn check_fits(w: &Workload, frame_bytes: u64, align: u64) -> Result<(), String> {
    let window = FLAG_VA - BUF_BASE;
    let mut total: u64 = 0;
    for (r, rank) in w.ranks.iter().enumerate() {
        let need = rank
            .buffers
            .iter()
            .try_fold(0u64, |sum, b| sum.checked_add(footprint(b.bytes, align)?));
        let need = need.and_then(|n| n.checked_next_multiple_of(PAGE_BYTES));
        let largest = rank.buffers.iter().max_by_key(|b| b.bytes);
        let what = |limit: String| match largest {
            Some(b) => format!(
                "workload {}: rank {r}'s buffers (the largest, `{}`, of {} bytes) do not fit \
                 {limit}",
                w.name, b.name, b.bytes
            ),
            None => format!("workload {}: rank {r}'s buffers do not fit {limit}", w.name),
        };
        let need = match need {
            Some(n) if n <= window => n,
            _ => {
                return Err(what(format!(
                    "the {window} bytes a rank's buffers may take"
                )))
            }
        };
        total = total.saturating_add(need);
        if total > frame_bytes {
            return Err(what(format!(
                "memory beside the other ranks' ({frame_bytes} bytes of frames: the upper \
                 half of memory.size_bytes)"
            )));
        }
    }
    Ok(())
}

impl Layout {
    /// The layout of `w` with its buffers aligned to `align` bytes (a power of two up to
    /// the page): page-aligned buffers take whole pages each; smaller alignments pack them
    /// as malloc does, each after a header.
    pub fn new(w: &Workload, stride: QueueStride, align: u64) -> Layout {
        let header = if align < PAGE_BYTES { MALLOC_HEADER } else { 0 };
        let mut buf_va = Vec::new();
        let mut buf_end = Vec::new();
        for r in &w.ranks {
            let mut at = BUF_BASE;
            let mut vas = Vec::new();
            for b in &r.buffers {
                let va = round_up(at + header, align);
                vas.push(va);
                at = va + b.bytes.max(1);
            }
            buf_va.push(vas);
            buf_end.push(round_up(at, PAGE_BYTES));
        }
        let mut layout = Layout {
            ranks: w.ranks.len(),
            buf_va,
            buf_end,
            posted_base: PRIV_BASE,
            unexpected_base: 0,
            list_heads: 0,
            list_entries: 0,
            tmp_base: 0,
            tmp_bytes: TMP_BYTES,
            lh_base: 0,
            lh_entries: 0,
            lh_entry_bytes: 0,
            flag_va: FLAG_VA,
            queue_stride: stride.bytes(),
            nic: None,
            search_prefetch: None,
        };
        layout.set_list_entries(LIST_ENTRIES);
        layout
    }

    /// Room for `entries` in each list (1 to 32,768: with the unexpected buffers, well
    /// inside the runtime's region below `BUF_BASE`); what follows the lists moves.
    pub fn set_list_entries(&mut self, entries: u64) {
        self.list_entries = entries;
        self.unexpected_base = self.posted_base + entries * 64;
        self.list_heads = self.unexpected_base + entries * 64;
        self.tmp_base = self.list_heads + PAGE_BYTES;
        self.lh_base = self.tmp_base + self.tmp_bytes;
    }

    /// An LH buffer of `entries` entries of `entry_bytes` each, after the unexpected-message
    /// buffers (none: 0 entries). Call after [`Layout::set_list_entries`].
    pub fn set_lh_buffer(&mut self, entries: u64, entry_bytes: u64) {
        self.lh_entries = entries;
        self.lh_entry_bytes = entry_bytes;
    }

    /// The end of the runtime's private region.
    pub fn priv_end(&self) -> u64 {
        if self.lh_entries == 0 || self.nic.is_some() {
            return self.tmp_base + self.tmp_bytes;
        }
        round_up(
            self.lh_base + PAGE_BYTES + self.lh_entries * self.lh_entry_bytes,
            PAGE_BYTES,
        )
    }

    /// The queue that `src` writes and `dst` reads.
    pub fn queue(&self, src: u16, dst: u16) -> u64 {
        SHM_BASE + (dst as u64 * self.ranks as u64 + src as u64) * self.queue_stride
    }

    /// The end of the shared segment: the queues, up to the end of the last one's page.
    pub fn shm_end(&self) -> u64 {
        round_up(
            SHM_BASE + (self.ranks * self.ranks) as u64 * self.queue_stride,
            PAGE_BYTES,
        )
    }

    /// The most physical memory the run's pages may take, by what takes it. Buffers take
    /// their frames at set-up; the runtime's regions and the shared segment as they are
    /// touched, so a short run takes far less than this.
    pub fn frame_need(&self) -> FrameNeed {
        let p = self.ranks as u64;
        let buffers: u64 = self.buf_end.iter().map(|&e| e - BUF_BASE).sum();
        let private = self.priv_end() - PRIV_BASE;
        // Page-table pages, at most: one leaf per 2 MiB of a rank's own regions, and one
        // for each queue the rank writes or reads (its row of the segment is contiguous,
        // its column strided a row apart), with the levels above.
        let leaves = |bytes: u64| bytes.div_ceil(TABLE_REACH);
        let tables: u64 = self
            .buf_end
            .iter()
            .map(|&e| (leaves(e - BUF_BASE) + leaves(private) + 2 * p + 8) * PAGE_BYTES)
            .sum();
        FrameNeed {
            buffers,
            runtime: p * (private + PAGE_BYTES),
            segment: self.shm_end() - SHM_BASE,
            tables,
        }
    }
}

/// Bytes one page-table page maps (x86-64's 512 entries of 4 KiB; IA-32's 1,024 map more).
const TABLE_REACH: u64 = 512 * PAGE_BYTES;

/// Physical memory a run may take ([`Layout::frame_need`]), in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameNeed {
    /// The workload's buffers, every rank's.
    pub buffers: u64,
    /// The runtime's private regions (lists, unexpected-message buffers, the LH buffer)
    /// and the shared backoff word.
    pub runtime: u64,
    /// The ch3:shm segment: a queue per directed pair of ranks.
    pub segment: u64,
    /// Page tables, at most.
    pub tables: u64,
}

impl FrameNeed {
    pub fn total(&self) -> u64 {
        self.buffers + self.runtime + self.segment + self.tables
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::goal::parse_goal;

    fn pair(bytes: u64) -> Workload {
        let text = format!(
            "num_ranks 2\nrank 0 {{\n send {bytes}b to 1\n}}\nrank 1 {{\n recv {bytes}b from 0\n}}\n"
        );
        parse_goal(&text, "big.goal").unwrap()
    }

    /// Issue 24: a GOAL message size near 2^64 panicked with `capacity overflow`.
    #[test]
    fn buffers_must_fit_the_ranks_memory() {
        let e = check_fits(&pair(18_446_744_073_709_551_000), 512 << 20, PAGE_BYTES).unwrap_err();
        assert_eq!(
            e,
            "workload big: rank 0's buffers (the largest, `send`, of 18446744073709551000 \
             bytes) do not fit the 805302272 bytes a rank's buffers may take"
        );
        let e = check_fits(&pair(200 << 20), 256 << 20, PAGE_BYTES).unwrap_err();
        assert_eq!(
            e,
            "workload big: rank 1's buffers (the largest, `recv`, of 209715200 bytes) do not \
             fit memory beside the other ranks' (268435456 bytes of frames: the upper half of \
             memory.size_bytes)"
        );
        check_fits(&pair(16384), 256 << 20, PAGE_BYTES).unwrap();
        check_fits(&pair(16384), 256 << 20, 16).unwrap();
    }

    #[test]
    fn buffers_are_page_aligned_or_packed_as_malloc_packs_them() {
        let mut w = pair(1);
        w.ranks[0] = crate::workload::RankProgram::default();
        w.ranks[0].buffer("first", 100);
        w.ranks[0].buffer("second", 5000);
        let paged = Layout::new(&w, QueueStride::Mpich, PAGE_BYTES);
        assert_eq!(paged.buf_va[0], [BUF_BASE, BUF_BASE + PAGE_BYTES]);
        assert_eq!(paged.buf_end[0], BUF_BASE + 3 * PAGE_BYTES);
        let packed = Layout::new(&w, QueueStride::Mpich, 16);
        // 16 bytes of header before each; 100 bytes end at 0x74, rounded to 0x80, + 16.
        assert_eq!(packed.buf_va[0], [BUF_BASE + 0x10, BUF_BASE + 0x90]);
        assert_eq!(packed.buf_end[0], BUF_BASE + 2 * PAGE_BYTES);
        let lines = Layout::new(&w, QueueStride::Mpich, 64);
        assert_eq!(lines.buf_va[0], [BUF_BASE + 0x40, BUF_BASE + 0xc0]);
    }
}
