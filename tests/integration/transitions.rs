//! One test per transition of the baseline protocol, through the controller-under-test
//! harnesses: put the line in a state, deliver one event, check the next state, the
//! messages sent and the data. `every_transition_has_a_test` ties the list below to the
//! tables, and `every_transition_fires_in_the_tests` runs every test and checks that the
//! harnesses fired each transition cell, so a new transition without a test fails the suite.

use std::collections::BTreeSet;

use moped::coherence::cut::{
    line_of_byte, record_fired, CacheCut, DirCut, ADDR, DIR, ME, OTHER, THIRD,
};
use moped::coherence::{AccessKind, CoreOutcome, CoreSet, Delivery, HitLevel, MsgType, Protocol};
use moped::mem::read_bytes;
use moped::protocol::Cell;
use MsgType::*;

const OLD: u8 = 0xAA;
const NEW: u8 = 0x5C;

fn proto() -> Protocol {
    Protocol::baseline()
}

fn cache(state: &str, dirty: bool, req: Option<AccessKind>) -> CacheCut {
    let mut c = CacheCut::new(&proto());
    c.put(state, line_of_byte(OLD), dirty, req);
    c
}

fn dir(state: &str, owner: Option<u16>, sharers: &[u16], requestor: Option<u16>) -> DirCut {
    let mut d = DirCut::new(&proto());
    d.put(state, owner, sharers, requestor)
        .memory(line_of_byte(OLD));
    d
}

/// The (state, event) cells each test below covers, checked against the tables.
const L2_CELLS: &[(&str, &str)] = &[
    ("I", "Load"),
    ("I", "Store"),
    ("S", "Load"),
    ("O", "Load"),
    ("M", "Load"),
    ("MM", "Load"),
    ("SM", "Load"),
    ("OM", "Load"),
    ("M", "Store"),
    ("MM", "Store"),
    ("S", "Store"),
    ("O", "Store"),
    ("S", "Replacement"),
    ("O", "Replacement"),
    ("M", "Replacement"),
    ("MM", "Replacement"),
    ("O", "Fwd_GETS"),
    ("M", "Fwd_GETS"),
    ("MM", "Fwd_GETS"),
    ("O", "Fwd_GETX"),
    ("M", "Fwd_GETX"),
    ("MM", "Fwd_GETX"),
    ("OM", "Fwd_GETS"),
    ("OM", "Fwd_GETX"),
    ("MI", "Fwd_GETS"),
    ("OI", "Fwd_GETS"),
    ("MI", "Fwd_GETX"),
    ("OI", "Fwd_GETX"),
    ("OM", "Own_GETX"),
    ("I", "Inv"),
    ("S", "Inv"),
    ("IS", "Inv"),
    ("IM", "Inv"),
    ("SM", "Inv"),
    ("IM", "Ack"),
    ("SM", "Ack"),
    ("OM", "Ack"),
    ("IS", "Data"),
    ("IS", "Exclusive_Data"),
    ("IM", "Exclusive_Data"),
    ("SM", "Exclusive_Data"),
    ("OM", "All_Acks"),
    ("MI", "Writeback_Ack"),
    ("OI", "Writeback_Ack"),
    ("II", "Writeback_Nack"),
];

const DIR_CELLS: &[(&str, &str)] = &[
    ("I", "GETS"),
    ("S", "GETS"),
    ("O", "GETS"),
    ("M", "GETS"),
    ("I", "GETX"),
    ("S", "GETX"),
    ("O", "GETX"),
    ("M", "GETX"),
    ("M", "PUTX"),
    ("O", "PUTX"),
    ("O", "PUTO"),
    ("I", "PUT_NotOwner"),
    ("S", "PUT_NotOwner"),
    ("O", "PUT_NotOwner"),
    ("M", "PUT_NotOwner"),
    ("MI", "Dirty_Writeback"),
    ("MI", "Clean_Writeback"),
    ("OI", "Dirty_Writeback"),
    ("OI", "Clean_Writeback"),
    ("IS", "Unblock"),
    ("SS", "Unblock"),
    ("OO", "Unblock"),
    ("MO", "Unblock"),
    ("MO", "Exclusive_Unblock"),
    ("MM", "Exclusive_Unblock"),
];

fn transition_cells(m: &moped::protocol::Machine) -> BTreeSet<(String, String)> {
    m.transitions()
        .iter()
        .filter(|t| matches!(t.cell, Cell::Transition { .. }))
        .map(|t| {
            (
                m.state_name(t.state).to_string(),
                m.event_name(t.event).to_string(),
            )
        })
        .collect()
}

fn listed(cells: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    cells
        .iter()
        .map(|(s, e)| (s.to_string(), e.to_string()))
        .collect()
}

#[test]
fn every_transition_has_a_test() {
    let p = proto();
    assert_eq!(
        transition_cells(&p.l2),
        listed(L2_CELLS),
        "L2Cache transitions vs. tests"
    );
    assert_eq!(
        transition_cells(&p.dir),
        listed(DIR_CELLS),
        "Directory transitions vs. tests"
    );
}

/// Every test below that drives a harness (all of them).
const CELL_TESTS: &[fn()] = &[
    i_load_issues_gets,
    i_store_issues_getx,
    readable_states_hit_on_load,
    exclusive_states_hit_on_store_and_become_mm,
    s_store_upgrades_with_getx,
    o_store_upgrades_with_getx,
    s_replacement_is_silent,
    o_replacement_sends_puto_and_keeps_data_in_tbe,
    exclusive_replacement_sends_putx,
    owner_answers_fwd_gets_with_shared_data,
    written_line_migrates_on_fwd_gets,
    owner_gives_up_the_line_on_fwd_getx,
    upgrading_owner_still_answers_fwd_gets,
    upgrading_owner_loses_the_line_to_fwd_getx,
    writeback_in_progress_answers_fwd_gets_from_tbe,
    writeback_in_progress_hands_over_on_fwd_getx,
    own_getx_sets_the_ack_count,
    invalidation_of_an_absent_line_is_acked,
    shared_line_is_invalidated_and_acked,
    pending_misses_ack_stale_invalidations,
    upgrade_from_s_loses_its_copy_on_inv,
    early_acks_are_counted_before_data,
    last_ack_completes_the_store,
    shared_data_completes_a_load,
    exclusive_data_on_a_load_gives_m,
    exclusive_data_with_acks_pending_waits_in_om,
    all_acks_trigger_completes_in_om,
    writeback_ack_sends_the_data,
    writeback_nack_ends_a_lost_writeback,
    impossible_cells_are_reported_with_state_and_event,
    busy_lines_stall_core_requests,
    gets_in_i_and_s_reads_memory,
    gets_to_an_owner_is_forwarded,
    getx_in_i_and_s_sends_exclusive_data_and_invalidations,
    getx_to_an_owner_is_forwarded_with_the_ack_count,
    putx_from_the_owner_is_acked,
    puto_from_the_owner_is_acked,
    put_from_a_former_owner_is_nacked,
    writeback_data_ends_the_writeback,
    unblock_adds_the_requestor_as_sharer,
    exclusive_unblock_makes_the_requestor_owner,
    busy_directory_stalls_requests,
];

#[test]
fn every_transition_fires_in_the_tests() {
    let fired = record_fired(|| CELL_TESTS.iter().for_each(|t| t()));
    let p = proto();
    for m in [&p.l2, &p.dir] {
        let want: BTreeSet<String> = transition_cells(m)
            .into_iter()
            .map(|(s, e)| format!("{}: ({s}, {e})", m.name()))
            .collect();
        let missing: Vec<&String> = want.difference(&fired).collect();
        assert!(missing.is_empty(), "transitions no test fires: {missing:?}");
    }
}

#[test]
fn tables_are_complete() {
    // Loading rejects undefined cells; every cell is a transition, a stall or impossible.
    let p = proto();
    for m in [&p.l2, &p.dir] {
        let n = m.states().len() * m.events().len();
        assert_eq!(
            m.transitions().len(),
            n,
            "{} has an undefined cell",
            m.name()
        );
    }
}

// ---------------------------------------------------------------- L2 controller: core side

#[test]
fn i_load_issues_gets() {
    let mut c = cache("I", false, None);
    assert_eq!(c.request(AccessKind::Load, 0).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "IS");
    assert_eq!(c.sent(), vec![(Gets, DIR, ME, 0)]);
    assert!(c.has_tbe());
}

#[test]
fn i_store_issues_getx() {
    let mut c = cache("I", false, None);
    assert_eq!(c.request(AccessKind::Store, 9).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "IM");
    assert_eq!(c.sent(), vec![(Getx, DIR, ME, 0)]);
}

#[test]
fn readable_states_hit_on_load() {
    for s in ["S", "O", "M", "MM", "SM", "OM"] {
        let req = matches!(s, "SM" | "OM").then_some(AccessKind::Store);
        let mut c = cache(s, false, req);
        assert_eq!(
            c.request(AccessKind::Load, 0).unwrap(),
            CoreOutcome::Hit(HitLevel::L1),
            "{s}"
        );
        assert_eq!(c.state(), s);
        assert!(c.sent().is_empty());
        assert_eq!(c.done[0].value, u64::from_le_bytes([OLD; 8]), "{s}");
    }
}

#[test]
fn exclusive_states_hit_on_store_and_become_mm() {
    for s in ["M", "MM"] {
        let mut c = cache(s, false, None);
        assert_eq!(
            c.request(AccessKind::Store, 0x0102).unwrap(),
            CoreOutcome::Hit(HitLevel::L1)
        );
        assert_eq!(c.state(), "MM");
        let (data, dirty) = c.data().unwrap();
        assert_eq!(read_bytes(&data, 8, 8), 0x0102);
        assert!(dirty);
        assert!(c.sent().is_empty());
    }
}

#[test]
fn s_store_upgrades_with_getx() {
    let mut c = cache("S", false, None);
    assert_eq!(c.request(AccessKind::Store, 1).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "SM");
    assert_eq!(c.sent(), vec![(Getx, DIR, ME, 0)]);
}

#[test]
fn o_store_upgrades_with_getx() {
    let mut c = cache("O", true, None);
    assert_eq!(c.request(AccessKind::Store, 1).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "OM");
    assert_eq!(c.sent(), vec![(Getx, DIR, ME, 0)]);
    assert_eq!(
        c.data().unwrap().0,
        line_of_byte(OLD),
        "the owner keeps its data while upgrading"
    );
}

// ---------------------------------------------------------------- L2 controller: replacements

#[test]
fn s_replacement_is_silent() {
    let mut c = cache("S", false, None);
    assert!(c.replace().unwrap());
    assert_eq!(c.state(), "I");
    assert!(c.sent().is_empty());
    assert!(!c.has_tbe());
}

#[test]
fn o_replacement_sends_puto_and_keeps_data_in_tbe() {
    let mut c = cache("O", true, None);
    assert!(c.replace().unwrap());
    assert_eq!(c.state(), "OI");
    assert_eq!(c.sent(), vec![(Puto, DIR, ME, 0)]);
    assert_eq!(c.data(), Some((line_of_byte(OLD), true)));
}

#[test]
fn exclusive_replacement_sends_putx() {
    for (s, dirty) in [("M", false), ("MM", true)] {
        let mut c = cache(s, dirty, None);
        assert!(c.replace().unwrap());
        assert_eq!(c.state(), "MI");
        assert_eq!(c.sent(), vec![(Putx, DIR, ME, 0)]);
        assert_eq!(c.data(), Some((line_of_byte(OLD), dirty)));
    }
}

// ---------------------------------------------------------------- L2 controller: forwards

#[test]
fn owner_answers_fwd_gets_with_shared_data() {
    for s in ["O", "M"] {
        let mut c = cache(s, true, None);
        assert_eq!(
            c.deliver(FwdGets, DIR, OTHER, 0, [0; 64], false).unwrap(),
            Delivery::Done
        );
        assert_eq!(c.state(), "O", "{s}");
        assert_eq!(c.sent(), vec![(Data, OTHER, OTHER, 0)]);
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
        assert!(
            !c.out[0].msg.dirty,
            "a shared copy is clean; the owner keeps the writeback duty"
        );
    }
}

#[test]
fn written_line_migrates_on_fwd_gets() {
    let mut c = cache("MM", true, None);
    c.deliver(FwdGets, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "I");
    assert_eq!(c.sent(), vec![(DataExclusive, OTHER, OTHER, 0)]);
    assert!(
        c.out[0].msg.dirty,
        "the migrating line carries its dirty bit"
    );
    assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
}

#[test]
fn owner_gives_up_the_line_on_fwd_getx() {
    for s in ["O", "M", "MM"] {
        let mut c = cache(s, true, None);
        c.deliver(FwdGetx, DIR, OTHER, 2, [0; 64], false).unwrap();
        assert_eq!(c.state(), "I", "{s}");
        assert_eq!(
            c.sent(),
            vec![(DataExclusive, OTHER, OTHER, 2)],
            "{s}: the ack count travels with the data"
        );
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
    }
}

#[test]
fn upgrading_owner_still_answers_fwd_gets() {
    let mut c = cache("OM", true, Some(AccessKind::Store));
    c.deliver(FwdGets, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "OM");
    assert_eq!(c.sent(), vec![(Data, OTHER, OTHER, 0)]);
}

#[test]
fn upgrading_owner_loses_the_line_to_fwd_getx() {
    let mut c = cache("OM", true, Some(AccessKind::Store));
    c.deliver(FwdGetx, DIR, OTHER, 1, [0; 64], false).unwrap();
    assert_eq!(
        c.state(),
        "IM",
        "its own GETX is still queued at the directory"
    );
    assert_eq!(c.sent(), vec![(DataExclusive, OTHER, OTHER, 1)]);
    assert!(c.has_tbe());
}

#[test]
fn writeback_in_progress_answers_fwd_gets_from_tbe() {
    for s in ["MI", "OI"] {
        let mut c = cache(s, true, None);
        c.deliver(FwdGets, DIR, OTHER, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), "OI", "{s}");
        assert_eq!(c.sent(), vec![(Data, OTHER, OTHER, 0)]);
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
    }
}

#[test]
fn writeback_in_progress_hands_over_on_fwd_getx() {
    for s in ["MI", "OI"] {
        let mut c = cache(s, true, None);
        c.deliver(FwdGetx, DIR, OTHER, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), "II", "{s}");
        assert_eq!(c.sent(), vec![(DataExclusive, OTHER, OTHER, 0)]);
        assert!(c.out[0].msg.dirty);
    }
}

#[test]
fn own_getx_sets_the_ack_count() {
    let mut c = cache("OM", true, Some(AccessKind::Store));
    c.deliver(FwdGetx, DIR, ME, 2, [0; 64], false).unwrap();
    assert_eq!(c.state(), "OM");
    assert!(c.sent().is_empty());
    // With no acks to wait for, the trigger completes the store at once.
    let mut c = cache("OM", true, Some(AccessKind::Store));
    c.deliver(FwdGetx, DIR, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(c.sent(), vec![(ExclusiveUnblock, DIR, ME, 0)]);
    assert_eq!(c.done[0].level, HitLevel::Upgrade);
}

// ---------------------------------------------------------------- L2 controller: invalidations

#[test]
fn invalidation_of_an_absent_line_is_acked() {
    let mut c = cache("I", false, None);
    c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "I");
    assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)]);
}

#[test]
fn shared_line_is_invalidated_and_acked() {
    let mut c = cache("S", false, None);
    c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "I");
    assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)]);
    assert!(c.data().is_none());
}

#[test]
fn pending_misses_ack_stale_invalidations() {
    for (s, req) in [("IS", AccessKind::Load), ("IM", AccessKind::Store)] {
        let mut c = cache(s, false, Some(req));
        c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), s);
        assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)]);
    }
}

#[test]
fn upgrade_from_s_loses_its_copy_on_inv() {
    let mut c = cache("SM", false, Some(AccessKind::Store));
    c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "IM");
    assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)]);
}

// ---------------------------------------------------------------- L2 controller: responses

#[test]
fn early_acks_are_counted_before_data() {
    for s in ["IM", "SM"] {
        let mut c = cache(s, false, Some(AccessKind::Store));
        c.deliver(Ack, THIRD, ME, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), s);
        assert_eq!(c.ctrl.tbes()[0].acks_pending, -1);
        // Data announcing one ack then completes the store.
        c.deliver(DataExclusive, DIR, ME, 1, line_of_byte(NEW), false)
            .unwrap();
        assert_eq!(c.state(), "MM");
    }
}

#[test]
fn last_ack_completes_the_store() {
    let mut c = cache("OM", false, Some(AccessKind::Store));
    c.acks(1, true);
    c.deliver(Ack, THIRD, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(c.sent(), vec![(ExclusiveUnblock, DIR, ME, 0)]);
    assert_eq!(c.done.len(), 1);
    let (data, dirty) = c.data().unwrap();
    assert_eq!(read_bytes(&data, 8, 8), 0x1122_3344_5566_7788);
    assert!(dirty);
}

#[test]
fn shared_data_completes_a_load() {
    let mut c = cache("IS", false, Some(AccessKind::Load));
    c.deliver(Data, OTHER, ME, 0, line_of_byte(NEW), false)
        .unwrap();
    assert_eq!(c.state(), "S");
    assert_eq!(c.sent(), vec![(Unblock, DIR, ME, 0)]);
    assert_eq!(c.done[0].value, u64::from_le_bytes([NEW; 8]));
    assert_eq!(c.done[0].level, HitLevel::OtherCache);
    assert!(!c.has_tbe());
}

#[test]
fn exclusive_data_on_a_load_gives_m() {
    let mut c = cache("IS", false, Some(AccessKind::Load));
    c.deliver(DataExclusive, OTHER, ME, 0, line_of_byte(NEW), true)
        .unwrap();
    assert_eq!(
        c.state(),
        "M",
        "migratory hand-over: a read miss gains write permission"
    );
    assert_eq!(c.sent(), vec![(ExclusiveUnblock, DIR, ME, 0)]);
    assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
}

#[test]
fn exclusive_data_with_acks_pending_waits_in_om() {
    for s in ["IM", "SM"] {
        let mut c = cache(s, false, Some(AccessKind::Store));
        c.deliver(DataExclusive, DIR, ME, 2, line_of_byte(NEW), false)
            .unwrap();
        assert_eq!(c.state(), "OM", "{s}");
        assert!(c.sent().is_empty());
        assert_eq!(c.data().unwrap().0, line_of_byte(NEW));
        let mut c = cache(s, false, Some(AccessKind::Store));
        c.deliver(DataExclusive, DIR, ME, 0, line_of_byte(NEW), false)
            .unwrap();
        assert_eq!(
            c.state(),
            "MM",
            "{s}: no acks, the trigger completes at once"
        );
        assert_eq!(c.done[0].level, HitLevel::Memory);
    }
}

#[test]
fn all_acks_trigger_completes_in_om() {
    let mut c = cache("OM", false, Some(AccessKind::Store));
    c.acks(0, false);
    c.deliver(FwdGetx, DIR, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(
        c.ctrl.transitions.iter().sum::<u64>(),
        2,
        "Own_GETX then All_Acks"
    );
}

#[test]
fn writeback_ack_sends_the_data() {
    for (s, dirty, ty) in [("MI", true, WbDirtyData), ("OI", false, WbCleanData)] {
        let mut c = cache(s, dirty, None);
        c.deliver(WbAck, DIR, ME, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), "I");
        assert_eq!(c.sent(), vec![(ty, DIR, ME, 0)]);
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
        assert!(!c.has_tbe());
    }
}

#[test]
fn writeback_nack_ends_a_lost_writeback() {
    let mut c = cache("II", true, None);
    c.deliver(WbNack, DIR, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "I");
    assert!(c.sent().is_empty());
    assert!(!c.has_tbe());
}

#[test]
fn impossible_cells_are_reported_with_state_and_event() {
    let mut c = cache("S", false, None);
    let e = c.deliver(WbNack, DIR, ME, 0, [0; 64], false).unwrap_err();
    assert_eq!(
        (e.state.as_str(), e.event.as_str()),
        ("S", "Writeback_Nack")
    );
    assert!(e.to_string().contains("L2Cache[1]"));
}

#[test]
fn busy_lines_stall_core_requests() {
    let mut c = cache("IS", false, Some(AccessKind::Load));
    assert_eq!(
        c.request(AccessKind::Load, 0).unwrap(),
        CoreOutcome::Stalled
    );
    assert_eq!(c.state(), "IS");
}

// ---------------------------------------------------------------- Directory

#[test]
fn gets_in_i_and_s_reads_memory() {
    for (s, next) in [("I", "IS"), ("S", "SS")] {
        let mut d = dir(s, None, &[THIRD], None);
        d.deliver(Gets, OTHER, [0; 64]).unwrap();
        assert_eq!(d.state(), next);
        assert_eq!(d.sent(), vec![(Data, OTHER, OTHER, 0)]);
        assert_eq!(d.sent_data(), Some(line_of_byte(OLD)));
        assert_eq!(d.entry().requestor, OTHER);
    }
}

#[test]
fn gets_to_an_owner_is_forwarded() {
    for (s, next) in [("O", "OO"), ("M", "MO")] {
        let mut d = dir(s, Some(ME), &[], None);
        d.deliver(Gets, OTHER, [0; 64]).unwrap();
        assert_eq!(d.state(), next);
        assert_eq!(d.sent(), vec![(FwdGets, ME, OTHER, 0)]);
    }
}

#[test]
fn getx_in_i_and_s_sends_exclusive_data_and_invalidations() {
    let mut d = dir("I", None, &[], None);
    d.deliver(Getx, OTHER, [0; 64]).unwrap();
    assert_eq!(d.state(), "MM");
    assert_eq!(d.sent(), vec![(DataExclusive, OTHER, OTHER, 0)]);
    let mut d = dir("S", None, &[ME, OTHER, THIRD], None);
    d.deliver(Getx, OTHER, [0; 64]).unwrap();
    assert_eq!(d.state(), "MM");
    assert_eq!(
        d.sent(),
        vec![
            (DataExclusive, OTHER, OTHER, 2),
            (Inv, ME, OTHER, 0),
            (Inv, THIRD, OTHER, 0)
        ]
    );
}

/// Sharers numbered 64 and above (systems of up to 1,024 cores) are invalidated and
/// counted in the acknowledgements like the others; an UNBLOCK adds one.
#[test]
fn sharers_beyond_the_first_64_cores_are_invalidated_and_added() {
    let mut d = dir("S", None, &[ME, 70, 700, 1023], None);
    d.deliver(Getx, OTHER, [0; 64]).unwrap();
    assert_eq!(d.state(), "MM");
    assert_eq!(
        d.sent(),
        vec![
            (DataExclusive, OTHER, OTHER, 4),
            (Inv, ME, OTHER, 0),
            (Inv, 70, OTHER, 0),
            (Inv, 700, OTHER, 0),
            (Inv, 1023, OTHER, 0)
        ]
    );
    let mut d = dir("IS", None, &[900], Some(OTHER));
    d.deliver(Unblock, OTHER, [0; 64]).unwrap();
    assert_eq!(
        d.entry().sharers.iter().collect::<Vec<_>>(),
        vec![OTHER, 900]
    );
}

#[test]
fn getx_to_an_owner_is_forwarded_with_the_ack_count() {
    let mut d = dir("O", Some(ME), &[THIRD], None);
    d.deliver(Getx, OTHER, [0; 64]).unwrap();
    assert_eq!(d.state(), "MM");
    assert_eq!(
        d.sent(),
        vec![(FwdGetx, ME, OTHER, 1), (Inv, THIRD, OTHER, 0)]
    );
    let mut d = dir("M", Some(ME), &[], None);
    d.deliver(Getx, OTHER, [0; 64]).unwrap();
    assert_eq!(d.state(), "MM");
    assert_eq!(d.sent(), vec![(FwdGetx, ME, OTHER, 0)]);
}

#[test]
fn putx_from_the_owner_is_acked() {
    for s in ["M", "O"] {
        let mut d = dir(s, Some(ME), &[], None);
        d.deliver(Putx, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), if s == "M" { "MI" } else { "OI" });
        assert_eq!(d.sent(), vec![(WbAck, ME, ME, 0)]);
    }
}

#[test]
fn puto_from_the_owner_is_acked() {
    let mut d = dir("O", Some(ME), &[OTHER], None);
    d.deliver(Puto, ME, [0; 64]).unwrap();
    assert_eq!(d.state(), "OI");
    assert_eq!(d.sent(), vec![(WbAck, ME, ME, 0)]);
}

#[test]
fn put_from_a_former_owner_is_nacked() {
    for s in ["I", "S", "O", "M"] {
        let owner = matches!(s, "O" | "M").then_some(OTHER);
        let mut d = dir(s, owner, &[], None);
        d.deliver(Putx, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), s);
        assert_eq!(d.sent(), vec![(WbNack, ME, ME, 0)]);
    }
}

#[test]
fn writeback_data_ends_the_writeback() {
    for (s, ty, next, written) in [
        ("MI", WbDirtyData, "I", true),
        ("MI", WbCleanData, "I", false),
        ("OI", WbDirtyData, "S", true),
        ("OI", WbCleanData, "S", false),
    ] {
        let mut d = dir(s, Some(ME), &[OTHER], Some(ME));
        d.deliver(ty, ME, line_of_byte(NEW)).unwrap();
        assert_eq!(d.state(), next, "{s} {ty:?}");
        assert_eq!(d.entry().owner, u16::MAX);
        let mem = d.ctrl.mem.read(ADDR);
        assert_eq!(
            mem == line_of_byte(NEW),
            written,
            "{s} {ty:?}: memory written only for dirty data"
        );
    }
}

#[test]
fn unblock_adds_the_requestor_as_sharer() {
    for (s, next) in [("IS", "S"), ("SS", "S"), ("OO", "O"), ("MO", "O")] {
        let owner = matches!(s, "OO" | "MO").then_some(ME);
        let mut d = dir(s, owner, &[THIRD], Some(OTHER));
        d.deliver(Unblock, OTHER, [0; 64]).unwrap();
        assert_eq!(d.state(), next, "{s}");
        assert_eq!(
            d.entry().sharers,
            CoreSet::from_mask((1 << OTHER) | (1 << THIRD))
        );
        assert_eq!(d.entry().owner, owner.unwrap_or(u16::MAX));
    }
}

#[test]
fn exclusive_unblock_makes_the_requestor_owner() {
    for s in ["MO", "MM"] {
        let mut d = dir(s, Some(ME), &[THIRD], Some(OTHER));
        d.deliver(ExclusiveUnblock, OTHER, [0; 64]).unwrap();
        assert_eq!(d.state(), "M", "{s}");
        assert_eq!(d.entry().owner, OTHER);
        assert!(d.entry().sharers.is_empty());
    }
}

#[test]
fn busy_directory_stalls_requests() {
    let mut d = dir("MM", Some(ME), &[], Some(OTHER));
    assert_eq!(d.deliver(Gets, THIRD, [0; 64]).unwrap(), Delivery::Stalled);
    assert_eq!(d.state(), "MM");
    assert!(d.sent().is_empty());
}
