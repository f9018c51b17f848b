//! EMP's steps as the NIC's processors run them: which step of which message or frame,
//! its rank in the dispatch loop, and which of the scheme files' steps ([`StepKind`]) it is,
//! so that a scheme assigns it as Table 2 does.

use super::EmpStep;
use crate::moped::engines::StepKind;

/// A frame in the NIC memories or on the wire (an index into the world's frames).
pub(super) type FrameId = u32;

/// A step of one message (or frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Handle preposted receive descriptor.
    PostReceive { seq: u64 },
    /// Send bookkeeping.
    Bookkeep { seq: u64 },
    /// Transmission of one frame.
    Transmit { seq: u64, index: u32 },
    /// Classify frame (recv bookkeeping) of a data frame.
    Classify(FrameId),
    /// Receive frame: record the frame and start its DMA to the host.
    ReceiveFrame(FrameId),
    /// Receiving: the frame's DMA to the host is done.
    Receiving { seq: u64 },
    /// Send ack for message `seq`'s first `upto` frames.
    SendAck { seq: u64, upto: u32 },
    /// Receive acknowledgment, its arrival.
    AckArrival(FrameId),
    /// Receive acknowledgment, the send records.
    AckUpdate { seq: u64, upto: u32 },
}

impl Act {
    pub fn step(&self) -> EmpStep {
        match self {
            Act::PostReceive { .. } => EmpStep::PostReceive,
            Act::Bookkeep { .. } => EmpStep::SendBookkeeping,
            Act::Transmit { .. } => EmpStep::Transmission,
            Act::Classify(_) => EmpStep::Classify,
            Act::ReceiveFrame(_) => EmpStep::ReceiveFrame,
            Act::Receiving { .. } => EmpStep::Receiving,
            Act::SendAck { .. } => EmpStep::SendAck,
            Act::AckArrival(_) => EmpStep::AckArrival,
            Act::AckUpdate { .. } => EmpStep::AckUpdate,
        }
    }

    /// The step's rank in EMP's priority-based dispatch loop (the paper, section 6.1),
    /// lower first; steps of one rank run in the order they became ready. The order is a
    /// choice: a step that finishes a message (receiving, the ack's update) before one that
    /// carries a message on (receive frame, send ack, the next frame's transmission), before
    /// one that takes in a frame from the wire (classify, an acknowledgment's arrival),
    /// before one that takes a new descriptor from the host: work under way drains before
    /// new work enters, which keeps buffers free and acknowledgments prompt.
    pub fn rank(&self) -> usize {
        match self {
            Act::Receiving { .. } | Act::AckUpdate { .. } => 0,
            Act::ReceiveFrame(_) | Act::SendAck { .. } | Act::Transmit { .. } => 1,
            Act::Classify(_) | Act::AckArrival(_) => 2,
            Act::Bookkeep { .. } | Act::PostReceive { .. } => 3,
        }
    }

    /// Ranks of [`Act::rank`].
    pub const RANKS: usize = 4;

    /// Whether the step always updates a DMA or MAC queue (its critical section, in Table
    /// 1's time); the others may, at a message's end (its completion word).
    pub fn always_queues(&self) -> bool {
        matches!(
            self,
            Act::Transmit { .. } | Act::ReceiveFrame(_) | Act::SendAck { .. } | Act::AckArrival(_)
        )
    }
}

/// The scheme files' step that an EMP step is: the one whose [`StepKind::emp_name`] names
/// it, so that every scheme's assignment (Table 2) places it.
pub fn step_kind(step: EmpStep) -> StepKind {
    match step {
        EmpStep::SendBookkeeping => StepKind::Reserve,
        EmpStep::Transmission => StepKind::Forward,
        EmpStep::AckArrival => StepKind::Ack,
        EmpStep::AckUpdate => StepKind::SendComplete,
        EmpStep::PostReceive | EmpStep::Classify => StepKind::Match,
        EmpStep::ReceiveFrame => StepKind::Activate,
        EmpStep::Receiving => StepKind::Page,
        EmpStep::SendAck => StepKind::RecvComplete,
    }
}
