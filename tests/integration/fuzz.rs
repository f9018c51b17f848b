//! Property-based fuzzing of every text moped reads: protocol machine files, system configs
//! and their `--set` / table overrides, `moped run` programs, workload specs, GOAL
//! schedules, and gem5's `stats.txt` and `config.ini` / `config.json`.
//!
//! Each format gets a generator that writes mostly valid inputs from the format's grammar,
//! a round of targeted edits on top (numbers at the edges of the integer types, missing and
//! duplicated tokens, tokens moved to the wrong place, Unicode, a byte order mark, CRLF line
//! ends, NUL bytes, very long lines), and raw bytes. Every property asserts the same
//! contract: the reader does not panic, and it either succeeds or names a place inside the
//! text (`file:line:col`, or the key path for overrides). Where it is cheap, a success goes
//! on into validation (a workload is built and checked, a gem5 clock is resolved).
//!
//! The seed is fixed, so a failure replays; `PROPTEST_CASES=N` runs more cases.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;

use moped::config::{ConfigError, SystemConfig};
use moped::core::Program;
use moped::stats::gem5::StatsFile;
use moped::stats::gem5_config::Gem5Config;
use moped::textparse::PosError;
use moped::workload::check::check;
use moped::workload::{goal, imb, spec};

/// Cases per property (`PROPTEST_CASES` overrides), from a fixed seed.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(0x6d6f_7065_6420),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// Positions

/// `line:col` (from 1) lies inside `text`: on one of its lines, at most one column past
/// that line's last character.
fn inside(text: &str, line: u32, col: u32) -> Result<(), String> {
    let lines: Vec<&str> = text.split('\n').collect();
    if line == 0 || col == 0 || line as usize > lines.len() {
        return Err(format!(
            "{line}:{col} is outside a text of {} lines",
            lines.len()
        ));
    }
    let width = lines[line as usize - 1].chars().count();
    if col as usize > width + 1 {
        return Err(format!(
            "{line}:{col} is past the end of line {line} ({width} characters)"
        ));
    }
    Ok(())
}

/// A reader's positioned error names `file` and a place inside `text`.
fn positioned(e: &PosError, text: &str, file: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(&e.file, file, "{}", e);
    prop_assert!(!e.msg.is_empty(), "an empty message: {}", e);
    if let Err(why) = inside(text, e.line, e.col) {
        return Err(TestCaseError::fail(format!("{e}: {why}")));
    }
    Ok(())
}

/// A config error names a place inside `text` or a key path.
fn config_positioned(e: &ConfigError, text: &str) -> Result<(), TestCaseError> {
    prop_assert!(!e.msg.is_empty(), "an empty message: {}", e);
    match (e.line, e.col) {
        (Some(l), Some(c)) => {
            if let Err(why) = inside(text, l, c) {
                return Err(TestCaseError::fail(format!("{e}: {why}")));
            }
        }
        _ => prop_assert!(!e.key_path.is_empty(), "neither a place nor a key: {}", e),
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Edits on a valid text

/// Pieces that break readers: integers at the edges of the machine types and past them,
/// other types, syntax out of place, characters that print as nothing or look like digits.
const JUNK: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1",
    "7",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "0x",
    "0xFFFFFFFFFFFFFFFF",
    "0x10000000000000000",
    "1e11",
    "1e308",
    "1e400",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "true",
    "any",
    "\"\"",
    "\"x\"",
    "'",
    "\"",
    "'''",
    "[",
    "]",
    "[]",
    "[[",
    "{",
    "}",
    "{}",
    "(",
    ")",
    "=",
    ",",
    ";",
    ":",
    ".",
    "#",
    "//",
    "/*",
    "*/",
    "\\",
    "\t",
    "\r",
    "\n",
    "\r\n",
    "\u{0}",
    "\u{feff}",
    "\u{e9}",
    "\u{1F600}",
    "\u{202e}",
    "\u{ff11}",
    "\u{0663}",
];

/// What an edit puts in: a junk piece, another token of the same text (a keyword or name
/// where another belongs), or a long run of one junk piece.
#[derive(Clone, Debug)]
enum Piece {
    Junk(usize),
    Token(usize),
    Long(usize, usize),
}

#[derive(Clone, Debug)]
enum Edit {
    Replace(usize, Piece),
    Insert(usize, Piece),
    Delete(usize),
    Duplicate(usize),
    Swap(usize, usize),
    /// Cut the text after a token.
    Truncate(usize),
    Crlf,
    Bom,
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        6 => (0..JUNK.len()).prop_map(Piece::Junk),
        3 => any::<usize>().prop_map(Piece::Token),
        1 => (0..JUNK.len(), 1000..40_000usize).prop_map(|(j, n)| Piece::Long(j, n)),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), piece()).prop_map(|(k, p)| Edit::Replace(k, p)),
        3 => (any::<usize>(), piece()).prop_map(|(k, p)| Edit::Insert(k, p)),
        2 => any::<usize>().prop_map(Edit::Delete),
        1 => any::<usize>().prop_map(Edit::Duplicate),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => Just(Edit::Crlf),
        1 => Just(Edit::Bom),
    ]
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    proptest::collection::vec(edit(), 0..4)
}

/// Byte ranges of the tokens of `text`: runs of letters, digits and `_`, and every other
/// character that is not blank on its own.
fn tokens(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut prev_word = false;
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
        if word(c) && prev_word {
            out.last_mut().expect("a word in progress").end = end;
        } else if !c.is_whitespace() {
            out.push(i..end);
        }
        prev_word = word(c);
    }
    out
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    for e in edits {
        let toks = tokens(&s);
        if toks.is_empty() {
            s.push_str(JUNK[toks.len() % JUNK.len()]);
            continue;
        }
        let tok = |k: usize| toks[k % toks.len()].clone();
        let fill = |p: &Piece, s: &str| match *p {
            Piece::Junk(j) => JUNK[j].to_string(),
            Piece::Token(k) => s[tok(k)].to_string(),
            Piece::Long(j, n) => JUNK[j].repeat(n / JUNK[j].len().max(1)),
        };
        match e {
            Edit::Replace(k, p) => {
                let new = fill(p, &s);
                s.replace_range(tok(*k), &new);
            }
            Edit::Insert(k, p) => {
                let new = format!("{} ", fill(p, &s));
                let at = tok(*k).start;
                s.insert_str(at, &new);
            }
            Edit::Delete(k) => s.replace_range(tok(*k), ""),
            Edit::Duplicate(k) => {
                let r = tok(*k);
                let copy = s[r.clone()].to_string();
                s.insert_str(r.start, &copy);
            }
            Edit::Swap(a, b) => {
                let (mut x, mut y) = (tok(*a), tok(*b));
                if x.start > y.start {
                    std::mem::swap(&mut x, &mut y);
                }
                if x.end <= y.start {
                    let (tx, ty) = (s[x.clone()].to_string(), s[y.clone()].to_string());
                    s.replace_range(y, &tx);
                    s.replace_range(x, &ty);
                }
            }
            Edit::Truncate(k) => s.truncate(tok(*k).end),
            Edit::Crlf => s = s.replace('\n', "\r\n"),
            Edit::Bom => s.insert(0, '\u{feff}'),
        }
    }
    s
}

/// Raw bytes, mostly printable ASCII with line ends so that lines and tokens form.
fn raw_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        6 => 0x20u8..0x7f,
        1 => Just(b'\n'),
        1 => any::<u8>(),
    ];
    proptest::collection::vec(byte, 0..400)
}

// ---------------------------------------------------------------------------------------
// Numbers

/// A number as a reader's grammar may spell it: small ones mostly, then the edges of the
/// machine types, in decimal or hexadecimal.
fn number() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        8 => 0u64..70,
        3 => (0u32..64).prop_map(|k| 1u64 << k),
        2 => prop_oneof![
            Just(u64::MAX),
            Just(u64::MAX - 1),
            Just(i64::MAX as u64),
            Just(1u64 << 63),
            Just(u32::MAX as u64),
            Just(1u64 << 32),
            Just(0x7fff_ffff),
            Just(0xffff),
            Just(0x1_0000),
        ],
        1 => any::<u64>(),
    ];
    prop_oneof![
        8 => value.clone().prop_map(|v| v.to_string()),
        2 => value.prop_map(|v| format!("{v:#x}")),
        1 => Just("18446744073709551616".to_string()),
        1 => Just("-1".to_string()),
    ]
}

/// A number from a field's valid range (`valid`) mostly, else any of [`number`]'s edges.
fn sane(valid: impl Strategy<Value = u64> + 'static) -> impl Strategy<Value = String> {
    prop_oneof![19 => valid.prop_map(|v| v.to_string()), 1 => number()]
}

// ---------------------------------------------------------------------------------------
// Protocol machine files

mod protocol {
    use super::*;
    use moped::coherence::protocols::{design_files, lint_chain};
    use moped::design::Design;

    /// Each design's machines as the layers they are built from (the baseline machine
    /// file, then overlays): the last layer is the one edited, the others its base.
    fn seeds() -> Vec<Vec<(&'static str, &'static str)>> {
        let mut out = Vec::new();
        for d in Design::ALL {
            for m in ["L2Cache", "Directory"] {
                out.push(design_files(d, m).expect("a shipped machine"));
            }
        }
        out
    }

    /// Lints `text` as the last of `layers`. An error may name a base layer (a cell the
    /// overlay left undefined is reported at its state's declaration).
    fn lint(text: &str, file: &str, layers: &[(&str, &str)]) -> Result<(), TestCaseError> {
        let base = layers[..layers.len() - 1].to_vec();
        let base = (!base.is_empty()).then_some(base);
        match lint_chain(&[(text, file, base)]).remove(0) {
            Ok(_) => Ok(()),
            Err(e) => match layers.iter().find(|(_, f)| *f == e.file && *f != file) {
                Some((src, f)) => positioned(&e, src, f),
                None => positioned(&e, text, file),
            },
        }
    }

    proptest! {
        #![proptest_config(config(256))]

        /// Shipped machine files and overlays with edits, each on its own base.
        #[test]
        fn edited_machine_files(which in 0..8usize, edits in edits()) {
            let layers = &seeds()[which];
            let (src, file) = layers[layers.len() - 1];
            lint(&apply(src, &edits), file, layers)?;
        }

        /// Raw bytes as a machine file, and as an overlay on the baseline's machines.
        #[test]
        fn raw_bytes_as_machine_files(bytes in raw_bytes(), overlay in prop::bool::ANY) {
            let mut text = String::from_utf8_lossy(&bytes).into_owned();
            if overlay {
                text.insert_str(0, "overlay(L2Cache, desc=\"raw\");\n");
            }
            lint(&text, "raw.sm", &[("", "")])?;
        }
    }

    /// A text as a machine file of its own.
    pub fn read(text: &str) -> Result<(), TestCaseError> {
        lint(text, "m.sm", &[("", "")])
    }

    #[test]
    fn shipped_files_pass() {
        for layers in seeds() {
            let (src, file) = layers[layers.len() - 1];
            let base = layers[..layers.len() - 1].to_vec();
            let base = (!base.is_empty()).then_some(base);
            lint_chain(&[(src, file, base)])
                .remove(0)
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

// ---------------------------------------------------------------------------------------
// System configs and their overrides

mod config {
    use super::*;
    use moped::api::config::{parse_config, with_overrides};

    /// Every section and key of the schema, with the default value as TOML text.
    fn schema() -> Vec<(String, Vec<(String, String)>)> {
        let table: toml::Table = toml::from_str(&SystemConfig::default().to_toml_string())
            .expect("the defaults are TOML");
        table
            .into_iter()
            .filter_map(|(section, v)| {
                let keys = v.as_table()?;
                Some((
                    section,
                    keys.iter()
                        .map(|(k, v)| (k.clone(), v.to_string()))
                        .collect(),
                ))
            })
            .collect()
    }

    /// A TOML value: mostly the right kind, sometimes another kind or an edge.
    fn value() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            6 => Just(None),
            3 => number().prop_map(Some),
            1 => prop_oneof![
                Just("1e11"),
                Just("0.0"),
                Just("-0.5"),
                Just("nan"),
                Just("inf"),
                Just("\"hierarchical_switch\""),
                Just("\"\u{e9}\""),
                Just("true"),
                Just("[]"),
                Just("[1024, 2, 99]"),
                Just("{ a = 1 }"),
                Just("1099511627776"),
                Just("\"1\""),
            ]
            .prop_map(|s| Some(s.to_string())),
        ]
    }

    /// A config file: a random subset of sections and keys in random order, each key with
    /// its default or a generated value.
    fn config_text() -> impl Strategy<Value = String> {
        let sections = schema();
        let n = sections.len();
        (
            proptest::collection::vec((any::<usize>(), any::<usize>(), value()), 0..24),
            proptest::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n),
        )
            .prop_map(move |(keys, chosen)| {
                let mut text = String::from("# generated\n");
                for s in chosen {
                    let (name, fields) = &sections[s];
                    text.push_str(&format!("[{name}]\n"));
                    for (k, _, v) in keys.iter().filter(|(_, sec, _)| sec % n == s) {
                        let (key, default) = &fields[k % fields.len()];
                        let v = v.as_deref().unwrap_or(default);
                        text.push_str(&format!("{key} = {v}\n"));
                    }
                }
                text
            })
    }

    /// A section written as something other than a table. Arrays are left out while a
    /// section still reads an array field by field (`l2 = [1024, 2, 99]`); add `"[1, 2]"`
    /// to the values once it is refused.
    fn section_as_value() -> impl Strategy<Value = (String, String)> {
        let names: Vec<String> = schema().into_iter().map(|(s, _)| s).collect();
        const VALUES: &[&str] = &["4", "-1", "1.5", "\"l2\"", "true", "1979-05-27"];
        (
            proptest::sample::select(names),
            proptest::sample::select(VALUES),
        )
            .prop_map(|(s, v)| (s, v.to_string()))
    }

    /// A `--set` key path: a real one mostly, else one cut short, lengthened or mangled.
    fn key_path() -> impl Strategy<Value = String> {
        let sections = schema();
        (any::<usize>(), any::<usize>(), 0..8u8, 0..JUNK.len()).prop_map(move |(s, k, how, j)| {
            let (sec, fields) = &sections[s % sections.len()];
            let key = &fields[k % fields.len()].0;
            match how {
                0 => sec.clone(),
                1 => format!("{sec}.{key}.x"),
                2 => format!("{sec}..{key}"),
                3 => format!("{sec}.{}", JUNK[j]),
                4 => format!("{}.{key}", JUNK[j]),
                _ => format!("{sec}.{key}"),
            }
        })
    }

    fn set_value() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => number(),
            2 => (0..JUNK.len()).prop_map(|j| JUNK[j].to_string()),
            1 => Just("hierarchical_switch".to_string()),
            1 => Just("[1024, 2, 99]".to_string()),
            1 => Just("{ size_bytes = 1 }".to_string()),
            1 => Just("".to_string()),
        ]
    }

    pub fn read(text: &str) -> Result<(), TestCaseError> {
        match SystemConfig::from_toml_str(text, "c.toml") {
            Ok(cfg) => prop_assert!(cfg.validate().is_ok()),
            Err(e) => {
                prop_assert_eq!(&e.file, "c.toml");
                config_positioned(&e, text)?;
            }
        }
        if let Err(e) = parse_config(text, "c.toml") {
            config_positioned(&e, text)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn generated_configs(text in config_text(), edits in edits()) {
            read(&apply(&text, &edits))?;
        }

        #[test]
        fn raw_bytes_as_configs(bytes in raw_bytes()) {
            read(&String::from_utf8_lossy(&bytes))?;
        }

        /// A section that is not a table is an error at that section's key.
        #[test]
        fn sections_are_tables((section, value) in section_as_value()) {
            let text = format!("# generated\n{section} = {value}\n");
            let e = SystemConfig::from_toml_str(&text, "c.toml");
            let e = e.err().ok_or_else(|| TestCaseError::fail(format!("{text:?} accepted")))?;
            prop_assert_eq!(&e.key_path, &section, "{}", e);
            config_positioned(&e, &text)?;
        }

        /// `--set KEY=VALUE` overrides in order, then validation: every error names a key.
        #[test]
        fn set_overrides(sets in proptest::collection::vec((key_path(), set_value()), 1..4)) {
            let mut cfg = SystemConfig::default();
            for (k, v) in &sets {
                if let Err(e) = cfg.set(k, v) {
                    prop_assert!(!e.key_path.is_empty(), "--set {}={}: {}", k, v, e);
                    return Ok(());
                }
            }
            if let Err(e) = cfg.validate() {
                prop_assert!(!e.key_path.is_empty(), "{}", e);
            }
            let _ = moped::api::config::config_with(None, &sets);
        }

        /// The same overrides as a nested table (Python's dicts).
        #[test]
        fn table_overrides(sets in proptest::collection::vec((key_path(), set_value()), 1..4)) {
            let mut over = toml::Table::new();
            for (k, v) in &sets {
                let value = format!("v = {v}")
                    .parse::<toml::Table>()
                    .ok()
                    .and_then(|mut t| t.remove("v"))
                    .unwrap_or_else(|| toml::Value::String(v.clone()));
                let mut node = &mut over;
                let segs: Vec<&str> = k.split('.').collect();
                for seg in &segs[..segs.len() - 1] {
                    let entry = node
                        .entry(seg.to_string())
                        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                    if !entry.is_table() {
                        *entry = toml::Value::Table(toml::Table::new());
                    }
                    node = entry.as_table_mut().expect("made a table");
                }
                node.insert(segs[segs.len() - 1].to_string(), value);
            }
            if let Err(e) = with_overrides(&SystemConfig::default(), over) {
                prop_assert!(!e.msg.is_empty());
                prop_assert!(
                    !e.key_path.is_empty() || e.line.is_some() || e.msg.contains('`'),
                    "no key named: {}", e
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// `moped run` programs

mod program {
    use super::*;

    const CORES: usize = 4;

    fn reg() -> impl Strategy<Value = String> {
        prop_oneof![
            18 => (0u8..8).prop_map(|r| format!("r{r}")),
            1 => Just("r8".into()),
            1 => Just("r".into()),
        ]
    }

    fn peer() -> impl Strategy<Value = String> {
        prop_oneof![3 => sane(0u64..4), 1 => Just("any".to_string())]
    }

    /// An 8-byte-aligned address of the first pages.
    fn addr() -> impl Strategy<Value = String> {
        sane((0u64..0x1000).prop_map(|a| a * 8))
    }

    fn size() -> impl Strategy<Value = String> {
        sane(proptest::sample::select(&[1u64, 2, 4, 8][..]))
    }

    fn op() -> impl Strategy<Value = String> {
        let small = || sane(0u64..1000);
        prop_oneof![
            small().prop_map(|c| format!("compute {c}")),
            (addr(), prop::option::of(size()), prop::option::of(small())).prop_map(|(a, s, e)| {
                let s = s.map(|s| format!(" {s}")).unwrap_or_default();
                let e = e.map(|e| format!(" expect={e}")).unwrap_or_default();
                format!("load {a}{s}{e}")
            }),
            (addr(), prop::option::of(size()), small()).prop_map(|(a, s, v)| {
                let s = s.map(|s| format!(" {s}")).unwrap_or_default();
                format!("store {a}{s} {v}")
            }),
            (
                prop::bool::ANY,
                addr(),
                sane((1u64..64).prop_map(|k| k * 64)),
                sane(proptest::sample::select(&[8u64, 64, 128][..])),
                prop::option::of(sane(1u64..3)),
            )
                .prop_map(|(st, b, bytes, stride, r)| {
                    let k = if st { "store" } else { "load" };
                    let r = r.map(|r| format!(" repeat={r}")).unwrap_or_default();
                    format!("sweep {k} {b} {bytes} {stride}{r}")
                }),
            reg().prop_map(|r| format!("moped_reserve {r}")),
            (
                prop::bool::ANY,
                reg(),
                peer(),
                prop_oneof![3 => sane(0u64..100), 1 => Just("any".to_string())],
                prop::option::of(sane(0u64..4)),
                sane((0u64..64).prop_map(|k| 0x10_0000 + k * 64)),
                sane(0u64..0x4000),
            )
                .prop_map(|(send, r, p, t, c, va, size)| {
                    let (w, k) = if send {
                        ("send", "dst")
                    } else {
                        ("recv", "src")
                    };
                    let c = c.map(|c| format!(" ctx={c}")).unwrap_or_default();
                    format!("moped_{w} {r} {k}={p} tag={t}{c} va={va} size={size}")
                }),
            (reg(), prop::option::of(0..5usize)).prop_map(|(r, e)| {
                let e = e
                    .map(|e| {
                        let w = ["complete", "failed", "revoked", "error", "done"][e];
                        format!(" expect={w}")
                    })
                    .unwrap_or_default();
                format!("moped_poll {r}{e}")
            }),
        ]
    }

    fn cores() -> impl Strategy<Value = String> {
        prop_oneof![
            12 => proptest::collection::vec(0usize..CORES, 0..4).prop_map(|v| format!("{v:?}")),
            4 => Just("\"all\"".to_string()),
            1 => Just("[4]".to_string()),
            1 => Just("\"some\"".to_string()),
            1 => Just("[-1]".to_string()),
        ]
    }

    fn block() -> impl Strategy<Value = String> {
        (
            cores(),
            prop::option::of(sane(proptest::sample::select(&[0u64, 0x1_0000][..]))),
            proptest::collection::vec(op(), 0..8),
            0..3u8,
        )
            .prop_map(|(cores, off, ops, quote)| {
                let off = off
                    .map(|o| format!("offset_per_core = {o}\n"))
                    .unwrap_or_default();
                let ops = match quote {
                    0 => format!("'''\n{}\n'''", ops.join("\n")),
                    1 => format!("\"\"\"\n{}  # done\n\"\"\"", ops.join("\n")),
                    _ => format!("\"{}\"", ops.join("\\n")),
                };
                format!("[[core]]\ncores = {cores}\n{off}ops = {ops}\n")
            })
    }

    fn process() -> impl Strategy<Value = String> {
        (
            sane(0u64..2),
            sane(0u64..CORES as u64),
            0usize..CORES + 1,
            proptest::collection::vec(
                (sane((16u64..32).prop_map(|k| k << 16)), sane(1u64..0x8000)),
                0..3,
            ),
        )
            .prop_map(|(program, rank, core, regions)| {
                let regions: Vec<String> =
                    regions.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
                format!(
                    "[[process]]\nprogram = {program}\nrank = {rank}\ncore = {core}\n\
                     regions = [{}]\n",
                    regions.join(", ")
                )
            })
    }

    fn program_text() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(block(), 0..3),
            proptest::collection::vec(process(), 0..3),
        )
            .prop_map(|(blocks, procs)| {
                format!("# moped program\n{}{}", procs.concat(), blocks.concat())
            })
    }

    pub fn read(text: &str) -> Result<(), TestCaseError> {
        match Program::from_toml_str(text, "p.toml", CORES) {
            Ok(p) => prop_assert_eq!(p.cores.len(), CORES),
            Err(e) => positioned(&e, text, "p.toml")?,
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn generated_programs(text in program_text(), edits in edits()) {
            read(&apply(&text, &edits))?;
        }

        #[test]
        fn raw_bytes_as_programs(bytes in raw_bytes()) {
            read(&String::from_utf8_lossy(&bytes))?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Workload specs

mod specs {
    use super::*;

    /// A field with any key and any value: duplicates, the wrong suite's keys, edges.
    fn field() -> impl Strategy<Value = String> {
        let word = |ws: &'static [&'static str]| {
            proptest::sample::select(ws).prop_map(|w| format!("\"{w}\""))
        };
        prop_oneof![
            word(&["PP", "", "\u{e9}\u{1F600}"]).prop_map(|v| format!("name = {v}")),
            word(&["imb", "npb", "goal", "queue", "IMB", "mpi"])
                .prop_map(|v| format!("suite = {v}")),
            word(&[
                "pingpong",
                "pingping",
                "bcast",
                "reduce",
                "gather",
                "alltoall",
                "cg",
                "mg",
                "ft",
                "bt",
                "sp",
                "lu",
                "preposted",
                "unload",
                "unexpected"
            ])
            .prop_map(|v| format!("benchmark = {v}")),
            number().prop_map(|v| format!("bytes = {v}")),
            number().prop_map(|v| format!("iterations = {v}")),
            number().prop_map(|v| format!("ranks = {v}")),
            word(&["S", "A", "s"]).prop_map(|v| format!("class = {v}")),
            word(&["x.goal", "", "/", "\u{0}"]).prop_map(|v| format!("file = {v}")),
            number().prop_map(|v| format!("depth = {v}")),
            number().prop_map(|v| format!("position = {v}")),
            word(&["uniform", "skewed", "Skewed"]).prop_map(|v| format!("sources = {v}")),
            Just("ranks = \"16\"".to_string()),
            Just("extra = 1".to_string()),
        ]
    }

    /// `key = value` most of the time.
    fn line(
        key: &'static str,
        value: impl Strategy<Value = String> + 'static,
    ) -> impl Strategy<Value = Option<String>> {
        prop::option::weighted(0.85, value.prop_map(move |v| format!("{key} = {v}")))
    }

    fn quoted(words: &'static [&'static str]) -> impl Strategy<Value = String> {
        proptest::sample::select(words).prop_map(|w| format!("\"{w}\""))
    }

    /// A spec of one suite with that suite's keys, mostly valid values, and sometimes a
    /// field drawn from every key's edge cases.
    fn spec_text() -> impl Strategy<Value = String> {
        let imb = (
            line(
                "benchmark",
                quoted(&[
                    "pingpong", "pingping", "bcast", "reduce", "gather", "alltoall",
                ]),
            ),
            line(
                "bytes",
                sane(proptest::sample::select(&[0u64, 1, 8, 1024, 16384][..])),
            ),
            line("iterations", sane(1u64..20)),
            line("ranks", sane(proptest::sample::select(&[2u64, 4, 16][..]))),
        )
            .prop_map(|(a, b, c, d)| ("imb", vec![a, b, c, d]));
        let npb = (
            line("benchmark", quoted(&["cg", "mg", "ft", "bt", "sp"])),
            prop::option::weighted(0.3, Just("class = \"S\"".to_string())),
            prop::option::weighted(0.5, sane(1u64..3).prop_map(|v| format!("iterations = {v}"))),
            prop::option::weighted(
                0.5,
                sane(proptest::sample::select(&[4u64, 16][..]))
                    .prop_map(|v| format!("ranks = {v}")),
            ),
        )
            .prop_map(|(a, b, c, d)| ("npb", vec![a, b, c, d]));
        let goal = line("file", quoted(&["x.goal", ""])).prop_map(|f| ("goal", vec![f]));
        let small = |v: &'static [u64]| sane(proptest::sample::select(v));
        let queue = (
            line("benchmark", quoted(&["preposted", "unload", "unexpected"])),
            line("depth", small(&[1, 2, 10, 300])),
            prop::option::weighted(
                0.3,
                small(&[1, 5, 300]).prop_map(|v| format!("position = {v}")),
            ),
            prop::option::weighted(
                0.3,
                quoted(&["uniform", "skewed"]).prop_map(|v| format!("sources = {v}")),
            ),
            prop::option::weighted(0.3, small(&[2, 3, 5]).prop_map(|v| format!("ranks = {v}"))),
            prop::option::weighted(
                0.3,
                small(&[1, 3]).prop_map(|v| format!("iterations = {v}")),
            ),
        )
            .prop_map(|(a, b, c, d, e, f)| ("queue", vec![a, b, c, d, e, f]));
        (
            prop_oneof![imb, npb, goal, queue],
            line("name", quoted(&["PP", "", "\u{e9}\u{1F600}"])),
            proptest::collection::vec(field(), 0..2),
        )
            .prop_map(|((suite, lines), name, extra)| {
                let mut text = format!("suite = \"{suite}\"\n");
                for l in std::iter::once(name).chain(lines).flatten().chain(extra) {
                    text.push_str(&l);
                    text.push('\n');
                }
                text
            })
    }

    /// Builds `s` when the workload is small; building a workload is a loop over its
    /// iterations and ranks, so large counts are left to the parse alone.
    fn build_small(s: &spec::Spec, text: &str) -> Result<(), TestCaseError> {
        let small = match &s.kind {
            spec::SpecKind::Imb {
                bytes,
                iterations,
                ranks,
                ..
            } => *bytes <= 1 << 20 && *iterations <= 64 && *ranks <= 64,
            spec::SpecKind::Npb {
                ranks, iterations, ..
            } => *ranks <= 64 && *iterations <= 64,
            spec::SpecKind::Goal { .. } => true,
            spec::SpecKind::Queue(q) => q.depth <= 512 && q.iterations <= 64 && q.ranks <= 64,
        };
        if !small {
            return Ok(());
        }
        // IMB's warm-up wraps the shared-memory queues whatever the iteration scale: a
        // quarter of a million calls at one byte.
        let warmup = match &s.kind {
            spec::SpecKind::Imb { bytes, .. } => imb::warmup_iterations(*bytes) <= 64,
            _ => true,
        };
        match spec::build(s, Some(0.01), warmup) {
            Ok(w) => {
                let _ = check(&w);
            }
            Err(e) => positioned(&e, text, "s.toml")?,
        }
        Ok(())
    }

    pub fn read(text: &str) -> Result<(), TestCaseError> {
        match spec::parse_spec(text, Path::new("s.toml")) {
            Ok(s) => build_small(&s, text)?,
            Err(e) => positioned(&e, text, "s.toml")?,
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn generated_specs(text in spec_text(), edits in edits()) {
            read(&apply(&text, &edits))?;
        }

        #[test]
        fn raw_bytes_as_specs(bytes in raw_bytes()) {
            read(&String::from_utf8_lossy(&bytes))?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// GOAL schedules

mod goal_schedules {
    use super::*;

    /// A message size: small mostly, sometimes an edge of the machine types.
    fn size() -> impl Strategy<Value = String> {
        prop_oneof![8 => (0u64..5000).prop_map(|v| v.to_string()), 1 => number()]
    }

    /// A rank: one that exists mostly, else any number.
    fn peer(ranks: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            8 => (0..ranks).prop_map(|r| r.to_string()),
            1 => Just("-1".to_string()),
            1 => number(),
        ]
    }

    fn tail() -> impl Strategy<Value = String> {
        (
            prop::option::of(
                prop_oneof![4 => 0u64..100, 1 => Just(1 << 20), 1 => Just(0x7fff_ffff)],
            ),
            prop::option::of(number()),
            prop::option::of(number()),
        )
            .prop_map(|(tag, cpu, nic)| {
                let mut s = String::new();
                if let Some(t) = tag {
                    s.push_str(&format!(" tag {t}"));
                }
                if let Some(c) = cpu {
                    s.push_str(&format!(" cpu {c}"));
                }
                if let Some(n) = nic {
                    s.push_str(&format!(" nic {n}"));
                }
                s
            })
    }

    fn op(ranks: u32) -> impl Strategy<Value = String> {
        prop_oneof![
            (size(), peer(ranks), tail()).prop_map(|(s, p, t)| format!("send {s}b to {p}{t}")),
            (size(), peer(ranks), tail()).prop_map(|(s, p, t)| format!("recv {s}b from {p}{t}")),
            number().prop_map(|n| format!("calc {n}")),
        ]
    }

    fn rank_block(ranks: u32) -> impl Strategy<Value = String> {
        (
            0..ranks + 1,
            proptest::collection::vec(op(ranks), 0..8),
            proptest::collection::vec((any::<usize>(), any::<usize>(), any::<bool>()), 0..6),
        )
            .prop_map(|(r, ops, deps)| {
                let mut s = format!("rank {r} {{\n");
                for (k, o) in ops.iter().enumerate() {
                    s.push_str(&format!("  l{k}: {o}\n"));
                }
                for (a, b, strict) in deps {
                    let n = ops.len().max(1);
                    let word = if strict { "requires" } else { "irequires" };
                    s.push_str(&format!("  l{} {word} l{}\n", a % n, b % n));
                }
                s.push_str("}\n");
                s
            })
    }

    fn schedule() -> impl Strategy<Value = String> {
        (1u32..5).prop_flat_map(|ranks| {
            proptest::collection::vec(rank_block(ranks), 0..4)
                .prop_map(move |blocks| format!("num_ranks {ranks}\n{}", blocks.concat()))
        })
    }

    pub fn read(text: &str) -> Result<(), TestCaseError> {
        match goal::parse_goal(text, "g.goal") {
            // Checking the matching is a walk over the calls, whatever the sizes.
            Ok(w) => {
                let _ = check(&w);
            }
            Err(e) => positioned(&e, text, "g.goal")?,
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn generated_schedules(text in schedule(), edits in edits()) {
            read(&apply(&text, &edits))?;
        }

        #[test]
        fn raw_bytes_as_schedules(bytes in raw_bytes()) {
            read(&String::from_utf8_lossy(&bytes))?;
        }
    }
}

// ---------------------------------------------------------------------------------------
// gem5's stats.txt, config.ini and config.json

mod gem5 {
    use super::*;

    /// The first dump of the hand-written gem5 file (scalars, vectors, distributions,
    /// formulas) and the head of an embedded run's dump.
    fn stats_seeds() -> Vec<String> {
        let two = include_str!("../fixtures/stats/gem5-two-dumps.txt");
        let first: Vec<&str> = two
            .lines()
            .take_while(|l| !l.contains("End Simulation"))
            .collect();
        let own = include_str!("../fixtures/stats/pingpong-16k-optcopy.txt");
        let head: Vec<&str> = own.lines().take(60).collect();
        let end = "---------- End Simulation Statistics   ----------\n";
        vec![
            format!("{}\n{end}", first.join("\n")),
            format!("{}\n{end}", head.join("\n")),
        ]
    }

    const INI: &str = "[root]\ntype=Root\nchildren=system\n\n[system]\ntype=System\n\
                       clk_domain=system.clk_domain\nmem_ranges=0:536870911\n\n\
                       [system.clk_domain]\ntype=SrcClockDomain\nclock=1000\n\n\
                       [system.ruby]\ntype=RubySystem\nclk_domain=system.ruby.clk_domain\n\n\
                       [system.ruby.clk_domain]\ntype=DerivedClockDomain\nclk_divider=2\n\
                       clk_domain=system.clk_domain\n; a comment\n# another\n";

    const JSON: &str = r#"{"type": "Root", "path": "root", "name": null,
  "system": {"type": "System", "path": "system", "mem_ranges": ["0:536870911"],
    "clk_domain": {"type": "SrcClockDomain", "path": "system.clk_domain", "clock": [1000]},
    "ruby": {"type": "RubySystem", "path": "system.ruby",
      "clk_domain": {"type": "DerivedClockDomain", "path": "system.ruby.clk_domain",
        "clk_divider": 2, "clk_domain": "system.clk_domain"}}}}"#;

    pub fn stats(text: &str) -> Result<(), TestCaseError> {
        match StatsFile::parse(text, "stats.txt") {
            Ok(f) => {
                // Queries a comparison makes of a parsed file.
                if let Some(d) = f.dump(-1) {
                    let _ = d.sum("*");
                    let _ = d.glob("system.*.cycles");
                    let _ = d.values().count();
                }
                let _ = f.select(0);
                let again = StatsFile::parse(&f.to_text(), "again.txt");
                prop_assert!(
                    again.is_ok(),
                    "its own text does not read back: {:?}",
                    again.err()
                );
            }
            Err(e) => positioned(&e, text, "stats.txt")?,
        }
        Ok(())
    }

    pub fn ini(text: &str) -> Result<(), TestCaseError> {
        match Gem5Config::parse_ini(text, "config.ini") {
            Ok(c) => {
                let _ = c.ruby_clock_period();
            }
            Err(e) => positioned(&e, text, "config.ini")?,
        }
        Ok(())
    }

    pub fn json(text: &str) -> Result<(), TestCaseError> {
        match Gem5Config::parse_json(text, "config.json") {
            Ok(c) => {
                let _ = c.ruby_clock_period();
            }
            Err(e) => positioned(&e, text, "config.json")?,
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(config(256))]

        #[test]
        fn edited_stats(which in 0..2usize, edits in edits()) {
            stats(&apply(&stats_seeds()[which], &edits))?;
        }

        #[test]
        fn raw_bytes_as_stats(bytes in raw_bytes()) {
            stats(&String::from_utf8_lossy(&bytes))?;
        }

        #[test]
        fn edited_config_ini(edits in edits()) {
            ini(&apply(INI, &edits))?;
        }

        #[test]
        fn raw_bytes_as_config_ini(bytes in raw_bytes()) {
            ini(&String::from_utf8_lossy(&bytes))?;
        }

        #[test]
        fn edited_config_json(edits in edits()) {
            json(&apply(JSON, &edits))?;
        }
    }

    #[test]
    fn seeds_read() {
        for s in stats_seeds() {
            StatsFile::parse(&s, "stats.txt").unwrap_or_else(|e| panic!("{e}"));
        }
        let c = Gem5Config::parse_ini(INI, "config.ini").unwrap();
        assert_eq!(c.ruby_clock_period(), Ok(2000));
        let c = Gem5Config::parse_json(JSON, "config.json").unwrap();
        assert_eq!(c.ruby_clock_period(), Ok(2000));
    }
}

// ---------------------------------------------------------------------------------------
// Sizes and shapes no generator above reaches: a 1 MB line, deep nesting, NUL bytes

mod limits {
    use super::*;
    use std::time::{Duration, Instant};

    type Reader = fn(&str) -> Result<(), TestCaseError>;

    /// Every reader, with the text that starts a valid file of its format.
    const READERS: &[(&str, Reader, &str)] = &[
        (
            "protocol",
            protocol::read,
            "machine(L2Cache, desc=\"x\");\n",
        ),
        ("config", config::read, "[l1]\nassoc = "),
        (
            "program",
            program::read,
            "[[core]]\ncores = [0]\nops = '''\nload ",
        ),
        ("spec", specs::read, "suite = \"imb\"\nname = "),
        ("goal", goal_schedules::read, "num_ranks 2\nrank 0 {\nsend "),
        (
            "stats",
            gem5::stats,
            "---------- Begin Simulation Statistics ----------\nsim.x ",
        ),
        ("config.ini", gem5::ini, "[system]\nclock="),
        ("config.json", gem5::json, "{\"path\": "),
    ];

    /// Far more than any reader needs for a megabyte read in one pass; a reader that
    /// rescans its input per character would take hours.
    const PATIENCE: Duration = Duration::from_secs(30);

    fn each_reader(what: &str, text_for: impl Fn(&str) -> String) {
        for (name, read, head) in READERS {
            let text = text_for(head);
            let t = Instant::now();
            if let Err(e) = read(&text) {
                panic!("{name}, {what}: {e}");
            }
            let took = t.elapsed();
            assert!(took < PATIENCE, "{name}, {what}: {took:?}");
        }
    }

    #[test]
    fn one_megabyte_lines() {
        const MB: usize = 1 << 20;
        each_reader("a 1 MB word", |_| "a".repeat(MB));
        each_reader("a 1 MB number", |head| {
            format!("{head}{}\n", "9".repeat(MB))
        });
        each_reader("1 MB of blanks", |head| {
            format!("{head}{}1\n", " ".repeat(MB))
        });
        each_reader("a 1 MB string", |head| {
            format!("{head}\"{}\"\n", "\u{e9}".repeat(MB / 2))
        });
        each_reader("a 1 MB comment", |head| {
            format!("# {}\n// {}\n{head}", "x".repeat(MB), "x".repeat(MB))
        });
    }

    #[test]
    fn deep_nesting() {
        const DEPTH: usize = 100_000;
        let pairs = [
            ("[", "]"),
            ("{", "}"),
            ("(", ")"),
            ("/*", "*/"),
            ("{a=", "}"),
        ];
        for (open, close) in pairs {
            let what = format!("`{open}` nested {DEPTH} deep");
            each_reader(&what, |head| {
                format!("{head}{}1{}\n", open.repeat(DEPTH), close.repeat(DEPTH))
            });
            each_reader(&what, |_| open.repeat(DEPTH));
        }
        // A dependency chain is long rather than deep: it must not recurse per link.
        let mut chain = String::from("num_ranks 1\nrank 0 {\n");
        for k in 0..20_000 {
            chain.push_str(&format!("l{k}: calc 1\n"));
            if k > 0 {
                chain.push_str(&format!("l{k} requires l{}\n", k - 1));
            }
        }
        chain.push_str("}\n");
        goal_schedules::read(&chain).unwrap();
    }

    #[test]
    fn nul_bytes() {
        each_reader("NUL bytes only", |_| "\0".repeat(1000));
        each_reader("a NUL after the head", |head| format!("{head}\0\n"));
        each_reader("a NUL on every line", |head| format!("{head}1\0\n\0\n"));
        // Valid files with a NUL before every line end.
        let machine = include_str!("../../protocols/baseline/L2Cache.sm");
        protocol::read(&machine.replace('\n', "\0\n")).unwrap();
        let cfg = SystemConfig::default().to_toml_string();
        config::read(&cfg.replace('\n', "\0\n")).unwrap();
    }
}

// ---------------------------------------------------------------------------------------
// Raw bytes through the file doors, invalid UTF-8 included

mod files {
    use super::*;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh folder holding `name` with `bytes`; the folder is removed by the caller.
    fn write(name: &str, bytes: &[u8]) -> (PathBuf, PathBuf) {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "moped-fuzz-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("a temporary file");
        (dir, path)
    }

    /// Every file reader on `bytes`. Valid UTF-8 must give a success or an error inside
    /// the text. Invalid UTF-8 must not panic; the GOAL and stats readers already name the
    /// first bad byte's place, which is checked. The other readers say only that the file is
    /// not UTF-8, without a place; check theirs here once they name it.
    fn read_all(bytes: &[u8]) -> Result<(), TestCaseError> {
        let text = std::str::from_utf8(bytes).ok();
        let good = &bytes[..std::str::from_utf8(bytes).map_or_else(|e| e.valid_up_to(), str::len)];
        let good = std::str::from_utf8(good).expect("the valid prefix");
        let (dir, path) = write("f.goal", bytes);
        let file = path.display().to_string();
        let result = (|| {
            match goal::load_goal(&path) {
                Err(e) => positioned(&e, good, &file)?,
                Ok(w) => prop_assert!(text.is_some(), "{} ranks from invalid UTF-8", w.ranks.len()),
            }
            match StatsFile::read(&path) {
                Err(e) => positioned(&e, good, &file)?,
                Ok(_) => prop_assert!(text.is_some()),
            }
            match (SystemConfig::from_file(&path), text) {
                (Err(e), Some(t)) => config_positioned(&e, t)?,
                (r, _) => drop(r),
            }
            match (Program::from_file(&path, &small_machine()), text) {
                (Err(e), Some(t)) => positioned(&e, t, &file)?,
                (r, _) => drop(r),
            }
            match (spec::load_spec(&path), text) {
                (Err(e), Some(t)) => positioned(&e, t, &file)?,
                (r, _) => drop(r),
            }
            let _ = moped::api::protocols::lint_files(std::slice::from_ref(&path));
            let ini = dir.join("config.ini");
            std::fs::write(&ini, bytes).expect("a temporary file");
            let ini_name = ini.display().to_string();
            match (moped::stats::gem5_config::read_config(&dir), text) {
                (Err(e), Some(t)) => positioned(&e, t, &ini_name)?,
                (r, _) => drop(r),
            }
            Ok(())
        })();
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    proptest! {
        #![proptest_config(config(64))]

        #[test]
        fn raw_bytes_as_files(bytes in raw_bytes()) {
            read_all(&bytes)?;
        }
    }
}

/// A 4-core machine, the size the program generators target.
fn small_machine() -> SystemConfig {
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 4;
    cfg
}
