//! The `stats.txt` reader on two fixtures: a dump written by our own simulator
//! (`moped mpi --workload workloads/imb/pingpong-16k.toml --protocol optcopy`) and a
//! hand-written file in gem5 v24's layout with two dumps, histograms, distributions,
//! vectors, Ruby's oneline counters and nan values. Then writing and reading back.

use std::path::PathBuf;

use moped::stats::gem5::{glob_match, Cell, Dump, Entry, StatsFile, Values};
use moped::stats::{StatValue, StatsRegistry};
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/stats")
        .join(name)
}

fn gem5() -> StatsFile {
    StatsFile::read(&fixture("gem5-two-dumps.txt")).expect("the gem5 fixture parses")
}

fn scalar(d: &Dump, name: &str) -> Cell {
    d.get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .cell
        .clone()
}

#[test]
fn gem5_fixture_scalars_and_dumps() {
    let f = gem5();
    assert_eq!(f.dumps.len(), 2);
    let (first, last) = (&f.dumps[0], &f.dumps[1]);
    assert_eq!(first.begin_line, 2);
    assert_eq!(last.begin_line, 289);
    assert_eq!(first.value("simTicks"), Some(60_000_000.0));
    assert_eq!(last.value("simTicks"), Some(139_820_000.0));
    assert_eq!(f.dump(-1).unwrap().value("simTicks"), Some(139_820_000.0));
    let e = last.entry("simFreq").unwrap();
    assert_eq!(e.unit, "(Tick/Second)");
    assert_eq!(e.desc, "The number of ticks per simulated second");
    assert_eq!(
        scalar(last, "simFreq").value,
        StatValue::Int(1_000_000_000_000)
    );
    let e = last.entry("hostTickRate").unwrap();
    assert_eq!(
        e.desc,
        "The number of ticks simulated per host second (ticks/s)"
    );
    assert_eq!(scalar(last, "simSeconds").value, StatValue::Float(0.00014));
    assert_eq!(last.value("system.cpu01.cycles"), Some(139_817.0));
    assert_eq!(last.max("system.cpu*.cycles"), Some(139_817.0));
    assert_eq!(first.max("system.cpu*.cycles"), Some(41_731.0));
    assert_eq!(first.value("system.cpu00.cycles"), Some(0.0));
    assert_eq!(last.entry("system.cpu00.cycles").unwrap().line, 302);
}

#[test]
fn gem5_fixture_histograms_and_distributions() {
    let f = gem5();
    let last = &f.dumps[1];
    let dir = "system.ruby.MachineType.Directory.miss_mach_latency_hist_seqr";
    assert_eq!(last.value(&format!("{dir}::samples")), Some(520.0));
    assert_eq!(last.value(&format!("{dir}::bucket_size")), Some(32.0));
    assert_eq!(
        scalar(last, &format!("{dir}::mean")).value,
        StatValue::Float(77.323077)
    );
    // The buckets of a oneline histogram: one line, ten groups, named here by index.
    let e = last.entry(dir).unwrap();
    let Values::Oneline(cells) = &e.values else {
        panic!("{dir} is not a oneline entry")
    };
    let buckets: Vec<f64> = cells.iter().map(|c| c.value.as_f64()).collect();
    assert_eq!(
        buckets,
        [0.0, 0.0, 410.0, 95.0, 10.0, 5.0, 0.0, 0.0, 0.0, 0.0]
    );
    assert_eq!(cells[2].pdf, Some(78.85));
    assert_eq!(cells[3].cdf, Some(97.12));
    assert_eq!(e.unit, "Unspecified");
    assert_eq!(e.desc, "");
    assert_eq!(last.value(&format!("{dir}::3")), Some(95.0));
    assert_eq!(last.sum(&format!("{dir}::?")), Some(520.0));
    // The L2Cache histogram is nozero: absent from the first dump, present in the last.
    let l2 = "system.ruby.MachineType.L2Cache.miss_mach_latency_hist_seqr::samples";
    assert_eq!(f.dumps[0].value(l2), None);
    assert_eq!(last.value(l2), Some(2.0));
    // A distribution whose buckets start below zero: `-` inside names.
    let slack = "system.cpu00.issueSlack";
    assert_eq!(last.value(&format!("{slack}::-8--5")), Some(3.0));
    let c = scalar(last, &format!("{slack}::-4--1"));
    assert_eq!(
        (c.value, c.pdf, c.cdf),
        (StatValue::Int(11), Some(17.46), Some(25.4))
    );
    assert_eq!(last.value(&format!("{slack}::underflows")), Some(2.0));
    assert_eq!(last.value(&format!("{slack}::overflows")), Some(1.0));
    assert_eq!(
        scalar(last, &format!("{slack}::min_value")).value,
        StatValue::Float(-11.0)
    );
    assert_eq!(last.value(&format!("{slack}::total")), Some(63.0));
    // An empty histogram that is not nozero prints nan.
    for field in ["mean", "gmean", "stdev"] {
        let v = last
            .value(&format!("system.ruby.hit_latency_hist_seqr::{field}"))
            .unwrap();
        assert!(v.is_nan(), "{field}: {v}");
    }
    let stall = "system.ruby.l2_cntrl*.requestToL2Cache.m_avg_stall_time";
    assert_eq!(last.glob(stall).len(), 16);
    assert!(last.sum(stall).unwrap().is_nan());
    let e = last
        .entry("system.ruby.l2_cntrl3.requestToL2Cache.m_avg_stall_time")
        .unwrap();
    assert_eq!(e.unit, "(Tick/Count)");
}

#[test]
fn gem5_fixture_vectors_and_oneline_counters() {
    let f = gem5();
    let last = &f.dumps[1];
    let c = scalar(last, "system.ruby.network.msg_count_by_vnet::2");
    assert_eq!(
        (c.value, c.pdf, c.cdf),
        (StatValue::Int(2450), Some(50.2), Some(100.0))
    );
    assert_eq!(
        last.value("system.ruby.network.msg_count_by_vnet::total"),
        Some(4880.0)
    );
    let load = "system.ruby.L2Cache_Controller.Load";
    let Values::Oneline(cells) = &last.entry(load).unwrap().values else {
        panic!("{load} is not oneline")
    };
    assert_eq!(cells.len(), 16);
    assert_eq!(
        cells[1],
        Cell {
            value: StatValue::Int(1502),
            pdf: Some(25.54),
            cdf: Some(51.21),
        }
    );
    assert_eq!(last.value(&format!("{load}::15")), Some(205.0));
    assert_eq!(last.value(&format!("{load}::16")), None);
    assert_eq!(last.value(&format!("{load}::total")), Some(5882.0));
    // The elements add up to the printed total, in both dumps.
    for d in &f.dumps {
        for name in [
            "system.ruby.L2Cache_Controller.Load",
            "system.ruby.L2Cache_Controller.Store",
            "system.ruby.L2Cache_Controller.NP.L1_GETS",
            "system.ruby.Directory_Controller.GETS",
        ] {
            let elements: f64 = d
                .glob(&format!("{name}::*"))
                .iter()
                .filter(|f| !f.name.ends_with("::total"))
                .map(|f| f.value())
                .sum();
            assert_eq!(Some(elements), d.value(&format!("{name}::total")), "{name}");
        }
    }
    assert_eq!(
        last.value("system.ruby.L2Cache_Controller.NP.L1_GETS::0"),
        Some(259.0)
    );
}

#[test]
fn gem5_fixture_cache_sums() {
    let f = gem5();
    let sum = |d: &Dump, arr: &str| {
        d.sum(&format!("system.ruby.l2_cntrl*.{arr}.m_demand_misses"))
            .unwrap()
    };
    assert_eq!(sum(&f.dumps[1], "L1Dcache"), 540.0);
    assert_eq!(sum(&f.dumps[1], "L2cache"), 531.0);
    assert_eq!(sum(&f.dumps[0], "L1Dcache"), 234.0);
    assert_eq!(sum(&f.dumps[0], "L2cache"), 229.0);
    let l1 = f.dumps[1].glob("system.ruby.l2_cntrl*.L1Dcache.m_demand_misses");
    assert_eq!(l1.len(), 16);
    assert_eq!(l1[1].name, "system.ruby.l2_cntrl1.L1Dcache.m_demand_misses");
    assert_eq!(l1[1].entry.desc, "Number of cache demand misses");
    assert_eq!(
        f.dumps[1]
            .with_prefix("system.ruby.l2_cntrl15.L2cache.")
            .len(),
        3
    );
}

#[test]
fn embedded_fixture_reads_like_gem5() {
    let f = StatsFile::read(&fixture("pingpong-16k-optcopy.txt")).expect("our own output parses");
    assert_eq!(f.dumps.len(), 1);
    let d = &f.dumps[0];
    assert_eq!(d.value("sim.cycles"), Some(133_991.0));
    let e = d.entry("sim.cycles").unwrap();
    assert_eq!(
        (e.desc.as_str(), e.unit.as_str(), e.line),
        ("Cycles until the last core finished", "Cycle", 3)
    );
    assert_eq!(d.sum("system.cpu*.l1d.misses"), Some(528.0));
    assert_eq!(d.value("system.total.l1d.misses"), Some(528.0));
    assert_eq!(d.sum("system.cpu*.l2.misses_memory"), Some(528.0));
    assert_eq!(d.sum("system.cpu*.l2.misses_other_cache"), Some(0.0));
    assert_eq!(d.value("system.moped.line_reads"), Some(5154.0));
    assert_eq!(d.sum("system.moped?.line_reads"), Some(2577.0 * 2.0));
    // Names with `->` and units with a `/`.
    assert_eq!(
        d.glob("system.network.link.core*->leaf*.messages").len(),
        16
    );
    let e = d.entry("host.events_per_second").unwrap();
    assert_eq!(e.unit, "Count/Second");
    assert!(matches!(
        e.values,
        Values::Scalar(Cell {
            value: StatValue::Float(_),
            ..
        })
    ));
    // Every line of ours has a description and a unit.
    assert!(d
        .entries()
        .iter()
        .all(|e| !e.desc.is_empty() && !e.unit.is_empty()));
    assert_eq!(d.entries().len(), 1135);
}

#[test]
fn fixtures_survive_writing_and_reading_again() {
    for name in ["gem5-two-dumps.txt", "pingpong-16k-optcopy.txt"] {
        let f = StatsFile::read(&fixture(name)).unwrap();
        let again = StatsFile::parse(&f.to_text(), name).unwrap();
        assert_eq!(f.dumps.len(), again.dumps.len());
        for (a, b) in f.dumps.iter().zip(&again.dumps) {
            assert_eq!(a.entries().len(), b.entries().len());
            for (x, y) in a.entries().iter().zip(b.entries()) {
                assert!(same_entry(x, y), "{name}: {x:?} became {y:?}");
            }
        }
    }
}

#[test]
fn errors_in_a_broken_copy_name_the_file_line_and_column() {
    let text = std::fs::read_to_string(fixture("gem5-two-dumps.txt")).unwrap();
    // Damage one bucket of the Directory histogram's oneline line in the last dump.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .rposition(|l| {
            l.starts_with("system.ruby.MachineType.Directory.miss_mach_latency_hist_seqr ")
        })
        .unwrap();
    let col = lines[at].find("410").unwrap() + 1;
    lines[at] = lines[at].replacen("410", "4l0", 1);
    let e = StatsFile::parse(&lines.join("\n"), "broken/stats.txt").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "broken/stats.txt:{}:{col}: expected a number (`12`, `-0.5`, `nan`, `inf`), found `4l0`",
            at + 1
        )
    );
    // A file cut inside its last dump.
    let kept: Vec<&str> = text.lines().take(300).collect();
    let e = StatsFile::parse(&kept.join("\n"), "cut.txt").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "cut.txt:300:{}: expected `---------- End Simulation Statistics   ----------` \
             closing the dump begun on line 289, found end of file",
            kept[299].chars().count() + 1
        )
    );
}

fn same_value(a: &StatValue, b: &StatValue) -> bool {
    match (a, b) {
        (StatValue::Int(x), StatValue::Int(y)) => x == y,
        (StatValue::Float(x), StatValue::Float(y)) => x.to_bits() == y.to_bits(),
        _ => false,
    }
}

fn same_cell(a: &Cell, b: &Cell) -> bool {
    same_value(&a.value, &b.value) && a.pdf == b.pdf && a.cdf == b.cdf
}

fn same_entry(a: &Entry, b: &Entry) -> bool {
    let values = match (&a.values, &b.values) {
        (Values::Scalar(x), Values::Scalar(y)) => same_cell(x, y),
        (Values::Oneline(x), Values::Oneline(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_cell(p, q))
        }
        _ => false,
    };
    values && a.name == b.name && a.desc == b.desc && a.unit == b.unit
}

fn value_strategy() -> impl Strategy<Value = StatValue> {
    prop_oneof![
        any::<u64>().prop_map(StatValue::Int),
        (0u64..1000).prop_map(StatValue::Int),
        any::<f64>().prop_map(StatValue::Float),
        (-1e6f64..1e6).prop_map(StatValue::Float),
        Just(StatValue::Float(f64::NAN)),
        Just(StatValue::Float(f64::INFINITY)),
        Just(StatValue::Float(f64::NEG_INFINITY)),
    ]
}

fn pct_strategy() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![Just(None), (0.0f64..=100.0).prop_map(Some)]
}

fn cell_strategy() -> impl Strategy<Value = Cell> {
    (value_strategy(), pct_strategy(), pct_strategy()).prop_map(|(value, pdf, cdf)| {
        // A cdf is printed only beside a pdf.
        let cdf = if pdf.is_some() { cdf } else { None };
        Cell { value, pdf, cdf }
    })
}

fn entry_strategy() -> impl Strategy<Value = (String, Values, String, String)> {
    (
        // gem5's dotted parts, its subnames (`::0-7`, `::-8--5`) and ours (`->`).
        "[a-zA-Z_][a-zA-Z0-9_]{0,8}(\\.[a-zA-Z_][a-zA-Z0-9_]{0,8}){0,4}(::[a-zA-Z0-9_.-]{1,6}|->[a-z0-9]{1,4})?",
        prop_oneof![
            cell_strategy().prop_map(Values::Scalar),
            prop::collection::vec(cell_strategy(), 1..6).prop_map(Values::Oneline),
        ],
        // Descriptions: any text on one line without parentheses (a trailing parenthesis
        // reads as a unit when the unit is missing) and without outer blanks.
        prop_oneof![Just(String::new()), "[a-zA-Z0-9#|%:,./'\"-]([a-zA-Z0-9 #|%:,./'\"-]{0,30}[a-zA-Z0-9#|%:,./'\"-])?"],
        prop_oneof![
            Just(String::new()),
            "[A-Z][a-z]{1,8}",
            "\\([A-Z][a-z]{1,6}/[A-Z][a-z]{1,6}\\)",
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any dumps written in gem5's layout read back with the same names, values,
    /// percentages, descriptions and units.
    #[test]
    fn written_dumps_read_back(dumps in prop::collection::vec(prop::collection::vec(entry_strategy(), 0..12), 0..3)) {
        let mut file = StatsFile { file: "p.txt".into(), dumps: Vec::new() };
        for entries in &dumps {
            let mut d = Dump::new();
            for (k, (name, values, desc, unit)) in entries.iter().enumerate() {
                // Unique names: a oneline entry's elements are `name::i`.
                d.push(Entry {
                    name: format!("s{k}.{name}"),
                    values: values.clone(),
                    desc: desc.clone(),
                    unit: unit.clone(),
                    line: 0,
                });
            }
            file.dumps.push(d);
        }
        let text = file.to_text();
        let back = StatsFile::parse(&text, "p.txt").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back.dumps.len(), file.dumps.len());
        for (a, b) in file.dumps.iter().zip(&back.dumps) {
            prop_assert_eq!(a.entries().len(), b.entries().len());
            for (x, y) in a.entries().iter().zip(b.entries()) {
                prop_assert!(same_entry(x, y), "{:?} read back as {:?}", x, y);
                if let Values::Oneline(cells) = &x.values {
                    let last = format!("{}::{}", x.name, cells.len() - 1);
                    prop_assert!(b.get(&last).is_some());
                }
            }
        }
    }

    /// Our registry's stats.txt (floats with 6 decimals) reads back with its names, exact
    /// integers and floats to the printed precision.
    #[test]
    fn registry_text_reads_back(stats in prop::collection::vec(
        ("[a-z][a-z0-9_]{0,6}(\\.[a-z][a-z0-9_]{0,6}){0,3}", value_strategy(), "[a-zA-Z][a-zA-Z ,]{0,20}[a-z]", "[A-Z][a-z]{2,6}"),
        1..20,
    )) {
        let mut r = StatsRegistry::new();
        for (k, (name, value, desc, unit)) in stats.iter().enumerate() {
            let name = format!("n{k}.{name}");
            match *value {
                StatValue::Int(v) => r.scalar(name, v, desc, unit),
                StatValue::Float(v) => r.float(name, v, desc, unit),
            }
        }
        let mut text = Vec::new();
        r.write_stats_txt(&mut text).unwrap();
        let f = StatsFile::parse(std::str::from_utf8(&text).unwrap(), "stats.txt")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(f.dumps.len(), 1);
        let d = &f.dumps[0];
        prop_assert_eq!(d.entries().len(), r.len());
        for s in r.stats() {
            let got = d.get(&s.name).map(|f| f.cell.value.clone());
            prop_assert!(got.is_some(), "{} missing", s.name);
            let got = got.unwrap();
            match (&s.value, &got) {
                (StatValue::Int(a), StatValue::Int(b)) => prop_assert_eq!(a, b),
                (StatValue::Float(a), b) if a.is_nan() => prop_assert!(b.as_f64().is_nan()),
                (StatValue::Float(a), b) => {
                    let b = b.as_f64();
                    prop_assert!(
                        a == &b || (a - b).abs() <= 5e-7 + 1e-15 * a.abs(),
                        "{}: wrote {} read {}", s.name, a, b
                    );
                }
                (a, b) => prop_assert!(false, "{}: wrote {:?} read {:?}", s.name, a, b),
            }
            let e = d.entry(&s.name).unwrap();
            prop_assert_eq!(&e.desc, &s.desc);
            prop_assert_eq!(&e.unit, &s.unit);
        }
    }

    /// A pattern without wildcards matches only itself; `*` never crosses a dot.
    #[test]
    fn globs_match_like_their_definition(parts in prop::collection::vec("[a-z0-9_]{1,5}", 1..5), k in 0usize..5) {
        let name = parts.join(".");
        prop_assert!(glob_match(&name, &name));
        let k = k % parts.len();
        let mut starred = parts.clone();
        starred[k] = "*".into();
        prop_assert!(glob_match(&starred.join("."), &name));
        let mut wider = parts.clone();
        wider[k] = format!("{}.x", wider[k]);
        prop_assert!(!glob_match(&starred.join("."), &wider.join(".")));
        prop_assert!(glob_match(&starred.join(".").replace('*', "**"), &wider.join(".")));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any text either reads (and then reads again after writing) or fails with a position
    /// inside it; gem5's configuration files likewise never panic the reader.
    #[test]
    fn any_text_reads_or_fails_cleanly(lines in prop::collection::vec(prop_oneof![
        Just("---------- Begin Simulation Statistics ----------".to_string()),
        Just("---------- End Simulation Statistics   ----------".to_string()),
        Just(String::new()),
        "[a-z._:>-]{1,12} +[-+0-9.e]{1,6}( +[0-9.]{1,5}%){0,2}( #[ a-z()/|#]{0,12})?( \\([A-Za-z/()]{0,8}\\))?",
        "[a-z.]{1,8} +(\\| *[-0-9a-z.%]{1,5} *){1,4}[ #()a-z]{0,8}",
        "[ -~]{0,40}",
        any::<String>(),
    ], 0..14)) {
        let text = lines.join("\n");
        let line_count = u32::try_from(text.split('\n').count()).unwrap();
        match StatsFile::parse(&text, "f") {
            Ok(f) => {
                let again = StatsFile::parse(&f.to_text(), "f");
                prop_assert!(again.is_ok(), "{:?}", again);
                prop_assert_eq!(again.unwrap().dumps.len(), f.dumps.len());
            }
            Err(e) => {
                prop_assert!(e.line >= 1 && e.line <= line_count && e.col >= 1, "{}", e);
                prop_assert!(e.to_string().starts_with(&format!("f:{}:{}: expected", e.line, e.col)), "{}", e);
            }
        }
        let _ = moped::stats::gem5_config::Gem5Config::parse_ini(&text, "c.ini")
            .map(|c| c.ruby_clock_period());
        let _ = moped::stats::gem5_config::Gem5Config::parse_json(&text, "c.json")
            .map(|c| c.ruby_clock_period());
    }
}
