//! The MOPED device alone, through its host interface: an ideal host delivers messages
//! between MOPEDs in FIFO order, answers line requests from a flat memory after random
//! delays, and plays the OS for page faults. Covers the descriptor life cycle, copies,
//! MPI matching order, polls and retries, migration, isolation and backoff.

use std::collections::VecDeque;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use moped::coherence::{MopedDone, MopedKind};
use moped::envelope::{Envelope, Kind, Peer, ProgramId, Rank, Tag};
use moped::mem::{line_of, LineData};
use moped::moped::desc::{self, DescTable};
use moped::moped::device::{DevMsg, DevOut, Moped, MopedParams, PortAnswer, PortCtx};
use moped::moped::engines::EngineParams;
use moped::moped::matching::{MatcherKind, MatchingParams, ResultAt};
use moped::moped::ports::{pack_store, PollStatus, Port, PortMap, ERROR, REFUSED};
use moped::moped::{DescId, IdFormat, MopedId};
use moped::os::pagetable::{AddressSpace, PageTableFormat};
use moped::os::phys::{FlatMem, FrameAllocator, PhysMem};

/// A process: its identity, the core it runs on and its address space.
struct Proc {
    program: ProgramId,
    rank: Rank,
    core: u16,
    space: AddressSpace,
}

/// The ideal host.
struct Host {
    mopeds: Vec<Moped>,
    mem: FlatMem,
    frames: FrameAllocator,
    procs: Vec<Proc>,
    ports: PortMap,
    now: u64,
    /// Messages in flight, delivered in order one cycle after they were sent (FIFO on every
    /// channel).
    net: VecDeque<(u64, MopedId, DevMsg)>,
    /// Line requests waiting for their answer: (due, moped, request).
    lines: Vec<(u64, usize, DevOut)>,
    values: Vec<(u16, u64)>,
    rng: Xoshiro256PlusPlus,
    /// Largest delay of a line answer, in cycles.
    max_delay: u64,
    faults: u64,
    /// The cycles at which matching MOPEDs sent a matched pair to a receiver's MOPED.
    matched_at: Vec<u64>,
}

fn params(id: usize, n: usize, entries: usize, fill: bool) -> MopedParams {
    MopedParams {
        id: id as MopedId,
        mopeds: n,
        descriptor_entries: entries,
        active_matches: 1,
        copy_lines: 4,
        staging_lines: 4,
        walk_cache_lines: 0,
        page_table: PageTableFormat::X86_64,
        ops_per_cycle: 2,
        fill,
        ports: PortMap::default(),
        matcher: MatcherKind::Fsm,
        matching: MatchingParams::default(),
        core_mhz: 1000.0,
        engines: EngineParams {
            engines: 1,
            ..EngineParams::default()
        },
    }
}

impl Host {
    fn new(n: usize, entries: usize, seed: u64) -> Host {
        Host::with_matching(n, entries, seed, MatchingParams::default())
    }

    fn with_matching(n: usize, entries: usize, seed: u64, matching: MatchingParams) -> Host {
        let device = |i| {
            let p = params(i, n, entries, seed % 2 == 0);
            Moped::new(MopedParams { matching, ..p }).unwrap()
        };
        Host {
            mopeds: (0..n).map(device).collect(),
            mem: FlatMem::new(),
            frames: FrameAllocator::shuffled(0x100_0000..0x1000_0000, seed).unwrap(),
            procs: Vec::new(),
            ports: PortMap::default(),
            now: 0,
            net: VecDeque::new(),
            lines: Vec::new(),
            values: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            max_delay: 20,
            faults: 0,
            matched_at: Vec::new(),
        }
    }

    /// A process with its buffer region `[va, va + len)`; pages are mapped now or on
    /// demand (faults) at random.
    fn spawn(
        &mut self,
        program: ProgramId,
        rank: Rank,
        core: u16,
        regions: &[(u64, u64)],
    ) -> usize {
        let mut space = AddressSpace::new(&mut self.frames, &mut self.mem).unwrap();
        for &(va, len) in regions {
            let populate = self.rng.gen_bool(0.7);
            space
                .add_region(
                    &mut self.frames,
                    &mut self.mem,
                    va..va + len.max(1),
                    populate,
                )
                .unwrap();
        }
        self.procs.push(Proc {
            program,
            rank,
            core,
            space,
        });
        self.procs.len() - 1
    }

    fn ctx(&self, p: usize) -> PortCtx {
        PortCtx {
            core: self.procs[p].core,
            pt_root: self.procs[p].space.root(),
        }
    }

    fn port(&self, p: usize, port: Port) -> u64 {
        let pr = &self.procs[p];
        self.ports.addr_of(pr.program, pr.rank, port).unwrap()
    }

    /// Writes bytes of a process's buffer (mapping pages as the OS would on a store).
    fn write_buf(&mut self, p: usize, va: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            let a = va + i as u64;
            let pa = match self.procs[p].space.translate(&self.mem, a) {
                Some(pa) => pa,
                None => {
                    self.procs[p]
                        .space
                        .map_page(&mut self.frames, &mut self.mem, a)
                        .unwrap();
                    self.procs[p].space.translate(&self.mem, a).unwrap()
                }
            };
            self.mem.write_range(pa, &[*b]);
        }
    }

    /// Reads bytes of a process's buffer (unmapped pages read as zero).
    fn read_buf(&self, p: usize, va: u64, len: usize) -> Vec<u8> {
        (0..len as u64)
            .map(|i| {
                let mut b = [0u8];
                if let Some(pa) = self.procs[p].space.translate(&self.mem, va + i) {
                    self.mem.read_range(pa, &mut b);
                }
                b[0]
            })
            .collect()
    }

    fn moped_of(&mut self, p: usize) -> &mut Moped {
        let core = self.procs[p].core as usize;
        &mut self.mopeds[core]
    }

    fn load(&mut self, p: usize, port: Port) -> u64 {
        let (ctx, addr, now) = (self.ctx(p), self.port(p, port), self.now);
        match self.moped_of(p).port_load(now, ctx, addr, 8) {
            PortAnswer::Value(v) => v,
            PortAnswer::Later => {
                let core = ctx.core;
                for _ in 0..10_000 {
                    self.step();
                    if let Some(i) = self.values.iter().position(|v| v.0 == core) {
                        return self.values.remove(i).1;
                    }
                }
                panic!("forwarded port load never answered");
            }
        }
    }

    fn store(
        &mut self,
        p: usize,
        port: Port,
        value: u64,
    ) -> Result<(), moped::moped::ports::PortError> {
        let (ctx, addr, now) = (self.ctx(p), self.port(p, port), self.now);
        self.moped_of(p).port_store(now, ctx, addr, 8, value)
    }

    /// The 16 bits of a descriptor ID in this system.
    fn bits(&self, id: DescId) -> u16 {
        IdFormat::for_mopeds(self.mopeds.len()).unwrap().encode(id)
    }

    /// The descriptor ID a reservation answered.
    fn id(&self, v: u64) -> DescId {
        IdFormat::for_mopeds(self.mopeds.len())
            .unwrap()
            .decode(v as u16)
    }

    /// Reserves and fills a descriptor; `None` when MOPED refuses (backoff).
    fn post(&mut self, p: usize, env: Envelope, va: u64, size: u64) -> Option<DescId> {
        let v = self.load(p, Port::Data);
        if v == REFUSED {
            return None;
        }
        assert!(v < 0x1_0000, "reservation answered {v:#x}");
        let id = self.id(v);
        for payload in [env.encode().unwrap(), va, size] {
            self.store(p, Port::Data, pack_store(self.bits(id), payload).unwrap())
                .unwrap();
            self.step();
        }
        Some(id)
    }

    fn poll(&mut self, p: usize, id: DescId) -> PollStatus {
        self.store(p, Port::Poll, self.bits(id) as u64).unwrap();
        PollStatus::from_value(self.load(p, Port::Poll)).unwrap()
    }

    /// Polls every few cycles until the descriptor is no longer pending.
    fn wait(&mut self, p: usize, id: DescId) -> PollStatus {
        for _ in 0..200_000 {
            match self.poll(p, id) {
                PollStatus::Pending | PollStatus::Retry => {
                    for _ in 0..8 {
                        self.step();
                    }
                }
                s => return s,
            }
        }
        panic!("descriptor {id:?} of process {p} never finished");
    }

    /// One cycle: deliver due messages, answer due line requests, tick every MOPED.
    fn step(&mut self) {
        self.now += 1;
        let now = self.now;
        while self.net.front().is_some_and(|m| m.0 <= now) {
            let (_, dst, msg) = self.net.pop_front().unwrap();
            self.mopeds[dst as usize].receive(now, msg);
        }
        let mut due = Vec::new();
        let mut k = 0;
        while k < self.lines.len() {
            if self.lines[k].0 <= now {
                due.push(self.lines.remove(k));
            } else {
                k += 1;
            }
        }
        for (_, m, req) in due {
            self.answer(m, req);
        }
        for m in 0..self.mopeds.len() {
            self.mopeds[m].tick(now);
            let outs: Vec<DevOut> = self.mopeds[m].take_out().collect();
            for o in outs {
                self.take(m, o);
            }
        }
    }

    fn take(&mut self, m: usize, o: DevOut) {
        match o {
            DevOut::Send { dst, msg } => {
                if matches!(msg, DevMsg::Matched { .. }) {
                    self.matched_at.push(self.now);
                }
                self.net.push_back((self.now + 1, dst, msg))
            }
            DevOut::Line(_) | DevOut::Write { .. } => {
                let due = self.now + self.rng.gen_range(1..=self.max_delay);
                self.lines.push((due, m, o));
            }
            DevOut::Fault {
                slot, pt_root, va, ..
            } => {
                self.faults += 1;
                let p = self
                    .procs
                    .iter()
                    .position(|p| p.space.root() == pt_root)
                    .expect("fault of a known process");
                let mapped = self.procs[p].space.contains(va)
                    && self.procs[p]
                        .space
                        .map_page(&mut self.frames, &mut self.mem, va)
                        .is_ok();
                self.mopeds[m].fault_done(slot, mapped);
            }
            DevOut::PortValue { core, value } | DevOut::LocalValue { core, value } => {
                self.values.push((core, value))
            }
        }
    }

    /// The ideal L2: reads see memory, exclusive rights are granted, writes land.
    fn answer(&mut self, m: usize, req: DevOut) {
        match req {
            DevOut::Line(r) => {
                let d = match r.kind {
                    MopedKind::Read => MopedDone::Data {
                        addr: r.addr,
                        data: self.mem.read_line(r.addr),
                    },
                    MopedKind::Own | MopedKind::Fill => MopedDone::Granted { addr: r.addr },
                };
                self.mopeds[m].line_done(d);
            }
            DevOut::Write { addr, data, mask } => {
                let mut line: LineData = self.mem.read_line(addr);
                for (i, b) in line.iter_mut().enumerate() {
                    if mask >> i & 1 == 1 {
                        *b = data[i];
                    }
                }
                self.mem.write_line(addr, &line);
                self.mopeds[m].write_done(addr, true);
            }
            _ => unreachable!(),
        }
    }
}

fn send_env(dst: Rank, tag: u32) -> Envelope {
    Envelope {
        kind: Kind::Send,
        peer: Peer::Rank(dst),
        context: 0,
        tag: Tag::Tag(tag),
    }
}

fn recv_env(src: Peer, tag: Tag) -> Envelope {
    Envelope {
        kind: Kind::Recv,
        peer: src,
        context: 0,
        tag,
    }
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed);
    (0..len).map(|_| r.gen()).collect()
}

/// One message from a sender to a receiver on another core; returns the host.
fn one_message(seed: u64, len: u64, s_off: u64, r_off: u64) -> Host {
    let mut h = Host::new(4, 64, seed);
    let (sva, rva) = (0x10_0000 + s_off, 0x40_0000 + r_off);
    let s = h.spawn(0, 0, 0, &[(sva, len)]);
    let r = h.spawn(0, 1, 3, &[(rva, len)]);
    let data = pattern(seed, len as usize);
    h.write_buf(s, sva, &data);
    let sid = h.post(s, send_env(1, 7), sva, len).unwrap();
    let rid = h
        .post(r, recv_env(Peer::Rank(0), Tag::Tag(7)), rva, len)
        .unwrap();
    assert_eq!(h.wait(r, rid), PollStatus::Complete);
    assert_eq!(h.wait(s, sid), PollStatus::Complete);
    assert_eq!(h.read_buf(r, rva, len as usize), data, "receive buffer");
    h
}

#[test]
fn a_message_is_copied_byte_for_byte() {
    let h = one_message(1, 10_000, 3, 61);
    let d = &h.mopeds[3].stats;
    assert_eq!(d.completed, 1);
    assert!(d.line_reads > 0 && d.line_writes > 0);
    assert!(
        h.mopeds.iter().all(|m| m.is_idle()),
        "descriptors freed by the polls"
    );
}

#[test]
fn an_empty_message_completes() {
    one_message(2, 0, 0, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn copies_of_any_size_and_alignment(seed in 0u64..1000, len in 0u64..40_000, s in 0u64..4096, r in 0u64..4096) {
        one_message(seed, len, s, r);
    }
}

#[test]
fn messages_between_one_pair_match_in_posting_order() {
    let mut h = Host::new(4, 64, 3);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 0x1000)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 0x1000)]);
    let mut sends = Vec::new();
    for k in 0..4u64 {
        let va = 0x10_0000 + k * 0x100;
        h.write_buf(s, va, &[k as u8 + 1; 64]);
        sends.push(h.post(s, send_env(1, 5), va, 64).unwrap());
    }
    // ANY_SOURCE / ANY_TAG receives take the sends in the order they were posted.
    let mut recvs = Vec::new();
    for k in 0..4u64 {
        let va = 0x20_0000 + k * 0x100;
        recvs.push(h.post(r, recv_env(Peer::Any, Tag::Any), va, 64).unwrap());
    }
    for (k, id) in recvs.into_iter().enumerate() {
        assert_eq!(h.wait(r, id), PollStatus::Complete);
        assert_eq!(
            h.read_buf(r, 0x20_0000 + k as u64 * 0x100, 64),
            vec![k as u8 + 1; 64]
        );
    }
    for id in sends {
        assert_eq!(h.wait(s, id), PollStatus::Complete);
    }
}

/// The cycle a pair leaves the matching MOPED after a send whose receive waits behind
/// `ahead` receives that do not match, with `result_at`; and whether the message arrived.
fn match_leaves(result_at: ResultAt, ahead: u32) -> (u64, bool) {
    let matching = MatchingParams {
        result_at,
        ..MatchingParams::default()
    };
    let mut h = Host::with_matching(1, 64, 7, matching);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 0x1000)]);
    let r = h.spawn(0, 1, 0, &[(0x20_0000, 0x1000)]);
    for k in 0..ahead {
        h.post(r, recv_env(Peer::Rank(0), Tag::Tag(100 + k)), 0x20_0000, 64);
    }
    let want = h.post(r, recv_env(Peer::Rank(0), Tag::Tag(5)), 0x20_0000, 64);
    for _ in 0..200 {
        h.step();
    }
    h.write_buf(s, 0x10_0000, &[9; 64]);
    h.post(s, send_env(1, 5), 0x10_0000, 64).unwrap();
    let sent = h.now;
    let done = h.wait(r, want.unwrap()) == PollStatus::Complete
        && h.read_buf(r, 0x20_0000, 64) == vec![9; 64];
    (h.matched_at[0] - sent, done)
}

#[test]
fn a_pair_leaves_when_the_search_that_found_it_ends() {
    // `fsm` walks one waiting copy per cycle: with 20 receives ahead of its partner the
    // send's check is 21 cycles or more, and by default the pair leaves only after them;
    // "start" (the simulator before the engines) lets it leave on the walk's first cycle.
    let (end, delivered_end) = match_leaves(ResultAt::End, 20);
    let (start, delivered_start) = match_leaves(ResultAt::Start, 20);
    assert!(delivered_end && delivered_start);
    assert!(end >= start + 20, "end {end}, start {start}");
    let (shallow, _) = match_leaves(ResultAt::End, 0);
    assert!(
        shallow < end,
        "a search of one entry ({shallow}) ends sooner than of 21 ({end})"
    );
}

#[test]
fn a_buffer_outside_the_process_fails_the_message() {
    let mut h = Host::new(2, 64, 4);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 8192)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 100)]);
    h.write_buf(s, 0x10_0000, &pattern(4, 8192));
    let sid = h.post(s, send_env(1, 1), 0x10_0000, 8192).unwrap();
    // The receive buffer runs past the process's region.
    let rid = h
        .post(r, recv_env(Peer::Rank(0), Tag::Tag(1)), 0x20_0000, 8192)
        .unwrap();
    assert_eq!(h.wait(r, rid), PollStatus::Failed);
    assert_eq!(h.wait(s, sid), PollStatus::Complete);
    // Nothing was written outside the region: its one page is all the process has.
    assert!(h.procs[r]
        .space
        .translate(&h.mem, 0x20_0000 + 4096)
        .is_none());
}

#[test]
fn a_short_receive_buffer_truncates_and_fails_the_receive() {
    let mut h = Host::new(2, 64, 5);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 256)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 256)]);
    let data = pattern(5, 256);
    h.write_buf(s, 0x10_0000, &data);
    let sid = h.post(s, send_env(1, 1), 0x10_0000, 256).unwrap();
    let rid = h
        .post(r, recv_env(Peer::Rank(0), Tag::Tag(1)), 0x20_0000, 100)
        .unwrap();
    assert_eq!(h.wait(r, rid), PollStatus::Failed);
    assert_eq!(h.wait(s, sid), PollStatus::Complete);
    assert_eq!(h.read_buf(r, 0x20_0000, 100), data[..100].to_vec());
    assert_eq!(h.read_buf(r, 0x20_0000 + 100, 156), vec![0; 156]);
    assert_eq!(h.mopeds[1].stats.truncated, 1);
}

#[test]
fn a_context_switch_between_poll_store_and_load_answers_retry() {
    let mut h = Host::new(2, 64, 6);
    let a = h.spawn(0, 0, 0, &[(0x10_0000, 64)]);
    let b = h.spawn(0, 1, 0, &[(0x20_0000, 64)]);
    let id = h.post(a, send_env(1, 1), 0x10_0000, 64).unwrap();
    h.store(a, Port::Poll, h.bits(id) as u64).unwrap();
    // Process b runs on the same core and stores its own poll in between.
    h.store(b, Port::Poll, h.bits(id) as u64).unwrap();
    assert_eq!(
        PollStatus::from_value(h.load(a, Port::Poll)).unwrap(),
        PollStatus::Retry
    );
    // Re-storing refreshes the mapping.
    assert_eq!(h.poll(a, id), PollStatus::Pending);
}

#[test]
fn reserving_past_the_table_is_refused_and_a_poll_of_the_refusal_answers_error() {
    let mut h = Host::new(2, 4, 7);
    let a = h.spawn(0, 0, 0, &[(0x10_0000, 64)]);
    for _ in 0..4 {
        assert!(h.load(a, Port::Data) < 0x1_0000);
    }
    let refused = h.load(a, Port::Data);
    assert_eq!(refused, REFUSED);
    // The program stores the refusal as if it were an ID: the posted store is an error,
    // and the process learns of it at its next poll, never a Pending or Retry forever.
    assert!(h.store(a, Port::Poll, refused).is_err());
    assert_eq!(
        PollStatus::from_value(h.load(a, Port::Poll)).unwrap(),
        PollStatus::Error
    );
    // The same for an ID of an entry past the table.
    let past = DescId { moped: 0, index: 9 };
    assert_eq!(h.poll(a, past), PollStatus::Error);
}

#[test]
fn a_process_that_moved_cores_is_forwarded_to_its_descriptors() {
    let mut h = Host::new(4, 64, 7);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 512)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 512)]);
    let data = pattern(7, 512);
    h.write_buf(s, 0x10_0000, &data);
    // Reserve on core 0's MOPED, then move to core 2 before storing the fields.
    let v = h.load(s, Port::Data);
    let id = h.id(v);
    assert_eq!(id.moped, 0);
    h.procs[s].core = 2;
    for payload in [send_env(1, 3).encode().unwrap(), 0x10_0000, 512] {
        h.store(s, Port::Data, pack_store(h.bits(id), payload).unwrap())
            .unwrap();
    }
    assert_eq!(h.mopeds[2].stats.port_forwards, 3);
    let rid = h
        .post(r, recv_env(Peer::Rank(0), Tag::Tag(3)), 0x20_0000, 512)
        .unwrap();
    assert_eq!(h.wait(r, rid), PollStatus::Complete);
    // The poll of the moved process goes to MOPED 0 and its answer comes back.
    assert_eq!(h.wait(s, id), PollStatus::Complete);
    assert!(h.mopeds[2].stats.port_forwards > 3);
    assert_eq!(h.read_buf(r, 0x20_0000, 512), data);
}

/// The isolation matrix: another process's program ID, rank or page-table root, against
/// a victim's descriptor in each state, through each port operation; plus out-of-range and
/// unreserved IDs. Every case answers an error and changes nothing.
#[test]
fn isolation_matrix() {
    #[derive(Clone, Copy, Debug)]
    enum Who {
        Program,
        Rank,
        Root,
    }
    #[derive(Clone, Copy, Debug)]
    enum Op {
        StoreEnvelope,
        StoreAddress,
        StoreSize,
        Poll,
    }
    // Victim descriptor states: 0..=3 fields stored, matched (copy in flight), completed.
    let states = [
        "reserved",
        "1 field",
        "2 fields",
        "valid",
        "matched",
        "completed",
    ];
    let mut cases = 0;
    for (state, state_name) in states.iter().enumerate() {
        for who in [Who::Program, Who::Rank, Who::Root] {
            for (op, remote) in [Op::StoreEnvelope, Op::StoreAddress, Op::StoreSize, Op::Poll]
                .into_iter()
                .flat_map(|op| [(op, false), (op, true)])
            {
                let mut h = Host::new(2, 8, 11);
                let victim = h.spawn(0, 0, 0, &[(0x10_0000, 64)]);
                let peer = h.spawn(0, 1, 1, &[(0x20_0000, 64)]);
                // The intruder runs on the victim's core, so its accesses reach the
                // victim's MOPED directly, or on the other core, so they are forwarded.
                let (program, rank) = match who {
                    Who::Program => (1, 0),
                    Who::Rank => (0, 2),
                    Who::Root => (0, 0),
                };
                let core = if remote { 1 } else { 0 };
                let intruder = h.spawn(program, rank, core, &[(0x30_0000, 64)]);
                let v = h.load(victim, Port::Data);
                let id = h.id(v);
                let fields = [send_env(1, 9).encode().unwrap(), 0x10_0000, 64];
                for f in fields.iter().take(state.min(3)) {
                    h.store(victim, Port::Data, pack_store(h.bits(id), *f).unwrap())
                        .unwrap();
                }
                if state >= 4 {
                    let rid = h
                        .post(peer, recv_env(Peer::Rank(0), Tag::Tag(9)), 0x20_0000, 64)
                        .unwrap();
                    if state == 5 {
                        assert_eq!(h.wait(peer, rid), PollStatus::Complete);
                        for _ in 0..50 {
                            h.step();
                        }
                    }
                }
                for _ in 0..3 {
                    h.step();
                }
                let before = h.mopeds[0].table().get(id.index).copied();
                let errors = h.mopeds[0].stats.port_errors;
                let rejected = match op {
                    Op::Poll => {
                        h.store(intruder, Port::Poll, h.bits(id) as u64).unwrap();
                        PollStatus::from_value(h.load(intruder, Port::Poll)).unwrap()
                            == PollStatus::Error
                    }
                    _ => {
                        let k = match op {
                            Op::StoreEnvelope => 0,
                            Op::StoreAddress => 1,
                            _ => 2,
                        };
                        let local = h
                            .store(
                                intruder,
                                Port::Data,
                                pack_store(h.bits(id), fields[k]).unwrap(),
                            )
                            .is_err();
                        // A forwarded store is refused at the descriptor's MOPED.
                        for _ in 0..3 {
                            h.step();
                        }
                        local
                            || matches!(
                                h.mopeds[0].last_error,
                                Some(moped::moped::ports::PortError::Isolation { .. })
                            ) && remote
                    }
                };
                let ctx = format!("{state_name} x {who:?} x {op:?} remote {remote}");
                assert!(rejected, "{ctx}: not rejected");
                assert_eq!(h.mopeds[0].stats.port_errors, errors + 1, "{ctx}");
                assert_eq!(h.mopeds[0].table().get(id.index).copied(), before, "{ctx}");
                assert_eq!(h.read_buf(victim, 0x10_0000, 64), vec![0; 64], "{ctx}");
                cases += 1;
            }
        }
    }
    // IDs that name nothing: a free entry, an index past the table, a MOPED that does not
    // exist; for the data and poll ports.
    for (what, id) in [
        ("free entry", DescId { moped: 0, index: 5 }),
        (
            "index past the table",
            DescId {
                moped: 0,
                index: 200,
            },
        ),
        ("no such MOPED", DescId { moped: 3, index: 0 }),
    ] {
        for op in [Op::StoreEnvelope, Op::Poll] {
            // Three MOPEDs: a 2-bit MOPED field, so ID bits can name a fourth that is not.
            let mut h = Host::new(3, 8, 12);
            let p = h.spawn(0, 0, 0, &[(0x10_0000, 64)]);
            let rejected = match op {
                Op::Poll => {
                    h.store(p, Port::Poll, h.bits(id) as u64).unwrap();
                    PollStatus::from_value(h.load(p, Port::Poll)).unwrap() == PollStatus::Error
                }
                _ => h
                    .store(
                        p,
                        Port::Data,
                        pack_store(h.bits(id), send_env(1, 1).encode().unwrap()).unwrap(),
                    )
                    .is_err(),
            };
            assert!(rejected, "{what} x {op:?}");
            assert!(h.mopeds.iter().all(|m| m.table().occupied() == 0), "{what}");
            cases += 1;
        }
    }
    // Malformed accesses: misaligned and narrow port accesses, a bad poll value.
    let mut h = Host::new(1, 8, 13);
    let p = h.spawn(0, 0, 0, &[(0x10_0000, 64)]);
    let ctx = h.ctx(p);
    let base = h.port(p, Port::Data);
    assert_eq!(
        h.mopeds[0].port_load(0, ctx, base + 4, 8),
        PortAnswer::Value(ERROR)
    );
    assert_eq!(
        h.mopeds[0].port_load(0, ctx, base, 4),
        PortAnswer::Value(ERROR)
    );
    assert!(h.store(p, Port::Poll, 1 << 20).is_err());
    cases += 3;
    assert!(cases >= 120, "{cases} cases");
}

#[test]
fn backoff_refuses_revokes_and_clears() {
    // Two MOPEDs with tables of 4: the receiver's MOPED (1) also matches everything.
    let mut h = Host::new(2, 4, 14);
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 0x1000)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 0x1000)]);
    // Sends with no receive yet: their copies fill MOPED 1's table.
    let mut sends = Vec::new();
    for k in 0..4u64 {
        if let Some(id) = h.post(s, send_env(1, k as u32), 0x10_0000 + 64 * k, 64) {
            sends.push(id);
        }
    }
    for _ in 0..20 {
        h.step();
    }
    // MOPED 1 holds 4 copies; a 5th reservation there is refused and backoff is set on
    // every MOPED.
    let v = h.load(r, Port::Data);
    assert_eq!(v, REFUSED);
    for _ in 0..5 {
        h.step();
    }
    assert!(h.mopeds.iter().all(|m| m.backoff(0)));
    assert_eq!(h.load(s, Port::Data), REFUSED);
    // Polls of the unmatched sends revoke them; the runtime then uses the software path.
    for id in &sends {
        assert_eq!(h.wait(s, *id), PollStatus::Revoked);
    }
    for _ in 0..20 {
        h.step();
    }
    assert!(
        h.mopeds.iter().all(|m| !m.backoff(0)),
        "bits clear once drained"
    );
    assert!(h.mopeds.iter().all(|m| m.is_idle()));
    // After the (software) barrier the program uses MOPED again.
    assert!(h.post(s, send_env(1, 1), 0x10_0000, 64).is_some());
}

#[test]
fn a_matched_descriptor_is_not_revoked() {
    let mut h = Host::new(2, 4, 15);
    // Slow line answers keep the copy going while backoff arrives.
    h.max_delay = 400;
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 0x1000)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 0x1000)]);
    h.write_buf(s, 0x10_0000, &[3; 64]);
    let sid = h.post(s, send_env(1, 2), 0x10_0000, 64).unwrap();
    let rid = h
        .post(r, recv_env(Peer::Rank(0), Tag::Tag(2)), 0x20_0000, 64)
        .unwrap();
    for _ in 0..30 {
        h.step();
    }
    assert!(h.mopeds[0].table().get(sid.index).unwrap().is_matched());
    assert!(!h.mopeds[0]
        .table()
        .get(sid.index)
        .unwrap()
        .has(desc::COMPLETED));
    // Backoff arrives after the match: both still complete through MOPED.
    h.mopeds[0].receive(0, DevMsg::BackoffReq { program: 0 });
    assert_eq!(h.wait(s, sid), PollStatus::Complete);
    assert_eq!(h.wait(r, rid), PollStatus::Complete);
    assert_eq!(h.read_buf(r, 0x20_0000, 64), vec![3; 64]);
}

#[test]
fn descriptor_status_bits_follow_the_paper() {
    // The RVNMAC order of Figure 7, high bit first.
    assert_eq!(
        [
            desc::RESERVED,
            desc::VALID,
            desc::NEEDS_MATCH,
            desc::MATCHED,
            desc::ACTIVE,
            desc::COMPLETED
        ],
        [32, 16, 8, 4, 2, 1]
    );
    assert!(DescTable::new(64).is_ok());
}

#[test]
fn line_requests_use_fills_only_for_whole_lines_when_the_protocol_has_them() {
    let mut h = Host::new(2, 64, 16); // even seed: fills on
    let s = h.spawn(0, 0, 0, &[(0x10_0000, 4096)]);
    let r = h.spawn(0, 1, 1, &[(0x20_0000, 4096)]);
    h.write_buf(s, 0x10_0000, &pattern(16, 1000));
    let sid = h.post(s, send_env(1, 1), 0x10_0000, 1000).unwrap();
    // Starting 10 bytes into a line: the first and last receive lines are partial.
    let rid = h
        .post(
            r,
            recv_env(Peer::Rank(0), Tag::Tag(1)),
            0x20_0000 + 10,
            1000,
        )
        .unwrap();
    assert_eq!(h.wait(r, rid), PollStatus::Complete);
    assert_eq!(h.wait(s, sid), PollStatus::Complete);
    let st = &h.mopeds[1].stats;
    let lines = (line_of(0x20_0000 + 10 + 999) - line_of(0x20_0000 + 10)) / 64 + 1;
    assert_eq!(st.line_fills + st.line_owns, lines);
    assert_eq!(st.line_owns, 2, "partial lines keep their other bytes");
}
