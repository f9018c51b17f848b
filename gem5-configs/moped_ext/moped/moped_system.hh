// moped's Rust system (cores' MPI programs, OS, MOPED devices) as a gem5 SimObject: a thin
// shim that issues the requests the Rust side hands out on Ruby sequencers and reports
// their completion. See moped_ext/rust/moped_gem5.h for the contract.

#ifndef MOPED_EXT_MOPED_MOPED_SYSTEM_HH
#define MOPED_EXT_MOPED_MOPED_SYSTEM_HH

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/statistics.hh"
#include "mem/packet.hh"
#include "mem/port.hh"
#include "moped_ext/moped/sequencer_port.hh"
#include "moped_ext/rust/moped_gem5.h"
#include "params/MopedSystem.hh"
#include "sim/clocked_object.hh"
#include "sim/eventq.hh"

namespace gem5
{

// The host's failure message (moped_g5_error), or "".
std::string hostError(const MopedG5Host *host);

class MopedSystem : public ClockedObject
{
  public:
    explicit MopedSystem(const MopedSystemParams &p);
    ~MopedSystem() override;

    Port &getPort(const std::string &if_name,
                  PortID idx = InvalidPortID) override;
    void startup() override;

    // Functional line access for the Rust side (through Ruby, so cached copies count).
    void readLine(uint64_t paddr, uint8_t *out);
    void writeLine(uint64_t paddr, const uint8_t *data);
    int coreLoadHits(uint32_t core, uint64_t paddr);

  private:
    // Rides on each packet: the Rust request it carries.
    struct RequestState : public Packet::SenderState
    {
        explicit RequestState(uint64_t id) : id(id) {}
        uint64_t id;
    };

    // The host's cycle now: the clock edge at or before this tick. A Ruby callback runs
    // on an edge, but its response reaches this object a tick later (gem5's packet
    // queues send no earlier than the next tick), where curCycle() would round up to
    // the next cycle and every access would take one cycle more than it did.
    uint64_t hostCycle() const { return curTick() / clockPeriod(); }
    void process();
    void takeMark();
    void issue(const MopedG5Request &r);
    void complete(PacketPtr pkt);
    void fail(const std::string &why);

    const MopedSystemParams &params;
    RequestorID requestorId;
    MopedG5Host *host = nullptr;
    std::vector<std::unique_ptr<MopedSeqPort>> corePorts;
    std::vector<std::unique_ptr<MopedSeqPort>> mopedPorts;
    EventFunctionWrapper processEvent;
    bool done = false;
    // The cycle the workload's timed region started (0: none yet), and whether its end
    // was dumped (gem5's stats then cover exactly the region).
    uint64_t regionStart = 0;
    bool regionDumped = false;

    struct MopedStats : public statistics::Group
    {
        explicit MopedStats(statistics::Group *parent);
        statistics::Scalar cycles;
        statistics::Scalar coreRequests;
        statistics::Scalar mopedRequests;
        statistics::Scalar lateRequests;
        statistics::Scalar lineReads;
        statistics::Scalar lineOwns;
        statistics::Scalar lineWrites;
        statistics::Scalar lineFills;
        statistics::Scalar retries;
    } stats;
};

} // namespace gem5

#endif // MOPED_EXT_MOPED_MOPED_SYSTEM_HH
