#include "moped_ext/moped/moped_sequencer.hh"

#include "mem/ruby/common/Address.hh"

namespace gem5
{
namespace ruby
{

MopedSequencer::MopedSequencer(const Params &p)
    : Sequencer(p),
      retryEvent([this] { trySendRetries(); }, name() + ".retryEvent")
{
}

RequestStatus
MopedSequencer::insertRequest(PacketPtr pkt, RubyRequestType primary_type,
                              RubyRequestType secondary_type)
{
    // Busy, not aliased: retryEvent retries the port every cycle until the line is free.
    auto it = m_RequestTable.find(makeLineAddress(pkt->getAddr()));
    if (it != m_RequestTable.end() && !it->second.empty()) {
        if (!retryEvent.scheduled())
            schedule(retryEvent, clockEdge(Cycles(1)));
        return RequestStatus_BufferFull;
    }
    return Sequencer::insertRequest(pkt, primary_type, secondary_type);
}

} // namespace ruby
} // namespace gem5
