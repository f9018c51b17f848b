//! Runs a [`Program`] on the simulator's cores: each core's cursor through its ops, the
//! MOPED ops' port accesses step by step, and the `expect=` checks of its loads.

use crate::coherence::{AccessKind, Completed, CoreReq};
use crate::config::WatchdogSection;
use crate::envelope::{describe_call, ProgramId, Rank};
use crate::moped::ports::{pack_store, PollStatus, Port, PortMap, REFUSED};
use crate::sim::{Driver, Next};

use super::{Op, Program};

#[derive(Clone, Debug, Default)]
struct CoreCursor {
    pc: usize,
    sweep_i: u64,
    sweep_r: u32,
    expect: Option<(u64, u64)>,
    instructions: u64,
    /// Descriptor registers.
    regs: [u64; 8],
    /// Step within a MOPED op.
    step: u8,
    /// The value of the last load (MOPED ops read their answers here).
    loaded: u64,
    /// The cycle since which the poll in progress has answered only Pending.
    pending_since: Option<u64>,
}

/// Runs a [`Program`] on the simulator's cores, checking `expect=` values.
pub struct ProgramDriver {
    prog: Program,
    cpi: f64,
    cursors: Vec<CoreCursor>,
    ports: PortMap,
    /// Each core's (program, rank), from the program's processes.
    ident: Vec<(ProgramId, Rank)>,
}

impl ProgramDriver {
    pub fn new(prog: Program, cpi: f64) -> Self {
        Self::with_ports(prog, cpi, PortMap::default())
    }

    /// A driver whose MOPED ops use the port windows at `ports`.
    pub fn with_ports(prog: Program, cpi: f64, ports: PortMap) -> Self {
        let n = prog.cores.len();
        let mut ident = vec![(0, 0); n];
        for p in &prog.processes {
            ident[p.core] = (p.program, p.rank);
        }
        ProgramDriver {
            prog,
            cpi,
            cursors: vec![CoreCursor::default(); n],
            ports,
            ident,
        }
    }

    /// Core `c`'s poll in progress, Pending since cycle `since`: where it is, the
    /// descriptor it polls and what the program posted into it.
    fn describe_poll(&self, c: usize, since: u64) -> String {
        let cur = &self.cursors[c];
        let ops = &self.prog.cores[c];
        let Some(&Op::MopedPoll { reg, .. }) = ops.get(cur.pc) else {
            return String::new();
        };
        // The last post into the register before the poll.
        let posted = ops[..cur.pc].iter().rev().find_map(|op| match *op {
            Op::MopedPost {
                reg: r,
                envelope: e,
                va,
                size,
            } if r == reg => Some(format!(
                "{} at va {va:#x}",
                describe_call(e.kind, e.peer, e.tag, size)
            )),
            _ => None,
        });
        let what = posted.unwrap_or_else(|| "nothing posted".to_string());
        let at = self.prog.error_at(c, cur.pc, format!("moped_poll r{reg}"));
        format!(
            "\n  core {c}: {at}: descriptor {:#x} ({what}) Pending since cycle {since}",
            cur.regs[reg as usize]
        )
    }

    /// Instructions each core executed (compute instructions plus one per access).
    pub fn instructions(&self, core: usize) -> u64 {
        self.cursors[core].instructions
    }
}

/// An 8-byte port access.
fn port_access(kind: AccessKind, addr: u64, value: u64) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind,
        addr,
        size: 8,
        value,
    })
}

impl Driver for ProgramDriver {
    fn next(&mut self, core: usize, now: u64) -> Result<Next, String> {
        // Port addresses only for the MOPED ops: most steps are plain accesses.
        let (ports, (program, rank)) = (&self.ports, self.ident[core]);
        // Ranks were checked when the program was read.
        let port = |p: Port| ports.addr_of(program, rank, p).unwrap_or(ports.base());
        let ops = &self.prog.cores[core];
        let cur = &mut self.cursors[core];
        loop {
            let Some(op) = ops.get(cur.pc) else {
                return Ok(Next::Done);
            };
            match *op {
                Op::Compute(n) => {
                    let wait = Next::compute(n, self.cpi, now)
                        .map_err(|e| self.prog.error_at(core, cur.pc, e))?;
                    cur.pc += 1;
                    cur.instructions += n;
                    if let Some(w) = wait {
                        return Ok(w);
                    }
                }
                Op::Load { addr, size, expect } => {
                    cur.pc += 1;
                    cur.instructions += 1;
                    cur.expect = expect.map(|e| (addr, e));
                    return Ok(Next::Access(CoreReq {
                        id: 0,
                        kind: AccessKind::Load,
                        addr,
                        size,
                        value: 0,
                    }));
                }
                Op::Store { addr, size, value } => {
                    cur.pc += 1;
                    cur.instructions += 1;
                    return Ok(Next::Access(CoreReq {
                        id: 0,
                        kind: AccessKind::Store,
                        addr,
                        size,
                        value,
                    }));
                }
                Op::Sweep {
                    kind,
                    base,
                    bytes,
                    stride,
                    repeat,
                } => {
                    if cur.sweep_r >= repeat {
                        cur.pc += 1;
                        cur.sweep_i = 0;
                        cur.sweep_r = 0;
                        continue;
                    }
                    let addr = base + cur.sweep_i * stride;
                    cur.sweep_i += 1;
                    // Past the end: the same test as `sweep_i >= ceil(bytes / stride)`,
                    // without a division per access.
                    if cur.sweep_i * stride >= bytes {
                        cur.sweep_i = 0;
                        cur.sweep_r += 1;
                    }
                    cur.instructions += 1;
                    cur.expect = None;
                    return Ok(Next::Access(CoreReq {
                        id: 0,
                        kind,
                        addr,
                        size: 8,
                        value: addr,
                    }));
                }
                Op::MopedReserve { reg } => {
                    if cur.step == 0 {
                        cur.step = 1;
                        cur.instructions += 1;
                        cur.expect = None;
                        return Ok(port_access(AccessKind::Load, port(Port::Data), 0));
                    }
                    cur.regs[reg as usize] = cur.loaded;
                    cur.step = 0;
                    cur.pc += 1;
                }
                Op::MopedPost {
                    reg,
                    envelope,
                    va,
                    size,
                } => {
                    let payload = match cur.step {
                        0 => envelope.encode().unwrap_or(0),
                        1 => va,
                        2 => size,
                        _ => {
                            cur.step = 0;
                            cur.pc += 1;
                            continue;
                        }
                    };
                    cur.step += 1;
                    cur.instructions += 1;
                    let id = cur.regs[reg as usize] as u16;
                    let value = pack_store(id, payload).unwrap_or(u64::MAX);
                    return Ok(port_access(AccessKind::Store, port(Port::Data), value));
                }
                Op::MopedPoll { reg, expect } => match cur.step {
                    0 => {
                        cur.step = 1;
                        cur.instructions += 1;
                        // A refused reservation's value is no ID: poll an invalid one.
                        let id = cur.regs[reg as usize].min(u16::MAX as u64 + 1);
                        return Ok(port_access(AccessKind::Store, port(Port::Poll), id));
                    }
                    1 => {
                        cur.step = 2;
                        cur.instructions += 1;
                        cur.expect = None;
                        return Ok(port_access(AccessKind::Load, port(Port::Poll), 0));
                    }
                    _ => {
                        cur.step = 0;
                        if !matches!(
                            PollStatus::from_value(cur.loaded),
                            Ok(PollStatus::Pending | PollStatus::Retry)
                        ) {
                            cur.pending_since = None;
                        }
                        match PollStatus::from_value(cur.loaded) {
                            Ok(PollStatus::Pending | PollStatus::Retry) => {
                                cur.pending_since.get_or_insert(now);
                                return Ok(Next::Wait(20));
                            }
                            Ok(s) if s == expect => cur.pc += 1,
                            other => {
                                let answer = match other {
                                    Ok(s) => s.describe().to_string(),
                                    Err(e) => e.to_string(),
                                };
                                let refused = if cur.regs[reg as usize] == REFUSED {
                                    format!(
                                        " (r{reg} holds a refused reservation: MOPED's \
                                         moped.descriptor_entries were all in use, or the \
                                         program was in backoff)"
                                    )
                                } else {
                                    String::new()
                                };
                                let msg = format!(
                                    "core {core}: poll of r{reg} answered {answer}, expected \
                                     {}{refused}",
                                    expect.describe()
                                );
                                return Err(self.prog.error_at(core, cur.pc, msg));
                            }
                        }
                    }
                },
            }
        }
    }

    fn completed(&mut self, core: usize, c: &Completed, _now: u64) -> Result<(), String> {
        if c.req.kind == AccessKind::Load {
            self.cursors[core].loaded = c.value;
            if let Some((addr, want)) = self.cursors[core].expect.take() {
                if c.value != want {
                    return Err(format!(
                        "core {core}: load of {} bytes at {addr:#x} returned {:#x}, expected {want:#x}",
                        c.req.size, c.value
                    ));
                }
            }
        }
        Ok(())
    }

    /// A load's completion changes only its own core's cursor, which only that core's next
    /// step reads (its loads all block, one at a time); a store's changes nothing.
    fn completes_privately(&self) -> bool {
        true
    }

    fn stuck(&mut self, now: u64, limits: &WatchdogSection) -> Option<String> {
        let stuck: Vec<String> = (0..self.cursors.len())
            .filter_map(|c| {
                let since = self.cursors[c].pending_since?;
                (now - since > limits.poll_cycles).then(|| self.describe_poll(c, since))
            })
            .collect();
        (!stuck.is_empty()).then(|| {
            format!(
                "moped_poll saw only Pending for more than watchdog.poll_cycles = {} cycles:{}",
                limits.poll_cycles,
                stuck.concat()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24: a failed poll printed `Ok(Failed)`.
    #[test]
    fn a_poll_answer_is_named_in_words() {
        let prog = Program {
            cores: vec![vec![Op::MopedPoll {
                reg: 0,
                expect: PollStatus::Complete,
            }]],
            processes: Vec::new(),
            file: String::new(),
            places: Vec::new(),
        };
        let mut d = ProgramDriver::new(prog, 1.0);
        // The poll's store and load are done and the load answered Failed.
        d.cursors[0].step = 2;
        d.cursors[0].loaded = PollStatus::Failed.to_value();
        assert_eq!(
            d.next(0, 0).unwrap_err(),
            "core 0 op 0: core 0: poll of r0 answered failed (the copy failed: a buffer lies \
             outside the process's memory), expected complete (the message has been copied)"
        );
    }
}
