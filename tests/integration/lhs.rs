//! Limited-length head separation (`mpi.unexpected_queue = "lhs"`): every message still
//! arrives intact, the search reads LH-buffer positions (holes included) in arrival order,
//! and a full LH buffer overflows into the list without breaking MPI's ordering.

use std::path::Path;

use moped::api::figure10::FIGURE10;
use moped::config::{SystemConfig, UnexpectedQueue};
use moped::mpi::{run_workload, MpiParams, MpiRun};
use moped::workload::load_workload;
use moped::workload::Workload;

use crate::unexpected;
use unexpected::out_of_order;

fn lhs(entries: u64, entry_bytes: u64) -> SystemConfig {
    let mut c = SystemConfig::default();
    c.mpi.unexpected_queue = UnexpectedQueue::Lhs;
    c.mpi.lhs_entries = entries;
    c.mpi.lhs_entry_bytes = entry_bytes;
    c
}

fn run(c: &SystemConfig, w: &Workload, design: &str) -> MpiRun {
    let design = design.parse().expect("a design name");
    run_workload(c, w, design, 1, MpiParams::from(&c.mpi))
        .unwrap_or_else(|e| panic!("{} under {design}: {e}", w.name))
}

fn stat(r: &MpiRun, name: &str) -> u64 {
    let s = r.stats.get(name).unwrap_or_else(|| panic!("no {name}"));
    s.value.as_f64() as u64
}

fn cold(mut c: SystemConfig) -> SystemConfig {
    c.workload.warmup = false;
    c
}

/// A matched entry stays a hole that later searches read until the head passes it: after
/// tag 3 of 1..5 is taken, tag 5 is the fifth position read (the list: the fourth entry).
#[test]
fn the_search_reads_holes_until_the_head_passes_them() {
    let w = out_of_order(5, 8, &[3, 5, 1, 2, 4]);
    let list = run(&cold(SystemConfig::default()), &w, "baseline");
    let lh = run(&cold(lhs(1024, 64)), &w, "baseline");
    for r in [&list, &lh] {
        assert_eq!(r.messages_verified, 6);
    }
    let umq = |r: &MpiRun| r.stats.distribution("mpi.umq_depth").unwrap().sum();
    // Receives in order 3, 5, 1, 2, 4. List: 3, 4, 1, 1, 1 entries. LHS: 3, 5 (the hole at
    // 3 read), 1, then 1 (the head moved to 2), then 1 (the head moved past the hole).
    assert_eq!(umq(&list), 10);
    assert_eq!(umq(&lh), 11);
    assert_eq!(stat(&lh, "mpi.lhs_heads"), 5);
    assert_eq!(stat(&lh, "mpi.lhs_overflows"), 0);
    assert_eq!(stat(&list, "mpi.lhs_heads"), 0);
}

/// With two LH entries, the third message and every later one go to the list until it
/// empties, and a search meets them after the LH buffer's, in arrival order.
#[test]
fn a_full_lh_buffer_overflows_into_the_list_in_arrival_order() {
    for bytes in [0, 8, 40, 100, 5000] {
        let w = out_of_order(6, bytes, &[6, 1, 2, 3, 4, 5]);
        let r = run(&cold(lhs(2, 32)), &w, "baseline");
        assert_eq!(r.messages_verified, 7, "{bytes}");
        assert_eq!(stat(&r, "mpi.lhs_heads"), 2, "{bytes}");
        assert_eq!(stat(&r, "mpi.lhs_overflows"), 4, "{bytes}");
        // Tag 6: two LH positions and four list entries.
        assert_eq!(
            r.stats.distribution("mpi.umq_depth").unwrap().max_value(),
            Some(6)
        );
    }
}

/// Every message of every Figure 10 workload arrives intact with LHS, in every design,
/// at reduced iterations: with the default LH buffer (payloads over 48 bytes split between
/// the LH entry and a buffer), and with one 16-byte entry, which overflows whenever two messages wait.
#[test]
fn lhs_delivers_every_message_of_every_figure10_workload() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let (mut heads, mut overflows) = (0, 0);
    for rel in FIGURE10 {
        let (w, _) = load_workload(&root.join(rel), Some(0.02), false).unwrap();
        for (c, designs) in [
            (
                lhs(1024, 64),
                &["baseline", "basemoped", "optcopy", "optcache"][..],
            ),
            (lhs(1, 16), &["baseline"][..]),
        ] {
            for d in designs {
                let r = run(&cold(c.clone()), &w, d);
                assert!(r.messages_verified > 0, "{rel} {d}");
                if *d == "baseline" {
                    heads += stat(&r, "mpi.lhs_heads");
                    overflows += stat(&r, "mpi.lhs_overflows");
                }
            }
        }
    }
    assert!(heads > 500, "{heads} heads, {overflows} overflows");
    assert!(overflows > 10, "{heads} heads, {overflows} overflows");
}
