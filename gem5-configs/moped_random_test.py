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
from m5.objects import Root, RubyTester

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moped_ruby  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--design", default="optcopy", choices=moped_ruby.DESIGNS)
parser.add_argument("--cores", type=int, default=16)
parser.add_argument("--checks", type=int, default=100000, help="checks to complete")
parser.add_argument(
    "--recycle-latency",
    type=int,
    default=10,
    help="cycles before a request on a busy line is retried (gem5's controller default; "
    "1, as the workload configs use, spends most host time on retries)",
)
parser.add_argument("--no-moped-ports", action="store_true", help="only the cores test")
moped_ruby.add_tester_args(parser)
args = parser.parse_args()
if args.recycle_latency < 1:
    parser.error("--recycle-latency must be at least 1")
if args.cores < 1 or args.cores > 16:
    # gem5 v24's RubyTester reports a false deadlock above 18 ports per check table.
    parser.error("--cores must be 1..16")

cfg = moped_ruby.tester_config(args)

tester = RubyTester(checks_to_complete=args.checks, wakeup_frequency=10)
mem_bytes = 1 << 30
system = moped_ruby.tester_system(mem_bytes, cpu=tester)
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
