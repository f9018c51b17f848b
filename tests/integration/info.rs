//! The catalogue (`moped info`) against what runs write and what the repository's files
//! say: every statistic of real `moped mpi` runs has its entry, every key of
//! configs/table1.toml has its parameter with the same default, and the docs/ pages are
//! the catalogue's current output.

use std::path::Path;

use moped::api::info::{self, matches, StatInfo};
use moped::api::mpi::mpi;
use moped::config::SystemConfig;
use moped::design::Design;

fn repo(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn uncatalogued<'a>(catalogue: &[StatInfo], names: impl Iterator<Item = &'a str>) -> Vec<String> {
    names
        .filter(|n| !catalogue.iter().any(|s| matches(&s.name, n)))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_statistic_of_an_mpi_run_is_in_the_catalogue() {
    let catalogue = info::stats().unwrap();
    let mut cold = SystemConfig::default();
    // Alltoall's warm-up is most of its host time; PingPong and CG have theirs.
    cold.workload.warmup = false;
    let runs = [
        ("workloads/imb/pingpong-16k.toml", Some(0.1), true),
        ("workloads/imb/alltoall-16k.toml", Some(0.1), false),
        ("workloads/npb/cg-S.toml", Some(0.02), true),
        ("workloads/goal/any_source.goal", None, true),
    ];
    for (workload, scale, warm) in runs {
        let cfg = if warm {
            SystemConfig::default()
        } else {
            cold.clone()
        };
        for design in Design::ALL {
            let o = mpi(&cfg, &repo(workload), design, 1, (scale, None), None).unwrap();
            let rows: Vec<String> = o.run.stats.rows().map(|r| r.name.to_string()).collect();
            let missing = uncatalogued(&catalogue, rows.iter().map(String::as_str));
            assert!(
                missing.is_empty(),
                "{workload} under {design} wrote statistics the catalogue lacks: {missing:?}"
            );
            // The other way: what the catalogue says every MPI run of this design writes.
            let run = format!("mpi:{design}");
            let absent: Vec<&str> = catalogue
                .iter()
                .filter(|s| s.runs.contains(&run))
                .filter(|s| !rows.iter().any(|n| matches(&s.name, n)))
                .map(|s| s.name.as_str())
                .collect();
            assert!(
                absent.is_empty(),
                "{workload} under {design} lacks statistics the catalogue lists: {absent:?}"
            );
        }
    }
}

#[test]
fn a_distribution_is_one_entry_and_its_lines_match_it() {
    let catalogue = info::stats().unwrap();
    let depth = catalogue
        .iter()
        .find(|s| s.name == "mpi.rank{N}.prq_depth")
        .expect("the posted-receive queue's depth per rank");
    assert_eq!(depth.kind, "distribution");
    let sizes = catalogue
        .iter()
        .find(|s| s.name == "mpi.message_bytes")
        .expect("the messages' sizes");
    assert_eq!((sizes.kind, sizes.unit.as_str()), ("distribution", "Byte"));
    assert!(matches(&depth.name, "mpi.rank12.prq_depth::samples"));
    let hits = catalogue
        .iter()
        .find(|s| s.name == "system.cpu{N}.l1d.hits")
        .unwrap();
    assert_eq!((hits.kind, hits.unit.as_str()), ("counter", "Count"));
    // An MPI run and a program run of each design, and an MPI run through the NICs.
    assert_eq!(
        hits.runs.len(),
        2 * Design::ALL.len() + 1,
        "{:?}",
        hits.runs
    );
    assert!(hits.runs.contains(&"mpi:baseline+nic".to_string()));
    let nic = catalogue
        .iter()
        .find(|s| s.name == "system.nic{N}.vl_commands")
        .expect("the NICs' statistics");
    assert_eq!(nic.runs, ["mpi:baseline+nic"]);
    let gem5 = |name: &str| {
        let s = catalogue.iter().find(|s| s.name == name).unwrap();
        s.gem5.clone().unwrap_or_default()
    };
    let l1 = "sum of `system.ruby.l2_cntrl*.L1Dcache.m_demand_misses`";
    assert_eq!(gem5("system.cpu{N}.l1d.misses"), l1);
    assert_eq!(gem5("system.total.l1d.misses"), l1);
    assert!(gem5("sim.cycles").contains("`system.moped.cycles`"));
    assert_eq!(gem5("system.moped.line_owns"), "`system.moped.lineOwns`");
    assert_eq!(gem5("system.cpu{N}.l2.hits"), "");
}

#[test]
fn every_key_of_table1_toml_is_a_parameter_with_its_default() {
    let text = std::fs::read_to_string(repo("configs/table1.toml")).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let params = info::params();
    let mut seen = 0;
    let mut check = |key: String, value: &toml::Value| {
        let p = params
            .iter()
            .find(|p| p.key == key)
            .unwrap_or_else(|| panic!("configs/table1.toml's `{key}` is not in the catalogue"));
        assert_eq!(p.default, value.to_string(), "default of {key}");
        seen += 1;
    };
    flatten(&table, "", &mut check);
    assert_eq!(
        seen,
        params.len(),
        "keys in the catalogue but not in table1.toml"
    );
}

fn flatten(table: &toml::Table, prefix: &str, f: &mut impl FnMut(String, &toml::Value)) {
    for (k, v) in table {
        let key = format!("{prefix}{k}");
        match v {
            toml::Value::Table(t) => flatten(t, &format!("{key}."), f),
            v => f(key, v),
        }
    }
}

#[test]
fn the_docs_pages_are_the_catalogues_output() {
    let pages = [
        (
            "docs/configuration.md",
            info::params_markdown(&info::params()),
            "config --format md",
        ),
        (
            "docs/statistics.md",
            info::stats_markdown(&info::stats().unwrap()),
            "stats --format md",
        ),
        ("docs/cli-reference.md", moped::cli::cli_reference(), "cli"),
    ];
    for (page, text, what) in pages {
        let on_disk = std::fs::read_to_string(repo(page)).unwrap_or_default();
        assert!(
            on_disk == text,
            "{page} is stale: regenerate it with `moped info {what} > {page}`"
        );
    }
}

/// The heartbeat's end: the messages a run verifies, known before it runs (the workload's
/// sends and its barriers' rounds), so its time left is extrapolated to the right end.
#[test]
fn the_messages_a_run_will_verify_are_known_before_it_runs() {
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    for (workload, scale) in [
        ("workloads/imb/alltoall-16k.toml", 0.1),
        ("workloads/imb/bcast-16k.toml", 0.1),
        ("workloads/npb/mg-S.toml", 0.25),
    ] {
        let o = mpi(
            &cfg,
            &repo(workload),
            Design::OptCopy,
            1,
            (Some(scale), None),
            None,
        )
        .unwrap();
        let run = &o.run;
        assert_eq!(
            run.messages_expected,
            Some(run.messages_verified),
            "{workload}"
        );
    }
}
