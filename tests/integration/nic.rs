//! The LHS paper's setting (`[nic]`): messages through DIMMnet-2-like NICs, the receive
//! dividing controller, VL commands and the Read Window, memory attributes, flushes and
//! software prefetch; every message verified.

use std::path::Path;

use moped::config::{MemAttr, SystemConfig, UnexpectedQueue};
use moped::mpi::{run_workload, MpiParams, MpiRun};
use moped::workload::{load_workload, Workload};

use crate::unexpected;
use unexpected::out_of_order;

fn nic(queue: UnexpectedQueue, attr: MemAttr) -> SystemConfig {
    let mut c = SystemConfig::default();
    c.system.cores = 2;
    c.directory.banks = 1;
    c.nic.enabled = true;
    c.nic.lh_attribute = attr;
    c.mpi.unexpected_queue = queue;
    c.workload.warmup = false;
    c
}

fn run(c: &SystemConfig, w: &Workload) -> MpiRun {
    run_workload(
        c,
        w,
        "baseline".parse().unwrap(),
        1,
        MpiParams::from(&c.mpi),
    )
    .unwrap_or_else(|e| panic!("{}: {e}", w.name))
}

fn stat(r: &MpiRun, name: &str) -> u64 {
    let s = r.stats.get(name).unwrap_or_else(|| panic!("no {name}"));
    s.value.as_f64() as u64
}

#[test]
fn every_message_arrives_through_the_nics_with_and_without_lhs() {
    for queue in [UnexpectedQueue::Lhs, UnexpectedQueue::List] {
        for attr in MemAttr::ALL {
            for bytes in [0, 8, 40, 48, 100, 5000] {
                let w = out_of_order(5, bytes, &[3, 5, 1, 2, 4]);
                let c = nic(queue, attr);
                let r = run(&c, &w);
                assert_eq!(r.messages_verified, 6, "{queue:?} {attr:?} {bytes}");
                assert_eq!(stat(&r, "system.nic0.packets_received"), 6);
                let vl = stat(&r, "system.nic0.vl_commands");
                if queue == UnexpectedQueue::List || bytes > 48 {
                    assert!(vl > 0, "{queue:?} {attr:?} {bytes}: no VL command");
                } else {
                    assert_eq!(vl, 0, "{queue:?} {attr:?} {bytes}");
                }
            }
        }
    }
}

fn preset(name: &str) -> SystemConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("configs/{name}.toml"));
    let mut c = SystemConfig::from_file(&path).unwrap();
    c.workload.warmup = false;
    c
}

/// The presets' memory is the paper's "about 100 ns" from the core (by construction:
/// `memory.latency` is set so).
#[test]
fn the_presets_load_from_memory_in_100_ns() {
    for name in ["dimmnet2", "dimmnet3"] {
        let c = preset(name);
        let ns = moped::sim::memory_load_cycles(&c) as f64 / c.system.core_ghz;
        assert!((ns - 100.0).abs() < 0.5, "{name}: {ns} ns");
    }
}

/// The benchmark workloads run through the NICs on the 16-core CMP, every message checked:
/// the NIC path carries collectives' messages, barriers and sends to self.
#[test]
fn imb_and_npb_workloads_run_through_the_nics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    for rel in [
        "imb/pingpong-16k.toml",
        "imb/alltoall-16k.toml",
        "imb/reduce-16k.toml",
        "npb/mg-S.toml",
    ] {
        let (w, _) = load_workload(&root.join(rel), Some(0.02), false).unwrap();
        for queue in [UnexpectedQueue::Lhs, UnexpectedQueue::List] {
            let mut c = SystemConfig::default();
            c.nic.enabled = true;
            c.mpi.unexpected_queue = queue;
            c.workload.warmup = false;
            let r = run(&c, &w);
            assert!(r.messages_verified > 0, "{rel} {queue:?}");
            assert_eq!(
                stat(&r, "system.total.nic.packets_received"),
                stat(&r, "system.total.nic.packets_sent"),
                "{rel} {queue:?}"
            );
        }
    }
}

#[test]
fn runs_the_nics_cannot_make_are_refused_up_front() {
    let w = out_of_order(2, 100, &[1, 2]);
    let c = nic(UnexpectedQueue::Lhs, MemAttr::WriteBack);
    let e = run_workload(
        &c,
        &w,
        "optcopy".parse().unwrap(),
        1,
        MpiParams::from(&c.mpi),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("baseline only"), "{e}");
    let big = out_of_order(1, 40_000, &[1]);
    let e = run_workload(
        &c,
        &big,
        "baseline".parse().unwrap(),
        1,
        MpiParams::from(&c.mpi),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("rank 1 call 0 sends 40000 bytes") && e.contains("nic.slot_bytes"),
        "{e}"
    );
}

/// A receive ring with no free position holds messages on the wire; when no receive can
/// take one, the watchdog's report says so.
#[test]
fn a_full_receive_ring_is_named_in_the_stuck_report() {
    let w = out_of_order(6, 8, &[1, 2, 3, 4, 5, 6]);
    let mut c = nic(UnexpectedQueue::Lhs, MemAttr::WriteBack);
    c.mpi.lhs_entries = 4;
    c.watchdog.mpi_cycles = 200_000;
    let e = run_workload(
        &c,
        &w,
        "baseline".parse().unwrap(),
        1,
        MpiParams::from(&c.mpi),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("NIC 0: 3 messages wait for a free position of its receive ring, all 4"),
        "{e}"
    );
    // With room for all, the same program runs.
    c.mpi.lhs_entries = 7;
    assert_eq!(run(&c, &w).messages_verified, 7);
}

/// The unexpected search of the LHS paper on DIMMnet-2: `n` messages wait, the receive
/// takes the last; its timed region's statistics.
fn search(c: &SystemConfig, n: u32) -> MpiRun {
    let spec = format!(
        "name = \"u\"\nsuite = \"queue\"\nbenchmark = \"unexpected\"\ndepth = {n}\n\
         position = {n}\nbytes = 8\n"
    );
    let dir = std::env::temp_dir().join(format!("moped-nic-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("u.toml");
    std::fs::write(&path, spec).unwrap();
    let (w, _) = load_workload(&path, None, true).unwrap();
    let mut c = c.clone();
    c.workload.warmup = true;
    c.mpi.lhs_entries = c.mpi.lhs_entries.max(u64::from(n) + 1);
    run(&c, &w)
}

/// Without LHS every envelope the search reads costs a VL command and a Read Window load;
/// with LHS the search reads the LH buffer through the caches, flushing each line after,
/// or (uncacheable) with a NIC load per entry; a software prefetch is issued per entry.
#[test]
fn each_condition_reads_the_memory_it_names() {
    let n = 64;
    let base = preset("dimmnet2");
    let mut list = base.clone();
    list.mpi.unexpected_queue = UnexpectedQueue::List;
    let r = search(&list, n);
    assert_eq!(stat(&r, "system.nic0.vl_commands"), u64::from(n) + 1);
    assert_eq!(stat(&r, "system.cpu0.l1d.flushes"), 0);

    let r = search(&base, n);
    assert_eq!(stat(&r, "system.nic0.vl_commands"), 0);
    assert_eq!(stat(&r, "system.cpu0.l1d.flushes"), u64::from(n));
    assert!(stat(&r, "system.cpu0.l1d.prefetches_useful") > u64::from(n) / 2);

    let mut forced = base.clone();
    forced.nic.flush = false;
    let r = search(&forced, n);
    assert_eq!(stat(&r, "system.cpu0.l1d.flushes"), 0);

    let mut uc = base.clone();
    uc.nic.lh_attribute = MemAttr::Uncacheable;
    uc.mpi.search_prefetch = true;
    uc.mpi.search_prefetch_offset = 256;
    let r = search(&uc, n);
    // Two loads of the matched entry's header, one of its payload, one per other entry.
    assert_eq!(stat(&r, "system.nic0.lh_loads"), u64::from(n) + 2);
    assert_eq!(stat(&r, "system.cpu0.l1d.sw_prefetches"), 0);
    assert_eq!(
        stat(&r, "system.cpu0.l1d.sw_prefetches_dropped"),
        u64::from(n)
    );

    let mut swp = base.clone();
    swp.l1.prefetch = Some(moped::config::PrefetchKind::None);
    swp.mpi.search_prefetch = true;
    swp.mpi.search_prefetch_offset = 256;
    let r = search(&swp, n);
    assert!(stat(&r, "system.cpu0.l1d.sw_prefetches") > u64::from(n) / 2);
}

/// With LHS the search of DIMMnet-2's 1,024 entries is an order of magnitude faster than
/// through VL commands (simulated cycles: the model's property, not host time).
#[test]
fn lhs_searches_faster_than_vl_commands() {
    let base = preset("dimmnet2");
    let mut list = base.clone();
    list.mpi.unexpected_queue = UnexpectedQueue::List;
    let (a, b) = (search(&base, 256).cycles, search(&list, 256).cycles);
    assert!(b > 8 * a, "LHS {a} cycles, VL {b}");
}

/// A matching engine on each NIC (`nic.matcher`) takes both queues: receives are posted to
/// it, its pairs delivered by the host; every message still arrives, in MPI's order.
#[test]
fn every_message_arrives_when_the_nics_match() {
    use moped::config::NicMatcher;
    use moped::moped::matching::MatcherKind;
    for kind in [
        MatcherKind::Alpu,
        MatcherKind::Fsm,
        MatcherKind::Cam4,
        MatcherKind::Hash,
    ] {
        for queue in [UnexpectedQueue::Lhs, UnexpectedQueue::List] {
            for bytes in [0, 8, 100, 5000] {
                let w = out_of_order(5, bytes, &[3, 5, 1, 2, 4]);
                let mut c = nic(queue, MemAttr::WriteBack);
                c.nic.matcher = NicMatcher::Engine(kind);
                c.moped.matching.alpu_cells = 2;
                let r = run(&c, &w);
                assert_eq!(r.messages_verified, 6, "{kind} {queue:?} {bytes}");
                assert_eq!(stat(&r, "system.nic0.matches"), 6, "{kind}");
                assert!(stat(&r, "system.nic0.match_searches") >= 6, "{kind}");
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    for rel in ["imb/alltoall-16k.toml", "goal/any_source.goal"] {
        let (w, _) = load_workload(&root.join(rel), Some(0.02), false).unwrap();
        let mut c = SystemConfig::default();
        c.nic.enabled = true;
        c.nic.matcher = NicMatcher::Engine(MatcherKind::Alpu);
        c.workload.warmup = false;
        assert!(run(&c, &w).messages_verified > 0, "{rel}");
    }
}

/// `moped lhs --quick`: lhs.csv with a row per run of every condition of the paper's
/// figures on both hosts, every message verified, and a report whose first speed-up is
/// the like-for-like one (the hardware prefetcher on both sides).
#[test]
fn moped_lhs_writes_its_rows_and_a_like_for_like_report() {
    use moped::api::lhs::{self, report, Condition, LhsOptions};
    use moped::api::output::{Invocation, OutDir};
    let dir = std::env::temp_dir().join(format!("moped-lhs-quick-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = LhsOptions {
        out: dir.clone(),
        overrides: Vec::new(),
        jobs: 2,
        quick: true,
        reuse: None,
    };
    let out = OutDir::claim(&dir, false, Invocation::default()).unwrap();
    let l = lhs::lhs(&opts, out, &|_, _, _| {}).unwrap();
    assert_eq!(l.runs, opts.run_count());
    assert_eq!(l.reused, 0);
    let table = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(
        table.lines().count(),
        1 + l.runs,
        "a row per run in runs.csv"
    );
    for c in Condition::all() {
        let rows = l
            .rows
            .iter()
            .filter(|r| r.setting.name == c.host.name() && r.setting.condition == c.label);
        assert_eq!(rows.count(), c.points(true).len(), "{}", c.label);
    }
    assert!(l
        .rows
        .iter()
        .all(|r| r.messages_verified == u64::from(r.depth) + 1));
    let h = report::headline(&l.rows).unwrap();
    assert_eq!(h.slow.prefetch, h.fast.prefetch);
    let text = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let first = moped::api::matching::lhs::first_speedup(&text);
    assert_eq!(first, format!("{:.2}x", h.ratio().unwrap()), "{text}");
    let csv = std::fs::read_to_string(dir.join("lhs.csv")).unwrap();
    assert_eq!(csv.lines().count(), l.rows.len() + 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
