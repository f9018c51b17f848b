//! Reader (and writer) of gem5's `stats.txt`, the layout of gem5 v24's text output
//! (`src/base/stats/text.cc`), which our own runs write too.
//!
//! A file holds one block per statistics dump, each between a
//! `---------- Begin Simulation Statistics ----------` and an
//! `---------- End Simulation Statistics   ----------` line. Inside a block a line is blank
//! or one statistic:
//!
//! * `name value [pdf% [cdf%]] [# description] [(Unit)]`: a scalar, one element of a vector
//!   (`name::0`, `name::total`), or one field or bucket of a histogram (`name::samples`,
//!   `name::mean`, `name::0-7`, `name::overflows`, ...);
//! * `name | value [pdf% cdf%] | value ... [# description] [(Unit)]`: a vector or the
//!   buckets of a histogram flagged `oneline` (Ruby's SLICC event and transition counters).
//!   gem5 prints no element names there; this reader names the elements `name::0`,
//!   `name::1`, ... in order.
//!
//! A gem5 `Distribution` is a run of such lines under one base name (`samples`, `mean`,
//! `stdev`, `underflows`, a line per bucket, `overflows`, `min_value`, `max_value`,
//! `total`); [`Dump::distribution`] gathers them back into one [`DistRead`].
//!
//! Values are integers, decimals, `nan`, `inf` or `-inf`, possibly negative. A name is
//! everything up to the first blank, `#` or `|`: gem5's dotted names plus subnames, which may
//! hold `::`, `-` and `.` (`foo::0-7`, `bar::cpu.data`); ours may hold `->`. A description
//! is optional. The unit is the last balanced parenthesised group of the line, so rates keep
//! their own parentheses (`((Count/Second))` is the unit `(Count/Second)`); gem5 prints units
//! whenever it prints descriptions, so a description's own trailing parenthesis would be
//! read as a unit only in files written without units.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use nom::branch::alt;
use nom::bytes::complete::{tag, tag_no_case, take_till1, take_while1};
use nom::character::complete::{char as nchar, digit0, digit1, one_of, space0, space1};
use nom::combinator::{all_consuming, eof, opt, recognize};
use nom::sequence::{pair, tuple};
use rustc_hash::FxHashMap;

use super::StatValue;
use crate::textparse::{FileError, PErr, PResult, PosError};

const BEGIN_LINE: &str = "---------- Begin Simulation Statistics ----------";
const END_LINE: &str = "---------- End Simulation Statistics   ----------";

/// An error reading a `stats.txt`: `file:line:col: what was expected` (line and column from
/// 1), or `file: msg` when the file could not be read at all.
pub type StatsError = FileError;

/// One printed value with its optional pdf and cdf columns, in percent as printed (`12.50%`
/// is 12.5).
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub value: StatValue,
    pub pdf: Option<f64>,
    pub cdf: Option<f64>,
}

impl Cell {
    /// A value without pdf and cdf.
    pub fn plain(value: StatValue) -> Cell {
        Cell {
            value,
            pdf: None,
            cdf: None,
        }
    }
}

/// What one line holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// One value: a scalar, a vector element or a histogram field or bucket.
    Scalar(Cell),
    /// The elements of a `oneline` vector or histogram, in order.
    Oneline(Vec<Cell>),
}

/// One statistic line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub name: String,
    pub values: Values,
    /// Empty when the line has none.
    pub desc: String,
    /// Without its outer parentheses; empty when the line has none.
    pub unit: String,
    /// Line number in the file (from 1); 0 for entries built in code.
    pub line: u32,
}

/// A gem5 `Distribution` read back from a dump: the lines printed under `name::`.
#[derive(Clone, Debug, PartialEq)]
pub struct DistRead {
    pub samples: Cell,
    pub mean: Cell,
    pub stdev: Cell,
    pub underflows: Cell,
    pub buckets: Vec<BucketRead>,
    pub overflows: Cell,
    pub min_value: Cell,
    pub max_value: Cell,
    pub total: Cell,
    /// The description and unit of the `samples` line (gem5 prints the same on every
    /// line).
    pub desc: String,
    pub unit: String,
}

/// One bucket of a [`DistRead`]: its label as printed (`0-3`, `7`, `-8--5`), the bounds
/// the label gives, and its count with pdf and cdf.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketRead {
    pub label: String,
    pub lo: f64,
    pub hi: f64,
    pub cell: Cell,
}

/// The bounds of a bucket label as gem5 prints them: `lo-hi`, or `lo` for a bucket of one
/// value; numbers may be negative (`-8--5`) or in C++'s exponent form (`1e+06-2e+06`).
pub fn bucket_bounds(label: &str) -> Option<(f64, f64)> {
    let (rest, lo) = number_text(label).ok()?;
    let lo: f64 = lo.parse().ok()?;
    if rest.is_empty() {
        return Some((lo, lo));
    }
    let hi = rest.strip_prefix('-')?;
    all_consuming(number_text)(hi).ok()?;
    Some((lo, hi.parse().ok()?))
}

/// The next line's cell when it is field `want` of a distribution.
fn field<'a>(lines: &mut impl Iterator<Item = (&'a str, &'a Cell)>, want: &str) -> Option<Cell> {
    match lines.next() {
        Some((f, c)) if f == want => Some(c.clone()),
        _ => None,
    }
}

/// Where a name points: an entry, and for a `oneline` element its index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    entry: u32,
    elem: Option<u32>,
}

/// One statistics dump: its entries in file order, looked up by name.
///
/// A name printed twice in one dump (gem5 does not, but a file may) keeps its first
/// value for lookups, and globs count it once.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// Line of the `Begin` marker (0 for dumps built in code).
    pub begin_line: u32,
    entries: Vec<Entry>,
    index: FxHashMap<String, Slot>,
}

/// A value found by name: its full name (`name::3` for a `oneline` element), the cell and
/// the line it came from.
#[derive(Clone, Debug)]
pub struct Found<'a> {
    pub name: Cow<'a, str>,
    pub cell: &'a Cell,
    pub entry: &'a Entry,
}

impl Found<'_> {
    /// The value as `f64`.
    pub fn value(&self) -> f64 {
        self.cell.value.as_f64()
    }
}

impl Dump {
    /// An empty dump, to be filled with [`Dump::push`].
    pub fn new() -> Dump {
        Dump::default()
    }

    /// Appends an entry; its name (and its `oneline` elements' names) become lookups unless
    /// an earlier entry took them.
    pub fn push(&mut self, e: Entry) {
        let at = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        if let Values::Oneline(cells) = &e.values {
            for i in 0..cells.len() {
                let elem = u32::try_from(i).unwrap_or(u32::MAX);
                self.index
                    .entry(format!("{}::{i}", e.name))
                    .or_insert(Slot {
                        entry: at,
                        elem: Some(elem),
                    });
            }
        }
        self.index.entry(e.name.clone()).or_insert(Slot {
            entry: at,
            elem: None,
        });
        self.entries.push(e);
    }

    /// Every entry in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry printed under `name` (for a `oneline` vector, its base name).
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.index
            .get(name)
            .and_then(|s| self.entries.get(s.entry as usize))
    }

    /// The value named `name`: a scalar line, or `base::i` for element `i` of a `oneline`
    /// vector. A `oneline` base name has no single value.
    pub fn get(&self, name: &str) -> Option<Found<'_>> {
        let slot = *self.index.get(name)?;
        let entry = self.entries.get(slot.entry as usize)?;
        let cell = match (&entry.values, slot.elem) {
            (Values::Scalar(c), None) => c,
            (Values::Oneline(cells), Some(i)) => cells.get(i as usize)?,
            _ => return None,
        };
        Some(Found {
            name: Cow::Borrowed(self.index.get_key_value(name)?.0.as_str()),
            cell,
            entry,
        })
    }

    /// The value named `name` as `f64`; see [`Dump::get`].
    pub fn value(&self, name: &str) -> Option<f64> {
        self.get(name).map(|f| f.value())
    }

    /// Every value in file order, `oneline` elements expanded to `base::i`, each name once.
    pub fn values(&self) -> impl Iterator<Item = Found<'_>> {
        self.entries.iter().enumerate().flat_map(move |(at, e)| {
            let first = self
                .index
                .get(&e.name)
                .is_some_and(|s| s.entry as usize == at);
            let cells: Vec<Found<'_>> = match &e.values {
                Values::Scalar(c) if first => vec![Found {
                    name: Cow::Borrowed(e.name.as_str()),
                    cell: c,
                    entry: e,
                }],
                Values::Scalar(_) => Vec::new(),
                Values::Oneline(cells) => cells
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| {
                        let name = format!("{}::{i}", e.name);
                        let own = self
                            .index
                            .get(&name)
                            .is_some_and(|s| s.entry as usize == at);
                        own.then_some(Found {
                            name: Cow::Owned(name),
                            cell: c,
                            entry: e,
                        })
                    })
                    .collect(),
            };
            cells
        })
    }

    /// The values whose names match `pattern` (see [`glob_match`]), in file order.
    pub fn glob(&self, pattern: &str) -> Vec<Found<'_>> {
        let glob = Glob::new(pattern);
        self.values().filter(|f| glob.matches(&f.name)).collect()
    }

    /// The gem5 `Distribution` printed under `name` (`name::samples` through `name::total`,
    /// in gem5's order); `None` when those lines are not there in that order, as for a
    /// `Histogram` (which prints `gmean` and no under- or overflows).
    pub fn distribution(&self, name: &str) -> Option<DistRead> {
        let base = format!("{name}::");
        let at = self.index.get(&format!("{base}samples"))?.entry as usize;
        let mut lines = self.entries.get(at..)?.iter().map_while(|e| {
            let field = e.name.strip_prefix(&base)?;
            match &e.values {
                Values::Scalar(c) => Some((field, c)),
                Values::Oneline(_) => None,
            }
        });
        let mut next = |want: &str| field(&mut lines, want);
        let (samples, mean, stdev) = (next("samples")?, next("mean")?, next("stdev")?);
        let underflows = next("underflows")?;
        let mut buckets = Vec::new();
        let overflows = loop {
            let (field, cell) = lines.next()?;
            if field == "overflows" {
                break cell.clone();
            }
            let (lo, hi) = bucket_bounds(field)?;
            buckets.push(BucketRead {
                label: field.to_string(),
                lo,
                hi,
                cell: cell.clone(),
            });
        };
        let mut next = |want: &str| field(&mut lines, want);
        let (min_value, max_value) = (next("min_value")?, next("max_value")?);
        let total = next("total")?;
        let first = &self.entries[at];
        Some(DistRead {
            samples,
            mean,
            stdev,
            underflows,
            buckets,
            overflows,
            min_value,
            max_value,
            total,
            desc: first.desc.clone(),
            unit: first.unit.clone(),
        })
    }

    /// The values whose names start with `prefix`, in file order.
    pub fn with_prefix(&self, prefix: &str) -> Vec<Found<'_>> {
        self.values()
            .filter(|f| f.name.starts_with(prefix))
            .collect()
    }

    /// Sum of the values matching `pattern`; `None` when nothing matches.
    pub fn sum(&self, pattern: &str) -> Option<f64> {
        let found = self.glob(pattern);
        (!found.is_empty()).then(|| found.iter().map(Found::value).sum())
    }

    /// Largest of the values matching `pattern` (NaN when one is NaN); `None` when nothing
    /// matches.
    pub fn max(&self, pattern: &str) -> Option<f64> {
        self.glob(pattern).iter().map(Found::value).reduce(|a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        })
    }

    /// Writes this dump in gem5's layout: the begin marker, one line per entry (name in 40
    /// columns, value in 12, pdf and cdf in 10 each), the end marker. Values are written
    /// with every digit they need, so reading the text back gives the same values.
    pub fn write_text(&self, out: &mut String) {
        out.push('\n');
        out.push_str(BEGIN_LINE);
        out.push('\n');
        for e in &self.entries {
            match &e.values {
                Values::Scalar(c) => {
                    let _ = write!(out, "{:<40} {:>12}", e.name, value_text(&c.value));
                    let _ = write!(out, " {:>10} {:>10}", pct_text(c.pdf), pct_text(c.cdf));
                }
                Values::Oneline(cells) => {
                    let _ = write!(out, "{:<40}", e.name);
                    for c in cells {
                        let _ = write!(
                            out,
                            " |{:>12} {:>10} {:>10}",
                            value_text(&c.value),
                            pct_text(c.pdf),
                            pct_text(c.cdf)
                        );
                    }
                }
            }
            if !e.desc.is_empty() {
                let _ = write!(out, " # {}", e.desc);
            }
            if !e.unit.is_empty() {
                let _ = write!(out, " ({})", e.unit);
            }
            out.push('\n');
        }
        out.push('\n');
        out.push_str(END_LINE);
        out.push('\n');
    }
}

fn value_text(v: &StatValue) -> String {
    match *v {
        StatValue::Int(i) => i.to_string(),
        StatValue::Float(f) if f.is_nan() => "nan".to_string(),
        StatValue::Float(f) if f.is_infinite() => if f > 0.0 { "inf" } else { "-inf" }.to_string(),
        StatValue::Float(f) => {
            // Rust prints floats without an exponent and with the shortest digits that read
            // back exactly; a `.0` keeps integral floats floats.
            let s = f.to_string();
            if s.contains('.') {
                s
            } else {
                s + ".0"
            }
        }
    }
}

fn pct_text(p: Option<f64>) -> String {
    p.map(|p| format!("{p}%")).unwrap_or_default()
}

/// Every dump of one `stats.txt`.
#[derive(Clone, Debug, Default)]
pub struct StatsFile {
    /// The name errors and messages use for the file.
    pub file: String,
    pub dumps: Vec<Dump>,
}

impl StatsFile {
    /// Reads the file at `path`; unreadable files and invalid UTF-8 are errors naming it.
    pub fn read(path: &Path) -> Result<StatsFile, StatsError> {
        let file = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|e| StatsError::unreadable(&file, format!("cannot read: {e}")))?;
        match std::str::from_utf8(&bytes) {
            Ok(text) => StatsFile::parse(text, &file),
            Err(e) => {
                // Point at the first bad byte: the valid prefix gives its line and column.
                let good = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("");
                let msg = "expected UTF-8 text, found an invalid byte";
                Err(PosError::at(file, good, good.len(), msg).into())
            }
        }
    }

    /// Parses `text`; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<StatsFile, StatsError> {
        let mut dumps = Vec::new();
        let mut open: Option<Dump> = None;
        let mut lineno = 0u32;
        let mut last = "";
        for raw in text.split('\n') {
            lineno = lineno.saturating_add(1);
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            last = line;
            let err = |at: &str, msg: String| -> StatsError {
                PosError::new(file, (lineno, col_of(line, at)), msg).into()
            };
            let parsed = match parse_line(line) {
                Ok((_, l)) => l,
                Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
                    return Err(err(e.at, e.msg.into_owned()))
                }
                Err(nom::Err::Incomplete(_)) => {
                    return Err(err(line, "incomplete line".to_string()))
                }
            };
            match parsed {
                Line::Blank => {}
                Line::Begin => {
                    if let Some(d) = &open {
                        return Err(err(
                            line,
                            format!(
                                "expected `{END_LINE}` closing the dump begun on line {} \
                                 before another Begin",
                                d.begin_line
                            ),
                        ));
                    }
                    open = Some(Dump {
                        begin_line: lineno,
                        ..Dump::default()
                    });
                }
                Line::End => match open.take() {
                    Some(d) => dumps.push(d),
                    None => {
                        return Err(err(
                            line,
                            format!("expected `{BEGIN_LINE}` before an End line"),
                        ))
                    }
                },
                Line::Stat(raw) => {
                    let Some(d) = open.as_mut() else {
                        return Err(err(
                            line,
                            format!("expected `{BEGIN_LINE}` before the first statistic"),
                        ));
                    };
                    d.push(Entry {
                        name: raw.name.to_string(),
                        values: raw.values,
                        desc: raw.desc.to_string(),
                        unit: raw.unit.to_string(),
                        line: lineno,
                    });
                }
            }
        }
        if let Some(d) = open {
            let msg = format!(
                "expected `{END_LINE}` closing the dump begun on line {}, found end of file",
                d.begin_line
            );
            let col = to_u32(last.chars().count() + 1);
            return Err(PosError::new(file, (lineno, col), msg).into());
        }
        Ok(StatsFile {
            file: file.to_string(),
            dumps,
        })
    }

    /// The dump at `index`: from 0 in file order, or from the end when negative (-1 is the
    /// last, gem5's final dump).
    pub fn dump(&self, index: i64) -> Option<&Dump> {
        let n = i64::try_from(self.dumps.len()).ok()?;
        let i = if index < 0 { n + index } else { index };
        usize::try_from(i).ok().and_then(|i| self.dumps.get(i))
    }

    /// The dump at `index` (see [`StatsFile::dump`]) with its position from 0, or a message
    /// naming the file and how many dumps it holds.
    pub fn select(&self, index: i64) -> Result<(usize, &Dump), String> {
        match self.dump(index) {
            Some(d) => {
                let n = self.dumps.len() as i64;
                let at = if index < 0 { n + index } else { index };
                Ok((usize::try_from(at).unwrap_or(0), d))
            }
            None if self.dumps.is_empty() => Err(format!(
                "{}: holds no statistics dump (no `{BEGIN_LINE}` line)",
                self.file
            )),
            None => Err(format!(
                "{}: has no dump {index}: it holds {} (0 to {}, or -1 for the last)",
                self.file,
                self.dumps.len(),
                self.dumps.len() - 1
            )),
        }
    }

    /// The whole file in gem5's layout (see [`Dump::write_text`]).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for d in &self.dumps {
            d.write_text(&mut out);
        }
        out
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The column (from 1, in characters) of `at`, a suffix of `line`.
fn col_of(line: &str, at: &str) -> u32 {
    let off = (at.as_ptr() as usize)
        .wrapping_sub(line.as_ptr() as usize)
        .min(line.len());
    let before = line.get(..off).unwrap_or(line);
    to_u32(before.chars().count() + 1)
}

// ---------------------------------------------------------------------------------------
// Lines (nom)

fn fail<'a, T>(at: &'a str, what: &str) -> PResult<'a, T> {
    Err(nom::Err::Failure(PErr {
        at,
        msg: Cow::Owned(format!("expected {what}, found {}", found(at))),
    }))
}

/// What the input at `i` starts with, for error messages.
fn found(i: &str) -> String {
    let tok: String = i
        .chars()
        .take_while(|c| !c.is_whitespace())
        .take(32)
        .collect();
    if !tok.is_empty() {
        format!("`{tok}`")
    } else {
        match i.chars().next() {
            None => "end of line".to_string(),
            Some(c) => format!("`{}`", c.escape_debug()),
        }
    }
}

/// A statistic line before it gets its line number.
struct RawStat<'a> {
    name: &'a str,
    values: Values,
    desc: &'a str,
    unit: &'a str,
}

enum Line<'a> {
    Blank,
    Begin,
    End,
    Stat(RawStat<'a>),
}

fn parse_line(line: &str) -> PResult<'_, Line<'_>> {
    let (i, _) = space0(line)?;
    if i.is_empty() {
        return Ok((i, Line::Blank));
    }
    if i.starts_with('-') {
        return marker(i);
    }
    let (i, s) = stat(i)?;
    Ok((i, Line::Stat(s)))
}

/// `---------- Begin Simulation Statistics ----------` or its End twin (any run of dashes
/// and spaces, as long as the words are there).
fn marker(i: &str) -> PResult<'_, Line<'_>> {
    const WHAT: &str = "`---------- Begin Simulation Statistics ----------` or its End line";
    let (rest, (_, _, which, _, _, _, _, _, _, _, _)) = tuple((
        dashes,
        space1,
        alt((tag("Begin"), tag("End"))),
        space1,
        tag("Simulation"),
        space1,
        tag("Statistics"),
        space1,
        dashes,
        space0,
        eof,
    ))(i)
    .or_else(|_: nom::Err<PErr<'_>>| fail(i, WHAT))?;
    let l = if which == "Begin" {
        Line::Begin
    } else {
        Line::End
    };
    Ok((rest, l))
}

fn dashes(i: &str) -> PResult<'_, &str> {
    take_while1(|c| c == '-')(i)
}

fn is_name_char(c: char) -> bool {
    !c.is_whitespace() && c != '#' && c != '|'
}

fn stat(i: &str) -> PResult<'_, RawStat<'_>> {
    let Ok((i, name)) = take_while1::<_, _, PErr<'_>>(is_name_char)(i) else {
        return fail(i, "a statistic name");
    };
    let Ok((i, _)) = space1::<_, PErr<'_>>(i) else {
        return fail(i, "a blank after the statistic name");
    };
    let (i, values) = if i.starts_with('|') {
        let (i, cells) = oneline(i)?;
        (i, Values::Oneline(cells))
    } else {
        let (i, cell) = cell(i)?;
        (i, Values::Scalar(cell))
    };
    let (i, _) = space0(i)?;
    let (i, (desc, unit)) = tail(i)?;
    Ok((
        i,
        RawStat {
            name,
            values,
            desc,
            unit,
        },
    ))
}

/// `| v [pdf cdf] | v ...`: one or more groups.
fn oneline(mut i: &str) -> PResult<'_, Vec<Cell>> {
    let mut cells = Vec::new();
    while let Some(rest) = i.strip_prefix('|') {
        let (rest, _) = space0(rest)?;
        let (rest, c) = cell(rest)?;
        let (rest, _) = space0(rest)?;
        cells.push(c);
        i = rest;
    }
    Ok((i, cells))
}

/// A value and up to two percentages (pdf, cdf), blank-separated.
fn cell(i: &str) -> PResult<'_, Cell> {
    let (rest, tok) = token(i)?;
    let Some(value) = number(tok) else {
        return fail(i, "a number (`12`, `-0.5`, `nan`, `inf`)");
    };
    let mut c = Cell::plain(value);
    let mut i = rest;
    for slot in 0..2 {
        let (after_blank, _) = space0(i)?;
        if after_blank.len() == i.len() || after_blank.is_empty() {
            break;
        }
        if after_blank.starts_with(['#', '(', '|']) {
            break;
        }
        let (rest, tok) = token(after_blank)?;
        let Some(p) = percent(tok) else {
            return fail(
                after_blank,
                if slot == 0 {
                    "a percentage (`12.50%`), `# description`, `(unit)` or end of line"
                } else {
                    "a cdf percentage (`12.50%`), `# description`, `(unit)` or end of line"
                },
            );
        };
        if slot == 0 {
            c.pdf = Some(p);
        } else {
            c.cdf = Some(p);
        }
        i = rest;
    }
    Ok((i, c))
}

/// The text up to the next blank.
fn token(i: &str) -> PResult<'_, &str> {
    match take_till1::<_, _, PErr<'_>>(char::is_whitespace)(i) {
        Ok(r) => Ok(r),
        Err(_) => fail(i, "a number"),
    }
}

/// `[+-] (digits [. digits] [e [+-] digits] | nan | inf | infinity)`.
fn number_text(i: &str) -> PResult<'_, &str> {
    recognize(pair(
        opt(one_of("+-")),
        alt((
            tag_no_case("infinity"),
            tag_no_case("inf"),
            tag_no_case("nan"),
            recognize(tuple((
                digit1,
                opt(pair(nchar('.'), digit0)),
                opt(tuple((one_of("eE"), opt(one_of("+-")), digit1))),
            ))),
        )),
    ))(i)
}

/// A whole token as a value: plain digits are an exact integer, anything else a float.
fn number(tok: &str) -> Option<StatValue> {
    all_consuming(number_text)(tok).ok()?;
    if tok.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(v) = tok.parse::<u64>() {
            return Some(StatValue::Int(v));
        }
    }
    tok.parse::<f64>().ok().map(StatValue::Float)
}

/// A whole token `12.50%` as the number 12.5.
fn percent(tok: &str) -> Option<f64> {
    let text = tok.strip_suffix('%')?;
    all_consuming(number_text)(text).ok()?;
    text.parse::<f64>().ok()
}

/// `[# description] [(unit)]` to the end of the line.
fn tail(i: &str) -> PResult<'_, (&str, &str)> {
    if i.is_empty() {
        return Ok((i, ("", "")));
    }
    if let Some(comment) = i.strip_prefix('#') {
        let comment = comment.trim();
        return Ok(match unit_at_end(comment) {
            Some((desc, unit)) => ("", (desc.trim_end(), unit)),
            None => ("", (comment, "")),
        });
    }
    if i.starts_with('(') {
        let text = i.trim_end();
        return match unit_at_end(text) {
            Some(("", unit)) => Ok(("", ("", unit))),
            _ => fail(i, "a unit in balanced parentheses ending the line"),
        };
    }
    fail(i, "`# description`, `(unit)` or end of line")
}

/// Splits `text` into what precedes its last balanced `(...)` group and the group's inside,
/// when the text ends with one.
fn unit_at_end(text: &str) -> Option<(&str, &str)> {
    if !text.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (at, c) in text.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some((&text[..at], &text[at + 1..text.len() - 1]));
                }
            }
            _ => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Globs

/// One piece of a glob pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Piece {
    Lit(char),
    /// `?`: one character other than `.`.
    One,
    /// `*`: any run of characters without `.`.
    Star,
    /// `**`: any run of characters.
    Stars,
}

/// A compiled glob pattern; see [`glob_match`].
#[derive(Clone, Debug)]
pub struct Glob {
    pieces: Vec<Piece>,
    /// The literal text before the first wildcard, checked first.
    prefix: String,
}

impl Glob {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Glob {
        let mut pieces = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            pieces.push(match c {
                '*' if chars.peek() == Some(&'*') => {
                    while chars.peek() == Some(&'*') {
                        chars.next();
                    }
                    Piece::Stars
                }
                '*' => Piece::Star,
                '?' => Piece::One,
                c => Piece::Lit(c),
            });
        }
        let prefix = pieces
            .iter()
            .map_while(|p| match p {
                Piece::Lit(c) => Some(*c),
                _ => None,
            })
            .collect();
        Glob { pieces, prefix }
    }

    /// Whether `name` matches the whole pattern.
    pub fn matches(&self, name: &str) -> bool {
        if !name.starts_with(&self.prefix) {
            return false;
        }
        let name: Vec<char> = name.chars().collect();
        // reach[j]: the pieces so far can match the first j characters of the name.
        let mut reach = vec![false; name.len() + 1];
        reach[0] = true;
        for p in &self.pieces {
            let mut next = vec![false; name.len() + 1];
            match *p {
                Piece::Lit(c) => {
                    for j in 0..name.len() {
                        next[j + 1] = reach[j] && name[j] == c;
                    }
                }
                Piece::One => {
                    for j in 0..name.len() {
                        next[j + 1] = reach[j] && name[j] != '.';
                    }
                }
                Piece::Star | Piece::Stars => {
                    next[0] = reach[0];
                    for j in 0..name.len() {
                        let may_cross = *p == Piece::Stars || name[j] != '.';
                        next[j + 1] = reach[j + 1] || (next[j] && may_cross);
                    }
                }
            }
            reach = next;
        }
        reach[name.len()]
    }
}

/// Whether `name` matches `pattern`, where `*` stands for any run of characters within one
/// dotted part (no `.`), `**` for any run at all and `?` for one character other than `.`;
/// everything else is literal: `system.ruby.l2_cntrl*.L1Dcache.m_demand_misses`.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    Glob::new(pattern).matches(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<StatsFile, StatsError> {
        StatsFile::parse(text, "t.txt")
    }

    fn one(line: &str) -> Entry {
        let f = parse(&format!("{BEGIN_LINE}\n{line}\n{END_LINE}\n")).unwrap();
        f.dumps[0].entries()[0].clone()
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn scalar_forms() {
        let e = one("simTicks                                   123456                       # Number of ticks simulated (Tick)");
        assert_eq!(e.name, "simTicks");
        assert_eq!(
            e.values,
            Values::Scalar(Cell::plain(StatValue::Int(123456)))
        );
        assert_eq!(e.desc, "Number of ticks simulated");
        assert_eq!(e.unit, "Tick");
        assert_eq!(e.line, 2);
        let e = one("hostInstRate 5.5 # Simulator instruction rate (inst/s) ((Count/Second))");
        assert_eq!(e.desc, "Simulator instruction rate (inst/s)");
        assert_eq!(e.unit, "(Count/Second)");
        let e = one("a::3   -7   12.50%   87.50% (Count)");
        assert_eq!(
            e.values,
            Values::Scalar(Cell {
                value: StatValue::Float(-7.0),
                pdf: Some(12.5),
                cdf: Some(87.5),
            })
        );
        assert_eq!((e.desc.as_str(), e.unit.as_str()), ("", "Count"));
        let e = one("x nan");
        assert!(
            matches!(e.values, Values::Scalar(Cell { value: StatValue::Float(f), .. }) if f.is_nan())
        );
        assert_eq!((e.desc.as_str(), e.unit.as_str()), ("", ""));
        for (text, v) in [("inf", f64::INFINITY), ("-inf", f64::NEG_INFINITY)] {
            let e = one(&format!("x {text} # d"));
            assert_eq!(e.values, Values::Scalar(Cell::plain(StatValue::Float(v))));
        }
        let e = one("x 1.5e3 # d (Ratio)");
        assert_eq!(
            e.values,
            Values::Scalar(Cell::plain(StatValue::Float(1500.0)))
        );
    }

    #[test]
    fn oneline_forms() {
        let e = one("system.ruby.L1Cache_Controller.Load     |           3     75.00%     75.00% |           1     25.00%    100.00% (Unspecified)");
        let Values::Oneline(cells) = &e.values else {
            panic!("not oneline: {e:?}")
        };
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[1].value, StatValue::Int(1));
        assert_eq!(cells[1].pdf, Some(25.0));
        assert_eq!(cells[1].cdf, Some(100.0));
        assert_eq!(e.unit, "Unspecified");
        // gem5 without spaces: `|value pdf cdf`, and groups without percentages.
        let e = one("v |4 50.00% 50.00% |4 50.00% 100.00% # both halves (Count)");
        assert!(
            matches!(&e.values, Values::Oneline(c) if c.len() == 2 && c[0].value == StatValue::Int(4))
        );
        assert_eq!(e.desc, "both halves");
        let e = one("v |           0                       |           0                      ");
        assert!(matches!(&e.values, Values::Oneline(c) if c.len() == 2 && c[1].pdf.is_none()));
    }

    #[test]
    fn lookups_and_globs() {
        let text = format!(
            "{BEGIN_LINE}\n\
             system.ruby.l2_cntrl0.L1Dcache.m_demand_misses 10 # m (Count)\n\
             system.ruby.l2_cntrl1.L1Dcache.m_demand_misses 32 # m (Count)\n\
             system.ruby.l2_cntrl1.L1Dcache.extra.m_demand_misses 1000 # nested (Count)\n\
             system.ruby.Ctl.Load | 1 | 2 | 3 (Unspecified)\n\
             system.ruby.Ctl.Load::total 6 (Unspecified)\n\
             \n{END_LINE}\n"
        );
        let f = parse(&text).unwrap();
        let d = f.dump(-1).unwrap();
        assert_eq!(
            d.sum("system.ruby.l2_cntrl*.L1Dcache.m_demand_misses"),
            Some(42.0)
        );
        assert_eq!(
            d.sum("system.ruby.l2_cntrl**.m_demand_misses"),
            Some(1042.0)
        );
        assert_eq!(
            d.max("system.ruby.l2_cntrl?.L1Dcache.m_demand_misses"),
            Some(32.0)
        );
        assert_eq!(d.sum("system.ruby.nothing*"), None);
        assert_eq!(d.value("system.ruby.Ctl.Load::2"), Some(3.0));
        assert_eq!(d.value("system.ruby.Ctl.Load::3"), None);
        assert_eq!(d.value("system.ruby.Ctl.Load"), None);
        assert!(d.entry("system.ruby.Ctl.Load").is_some());
        assert_eq!(d.sum("system.ruby.Ctl.Load::*"), Some(12.0));
        assert_eq!(d.with_prefix("system.ruby.Ctl").len(), 4);
        assert_eq!(d.get("system.ruby.Ctl.Load::1").unwrap().entry.line, 5);
    }

    #[test]
    fn glob_rules() {
        assert!(glob_match("a.b*.c", "a.b12.c"));
        assert!(glob_match("a.b*.c", "a.b.c"));
        assert!(!glob_match("a.b*.c", "a.b1.x.c"));
        assert!(glob_match("a.**.c", "a.b1.x.c"));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "a.c"));
        assert!(!glob_match("abc", "abcd"));
        assert!(glob_match("*", "anything-without-dots"));
        assert!(glob_match("x::*", "x::0-7"));
    }

    #[test]
    fn dumps_and_selection() {
        let text = format!("\n{BEGIN_LINE}\na 1\n\n{END_LINE}\n\n{BEGIN_LINE}\na 2\n{END_LINE}\n");
        let f = parse(&text).unwrap();
        assert_eq!(f.dumps.len(), 2);
        assert_eq!(f.dump(0).unwrap().value("a"), Some(1.0));
        assert_eq!(f.dump(-1).unwrap().value("a"), Some(2.0));
        assert_eq!(f.dump(1).unwrap().begin_line, 7);
        assert!(f.dump(2).is_none());
        assert!(f.dump(-3).is_none());
        assert_eq!(f.select(-1).unwrap().0, 1);
        assert!(f
            .select(5)
            .unwrap_err()
            .contains("t.txt: has no dump 5: it holds 2"));
        let empty = parse("\n\n").unwrap();
        assert!(empty
            .select(-1)
            .unwrap_err()
            .contains("holds no statistics dump"));
    }

    #[test]
    fn duplicates_keep_the_first_and_count_once() {
        let f = parse(&format!("{BEGIN_LINE}\na 1\na 5\nb 2\n{END_LINE}\n")).unwrap();
        let d = &f.dumps[0];
        assert_eq!(d.entries().len(), 3);
        assert_eq!(d.value("a"), Some(1.0));
        assert_eq!(d.sum("*"), Some(3.0));
    }

    #[test]
    fn errors_name_line_and_column() {
        assert_eq!(
            err("a 1\n"),
            format!("t.txt:1:1: expected `{BEGIN_LINE}` before the first statistic")
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\nsim.x 12abc # d\n")),
            "t.txt:2:7: expected a number (`12`, `-0.5`, `nan`, `inf`), found `12abc`"
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\nsim.x\n")),
            "t.txt:2:6: expected a blank after the statistic name, found end of line"
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\nsim.x 1 7 # d\n")),
            "t.txt:2:9: expected a percentage (`12.50%`), `# description`, `(unit)` or end of line, found `7`"
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\n  v | 1 | x\n")),
            "t.txt:2:11: expected a number (`12`, `-0.5`, `nan`, `inf`), found `x`"
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\nv 1 (Count\n")),
            "t.txt:2:5: expected a unit in balanced parentheses ending the line, found `(Count`"
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\na 1\n")),
            format!("t.txt:3:1: expected `{END_LINE}` closing the dump begun on line 1, found end of file")
        );
        assert_eq!(
            err(&format!("{BEGIN_LINE}\n{BEGIN_LINE}\n")),
            format!("t.txt:2:1: expected `{END_LINE}` closing the dump begun on line 1 before another Begin")
        );
        assert_eq!(
            err("---------- Begin Simulation Stats ----------\n"),
            "t.txt:1:1: expected `---------- Begin Simulation Statistics ----------` or its End line, found `----------`"
        );
        assert_eq!(
            err(&format!("{END_LINE}\n")),
            format!("t.txt:1:1: expected `{BEGIN_LINE}` before an End line")
        );
        // Columns count characters, not bytes.
        assert_eq!(
            err(&format!("{BEGIN_LINE}\nnäme x\n")),
            "t.txt:2:6: expected a number (`12`, `-0.5`, `nan`, `inf`), found `x`"
        );
    }

    #[test]
    fn invalid_utf8_and_missing_files() {
        let dir = std::env::temp_dir().join(format!("moped-gem5-stats-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("stats.txt");
        std::fs::write(&p, b"\nab\xffc\n").unwrap();
        let e = StatsFile::read(&p).unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(e
            .to_string()
            .ends_with("expected UTF-8 text, found an invalid byte"));
        let e = StatsFile::read(&dir.join("none.txt")).unwrap_err();
        assert!(e.to_string().contains("none.txt: cannot read"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn gem5_distribution_blocks_read_back() {
        let f = parse(crate::stats::tests::GEM5_DISTRIBUTIONS).unwrap();
        let d = f.dump(-1).unwrap();
        let q = d.distribution("system.mem_ctrl.readQueueLatency").unwrap();
        assert_eq!(q.samples.value, StatValue::Int(10));
        assert_eq!(q.mean.value, StatValue::Float(51.5));
        assert_eq!(q.stdev.value, StatValue::Float(44.415338));
        assert_eq!(
            (
                q.underflows.value.clone(),
                q.underflows.pdf,
                q.underflows.cdf
            ),
            (StatValue::Int(1), Some(10.0), Some(10.0))
        );
        let buckets: Vec<(&str, f64, f64, u64, f64, f64)> = q
            .buckets
            .iter()
            .map(|b| {
                let v = b.cell.value.as_f64() as u64;
                (
                    b.label.as_str(),
                    b.lo,
                    b.hi,
                    v,
                    b.cell.pdf.unwrap(),
                    b.cell.cdf.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            buckets,
            [
                ("10-34", 10.0, 34.0, 3, 30.0, 40.0),
                ("35-59", 35.0, 59.0, 2, 20.0, 60.0),
                ("60-84", 60.0, 84.0, 2, 20.0, 80.0),
                ("85-99", 85.0, 99.0, 1, 10.0, 90.0),
            ]
        );
        assert_eq!(q.overflows.cdf, Some(100.0));
        assert_eq!(q.min_value.value, StatValue::Int(3));
        assert_eq!(q.max_value.value, StatValue::Int(150));
        assert_eq!(q.total.value, StatValue::Int(10));
        assert_eq!(
            (q.desc.as_str(), q.unit.as_str()),
            ("Cycles a read waited in the queue", "Tick")
        );
        let one = d.distribution("system.cpu.iew.issuedPerCycle").unwrap();
        let labels: Vec<&str> = one.buckets.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(labels, ["0", "1", "2", "3", "4"]);
        assert_eq!((one.buckets[4].lo, one.buckets[4].hi), (4.0, 4.0));
        let empty = d.distribution("system.cpu.iew.stallWidth").unwrap();
        assert!(matches!(empty.mean.value, StatValue::Float(m) if m.is_nan()));
        assert!(empty
            .buckets
            .iter()
            .all(|b| b.cell.pdf.is_none() && b.cell.cdf.is_none()));
        assert_eq!(empty.max_value.value, StatValue::Int(0));
        let age = d.distribution("system.l2.lineAge").unwrap();
        assert_eq!((age.buckets[1].lo, age.buckets[1].hi), (1e6, 2e6));
        assert_eq!(age.mean.value, StatValue::Int(1_500_001));
        assert!(d.distribution("simTicks").is_none());
        assert!(d.distribution("system.cpu").is_none());
    }

    #[test]
    fn written_distributions_read_back_field_by_field() {
        let mut r = crate::stats::StatsRegistry::new();
        let mut a = crate::stats::Distribution::new(-4, 11, 4).unwrap();
        for v in [-9, -4, 0, 3, 3, 7, 11, 12, 40] {
            a.sample(v);
        }
        let mut b = crate::stats::Distribution::new(0, 2, 1).unwrap();
        b.sample_n(1, 7);
        b.sample_n(2, 1);
        r.scalar("sim.cycles", 99, "Cycles", "Cycle");
        r.dist("net.hops", &a, "Hops per message", "Count");
        r.float("sim.rate", 0.25, "Rate", "Ratio");
        r.dist("q.depth", &b, "Queue depth", "Count");
        let mut out = Vec::new();
        r.write_stats_txt(&mut out).unwrap();
        let f = parse(&String::from_utf8(out).unwrap()).unwrap();
        let d = f.dump(-1).unwrap();
        assert_eq!(d.value("sim.cycles"), Some(99.0));
        assert_eq!(d.value("sim.rate"), Some(0.25));
        for (name, dist) in [("net.hops", &a), ("q.depth", &b)] {
            let got = d.distribution(name).unwrap();
            let want = dist.lines();
            let mut cells = vec![&got.samples, &got.mean, &got.stdev, &got.underflows];
            cells.extend(got.buckets.iter().map(|b| &b.cell));
            cells.extend([&got.overflows, &got.min_value, &got.max_value, &got.total]);
            assert_eq!(cells.len(), want.len());
            for (c, w) in cells.iter().zip(&want) {
                let (x, y) = (c.value.as_f64(), w.value.as_f64());
                assert!(
                    x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() < 1e-6,
                    "{name}::{}",
                    w.field
                );
                let round = |p: Option<f64>| p.map(|p| (p * 100.0).round() / 100.0);
                assert_eq!(
                    (c.pdf, c.cdf),
                    (round(w.pdf), round(w.cdf)),
                    "{name}::{}",
                    w.field
                );
            }
            for (i, bucket) in got.buckets.iter().enumerate() {
                assert_eq!(bucket.label, dist.bucket_label(i));
                let (lo, hi) = dist.bucket_range(i);
                assert_eq!((bucket.lo, bucket.hi), (lo as f64, hi as f64));
            }
            assert_eq!(
                (got.desc.as_str(), got.unit.as_str()),
                (r.get(name).unwrap().desc.as_str(), "Count")
            );
        }
        assert_eq!(d.value("net.hops::-4--1"), Some(1.0));
        assert_eq!(d.value("q.depth::1"), Some(7.0));
    }

    #[test]
    fn bucket_labels_parse() {
        assert_eq!(bucket_bounds("0-3"), Some((0.0, 3.0)));
        assert_eq!(bucket_bounds("7"), Some((7.0, 7.0)));
        assert_eq!(bucket_bounds("-8--5"), Some((-8.0, -5.0)));
        assert_eq!(bucket_bounds("-1"), Some((-1.0, -1.0)));
        assert_eq!(bucket_bounds("1e+06-2e+06"), Some((1e6, 2e6)));
        assert_eq!(bucket_bounds("1.5-2.5"), Some((1.5, 2.5)));
        for bad in ["", "samples", "1-", "1-x", "1--", "1-2-3"] {
            assert_eq!(bucket_bounds(bad), None, "{bad}");
        }
    }

    #[test]
    fn written_text_reads_back() {
        let mut d = Dump::new();
        d.push(Entry {
            name: "a".into(),
            values: Values::Scalar(Cell::plain(StatValue::Float(3.0))),
            desc: "three".into(),
            unit: "Count".into(),
            line: 0,
        });
        d.push(Entry {
            name: "b".into(),
            values: Values::Oneline(vec![
                Cell {
                    value: StatValue::Int(1),
                    pdf: Some(50.0),
                    cdf: Some(50.0),
                },
                Cell::plain(StatValue::Float(f64::NEG_INFINITY)),
            ]),
            desc: String::new(),
            unit: "(Count/Second)".into(),
            line: 0,
        });
        let f = StatsFile {
            file: "w".into(),
            dumps: vec![d],
        };
        let text = f.to_text();
        assert!(
            text.contains(&format!("{:<40} {:>12}", "a", "3.0")),
            "{text}"
        );
        let back = StatsFile::parse(&text, "w").unwrap();
        let e = back.dumps[0].entries();
        assert_eq!(
            e[0].values,
            Values::Scalar(Cell::plain(StatValue::Float(3.0)))
        );
        assert_eq!(e[1].unit, "(Count/Second)");
        assert_eq!(e[1].values, f.dumps[0].entries()[1].values);
    }
}
