#include "moped_ext/moped/moped_network.hh"

#include <algorithm>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/MopedSystem.hh"
#include "mem/ruby/network/BasicLink.hh"
#include "mem/ruby/network/MessageBuffer.hh"
#include "mem/ruby/protocol/MachineType.hh"
#include "mem/ruby/slicc_interface/AbstractController.hh"
#include "moped_ext/moped/moped_system.hh"

namespace gem5
{

namespace ruby
{

MopedNetwork::MopedNetwork(const Params &p)
    : Network(p), Consumer(this), stats(this)
{
    // moped numbers the cores' L2s first, then the directory banks.
    nodes.resize(m_nodes);
    uint32_t cores = 0, dirs = 0;
    for (auto *link : p.ext_links) {
        MachineID m = link->params().ext_node->getMachineID();
        if (m.type == MachineType_L2Cache)
            cores++;
        else if (m.type == MachineType_Directory)
            dirs++;
        else
            fatal("%s: %s is neither an L2 nor a directory", name(), m);
    }
    for (auto *link : p.ext_links) {
        MachineID m = link->params().ext_node->getMachineID();
        NodeID local = getLocalNodeID(MachineType_base_number(m.type) + m.num);
        uint32_t id = m.type == MachineType_L2Cache ? m.num : cores + m.num;
        nodes[local] = Node{m, id};
    }
    byMoped.resize(m_nodes);
    for (NodeID local = 0; local < m_nodes; ++local)
        byMoped.at(nodes[local].moped) = local;

    MopedG5NetConfig cfg{cores,
                         dirs,
                         p.cores_per_leaf,
                         p.hop_latency,
                         p.link_bytes_per_cycle,
                         (uint32_t)p.control_msg_size,
                         p.core_ghz,
                         p.net_mhz};
    char err[1024] = {0};
    own = moped_g5_net_new(&cfg, err, sizeof(err));
    if (!own)
        fatal("%s: %s", name(), err);
}

MopedNetwork::~MopedNetwork()
{
    moped_g5_net_free(own);
}

void
MopedNetwork::init()
{
    Network::init();
    for (auto &queues : m_toNetQueues)
        for (auto *q : queues)
            if (q)
                q->setConsumer(this);
}

void
MopedNetwork::attach(MopedG5Host *h)
{
    if (!moped_g5_net_matches(h, own))
        fatal("%s: the workload's system config has other network parameters "
              "(network.*, system.cores, directory.banks) than this network",
              name());
    host = h;
}

uint64_t
MopedNetwork::send(uint32_t src, uint32_t dst, uint32_t bytes, int vnet,
                   uint64_t now)
{
    if (host) {
        uint64_t at = moped_g5_host_net_send(host, src, dst, bytes, vnet, now);
        if (at == UINT64_MAX)
            fatal("%s: %s", name(), hostError(host));
        return at;
    }
    char err[1024] = {0};
    uint64_t at = moped_g5_net_send(own, src, dst, bytes, vnet, now, err,
                                    sizeof(err));
    if (at == UINT64_MAX)
        fatal("%s: %s", name(), err);
    return at;
}

void
MopedNetwork::deliver(NodeID from, int vnet, MessageBuffer *in, Tick now)
{
    uint64_t cycle = curCycle();
    while (in->isReady(now)) {
        MsgPtr msg = in->peekMsgPtr();
        in->dequeue(now);
        const NetDest dests = msg->getDestination();
        uint32_t bytes = MessageSizeType_to_int(msg->getMessageSize());
        int left = dests.count();
        fatal_if(left == 0, "%s: a message from %s has no destination",
                 name(), nodes[from].machine);
        // A multicast goes as one message per destination, in moped's node order, as
        // moped's directory sends its invalidations.
        for (NodeID to : byMoped) {
            if (!dests.isElement(nodes[to].machine))
                continue;
            MsgPtr out = --left == 0 ? msg : msg->clone();
            NetDest one;
            one.add(nodes[to].machine);
            out->getDestination() = one;
            uint64_t at = send(nodes[from].moped, nodes[to].moped, bytes, vnet,
                               cycle);
            Cycles delay(std::max<uint64_t>(at, cycle + 1) - cycle);
            MessageBuffer *q = vnet < (int)m_fromNetQueues[to].size()
                                   ? m_fromNetQueues[to][vnet]
                                   : nullptr;
            fatal_if(!q, "%s: %s has no queue for virtual network %d", name(),
                     nodes[to].machine, vnet);
            q->enqueue(out, now, cyclesToTicks(delay));
            stats.messages++;
            stats.bytes += bytes;
            stats.latency += delay;
            DPRINTF(MopedSystem, "net %s -> %s vnet %d %u B: %llu cycles\n",
                    nodes[from].machine, nodes[to].machine, vnet, bytes,
                    (unsigned long long)delay);
        }
    }
}

void
MopedNetwork::wakeup()
{
    Tick now = clockEdge();
    for (NodeID from : byMoped) {
        auto &queues = m_toNetQueues[from];
        for (int vnet = 0; vnet < (int)queues.size(); ++vnet)
            if (queues[vnet])
                deliver(from, vnet, queues[vnet], now);
    }
}

void
MopedNetwork::print(std::ostream &out) const
{
    out << "[MopedNetwork " << name() << "]";
}

MopedNetwork::NetStats::NetStats(statistics::Group *parent)
    : statistics::Group(parent),
      ADD_STAT(messages, statistics::units::Count::get(),
               "Messages delivered (one per destination of a multicast)"),
      ADD_STAT(bytes, statistics::units::Byte::get(),
               "Bytes of the messages delivered"),
      ADD_STAT(latency, statistics::units::Cycle::get(),
               "Cycles from leaving a controller to arriving, summed over "
               "the messages")
{}

} // namespace ruby
} // namespace gem5
