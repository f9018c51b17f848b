#include "moped_ext/moped/sequencer_port.hh"

#include "base/cprintf.hh"

namespace gem5
{

void
MopedSeqPort::send(PacketPtr pkt)
{
    if (!waiting.empty() || !sendTimingReq(pkt))
        waiting.push_back(pkt);
}

bool
MopedSeqPort::recvTimingResp(PacketPtr pkt)
{
    respond(pkt);
    return true;
}

void
MopedSeqPort::recvReqRetry()
{
    retried();
    while (!waiting.empty() && sendTimingReq(waiting.front()))
        waiting.pop_front();
}

std::vector<std::unique_ptr<MopedSeqPort>>
makeSeqPorts(const std::string &prefix, int count,
             const std::function<void(PacketPtr)> &respond,
             const std::function<void()> &retried)
{
    std::vector<std::unique_ptr<MopedSeqPort>> ports;
    for (int i = 0; i < count; ++i) {
        ports.emplace_back(new MopedSeqPort(csprintf("%s%d", prefix, i),
                                            respond, retried));
    }
    return ports;
}

Port *
seqPort(const std::vector<std::unique_ptr<MopedSeqPort>> &ports, PortID idx)
{
    if (idx < 0 || idx >= (PortID)ports.size())
        return nullptr;
    return ports[idx].get();
}

} // namespace gem5
