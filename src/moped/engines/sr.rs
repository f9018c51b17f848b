//! SR: SO and RO together (Table 2). Forwarding on B as in SO; the active match and
//! the copy on B as in RO; the rest on A.

use super::{Assignment, Role, StepKind};

pub struct SendReceive;

impl Assignment for SendReceive {
    fn role(&self, step: StepKind) -> Role {
        match step {
            StepKind::Forward | StepKind::Activate | StepKind::Page | StepKind::Line => Role::B,
            _ => Role::A,
        }
    }
}
