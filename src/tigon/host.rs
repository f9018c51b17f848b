//! The hosts: the paper's three benchmark loops (section 6), posting descriptors to their
//! NICs by programmed I/O and polling for completions, and checking every received byte.

use super::nic::Done;
use super::pattern::first_wrong;
use super::world::{Ev, Post, World};
use super::{Bench, TigonSection};
use crate::error::MopedError;

/// Size of the unidirectional test's trailing return message (a choice: empty).
const RETURN_BYTES: u64 = 0;

impl World {
    /// The hosts' first posts.
    pub(super) fn start(&mut self) {
        let (n, bytes) = (self.hosts.n, self.hosts.bytes);
        let window = self.cfg.posted_receives.min(n);
        match self.hosts.bench {
            Bench::Latency => {
                self.post_rx(1, bytes);
                self.post_rx(0, bytes);
                self.post_tx(0, bytes);
            }
            Bench::Unidirectional => {
                for _ in 0..window {
                    self.post_rx(1, bytes);
                }
                self.post_rx(0, RETURN_BYTES);
                for _ in 0..n.min(2) {
                    self.post_tx(0, bytes);
                }
            }
            Bench::Bidirectional => {
                for node in 0..2 {
                    for _ in 0..window {
                        self.post_rx(node, bytes);
                    }
                    for _ in 0..n.min(2) {
                        self.post_tx(node, bytes);
                    }
                }
            }
        }
    }

    /// Posts `node`'s next descriptor of `kind` by programmed I/O, after its earlier ones.
    fn post(&mut self, node: usize, post: Post) {
        let at = self.now().max(self.hosts.node[node].free_at)
            + TigonSection::ns_ticks(self.cfg.post_ns);
        self.hosts.node[node].free_at = at;
        let node = node as u8;
        self.q.schedule(at, Ev::Posted { node, post });
    }

    fn post_tx(&mut self, node: usize, bytes: u64) {
        let seq = self.hosts.node[node].tx_posted;
        self.hosts.node[node].tx_posted += 1;
        self.post(node, Post::Tx { seq, bytes });
    }

    fn post_rx(&mut self, node: usize, bytes: u64) {
        let seq = self.hosts.node[node].rx_posted;
        self.hosts.node[node].rx_posted += 1;
        self.post(node, Post::Rx { seq, bytes });
    }

    /// Host `node` noticed `done`: it checks a received message's bytes, then its loop
    /// goes on.
    pub(super) fn seen(&mut self, node: usize, done: Done) -> Result<(), MopedError> {
        let h = &self.hosts.node[node];
        let (seq, expected) = match done {
            Done::Tx(seq) => (seq, h.tx_done),
            Done::Rx(seq) => (seq, h.rx_done),
        };
        if seq != expected {
            let what = format!("host {node} saw {done:?} while waiting for message {expected}");
            return Err(self.fault(Some(node), &what));
        }
        match done {
            Done::Tx(_) => self.hosts.node[node].tx_done += 1,
            Done::Rx(seq) => {
                self.check(node, seq)?;
                self.hosts.node[node].rx_done += 1;
            }
        }
        match self.hosts.bench {
            Bench::Latency => self.ping_pong(node, done),
            Bench::Unidirectional => self.one_way(node, done),
            Bench::Bidirectional => self.both_ways(node),
        }
        Ok(())
    }

    fn check(&mut self, node: usize, seq: u64) -> Result<(), MopedError> {
        let Some(rec) = self.nics[node].rx.remove(&seq) else {
            return Err(self.fault(Some(node), &format!("receive {seq} completed twice")));
        };
        if let Some(at) = first_wrong(1 - node, seq, &rec.buf) {
            let what = format!(
                "message {seq} to host {node}: byte {at} of {} is not the sender's",
                rec.buf.len()
            );
            return Err(self.fault(Some(node), &what));
        }
        self.hosts.verified += 1;
        Ok(())
    }

    /// Ping (host 0) posts a receive and a send and waits for both; pong (host 1) waits
    /// for the message, sends it back, waits for that send, and posts the next receive.
    fn ping_pong(&mut self, node: usize, done: Done) {
        let (n, bytes) = (self.hosts.n, self.hosts.bytes);
        if node == 1 {
            match done {
                Done::Rx(_) => self.post_tx(1, bytes),
                Done::Tx(k) if k + 1 < n => self.post_rx(1, bytes),
                Done::Tx(_) => {}
            }
            return;
        }
        let h = &mut self.hosts.node[0];
        if h.tx_done > h.loops && h.rx_done > h.loops {
            h.loops += 1;
            if h.loops == n {
                self.hosts.end = Some(self.now());
            } else {
                self.post_rx(0, bytes);
                self.post_tx(0, bytes);
            }
        }
    }

    /// Host 0 keeps two sends in flight; host 1 keeps its receives posted and, after the
    /// last message, sends the return message that ends the timing.
    fn one_way(&mut self, node: usize, done: Done) {
        let (n, bytes) = (self.hosts.n, self.hosts.bytes);
        match (node, done) {
            (0, Done::Tx(_)) if self.hosts.node[0].tx_posted < n => self.post_tx(0, bytes),
            (0, Done::Rx(_)) => self.hosts.end = Some(self.now()),
            (1, Done::Rx(k)) => {
                if self.hosts.node[1].rx_posted < n {
                    self.post_rx(1, bytes);
                }
                if k + 1 == n {
                    self.post_tx(1, RETURN_BYTES);
                }
            }
            _ => {}
        }
    }

    /// Each host: wait for the oldest send, wait for the oldest receive, post another send
    /// and another receive; host 0's loop is timed.
    fn both_ways(&mut self, node: usize) {
        let (n, bytes) = (self.hosts.n, self.hosts.bytes);
        loop {
            let h = &mut self.hosts.node[node];
            if !(h.tx_done > h.loops && h.rx_done > h.loops) {
                return;
            }
            h.loops += 1;
            if h.loops == n && node == 0 {
                self.hosts.end = Some(self.now());
                return;
            }
            if h.tx_posted < n {
                self.post_tx(node, bytes);
            }
            if self.hosts.node[node].rx_posted < n {
                self.post_rx(node, bytes);
            }
        }
    }
}
