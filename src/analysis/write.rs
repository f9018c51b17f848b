//! The reduction tables as files: `reductions.csv` and `reductions.json`.
//!
//! The CSV has one row per (group, benchmark, design, metric) with the columns
//! `group,benchmark,design,metric,baseline,design_value,ratio,reduction,ci_low,ci_high,n,
//! std_dev,seeds`; numbers are written with full (shortest round-trip) precision, an
//! undefined value is an empty field, `seeds` is space-separated. The JSON is the list of
//! [`Reduction`]s as serde writes them (undefined values are `null`).

use std::path::Path;

use super::{AnalysisError, Reduction};

/// The CSV header.
pub const CSV_HEADER: &str = "group,benchmark,design,metric,baseline,design_value,ratio,\
                              reduction,ci_low,ci_high,n,std_dev,seeds";

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// The reductions as CSV text (header and one line per row, each ending in `\n`).
pub fn reductions_csv(reductions: &[Reduction]) -> String {
    let header = CSV_HEADER.split(',').map(str::to_string).collect();
    let rows = reductions.iter().map(|r| {
        let seeds: Vec<String> = r.seeds.iter().map(|s| s.to_string()).collect();
        vec![
            r.group.clone(),
            r.benchmark.clone(),
            r.design.clone(),
            r.metric.clone(),
            r.baseline.to_string(),
            r.design_value.to_string(),
            num(r.ratio),
            num(r.reduction),
            num(r.ci_low),
            num(r.ci_high),
            r.n.to_string(),
            num(r.std_dev),
            seeds.join(" "),
        ]
    });
    csv_text(
        std::iter::once(header).chain(rows),
        csv::Terminator::Any(b'\n'),
    )
}

/// CSV text of `records`, each ending in `term`; a field is quoted only when it holds a
/// comma, a quote or a line break (RFC 4180).
pub(crate) fn csv_text(
    records: impl IntoIterator<Item = Vec<String>>,
    term: csv::Terminator,
) -> String {
    let mut out = csv::WriterBuilder::new()
        .terminator(term)
        .from_writer(Vec::new());
    // Writing into memory cannot fail.
    for r in records {
        out.write_record(&r).expect("CSV into memory");
    }
    let bytes = out.into_inner().expect("CSV into memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
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

    /// `reductions.csv` as the hand-written writer before the csv crate wrote it: quotes only
    /// around fields with a comma, a quote or a line break, numbers in Rust's shortest
    /// round-trip form, `\n` after every row.
    #[test]
    fn csv_fixture() {
        let pp = [("baseline", 1, 200.0, 7.0), ("baseline", 2, 210.0, 9.0)];
        let pp = pp
            .into_iter()
            .chain([("optcopy", 1, 50.0, 3.0), ("optcopy", 2, 70.0, 1.0)]);
        let mut recs: Vec<_> = pp
            .map(|(d, seed, cycles, l1)| {
                rec(
                    "imb",
                    "PP",
                    d,
                    seed,
                    &[("cycles", cycles), ("l1_misses", l1)],
                )
            })
            .collect();
        recs.push(rec(
            "npb",
            "FT",
            "baseline",
            1,
            &[("l2_misses_global", 0.0)],
        ));
        recs.push(rec(
            "npb",
            "FT",
            "optcache",
            1,
            &[("l2_misses_global", 3.0)],
        ));
        let mut red = reductions(&recs).unwrap();
        let want = concat!(
            "group,benchmark,design,metric,baseline,design_value,ratio,reduction,ci_low,ci_high,",
            "n,std_dev,seeds\n",
            "imb,PP,optcopy,cycles,205,60,0.29166666666666663,0.7083333333333334,",
            "0.17890813599272182,1.237758530673945,2,0.058925565098878904,1 2\n",
            "imb,PP,optcopy,l1_misses,8,2,0.2698412698412699,0.7301587301587301,",
            "-1.2866991644721728,2.7470166247896333,2,0.2244783432338246,1 2\n",
            "npb,FT,optcache,l2_misses_global,0,3,,,,,0,,1\n",
        );
        assert_eq!(reductions_csv(&red), want);
        red.truncate(1);
        let r = &mut red[0];
        r.group = "a,b".to_string();
        r.benchmark = "say \"hi\"".to_string();
        r.design = "one\ntwo".to_string();
        r.metric = "cr\rlf\r\n".to_string();
        r.baseline = f64::NAN;
        r.design_value = f64::INFINITY;
        r.ratio = Some(1e-7);
        r.ci_low = Some(-0.0);
        r.std_dev = Some(1e21);
        r.seeds.clear();
        let want = concat!(
            "group,benchmark,design,metric,baseline,design_value,ratio,reduction,ci_low,ci_high,",
            "n,std_dev,seeds\n",
            "\"a,b\",\"say \"\"hi\"\"\",\"one\ntwo\",\"cr\rlf\r\n\",NaN,inf,0.0000001,",
            "0.7083333333333334,-0,1.237758530673945,2,1000000000000000000000,\n",
        );
        assert_eq!(reductions_csv(&red), want);
        assert_eq!(reductions_csv(&[]), format!("{CSV_HEADER}\n"));
    }

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
