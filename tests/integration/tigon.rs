//! The multi-CPU NIC paper's testbed (`moped::tigon`): Table 1's costs as the model pays
//! them, every message checked at its receiver, the schemes' processors and semaphore, and
//! the limits a Gigabit Ethernet wire sets.

use moped::config::{EmpStep, TigonSection, TICKS_PER_US};
use moped::moped::engines::{Scheme, TABLE_1};
use moped::tigon::{run, Bench, Measurement, Setup};

const ITERATIONS: u64 = 40;

fn go(cfg: &TigonSection, scheme: Scheme, cpus: usize, bench: Bench, bytes: u64) -> Measurement {
    run(cfg, Setup { scheme, cpus }, bench, bytes, ITERATIONS)
        .unwrap_or_else(|e| panic!("{scheme} x{cpus} {} {bytes} B: {e}", bench.name()))
}

fn us(ticks: u64) -> f64 {
    ticks as f64 / TICKS_PER_US as f64
}

/// Sizes around a frame's payload and the ack group, and the paper's.
fn sizes(cfg: &TigonSection) -> Vec<u64> {
    let p = cfg.frame_payload();
    vec![0, 10, p, p + 1, 4 * p + 7, 14 * 1024]
}

#[test]
fn each_step_s_processor_part_and_the_model_s_hardware_make_table_1() {
    let cfg = TigonSection::default();
    let (dr, dr_data) = cfg.dma_ticks(64, true);
    let (dw, dw_data) = cfg.dma_ticks(64, false);
    let cpu = |s| us(cfg.step_ticks(s));
    let pairs = [
        (cpu(EmpStep::SendBookkeeping), TABLE_1.send_bookkeeping),
        (
            cpu(EmpStep::Transmission) + us(dr + dr_data + cfg.wire_ticks(64)),
            TABLE_1.transmission,
        ),
        (
            cpu(EmpStep::AckArrival) + cpu(EmpStep::AckUpdate),
            TABLE_1.receive_ack,
        ),
        (
            cpu(EmpStep::PostReceive) + cpu(EmpStep::Classify),
            TABLE_1.recv_bookkeeping,
        ),
        (cpu(EmpStep::ReceiveFrame), TABLE_1.receive_frame),
        (
            cpu(EmpStep::Receiving) + us(dw + dw_data),
            TABLE_1.receiving,
        ),
        (cpu(EmpStep::SendAck), TABLE_1.send_ack),
    ];
    for (i, step) in EmpStep::ALL.into_iter().enumerate() {
        assert_eq!(step as usize, i, "EmpStep::ALL is in declaration order");
    }
    for (i, (ours, table)) in pairs.iter().enumerate() {
        assert!(
            (ours - table).abs() < 2e-4,
            "step {i}: {ours} us vs Table 1's {table}"
        );
    }
    // Half the clock doubles the processor's part, never the hardware's.
    let slow = TigonSection {
        cpu_mhz: 44.0,
        ..TigonSection::default()
    };
    for s in [
        EmpStep::SendBookkeeping,
        EmpStep::Transmission,
        EmpStep::Receiving,
    ] {
        let (a, b) = (cfg.step_ticks(s), slow.step_ticks(s));
        assert!(b.abs_diff(2 * a) <= 1, "{s:?}: {a} then {b}");
    }
}

#[test]
fn every_message_arrives_whole_under_every_scheme_and_runs_repeat_exactly() {
    let cfg = TigonSection::default();
    for scheme in Scheme::ALL {
        for cpus in [1, 2] {
            for bench in Bench::ALL {
                for bytes in sizes(&cfg) {
                    let m = go(&cfg, scheme, cpus, bench, bytes);
                    let label = format!("{scheme} x{cpus} {} {bytes} B", bench.name());
                    let want = match bench {
                        Bench::Latency => 2 * ITERATIONS,
                        Bench::Unidirectional => ITERATIONS + 1,
                        Bench::Bidirectional => ITERATIONS,
                    };
                    assert!(m.messages_verified >= want, "{label}: {m:?}");
                    assert!(m.ticks > 0, "{label}");
                    let frames: u64 = m.nics.iter().map(|n| n.data_frames).sum();
                    let ways = if bench == Bench::Unidirectional { 1 } else { 2 };
                    let least = ways * ITERATIONS * cfg.frames(bytes);
                    assert!(frames >= least, "{label}: {frames} frames");
                    assert_eq!(m, go(&cfg, scheme, cpus, bench, bytes), "{label} again");
                }
            }
        }
    }
}

#[test]
fn no_scheme_carries_more_than_the_wire_can() {
    let cfg = TigonSection::default();
    let limit = cfg.wire_limit_mbit();
    for scheme in Scheme::ALL {
        for bench in [Bench::Unidirectional, Bench::Bidirectional] {
            let m = go(&cfg, scheme, 2, bench, 64 * 1024);
            let ways = if bench == Bench::Bidirectional {
                2.0
            } else {
                1.0
            };
            let bw = m.bandwidth_mbit();
            assert!(
                bw <= ways * limit * 1.0001,
                "{scheme} {}: {bw}",
                bench.name()
            );
            assert!(m.wire_share() <= 1.0, "{scheme}: wire {}", m.wire_share());
        }
    }
}

#[test]
fn one_processor_under_every_scheme_and_the_base_case_on_two_are_the_base_case() {
    let cfg = TigonSection::default();
    for bench in Bench::ALL {
        for bytes in [10, 5000] {
            let base = go(&cfg, Scheme::Base, 1, bench, bytes);
            for scheme in Scheme::ALL {
                let m = go(&cfg, scheme, 1, bench, bytes);
                assert_eq!(
                    (m.ticks, &m.nics, m.messages_verified),
                    (base.ticks, &base.nics, base.messages_verified),
                    "{scheme} on one processor, {} {bytes} B",
                    bench.name()
                );
            }
            // The base case gives the second processor nothing: no hand-off, no semaphore.
            let two = go(&cfg, Scheme::Base, 2, bench, bytes);
            assert_eq!(two.ticks, base.ticks, "base x2 {} {bytes} B", bench.name());
            assert_eq!(two.handoffs() + two.semaphore_wait_ticks(), 0);
            assert!(two.nics.iter().all(|n| n.cpus[1].busy == 0));
        }
    }
}

#[test]
fn the_second_processor_takes_its_scheme_s_steps_and_they_meet_at_the_semaphore() {
    let cfg = TigonSection::default();
    let base = go(&cfg, Scheme::Base, 1, Bench::Unidirectional, 64 * 1024);
    for scheme in [Scheme::So, Scheme::Ro, Scheme::Dsr, Scheme::Sr] {
        let m = go(&cfg, scheme, 2, Bench::Bidirectional, 64 * 1024);
        assert!(m.handoffs() > 0, "{scheme}: no hand-off");
        assert!(m.busy_share(0, 1) > 0.05, "{scheme}: processor B idle");
        // Both processors of a NIC update the DMA and MAC queues under the one semaphore:
        // with both directions busy, one sometimes waits for the other.
        assert!(m.semaphore_wait_ticks() > 0, "{scheme}: no semaphore wait");
    }
    // Receive-path parallelism lifts the processor-bound base case to the wire.
    let ro = go(&cfg, Scheme::Ro, 2, Bench::Unidirectional, 64 * 1024);
    assert!(
        base.busy_share(1, 0) > 0.95,
        "base: {}",
        base.busy_share(1, 0)
    );
    assert!(ro.bandwidth_mbit() > 1.05 * base.bandwidth_mbit());
    assert!(ro.wire_share() > 0.95, "RO: wire {}", ro.wire_share());
}

#[test]
fn a_latency_is_at_least_table_1_s_path() {
    let cfg = TigonSection::default();
    let t = TABLE_1;
    let path =
        t.send_bookkeeping + t.transmission + t.recv_bookkeeping + t.receive_frame + t.receiving;
    for scheme in Scheme::ALL {
        let m = go(&cfg, scheme, 2, Bench::Latency, 10);
        let lat = m.latency_us();
        assert!(
            lat >= path,
            "{scheme}: {lat} us under Table 1's path of {path} us"
        );
        assert!(lat < 2.0 * path, "{scheme}: {lat} us");
    }
}
