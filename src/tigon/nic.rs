//! One Tigon2: its processors and their queues of steps, its DMA engines and PCI bus, its
//! MAC and frame buffers, and EMP's transmit and receive records.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::act::{step_kind, Act, FrameId};
use super::{NicCounters, Setup, TigonSection};
use crate::moped::engines::{EngineParams, Engines, Role, StepCosts, StepKind};

/// A frame's contents.
#[derive(Debug)]
pub(super) enum FrameKind {
    /// Frame `index` of message `seq`: `len` bytes of the message from `offset`.
    Data {
        index: u32,
        offset: u64,
        len: u64,
        bytes: Arc<[u8]>,
    },
    /// Message `seq`'s first `upto` frames arrived.
    Ack { upto: u32 },
}

#[derive(Debug)]
pub(super) struct Frame {
    pub seq: u64,
    pub kind: FrameKind,
}

/// EMP's record of a message to send.
#[derive(Debug)]
pub(super) struct TxRecord {
    pub seq: u64,
    pub frames: u32,
    pub bytes: u64,
    /// The host's buffer, which the DMA reads.
    pub payload: Arc<[u8]>,
    pub bookkept: bool,
    /// Frames handed to transmission so far.
    pub next: u32,
    pub acked: u32,
}

/// EMP's record of a posted receive.
#[derive(Debug)]
pub(super) struct RxRecord {
    pub frames: u32,
    /// The host's buffer, which the DMA writes.
    pub buf: Vec<u8>,
    /// The descriptor was handled: frames may be classified against it.
    pub ready: bool,
    pub classified: u32,
    pub received: u32,
}

/// A step waiting for or running on a processor.
#[derive(Clone, Copy, Debug)]
pub(super) struct Work {
    pub act: Act,
    /// The processor that ran the message's previous step (a hand-off when another).
    pub prev: Option<u8>,
}

/// What a finished step sets going.
#[derive(Clone, Copy, Debug)]
pub(super) enum Out {
    /// A next step (from the finishing step's processor).
    Work(Act),
    /// A DMA-assist transfer.
    Dma(Dma),
    /// A frame for the MAC to send.
    Mac(FrameId),
    /// A receive buffer given back to the MAC.
    FreeRx,
}

impl Out {
    /// Whether it updates a DMA or MAC queue (under the semaphore with two processors).
    pub fn queues(&self) -> bool {
        !matches!(self, Out::Work(_))
    }
}

/// A host DMA transfer.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dma {
    /// A data frame's payload from the host into the frame buffer, then to the MAC.
    Fetch(FrameId),
    /// A data frame's payload from the frame buffer into the posted receive.
    Deliver(FrameId),
    /// A completion word into host memory.
    Status(Done),
}

/// A completion the NIC reports to its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Done {
    Tx(u64),
    Rx(u64),
}

/// A processor's step in progress.
#[derive(Debug)]
pub(super) struct Running {
    pub act: Act,
    pub engine: u8,
    /// Set once the step's body is done and its critical section runs: what it sets going
    /// when that ends.
    pub outs: Option<Vec<Out>>,
}

pub(super) struct Nic {
    pub cpus: Engines,
    pub setup: Setup,
    /// The two-processor firmware's locking: with one processor, or a scheme that leaves
    /// the second idle, EMP runs as written for one processor, without the semaphore.
    pub locking: bool,
    /// Each processor's steps waiting, by rank ([`Act::rank`]).
    pub queues: Vec<[VecDeque<Work>; Act::RANKS]>,
    pub running: Vec<Option<Running>>,
    /// When each DMA engine (0: from the host, 1: to the host) and the PCI bus are free.
    pub dma_free: [u64; 2],
    pub pci_free: u64,
    pub mac_queue: VecDeque<FrameId>,
    /// The frame on the wire, if any, and whether it holds a transmit buffer.
    pub mac_sending: Option<bool>,
    pub pause_since: Option<u64>,
    pub tx_free: u64,
    pub rx_free: u64,
    pub tx: VecDeque<TxRecord>,
    /// A transmission step is queued or running.
    pub tx_armed: bool,
    pub rx: BTreeMap<u64, RxRecord>,
    /// Data frames whose receive is not handled yet, in arrival order.
    pub waiting: Vec<FrameId>,
    pub counters: NicCounters,
}

impl Nic {
    pub fn new(cfg: &TigonSection, setup: Setup) -> Nic {
        let cpus = setup.cpus.max(1);
        let params = EngineParams {
            engines: cpus,
            scheme: setup.scheme,
            handoff_cycles: cfg.cpu_ticks(cfg.event_pickup_cycles),
            costs: StepCosts::default(),
        };
        let uses_b = StepKind::ALL
            .iter()
            .any(|&k| setup.scheme.assignment().role(k) == Role::B);
        Nic {
            cpus: Engines::new(params, 0),
            setup,
            locking: cpus > 1 && uses_b,
            queues: (0..cpus).map(|_| Default::default()).collect(),
            running: (0..cpus).map(|_| None).collect(),
            dma_free: [0; 2],
            pci_free: 0,
            mac_queue: VecDeque::new(),
            mac_sending: None,
            pause_since: None,
            tx_free: cfg.tx_frames,
            rx_free: cfg.rx_frames,
            tx: VecDeque::new(),
            tx_armed: false,
            rx: BTreeMap::new(),
            waiting: Vec::new(),
            counters: NicCounters::default(),
        }
    }

    /// The processor the scheme gives `act` (processor A is 0).
    pub fn cpu_of(&self, act: &Act) -> usize {
        let kind = step_kind(act.step());
        self.setup.scheme.engines_for(kind, self.queues.len()).start
    }

    /// Queues `work` for processor `cpu`.
    pub fn enqueue(&mut self, cpu: usize, work: Work) {
        self.queues[cpu][work.act.rank()].push_back(work);
    }

    /// Processor `cpu`'s next step: the first of the lowest rank.
    pub fn dequeue(&mut self, cpu: usize) -> Option<Work> {
        self.queues[cpu].iter_mut().find_map(VecDeque::pop_front)
    }

    pub fn tx_record(&mut self, seq: u64) -> Option<&mut TxRecord> {
        self.tx.iter_mut().find(|r| r.seq == seq)
    }

    /// The next frame to transmit, when no transmission step is pending and a transmit
    /// buffer is free: the oldest bookkept message's next frame, in order.
    pub fn arm_transmitter(&mut self) -> Option<Act> {
        if self.tx_armed || self.tx_free == 0 {
            return None;
        }
        let r = self
            .tx
            .iter_mut()
            .find(|r| r.bookkept && r.next < r.frames)?;
        let act = Act::Transmit {
            seq: r.seq,
            index: r.next,
        };
        r.next += 1;
        self.tx_free -= 1;
        self.tx_armed = true;
        Some(act)
    }

    /// A line on what the NIC holds, for a failure report.
    pub fn state(&self) -> String {
        let queued: Vec<String> = self
            .queues
            .iter()
            .map(|q| q.iter().map(VecDeque::len).sum::<usize>().to_string())
            .collect();
        let running: Vec<String> = self
            .running
            .iter()
            .map(|r| r.as_ref().map_or("idle".into(), |r| format!("{:?}", r.act)))
            .collect();
        format!(
            "steps queued per processor [{}], running [{}], {} frames for the MAC, {} free \
             transmit and {} free receive buffers, {} messages to send, {} receives posted, \
             {} frames waiting for their receive",
            queued.join(", "),
            running.join(", "),
            self.mac_queue.len(),
            self.tx_free,
            self.rx_free,
            self.tx.len(),
            self.rx.len(),
            self.waiting.len()
        )
    }
}
