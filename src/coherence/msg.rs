//! Coherence messages and their virtual networks. Names follow gem5's MOESI_CMP_directory.

use crate::mem::{LineAddr, LineData, LINE_BYTES};

/// A network endpoint: cores' L2 controllers are `0..cores`, directory banks follow.
pub type NodeId = u16;

/// Coherence message types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MsgType {
    // Requests, core -> directory (vnet 0).
    Gets,
    Getx,
    Putx,
    Puto,
    // Forwards, directory -> core (vnet 1).
    FwdGets,
    FwdGetx,
    Inv,
    WbAck,
    WbNack,
    // Responses (vnet 2).
    Data,
    DataExclusive,
    Ack,
    Unblock,
    ExclusiveUnblock,
    WbDirtyData,
    WbCleanData,
    // MOPED's requests (OPTCOPY and OPTCACHE, paper section 4.5), and their answers.
    /// A copy of the line without access rights (vnet 0).
    GetCopy,
    /// Exclusive rights to a line that will be overwritten whole, without its data (vnet 0).
    GetFill,
    /// The directory forwards a GET_COPY to the owner (vnet 1).
    FwdGetCopy,
    /// The directory grants a GET_FILL, with the ack count but no data (vnet 2).
    FillGrant,
}

impl MsgType {
    pub const ALL: [MsgType; 20] = [
        MsgType::Gets,
        MsgType::Getx,
        MsgType::Putx,
        MsgType::Puto,
        MsgType::FwdGets,
        MsgType::FwdGetx,
        MsgType::Inv,
        MsgType::WbAck,
        MsgType::WbNack,
        MsgType::Data,
        MsgType::DataExclusive,
        MsgType::Ack,
        MsgType::Unblock,
        MsgType::ExclusiveUnblock,
        MsgType::WbDirtyData,
        MsgType::WbCleanData,
        MsgType::GetCopy,
        MsgType::GetFill,
        MsgType::FwdGetCopy,
        MsgType::FillGrant,
    ];

    /// Names as they appear in statistics and traces.
    pub const NAMES: [&'static str; 20] = [
        "GETS",
        "GETX",
        "PUTX",
        "PUTO",
        "Fwd_GETS",
        "Fwd_GETX",
        "INV",
        "WB_ACK",
        "WB_NACK",
        "DATA",
        "DATA_EXCLUSIVE",
        "ACK",
        "UNBLOCK",
        "EXCLUSIVE_UNBLOCK",
        "WRITEBACK_DIRTY_DATA",
        "WRITEBACK_CLEAN_DATA",
        "GET_COPY",
        "GET_FILL",
        "Fwd_GET_COPY",
        "FILL_GRANT",
    ];

    /// Number of virtual networks: requests, forwards, responses.
    pub const VNETS: usize = 3;

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Requests on vnet 0, directory forwards on vnet 1, responses on vnet 2, so a
    /// response can never be stuck behind a request.
    pub fn vnet(self) -> usize {
        match self {
            MsgType::Gets
            | MsgType::Getx
            | MsgType::Putx
            | MsgType::Puto
            | MsgType::GetCopy
            | MsgType::GetFill => 0,
            MsgType::FwdGets
            | MsgType::FwdGetx
            | MsgType::FwdGetCopy
            | MsgType::Inv
            | MsgType::WbAck
            | MsgType::WbNack => 1,
            _ => 2,
        }
    }

    /// True if the message carries the line's 64 bytes.
    pub fn carries_data(self) -> bool {
        matches!(
            self,
            MsgType::Data | MsgType::DataExclusive | MsgType::WbDirtyData | MsgType::WbCleanData
        )
    }

    /// Size on the wire: a control header, plus the line for data messages.
    pub fn bytes(self, header_bytes: u32) -> u32 {
        if self.carries_data() {
            header_bytes + LINE_BYTES as u32
        } else {
            header_bytes
        }
    }
}

/// One coherence message. Data messages carry the line; others leave `data` zeroed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Msg {
    pub ty: MsgType,
    pub addr: LineAddr,
    pub src: NodeId,
    pub dst: NodeId,
    /// The core whose request this message serves (for forwards, invalidations, acks).
    pub requestor: NodeId,
    /// Acks the requestor must collect (on data and Own_GETX forwards).
    pub acks: i16,
    /// The line is modified with respect to memory (travels with migrating data).
    pub dirty: bool,
    pub data: LineData,
}

impl Msg {
    pub fn control(
        ty: MsgType,
        addr: LineAddr,
        src: NodeId,
        dst: NodeId,
        requestor: NodeId,
    ) -> Msg {
        Msg {
            ty,
            addr,
            src,
            dst,
            requestor,
            acks: 0,
            dirty: false,
            data: [0; LINE_BYTES],
        }
    }
}

/// Where a controller's messages go. The timing simulator puts each one into the network
/// as the action produces it; the exhaustive checker and the unit harnesses collect them in
/// a list ([`Vec<Outgoing>`]).
pub trait Outbox {
    /// Sends `msg` once `delay` cycles of controller latency have passed.
    fn send(&mut self, msg: Msg, delay: u32);

    /// The cycle of the event being processed, for controllers that time shared resources
    /// (a directory's memory channel); untimed outboxes are always at 0.
    fn now(&self) -> u64 {
        0
    }
}

impl Outbox for Vec<Outgoing> {
    #[inline]
    fn send(&mut self, msg: Msg, delay: u32) {
        self.push(Outgoing { msg, delay });
    }
}

/// A message leaving a controller, with the controller-side latency before injection
/// (cache access, directory lookup, memory access).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub msg: Msg,
    pub delay: u32,
}
