//! `moped compare`: an embedded run simulated here and a gem5-style folder built from the
//! hand-written gem5 fixture, read alike and compared metric by metric; the fallbacks and
//! errors of the metric sources; the command line.

use std::path::{Path, PathBuf};
use std::process::Command;

use moped::analysis::compare::{compare, detect, Comparison, Row, RunKind};
use moped::config::SystemConfig;
use moped::mpi::{run_workload, MpiParams};
use moped::workload::load_workload;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn gem5_fixture() -> String {
    std::fs::read_to_string(root().join("tests/fixtures/stats/gem5-two-dumps.txt")).unwrap()
}

/// A fresh folder under the system's temporary folder.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("moped-compare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const CONFIG_INI: &str = "[root]\ntype=Root\nchildren=system\n\n[system]\ntype=System\n\
                          children=clk_domain ruby\nclk_domain=system.clk_domain\n\n\
                          [system.clk_domain]\ntype=SrcClockDomain\nclock=1000\n\n\
                          [system.ruby]\ntype=RubySystem\nclk_domain=system.ruby.clk_domain\n\n\
                          [system.ruby.clk_domain]\ntype=SrcClockDomain\nclock=1000\n\
                          init_perf_level=0\n";

/// A gem5 output folder: `stats` as stats.txt, and a config.ini (or none).
fn gem5_dir(name: &str, stats: &str, config_ini: Option<&str>) -> PathBuf {
    let d = scratch(name);
    std::fs::write(d.join("stats.txt"), stats).unwrap();
    if let Some(ini) = config_ini {
        std::fs::write(d.join("config.ini"), ini).unwrap();
    }
    d
}

/// An embedded run simulated now: IMB PingPong 16 kB under OPTCOPY, written as `moped mpi`
/// writes it. Returns the folder and the run's own totals.
fn embedded_run(name: &str) -> (PathBuf, moped::stats::StatsRegistry) {
    // Cold, as the recorded gem5 run beside it (`workload.warmup=false`): the hand-written
    // fixture's numbers are a cold run's.
    let mut cfg = SystemConfig::default();
    cfg.workload.warmup = false;
    let (w, _) = load_workload(
        &root().join("workloads/imb/pingpong-16k.toml"),
        None,
        cfg.workload.warmup,
    )
    .unwrap();
    let run = run_workload(
        &cfg,
        &w,
        moped::design::Design::OptCopy,
        1,
        MpiParams::default(),
    )
    .unwrap();
    let d = scratch(name);
    run.stats.write_all(&d).unwrap();
    (d, run.stats)
}

fn row<'a>(c: &'a Comparison, metric: &str) -> &'a Row {
    c.rows
        .iter()
        .find(|r| r.metric == metric)
        .unwrap_or_else(|| panic!("no row {metric}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn simulated_run_beside_the_gem5_fixture() {
    let g = gem5_dir("sim-g5", &gem5_fixture(), Some(CONFIG_INI));
    let (e, stats) = embedded_run("sim-emb");
    assert_eq!(detect(&g).unwrap(), RunKind::Gem5);
    assert_eq!(detect(&e).unwrap(), RunKind::Embedded);
    let c = compare(&g, &e, -1, 10.0).unwrap();
    // The embedded column sums the cores; the run's own totals must agree with it.
    let total = |n: &str| stats.get(n).unwrap().value.as_f64();
    let expect = [
        ("cycles", total("sim.cycles"), 139_817.0),
        ("l1_misses", total("system.total.l1d.misses"), 540.0),
        ("l2_misses", total("system.total.l2.misses"), 531.0),
        (
            "l2_misses_private_cores",
            total("system.total.l2.misses_other_cache"),
            2.0,
        ),
        (
            "l2_misses_global_cores",
            total("system.total.l2.misses_memory"),
            520.0,
        ),
        (
            "l2_misses_upgrade",
            total("system.total.l2.misses_upgrade"),
            9.0,
        ),
        (
            "moped_misses_other_cache",
            total("system.total.l2.moped_misses_other_cache"),
            5120.0,
        ),
        (
            "moped_misses_memory",
            total("system.total.l2.moped_misses_memory"),
            540.0,
        ),
        // Figure 10's counts: the MOPEDs' misses with the cores'.
        (
            "l2_misses_private",
            total("system.total.l2.misses_other_cache")
                + total("system.total.l2.moped_misses_other_cache"),
            5122.0,
        ),
        (
            "l2_misses_global",
            total("system.total.l2.misses_memory") + total("system.total.l2.moped_misses_memory"),
            1060.0,
        ),
    ];
    for (metric, emb, gem) in expect {
        let r = row(&c, metric);
        assert_eq!(r.embedded, Some(emb), "{metric}");
        assert_eq!(r.gem5, Some(gem), "{metric}");
        assert_eq!(r.difference, Some(gem - emb), "{metric}");
        let rel = 100.0 * (gem - emb) / gem;
        assert!(close(r.relative_pct.unwrap(), rel), "{metric}: {r:?}");
        assert_eq!(r.within, Some(rel.abs() <= 10.0), "{metric}");
    }
    assert!(total("sim.cycles") > 0.0);
    // The MOPED's line requests: the run has them, the gem5 fixture not (yet).
    let r = row(&c, "moped_line_reads");
    assert_eq!(r.embedded, Some(total("system.moped.line_reads")));
    assert_eq!((r.gem5, r.within), (None, None));
    assert!(r.gem5_source.contains("system.moped.lineReads"), "{r:?}");
    let _ = std::fs::remove_dir_all(&g);
    let _ = std::fs::remove_dir_all(&e);
}

/// The two fixtures as run folders: a comparison whose every number is known.
fn fixture_pair(name: &str) -> (PathBuf, PathBuf) {
    let g = gem5_dir(&format!("{name}-g5"), &gem5_fixture(), Some(CONFIG_INI));
    let e = scratch(&format!("{name}-emb"));
    std::fs::copy(
        root().join("tests/fixtures/stats/pingpong-16k-optcopy.txt"),
        e.join("stats.txt"),
    )
    .unwrap();
    std::fs::write(
        e.join("stats.json"),
        r#"{"format": "moped-stats-1", "stats": []}"#,
    )
    .unwrap();
    (g, e)
}

#[test]
fn fixture_pair_numbers_and_relative_differences() {
    let (g, e) = fixture_pair("pair");
    let c = compare(&g, &e, -1, 10.0).unwrap();
    // (metric, embedded, gem5, relative difference in % of gem5, within 10 %)
    let want: [(&str, f64, f64, f64, bool); 10] = [
        (
            "cycles",
            133_991.0,
            139_817.0,
            100.0 * 5826.0 / 139_817.0,
            true,
        ),
        ("l1_misses", 528.0, 540.0, 100.0 * 12.0 / 540.0, true),
        ("l2_misses", 528.0, 531.0, 100.0 * 3.0 / 531.0, true),
        ("l2_misses_private_cores", 0.0, 2.0, 100.0, false),
        (
            "l2_misses_global_cores",
            528.0,
            520.0,
            -100.0 * 8.0 / 520.0,
            true,
        ),
        ("l2_misses_upgrade", 0.0, 9.0, 100.0, false),
        ("moped_misses_other_cache", 5120.0, 5120.0, 0.0, true),
        (
            "moped_misses_memory",
            546.0,
            540.0,
            -100.0 * 6.0 / 540.0,
            true,
        ),
        // Figure 10's counts: the MOPEDs' misses with the cores'.
        (
            "l2_misses_private",
            5120.0,
            5122.0,
            100.0 * 2.0 / 5122.0,
            true,
        ),
        (
            "l2_misses_global",
            1074.0,
            1060.0,
            -100.0 * 14.0 / 1060.0,
            true,
        ),
    ];
    for (metric, emb, gem, rel, within) in want {
        let r = row(&c, metric);
        assert_eq!((r.embedded, r.gem5), (Some(emb), Some(gem)), "{metric}");
        assert_eq!(r.difference, Some(gem - emb), "{metric}");
        assert!(close(r.relative_pct.unwrap(), rel), "{metric}: {r:?}");
        assert_eq!(r.within, Some(within), "{metric}");
    }
    assert!(close(
        row(&c, "cycles").relative_pct.unwrap(),
        4.166_875_272_677_857
    ));
    assert_eq!(row(&c, "cycles").gem5_source, "`system.moped.cycles`");
    assert_eq!(
        row(&c, "l2_misses_upgrade").gem5_source,
        "l2_misses - l2_misses_private_cores - l2_misses_global_cores"
    );
    assert_eq!(
        row(&c, "l2_misses_global").gem5_source,
        "l2_misses_global_cores + moped_misses_memory"
    );
    assert_eq!(
        c.outside()
            .iter()
            .map(|r| r.metric.as_str())
            .collect::<Vec<_>>(),
        ["l2_misses_private_cores", "l2_misses_upgrade"]
    );
    assert_eq!((c.gem5.dump, c.gem5.dumps), (2, 2));
    // A wider tolerance accepts the cycles' 4.17 %; a narrower one does not.
    let tight = compare(&g, &e, -1, 4.0).unwrap();
    assert_eq!(row(&tight, "cycles").within, Some(false));
    assert_eq!(row(&tight, "l1_misses").within, Some(true));

    // The outputs carry the same numbers.
    let json = c.to_json();
    assert_eq!(json["tolerance_pct"], 10.0);
    assert_eq!(json["rows"][0]["metric"], "cycles");
    assert_eq!(json["rows"][0]["gem5"], 139_817.0);
    assert_eq!(json["rows"][3]["within"], false);
    assert_eq!(json["rows"][10]["metric"], "moped_line_reads");
    assert!(json["rows"][10]["gem5"].is_null());
    let csv = c.to_csv();
    let line = csv.lines().nth(5).unwrap();
    assert!(
        line.starts_with(
            "l2_misses_global_cores,global L2 misses (cores),528,520,-8,-1.538461538461538"
        ),
        "{line}"
    );
    let md = c.to_markdown();
    assert!(
        md.contains("| global L2 misses (cores) | 528 | 520 | -8 | -1.54 % | yes |"),
        "{md}"
    );
    assert!(
        md.contains("| global L2 misses | 1074 | 1060 | -14 | -1.32 % | yes |"),
        "{md}"
    );
    let text = c.to_text();
    assert!(text.contains("dump 2 of 2"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("cycles") && l.ends_with("+4.17 %          yes")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&g);
    let _ = std::fs::remove_dir_all(&e);
}

#[test]
fn an_earlier_dump_and_an_absent_nozero_histogram() {
    let (g, e) = fixture_pair("dump0");
    let c = compare(&g, &e, 0, 10.0).unwrap();
    assert_eq!((c.gem5.dump, c.gem5.dumps), (1, 2));
    assert_eq!(row(&c, "cycles").gem5, Some(41_731.0));
    assert_eq!(row(&c, "l1_misses").gem5, Some(234.0));
    // gem5 prints no line of a nozero histogram without samples: that is 0 misses.
    let p = row(&c, "l2_misses_private_cores");
    assert_eq!(p.gem5, Some(0.0));
    assert!(p.gem5_source.contains("not printed"), "{p:?}");
    assert_eq!(row(&c, "l2_misses_global_cores").gem5, Some(228.0));
    // This dump's MOPED misses: 2 x 1200 from other caches, 2 x 100 from memory.
    assert_eq!(row(&c, "l2_misses_private").gem5, Some(2400.0));
    assert_eq!(row(&c, "l2_misses_global").gem5, Some(428.0));
    assert_eq!(row(&c, "l2_misses_upgrade").gem5, Some(1.0));
    assert!(compare(&g, &e, 2, 10.0)
        .unwrap_err()
        .to_string()
        .contains("has no dump 2: it holds 2"));
    assert_eq!(
        compare(&g, &e, -2, 10.0).unwrap().rows,
        compare(&g, &e, 0, 10.0).unwrap().rows
    );
    let _ = std::fs::remove_dir_all(&g);
    let _ = std::fs::remove_dir_all(&e);
}

fn without(text: &str, pattern: &str) -> String {
    text.lines()
        .filter(|l| !l.contains(pattern))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn cycles_from_sim_ticks_and_the_ruby_clock() {
    let (g0, e) = fixture_pair("clock");
    let stats = without(&gem5_fixture(), ".cycles ");
    // config.ini: 1000 ticks per Ruby cycle.
    let g = gem5_dir("clock-ini", &stats, Some(CONFIG_INI));
    let c = compare(&g, &e, -1, 10.0).unwrap();
    let r = row(&c, "cycles");
    assert_eq!(r.gem5, Some(139_820.0));
    assert!(
        r.gem5_source
            .starts_with("`simTicks` / Ruby clock period (1000 ticks, ")
            && r.gem5_source.ends_with("config.ini)"),
        "{r:?}"
    );
    // config.json: the Ruby domain nested under system.ruby, 500 ticks.
    let g2 = gem5_dir("clock-json", &stats, None);
    std::fs::write(
        g2.join("config.json"),
        r#"{"type": "Root", "path": "root", "system": {"type": "System", "path": "system",
            "ruby": {"type": "RubySystem", "path": "system.ruby",
              "clk_domain": {"type": "SrcClockDomain", "path": "system.ruby.clk_domain",
                             "clock": [500], "init_perf_level": 0}}}}"#,
    )
    .unwrap();
    assert_eq!(detect(&g2).unwrap(), RunKind::Gem5);
    let c = compare(&g2, &e, -1, 10.0).unwrap();
    assert_eq!(row(&c, "cycles").gem5, Some(279_640.0));
    // A derived domain: the system clock divided by 2.
    let derived = "[system.ruby]\nclk_domain=system.ruby.clk_domain\n\
                   [system.ruby.clk_domain]\ntype=DerivedClockDomain\nclk_divider=2\n\
                   clk_domain=system.clk_domain\n[system.clk_domain]\nclock=250\n";
    std::fs::write(g.join("config.ini"), derived).unwrap();
    let c = compare(&g, &e, -1, 10.0).unwrap();
    assert_eq!(row(&c, "cycles").gem5, Some(279_640.0));
    // A broken config.ini is named with its line and column.
    std::fs::write(g.join("config.ini"), "[system.ruby]\nclk_domain system\n").unwrap();
    let err = compare(&g, &e, -1, 10.0).unwrap_err().to_string();
    assert!(
        err.contains("config.ini:2:1: expected `[section]` or `key=value`"),
        "{err}"
    );
    for d in [g0, g, g2, e] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn missing_statistics_name_the_statistic_and_the_file() {
    let (g0, e) = fixture_pair("missing");
    let g = gem5_dir(
        "missing-g5",
        &without(&gem5_fixture(), "L1Dcache.m_demand_misses"),
        Some(CONFIG_INI),
    );
    let err = compare(&g, &e, -1, 10.0).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "gem5 run {}: cannot read L1 misses: no statistic matching \
             `system.ruby.l2_cntrl*.L1Dcache.m_demand_misses` in {} (dump 2 of 2)",
            g.display(),
            g.join("stats.txt").display()
        )
    );
    // No per-core cycles and no Ruby clock: both sources are named.
    let g2 = gem5_dir(
        "missing-clock",
        &without(&gem5_fixture(), ".cycles "),
        Some("[system]\nclk_domain=system.clk_domain\n"),
    );
    let err = compare(&g2, &e, -1, 10.0).unwrap_err().to_string();
    assert!(
        err.contains("cannot read cycles: no `system.moped.cycles` in ")
            && err.contains("; nor ")
            && err.contains("no `clk_domain` for `system.ruby`"),
        "{err}"
    );
    // An embedded run without its per-core counters.
    std::fs::write(
        e.join("stats.txt"),
        without(
            &std::fs::read_to_string(root().join("tests/fixtures/stats/pingpong-16k-optcopy.txt"))
                .unwrap(),
            ".l2.misses_memory",
        ),
    )
    .unwrap();
    let g3 = gem5_dir("missing-ok", &gem5_fixture(), Some(CONFIG_INI));
    let err = compare(&g3, &e, -1, 10.0).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "embedded run {}: cannot read global L2 misses (cores): no statistic matching \
             `system.cpu*.l2.misses_memory`",
            e.display()
        )),
        "{err}"
    );
    // A parse error in a stats.txt is reported with its position.
    std::fs::write(g3.join("stats.txt"), "\nsimTicks 10\n").unwrap();
    let err = compare(&g3, &e, -1, 10.0).unwrap_err().to_string();
    assert!(
        err.contains("stats.txt:2:1: expected `---------- Begin Simulation Statistics"),
        "{err}"
    );
    for d in [g0, g, g2, g3, e] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn run_folders_are_told_apart() {
    let (g, e) = fixture_pair("kinds");
    let err = compare(&e, &g, -1, 10.0).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "--gem5 {}: this is an embedded run, not a gem5 one (its stats.json is moped's \
             and it has no gem5 config)",
            e.display()
        )
    );
    let nothing = scratch("kinds-empty");
    let err = detect(&nothing).unwrap_err().to_string();
    assert!(err.ends_with("no stats.txt in it (expected the output folder of `moped run`/`moped mpi` or gem5's m5out)"), "{err}");
    std::fs::write(nothing.join("stats.txt"), "").unwrap();
    assert!(detect(&nothing)
        .unwrap_err()
        .to_string()
        .contains("cannot tell which simulator wrote it"));
    // Our stats.txt alone still names its writer.
    std::fs::copy(
        root().join("tests/fixtures/stats/pingpong-16k-optcopy.txt"),
        nothing.join("stats.txt"),
    )
    .unwrap();
    assert_eq!(detect(&nothing).unwrap(), RunKind::Embedded);
    assert!(detect(&nothing.join("stats.txt"))
        .unwrap_err()
        .to_string()
        .ends_with("not a folder"));
    assert!(compare(&g, &e, -1, f64::NAN).is_err());
    for d in [g, e, nothing] {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn moped(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_moped"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn command_line() {
    let (g, e) = fixture_pair("cli");
    let work = scratch("cli-work");
    let (gs, es) = (g.to_str().unwrap(), e.to_str().unwrap());
    let (code, out, err) = moped(
        &["compare", "--gem5", "no/such/run", "--embedded", es],
        &work,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err, "error: --gem5 no/such/run: no such folder\n");
    let (code, _, err) = moped(
        &["compare", "--gem5", gs, "--embedded", "missing-too"],
        &work,
    );
    assert_eq!(code, 1);
    assert_eq!(err, "error: --embedded missing-too: no such folder\n");

    let (code, out, _) = moped(&["compare", "--gem5", gs, "--embedded", es], &work);
    assert_eq!(code, 0);
    assert!(out.contains("private L2 misses"), "{out}");
    let (code, out, _) = moped(
        &[
            "compare",
            "--gem5",
            gs,
            "--embedded",
            es,
            "--format",
            "json",
        ],
        &work,
    );
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["rows"][1]["embedded"], 528.0);
    assert_eq!(v["gem5"]["dump"], 2);

    let (code, out, _) = moped(
        &[
            "compare",
            "--gem5",
            gs,
            "--embedded",
            es,
            "--out",
            "cmp.md",
            "--dump",
            "-1",
        ],
        &work,
    );
    assert_eq!(code, 0);
    assert!(out.ends_with("comparison written to cmp.md\n"), "{out}");
    let md = std::fs::read_to_string(work.join("cmp.md")).unwrap();
    assert!(
        md.contains("| L1 misses | 528 | 540 | 12 | +2.22 % | yes |"),
        "{md}"
    );
    let (code, _, _) = moped(
        &[
            "compare",
            "--gem5",
            gs,
            "--embedded",
            es,
            "--out",
            "cmp.csv",
        ],
        &work,
    );
    assert_eq!(code, 0);
    let csv = std::fs::read_to_string(work.join("cmp.csv")).unwrap();
    assert!(csv.starts_with("metric,label,embedded,gem5,difference,relative_pct,within"));

    let (code, _, err) = moped(
        &["compare", "--gem5", gs, "--embedded", es, "--check"],
        &work,
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "error: 2 of 14 metrics differ by more than 10 %: private L2 misses (cores), upgrade L2 misses\n"
    );
    let (code, _, _) = moped(
        &[
            "compare",
            "--gem5",
            gs,
            "--embedded",
            es,
            "--check",
            "--tolerance",
            "100",
        ],
        &work,
    );
    assert_eq!(code, 0);
    let (code, _, err) = moped(
        &[
            "compare",
            "--gem5",
            gs,
            "--embedded",
            es,
            "--tolerance",
            "-5",
        ],
        &work,
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("--tolerance -5: expected a percentage of at least 0"),
        "{err}"
    );
    for d in [g, e, work] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A real gem5 run of IMB PingPong 16 kB under OPTCOPY
/// (`tests/fixtures/gem5-pingpong-16k-optcopy`, told to be gem5's by its `moped.json`)
/// beside the same program simulated here.
#[test]
fn a_real_gem5_run_beside_the_same_program() {
    let gem5 = root().join("tests/fixtures/gem5-pingpong-16k-optcopy");
    assert_eq!(detect(&gem5).unwrap(), RunKind::Gem5);
    let (emb, _) = embedded_run("real-gem5");
    let c = compare(&gem5, &emb, -1, 10.0).unwrap();
    assert_eq!(row(&c, "cycles").gem5, Some(135_250.0));
    assert_eq!(row(&c, "l1_misses").gem5, Some(564.0));
    assert_eq!(row(&c, "l2_misses").gem5, Some(564.0));
    assert_eq!(row(&c, "l2_misses_global_cores").gem5, Some(564.0));
    // The MOPEDs' misses, from the MOPED sequencers' statistics.
    assert_eq!(row(&c, "moped_misses_other_cache").gem5, Some(5139.0));
    assert_eq!(row(&c, "moped_misses_memory").gem5, Some(555.0));
    assert_eq!(row(&c, "l2_misses_global").gem5, Some(1119.0));
    assert_eq!(row(&c, "moped_line_reads").gem5, Some(5220.0));
    // Every metric agrees within the tolerance, the misses exactly.
    for r in &c.rows {
        assert_eq!(r.within, Some(true), "{r:?}");
    }
    for m in [
        "l1_misses",
        "l2_misses",
        "l2_misses_private",
        "l2_misses_global",
    ] {
        assert_eq!(row(&c, m).difference, Some(0.0), "{m}: {:?}", row(&c, m));
    }
    std::fs::remove_dir_all(emb).unwrap();
}

/// A run without MOPEDs has no MOPED misses; a run with MOPEDs but without their count is
/// refused rather than read as 0.
#[test]
fn moped_misses_without_and_with_mopeds() {
    let (g0, e) = fixture_pair("nomoped");
    // The embedded side without its MOPEDs' statistics: a baseline run.
    let text = std::fs::read_to_string(e.join("stats.txt")).unwrap();
    let baseline = without(&without(&text, ".moped"), "moped_");
    std::fs::write(e.join("stats.txt"), baseline).unwrap();
    let g = gem5_dir(
        "nomoped-g5",
        &without(&gem5_fixture(), "moped_sequencer"),
        Some(CONFIG_INI),
    );
    let c = compare(&g, &e, -1, 10.0).unwrap();
    for side in [
        row(&c, "moped_misses_memory").embedded,
        row(&c, "moped_misses_memory").gem5,
    ] {
        assert_eq!(side, Some(0.0));
    }
    let r = row(&c, "l2_misses_global");
    assert_eq!((r.embedded, r.gem5), (Some(528.0), Some(520.0)));
    assert!(
        row(&c, "moped_misses_other_cache")
            .gem5_source
            .contains("no MOPED"),
        "{r:?}"
    );
    // gem5 with MOPEDs (their line reads counted) but no MOPED sequencer histograms.
    let mut stats = without(&gem5_fixture(), "moped_sequencer");
    let end = "---------- End Simulation Statistics";
    let at = stats.rfind(end).unwrap();
    stats.insert_str(
        at,
        "system.moped.lineReads  5154  # MOPED line reads (Count)\n",
    );
    let g2 = gem5_dir("nomoped-g5b", &stats, Some(CONFIG_INI));
    let err = compare(&g2, &e, -1, 10.0).unwrap_err().to_string();
    assert!(
        err.contains("cannot read MOPED L2 misses (other cache): no statistic matching")
            && err.contains("has MOPEDs (`system.moped.lineReads`) but no count of their misses"),
        "{err}"
    );
    for d in [g0, g, g2, e] {
        let _ = std::fs::remove_dir_all(d);
    }
}
