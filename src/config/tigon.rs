//! `[tigon]`: the testbed of the multi-CPU NIC paper (Shivam, Wyckoff and Panda, "Can
//! User-Level Protocols Take Advantage of Multi-CPU NICs?", IPDPS 2002): two hosts, each
//! with a Tigon2 Gigabit Ethernet NIC, connected back to back, running EMP (see `tigon` for
//! the model). Every value the paper gives is its default; each other one says it is a
//! choice, with its reason. The section also knows the testbed's units: the model's time
//! is in ticks of 1/33,000 us, in which a cycle of the 88 MHz processors (375), of the
//! 66 MHz PCI bus (500) and a byte on the 1 Gbit/s wire (264) are all whole.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{invalid, ConfigError};
use crate::moped::engines::{TABLE_1, TIGON2_MHZ};

/// Ticks per microsecond.
pub const TICKS_PER_US: u64 = 33_000;

/// Ethernet's header and frame check sequence around a frame's payload (IEEE 802.3: 14 + 4).
pub const MAC_FRAME_BYTES: u64 = 18;
/// The wire's cost of a frame beyond the frame: preamble and start delimiter (8) and the
/// inter-frame gap (12) of IEEE 802.3.
pub const MAC_GAP_BYTES: u64 = 20;
/// Ethernet's shortest frame, header and check sequence included (IEEE 802.3).
pub const MIN_FRAME_BYTES: u64 = 64;
/// The message size Table 1 was profiled with (a 64-byte ping-pong).
pub const TABLE_1_BYTES: u64 = 64;

/// The multi-CPU NIC paper's testbed and benchmarks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TigonSection {
    /// Clock of each of the Tigon2's two MIPS processors in MHz (the paper: 88). Table 1's
    /// times are EMP's instructions at 88 MHz; another clock scales their processor part.
    pub cpu_mhz: f64,
    /// Width of the PCI host link in bits (the paper: 64).
    pub pci_bits: u64,
    /// Clock of the PCI host link in MHz (the paper: 66).
    pub pci_mhz: f64,
    /// Ethernet's line rate in Mbit/s (Gigabit Ethernet: 1000).
    pub link_mbit: f64,
    /// Largest frame payload in bytes (the paper: 1500).
    pub mtu_bytes: u64,
    /// The NIC's SRAM in KiB (the paper's Netgear GA620: 512); the frame buffers must fit.
    pub sram_kib: u64,
    /// EMP's header in every frame, in bytes (a choice: 14, what the paper's "99.78% of
    /// the theoretical throughput limit" at 964 Mbit/s leaves of a 1,500-byte frame beside
    /// the MAC's 38 bytes of framing).
    pub emp_header_bytes: u64,
    /// Frames per acknowledgment (a choice: 4; EMP acknowledges "groups of frames" and the
    /// paper gives no size). A message's last frame is always acknowledged.
    pub ack_group_frames: u64,
    /// Share of Table 1's recv bookkeeping paid for every frame ("classify frame", which
    /// searches the preposted records); the rest is paid once per message when the host
    /// posts the receive ("handle preposted receive descriptor"). A choice: 1.0, as Table 1
    /// times the two together on one-frame messages and the paper calls classify the
    /// per-frame part.
    pub classify_share: f64,
    /// Propagation over the fiber between the NICs in ns (a choice: 10, about 2 m of fiber;
    /// the paper: "connected back-to-back with a strand of fiber").
    pub propagation_ns: f64,
    /// Latency of a DMA read of host memory before its data moves, in ns (a choice: 600,
    /// a PCI read through the host bridge to DRAM).
    pub dma_read_ns: f64,
    /// Latency of a DMA write to host memory before its data moves, in ns (a choice: 150;
    /// writes are posted by the bridge).
    pub dma_write_ns: f64,
    /// Host time to post a descriptor to the NIC by programmed I/O, in ns (a choice: 250,
    /// a few posted PCI writes).
    pub post_ns: f64,
    /// Host time to notice a completion the NIC wrote to host memory, in ns (a choice: 100,
    /// one poll of the completion word).
    pub poll_ns: f64,
    /// Bytes of the completion word the NIC writes to host memory (a choice: 8).
    pub status_bytes: u64,
    /// Processor cycles to take the semaphore and give it back in the two-CPU firmware (a
    /// choice: 8: the request write, the read that finds it granted, the release).
    pub semaphore_cycles: u64,
    /// Processor cycles of a DMA-assist or MAC descriptor update, which the two-CPU
    /// firmware makes under the semaphore (a choice: 20). Part of Table 1's step times.
    pub queue_cycles: u64,
    /// Processor cycles to hand work to the other processor: its record in the shared SRAM
    /// area and the bit in that processor's event register, under the semaphore (a choice:
    /// 20). Not in Table 1, whose firmware ran on one processor.
    pub event_post_cycles: u64,
    /// Processor cycles the other processor's dispatch loop spends taking a handed-off
    /// event: clearing its bit and reading the record (a choice: 20).
    pub event_pickup_cycles: u64,
    /// Receive frame buffers in SRAM (a choice: 128); with none free the MAC holds its
    /// link partner off (IEEE 802.3x pause) and no frame is lost.
    pub rx_frames: u64,
    /// Transmit frame buffers in SRAM (a choice: 32).
    pub tx_frames: u64,
    /// Receives a host keeps posted in the bandwidth tests (a choice: 32; the paper: "as
    /// many receive descriptors as possible").
    pub posted_receives: u64,
    /// Iterations of each benchmark (the paper: 10,000).
    pub iterations: u64,
}

impl Default for TigonSection {
    fn default() -> Self {
        TigonSection {
            cpu_mhz: TIGON2_MHZ,
            pci_bits: 64,
            pci_mhz: 66.0,
            link_mbit: 1000.0,
            mtu_bytes: 1500,
            sram_kib: 512,
            emp_header_bytes: 14,
            ack_group_frames: 4,
            classify_share: 1.0,
            propagation_ns: 10.0,
            dma_read_ns: 600.0,
            dma_write_ns: 150.0,
            post_ns: 250.0,
            poll_ns: 100.0,
            status_bytes: 8,
            semaphore_cycles: 8,
            queue_cycles: 20,
            event_post_cycles: 20,
            event_pickup_cycles: 20,
            rx_frames: 128,
            tx_frames: 32,
            posted_receives: 32,
            iterations: 10_000,
        }
    }
}

/// EMP's steps, as Table 1 names them, with the two halves of recv bookkeeping and of the
/// receive acknowledgment kept apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmpStep {
    SendBookkeeping,
    Transmission,
    /// The acknowledgment frame taken in (Table 2's DSR: 3.25 us on cpu B).
    AckArrival,
    /// The send records updated (Table 2's DSR: 2.50 us on cpu A).
    AckUpdate,
    /// Handle preposted receive descriptor.
    PostReceive,
    /// Classify frame.
    Classify,
    ReceiveFrame,
    Receiving,
    SendAck,
}

impl EmpStep {
    /// Every step, in declaration order (`step as usize` indexes it).
    pub const ALL: [EmpStep; 9] = [
        EmpStep::SendBookkeeping,
        EmpStep::Transmission,
        EmpStep::AckArrival,
        EmpStep::AckUpdate,
        EmpStep::PostReceive,
        EmpStep::Classify,
        EmpStep::ReceiveFrame,
        EmpStep::Receiving,
        EmpStep::SendAck,
    ];
}

impl TigonSection {
    /// Ticks of `ns` nanoseconds, rounded.
    pub fn ns_ticks(ns: f64) -> u64 {
        (ns * TICKS_PER_US as f64 / 1000.0).round() as u64
    }

    /// Ticks of `n` processor cycles, rounded.
    pub fn cpu_ticks(&self, n: u64) -> u64 {
        (n as f64 * TICKS_PER_US as f64 / self.cpu_mhz).round() as u64
    }

    /// Payload bytes a frame carries.
    pub fn frame_payload(&self) -> u64 {
        self.mtu_bytes - self.emp_header_bytes
    }

    /// Frames of a message of `bytes` (an empty message takes one).
    pub fn frames(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.frame_payload()).max(1)
    }

    /// Payload bytes of frame `index` of a message of `bytes`.
    pub fn payload_of(&self, bytes: u64, index: u64) -> u64 {
        bytes
            .saturating_sub(index * self.frame_payload())
            .min(self.frame_payload())
    }

    /// Bytes a frame of `payload` occupies on the wire: EMP's header, Ethernet's framing
    /// (padded to the shortest frame), preamble and gap.
    pub fn wire_bytes(&self, payload: u64) -> u64 {
        (payload + self.emp_header_bytes + MAC_FRAME_BYTES).max(MIN_FRAME_BYTES) + MAC_GAP_BYTES
    }

    /// Ticks a frame of `payload` occupies the wire.
    pub fn wire_ticks(&self, payload: u64) -> u64 {
        let ns = self.wire_bytes(payload) as f64 * 8000.0 / self.link_mbit;
        Self::ns_ticks(ns)
    }

    /// Ticks of a DMA of `bytes` across the PCI link: its latency, then the data.
    pub fn dma_ticks(&self, bytes: u64, read: bool) -> (u64, u64) {
        let latency = Self::ns_ticks(if read {
            self.dma_read_ns
        } else {
            self.dma_write_ns
        });
        let cycles = (bytes * 8).div_ceil(self.pci_bits);
        let data = (cycles as f64 * TICKS_PER_US as f64 / self.pci_mhz).round() as u64;
        (latency, data)
    }

    /// Payload bytes per second the wire carries at most, in Mbit/s: full frames back to
    /// back.
    pub fn wire_limit_mbit(&self) -> f64 {
        self.frame_payload() as f64 * self.link_mbit / self.wire_bytes(self.frame_payload()) as f64
    }

    /// Processor ticks of `step`. Table 1 times the steps of a 64-byte ping-pong on one
    /// processor, transmission with the DMA from the host and the frame's time on the wire
    /// in it and receiving with the DMA to the host: those hardware phases are modelled as
    /// hardware, so the processor's part is what is left of Table 1's time once the model's
    /// own DMA and wire times of that 64-byte message are taken out. The processor's part
    /// scales with `cpu_mhz`.
    pub fn step_ticks(&self, step: EmpStep) -> u64 {
        let t = TABLE_1;
        let us = |x: f64| x * TICKS_PER_US as f64;
        let (dr, dr_data) = self.dma_ticks(TABLE_1_BYTES, true);
        let (dw, dw_data) = self.dma_ticks(TABLE_1_BYTES, false);
        let at_88 = match step {
            EmpStep::SendBookkeeping => us(t.send_bookkeeping),
            EmpStep::Transmission => {
                us(t.transmission) - (dr + dr_data + self.wire_ticks(TABLE_1_BYTES)) as f64
            }
            EmpStep::AckArrival => us(t.receive_ack_arrival),
            EmpStep::AckUpdate => us(t.receive_ack - t.receive_ack_arrival),
            EmpStep::PostReceive => us(t.recv_bookkeeping) * (1.0 - self.classify_share),
            EmpStep::Classify => us(t.recv_bookkeeping) * self.classify_share,
            EmpStep::ReceiveFrame => us(t.receive_frame),
            EmpStep::Receiving => us(t.receiving) - (dw + dw_data) as f64,
            EmpStep::SendAck => us(t.send_ack),
        };
        (at_88.max(0.0) * TIGON2_MHZ / self.cpu_mhz).round() as u64
    }

    /// Checks the values the model cannot run with, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, v, lo, hi) in [
            ("tigon.cpu_mhz", self.cpu_mhz, 1.0, 100_000.0),
            ("tigon.pci_mhz", self.pci_mhz, 1.0, 100_000.0),
            ("tigon.link_mbit", self.link_mbit, 1.0, 1e7),
            ("tigon.classify_share", self.classify_share, 0.0, 1.0),
            ("tigon.propagation_ns", self.propagation_ns, 0.0, 1e9),
            ("tigon.dma_read_ns", self.dma_read_ns, 0.0, 1e9),
            ("tigon.dma_write_ns", self.dma_write_ns, 0.0, 1e9),
            ("tigon.post_ns", self.post_ns, 0.0, 1e9),
            ("tigon.poll_ns", self.poll_ns, 0.0, 1e9),
        ] {
            if !(v.is_finite() && (lo..=hi).contains(&v)) {
                return invalid(key, format!("must be a number from {lo} to {hi}, not {v}"));
            }
        }
        for (key, v, lo, hi) in [
            ("tigon.pci_bits", self.pci_bits, 8, 1024),
            ("tigon.mtu_bytes", self.mtu_bytes, 64, 65_536),
            ("tigon.sram_kib", self.sram_kib, 1, 1 << 20),
            ("tigon.ack_group_frames", self.ack_group_frames, 1, 1 << 20),
            ("tigon.status_bytes", self.status_bytes, 1, 4096),
            (
                "tigon.semaphore_cycles",
                self.semaphore_cycles,
                0,
                1_000_000,
            ),
            ("tigon.queue_cycles", self.queue_cycles, 0, 1_000_000),
            (
                "tigon.event_post_cycles",
                self.event_post_cycles,
                0,
                1_000_000,
            ),
            (
                "tigon.event_pickup_cycles",
                self.event_pickup_cycles,
                0,
                1_000_000,
            ),
            ("tigon.rx_frames", self.rx_frames, 1, 1 << 20),
            ("tigon.tx_frames", self.tx_frames, 1, 1 << 20),
            ("tigon.posted_receives", self.posted_receives, 1, 1 << 20),
            ("tigon.iterations", self.iterations, 1, 100_000_000),
        ] {
            if !(lo..=hi).contains(&v) {
                return invalid(key, format!("must be from {lo} to {hi}, not {v}"));
            }
        }
        if self.emp_header_bytes >= self.mtu_bytes {
            return invalid(
                "tigon.emp_header_bytes",
                format!(
                    "must leave room for payload in a {}-byte frame, not {}",
                    self.mtu_bytes, self.emp_header_bytes
                ),
            );
        }
        let buffers = (self.rx_frames + self.tx_frames) * self.mtu_bytes;
        if buffers > self.sram_kib * 1024 {
            return invalid(
                "tigon.rx_frames",
                format!(
                    "{} receive and {} transmit frames of {} bytes need {buffers} bytes, more \
                     than the {} KiB of SRAM",
                    self.rx_frames, self.tx_frames, self.mtu_bytes, self.sram_kib
                ),
            );
        }
        self.validate_table_1()
    }

    /// Table 1's transmission and receiving must leave the processor some time once the
    /// model's DMA and wire times are taken out.
    fn validate_table_1(&self) -> Result<(), ConfigError> {
        let t = TABLE_1;
        let (dr, dr_data) = self.dma_ticks(TABLE_1_BYTES, true);
        let (dw, dw_data) = self.dma_ticks(TABLE_1_BYTES, false);
        let us = |ticks: u64| ticks as f64 / TICKS_PER_US as f64;
        let tx_hw = us(dr + dr_data + self.wire_ticks(TABLE_1_BYTES));
        if tx_hw >= t.transmission {
            return invalid(
                "tigon.dma_read_ns",
                format!(
                    "the DMA and wire times of a 64-byte frame ({tx_hw:.2} us) must be less \
                     than Table 1's transmission ({} us), which includes them",
                    t.transmission
                ),
            );
        }
        let rx_hw = us(dw + dw_data);
        if rx_hw >= t.receiving {
            return invalid(
                "tigon.dma_write_ns",
                format!(
                    "the DMA of a 64-byte frame to the host ({rx_hw:.2} us) must be less than \
                     Table 1's receiving ({} us), which includes it",
                    t.receiving
                ),
            );
        }
        Ok(())
    }
}
