# Whole-line writes under test, the requests gem5's RubyTester never makes (it stores one
# byte at a time): moped's MopedLineTester writes whole lines through the L2s' MOPED
# sequencers (M_FILL under OPTCACHE, a whole-line M_GETX under BASEMOPED and OPTCOPY) and
# 8-byte stores through the cores', a few lines contending in tiny caches, and checks every
# read (cores' 8-byte loads, MOPEDs' whole-line M_GETS) against the bytes last written.
#
#   gem5.opt gem5-configs/moped_line_test.py --design optcache --checks 100000

import argparse
import os
import sys

import m5
from m5.objects import MopedLineTester, Root

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moped_ruby  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--design", default="optcache", choices=moped_ruby.DESIGNS)
parser.add_argument("--cores", type=int, default=4)
parser.add_argument("--checks", type=int, default=20000, help="checks to complete")
parser.add_argument("--lines", type=int, default=24, help="lines under test")
parser.add_argument("--seed", type=int, default=1)
moped_ruby.add_tester_args(parser)
args = parser.parse_args()
if args.cores < 1 or args.cores > 16:
    parser.error("--cores must be 1..16")
if args.lines < 1:
    parser.error("--lines must be at least 1")

cfg = moped_ruby.tester_config(args)

mem_bytes = 1 << 30
system = moped_ruby.tester_system(mem_bytes)
core_seqs, moped_seqs, _ = moped_ruby.build(
    system, cfg, args.design, args.cores, mem_bytes, 10, args.network
)
system.ruby.randomization = True
system.tester = MopedLineTester(checks=args.checks, lines=args.lines, seed=args.seed)
for seq in core_seqs:
    system.tester.core_ports = seq.in_ports
if args.design != "baseline":
    for seq in moped_seqs:
        system.tester.moped_ports = seq.in_ports

root = Root(full_system=False, system=system)
root.system.mem_mode = "timing"
m5.ticks.setGlobalFrequency("1ns")
m5.instantiate()
event = m5.simulate()
cause = event.getCause()
print(f"design {args.design}: {cause} at tick {m5.curTick()}")
if cause != "MopedLineTester completed":
    sys.exit(1)
