# Ruby's network on moped's own network model: every message a controller sends arrives
# when moped's network (the embedded simulator's links, serialization and hop latency)
# says, on the same links as the MOPEDs' messages once a MopedSystem attaches. The routers
# and links of the configuration only register the controllers; their timing is unused.

from m5.objects.Network import RubyNetwork
from m5.params import Param


class MopedNetwork(RubyNetwork):
    type = "MopedNetwork"
    cxx_header = "moped_ext/moped/moped_network.hh"
    cxx_class = "gem5::ruby::MopedNetwork"

    cores_per_leaf = Param.UInt32("Cores on each leaf switch (network.cores_per_leaf)")
    hop_latency = Param.UInt32("Per-hop latency in network cycles (network.hop_latency)")
    link_bytes_per_cycle = Param.UInt32(
        "Link bandwidth in bytes per network cycle (network.link_bytes_per_cycle)"
    )
    core_ghz = Param.Float("Core clock in GHz (system.core_ghz): Ruby's clock")
    net_mhz = Param.Float("Network clock in MHz (network.net_mhz)")
