//! GOAL schedules (the text format of LogGOPSim's `schedgen` and `txt2bin`) imported as
//! [`Workload`]s.
//!
//! # The format
//!
//! A GOAL schedule (Hoefler, Schneider and Lumsdaine, "LogGOPSim: Simulating Large-Scale
//! Applications in the LogGOPS Model", HPDC 2010) gives each rank a dependency graph of
//! sends, receives and local computations. The grammar accepted here is the one of
//! LogGOPSim's `txt2bin` scanner (`src/LogGOPSim/txt2bin.re` in `spcl/LogGOPSim`):
//!
//! ```text
//! num_ranks N
//! rank R {
//!   [label:] send SIZE b to DEST [tag T] [cpu C] [nic I]
//!   [label:] recv SIZE b from SRC [tag T] [cpu C] [nic I]
//!   [label:] calc AMOUNT [cpu C]
//!   label1 requires label2
//!   label1 irequires label2
//! }
//! ```
//!
//! - Each operation and dependency ends at the end of its line; `num_ranks`, `rank R {`
//!   and `}` need no line of their own. Blanks are spaces and tabs, lines end in `\n` or
//!   `\r\n`, and as in `txt2bin` the blanks inside a statement are optional (`8b` and
//!   `8 b` both give 8 bytes).
//! - Sizes are decimal byte counts followed by `b` (the only unit `txt2bin` knows).
//! - `from -1` is MPI_ANY_SOURCE and `tag -1` MPI_ANY_TAG (receives only); a missing tag
//!   is 0, as in `txt2bin`; tags run to MPICH's MPI_TAG_UB, 2^31 - 1 (wide ones are
//!   renumbered to run, see `workload::tags`); `cpu` and `nic` are read (0..=255, as in
//!   LogGOPSim's binary format) and ignored: each rank runs on one core.
//! - Labels are `[A-Za-z][A-Za-z0-9_]*`, local to their rank block, and can be left out
//!   on operations that nothing depends on. A label may be used in a dependency before
//!   its operation is defined (`txt2bin` wants it defined first).
//! - `//` comments run to the end of the line and `/* ... */` comments may span lines,
//!   both between statements; a `//` comment may also end a statement's line (an
//!   extension: `txt2bin` rejects it).
//! - `num_ranks` (1 to 32767, so ranks stay below MOPED's ANY_SOURCE encoding) comes
//!   before the first rank block. A rank without a block runs no calls.
//!
//! # The translation
//!
//! GOAL starts an operation as soon as its dependencies allow: `a requires b` waits until
//! `b` has completed, `a irequires b` only until `b` has started. A [`RankProgram`] is run
//! in program order, so each rank's operations are put in a topological order (Kahn's
//! algorithm) and every `requires` on a send or receive becomes a wait:
//!
//! - `send` becomes [`Call::Isend`] and `recv` becomes [`Call::Irecv`] (context
//!   [`CTX_PT2PT`]), each with a request number of its own (0, 1, ... in call order).
//! - `calc N` becomes [`Call::Compute`]`(N)`: calc units are taken as instructions.
//! - Before an operation with `requires` on sends or receives not yet waited for comes one
//!   [`Call::Wait`] for them (a [`Call::Waitall`] when there are several, in request
//!   order). A `requires` on a calc, and every `irequires`, only orders the two.
//! - At the end of the rank one `Waitall` waits for every request not yet waited for.
//!
//! Kahn's algorithm takes, among the ready operations (those whose predecessors are all
//! placed), first the ones that need no wait, then the first in the file. A wait blocks the
//! whole rank where GOAL holds back only the operation that depends on it; starting every
//! operation that can start before waiting keeps a rank from waiting for a message whose
//! sending needs an operation of this rank that GOAL would already have started.
//!
//! Buffers: buffer 0 (`send`) has the size of the rank's largest send and every send reads
//! it from offset 0. Buffer 1 (`recv`) is an arena for receives: each receive gets a range
//! of it from its `Irecv` until its wait (first fit), so receives outstanding at the same
//! time never write the same bytes; the arena is as large as the highest range end.
//! Zero-byte messages are allowed.
//!
//! # Writing
//!
//! [`write_goal`] turns a built workload back into a schedule: each rank's calls a chain
//! of operations in program order, waits as `requires`, barriers as the runtime's
//! dissemination barrier, and every context in a tag range of its own (see its module).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use nom::branch::alt;
use nom::bytes::complete::{tag, take_till, take_until, take_while, take_while1};
use nom::character::complete::{char as nchar, digit1, satisfy};
use nom::combinator::{eof, opt, recognize};
use nom::sequence::{pair, tuple};

use super::tags::TagMap;
use super::{BufId, BufRef, Call, Origins, RankProgram, ReqId, Workload, CTX_PT2PT};
use crate::envelope::{Peer, Tag, TAG_UB};
use crate::textparse::{LineIndex, PErr, PResult, PosError};

/// Most ranks a schedule may have: ranks stay below `0x7FFF`, the ANY_SOURCE encoding of
/// MOPED's peer field.
pub const MAX_RANKS: u32 = 0x7FFF;

/// The buffer every send reads.
pub const SEND_BUF: BufId = 0;
/// The receive arena.
pub const RECV_BUF: BufId = 1;

/// An error reading a GOAL schedule: `file:line:col: msg` (line and column from 1; 0 when
/// the file could not be read).
pub type GoalError = PosError;

/// Reads the GOAL schedule `text`; `file` names it in errors and gives the workload its
/// name (its stem).
pub fn parse_goal(text: &str, file: &str) -> Result<Workload, GoalError> {
    let mut p = Reader::new(text, file);
    p.run()?;
    Ok(p.finish())
}

/// Reads the GOAL schedule at `path`; the workload is named after the file's stem.
pub fn load_goal(path: &Path) -> Result<Workload, GoalError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path)
        .map_err(|e| GoalError::new(&file, (0, 0), format!("cannot read the schedule: {e}")))?;
    parse_goal(crate::textparse::utf8_text(&file, &bytes)?, &file)
}

mod touch;
mod write;
pub use touch::touch_buffers;
pub use write::write_goal;

// ---------------------------------------------------------------------------------------
// Tokens (nom)

/// Runs `p`; if it does not match, fails for good with "expected `what`, found ...".
/// The grammar never needs to back out of a statement once its first word is read, so the
/// failure is a `Failure` that `opt` and `alt` pass on.
fn expect<'a, O>(
    what: &'static str,
    mut p: impl FnMut(&'a str) -> PResult<'a, O>,
) -> impl FnMut(&'a str) -> PResult<'a, O> {
    move |i| match p(i) {
        Err(nom::Err::Error(_)) => Err(nom::Err::Failure(PErr {
            at: i,
            msg: Cow::Owned(format!("expected {what}, found {}", found(i))),
        })),
        r => r,
    }
}

/// Spaces and tabs (possibly none).
fn blank(i: &str) -> PResult<'_, &str> {
    take_while(|c| c == ' ' || c == '\t')(i)
}

fn word(i: &str) -> PResult<'_, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic()),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))(i)
}

fn newline(i: &str) -> PResult<'_, &str> {
    recognize(pair(opt(nchar('\r')), nchar('\n')))(i)
}

/// `//` up to (not including) the end of the line.
fn line_comment(i: &str) -> PResult<'_, &str> {
    recognize(pair(tag("//"), take_till(|c| c == '\n')))(i)
}

fn block_comment(i: &str) -> PResult<'_, &str> {
    recognize(tuple((tag("/*"), take_until("*/"), tag("*/"))))(i)
}

/// The end of a statement: blanks, an optional `//` comment, then a line end or the end
/// of the file.
fn end_of_statement(i: &str) -> PResult<'_, ()> {
    let (i, _) = blank(i)?;
    let (i, _) = opt(line_comment)(i)?;
    let (i, _) = alt((newline, eof))(i)?;
    Ok((i, ()))
}

/// A decimal number, or `-1` (GOAL's ANY_SOURCE / ANY_TAG); the text is kept so that
/// range errors can point at it.
fn number_or_any(i: &str) -> PResult<'_, &str> {
    alt((tag("-1"), digit1))(i)
}

/// Blanks, then `p` (which must match).
fn field<'a, O>(
    what: &'static str,
    p: impl FnMut(&'a str) -> PResult<'a, O>,
) -> impl FnMut(&'a str) -> PResult<'a, O> {
    let mut p = expect(what, p);
    move |i| {
        let (i, _) = blank(i)?;
        p(i)
    }
}

/// Blanks, then an optional `key VALUE` pair.
fn option<'a>(
    key: &'static str,
    what: &'static str,
    value: fn(&'a str) -> PResult<'a, &'a str>,
) -> impl FnMut(&'a str) -> PResult<'a, Option<&'a str>> {
    let mut value = field(what, value);
    move |i| {
        let (i, _) = blank(i)?;
        match tag::<_, _, PErr>(key)(i) {
            Ok((rest, _)) => {
                let (rest, v) = value(rest)?;
                Ok((rest, Some(v)))
            }
            Err(_) => Ok((i, None)),
        }
    }
}

/// What the input at `i` starts with, for error messages.
fn found(i: &str) -> String {
    if i.is_empty() {
        return "end of file".to_string();
    }
    if newline(i).is_ok() {
        return "end of line".to_string();
    }
    let run: String = i
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(24)
        .collect();
    if !run.is_empty() {
        return format!("`{run}`");
    }
    match i.chars().next() {
        Some(c) => format!("`{}`", c.escape_debug()),
        None => "end of file".to_string(),
    }
}

/// One operation as written: numbers still as text, to be checked with their positions.
struct RawOp<'a> {
    kind: OpWord,
    amount: &'a str,
    peer: Option<&'a str>,
    tag: Option<&'a str>,
    cpu: Option<&'a str>,
    nic: Option<&'a str>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OpWord {
    Send,
    Recv,
    Calc,
}

/// An operation after its keyword, up to and including the end of its line.
fn operation(kind: OpWord) -> impl FnMut(&str) -> PResult<'_, RawOp<'_>> {
    move |i| {
        let mut op = RawOp {
            kind,
            amount: "",
            peer: None,
            tag: None,
            cpu: None,
            nic: None,
        };
        if kind == OpWord::Calc {
            let (i, amount) = field("an amount of computation", digit1)(i)?;
            op.amount = amount;
            let (i, cpu) = option("cpu", "a cpu number", digit1)(i)?;
            op.cpu = cpu;
            let last = if cpu.is_some() {
                "end of line"
            } else {
                "`cpu` or end of line"
            };
            let (i, ()) = field(last, end_of_statement)(i)?;
            return Ok((i, op));
        }
        let (i, size) = field("a size in bytes", digit1)(i)?;
        let (i, _) = field("`b` after the size", tag("b"))(i)?;
        let (i, peer) = if kind == OpWord::Send {
            let (i, _) = field("`to`", tag("to"))(i)?;
            field("a destination rank", number_or_any)(i)?
        } else {
            let (i, _) = field("`from`", tag("from"))(i)?;
            field("a source rank or -1", number_or_any)(i)?
        };
        let (i, tag_) = option("tag", "a tag or -1", number_or_any)(i)?;
        let (i, cpu) = option("cpu", "a cpu number", digit1)(i)?;
        let (i, nic) = option("nic", "a nic number", digit1)(i)?;
        let last = match (tag_.is_some(), cpu.is_some(), nic.is_some()) {
            (_, _, true) => "end of line",
            (_, true, false) => "`nic` or end of line",
            (true, false, false) => "`cpu`, `nic` or end of line",
            (false, false, false) => "`tag`, `cpu`, `nic` or end of line",
        };
        let (i, ()) = field(last, end_of_statement)(i)?;
        op.amount = size;
        op.peer = Some(peer);
        op.tag = tag_;
        op.cpu = cpu;
        op.nic = nic;
        Ok((i, op))
    }
}

/// What follows a label at the start of a statement.
enum AfterLabel<'a> {
    Op(RawOp<'a>),
    /// `requires`/`irequires`, and the label depended on.
    Dep {
        start_only: bool,
        pred: &'a str,
    },
}

fn after_label(i: &str) -> PResult<'_, AfterLabel<'_>> {
    let (i, _) = blank(i)?;
    let (i, what) = expect(
        "`:`, `requires` or `irequires`",
        alt((tag(":"), tag("irequires"), tag("requires"))),
    )(i)?;
    if what == ":" {
        // As in txt2bin, the keyword after the colon needs no blank after it.
        let (i, kw) = field(
            "`send`, `recv` or `calc`",
            alt((tag("send"), tag("recv"), tag("calc"))),
        )(i)?;
        let (i, op) = operation(op_word(kw))(i)?;
        return Ok((i, AfterLabel::Op(op)));
    }
    let (i, pred) = field("a label", word)(i)?;
    let (i, ()) = field("end of line", end_of_statement)(i)?;
    Ok((
        i,
        AfterLabel::Dep {
            start_only: what == "irequires",
            pred,
        },
    ))
}

fn op_word(kw: &str) -> OpWord {
    match kw {
        "send" => OpWord::Send,
        "recv" => OpWord::Recv,
        _ => OpWord::Calc,
    }
}

// ---------------------------------------------------------------------------------------
// The reader: statements into per-rank graphs

/// One operation, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    Send { bytes: u64, dst: u16, tag: u32 },
    Recv { bytes: u64, src: Peer, tag: Tag },
    Calc(u64),
}

impl OpKind {
    fn is_comm(self) -> bool {
        !matches!(self, OpKind::Calc(_))
    }
}

/// `succ` after `pred`: completed (`requires`) or started (`irequires`).
#[derive(Clone, Copy, Debug)]
struct Edge {
    succ: usize,
    pred: usize,
    start_only: bool,
}

/// A dependency as written (labels resolved when the block closes).
struct RawDep<'a> {
    succ: &'a str,
    pred: &'a str,
    start_only: bool,
}

/// The rank block being read.
struct Block<'a> {
    rank: u16,
    ops: Vec<OpKind>,
    /// Where each operation's statement starts.
    op_at: Vec<&'a str>,
    labels: HashMap<&'a str, usize>,
    deps: Vec<RawDep<'a>>,
}

struct Reader<'a> {
    text: &'a str,
    file: &'a str,
    /// `num_ranks` and where it was given.
    num_ranks: Option<(u32, &'a str)>,
    programs: Vec<Option<RankProgram>>,
    /// Per rank, the line and column of the operation each call comes from.
    origins: Vec<Vec<(u32, u32)>>,
    lines: LineIndex<'a>,
    /// Where each rank's block starts.
    block_at: Vec<Option<&'a str>>,
    block: Option<Block<'a>>,
    any_calc: bool,
    any_placement: bool,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str, file: &'a str) -> Self {
        Reader {
            text,
            file,
            num_ranks: None,
            programs: Vec::new(),
            origins: Vec::new(),
            lines: LineIndex::new(text),
            block_at: Vec::new(),
            block: None,
            any_calc: false,
            any_placement: false,
        }
    }

    fn error(&self, at: &str, msg: String) -> GoalError {
        GoalError::at(self.file, self.text, self.offset(at), msg)
    }

    /// The byte offset of `at`, a suffix (or sub-slice) of the text.
    fn offset(&self, at: &str) -> usize {
        (at.as_ptr() as usize)
            .wrapping_sub(self.text.as_ptr() as usize)
            .min(self.text.len())
    }

    fn line_of(&self, at: &str) -> u32 {
        self.lines.pos(self.offset(at)).0
    }

    fn nom_error(&self, e: nom::Err<PErr<'a>>) -> GoalError {
        match e {
            nom::Err::Error(p) | nom::Err::Failure(p) => self.error(p.at, p.msg.into_owned()),
            nom::Err::Incomplete(_) => self.error(self.text, "incomplete input".to_string()),
        }
    }

    fn run(&mut self) -> Result<(), GoalError> {
        let mut i = self.text;
        loop {
            i = self.skip(i)?;
            if i.is_empty() {
                break;
            }
            i = if self.block.is_some() {
                self.block_item(i)?
            } else {
                self.top_item(i)?
            };
        }
        if let Some(b) = &self.block {
            return Err(self.error(
                i,
                format!(
                    "expected `}}` to close the block of rank {}, found end of file",
                    b.rank
                ),
            ));
        }
        if self.num_ranks.is_none() {
            return Err(self.error(i, "expected `num_ranks`, found end of file".to_string()));
        }
        Ok(())
    }

    /// Skips blanks, line ends and comments between statements.
    fn skip(&self, mut i: &'a str) -> Result<&'a str, GoalError> {
        loop {
            let r: PResult<'a, &'a str> = alt((
                take_while1(|c| c == ' ' || c == '\t'),
                newline,
                line_comment,
                block_comment,
            ))(i);
            match r {
                Ok((rest, _)) => i = rest,
                Err(_) if i.starts_with("/*") => {
                    return Err(self.error(i, "unterminated `/*` comment".to_string()))
                }
                Err(_) => return Ok(i),
            }
        }
    }

    /// `num_ranks N` or `rank R {`.
    fn top_item(&mut self, i: &'a str) -> Result<&'a str, GoalError> {
        let want = if self.num_ranks.is_some() {
            "`rank`"
        } else {
            "`num_ranks`"
        };
        let (rest, kw) = expect(want, word)(i).map_err(|e| self.nom_error(e))?;
        match kw {
            "num_ranks" => {
                if let Some((_, first)) = self.num_ranks {
                    let line = self.line_of(first);
                    return Err(
                        self.error(i, format!("`num_ranks` given twice (first on line {line})"))
                    );
                }
                let (rest, n) =
                    field("the number of ranks", digit1)(rest).map_err(|e| self.nom_error(e))?;
                let count = match n.parse::<u32>() {
                    Ok(v) if (1..=MAX_RANKS).contains(&v) => v,
                    _ => {
                        return Err(
                            self.error(n, format!("num_ranks {n} out of range (1 to {MAX_RANKS})"))
                        )
                    }
                };
                self.num_ranks = Some((count, i));
                self.programs = vec![None; count as usize];
                self.origins = vec![Vec::new(); count as usize];
                self.block_at = vec![None; count as usize];
                Ok(rest)
            }
            "rank" => {
                let Some((count, _)) = self.num_ranks else {
                    return Err(self.error(
                        i,
                        "expected `num_ranks` before the first rank block, found `rank`"
                            .to_string(),
                    ));
                };
                let (rest, r) =
                    field("a rank number", digit1)(rest).map_err(|e| self.nom_error(e))?;
                let rank = match r.parse::<u32>() {
                    Ok(v) if v < count => v as u16,
                    _ => {
                        return Err(
                            self.error(r, format!("rank {r} out of range (num_ranks is {count})"))
                        )
                    }
                };
                if let Some(first) = self.block_at[rank as usize] {
                    let line = self.line_of(first);
                    return Err(self.error(
                        r,
                        format!("rank {rank} has a second block (the first starts on line {line})"),
                    ));
                }
                let (rest, _) = field("`{`", tag("{"))(rest).map_err(|e| self.nom_error(e))?;
                self.block_at[rank as usize] = Some(i);
                self.block = Some(Block {
                    rank,
                    ops: Vec::new(),
                    op_at: Vec::new(),
                    labels: HashMap::new(),
                    deps: Vec::new(),
                });
                Ok(rest)
            }
            _ => Err(self.error(i, format!("expected {want}, found {}", found(i)))),
        }
    }

    /// A statement or the closing `}` of a rank block.
    fn block_item(&mut self, i: &'a str) -> Result<&'a str, GoalError> {
        if let Some(rest) = i.strip_prefix('}') {
            self.close_block()?;
            return Ok(rest);
        }
        let (rest, w) =
            expect("an operation, a dependency or `}`", word)(i).map_err(|e| self.nom_error(e))?;
        let (rest, label, stmt) = match w {
            "send" | "recv" | "calc" => {
                let (rest, op) = operation(op_word(w))(rest).map_err(|e| self.nom_error(e))?;
                (rest, None, AfterLabel::Op(op))
            }
            "rank" | "num_ranks" => {
                let rank = self.block.as_ref().map_or(0, |b| b.rank);
                return Err(self.error(
                    i,
                    format!("expected `}}` to close the block of rank {rank}, found `{w}`"),
                ));
            }
            _ => {
                let (rest, s) = after_label(rest).map_err(|e| self.nom_error(e))?;
                (rest, Some(w), s)
            }
        };
        match stmt {
            AfterLabel::Op(op) => self.add_op(i, label, op)?,
            AfterLabel::Dep { start_only, pred } => {
                if let (Some(b), Some(succ)) = (self.block.as_mut(), label) {
                    b.deps.push(RawDep {
                        succ,
                        pred,
                        start_only,
                    });
                }
            }
        }
        Ok(rest)
    }

    /// Checks an operation's numbers and adds it to the block.
    fn add_op(
        &mut self,
        at: &'a str,
        label: Option<&'a str>,
        op: RawOp<'a>,
    ) -> Result<(), GoalError> {
        let count = self.num_ranks.map_or(0, |n| n.0);
        let what = match op.kind {
            OpWord::Calc => "calc amount",
            _ => "message size",
        };
        let amount = op.amount.parse::<u64>().map_err(|_| {
            self.error(
                op.amount,
                format!("{what} {} does not fit in 64 bits", op.amount),
            )
        })?;
        for (key, v) in [("cpu", op.cpu), ("nic", op.nic)] {
            if let Some(v) = v {
                match v.parse::<u8>() {
                    Ok(n) => self.any_placement |= n != 0,
                    Err(_) => {
                        return Err(self.error(v, format!("{key} {v} out of range (0 to 255)")))
                    }
                }
            }
        }
        let kind = match op.kind {
            OpWord::Calc => {
                self.any_calc = true;
                OpKind::Calc(amount)
            }
            OpWord::Send => {
                let d = op.peer.unwrap_or("");
                if d == "-1" {
                    return Err(self.error(
                        d,
                        "a send needs a destination rank; -1 (ANY_SOURCE) is for receives"
                            .to_string(),
                    ));
                }
                let dst = self.rank_in_range(d, count, "destination")?;
                let tag = match op.tag {
                    Some("-1") => {
                        return Err(self.error(
                            op.tag.unwrap_or(""),
                            "a send needs a tag; -1 (ANY_TAG) is for receives".to_string(),
                        ))
                    }
                    Some(t) => self.tag_value(t)?,
                    None => 0,
                };
                OpKind::Send {
                    bytes: amount,
                    dst,
                    tag,
                }
            }
            OpWord::Recv => {
                let s = op.peer.unwrap_or("");
                let src = if s == "-1" {
                    Peer::Any
                } else {
                    Peer::Rank(self.rank_in_range(s, count, "source")?)
                };
                let tag = match op.tag {
                    Some("-1") => Tag::Any,
                    Some(t) => Tag::Tag(self.tag_value(t)?),
                    None => Tag::Tag(0),
                };
                OpKind::Recv {
                    bytes: amount,
                    src,
                    tag,
                }
            }
        };
        let Some(b) = self.block.as_mut() else {
            return Ok(());
        };
        if let Some(l) = label {
            if let Some(&first) = b.labels.get(l) {
                let (rank, first_at) = (b.rank, b.op_at[first]);
                let line = self.line_of(first_at);
                return Err(self.error(
                    at,
                    format!("duplicate label `{l}` in rank {rank} (first defined on line {line})"),
                ));
            }
            b.labels.insert(l, b.ops.len());
        }
        b.ops.push(kind);
        b.op_at.push(at);
        Ok(())
    }

    fn rank_in_range(&self, r: &'a str, count: u32, role: &str) -> Result<u16, GoalError> {
        match r.parse::<u32>() {
            Ok(v) if v < count => Ok(v as u16),
            _ => Err(self.error(
                r,
                format!("{role} rank {r} out of range (num_ranks is {count})"),
            )),
        }
    }

    fn tag_value(&self, t: &'a str) -> Result<u32, GoalError> {
        match t.parse::<u32>() {
            Ok(v) if v <= TAG_UB => Ok(v),
            _ => Err(self.error(
                t,
                format!("tag {t} out of range (0 to {TAG_UB}, MPI_TAG_UB; -1 is ANY_TAG)"),
            )),
        }
    }

    /// Resolves the block's labels and turns its graph into the rank's program.
    fn close_block(&mut self) -> Result<(), GoalError> {
        let Some(b) = self.block.take() else {
            return Ok(());
        };
        let mut edges = Vec::with_capacity(b.deps.len());
        for d in &b.deps {
            let look = |l: &'a str| {
                b.labels
                    .get(l)
                    .copied()
                    .ok_or_else(|| self.error(l, format!("unknown label `{l}` in rank {}", b.rank)))
            };
            edges.push(Edge {
                succ: look(d.succ)?,
                pred: look(d.pred)?,
                start_only: d.start_only,
            });
        }
        match schedule(&b.ops, &edges) {
            Ok(s) => {
                self.origins[b.rank as usize] = s
                    .call_op
                    .iter()
                    .map(|op| op.map_or((0, 0), |x| self.lines.pos(self.offset(b.op_at[x]))))
                    .collect();
                self.programs[b.rank as usize] = Some(s.program);
                Ok(())
            }
            Err(SchedError::Cycle(cycle)) => {
                let chain: Vec<String> = cycle
                    .iter()
                    .map(|&k| {
                        let d = &b.deps[k];
                        let verb = if d.start_only {
                            "irequires"
                        } else {
                            "requires"
                        };
                        format!("`{}` {verb} `{}`", d.succ, d.pred)
                    })
                    .collect();
                // Point at the dependency of the cycle written last: the one that closes it.
                let last = cycle.iter().copied().max().unwrap_or(0);
                let at = b.deps.get(last).map_or(self.text, |d| d.succ);
                Err(self.error(
                    at,
                    format!("dependency cycle in rank {}: {}", b.rank, chain.join(", ")),
                ))
            }
            Err(SchedError::ArenaOverflow(op)) => Err(self.error(
                b.op_at[op],
                format!(
                    "the receive arena of rank {} would pass 2^64 bytes at this receive",
                    b.rank
                ),
            )),
            Err(SchedError::TooManyRequests(op)) => Err(self.error(
                b.op_at[op],
                format!("more than 2^32 sends and receives in rank {}", b.rank),
            )),
        }
    }

    fn finish(self) -> Workload {
        let name = Path::new(self.file).file_stem().map_or_else(
            || self.file.to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        let ranks = self
            .programs
            .into_iter()
            .map(|p| p.unwrap_or_else(empty_program))
            .collect();
        let mut notes = Vec::new();
        if self.any_calc {
            notes.push("GOAL calc amounts taken as instruction counts".to_string());
        }
        if self.any_placement {
            notes.push("GOAL cpu and nic numbers ignored: each rank runs on one core".to_string());
        }
        let origins = Origins {
            file: self.file.to_string(),
            ranks: self.origins,
            files: Vec::new(),
        };
        let mut w = Workload {
            name,
            ranks,
            notes,
            origins: Some(origins),
        };
        // A map that fails (too many wide tags) is refused when the workload is run.
        let renumbering = TagMap::of(&w).ok().and_then(|m| m.note());
        w.notes.extend(renumbering);
        w
    }
}

fn empty_program() -> RankProgram {
    let mut p = RankProgram::default();
    p.buffer("send", 0);
    p.buffer("recv", 0);
    p
}

// ---------------------------------------------------------------------------------------
// Translation of one rank's graph

/// A rank's program and the operation placed at each step (for tests).
struct Scheduled {
    program: RankProgram,
    /// The operation each call comes from (a wait: the operation that needs it); `None`
    /// for the final wait for what nothing needed.
    call_op: Vec<Option<usize>>,
    #[cfg_attr(not(test), allow(dead_code))]
    order: Vec<usize>,
}

#[derive(Debug, PartialEq, Eq)]
enum SchedError {
    /// The edges (indices into the edge list) of a cycle: each one's `pred` is the next
    /// one's `succ`.
    Cycle(Vec<usize>),
    /// The receive arena would pass 2^64 bytes at this operation.
    ArenaOverflow(usize),
    TooManyRequests(usize),
}

/// The receive arena: ranges held by outstanding receives, placed first fit.
///
/// Free space is kept as the holes below `top` plus everything from `top` on, so that
/// placing a receive looks at the holes only, not at every outstanding receive (a
/// schedule may post thousands of receives before waiting for any).
#[derive(Default)]
struct Arena {
    /// Where each outstanding receive's range starts, and its length.
    live: HashMap<usize, (u64, u64)>,
    /// Free ranges below `top`: (start, length), by start, none touching another or `top`.
    holes: Vec<(u64, u64)>,
    /// The end of the highest range held.
    top: u64,
    peak: u64,
}

impl Arena {
    fn alloc(&mut self, len: u64, op: usize) -> Option<u64> {
        if len == 0 {
            return Some(0);
        }
        let at = match self.holes.iter().position(|h| h.1 >= len) {
            Some(k) => {
                let (start, hole) = self.holes[k];
                if hole == len {
                    self.holes.remove(k);
                } else {
                    self.holes[k] = (start + len, hole - len);
                }
                start
            }
            None => {
                let at = self.top;
                self.top = at.checked_add(len)?;
                self.peak = self.peak.max(self.top);
                at
            }
        };
        self.live.insert(op, (at, len));
        Some(at)
    }

    fn free(&mut self, op: usize) {
        let Some((mut start, mut len)) = self.live.remove(&op) else {
            return;
        };
        let k = self.holes.partition_point(|h| h.0 < start);
        // Merge with the hole after, then with the hole before.
        if let Some(&(s, l)) = self.holes.get(k) {
            if start + len == s {
                len += l;
                self.holes.remove(k);
            }
        }
        if k > 0 {
            let (s, l) = self.holes[k - 1];
            if s + l == start {
                start = s;
                len += l;
                self.holes.remove(k - 1);
            }
        }
        if start + len == self.top {
            self.top = start;
        } else {
            let k = self.holes.partition_point(|h| h.0 < start);
            self.holes.insert(k, (start, len));
        }
    }
}

/// Orders one rank's operations (see the module documentation) and emits its calls.
fn schedule(ops: &[OpKind], edges: &[Edge]) -> Result<Scheduled, SchedError> {
    let n = ops.len();
    let mut indeg = vec![0usize; n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    // Sends and receives each operation `requires`: what it must wait for.
    let mut needs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in edges {
        indeg[e.succ] += 1;
        succs[e.pred].push(e.succ);
        if !e.start_only && ops[e.pred].is_comm() {
            needs[e.succ].push(e.pred);
        }
    }
    for v in &mut needs {
        v.sort_unstable();
        v.dedup();
    }
    let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (x, v) in needs.iter().enumerate() {
        for &y in v {
            waiters[y].push(x);
        }
    }
    // How many of its `needs` each operation still has to wait for.
    let mut unwaited: Vec<usize> = needs.iter().map(Vec::len).collect();
    let mut req: Vec<Option<ReqId>> = vec![None; n];
    let mut waited = vec![false; n];
    // Ready operations: those that can start at once, and those needing a wait first.
    let mut free: BTreeSet<usize> = (0..n).filter(|&x| indeg[x] == 0).collect();
    let mut blocked: BTreeSet<usize> = BTreeSet::new();

    let mut calls = Vec::with_capacity(n + 1);
    let mut call_op = Vec::with_capacity(n + 1);
    let mut order = Vec::with_capacity(n);
    let mut comms: Vec<usize> = Vec::new();
    let mut arena = Arena::default();
    let mut max_send = 0u64;

    while let Some(x) = free.pop_first().or_else(|| blocked.pop_first()) {
        let mut due: Vec<(ReqId, usize)> = needs[x]
            .iter()
            .filter(|&&y| !waited[y])
            .map(|&y| (req[y].expect("a predecessor is placed first"), y))
            .collect();
        if !due.is_empty() {
            due.sort_unstable();
            calls.push(match due.as_slice() {
                [(r, _)] => Call::Wait(*r),
                _ => Call::Waitall(due.iter().map(|d| d.0).collect()),
            });
            call_op.push(Some(x));
            for &(_, y) in &due {
                waited[y] = true;
                arena.free(y);
                for &z in &waiters[y] {
                    unwaited[z] -= 1;
                    if unwaited[z] == 0 && blocked.remove(&z) {
                        free.insert(z);
                    }
                }
            }
        }
        call_op.push(Some(x));
        match ops[x] {
            OpKind::Calc(amount) => calls.push(Call::Compute(amount)),
            OpKind::Send { bytes, dst, tag } => {
                let r = ReqId::try_from(comms.len()).map_err(|_| SchedError::TooManyRequests(x))?;
                req[x] = Some(r);
                comms.push(x);
                max_send = max_send.max(bytes);
                calls.push(Call::Isend {
                    req: r,
                    dst,
                    tag,
                    ctx: CTX_PT2PT,
                    buf: BufRef::new(SEND_BUF, 0),
                    bytes,
                });
            }
            OpKind::Recv { bytes, src, tag } => {
                let r = ReqId::try_from(comms.len()).map_err(|_| SchedError::TooManyRequests(x))?;
                let off = arena.alloc(bytes, x).ok_or(SchedError::ArenaOverflow(x))?;
                req[x] = Some(r);
                comms.push(x);
                calls.push(Call::Irecv {
                    req: r,
                    src,
                    tag,
                    ctx: CTX_PT2PT,
                    buf: BufRef::new(RECV_BUF, off),
                    bytes,
                });
            }
        }
        order.push(x);
        for &z in &succs[x] {
            indeg[z] -= 1;
            if indeg[z] == 0 {
                if unwaited[z] == 0 {
                    free.insert(z);
                } else {
                    blocked.insert(z);
                }
            }
        }
    }
    if order.len() < n {
        return Err(SchedError::Cycle(find_cycle(n, edges, &indeg)));
    }
    let rest: Vec<ReqId> = comms
        .iter()
        .filter(|&&y| !waited[y])
        .filter_map(|&y| req[y])
        .collect();
    if !rest.is_empty() {
        calls.push(Call::Waitall(rest));
        call_op.push(None);
    }
    let mut program = RankProgram::default();
    program.buffer("send", max_send);
    program.buffer("recv", arena.peak);
    program.calls = calls;
    Ok(Scheduled {
        program,
        call_op,
        order,
    })
}

/// A cycle among the operations Kahn's algorithm could not place (`indeg > 0`): each of
/// them has a predecessor that was not placed either, so walking back from one of them
/// must come round.
fn find_cycle(n: usize, edges: &[Edge], indeg: &[usize]) -> Vec<usize> {
    let mut back: Vec<Option<usize>> = vec![None; n];
    for (k, e) in edges.iter().enumerate() {
        if indeg[e.succ] > 0 && indeg[e.pred] > 0 && back[e.succ].is_none() {
            back[e.succ] = Some(k);
        }
    }
    let Some(start) = (0..n).find(|&x| indeg[x] > 0) else {
        return Vec::new();
    };
    let mut seen = vec![None; n];
    let mut path = Vec::new();
    let mut x = start;
    while seen[x].is_none() {
        seen[x] = Some(path.len());
        let Some(k) = back[x] else {
            return path;
        };
        path.push(k);
        x = edges[k].pred;
    }
    path.split_off(seen[x].unwrap_or(0))
}

#[cfg(test)]
mod tests;
