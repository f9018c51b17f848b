//! Corpus tests for the protocol DSL.
//!
//! `tests/protocol_corpus/bad/*.sm` are malformed files. Each starts with a comment
//! `// expect: [FILE:]LINE:COL: MESSAGE-SUBSTRING`. Files named `ovl_*.sm` are
//! overlays applied to `valid/base.sm`; the others are loaded as machines. Every
//! file is loaded with the registry [`ACTS`] and must fail exactly as expected.

use std::fs;
use std::path::{Path, PathBuf};

use moped::protocol::{apply_overlay, parse_machine, Cell, Machine, ProtocolError};

const ACTS: &[&str] = &["a_one", "b_two", "c_three"];

const L2_ACTS: &[&str] = &[
    "a_issueGETS",
    "b_issueGETX",
    "d_issuePUTX",
    "e_sendData",
    "f_sendAck",
    "h_loadHit",
    "hh_storeHit",
    "kk_deallocate",
    "u_writeData",
    "uu_profileMiss",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/protocol_corpus")
}

fn read(path: &Path) -> String {
    String::from_utf8_lossy(&fs::read(path).unwrap()).into_owned()
}

fn base() -> Machine {
    let src = read(&corpus().join("valid/base.sm"));
    parse_machine(&src, "base.sm", ACTS).unwrap()
}

/// Parses `// expect: [FILE:]LINE:COL: MSG`.
fn expectation(src: &str, name: &str) -> (Option<String>, u32, u32, String) {
    let first = src.lines().next().unwrap_or("");
    let rest = first
        .strip_prefix("// expect: ")
        .unwrap_or_else(|| panic!("{name}: first line must be '// expect: ...'"));
    let (loc, msg) = rest
        .split_once(": ")
        .unwrap_or_else(|| panic!("{name}: bad expectation"));
    let parts: Vec<&str> = loc.split(':').collect();
    let (file, line, col) = match parts.as_slice() {
        [l, c] => (None, *l, *c),
        [f, l, c] => (Some(f.to_string()), *l, *c),
        _ => panic!("{name}: bad location {loc:?}"),
    };
    (
        file,
        line.parse().unwrap(),
        col.parse().unwrap(),
        msg.to_string(),
    )
}

fn load(name: &str, src: &str, base: &Machine) -> Result<Machine, ProtocolError> {
    if name.starts_with("ovl_") {
        apply_overlay(base, src, name, ACTS)
    } else {
        parse_machine(src, name, ACTS)
    }
}

#[test]
fn malformed_corpus() {
    let base = base();
    let mut files: Vec<PathBuf> = fs::read_dir(corpus().join("bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sm"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "only {} corpus files", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let src = read(path);
        let (file, line, col, msg) = expectation(&src, &name);
        let want_file = file.unwrap_or_else(|| name.clone());
        match load(&name, &src, &base) {
            Ok(_) => failures.push(format!("{name}: loaded, expected {line}:{col}: {msg}")),
            Err(e) => {
                let one_line = !e.to_string().contains('\n');
                if e.file != want_file
                    || e.line != line
                    || e.col != col
                    || !e.msg.contains(&msg)
                    || !one_line
                {
                    failures.push(format!(
                        "{name}: got `{e}`, expected {want_file}:{line}:{col}: {msg}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "corpus mismatches:\n{}",
        failures.join("\n")
    );
}

fn check_complete(m: &Machine) {
    let ns = m.states().len();
    let ne = m.events().len();
    assert_eq!(m.transitions().len(), ns * ne);
    let mut counters = 0;
    for (k, t) in m.transitions().iter().enumerate() {
        assert_eq!((t.state as usize, t.event as usize), (k / ne, k % ne));
        assert_eq!(m.cell(t.state, t.event), t.cell);
        if let Cell::Transition {
            next,
            first_action,
            n_actions,
            counter,
        } = t.cell
        {
            assert!((next as usize) < ns);
            assert_eq!(
                m.actions(first_action, n_actions).len(),
                t.action_names.len()
            );
            assert_eq!(
                counter as usize, counters,
                "counters are dense, in cell order"
            );
            assert_eq!(m.counted_cell(counters), (t.state, t.event));
            counters += 1;
        }
    }
    assert_eq!(m.n_counters(), counters);
    let md = m.to_markdown();
    assert!(md.contains(&format!("## Machine {}", m.name())));
    for s in m.states() {
        assert!(
            md.contains(&format!("| {} |", s.name)),
            "markdown lacks state {}",
            s.name
        );
    }
}

#[test]
fn valid_files_load_complete() {
    let b = base();
    assert_eq!(b.name(), "Mini");
    check_complete(&b);

    let src = read(&corpus().join("valid/l2.sm"));
    let l2 = parse_machine(&src, "l2.sm", L2_ACTS).unwrap();
    check_complete(&l2);
    let [o, m] = l2.require_states(&["O", "M"]).unwrap()[..] else {
        panic!()
    };
    let fwd = l2.event_id("Fwd_GETS").unwrap();
    let Cell::Transition {
        next,
        first_action,
        n_actions,
        ..
    } = l2.cell(m, fwd)
    else {
        panic!()
    };
    assert_eq!(next, o);
    let names: Vec<&str> = l2
        .actions(first_action, n_actions)
        .iter()
        .map(|&a| L2_ACTS[a as usize])
        .collect();
    assert_eq!(names, ["e_sendData"]);
    assert!(l2.states().iter().any(|s| s.desc.contains("\"WB_Ack\"")));
    assert!(l2
        .require_events(&["Load", "Nope"])
        .unwrap_err()
        .to_string()
        .contains("'Nope'"));

    let src = read(&corpus().join("valid/ovl_ok.sm"));
    let merged = apply_overlay(&b, &src, "ovl_ok.sm", ACTS).unwrap();
    check_complete(&merged);
    assert_eq!(merged.states().len(), 4);
    assert_eq!(merged.events().len(), 4);
    let (s, i, load) = (
        merged.state_id("S").unwrap(),
        merged.state_id("I").unwrap(),
        merged.event_id("Load").unwrap(),
    );
    assert!(matches!(merged.cell(s, load), Cell::Transition { next, .. } if next == i));
}

#[test]
fn every_prefix_is_handled() {
    let b = base();
    for name in ["valid/base.sm", "valid/l2.sm", "valid/ovl_ok.sm"] {
        let src = read(&corpus().join(name));
        for k in (0..=src.len()).filter(|&k| src.is_char_boundary(k)) {
            let prefix = &src[..k];
            let r = parse_machine(prefix, name, L2_ACTS);
            if let Err(e) = &r {
                assert!(e.line >= 1 && e.col >= 1, "{e}");
            }
            let _ = apply_overlay(&b, prefix, name, ACTS);
        }
    }
}

#[test]
fn huge_and_odd_inputs_do_not_panic() {
    let b = base();
    let inputs = [
        "{".repeat(100_000),
        "/*".repeat(50_000),
        "\"".repeat(10_000),
        format!(
            "machine(M);\nstate_declaration(State) {{ {} }}",
            "A, AccessPermission:Busy, stable;".repeat(2)
        ),
        format!("machine({});", "x".repeat(1_000_000)),
        "machine(M);\n".repeat(10_000),
        "\u{FEFF}machine(M);".to_string(),
        "\r\n\r\nmachine(M);\r\n".to_string(),
    ];
    for src in &inputs {
        assert!(parse_machine(src, "x.sm", ACTS).is_err());
        assert!(apply_overlay(&b, src, "x.sm", ACTS).is_err());
    }
    // A large valid machine: many states, a single stall line covering the table.
    let mut src = String::from("machine(Big);\nstate_declaration(State) {\n");
    for k in 0..2000 {
        src.push_str(&format!("  S{k}, AccessPermission:Busy, transient;\n"));
    }
    src.push_str("}\nenumeration(Event) { E0; E1; }\nstall({");
    src.push_str(
        &(0..2000)
            .map(|k| format!("S{k}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    src.push_str("}, {E0, E1});\n");
    let m = parse_machine(&src, "big.sm", ACTS).unwrap();
    assert_eq!(m.cell(1999, 1), Cell::Stall);
}

#[test]
fn mutated_files_do_not_panic() {
    let b = base();
    let src = read(&corpus().join("valid/ovl_ok.sm"));
    let base_src = read(&corpus().join("valid/base.sm"));
    let alphabet: Vec<char> = "{}(),;:=\"\\/*\n _aZ9é\u{0}".chars().collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n.max(1)
    };
    for text in [&base_src, &src] {
        let chars: Vec<char> = text.chars().collect();
        for _ in 0..1500 {
            let mut m = chars.clone();
            for _ in 0..1 + next(4) {
                let k = next(m.len());
                match next(3) {
                    0 => m[k] = alphabet[next(alphabet.len())],
                    1 => {
                        m.remove(k);
                    }
                    _ => m.insert(k, alphabet[next(alphabet.len())]),
                }
            }
            let s: String = m.into_iter().collect();
            let _ = parse_machine(&s, "m.sm", ACTS);
            let _ = apply_overlay(&b, &s, "m.sm", ACTS);
        }
    }
}
