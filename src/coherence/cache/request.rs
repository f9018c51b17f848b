//! What a core and the MOPED beside this L2 ask of the controller, and what it answers.

use crate::mem::{LineAddr, LineData};

/// A core's memory access, at most 8 bytes within one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoreReq {
    pub id: u64,
    pub kind: AccessKind,
    pub addr: u64,
    pub size: u8,
    /// The value stored (stores only).
    pub value: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load,
    Store,
}

/// Where a completed access found its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HitLevel {
    L1,
    L2,
    /// An L2 miss whose data came from another core's cache.
    OtherCache,
    /// An L2 miss whose data came from memory.
    Memory,
    /// An L2 miss that needed only permission (the core owned the data).
    Upgrade,
    /// A MOPED port access (uncached, answered by the device).
    Port,
    /// An uncacheable or write-combining access to a NIC (`[nic]`), answered by it.
    Device,
}

/// A finished core access: the value loaded (or stored) and where it was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completed {
    pub req: CoreReq,
    pub value: u64,
    pub level: HitLevel,
}

/// The answer to a core request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreOutcome {
    /// Completed at once (an L1 or L2 hit); the completion is in the output list.
    Hit(HitLevel),
    /// A miss is outstanding; the completion comes with a later message.
    Miss,
    /// The line is busy or no way can be freed: retry when this controller changes.
    Stalled,
}

/// What the MOPED beside this L2 asks of it (paper, section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MopedKind {
    /// Read a send-buffer or page-table line for the copy unit (event `M_GETS`).
    Read,
    /// Exclusive rights to a receive-buffer line (event `M_GETX`).
    Own,
    /// Exclusive rights to a receive-buffer line the copy unit overwrites whole (event
    /// `M_FILL`, where the protocol has it; `M_GETX` otherwise).
    Fill,
}

/// A MOPED request on one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MopedReq {
    pub kind: MopedKind,
    pub addr: LineAddr,
    /// For `Own` and `Fill`: bytes to store when the rights are granted (bit `i` of the
    /// mask selects byte `i`), so the grant and the copy unit's write are one step.
    pub write: Option<(LineData, u64)>,
    /// A page walk's read of a page-table line (`Read` only): served like any read, and
    /// counted apart so a run shows where its walks found their lines.
    pub page_table: bool,
}

/// What this L2 tells its MOPED.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MopedDone {
    /// The data of a line the MOPED read.
    Data { addr: LineAddr, data: LineData },
    /// Exclusive rights granted; the MOPED writes the line later
    /// ([`super::CacheCtrl::moped_write`]).
    Granted { addr: LineAddr },
    /// Exclusive rights granted and the request's bytes stored.
    Written { addr: LineAddr },
}

impl MopedDone {
    pub fn addr(&self) -> LineAddr {
        match *self {
            MopedDone::Data { addr, .. }
            | MopedDone::Granted { addr }
            | MopedDone::Written { addr } => addr,
        }
    }
}
