# A random tester of whole-line writes, the requests gem5's RubyTester never makes: MOPED
# line writes (M_FILL under OPTCACHE, M_GETX of a whole line under the other MOPED
# designs) and cores' 8-byte stores on a few lines that contend in tiny caches, each write
# followed by reads from random ports whose bytes are checked against what was written.

from m5.objects.ClockedObject import ClockedObject
from m5.params import Param, VectorRequestPort
from m5.proxy import Parent


class MopedLineTester(ClockedObject):
    type = "MopedLineTester"
    cxx_header = "moped_ext/moped/moped_line_tester.hh"
    cxx_class = "gem5::MopedLineTester"

    system = Param.System(Parent.any, "The system, for requestor ids")
    checks = Param.UInt64(10000, "Checks to complete: a write and the reads that check it")
    lines = Param.UInt32(24, "Lines under test, consecutive from base")
    base = Param.Addr(0x10000, "First line's address")
    seed = Param.UInt64(1, "Seed of the tester's choices")
    deadlock_cycles = Param.Cycles(1000000, "Cycles without a completion that fail the test")
    core_ports = VectorRequestPort("To each core's sequencer")
    moped_ports = VectorRequestPort("To each L2's MOPED sequencer (none for the baseline)")
