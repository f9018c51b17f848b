//! EMP's steps on the Tigon2: what each one does when it ends ([`Act`]s are in `act.rs`).

use std::sync::Arc;

use super::act::Act;
use super::nic::{Dma, Done, Frame, FrameKind, Out};
use super::world::World;
use crate::error::MopedError;

impl World {
    /// The end of `act` on NIC `node`: EMP's records change and the step's outputs are
    /// returned, to be set going once its critical section (if any) is over.
    pub(super) fn finish(&mut self, node: usize, act: Act) -> Result<Vec<Out>, MopedError> {
        let mut outs = Vec::new();
        match act {
            Act::PostReceive { seq } => {
                self.rx_mut(node, seq)?.ready = true;
                let waiting = std::mem::take(&mut self.nics[node].waiting);
                for f in waiting {
                    if self.frame(f)?.seq == seq {
                        outs.push(Out::Work(Act::Classify(f)));
                    } else {
                        self.nics[node].waiting.push(f);
                    }
                }
            }
            Act::Bookkeep { seq } => {
                self.tx_mut(node, seq)?.bookkept = true;
                outs.extend(self.nics[node].arm_transmitter().map(Out::Work));
            }
            Act::Transmit { seq, index } => {
                let r = self.tx_mut(node, seq)?;
                let (total, bytes) = (r.bytes, Arc::clone(&r.payload));
                let offset = index as u64 * self.cfg.frame_payload();
                let len = self.cfg.payload_of(total, index as u64);
                let kind = FrameKind::Data {
                    index,
                    offset,
                    len,
                    bytes,
                };
                let f = self.new_frame(Frame { seq, kind });
                outs.push(Out::Dma(Dma::Fetch(f)));
                self.nics[node].tx_armed = false;
                outs.extend(self.nics[node].arm_transmitter().map(Out::Work));
            }
            Act::Classify(f) => {
                let (seq, index) = match self.frame(f)? {
                    Frame {
                        seq,
                        kind: FrameKind::Data { index, .. },
                    } => (*seq, *index),
                    _ => return Err(self.fault(Some(node), "an acknowledgment classified")),
                };
                let group = self.cfg.ack_group_frames as u32;
                let r = self.rx_mut(node, seq)?;
                if index != r.classified {
                    let what = format!("frame {index} of message {seq} classified out of order");
                    return Err(self.fault(Some(node), &what));
                }
                r.classified += 1;
                let (n, last) = (r.classified, r.classified == r.frames);
                outs.push(Out::Work(Act::ReceiveFrame(f)));
                if n % group == 0 || last {
                    outs.push(Out::Work(Act::SendAck { seq, upto: n }));
                }
            }
            Act::ReceiveFrame(f) => outs.push(Out::Dma(Dma::Deliver(f))),
            Act::Receiving { seq } => {
                let r = self.rx_mut(node, seq)?;
                r.received += 1;
                if r.received == r.frames {
                    outs.push(Out::Dma(Dma::Status(Done::Rx(seq))));
                }
            }
            Act::SendAck { seq, upto } => {
                let f = self.new_frame(Frame {
                    seq,
                    kind: FrameKind::Ack { upto },
                });
                outs.push(Out::Mac(f));
            }
            Act::AckArrival(f) => {
                let frame = self.take_frame(f)?;
                let FrameKind::Ack { upto } = frame.kind else {
                    return Err(
                        self.fault(Some(node), "a data frame taken in as an acknowledgment")
                    );
                };
                outs.push(Out::FreeRx);
                outs.push(Out::Work(Act::AckUpdate {
                    seq: frame.seq,
                    upto,
                }));
            }
            Act::AckUpdate { seq, upto } => {
                let r = self.tx_mut(node, seq)?;
                r.acked = r.acked.max(upto);
                if r.acked == r.frames {
                    self.nics[node].tx.retain(|r| r.seq != seq);
                    outs.push(Out::Dma(Dma::Status(Done::Tx(seq))));
                }
            }
        }
        Ok(outs)
    }
}
