// Ruby's network on moped's network model (see MopedNetwork.py). Messages leave a
// controller's queue when they are ready, take the arrival cycle moped's network gives
// them, and wait in the destination's queue until then: no buffering inside, so nothing
// for functional accesses to find here.

#ifndef MOPED_EXT_MOPED_MOPED_NETWORK_HH
#define MOPED_EXT_MOPED_MOPED_NETWORK_HH

#include <vector>

#include "mem/ruby/common/Consumer.hh"
#include "mem/ruby/common/MachineID.hh"
#include "mem/ruby/network/Network.hh"
#include "moped_ext/rust/moped_gem5.h"
#include "params/MopedNetwork.hh"

namespace gem5
{

namespace ruby
{

class MopedNetwork : public Network, public Consumer
{
  public:
    PARAMS(MopedNetwork);
    explicit MopedNetwork(const Params &p);
    ~MopedNetwork() override;

    void init() override;

    // From now on the messages cross `host`'s network, beside the MOPEDs' messages.
    void attach(MopedG5Host *host);

    // The controllers' queues are joined in init(); the configured links only register
    // the controllers with the Network base class.
    void makeExtOutLink(SwitchID, NodeID, BasicLink *,
                        std::vector<NetDest> &) override {}
    void makeExtInLink(NodeID, SwitchID, BasicLink *,
                       std::vector<NetDest> &) override {}
    void makeInternalLink(SwitchID, SwitchID, BasicLink *,
                          std::vector<NetDest> &, PortDirection,
                          PortDirection) override {}

    // Messages wait in the controllers' own queues, which answer functional accesses
    // themselves: the network holds none.
    bool functionalRead(Packet *) override { return false; }
    bool functionalRead(Packet *, WriteMask &) override { return false; }
    uint32_t functionalWrite(Packet *) override { return 0; }

    void collateStats() override {}
    void print(std::ostream &out) const override;
    void wakeup() override;

  private:
    // moped's node of each local node id, and its machine.
    struct Node
    {
        MachineID machine;
        uint32_t moped;
    };

    void deliver(NodeID from, int vnet, MessageBuffer *in, Tick now);
    uint64_t send(uint32_t src, uint32_t dst, uint32_t bytes, int vnet,
                  uint64_t now);

    std::vector<Node> nodes;
    // Local node ids in moped's node order (cores' L2s, then directories).
    std::vector<NodeID> byMoped;
    MopedG5Net *own = nullptr;
    MopedG5Host *host = nullptr;

    struct NetStats : public statistics::Group
    {
        explicit NetStats(statistics::Group *parent);
        statistics::Scalar messages;
        statistics::Scalar bytes;
        statistics::Scalar latency;
    } stats;
};

} // namespace ruby
} // namespace gem5

#endif // MOPED_EXT_MOPED_MOPED_NETWORK_HH
