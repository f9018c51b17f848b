//! SLICC tables for gem5, generated from the protocol files in `protocols/`.
//!
//! A gem5 build holds one protocol, but the paper's four designs must be selectable at run
//! time. So the generated machine is the union of the designs' tables: every state and
//! event of any design, and one table column per event. Where designs disagree about an
//! event's column (an overlay's `override`, or a cell one design calls impossible and
//! another defines), the event is split: the first design keeps its name, later columns
//! get `<Event>_<design>`, and a generated function `designEvent` tells the controller's
//! in_ports which of them to trigger under its `design` parameter. Each design therefore
//! runs exactly its own table, the same one the embedded simulator runs.
//!
//! Only states, events and transitions are generated; the actions, in_ports, types and
//! helper functions are written once per host in SLICC (gem5-configs/moped_ext/protocol),
//! and generation fails if a table names an action the host does not define.

use std::collections::BTreeMap;

use crate::coherence::Protocol;
use crate::design::Design;
use crate::protocol::{Cell, Machine, Permission, ProtocolError};

/// The two generated files of one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineSlicc {
    /// `state_declaration`, `enumeration(Event)` and `designEvent`: included at the top of
    /// the machine.
    pub decls: String,
    /// The transitions: included at the end of the machine, after the actions.
    pub transitions: String,
}

/// How one host file binds a machine: the file defining its actions and what a stall is.
#[derive(Clone, Copy, Debug)]
pub struct Host<'a> {
    /// Name of the file with the machine's hand-written SLICC (for error messages).
    pub file: &'a str,
    /// Its text: every action the tables name must be defined in it.
    pub text: &'a str,
    /// The action a stall cell runs (it recycles the message that raised the event).
    pub stall_action: &'a str,
    /// The action that dequeues the message an event came from, appended to each of the
    /// event's transitions (gem5 pops queues explicitly; the embedded simulator consumes a
    /// message by handling it). Events without one (a replacement) consume nothing.
    pub pops: &'a [(&'a str, &'a str)],
}

/// One design's column of an event: the cell of each union state (None where the design
/// lacks the state, which is never reached under it).
type Column = Vec<Option<CellKey>>;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum CellKey {
    /// Run the actions; `None` stays in the same state.
    Transition {
        next: Option<String>,
        actions: Vec<String>,
    },
    Stall,
    Impossible,
}

/// One SLICC event: its name, the designs (indices into [`Design::ALL`]) that raise
/// it, and its column over the union states.
struct SliccEvent {
    name: String,
    base: String,
    desc: String,
    designs: Vec<usize>,
    column: Column,
}

/// Generates the SLICC of the L2 controller and the directory from the shipped designs.
pub fn generate(l2: Host, dir: Host) -> Result<(MachineSlicc, MachineSlicc), ProtocolError> {
    let protocols: Vec<Protocol> = Design::ALL.into_iter().map(Protocol::of).collect();
    let l2s: Vec<&Machine> = protocols.iter().map(|p| p.l2.as_ref()).collect();
    let dirs: Vec<&Machine> = protocols.iter().map(|p| p.dir.as_ref()).collect();
    Ok((generate_machine(&l2s, l2)?, generate_machine(&dirs, dir)?))
}

/// The union machine of `designs` (one table per design, in [`Design::ALL`] order,
/// each a superset of... nothing is assumed: states and events are merged by name).
pub fn generate_machine(designs: &[&Machine], host: Host) -> Result<MachineSlicc, ProtocolError> {
    let states = union_states(designs)?;
    let events = split_events(designs, &states);
    check_actions(&events, host, designs[0].name())?;
    Ok(MachineSlicc {
        decls: write_decls(designs, &states, &events),
        transitions: write_transitions(designs[0].name(), &states, &events, host),
    })
}

/// The states of every design, in order of first declaration; a state declared twice
/// must agree on its permission.
fn union_states(designs: &[&Machine]) -> Result<Vec<(String, Permission, String)>, ProtocolError> {
    let mut out: Vec<(String, Permission, String)> = Vec::new();
    for m in designs {
        for s in m.states() {
            match out.iter().find(|o| o.0 == s.name) {
                Some(o) if o.1 != s.permission => {
                    return Err(ProtocolError::new(
                        m.file(),
                        (s.line, s.col),
                        format!(
                            "state `{}` has permission {} here but {} in another design; one gem5 build holds every design",
                            s.name,
                            s.permission.dsl_name(),
                            o.1.dsl_name()
                        ),
                    ))
                }
                Some(_) => {}
                None => out.push((s.name.clone(), s.permission, s.desc.clone())),
            }
        }
    }
    Ok(out)
}

fn cell_key(m: &Machine, s: u16, e: u16, actions: &BTreeMap<(u16, u16), Vec<String>>) -> CellKey {
    match m.cell(s, e) {
        Cell::Transition { next, .. } => CellKey::Transition {
            next: (next != s).then(|| m.state_name(next).to_string()),
            actions: actions.get(&(s, e)).cloned().unwrap_or_default(),
        },
        Cell::Stall => CellKey::Stall,
        Cell::Impossible => CellKey::Impossible,
    }
}

/// Whether two columns agree wherever both designs have the state.
fn compatible(a: &Column, b: &Column) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| x.is_none() || y.is_none() || x == y)
}

/// Every event, split where designs disagree on its column.
fn split_events(designs: &[&Machine], states: &[(String, Permission, String)]) -> Vec<SliccEvent> {
    let names = Design::ALL.map(Design::name);
    let mut order: Vec<(String, String)> = Vec::new();
    for m in designs {
        for e in m.events() {
            if !order.iter().any(|o| o.0 == e.name) {
                order.push((e.name.clone(), e.desc.clone()));
            }
        }
    }
    let mut out = Vec::new();
    for (event, desc) in order {
        let mut groups: Vec<SliccEvent> = Vec::new();
        for (d, m) in designs.iter().enumerate() {
            let Some(e) = m.event_id(&event) else {
                continue;
            };
            let actions: BTreeMap<(u16, u16), Vec<String>> = m
                .transitions()
                .iter()
                .map(|t| ((t.state, t.event), t.action_names.clone()))
                .collect();
            let column: Column = states
                .iter()
                .map(|(s, _, _)| m.state_id(s).map(|s| cell_key(m, s, e, &actions)))
                .collect();
            match groups.iter_mut().find(|g| compatible(&g.column, &column)) {
                Some(g) => {
                    g.designs.push(d);
                    for (c, new) in g.column.iter_mut().zip(column) {
                        if c.is_none() {
                            *c = new;
                        }
                    }
                }
                None => {
                    let name = if groups.is_empty() {
                        event.clone()
                    } else {
                        format!("{event}_{}", names.get(d).copied().unwrap_or("design"))
                    };
                    groups.push(SliccEvent {
                        name,
                        base: event.clone(),
                        desc: desc.clone(),
                        designs: vec![d],
                        column,
                    });
                }
            }
        }
        out.extend(groups);
    }
    out
}

/// Every action a table names must be defined by the host's SLICC.
fn check_actions(events: &[SliccEvent], host: Host, machine: &str) -> Result<(), ProtocolError> {
    let defined = defined_actions(host.text);
    for ev in events {
        for c in ev.column.iter().flatten() {
            let CellKey::Transition { actions, .. } = c else {
                continue;
            };
            for a in actions {
                if !defined.contains(&a.as_str()) {
                    // At the first action definition, or the file's start without one.
                    let at = host.text.find("action(").unwrap_or(0);
                    return Err(ProtocolError::at(
                        host.file,
                        host.text,
                        at,
                        format!(
                            "machine {machine}: action `{a}` (event {}) has no SLICC definition in this file",
                            ev.name
                        ),
                    ));
                }
            }
        }
    }
    for (_, pop) in host.pops {
        if !defined.contains(pop) {
            return Err(ProtocolError::new(
                host.file,
                (1, 1),
                format!("machine {machine}: the pop action `{pop}` has no SLICC definition in this file"),
            ));
        }
    }
    if !defined.contains(&host.stall_action) {
        return Err(ProtocolError::new(
            host.file,
            (1, 1),
            format!(
                "machine {machine}: the stall action `{}` has no SLICC definition in this file",
                host.stall_action
            ),
        ));
    }
    Ok(())
}

/// Names given to `action(NAME, ...)` in a SLICC text.
fn defined_actions(text: &str) -> Vec<&str> {
    text.match_indices("action(")
        .filter(|(i, _)| {
            // Only the keyword itself, not e.g. `transition(`.
            text[..*i]
                .chars()
                .next_back()
                .map_or(true, |c| !c.is_alphanumeric() && c != '_')
        })
        .filter_map(|(i, _)| {
            let rest = text[i + "action(".len()..].trim_start();
            let end = rest.find(|c: char| !c.is_alphanumeric() && c != '_')?;
            Some(&rest[..end])
        })
        .collect()
}

fn slicc_permission(p: Permission) -> &'static str {
    match p {
        Permission::Invalid => "Invalid",
        Permission::ReadOnly => "Read_Only",
        Permission::ReadWrite => "Read_Write",
        Permission::Busy => "Busy",
        Permission::NotPresent => "NotPresent",
    }
}

/// SLICC strings are double-quoted without escapes.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "'"))
}

const HEADER: &str =
    "// Generated by `moped gem5 slicc` from the files in protocols/; do not edit.\n";

fn write_decls(
    designs: &[&Machine],
    states: &[(String, Permission, String)],
    events: &[SliccEvent],
) -> String {
    let names = Design::ALL.map(Design::name);
    let machine = designs[0].name();
    let mut o = String::from(HEADER);
    o.push_str(&format!(
        "// Machine {machine}: the union of the designs {}; `design` indexes them in that order.\n\n",
        names.join(", ")
    ));
    o.push_str(&format!(
        "state_declaration(State, desc={}, default=\"{machine}_State_I\") {{\n",
        quote(&format!("{machine} states"))
    ));
    let w = states.iter().map(|s| s.0.len()).max().unwrap_or(1) + 1;
    for (name, perm, desc) in states {
        o.push_str(&format!(
            "  {:<w$} AccessPermission:{}, desc={};\n",
            format!("{name},"),
            slicc_permission(*perm),
            quote(desc)
        ));
    }
    o.push_str("}\n\n");
    o.push_str(&format!(
        "enumeration(Event, desc={}) {{\n",
        quote(&format!("{machine} events"))
    ));
    let w = events.iter().map(|e| e.name.len()).max().unwrap_or(1) + 1;
    for ev in events {
        let desc = if ev.name == ev.base {
            ev.desc.clone()
        } else {
            format!("{} (the column of {})", ev.desc, design_list(&ev.designs))
        };
        o.push_str(&format!(
            "  {:<w$} desc={};\n",
            format!("{},", ev.name),
            quote(&desc)
        ));
    }
    o.push_str("}\n\n");
    o.push_str("// The event of this design's table that a base event raises.\n");
    o.push_str("Event designEvent(Event e) {\n");
    for ev in events.iter().filter(|e| e.name != e.base) {
        let cond = ev
            .designs
            .iter()
            .map(|d| format!("design == {d}"))
            .collect::<Vec<_>>()
            .join(" || ");
        o.push_str(&format!(
            "  if (e == Event:{} && ({cond})) {{\n    return Event:{};\n  }}\n",
            ev.base, ev.name
        ));
    }
    o.push_str("  return e;\n}\n");
    o
}

fn design_list(ds: &[usize]) -> String {
    let names = Design::ALL.map(Design::name);
    ds.iter()
        .map(|&d| names.get(d).copied().unwrap_or("?"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn write_transitions(
    machine: &str,
    states: &[(String, Permission, String)],
    events: &[SliccEvent],
    host: Host,
) -> String {
    let mut o = String::from(HEADER);
    o.push_str(&format!(
        "// Machine {machine}: one block per event; cells a table calls impossible are left out\n// (SLICC fails the run with the state and event if one is reached).\n"
    ));
    for ev in events {
        o.push_str(&format!(
            "\n// ---- {} ({}) ----\n",
            ev.name,
            design_list(&ev.designs)
        ));
        // Group states by cell, in the order the cells first appear.
        let mut groups: Vec<(&CellKey, Vec<&str>)> = Vec::new();
        for ((s, _, _), c) in states.iter().zip(&ev.column) {
            let Some(c) = c else { continue };
            match groups.iter_mut().find(|g| g.0 == c) {
                Some(g) => g.1.push(s),
                None => groups.push((c, vec![s])),
            }
        }
        for (c, ss) in groups {
            let set = if ss.len() == 1 {
                ss[0].to_string()
            } else {
                format!("{{{}}}", ss.join(", "))
            };
            match c {
                CellKey::Transition { next, actions } => {
                    let pop = host.pops.iter().find(|p| p.0 == ev.base).map(|p| p.1);
                    let actions: Vec<&str> =
                        actions.iter().map(String::as_str).chain(pop).collect();
                    let head = match next {
                        Some(n) => format!("transition({set}, {}, {n})", ev.name),
                        None => format!("transition({set}, {})", ev.name),
                    };
                    let body = actions
                        .iter()
                        .map(|a| format!("    {a};\n"))
                        .collect::<String>();
                    o.push_str(&format!("{head} {{\n{body}}}\n"));
                }
                CellKey::Stall => o.push_str(&format!(
                    "transition({set}, {}) {{\n    {};\n}}\n",
                    ev.name, host.stall_action
                )),
                CellKey::Impossible => {}
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    const L2_HOST: &str =
        include_str!("../../gem5-configs/moped_ext/protocol/MOPED_CMP_directory-L2cache.sm");
    const DIR_HOST: &str =
        include_str!("../../gem5-configs/moped_ext/protocol/MOPED_CMP_directory-dir.sm");

    fn hosts() -> (Host<'static>, Host<'static>) {
        (
            Host {
                file: "MOPED_CMP_directory-L2cache.sm",
                text: L2_HOST,
                stall_action: super::super::HOSTS[0].1,
                pops: super::super::HOSTS[0].2,
            },
            Host {
                file: "MOPED_CMP_directory-dir.sm",
                text: DIR_HOST,
                stall_action: super::super::HOSTS[1].1,
                pops: super::super::HOSTS[1].2,
            },
        )
    }

    #[test]
    fn an_event_whose_column_an_overlay_overrides_is_split_by_design() {
        let (l2, dir) = hosts();
        let (l2, _) = generate(l2, dir).unwrap();
        // OPTCOPY replaces the MOPED read's transition in I: its own event.
        assert!(l2.decls.contains("M_GETS_optcopy,"), "{}", l2.decls);
        assert!(l2
            .decls
            .contains("e == Event:M_GETS && (design == 2 || design == 3)"));
        // OPTCACHE defines invalidations of an owner, which the others call impossible.
        assert!(l2.decls.contains("Inv_optcache,"));
        assert!(l2.transitions.contains(
            "transition(I, M_GETS_optcopy, ID) {\n    i_allocateTBE;\n    ac_issueGETCOPY;\n    k_popMandatoryQueue;\n}"
        ));
        assert!(l2
            .transitions
            .contains("transition(I, M_GETS, ID) {\n    i_allocateTBE;\n    a_issueGETS;\n    k_popMandatoryQueue;\n}"));
    }

    #[test]
    fn stall_cells_run_the_hosts_stall_action() {
        let (l2, dir) = hosts();
        let (l2, dir) = generate(l2, dir).unwrap();
        assert!(l2.transitions.contains("zz_recycleMandatoryQueue;"));
        assert!(dir.transitions.contains(
            "transition({IS, SS, OO, MO, MM, MI, OI, IC, SC, OC, MC, MF}, GETS) {\n    zz_recycleRequestQueue;\n}"
        ));
    }

    #[test]
    fn every_design_cell_is_in_its_slicc_event() {
        // Re-derive each design's cell from the generated events and compare with the
        // design's own table.
        let (l2h, dirh) = hosts();
        for (pick, host) in [(0usize, l2h), (1, dirh)] {
            let protos: Vec<Protocol> = Design::ALL.into_iter().map(Protocol::of).collect();
            let ms: Vec<&Machine> = protos
                .iter()
                .map(|p| {
                    if pick == 0 {
                        p.l2.as_ref()
                    } else {
                        p.dir.as_ref()
                    }
                })
                .collect();
            let states = union_states(&ms).unwrap();
            let events = split_events(&ms, &states);
            for (d, m) in ms.iter().enumerate() {
                let actions: BTreeMap<(u16, u16), Vec<String>> = m
                    .transitions()
                    .iter()
                    .map(|t| ((t.state, t.event), t.action_names.clone()))
                    .collect();
                for e in m.events() {
                    let ev = events
                        .iter()
                        .find(|x| x.base == e.name && x.designs.contains(&d))
                        .expect("every design event has a SLICC event");
                    let eid = m.event_id(&e.name).unwrap();
                    for s in m.states() {
                        let sid = m.state_id(&s.name).unwrap();
                        let at = states.iter().position(|u| u.0 == s.name).unwrap();
                        assert_eq!(
                            ev.column[at].as_ref(),
                            Some(&cell_key(m, sid, eid, &actions)),
                            "{} design {d}: ({}, {})",
                            host.file,
                            s.name,
                            e.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn an_action_missing_from_the_host_is_an_error_naming_it() {
        let (l2, dir) = hosts();
        let text = L2_HOST.replace("action(a_issueGETS,", "action(a_issueGETS_renamed,");
        let l2 = Host { text: &text, ..l2 };
        let err = generate(l2, dir).unwrap_err();
        assert!(err.msg.contains("`a_issueGETS`"), "{err}");
        assert_eq!(err.file, "MOPED_CMP_directory-L2cache.sm");
    }

    #[test]
    fn defined_actions_reads_only_action_declarations() {
        let t = "action(a_x, \"a\", desc=\"\") {}\ntransition(I, E) { a_x; }\n  action( b_y , \"b\") {}";
        assert_eq!(defined_actions(t), vec!["a_x", "b_y"]);
    }
}
