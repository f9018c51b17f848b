//! On-chip network: a hierarchical switch with per-link bandwidth and
//! per-hop latency, plus per-message-type accounting.
//!
//! # Nodes and topology
//!
//! Node ids `0..n_cores` are the cores' L2 controllers; ids
//! `n_cores..n_cores + n_dirs` are the directory banks. Leaf switch `k`
//! serves cores `k*cores_per_leaf .. (k+1)*cores_per_leaf` (the last leaf may
//! be partial). One root switch connects every directory bank and, when there
//! are at most `cores_per_leaf` leaves (the paper's 16 cores on four leaves),
//! every leaf switch. With more leaves, levels of switches `sw2.k`, `sw3.k`, ...
//! are added, each switch over at most `cores_per_leaf` (at least 2) switches
//! of the level below, until the top level has at most that many. Paths go up
//! to the lowest switch two nodes share (the root for a directory) and down:
//!
//! * core -> core, same leaf: `core->leaf->core` (2 links);
//! * core -> core, different leaves under the root: `core->leaf->root->leaf->core` (4 links);
//! * core <-> directory: `core->leaf->root->dir` and back (3 links);
//! * directory -> directory: `dir->root->dir` (2 links);
//! * a node to itself: no links, arrival 1 core cycle later;
//!
//! each added level adds two links to a path through it (one to a directory).
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
    /// The path's links are `path_links[start..start + len]`.
    start: u32,
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

/// The switches above the cores: leaves of `cores_per_leaf` cores, then as many levels of
/// switches as it takes, each over at most `cores_per_leaf` (at least 2) switches of the
/// level below, until one root switch sits over the top level and the directory banks.
/// Sixteen cores on four-core leaves give the paper's two levels: four leaves under the
/// root.
struct Tree {
    /// Switches per level, leaves first; the root is above the last level.
    levels: Vec<usize>,
    cores_per_leaf: usize,
    fan_in: usize,
}

impl Tree {
    fn new(n_cores: usize, cores_per_leaf: usize) -> Tree {
        let fan_in = cores_per_leaf.max(2);
        let mut levels = vec![n_cores.div_ceil(cores_per_leaf)];
        while *levels.last().expect("a level") > fan_in {
            let below = *levels.last().expect("a level");
            levels.push(below.div_ceil(fan_in));
        }
        Tree {
            levels,
            cores_per_leaf,
            fan_in,
        }
    }

    /// Switches below the root.
    fn switches(&self) -> usize {
        self.levels.iter().sum()
    }

    /// Level and index within it of switch `g`.
    fn locate(&self, mut g: usize) -> (usize, usize) {
        for (l, &n) in self.levels.iter().enumerate() {
            if g < n {
                return (l, g);
            }
            g -= n;
        }
        unreachable!("switch {g} beyond the tree")
    }

    fn id(&self, level: usize, k: usize) -> usize {
        self.levels[..level].iter().sum::<usize>() + k
    }

    fn leaf_of(&self, core: usize) -> usize {
        core / self.cores_per_leaf
    }

    /// Switch `g` and its ancestors below the root, lowest first.
    fn chain(&self, g: usize) -> Vec<usize> {
        let (mut l, mut k) = self.locate(g);
        let mut out = vec![g];
        while l + 1 < self.levels.len() {
            l += 1;
            k /= self.fan_in;
            out.push(self.id(l, k));
        }
        out
    }

    /// `leaf3` for leaves, `sw2.1` for switch 1 of the second level.
    fn name(&self, g: usize) -> String {
        match self.locate(g) {
            (0, k) => format!("leaf{k}"),
            (l, k) => format!("sw{}.{k}", l + 1),
        }
    }

    fn name_parent(&self, g: usize) -> String {
        let (l, k) = self.locate(g);
        if l + 1 == self.levels.len() {
            "root".to_string()
        } else {
            self.name(self.id(l + 1, k / self.fan_in))
        }
    }
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
    /// Every path's link ids, one after another.
    path_links: Vec<u16>,
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
        let tree = Tree::new(n_cores, cfg.cores_per_leaf);
        let n_leaves = tree.levels[0];

        // Link ids:
        //   node i up   (core->leaf or dir->root): 2*i
        //   node i down (leaf->core or root->dir): 2*i + 1
        //   switch g up   (to its parent):         2*n_nodes + 2*g
        //   switch g down (from its parent):       2*n_nodes + 2*g + 1
        // where switches are numbered leaves first, then each level above.
        let mut link_names = Vec::with_capacity(2 * (n_nodes + tree.switches()));
        for i in 0..n_nodes {
            if i < n_cores {
                let leaf = tree.name(tree.leaf_of(i));
                link_names.push(format!("core{i}->{leaf}"));
                link_names.push(format!("{leaf}->core{i}"));
            } else {
                let d = i - n_cores;
                link_names.push(format!("dir{d}->root"));
                link_names.push(format!("root->dir{d}"));
            }
        }
        for g in 0..tree.switches() {
            let (me, parent) = (tree.name(g), tree.name_parent(g));
            link_names.push(format!("{me}->{parent}"));
            link_names.push(format!("{parent}->{me}"));
        }
        assert!(
            link_names.len() <= u16::MAX as usize,
            "too many network links"
        );
        let up = |i: usize| (2 * i) as u16;
        let down = |i: usize| (2 * i + 1) as u16;
        let sw_up = |g: usize| (2 * n_nodes + 2 * g) as u16;
        let sw_down = |g: usize| (2 * n_nodes + 2 * g + 1) as u16;

        let mut paths = Vec::with_capacity(n_nodes * n_nodes);
        let mut path_links = Vec::new();
        let mut links: Vec<u16> = Vec::new();
        for s in 0..n_nodes {
            for d in 0..n_nodes {
                links.clear();
                if s != d {
                    // Up from the source to the switch below the lowest common one (the
                    // root for a directory), then down to the destination.
                    let from = (s < n_cores).then(|| tree.chain(tree.leaf_of(s)));
                    let to = (d < n_cores).then(|| tree.chain(tree.leaf_of(d)));
                    let common = match (&from, &to) {
                        (Some(a), Some(b)) => a.iter().position(|g| b.contains(g)),
                        _ => None,
                    };
                    links.push(up(s));
                    if let Some(a) = &from {
                        let n = common.unwrap_or(a.len());
                        links.extend(a[..n].iter().map(|&g| sw_up(g)));
                    }
                    if let Some(b) = &to {
                        let n = match (&from, common) {
                            (Some(a), Some(k)) => {
                                b.iter().position(|g| *g == a[k]).unwrap_or(b.len())
                            }
                            _ => b.len(),
                        };
                        links.extend(b[..n].iter().rev().map(|&g| sw_down(g)));
                    }
                    links.push(down(d));
                }
                paths.push(Path {
                    start: path_links.len() as u32,
                    len: links.len() as u16,
                    ..Path::default()
                });
                path_links.extend_from_slice(&links);
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
            path_links,
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
        &self.path_links[p.start as usize..][..p.len as usize]
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
            for &l in &self.path_links[p.start as usize..][..p.len as usize] {
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
            for &l in &self.path_links[p.start as usize..][..p.len as usize] {
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
    fn more_cores_than_one_root_holds_add_switch_levels() {
        // 64 cores on 4-core leaves: 16 leaves, 4 second-level switches, the root.
        let n = Network::new(
            &NetConfig {
                n_cores: 64,
                ..cfg()
            },
            TYPES,
            1,
        );
        assert_eq!(n.n_leaves(), 16);
        assert_eq!(
            n.path_names(0, 5),
            vec![
                "core0->leaf0",
                "leaf0->sw2.0",
                "sw2.0->leaf1",
                "leaf1->core5"
            ]
        );
        assert_eq!(
            n.path_names(0, 63),
            vec![
                "core0->leaf0",
                "leaf0->sw2.0",
                "sw2.0->root",
                "root->sw2.3",
                "sw2.3->leaf15",
                "leaf15->core63"
            ]
        );
        assert_eq!(
            n.path_names(n.dir_node(1), 20),
            vec!["dir1->root", "root->sw2.1", "sw2.1->leaf5", "leaf5->core20"]
        );
        // 1,024 cores: leaves, then levels of 64, 16 and 4 switches; a core reaches a
        // directory in six links, the farthest core in ten.
        let n = Network::new(
            &NetConfig {
                n_cores: 1024,
                ..cfg()
            },
            TYPES,
            1,
        );
        assert_eq!(n.hops(0, n.dir_node(0)), 6);
        assert_eq!(n.hops(0, 1023), 10);
        assert_eq!(n.hops(0, 3), 2);
        // Every path goes up then down, never through a link twice.
        for (s, d) in [(7, 900), (1023, 0), (512, 1024 + 3), (1024, 1025)] {
            let names = n.path_names(s, d);
            let unique: std::collections::BTreeSet<_> = names.iter().collect();
            assert_eq!(unique.len(), names.len(), "{names:?}");
        }
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
