//! RO: the receive path split (Table 2). Processor A keeps the send path, matching
//! ("recv bookkeep") and the completion notice ("send ack"); B sets up active matches and
//! drives the copy ("recv frame", "receiving").

use super::{Assignment, Role, StepKind};

pub struct ReceiveOnly;

impl Assignment for ReceiveOnly {
    fn role(&self, step: StepKind) -> Role {
        match step {
            StepKind::Activate | StepKind::Page | StepKind::Line => Role::B,
            _ => Role::A,
        }
    }
}
