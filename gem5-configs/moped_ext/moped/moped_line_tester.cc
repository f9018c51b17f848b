#include "moped_ext/moped/moped_line_tester.hh"

#include <fstream>

#include "base/cast.hh"
#include "base/logging.hh"
#include "base/output.hh"
#include "sim/sim_exit.hh"
#include "sim/system.hh"

namespace gem5
{

MopedLineTester::MopedLineTester(const MopedLineTesterParams &p)
    : ClockedObject(p), params(p), requestorId(p.system->getRequestorId(this)),
      rng(p.seed), watchEvent([this] { watch(); }, name() + ".watch"),
      stats(this)
{
    auto respond = [this](PacketPtr pkt) { complete(pkt); };
    corePorts = makeSeqPorts(name() + ".core_ports",
                             p.port_core_ports_connection_count, respond);
    mopedPorts = makeSeqPorts(name() + ".moped_ports",
                              p.port_moped_ports_connection_count, respond);
    if (p.lines == 0)
        fatal("%s: lines must be at least 1", name());
    lines.resize(p.lines);
    for (unsigned i = 0; i < p.lines; ++i)
        lines[i].addr = p.base + i * LineBytes;
}

Port &
MopedLineTester::getPort(const std::string &if_name, PortID idx)
{
    Port *port = if_name == "core_ports"    ? seqPort(corePorts, idx)
                 : if_name == "moped_ports" ? seqPort(mopedPorts, idx)
                                            : nullptr;
    return port ? *port : ClockedObject::getPort(if_name, idx);
}

void
MopedLineTester::startup()
{
    ClockedObject::startup();
    if (corePorts.empty())
        fatal("%s: no core ports are connected", name());
    lastCompletion = curCycle();
    // The lines start on the first cycle; the watch then looks for a stall.
    schedule(watchEvent, clockEdge());
}

void
MopedLineTester::watch()
{
    if (done)
        return;
    if (!started) {
        for (unsigned i = 0; i < lines.size(); ++i)
            next(i);
    } else if (outstanding > 0 &&
               curCycle() - lastCompletion > params.deadlock_cycles) {
        fail(csprintf("no request completed for %d cycles (cycle %d), %u "
                      "outstanding, %llu of %llu checks done (seed %llu)",
                      params.deadlock_cycles, curCycle(), outstanding,
                      finished, params.checks, params.seed));
        return;
    }
    if (!done)
        schedule(watchEvent, clockEdge(Cycles(10000)));
}

void
MopedLineTester::next(unsigned line)
{
    Line &l = lines[line];
    if (l.readsLeft > 0) {
        read(line);
        return;
    }
    if (l.written) {
        l.written = false;
        finished++;
        stats.checks++;
    }
    if (started >= params.checks) {
        l.busy = false;
        if (finished >= params.checks && outstanding == 0 && !done) {
            done = true;
            exitSimLoop("MopedLineTester completed");
        }
        return;
    }
    started++;
    write(line);
}

void
MopedLineTester::write(unsigned line)
{
    Line &l = lines[line];
    l.busy = true;
    l.written = true;
    l.readsLeft = 1 + rng() % 3;
    bool whole = !mopedPorts.empty() && rng() % 2 == 0;
    unsigned offset = whole ? 0 : 8 * (rng() % 8);
    unsigned size = whole ? LineBytes : 8;
    std::vector<uint8_t> data(size);
    for (auto &b : data)
        b = rng();
    for (unsigned i = 0; i < size; ++i) {
        l.expect[offset + i] = data[i];
        l.known[offset + i] = true;
    }
    RequestPtr req =
        std::make_shared<Request>(l.addr + offset, size, 0, requestorId);
    MopedSeqPort *port;
    if (whole) {
        // A MOPED's whole-line write: M_FILL where the design has fills.
        req->setPC(MopedFillPc);
        port = mopedPorts[rng() % mopedPorts.size()].get();
        stats.lineWrites++;
    } else {
        port = corePorts[rng() % corePorts.size()].get();
        stats.coreStores++;
    }
    PacketPtr pkt = new Packet(req, MemCmd::WriteReq);
    pkt->allocate();
    pkt->setData(data.data());
    pkt->pushSenderState(new Op(line, false, port->name()));
    outstanding++;
    port->send(pkt);
}

void
MopedLineTester::read(unsigned line)
{
    Line &l = lines[line];
    l.readsLeft--;
    bool whole = !mopedPorts.empty() && rng() % 2 == 0;
    unsigned offset = whole ? 0 : 8 * (rng() % 8);
    unsigned size = whole ? LineBytes : 8;
    MopedSeqPort *port;
    if (whole) {
        port = mopedPorts[rng() % mopedPorts.size()].get();
        stats.lineReads++;
    } else {
        port = corePorts[rng() % corePorts.size()].get();
        stats.coreReads++;
    }
    RequestPtr req =
        std::make_shared<Request>(l.addr + offset, size, 0, requestorId);
    PacketPtr pkt = new Packet(req, MemCmd::ReadReq);
    pkt->allocate();
    pkt->pushSenderState(new Op(line, true, port->name()));
    outstanding++;
    port->send(pkt);
}

void
MopedLineTester::complete(PacketPtr pkt)
{
    auto *op = safe_cast<Op *>(pkt->popSenderState());
    unsigned line = op->line;
    outstanding--;
    lastCompletion = curCycle();
    if (op->read && !done) {
        const Line &l = lines[line];
        const uint8_t *got = pkt->getConstPtr<uint8_t>();
        unsigned offset = pkt->getAddr() - l.addr;
        for (unsigned i = 0; i < pkt->getSize(); ++i) {
            unsigned b = offset + i;
            if (l.known[b] && got[i] != l.expect[b]) {
                fail(csprintf("line %#x byte %u read through %s at cycle %d: "
                              "%#x, expected %#x (check %llu, seed %llu)",
                              l.addr, b, op->port, curCycle(), got[i],
                              l.expect[b], finished + 1, params.seed));
                break;
            }
        }
    }
    delete op;
    delete pkt;
    if (!done)
        next(line);
}

void
MopedLineTester::fail(const std::string &why)
{
    done = true;
    std::ofstream out(simout.resolve("moped-line-tester-error.txt"));
    out << why << "\n";
    warn("%s: %s", name(), why);
    exitSimLoop("MopedLineTester failed", 1);
}

MopedLineTester::TesterStats::TesterStats(statistics::Group *parent)
    : statistics::Group(parent),
      ADD_STAT(checks, statistics::units::Count::get(),
               "Checks completed: a write and the reads that checked it"),
      ADD_STAT(lineWrites, statistics::units::Count::get(),
               "Whole-line writes through the MOPED sequencers (M_FILL where "
               "the design has fills, else M_GETX)"),
      ADD_STAT(coreStores, statistics::units::Count::get(),
               "8-byte stores through the core sequencers"),
      ADD_STAT(coreReads, statistics::units::Count::get(),
               "8-byte loads through the core sequencers, each checked"),
      ADD_STAT(lineReads, statistics::units::Count::get(),
               "Whole-line reads through the MOPED sequencers (M_GETS), each "
               "checked")
{
}

} // namespace gem5
