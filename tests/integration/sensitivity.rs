//! `moped figure10 --sensitivity` (issue 25): Figure 10 rerun under each alternative
//! modelling choice, every bar in sensitivity.csv and a section of report.md, every run's
//! messages verified. Small stand-ins for the 11 specs keep it quick.

use std::path::{Path, PathBuf};

use moped::api::sensitivity::ALTERNATIVES;
use moped::cli::main_with_args;

fn scratch(case: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-sens-{case}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Figure 10's spec files, each a two-rank IMB run of one small message.
fn small_workloads(root: &Path) -> PathBuf {
    let w = root.join("workloads");
    std::fs::create_dir_all(w.join("imb")).unwrap();
    std::fs::create_dir_all(w.join("npb")).unwrap();
    let imb = [
        "pingpong", "pingping", "bcast", "reduce", "gather", "alltoall",
    ];
    let npb = ["sp", "cg", "mg", "ft", "bt"];
    let files = imb
        .iter()
        .map(|b| (format!("imb/{b}-16k.toml"), *b, b.to_string()))
        .chain(
            npb.iter()
                .map(|b| (format!("npb/{b}-S.toml"), "bcast", b.to_uppercase())),
        );
    for (file, bench, name) in files {
        let spec = format!(
            "name = \"{name}\"\nsuite = \"imb\"\nbenchmark = \"{bench}\"\nbytes = 16384\n\
             iterations = 2\nranks = 2\n"
        );
        std::fs::write(w.join(file), spec).unwrap();
    }
    w
}

/// Runs `moped figure10 --sensitivity` on the small specs, two cores, with `extra`
/// arguments; returns the result folder.
fn figure10_sensitivity(root: &Path, extra: &[&str]) -> PathBuf {
    let w = small_workloads(root);
    let out = root.join("fig");
    let (out_s, w_s) = (out.to_str().unwrap(), w.to_str().unwrap());
    let mut args = vec!["moped", "figure10", "--out", out_s, "--workloads", w_s];
    args.extend_from_slice(&["--sensitivity", "--set", "system.cores=2", "--jobs", "2"]);
    args.extend_from_slice(extra);
    let code = main_with_args(args.iter().map(|s| s.to_string()).collect());
    assert_eq!(code, 0);
    out
}

#[test]
fn sensitivity_writes_every_bar_under_every_alternative() {
    let root = scratch("all");
    let out = figure10_sensitivity(&root, &[]);
    let csv = std::fs::read_to_string(out.join("sensitivity.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("alternative,benchmark,design,metric,reduction")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // The default and each alternative: 11 benchmarks, 3 designs, Figure 10's 4 metrics.
    assert_eq!(rows.len(), (1 + ALTERNATIVES.len()) * 11 * 3 * 4);
    let value = |alt: &str, bench: &str, design: &str, metric: &str| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[..4] == [alt, bench, design, metric])
            .unwrap_or_else(|| panic!("no row {alt} {bench} {design} {metric}"));
        r[4].parse().unwrap()
    };
    // Cold caches move the cycle reduction of PingPong's OPTCOPY: the alternative was run.
    let (warm, cold) = (
        value("default", "pingpong", "optcopy", "cycles"),
        value("no-warmup", "pingpong", "optcopy", "cycles"),
    );
    assert!(warm != cold, "{warm} vs {cold}");
    for a in ALTERNATIVES {
        let runs = out.join("sensitivity").join(a.name).join("runs");
        assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 44, "{}", a.name);
        let cfg = std::fs::read_to_string(out.join("sensitivity").join(a.name).join("config.toml"));
        let field = a.set[0].0.rsplit('.').next().unwrap();
        assert!(cfg.unwrap().contains(&format!("{field} = ")), "{}", a.name);
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Sensitivity to the model's choices"));
    for a in ALTERNATIVES {
        assert!(
            report.contains(&format!("| `{}` | {} (`", a.name, a.what)),
            "{}",
            a.name
        );
    }
    let verified = format!(
        "The alternatives' {} runs verified ",
        ALTERNATIVES.len() * 44
    );
    assert!(report.contains(&verified), "{report}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_alternative_the_configuration_already_makes_is_not_rerun() {
    let root = scratch("cold");
    let out = figure10_sensitivity(&root, &["--no-warmup"]);
    assert!(!out.join("sensitivity/no-warmup").exists());
    let csv = std::fs::read_to_string(out.join("sensitivity.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + ALTERNATIVES.len() * 11 * 3 * 4);
    assert!(!csv.contains("\nno-warmup,"));
    let _ = std::fs::remove_dir_all(&root);
}
