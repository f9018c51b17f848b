//! The sections that say how workloads run rather than what the machine is: the MPI
//! runtime model (`[mpi]`), the workloads (`[workload]`) and the simulator itself
//! (`[sim]`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{invalid, is_pow2, ConfigError};

/// How far apart the queues lie in the shared segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QueueStride {
    /// MPICH2 1.2's: the queues are an array in one segment, each `sizeof` the queue
    /// struct (`mpi::shm::QUEUE_BYTES`, a multiple of 8) after the last.
    #[default]
    Mpich,
    /// Each queue rounded up to whole pages, so every queue header sits at a page's start
    /// (and, in a physically indexed cache, in one of few sets).
    Page,
}

/// Where a rank keeps the messages that arrived before their receive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum UnexpectedQueue {
    /// MPICH's linked list of records, the payload in a buffer of its own.
    #[default]
    List,
    /// Limited-length head separation (Tanabe and Ohta): each message's head
    /// (envelope and first bytes) in a contiguous ring of fixed-size entries, the rest in
    /// a buffer of its own; searched entry after entry without following pointers.
    Lhs,
}

impl UnexpectedQueue {
    /// The name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            UnexpectedQueue::List => "list",
            UnexpectedQueue::Lhs => "lhs",
        }
    }
}

/// Posted-receive and unexpected entries each rank's lists hold unless `mpi.list_entries`
/// says otherwise.
pub const MPI_LIST_ENTRIES: u64 = 2048;

/// The MPICH-like runtime of MPI workloads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MpiSection {
    /// Distance between the ch3:shm queues: `"mpich"` (back to back, MPICH2 1.2's) or
    /// `"page"` (each rounded up to whole pages).
    pub queue_stride: QueueStride,
    /// Instructions of an MPI call's entry (argument checks, request set-up), the
    /// queue and port accesses it makes counted apart.
    pub call_instructions: u64,
    /// Instructions between two polls of a MOPED descriptor.
    pub poll_instructions: u64,
    /// Entries of each rank's posted-receive and unexpected lists (MPICH allocates them as
    /// needed; this bounds the model's region for them). Deeper than the default only for
    /// the queue benchmarks: the size moves the addresses of what follows the lists.
    pub list_entries: u64,
    /// How the unexpected-message queue is kept: `"list"` or `"lhs"`.
    pub unexpected_queue: UnexpectedQueue,
    /// LHS: bytes of one LH-buffer entry (a power of two, 16 to 4096): the envelope's 16
    /// bytes and as much of the payload as fits.
    pub lhs_entry_bytes: u64,
    /// LHS: entries of each rank's LH buffer (1 to 32768); once it is full, messages go
    /// to the list until the list is empty again, so arrival order is kept. With `[nic]`
    /// on, the positions of each NIC's receive ring (with LHS its LH buffer's entries,
    /// without it the bulk memory's message slots), which does not overflow.
    pub lhs_entries: u64,
    /// LHS: the search loop issues a software prefetch (an SSE `prefetch` instruction)
    /// for the address `search_prefetch_offset` bytes past the entry it is about to read,
    /// as the LHS paper's conditions 3 to 6 of Fig. 5 do; false: none (its conditions 1 and
    /// 2).
    pub search_prefetch: bool,
    /// LHS: bytes past the entry being read that the search's software prefetch fetches
    /// (0, 256 and 512 in the paper; a multiple of 8 up to 65536).
    pub search_prefetch_offset: u64,
}

impl MpiSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=32_768).contains(&self.list_entries) {
            return invalid("mpi.list_entries", "must be from 1 to 32768");
        }
        let b = self.lhs_entry_bytes;
        if !(b.is_power_of_two() && (16..=4096).contains(&b)) {
            return invalid(
                "mpi.lhs_entry_bytes",
                "must be a power of two from 16 to 4096",
            );
        }
        if !(1..=32_768).contains(&self.lhs_entries) {
            return invalid("mpi.lhs_entries", "must be from 1 to 32768");
        }
        if self.lhs_entries * b > 64 << 20 {
            return invalid(
                "mpi.lhs_entries",
                "times mpi.lhs_entry_bytes must be at most 64 MiB",
            );
        }
        let off = self.search_prefetch_offset;
        if off % 8 != 0 || off > 65_536 {
            return invalid(
                "mpi.search_prefetch_offset",
                format!("must be a multiple of 8 from 0 to 65536, not {off}"),
            );
        }
        Ok(())
    }
}

impl Default for MpiSection {
    fn default() -> Self {
        MpiSection {
            queue_stride: QueueStride::Mpich,
            // MPICH's ch3 posts a non-blocking send in 253 instructions on average, data
            // movement and matching left out (Raffenetti et al., SC17, as cited by the
            // two-level CAM matching paper's introduction): the part this model does not simulate as
            // queue and port accesses.
            call_instructions: 253,
            // The MOPED library's loop between two reads of a descriptor's status: an
            // estimate, as the paper gives no code for it.
            poll_instructions: 10,
            list_entries: MPI_LIST_ENTRIES,
            unexpected_queue: UnexpectedQueue::List,
            // One cache line, the entry size the LHS paper recommends.
            lhs_entry_bytes: 64,
            // DIMMnet-2's LH buffer (the LHS paper, section 4.2).
            lhs_entries: 1024,
            // The paper's program has no software prefetch (section 4.2) ...
            search_prefetch: false,
            // ... and its first prefetch condition fetches the entry being read.
            search_prefetch_offset: 0,
        }
    }
}

/// How workloads are run (not the machine).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WorkloadSection {
    /// Run each workload's untimed warm-up (IMB's warm-up calls, NPB's untimed first
    /// iteration) and restart the statistics where its timer starts, as the paper measures
    /// in timing mode after a warm-up mode (section 5); false: cold caches, and every
    /// cycle from the start counted.
    pub warmup: bool,
    /// Where an MPI workload's buffers start: each at the next multiple of this many bytes
    /// (a power of two up to the page), after a 16-byte header below the page size. 4096:
    /// each buffer on its own pages; 16: back to back as glibc's malloc hands them out
    /// (16-byte aligned, after its chunk header), so that copies re-align and lines fill
    /// in part.
    pub buffer_align: u64,
    /// GOAL schedules with data: a sender writes its send buffer before each send and a
    /// receiver reads its receive buffer after each receive, one 8-byte word every this
    /// many bytes (64: every line; a multiple of 8). 0: a schedule's messages are never
    /// touched by a core, as a GOAL trace has no data. IMB and NPB specs touch their
    /// buffers themselves and ignore it.
    pub touch_buffers: u64,
}

impl Default for WorkloadSection {
    fn default() -> Self {
        WorkloadSection {
            warmup: true,
            // IMB and NPB take their buffers from malloc and static arrays, not page by
            // page: glibc's 16-byte alignment is the closest of the two.
            buffer_align: 16,
            touch_buffers: 0,
        }
    }
}

impl WorkloadSection {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let page = crate::os::pagetable::PAGE_BYTES;
        if self.touch_buffers % 8 != 0 {
            return invalid(
                "workload.touch_buffers",
                format!(
                    "must be 0 or a multiple of 8 bytes (a word every so many bytes), not {}",
                    self.touch_buffers
                ),
            );
        }
        if !is_pow2(self.buffer_align) || self.buffer_align > page {
            return invalid(
                "workload.buffer_align",
                format!(
                    "must be a power of two from 1 to the page size ({page}), got {}",
                    self.buffer_align
                ),
            );
        }
        Ok(())
    }
}

/// How the simulator runs the machine (not the machine itself: no setting here changes a
/// statistic but the simulator's own event counts and host time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SimSection {
    /// A core whose pass of its polling loop found nothing new, and whose next pass will
    /// find the same, skips its passes until something reaches its caches, and they are
    /// accounted as if run (`sim::fastforward`); false runs every pass event by event.
    pub fast_forward: bool,
    /// A load that hits the core's L1 goes to its driver as it hits, stamped with its
    /// completion cycle, without an event of its own: a blocking load while the core has
    /// nothing else in flight, a window load unless the core then waits for room; where
    /// the driver says nothing else reads what the completion changes before the core's
    /// next step (`Driver::completes_privately`). False queues every hit's completion as
    /// an event.
    pub short_hits: bool,
}

impl Default for SimSection {
    fn default() -> Self {
        SimSection {
            fast_forward: true,
            short_hits: true,
        }
    }
}
