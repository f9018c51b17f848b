//! One test per transition the MOPED overlays add or change (protocols/basemoped, optcopy,
//! optcache), through the controller-under-test harnesses. `every_overlay_transition_has_a_test`
//! ties the lists below to the cells each overlay file defines, and
//! `every_overlay_transition_fires_in_its_design` runs each design's tests and checks that
//! they fire every one of them.

use std::collections::BTreeSet;

use moped::coherence::cut::{
    line_of_byte, record_fired, CacheCut, DirCut, ADDR, DIR, ME, OTHER, THIRD,
};
use moped::coherence::{
    CoreOutcome, CoreSet, Delivery, HitLevel, MopedDone, MopedKind, MsgType, Placement, Protocol,
};
use moped::mem::LineData;
use moped::protocol::Cell;
use MsgType::*;

const OLD: u8 = 0xAA;
const NEW: u8 = 0x5C;

fn cache(design: &str, state: &str, dirty: bool) -> CacheCut {
    let mut c = CacheCut::new(&Protocol::by_name(design).unwrap());
    c.put(state, line_of_byte(OLD), dirty, None);
    c
}

/// A line waiting for a MOPED request in a transient state.
fn cache_for_moped(
    design: &str,
    state: &str,
    kind: MopedKind,
    write: Option<(LineData, u64)>,
) -> CacheCut {
    let mut c = cache(design, state, false);
    c.for_moped(kind, write);
    c
}

fn dir(design: &str, state: &str, owner: Option<u16>, sharers: &[u16]) -> DirCut {
    let mut d = DirCut::new(&Protocol::by_name(design).unwrap());
    d.put(state, owner, sharers, None).memory(line_of_byte(OLD));
    d
}

/// The whole line written by the copy unit.
fn whole(b: u8) -> Option<(LineData, u64)> {
    Some((line_of_byte(b), u64::MAX))
}

/// Transition cells an overlay file defines, per (design, machine, file).
const BASEMOPED_L2: &[(&str, &str)] = &[
    ("I", "M_GETS"),
    ("S", "M_GETS"),
    ("O", "M_GETS"),
    ("M", "M_GETS"),
    ("MM", "M_GETS"),
    ("ID", "Data"),
    ("ID", "Exclusive_Data"),
    ("ID", "Inv"),
    ("I", "M_GETX"),
    ("S", "M_GETX"),
    ("O", "M_GETX"),
    ("M", "M_GETX"),
    ("MM", "M_GETX"),
    ("OM", "All_Acks"),
];

const OPTCOPY_L2: &[(&str, &str)] = &[
    ("I", "M_GETS"),
    ("O", "Fwd_GET_COPY"),
    ("M", "Fwd_GET_COPY"),
    ("MM", "Fwd_GET_COPY"),
    ("OM", "Fwd_GET_COPY"),
    ("MI", "Fwd_GET_COPY"),
    ("OI", "Fwd_GET_COPY"),
];

const OPTCOPY_DIR: &[(&str, &str)] = &[
    ("I", "GET_COPY"),
    ("S", "GET_COPY"),
    ("O", "GET_COPY"),
    ("M", "GET_COPY"),
    ("IC", "Unblock"),
    ("SC", "Unblock"),
    ("OC", "Unblock"),
    ("MC", "Unblock"),
];

const OPTCACHE_L2: &[(&str, &str)] = &[
    ("I", "M_FILL"),
    ("S", "M_FILL"),
    ("O", "M_FILL"),
    ("M", "M_FILL"),
    ("MM", "M_FILL"),
    ("IM", "Fill_Grant"),
    ("SM", "Fill_Grant"),
    ("OM", "Fill_Grant"),
    ("IM", "All_Acks"),
    ("SM", "All_Acks"),
    ("O", "Inv"),
    ("M", "Inv"),
    ("MM", "Inv"),
    ("OM", "Inv"),
    ("MI", "Inv"),
    ("OI", "Inv"),
];

const OPTCACHE_DIR: &[(&str, &str)] = &[
    ("I", "GET_FILL"),
    ("S", "GET_FILL"),
    ("O", "GET_FILL"),
    ("M", "GET_FILL"),
    ("MF", "Exclusive_Unblock"),
];

/// A table's cells, as (state, event).
type Cells = &'static [(&'static str, &'static str)];

/// (design, machine, overlay file, cells listed above).
const OVERLAYS: &[(&str, &str, &str, Cells)] = &[
    (
        "basemoped",
        "L2Cache",
        "protocols/basemoped/L2Cache.sm",
        BASEMOPED_L2,
    ),
    (
        "optcopy",
        "L2Cache",
        "protocols/optcopy/L2Cache.sm",
        OPTCOPY_L2,
    ),
    (
        "optcopy",
        "Directory",
        "protocols/optcopy/Directory.sm",
        OPTCOPY_DIR,
    ),
    (
        "optcache",
        "L2Cache",
        "protocols/optcache/L2Cache.sm",
        OPTCACHE_L2,
    ),
    (
        "optcache",
        "Directory",
        "protocols/optcache/Directory.sm",
        OPTCACHE_DIR,
    ),
];

/// The transition cells `file` defines in `design`'s `machine`.
fn overlay_cells(design: &str, machine: &str, file: &str) -> BTreeSet<(String, String)> {
    let p = Protocol::by_name(design).unwrap();
    let m = if machine == "L2Cache" { &p.l2 } else { &p.dir };
    m.transitions()
        .iter()
        .filter(|t| t.file == file && matches!(t.cell, Cell::Transition { .. }))
        .map(|t| {
            (
                m.state_name(t.state).to_string(),
                m.event_name(t.event).to_string(),
            )
        })
        .collect()
}

#[test]
fn every_overlay_transition_has_a_test() {
    for &(design, machine, file, cells) in OVERLAYS {
        let listed: BTreeSet<(String, String)> = cells
            .iter()
            .map(|(s, e)| (s.to_string(), e.to_string()))
            .collect();
        assert_eq!(
            overlay_cells(design, machine, file),
            listed,
            "{file}: transitions vs. tests"
        );
    }
}

const BASEMOPED_TESTS: &[fn()] = &[
    m_gets_in_i_issues_gets_and_allocates_no_way,
    m_gets_of_a_present_line_answers_from_the_l2,
    id_data_goes_to_moped_not_to_the_cache,
    id_exclusive_data_is_written_back_as_if_evicted,
    id_acks_stale_invalidations,
    m_getx_issues_getx_and_installs_in_the_l2,
    m_getx_in_m_and_mm_grants_at_once,
    all_acks_grants_to_moped,
];

const OPTCOPY_TESTS: &[fn()] = &[
    optcopy_m_gets_issues_get_copy,
    owner_answers_fwd_get_copy_and_keeps_its_line,
    writeback_in_progress_answers_fwd_get_copy_from_tbe,
    get_copy_in_i_and_s_reads_memory_and_changes_nothing,
    get_copy_to_an_owner_is_forwarded,
    unblock_ends_a_copy_without_changing_owner_or_sharers,
];

const OPTCACHE_TESTS: &[fn()] = &[
    m_fill_issues_get_fill,
    m_fill_in_m_and_mm_grants_at_once,
    fill_grant_in_im_zero_fills_and_waits_for_the_acks,
    fill_grant_in_sm_and_om_keeps_the_data,
    a_fill_invalidates_the_owner,
    get_fill_invalidates_every_other_copy,
    exclusive_unblock_ends_a_fill,
];

#[test]
fn every_overlay_transition_fires_in_its_design() {
    for (design, tests) in [
        ("basemoped", BASEMOPED_TESTS),
        ("optcopy", OPTCOPY_TESTS),
        ("optcache", OPTCACHE_TESTS),
    ] {
        let fired = record_fired(|| tests.iter().for_each(|t| t()));
        for &(d, machine, file, _) in OVERLAYS.iter().filter(|o| o.0 == design) {
            let missing: Vec<String> = overlay_cells(d, machine, file)
                .into_iter()
                .map(|(s, e)| format!("{machine}: ({s}, {e})"))
                .filter(|c| !fired.contains(c))
                .collect();
            assert!(missing.is_empty(), "{file}: no test fires {missing:?}");
        }
    }
}

#[test]
fn overlay_tables_are_complete_and_the_baseline_unchanged() {
    let base = Protocol::baseline();
    for design in ["basemoped", "optcopy", "optcache"] {
        let p = Protocol::by_name(design).unwrap();
        for m in [&p.l2, &p.dir] {
            assert_eq!(
                m.transitions().len(),
                m.states().len() * m.events().len(),
                "{design} {} has an undefined cell",
                m.name()
            );
        }
    }
    // BASEMOPED changes no baseline transition (its one override only adds an action that
    // does nothing for a core's store) and leaves the directory alone.
    let b = Protocol::by_name("basemoped").unwrap();
    assert_eq!(b.dir.transitions(), base.dir.transitions());
    // The paper's count of new states: one in the L2 (ID), four directory states for
    // OPTCOPY and a fifth for OPTCACHE.
    let states = |d: &str| {
        let p = Protocol::by_name(d).unwrap();
        (p.l2.states().len(), p.dir.states().len())
    };
    let (l2, dir) = states("baseline");
    assert_eq!(states("basemoped"), (l2 + 1, dir));
    assert_eq!(states("optcopy"), (l2 + 1, dir + 4));
    assert_eq!(states("optcache"), (l2 + 1, dir + 5));
}

// ---------------------------------------------------------------- BASEMOPED

#[test]
fn m_gets_in_i_issues_gets_and_allocates_no_way() {
    let mut c = cache("basemoped", "I", false);
    assert_eq!(c.moped(MopedKind::Read, None).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "ID");
    assert_eq!(c.sent(), vec![(Gets, DIR, ME, 0)]);
    assert_eq!(c.placement(), Placement::TbeOnly);
    assert!(c.ctrl.line_copy(ADDR).is_none());
    assert!(c.moped_done().is_empty());
}

#[test]
fn m_gets_of_a_present_line_answers_from_the_l2() {
    for s in ["S", "O", "M", "MM"] {
        let mut c = cache("basemoped", s, s == "MM");
        assert_eq!(c.placement(), Placement::L1);
        assert_eq!(
            c.moped(MopedKind::Read, None).unwrap(),
            CoreOutcome::Hit(HitLevel::L2),
            "{s}"
        );
        assert_eq!(c.state(), s);
        assert!(c.sent().is_empty());
        // MOPED works on L2 lines: the line moved down from the L1 first.
        assert_eq!(c.placement(), Placement::L2, "{s}");
        assert_eq!(
            c.moped_done(),
            vec![MopedDone::Data {
                addr: ADDR,
                data: line_of_byte(OLD)
            }]
        );
    }
}

#[test]
fn id_data_goes_to_moped_not_to_the_cache() {
    let mut c = cache_for_moped("basemoped", "ID", MopedKind::Read, None);
    c.deliver(Data, OTHER, ME, 0, line_of_byte(NEW), false)
        .unwrap();
    assert_eq!(c.state(), "I");
    assert_eq!(c.sent(), vec![(Unblock, DIR, ME, 0)]);
    assert!(!c.has_tbe());
    assert!(c.ctrl.line_copy(ADDR).is_none());
    assert_eq!(
        c.moped_done(),
        vec![MopedDone::Data {
            addr: ADDR,
            data: line_of_byte(NEW)
        }]
    );
}

#[test]
fn id_exclusive_data_is_written_back_as_if_evicted() {
    let mut c = cache_for_moped("basemoped", "ID", MopedKind::Read, None);
    c.deliver(DataExclusive, OTHER, ME, 0, line_of_byte(NEW), true)
        .unwrap();
    assert_eq!(c.state(), "MI");
    assert_eq!(
        c.sent(),
        vec![(ExclusiveUnblock, DIR, ME, 0), (Putx, DIR, ME, 0)]
    );
    assert_eq!(c.placement(), Placement::TbeOnly);
    assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
    assert_eq!(c.moped_done().len(), 1);
}

#[test]
fn id_acks_stale_invalidations() {
    let mut c = cache_for_moped("basemoped", "ID", MopedKind::Read, None);
    c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "ID");
    assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)]);
}

#[test]
fn m_getx_issues_getx_and_installs_in_the_l2() {
    for (s, next) in [("I", "IM"), ("S", "SM"), ("O", "OM")] {
        let mut c = cache("basemoped", s, s == "O");
        assert_eq!(c.moped(MopedKind::Own, None).unwrap(), CoreOutcome::Miss);
        assert_eq!(c.state(), next, "{s}");
        assert_eq!(c.sent(), vec![(Getx, DIR, ME, 0)]);
        assert_eq!(c.placement(), Placement::L2, "{s}");
        assert!(c.ctrl.tbes()[0].moped.is_some());
        assert!(c.ctrl.tbes()[0].req.is_none());
    }
}

#[test]
fn m_getx_in_m_and_mm_grants_at_once() {
    for s in ["M", "MM"] {
        // Without data: granted, written later by the copy unit.
        let mut c = cache("basemoped", s, false);
        assert_eq!(
            c.moped(MopedKind::Own, None).unwrap(),
            CoreOutcome::Hit(HitLevel::L2)
        );
        assert_eq!(c.state(), "MM");
        assert_eq!(c.moped_done(), vec![MopedDone::Granted { addr: ADDR }]);
        assert!(c.ctrl.moped_write(ADDR, &line_of_byte(NEW), 0xff));
        let (data, dirty) = c.data().unwrap();
        assert_eq!(&data[..8], &[NEW; 8]);
        assert_eq!(&data[8..], &[OLD; 56]);
        assert!(dirty);
        // With data: granted and written in one step.
        let mut c = cache("basemoped", s, false);
        c.moped(MopedKind::Own, whole(NEW)).unwrap();
        assert_eq!(c.moped_done(), vec![MopedDone::Written { addr: ADDR }]);
        assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
    }
    // Rights gone before the write: the copy unit must ask again.
    let mut c = cache("basemoped", "S", false);
    assert!(!c.ctrl.moped_write(ADDR, &line_of_byte(NEW), u64::MAX));
    assert_eq!(c.data(), Some((line_of_byte(OLD), false)));
}

#[test]
fn all_acks_grants_to_moped() {
    let mut c = cache_for_moped("basemoped", "OM", MopedKind::Own, whole(NEW));
    c.acks(0, false);
    // The directory forwards this core's own GETX with no acks to collect.
    c.deliver(FwdGetx, DIR, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(c.sent(), vec![(ExclusiveUnblock, DIR, ME, 0)]);
    assert_eq!(c.moped_done(), vec![MopedDone::Written { addr: ADDR }]);
    assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
    assert!(c.done.is_empty(), "no core request completes");
}

#[test]
fn busy_lines_stall_moped_requests() {
    for s in ["IS", "IM", "SM", "OM", "MI", "OI", "II", "ID"] {
        let mut c = cache("basemoped", s, false);
        for kind in [MopedKind::Read, MopedKind::Own] {
            assert_eq!(
                c.moped(kind, None).unwrap(),
                CoreOutcome::Stalled,
                "{s} {kind:?}"
            );
        }
        assert!(c.sent().is_empty());
    }
}

#[test]
fn the_baseline_has_no_moped_requests() {
    let mut c = CacheCut::new(&Protocol::baseline());
    let e = c.moped(MopedKind::Read, None).unwrap_err();
    assert!(e.to_string().contains("no MOPED events"), "{e}");
}

// ---------------------------------------------------------------- OPTCOPY

#[test]
fn optcopy_m_gets_issues_get_copy() {
    let mut c = cache("optcopy", "I", false);
    assert_eq!(c.moped(MopedKind::Read, None).unwrap(), CoreOutcome::Miss);
    assert_eq!(c.state(), "ID");
    assert_eq!(c.sent(), vec![(GetCopy, DIR, ME, 0)]);
    assert_eq!(c.placement(), Placement::TbeOnly);
}

#[test]
fn owner_answers_fwd_get_copy_and_keeps_its_line() {
    for s in ["O", "M", "MM", "OM"] {
        let dirty = s != "M";
        let mut c = cache("optcopy", s, dirty);
        c.deliver(FwdGetCopy, DIR, OTHER, 0, [0; 64], false)
            .unwrap();
        assert_eq!(c.state(), s);
        assert_eq!(c.sent(), vec![(Data, OTHER, OTHER, 0)]);
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
        assert_eq!(c.data(), Some((line_of_byte(OLD), dirty)), "{s}");
    }
}

#[test]
fn writeback_in_progress_answers_fwd_get_copy_from_tbe() {
    for s in ["MI", "OI"] {
        let mut c = cache("optcopy", s, true);
        c.deliver(FwdGetCopy, DIR, OTHER, 0, [0; 64], false)
            .unwrap();
        assert_eq!(c.state(), s);
        assert_eq!(c.sent(), vec![(Data, OTHER, OTHER, 0)]);
        assert_eq!(c.out[0].msg.data, line_of_byte(OLD));
    }
}

#[test]
fn get_copy_in_i_and_s_reads_memory_and_changes_nothing() {
    for (s, next, sharers) in [("I", "IC", &[][..]), ("S", "SC", &[OTHER, THIRD][..])] {
        let mut d = dir("optcopy", s, None, sharers);
        d.deliver(GetCopy, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), next);
        assert_eq!(d.sent(), vec![(Data, ME, ME, 0)]);
        assert_eq!(d.sent_data(), Some(line_of_byte(OLD)));
        assert_eq!(
            d.entry().sharers,
            CoreSet::from_mask(sharers.iter().fold(0, |m, &c| m | 1 << c))
        );
        assert_eq!(d.entry().requestor, ME);
    }
}

#[test]
fn get_copy_to_an_owner_is_forwarded() {
    for (s, next) in [("O", "OC"), ("M", "MC")] {
        let sharers: &[u16] = if s == "O" { &[THIRD] } else { &[] };
        let mut d = dir("optcopy", s, Some(OTHER), sharers);
        d.deliver(GetCopy, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), next);
        assert_eq!(d.sent(), vec![(FwdGetCopy, OTHER, ME, 0)]);
        assert_eq!(d.entry().owner, OTHER);
    }
}

#[test]
fn unblock_ends_a_copy_without_changing_owner_or_sharers() {
    for (s, next, owner) in [
        ("IC", "I", None),
        ("SC", "S", None),
        ("OC", "O", Some(OTHER)),
        ("MC", "M", Some(OTHER)),
    ] {
        let sharers: &[u16] = if matches!(s, "SC" | "OC") {
            &[THIRD]
        } else {
            &[]
        };
        let mut d = dir("optcopy", s, owner, sharers);
        d.put(s, owner, sharers, Some(ME));
        d.deliver(Unblock, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), next, "{s}");
        assert_eq!(d.entry().owner, owner.unwrap_or(u16::MAX));
        assert_eq!(
            d.entry().sharers,
            CoreSet::from_mask(sharers.iter().fold(0, |m, &c| m | 1 << c))
        );
        assert!(d.sent().is_empty());
    }
}

#[test]
fn copy_states_stall_other_requests() {
    let mut d = dir("optcopy", "MC", Some(OTHER), &[]);
    d.put("MC", Some(OTHER), &[], Some(ME));
    for ty in [Gets, Getx, GetCopy, Putx] {
        assert_eq!(d.deliver(ty, THIRD, [0; 64]).unwrap(), Delivery::Stalled);
    }
}

// ---------------------------------------------------------------- OPTCACHE

#[test]
fn m_fill_issues_get_fill() {
    for (s, next) in [("I", "IM"), ("S", "SM"), ("O", "OM")] {
        let mut c = cache("optcache", s, false);
        assert_eq!(c.moped(MopedKind::Fill, None).unwrap(), CoreOutcome::Miss);
        assert_eq!(c.state(), next, "{s}");
        assert_eq!(c.sent(), vec![(GetFill, DIR, ME, 0)]);
    }
}

#[test]
fn m_fill_in_m_and_mm_grants_at_once() {
    for s in ["M", "MM"] {
        let mut c = cache("optcache", s, false);
        assert_eq!(
            c.moped(MopedKind::Fill, whole(NEW)).unwrap(),
            CoreOutcome::Hit(HitLevel::L2)
        );
        assert_eq!(c.state(), "MM");
        assert_eq!(c.moped_done(), vec![MopedDone::Written { addr: ADDR }]);
        assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
    }
}

#[test]
fn fill_grant_in_im_zero_fills_and_waits_for_the_acks() {
    let mut c = cache("optcache", "I", false);
    c.moped(MopedKind::Fill, None).unwrap();
    c.deliver(FillGrant, DIR, ME, 1, [0; 64], false).unwrap();
    // No read permission while the invalidation it caused is still on its way.
    assert_eq!(c.state(), "IM");
    assert_eq!(c.data(), Some(([0; 64], true)));
    assert!(c.moped_done().is_empty());
    c.deliver(Ack, OTHER, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(c.sent(), vec![(ExclusiveUnblock, DIR, ME, 0)]);
    assert_eq!(c.moped_done(), vec![MopedDone::Granted { addr: ADDR }]);
    // Nothing to collect: granted at once.
    let mut c = cache("optcache", "I", false);
    c.moped(MopedKind::Fill, whole(NEW)).unwrap();
    c.deliver(FillGrant, DIR, ME, 0, [0; 64], false).unwrap();
    assert_eq!(c.state(), "MM");
    assert_eq!(c.data(), Some((line_of_byte(NEW), true)));
    assert_eq!(c.moped_done(), vec![MopedDone::Written { addr: ADDR }]);
}

#[test]
fn fill_grant_in_sm_and_om_keeps_the_data() {
    for s in ["SM", "OM"] {
        let mut c = cache_for_moped("optcache", s, MopedKind::Fill, None);
        c.acks(0, false);
        c.deliver(FillGrant, DIR, ME, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), "MM", "{s}");
        assert_eq!(c.data().unwrap().0, line_of_byte(OLD));
        assert_eq!(c.moped_done(), vec![MopedDone::Granted { addr: ADDR }]);
    }
}

#[test]
fn a_fill_invalidates_the_owner() {
    for (s, next) in [
        ("O", "I"),
        ("M", "I"),
        ("MM", "I"),
        ("OM", "IM"),
        ("MI", "II"),
        ("OI", "II"),
    ] {
        let mut c = cache("optcache", s, true);
        c.deliver(Inv, DIR, OTHER, 0, [0; 64], false).unwrap();
        assert_eq!(c.state(), next, "{s}");
        assert_eq!(c.sent(), vec![(Ack, OTHER, OTHER, 0)], "{s}: ack, no data");
    }
}

#[test]
fn get_fill_invalidates_every_other_copy() {
    for (s, owner, sharers, invalidated) in [
        ("I", None, &[][..], &[][..]),
        ("S", None, &[ME, OTHER, THIRD][..], &[OTHER, THIRD][..]),
        ("O", Some(OTHER), &[THIRD][..], &[OTHER, THIRD][..]),
        ("O", Some(ME), &[THIRD][..], &[THIRD][..]),
        ("M", Some(OTHER), &[][..], &[OTHER][..]),
    ] {
        let mut d = dir("optcache", s, owner, sharers);
        d.deliver(GetFill, ME, [0; 64]).unwrap();
        assert_eq!(d.state(), "MF", "{s}");
        let mut want = vec![(FillGrant, ME, ME, invalidated.len() as i16)];
        want.extend(invalidated.iter().map(|&c| (Inv, c, ME, 0)));
        assert_eq!(d.sent(), want, "{s} owner {owner:?}");
        assert!(
            d.out.iter().all(|o| !o.msg.ty.carries_data()),
            "a fill moves no data"
        );
    }
}

#[test]
fn exclusive_unblock_ends_a_fill() {
    let mut d = dir("optcache", "MF", Some(OTHER), &[THIRD]);
    d.put("MF", Some(OTHER), &[THIRD], Some(ME));
    d.deliver(ExclusiveUnblock, ME, [0; 64]).unwrap();
    assert_eq!(d.state(), "M");
    assert_eq!(d.entry().owner, ME);
    assert!(d.entry().sharers.is_empty());
}
