//! Program-driven cores. A program is a list of ops per core; the program file format is
//! TOML with one `[[core]]` table per group of cores and the ops as text, one per line:
//!
//! ```text
//! # moped program
//! [[core]]
//! cores = [0, 1]                # or "all"
//! offset_per_core = 0x10000     # optional: added to every address, times the core index
//! ops = '''
//! compute 100                   # 100 instructions at the configured CPI
//! store 0x1000 8 42             # store the 8-byte value 42
//! load 0x1000 8 expect=42       # blocking load; the run fails if the value differs
//! sweep load 0x100000 32768 64 repeat=2   # loads over [base, base+bytes) by stride
//! '''
//! ```
//!
//! With a MOPED design, cores can run processes and send messages through MOPED's ports.
//! A `[[process]]` table places a process (program ID, rank) on a core; its regions are
//! mapped now (`regions`) or at first touch (`lazy_regions`), and that core's addresses
//! become virtual. Registers `r0`..`r7` hold descriptor IDs:
//!
//! ```text
//! [[process]]
//! program = 0
//! rank = 1
//! core = 1
//! regions = [[0x100000, 0x4000]]          # [start, bytes]
//! lazy_regions = [[0x200000, 0x4000]]
//!
//! moped_reserve r0                        # data-port load: r0 = a descriptor ID
//! moped_send r0 dst=0 tag=5 va=0x100000 size=16384   # the three field stores (ctx=0)
//! moped_recv r1 src=any tag=any ctx=0 va=0x200000 size=16384
//! moped_poll r0 expect=complete           # poll store + load until not pending
//! ```
//! Polls answering Retry are repeated; `expect` is `complete` (default), `failed`,
//! `revoked` or `error`. A reservation answered REFUSED leaves the refusal value in the
//! register, and a poll of it answers Error.
//! Sizes are 1, 2, 4 or 8 bytes and an access may not cross a 64-byte line. Numbers are
//! decimal or `0x` hexadecimal. Errors name `file:line:col`.

use std::path::Path;

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, digit1, hex_digit1, space0, space1};
use nom::combinator::{all_consuming, map, map_res, opt, recognize};
use nom::sequence::{pair, preceded};
use nom::IResult;
use serde::Deserialize;

use crate::coherence::AccessKind;
use crate::config::SystemConfig;
use crate::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag};
use crate::mem::LINE_BYTES;
use crate::moped::ports::{PollStatus, PortMap};
use crate::textparse::{toml_message, LineIndex, PosError};

mod driver;

pub use driver::ProgramDriver;

/// One operation of a core's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Compute(u64),
    Load {
        addr: u64,
        size: u8,
        expect: Option<u64>,
    },
    Store {
        addr: u64,
        size: u8,
        value: u64,
    },
    /// Accesses `bytes / stride` addresses from `base`, `repeat` times.
    Sweep {
        kind: AccessKind,
        base: u64,
        bytes: u64,
        stride: u64,
        repeat: u32,
    },
    /// A data-port load: register `reg` gets a descriptor ID (or the refusal).
    MopedReserve {
        reg: u8,
    },
    /// The three data-port stores that fill descriptor `reg`.
    MopedPost {
        reg: u8,
        envelope: Envelope,
        va: u64,
        size: u64,
    },
    /// Poll-port store and load of descriptor `reg` until it is not pending.
    MopedPoll {
        reg: u8,
        expect: PollStatus,
    },
}

/// A process of a program file: who it is to MOPED, where it runs, its memory.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    #[serde(default)]
    pub program: ProgramId,
    pub rank: Rank,
    pub core: usize,
    /// `[start, bytes]` regions mapped at once.
    #[serde(default)]
    pub regions: Vec<[u64; 2]>,
    /// `[start, bytes]` regions mapped at first touch (or at MOPED's page fault).
    #[serde(default)]
    pub lazy_regions: Vec<[u64; 2]>,
}

/// The ops of every core, and the processes the cores run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub cores: Vec<Vec<Op>>,
    pub processes: Vec<ProcessSpec>,
    /// The file the program was read from, and per core the (line, column) of each op
    /// there, so that an op failing as it runs is named by its place; empty for a program
    /// built in code.
    pub file: String,
    pub places: Vec<Vec<(u32, u32)>>,
}

/// A program file error with its position. A type of its own, not an alias of
/// [`PosError`] as the other readers' errors are, so that an error enum can tell a program's
/// error from a protocol's by type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(transparent)]
pub struct ProgramError(#[from] pub PosError);

impl std::ops::Deref for ProgramError {
    type Target = PosError;

    fn deref(&self) -> &PosError {
        &self.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    core: Vec<toml::Spanned<CoreSpec>>,
    #[serde(default)]
    process: Vec<toml::Spanned<ProcessSpec>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CoreSpec {
    /// `"all"` or a list of core indices, read by [`core_targets`].
    cores: toml::Spanned<toml::Value>,
    #[serde(default)]
    offset_per_core: u64,
    ops: toml::Spanned<String>,
}

fn number(i: &str) -> IResult<&str, u64> {
    alt((
        map_res(
            preceded(alt((tag("0x"), tag("0X"))), hex_digit1),
            |h: &str| u64::from_str_radix(h, 16),
        ),
        map_res(recognize(digit1), |d: &str| d.parse::<u64>()),
    ))(i)
}

fn ws_number(i: &str) -> IResult<&str, u64> {
    preceded(space1, number)(i)
}

fn key_number<'a>(key: &'static str) -> impl FnMut(&'a str) -> IResult<&'a str, u64> {
    preceded(pair(space1, pair(tag(key), char('='))), number)
}

/// ` rN`, a register 0..=7.
fn ws_reg(i: &str) -> IResult<&str, u8> {
    map_res(preceded(pair(space1, char('r')), digit1), |d: &str| {
        d.parse::<u8>()
            .map_err(|_| ())
            .and_then(|r| if r < 8 { Ok(r) } else { Err(()) })
    })(i)
}

/// ` key=N` or ` key=any` (None).
fn key_any<'a>(key: &'static str) -> impl FnMut(&'a str) -> IResult<&'a str, Option<u64>> {
    preceded(
        pair(space1, pair(tag(key), char('='))),
        alt((map(tag("any"), |_| None), map(number, Some))),
    )
}

fn kind(i: &str) -> IResult<&str, AccessKind> {
    alt((
        map(tag("load"), |_| AccessKind::Load),
        map(tag("store"), |_| AccessKind::Store),
    ))(i)
}

/// An access size in bytes as the op keeps it; wider sizes would truncate.
fn access_size(size: u64) -> Result<u8, String> {
    match u8::try_from(size) {
        Ok(s @ (1 | 2 | 4 | 8)) => Ok(s),
        _ => Err(format!("access size {size} is not 1, 2, 4 or 8 bytes")),
    }
}

/// Checks that `value` fits an access of `size` bytes (a store would truncate it, a
/// load could never return it).
fn fits(what: &str, value: u64, size: u8) -> Result<u64, String> {
    let max = u64::MAX >> (64 - 8 * u32::from(size));
    if value > max {
        return Err(format!(
            "{what} {value} does not fit in {size} byte{} (0 to {max})",
            if size == 1 { "" } else { "s" }
        ));
    }
    Ok(value)
}

/// A number read into a narrower field, or the error naming the field and its range.
fn narrow<T: TryFrom<u64>>(what: &str, value: u64, max: u64) -> Result<T, String> {
    T::try_from(value).map_err(|_| format!("{what}={value} is out of range (0 to {max})"))
}

/// One op, or the reason the numbers it gives are not an op (an access size that is not
/// one, a value wider than its access); grammar errors are nom's.
fn op_line(i: &str) -> IResult<&str, Result<Op, String>> {
    let (i, word) = take_while1(|c: char| c.is_ascii_alphabetic() || c == '_')(i)?;
    match word {
        "moped_reserve" => map(ws_reg, |reg| Ok(Op::MopedReserve { reg }))(i),
        "moped_send" | "moped_recv" => {
            let send = word == "moped_send";
            let (i, reg) = ws_reg(i)?;
            let (i, peer) = key_any(if send { "dst" } else { "src" })(i)?;
            let (i, tag) = key_any("tag")(i)?;
            let (i, ctx) = opt(key_number("ctx"))(i)?;
            let (i, va) = key_number("va")(i)?;
            let (i, size) = key_number("size")(i)?;
            let post = || {
                let peer_key = if send { "dst" } else { "src" };
                let envelope = Envelope {
                    kind: if send { Kind::Send } else { Kind::Recv },
                    peer: match peer {
                        Some(r) => Peer::Rank(narrow(peer_key, r, Rank::MAX.into())?),
                        None => Peer::Any,
                    },
                    context: narrow("ctx", ctx.unwrap_or(0), u16::MAX.into())?,
                    tag: match tag {
                        Some(t) => Tag::Tag(narrow("tag", t, u32::MAX.into())?),
                        None => Tag::Any,
                    },
                };
                Ok(Op::MopedPost {
                    reg,
                    envelope,
                    va,
                    size,
                })
            };
            Ok((i, post()))
        }
        "moped_poll" => {
            let (i, reg) = ws_reg(i)?;
            let (i, expect) = opt(preceded(
                pair(space1, tag("expect=")),
                alt((
                    map(tag("complete"), |_| PollStatus::Complete),
                    map(tag("failed"), |_| PollStatus::Failed),
                    map(tag("revoked"), |_| PollStatus::Revoked),
                    map(tag("error"), |_| PollStatus::Error),
                )),
            ))(i)?;
            Ok((
                i,
                Ok(Op::MopedPoll {
                    reg,
                    expect: expect.unwrap_or(PollStatus::Complete),
                }),
            ))
        }
        "compute" => map(ws_number, |n| Ok(Op::Compute(n)))(i),
        "load" => {
            let (i, addr) = ws_number(i)?;
            let (i, size) = opt(ws_number)(i)?;
            let (i, expect) = opt(key_number("expect"))(i)?;
            let load = || {
                let size = access_size(size.unwrap_or(8))?;
                let expect = expect.map(|v| fits("expect=", v, size)).transpose()?;
                Ok(Op::Load { addr, size, expect })
            };
            Ok((i, load()))
        }
        "store" => {
            let (i, addr) = ws_number(i)?;
            let (i, a) = ws_number(i)?;
            let (i, b) = opt(ws_number)(i)?;
            let (size, value) = match b {
                Some(v) => (a, v),
                None => (8, a),
            };
            let store = || {
                let size = access_size(size)?;
                let value = fits("value", value, size)?;
                Ok(Op::Store { addr, size, value })
            };
            Ok((i, store()))
        }
        "sweep" => {
            let (i, k) = preceded(space1, kind)(i)?;
            let (i, base) = ws_number(i)?;
            let (i, bytes) = ws_number(i)?;
            let (i, stride) = ws_number(i)?;
            let (i, repeat) = opt(key_number("repeat"))(i)?;
            let sweep = || {
                Ok(Op::Sweep {
                    kind: k,
                    base,
                    bytes,
                    stride,
                    repeat: narrow("repeat", repeat.unwrap_or(1), u32::MAX.into())?,
                })
            };
            Ok((i, sweep()))
        }
        _ => Err(nom::Err::Error(nom::error::Error::new(
            i,
            nom::error::ErrorKind::Tag,
        ))),
    }
}

/// Parses one op (comments and surrounding blanks already stripped).
pub fn parse_op(text: &str) -> Result<Op, String> {
    let r = all_consuming(|i| {
        let (i, op) = op_line(i)?;
        let (i, _) = space0(i)?;
        Ok((i, op))
    })(text);
    let op = match r {
        Ok((_, op)) => op?,
        Err(_) => {
            return Err(format!(
                "cannot read `{text}`: expected `compute N`, `load ADDR [SIZE] [expect=V]`, `store ADDR [SIZE] VALUE`, `sweep load|store BASE BYTES STRIDE [repeat=R]`, `moped_reserve rN`, `moped_send rN dst=R tag=T [ctx=C] va=A size=S`, `moped_recv rN src=R|any tag=T|any [ctx=C] va=A size=S` or `moped_poll rN [expect=complete|failed|revoked|error]`"
            ))
        }
    };
    check_op(&op)?;
    Ok(op)
}

fn check_access(addr: u64, size: u8) -> Result<(), String> {
    access_size(size.into())?;
    if (addr as usize % LINE_BYTES) + size as usize > LINE_BYTES {
        return Err(format!(
            "access of {size} bytes at {addr:#x} crosses a {LINE_BYTES}-byte line"
        ));
    }
    Ok(())
}

fn check_op(op: &Op) -> Result<(), String> {
    match *op {
        Op::Load { addr, size, .. } | Op::Store { addr, size, .. } => check_access(addr, size),
        Op::Sweep { stride, bytes, .. } if stride == 0 || bytes == 0 => {
            Err("sweep needs a stride and size above 0".into())
        }
        Op::Sweep { base, stride, .. } if base % 8 != 0 || stride % 8 != 0 => {
            Err("sweep base and stride must be multiples of 8 (8-byte accesses)".into())
        }
        Op::Sweep { base, bytes, .. } if base.checked_add(bytes).is_none() => Err(format!(
            "sweep of {bytes} bytes from {base:#x} passes the top of the address space"
        )),
        Op::MopedPost {
            envelope, va, size, ..
        } => {
            envelope.encode().map_err(|e| e.to_string())?;
            crate::moped::desc::Descriptor::complete(0, 0, 0, envelope, va, size)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        _ => Ok(()),
    }
}

/// The cores a `cores = ...` selects: `"all"`, or a list of indices below `n_cores`.
fn core_targets(sel: &toml::Value, n_cores: usize) -> Result<Vec<usize>, String> {
    let expected = "expected \"all\" or a list of core indices";
    let list = match sel {
        toml::Value::String(s) if s == "all" => return Ok((0..n_cores).collect()),
        toml::Value::Array(items) => items,
        other => return Err(format!("cores = {other}: {expected}")),
    };
    list.iter()
        .map(|v| match v.as_integer().map(usize::try_from) {
            Some(Ok(c)) if c < n_cores => Ok(c),
            Some(_) => Err(format!(
                "core {v} does not exist (the system has {n_cores} cores, 0 to {})",
                n_cores.saturating_sub(1)
            )),
            None => Err(format!("cores: {v} is not a core index; {expected}")),
        })
        .collect()
}

/// The bytes `[start, end)` a load, store or sweep touches (None for other ops, and for
/// a range past the top of the address space, which [`check_op`] refuses).
fn extent(op: &Op) -> Option<(u64, u64)> {
    match *op {
        Op::Load { addr, size, .. } | Op::Store { addr, size, .. } => {
            Some((addr, addr.checked_add(size.into())?))
        }
        Op::Sweep { base, bytes, .. } => Some((base, base.checked_add(bytes)?)),
        _ => None,
    }
}

/// The system a program is read for: its cores, the bytes of its memory (physical
/// addresses must lie below), and MOPED's port windows (which lie above).
struct Machine {
    cores: usize,
    memory_bytes: u64,
    ports: Option<PortMap>,
}

impl Machine {
    /// Fails if `op`, run on a core without a process (so with physical addresses),
    /// touches bytes outside memory.
    fn check_physical(&self, op: &Op) -> Result<(), String> {
        let Some((start, end)) = extent(op) else {
            return Ok(());
        };
        let port = self.ports.as_ref().is_some_and(|p| p.contains(start));
        if end > self.memory_bytes && !port {
            return Err(format!(
                "bytes {start:#x}..{end:#x} lie outside memory (memory.size_bytes = {:#x})",
                self.memory_bytes
            ));
        }
        Ok(())
    }
}

impl Program {
    /// Reads a program file for the system `cfg`: its cores, and its memory, which every
    /// physical address must lie in.
    pub fn from_file(path: &Path, cfg: &SystemConfig) -> Result<Program, ProgramError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| PosError::new(&file, (1, 1), format!("cannot read: {e}")))?;
        Self::for_system(&text, &file, cfg)
    }

    /// Reads a program (`file` names it in errors) for the system `cfg`.
    pub fn for_system(text: &str, file: &str, cfg: &SystemConfig) -> Result<Program, ProgramError> {
        let machine = Machine {
            cores: cfg.system.cores,
            memory_bytes: cfg.memory.size_bytes,
            ports: PortMap::new(cfg.moped.port_base).ok(),
        };
        Self::read(text, file, &machine)
    }

    /// Reads a program for a system of `n_cores` cores and a memory that spans the whole
    /// address space.
    pub fn from_toml_str(text: &str, file: &str, n_cores: usize) -> Result<Program, ProgramError> {
        let machine = Machine {
            cores: n_cores,
            memory_bytes: u64::MAX,
            ports: None,
        };
        Self::read(text, file, &machine)
    }

    fn read(text: &str, file: &str, machine: &Machine) -> Result<Program, ProgramError> {
        let n_cores = machine.cores;
        let err = |byte: usize, msg: String| ProgramError(PosError::at(file, text, byte, msg));
        let spec: FileSpec = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            err(at, toml_message(text, &e))
        })?;
        let mut prog = Program {
            cores: vec![Vec::new(); n_cores],
            processes: Vec::new(),
            file: file.to_string(),
            places: vec![Vec::new(); n_cores],
        };
        for p in &spec.process {
            let (at, ps) = (p.span().start, p.get_ref());
            if ps.core >= n_cores {
                return Err(err(
                    at,
                    format!(
                        "process on core {}: the system has {n_cores} cores",
                        ps.core
                    ),
                ));
            }
            if ps.rank >= crate::envelope::PORT_RANKS {
                return Err(err(
                    at,
                    format!(
                        "rank {}: MOPED's ports serve ranks below {}",
                        ps.rank,
                        crate::envelope::PORT_RANKS
                    ),
                ));
            }
            if prog.processes.iter().any(|q| q.core == ps.core) {
                return Err(err(at, format!("two processes on core {}", ps.core)));
            }
            if let Some(r) = ps
                .regions
                .iter()
                .chain(&ps.lazy_regions)
                .find(|r| r[1] == 0)
            {
                return Err(err(at, format!("region at {:#x} has 0 bytes", r[0])));
            }
            prog.processes.push(ps.clone());
        }
        let lines = LineIndex::new(text);
        for block in &spec.core {
            let b = block.get_ref();
            let targets = core_targets(b.cores.get_ref(), n_cores)
                .map_err(|m| err(b.cores.span().start, m))?;
            let ops = parse_ops(text, b.ops.span(), b.ops.get_ref())
                .map_err(|(byte, msg)| err(byte, msg))?;
            // Placed once per block, not once per core: a long block on many cores stays
            // linear in the file's length.
            let places: Vec<(u32, u32)> = ops.iter().map(|&(at, _)| lines.pos(at)).collect();
            for &c in &targets {
                let physical = !prog.processes.iter().any(|p| p.core == c);
                for &(at, op) in &ops {
                    let op = b
                        .offset_per_core
                        .checked_mul(c as u64)
                        .ok_or_else(|| {
                            let per = b.offset_per_core;
                            format!("offset_per_core {per:#x} times core {c} passes 2^64")
                        })
                        .and_then(|off| offset(op, off))
                        .map_err(|m| err(at, format!("core {c}: {m}")))?;
                    if physical {
                        machine
                            .check_physical(&op)
                            .map_err(|m| err(at, format!("core {c}: {m}")))?;
                    }
                    prog.cores[c].push(op);
                }
                prog.places[c].extend_from_slice(&places);
            }
        }
        Ok(prog)
    }

    /// Total ops.
    pub fn len(&self) -> usize {
        self.cores.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `msg` about op `pc` of core `core`, named by its place in the file when known.
    pub fn error_at(&self, core: usize, pc: usize, msg: String) -> String {
        match self.places.get(core).and_then(|p| p.get(pc)) {
            Some(&at) => PosError::new(&self.file, at, msg).to_string(),
            None => format!("core {core} op {pc}: {msg}"),
        }
    }
}

/// `op` moved by `off` bytes (its core's share of `offset_per_core`) and checked again: the
/// address may not pass 2^64, nor the access cross a line.
fn offset(op: Op, off: u64) -> Result<Op, String> {
    let add = |a: u64| {
        a.checked_add(off)
            .ok_or_else(|| format!("address {a:#x} plus the core's offset {off:#x} passes 2^64"))
    };
    let moved = match op {
        Op::Load { addr, size, expect } => Op::Load {
            addr: add(addr)?,
            size,
            expect,
        },
        Op::Store { addr, size, value } => Op::Store {
            addr: add(addr)?,
            size,
            value,
        },
        Op::Sweep {
            kind,
            base,
            bytes,
            stride,
            repeat,
        } => Op::Sweep {
            kind,
            base: add(base)?,
            bytes,
            stride,
            repeat,
        },
        c => c,
    };
    check_op(&moved)?;
    // The move may carry the end of a range past the top.
    let accesses = matches!(moved, Op::Load { .. } | Op::Store { .. } | Op::Sweep { .. });
    if accesses && extent(&moved).is_none() {
        return Err(format!(
            "moved by {off:#x}, the access passes the top of the address space"
        ));
    }
    Ok(moved)
}

/// Parses the ops string of one block into ops with the byte offset of each in the file;
/// errors carry the byte offset too.
fn parse_ops(
    text: &str,
    span: std::ops::Range<usize>,
    value: &str,
) -> Result<Vec<(usize, Op)>, (usize, String)> {
    // Map the string's lines back to the file: a raw or basic multi-line string starts after
    // its delimiter (and the newline that follows it, which TOML trims).
    let raw = &text[span.clone()];
    let mut start = span.start;
    for delim in ["'''", "\"\"\"", "'", "\""] {
        if raw.starts_with(delim) {
            start += delim.len();
            if delim.len() == 3 && text[start..].starts_with('\n') {
                start += 1;
            } else if delim.len() == 3 && text[start..].starts_with("\r\n") {
                start += 2;
            }
            break;
        }
    }
    let mut ops = Vec::new();
    let mut line_start = start;
    for line in value.split('\n') {
        let content = line.split('#').next().unwrap_or("");
        let trimmed = content.trim();
        if !trimmed.is_empty() {
            let lead = content.len() - content.trim_start().len();
            let at = (line_start + lead).min(text.len());
            ops.push((at, parse_op(trimmed).map_err(|m| (at, m))?));
        }
        line_start += line.len() + 1;
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing: `offset_per_core` times the core index, or plus an address, past
    /// 2^64 overflowed; an offset that makes an access cross a line was not checked.
    #[test]
    fn core_offsets_are_checked() {
        let text = |off: &str, ops: &str| {
            format!("[[core]]\ncores = [0, 3]\noffset_per_core = {off}\nops = '{ops}'\n")
        };
        let read = |t: &str| {
            Program::from_toml_str(t, "p.toml", 4)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            read(&text("0x7fffffffffffffff", "compute 1")),
            "p.toml:4:8: core 3: offset_per_core 0x7fffffffffffffff times core 3 passes 2^64"
        );
        assert_eq!(
            read(&text("0x5000000000000000", "load 0x1000000000000000")),
            "p.toml:4:8: core 3: address 0x1000000000000000 plus the core's offset \
             0xf000000000000000 passes 2^64"
        );
        assert_eq!(
            read(&text("4", "load 0x30")),
            "p.toml:4:8: core 3: access of 8 bytes at 0x3c crosses a 64-byte line"
        );
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/examples/stream.toml");
        Program::from_file(&example, &SystemConfig::default()).unwrap();
    }

    /// Found by fuzzing: a carriage return without its line feed gave an empty message.
    #[test]
    fn lone_carriage_return_is_named() {
        let e = Program::from_toml_str("\r\r[[core]]\n", "p.toml", 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.toml:1:1: expected a line feed after the carriage return"
        );
    }

    #[test]
    fn parses_each_op() {
        assert_eq!(parse_op("compute 10"), Ok(Op::Compute(10)));
        assert_eq!(
            parse_op("load 0x40 4 expect=7"),
            Ok(Op::Load {
                addr: 0x40,
                size: 4,
                expect: Some(7)
            })
        );
        assert_eq!(
            parse_op("store 0x40 9"),
            Ok(Op::Store {
                addr: 0x40,
                size: 8,
                value: 9
            })
        );
        assert!(parse_op("load 0x3c 8").unwrap_err().contains("crosses"));
        assert!(parse_op("jump 3").is_err());
    }

    #[test]
    fn parses_moped_ops_and_processes() {
        let text = "[[process]]\nrank = 1\ncore = 1\nregions = [[0x1000, 64]]\n\
                    [[core]]\ncores = [1]\nops = '''\nmoped_reserve r3\n\
                    moped_send r3 dst=0 tag=7 va=0x1000 size=64\n\
                    moped_recv r2 src=any tag=any ctx=4 va=0x1000 size=64\n\
                    moped_poll r3 expect=revoked\n'''\n";
        let p = Program::from_toml_str(text, "p.toml", 2).unwrap();
        assert_eq!(p.processes[0].rank, 1);
        assert_eq!(p.cores[1][0], Op::MopedReserve { reg: 3 });
        match p.cores[1][2] {
            Op::MopedPost {
                reg: 2, envelope, ..
            } => {
                assert_eq!(envelope.peer, Peer::Any);
                assert_eq!(envelope.tag, Tag::Any);
                assert_eq!(envelope.context, 4);
            }
            ref o => panic!("{o:?}"),
        }
        assert_eq!(
            p.cores[1][3],
            Op::MopedPoll {
                reg: 3,
                expect: PollStatus::Revoked
            }
        );
    }

    #[test]
    fn bad_moped_ops_and_processes_are_located() {
        for (ops, want) in [
            ("moped_reserve r8", "expected"),
            ("moped_send r0 dst=any tag=1 va=0 size=8", "ANY"),
            ("moped_poll r0 expect=maybe", "expected"),
        ] {
            let text = format!("[[core]]\ncores = [0]\nops = '''\n{ops}\n'''\n");
            let e = Program::from_toml_str(&text, "p.toml", 1).unwrap_err();
            assert_eq!((e.line, e.col), (4, 1), "{ops}: {e}");
            assert!(
                e.msg.contains(want) || e.to_string().contains(want),
                "{ops}: {e}"
            );
        }
        let text = "[[process]]\nrank = 0\ncore = 5\n[[core]]\ncores = [0]\nops = ''\n";
        let e = Program::from_toml_str(text, "p.toml", 2).unwrap_err();
        assert!(e.msg.contains("core 5"), "{e}");
        assert_eq!(e.line, 1);
    }

    #[test]
    fn errors_name_line_and_column() {
        let text = "[[core]]\ncores = [0]\nops = '''\ncompute 1\n  lod 0x40\n'''\n";
        let e = Program::from_toml_str(text, "p.toml", 2).unwrap_err();
        assert_eq!((e.line, e.col), (5, 3), "{e}");
        let e =
            Program::from_toml_str("[[core]]\ncores = [5]\nops = ''\n", "p.toml", 2).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e =
            Program::from_toml_str("[[core]]\ncores = [0]\nopz = ''\n", "p.toml", 2).unwrap_err();
        assert!(e.msg.contains("opz"), "{e}");
    }

    /// The error for `ops` on core 0 of a 2-core system with the default memory.
    fn program_error(ops: &str) -> String {
        let text = format!("[[core]]\ncores = [0, 1]\nops = '''\n{ops}\n'''\n");
        let mut cfg = SystemConfig::default();
        cfg.system.cores = 2;
        Program::for_system(&text, "p.toml", &cfg)
            .unwrap_err()
            .to_string()
    }

    /// Issue 24: `store 0x1000 1 256` stored 0; a size of 264 bytes read as 8.
    #[test]
    fn values_and_sizes_that_do_not_fit_are_refused() {
        assert_eq!(
            program_error("store 0x1000 1 256"),
            "p.toml:4:1: value 256 does not fit in 1 byte (0 to 255)"
        );
        assert_eq!(
            program_error("load 0x1000 2 expect=65536"),
            "p.toml:4:1: expect= 65536 does not fit in 2 bytes (0 to 65535)"
        );
        assert_eq!(
            program_error("store 0x1000 264 5"),
            "p.toml:4:1: access size 264 is not 1, 2, 4 or 8 bytes"
        );
        assert_eq!(
            program_error("sweep load 0x1000 64 8 repeat=4294967296"),
            "p.toml:4:1: repeat=4294967296 is out of range (0 to 4294967295)"
        );
        assert_eq!(
            program_error("moped_send r0 dst=65536 tag=1 va=0 size=8"),
            "p.toml:4:1: dst=65536 is out of range (0 to 65535)"
        );
        assert_eq!(
            parse_op("store 0x1000 1 255"),
            Ok(Op::Store {
                addr: 0x1000,
                size: 1,
                value: 255
            })
        );
    }

    /// Issue 24: a sweep across the top of the address space wrapped to address 0, and
    /// accesses beyond `memory.size_bytes` succeeded.
    #[test]
    fn addresses_lie_inside_memory_and_do_not_wrap() {
        assert_eq!(
            program_error("compute 1\nsweep load 0xffffffffffffff00 4096 64"),
            "p.toml:5:1: sweep of 4096 bytes from 0xffffffffffffff00 passes the top of the \
             address space"
        );
        assert_eq!(
            program_error("load 0x20000000"),
            "p.toml:4:1: core 0: bytes 0x20000000..0x20000008 lie outside memory \
             (memory.size_bytes = 0x20000000)"
        );
        assert_eq!(
            program_error("sweep store 0x1fff0000 0x20000 64"),
            "p.toml:4:1: core 0: bytes 0x1fff0000..0x20010000 lie outside memory \
             (memory.size_bytes = 0x20000000)"
        );
        let text = "[[core]]\ncores = [0, 2]\noffset_per_core = 0x7ffffffffffffff8\n\
                    ops = '''\nload 0x10\n'''\n";
        let e = Program::from_toml_str(text, "p.toml", 3).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.toml:5:1: core 2: address 0x10 plus the core's offset 0xfffffffffffffff0 passes \
             2^64"
        );
        // The last line of memory, and MOPED's port windows above memory, are fine.
        let mut cfg = SystemConfig::default();
        cfg.system.cores = 1;
        let port = cfg.moped.port_base;
        let text =
            format!("[[core]]\ncores = [0]\nops = '''\nload 0x1ffffff8\nload {port:#x}\n'''\n");
        Program::for_system(&text, "p.toml", &cfg).unwrap();
    }

    /// Issue 24: `cores = [-1]` said `data did not match any variant of untagged enum`.
    #[test]
    fn core_selections_name_what_is_expected() {
        for (sel, want) in [
            (
                "[-1]",
                "p.toml:2:9: core -1 does not exist (the system has 2 cores, 0 to 1)",
            ),
            (
                "[0, \"x\"]",
                "p.toml:2:9: cores: \"x\" is not a core index; expected \"all\" or a list of \
                 core indices",
            ),
            (
                "3",
                "p.toml:2:9: cores = 3: expected \"all\" or a list of core indices",
            ),
        ] {
            let text = format!("[[core]]\ncores = {sel}\nops = ''\n");
            let e = Program::from_toml_str(&text, "p.toml", 2).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn offsets_apply_per_core() {
        let text =
            "[[core]]\ncores = \"all\"\noffset_per_core = 0x100\nops = '''\nload 0x40\n'''\n";
        let p = Program::from_toml_str(text, "p.toml", 3).unwrap();
        assert_eq!(
            p.cores[2],
            vec![Op::Load {
                addr: 0x240,
                size: 8,
                expect: None
            }]
        );
    }
}
