//! The copy unit against a fake memory system: an OS that builds page tables for random
//! buffers in shuffled frames, leaving some pages to be mapped on a fault, and a responder
//! that answers requests after random delays, in random order, sometimes revoking a
//! granted receive line before its write. After each transfer the receive buffer must hold
//! the send buffer's bytes and every other byte of memory must be what the OS left there.
//!
//! Runs are deterministic; `PROPTEST_RNG_SEED` and `PROPTEST_CASES` explore further.

use std::collections::HashSet;
use std::ops::Range;

use moped::mem::{LineAddr, LineData, LINE_BYTES};
use moped::moped::copy::{
    Buffer, CopyConfig, CopyReq, CopyStatus, CopyUnit, Failure, Side, Transfer,
};
use moped::os::pagetable::{page_of, AddressSpace, PAGE_BYTES};
use moped::os::phys::{FlatMem, FrameAllocator, PhysMem};
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const KB: u64 = 1 << 10;
const MB: u64 = 1 << 20;
const GB: u64 = 1 << 30;
const LINE: u64 = LINE_BYTES as u64;
/// Physical memory the OS hands out frames from.
const FRAMES: Range<u64> = GB..2 * GB;
/// Unmapped-by-default pages on each side of a buffer, inside its region.
const PAD_PAGES: u64 = 2;

/// One transfer and how the world around it behaves.
#[derive(Clone, Debug)]
struct Case {
    len: u64,
    send_va: u64,
    recv_va: u64,
    same_process: bool,
    lines: usize,
    staging_lines: usize,
    ops_per_cycle: usize,
    /// Chance in percent that a page of a region is mapped before the transfer.
    mapped_percent: u32,
    /// Chance in percent that a write finds its line revoked.
    revoke_percent: u32,
    max_delay: u64,
    seed: u64,
}

/// The OS and the memory: `model` mirrors `mem` except for the copy unit's writes.
struct World {
    mem: FlatMem,
    model: FlatMem,
    frames: FrameAllocator,
    spaces: Vec<AddressSpace>,
    send_space: usize,
    recv_space: usize,
}

/// Memory that notes the lines written through it.
struct Recorder<'a> {
    mem: &'a mut FlatMem,
    written: Vec<LineAddr>,
}

impl PhysMem for Recorder<'_> {
    fn read_line(&self, line: LineAddr) -> LineData {
        self.mem.read_line(line)
    }

    fn write_line(&mut self, line: LineAddr, data: &LineData) {
        self.written.push(line);
        self.mem.write_line(line, data);
    }
}

impl World {
    /// Address spaces with a region around each buffer, some pages mapped and filled with
    /// random bytes. `recv_end` ends the receive region early (to leave part outside).
    fn build(case: &Case, rng: &mut Xoshiro256PlusPlus, recv_end: Option<u64>) -> World {
        let mut w = World {
            mem: FlatMem::new(),
            model: FlatMem::new(),
            frames: FrameAllocator::shuffled(FRAMES, case.seed).expect("frame range"),
            spaces: Vec::new(),
            send_space: 0,
            recv_space: 0,
        };
        w.new_space();
        if !case.same_process {
            w.recv_space = w.new_space();
        }
        let send = region_around(case.send_va, case.len);
        let mut recv = region_around(case.recv_va, case.len);
        recv.end = recv_end.unwrap_or(recv.end);
        w.add_region(w.send_space, send, case, rng);
        w.add_region(w.recv_space, recv, case, rng);
        w.model = w.mem.clone();
        w
    }

    fn new_space(&mut self) -> usize {
        let s = AddressSpace::new(&mut self.frames, &mut self.mem).expect("a root frame");
        self.spaces.push(s);
        self.spaces.len() - 1
    }

    fn add_region(&mut self, space: usize, r: Range<u64>, case: &Case, rng: &mut impl Rng) {
        let (frames, mem) = (&mut self.frames, &mut self.mem);
        let s = &mut self.spaces[space];
        s.add_region(frames, mem, r.clone(), false)
            .expect("disjoint regions");
        let mut page = vec![0u8; PAGE_BYTES as usize];
        for va in r.step_by(PAGE_BYTES as usize) {
            if rng.gen_range(0..100) < case.mapped_percent {
                let frame = s.map_page(frames, mem, va).expect("frames");
                rng.fill(&mut page[..]);
                mem.write_range(frame, &page);
            }
        }
    }

    fn root(&self, side: Side) -> u64 {
        self.spaces[self.space_of(side)].root()
    }

    fn space_of(&self, side: Side) -> usize {
        match side {
            Side::Send => self.send_space,
            Side::Recv => self.recv_space,
        }
    }

    /// The OS's page-fault handler: maps the page if `va` is in a region, mirroring its
    /// writes into the model. Returns whether it mapped.
    fn handle_fault(&mut self, side: Side, va: u64) -> bool {
        let i = self.space_of(side);
        let space = &mut self.spaces[i];
        if !space.contains(va) {
            return false;
        }
        let mut rec = Recorder {
            mem: &mut self.mem,
            written: Vec::new(),
        };
        let mapped = space.map_page(&mut self.frames, &mut rec, va);
        assert!(mapped.is_ok(), "fault at {va:#x}: {mapped:?}");
        for line in rec.written {
            self.model.write_line(line, &self.mem.read_line(line));
        }
        true
    }

    fn translate(&self, side: Side, va: u64) -> u64 {
        let space = &self.spaces[self.space_of(side)];
        space.translate(&self.model, va).expect("mapped")
    }

    /// Writes into the model what the transfer should leave in the receive buffer.
    fn expect_copied(&mut self, t: &Transfer) {
        let mut j = 0;
        let mut chunk = Vec::new();
        while j < t.len {
            let (s, r) = (t.send.va + j, t.recv.va + j);
            let to_page_end = |va: u64| PAGE_BYTES - va % PAGE_BYTES;
            let n = (t.len - j).min(to_page_end(s)).min(to_page_end(r));
            chunk.resize(n as usize, 0);
            self.model
                .read_range(self.translate(Side::Send, s), &mut chunk);
            let dst = self.translate(Side::Recv, r);
            self.model.write_range(dst, &chunk);
            j += n;
        }
    }

    /// Asserts memory equals the model, naming the first differing line.
    fn assert_matches_model(&self) {
        let (got, want) = (self.mem.sorted_lines(), self.model.sorted_lines());
        if got != want {
            let diff = got
                .iter()
                .zip(&want)
                .find(|(g, w)| g != w)
                .map(|(g, w)| (g.0, w.0));
            panic!(
                "memory differs from the model: {} vs {} lines, first difference at {diff:x?}",
                got.len(),
                want.len()
            );
        }
    }
}

/// A buffer's pages and `PAD_PAGES` more on each side.
fn region_around(va: u64, len: u64) -> Range<u64> {
    let start = page_of(va).saturating_sub(PAD_PAGES * PAGE_BYTES);
    start..page_of(va + len + PAGE_BYTES - 1) + PAD_PAGES * PAGE_BYTES
}

/// An answer on its way back to the unit.
#[derive(Clone, Debug)]
enum Answer {
    Read(LineAddr),
    Grant(LineAddr),
    Write(LineAddr, LineData, u64),
    Fault(Side, u64),
}

/// Drives `unit` to its end with answers after random delays; returns the cycles taken.
fn run(unit: &mut CopyUnit, w: &mut World, case: &Case, rng: &mut impl Rng) -> u64 {
    let mut pending: Vec<(u64, Answer)> = Vec::new();
    let mut owned: HashSet<LineAddr> = HashSet::new();
    let mut now = 0;
    while unit.status() == CopyStatus::Running || !pending.is_empty() {
        assert!(unit.occupancy(Side::Send) <= case.lines);
        let mut issued = 0;
        while issued < case.ops_per_cycle {
            let Some(req) = unit.next_request() else {
                break;
            };
            let due = now + rng.gen_range(0..=case.max_delay);
            pending.push((due, answer_for(req)));
            issued += 1;
        }
        // The unit changes only on answers: nothing pending means it is stuck.
        let Some(next_due) = pending.iter().map(|p| p.0).min() else {
            assert_ne!(
                unit.status(),
                CopyStatus::Running,
                "stuck: {:?}",
                unit.stats()
            );
            break;
        };
        if issued == 0 {
            now = now.max(next_due);
        }
        let mut ready: Vec<Answer> = Vec::new();
        pending.retain(|(due, a)| {
            let keep = *due > now;
            if !keep {
                ready.push(a.clone());
            }
            keep
        });
        // Same-cycle answers arrive in any order.
        for i in (1..ready.len()).rev() {
            ready.swap(i, rng.gen_range(0..=i));
        }
        for a in ready {
            deliver(unit, w, &mut owned, a, case, rng);
        }
        now += 1;
    }
    now
}

fn answer_for(req: CopyReq) -> Answer {
    match req {
        CopyReq::Read { line } => Answer::Read(line),
        CopyReq::Own { line, .. } => Answer::Grant(line),
        CopyReq::Write { line, data, mask } => Answer::Write(line, data, mask),
        CopyReq::Fault { side, va } => Answer::Fault(side, va),
    }
}

fn deliver(
    unit: &mut CopyUnit,
    w: &mut World,
    owned: &mut HashSet<LineAddr>,
    a: Answer,
    case: &Case,
    rng: &mut impl Rng,
) {
    let r = match a {
        Answer::Read(line) => unit.on_read(line, &w.mem.read_line(line)),
        Answer::Grant(line) => {
            assert!(owned.insert(line), "line {line:#x} owned twice");
            unit.on_granted(line)
        }
        Answer::Write(line, data, mask) => {
            let held = owned.remove(&line);
            assert!(held, "write to line {line:#x} never granted");
            if rng.gen_range(0..100) < case.revoke_percent {
                unit.on_write(line, false)
            } else {
                let mut old = w.mem.read_line(line);
                for (b, (o, d)) in old.iter_mut().zip(data).enumerate() {
                    if mask >> b & 1 == 1 {
                        *o = d;
                    }
                }
                w.mem.write_line(line, &old);
                unit.on_write(line, true)
            }
        }
        Answer::Fault(side, va) => {
            let mapped = w.handle_fault(side, va);
            unit.on_fault_resolved(mapped)
        }
    };
    assert_eq!(r, Ok(()));
}

fn transfer(case: &Case, w: &World) -> Transfer {
    Transfer {
        send: Buffer {
            va: case.send_va,
            root: w.root(Side::Send),
        },
        recv: Buffer {
            va: case.recv_va,
            root: w.root(Side::Recv),
        },
        len: case.len,
    }
}

fn unit_for(case: &Case, t: &Transfer) -> CopyUnit {
    let cfg = CopyConfig {
        lines: case.lines,
        staging_lines: case.staging_lines,
        ..CopyConfig::default()
    };
    CopyUnit::new(&cfg, t).expect("a valid transfer")
}

/// Lines a buffer spans.
fn lines_of(va: u64, len: u64) -> u64 {
    if len == 0 {
        0
    } else {
        (va % LINE + len).div_ceil(LINE)
    }
}

fn check_copy(case: &Case) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(case.seed);
    let mut w = World::build(case, &mut rng, None);
    let t = transfer(case, &w);
    let mut unit = unit_for(case, &t);
    run(&mut unit, &mut w, case, &mut rng);
    assert_eq!(unit.status(), CopyStatus::Done);
    w.expect_copied(&t);
    w.assert_matches_model();
    let st = unit.stats();
    assert_eq!(st.lines_read, lines_of(case.send_va, case.len));
    assert_eq!(st.lines_written, lines_of(case.recv_va, case.len));
    assert_eq!(st.lines_owned, st.lines_written + st.write_retries);
    assert_eq!(st.anomalies, 0);
    assert_eq!(st.faults, st.walk.faults);
}

/// Sizes biased to small and to line and page boundaries, up to 2 MB.
fn len_strategy() -> impl Strategy<Value = u64> {
    let near = |unit: u64, most: u64| {
        (0..=most, -2i64..=2).prop_map(move |(k, d)| (k * unit).saturating_add_signed(d))
    };
    prop_oneof![
        4 => 0..=300u64,
        2 => near(LINE, 80),
        2 => near(PAGE_BYTES, 12),
        1 => 0..=64 * KB,
        1 => 0..=2 * MB,
        1 => Just(2 * MB),
    ]
}

/// Buffer addresses: anywhere below 2^47, or just before a 2 MB, 1 GB or 512 GB boundary
/// so that the buffer needs new level-3, -2 or -1 tables midway; any offset in the page.
fn va_strategy() -> impl Strategy<Value = u64> {
    let boundary = prop_oneof![Just(2 * MB), Just(GB), Just(512 * GB)];
    let page = prop_oneof![
        (16u64..1 << 35).prop_map(|p| p * PAGE_BYTES),
        (1u64..64, boundary, 1u64..6).prop_map(|(k, b, back)| k * b - back * PAGE_BYTES),
    ];
    let offset = prop_oneof![
        Just(0u64),
        Just(1),
        Just(63),
        Just(64),
        Just(4032),
        Just(4095),
        0..PAGE_BYTES,
    ];
    (page, offset).prop_map(|(p, o)| p + o)
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        (len_strategy(), va_strategy(), va_strategy(), any::<bool>()),
        (
            prop_oneof![Just(1usize), Just(2), Just(3), Just(4), Just(8)],
            prop_oneof![Just(0usize), Just(1), Just(4), Just(8)],
            1usize..=4,
        ),
        (
            prop_oneof![Just(100u32), Just(90), Just(50), Just(0)],
            prop_oneof![Just(0u32), Just(5), Just(30)],
            prop_oneof![Just(0u64), 1..=8u64, 1..=60u64],
            any::<u64>(),
        ),
    )
        .prop_map(|(buf, sizes, world)| {
            let (len, send_va, mut recv_va, same_process) = buf;
            // Keep one process's two regions apart.
            let (s, r) = (region_around(send_va, len), region_around(recv_va, len));
            if same_process && s.start < r.end && r.start < s.end {
                recv_va ^= 1 << 46;
            }
            let (lines, staging_lines, ops_per_cycle) = sizes;
            let (mapped_percent, revoke_percent, max_delay, seed) = world;
            Case {
                len,
                send_va,
                recv_va,
                same_process,
                lines,
                staging_lines,
                ops_per_cycle,
                mapped_percent,
                revoke_percent,
                max_delay,
                seed,
            }
        })
}

/// The default configuration with a fixed seed, unless the environment asks otherwise.
fn config() -> ProptestConfig {
    let mut cfg = ProptestConfig::default();
    if cfg.rng_seed == RngSeed::Random {
        cfg.rng_seed = RngSeed::Fixed(0x006d_6f70_6564);
    }
    cfg
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn receive_buffer_gets_the_send_bytes_and_nothing_else_changes(case in case_strategy()) {
        check_copy(&case);
    }
}

fn fixed_case(len: u64) -> Case {
    Case {
        len,
        send_va: 0x10_0000_0123,
        recv_va: 0x7f00_0000_0f3d,
        same_process: false,
        lines: 4,
        staging_lines: 4,
        ops_per_cycle: 2,
        mapped_percent: 90,
        revoke_percent: 5,
        max_delay: 30,
        seed: 7,
    }
}

#[test]
fn a_two_megabyte_transfer_with_faults_and_revocations() {
    check_copy(&fixed_case(2 * MB));
}

#[test]
fn an_address_outside_the_process_fails_the_transfer() {
    let case = Case {
        mapped_percent: 100,
        ..fixed_case(5 * PAGE_BYTES)
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(case.seed);
    // The receive region ends two pages into the buffer.
    let outside = page_of(case.recv_va) + 2 * PAGE_BYTES;
    let mut w = World::build(&case, &mut rng, Some(outside));
    let t = transfer(&case, &w);
    let mut unit = unit_for(&case, &t);
    run(&mut unit, &mut w, &case, &mut rng);
    assert_eq!(
        unit.status(),
        CopyStatus::Failed(Failure::Unmapped {
            side: Side::Recv,
            va: outside
        })
    );
    assert_eq!(unit.next_request(), None);
    // Whatever was written lies inside the receive buffer and is the send buffer's.
    for va in case.recv_va..outside {
        let mut got = [0];
        w.mem.read_range(w.translate(Side::Recv, va), &mut got);
        let mut old = [0];
        w.model.read_range(w.translate(Side::Recv, va), &mut old);
        let mut sent = [0];
        let s = case.send_va + (va - case.recv_va);
        w.model.read_range(w.translate(Side::Send, s), &mut sent);
        assert!(got == old || got == sent, "byte at {va:#x}");
        // Mark it as expected so the whole-memory comparison covers the rest.
        w.model.write_range(w.translate(Side::Recv, va), &got);
    }
    w.assert_matches_model();
}

#[test]
fn an_empty_transfer_is_done_without_a_request() {
    let case = fixed_case(0);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(case.seed);
    let w = World::build(&case, &mut rng, None);
    let mut unit = unit_for(&case, &transfer(&case, &w));
    assert_eq!(unit.status(), CopyStatus::Done);
    assert_eq!(unit.next_request(), None);
    assert_eq!(unit.stats().walk.walks, 0);
    w.assert_matches_model();
}
