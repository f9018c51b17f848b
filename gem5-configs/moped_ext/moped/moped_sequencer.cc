#include "moped_ext/moped/moped_sequencer.hh"

#include "mem/ruby/common/Address.hh"

namespace gem5
{
namespace ruby
{

MopedSequencer::MopedSequencer(const Params &p)
    : Sequencer(p),
      retryEvent([this] { trySendRetries(); }, name() + ".retryEvent"),
      missStats(this)
{
}

MopedSequencer::MissStats::MissStats(statistics::Group *parent)
    : statistics::Group(parent),
      ADD_STAT(missLatencyFromL2Cache, statistics::units::Cycle::get(),
               "Latency of the MOPED's L2 misses served by another core's L2"),
      ADD_STAT(missLatencyFromDirectory, statistics::units::Cycle::get(),
               "Latency of the MOPED's L2 misses served by memory")
{
    // As many buckets as the base Sequencer's histograms, which add() requires.
    missLatencyFromL2Cache.init(10);
    missLatencyFromDirectory.init(10);
}

void
MopedSequencer::preDumpStats()
{
    Sequencer::preDumpStats();
    missStats.missLatencyFromL2Cache.reset();
    missStats.missLatencyFromL2Cache.add(getMissMachLatencyHist(MachineType_L2Cache));
    missStats.missLatencyFromDirectory.reset();
    missStats.missLatencyFromDirectory.add(getMissMachLatencyHist(MachineType_Directory));
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
