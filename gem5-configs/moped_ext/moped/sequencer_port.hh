// Requests to the L2 controllers' Ruby sequencers, as MopedSystem and MopedLineTester
// make them: a port that queues what a sequencer refuses, and how M_FILL is told apart.

#ifndef MOPED_EXT_MOPED_SEQUENCER_PORT_HH
#define MOPED_EXT_MOPED_SEQUENCER_PORT_HH

#include <deque>
#include <memory>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mem/packet.hh"
#include "mem/port.hh"

namespace gem5
{

// M_FILL travels as a whole-line write whose program counter says "fill" ("MFLL"): the
// protocol's `fill_pc` parameter must hold the same value.
constexpr Addr MopedFillPc = 0x4D464C4C;

// A port to a Ruby sequencer that queues the packets the sequencer refuses and resends
// them in order when it retries, handing each response to `respond` and telling
// `retried` of each retry.
class MopedSeqPort : public RequestPort
{
  public:
    MopedSeqPort(const std::string &name,
                      std::function<void(PacketPtr)> respond,
                      std::function<void()> retried = [] {})
        : RequestPort(name), respond(std::move(respond)),
          retried(std::move(retried))
    {}

    // Sends now or queues behind earlier refused packets.
    void send(PacketPtr pkt);

  protected:
    bool recvTimingResp(PacketPtr pkt) override;
    void recvReqRetry() override;

  private:
    std::function<void(PacketPtr)> respond;
    std::function<void()> retried;
    std::deque<PacketPtr> waiting;
};

// `count` ports named `<prefix><index>`, each handing its responses to `respond` and
// telling `retried` of its retries.
std::vector<std::unique_ptr<MopedSeqPort>>
makeSeqPorts(const std::string &prefix, int count,
             const std::function<void(PacketPtr)> &respond,
             const std::function<void()> &retried = [] {});

// Port `idx` of `ports`, or null where there is none.
Port *seqPort(const std::vector<std::unique_ptr<MopedSeqPort>> &ports,
              PortID idx);

} // namespace gem5

#endif // MOPED_EXT_MOPED_SEQUENCER_PORT_HH
