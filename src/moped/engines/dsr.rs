//! DSR: one processor per path (Table 2). A runs the send path and the receive
//! side's completion notice ("send ack"); B runs matching, the active match and the copy,
//! and the arrival of completion notices, whose update of the send descriptor goes back to
//! A.

use super::{Assignment, Role, StepKind};

pub struct Dedicated;

impl Assignment for Dedicated {
    fn role(&self, step: StepKind) -> Role {
        match step {
            StepKind::Ack
            | StepKind::Match
            | StepKind::Activate
            | StepKind::Page
            | StepKind::Line => Role::B,
            _ => Role::A,
        }
    }
}
