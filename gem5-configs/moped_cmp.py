# A moped workload on the paper's 16-core CMP in gem5: every core runs its rank's MPI
# program (moped's Rust runtime through the MopedSystem SimObject), one MOPED beside each
# L2 for the MOPED designs, every message's bytes checked at its receiver.
#
#   gem5.opt -d m5out/pp-optcopy gem5-configs/moped_cmp.py \
#       --design optcopy --workload imb-pingpong --size 16KiB
#
# Writes stats.txt (gem5's), moped.json (the run's summary from moped) and config.ini into
# the output folder; `moped compare --gem5 DIR --embedded DIR` sets it beside an embedded
# run of the same workload.

import argparse
import atexit
import json
import os
import sys

import m5
from m5.objects import (
    AddrRange,
    MopedSystem,
    Root,
    SrcClockDomain,
    System,
    VoltageDomain,
)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import moped_ruby  # noqa: E402

# Workload names as IMB and NPB call them, to the specs under workloads/.
SPECS = {
    ("imb-pingpong", "16KiB"): "imb/pingpong-16k.toml",
    ("imb-pingping", "16KiB"): "imb/pingping-16k.toml",
    ("imb-bcast", "16KiB"): "imb/bcast-16k.toml",
    ("imb-reduce", "16KiB"): "imb/reduce-16k.toml",
    ("imb-gather", "16KiB"): "imb/gather-16k.toml",
    ("imb-alltoall", "16KiB"): "imb/alltoall-16k.toml",
    ("imb-pingpong", "1MiB"): "imb/pingpong-1m.toml",
    ("imb-pingping", "1MiB"): "imb/pingping-1m.toml",
    ("imb-bcast", "1MiB"): "imb/bcast-1m.toml",
    ("npb-cg", "16KiB"): "npb/cg-S.toml",
    ("npb-mg", "16KiB"): "npb/mg-S.toml",
    ("npb-ft", "16KiB"): "npb/ft-S.toml",
    ("npb-sp", "16KiB"): "npb/sp-S.toml",
    ("npb-bt", "16KiB"): "npb/bt-S.toml",
}


def workload_path(name, size):
    """A workload name and size, or a path to a spec or GOAL file."""
    if os.path.isfile(name):
        return os.path.abspath(name)
    key = (name, size)
    if key not in SPECS:
        names = sorted({n for n, _ in SPECS})
        sys.exit(
            f"moped_cmp.py: no workload {name!r} at size {size}; expected a file or one of "
            f"{', '.join(names)} (sizes 16KiB, and 1MiB for the IMB point-to-point and Bcast)"
        )
    path = os.path.join(HERE, "..", "workloads", SPECS[key])
    return os.path.normpath(path)


parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--design", default="baseline", choices=moped_ruby.DESIGNS)
parser.add_argument("--workload", required=True, help="e.g. imb-pingpong, npb-cg, or a file")
parser.add_argument("--size", default="16KiB", choices=["16KiB", "1MiB"])
parser.add_argument("--iterations", type=float, default=1.0, help="scale iteration counts")
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--config", default=None, help="moped system config (TOML)")
parser.add_argument("--set", action="append", default=[], help="KEY=VALUE override")
parser.add_argument(
    "--network",
    default="moped",
    choices=moped_ruby.NETWORKS,
    help="moped's network model (default; the embedded simulator's timing) or gem5's SimpleNetwork",
)
args = parser.parse_args()

moped_ruby.check_build()
cfg = moped_ruby.moped_config(args.config, args.set)
cores = int(cfg["system"]["cores"])
mem_bytes = int(cfg["memory"]["size_bytes"])
if int(cfg["memory"].get("channel_cycles", 0)) != 0:
    sys.exit(
        "moped_cmp.py: memory.channel_cycles must be 0 here: the gem5 companion's "
        "directories time memory by its latency only"
    )

system = System(mem_ranges=[AddrRange(mem_bytes)])
system.voltage_domain = VoltageDomain()
system.clk_domain = SrcClockDomain(
    clock=f"{cfg['system']['core_ghz']}GHz", voltage_domain=system.voltage_domain
)
core_seqs, moped_seqs, l2_cntrls = moped_ruby.build(
    system, cfg, args.design, cores, mem_bytes, network=args.network
)
system.moped = MopedSystem(
    workload=workload_path(args.workload, args.size),
    design=args.design,
    iterations=args.iterations,
    seed=args.seed,
    config_file=os.path.abspath(args.config) if args.config else "",
    sets=";".join(args.set),
    network=system.ruby.network,
    clk_domain=system.ruby_clk_domain,
    controllers=l2_cntrls,
)
for seq in core_seqs:
    system.moped.core_ports = seq.in_ports
for seq in moped_seqs:
    system.moped.moped_ports = seq.in_ports

root = Root(full_system=False, system=system)
root.system.mem_mode = "timing"
m5.instantiate()
event = m5.simulate()
cause = event.getCause()
print(f"{args.workload} {args.size} under {args.design}: {cause} at tick {m5.curTick()}")
if event.getCode() != 0 or cause != "moped: every core finished":
    sys.exit(1)
# MopedSystem reset gem5's statistics where the workload's timed region started and dumped
# them where it ended. Without an end mark the region ends with the run, and gem5's dump
# at exit is its dump; with one, that dump is stats.txt's only one, as the embedded run's
# stats.txt covers the region alone.
with open(os.path.join(m5.options.outdir, "moped.json")) as f:
    region = json.load(f)["timed_region"]
print(f"timed region: cycles {region['from']} to {region['to']}")
if region["end_dumped"]:
    atexit.unregister(m5.stats.dump)
