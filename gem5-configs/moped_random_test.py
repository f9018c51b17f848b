# gem5's RubyTester over moped's MOPED_CMP_directory protocol: random multi-byte checks
# with false sharing and set conflicts on tiny caches, random message delays, and (for the
# MOPED designs) every L2's MOPED sequencer among the tester's ports, so M_GETS, M_GETX
# (and GET_COPY under OPTCOPY and OPTCACHE) mix with the cores' loads and stores.
#
#   gem5.opt gem5-configs/moped_random_test.py --design optcopy --checks 1000000

import argparse
import os
import sys

import m5
from m5.objects import (
    AddrRange,
    Root,
    RubyTester,
    SrcClockDomain,
    System,
    VoltageDomain,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moped_ruby  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--design", default="optcopy", choices=moped_ruby.DESIGNS)
parser.add_argument("--cores", type=int, default=16)
parser.add_argument("--checks", type=int, default=100000, help="checks to complete")
parser.add_argument("--l1-bytes", type=int, default=256, help="tiny L1, for replacements")
parser.add_argument("--l2-bytes", type=int, default=512, help="tiny L2, for replacements")
parser.add_argument(
    "--recycle-latency",
    type=int,
    default=10,
    help="cycles before a request on a busy line is retried (gem5's controller default; "
    "1, as the workload configs use, spends most host time on retries)",
)
parser.add_argument("--no-moped-ports", action="store_true", help="only the cores test")
parser.add_argument(
    "--network",
    default="moped",
    choices=moped_ruby.NETWORKS,
    help="moped's network model (default) or gem5's SimpleNetwork",
)
args = parser.parse_args()
if args.recycle_latency < 1:
    parser.error("--recycle-latency must be at least 1")
if args.cores < 1 or args.cores > 16:
    # gem5 v24's RubyTester reports a false deadlock above 18 ports per check table.
    parser.error("--cores must be 1..16")

moped_ruby.check_build()
cfg = moped_ruby.moped_config(
    None,
    [
        f"system.cores={args.cores}",
        f"l1.size_bytes={args.l1_bytes}",
        "l1.assoc=2",
        f"l2.size_bytes={args.l2_bytes}",
        "l2.assoc=2",
    ],
)

tester = RubyTester(checks_to_complete=args.checks, wakeup_frequency=10)
mem_bytes = 1 << 30
system = System(cpu=tester, mem_ranges=[AddrRange(mem_bytes)])
system.voltage_domain = VoltageDomain()
system.clk_domain = SrcClockDomain(clock="1GHz", voltage_domain=system.voltage_domain)
core_seqs, moped_seqs, _ = moped_ruby.build(
    system, cfg, args.design, args.cores, mem_bytes, args.recycle_latency, args.network
)
system.ruby.randomization = True

ports = list(core_seqs)
if args.design != "baseline" and not args.no_moped_ports:
    ports += moped_seqs
tester.num_cpus = len(ports)
for seq in ports:
    tester.cpuDataPort = seq.in_ports
    seq.no_retry_on_stall = True
    seq.using_ruby_tester = True

root = Root(full_system=False, system=system)
root.system.mem_mode = "timing"
m5.ticks.setGlobalFrequency("1ns")
m5.instantiate()
event = m5.simulate()
cause = event.getCause()
print(f"design {args.design}: {cause} at tick {m5.curTick()}")
if cause != "Ruby Tester completed":
    sys.exit(1)
