//! Unit tests for the protocol DSL.

use super::*;

const ACTS: &[&str] = &["a_one", "b_two", "c_three"];

/// A small complete machine. Line numbers matter to the tests below.
const BASE: &str = r#"machine(M, desc="test \"machine\" \\ x");
state_declaration(State, desc="states") {
  I, AccessPermission:Invalid, stable, desc="invalid";
  S, AccessPermission:Read_Only, stable, desc="shared | pipe";
  IS, AccessPermission:Busy, transient;
}
enumeration(Event, desc="events") {
  Load, desc="load";
  Data;
}
transition(I, Load, IS) { a_one; b_two; }
transition(IS, Data, S) { c_three; }
transition({S}, Load) { a_one; }
stall(IS, Load);
impossible({I, S}, Data);
"#;

fn err(src: &str) -> ProtocolError {
    parse_machine(src, "t.sm", ACTS).expect_err("expected an error")
}

fn assert_err(src: &str, line: u32, col: u32, msg: &str) {
    let e = err(src);
    assert_eq!(
        (e.file.as_str(), e.line, e.col),
        ("t.sm", line, col),
        "wrong position for: {e}"
    );
    assert!(e.msg.contains(msg), "message {:?} lacks {:?}", e.msg, msg);
}

/// BASE with `from` replaced by `to` (which must occur exactly once).
fn edit(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from}");
    BASE.replace(from, to)
}

/// Transition cells, and only they, have counters `0..n_counters()` in `(state, event)`
/// order, and each counter maps back to its cell.
fn assert_dense_counters(m: &Machine) {
    let mut next = 0;
    for t in m.transitions() {
        if let Cell::Transition { counter, .. } = m.cell(t.state, t.event) {
            assert_eq!(counter as usize, next, "({}, {})", t.state, t.event);
            assert_eq!(m.counted_cell(next), (t.state, t.event));
            next += 1;
        }
    }
    assert_eq!(m.n_counters(), next);
}

#[test]
fn parses_base() {
    let m = parse_machine(BASE, "t.sm", ACTS).unwrap();
    assert_eq!(m.name(), "M");
    assert_eq!(m.desc(), "test \"machine\" \\ x");
    assert_eq!(m.file(), "t.sm");
    assert_eq!(m.states().len(), 3);
    assert_eq!(m.events().len(), 2);
    let i = m.state_id("I").unwrap();
    let s = m.state_id("S").unwrap();
    let is = m.state_id("IS").unwrap();
    let load = m.event_id("Load").unwrap();
    let data = m.event_id("Data").unwrap();
    assert_eq!(m.states()[2].desc, "");
    assert_eq!((m.states()[1].line, m.states()[1].col), (4, 3));
    assert_eq!((m.events()[1].line, m.events()[1].col), (9, 3));
    assert!(m.is_stable(i) && !m.is_stable(is));
    assert_eq!(m.permission(s), Permission::ReadOnly);
    assert_eq!(m.permission(is), Permission::Busy);
    match m.cell(i, load) {
        Cell::Transition {
            next,
            first_action,
            n_actions,
            counter,
        } => {
            assert_eq!(next, is);
            assert_eq!(m.actions(first_action, n_actions), &[0, 1]);
            assert_eq!(counter, 0, "the first cell is counted first");
        }
        c => panic!("{c:?}"),
    }
    match m.cell(s, load) {
        Cell::Transition { next, .. } => assert_eq!(next, s),
        c => panic!("{c:?}"),
    }
    assert_eq!(m.cell(is, load), Cell::Stall);
    assert_eq!(m.cell(i, data), Cell::Impossible);
    assert_eq!(m.state_name(is), "IS");
    assert_eq!(m.event_name(data), "Data");
    let t = m.transitions();
    assert_eq!(t.len(), 6);
    assert!(t
        .windows(2)
        .all(|w| (w[0].state, w[0].event) < (w[1].state, w[1].event)));
    assert_eq!(t[0].action_names, vec!["a_one", "b_two"]);
    assert_eq!((t[0].line, t[0].col), (11, 1));
    assert_eq!(m.require_states(&["S", "I"]).unwrap(), vec![s, i]);
    assert_dense_counters(&m);
    let e = m.require_states(&["I", "MM"]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.sm", 2, 1));
    assert!(e.msg.contains("'MM'"));
    let e = m.require_events(&["Nope"]).unwrap_err();
    assert_eq!((e.line, e.col), (7, 1));
    assert!(e.to_string().starts_with("t.sm:7:1: "));
    assert_eq!(m.require_events(&["Data"]).unwrap(), vec![data]);
}

#[test]
fn markdown_tables() {
    let m = parse_machine(BASE, "t.sm", ACTS).unwrap();
    let md = m.to_markdown();
    assert!(md.starts_with("## Machine M\n"));
    assert!(md.contains("| State | Kind | Permission | Description |"));
    assert!(md.contains("| S | stable | Read_Only | shared \\| pipe |"));
    assert!(md.contains("| Event | Description |"));
    assert!(md.contains("| State | Event | Next | Actions | Source |"));
    assert!(md.contains("| I | Load | IS | a_one, b_two | t.sm:11 |"));
    assert!(md.contains("| S | Load | S | a_one | t.sm:13 |"));
    assert!(md.contains("| IS | Load | stall |  | t.sm:14 |"));
    assert!(md.contains("2 cells impossible"));
    assert!(md.contains("| State | Load | Data |"));
    assert!(md.contains("| I | IS |  |"));
    assert!(md.contains("| S | = |  |"));
    assert!(md.contains("| IS | z | S |"));
    // Every table row has the same number of unescaped pipes as its header.
    for block in md.split("\n\n").filter(|b| b.starts_with('|')) {
        let count = |l: &str| l.replace("\\|", "").matches('|').count();
        let lines: Vec<&str> = block.lines().collect();
        let n = count(lines[0]);
        assert!(lines.iter().all(|l| count(l) == n), "{block}");
    }
}

#[test]
fn comments_and_whitespace_everywhere() {
    let src = "/* a */ machine /* b */ ( M // c\n ) ;\nstate_declaration(State){I,AccessPermission:Invalid,stable;}\n\
               enumeration ( Event ) { E ; }\ntransition ( I , E ) { } // end";
    let m = parse_machine(src, "t.sm", ACTS).unwrap();
    match m.cell(0, 0) {
        Cell::Transition {
            next, n_actions, ..
        } => assert_eq!((next, n_actions), (0, 0)),
        c => panic!("{c:?}"),
    }
}

#[test]
fn empty_and_garbage() {
    assert_err(
        "",
        1,
        1,
        "expected 'machine(...)' header, found end of file",
    );
    assert_err("   \n  ", 2, 3, "expected 'machine(...)' header");
    assert_err("\u{0}\u{1}\u{FFFD}", 1, 1, "expected 'machine(...)' header");
    assert_err("overlay(M);", 1, 1, "apply_overlay");
}

#[test]
fn unterminated() {
    assert_err("machine(M, desc=\"abc);", 1, 17, "unterminated string");
    assert_err(
        "machine(M);\n  /* never closed",
        2,
        3,
        "unterminated block comment",
    );
    assert_err("machine(M, desc=\"a\\n\");", 1, 19, "invalid escape '\\n'");
}

#[test]
fn header_syntax() {
    assert_err("machine M;", 1, 9, "expected '(' after 'machine'");
    assert_err("machine(3);", 1, 9, "expected machine name");
    assert_err(
        "machine(M desc);",
        1,
        11,
        "expected ',' or ')' after machine name",
    );
    assert_err("machine(M, dsc=\"x\");", 1, 12, "expected 'desc=\"...\"'");
    assert_err("machine(M, desc=x);", 1, 17, "expected a string");
    assert_err(
        "machine(M)\nstate_declaration",
        2,
        1,
        "expected ';' after machine header",
    );
    assert_err(
        "machine(M);\nenumeration(Event){E;}",
        2,
        1,
        "expected 'state_declaration'",
    );
}

#[test]
fn state_syntax() {
    assert_err(
        &edit("Read_Only, stable", "Read_Only stable"),
        4,
        33,
        "expected ',' after access permission",
    );
    assert_err(
        &edit("Busy, transient", "Busy, transit"),
        5,
        30,
        "expected 'stable' or 'transient'",
    );
    assert_err(
        &edit("Read_Only,", "ReadOnly,"),
        4,
        23,
        "unknown access permission 'ReadOnly'",
    );
    assert_err(
        &edit("I, AccessPermission", "I, Access"),
        3,
        6,
        "expected 'AccessPermission:<permission>'",
    );
    assert_err(
        &edit("AccessPermission:Busy", "AccessPermission Busy"),
        5,
        24,
        "expected ':'",
    );
    assert_err(
        &edit("desc=\"invalid\";", "desc=\"invalid\""),
        4,
        3,
        "expected ';' after state declaration",
    );
    assert_err(
        &edit("transient;", "transient"),
        6,
        1,
        "expected ',' or ';' after state kind",
    );
    assert_err(
        &edit("state_declaration(State,", "state_declaration(Foo,"),
        2,
        19,
        "expected 'State'",
    );
    assert_err(
        "machine(M);\nstate_declaration(State) {\n}",
        3,
        1,
        "expected at least one state declaration",
    );
    assert_err(
        &edit(
            "  S, AccessPermission:Read_Only",
            "  I, AccessPermission:Read_Only",
        ),
        4,
        3,
        "duplicate state 'I' (first declared at 3:3)",
    );
}

#[test]
fn event_syntax() {
    assert_err(
        &edit("Data;", "Data"),
        10,
        1,
        "expected ',' or ';' after event name",
    );
    assert_err(
        &edit("Data;", "Load;"),
        9,
        3,
        "duplicate event 'Load' (first declared at 8:3)",
    );
    assert_err(
        &edit("enumeration(Event,", "enumeration(Events,"),
        7,
        13,
        "expected 'Event'",
    );
    assert_err(
        &edit("enumeration", "enumerate"),
        7,
        1,
        "expected 'enumeration(Event, ...)'",
    );
}

#[test]
fn transition_syntax() {
    assert_err(
        &edit("a_one; b_two; }", "a_one b_two; }"),
        11,
        33,
        "expected ';' after transition actions",
    );
    assert_err(
        &edit("{ c_three; }", "c_three; }"),
        12,
        25,
        "expected '{' to open transition actions",
    );
    assert_err(
        &edit("stall(IS, Load);", "stall(IS, Load)"),
        15,
        1,
        "expected ';' after stall(...)",
    );
    assert_err(
        &edit("transition({S}, Load)", "transition({S} Load)"),
        13,
        16,
        "expected ',' after states",
    );
    assert_err(
        &edit("transition({S}, Load)", "transition({S, }, Load)"),
        13,
        16,
        "expected state name",
    );
    assert_err(
        &edit("transition({S}, Load)", "transition({S; I}, Load)"),
        13,
        14,
        "expected ',' or '}' in state set",
    );
    assert_err(
        &edit("transition(IS, Data, S)", "transition(IS, Data S)"),
        12,
        21,
        "expected ',' or ')' after events",
    );
    assert_err(
        &edit("impossible(", "impossibl("),
        15,
        1,
        "expected 'transition', 'stall', 'impossible' or end of file",
    );
    assert_err(
        &edit("stall(IS", "override stall(IS"),
        14,
        1,
        "only allowed in overlay files",
    );
    assert_err(
        &format!("{BASE}enumeration(Event) {{ X; }}"),
        16,
        1,
        "out of place",
    );
    assert_err(
        &edit("{I, S}, Data", "{I, I}, Data"),
        15,
        16,
        "listed twice",
    );
}

#[test]
fn unknown_names() {
    assert_err(
        &edit("transition(I, Load, IS)", "transition(Q, Load, IS)"),
        11,
        12,
        "unknown state 'Q'",
    );
    assert_err(
        &edit("transition(I, Load, IS)", "transition(I, Lod, IS)"),
        11,
        15,
        "unknown event 'Lod'",
    );
    assert_err(
        &edit("transition(I, Load, IS)", "transition(I, Load, XX)"),
        11,
        21,
        "unknown next state 'XX'",
    );
    assert_err(
        &edit("{ c_three; }", "{ c_four; }"),
        12,
        27,
        "unknown action 'c_four'",
    );
    assert_err(
        &edit("impossible({I, S}", "impossible({I, SS}"),
        15,
        16,
        "unknown state 'SS'",
    );
}

#[test]
fn duplicate_cells() {
    let src = format!("{BASE}\n  transition(IS, Data) {{}}\n");
    assert_err(
        &src,
        17,
        3,
        "duplicate cell (IS, Data): first defined at 12:1",
    );
    assert_err(
        &edit("stall(IS, Load);", "stall({IS, I}, Load);"),
        14,
        1,
        "duplicate cell (I, Load): first defined at 11:1",
    );
}

#[test]
fn incomplete_table() {
    assert_err(
        &edit("stall(IS, Load);\n", ""),
        5,
        3,
        "incomplete table: (IS, Load) is neither defined nor declared stall/impossible",
    );
    let e = err(&edit("impossible({I, S}, Data);", "impossible({S}, Data);"));
    assert_eq!(
        e.to_string(),
        "t.sm:3:3: incomplete table: (I, Data) is neither defined nor declared stall/impossible"
    );
}

#[test]
fn lint_skips_completeness() {
    assert!(lint(&edit("stall(IS, Load);\n", ""), "t.sm", ACTS).is_ok());
    assert!(lint(&edit("{ c_three;", "{ zz;"), "t.sm", ACTS).is_err());
}

#[test]
fn column_counts_characters() {
    let e = err("machine(M, desc=\"ééé\") x");
    assert_eq!((e.line, e.col), (1, 24));
}

const OVL: &str = r#"overlay(M, desc="adds D");
state_declaration(State) { D, AccessPermission:Busy, transient, desc="d"; }
enumeration(Event) { Mg, desc="moped get"; }
transition(I, Mg, D) { d_four; }
transition({S, IS}, Mg) { a_one; }
stall(D, {Load, Data});
transition(D, Mg, I) {}
override transition(S, Load, I) { d_four; }
"#;

const ACTS4: &[&str] = &["a_one", "b_two", "c_three", "d_four"];

fn base() -> Machine {
    parse_machine(BASE, "t.sm", ACTS).unwrap()
}

fn ovl_err(src: &str) -> ProtocolError {
    apply_overlay(&base(), src, "o.sm", ACTS4).expect_err("expected an error")
}

fn edit_ovl(from: &str, to: &str) -> String {
    assert_eq!(OVL.matches(from).count(), 1, "{from}");
    OVL.replace(from, to)
}

#[test]
fn overlay_applies() {
    let m = apply_overlay(&base(), OVL, "o.sm", ACTS4).unwrap();
    assert_eq!(m.name(), "M");
    assert_eq!(m.file(), "t.sm");
    assert_eq!(m.overlays()[0].file, "o.sm");
    assert_eq!(m.overlays()[0].desc, "adds D");
    let (s, i, d) = (
        m.state_id("S").unwrap(),
        m.state_id("I").unwrap(),
        m.state_id("D").unwrap(),
    );
    let load = m.event_id("Load").unwrap();
    let mg = m.event_id("Mg").unwrap();
    match m.cell(s, load) {
        Cell::Transition {
            next,
            first_action,
            n_actions,
            ..
        } => {
            assert_eq!(next, i);
            assert_eq!(m.actions(first_action, n_actions), &[3]);
        }
        c => panic!("{c:?}"),
    }
    assert_eq!(m.cell(d, load), Cell::Stall);
    let t = m
        .transitions()
        .iter()
        .find(|t| t.state == s && t.event == load)
        .unwrap();
    assert_eq!((t.file.as_str(), t.line, t.col), ("o.sm", 8, 1));
    let t = m
        .transitions()
        .iter()
        .find(|t| t.state == i && t.event == load)
        .unwrap();
    assert_eq!((t.file.as_str(), t.line), ("t.sm", 11));
    assert!(matches!(m.cell(i, mg), Cell::Transition { next, .. } if next == d));
    assert_eq!(m.transitions().len(), 4 * 3);
    assert_dense_counters(&m);
}

#[test]
fn overlay_errors() {
    let e = ovl_err(&edit_ovl("overlay(M,", "overlay(L2,"));
    assert_eq!((e.file.as_str(), e.line, e.col), ("o.sm", 1, 9));
    assert!(e
        .msg
        .contains("overlay is for machine 'L2' but the base machine is 'M'"));

    let e = ovl_err(&edit_ovl(
        "override transition(S, Load, I)",
        "transition(S, Load, I)",
    ));
    assert_eq!((e.line, e.col), (8, 1));
    assert!(
        e.msg
            .contains("duplicate cell (S, Load): first defined at t.sm:13:1 (use 'override'"),
        "{e}"
    );

    let e = ovl_err(&format!("{OVL}override stall(S, Load);\n"));
    assert_eq!((e.line, e.col), (9, 1));
    assert!(
        e.msg
            .contains("duplicate cell (S, Load): first defined at 8:1"),
        "{e}"
    );

    let e = ovl_err(&edit_ovl(
        "transition(D, Mg, I)",
        "override transition(D, Mg, I)",
    ));
    assert_eq!((e.line, e.col), (7, 1));
    assert!(
        e.msg
            .contains("override of cell (D, Mg), which the base machine 'M' does not define"),
        "{e}"
    );

    let e = ovl_err(&edit_ovl("D, AccessPermission", "S, AccessPermission"));
    assert_eq!((e.line, e.col), (2, 28));
    assert!(
        e.msg
            .contains("duplicate state 'S' (first declared at t.sm:4:3)"),
        "{e}"
    );

    // Missing cell in the new event's column: reported at the base state's declaration.
    let e = ovl_err(&edit_ovl("transition(I, Mg, D) { d_four; }\n", ""));
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.sm", 3, 3));
    assert!(e.msg.contains("(I, Mg)"), "{e}");

    // Missing cell in the new state's row: reported at the overlay's declaration.
    let e = ovl_err(&edit_ovl("transition(D, Mg, I) {}\n", ""));
    assert_eq!((e.file.as_str(), e.line, e.col), ("o.sm", 2, 28));

    let e = ovl_err("machine(M);");
    assert!(e.msg.contains("expected 'overlay(...)' header"), "{e}");

    // The base's actions must be in the overlay's registry.
    let e = apply_overlay(&base(), OVL, "o.sm", &["a_one", "d_four"]).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.sm", 11, 1));
    assert!(e.msg.contains("'b_two'"), "{e}");
}

#[test]
fn overlay_of_overlay() {
    let m = apply_overlay(&base(), OVL, "o.sm", ACTS4).unwrap();
    let m2 = apply_overlay(
        &m,
        "overlay(M);\noverride transition(D, Mg, S) {}\n",
        "o2.sm",
        ACTS4,
    )
    .unwrap();
    let (d, s, mg) = (
        m2.state_id("D").unwrap(),
        m2.state_id("S").unwrap(),
        m2.event_id("Mg").unwrap(),
    );
    assert!(matches!(m2.cell(d, mg), Cell::Transition { next, n_actions: 0, .. } if next == s));
    assert_eq!(m2.overlays().len(), 2);
}

#[test]
fn prefixes_never_panic() {
    for src in [BASE, OVL] {
        for (k, _) in src.char_indices().chain([(src.len(), ' ')]) {
            let _ = parse_machine(&src[..k], "t.sm", ACTS);
            let _ = apply_overlay(&base(), &src[..k], "o.sm", ACTS4);
        }
    }
}

#[test]
fn string_may_not_span_lines() {
    assert_err("machine(M, desc=\"abc\n\");", 1, 17, "unterminated string");
}

#[test]
fn a_transition_with_too_many_actions_is_rejected_at_its_line() {
    let many = vec!["a_one;"; 256].join(" ");
    let src = edit(
        "transition(IS, Data, S) { c_three; }",
        &format!("transition(IS, Data, S) {{ {many} }}"),
    );
    assert_err(
        &src,
        12,
        1,
        "too many actions in one transition (at most 255)",
    );
    let most = vec!["a_one;"; 255].join(" ");
    let src = edit(
        "transition(IS, Data, S) { c_three; }",
        &format!("transition(IS, Data, S) {{ {most} }}"),
    );
    parse_machine(&src, "t.sm", ACTS).expect("255 actions fit");
}

#[test]
fn transition_counts_carry_past_sixteen_bits() {
    let mut c = TransitionCounts::new(3);
    for _ in 0..(3 << 16) + 5 {
        c.bump(1);
    }
    c.bump(2);
    assert_eq!(c.iter().collect::<Vec<_>>(), vec![0, (3 << 16) + 5, 1]);
    assert_eq!(c.get(1), 196_613);
    assert_eq!(c.len(), 3);
    assert!(TransitionCounts::default().is_empty());
}

#[test]
fn transition_counts_add_many_runs_as_bumps_would() {
    let (mut added, mut bumped) = (TransitionCounts::new(3), TransitionCounts::new(3));
    for (k, n) in [
        (0usize, 7u64),
        (1, 65_530),
        (1, 9),
        (2, 1 << 20),
        (0, 65_536),
    ] {
        added.add(k, n);
        for _ in 0..n {
            bumped.bump(k);
        }
    }
    assert_eq!(
        added.iter().collect::<Vec<_>>(),
        bumped.iter().collect::<Vec<_>>()
    );
    assert_eq!(added.get(1), 65_539);
}

/// Draining lists every counter that counted, one that carried past 16 bits to an exact
/// multiple of 65,536 (its low bits zero) too, and leaves every counter at zero.
#[test]
fn transition_counts_drain_the_counters_that_counted() {
    let mut c = TransitionCounts::new(4);
    c.bump(3);
    c.add(1, 1 << 16);
    let mut seen = Vec::new();
    c.drain_counted(|k| seen.push(k));
    assert_eq!(seen, vec![1, 3]);
    assert_eq!(c.iter().collect::<Vec<_>>(), vec![0; 4]);
    c.bump(0);
    seen.clear();
    c.drain_counted(|k| seen.push(k));
    assert_eq!(seen, vec![0]);
}
