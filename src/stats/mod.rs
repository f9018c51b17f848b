//! Statistics registry and its three output formats.
//!
//! Every component registers its end-of-run numbers into one [`StatsRegistry`]
//! under dotted names (`system.cpu0.l1d.hits`). The registry keeps insertion
//! order and writes the same list three ways:
//!
//! * `stats.txt`: gem5's text format (see [`StatsRegistry::write_stats_txt`]);
//! * `stats.json`: `{"format": "moped-stats-1", "stats": [...], "tree": {...}}`
//!   (see [`StatsRegistry::to_json`]);
//! * `stats.csv`: `name,value,unit,description` with RFC-4180 quoting.
//!
//! Integers are exact in all three. Floats are written with full (shortest
//! round-trip) precision in JSON and CSV and with 6 decimals in `stats.txt`,
//! as gem5 does. Non-finite floats become `null` in JSON.
//!
//! A [`Distribution`] (gem5's `Distribution`, registered with [`StatsRegistry::dist`]) is
//! one statistic that prints as several lines, the same in all three files
//! ([`StatsRegistry::rows`]): `name::samples`, `name::mean`, `name::stdev`,
//! `name::underflows`, one `name::lo-hi` per bucket (`name::lo` for a bucket of one
//! value), `name::overflows`, `name::min_value`, `name::max_value` and `name::total`, each
//! with the distribution's description and unit. `stats.txt` lays them out as gem5 v24
//! does: numbers as gem5 prints them (`nan` for the mean and deviation without samples, a
//! whole mean without decimals) and, on the under- and overflow and bucket lines, the pdf
//! and cdf columns (blank while the total is 0). `stats.csv` has one row per line
//! (without pdf and cdf: they follow from the counts); the flat `stats` list of
//! `stats.json` has one entry per line too, while its `tree` holds the whole distribution
//! as one object under its name (see [`Distribution::to_json`]). A distribution's `value`
//! in the registry is its sample count; the distribution itself is its
//! [`Accrual::Distribution`].
//!
//! Units use gem5's spelling: `Count`, `Cycle`, `Byte`, `Tick`, `Second`,
//! `Ratio`, `Byte/Cycle`, ... An empty unit is stored as `Unspecified`.

mod dist;
pub mod gem5;
pub mod gem5_config;
mod region;

pub use dist::{DistError, DistLine, Distribution, MAX_BUCKETS};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;

/// Identifier of the JSON layout written by [`StatsRegistry::to_json`].
pub const JSON_FORMAT: &str = "moped-stats-1";

/// Key used in the JSON tree for a value whose name is also a prefix of
/// other names (`a.b` and `a.b.c` give `tree.a.b._value` and `tree.a.b.c`).
pub const TREE_SELF_KEY: &str = "_value";

const BEGIN_LINE: &str = "---------- Begin Simulation Statistics ----------";
const END_LINE: &str = "---------- End Simulation Statistics   ----------";

/// A statistic's value: an exact counter or a derived floating-point number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatValue {
    Int(u64),
    Float(f64),
}

impl StatValue {
    /// The value as `f64` (counters above 2^53 lose precision).
    pub fn as_f64(&self) -> f64 {
        match *self {
            StatValue::Int(v) => v as f64,
            StatValue::Float(v) => v,
        }
    }

    /// Parse a value as written in `stats.txt` or `stats.csv`: a plain
    /// run of digits is an `Int`, anything else that parses as `f64`
    /// (`1.5`, `3.0`, `1e-7`, `inf`, `NaN`) is a `Float`.
    pub fn parse(s: &str) -> Option<StatValue> {
        let s = s.trim();
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().ok().map(StatValue::Int);
        }
        s.parse().ok().map(StatValue::Float)
    }

    /// Text used in CSV: integers plain, floats with shortest round-trip
    /// digits and always a `.`/exponent so they read back as floats.
    fn csv_text(&self) -> String {
        match *self {
            StatValue::Int(v) => v.to_string(),
            StatValue::Float(v) => format!("{v:?}"),
        }
    }
}

impl fmt::Display for StatValue {
    /// gem5 style: integers plain, floats with 6 decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            StatValue::Int(v) => write!(f, "{v}"),
            StatValue::Float(v) => write!(f, "{v:.6}"),
        }
    }
}

/// A sum of counters is a counter; a sum with a float in it is a float.
impl std::iter::Sum for StatValue {
    fn sum<I: Iterator<Item = StatValue>>(iter: I) -> StatValue {
        iter.fold(StatValue::Int(0), |a, b| match (a, b) {
            (StatValue::Int(x), StatValue::Int(y)) => StatValue::Int(x + y),
            (x, y) => StatValue::Float(x.as_f64() + y.as_f64()),
        })
    }
}

impl From<u64> for StatValue {
    fn from(v: u64) -> StatValue {
        StatValue::Int(v)
    }
}

impl From<f64> for StatValue {
    fn from(v: f64) -> StatValue {
        StatValue::Float(v)
    }
}

/// One row of a declarative table of statistics: the name under the prefix the table is
/// registered with, the description, the unit, and how to read the value from a `S` (the
/// component's counters). Tables are written with `stat_table!` and
/// registered with [`StatsRegistry::table`] or [`StatsRegistry::table_sums`].
pub struct StatDef<S> {
    pub name: &'static str,
    pub desc: &'static str,
    pub unit: &'static str,
    pub get: fn(&S) -> StatValue,
    /// A high-water mark or a setting ([`Accrual::Level`]) rather than a counter.
    pub level: bool,
}

/// A `&[StatDef<S>]`, one row a statistic: `"name" => field.path, "Unit", "description";`
/// reads the statistic as that field of the `S` (an integer or a float), a counter; a row
/// ending `..., "description", level;` is an [`Accrual::Level`].
macro_rules! stat_table {
    ($S:ty { $($name:literal => $($field:ident).+, $unit:literal, $desc:literal $(, $kind:ident)?;)* }) => {
        &[$($crate::stats::StatDef::<$S> {
            name: $name,
            desc: $desc,
            unit: $unit,
            get: |s| $crate::stats::StatValue::from(s.$($field).+),
            level: $crate::stats::stat_table!(@level $($kind)?),
        },)*]
    };
    (@level) => { false };
    (@level level) => { true };
}
pub(crate) use stat_table;

/// How a statistic accrues over a run, which gives its value over a part of the run
/// (the timed region: [`StatsRegistry::since`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Accrual {
    /// Grows with the run (events, misses, cycles, bytes): a region's value is the end's
    /// less the start's.
    Counter,
    /// A high-water mark or a setting (the longest search, the number of ranks): the
    /// whole run's value stands.
    Level,
    /// `num / den` of two growing quantities kept with it (an average latency, a link's
    /// utilization): a region's value is the ratio of their growth.
    Ratio { num: f64, den: f64 },
    /// A distribution, whose value is its sample count: a region's distribution is the
    /// growth of every count, the sum and the squares, its smallest and largest value the
    /// whole run's (as a level's).
    Distribution(Box<Distribution>),
}

/// One named statistic.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    pub name: String,
    pub value: StatValue,
    pub desc: String,
    pub unit: String,
    pub accrual: Accrual,
}

/// An ordered collection of statistics with unique names.
#[derive(Default, Debug, Clone)]
pub struct StatsRegistry {
    stats: Vec<Stat>,
    index: FxHashMap<String, usize>,
}

/// Tuple returned by the parsers: `(name, value, description, unit)`.
pub type ParsedStat = (String, StatValue, String, String);

/// One written line: a statistic, or one field or bucket of a distribution (`name::mean`,
/// `name::0-3`) with its pdf and cdf in percent where gem5 prints them.
#[derive(Clone, Debug, PartialEq)]
pub struct Row<'a> {
    pub name: Cow<'a, str>,
    pub value: StatValue,
    pub pdf: Option<f64>,
    pub cdf: Option<f64>,
    pub desc: &'a str,
    pub unit: &'a str,
    /// A distribution's line, whose numbers `stats.txt` prints as gem5 prints them.
    pub of_dist: bool,
}

impl Row<'_> {
    /// The value as `stats.txt` prints it.
    fn txt_value(&self) -> String {
        if self.of_dist {
            dist::gem5_number(&self.value)
        } else {
            self.value.to_string()
        }
    }
}

fn pct_text(p: Option<f64>) -> String {
    p.map_or(String::new(), |p| format!("{p:.2}%"))
}

fn clean_text(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect()
}

impl StatsRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, name: String, value: StatValue, desc: &str, unit: &str) {
        self.push_as(name, value, desc, unit, Accrual::Counter);
    }

    fn push_as(
        &mut self,
        name: String,
        value: StatValue,
        desc: &str,
        unit: &str,
        accrual: Accrual,
    ) {
        debug_assert!(
            !name.is_empty() && !name.chars().any(char::is_whitespace),
            "stat name must be non-empty and contain no whitespace: {name:?}"
        );
        debug_assert!(
            !self.index.contains_key(&name),
            "duplicate stat name {name:?}"
        );
        let unit = if unit.trim().is_empty() {
            "Unspecified".to_string()
        } else {
            clean_text(unit)
        };
        self.index.insert(name.clone(), self.stats.len());
        self.stats.push(Stat {
            name,
            value,
            desc: clean_text(desc),
            unit,
            accrual,
        });
    }

    /// Register an integer counter.
    pub fn scalar(&mut self, name: impl Into<String>, value: u64, desc: &str, unit: &str) {
        self.push(name.into(), StatValue::Int(value), desc, unit);
    }

    /// Register a floating-point value (ratios, averages, rates).
    pub fn float(&mut self, name: impl Into<String>, value: f64, desc: &str, unit: &str) {
        self.push(name.into(), StatValue::Float(value), desc, unit);
    }

    /// Register a value of either kind.
    pub fn value(&mut self, name: impl Into<String>, value: StatValue, desc: &str, unit: &str) {
        self.push(name.into(), value, desc, unit);
    }

    /// Register a high-water mark or a setting ([`Accrual::Level`]).
    pub fn level(&mut self, name: impl Into<String>, value: u64, desc: &str, unit: &str) {
        self.push_as(
            name.into(),
            StatValue::Int(value),
            desc,
            unit,
            Accrual::Level,
        );
    }

    /// Register `num / den` (0 when `den` is 0), a [`Accrual::Ratio`].
    pub fn ratio(&mut self, name: impl Into<String>, num: f64, den: f64, desc: &str, unit: &str) {
        let value = if den > 0.0 { num / den } else { 0.0 };
        let accrual = Accrual::Ratio { num, den };
        self.push_as(name.into(), StatValue::Float(value), desc, unit, accrual);
    }

    /// Register a distribution ([`Accrual::Distribution`]), printed as gem5 prints one (see
    /// the module documentation); its value is its sample count.
    pub fn dist(&mut self, name: impl Into<String>, d: &Distribution, desc: &str, unit: &str) {
        let value = StatValue::Int(d.samples());
        let accrual = Accrual::Distribution(Box::new(d.clone()));
        self.push_as(name.into(), value, desc, unit, accrual);
    }

    /// Register each statistic of `table` read from `src`, as `prefix.name` (`name` when
    /// `prefix` is empty), in table order.
    pub fn table<S>(&mut self, prefix: &str, table: &[StatDef<S>], src: &S) {
        for d in table {
            let accrual = if d.level {
                Accrual::Level
            } else {
                Accrual::Counter
            };
            self.push_as(
                full_name(prefix, d.name),
                (d.get)(src),
                d.desc,
                d.unit,
                accrual,
            );
        }
    }

    /// Register each statistic of `table` summed over `srcs`, as `prefix.name`, in table
    /// order.
    pub fn table_sums<S>(&mut self, prefix: &str, table: &[StatDef<S>], srcs: &[S]) {
        for d in table {
            self.row(full_name(prefix, d.name), d, srcs.iter().map(d.get));
        }
    }

    /// Register row `d` of a table under `name`, combining `values`: their sum for a
    /// counter, their largest for a level (the longest search of any MOPED).
    pub fn row<S>(
        &mut self,
        name: String,
        d: &StatDef<S>,
        values: impl Iterator<Item = StatValue>,
    ) {
        if d.level {
            let top = values.fold(StatValue::Int(0), |a, b| {
                if b.as_f64() > a.as_f64() {
                    b
                } else {
                    a
                }
            });
            self.push_as(name, top, d.desc, d.unit, Accrual::Level);
        } else {
            self.push(name, values.sum(), d.desc, d.unit);
        }
    }

    /// Look a statistic up by its full name.
    pub fn get(&self, name: &str) -> Option<&Stat> {
        self.index.get(name).map(|&i| &self.stats[i])
    }

    /// The distribution registered as `name`, if it is one.
    pub fn distribution(&self, name: &str) -> Option<&Distribution> {
        match &self.get(name)?.accrual {
            Accrual::Distribution(d) => Some(d),
            _ => None,
        }
    }

    /// All statistics in insertion order.
    pub fn stats(&self) -> &[Stat] {
        &self.stats
    }

    /// Every written line in order: each statistic, a distribution expanded into its
    /// lines (`name::samples`, ...). The three files hold these.
    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.stats.iter().flat_map(|s| {
            let (own, lines) = match &s.accrual {
                Accrual::Distribution(d) => (None, d.lines()),
                _ => (Some(stat_row(s)), Vec::new()),
            };
            own.into_iter()
                .chain(lines.into_iter().map(move |l| dist_row(s, l)))
        })
    }

    /// Number of statistics.
    pub fn len(&self) -> usize {
        self.stats.len()
    }

    /// True when nothing has been registered.
    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }

    /// Write gem5's `stats.txt` layout: an empty line and the begin marker
    /// (as gem5 writes them), one line per row
    /// (`name` left-justified to 40 columns, a space, the value
    /// right-justified to 12, the pdf and cdf in 10 columns each (blank
    /// but for distributions), then ` # description (Unit)`), a blank line
    /// and an end marker.
    pub fn write_stats_txt(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(w)?;
        writeln!(w, "{BEGIN_LINE}")?;
        for r in self.rows() {
            writeln!(
                w,
                "{:<40} {:>12} {:>10} {:>10} # {} ({})",
                r.name,
                r.txt_value(),
                pct_text(r.pdf),
                pct_text(r.cdf),
                r.desc,
                r.unit
            )?;
        }
        writeln!(w)?;
        writeln!(w, "{END_LINE}")?;
        Ok(())
    }

    /// The JSON document: `format`, a flat `stats` array of
    /// `{name, value, unit, desc}`, one per row ([`StatsRegistry::rows`]) in
    /// order, and a `tree` nesting values by the `.`-separated parts of their
    /// names, a distribution as one object ([`Distribution::to_json`]). A name
    /// that is both a value and a prefix of other names keeps its value under
    /// [`TREE_SELF_KEY`] (`"_value"`) inside its object.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let flat: Vec<Value> = self
            .rows()
            .map(|r| {
                json!({
                    "name": r.name,
                    "value": value_json(&r.value),
                    "unit": r.unit,
                    "desc": r.desc,
                })
            })
            .collect();
        let mut tree = Map::new();
        // Distributions are objects, which the nesting would take for namespaces: they go
        // in once every namespace is there.
        for s in &self.stats {
            insert_tree(&mut tree, &s.name, value_json(&s.value));
        }
        for s in &self.stats {
            if let Accrual::Distribution(d) = &s.accrual {
                insert_tree(&mut tree, &s.name, d.to_json());
            }
        }
        json!({ "format": JSON_FORMAT, "stats": flat, "tree": Value::Object(tree) })
    }

    /// Write `stats.csv`: header `name,value,unit,description`, one row per
    /// row of [`StatsRegistry::rows`], fields quoted per RFC 4180 when they
    /// contain `,`, `"` or a line break. Rows end with CRLF as the RFC asks.
    pub fn write_csv(&self, w: &mut impl Write) -> io::Result<()> {
        let mut out = csv::WriterBuilder::new()
            .terminator(csv::Terminator::CRLF)
            .from_writer(w);
        out.write_record(["name", "value", "unit", "description"])?;
        for r in self.rows() {
            out.write_record([&*r.name, &r.value.csv_text(), r.unit, r.desc])?;
        }
        out.flush()
    }

    /// Write `stats.txt`, `stats.json` and `stats.csv` into `dir` (created if
    /// missing).
    pub fn write_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut txt = io::BufWriter::new(std::fs::File::create(dir.join("stats.txt"))?);
        self.write_stats_txt(&mut txt)?;
        txt.flush()?;
        let mut js = io::BufWriter::new(std::fs::File::create(dir.join("stats.json"))?);
        serde_json::to_writer_pretty(&mut js, &self.to_json()).map_err(io::Error::other)?;
        writeln!(js)?;
        js.flush()?;
        let mut csv = io::BufWriter::new(std::fs::File::create(dir.join("stats.csv"))?);
        self.write_csv(&mut csv)?;
        csv.flush()
    }
}

fn stat_row(s: &Stat) -> Row<'_> {
    Row {
        name: Cow::Borrowed(&s.name),
        value: s.value.clone(),
        pdf: None,
        cdf: None,
        desc: &s.desc,
        unit: &s.unit,
        of_dist: false,
    }
}

fn dist_row(s: &Stat, line: DistLine) -> Row<'_> {
    Row {
        name: Cow::Owned(format!("{}::{}", s.name, line.field)),
        value: line.value,
        pdf: line.pdf,
        cdf: line.cdf,
        desc: &s.desc,
        unit: &s.unit,
        of_dist: true,
    }
}

fn full_name(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

fn value_json(v: &StatValue) -> serde_json::Value {
    match *v {
        StatValue::Int(i) => serde_json::Value::from(i),
        StatValue::Float(f) => serde_json::Value::from(f),
    }
}

fn insert_tree(
    root: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
    value: serde_json::Value,
) {
    use serde_json::{Map, Value};
    let parts: Vec<&str> = name.split('.').collect();
    let (last, inner) = parts.split_last().expect("split yields at least one part");
    let mut node = root;
    for part in inner {
        let slot = node
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            let leaf = std::mem::replace(slot, Value::Object(Map::new()));
            slot.as_object_mut()
                .expect("just made an object")
                .insert(TREE_SELF_KEY.to_string(), leaf);
        }
        node = slot.as_object_mut().expect("checked object");
    }
    match node.get_mut(*last) {
        Some(Value::Object(m)) => {
            m.insert(TREE_SELF_KEY.to_string(), value);
        }
        _ => {
            node.insert(last.to_string(), value);
        }
    }
}

/// Read back a `stats.txt` written by [`StatsRegistry::write_stats_txt`] (or gem5): the
/// values of its last dump, `oneline` vectors' elements as `name::i`, each with its
/// description and unit. Errors name `stats.txt:line:col`; [`gem5::StatsFile`] reads
/// every dump and names the real file.
pub fn parse_stats_txt(text: &str) -> Result<Vec<ParsedStat>, String> {
    let file = gem5::StatsFile::parse(text, "stats.txt").map_err(|e| e.to_string())?;
    let (_, dump) = file.select(-1)?;
    Ok(dump
        .values()
        .map(|f| {
            (
                f.name.into_owned(),
                f.cell.value.clone(),
                f.entry.desc.clone(),
                f.entry.unit.clone(),
            )
        })
        .collect())
}

/// Read back a `stats.csv` written by [`StatsRegistry::write_csv`].
pub fn parse_stats_csv(text: &str) -> Result<Vec<ParsedStat>, String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(false)
        // Rows of the wrong length are reported below, with their number.
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut records = rd.records().map(|r| {
        r.map(|r| r.iter().map(str::to_string).collect::<Vec<String>>())
            .map_err(|e| e.to_string())
    });
    match records.next().transpose()? {
        Some(h) if h == ["name", "value", "unit", "description"] => {}
        Some(h) => return Err(format!("unexpected CSV header {h:?}")),
        None => return Err("empty CSV".to_string()),
    }
    let mut out = Vec::new();
    for (i, rec) in records.enumerate() {
        let rec = rec?;
        if rec.len() == 1 && rec[0].is_empty() {
            continue;
        }
        let [name, value, unit, desc]: [String; 4] = rec.try_into().map_err(|r: Vec<String>| {
            format!("record {}: {} fields, expected 4", i + 2, r.len())
        })?;
        let v = StatValue::parse(&value)
            .ok_or_else(|| format!("record {}: bad value {value:?}", i + 2))?;
        out.push((name, v, desc, unit));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StatsRegistry {
        let mut r = StatsRegistry::new();
        r.scalar("sim_cycles", 123456, "Number of cycles simulated", "Cycle");
        r.float("sim_seconds", 0.000123456, "Simulated seconds", "Second");
        r.scalar("system.cpu0.l1d", 7, "Leaf that is also a prefix", "Count");
        r.scalar("system.cpu0.l1d.hits", 1000, "L1D hits", "Count");
        r.scalar("system.cpu0.l1d.misses", 24, "L1D misses", "Count");
        r.float(
            "system.cpu0.l1d.miss_rate",
            24.0 / 1024.0,
            "Miss rate, \"demand\" accesses",
            "Ratio",
        );
        r.float("system.network.bw", 3.0, "Bandwidth", "Byte/Cycle");
        r.float("system.tiny", 1e-9, "tiny, with comma", "");
        r.scalar("system.big", u64::MAX, "Largest counter", "Count");
        r
    }

    fn same(a: &[ParsedStat], r: &StatsRegistry) {
        assert_eq!(a.len(), r.stats().len());
        for (p, s) in a.iter().zip(r.stats()) {
            assert_eq!(p.0, s.name);
            assert_eq!(p.2, s.desc, "desc of {}", s.name);
            assert_eq!(p.3, s.unit, "unit of {}", s.name);
            match (&p.1, &s.value) {
                (StatValue::Int(x), StatValue::Int(y)) => assert_eq!(x, y),
                (StatValue::Float(x), StatValue::Float(y)) => {
                    assert!(
                        (x - y).abs() <= 1e-6 * y.abs().max(1.0),
                        "{} {x} {y}",
                        s.name
                    )
                }
                (x, y) => panic!("kind mismatch for {}: {x:?} vs {y:?}", s.name),
            }
        }
    }

    #[test]
    fn three_formats_agree() {
        let r = sample();
        let mut txt = Vec::new();
        r.write_stats_txt(&mut txt).unwrap();
        let txt = String::from_utf8(txt).unwrap();
        same(&parse_stats_txt(&txt).unwrap(), &r);

        let mut csv = Vec::new();
        r.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        let parsed = parse_stats_csv(&csv).unwrap();
        same(&parsed, &r);
        // CSV keeps full precision.
        for (p, s) in parsed.iter().zip(r.stats()) {
            assert_eq!(p.1, s.value);
        }

        let js = r.to_json();
        assert_eq!(js["format"], JSON_FORMAT);
        let arr = js["stats"].as_array().unwrap();
        let from_json: Vec<ParsedStat> = arr
            .iter()
            .map(|o| {
                (
                    o["name"].as_str().unwrap().to_string(),
                    serde_json::from_value::<StatValue>(o["value"].clone()).unwrap(),
                    o["desc"].as_str().unwrap().to_string(),
                    o["unit"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        same(&from_json, &r);
        for (p, s) in from_json.iter().zip(r.stats()) {
            assert_eq!(p.1, s.value);
        }
    }

    #[test]
    fn json_tree_nesting() {
        let js = sample().to_json();
        let t = &js["tree"];
        assert_eq!(t["sim_cycles"], 123456);
        assert_eq!(t["system"]["cpu0"]["l1d"]["hits"], 1000);
        assert_eq!(t["system"]["cpu0"]["l1d"][TREE_SELF_KEY], 7);
        // Prefix registered before its leaf is handled too.
        let mut r = StatsRegistry::new();
        r.scalar("a.b.c", 1, "", "Count");
        r.scalar("a.b", 2, "", "Count");
        let t = r.to_json()["tree"].clone();
        assert_eq!(t["a"]["b"]["c"], 1);
        assert_eq!(t["a"]["b"][TREE_SELF_KEY], 2);
    }

    #[test]
    fn txt_column_widths() {
        let mut r = StatsRegistry::new();
        r.scalar("sim_ticks", 42, "Number of ticks simulated", "Tick");
        r.float(
            "host_seconds",
            1.5,
            "Real time elapsed on the host",
            "Second",
        );
        let mut out = Vec::new();
        r.write_stats_txt(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], BEGIN_LINE);
        let l = lines[2];
        assert_eq!(&l[..40], format!("{:<40}", "sim_ticks"));
        assert_eq!(&l[40..41], " ");
        assert_eq!(&l[41..53], format!("{:>12}", "42"));
        assert_eq!(&l[53..75], " ".repeat(22));
        assert_eq!(&l[75..], " # Number of ticks simulated (Tick)");
        assert_eq!(&lines[3][41..53], "    1.500000");
        assert_eq!(lines[4], "");
        assert_eq!(lines[5], END_LINE);
    }

    fn awkward() -> StatsRegistry {
        let mut r = sample();
        r.scalar("q", 1, "say \"hi\", then \"\"", "a,b");
        r.scalar("e", 0, "", "");
        r.scalar("u", 2, "héllo, wörld ∑", "Count/Second");
        r.scalar("line", 3, "one\ntwo\r\nthree\rfour", "Count");
        r.scalar("lead", 4, " spaced ,", " ");
        r.scalar("hash", 5, "#not a comment", "#");
        for (i, v) in [
            0.1,
            1e-300,
            1e300,
            f64::NAN,
            f64::INFINITY,
            -0.0,
            5e-324,
            2.5,
            1.0,
        ]
        .into_iter()
        .enumerate()
        {
            r.float(format!("f{i}"), v, "float", "Ratio");
        }
        r
    }

    /// `stats.csv` as the hand-written writer before the csv crate wrote it: quotes only
    /// around fields with a comma, a quote or a line break, CRLF after every row.
    #[test]
    fn csv_fixture() {
        let mut out = Vec::new();
        awkward().write_csv(&mut out).unwrap();
        let want = concat!(
            "name,value,unit,description\r\n",
            "sim_cycles,123456,Cycle,Number of cycles simulated\r\n",
            "sim_seconds,0.000123456,Second,Simulated seconds\r\n",
            "system.cpu0.l1d,7,Count,Leaf that is also a prefix\r\n",
            "system.cpu0.l1d.hits,1000,Count,L1D hits\r\n",
            "system.cpu0.l1d.misses,24,Count,L1D misses\r\n",
            "system.cpu0.l1d.miss_rate,0.0234375,Ratio,\"Miss rate, \"\"demand\"\" accesses\"\r\n",
            "system.network.bw,3.0,Byte/Cycle,Bandwidth\r\n",
            "system.tiny,1e-9,Unspecified,\"tiny, with comma\"\r\n",
            "system.big,18446744073709551615,Count,Largest counter\r\n",
            "q,1,\"a,b\",\"say \"\"hi\"\", then \"\"\"\"\"\r\n",
            "e,0,Unspecified,\r\n",
            "u,2,Count/Second,\"héllo, wörld ∑\"\r\n",
            "line,3,Count,one two  three four\r\n",
            "lead,4,Unspecified,\" spaced ,\"\r\n",
            "hash,5,#,#not a comment\r\n",
            "f0,0.1,Ratio,float\r\n",
            "f1,1e-300,Ratio,float\r\n",
            "f2,1e300,Ratio,float\r\n",
            "f3,NaN,Ratio,float\r\n",
            "f4,inf,Ratio,float\r\n",
            "f5,-0.0,Ratio,float\r\n",
            "f6,5e-324,Ratio,float\r\n",
            "f7,2.5,Ratio,float\r\n",
            "f8,1.0,Ratio,float\r\n"
        );
        assert_eq!(String::from_utf8(out).unwrap(), want);
        let mut out = Vec::new();
        StatsRegistry::new().write_csv(&mut out).unwrap();
        assert_eq!(out, b"name,value,unit,description\r\n");
    }

    #[test]
    fn csv_round_trip() {
        let r = awkward();
        let mut out = Vec::new();
        r.write_csv(&mut out).unwrap();
        let back = parse_stats_csv(&String::from_utf8(out).unwrap()).unwrap();
        assert_eq!(back.len(), r.len());
        for (p, s) in back.iter().zip(r.stats()) {
            assert_eq!((&p.0, &p.2, &p.3), (&s.name, &s.desc, &s.unit));
            match (&p.1, &s.value) {
                (StatValue::Float(a), StatValue::Float(b)) if b.is_nan() => assert!(a.is_nan()),
                (a, b) => assert_eq!(a, b),
            }
        }
        let err = |t: &str| parse_stats_csv(t).unwrap_err();
        assert_eq!(err(""), "empty CSV");
        assert_eq!(err("a,b\n"), "unexpected CSV header [\"a\", \"b\"]");
        let head = "name,value,unit,description\r\n";
        assert_eq!(
            err(&format!("{head}x,1,Count\r\n")),
            "record 2: 3 fields, expected 4"
        );
        assert_eq!(
            err(&format!("{head}x,1,Count,d\r\ny,one,Count,d\r\n")),
            "record 3: bad value \"one\""
        );
    }

    #[test]
    fn lookup_and_units() {
        let r = sample();
        assert_eq!(
            r.get("system.cpu0.l1d.hits").unwrap().value,
            StatValue::Int(1000)
        );
        assert_eq!(r.get("system.tiny").unwrap().unit, "Unspecified");
        assert!(r.get("nope").is_none());
        assert_eq!(r.len(), 9);
    }

    #[test]
    fn value_parsing() {
        assert_eq!(StatValue::parse("12"), Some(StatValue::Int(12)));
        assert_eq!(StatValue::parse("12.000000"), Some(StatValue::Float(12.0)));
        assert_eq!(StatValue::parse("1e-7"), Some(StatValue::Float(1e-7)));
        assert!(matches!(StatValue::parse("nan"), Some(StatValue::Float(f)) if f.is_nan()));
        assert_eq!(StatValue::parse("x"), None);
        assert_eq!(StatValue::parse(""), None);
    }

    #[test]
    fn write_all_creates_files() {
        let dir = std::env::temp_dir().join(format!("moped-stats-test-{}", std::process::id()));
        let r = sample();
        r.write_all(&dir).unwrap();
        let txt = std::fs::read_to_string(dir.join("stats.txt")).unwrap();
        let csv = std::fs::read_to_string(dir.join("stats.csv")).unwrap();
        let js: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("stats.json")).unwrap())
                .unwrap();
        same(&parse_stats_txt(&txt).unwrap(), &r);
        same(&parse_stats_csv(&csv).unwrap(), &r);
        assert_eq!(js, r.to_json());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The registry of `tests/fixtures/stats/gem5-v24-distributions.txt`, a dump written
    /// by hand as gem5 v24 prints four `Distribution`s between scalars.
    fn gem5_fixture_registry() -> StatsRegistry {
        let dist = |min, max, size, samples: &[(i64, u64)]| {
            let mut d = Distribution::new(min, max, size).unwrap();
            for &(v, n) in samples {
                d.sample_n(v, n);
            }
            d
        };
        let mut r = StatsRegistry::new();
        r.float(
            "simSeconds",
            0.00005,
            "Number of seconds simulated",
            "Second",
        );
        r.scalar("simTicks", 50_000_000, "Number of ticks simulated", "Tick");
        let issued = dist(0, 4, 1, &[(0, 10), (1, 6), (2, 3), (4, 1), (6, 2)]);
        let desc = "Instructions issued per cycle";
        r.dist("system.cpu.iew.issuedPerCycle", &issued, desc, "Count");
        let waits = [3, 12, 20, 34, 35, 61, 99, 150, 61, 40].map(|v| (v, 1));
        let desc = "Cycles a read waited in the queue";
        r.dist(
            "system.mem_ctrl.readQueueLatency",
            &dist(10, 99, 25, &waits),
            desc,
            "Tick",
        );
        let desc = "Instructions held back per stalled cycle";
        r.dist(
            "system.cpu.iew.stallWidth",
            &dist(0, 3, 1, &[]),
            desc,
            "Count",
        );
        let ages = dist(
            0,
            2_999_999,
            1_000_000,
            &[(5, 1), (1_500_000, 2), (2_999_999, 1)],
        );
        let desc = "Cycles since a line was filled, at its eviction";
        r.dist("system.l2.lineAge", &ages, desc, "Cycle");
        r.scalar(
            "system.cpu.numCycles",
            50_000,
            "Number of cpu cycles simulated",
            "Cycle",
        );
        r
    }

    pub(crate) const GEM5_DISTRIBUTIONS: &str =
        include_str!("../../tests/fixtures/stats/gem5-v24-distributions.txt");

    #[test]
    fn distributions_print_as_gem5_prints_them() {
        let mut out = Vec::new();
        gem5_fixture_registry().write_stats_txt(&mut out).unwrap();
        let ours = String::from_utf8(out).unwrap();
        for (i, (a, b)) in ours.lines().zip(GEM5_DISTRIBUTIONS.lines()).enumerate() {
            assert_eq!(a, b, "line {}", i + 1);
        }
        assert_eq!(ours, GEM5_DISTRIBUTIONS);
    }

    #[test]
    fn distributions_in_csv_and_json() {
        let r = gem5_fixture_registry();
        let rows: Vec<Row<'_>> = r.rows().collect();
        assert_eq!(rows.len(), 3 + 13 + 12 + 12 + 11);
        assert_eq!(r.len(), 7);
        let name = "system.mem_ctrl.readQueueLatency";
        assert_eq!(r.get(name).unwrap().value, StatValue::Int(10));
        assert_eq!(r.distribution(name).unwrap().overflows(), 1);
        assert!(r.distribution("simTicks").is_none());
        let mut csv = Vec::new();
        r.write_csv(&mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        assert!(csv.contains(&format!(
            "\r\n{name}::10-34,3,Tick,Cycles a read waited in the queue\r\n"
        )));
        assert!(csv.contains(&format!("\r\n{name}::mean,51.5,Tick,")));
        assert!(csv.contains("\r\nsystem.cpu.iew.stallWidth::mean,NaN,Count,"));
        let back = parse_stats_csv(&csv).unwrap();
        let txt = parse_stats_txt(GEM5_DISTRIBUTIONS).unwrap();
        assert_eq!(back.len(), rows.len());
        assert_eq!(txt.len(), rows.len());
        let js = r.to_json();
        let flat = js["stats"].as_array().unwrap();
        assert_eq!(flat.len(), rows.len());
        for (((row, c), t), j) in rows.iter().zip(&back).zip(&txt).zip(flat) {
            let names = (j["name"].as_str().unwrap(), c.0.as_str(), t.0.as_str());
            assert_eq!(names, (&*row.name, &*row.name, &*row.name));
            let v = row.value.as_f64();
            for other in [c.1.as_f64(), t.1.as_f64()] {
                assert!(
                    v == other
                        || (v.is_nan() && other.is_nan())
                        || (v - other).abs() < 1e-6 * v.abs(),
                    "{}",
                    row.name
                );
            }
            assert_eq!((c.3.as_str(), t.3.as_str()), (row.unit, row.unit));
        }
        let tree = &js["tree"]["system"]["mem_ctrl"]["readQueueLatency"];
        assert_eq!(tree["samples"], 10);
        assert_eq!(
            tree["buckets"][3],
            serde_json::json!({"lo": 85, "hi": 99, "count": 1})
        );
        assert_eq!(tree["min_value"], 3);
    }

    #[test]
    fn json_tree_keeps_distributions_apart_from_namespaces() {
        let mut d = Distribution::new(0, 1, 1).unwrap();
        d.sample(1);
        for first in [true, false] {
            let mut r = StatsRegistry::new();
            if first {
                r.dist("a.q", &d, "", "Count");
                r.scalar("a.q.x", 1, "", "Count");
            } else {
                r.scalar("a.q.x", 1, "", "Count");
                r.dist("a.q", &d, "", "Count");
            }
            r.dist("a.q.y", &d, "", "Count");
            let t = r.to_json()["tree"].clone();
            assert_eq!(t["a"]["q"]["x"], 1);
            assert_eq!(t["a"]["q"][TREE_SELF_KEY]["samples"], 1);
            assert_eq!(t["a"]["q"]["y"]["buckets"][1]["count"], 1);
            assert!(t["a"]["q"][TREE_SELF_KEY].get("x").is_none());
        }
    }

    #[test]
    #[should_panic]
    #[cfg(debug_assertions)]
    fn duplicate_names_panic() {
        let mut r = StatsRegistry::new();
        r.scalar("x", 1, "", "Count");
        r.scalar("x", 2, "", "Count");
    }
}
