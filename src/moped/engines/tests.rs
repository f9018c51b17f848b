use proptest::prelude::*;

use super::*;

/// Table 2 of the multi-CPU NIC paper, as (step, base, SO, RO, DSR, SR) roles.
const TABLE_2: [(StepKind, [Role; 5]); 10] = {
    use Role::{A, B};
    [
        (StepKind::Reserve, [A, A, A, A, A]),
        (StepKind::Store, [A, A, A, A, A]),
        (StepKind::Forward, [A, B, A, A, B]),
        (StepKind::Ack, [A, A, A, B, A]),
        (StepKind::SendComplete, [A, A, A, A, A]),
        (StepKind::Match, [A, A, A, B, A]),
        (StepKind::Activate, [A, A, B, B, B]),
        (StepKind::Page, [A, A, B, B, B]),
        (StepKind::Line, [A, A, B, B, B]),
        (StepKind::RecvComplete, [A, B, A, A, A]),
    ]
};

#[test]
fn schemes_assign_steps_as_table_2_does() {
    for (step, roles) in TABLE_2 {
        for (scheme, role) in Scheme::ALL.into_iter().zip(roles) {
            assert_eq!(scheme.assignment().role(step), role, "{scheme} {step:?}");
            let want = match role {
                Role::A => 0..1,
                Role::B => 1..2,
            };
            assert_eq!(scheme.engines_for(step, 2), want, "{scheme} {step:?}");
            assert_eq!(scheme.engines_for(step, 1), 0..1, "{scheme} {step:?}");
        }
    }
    assert_eq!(Scheme::Ro.engines_for(StepKind::Line, 4), 1..4);
    assert_eq!(Scheme::Base.engines_for(StepKind::Line, 4), 0..1);
}

#[test]
fn scheme_names_round_trip() {
    for s in Scheme::ALL {
        assert_eq!(s.name().parse::<Scheme>().unwrap(), s);
        assert_eq!(s.name().to_lowercase().parse::<Scheme>().unwrap(), s);
    }
    let e = "XO".parse::<Scheme>().unwrap_err();
    assert!(e.contains("base, SO, RO, DSR, SR"), "{e}");
}

#[test]
fn emp_costs_are_table_1_at_88_mhz() {
    let c = StepCosts::emp();
    // Send bookkeeping: a reservation and three field stores.
    assert_eq!(c.reserve + 3 * c.store, 462);
    assert_eq!(c.forward, 484);
    assert_eq!(c.ack + c.send_complete, 506);
    assert_eq!(c.match_, 550);
    assert_eq!(c.activate, 374);
    assert_eq!(c.page, 242);
    assert_eq!(c.recv_complete, 220);
}

fn params(scheme: Scheme, engines: usize, handoff: u64) -> EngineParams {
    EngineParams {
        engines,
        scheme,
        handoff_cycles: handoff,
        costs: StepCosts::default(),
    }
}

#[test]
fn a_busy_engine_delays_the_next_step_and_a_second_engine_does_not() {
    let mut one = Engines::new(params(Scheme::Ro, 1, 10), 4);
    let a = one.run(StepKind::Match, 100, 0, &[Lock::Queues], None);
    let b = one.run(StepKind::Line, 50, 5, &[], None);
    assert_eq!((a.start, a.end), (0, 100));
    assert_eq!((b.engine, b.start, b.end), (0, 100, 150));
    let mut two = Engines::new(params(Scheme::Ro, 2, 10), 4);
    two.run(StepKind::Match, 100, 0, &[Lock::Queues], None);
    let b = two.run(StepKind::Line, 50, 5, &[], None);
    assert_eq!((b.engine, b.start, b.end), (1, 5, 55));
    // A step following one on the other engine pays the hand-off on its own engine.
    let c = two.run(StepKind::RecvComplete, 20, 55, &[Lock::Desc(1)], Some(1));
    assert_eq!((c.engine, c.start, c.end), (0, 100, 130));
    assert_eq!(two.stats[0].handoffs, 1);
    assert_eq!(two.stats[0].busy, 130);
    // Fixed-function steps take no time and wait for nothing.
    let d = two.run(StepKind::Store, 0, 60, &[Lock::Desc(1)], None);
    assert_eq!((d.start, d.end), (60, 60));
}

#[test]
fn a_held_lock_makes_the_other_engine_wait_and_counts_the_wait() {
    let mut e = Engines::new(params(Scheme::Ro, 2, 0), 4);
    e.run(StepKind::Store, 40, 0, &[Lock::Desc(2)], None);
    let s = e.run(StepKind::Activate, 10, 5, &[Lock::Desc(2)], None);
    assert_eq!((s.engine, s.start, s.end), (1, 40, 50));
    assert_eq!(e.stats[1].lock_wait, 35);
    let other = e.run(StepKind::Activate, 10, 50, &[Lock::Desc(3)], None);
    assert_eq!(other.start, 50);
}

/// One step of a random interleaving: which step, its cost, how long after the previous
/// one it is ready, the entries it locks (and the queues), and the engine before it.
#[derive(Clone, Debug)]
struct RandomStep {
    step: usize,
    cost: u64,
    gap: u64,
    descs: Vec<u16>,
    queues: bool,
    prev: Option<u8>,
}

fn random_step() -> impl Strategy<Value = RandomStep> {
    (
        0..10usize,
        prop_oneof![Just(0u64), 1..200u64],
        0..60u64,
        proptest::collection::vec(0..6u16, 0..3),
        any::<bool>(),
        proptest::option::of(0..3u8),
    )
        .prop_map(|(step, cost, gap, descs, queues, prev)| RandomStep {
            step,
            cost,
            gap,
            descs,
            queues,
            prev,
        })
}

proptest! {
    /// Over random interleavings of steps on every scheme and engine count: a step runs
    /// only on an engine its scheme gives it, never before it is ready, an engine runs one
    /// step at a time, and two engines never hold one descriptor (or the queues) at once.
    #[test]
    fn locks_and_engines_are_never_shared(
        scheme in 0..5usize,
        engines in 1..4usize,
        handoff in 0..30u64,
        steps in proptest::collection::vec(random_step(), 1..80),
    ) {
        let scheme = Scheme::ALL[scheme];
        let mut e = Engines::new(params(scheme, engines, handoff), 6);
        let mut now = 0;
        let mut ran: Vec<(Slot, Vec<Lock>)> = Vec::new();
        for s in &steps {
            now += s.gap;
            let kind = StepKind::ALL[s.step];
            let mut locks: Vec<Lock> = s.descs.iter().map(|&d| Lock::Desc(d)).collect();
            if s.queues {
                locks.push(Lock::Queues);
            }
            let slot = e.run(kind, s.cost, now, &locks, s.prev);
            prop_assert!(scheme.engines_for(kind, engines).contains(&(slot.engine as usize)));
            prop_assert!(slot.start >= now);
            if s.cost == 0 {
                prop_assert_eq!((slot.start, slot.end), (now, now));
                continue;
            }
            prop_assert!(slot.end >= slot.start + s.cost);
            for (other, held) in &ran {
                let overlap = slot.start < other.end && other.start < slot.end;
                if !overlap {
                    continue;
                }
                prop_assert_ne!(slot.engine, other.engine, "one engine ran two steps at once");
                for l in &locks {
                    prop_assert!(!held.contains(l), "{:?} held by two engines at once", l);
                }
            }
            ran.push((slot, locks));
        }
        let steps_counted: u64 = e.stats.iter().map(|s| s.steps.iter().sum::<u64>()).sum();
        prop_assert_eq!(steps_counted, steps.len() as u64);
    }
}

#[test]
fn a_critical_section_waits_for_the_lock_without_counting_a_step_or_a_hand_off() {
    let params = EngineParams {
        engines: 2,
        scheme: Scheme::Ro,
        handoff_cycles: 7,
        costs: StepCosts::default(),
    };
    let mut e = Engines::new(params, 4);
    // Engine 1 holds the queue lock from 10 to 30.
    let a = e.run(StepKind::Activate, 10, 0, &[], None);
    let held = e.continue_step(StepKind::Activate, 20, a.end, &[Lock::Queues], a.engine);
    assert_eq!((held.start, held.end, held.engine), (10, 30, 1));
    // Engine 0 asks for it at 15 and spins until 30.
    let m = e.run(StepKind::Match, 15, 0, &[], None);
    let cs = e.continue_step(StepKind::Match, 5, m.end, &[Lock::Queues], m.engine);
    assert_eq!((cs.start, cs.end), (30, 35));
    assert_eq!(e.stats[0].lock_wait, 15);
    assert_eq!(e.stats[0].steps_of(StepKind::Match), 1);
    assert_eq!(e.stats[0].busy, 20);
    assert_eq!(e.stats[0].handoffs + e.stats[1].handoffs, 0);
    assert_eq!(e.stats[1].cycles_of(StepKind::Activate), 30);
}

#[test]
fn emp_costs_come_from_table_1() {
    let c = StepCosts::emp();
    let t = TABLE_1;
    let cycles = |us: f64| (us * TIGON2_MHZ).round() as u64;
    assert_eq!(c.ack + c.send_complete, cycles(t.receive_ack));
    assert_eq!(c.recv_complete, cycles(t.send_ack));
    assert_eq!(t.receive_ack - t.receive_ack_arrival, 2.50);
}
