# The paper's CMP (Table 1) as a gem5 Ruby system running moped's MOPED_CMP_directory
# protocol: per core a private L2 controller (the L1 D-cache placed under it) with a core
# sequencer and a MOPED sequencer, directory banks at memory, and a network. The sizes
# and latencies come from moped's own system config, so gem5 and the embedded simulator
# model the same machine. The network is moped's own model by default (MopedNetwork: the
# embedded simulator's links, serialization, hop latency and contention, shared with the
# MOPEDs' messages); `network="simple"` gives gem5's SimpleNetwork on the same
# hierarchical switch instead.
#
# Used by moped_cmp.py and moped_random_test.py; run those with a gem5 built with
# EXTRAS=<this folder>/moped_ext.

import math

import m5
from m5.defines import buildEnv
from m5.objects import (
    LRURP,
    AddrRange,
    BasicExtLink,
    BasicRouter,
    Directory_Controller,
    L2Cache_Controller,
    MessageBuffer,
    MopedNetwork,
    MopedSequencer,
    RubyCache,
    RubyDirectoryMemory,
    RubyPortProxy,
    RubySequencer,
    RubySystem,
    SimpleExtLink,
    SimpleIntLink,
    SimpleMemory,
    SimpleNetwork,
    SrcClockDomain,
    Switch,
    System,
    VoltageDomain,
)

PROTOCOL = "MOPED_CMP_directory"
DESIGNS = ["baseline", "basemoped", "optcopy", "optcache"]
NETWORKS = ["moped", "simple"]
LINE_BYTES = 64


def add_tester_args(parser):
    """The options both random testers take: tiny caches, for replacements, and the
    network."""
    parser.add_argument("--l1-bytes", type=int, default=256, help="tiny L1, for replacements")
    parser.add_argument("--l2-bytes", type=int, default=512, help="tiny L2, for replacements")
    parser.add_argument(
        "--network",
        default="moped",
        choices=NETWORKS,
        help="moped's network model (default) or gem5's SimpleNetwork",
    )


def tester_config(args):
    """moped's system config for a tester: `args.cores` cores on 2-way caches of
    `args.l1_bytes` and `args.l2_bytes` (checks the build first)."""
    check_build()
    return moped_config(
        None,
        [
            f"system.cores={args.cores}",
            f"l1.size_bytes={args.l1_bytes}",
            "l1.assoc=2",
            f"l2.size_bytes={args.l2_bytes}",
            "l2.assoc=2",
        ],
    )


def tester_system(mem_bytes, **kwargs):
    """A System of `mem_bytes` on a 1 GHz clock for a tester (`kwargs` go to System)."""
    system = System(mem_ranges=[AddrRange(mem_bytes)], **kwargs)
    system.voltage_domain = VoltageDomain()
    system.clk_domain = SrcClockDomain(clock="1GHz", voltage_domain=system.voltage_domain)
    return system


def check_build():
    """Fails with a clear message unless this gem5 was built with moped's protocol."""
    protocol = buildEnv.get("PROTOCOL")
    if protocol != PROTOCOL:
        m5.util.fatal(
            f"this gem5 was built with protocol {protocol!r}, not {PROTOCOL!r}: "
            "rebuild it with EXTRAS=<moped>/gem5-configs/moped_ext on every scons "
            "call (see moped's docs/gem5.md)"
        )


def moped_config(config_file=None, sets=None):
    """moped's system config (Table 1 defaults, a TOML file, `KEY=VALUE` overrides) as
    a dict, read through the moped Python package so both hosts agree."""
    import moped

    overrides = {}
    for s in sets or []:
        key, _, value = s.partition("=")
        if not key or not _:
            m5.util.fatal(f"--set {s!r}: expected KEY=VALUE")
        overrides[key.strip()] = _parse_value(value.strip())
    if config_file:
        cfg = moped.SystemConfig.from_file(config_file, **overrides)
    else:
        cfg = moped.SystemConfig(**overrides)
    return cfg.to_dict()


def _parse_value(text):
    # As `moped mpi --set` reads a value: a TOML value (number, boolean, quoted string,
    # array), else the bare text as a string.
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _cache(size_bytes, assoc, latency):
    # LRU, as the embedded simulator's caches.
    return RubyCache(
        size=f"{size_bytes}B",
        assoc=assoc,
        replacement_policy=LRURP(),
        tagAccessLatency=latency,
        dataAccessLatency=latency,
        start_index_bit=int(math.log2(LINE_BYTES)),
    )


def build(system, cfg, design, cores, mem_bytes, recycle_latency=1, network="moped"):
    """Adds `system.ruby` for `cores` cores under `design` on `network` (one of
    NETWORKS); returns (core sequencers, MOPED sequencers, L2 controllers). A request
    that finds its line busy is retried after `recycle_latency` cycles (1 by default:
    next cycle, as near as recycling gets to the embedded model's wake-up when the line
    frees)."""
    if design not in DESIGNS:
        m5.util.fatal(f"unknown design {design!r}: expected one of {', '.join(DESIGNS)}")
    if network not in NETWORKS:
        m5.util.fatal(f"unknown network {network!r}: expected one of {', '.join(NETWORKS)}")
    design_index = DESIGNS.index(design)
    core_ghz = float(cfg["system"]["core_ghz"])
    system.ruby_clk_domain = SrcClockDomain(clock=f"{core_ghz}GHz", voltage_domain=VoltageDomain())
    ruby = RubySystem(block_size_bytes=LINE_BYTES, clk_domain=system.ruby_clk_domain)
    system.ruby = ruby

    l1, l2 = cfg["l1"], cfg["l2"]
    l2_cntrls, core_seqs, moped_seqs = [], [], []
    for i in range(cores):
        c = L2Cache_Controller(
            version=i,
            L1Dcache=_cache(l1["size_bytes"], l1["assoc"], l1["latency"]),
            L2cache=_cache(l2["size_bytes"], l2["assoc"], l2["latency"]),
            design=design_index,
            l2_latency=l2["latency"],
            recycle_latency=recycle_latency,
            transitions_per_cycle=32,
            ruby_system=ruby,
            clk_domain=system.ruby_clk_domain,
        )
        # Both sequencers feed the controller's one mandatory queue; the context id
        # tells the core's requests (0) from the MOPED's (1).
        c.sequencer = RubySequencer(
            version=2 * i,
            dcache=c.L1Dcache,
            coreid=0,
            ruby_system=ruby,
            clk_domain=system.ruby_clk_domain,
        )
        # A MOPED's requests never merge (MopedSequencer.py says why).
        c.moped_sequencer = MopedSequencer(
            version=2 * i + 1,
            dcache=c.L2cache,
            coreid=1,
            ruby_system=ruby,
            clk_domain=system.ruby_clk_domain,
        )
        c.moped_context = 1
        c.requestFromL2 = MessageBuffer()
        c.responseFromL2 = MessageBuffer()
        c.forwardToL2 = MessageBuffer()
        c.responseToL2 = MessageBuffer()
        # All_Acks is triggered in the cycle the last message arrives (zero latency).
        c.triggerQueue = MessageBuffer(ordered=True, allow_zero_latency=True)
        c.mandatoryQueue = MessageBuffer()
        setattr(system.ruby, f"l2_cntrl{i}", c)
        l2_cntrls.append(c)
        core_seqs.append(c.sequencer)
        moped_seqs.append(c.moped_sequencer)

    banks = int(cfg["directory"]["banks"])
    bank_bits = int(math.log2(banks))
    dirs = []
    for b in range(banks):
        # Banked by the low bits of the line address, as moped's home_bank().
        rng = AddrRange(
            0,
            size=mem_bytes,
            intlvHighBit=int(math.log2(LINE_BYTES)) + bank_bits - 1,
            intlvBits=bank_bits,
            intlvMatch=b,
        )
        d = Directory_Controller(
            version=b,
            directory=RubyDirectoryMemory(addr_ranges=[rng]),
            addr_ranges=[rng],
            design=design_index,
            directory_latency=cfg["directory"]["latency"],
            memory_latency=cfg["memory"]["latency"],
            recycle_latency=recycle_latency,
            transitions_per_cycle=32,
            ruby_system=ruby,
            clk_domain=system.ruby_clk_domain,
        )
        d.requestToDir = MessageBuffer()
        d.responseToDir = MessageBuffer()
        d.forwardFromDir = MessageBuffer()
        d.responseFromDir = MessageBuffer()
        # The protocol keeps memory's data in the directory entries; this memory only
        # gives the bank's range a place in gem5's physical address map (Ruby's ports
        # send requests outside it to a PIO port).
        mem = SimpleMemory(range=rng)
        d.memory_out_port = mem.port
        setattr(system, f"mem_bank{b}", mem)
        setattr(system.ruby, f"dir_cntrl{b}", d)
        dirs.append(d)

    if network == "moped":
        _moped_network(ruby, cfg, l2_cntrls, dirs, core_ghz)
    else:
        _simple_network(ruby, cfg, l2_cntrls, dirs, core_ghz)
    _connect(ruby.network, l2_cntrls, dirs)
    system.sys_port_proxy = RubyPortProxy(ruby_system=ruby)
    system.system_port = system.sys_port_proxy.in_ports
    ruby.num_of_sequencers = 2 * cores
    return core_seqs, moped_seqs, l2_cntrls


def _moped_network(ruby, cfg, l2_cntrls, dirs, core_ghz):
    """moped's network model: each message arrives when the embedded simulator's links
    say. The one router and its links only register the controllers with Ruby."""
    net = cfg["network"]
    network = MopedNetwork(
        ruby_system=ruby,
        number_of_virtual_networks=3,
        netifs=[],
        control_msg_size=int(net["header_bytes"]),
        cores_per_leaf=int(net["cores_per_leaf"]),
        hop_latency=int(net["hop_latency"]),
        link_bytes_per_cycle=int(net["link_bytes_per_cycle"]),
        core_ghz=core_ghz,
        net_mhz=float(net["net_mhz"]),
    )
    ruby.network = network
    router = BasicRouter(router_id=0)
    network.routers = [router]
    network.ext_links = [
        BasicExtLink(link_id=n, ext_node=node, int_node=router)
        for n, node in enumerate(list(l2_cntrls) + list(dirs))
    ]
    network.int_links = []
    ruby.number_of_virtual_networks = 3


def _simple_network(ruby, cfg, l2_cntrls, dirs, core_ghz):
    """gem5's SimpleNetwork on a hierarchical switch: a leaf switch per `cores_per_leaf`
    cores, the directories on a root switch that links every leaf. Latencies in core
    cycles (the Ruby clock); link bandwidth converted from bytes per network cycle to
    bytes per core cycle (with SimpleNetwork's default endpoint_bandwidth of 1000 a link
    moves `bandwidth_factor` bytes per cycle). Unlike moped's model, a message is not
    serialized on its controller's link into its switch, and it leaves each switch after
    the link's latency whatever its size."""
    net = cfg["network"]
    ratio = core_ghz * 1000.0 / float(net["net_mhz"])
    hop = max(1, round(int(net["hop_latency"]) * ratio))
    bytes_per_cycle = max(1, round(int(net["link_bytes_per_cycle"]) / ratio))
    per_leaf = int(net["cores_per_leaf"])
    leaves = (len(l2_cntrls) + per_leaf - 1) // per_leaf
    network = SimpleNetwork(
        ruby_system=ruby,
        number_of_virtual_networks=3,
        netifs=[],
        control_msg_size=int(net["header_bytes"]),
    )
    ruby.network = network
    routers = [Switch(router_id=i, latency=hop) for i in range(leaves + 1)]
    root = routers[-1]
    network.routers = routers
    # Every controller hangs off its switch: a core's leaf, or the root for directories.
    attach = [(c, routers[i // per_leaf]) for i, c in enumerate(l2_cntrls)]
    attach += [(d, root) for d in dirs]
    link = dict(latency=hop, bandwidth_factor=bytes_per_cycle)
    network.ext_links = [
        SimpleExtLink(link_id=n, ext_node=node, int_node=switch, **link)
        for n, (node, switch) in enumerate(attach)
    ]
    pairs = [p for leaf in routers[:-1] for p in ((leaf, root), (root, leaf))]
    internal = [
        SimpleIntLink(link_id=len(attach) + n, src_node=src, dst_node=dst, **link)
        for n, (src, dst) in enumerate(pairs)
    ]
    network.int_links = internal
    ruby.number_of_virtual_networks = 3
    network.setup_buffers()


def _connect(network, l2_cntrls, dirs):
    """Every controller's queues to and from the network."""
    for c in l2_cntrls:
        c.requestFromL2.out_port = network.in_port
        c.responseFromL2.out_port = network.in_port
        c.forwardToL2.in_port = network.out_port
        c.responseToL2.in_port = network.out_port
    for d in dirs:
        d.requestToDir.in_port = network.out_port
        d.responseToDir.in_port = network.out_port
        d.forwardFromDir.out_port = network.in_port
        d.responseFromDir.out_port = network.in_port
