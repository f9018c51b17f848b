#include "moped_ext/moped/sequencer_port.hh"

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

} // namespace gem5
