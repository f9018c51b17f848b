//! Markdown rendering of a loaded [`Machine`].

use std::fmt::Write;

use super::{Cell, Machine};

/// Makes text safe inside a GFM table cell: escapes `|` and `\`, flattens newlines.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub(super) fn render(m: &Machine) -> String {
    let mut o = String::new();
    heading(m, &mut o);
    states(m, &mut o);
    events(m, &mut o);
    transitions(m, &mut o);
    matrix(m, &mut o);
    o
}

/// The machine's name and description, and the overlays applied to it.
fn heading(m: &Machine, o: &mut String) {
    let _ = writeln!(o, "## Machine {}\n", esc(m.name()));
    if !m.desc().is_empty() {
        let _ = writeln!(o, "{}\n", esc(m.desc()));
    }
    for ov in m.overlays() {
        let _ = writeln!(
            o,
            "Overlay `{}`: {}\n",
            ov.file.replace('`', "'"),
            esc(&ov.desc)
        );
    }
}

fn states(m: &Machine, o: &mut String) {
    o.push_str("### States\n\n| State | Kind | Permission | Description |\n|---|---|---|---|\n");
    for s in m.states() {
        let kind = if s.stable { "stable" } else { "transient" };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            esc(&s.name),
            kind,
            s.permission.dsl_name(),
            esc(&s.desc)
        );
    }
}

fn events(m: &Machine, o: &mut String) {
    o.push_str("\n### Events\n\n| Event | Description |\n|---|---|\n");
    for e in m.events() {
        let _ = writeln!(o, "| {} | {} |", esc(&e.name), esc(&e.desc));
    }
}

/// One row per transition and stall cell; impossible cells are only counted.
fn transitions(m: &Machine, o: &mut String) {
    // Each row names the statement that defined it, in the file as it was loaded (the
    // shipped files as `protocols/<design>/<machine>.sm`), so a reader can go from a row to
    // its line; an overlay's row names the overlay.
    o.push_str(
        "\n### Transitions\n\n| State | Event | Next | Actions | Source |\n|---|---|---|---|---|\n",
    );
    let mut impossible = 0usize;
    for t in m.transitions() {
        let (next, acts) = match t.cell {
            Cell::Transition { next, .. } => {
                (esc(m.state_name(next)), esc(&t.action_names.join(", ")))
            }
            Cell::Stall => ("stall".to_string(), String::new()),
            Cell::Impossible => {
                impossible += 1;
                continue;
            }
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {}:{} |",
            esc(m.state_name(t.state)),
            esc(m.event_name(t.event)),
            next,
            acts,
            esc(&t.file),
            t.line
        );
    }
    let _ = writeln!(o, "\n{impossible} cells impossible\n");
}

/// The whole table at a glance: each cell's next state.
fn matrix(m: &Machine, o: &mut String) {
    o.push_str("### Matrix\n\n`=` same state, `z` stall, blank impossible.\n\n| State |");
    for e in m.events() {
        let _ = write!(o, " {} |", esc(&e.name));
    }
    o.push_str("\n|---|");
    for _ in m.events() {
        o.push_str("---|");
    }
    o.push('\n');
    let n_events = m.events().len();
    for (s, decl) in m.states().iter().enumerate() {
        let _ = write!(o, "| {} |", esc(&decl.name));
        for e in 0..n_events {
            let text = match m.cell(s as u16, e as u16) {
                Cell::Transition { next, .. } if usize::from(next) == s => "=".to_string(),
                Cell::Transition { next, .. } => esc(m.state_name(next)),
                Cell::Stall => "z".to_string(),
                Cell::Impossible => String::new(),
            };
            let _ = write!(o, " {text} |");
        }
        o.push('\n');
    }
}
