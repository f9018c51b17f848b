//! An embedded run beside a gem5 run of the same workload (`moped compare`).
//!
//! Both runs are read alike: their `stats.txt` through [`crate::stats::gem5`], then each
//! metric of [`super::sources::METRIC_SOURCES`] from that host's column of the table. The
//! comparison gives, per metric, both values, the difference (gem5 - embedded) and that
//! difference in percent of the gem5 value, and whether it stays within a tolerance.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::sources::{MetricSource, Source, METRIC_SOURCES};
use super::write::csv_text;
use crate::stats::gem5::{Dump, StatsFile};
use crate::stats::gem5_config::read_config;
use crate::stats::JSON_FORMAT;

/// The default tolerance of `moped compare`, in percent of the gem5 value.
pub const DEFAULT_TOLERANCE_PCT: f64 = 10.0;

/// A run folder that cannot be compared, or a statistic a metric needs that is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompareError(pub String);

/// What wrote a run folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// `moped run` or `moped mpi` (or the Python API): `stats.txt` with moped's
    /// `stats.json` beside it, or a `stats.txt` with moped's `sim.cycles`.
    Embedded,
    /// gem5: `stats.txt` with `config.ini` or `config.json` beside it (an `m5out` folder),
    /// or with the `moped.json` that `gem5-configs/moped_cmp.py` writes.
    Gem5,
}

impl RunKind {
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Embedded => "embedded",
            RunKind::Gem5 => "gem5",
        }
    }
}

/// Tells an embedded run folder from a gem5 one by the files beside `stats.txt` (or, for a
/// lone `stats.txt`, by moped's `sim.cycles` in it).
pub fn detect(dir: &Path) -> Result<RunKind, CompareError> {
    let d = dir.display();
    if !dir.exists() {
        return Err(CompareError(format!("{d}: no such folder")));
    }
    if !dir.is_dir() {
        return Err(CompareError(format!("{d}: not a folder")));
    }
    if !dir.join("stats.txt").is_file() {
        return Err(CompareError(format!(
            "{d}: no stats.txt in it (expected the output folder of `moped run`/`moped mpi` \
             or gem5's m5out)"
        )));
    }
    if ["config.ini", "config.json", "moped.json"]
        .iter()
        .any(|f| dir.join(f).is_file())
    {
        return Ok(RunKind::Gem5);
    }
    let json = dir.join("stats.json");
    if let Ok(text) = std::fs::read_to_string(&json) {
        let format = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(str::to_string));
        if format.as_deref() == Some(JSON_FORMAT) {
            return Ok(RunKind::Embedded);
        }
    }
    // A stats.txt copied without its stats.json: our counter of cycles names the writer.
    if let Ok(text) = std::fs::read_to_string(dir.join("stats.txt")) {
        if text
            .lines()
            .any(|l| l.split_whitespace().next() == Some("sim.cycles"))
        {
            return Ok(RunKind::Embedded);
        }
    }
    Err(CompareError(format!(
        "{d}: cannot tell which simulator wrote it: a gem5 run has config.ini, config.json \
         or moped.json beside stats.txt, an embedded run moped's stats.json (format {JSON_FORMAT}) or \
         `sim.cycles` in its stats.txt"
    )))
}

/// One run's statistics, with the dump the comparison reads.
#[derive(Debug)]
pub struct Run {
    pub dir: PathBuf,
    pub kind: RunKind,
    pub stats: StatsFile,
    /// Index of the compared dump in `stats.dumps`.
    pub dump: usize,
}

impl Run {
    /// Reads the run folder `dir`, which must be of `kind`, and picks dump `dump` (from 0,
    /// or from the end when negative: -1 is the last).
    pub fn open(dir: &Path, kind: RunKind, dump: i64) -> Result<Run, CompareError> {
        let found = detect(dir)?;
        if found != kind {
            return Err(CompareError(format!(
                "{}: this is {} run, not {} one ({})",
                dir.display(),
                article(found),
                article(kind),
                match found {
                    RunKind::Gem5 => "it has config.ini, config.json or moped.json",
                    RunKind::Embedded => "its stats.json is moped's and it has no gem5 config",
                }
            )));
        }
        let stats =
            StatsFile::read(&dir.join("stats.txt")).map_err(|e| CompareError(e.to_string()))?;
        let (at, _) = stats.select(dump).map_err(CompareError)?;
        Ok(Run {
            dir: dir.to_path_buf(),
            kind,
            stats,
            dump: at,
        })
    }

    /// The compared dump.
    pub fn dump(&self) -> &Dump {
        &self.stats.dumps[self.dump]
    }

    /// `FILE (dump i of n)`, for messages.
    fn where_(&self) -> String {
        format!(
            "{} (dump {} of {})",
            self.stats.file,
            self.dump + 1,
            self.stats.dumps.len()
        )
    }
}

fn article(k: RunKind) -> &'static str {
    match k {
        RunKind::Embedded => "an embedded",
        RunKind::Gem5 => "a gem5",
    }
}

/// A metric's value on one host and how it was computed, or what was missing.
enum Outcome {
    Value { value: f64, how: String },
    Missing(Vec<String>),
}

/// The value of a metric computed before, by key.
fn known_value(known: &[(&str, Option<f64>)], key: &str) -> Option<f64> {
    known.iter().find(|(k, _)| *k == key).and_then(|x| x.1)
}

/// Evaluates `src` on `run`; `known` holds the metrics computed so far on this host.
fn eval(run: &Run, src: &Source, known: &[(&str, Option<f64>)]) -> Outcome {
    let d = run.dump();
    let missing = |what: String| Outcome::Missing(vec![what]);
    match *src {
        Source::Stat(name) => match d.value(name) {
            Some(value) => Outcome::Value {
                value,
                how: format!("`{name}`"),
            },
            None => missing(format!("no `{name}` in {}", run.where_())),
        },
        Source::Sum(pattern) | Source::Max(pattern) => {
            let found = d.glob(pattern);
            if found.is_empty() {
                return missing(format!(
                    "no statistic matching `{pattern}` in {}",
                    run.where_()
                ));
            }
            let values = found.iter().map(|f| f.value());
            let (value, op) = if matches!(src, Source::Sum(_)) {
                (values.sum(), "sum")
            } else {
                let max = values.fold(f64::NEG_INFINITY, |a, b| {
                    if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else {
                        a.max(b)
                    }
                });
                (max, "max")
            };
            Outcome::Value {
                value,
                how: format!("{op} of {} `{pattern}`", found.len()),
            }
        }
        Source::Samples(hist) => {
            let name = format!("{hist}::samples");
            match d.value(&name) {
                Some(value) => Outcome::Value {
                    value,
                    how: format!("`{name}`"),
                },
                None => Outcome::Value {
                    value: 0.0,
                    how: format!("`{name}` (not printed: no samples)"),
                },
            }
        }
        Source::RubyCycles => {
            let Some(ticks) = d.value("simTicks") else {
                return missing(format!("no `simTicks` in {}", run.where_()));
            };
            match read_config(&run.dir) {
                Err(e) => missing(e.to_string()),
                Ok(None) => missing(format!(
                    "no config.ini or config.json in {}",
                    run.dir.display()
                )),
                Ok(Some(cfg)) => match cfg.ruby_clock_period() {
                    Err(e) => missing(e),
                    Ok(period) => Outcome::Value {
                        value: ticks / period as f64,
                        how: format!(
                            "`simTicks` / Ruby clock period ({period} ticks, {})",
                            cfg.file
                        ),
                    },
                },
            }
        }
        Source::FirstOf(list) => {
            let mut why = Vec::new();
            for s in list {
                match eval(run, s, known) {
                    v @ Outcome::Value { .. } => return v,
                    Outcome::Missing(w) => why.extend(w),
                }
            }
            Outcome::Missing(why)
        }
        Source::Remainder(of, minus) => {
            let get = |k: &str| known_value(known, k);
            let Some(mut value) = get(of) else {
                return missing(format!("no value of metric `{of}`"));
            };
            let mut how = of.to_string();
            for m in minus {
                let Some(v) = get(m) else {
                    return missing(format!("no value of metric `{m}`"));
                };
                value -= v;
                let _ = write!(how, " - {m}");
            }
            Outcome::Value { value, how }
        }
        Source::NoMoped(name) => match d.value(name) {
            None => Outcome::Value {
                value: 0.0,
                how: format!("0: no MOPED in this run (no `{name}`)"),
            },
            Some(_) => missing(format!(
                "{} has MOPEDs (`{name}`) but no count of their misses",
                run.where_()
            )),
        },
        Source::Total(parts) => {
            let mut value = 0.0;
            for m in parts {
                let Some(v) = known_value(known, m) else {
                    return missing(format!("no value of metric `{m}`"));
                };
                value += v;
            }
            Outcome::Value {
                value,
                how: parts.join(" + "),
            }
        }
    }
}

/// One host's values of every metric in table order; `None` for an optional metric the
/// run does not have. A required metric that cannot be computed is an error naming what
/// is missing and where.
fn evaluate(run: &Run) -> Result<Vec<(Option<f64>, String)>, CompareError> {
    let mut known: Vec<(&str, Option<f64>)> = Vec::new();
    let mut out = Vec::new();
    for m in METRIC_SOURCES {
        let src = match run.kind {
            RunKind::Embedded => &m.embedded,
            RunKind::Gem5 => &m.gem5,
        };
        match eval(run, src, &known) {
            Outcome::Value { value, how } => {
                known.push((m.key, Some(value)));
                out.push((Some(value), how));
            }
            Outcome::Missing(why) if m.required => {
                return Err(CompareError(format!(
                    "{} run {}: cannot read {}: {}",
                    run.kind.name(),
                    run.dir.display(),
                    m.label,
                    why.join("; nor ")
                )))
            }
            Outcome::Missing(why) => {
                known.push((m.key, None));
                out.push((None, why.join("; nor ")));
            }
        }
    }
    Ok(out)
}

/// One metric of the comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub metric: String,
    pub label: String,
    pub embedded: Option<f64>,
    pub gem5: Option<f64>,
    /// gem5 - embedded.
    pub difference: Option<f64>,
    /// (gem5 - embedded) in percent of gem5; 0 when both are 0, `None` when gem5 alone is.
    pub relative_pct: Option<f64>,
    /// |relative_pct| <= the tolerance; `None` when a run lacks the metric.
    pub within: Option<bool>,
    /// How each value was computed (statistics and operation), or what was missing.
    pub embedded_source: String,
    pub gem5_source: String,
}

/// Where one side's numbers came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    pub dir: String,
    pub stats: String,
    /// The compared dump, from 1, and how many the file holds.
    pub dump: usize,
    pub dumps: usize,
}

impl Side {
    fn of(run: &Run) -> Side {
        Side {
            dir: run.dir.display().to_string(),
            stats: run.stats.file.clone(),
            dump: run.dump + 1,
            dumps: run.stats.dumps.len(),
        }
    }
}

/// The comparison of one embedded run with one gem5 run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub embedded: Side,
    pub gem5: Side,
    pub tolerance_pct: f64,
    pub rows: Vec<Row>,
}

fn row(m: &MetricSource, e: (Option<f64>, String), g: (Option<f64>, String), tol: f64) -> Row {
    let (difference, relative_pct, within) = match (e.0, g.0) {
        (Some(e), Some(g)) => {
            let rel = if g != 0.0 {
                Some(100.0 * (g - e) / g)
            } else if e == 0.0 {
                Some(0.0)
            } else {
                None
            };
            (Some(g - e), rel, Some(rel.is_some_and(|r| r.abs() <= tol)))
        }
        _ => (None, None, None),
    };
    Row {
        metric: m.key.to_string(),
        label: m.label.to_string(),
        embedded: e.0,
        gem5: g.0,
        difference,
        relative_pct,
        within,
        embedded_source: e.1,
        gem5_source: g.1,
    }
}

/// Compares already opened runs.
pub fn compare_runs(
    gem5: &Run,
    embedded: &Run,
    tolerance_pct: f64,
) -> Result<Comparison, CompareError> {
    if !(tolerance_pct.is_finite() && tolerance_pct >= 0.0) {
        return Err(CompareError(format!(
            "tolerance {tolerance_pct}: expected a percentage of at least 0"
        )));
    }
    let e = evaluate(embedded)?;
    let g = evaluate(gem5)?;
    let rows = METRIC_SOURCES
        .iter()
        .zip(e.into_iter().zip(g))
        .filter(|(m, (e, g))| m.required || e.0.is_some() || g.0.is_some())
        .map(|(m, (e, g))| row(m, e, g, tolerance_pct))
        .collect();
    Ok(Comparison {
        embedded: Side::of(embedded),
        gem5: Side::of(gem5),
        tolerance_pct,
        rows,
    })
}

/// Compares the gem5 run in `gem5_dir` (its dump `gem5_dump`, -1 for the last) with the
/// embedded run in `embedded_dir`.
pub fn compare(
    gem5_dir: &Path,
    embedded_dir: &Path,
    gem5_dump: i64,
    tolerance_pct: f64,
) -> Result<Comparison, CompareError> {
    let gem5 = Run::open(gem5_dir, RunKind::Gem5, gem5_dump)
        .map_err(|e| CompareError(format!("--gem5 {e}")))?;
    let embedded = Run::open(embedded_dir, RunKind::Embedded, -1)
        .map_err(|e| CompareError(format!("--embedded {e}")))?;
    compare_runs(&gem5, &embedded, tolerance_pct)
}

/// A value as printed in tables: integers without decimals, others with two.
fn num(v: Option<f64>) -> String {
    match v {
        None => "n/a".to_string(),
        Some(v) if v.is_nan() => "nan".to_string(),
        Some(v) if v.is_infinite() => if v > 0.0 { "inf" } else { "-inf" }.to_string(),
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
    }
}

fn pct(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:+.2} %"),
        Some(_) => "nan".to_string(),
        None => "n/a".to_string(),
    }
}

fn yes_no(w: Option<bool>) -> &'static str {
    match w {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// Full-precision number for CSV, empty when absent.
fn csv_num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

impl Comparison {
    fn side_line(name: &str, s: &Side) -> String {
        format!("{name}: {} (dump {} of {})", s.stats, s.dump, s.dumps)
    }

    fn headers(&self) -> [String; 6] {
        [
            "metric".to_string(),
            "embedded".to_string(),
            "gem5".to_string(),
            "gem5 - embedded".to_string(),
            "% of gem5".to_string(),
            format!("within {} %", num(Some(self.tolerance_pct))),
        ]
    }

    fn cells(&self) -> Vec<[String; 6]> {
        self.rows
            .iter()
            .map(|r| {
                [
                    r.label.clone(),
                    num(r.embedded),
                    num(r.gem5),
                    num(r.difference),
                    pct(r.relative_pct),
                    yes_no(r.within).to_string(),
                ]
            })
            .collect()
    }

    /// An aligned plain-text table with the two runs named above it.
    pub fn to_text(&self) -> String {
        let head = self.headers();
        let cells = self.cells();
        let mut width = head.clone().map(|h| h.chars().count());
        for c in &cells {
            for (w, s) in width.iter_mut().zip(c) {
                *w = (*w).max(s.chars().count());
            }
        }
        let mut out = String::new();
        let _ = writeln!(out, "{}", Self::side_line("gem5    ", &self.gem5));
        let _ = writeln!(out, "{}", Self::side_line("embedded", &self.embedded));
        for line in std::iter::once(&head).chain(&cells) {
            let mut l = format!("{:<w$}", line[0], w = width[0]);
            for (s, w) in line.iter().zip(width).skip(1) {
                let _ = write!(l, "  {s:>w$}");
            }
            let _ = writeln!(out, "{}", l.trim_end());
        }
        out
    }

    /// A Markdown table with the two runs named above it.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "- {}", Self::side_line("gem5", &self.gem5));
        let _ = writeln!(out, "- {}", Self::side_line("embedded", &self.embedded));
        let _ = writeln!(out);
        let _ = writeln!(out, "| {} |", self.headers().join(" | "));
        let _ = writeln!(out, "|---|---:|---:|---:|---:|---|");
        for c in self.cells() {
            let _ = writeln!(out, "| {} |", c.join(" | "));
        }
        out
    }

    /// CSV: one row per metric, numbers in full precision, empty where absent.
    pub fn to_csv(&self) -> String {
        let header = [
            "metric",
            "label",
            "embedded",
            "gem5",
            "difference",
            "relative_pct",
            "within",
            "tolerance_pct",
            "embedded_source",
            "gem5_source",
        ];
        let rows = self.rows.iter().map(|r| {
            vec![
                r.metric.clone(),
                r.label.clone(),
                csv_num(r.embedded),
                csv_num(r.gem5),
                csv_num(r.difference),
                csv_num(r.relative_pct),
                r.within.map(|w| w.to_string()).unwrap_or_default(),
                self.tolerance_pct.to_string(),
                r.embedded_source.clone(),
                r.gem5_source.clone(),
            ]
        });
        let header = header.iter().map(|h| h.to_string()).collect();
        csv_text(std::iter::once(header).chain(rows), csv::Terminator::CRLF)
    }

    /// JSON: both runs, the tolerance and the rows (non-finite numbers as null).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// The rows outside the tolerance, or whose relative difference is undefined.
    pub fn outside(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.within == Some(false))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_differences() {
        let m = &METRIC_SOURCES[0];
        let r = |e: f64, g: f64| row(m, (Some(e), String::new()), (Some(g), String::new()), 10.0);
        let x = r(90.0, 100.0);
        assert_eq!(
            (x.difference, x.relative_pct, x.within),
            (Some(10.0), Some(10.0), Some(true))
        );
        let x = r(111.0, 100.0);
        assert_eq!(x.relative_pct, Some(-11.0));
        assert_eq!(x.within, Some(false));
        let x = r(0.0, 0.0);
        assert_eq!((x.relative_pct, x.within), (Some(0.0), Some(true)));
        let x = r(3.0, 0.0);
        assert_eq!(
            (x.difference, x.relative_pct, x.within),
            (Some(-3.0), None, Some(false))
        );
        let x = r(f64::NAN, 5.0);
        assert_eq!(x.within, Some(false));
        let x = row(m, (None, "gone".into()), (Some(1.0), String::new()), 10.0);
        assert_eq!((x.difference, x.relative_pct, x.within), (None, None, None));
    }

    /// moped compare's CSV as the hand-written writer before the csv crate wrote it: quotes
    /// only around fields with a comma, a quote or a line break, CRLF after every row.
    #[test]
    fn csv_fixture() {
        let side = Side {
            dir: "d".into(),
            stats: "d/stats.txt".into(),
            dump: 1,
            dumps: 1,
        };
        let m = &METRIC_SOURCES[0];
        let mut rows = vec![
            row(
                m,
                (Some(1.0), "a,b".into()),
                (Some(2.0), "say \"hi\"".into()),
                2.5,
            ),
            row(m, (None, "gone".into()), (Some(1.0), String::new()), 2.5),
            row(
                m,
                (Some(f64::NAN), "é".into()),
                (Some(5.0), " x ".into()),
                2.5,
            ),
        ];
        rows[0].label = "one\ntwo".into();
        rows[1].label = "plain".into();
        rows[2].label = "é".into();
        for r in &mut rows {
            r.metric = "x".into();
        }
        let c = Comparison {
            embedded: side.clone(),
            gem5: side,
            tolerance_pct: 2.5,
            rows,
        };
        let want = concat!(
            "metric,label,embedded,gem5,difference,relative_pct,within,tolerance_pct,",
            "embedded_source,gem5_source\r\n",
            "x,\"one\ntwo\",1,2,1,50,false,2.5,\"a,b\",\"say \"\"hi\"\"\"\r\n",
            "x,plain,,1,,,,2.5,gone,\r\n",
            "x,é,NaN,5,NaN,NaN,false,2.5,é, x \r\n",
        );
        assert_eq!(c.to_csv(), want);
    }

    #[test]
    fn printed_numbers() {
        assert_eq!(num(Some(133991.0)), "133991");
        assert_eq!(num(Some(-8.0)), "-8");
        assert_eq!(num(Some(139820.5)), "139820.50");
        assert_eq!(num(None), "n/a");
        assert_eq!(num(Some(f64::NAN)), "nan");
        assert_eq!(pct(Some(4.166_87)), "+4.17 %");
        assert_eq!(pct(Some(-1.538_46)), "-1.54 %");
        let row = vec!["a, b".to_string(), "c".to_string()];
        assert_eq!(csv_text([row], csv::Terminator::CRLF), "\"a, b\",c\r\n");
    }

    #[test]
    fn table_rows_match_the_paper_metrics() {
        let keys: Vec<&str> = METRIC_SOURCES.iter().map(|m| m.key).collect();
        for k in [
            "cycles",
            "l1_misses",
            "l2_misses_private",
            "l2_misses_global",
        ] {
            assert!(keys.contains(&k), "{k}");
            assert!(super::super::METRICS.contains(&k), "{k}");
        }
        // A remainder or a total only refers to metrics computed before it.
        for (i, m) in METRIC_SOURCES.iter().enumerate() {
            for src in [&m.embedded, &m.gem5] {
                let used: Vec<&str> = match src {
                    Source::Remainder(of, minus) => {
                        std::iter::once(*of).chain(minus.iter().copied()).collect()
                    }
                    Source::Total(parts) => parts.to_vec(),
                    _ => Vec::new(),
                };
                for k in used {
                    let at = keys.iter().position(|x| *x == k).expect("known metric");
                    assert!(at < i, "{} refers to {k} computed later", m.key);
                }
            }
        }
    }
}
