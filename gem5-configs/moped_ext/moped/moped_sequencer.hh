// A Ruby sequencer for a MOPED's line requests: one request per line in flight, never merged
// (see MopedSequencer.py for why).

#ifndef MOPED_EXT_MOPED_MOPED_SEQUENCER_HH
#define MOPED_EXT_MOPED_MOPED_SEQUENCER_HH

#include "mem/ruby/system/Sequencer.hh"
#include "params/MopedSequencer.hh"
#include "sim/eventq.hh"

namespace gem5
{
namespace ruby
{

class MopedSequencer : public Sequencer
{
  public:
    using Params = MopedSequencerParams;
    explicit MopedSequencer(const Params &p);

    // Copies the MOPED's miss latencies by responder into named statistics before a dump.
    void preDumpStats() override;

  protected:
    RequestStatus insertRequest(PacketPtr pkt, RubyRequestType primary_type,
                                RubyRequestType secondary_type) override;

  private:
    // Retries the refused ports one cycle later: gem5 retries a stalled port from inside the
    // completing request's callback, while that request still holds the line.
    EventFunctionWrapper retryEvent;

    // The base Sequencer keeps its per-responder miss histograms unnamed, and gem5's
    // Profiler adds up those of the cores' sequencers only. These name the MOPED's, so a
    // run's stats count its line requests' misses by who served them, as the embedded
    // model's moped_misses_other_cache and moped_misses_memory do.
    struct MissStats : public statistics::Group
    {
        explicit MissStats(statistics::Group *parent);
        statistics::Histogram missLatencyFromL2Cache;
        statistics::Histogram missLatencyFromDirectory;
    } missStats;
};

} // namespace ruby
} // namespace gem5

#endif // MOPED_EXT_MOPED_MOPED_SEQUENCER_HH
