//! The exhaustive checker on the baseline protocol (pinned state counts and table coverage)
//! and on seeded bugs (each must yield a counterexample trace of the right kind).

use crate::common;

use common::fails;
use moped::checker::{check, union_coverage, CheckConfig, CheckReport, Failure, FailureKind};
use moped::coherence::protocols::{BASELINE_DIR, BASELINE_L2};
use moped::coherence::Protocol;

fn run(name: &str) -> CheckReport {
    common::run(name, &Protocol::baseline())
}

/// The baseline with one text substitution in each table ("" leaves a table unchanged).
fn mutated(l2_from: &str, l2_to: &str, dir_from: &str, dir_to: &str) -> Protocol {
    let l2 = if l2_from.is_empty() {
        BASELINE_L2.0.to_string()
    } else {
        BASELINE_L2.0.replace(l2_from, l2_to)
    };
    let dir = if dir_from.is_empty() {
        BASELINE_DIR.0.to_string()
    } else {
        BASELINE_DIR.0.replace(dir_from, dir_to)
    };
    assert!(
        l2 != BASELINE_L2.0 || dir != BASELINE_DIR.0,
        "the mutation must change a table"
    );
    Protocol::from_sources("mutant", (&l2, "L2Cache.sm"), (&dir, "Directory.sm"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A counterexample must start at the initial state and replay step by step.
fn assert_trace(f: &Failure, mentions: &[&str]) {
    let text = f.to_string();
    assert!(f.trace.len() > 2, "no trace: {text}");
    assert!(f.trace[0].contains("initial state"), "{text}");
    assert!(text.contains("  1. "), "{text}");
    assert!(!text.contains("replay diverged"), "{text}");
    for m in mentions {
        assert!(text.contains(m), "`{m}` missing from:\n{text}");
    }
}

/// [`common::assert_pinned`] on the baseline.
fn assert_pinned(name: &str, want: (usize, usize, usize, usize)) -> CheckReport {
    common::assert_pinned(name, &Protocol::baseline(), want)
}

#[test]
fn c1_two_caches_one_line() {
    assert_pinned("c1", (12_503, 30_121, 75, 34));
}

#[test]
fn c2_three_caches_one_line_with_symmetry() {
    assert_pinned("c2", (132_342, 384_490, 72, 50));
}

#[test]
fn c3_two_caches_two_conflicting_lines() {
    assert_pinned("c3", (584_797, 2_333_295, 340, 65));
}

#[test]
fn symmetry_reduction_keeps_the_verdict_and_shrinks_the_space() {
    let mut cfg = CheckConfig::named("c1").unwrap();
    cfg.symmetry = true;
    let r = check(&cfg, &Protocol::baseline()).unwrap_or_else(|f| panic!("{f}"));
    // Every orbit of two caches holds one or two concrete states.
    assert!(r.states < 12_503 && 2 * r.states >= 12_503, "{r}");
    assert_eq!(r.states, 6_268);
}

#[test]
fn table_coverage_is_reported_and_the_unreached_cells_are_the_known_ones() {
    let reports: Vec<CheckReport> = ["c1", "c2"].iter().map(|n| run(n)).collect();
    let cov = union_coverage(&reports);
    let unreached: Vec<String> = cov.unreached.iter().map(|c| c.to_string()).collect();
    // Clean writebacks need an owned clean line, which the baseline never creates (exclusive
    // data only arrives for a store); a load during a store miss needs a core that issues
    // past an outstanding store to its line, which neither the checker's nor the
    // simulator's cores do (the transition tests cover those cells).
    assert_eq!(
        unreached,
        [
            "Directory: (MI, Clean_Writeback)",
            "Directory: (OI, Clean_Writeback)",
            "L2Cache: (OM, Load)",
            "L2Cache: (SM, Load)"
        ]
    );
    assert_eq!((cov.reached.len(), cov.possible.len()), (66, 70));
}

#[test]
fn dropped_invalidation_ack_is_a_deadlock_with_a_trace() {
    let p = mutated(
        "transition(S, Inv, I) { f_sendAckToRequestor; rr_deallocateLine; }",
        "transition(S, Inv, I) { rr_deallocateLine; }",
        "",
        "",
    );
    let f = fails("c2", &p);
    assert!(
        matches!(f.kind, FailureKind::Deadlock | FailureKind::Liveness),
        "{f}"
    );
    assert_trace(
        &f,
        &["INV(", "L2Cache[", "(S, Inv)", "no action is enabled"],
    );
}

#[test]
fn sharer_that_ignores_an_invalidation_breaks_swmr() {
    let p = mutated(
        "transition(S, Inv, I) { f_sendAckToRequestor; rr_deallocateLine; }",
        "transition(S, Inv) { f_sendAckToRequestor; }",
        "",
        "",
    );
    let f = fails("c1", &p);
    assert_eq!(f.kind, FailureKind::Swmr, "{f}");
    assert_trace(&f, &["(S, Inv)"]);
}

#[test]
fn lost_writeback_data_breaks_the_data_value_invariant() {
    let p = mutated(
        "",
        "",
        "transition(MI, Dirty_Writeback, I) { m_writeDataToMemory; c_clearOwner; w_deallocateTBE; }",
        "transition(MI, Dirty_Writeback, I) { c_clearOwner; w_deallocateTBE; }",
    );
    let f = fails("c1", &p);
    assert_eq!(f.kind, FailureKind::DataValue, "{f}");
    assert_trace(&f, &["Directory (MI, Dirty_Writeback)", "loaded 0"]);
}

#[test]
fn forgotten_sharer_breaks_directory_agreement() {
    let p = mutated(
        "",
        "",
        "transition({IS, SS}, Unblock, S) { s_addRequestorToSharers; w_deallocateTBE; }",
        "transition({IS, SS}, Unblock, S) { w_deallocateTBE; }",
    );
    let f = fails("c1", &p);
    assert!(
        matches!(f.kind, FailureKind::DirectoryAgreement | FailureKind::Swmr),
        "{f}"
    );
    assert_trace(&f, &["Directory (IS, Unblock)"]);
}

#[test]
fn a_declared_impossible_cell_that_fires_is_reported() {
    // The directory forgets to block: a second request meets the first one's transient state
    // (a cell declared impossible in this variant).
    let p = mutated(
        "",
        "",
        "transition(I, GETS, IS) { v_allocateTBE; d_sendDataFromMemory; }",
        "transition(I, GETS, S) { d_sendDataFromMemory; }",
    );
    let f = fails("c1", &p);
    assert_trace(&f, &["Directory (I, GETS)"]);
}

#[test]
fn tiny_state_limit_is_an_error_not_a_hang() {
    let mut cfg = CheckConfig::named("c1").unwrap();
    cfg.max_states = 100;
    let f = check(&cfg, &Protocol::baseline()).unwrap_err();
    assert_eq!(f.kind, FailureKind::StateLimit);
}

#[test]
fn unknown_configuration_names_the_choices() {
    let e = moped::checker::run_named("c9").unwrap_err();
    assert!(e.contains("c9") && e.contains("c1, c2, c3"), "{e}");
}
