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

use crate::coherence::{AccessKind, Completed, CoreReq};
use crate::mem::LINE_BYTES;
use crate::sim::{Driver, Next};

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
}

/// The ops of every core.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub cores: Vec<Vec<Op>>,
}

/// A program file error with its position.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{col}: {msg}")]
pub struct ProgramError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub msg: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    core: Vec<toml::Spanned<CoreSpec>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CoreSel {
    All(String),
    List(Vec<usize>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CoreSpec {
    cores: toml::Spanned<CoreSel>,
    #[serde(default)]
    offset_per_core: u64,
    ops: toml::Spanned<String>,
}

fn line_col(text: &str, byte: usize) -> (u32, u32) {
    let before = &text[..byte.min(text.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0) as u32
        + 1;
    (line, col)
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

fn kind(i: &str) -> IResult<&str, AccessKind> {
    alt((
        map(tag("load"), |_| AccessKind::Load),
        map(tag("store"), |_| AccessKind::Store),
    ))(i)
}

fn op_line(i: &str) -> IResult<&str, Op> {
    let (i, word) = take_while1(|c: char| c.is_ascii_alphabetic())(i)?;
    match word {
        "compute" => map(ws_number, Op::Compute)(i),
        "load" => {
            let (i, addr) = ws_number(i)?;
            let (i, size) = opt(ws_number)(i)?;
            let (i, expect) = opt(key_number("expect"))(i)?;
            Ok((
                i,
                Op::Load {
                    addr,
                    size: size.unwrap_or(8) as u8,
                    expect,
                },
            ))
        }
        "store" => {
            let (i, addr) = ws_number(i)?;
            let (i, a) = ws_number(i)?;
            let (i, b) = opt(ws_number)(i)?;
            let (size, value) = match b {
                Some(v) => (a, v),
                None => (8, a),
            };
            Ok((
                i,
                Op::Store {
                    addr,
                    size: size as u8,
                    value,
                },
            ))
        }
        "sweep" => {
            let (i, k) = preceded(space1, kind)(i)?;
            let (i, base) = ws_number(i)?;
            let (i, bytes) = ws_number(i)?;
            let (i, stride) = ws_number(i)?;
            let (i, repeat) = opt(key_number("repeat"))(i)?;
            Ok((
                i,
                Op::Sweep {
                    kind: k,
                    base,
                    bytes,
                    stride,
                    repeat: repeat.unwrap_or(1) as u32,
                },
            ))
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
        Ok((_, op)) => op,
        Err(_) => {
            return Err(format!(
                "cannot read `{text}`: expected `compute N`, `load ADDR [SIZE] [expect=V]`, `store ADDR [SIZE] VALUE` or `sweep load|store BASE BYTES STRIDE [repeat=R]`"
            ))
        }
    };
    check_op(&op)?;
    Ok(op)
}

fn check_access(addr: u64, size: u8) -> Result<(), String> {
    if ![1, 2, 4, 8].contains(&size) {
        return Err(format!("access size {size} is not 1, 2, 4 or 8 bytes"));
    }
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
        _ => Ok(()),
    }
}

impl Program {
    /// Reads a program file for a system of `n_cores` cores.
    pub fn from_file(path: &Path, n_cores: usize) -> Result<Program, ProgramError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProgramError {
            file: file.clone(),
            line: 1,
            col: 1,
            msg: format!("cannot read: {e}"),
        })?;
        Self::from_toml_str(&text, &file, n_cores)
    }

    pub fn from_toml_str(text: &str, file: &str, n_cores: usize) -> Result<Program, ProgramError> {
        let err = |byte: usize, msg: String| {
            let (line, col) = line_col(text, byte);
            ProgramError {
                file: file.to_string(),
                line,
                col,
                msg,
            }
        };
        let spec: FileSpec = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            err(at, e.message().to_string())
        })?;
        let mut prog = Program {
            cores: vec![Vec::new(); n_cores],
        };
        for block in &spec.core {
            let b = block.get_ref();
            let targets: Vec<usize> = match b.cores.get_ref() {
                CoreSel::All(s) if s == "all" => (0..n_cores).collect(),
                CoreSel::All(s) => {
                    return Err(err(
                        b.cores.span().start,
                        format!("cores = \"{s}\": expected \"all\" or a list of core indices"),
                    ))
                }
                CoreSel::List(v) => v.clone(),
            };
            if let Some(bad) = targets.iter().find(|&&c| c >= n_cores) {
                return Err(err(
                    b.cores.span().start,
                    format!("core {bad} does not exist (the system has {n_cores} cores)"),
                ));
            }
            let ops = parse_ops(text, b.ops.span(), b.ops.get_ref())
                .map_err(|(byte, msg)| err(byte, msg))?;
            for &c in &targets {
                let off = b.offset_per_core * c as u64;
                prog.cores[c].extend(ops.iter().map(|op| offset(*op, off)));
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
}

fn offset(op: Op, off: u64) -> Op {
    match op {
        Op::Load { addr, size, expect } => Op::Load {
            addr: addr + off,
            size,
            expect,
        },
        Op::Store { addr, size, value } => Op::Store {
            addr: addr + off,
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
            base: base + off,
            bytes,
            stride,
            repeat,
        },
        c => c,
    }
}

/// Parses the ops string of one block; errors carry the byte offset in the file.
fn parse_ops(
    text: &str,
    span: std::ops::Range<usize>,
    value: &str,
) -> Result<Vec<Op>, (usize, String)> {
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
            ops.push(parse_op(trimmed).map_err(|m| (at, m))?);
        }
        line_start += line.len() + 1;
    }
    Ok(ops)
}

#[derive(Clone, Debug, Default)]
struct CoreCursor {
    pc: usize,
    sweep_i: u64,
    sweep_r: u32,
    expect: Option<(u64, u64)>,
    instructions: u64,
}

/// Runs a [`Program`] on the simulator's cores, checking `expect=` values.
pub struct ProgramDriver {
    prog: Program,
    cpi: f64,
    cursors: Vec<CoreCursor>,
}

impl ProgramDriver {
    pub fn new(prog: Program, cpi: f64) -> Self {
        let n = prog.cores.len();
        ProgramDriver {
            prog,
            cpi,
            cursors: vec![CoreCursor::default(); n],
        }
    }

    /// Instructions each core executed (compute instructions plus one per access).
    pub fn instructions(&self, core: usize) -> u64 {
        self.cursors[core].instructions
    }
}

impl Driver for ProgramDriver {
    fn next(&mut self, core: usize, _now: u64) -> Next {
        let ops = &self.prog.cores[core];
        let cur = &mut self.cursors[core];
        loop {
            let Some(op) = ops.get(cur.pc) else {
                return Next::Done;
            };
            match *op {
                Op::Compute(n) => {
                    cur.pc += 1;
                    cur.instructions += n;
                    let cycles = (n as f64 * self.cpi).ceil() as u64;
                    if cycles > 0 {
                        return Next::Wait(cycles);
                    }
                }
                Op::Load { addr, size, expect } => {
                    cur.pc += 1;
                    cur.instructions += 1;
                    cur.expect = expect.map(|e| (addr, e));
                    return Next::Access(CoreReq {
                        id: 0,
                        kind: AccessKind::Load,
                        addr,
                        size,
                        value: 0,
                    });
                }
                Op::Store { addr, size, value } => {
                    cur.pc += 1;
                    cur.instructions += 1;
                    return Next::Access(CoreReq {
                        id: 0,
                        kind: AccessKind::Store,
                        addr,
                        size,
                        value,
                    });
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
                    return Next::Access(CoreReq {
                        id: 0,
                        kind,
                        addr,
                        size: 8,
                        value: addr,
                    });
                }
            }
        }
    }

    fn completed(&mut self, core: usize, c: &Completed, _now: u64) -> Result<(), String> {
        if c.req.kind == AccessKind::Load {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
