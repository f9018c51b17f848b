//! Result folders through the commands that write them (issue 24's stale results): a
//! folder holding results is refused without `--force`, a failed run leaves only a FAILED
//! marker, and every result folder holds the resolved config.toml and run.json.

use std::path::{Path, PathBuf};

use moped::api::experiments::{run_all, Task};
use moped::api::output::{Invocation, OutDir, RunInfo, FAILED};
use moped::cli::main_with_args;
use moped::config::SystemConfig;
use moped::design::Design;

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .display()
        .to_string()
}

fn scratch(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-outputs-{case}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

fn moped(args: &[&str]) -> i32 {
    main_with_args(args.iter().map(|s| s.to_string()).collect())
}

/// Sends 64 bytes into a 32-byte receive: the run fails at once.
const TRUNCATED: &str =
    "num_ranks 2\nrank 0 {\nsend 64b to 1 tag 0\n}\nrank 1 {\nrecv 32b from 0 tag 0\n}\n";

const STATS: [&str; 5] = [
    "config.toml",
    "run.json",
    "stats.csv",
    "stats.json",
    "stats.txt",
];

#[test]
fn mpi_out_is_written_whole_refused_when_full_and_marked_failed() {
    let base = scratch("mpi");
    let out = base.join("res");
    let (out_s, good) = (
        out.display().to_string(),
        repo("workloads/goal/wide_tags.goal"),
    );
    let bad = base.join("truncated.goal");
    std::fs::write(&bad, TRUNCATED).unwrap();
    let bad = bad.display().to_string();
    let args = |w: &str| -> Vec<String> {
        [
            "moped",
            "mpi",
            "--workload",
            w,
            "--out",
            &out_s,
            "--protocol",
            "optcopy",
        ]
        .map(String::from)
        .into()
    };
    let mut first = args(&good);
    first.extend(["--set", "l2.latency=12"].map(String::from));
    assert_eq!(main_with_args(first.clone()), 0);
    // The promise of docs/outputs.md: the resolved config and the run's record beside the stats.
    assert_eq!(names(&out), STATS);
    assert_eq!(
        names(&base),
        ["res", "truncated.goal"],
        "no partial folder left"
    );
    let cfg = std::fs::read_to_string(out.join("config.toml")).unwrap();
    let cfg = SystemConfig::from_toml_str(&cfg, "config.toml").unwrap();
    assert_eq!(cfg.l2.latency, 12);
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["command"], serde_json::json!(first));
    assert_eq!(run["overrides"], serde_json::json!(["l2.latency=12"]));
    assert_eq!(
        (&run["design"], &run["seed"]),
        (&"optcopy".into(), &1.into())
    );
    assert_eq!(run["workload"], good.as_str());
    let stats = std::fs::read_to_string(out.join("stats.txt")).unwrap();

    // Issue 24: a non-empty folder was merged silently. Now a usage error, untouched.
    assert_eq!(main_with_args(args(&good)), 2);
    assert_eq!(
        std::fs::read_to_string(out.join("stats.txt")).unwrap(),
        stats
    );

    // Issue 24: a failed run left the earlier run's complete-looking stats.
    let mut failing = args(&bad);
    failing.push("--force".into());
    assert_eq!(main_with_args(failing), 1);
    assert_eq!(names(&out), [FAILED]);
    let marker = std::fs::read_to_string(out.join(FAILED)).unwrap();
    assert!(
        marker.contains("error: ") && marker.contains("32"),
        "{marker}"
    );

    // A folder holding only the marker takes the next run without --force.
    assert_eq!(main_with_args(args(&good)), 0);
    assert_eq!(names(&out), STATS);
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn run_out_into_a_full_folder_is_a_usage_error() {
    let base = scratch("run");
    let out = base.join("res");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("stats.txt"), "an earlier run").unwrap();
    let program = repo("workloads/examples/pingpong.toml");
    let out_s = out.display().to_string();
    let args = ["moped", "run", "--program", &program, "--out", &out_s];
    assert_eq!(moped(&args), 2);
    assert_eq!(names(&out), ["stats.txt"]);
    assert_eq!(moped(&[&args[..], &["--force"]].concat()), 0);
    assert_eq!(names(&out), STATS);
    std::fs::remove_dir_all(&base).ok();
}

/// Figure 10's per-run folders: each lands whole inside the experiment's folder, and a
/// failed run marks the whole experiment FAILED.
#[test]
fn per_run_folders_land_inside_the_experiment_or_not_at_all() {
    let base = scratch("runs");
    let bad = base.join("truncated.goal");
    std::fs::write(&bad, TRUNCATED).unwrap();
    let task = |spec: PathBuf| Task {
        spec,
        design: Design::OptCache,
        seed: 3,
    };
    let good = task(repo("workloads/goal/wide_tags.goal").into());
    let cfg = SystemConfig::default();
    let experiment = |dest: &Path, tasks: &[Task]| {
        let out = OutDir::claim(dest, false, Invocation::default()).unwrap();
        let outcome = run_all(&cfg, tasks, 1, None, Some(&out), &|_, _, _| {});
        out.finish(outcome, |_, _| {
            Ok(RunInfo {
                config: cfg.clone(),
                seed: 3.into(),
                workload: "tasks".into(),
                design: "optcache".into(),
            })
        })
    };
    let ok = base.join("ok");
    experiment(&ok, std::slice::from_ref(&good)).unwrap();
    assert_eq!(names(&ok.join("runs")), ["wide_tags-optcache-s3"]);
    let run = ok.join("runs/wide_tags-optcache-s3");
    assert!(names(&run).contains(&"record.json".to_string()));
    assert!(names(&run).contains(&"run.json".to_string()));
    let failed = base.join("failed");
    assert!(experiment(&failed, &[good, task(bad)]).is_err());
    assert_eq!(names(&failed), [FAILED]);
    assert_eq!(names(&base), ["failed", "ok", "truncated.goal"]);
    std::fs::remove_dir_all(&base).ok();
}
