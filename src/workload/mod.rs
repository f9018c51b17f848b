//! MPI workloads: what each rank of a parallel program calls, before the `mpi` runtime
//! model turns the calls into a core's memory operations.
//!
//! A [`Workload`] holds one [`RankProgram`] per rank: its buffers (named arrays in its
//! address space) and its calls in program order. Point-to-point calls are MPI's
//! non-blocking ones with explicit request numbers (a blocking send is an `Isend` and a
//! `Wait`); collectives are expanded into point-to-point calls by MPICH2 1.2's algorithms
//! when the workload is built (`coll`), except the barrier, which the runtime itself runs
//! (it is where a backed-off program returns to MOPED). Compute phases are instruction
//! counts and sweeps over buffers, so computation and message data compete for the caches.

use crate::envelope::{Peer, Tag};

pub mod check;
pub mod coll;
pub mod goal;
pub mod imb;
pub mod npb;
pub mod queue;
pub mod spec;
pub mod tags;
pub mod trace;

/// A buffer of a rank: an index into [`RankProgram::buffers`].
pub type BufId = u16;

/// A request number, local to a rank (MPI_Request); free again once waited for.
pub type ReqId = u32;

/// The context of point-to-point calls (MPI_COMM_WORLD).
pub const CTX_PT2PT: u16 = 0;
/// The context of the messages inside collectives (MPICH gives each communicator a
/// second context for them, so they never match the application's messages).
pub const CTX_COLL: u16 = 1;

/// A place in a rank's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufRef {
    pub buf: BufId,
    pub offset: u64,
}

impl BufRef {
    pub fn new(buf: BufId, offset: u64) -> BufRef {
        BufRef { buf, offset }
    }
}

/// How a sweep touches memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SweepKind {
    /// Loads only (reading an array).
    Load,
    /// Stores only (writing an array; values derived from the address and the sweep).
    Store,
    /// A load then a store of each word (updating an array in place).
    Update,
}

/// One MPI-level call of a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// Non-memory instructions (at the configured CPI).
    Compute(u64),
    /// A compute phase's accesses: 8-byte words every `stride` bytes over `bytes` bytes
    /// from `at`.
    Sweep {
        at: BufRef,
        bytes: u64,
        stride: u64,
        kind: SweepKind,
    },
    /// MPI_Isend of `bytes` bytes at `buf` to rank `dst`.
    Isend {
        req: ReqId,
        dst: u16,
        tag: u32,
        ctx: u16,
        buf: BufRef,
        bytes: u64,
    },
    /// MPI_Irecv of at most `bytes` bytes into `buf`.
    Irecv {
        req: ReqId,
        src: Peer,
        tag: Tag,
        ctx: u16,
        buf: BufRef,
        bytes: u64,
    },
    /// MPI_Wait.
    Wait(ReqId),
    /// MPI_Waitall.
    Waitall(Vec<ReqId>),
    /// MPI_Barrier (the runtime runs MPICH's dissemination barrier).
    Barrier,
    /// The benchmark's timer starts here (gem5's `m5 resetstats`): statistics restart
    /// when the first rank reaches one; later ranks' marks change nothing. Costs nothing.
    ResetStats,
    /// The benchmark's timer stops here (gem5's `m5 dumpstats` at the end of the measured
    /// part): the statistics stop when every rank with such a mark has reached it, so
    /// what follows (draining a queue, say) is left out. Costs nothing.
    StopStats,
    /// A reduction's local step: `acc[i] += src[i]` over `bytes / 4` 4-byte floats
    /// (MPI_FLOAT, MPI_SUM), as loads, adds and stores.
    Combine {
        acc: BufRef,
        src: BufRef,
        bytes: u64,
    },
    /// A memcpy within the rank (a collective's own contribution).
    Copy {
        dst: BufRef,
        src: BufRef,
        bytes: u64,
    },
}

/// A named array of a rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub name: String,
    pub bytes: u64,
}

/// One rank's buffers and calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankProgram {
    pub buffers: Vec<Buffer>,
    pub calls: Vec<Call>,
}

impl RankProgram {
    /// Adds a buffer and returns its id.
    pub fn buffer(&mut self, name: &str, bytes: u64) -> BufId {
        self.buffers.push(Buffer {
            name: name.to_string(),
            bytes,
        });
        (self.buffers.len() - 1) as BufId
    }
}

/// A parallel program: one [`RankProgram`] per rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// Short name (the paper's: PP, XC, BC, RD, GA, AA, SP, CG, MG, FT, BT).
    pub name: String,
    pub ranks: Vec<RankProgram>,
    /// What the build changed from the specification (a scaled iteration count), said
    /// wherever the results are reported.
    pub notes: Vec<String>,
    /// Where the calls were written, when the workload was read from a file (GOAL).
    pub origins: Option<Origins>,
}

/// Where a workload's calls were written, for errors: the file and, per rank, each call's
/// line and column (from 1; `(0, 0)` for a call the reader added, such as a final wait).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origins {
    pub file: String,
    pub ranks: Vec<Vec<(u32, u32)>>,
    /// Per rank, the file its calls were read from where each rank has its own (a
    /// recorded trace); empty where every rank's calls are in `file`.
    pub files: Vec<String>,
}

impl Origins {
    /// `file:line:col` of call `call` of rank `rank`, where it is known.
    pub fn at(&self, rank: usize, call: usize) -> Option<String> {
        let file = self.files.get(rank).unwrap_or(&self.file);
        match self.ranks.get(rank)?.get(call)? {
            (0, _) => None,
            (line, col) => Some(format!("{file}:{line}:{col}")),
        }
    }
}

impl Workload {
    /// `file:line:col` of call `call` of rank `rank`, where the workload knows it.
    pub fn origin(&self, rank: usize, call: usize) -> Option<String> {
        self.origins.as_ref()?.at(rank, call)
    }

    /// Whether any rank posts a receive from MPI_ANY_SOURCE: then which send a receive
    /// matches, and so whether the program completes, may depend on timing.
    pub fn receives_from_any_source(&self) -> bool {
        self.ranks.iter().flat_map(|r| &r.calls).any(|c| {
            matches!(
                c,
                Call::Irecv {
                    src: crate::envelope::Peer::Any,
                    ..
                }
            )
        })
    }
}

/// The group a spec's results belong to in the figure.
pub fn group_of(s: &spec::Spec) -> String {
    match &s.kind {
        spec::SpecKind::Imb { bytes, .. } if *bytes >= 1 << 20 => "imb-1m",
        spec::SpecKind::Imb { .. } => "imb",
        spec::SpecKind::Npb { .. } => "npb",
        spec::SpecKind::Goal { .. } => "goal",
        spec::SpecKind::Queue(_) => "queue",
    }
    .into()
}

/// Loads a workload: a spec (`.toml`) or a GOAL schedule (`.goal`), with its group; a
/// spec's benchmark runs its warm-up first when `warmup` (a GOAL schedule is a trace: it
/// has none). The error text names the file and, for a parse error, its line and column.
pub fn load_workload(
    path: &std::path::Path,
    iteration_scale: Option<f64>,
    warmup: bool,
) -> Result<(Workload, String), String> {
    load_workload_on(path, None, iteration_scale, warmup)
}

/// [`load_workload_on`] with a GOAL schedule's message buffers touched, one word every
/// `touch_stride` bytes, when that is not 0 ([`goal::touch_buffers`]); other workloads
/// touch their buffers themselves.
pub fn load_workload_touched(
    path: &std::path::Path,
    ranks: Option<usize>,
    iteration_scale: Option<f64>,
    (warmup, touch_stride): (bool, u64),
) -> Result<(Workload, String), String> {
    let (mut w, group) = load_workload_on(path, ranks, iteration_scale, warmup)?;
    if touch_stride > 0 && group == "goal" {
        goal::touch_buffers(&mut w, touch_stride)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok((w, group))
}

/// [`load_workload`] on `ranks` ranks instead of the spec's own count (IMB and NPB specs;
/// the workload's notes say so). A GOAL schedule or queue benchmark has its ranks fixed:
/// asking for another count is an error.
pub fn load_workload_on(
    path: &std::path::Path,
    ranks: Option<usize>,
    iteration_scale: Option<f64>,
    warmup: bool,
) -> Result<(Workload, String), String> {
    // A recorded run and a GOAL schedule run on their own ranks.
    let fixed = |w: Workload, what: &str, group: &str| match ranks {
        Some(p) if p != w.ranks.len() => Err(format!(
            "{}: {p} ranks asked, but {what} runs on its own {} ranks",
            path.display(),
            w.ranks.len()
        )),
        _ => Ok((w, group.to_string())),
    };
    if path.is_dir() {
        let w = trace::load_trace(path, trace::TraceOptions::default())?;
        return fixed(w, "a recorded run", "trace");
    }
    if path.extension().is_some_and(|e| e == "goal") {
        let w = goal::load_goal(path).map_err(|e| e.to_string())?;
        return fixed(w, "a GOAL schedule", "goal");
    }
    let mut s = spec::load_spec(path).map_err(|e| e.to_string())?;
    let own = s.ranks();
    if let Some(p) = ranks {
        s.set_ranks(p)?;
    }
    let mut w = spec::build(&s, iteration_scale, warmup).map_err(|e| match ranks {
        // The spec's `ranks` line is where a count is checked, but the count came from the
        // caller.
        Some(p) => format!("{p} ranks asked: {e}"),
        None => e.to_string(),
    })?;
    if let (Some(p), Some(own)) = (ranks, own) {
        if p != own {
            w.notes
                .push(format!("ranks set to {p} (the spec has {own})"));
        }
    }
    Ok((w, group_of(&s)))
}
