//! The reduction tables as files: `reductions.csv` and `reductions.json`.
//!
//! The CSV has one row per (group, benchmark, design, metric) with the columns
//! `group,benchmark,design,metric,baseline,design_value,ratio,reduction,ci_low,ci_high,n,
//! std_dev,seeds`; numbers are written with full (shortest round-trip) precision, an
//! undefined value is an empty field, `seeds` is space-separated. The JSON is the list of
//! [`Reduction`]s as serde writes them (undefined values are `null`).

use std::fmt::Write as _;
use std::path::Path;

use super::{AnalysisError, Reduction};

/// The CSV header.
pub const CSV_HEADER: &str = "group,benchmark,design,metric,baseline,design_value,ratio,\
                              reduction,ci_low,ci_high,n,std_dev,seeds";

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The reductions as CSV text (header and one line per row, each ending in `\n`).
pub fn reductions_csv(reductions: &[Reduction]) -> String {
    let mut out = String::new();
    out.push_str(CSV_HEADER);
    out.push('\n');
    for r in reductions {
        let seeds: Vec<String> = r.seeds.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            field(&r.group),
            field(&r.benchmark),
            field(&r.design),
            field(&r.metric),
            r.baseline,
            r.design_value,
            num(r.ratio),
            num(r.reduction),
            num(r.ci_low),
            num(r.ci_high),
            r.n,
            num(r.std_dev),
            seeds.join(" "),
        );
    }
    out
}

/// Writes `reductions.csv` and `reductions.json` into `dir` (created if needed).
pub fn write_tables(dir: &Path, reductions: &[Reduction]) -> Result<(), AnalysisError> {
    let io = |what: &Path, e: std::io::Error| {
        AnalysisError::Io(format!("{}: cannot write: {e}", what.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let csv = dir.join("reductions.csv");
    std::fs::write(&csv, reductions_csv(reductions)).map_err(|e| io(&csv, e))?;
    let json = dir.join("reductions.json");
    let mut text = serde_json::to_string_pretty(reductions)
        .map_err(|e| AnalysisError::Io(format!("{}: {e}", json.display())))?;
    text.push('\n');
    std::fs::write(&json, text).map_err(|e| io(&json, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{rec, reductions};

    #[test]
    fn csv_and_json_by_hand() {
        let recs = vec![
            rec("imb", "PP", "baseline", 1, &[("cycles", 200.0)]),
            rec("imb", "PP", "baseline", 2, &[("cycles", 200.0)]),
            rec("imb", "PP", "optcopy", 1, &[("cycles", 50.0)]),
            rec("imb", "PP", "optcopy", 2, &[("cycles", 70.0)]),
            rec("npb", "FT", "baseline", 1, &[("l2_misses_global", 0.0)]),
            rec("npb", "FT", "optcache", 1, &[("l2_misses_global", 3.0)]),
        ];
        let red = reductions(&recs).unwrap();
        let csv = reductions_csv(&red);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], CSV_HEADER);
        let cols: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(&cols[..6], ["imb", "PP", "optcopy", "cycles", "200", "60"]);
        assert!((cols[7].parse::<f64>().unwrap() - 0.7).abs() < 1e-12);
        assert!((cols[8].parse::<f64>().unwrap() - 0.0646898).abs() < 1e-6);
        assert_eq!((cols[10], cols[12]), ("2", "1 2"));
        // Zero baseline: empty ratio, reduction and interval.
        assert_eq!(lines[2], "npb,FT,optcache,l2_misses_global,0,3,,,,,0,,1");
        assert_eq!(field("a,b"), "\"a,b\"");

        let dir = std::env::temp_dir().join(format!("moped-tables-{}", std::process::id()));
        write_tables(&dir, &red).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("reductions.csv")).unwrap(),
            csv
        );
        let back: Vec<Reduction> =
            serde_json::from_str(&std::fs::read_to_string(dir.join("reductions.json")).unwrap())
                .unwrap();
        assert_eq!(back, red);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
