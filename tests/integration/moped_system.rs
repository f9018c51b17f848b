//! MOPED in the whole simulated CMP: processes with page tables in memory, messages sent
//! through the ports, data moved by the copy units through each design's protocol. A small
//! runtime drives the cores: it posts descriptors, polls them, and falls back to a software
//! path through shared memory when MOPED backs off.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use moped::coherence::{AccessKind, Completed, CoreReq, Protocol};
use moped::config::SystemConfig;
use moped::design::Design;
use moped::envelope::{Envelope, Kind, Peer, Tag};
use moped::moped::ports::{pack_store, PollStatus, Port, PortMap, REFUSED};
use moped::os::{ProcId, Region};
use moped::sim::{Driver, Next, Sim};

/// Where every process maps the shared segment of the software path. Its first word is
/// the program's "backed off" flag; message slots follow.
const MAILBOX_VA: u64 = 0x7000_0000;
const BACKED_OFF: u64 = MAILBOX_VA;
const SLOTS: u64 = 64;

/// One message of a test.
#[derive(Clone, Debug)]
struct Message {
    src: ProcId,
    dst: ProcId,
    tag: u32,
    sva: u64,
    rva: u64,
    len: u64,
    /// Offset of its slot in the shared segment (software path): a flag word, then data.
    slot: u64,
}

/// What a core does, in order.
#[derive(Clone, Copy, Debug)]
enum Call {
    Send(usize),
    Recv(usize),
    /// Wait for every message this core posted.
    WaitAll,
    /// Rewrite message k's send buffer (the sender reusing it).
    Fill(usize, u8),
}

/// The step of the call in progress.
#[derive(Clone, Copy, Debug)]
enum Cur {
    Idle,
    CheckFlag {
        k: usize,
        send: bool,
    },
    Reserve {
        k: usize,
        send: bool,
    },
    Field {
        k: usize,
        send: bool,
        id: u16,
        n: u8,
    },
    PollStore {
        i: usize,
    },
    PollLoad {
        i: usize,
    },
    SwSend {
        k: usize,
        off: u64,
    },
    SwFlag {
        k: usize,
    },
    SwWaitFlag {
        k: usize,
    },
    SwCopy {
        k: usize,
        off: u64,
    },
    Fill {
        k: usize,
        off: u64,
        byte: u8,
    },
}

struct Core {
    proc: ProcId,
    calls: VecDeque<Call>,
    cur: Cur,
    /// Posted messages: (message, is send, descriptor), waiting for WaitAll.
    posted: Vec<(usize, bool, u16)>,
    /// Messages that go through the software path at the next WaitAll.
    software: Vec<(usize, bool)>,
    /// A load's value, waiting to be acted on.
    loaded: Option<u64>,
    waiting: bool,
}

struct Runtime {
    msgs: Vec<Message>,
    cores: Vec<Core>,
    ports: PortMap,
    program: Vec<(u8, u16)>,
    /// Messages that used the software path.
    software_msgs: usize,
    revoked: usize,
    refused: usize,
}

fn env(m: &Message, send: bool, rank_of: &dyn Fn(ProcId) -> u16) -> Envelope {
    if send {
        Envelope {
            kind: Kind::Send,
            peer: Peer::Rank(rank_of(m.dst)),
            context: 0,
            tag: Tag::Tag(m.tag),
        }
    } else {
        Envelope {
            kind: Kind::Recv,
            peer: Peer::Rank(rank_of(m.src)),
            context: 0,
            tag: Tag::Tag(m.tag),
        }
    }
}

fn load(addr: u64) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind: AccessKind::Load,
        addr,
        size: 8,
        value: 0,
    })
}

fn store_byte(addr: u64, value: u64) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind: AccessKind::Store,
        addr,
        size: 1,
        value: value & 0xff,
    })
}

fn store(addr: u64, value: u64) -> Next {
    Next::Access(CoreReq {
        id: 0,
        kind: AccessKind::Store,
        addr,
        size: 8,
        value,
    })
}

/// The byte at offset `i` of message `k`'s data, filled in round `round`.
fn data_byte(k: usize, round: u8, i: u64) -> u8 {
    (i.wrapping_mul(131) ^ (k as u64).wrapping_mul(0x9E37) ^ (round as u64 * 77)) as u8
}

impl Runtime {
    fn port(&self, c: usize, port: Port) -> u64 {
        let (p, r) = self.program[self.cores[c].proc];
        self.ports.addr_of(p, r, port).unwrap()
    }

    fn rank_of(&self) -> impl Fn(ProcId) -> u16 + '_ {
        move |p| self.program[p].1
    }

    /// The next access of core `c`, advancing its call.
    fn advance(&mut self, c: usize) -> Next {
        loop {
            let cur = self.cores[c].cur;
            let loaded = self.cores[c].loaded.take();
            match cur {
                Cur::Idle => {
                    let Some(call) = self.cores[c].calls.pop_front() else {
                        return Next::Done;
                    };
                    self.cores[c].cur = match call {
                        Call::Send(k) => Cur::CheckFlag { k, send: true },
                        Call::Recv(k) => Cur::CheckFlag { k, send: false },
                        Call::WaitAll => Cur::PollStore { i: 0 },
                        Call::Fill(k, byte) => Cur::Fill { k, off: 0, byte },
                    };
                }
                // The runtime's side of backoff: once any rank backed off, the program
                // uses the software path (until a barrier, which these tests never reach),
                // so the two sides of a message never split between MOPED and software.
                Cur::CheckFlag { k, send } => match loaded {
                    None => return self.wait_load(c, BACKED_OFF),
                    Some(0) => {
                        self.cores[c].cur = Cur::Reserve { k, send };
                        return self.wait_load(c, self.port(c, Port::Data));
                    }
                    Some(_) => {
                        self.cores[c].software.push((k, send));
                        self.cores[c].cur = Cur::Idle;
                    }
                },
                Cur::Reserve { k, send } => {
                    let v = loaded.expect("reservation value");
                    if v == REFUSED {
                        self.refused += 1;
                        self.cores[c].software.push((k, send));
                        self.cores[c].cur = Cur::Idle;
                        return store(BACKED_OFF, 1);
                    }
                    let id = v as u16;
                    self.cores[c].cur = Cur::Field { k, send, id, n: 0 };
                }
                Cur::Field { k, send, id, n } => {
                    if n == 3 {
                        self.cores[c].posted.push((k, send, id));
                        self.cores[c].cur = Cur::Idle;
                        continue;
                    }
                    let m = &self.msgs[k];
                    let payload = match n {
                        0 => env(m, send, &self.rank_of()).encode().unwrap(),
                        1 => {
                            if send {
                                m.sva
                            } else {
                                m.rva
                            }
                        }
                        _ => m.len,
                    };
                    self.cores[c].cur = Cur::Field {
                        k,
                        send,
                        id,
                        n: n + 1,
                    };
                    return store(self.port(c, Port::Data), pack_store(id, payload).unwrap());
                }
                Cur::PollStore { i } => {
                    if i == self.cores[c].posted.len() {
                        self.cores[c].posted.clear();
                        self.start_software(c);
                        continue;
                    }
                    let id = self.cores[c].posted[i].2;
                    self.cores[c].cur = Cur::PollLoad { i };
                    return store(self.port(c, Port::Poll), id as u64);
                }
                Cur::PollLoad { i } => match loaded {
                    None => return self.wait_load(c, self.port(c, Port::Poll)),
                    Some(v) => {
                        let status = PollStatus::from_value(v).unwrap();
                        let (k, send, _) = self.cores[c].posted[i];
                        match status {
                            PollStatus::Complete => {
                                self.cores[c].cur = Cur::PollStore { i: i + 1 };
                            }
                            PollStatus::Revoked => {
                                self.revoked += 1;
                                self.cores[c].software.push((k, send));
                                self.cores[c].cur = Cur::PollStore { i: i + 1 };
                                return store(BACKED_OFF, 1);
                            }
                            PollStatus::Pending | PollStatus::Retry => {
                                self.cores[c].cur = Cur::PollStore { i };
                                return Next::Wait(20);
                            }
                            s => panic!(
                                "core {c}: message {k} ({:?}) polled {s:?}",
                                self.cores[c].posted[i]
                            ),
                        }
                    }
                },
                Cur::SwSend { k, off } => {
                    // Byte by byte: the buffers have any alignment.
                    let m = self.msgs[k].clone();
                    if off >= m.len {
                        self.cores[c].cur = Cur::SwFlag { k };
                        continue;
                    }
                    match loaded {
                        None => return self.wait_load_byte(c, m.sva + off),
                        Some(v) => {
                            self.cores[c].cur = Cur::SwSend { k, off: off + 1 };
                            return store_byte(MAILBOX_VA + m.slot + 8 + off, v);
                        }
                    }
                }
                Cur::SwFlag { k } => {
                    self.cores[c].cur = Cur::Idle;
                    self.software_msgs += 1;
                    self.next_software(c);
                    return store(MAILBOX_VA + self.msgs[k].slot, 1);
                }
                Cur::SwWaitFlag { k } => match loaded {
                    None => return self.wait_load(c, MAILBOX_VA + self.msgs[k].slot),
                    Some(1) => self.cores[c].cur = Cur::SwCopy { k, off: 0 },
                    Some(_) => {
                        self.cores[c].cur = Cur::SwWaitFlag { k };
                        return Next::Wait(20);
                    }
                },
                Cur::SwCopy { k, off } => {
                    let m = self.msgs[k].clone();
                    if off >= m.len {
                        self.cores[c].cur = Cur::Idle;
                        self.next_software(c);
                        continue;
                    }
                    match loaded {
                        None => return self.wait_load_byte(c, MAILBOX_VA + m.slot + 8 + off),
                        Some(v) => {
                            self.cores[c].cur = Cur::SwCopy { k, off: off + 1 };
                            return store_byte(m.rva + off, v);
                        }
                    }
                }
                Cur::Fill { k, off, byte } => {
                    let m = &self.msgs[k];
                    if off >= m.len {
                        self.cores[c].cur = Cur::Idle;
                        continue;
                    }
                    let a = m.sva + off;
                    // One byte at a time where a word would leave the buffer or its line.
                    let n = if (m.len - off) >= 8 && a % 8 == 0 {
                        8
                    } else {
                        1
                    };
                    let mut v = 0u64;
                    for b in 0..n {
                        v |= (data_byte(k, byte, off + b) as u64) << (8 * b);
                    }
                    self.cores[c].cur = Cur::Fill {
                        k,
                        off: off + n,
                        byte,
                    };
                    return Next::Access(CoreReq {
                        id: 0,
                        kind: AccessKind::Store,
                        addr: a,
                        size: n as u8,
                        value: v,
                    });
                }
            }
        }
    }

    fn wait_load(&mut self, c: usize, addr: u64) -> Next {
        self.cores[c].waiting = true;
        load(addr)
    }

    fn wait_load_byte(&mut self, c: usize, addr: u64) -> Next {
        self.cores[c].waiting = true;
        Next::Access(CoreReq {
            id: 0,
            kind: AccessKind::Load,
            addr,
            size: 1,
            value: 0,
        })
    }

    /// Starts the software path of the core's backed-off messages.
    fn start_software(&mut self, c: usize) {
        self.cores[c].cur = Cur::Idle;
        self.next_software(c);
    }

    fn next_software(&mut self, c: usize) {
        if let Some((k, send)) = self.cores[c].software.pop() {
            self.cores[c].cur = if send {
                Cur::SwSend { k, off: 0 }
            } else {
                Cur::SwWaitFlag { k }
            };
        }
    }
}

impl Driver for Runtime {
    fn next(&mut self, core: usize, _now: u64) -> Result<Next, String> {
        if core >= self.cores.len() {
            return Ok(Next::Done);
        }
        if self.cores[core].waiting {
            return Ok(Next::WaitForCompletion);
        }
        Ok(self.advance(core))
    }

    fn completed(&mut self, core: usize, c: &Completed, now: u64) -> Result<(), String> {
        if now > 100_000_000 {
            return Err(format!(
                "core {core} still in {:?} at cycle {now}",
                self.cores[core].cur
            ));
        }
        if c.req.kind == AccessKind::Load {
            let st = &mut self.cores[core];
            st.waiting = false;
            st.loaded = Some(c.value);
        }
        Ok(())
    }
}

struct Setup {
    sim: Sim,
    rt: Runtime,
}

/// A system running `design` with `procs` processes, one per core: (program, rank, buffer
/// regions). Every process maps the shared segment.
fn setup(design: &str, cores: usize, procs: &[(u8, u16, Vec<Region>)], mailbox: u64) -> Setup {
    let mut cfg = SystemConfig::default();
    cfg.system.cores = cores;
    cfg.directory.banks = 4;
    cfg.watchdog.progress_cycles = 2_000_000;
    cfg.watchdog.request_cycles = 20_000_000;
    let mut sim = Sim::new(&cfg, Protocol::by_name(design).unwrap(), 1).unwrap();
    let mut ids = Vec::new();
    for (program, rank, regions) in procs {
        let mut regions = regions.clone();
        regions.push(Region {
            va: MAILBOX_VA..MAILBOX_VA + mailbox.max(64),
            // Mapped to shared frames below.
            populate: false,
        });
        ids.push(sim.spawn(*program, *rank, &regions).unwrap());
    }
    sim.share(&ids, MAILBOX_VA, mailbox.max(64)).unwrap();
    for (c, &p) in ids.iter().enumerate() {
        sim.place(c, Some(p));
    }
    let rt = Runtime {
        msgs: Vec::new(),
        cores: ids
            .iter()
            .map(|&proc| Core {
                proc,
                calls: VecDeque::new(),
                cur: Cur::Idle,
                posted: Vec::new(),
                software: Vec::new(),
                loaded: None,
                waiting: false,
            })
            .collect(),
        ports: PortMap::new(cfg.moped.port_base).unwrap(),
        program: procs.iter().map(|p| (p.0, p.1)).collect(),
        software_msgs: 0,
        revoked: 0,
        refused: 0,
    };
    Setup { sim, rt }
}

impl Setup {
    /// Adds a message and writes its send buffer's data (round 0) into memory.
    fn message(
        &mut self,
        src: ProcId,
        dst: ProcId,
        tag: u32,
        sva: u64,
        rva: u64,
        len: u64,
    ) -> usize {
        let k = self.rt.msgs.len();
        let slot = self
            .rt
            .msgs
            .last()
            .map(|m| m.slot + 8 + m.len.div_ceil(64) * 64)
            .unwrap_or(SLOTS);
        let data: Vec<u8> = (0..len).map(|i| data_byte(k, 0, i)).collect();
        self.sim.write_virtual(src, sva, &data).unwrap();
        self.rt.msgs.push(Message {
            src,
            dst,
            tag,
            sva,
            rva,
            len,
            slot,
        });
        k
    }

    fn run(&mut self) -> u64 {
        self.sim.run(&mut self.rt).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Checks every message's receive buffer against what was sent in `round`.
    fn check(&self, round: u8) {
        for (k, m) in self.rt.msgs.iter().enumerate() {
            let got = self.sim.read_virtual(m.dst, m.rva, m.len as usize);
            let want: Vec<u8> = (0..m.len).map(|i| data_byte(k, round, i)).collect();
            if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                panic!(
                    "message {k} ({} -> {}, {} bytes): byte {i} is {:#x}, sent {:#x}",
                    m.src, m.dst, m.len, got[i], want[i]
                );
            }
        }
    }
}

/// A statistic's value.
fn stat(sim: &Sim, name: &str) -> f64 {
    sim.stats(0.0)
        .get(name)
        .unwrap_or_else(|| panic!("no statistic {name}"))
        .value
        .as_f64()
}

fn region(va: u64, len: u64, populate: bool) -> Region {
    Region {
        va: va..va + len.max(1),
        populate,
    }
}

/// Several programs at once, messages of random sizes (up to 2 MB) and alignments across
/// pages, in each design: every receive buffer equals its send buffer, and no byte outside
/// the receive buffers changed.
#[test]
fn concurrent_programs_copy_byte_for_byte_in_every_design() {
    for design in Design::MOPED {
        for seed in 0..6u64 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            // Two programs of two ranks each on four cores: program p's ranks 0 and 1 are
            // processes 2p and 2p+1, and each sends one message to the other.
            let peer = |i: usize| (i / 2) * 2 + (1 - i % 2);
            let lens: Vec<u64> = (0..4)
                .map(|i| match rng.gen_range(0..4) {
                    // One 2 MB message per design.
                    _ if seed == 0 && i == 0 => 2 << 20,
                    0 => rng.gen_range(0..64),
                    1 => rng.gen_range(64..8192),
                    2 => rng.gen_range(8192..70_000),
                    _ => rng.gen_range(0..200_000),
                })
                .collect();
            let s_offs: Vec<u64> = (0..4).map(|_| rng.gen_range(0..4096)).collect();
            let r_offs: Vec<u64> = (0..4).map(|_| rng.gen_range(0..4096)).collect();
            let (sva, rva) = (
                |i: usize| 0x1000_0000 + s_offs[i],
                |i: usize| 0x4000_0000 + r_offs[i],
            );
            let procs: Vec<(u8, u16, Vec<Region>)> = (0..4)
                .map(|i| {
                    // Process i receives its peer's message; a page of guard follows it.
                    let rlen = lens[peer(i)];
                    (
                        (i / 2) as u8,
                        (i % 2) as u16,
                        vec![
                            region(sva(i), lens[i] + 64, rng.gen_bool(0.5)),
                            region(
                                rva(i) - r_offs[i],
                                rlen + r_offs[i] + 4096,
                                rng.gen_bool(0.5),
                            ),
                        ],
                    )
                })
                .collect();
            let mut s = setup(design.name(), 4, &procs, 64);
            for (i, &len) in lens.iter().enumerate() {
                s.message(i, peer(i), 1, sva(i), rva(peer(i)), len);
            }
            for c in 0..4 {
                let peer_msg = (c / 2) * 2 + (1 - c % 2);
                s.rt.cores[c]
                    .calls
                    .extend([Call::Recv(peer_msg), Call::Send(c), Call::WaitAll]);
            }
            s.run();
            s.check(0);
            // The copies left every send buffer as it was.
            for (k, m) in s.rt.msgs.iter().enumerate() {
                let got = s.sim.read_virtual(m.src, m.sva, m.len as usize);
                assert!(
                    (0..m.len).all(|i| got[i as usize] == data_byte(k, 0, i)),
                    "{design} seed {seed}: message {k}'s send buffer changed"
                );
            }
            // The rest of each receive region (its first page up to the buffer, and a page
            // after it) still reads zero.
            for (k, m) in s.rt.msgs.iter().enumerate() {
                let head = m.rva % 4096;
                let before = s.sim.read_virtual(m.dst, m.rva - head, head as usize);
                let after = s.sim.read_virtual(m.dst, m.rva + m.len, 4096);
                assert!(
                    before.iter().chain(&after).all(|&b| b == 0),
                    "{design} seed {seed}: bytes around message {k}'s receive buffer changed"
                );
            }
            assert_eq!(stat(&s.sim, "system.moped.anomalies"), 0.0, "{design}");
            assert_eq!(stat(&s.sim, "system.moped.completed"), 4.0, "{design}");
            assert_eq!(s.rt.software_msgs, 0);
            eprintln!(
                "{design} seed {seed}: lengths {lens:?}, {} cycles, {} faults",
                stat(&s.sim, "sim.cycles"),
                stat(&s.sim, "system.moped.faults")
            );
        }
    }
}

/// The paper's mechanism (section 4.5): a sender that reuses its send buffer. Under
/// BASEMOPED the receiver's M_GETS takes each written line away (migratory hand-over) and
/// writes it back, so the sender's next writes miss to memory; under OPTCOPY the lines stay.
#[test]
fn a_reused_send_buffer_stays_in_the_sender_cache_only_under_optcopy() {
    let mut memory_misses = Vec::new();
    for design in ["basemoped", "optcopy"] {
        let len = 16 * 1024;
        let (sva, rva) = (0x1000_0000, 0x4000_0000);
        let procs = vec![
            (0u8, 0u16, vec![region(sva, len, true)]),
            (0u8, 1u16, vec![region(rva, len, true)]),
        ];
        let mut s = setup(design, 2, &procs, 64);
        let rounds = 6u8;
        for round in 0..rounds {
            let k = s.message(0, 1, round as u32, sva, rva, len);
            let _ = k;
        }
        for round in 0..rounds {
            let k = round as usize;
            // The sender rewrites its buffer, then sends it; the receiver receives it.
            s.rt.cores[0]
                .calls
                .extend([Call::Fill(k, round), Call::Send(k), Call::WaitAll]);
            s.rt.cores[1].calls.extend([Call::Recv(k), Call::WaitAll]);
        }
        s.run();
        // The last round's data is what the receiver holds.
        let got = s.sim.read_virtual(1, rva, len as usize);
        let want: Vec<u8> = (0..len)
            .map(|i| data_byte(rounds as usize - 1, rounds - 1, i))
            .collect();
        assert_eq!(got, want, "{design}");
        memory_misses.push(stat(&s.sim, "system.cpu0.l2.misses_memory"));
    }
    let (base, opt) = (memory_misses[0], memory_misses[1]);
    // 256 lines per round: BASEMOPED misses to memory on nearly every rewrite.
    assert!(base > 4.0 * 256.0, "basemoped sender memory misses {base}");
    assert!(opt < base / 4.0, "optcopy {opt} vs basemoped {base}");
}

/// Backoff (section 4.4): 15 ranks keep 8 sends each outstanding to rank 0, which keeps 8
/// receives outstanding, against 64-entry descriptor tables. Rank 0's MOPED, where all
/// these messages are matched, runs out of entries: reservations are refused, unmatched
/// descriptors revoked, and those messages go through the software path. Every message
/// arrives intact, and every backoff bit clears once the descriptors drain.
#[test]
fn backoff_delivers_every_message_and_clears() {
    let senders = 15u16;
    let per = 8u16;
    let len = 256u64;
    let procs: Vec<(u8, u16, Vec<Region>)> = (0..=senders)
        .map(|r| {
            (
                0u8,
                r,
                vec![
                    region(0x1000_0000, 0x1000, true),
                    region(0x4000_0000, 0x10_0000, true),
                ],
            )
        })
        .collect();
    let mut s = setup("optcopy", 16, &procs, 0x10_0000);
    let mut by_sender = vec![Vec::new(); senders as usize + 1];
    for j in 1..=senders {
        for t in 0..per {
            // Distinct (source, tag) per message: each send matches exactly one receive.
            let sva = 0x1000_0000 + t as u64 * len;
            let rva = 0x4000_0000 + ((j - 1) * per + t) as u64 * len + 3;
            let k = s.message(j as usize, 0, t.into(), sva, rva, len);
            by_sender[j as usize].push(k);
        }
    }
    for (j, msgs) in by_sender.iter().enumerate().skip(1) {
        s.rt.cores[j]
            .calls
            .extend(msgs.iter().map(|&k| Call::Send(k)));
        s.rt.cores[j].calls.push_back(Call::WaitAll);
        s.rt.cores[0]
            .calls
            .extend(msgs.iter().map(|&k| Call::Recv(k)));
        s.rt.cores[0].calls.push_back(Call::WaitAll);
    }
    s.run();
    s.check(0);
    let refused = stat(&s.sim, "system.moped.refused");
    let revoked = stat(&s.sim, "system.moped.revoked");
    let completed = stat(&s.sim, "system.moped.completed");
    eprintln!(
        "backoff: {} software, {refused} refused, {revoked} revoked, {completed} by MOPED, {} cycles",
        s.rt.software_msgs,
        stat(&s.sim, "sim.cycles")
    );
    assert!(
        s.rt.software_msgs > 0,
        "some messages take the software path"
    );
    assert!(completed > 0.0, "some messages go through MOPED");
    assert_eq!(
        s.rt.software_msgs as f64 + completed,
        (senders * per) as f64
    );
    assert!(refused > 0.0 && stat(&s.sim, "system.moped.backoffs_set") > 0.0);
    for (m, d) in s.sim.mopeds.iter().enumerate() {
        assert!(!d.backoff(0), "MOPED {m}'s backoff bit is still set");
        assert!(d.is_idle(), "MOPED {m} still holds descriptors");
    }
    assert_eq!(stat(&s.sim, "system.moped.anomalies"), 0.0);
}

/// The shipped program file: port ops from the text format, processes with lazy regions,
/// and `expect=` loads that check the copied data.
#[test]
fn the_example_program_runs_in_every_moped_design() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads/examples/moped_pingpong.toml");
    let cfg = SystemConfig::default();
    let prog = moped::core::Program::from_file(&path, &cfg).unwrap();
    let mut misses = Vec::new();
    for design in Design::MOPED {
        let r = moped::api::run::run_program(&cfg, &prog, design, 1)
            .unwrap_or_else(|e| panic!("{design}: {e}"));
        let get = |n: &str| r.stats.get(n).unwrap().value.as_f64();
        assert_eq!(get("system.moped.completed"), 3.0, "{design}");
        assert!(
            get("system.moped.faults") > 0.0,
            "the lazy receive region faults"
        );
        misses.push(get("system.cpu0.l2.misses_memory"));
    }
    assert!(
        misses[0] > 2.0 * misses[1],
        "basemoped {} vs optcopy {}",
        misses[0],
        misses[1]
    );
    // Without MOPED, a port access is a clear error.
    let e = moped::api::run::run_program(&cfg, &prog, Design::Baseline, 1).unwrap_err();
    assert!(e.to_string().contains("has no MOPED"), "{e}");
}
