//! Malformed configurations in `tests/config_corpus/`: each must be rejected
//! with the error its first line announces:
//!
//! * `# expect: LINE:COL: substring` — the error is at LINE:COL (1-based) and
//!   its message contains `substring`;
//! * `# expect: key a.b: substring` — the error names key path `a.b` and its
//!   message contains `substring`.

use moped::config::SystemConfig;
use std::path::Path;

enum Expect {
    At(u32, u32, String),
    Key(String, String),
}

fn parse_expect(first: &str) -> Expect {
    let spec = first
        .strip_prefix("# expect: ")
        .unwrap_or_else(|| panic!("first line must be `# expect: ...`, got {first:?}"));
    let (head, sub) = spec
        .split_once(": ")
        .unwrap_or_else(|| panic!("malformed expectation {spec:?}"));
    if let Some(key) = head.strip_prefix("key ") {
        return Expect::Key(key.to_string(), sub.to_string());
    }
    let (l, c) = head
        .split_once(':')
        .unwrap_or_else(|| panic!("expected LINE:COL in {spec:?}"));
    Expect::At(
        l.parse().expect("line number"),
        c.parse().expect("column number"),
        sub.to_string(),
    )
}

#[test]
fn corpus_errors_match_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/config_corpus");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 25, "corpus has only {} files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let expect = parse_expect(text.lines().next().unwrap_or(""));
        let err = match SystemConfig::from_toml_str(&text, &name) {
            Ok(_) => {
                failures.push(format!("{name}: accepted"));
                continue;
            }
            Err(e) => e,
        };
        let shown = err.to_string();
        assert!(
            shown.starts_with(&name),
            "{name}: error does not name the file: {shown}"
        );
        assert!(!shown.contains('\n'), "{name}: multi-line error: {shown:?}");
        let ok = match &expect {
            Expect::At(l, c, sub) => {
                err.line == Some(*l) && err.col == Some(*c) && shown.contains(sub.as_str())
            }
            Expect::Key(k, sub) => err.key_path == *k && shown.contains(sub.as_str()),
        };
        if !ok {
            failures.push(format!("{name}: got {shown} (key `{}`)", err.key_path));
        }
        // The same file through `from_file` gives the same message body.
        let via_file = SystemConfig::from_file(path).unwrap_err();
        assert_eq!(via_file.msg, err.msg);
        assert_eq!(via_file.key_path, err.key_path);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn missing_file_is_an_error() {
    let e =
        SystemConfig::from_file(Path::new("tests/config_corpus/no_such_file.toml")).unwrap_err();
    assert!(e.to_string().contains("cannot read config"), "{e}");
}

/// Byte-level mutations of a full configuration never panic the parser, and
/// whatever is accepted validates and round-trips.
#[test]
fn mutated_configs_never_panic() {
    let base = SystemConfig::default().to_toml_string();
    let bytes = base.as_bytes();
    let alphabet = b"[]=.\"'#\n 0123456789-+_abcdefxyz{},e:\\\t";
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..3000 {
        let mut m = bytes.to_vec();
        for _ in 0..(1 + next() % 4) {
            let pos = (next() as usize) % m.len().max(1);
            match next() % 3 {
                0 => m[pos] = alphabet[(next() as usize) % alphabet.len()],
                1 => {
                    m.remove(pos);
                }
                _ => m.insert(pos, alphabet[(next() as usize) % alphabet.len()]),
            }
        }
        let text = String::from_utf8_lossy(&m);
        match SystemConfig::from_toml_str(&text, "m.toml") {
            Ok(c) => {
                c.validate().unwrap();
                let again = SystemConfig::from_toml_str(&c.to_toml_string(), "rt").unwrap();
                assert_eq!(again, c);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

#[test]
fn set_never_panics() {
    let keys = [
        "system.cores",
        "l2.latency",
        "l1",
        "network.topology",
        "x",
        "",
        ".",
        "l2.",
        "moped.ops_per_cycle.x",
        "watchdog.request_cycles",
    ];
    let values = [
        "1",
        "-1",
        "1.5",
        "\"s\"",
        "s",
        "[1]",
        "{a=1}",
        "",
        "=",
        "nan",
        "inf",
        "true",
        "1\nx=2",
        "99999999999999999999",
    ];
    for k in keys {
        for v in values {
            let mut c = SystemConfig::default();
            if let Err(e) = c.set(k, v) {
                let _ = e.to_string();
                assert_eq!(c, SystemConfig::default());
            }
        }
    }
}
