//! Ruby's coherence messages on the embedded simulator's network model. gem5's
//! `MopedNetwork` (in `gem5-configs/moped_ext`) hands each message a controller sends to
//! [`send`] and delivers it at the cycle it returns, so a message crosses the same links,
//! waits behind the same traffic and pays the same serialization and hop latency in gem5
//! as in the embedded simulator. With a workload, the links are the host's own network,
//! which also carries the MOPEDs' messages ([`super::host::Gem5Host::ruby_send`]); without
//! one (gem5's RubyTester) they are a [`RubyNet`] of their own.

use crate::config::SystemConfig;
use crate::net::{NetConfig, Network};

/// Ruby's messages in the network's statistics: control messages and data messages (a
/// header and a line). Ruby tells a message's size class, not its coherence type.
pub const RUBY_NAMES: [&str; 2] = ["RUBY_CONTROL", "RUBY_DATA"];

/// Ruby's virtual networks: requests, forwards, responses (as `MsgType::vnet`).
pub const RUBY_VNETS: usize = crate::coherence::MsgType::VNETS;

/// Where [`RUBY_NAMES`] start among `net`'s message types, and the header size that tells
/// a data message from a control one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RubyTypes {
    pub first: usize,
    pub header_bytes: u32,
}

/// A Ruby message of `bytes` on `vnet` from network node `src` to `dst` (the cores' L2s
/// are nodes `0..cores`, the directory banks follow), entering the network at cycle `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RubyMsg {
    pub src: usize,
    pub dst: usize,
    pub bytes: u32,
    pub vnet: usize,
    pub now: u64,
}

/// Sends `m` on `net`; returns the cycle it arrives.
pub fn send(net: &mut Network, types: RubyTypes, m: RubyMsg) -> Result<u64, String> {
    let RubyMsg {
        src,
        dst,
        bytes,
        vnet,
        now,
    } = m;
    let nodes = net.n_nodes();
    if src >= nodes || dst >= nodes {
        return Err(format!(
            "Ruby message from node {src} to node {dst}: the network has nodes 0..{nodes}"
        ));
    }
    if vnet >= RUBY_VNETS {
        return Err(format!(
            "Ruby message on virtual network {vnet}: the protocol has 0..{RUBY_VNETS}"
        ));
    }
    if bytes == 0 {
        return Err(format!(
            "Ruby message from node {src} to node {dst} of 0 bytes"
        ));
    }
    let ty = types.first + usize::from(bytes > types.header_bytes);
    Ok(net.send(now, src, dst, bytes, ty, vnet, 0))
}

/// The links of a system without a workload: Ruby's messages only.
pub struct RubyNet {
    net: Network,
    config: NetConfig,
    types: RubyTypes,
}

impl RubyNet {
    /// The network of `cfg` (checked first, so a bad value names its key).
    pub fn new(cfg: &SystemConfig) -> Result<RubyNet, String> {
        cfg.validate().map_err(|e| e.to_string())?;
        let config = cfg.net_config();
        Ok(RubyNet {
            net: Network::new(&config, &RUBY_NAMES, RUBY_VNETS),
            config,
            types: RubyTypes {
                first: 0,
                header_bytes: cfg.network.header_bytes,
            },
        })
    }

    /// [`send`] on these links.
    pub fn send(&mut self, m: RubyMsg) -> Result<u64, String> {
        send(&mut self.net, self.types, m)
    }

    /// The links' parameters and the header size, to check a host against.
    pub fn describes(&self, cfg: &SystemConfig) -> bool {
        self.config == cfg.net_config() && self.types.header_bytes == cfg.network.header_bytes
    }

    pub fn network(&self) -> &Network {
        &self.net
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(src: usize, dst: usize, bytes: u32, vnet: usize, now: u64) -> RubyMsg {
        RubyMsg {
            src,
            dst,
            bytes,
            vnet,
            now,
        }
    }

    #[test]
    fn a_ruby_message_takes_the_embedded_models_time() {
        let cfg = SystemConfig::default();
        let mut r = RubyNet::new(&cfg).unwrap();
        let header = cfg.network.header_bytes;
        // Core 0 to core 15 crosses four links; core 5 to directory bank 0 three, none of
        // them core 0's.
        let data = r.send(msg(0, 15, header + 64, 2, 100)).unwrap();
        assert_eq!(data - 100, r.net.uncontended_latency(0, 15, header + 64));
        assert_eq!(
            data - 100,
            4 * (r.net.serialization(header + 64) + r.net.hop_latency())
        );
        let dir = cfg.system.cores;
        let ctrl = r.send(msg(5, dir, header, 0, 100)).unwrap();
        assert_eq!(ctrl - 100, r.net.uncontended_latency(5, dir, header));
        // A second data message on core 0's link waits behind the first.
        let next = r.send(msg(0, 15, header + 64, 2, 100)).unwrap();
        assert_eq!(next - data, r.net.serialization(header + 64));
        assert_eq!(
            r.net.msg_count(1, 2),
            2,
            "data messages counted as RUBY_DATA"
        );
        assert_eq!(r.net.msg_count(0, 0), 1, "control messages as RUBY_CONTROL");
    }

    #[test]
    fn bad_nodes_and_virtual_networks_are_refused_with_their_numbers() {
        let mut r = RubyNet::new(&SystemConfig::default()).unwrap();
        let e = r.send(msg(0, 99, 8, 0, 0)).unwrap_err();
        assert!(e.contains("node 99") && e.contains("0..20"), "{e}");
        let e = r.send(msg(0, 1, 8, 3, 0)).unwrap_err();
        assert!(e.contains("virtual network 3"), "{e}");
        assert!(r.send(msg(0, 1, 0, 0, 0)).is_err());
    }

    #[test]
    fn a_bad_config_names_its_key() {
        let mut cfg = SystemConfig::default();
        cfg.network.link_bytes_per_cycle = 0;
        let e = RubyNet::new(&cfg).err().unwrap();
        assert!(e.contains("link_bytes_per_cycle"), "{e}");
    }
}
