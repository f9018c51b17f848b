//! The Markdown tables of every shipped design name, for each row, the statement that
//! defined it: `protocols/<layer>/<machine>.sm:LINE`, relative to the repository root, and
//! that line of that file really is the `transition(...)` or `stall(...)` of the row's
//! state and event (with the row's next state).

use std::path::Path;

use moped::coherence::Protocol;
use moped::design::Design;

/// One row of a `### Transitions` table: state, event, next, actions, source.
struct Row {
    state: String,
    event: String,
    next: String,
    source: String,
}

/// The rows of the transitions table in `md`.
fn transition_rows(md: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in md.lines() {
        if line.starts_with("### ") {
            in_table = line == "### Transitions";
            continue;
        }
        if !in_table || !line.starts_with("| ") || line.starts_with("| State |") {
            continue;
        }
        let cells: Vec<&str> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim())
            .collect();
        assert_eq!(cells.len(), 5, "a transitions row has five cells: {line}");
        rows.push(Row {
            state: cells[0].into(),
            event: cells[1].into(),
            next: cells[2].into(),
            source: cells[4].into(),
        });
    }
    rows
}

/// The names of a set in a statement's head: `A` or `{A, B}`.
fn set_names(set: &str) -> Vec<&str> {
    set.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .map(str::trim)
        .collect()
}

/// Splits the head of `keyword(states, events[, next])` on the commas outside braces.
fn head_parts<'a>(line: &'a str, keyword: &str) -> Option<Vec<&'a str>> {
    let start = line.find(keyword)? + keyword.len();
    let end = start + line[start..].find(')')?;
    let head = &line[start..end];
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in head.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&head[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&head[from..]);
    Some(parts)
}

fn check_row(row: &Row, machine: &str) {
    let what = format!("{machine} ({}, {})", row.state, row.event);
    let (file, line) = row
        .source
        .rsplit_once(':')
        .unwrap_or_else(|| panic!("{what}: source `{}` is not file:line", row.source));
    assert!(
        file.starts_with("protocols/") && !Path::new(file).is_absolute(),
        "{what}: `{file}` is not a path under protocols/"
    );
    let line: usize = line
        .parse()
        .unwrap_or_else(|_| panic!("{what}: `{}` has no line number", row.source));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{what}: {file}: {e}"));
    let at = text
        .lines()
        .nth(line - 1)
        .unwrap_or_else(|| panic!("{what}: {file} has no line {line}"));
    let keyword = if row.next == "stall" {
        "stall("
    } else {
        "transition("
    };
    let parts =
        head_parts(at, keyword).unwrap_or_else(|| panic!("{what}: {file}:{line} is `{at}`"));
    assert!(
        set_names(parts[0]).contains(&row.state.as_str())
            && set_names(parts[1]).contains(&row.event.as_str()),
        "{what}: {file}:{line} is `{at}`"
    );
    if keyword == "transition(" {
        let next = parts.get(2).map_or(row.state.as_str(), |n| n.trim());
        assert_eq!(next, row.next, "{what}: next state at {file}:{line}");
    }
}

#[test]
fn every_row_of_every_shipped_design_names_its_source_line() {
    for design in Design::ALL {
        let p = Protocol::of(design);
        for m in [p.l2.as_ref(), p.dir.as_ref()] {
            let md = m.to_markdown();
            let rows = transition_rows(&md);
            let defined = m
                .transitions()
                .iter()
                .filter(|t| !matches!(t.cell, moped::protocol::Cell::Impossible))
                .count();
            assert_eq!(
                rows.len(),
                defined,
                "{design} {}: one row per cell",
                m.name()
            );
            for row in &rows {
                check_row(row, &format!("{design} {}", m.name()));
            }
        }
    }
}

#[test]
fn overlay_rows_name_the_overlay() {
    let p = Protocol::by_name("optcopy").unwrap();
    let md = p.l2.to_markdown();
    let rows = transition_rows(&md);
    let row = |state: &str, event: &str| {
        rows.iter()
            .find(|r| r.state == state && r.event == event)
            .unwrap_or_else(|| panic!("no row ({state}, {event})"))
    };
    assert!(row("I", "M_GETS")
        .source
        .starts_with("protocols/optcopy/L2Cache.sm:"));
    assert!(row("ID", "Data")
        .source
        .starts_with("protocols/basemoped/L2Cache.sm:"));
    assert!(row("I", "Load")
        .source
        .starts_with("protocols/baseline/L2Cache.sm:"));
}
