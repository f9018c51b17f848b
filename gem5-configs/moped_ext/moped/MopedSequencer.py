# The sequencer on each L2 that carries its MOPED's line requests. Unlike a core's, it never
# merges a request into one already in flight for the same line: a GET_COPY's copy is valid
# only for the request that asked for it (the owner may store right after answering), so a
# second MOPED request to the line is refused and retried every cycle until the line is free,
# as the embedded model's MOPED issues each line request on its own.

from m5.objects.Sequencer import RubySequencer


class MopedSequencer(RubySequencer):
    type = "MopedSequencer"
    cxx_header = "moped_ext/moped/moped_sequencer.hh"
    cxx_class = "gem5::ruby::MopedSequencer"
