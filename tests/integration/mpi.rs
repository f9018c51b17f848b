//! The MPI runtime model on small hand-written workloads: every message arrives intact
//! under the baseline and every MOPED design.

use moped::api::run::run_program;
use moped::config::SystemConfig;
use moped::core::Program;
use moped::design::Design;
use moped::envelope::{Peer, Tag};
use moped::mem::{line_of, LINE_BYTES};
use moped::mpi::layout::Layout;
use moped::mpi::shm;
use moped::mpi::{prepare, run_workload, MpiParams, MpiRun};
use moped::os::phys::FlatMem;
use moped::os::Os;
use moped::workload::{BufRef, Call, RankProgram, SweepKind, Workload, CTX_PT2PT};

const DESIGNS: [&str; 4] = ["baseline", "basemoped", "optcopy", "optcache"];

fn cfg(cores: usize) -> SystemConfig {
    let mut c = SystemConfig::default();
    c.system.cores = cores;
    c.directory.banks = 4;
    c.watchdog.progress_cycles = 5_000_000;
    c.watchdog.request_cycles = 50_000_000;
    c
}

fn send(req: u32, dst: u16, tag: u32, buf: u16, bytes: u64) -> Call {
    Call::Isend {
        req,
        dst,
        tag,
        ctx: CTX_PT2PT,
        buf: BufRef::new(buf, 0),
        bytes,
    }
}

fn recv(req: u32, src: Peer, tag: Tag, buf: u16, bytes: u64) -> Call {
    Call::Irecv {
        req,
        src,
        tag,
        ctx: CTX_PT2PT,
        buf: BufRef::new(buf, 0),
        bytes,
    }
}

fn run(w: &Workload, design: &str) -> MpiRun {
    run_with(&cfg(w.ranks.len().max(2)), w, design)
}

fn run_with(c: &SystemConfig, w: &Workload, design: &str) -> MpiRun {
    run_workload(
        c,
        w,
        design.parse().expect("a design name"),
        1,
        MpiParams::default(),
    )
    .unwrap_or_else(|e| panic!("{} under {design}: {e}", w.name))
}

/// Rank 0 and 1 exchange `bytes` `iters` times, as IMB PingPong does.
fn pingpong(bytes: u64, iters: u32) -> Workload {
    let mut ranks = vec![RankProgram::default(), RankProgram::default()];
    for (r, prog) in ranks.iter_mut().enumerate() {
        let sb = prog.buffer("send", bytes);
        let rb = prog.buffer("recv", bytes);
        prog.calls.push(Call::Barrier);
        for i in 0..iters {
            let (a, b) = (2 * i, 2 * i + 1);
            if r == 0 {
                prog.calls.push(send(a, 1, 1, sb, bytes));
                prog.calls.push(Call::Wait(a));
                prog.calls.push(recv(b, Peer::Any, Tag::Tag(1), rb, bytes));
                prog.calls.push(Call::Wait(b));
            } else {
                prog.calls
                    .push(recv(a, Peer::Rank(0), Tag::Tag(1), rb, bytes));
                prog.calls.push(Call::Wait(a));
                prog.calls.push(send(b, 0, 1, sb, bytes));
                prog.calls.push(Call::Wait(b));
            }
            // Rewrite the send buffer, so each round's message differs.
            prog.calls.push(Call::Sweep {
                at: BufRef::new(sb, 0),
                bytes,
                stride: 64,
                kind: SweepKind::Update,
            });
        }
    }
    Workload {
        name: format!("pingpong-{bytes}"),
        ranks,
        notes: vec![],
        origins: None,
    }
}

#[test]
fn pingpong_delivers_every_size_in_every_design() {
    for bytes in [0u64, 8, 100, 9_968, 9_969, 16_384, 40_000] {
        let w = pingpong(bytes, 3);
        for d in DESIGNS {
            let r = run(&w, d);
            // 6 messages plus the barrier's 2 (one round at P = 2).
            assert_eq!(r.messages_verified, 6 + 2, "{} {d}", w.name);
        }
    }
}

/// Cores that overlap the loads of copies and sweeps deliver every message intact (the
/// receiver checks each byte), in fewer cycles where the cores copy; one miss register
/// and a window of one give the blocking core's timing exactly.
#[test]
fn mlp_cores_deliver_every_message_and_one_register_is_blocking() {
    let mlp = |regs: usize, window: usize| {
        let mut c = cfg(2);
        c.system.core_model = moped::config::CoreModel::Mlp;
        c.system.outstanding_loads = regs;
        c.system.window = window;
        c
    };
    for (w, msgs) in [
        (pingpong(40_000, 2), 4 + 2),
        (all_to_all(4, 20_000), 16 + 8),
    ] {
        let p = w.ranks.len().max(2);
        for d in DESIGNS {
            let mut c = cfg(p);
            c.system.core_model = moped::config::CoreModel::Blocking;
            let blocking = run_with(&c, &w, d);
            let mut c = mlp(4, 126);
            c.system.cores = p;
            let fast = run_with(&c, &w, d);
            assert_eq!(fast.messages_verified, msgs, "{} {d}", w.name);
            let mut c = mlp(1, 1);
            c.system.cores = p;
            let one = run_with(&c, &w, d);
            let cycles = |r: &MpiRun| stat(r, "sim.cycles");
            assert_eq!(cycles(&one), cycles(&blocking), "{} {d}", w.name);
            assert_eq!(
                stat(&one, "system.total.l1d.misses"),
                stat(&blocking, "system.total.l1d.misses"),
                "{} {d}",
                w.name
            );
            // Where the cores copy, overlapping the copy's misses saves cycles; under
            // MOPED the device copies, and the cores' few overlapped loads only shift
            // when they poll.
            if d == "baseline" {
                let (f, b) = (cycles(&fast), cycles(&blocking));
                assert!(f < b, "{} {d}: mlp {f}, blocking {b}", w.name);
            }
        }
    }
}

/// Every rank sends to every rank (itself included) with tags that make receives arrive
/// out of posting order, some receives posted late (unexpected messages).
fn all_to_all(p: usize, bytes: u64) -> Workload {
    let mut ranks = vec![RankProgram::default(); p];
    for (r, prog) in ranks.iter_mut().enumerate() {
        let sb = prog.buffer("send", bytes * p as u64);
        let rb = prog.buffer("recv", bytes * p as u64);
        let mut reqs = Vec::new();
        for k in 0..p {
            let src = (r + p - k) % p;
            if k % 2 == 0 {
                prog.calls.push(Call::Irecv {
                    req: 100 + k as u32,
                    src: Peer::Rank(src as u16),
                    tag: Tag::Tag(7),
                    ctx: CTX_PT2PT,
                    buf: BufRef::new(rb, src as u64 * bytes),
                    bytes,
                });
                reqs.push(100 + k as u32);
            }
        }
        for k in 0..p {
            let dst = (r + k) % p;
            prog.calls.push(Call::Isend {
                req: k as u32,
                dst: dst as u16,
                tag: 7,
                ctx: CTX_PT2PT,
                buf: BufRef::new(sb, dst as u64 * bytes),
                bytes,
            });
            reqs.push(k as u32);
        }
        prog.calls.push(Call::Compute(2000));
        for k in 0..p {
            let src = (r + p - k) % p;
            if k % 2 == 1 {
                prog.calls.push(Call::Irecv {
                    req: 100 + k as u32,
                    src: Peer::Rank(src as u16),
                    tag: Tag::Tag(7),
                    ctx: CTX_PT2PT,
                    buf: BufRef::new(rb, src as u64 * bytes),
                    bytes,
                });
                reqs.push(100 + k as u32);
            }
        }
        prog.calls.push(Call::Waitall(reqs));
        prog.calls.push(Call::Barrier);
    }
    Workload {
        name: format!("all-to-all-{p}x{bytes}"),
        ranks,
        notes: vec![],
        origins: None,
    }
}

#[test]
fn all_to_all_with_unexpected_messages_in_every_design() {
    for (p, bytes) in [(4usize, 512u64), (4, 20_000), (8, 4096)] {
        let w = all_to_all(p, bytes);
        for d in DESIGNS {
            let r = run(&w, d);
            let barrier = p as u64 * (usize::BITS - (p - 1).leading_zeros()) as u64;
            assert_eq!(
                r.messages_verified,
                (p * p) as u64 + barrier,
                "{} {d}",
                w.name
            );
        }
    }
}

#[test]
#[ignore]
fn print_pingpong_numbers() {
    let w = pingpong(16384, 10);
    for d in DESIGNS {
        let r = run(&w, d);
        let g = |n: &str| r.stats.get(n).map(|s| s.value.as_f64()).unwrap_or(-1.0);
        println!(
            "{d:10} cycles {:8} l1miss {:8} l2other {:8} l2mem {:8} events {:8} host {:.3}s",
            r.cycles,
            g("system.total.l1d.misses"),
            g("system.total.l2.misses_other_cache"),
            g("system.total.l2.misses_memory"),
            r.events,
            r.host_seconds
        );
    }
}

#[test]
fn the_any_source_goal_schedule_delivers_every_message_in_every_design() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/any_source.goal");
    let w = moped::workload::goal::load_goal(&path).unwrap_or_else(|e| panic!("{e}"));
    let sends = w
        .ranks
        .iter()
        .flat_map(|r| &r.calls)
        .filter(|c| matches!(c, Call::Isend { .. }))
        .count() as u64;
    assert!(w
        .ranks
        .iter()
        .flat_map(|r| &r.calls)
        .any(|c| matches!(c, Call::Irecv { src: Peer::Any, .. })));
    for d in DESIGNS {
        let r = run(&w, d);
        assert_eq!(r.messages_verified, sends, "{d}");
    }
}

/// Issue 24: traces of real runs use tags of 2^20 and more, up to MPICH's MPI_TAG_UB.
#[test]
fn tags_up_to_mpi_tag_ub_and_any_tag_deliver_every_message_in_every_design() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/goal/wide_tags.goal");
    let w = moped::workload::goal::load_goal(&path).unwrap_or_else(|e| panic!("{e}"));
    let calls = || w.ranks.iter().flat_map(|r| &r.calls);
    let sends = calls().filter(|c| matches!(c, Call::Isend { .. })).count() as u64;
    assert!(calls().any(|c| matches!(
        c,
        Call::Isend {
            tag: 0x7FFF_FFFF,
            ..
        }
    )));
    assert!(calls().any(|c| matches!(c, Call::Irecv { tag: Tag::Any, .. })));
    assert!(
        w.notes
            .iter()
            .any(|n| n.starts_with("tags renumbered densely")),
        "{:?}",
        w.notes
    );
    for d in DESIGNS {
        let r = run(&w, d);
        assert_eq!(r.messages_verified, sends, "{d}");
    }
}

#[test]
fn a_truncated_message_names_the_programs_own_wide_tag() {
    // Refused before the run by the logical check, which sees the program's own tags.
    let text = "num_ranks 2\nrank 0 {\nsend 64b to 1 tag 2147483647\nsend 8b to 1 tag 5\n}\n\
                rank 1 {\nrecv 8b from 0 tag 5\nrecv 32b from 0 tag 2147483647\n}\n";
    let w = moped::workload::goal::parse_goal(text, "t.goal").unwrap();
    let e = run_workload(
        &cfg(2),
        &w,
        "baseline".parse().unwrap(),
        1,
        MpiParams::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "message from rank 0 (call 0 at t.goal:3:1, tag 2147483647) has 64 bytes (truncation)"
        ),
        "{e}"
    );
}

#[test]
fn kept_page_table_lines_spare_walks_of_reused_buffers() {
    let w = pingpong(16_384, 4);
    let walks = |lines: usize| {
        let mut c = cfg(2);
        c.moped.walk_cache_lines = lines;
        let r = run_workload(
            &c,
            &w,
            moped::design::Design::OptCopy,
            1,
            MpiParams::default(),
        )
        .unwrap();
        assert_eq!(r.messages_verified, 8 + 2);
        r.stats
            .get("system.moped.walk_line_reads")
            .unwrap()
            .value
            .as_f64()
    };
    let (cold, kept) = (walks(0), walks(32));
    // Without the cache every transfer walks both buffers' tables from memory.
    assert!(
        kept < cold / 2.0,
        "walk line reads: {kept} kept vs {cold} cold"
    );
}

/// Issue 25: the cores' own page walks leave the tables of the buffers they sweep on chip,
/// so MOPED's walks find them there without keeping lines across transfers; with free
/// translation every transfer's walks read memory.
#[test]
fn core_page_walks_leave_the_tables_on_chip_for_moped() {
    let w = pingpong(16_384, 4);
    let run = |walks: bool| {
        let mut c = cfg(2);
        c.system.page_walks = walks;
        c.moped.walk_cache_lines = 0;
        let r = run_workload(&c, &w, Design::OptCopy, 1, MpiParams::default()).unwrap();
        assert_eq!(r.messages_verified, 8 + 2);
        r
    };
    let (free, walked) = (run(false), run(true));
    assert_eq!(stat(&free, "system.total.dtlb.walk_loads"), 0);
    // x86_32: a walk loads the directory entry, then the table entry.
    let misses = stat(&walked, "system.total.dtlb.misses");
    assert!(misses > 0);
    assert_eq!(stat(&walked, "system.total.dtlb.walk_loads"), 2 * misses);
    let pt_reads = stat(&walked, "system.moped.walk_line_reads");
    assert_eq!(pt_reads, stat(&free, "system.moped.walk_line_reads"));
    let memory = |r: &MpiRun| stat(r, "system.total.l2.moped_misses_memory");
    let on_chip = |r: &MpiRun| {
        stat(r, "system.total.l2.moped_local") + stat(r, "system.total.l2.moped_misses_other_cache")
    };
    // The page-table lines MOPED reads are on chip where the cores' walks left them (in
    // the first round no core has swept its buffers yet, and a line the caches evicted
    // comes from memory again); the rest of MOPED's reads are unchanged.
    let moved = memory(&free) - memory(&walked);
    assert!(
        moved >= pt_reads / 4,
        "page-table reads from memory: {moved} fewer of {pt_reads}"
    );
    assert_eq!(on_chip(&walked) - on_chip(&free), moved);
    // Reads from memory are told apart as walks' or the copy's: with free translation
    // every walk read comes from memory, and the cores' walks take only walk reads away.
    let walk_memory = |r: &MpiRun| stat(r, "system.total.l2.moped_walk_misses_memory");
    assert_eq!(walk_memory(&free), pt_reads);
    assert_eq!(walk_memory(&free) - walk_memory(&walked), moved);
    // Among those left are lines the cores' walks hold shared: MOESI reads them from
    // memory (the rest were not on chip yet, or were evicted).
    let shared = stat(&walked, "system.total.dir.memory_reads_shared");
    assert!(
        walk_memory(&walked) > 0 && shared > 0,
        "walk reads from memory {}, reads of shared lines from memory {shared}",
        walk_memory(&walked)
    );
}

/// Buffers where malloc puts them (16-byte aligned, packed): messages start and end inside
/// lines, so copies re-align and OPTCACHE fills lines in part; every one still arrives.
#[test]
fn malloc_aligned_buffers_deliver_in_every_design() {
    let mut c = cfg(2);
    c.workload.buffer_align = 16;
    for bytes in [1, 100, 4_000, 16_384] {
        let w = pingpong(bytes, 2);
        let layout = Layout::new(&w, c.mpi.queue_stride, 16);
        assert_ne!(layout.buf_va[0][0] % LINE_BYTES as u64, 0);
        for d in DESIGNS {
            let r = run_workload(&c, &w, d.parse().unwrap(), 1, MpiParams::default())
                .unwrap_or_else(|e| panic!("{bytes} bytes under {d}: {e}"));
            assert_eq!(r.messages_verified, 4 + 2, "{bytes} bytes under {d}");
        }
    }
}

/// A TLB miss walks one load per level of the page-table format; a hit walks nothing.
#[test]
fn a_tlb_miss_loads_one_entry_per_level() {
    let w = pingpong(16_384, 2);
    for (format, levels) in [("x86_32", 2), ("x86_64", 4)] {
        let c = with(&["system.cores=2", &format!("os.page_table={format}")]);
        let r = run_workload(&c, &w, Design::Baseline, 1, MpiParams::default()).unwrap();
        let misses = stat(&r, "system.total.dtlb.misses");
        assert!(misses > 0 && stat(&r, "system.cpu0.dtlb.hits") > 100 * misses);
        assert_eq!(stat(&r, "system.total.dtlb.walk_loads"), levels * misses);
        assert!(stat(&r, "system.total.dtlb.walk_cycles") >= levels * misses);
    }
}

#[test]
fn a_program_that_backs_off_finishes_through_shared_memory_and_returns_after_a_barrier() {
    // Tables of 4 descriptors cannot hold 8 ranks' 8 receives and 8 sends each: MOPED
    // refuses reservations, revokes unmatched descriptors, and the runtime completes
    // those messages through the shared-memory channel until the barrier. A ring exchange
    // after it fits the tables and goes through MOPED again.
    let p = 8;
    let mut w = all_to_all(p, 4096);
    for (r, prog) in w.ranks.iter_mut().enumerate() {
        prog.calls.push(send(500, ((r + 1) % p) as u16, 9, 0, 4096));
        prog.calls.push(recv(
            501,
            Peer::Rank(((r + p - 1) % p) as u16),
            Tag::Tag(9),
            1,
            4096,
        ));
        prog.calls.push(Call::Waitall(vec![500, 501]));
    }
    for d in ["basemoped", "optcopy", "optcache"] {
        let mut c = cfg(p);
        c.moped.descriptor_entries = 4;
        let r = run_workload(&c, &w, d.parse().unwrap(), 1, MpiParams::default())
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        let g = |n: &str| r.stats.get(n).unwrap().value.as_f64();
        assert_eq!(r.messages_verified, 64 + 8 * 3 + 8, "{d}");
        assert!(g("mpi.backoff_refused") > 0.0, "{d}: no refusal");
        assert!(
            g("mpi.shm_eager") > 0.0,
            "{d}: nothing went through shared memory"
        );
        // At least the ring's sends, after the barrier.
        assert!(
            g("mpi.moped_sends") >= 8.0,
            "{d}: MOPED not used after the barrier"
        );
    }
}

/// The value of statistic `name` of a run.
/// Every statistic but host time, each distribution whole.
fn fingerprint(r: &MpiRun) -> Vec<(String, String, Option<moped::stats::Distribution>)> {
    r.stats
        .stats()
        .iter()
        .filter(|s| !s.name.starts_with("host."))
        .map(|s| {
            let dist = r.stats.distribution(&s.name).cloned();
            (s.name.clone(), format!("{:?}", s.value), dist)
        })
        .collect()
}

#[test]
fn search_depths_are_counted_per_rank_and_per_moped_and_repeat_with_the_seed() {
    let w = all_to_all(4, 512);
    for d in ["baseline", "basemoped"] {
        let (a, b) = (run(&w, d), run(&w, d));
        assert_eq!(fingerprint(&a), fingerprint(&b), "{d}");
        let dist = |n: &str| a.stats.distribution(n).unwrap_or_else(|| panic!("no {n}"));
        for q in ["prq_depth", "umq_depth"] {
            // The ranks' distributions add up to the total.
            let per_rank: u64 = (0..4)
                .map(|r| dist(&format!("mpi.rank{r}.{q}")).samples())
                .sum();
            assert_eq!(per_rank, dist(&format!("mpi.{q}")).samples(), "{d} {q}");
        }
        let searches = |side: &str| {
            dist(&format!("{side}.prq_depth")).samples()
                + dist(&format!("{side}.umq_depth")).samples()
        };
        if d == "baseline" {
            // Every delivered message searched the posted list or was found by a receive's
            // search of the unexpected list.
            assert!(searches("mpi") >= a.messages_verified, "{d}");
            assert!(
                dist("mpi.umq_depth").max_value() >= Some(1),
                "unexpected messages were found"
            );
        } else {
            // Each copy at its matching MOPED is checked once: a send and its receive.
            assert_eq!(
                searches("system.moped"),
                2 * stat(&a, "mpi.moped_sends"),
                "{d}"
            );
        }
    }
}

fn stat(r: &MpiRun, name: &str) -> u64 {
    match r
        .stats
        .get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .value
    {
        moped::stats::StatValue::Int(v) => v,
        moped::stats::StatValue::Float(f) => f as u64,
    }
}

#[test]
fn statistics_restarted_at_the_very_end_count_almost_nothing() {
    // Every counter the timed region subtracts: one left out would keep its whole-run
    // value here, thousands of accesses and messages.
    // After a barrier, so that the rank that reaches its mark first leaves no copy to
    // the other.
    let mut w = pingpong(16_384, 4);
    for r in &mut w.ranks {
        r.calls.extend([Call::Barrier, Call::ResetStats]);
    }
    for design in ["baseline", "optcopy"] {
        let run = run_workload(
            &cfg(2),
            &w,
            design.parse().unwrap(),
            1,
            MpiParams::default(),
        )
        .unwrap();
        assert!(stat(&run, "sim.timed_from") > 0);
        assert_eq!(stat(&run, "mpi.ranks"), 2, "a level keeps its value");
        let mut big = Vec::new();
        for s in run.stats.stats() {
            // A distribution's value is its sample count, which the region subtracts too.
            let counted = matches!(
                s.accrual,
                moped::stats::Accrual::Counter | moped::stats::Accrual::Distribution(_)
            ) && !s.name.starts_with("host.");
            if let (true, moped::stats::StatValue::Int(v)) = (counted, &s.value) {
                if *v > 200 {
                    big.push(format!("{} = {v}", s.name));
                }
            }
        }
        assert!(big.is_empty(), "{design}: after the last call: {big:?}");
    }
}

#[test]
fn imb_runs_its_warm_up_before_the_timed_region() {
    use moped::workload::imb::{build, ImbBenchmark};
    let run = |warmup: bool, iterations: u32| {
        let mut c = SystemConfig::default();
        c.workload.warmup = warmup;
        let w = build(ImbBenchmark::PingPong, 16, 16_384, iterations, warmup).unwrap();
        run_workload(&c, &w, "baseline".parse().unwrap(), 1, MpiParams::default()).unwrap()
    };
    let (cold10, cold20) = (run(false, 10), run(false, 20));
    let (warm10, warm20) = (run(true, 10), run(true, 20));
    let global = "system.total.l2.misses_memory";
    // Cold, every global L2 miss is a compulsory one: 10 and 20 iterations miss alike.
    assert_eq!(stat(&cold10, global), stat(&cold20, global));
    assert_eq!(stat(&cold10, "sim.timed_from"), 0);
    // Warm, the timed region starts after the warm-up and misses far less.
    assert!(stat(&warm10, "sim.timed_from") > 0);
    assert!(stat(&warm10, global) * 2 < stat(&cold10, global));
    assert!(stat(&warm10, "system.total.l1d.misses") < stat(&cold10, "system.total.l1d.misses"));
    // Nor are the timed region's misses cold ones: ten more iterations add almost none (the
    // messages stay on chip). What 10 iterations do miss is one pass of the rendezvous data
    // over queue slots that held only RTS and CTS packets in the warm-up: the barriers before
    // the timer shift the ring's phase, and the ring wraps after 4 iterations.
    let (g10, g20) = (stat(&warm10, global), stat(&warm20, global));
    assert!(g20 >= g10 && g20 - g10 < 64, "{g20} vs {g10}");
    // The region's cycles grow with its iterations, as the timer's would.
    let (c10, c20) = (stat(&warm10, "sim.cycles"), stat(&warm20, "sim.cycles"));
    assert!(c20 > c10 * 3 / 2, "{c20} vs {c10}");
    assert_eq!(warm10.cycles, c10);
}

/// Per rank, the physical lines its progress engine polls while its queues are idle: of
/// each incoming queue the line of `head_index` and that of slot 0's `avail`, under `c`
/// and the run's `seed`.
fn polled_lines(c: &SystemConfig, seed: u64) -> Vec<Vec<Vec<u64>>> {
    let p = c.system.cores;
    let w = all_to_all(p, 64);
    let mut os = Os::new(c.memory.size_bytes, c.os.frame_order, seed, c.os.page_table);
    let mut mem = FlatMem::new();
    let driver = prepare(c, &w, false, seed, MpiParams::default(), &mut os, &mut mem).unwrap();
    let layout = Layout::new(&w, c.mpi.queue_stride, c.workload.buffer_align);
    let mut per_rank = Vec::new();
    for (me, &proc) in driver.procs().iter().enumerate() {
        let mut queues = Vec::new();
        for src in (0..p).filter(|&s| s != me) {
            let q = layout.queue(src as u16, me as u16);
            let mut lines = Vec::new();
            for va in [q + shm::HEAD, q + shm::slot(0)] {
                lines.push(line_of(os.translate(&mut mem, proc, va).unwrap()));
            }
            lines.dedup();
            queues.push(lines);
        }
        per_rank.push(queues);
    }
    per_rank
}

/// The L1 sets `lines` fall into.
fn l1_sets_of(c: &SystemConfig, lines: &[u64]) -> usize {
    let sets = c.l1_sets() as u64;
    let mut s: Vec<u64> = lines
        .iter()
        .map(|&l| (l / LINE_BYTES as u64) % sets)
        .collect();
    s.sort_unstable();
    s.dedup();
    s.len()
}

/// The default system with `key=value` overrides.
fn with(overrides: &[&str]) -> SystemConfig {
    let mut c = SystemConfig::default();
    for kv in overrides {
        let (k, v) = kv.split_once('=').unwrap();
        c.set(k, v).unwrap();
    }
    c.validate().unwrap();
    c
}

/// Issue 25: MPICH2 1.2 lays its queues back to back, so the lines each rank polls fall
/// into as many L1 sets; rounded up to whole pages every queue header sat at a page's
/// start, in 2 of the L1's 128 sets.
#[test]
fn the_polled_queue_lines_take_one_l1_set_each() {
    let c = SystemConfig::default();
    for seed in [1, 2] {
        for (r, queues) in polled_lines(&c, seed).iter().enumerate() {
            let lines: Vec<u64> = queues.concat();
            assert!(lines.len() >= 15, "rank {r}: {} lines", lines.len());
            assert_eq!(l1_sets_of(&c, &lines), lines.len(), "rank {r}, seed {seed}");
        }
    }
    let paged = with(&["mpi.queue_stride=page"]);
    for queues in polled_lines(&paged, 1) {
        let lines: Vec<u64> = queues.concat();
        assert_eq!(
            lines.len(),
            15,
            "a header and its slot 0's avail share a line"
        );
        assert!(l1_sets_of(&paged, &lines) <= 2);
    }
}

/// Core 0's L1 misses in 100 passes over the lines holding rank 0's 15 incoming queues'
/// `head_index` (the other cores idle).
fn header_pass_misses(c: &SystemConfig) -> u64 {
    let pass: Vec<String> = polled_lines(c, 1)[0]
        .iter()
        .map(|q| format!("load {:#x} 4", q[0]))
        .collect();
    let ops = vec![pass.join("\n"); 100].join("\n");
    let text = format!("[[core]]\ncores = [0]\nops = '''\n{ops}\n'''\n");
    let program = Program::from_toml_str(&text, "headers.toml", c.system.cores).unwrap();
    let r = run_program(c, &program, Design::Baseline, 1).unwrap();
    r.stats
        .get("system.cpu0.l1d.misses")
        .unwrap()
        .value
        .as_f64() as u64
}

/// Issue 25's measurement on the simulator's caches: with page-rounded queues in frames
/// handed out in address order every one of the 1,500 loads misses the L1; at MPICH's
/// stride only the first pass does.
#[test]
fn polling_the_queue_headers_misses_the_l1_only_on_the_first_pass() {
    let old = with(&["mpi.queue_stride=page", "os.frame_order=address"]);
    assert_eq!(header_pass_misses(&old), 1_500);
    assert_eq!(header_pass_misses(&SystemConfig::default()), 15);
    // The stride alone spreads the headers, whatever the frames' order.
    assert_eq!(header_pass_misses(&with(&["os.frame_order=address"])), 15);
}

/// A memory channel per directory bank (`memory.channel_cycles`): accesses queue behind
/// each other, the waits are counted, and the run takes longer; with no limit nothing waits.
#[test]
fn a_busy_memory_channel_makes_accesses_wait() {
    let w = pingpong(16_384, 2);
    let run = |channel: u64| {
        let mut c = cfg(2);
        c.workload.warmup = false;
        c.memory.channel_cycles = channel;
        let r = run_workload(&c, &w, Design::Baseline, 1, MpiParams::default()).unwrap();
        assert_eq!(r.messages_verified, 4 + 2);
        r
    };
    let (free, busy) = (run(0), run(200));
    assert_eq!(stat(&free, "system.total.dir.memory_queue_cycles"), 0);
    assert!(stat(&free, "system.total.dir.memory_reads") > 100);
    assert!(stat(&busy, "system.total.dir.memory_queue_cycles") > 0);
    assert!(
        busy.cycles > free.cycles,
        "{} cycles with a busy channel, {} without",
        busy.cycles,
        free.cycles
    );
}

/// The queue benchmarks deliver every message in every design, and under the baseline
/// (MPICH's lists) the timed region reads exactly the queue entries each one puts ahead
/// of its matches: per ping `depth`, per pong and per drained message one (preposted);
/// `depth`, then `depth - 1`, ... (unload); `position`, then one per drained message
/// (unexpected).
#[test]
fn queue_benchmarks_search_the_entries_they_put_in_the_queue() {
    use moped::workload::queue::{build, QueueBenchmark, QueueParams};
    use QueueBenchmark::{Preposted, Unexpected, Unload};
    for (bench, d, position) in [
        (Preposted, 10, 10),
        (Preposted, 40, 40),
        (Unload, 10, 10),
        (Unload, 40, 40),
        (Unexpected, 10, 10),
        (Unexpected, 40, 3),
    ] {
        let mut p = QueueParams::new(bench, d);
        p.position = position;
        let w = build(&p, true).unwrap();
        let (k, d, position) = (p.iterations as u64, d as u64, position as u64);
        // Messages: the set-up (preposted: the ready and a flushing round trip; unload: a
        // flushing message and the go) and the measured ones. Entries searched in the timed
        // region: the drains after the timer stops are left out.
        let (messages, searched) = match bench {
            Preposted => (3 + 2 * k + d - 1, k * d + k),
            Unload => (2 + d, d * (d + 1) / 2),
            Unexpected => (d + 1, position),
        };
        for design in DESIGNS {
            let r = run(&w, design);
            assert_eq!(r.messages_verified, messages, "{} {design}", w.name);
            if design == "baseline" {
                let s = stat(&r, "mpi.list_entries_searched");
                assert_eq!(s, searched, "{}", w.name);
            }
        }
    }
}
