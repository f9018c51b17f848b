//! The exhaustive checker over the MOPED designs: each core's MOPED reads, owns and fills
//! lines beside its core's loads and stores. Pinned state counts, 0 violations, and seeded
//! bugs that the MOPED-specific checks catch.

use crate::common;

use common::fails;
use moped::checker::{check, CheckConfig, FailureKind};
use moped::coherence::protocols::design_files;
use moped::coherence::Protocol;

/// [`common::assert_pinned`] on a design.
fn assert_pinned(name: &str, design: &str, want: (usize, usize, usize, usize)) {
    common::assert_pinned(name, &Protocol::by_name(design).unwrap(), want);
}

#[test]
fn m1_two_caches_one_line() {
    assert_pinned("m1", "basemoped", (93_612, 271_564, 168, 35));
    assert_pinned("m1", "optcopy", (100_324, 291_044, 168, 36));
    assert_pinned("m1", "optcache", (217_972, 643_024, 168, 36));
}

#[test]
fn m2_three_caches_one_line_with_symmetry() {
    assert_pinned("m2", "basemoped", (145_076, 519_960, 84, 51));
    assert_pinned("m2", "optcopy", (155_266, 559_524, 84, 52));
    assert_pinned("m2", "optcache", (409_840, 1_481_922, 84, 52));
}

// The replacement races, one test per design so that the harness runs them side by side
// (each needs a few GB at its peak, and minutes in the test profile).

#[test]
fn m3_two_conflicting_lines_with_the_receivers_moped_basemoped() {
    assert_pinned("m3", "basemoped", (2_746_688, 11_503_348, 648, 64));
}

#[test]
fn m3_two_conflicting_lines_with_the_receivers_moped_optcopy() {
    assert_pinned("m3", "optcopy", (3_246_660, 13_731_568, 648, 66));
}

#[test]
fn m3_two_conflicting_lines_with_the_receivers_moped_optcache() {
    assert_pinned("m3", "optcache", (4_515_736, 18_987_430, 648, 66));
}

#[test]
fn moped_configurations_need_a_moped_design() {
    let cfg = CheckConfig::named("m1").unwrap();
    let f = check(&cfg, &Protocol::baseline()).unwrap_err();
    assert!(f.detail.contains("basemoped"), "{f}");
}

/// `design` with one overlay file's text edited.
fn mutated(design: &str, file: &str, from: &str, to: &str) -> Protocol {
    let layers = |machine: &str| -> Vec<(String, &'static str)> {
        design_files(design.parse().unwrap(), machine)
            .unwrap()
            .into_iter()
            .map(|(text, path)| {
                if path == file {
                    assert_eq!(text.matches(from).count(), 1, "{from}");
                    (text.replace(from, to), path)
                } else {
                    (text.to_string(), path)
                }
            })
            .collect()
    };
    let (l2, dir) = (layers("L2Cache"), layers("Directory"));
    fn refs<'a>(v: &'a [(String, &'static str)]) -> Vec<(&'a str, &'a str)> {
        v.iter().map(|(t, p)| (t.as_str(), *p)).collect()
    }
    let (l2, dir) = (refs(&l2), refs(&dir));
    Protocol::layered("mutant", l2[0], &l2[1..], dir[0], &dir[1..])
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_copy_that_downgrades_the_owner_is_caught() {
    let p = mutated(
        "optcopy",
        "protocols/optcopy/L2Cache.sm",
        "transition({O, M, MM, OM}, Fwd_GET_COPY) { e_sendDataToRequestor; }",
        "transition({O, M, OM}, Fwd_GET_COPY) { e_sendDataToRequestor; }\n\
         transition(MM, Fwd_GET_COPY, M) { e_sendDataToRequestor; }",
    );
    let f = fails("m1", &p);
    assert_eq!(f.kind, FailureKind::Moped, "{f}");
    assert!(f.to_string().contains("Fwd_GET_COPY"), "{f}");
    assert!(f.trace[0].contains("initial state"), "{f}");
}

#[test]
fn a_fill_granted_before_its_acks_is_caught() {
    // Read permission at the grant, while the old owner's invalidation is still in flight.
    let p = mutated(
        "optcache",
        "protocols/optcache/L2Cache.sm",
        "transition(IM, Fill_Grant) {",
        "transition(IM, Fill_Grant, OM) {",
    );
    let f = fails("m1", &p);
    assert!(
        matches!(f.kind, FailureKind::Swmr | FailureKind::DataValue),
        "{f}"
    );
}

#[test]
fn a_copy_request_that_takes_sharers_along_is_caught() {
    // The directory records the MOPED as a sharer, although a copy holds no rights.
    let p = mutated(
        "optcopy",
        "protocols/optcopy/Directory.sm",
        "transition(SC, Unblock, S) { w_deallocateTBE; }",
        "transition(SC, Unblock, S) { s_addRequestorToSharers; w_deallocateTBE; }",
    );
    let f = fails("m1", &p);
    assert_eq!(f.kind, FailureKind::Moped, "{f}");
}
