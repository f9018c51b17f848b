//! On-chip network: a hierarchical switch with per-link bandwidth and
//! per-hop latency, plus per-message-type accounting.
//!
//! # Nodes and topology
//!
//! Node ids `0..n_cores` are the cores' L2 controllers; ids
//! `n_cores..n_cores + n_dirs` are the directory banks. Leaf switch `k`
//! serves cores `k*cores_per_leaf .. (k+1)*cores_per_leaf` (the last leaf may
//! be partial). One root switch connects every leaf switch and every
//! directory bank. Paths:
//!
//! * core -> core, same leaf: `core->leaf->core` (2 links);
//! * core -> core, different leaves: `core->leaf->root->leaf->core` (4 links);
//! * core <-> directory: `core->leaf->root->dir` and back (3 links);
//! * directory -> directory: `dir->root->dir` (2 links);
//! * a node to itself: no links, arrival 1 core cycle later.
//!
//! Every link is unidirectional and has its own `busy_until`.
//!
//! # Timing
//!
//! All times are core cycles. One network cycle is
//! `core_ghz * 1000 / net_mhz` core cycles (2 for 1 GHz / 500 MHz); a
//! non-integral ratio is applied by rounding each duration up to whole core
//! cycles. A message of `bytes` occupies each link for
//! `ceil(bytes / link_bytes_per_cycle)` network cycles (at least 1), and each
//! hop adds `hop_latency` network cycles. At each link of the path:
//! `start = max(t, busy_until)`, `busy_until = start + ser`,
//! `t = start + ser + hop`, so a message waits while a link is busy.

use crate::engine::Cycle;
use crate::stats::StatsRegistry;

/// Parameters of the network (usually built by
/// [`SystemConfig::net_config`](crate::config::SystemConfig::net_config)).
#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    pub n_cores: usize,
    pub n_dirs: usize,
    pub cores_per_leaf: usize,
    pub core_ghz: f64,
    pub net_mhz: f64,
    /// Switch + wire latency per hop, in network cycles.
    pub hop_latency: u32,
    /// Link bandwidth in bytes per network cycle.
    pub link_bytes_per_cycle: u32,
}

/// One link's timing state. Its traffic counters are summed from the paths that cross it
/// when read, so a send updates three counters of its path instead of three per link.
#[derive(Clone, Copy, Debug, Default)]
struct LinkState {
    busy_until: Cycle,
    queue_cycles: u64,
}

/// The links of one `(src, dst)` path, in order, held inline with the traffic sent along
/// it: a send reads and updates one small record (the longest path, core to core across
/// leaves, has four links).
#[derive(Clone, Copy, Debug, Default)]
struct Path {
    links: [u16; 4],
    len: u16,
    messages: u64,
    bytes: u64,
    /// Serialization cycles of each message on one link of the path.
    busy_cycles: u64,
}

/// A snapshot of one link's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkStats {
    /// e.g. `core3->leaf0`, `leaf0->root`, `root->dir1`.
    pub name: String,
    /// Messages that crossed the link.
    pub messages: u64,
    /// Bytes that crossed the link.
    pub bytes: u64,
    /// Core cycles the link spent serializing messages.
    pub busy_cycles: u64,
    /// Total core cycles messages waited for the link to become free.
    pub queue_cycles: u64,
    /// Core cycle at which the link is next free.
    pub busy_until: Cycle,
}

/// A message kind resolved once against the network: its counter slot, size on the wire
/// and serialization time per link, so sending it needs no per-message branching.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsgClass {
    /// Index of `(msg_type, vnet)` in the per-type counters.
    counter: u32,
    pub bytes: u32,
    /// Core cycles the message occupies each link.
    ser: Cycle,
}

/// The hierarchical-switch network.
pub struct Network {
    n_cores: usize,
    n_nodes: usize,
    n_leaves: usize,
    /// Core cycles per network cycle when integral.
    int_ratio: Option<u64>,
    ratio: f64,
    hop_core: Cycle,
    link_bpc: u32,
    /// `serialization(b)` for every `b` below its length (message sizes are few and small).
    ser_table: Vec<Cycle>,
    links: Vec<LinkState>,
    link_names: Vec<String>,
    /// `paths[src * n_nodes + dst]`.
    paths: Vec<Path>,
    msg_type_names: Vec<&'static str>,
    n_vnets: usize,
    msg_counts: Vec<u64>,
    /// Classes handed out (or sent on): only these appear in the statistics.
    used: Vec<bool>,
    msg_bytes: Vec<u64>,
    /// Latest arrival time returned by `send` (the utilisation horizon).
    horizon: Cycle,
    total_latency: u64,
}

impl Network {
    /// Build the network and precompute every path.
    ///
    /// Panics on a degenerate configuration (no cores, `cores_per_leaf == 0`,
    /// zero bandwidth, non-positive clocks, `n_vnets == 0`); configurations
    /// coming from [`SystemConfig::validate`](crate::config::SystemConfig::validate)
    /// never are.
    pub fn new(cfg: &NetConfig, msg_type_names: &[&'static str], n_vnets: usize) -> Self {
        assert!(cfg.n_cores >= 1, "network needs at least one core");
        assert!(cfg.cores_per_leaf >= 1, "cores_per_leaf must be >= 1");
        assert!(cfg.link_bytes_per_cycle >= 1, "link bandwidth must be >= 1");
        assert!(
            cfg.core_ghz > 0.0 && cfg.net_mhz > 0.0,
            "clock frequencies must be positive"
        );
        assert!(n_vnets >= 1, "need at least one virtual network");
        let ratio = cfg.core_ghz * 1000.0 / cfg.net_mhz;
        assert!(ratio.is_finite(), "clock ratio must be finite");
        let int_ratio = if (ratio - ratio.round()).abs() < 1e-9 && ratio.round() >= 1.0 {
            Some(ratio.round() as u64)
        } else {
            None
        };
        let n_cores = cfg.n_cores;
        let n_dirs = cfg.n_dirs;
        let n_nodes = n_cores + n_dirs;
        let n_leaves = n_cores.div_ceil(cfg.cores_per_leaf);

        // Link ids:
        //   node i up   (core->leaf or dir->root): 2*i
        //   node i down (leaf->core or root->dir): 2*i + 1
        //   leaf k up   (leaf->root):              2*n_nodes + 2*k
        //   leaf k down (root->leaf):              2*n_nodes + 2*k + 1
        let mut link_names = Vec::with_capacity(2 * (n_nodes + n_leaves));
        for i in 0..n_nodes {
            if i < n_cores {
                let leaf = i / cfg.cores_per_leaf;
                link_names.push(format!("core{i}->leaf{leaf}"));
                link_names.push(format!("leaf{leaf}->core{i}"));
            } else {
                let d = i - n_cores;
                link_names.push(format!("dir{d}->root"));
                link_names.push(format!("root->dir{d}"));
            }
        }
        for k in 0..n_leaves {
            link_names.push(format!("leaf{k}->root"));
            link_names.push(format!("root->leaf{k}"));
        }
        let up = |i: usize| (2 * i) as u32;
        let down = |i: usize| (2 * i + 1) as u32;
        let leaf_up = |k: usize| (2 * n_nodes + 2 * k) as u32;
        let leaf_down = |k: usize| (2 * n_nodes + 2 * k + 1) as u32;
        let leaf_of = |i: usize| i / cfg.cores_per_leaf;

        assert!(
            2 * (n_nodes + n_leaves) <= u16::MAX as usize,
            "too many network nodes"
        );
        let mut paths = Vec::with_capacity(n_nodes * n_nodes);
        for s in 0..n_nodes {
            for d in 0..n_nodes {
                let s_core = s < n_cores;
                let d_core = d < n_cores;
                let links: &[u32] = match (s_core, d_core) {
                    _ if s == d => &[],
                    (true, true) if leaf_of(s) == leaf_of(d) => &[up(s), down(d)],
                    (true, true) => &[up(s), leaf_up(leaf_of(s)), leaf_down(leaf_of(d)), down(d)],
                    (true, false) => &[up(s), leaf_up(leaf_of(s)), down(d)],
                    (false, true) => &[up(s), leaf_down(leaf_of(d)), down(d)],
                    (false, false) => &[up(s), down(d)],
                };
                let mut p = Path {
                    len: links.len() as u16,
                    ..Path::default()
                };
                for (k, &l) in links.iter().enumerate() {
                    p.links[k] = l as u16;
                }
                paths.push(p);
            }
        }

        let n_types = msg_type_names.len();
        let mut net = Network {
            n_cores,
            n_nodes,
            n_leaves,
            int_ratio,
            ratio,
            hop_core: 0,
            link_bpc: cfg.link_bytes_per_cycle,
            ser_table: Vec::new(),
            links: vec![LinkState::default(); link_names.len()],
            link_names,
            paths,
            msg_type_names: msg_type_names.to_vec(),
            n_vnets,
            msg_counts: vec![0; n_types * n_vnets],
            used: vec![false; n_types * n_vnets],
            msg_bytes: vec![0; n_types * n_vnets],
            horizon: 0,
            total_latency: 0,
        };
        net.hop_core = net.net_to_core(cfg.hop_latency as u64);
        net.ser_table = (0..256).map(|b| net.serialization_of(b)).collect();
        net
    }

    #[inline]
    fn net_to_core(&self, n: u64) -> Cycle {
        match self.int_ratio {
            Some(m) => n * m,
            None => (n as f64 * self.ratio - 1e-9).ceil().max(0.0) as Cycle,
        }
    }

    /// Number of nodes (cores + directory banks).
    pub fn n_nodes(&self) -> usize {
        self.n_nodes
    }

    /// Number of core nodes.
    pub fn n_cores(&self) -> usize {
        self.n_cores
    }

    /// Number of leaf switches.
    pub fn n_leaves(&self) -> usize {
        self.n_leaves
    }

    /// Node id of directory bank `bank`.
    pub fn dir_node(&self, bank: usize) -> usize {
        self.n_cores + bank
    }

    /// Core cycles a message of `bytes` occupies one link.
    #[inline]
    pub fn serialization(&self, bytes: u32) -> Cycle {
        match self.ser_table.get(bytes as usize) {
            Some(&c) => c,
            None => self.serialization_of(bytes),
        }
    }

    fn serialization_of(&self, bytes: u32) -> Cycle {
        let flits = bytes.div_ceil(self.link_bpc).max(1) as u64;
        self.net_to_core(flits)
    }

    /// Core cycles added per hop.
    pub fn hop_latency(&self) -> Cycle {
        self.hop_core
    }

    /// Latency of a message of `bytes` from `src` to `dst` on an idle network.
    pub fn uncontended_latency(&self, src: usize, dst: usize, bytes: u32) -> Cycle {
        let h = self.hops(src, dst) as Cycle;
        if h == 0 {
            1
        } else {
            h * (self.serialization(bytes) + self.hop_core)
        }
    }

    #[inline]
    fn path(&self, src: usize, dst: usize) -> &[u16] {
        debug_assert!(src < self.n_nodes && dst < self.n_nodes, "bad node id");
        let p = &self.paths[src * self.n_nodes + dst];
        &p.links[..p.len as usize]
    }

    /// The class of messages of type `msg_type` (an index into the names given to
    /// [`Network::new`]) on virtual network `vnet < n_vnets`, `bytes` long.
    pub fn class(&mut self, msg_type: usize, vnet: usize, bytes: u32) -> MsgClass {
        assert!(
            msg_type < self.msg_type_names.len() && vnet < self.n_vnets,
            "bad msg_type {msg_type} or vnet {vnet}"
        );
        self.used[msg_type * self.n_vnets + vnet] = true;
        MsgClass {
            counter: (msg_type * self.n_vnets + vnet) as u32,
            bytes,
            ser: self.serialization(bytes),
        }
    }

    /// Reserve the path from `src` to `dst` for a message of `bytes` and
    /// return its arrival time (core cycles). `extra_delay` is added at
    /// injection (the tester's random delays). `msg_type` indexes the names
    /// given to [`Network::new`]; `vnet < n_vnets`.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        now: Cycle,
        src: usize,
        dst: usize,
        bytes: u32,
        msg_type: usize,
        vnet: usize,
        extra_delay: Cycle,
    ) -> Cycle {
        let class = self.class(msg_type, vnet, bytes);
        self.send_class(now, src, dst, &class, extra_delay)
    }

    /// [`Network::send`] for a message of a class made by [`Network::class`].
    #[inline]
    pub fn send_class(
        &mut self,
        now: Cycle,
        src: usize,
        dst: usize,
        class: &MsgClass,
        extra_delay: Cycle,
    ) -> Cycle {
        let k = class.counter as usize;
        self.msg_counts[k] += 1;
        self.msg_bytes[k] += class.bytes as u64;
        let mut t = now + extra_delay;
        if src == dst {
            t += 1;
        } else {
            let ser = class.ser;
            let hop = self.hop_core;
            let p = &mut self.paths[src * self.n_nodes + dst];
            p.messages += 1;
            p.bytes += class.bytes as u64;
            p.busy_cycles += ser;
            for &l in &p.links[..p.len as usize] {
                let link = &mut self.links[l as usize];
                let start = t.max(link.busy_until);
                link.queue_cycles += start - t;
                link.busy_until = start + ser;
                t = start + ser + hop;
            }
        }
        self.total_latency += t - now;
        self.horizon = self.horizon.max(t);
        t
    }

    /// Messages sent of type `msg_type` on virtual network `vnet`.
    pub fn msg_count(&self, msg_type: usize, vnet: usize) -> u64 {
        self.msg_counts[msg_type * self.n_vnets + vnet]
    }

    /// Bytes sent of type `msg_type` on virtual network `vnet`.
    pub fn msg_bytes(&self, msg_type: usize, vnet: usize) -> u64 {
        self.msg_bytes[msg_type * self.n_vnets + vnet]
    }

    /// Total messages sent.
    pub fn total_msgs(&self) -> u64 {
        self.msg_counts.iter().sum()
    }

    /// Per-link counters, in link-id order (for each node its up then down
    /// link, then for each leaf its up then down link).
    pub fn link_stats(&self) -> Vec<LinkStats> {
        let mut stats: Vec<LinkStats> = self
            .links
            .iter()
            .zip(&self.link_names)
            .map(|(l, n)| LinkStats {
                name: n.clone(),
                messages: 0,
                bytes: 0,
                busy_cycles: 0,
                queue_cycles: l.queue_cycles,
                busy_until: l.busy_until,
            })
            .collect();
        for p in &self.paths {
            for &l in &p.links[..p.len as usize] {
                let s = &mut stats[l as usize];
                s.messages += p.messages;
                s.bytes += p.bytes;
                s.busy_cycles += p.busy_cycles;
            }
        }
        stats
    }

    /// Number of links on the path from `src` to `dst` (0 when equal).
    pub fn hops(&self, src: usize, dst: usize) -> usize {
        self.path(src, dst).len()
    }

    /// Names of the links on the path from `src` to `dst`.
    pub fn path_names(&self, src: usize, dst: usize) -> Vec<&str> {
        self.path(src, dst)
            .iter()
            .map(|&l| self.link_names[l as usize].as_str())
            .collect()
    }

    /// Register the network's statistics under `prefix` (e.g.
    /// `system.network`), using as elapsed time the latest arrival time seen.
    /// See [`Network::register_stats_at`].
    pub fn register_stats(&self, reg: &mut StatsRegistry, prefix: &str) {
        self.register_stats_at(reg, prefix, self.horizon);
    }

    /// Register the network's statistics under `prefix`:
    /// `msg_count.<TYPE>.vnet<V>`, `msg_bytes.<TYPE>.vnet<V>` for every type
    /// and vnet in use (a class was made for it), totals and average latency, and per link
    /// `link.<name>.{messages,bytes,busy_cycles,queue_cycles,utilization}`
    /// where utilisation is busy cycles over `elapsed` core cycles.
    pub fn register_stats_at(&self, reg: &mut StatsRegistry, prefix: &str, elapsed: Cycle) {
        let p = prefix.trim_end_matches('.');
        let mut bytes_total = 0;
        let used = |t: usize, v: usize| self.used[t * self.n_vnets + v];
        for (t, name) in self.msg_type_names.iter().enumerate() {
            for v in (0..self.n_vnets).filter(|&v| used(t, v)) {
                reg.scalar(
                    format!("{p}.msg_count.{name}.vnet{v}"),
                    self.msg_count(t, v),
                    &format!("{name} messages sent on virtual network {v}"),
                    "Count",
                );
            }
        }
        for (t, name) in self.msg_type_names.iter().enumerate() {
            for v in 0..self.n_vnets {
                bytes_total += self.msg_bytes(t, v);
                if !used(t, v) {
                    continue;
                }
                reg.scalar(
                    format!("{p}.msg_bytes.{name}.vnet{v}"),
                    self.msg_bytes(t, v),
                    &format!("Bytes of {name} messages sent on virtual network {v}"),
                    "Byte",
                );
            }
        }
        reg.scalar(
            format!("{p}.total_msgs"),
            self.total_msgs(),
            "Messages sent",
            "Count",
        );
        reg.scalar(
            format!("{p}.total_bytes"),
            bytes_total,
            "Bytes sent",
            "Byte",
        );
        reg.ratio(
            format!("{p}.avg_latency"),
            self.total_latency as f64,
            self.total_msgs() as f64,
            "Average injection-to-arrival latency of a message (core cycles)",
            "Cycle",
        );
        for l in self.link_stats() {
            let lp = format!("{p}.link.{}", l.name);
            reg.scalar(
                format!("{lp}.messages"),
                l.messages,
                "Messages that crossed the link",
                "Count",
            );
            reg.scalar(
                format!("{lp}.bytes"),
                l.bytes,
                "Bytes that crossed the link",
                "Byte",
            );
            reg.scalar(
                format!("{lp}.busy_cycles"),
                l.busy_cycles,
                "Core cycles the link was busy serializing messages",
                "Cycle",
            );
            reg.scalar(
                format!("{lp}.queue_cycles"),
                l.queue_cycles,
                "Total core cycles messages waited for the link",
                "Cycle",
            );
            reg.ratio(
                format!("{lp}.utilization"),
                l.busy_cycles as f64,
                elapsed as f64,
                "Fraction of elapsed cycles the link was busy",
                "Ratio",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPES: &[&str] = &["GETS", "DATA"];

    fn cfg() -> NetConfig {
        NetConfig {
            n_cores: 16,
            n_dirs: 4,
            cores_per_leaf: 4,
            core_ghz: 1.0,
            net_mhz: 500.0,
            hop_latency: 1,
            link_bytes_per_cycle: 16,
        }
    }

    #[test]
    fn path_shapes() {
        let n = Network::new(&cfg(), TYPES, 3);
        assert_eq!(n.hops(0, 0), 0);
        assert_eq!(n.hops(0, 3), 2);
        assert_eq!(n.hops(0, 4), 4);
        assert_eq!(n.hops(5, 16), 3);
        assert_eq!(n.hops(19, 15), 3);
        assert_eq!(n.hops(16, 17), 2);
        assert_eq!(n.path_names(1, 2), vec!["core1->leaf0", "leaf0->core2"]);
        assert_eq!(
            n.path_names(1, 13),
            vec![
                "core1->leaf0",
                "leaf0->root",
                "root->leaf3",
                "leaf3->core13"
            ]
        );
        assert_eq!(
            n.path_names(6, n.dir_node(2)),
            vec!["core6->leaf1", "leaf1->root", "root->dir2"]
        );
        assert_eq!(
            n.path_names(17, 9),
            vec!["dir1->root", "root->leaf2", "leaf2->core9"]
        );
    }

    #[test]
    fn uncontended_latencies() {
        // 8-byte control message: 1 net cycle serialization + 1 hop = 2 net
        // cycles = 4 core cycles per link.
        let mut n = Network::new(&cfg(), TYPES, 1);
        assert_eq!(n.send(100, 0, 1, 8, 0, 0, 0), 100 + 2 * 4);
        assert_eq!(n.send(200, 0, 5, 8, 0, 0, 0), 200 + 4 * 4);
        assert_eq!(n.send(300, 0, 16, 8, 0, 0, 0), 300 + 3 * 4);
        assert_eq!(n.send(400, 16, 0, 8, 0, 0, 0), 400 + 3 * 4);
        assert_eq!(n.send(500, 3, 3, 8, 0, 0, 0), 501);
        assert_eq!(n.send(600, 3, 3, 8, 0, 0, 7), 608);
        assert_eq!(n.send(700, 0, 16, 8, 0, 0, 10), 710 + 12);
        assert_eq!(n.uncontended_latency(0, 5, 8), 16);
        assert_eq!(n.uncontended_latency(0, 0, 8), 1);
    }

    #[test]
    fn bandwidth_serialization() {
        // 72-byte data message (64 + 8 header): ceil(72/16) = 5 net cycles
        // = 10 core cycles per link, + 2 per hop.
        let mut n = Network::new(&cfg(), TYPES, 1);
        assert_eq!(n.serialization(72), 10);
        assert_eq!(n.serialization(16), 2);
        assert_eq!(n.serialization(17), 4);
        assert_eq!(n.serialization(0), 2);
        assert_eq!(n.send(0, 16, 0, 72, 1, 0, 0), 3 * 12);
    }

    #[test]
    fn queueing_on_shared_link() {
        let mut n = Network::new(&cfg(), TYPES, 1);
        // Two cores on leaf 0 send to dir 0 in the same cycle: they share
        // leaf0->root and root->dir0.
        let a = n.send(0, 0, 16, 72, 1, 0, 0);
        let b = n.send(0, 1, 16, 72, 1, 0, 0);
        assert_eq!(a, 36);
        // b: core1->leaf0 free: start 0, t = 12. leaf0->root busy until 22
        // (a started at 12): start 22, t = 34. root->dir0 busy until 34: t = 46.
        assert_eq!(b, 46);
        let ls = n.link_stats();
        let l = ls.iter().find(|l| l.name == "leaf0->root").unwrap();
        assert_eq!(l.messages, 2);
        assert_eq!(l.busy_cycles, 20);
        assert_eq!(l.queue_cycles, 10);
        let d = ls.iter().find(|l| l.name == "root->dir0").unwrap();
        assert_eq!(d.queue_cycles, 0);
        // A later message on a free link does not wait.
        assert_eq!(n.send(1000, 0, 16, 8, 0, 0, 0), 1012);
    }

    #[test]
    fn accounting_and_stats() {
        let mut n = Network::new(&cfg(), TYPES, 2);
        n.send(0, 0, 16, 8, 0, 0, 0);
        n.send(0, 2, 17, 8, 0, 0, 0);
        n.send(5, 16, 0, 72, 1, 1, 0);
        assert_eq!(n.msg_count(0, 0), 2);
        assert_eq!(n.msg_bytes(0, 0), 16);
        assert_eq!(n.msg_count(1, 1), 1);
        assert_eq!(n.msg_bytes(1, 1), 72);
        assert_eq!(n.msg_count(1, 0), 0);
        assert_eq!(n.total_msgs(), 3);
        let mut reg = StatsRegistry::new();
        n.register_stats(&mut reg, "system.network");
        let g = |k: &str| reg.get(k).unwrap().value.as_f64();
        assert_eq!(g("system.network.msg_count.GETS.vnet0"), 2.0);
        assert_eq!(g("system.network.msg_bytes.DATA.vnet1"), 72.0);
        assert_eq!(g("system.network.total_bytes"), 88.0);
        assert_eq!(g("system.network.link.leaf0->root.messages"), 2.0);
        assert!(g("system.network.link.leaf0->root.utilization") > 0.0);
    }

    #[test]
    fn partial_last_leaf_and_fractional_ratio() {
        let c = NetConfig {
            n_cores: 6,
            n_dirs: 1,
            cores_per_leaf: 4,
            core_ghz: 1.0,
            net_mhz: 400.0,
            hop_latency: 1,
            link_bytes_per_cycle: 16,
        };
        let mut n = Network::new(&c, TYPES, 1);
        assert_eq!(n.n_leaves(), 2);
        assert_eq!(n.hops(4, 5), 2);
        assert_eq!(n.hops(0, 5), 4);
        // 2.5 core cycles per net cycle: 1 flit -> 3, hop -> 3.
        assert_eq!(n.serialization(8), 3);
        assert_eq!(n.serialization(32), 5);
        assert_eq!(n.send(0, 4, 5, 8, 0, 0, 0), 12);
    }
}
