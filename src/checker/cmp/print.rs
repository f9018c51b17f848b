//! The CMP model in words: line summaries, states, actions and the cells they fired, the
//! counterexample trace (a replay of the failing path), and the report of a passing search
//! with its table coverage.

use std::time::Instant;

use crate::coherence::dir::NOBODY;
use crate::coherence::{MopedKind, NodeId};
use crate::mem::LineAddr;
use crate::protocol::Cell;

use super::super::report::{CellName, CheckReport, Failure, FailureKind};
use super::super::search::{Counterexample, Explored, Finding};
use super::state::{msg_text, Action, Fault, Fired, Firing, State};
use super::{CmpModel, Work};

impl CmpModel<'_> {
    /// The report of a passing search that started at `t0`.
    pub(super) fn report(&self, done: Explored<Work>, t0: Instant) -> CheckReport {
        let w = &done.work;
        let (cells_reached, outside) = self.cells_reached(w);
        CheckReport {
            config: self.cfg.name.clone(),
            protocol: self.protocol_name.clone(),
            states: done.states,
            edges: done.edges,
            quiescent_states: done.quiescent_states,
            depth: done.depth,
            max_in_flight: w.max_in_flight,
            buffer_capacity: self.cfg.buffer_capacity,
            max_buffer_occupancy: w.max_occupancy,
            cells_reached,
            cells_possible_not_reached: self.cells_not_reached(w),
            cells_reached_outside_table: outside,
            seconds: t0.elapsed().as_secs_f64(),
        }
    }

    /// The cells that fired, sorted, and how many of them the tables do not mark as
    /// transitions.
    fn cells_reached(&self, w: &Work) -> (Vec<CellName>, usize) {
        let mut cells = Vec::new();
        let mut outside = 0;
        for (dir, reached, m) in [
            (false, &w.cache_reached, &self.l2),
            (true, &w.dir_reached, &self.dirm),
        ] {
            let ne = m.events().len();
            for (cell, &r) in reached.iter().enumerate() {
                if r {
                    if !matches!(
                        m.cell((cell / ne) as u16, (cell % ne) as u16),
                        Cell::Transition { .. }
                    ) {
                        outside += 1;
                    }
                    cells.push(self.cell_name(dir, cell));
                }
            }
        }
        cells.sort();
        (cells, outside)
    }

    /// The cells the tables mark as transitions that never fired, sorted.
    fn cells_not_reached(&self, w: &Work) -> Vec<CellName> {
        let mut cells = Vec::new();
        for (dir, reached, m) in [
            (false, &w.cache_reached, &self.l2),
            (true, &w.dir_reached, &self.dirm),
        ] {
            let ne = m.events().len();
            for t in m.transitions() {
                let cell = t.state as usize * ne + t.event as usize;
                if matches!(t.cell, Cell::Transition { .. }) && !reached[cell] {
                    cells.push(self.cell_name(dir, cell));
                }
            }
        }
        cells.sort();
        cells.dedup();
        cells
    }

    /// A failed search as a failure with its counterexample trace.
    pub(super) fn failure(&self, c: Counterexample<Action, Fault>) -> Failure {
        let n = c.states_explored;
        let (kind, detail, trace) = match c.finding {
            Finding::Init(f) => (f.kind, f.detail, Vec::new()),
            Finding::Always { path, violation } => {
                (violation.kind, violation.detail, self.trace(&path, None))
            }
            Finding::Step {
                path,
                action,
                violation,
            } => {
                let trace = self.trace(&path, Some((action, &violation.detail)));
                (violation.kind, violation.detail, trace)
            }
            Finding::Deadlock { path } => {
                let mut trace = self.trace(&path, None);
                trace.push("       no action is enabled in this non-quiescent state".into());
                let detail = format!("no enabled action after {} steps", path.len());
                (FailureKind::Deadlock, detail, trace)
            }
            Finding::Liveness { path, stuck } => {
                let mut trace = self.trace(&path, None);
                trace.push("       from this state no quiescent state is reachable".into());
                let detail = format!("{stuck} of {n} states cannot reach a quiescent state; the shallowest after {} steps", path.len());
                (FailureKind::Liveness, detail, trace)
            }
            Finding::StateLimit { limit } => (
                FailureKind::StateLimit,
                format!("more than {limit} states"),
                Vec::new(),
            ),
        };
        Failure {
            config: self.cfg.name.clone(),
            kind,
            detail,
            trace,
            states_explored: n,
        }
    }

    /// One line's state everywhere: caches, directory, memory and the ghost value.
    pub(super) fn line_summary(&self, st: &State, addr: LineAddr) -> String {
        let ai = self.addr_index(addr).unwrap_or(0);
        let caches: Vec<String> = st
            .caches
            .iter()
            .map(|c| c.state_name(addr).to_string())
            .collect();
        let e = st.dir.entry(addr);
        let who = |n: NodeId| {
            if n == NOBODY {
                "-".to_string()
            } else {
                n.to_string()
            }
        };
        let sharers: Vec<String> = e.sharers.iter().map(|i| i.to_string()).collect();
        format!(
            "{addr:#x}: caches [{}], dir {} owner {} sharers {{{}}} requestor {}, memory {}, last written {}",
            caches.join(", "),
            self.dirm.state_name(e.state),
            who(e.owner),
            sharers.join(","),
            who(e.requestor),
            st.dir.mem.read(addr)[0],
            st.ghost[ai]
        )
    }

    /// A state, one line per address plus what is outstanding and in flight.
    fn state_text(&self, st: &State) -> Vec<String> {
        let mut v: Vec<String> = self
            .cfg
            .addrs
            .iter()
            .map(|&a| format!("       {}", self.line_summary(st, a)))
            .collect();
        let pend: Vec<String> = st
            .pending
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.map(|p| {
                    let a = self.cfg.addrs[p.addr as usize];
                    if p.store {
                        format!("core {i}: store {} to {a:#x}", p.value)
                    } else {
                        format!("core {i}: load {a:#x}")
                    }
                })
            })
            .collect();
        let moped = st.moped.iter().enumerate().filter_map(|(i, p)| {
            p.map(|p| {
                let a = self.cfg.addrs[p.addr as usize];
                match p.kind {
                    MopedKind::Read => format!("core {i}'s MOPED: read {a:#x}"),
                    k => format!("core {i}'s MOPED: {k:?} {a:#x} with {}", p.value),
                }
            })
        });
        let pend: Vec<String> = pend.into_iter().chain(moped).collect();
        if !pend.is_empty() {
            v.push(format!("       outstanding: {}", pend.join("; ")));
        }
        let net: Vec<String> = st.net.iter().map(msg_text).collect();
        v.push(format!("       in flight: [{}]", net.join(", ")));
        v
    }

    fn action_text(&self, st: &State, a: Action) -> String {
        match a {
            Action::Load { core, addr } => {
                format!("core {core} loads {:#x}", self.cfg.addrs[addr as usize])
            }
            Action::Store { core, addr, value } => {
                format!(
                    "core {core} stores {value} to {:#x}",
                    self.cfg.addrs[addr as usize]
                )
            }
            Action::Evict { core, addr } => {
                format!("core {core} evicts {:#x}", self.cfg.addrs[addr as usize])
            }
            Action::Moped {
                core,
                addr,
                kind,
                value,
            } => {
                let a = self.cfg.addrs[addr as usize];
                match kind {
                    MopedKind::Read => format!("core {core}'s MOPED reads {a:#x} (M_GETS)"),
                    MopedKind::Own => {
                        format!("core {core}'s MOPED owns {a:#x} and writes {value} (M_GETX)")
                    }
                    MopedKind::Fill => {
                        format!("core {core}'s MOPED fills {a:#x} with {value} (M_FILL)")
                    }
                }
            }
            Action::Deliver { index } => match st.net.get(index as usize) {
                Some(m) => format!("deliver {}", msg_text(m)),
                None => format!("deliver message #{index} (absent)"),
            },
        }
    }

    fn fired_text(&self, fired: &[Fired]) -> String {
        let cells: Vec<String> = fired
            .iter()
            .map(|f| {
                let (m, name) = if f.dir {
                    (&self.dirm, "Directory".to_string())
                } else {
                    (&self.l2, format!("L2Cache[{}]", f.node))
                };
                let ne = m.events().len();
                format!(
                    "{name} ({}, {})",
                    m.state_name((f.cell / ne) as u16),
                    m.event_name((f.cell % ne) as u16)
                )
            })
            .collect();
        if cells.is_empty() {
            "no cell".into()
        } else {
            cells.join(" + ")
        }
    }

    /// Replays `actions` from the initial state, printing each step; `last` is a final
    /// failing action, printed with its outcome.
    fn trace(&self, actions: &[Action], last: Option<(Action, &str)>) -> Vec<String> {
        let mut out = Vec::new();
        let Ok(mut st) = self.initial() else {
            return out;
        };
        out.push("  0. initial state".to_string());
        out.extend(self.state_text(&st));
        let mut fired = Firing::default();
        for (k, &a) in actions.iter().enumerate() {
            let text = self.action_text(&st, a);
            match self.step(&st, a, &mut fired, &mut Vec::new()) {
                Ok(Some(next)) => {
                    out.push(format!(
                        "{:3}. {text}: {}",
                        k + 1,
                        self.fired_text(&fired.cells)
                    ));
                    st = next;
                    out.extend(self.state_text(&st));
                }
                _ => {
                    out.push(format!("{:3}. {text}: replay diverged", k + 1));
                    return out;
                }
            }
        }
        if let Some((a, what)) = last {
            let text = self.action_text(&st, a);
            let _ = self.step(&st, a, &mut fired, &mut Vec::new());
            out.push(format!(
                "{:3}. {text}: {} -> {what}",
                actions.len() + 1,
                self.fired_text(&fired.cells)
            ));
        }
        out
    }

    fn cell_name(&self, dir: bool, cell: usize) -> CellName {
        let (m, machine) = if dir {
            (&self.dirm, "Directory")
        } else {
            (&self.l2, "L2Cache")
        };
        let ne = m.events().len();
        CellName {
            machine: machine.to_string(),
            state: m.state_name((cell / ne) as u16).to_string(),
            event: m.event_name((cell % ne) as u16).to_string(),
        }
    }
}
