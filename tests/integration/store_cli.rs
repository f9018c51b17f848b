//! The results store through the commands: `moped matching` and `moped engines` run again
//! into their folder take every run from it (stderr says so) and write the same tables;
//! `--fresh` simulates them all again; `runs.csv` has a row per run, each naming its
//! folder and its workload where the workload will stay.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-store-cli-{case}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs moped with `args` and `--out out` in `dir`; its stderr. A failure fails the test.
fn moped(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(args)
        .args(["--out", "out", "--jobs", "2"])
        .current_dir(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "moped {args:?} failed:\n{err}");
    err
}

/// runs.csv's rows as (column, value) maps.
fn table(dir: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(dir.join("out/runs.csv")).unwrap();
    let header = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            header
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

/// The experiment `args` twice and then with `--fresh` into one folder: the second takes
/// all `runs` runs (stderr says so) and writes `tables` byte for byte as the first did.
fn reruns_reuse_every_run(case: &str, args: &[&str], runs: usize, tables: &[&str]) {
    let d = scratch(case);
    let name = args[0];
    let first = moped(&d, args);
    assert!(!first.contains("reused"), "{first}");
    let rows = table(&d);
    assert_eq!(rows.len(), runs, "a row per run");
    let read = |t: &str| std::fs::read(d.join("out").join(t)).unwrap();
    let before: Vec<Vec<u8>> = tables.iter().map(|t| read(t)).collect();
    for row in &rows {
        assert_eq!(row["reused"], "false");
        assert_eq!(row["key"].len(), 64);
        let folder = d.join("out").join(&row["folder"]);
        assert!(folder.join("stats.txt").is_file(), "{folder:?}");
        // A spec the experiment wrote is named where it is now, not in a temporary folder.
        let spec = d.join(&row["workload"]);
        assert!(spec.is_file(), "{spec:?}");
        assert!(
            !row["workload"].contains(".partial-"),
            "{}",
            row["workload"]
        );
    }

    let second = moped(&d, args);
    let said = format!("{name}: reused {runs} of {runs} runs from the earlier results in out");
    assert!(second.contains(&said), "{second}");
    assert!(table(&d).iter().all(|r| r["reused"] == "true"));
    for (t, b) in tables.iter().zip(&before) {
        assert!(read(t) == *b, "{t} differs after reusing every run");
    }

    let fresh: Vec<&str> = args.iter().copied().chain(["--fresh"]).collect();
    let third = moped(&d, &fresh);
    assert!(!third.contains("reused"), "{third}");
    assert!(table(&d).iter().all(|r| r["reused"] == "false"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn matching_again_into_its_folder_reuses_every_run() {
    let args = [
        "matching",
        "--quick",
        "--engines",
        "software,alpu",
        "--no-figure10",
    ];
    reruns_reuse_every_run("matching", &args, 46, &["matching.csv"]);
}

/// The engines experiment's CMP part under one scheme: 24 runs.
const ENGINES: [&str; 7] = [
    "engines",
    "--quick",
    "--schemes",
    "base",
    "--only",
    "cmp",
    "--no-figure10",
];

#[test]
fn engines_again_into_its_folder_reuses_every_run() {
    reruns_reuse_every_run("engines", &ENGINES, 24, &["engines.csv"]);
}

/// A folder holding another experiment's results is not resumed: it is refused without
/// --force.
#[test]
fn another_experiments_folder_is_refused() {
    let d = scratch("other");
    moped(&d, &ENGINES);
    let o = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(["matching", "--quick", "--engines", "software"])
        .args(["--no-figure10", "--out", "out"])
        .current_dir(&d)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not empty"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
