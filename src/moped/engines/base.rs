//! The base case: one processor runs every step; further engines stay idle.

use super::{Assignment, Role, StepKind};

pub struct Base;

impl Assignment for Base {
    fn role(&self, _step: StepKind) -> Role {
        Role::A
    }
}
