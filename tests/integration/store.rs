//! The results store (`api::store`): a run whose key is unchanged is taken from an
//! earlier folder with its files and outcome; a changed configuration runs again; a
//! failed experiment keeps its finished runs for the next one; `runs.csv` has a row per
//! run with the configuration as columns.

use std::path::{Path, PathBuf};

use moped::api::experiments::{run_all, Outcome, Task};
use moped::api::output::{Invocation, OutDir, RunInfo};
use moped::api::{runs_table, store};
use moped::config::SystemConfig;
use moped::design::Design;
use moped::error::MopedError;

fn scratch(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-store-{case}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tasks() -> Vec<Task> {
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/any_source.goal");
    [Design::Baseline, Design::OptCopy]
        .map(|design| Task {
            spec: spec.clone(),
            design,
            seed: 1,
        })
        .to_vec()
}

/// What the experiments of these tests ran, for their folders' run.json.
fn info(cfg: &SystemConfig) -> RunInfo {
    RunInfo {
        config: cfg.clone(),
        seed: 1.into(),
        workload: "any_source.goal".into(),
        design: "baseline, optcopy".into(),
    }
}

/// Runs the tasks into `dest`, reusing `from`'s store; finishes the folder as an
/// experiment with a store does, or fails it with `fail`.
fn experiment(
    dest: &Path,
    cfg: &SystemConfig,
    from: Option<&Path>,
    fail: bool,
) -> Result<Vec<Outcome>, MopedError> {
    let mut out = OutDir::claim(dest, true, Invocation::default())?;
    out.hold_store("test", from.map(Path::to_path_buf))?;
    let tasks = tasks();
    let none = |_: usize, _: usize, _: &Result<Outcome, MopedError>| {};
    let ran = run_all(cfg, &tasks, 2, None, Some(&out), &none);
    let ran = ran.and_then(|o| {
        if fail {
            return Err(MopedError::Io("stopped".into()));
        }
        runs_table::write_scanned(out.path())?;
        Ok(o)
    });
    out.finish(ran, |_, _| Ok(info(cfg)))
}

#[test]
fn unchanged_runs_are_reused_and_changed_ones_run_again() {
    let root = scratch("reuse");
    let dest = root.join("res");
    let cfg = SystemConfig::default();
    let first = experiment(&dest, &cfg, None, false).unwrap();
    assert!(first.iter().all(|o| !o.reused));
    assert!(store::holds_store(&dest, "test"));
    let again = experiment(&dest, &cfg, Some(&dest), false).unwrap();
    assert!(again.iter().all(|o| o.reused));
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(a.record, b.record);
        assert_eq!(a.messages_verified, b.messages_verified);
    }
    let stats = dest.join("runs/any_source-optcopy-s1/stats.txt");
    assert!(stats.is_file(), "a reused run keeps its files");
    let mut other = cfg.clone();
    other.l2.latency = 20;
    let changed = experiment(&dest, &other, Some(&dest), false).unwrap();
    assert!(changed.iter().all(|o| !o.reused));
    assert_ne!(
        changed[0].record.metrics["cycles"],
        first[0].record.metrics["cycles"]
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_failed_experiment_keeps_its_finished_runs_for_the_next() {
    let root = scratch("resume");
    let dest = root.join("res");
    let cfg = SystemConfig::default();
    experiment(&dest, &cfg, None, true).unwrap_err();
    assert!(dest.join("FAILED").is_file());
    assert!(dest.join("runs/any_source-baseline-s1/key.json").is_file());
    assert!(store::holds_store(&dest, "test"));
    let resumed = experiment(&dest, &cfg, Some(&dest), false).unwrap();
    assert!(resumed.iter().all(|o| o.reused));
    assert!(!dest.join("FAILED").exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_table_has_a_row_per_run_and_the_configuration_as_columns() {
    let root = scratch("table");
    let dest = root.join("res");
    let mut cfg = SystemConfig::default();
    cfg.l2.latency = 12;
    experiment(&dest, &cfg, None, false).unwrap();
    let mut r = csv::Reader::from_path(dest.join(store::TABLE_FILE)).unwrap();
    let header = r.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(&rows[0][col("design")], "baseline");
    assert_eq!(&rows[1][col("design")], "optcopy");
    assert_eq!(&rows[0][col("l2.latency")], "12");
    assert_eq!(&rows[0][col("system.core_model")], "mlp");
    assert_eq!(&rows[0][col("reused")], "false");
    assert!(rows[0][col("cycles")].parse::<u64>().is_ok(), "a count");
    assert_eq!(rows[0][col("key")].len(), 64);
    let _ = std::fs::remove_dir_all(&root);
}

/// An experiment whose runs sit in folders of its parts (`moped matching`'s engines): a
/// failure keeps every part's finished runs, and the next run into the folder takes them
/// from the same places.
#[test]
fn a_failed_experiment_keeps_the_runs_of_its_parts() {
    let root = scratch("parts");
    let dest = root.join("res");
    let cfg = SystemConfig::default();
    let none = |_: usize, _: usize, _: &Result<Outcome, MopedError>| {};
    let run_parts = |from: Option<PathBuf>, fail: bool| -> Result<Vec<Outcome>, MopedError> {
        let mut out = OutDir::claim(&dest, true, Invocation::default())?;
        out.hold_store("test", from)?;
        let part = out.child("part")?;
        let ran = run_all(&cfg, &tasks(), 2, None, Some(&part), &none);
        let ran = part.finish(ran, |_, _| Ok(info(&cfg)));
        let ran = ran.and_then(|o| {
            if fail {
                return Err(MopedError::Io("stopped".into()));
            }
            let (runs, _) = runs_table::write_scanned(out.path())?;
            assert_eq!(runs, o.len());
            Ok(o)
        });
        out.finish(ran, |_, _| Ok(info(&cfg)))
    };
    run_parts(None, true).unwrap_err();
    assert!(dest.join("FAILED").is_file());
    assert!(dest
        .join("part/runs/any_source-optcopy-s1/record.json")
        .is_file());
    assert!(
        !dest.join("part/config.toml").exists(),
        "only the runs are kept"
    );
    let resumed = run_parts(Some(dest.clone()), false).unwrap();
    assert!(resumed.iter().all(|o| o.reused));
    let table = std::fs::read_to_string(dest.join(store::TABLE_FILE)).unwrap();
    assert!(
        table.contains(",part/runs/any_source-baseline-s1,"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
