//! What real MPI runs and long inputs need: the MPI watchdog leaves ranks at work alone,
//! warm-ups stay bounded at every message size, and reading a long program or schedule
//! is linear in its length.

use moped::api::run::run_program;
use moped::config::SystemConfig;
use moped::core::Program;
use moped::design::Design;
use moped::mpi::{run_workload, MpiParams, MpiRun};
use moped::textparse::bytes_indexed;
use moped::workload::goal::parse_goal;
use moped::workload::imb::{self, ImbBenchmark};
use moped::workload::{Call, RankProgram, Workload};

const DESIGNS: [Design; 4] = [
    Design::Baseline,
    Design::BaseMoped,
    Design::OptCopy,
    Design::OptCache,
];

fn run(cfg: &SystemConfig, w: &Workload, design: Design) -> Result<MpiRun, String> {
    run_workload(cfg, w, design, 1, MpiParams::default()).map_err(|e| e.to_string())
}

/// Each of `ranks` ranks sends to the next one around a ring, then computes `calc`.
fn ring_then_compute(ranks: usize, calc: u64) -> String {
    let mut s = format!("num_ranks {ranks}\n");
    for r in 0..ranks {
        s += &format!("rank {r} {{\n");
        if ranks > 1 {
            let (next, prev) = ((r + 1) % ranks, (r + ranks - 1) % ranks);
            s += &format!("  s: send 4096b to {next} tag 3\n  r: recv 4096b from {prev} tag 3\n");
            s += &format!("  c: calc {calc}\n  c requires r\n  c requires s\n}}\n");
        } else {
            s += &format!("  c: calc {calc}\n}}\n");
        }
    }
    s
}

#[test]
fn a_compute_longer_than_the_watchdog_after_the_last_message_runs_to_completion() {
    let cfg = SystemConfig::default();
    assert!(cfg.watchdog.mpi_cycles < 20_000_000);
    for ranks in [16, 1] {
        let w = parse_goal(&ring_then_compute(ranks, 20_000_000), "ring.goal").unwrap();
        for d in DESIGNS {
            let r = run(&cfg, &w, d).unwrap_or_else(|e| panic!("{ranks} ranks, {d}: {e}"));
            assert!(r.cycles >= 20_000_000, "{ranks} ranks, {d}: {}", r.cycles);
            let sends = if ranks > 1 { ranks as u64 } else { 0 };
            assert_eq!(r.messages_verified, sends, "{ranks} ranks, {d}");
        }
    }
}

#[test]
fn a_compute_between_messages_longer_than_the_watchdog_is_no_deadlock() {
    let text = "num_ranks 2\nrank 0 {\n  c: calc 30000000\n  s: send 64b to 1 tag 1\n  \
                s requires c\n}\nrank 1 {\n  r: recv 64b from 0 tag 1\n}\n";
    let w = parse_goal(text, "late.goal").unwrap();
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    for d in DESIGNS {
        let r = run(&cfg, &w, d).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(r.messages_verified, 1, "{d}");
    }
}

#[test]
fn a_real_deadlock_names_what_each_rank_waits_for() {
    // Rank 0 waits for a message nobody sends; rank 1 waits at a barrier rank 0 never
    // reaches: one waits on a request, the other on no request of its own. (The receive
    // takes any source, so no check before the run can rule on it: the watchdog does.)
    let mut ranks = vec![RankProgram::default(), RankProgram::default()];
    let rb = ranks[0].buffer("recv", 64);
    ranks[0].calls.push(Call::Irecv {
        req: 0,
        src: moped::envelope::Peer::Any,
        tag: moped::envelope::Tag::Tag(9),
        ctx: moped::workload::CTX_PT2PT,
        buf: moped::workload::BufRef::new(rb, 0),
        bytes: 64,
    });
    ranks[0].calls.push(Call::Wait(0));
    ranks[0].calls.push(Call::Barrier);
    ranks[1].buffer("recv", 64);
    ranks[1].calls.push(Call::Compute(1_000));
    ranks[1].calls.push(Call::Barrier);
    let w = Workload {
        name: "deadlock".into(),
        ranks,
        notes: vec![],
        origins: None,
    };
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    cfg.watchdog.mpi_cycles = 200_000;
    for d in DESIGNS {
        let e = run(&cfg, &w, d).expect_err("a deadlock");
        assert!(
            e.contains("rank 0: call 1 (MPI_Wait), waiting for:\n    request 0: "),
            "{d}: {e}"
        );
        assert!(
            e.contains("rank 1: call 1 (MPI_Barrier), waiting for:\n    the barrier's message"),
            "{d}: {e}"
        );
    }
}

#[test]
fn a_send_never_received_is_named_with_its_rank_call_and_place() {
    // The receive takes any source, so the run is made and ends with a send left over.
    let text = "num_ranks 2\nrank 0 {\n  a: send 64b to 1 tag 1\n  b: send 64b to 1 tag 2\n  \
                b requires a\n}\nrank 1 {\n  r: recv 64b from -1 tag -1\n}\n";
    let w = parse_goal(text, "left.goal").unwrap();
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    for d in DESIGNS {
        let e = run(&cfg, &w, d).expect_err("a send left over");
        if d == Design::Baseline {
            // Eager: the send completes, and the run ends with its bytes never taken.
            let named = "1 messages were sent but never received:\n  rank 0: call 2 at \
                         left.goal:4:3: send to rank 1 tag 2, context 0, 64 bytes";
            assert!(e.contains(named), "{d}: {e}");
        } else {
            // A MOPED send completes only once matched: the watchdog names it.
            let named = "send to rank 1 tag 2, 64 bytes (MOPED descriptor";
            assert!(
                e.contains(named) && e.contains("call 2 at left.goal:4:3"),
                "{d}: {e}"
            );
        }
    }
}

#[test]
fn warm_ups_of_tiny_messages_take_no_more_events_than_slot_sized_ones() {
    assert_eq!(imb::warmup_iterations(0), imb::warmup_iterations(16 * 1024));
    assert_eq!(imb::warmup_iterations(1), 17);
    assert_eq!(imb::warmup_iterations(1 << 20), 2);
    let cfg = SystemConfig::default();
    // Alltoall on 4 ranks: at 16 ranks its 16 kB run alone is 146 M events.
    for (bench, ranks) in [
        (ImbBenchmark::PingPong, 16),
        (ImbBenchmark::Bcast, 16),
        (ImbBenchmark::Alltoall, 4),
    ] {
        let events = |bytes: u64| {
            let w = imb::build(bench, ranks, bytes, 2, true).unwrap();
            let r = run(&cfg, &w, Design::Baseline).unwrap_or_else(|e| panic!("{e}"));
            assert!(r.messages_verified > 0);
            r.events
        };
        let slot = events(16 * 1024);
        for bytes in [0, 1] {
            let tiny = events(bytes);
            eprintln!("{bench:?}: {bytes} B {tiny} events, 16 kB {slot}");
            assert!(
                tiny <= 2 * slot,
                "{bench:?} {bytes} B: {tiny} events, 16 kB {slot}"
            );
        }
    }
}

/// A program file of `lines` ops for core 0 (stores and loads of its own lines).
fn long_program(lines: usize) -> String {
    let mut s = String::from("[[core]]\ncores = [0]\nops = '''\n");
    for i in 0..lines {
        // Op 2k stores k's value in slot k % 512; op 2k + 1 loads it back.
        let k = i as u64 / 2;
        let at = 0x10_0000 + (k % 512) * 8;
        if i % 2 == 0 {
            s += &format!("store {at:#x} 8 {k:#x}\n");
        } else {
            s += &format!("load {at:#x} 8 expect={k:#x}\n");
        }
    }
    s + "'''\n"
}

#[test]
fn a_200000_line_program_is_read_in_one_pass_and_runs() {
    let text = long_program(200_000);
    let before = bytes_indexed();
    let prog = Program::from_toml_str(&text, "long.toml", 2).unwrap();
    let indexed = bytes_indexed() - before;
    assert!(
        indexed <= 2 * text.len() as u64,
        "{indexed} bytes scanned for positions in a {}-byte file",
        text.len()
    );
    assert_eq!(prog.cores[0].len(), 200_000);
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    cfg.directory.banks = 2;
    let r = run_program(&cfg, &prog, Design::Baseline, 1).unwrap_or_else(|e| panic!("{e}"));
    let events = r.stats.get("sim.events").unwrap().value.as_f64();
    // Each op is a handful of events; what must not happen is a cost per op that grows
    // with the program.
    assert!(
        events <= 10.0 * 200_000.0,
        "{events} events for 200,000 ops"
    );
}

#[test]
fn a_200000_line_schedule_is_read_in_one_pass_and_runs() {
    let k = 50_000;
    let mut s = String::from("num_ranks 2\nrank 0 {\n");
    for i in 0..k {
        s += &format!("  s{i}: send 64b to 1 tag 1\n");
        if i > 0 {
            s += &format!("  s{i} requires s{}\n", i - 1);
        }
    }
    s += "}\nrank 1 {\n";
    for i in 0..k {
        s += &format!("  r{i}: recv 64b from 0 tag 1\n");
        if i > 0 {
            s += &format!("  r{i} requires r{}\n", i - 1);
        }
    }
    s += "}\n";
    assert!(s.lines().count() >= 199_990);
    let before = bytes_indexed();
    let w = parse_goal(&s, "long.goal").unwrap();
    let indexed = bytes_indexed() - before;
    assert!(indexed <= 2 * s.len() as u64, "{indexed} of {}", s.len());
    let mut cfg = SystemConfig::default();
    cfg.system.cores = 2;
    let r = run(&cfg, &w, Design::Baseline).unwrap();
    assert_eq!(r.messages_verified, k as u64);
    assert!(
        r.events <= 400 * k as u64,
        "{} events for {k} messages",
        r.events
    );
}
