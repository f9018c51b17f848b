# The non-coherence part of a moped system inside gem5: every core's MPI program, the OS
# model and the MOPED devices, run by moped's Rust code through its C ABI. It issues the
# cores' loads and stores on their L2 controllers' sequencers and the MOPEDs' line
# requests on each L2's second sequencer.

from m5.objects.ClockedObject import ClockedObject
from m5.params import NULL, Param, VectorParam, VectorRequestPort
from m5.proxy import Parent


class MopedSystem(ClockedObject):
    type = "MopedSystem"
    cxx_header = "moped_ext/moped/moped_system.hh"
    cxx_class = "gem5::MopedSystem"

    system = Param.System(Parent.any, "The system, for requestor ids")
    workload = Param.String("Workload: a moped spec (.toml) or a GOAL schedule (.goal)")
    design = Param.String("baseline", "baseline, basemoped, optcopy or optcache")
    iterations = Param.Float(1.0, "Scale of the workload's iteration counts")
    seed = Param.UInt64(1, "Seed of the buffers' initial bytes and other choices")
    config_file = Param.String("", "moped system config (TOML), or empty")
    sets = Param.String("", "';'-separated KEY=VALUE config overrides")
    summary_file = Param.String("moped.json", "Run summary written into the output directory")
    core_ports = VectorRequestPort("To each core's sequencer (L1 first)")
    moped_ports = VectorRequestPort("To each L2's MOPED sequencer")
    controllers = VectorParam.RubyController(
        [],
        "Each core's L2 controller, in core order: asked, as a core's window load enters "
        "Ruby, whether it holds the line readable (the load will hit and needs no miss "
        "register, as in the embedded model)",
    )
    network = Param.RubyNetwork(
        NULL,
        "Ruby's network: a MopedNetwork then carries the coherence messages on the "
        "same links as the MOPEDs' messages",
    )
