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

  protected:
    RequestStatus insertRequest(PacketPtr pkt, RubyRequestType primary_type,
                                RubyRequestType secondary_type) override;

  private:
    // Retries the refused ports one cycle later: gem5 retries a stalled port from inside the
    // completing request's callback, while that request still holds the line.
    EventFunctionWrapper retryEvent;
};

} // namespace ruby
} // namespace gem5

#endif // MOPED_EXT_MOPED_MOPED_SEQUENCER_HH
