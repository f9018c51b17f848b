//! SO: the send path split (Table 2). Forwarding the copy ("transmission") runs on
//! processor B, pipelined with the bookkeeping of the next descriptor on A; the
//! receive side's completion notice ("send ack") also runs on B, beside the receive path
//! on A.

use super::{Assignment, Role, StepKind};

pub struct SendOnly;

impl Assignment for SendOnly {
    fn role(&self, step: StepKind) -> Role {
        match step {
            StepKind::Forward | StepKind::RecvComplete => Role::B,
            _ => Role::A,
        }
    }
}
