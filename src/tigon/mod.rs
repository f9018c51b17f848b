//! The multi-CPU NIC paper's own testbed (Shivam, Wyckoff and Panda, "Can User-Level
//! Protocols Take Advantage of Multi-CPU NICs?", IPDPS 2002), modelled as far as its
//! measurements need: two hosts connected back to back by Gigabit Ethernet, each with a
//! Tigon2 NIC running EMP, whose steps the same scheme files as MOPED's engines assign to the
//! NIC's two processors (`moped::engines`: base, SO, RO, DSR, SR, Table 2).
//!
//! Each NIC has:
//! - two MIPS processors at 88 MHz ([`Engines`](crate::moped::engines::Engines), one engine
//!   each), each running the steps its scheme gives it first come, first served, as EMP's
//!   dispatch loop takes the events it finds;
//! - one hardware semaphore, the NIC's only lock (`Lock::Queues`), which the two-processor
//!   firmware takes for every update of the DMA-assist and MAC queues (the paper: "Shared
//!   resources (MAC, DMA) ... use the only available lock") and for every hand-off; a
//!   processor that finds it held spins;
//! - hand-offs through the event register and a record in the shared SRAM: the posting
//!   processor pays `event_post_cycles` under the semaphore, the other
//!   `event_pickup_cycles` before the step (the engines' hand-off);
//! - two host DMA engines, one each way, sharing the 64-bit 66 MHz PCI bus, which the DMA
//!   assist drives: a frame fetched from the host goes to the MAC without a processor, as
//!   the paper describes;
//! - a MAC that sends frames in order onto the wire, receive and transmit frame buffers in
//!   the SRAM, and IEEE 802.3x pause when the link partner has no receive buffer.
//!
//! EMP's steps cost Table 1's times ([`crate::config::TigonSection::step_ticks`]):
//! send bookkeeping once per message; transmission, classify frame (recv bookkeeping),
//! receive frame and receiving once per frame; send ack and receive ack once per group of
//! `ack_group_frames` frames and for a message's last frame. A receive acknowledgment is two
//! steps (its arrival, then the update of the send records), as Table 2 splits it for DSR.
//! Data move for real: the sending host's buffer is filled with a pattern, frames carry
//! its bytes, the receiving NIC's DMA writes them into the posted buffer, and the receiving
//! host checks every byte.
//!
//! Time is in ticks of 1/33,000 us ([`TICKS_PER_US`]).

mod act;
mod emp;
mod host;
mod nic;
mod pattern;
mod world;

use crate::moped::engines::{EngineStats, Scheme};

pub use crate::config::{EmpStep, TigonSection, TICKS_PER_US};
pub use act::step_kind;
pub use world::run;

/// The paper's three benchmarks (section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bench {
    /// Ping-pong: half the round trip.
    Latency,
    /// One-way sends, two in flight, with a trailing return message.
    Unidirectional,
    /// Both hosts sending, two in flight each.
    Bidirectional,
}

impl Bench {
    pub const ALL: [Bench; 3] = [Bench::Latency, Bench::Unidirectional, Bench::Bidirectional];

    pub fn name(self) -> &'static str {
        match self {
            Bench::Latency => "latency",
            Bench::Unidirectional => "unidirectional",
            Bench::Bidirectional => "bidirectional",
        }
    }
}

/// A scheme on a number of processors per NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Setup {
    pub scheme: Scheme,
    pub cpus: usize,
}

/// One NIC's counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NicCounters {
    /// Each processor's: busy ticks, steps, spinning on the semaphore, hand-offs taken.
    pub cpus: Vec<EngineStats>,
    /// Ticks the NIC's MAC kept the wire busy sending.
    pub wire_ticks: u64,
    /// Ticks a frame waited for the link partner's receive buffers (802.3x pause).
    pub pause_ticks: u64,
    /// Ticks of PCI data transfers.
    pub pci_ticks: u64,
    pub data_frames: u64,
    pub ack_frames: u64,
}

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub setup: Setup,
    pub bench: Bench,
    pub bytes: u64,
    pub iterations: u64,
    /// The timed region, from the first post to the end of the host's loop.
    pub ticks: u64,
    pub nics: [NicCounters; 2],
    /// Messages whose every byte the receiving host checked.
    pub messages_verified: u64,
    /// Data frames that arrived before their receive was posted (held, not dropped).
    pub frames_waited: u64,
    pub events: u64,
}

impl Measurement {
    pub fn us(&self) -> f64 {
        self.ticks as f64 / TICKS_PER_US as f64
    }

    /// Payload Mbit/s: of one direction, or of both added (bidirectional).
    pub fn bandwidth_mbit(&self) -> f64 {
        let ways = if self.bench == Bench::Bidirectional {
            2
        } else {
            1
        };
        let bits = (ways * self.iterations * self.bytes * 8) as f64;
        bits / self.us().max(f64::MIN_POSITIVE)
    }

    /// Half the round trip of a ping-pong in us (the paper's latency), or the time per
    /// message of the other benchmarks.
    pub fn latency_us(&self) -> f64 {
        let per = match self.bench {
            Bench::Latency | Bench::Bidirectional => 2,
            Bench::Unidirectional => 1,
        };
        self.us() / (per * self.iterations).max(1) as f64
    }

    /// Share of the timed region processor `cpu` of NIC `nic` was busy (hand-offs
    /// included, spinning not).
    pub fn busy_share(&self, nic: usize, cpu: usize) -> f64 {
        let busy = self.nics[nic].cpus.get(cpu).map_or(0, |c| c.busy);
        busy as f64 / self.ticks.max(1) as f64
    }

    /// Ticks processors spun on a semaphore, over both NICs.
    pub fn semaphore_wait_ticks(&self) -> u64 {
        self.nics
            .iter()
            .flat_map(|n| &n.cpus)
            .map(|c| c.lock_wait)
            .sum()
    }

    /// Hand-offs between processors, over both NICs.
    pub fn handoffs(&self) -> u64 {
        self.nics
            .iter()
            .flat_map(|n| &n.cpus)
            .map(|c| c.handoffs)
            .sum()
    }

    /// Share of the timed region the busier direction of the wire carried frames.
    pub fn wire_share(&self) -> f64 {
        let w = self.nics.iter().map(|n| n.wire_ticks).max().unwrap_or(0);
        w as f64 / self.ticks.max(1) as f64
    }
}
