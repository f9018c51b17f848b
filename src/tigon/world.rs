//! The event loop: two Tigon2 NICs, the fiber between them and their hosts. The processors
//! run EMP's steps ([`super::emp`]); the DMA engines, the PCI bus, the MACs and the wire are
//! hardware that takes no processor time.

use super::act::{step_kind, Act, FrameId};
use super::nic::{Dma, Done, Frame, FrameKind, Nic, Out, Running, RxRecord, TxRecord, Work};
use super::{Bench, EmpStep, Measurement, Setup, TigonSection, TICKS_PER_US};
use crate::engine::{EventQueue, Tie};
use crate::error::MopedError;
use crate::moped::engines::Lock;
use crate::sim::{interrupt, SimError};

/// A descriptor a host posts to its NIC.
#[derive(Clone, Copy, Debug)]
pub(super) enum Post {
    Tx { seq: u64, bytes: u64 },
    Rx { seq: u64, bytes: u64 },
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Ev {
    /// A host's descriptor reached its NIC.
    Posted {
        node: u8,
        post: Post,
    },
    /// A processor finished a step's body or its critical section.
    CpuDone {
        node: u8,
        cpu: u8,
    },
    DmaDone {
        node: u8,
        dma: Dma,
    },
    /// The MAC put a frame's last bit on the wire.
    MacDone {
        node: u8,
    },
    /// A frame reached `node`'s MAC.
    Arrive {
        node: u8,
        frame: FrameId,
    },
    /// A host noticed a completion.
    Seen {
        node: u8,
        done: Done,
    },
}

impl Tie for Ev {
    fn tie(&self) -> u16 {
        0
    }
}

pub(super) struct World {
    pub cfg: TigonSection,
    pub setup: Setup,
    pub q: EventQueue<Ev>,
    pub nics: [Nic; 2],
    frames: Vec<Option<Frame>>,
    free_frames: Vec<FrameId>,
    pub hosts: Hosts,
    pub frames_waited: u64,
    events: u64,
    /// Processor ticks of each EMP step (`EmpStep::ALL` order), computed once.
    step_cost: [u64; 9],
}

/// One host's progress (the hosts' loops are in `host.rs`).
#[derive(Clone, Debug, Default)]
pub(super) struct HostState {
    /// When its last programmed-I/O post is done.
    pub(super) free_at: u64,
    pub(super) tx_posted: u64,
    pub(super) rx_posted: u64,
    pub(super) tx_done: u64,
    pub(super) rx_done: u64,
    /// Iterations of its main loop completed.
    pub(super) loops: u64,
}

pub(super) struct Hosts {
    pub bench: Bench,
    pub bytes: u64,
    pub n: u64,
    pub(super) node: [HostState; 2],
    /// When the timed loop ended.
    pub end: Option<u64>,
    pub verified: u64,
}

impl Hosts {
    pub fn new(bench: Bench, bytes: u64, n: u64) -> Hosts {
        Hosts {
            bench,
            bytes,
            n,
            node: Default::default(),
            end: None,
            verified: 0,
        }
    }
}

/// Runs `bench` with messages of `bytes` for `iterations` under `setup` on the testbed
/// `cfg` (validated by the caller, as `SystemConfig::validate` does).
pub fn run(
    cfg: &TigonSection,
    setup: Setup,
    bench: Bench,
    bytes: u64,
    iterations: u64,
) -> Result<Measurement, MopedError> {
    let mut w = World {
        cfg: cfg.clone(),
        setup,
        q: EventQueue::new(),
        nics: [Nic::new(cfg, setup), Nic::new(cfg, setup)],
        frames: Vec::new(),
        free_frames: Vec::new(),
        hosts: Hosts::new(bench, bytes, iterations.max(1)),
        frames_waited: 0,
        events: 0,
        step_cost: EmpStep::ALL.map(|step| cfg.step_ticks(step)),
    };
    // Every message takes at most a few tens of events per frame: far more means a loop.
    let frames = cfg.frames(bytes) + 2;
    let limit = 64 * 2 * (iterations.max(1) + cfg.posted_receives) * frames + 100_000;
    w.start();
    while w.hosts.end.is_none() {
        let Some((_, ev)) = w.q.pop() else {
            return Err(w.fault(None, "no event is left and the benchmark has not ended"));
        };
        w.events += 1;
        if w.events & (interrupt::EVERY - 1) == 0 && interrupt::requested() {
            return Err(SimError::Interrupted.into());
        }
        if w.events > limit {
            return Err(w.fault(
                None,
                &format!("{limit} events without the benchmark ending"),
            ));
        }
        w.handle(ev)?;
    }
    Ok(w.measurement())
}

impl World {
    pub fn now(&self) -> u64 {
        self.q.now()
    }

    fn handle(&mut self, ev: Ev) -> Result<(), MopedError> {
        match ev {
            Ev::Posted { node, post } => self.posted(node as usize, post),
            Ev::CpuDone { node, cpu } => self.cpu_done(node as usize, cpu as usize),
            Ev::DmaDone { node, dma } => self.dma_done(node as usize, dma),
            Ev::MacDone { node } => self.mac_done(node as usize),
            Ev::Arrive { node, frame } => self.arrive(node as usize, frame),
            Ev::Seen { node, done } => self.seen(node as usize, done),
        }
    }

    fn posted(&mut self, node: usize, post: Post) -> Result<(), MopedError> {
        match post {
            Post::Tx { seq, bytes } => {
                let payload = super::pattern::pattern(node, seq, bytes);
                self.nics[node].tx.push_back(TxRecord {
                    seq,
                    frames: self.cfg.frames(bytes) as u32,
                    bytes,
                    payload,
                    bookkept: false,
                    next: 0,
                    acked: 0,
                });
                self.push_work(node, Act::Bookkeep { seq }, None);
            }
            Post::Rx { seq, bytes } => {
                let record = RxRecord {
                    frames: self.cfg.frames(bytes) as u32,
                    buf: vec![0; bytes as usize],
                    ready: false,
                    classified: 0,
                    received: 0,
                };
                if self.nics[node].rx.insert(seq, record).is_some() {
                    return Err(self.fault(Some(node), &format!("receive {seq} posted twice")));
                }
                self.push_work(node, Act::PostReceive { seq }, None);
            }
        }
        Ok(())
    }

    /// Queues `act` for the processor its scheme gives it, after a step on `prev`.
    fn push_work(&mut self, node: usize, act: Act, prev: Option<u8>) {
        let nic = &mut self.nics[node];
        let cpu = nic.cpu_of(&act);
        nic.enqueue(cpu, Work { act, prev });
        self.start_next(node, cpu);
    }

    /// Starts processor `cpu`'s next step if it is idle.
    fn start_next(&mut self, node: usize, cpu: usize) {
        let now = self.now();
        let queue_ticks = self.cfg.cpu_ticks(self.cfg.queue_cycles);
        let nic = &mut self.nics[node];
        if nic.running[cpu].is_some() {
            return;
        }
        let Some(w) = nic.dequeue(cpu) else {
            return;
        };
        let mut cost = self.step_cost[w.act.step() as usize];
        if nic.locking && w.act.always_queues() {
            // Its queue update moves into the critical section at its end.
            cost = cost.saturating_sub(queue_ticks);
        }
        let slot = nic
            .cpus
            .run(step_kind(w.act.step()), cost, now, &[], w.prev);
        debug_assert_eq!(slot.engine as usize, cpu, "{:?}", w.act);
        nic.running[cpu] = Some(Running {
            act: w.act,
            engine: slot.engine,
            outs: None,
        });
        let (node, cpu) = (node as u8, cpu as u8);
        self.q.schedule(slot.end, Ev::CpuDone { node, cpu });
    }

    fn cpu_done(&mut self, node: usize, cpu: usize) -> Result<(), MopedError> {
        let Some(r) = self.nics[node].running[cpu].take() else {
            return Err(self.fault(Some(node), &format!("processor {cpu} ended no step")));
        };
        let outs = match r.outs {
            Some(outs) => outs,
            None => {
                let outs = self.finish(node, r.act)?;
                let tail = self.critical_section(node, cpu, &outs);
                if tail > 0 {
                    let now = self.now();
                    let nic = &mut self.nics[node];
                    let kind = step_kind(r.act.step());
                    let locks = [Lock::Queues];
                    let slot = nic.cpus.continue_step(kind, tail, now, &locks, r.engine);
                    nic.running[cpu] = Some(Running {
                        outs: Some(outs),
                        ..r
                    });
                    let (node, cpu) = (node as u8, cpu as u8);
                    self.q.schedule(slot.end, Ev::CpuDone { node, cpu });
                    return Ok(());
                }
                outs
            }
        };
        self.apply(node, r.engine, outs);
        self.start_next(node, cpu);
        Ok(())
    }

    /// Ticks the two-processor firmware holds the semaphore at the end of a step with
    /// `outs`: to update a DMA or MAC queue, to hand work to the other processor, or both.
    fn critical_section(&self, node: usize, cpu: usize, outs: &[Out]) -> u64 {
        let nic = &self.nics[node];
        if !nic.locking {
            return 0;
        }
        let queues = outs.iter().any(Out::queues);
        let hands_off = outs
            .iter()
            .any(|o| matches!(o, Out::Work(a) if nic.cpu_of(a) != cpu));
        if !queues && !hands_off {
            return 0;
        }
        let c = &self.cfg;
        let cycles = c.semaphore_cycles
            + if queues { c.queue_cycles } else { 0 }
            + if hands_off { c.event_post_cycles } else { 0 };
        c.cpu_ticks(cycles)
    }

    fn apply(&mut self, node: usize, engine: u8, outs: Vec<Out>) {
        for o in outs {
            match o {
                Out::Work(a) => self.push_work(node, a, Some(engine)),
                Out::Dma(d) => self.start_dma(node, d),
                Out::Mac(f) => {
                    self.nics[node].mac_queue.push_back(f);
                    self.kick(node);
                }
                Out::FreeRx => {
                    self.nics[node].rx_free += 1;
                    self.kick(1 - node);
                }
            }
        }
    }

    fn start_dma(&mut self, node: usize, dma: Dma) {
        let (bytes, read) = match dma {
            Dma::Fetch(f) => (self.frame_len(f), true),
            Dma::Deliver(f) => (self.frame_len(f), false),
            Dma::Status(_) => (self.cfg.status_bytes, false),
        };
        let (latency, data) = self.cfg.dma_ticks(bytes, read);
        let now = self.now();
        let nic = &mut self.nics[node];
        let e = usize::from(!read);
        let start = now.max(nic.dma_free[e]);
        let end = (start + latency).max(nic.pci_free) + data;
        nic.pci_free = end;
        nic.dma_free[e] = end;
        nic.counters.pci_ticks += data;
        self.q.schedule(
            end,
            Ev::DmaDone {
                node: node as u8,
                dma,
            },
        );
    }

    fn dma_done(&mut self, node: usize, dma: Dma) -> Result<(), MopedError> {
        match dma {
            Dma::Fetch(f) => {
                self.nics[node].mac_queue.push_back(f);
                self.kick(node);
            }
            Dma::Deliver(f) => {
                let frame = self.take_frame(f)?;
                let FrameKind::Data {
                    offset, len, bytes, ..
                } = frame.kind
                else {
                    return Err(self.fault(Some(node), "an acknowledgment delivered to the host"));
                };
                let (o, n) = (offset as usize, len as usize);
                let rec = self.rx_mut(node, frame.seq)?;
                let Some(dst) = rec.buf.get_mut(o..o + n) else {
                    let what = format!("frame bytes {o}..{} outside receive {}", o + n, frame.seq);
                    return Err(self.fault(Some(node), &what));
                };
                dst.copy_from_slice(&bytes[o..o + n]);
                self.nics[node].rx_free += 1;
                self.kick(1 - node);
                self.push_work(node, Act::Receiving { seq: frame.seq }, None);
            }
            Dma::Status(done) => {
                let at = self.now() + TigonSection::ns_ticks(self.cfg.poll_ns);
                let node = node as u8;
                self.q.schedule(at, Ev::Seen { node, done });
            }
        }
        Ok(())
    }

    /// Starts `node`'s MAC on its next frame if the wire is free and the link partner has
    /// a receive buffer; otherwise the frame waits (802.3x pause).
    fn kick(&mut self, node: usize) {
        let now = self.now();
        let peer = 1 - node;
        let nic = &self.nics[node];
        let Some(&f) = nic.mac_queue.front() else {
            return;
        };
        if nic.mac_sending.is_some() {
            return;
        }
        if self.nics[peer].rx_free == 0 {
            self.nics[node].pause_since.get_or_insert(now);
            return;
        }
        self.nics[peer].rx_free -= 1;
        let data = self.frame_is_data(f);
        let ticks = self.cfg.wire_ticks(self.frame_len(f));
        let prop = TigonSection::ns_ticks(self.cfg.propagation_ns);
        let nic = &mut self.nics[node];
        nic.mac_queue.pop_front();
        if let Some(since) = nic.pause_since.take() {
            nic.counters.pause_ticks += now - since;
        }
        nic.mac_sending = Some(data);
        nic.counters.wire_ticks += ticks;
        if data {
            nic.counters.data_frames += 1;
        } else {
            nic.counters.ack_frames += 1;
        }
        let n = node as u8;
        self.q.schedule(now + ticks, Ev::MacDone { node: n });
        let arrive = Ev::Arrive {
            node: peer as u8,
            frame: f,
        };
        self.q.schedule(now + ticks + prop, arrive);
    }

    fn mac_done(&mut self, node: usize) -> Result<(), MopedError> {
        let nic = &mut self.nics[node];
        if nic.mac_sending.take() == Some(true) {
            nic.tx_free += 1;
            if let Some(act) = nic.arm_transmitter() {
                self.push_work(node, act, None);
            }
        }
        self.kick(node);
        Ok(())
    }

    fn arrive(&mut self, node: usize, f: FrameId) -> Result<(), MopedError> {
        let frame = self.frame(f)?;
        let act = match frame.kind {
            FrameKind::Ack { .. } => Act::AckArrival(f),
            FrameKind::Data { .. } => {
                let ready = self.nics[node].rx.get(&frame.seq).is_some_and(|r| r.ready);
                if !ready {
                    self.nics[node].waiting.push(f);
                    self.frames_waited += 1;
                    return Ok(());
                }
                Act::Classify(f)
            }
        };
        self.push_work(node, act, None);
        Ok(())
    }

    pub fn new_frame(&mut self, frame: Frame) -> FrameId {
        match self.free_frames.pop() {
            Some(f) => {
                self.frames[f as usize] = Some(frame);
                f
            }
            None => {
                self.frames.push(Some(frame));
                (self.frames.len() - 1) as FrameId
            }
        }
    }

    pub fn frame(&self, f: FrameId) -> Result<&Frame, MopedError> {
        match self.frames.get(f as usize).and_then(Option::as_ref) {
            Some(frame) => Ok(frame),
            None => Err(self.fault(None, &format!("frame {f} used after it was freed"))),
        }
    }

    pub fn take_frame(&mut self, f: FrameId) -> Result<Frame, MopedError> {
        match self.frames.get_mut(f as usize).and_then(Option::take) {
            Some(frame) => {
                self.free_frames.push(f);
                Ok(frame)
            }
            None => Err(self.fault(None, &format!("frame {f} freed twice"))),
        }
    }

    fn frame_len(&self, f: FrameId) -> u64 {
        match self.frames.get(f as usize).and_then(Option::as_ref) {
            Some(Frame {
                kind: FrameKind::Data { len, .. },
                ..
            }) => *len,
            _ => 0,
        }
    }

    fn frame_is_data(&self, f: FrameId) -> bool {
        matches!(
            self.frames.get(f as usize).and_then(Option::as_ref),
            Some(Frame {
                kind: FrameKind::Data { .. },
                ..
            })
        )
    }

    pub fn tx_mut(&mut self, node: usize, seq: u64) -> Result<&mut TxRecord, MopedError> {
        if self.nics[node].tx_record(seq).is_none() {
            return Err(self.fault(Some(node), &format!("no transmit record for message {seq}")));
        }
        Ok(self.nics[node].tx_record(seq).expect("checked above"))
    }

    pub fn rx_mut(&mut self, node: usize, seq: u64) -> Result<&mut RxRecord, MopedError> {
        if !self.nics[node].rx.contains_key(&seq) {
            return Err(self.fault(Some(node), &format!("no receive posted for message {seq}")));
        }
        Ok(self.nics[node].rx.get_mut(&seq).expect("checked above"))
    }

    /// An internal failure: where and when, and what each NIC holds.
    pub fn fault(&self, node: Option<usize>, what: &str) -> MopedError {
        let nics: Vec<String> = (0..2)
            .filter(|&n| node.map_or(true, |m| m == n))
            .map(|n| format!("NIC {n}: {}", self.nics[n].state()))
            .collect();
        let s = self.setup;
        let h = &self.hosts;
        let detail = format!(
            "Tigon2 testbed, {} on {} processor(s), {} of {} bytes, at {:.3} us: {what}; {} \
             (deterministic: `moped engines --only tigon` replays it)",
            s.scheme,
            s.cpus,
            h.bench.name(),
            h.bytes,
            self.now() as f64 / TICKS_PER_US as f64,
            nics.join("; ")
        );
        MopedError::Simulation(SimError::check(self.now(), detail))
    }

    fn measurement(&self) -> Measurement {
        let nic = |n: usize| {
            let mut c = self.nics[n].counters.clone();
            c.cpus = self.nics[n].cpus.stats.clone();
            c
        };
        Measurement {
            setup: self.setup,
            bench: self.hosts.bench,
            bytes: self.hosts.bytes,
            iterations: self.hosts.n,
            ticks: self.hosts.end.unwrap_or(self.now()),
            nics: [nic(0), nic(1)],
            messages_verified: self.hosts.verified,
            frames_waited: self.frames_waited,
            events: self.events,
        }
    }
}
