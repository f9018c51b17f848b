#include "moped_ext/moped/moped_system.hh"

#include <cstring>
#include <fstream>

#include "base/cast.hh"
#include "base/logging.hh"
#include "base/output.hh"
#include "base/statistics.hh"
#include "base/trace.hh"
#include "debug/MopedSystem.hh"
#include "mem/ruby/common/Address.hh"
#include "mem/ruby/slicc_interface/AbstractController.hh"
#include "moped_ext/moped/moped_network.hh"
#include "sim/sim_exit.hh"
#include "sim/system.hh"

namespace gem5
{

namespace
{

void
readLineCb(void *ctx, uint64_t paddr, uint8_t out[MOPED_G5_LINE_BYTES])
{
    static_cast<MopedSystem *>(ctx)->readLine(paddr, out);
}

void
writeLineCb(void *ctx, uint64_t paddr,
            const uint8_t data[MOPED_G5_LINE_BYTES])
{
    static_cast<MopedSystem *>(ctx)->writeLine(paddr, data);
}

int
hitsCb(void *ctx, uint32_t core, uint64_t paddr)
{
    return static_cast<MopedSystem *>(ctx)->coreLoadHits(core, paddr);
}

} // anonymous namespace

std::string
hostError(const MopedG5Host *host)
{
    std::vector<char> buf(4096);
    moped_g5_error(host, buf.data(), buf.size());
    return std::string(buf.data());
}

MopedSystem::MopedSystem(const MopedSystemParams &p)
    : ClockedObject(p), params(p), requestorId(p.system->getRequestorId(this)),
      processEvent([this] { process(); }, name() + ".process"),
      stats(this)
{
    auto respond = [this](PacketPtr pkt) { complete(pkt); };
    auto retried = [this] { stats.retries++; };
    corePorts = makeSeqPorts(name() + ".core_ports",
                             p.port_core_ports_connection_count, respond,
                             retried);
    mopedPorts = makeSeqPorts(name() + ".moped_ports",
                              p.port_moped_ports_connection_count, respond,
                              retried);
}

MopedSystem::~MopedSystem()
{
    moped_g5_host_free(host);
}

Port &
MopedSystem::getPort(const std::string &if_name, PortID idx)
{
    Port *port = if_name == "core_ports"    ? seqPort(corePorts, idx)
                 : if_name == "moped_ports" ? seqPort(mopedPorts, idx)
                                            : nullptr;
    return port ? *port : ClockedObject::getPort(if_name, idx);
}

void
MopedSystem::startup()
{
    ClockedObject::startup();
    if (corePorts.empty())
        fatal("%s: no core ports are connected", name());
    MopedG5Memory mem{this, readLineCb, writeLineCb};
    char err[4096] = {0};
    host = moped_g5_host_new(
        params.workload.c_str(), params.design.c_str(), params.iterations,
        params.seed,
        params.config_file.empty() ? nullptr : params.config_file.c_str(),
        params.sets.empty() ? nullptr : params.sets.c_str(), mem, err,
        sizeof(err));
    if (!host)
        fatal("%s: %s", name(), err);
    uint32_t cores = moped_g5_cores(host);
    if (cores > corePorts.size())
        fatal("%s: the workload needs %u cores but %u core ports are "
              "connected", name(), cores, corePorts.size());
    if (moped_g5_has_moped(host) && cores > mopedPorts.size())
        fatal("%s: design %s needs %u MOPED ports but %u are connected",
              name(), params.design, cores, mopedPorts.size());
    if (auto *net = dynamic_cast<ruby::MopedNetwork *>(params.network))
        net->attach(host);
    if (!params.controllers.empty()) {
        if (params.controllers.size() < cores)
            fatal("%s: %u cores but %u controllers", name(), cores,
                  params.controllers.size());
        moped_g5_set_hit_probe(host, this, hitsCb);
    }
    schedule(processEvent, clockEdge());
}

void
MopedSystem::readLine(uint64_t paddr, uint8_t *out)
{
    RequestPtr req = std::make_shared<Request>(
        paddr, MOPED_G5_LINE_BYTES, 0, requestorId);
    Packet pkt(req, MemCmd::ReadReq);
    pkt.dataStatic(out);
    corePorts[0]->sendFunctional(&pkt);
}

void
MopedSystem::writeLine(uint64_t paddr, const uint8_t *data)
{
    RequestPtr req = std::make_shared<Request>(
        paddr, MOPED_G5_LINE_BYTES, 0, requestorId);
    Packet pkt(req, MemCmd::WriteReq);
    pkt.dataStaticConst(data);
    corePorts[0]->sendFunctional(&pkt);
}

/*
 * Whether core `core`'s load of `paddr` will hit its L1 or L2: its L2 controller holds the
 * line readable. A line whose writeback is in flight reads as readable too (its TBE keeps
 * the data for functional reads), though a load to it waits; that is the one case this
 * answers wrongly.
 */
int
MopedSystem::coreLoadHits(uint32_t core, uint64_t paddr)
{
    if (core >= params.controllers.size())
        return 0;
    auto p = params.controllers[core]->getAccessPermission(
        ruby::makeLineAddress(paddr));
    return p == ruby::AccessPermission_Read_Only ||
           p == ruby::AccessPermission_Read_Write;
}

void
MopedSystem::process()
{
    if (done)
        return;
    uint64_t now = hostCycle();
    // A completion may have reached a mark of the timed region; the host stopped there.
    takeMark();
    uint64_t next = moped_g5_advance(host, now);
    MopedG5Request r;
    while (moped_g5_take_request(host, &r))
        issue(r);
    takeMark();
    int finished = moped_g5_finished(host);
    if (finished < 0) {
        fail(hostError(host));
        return;
    }
    if (finished > 0) {
        done = true;
        // Without a dumped end, the region (or the whole run) ends with the last core.
        if (!regionDumped)
            stats.cycles = now - regionStart;
        std::vector<char> buf(1 << 16);
        size_t n = moped_g5_summary_json(host, buf.data(), buf.size());
        if (n >= buf.size()) {
            buf.resize(n + 1);
            moped_g5_summary_json(host, buf.data(), buf.size());
        }
        std::ofstream out(simout.resolve(params.summary_file));
        out << buf.data() << "\n";
        exitSimLoop("moped: every core finished");
        return;
    }
    if (next != UINT64_MAX) {
        Tick edge = (next > now ? next : now + 1) * clockPeriod();
        Tick when = std::max<Tick>(curTick(), edge);
        if (!processEvent.scheduled())
            schedule(processEvent, when);
        else if (processEvent.when() > when)
            reschedule(processEvent, when);
    }
}

/*
 * The workload's timed region, as gem5's m5 resetstats and m5 dumpstats mark it in a
 * full-system run: at its start every statistic is reset, at its end they are dumped, in
 * the same cycle and between the same two events as the embedded simulator takes its
 * snapshots (the host stops there until its mark is taken).
 */
void
MopedSystem::takeMark()
{
    uint64_t at = 0;
    switch (moped_g5_take_mark(host, &at)) {
      case 1:
        DPRINTF(MopedSystem, "timed region starts at cycle %llu\n", at);
        regionStart = at;
        statistics::reset();
        break;
      case 2:
        DPRINTF(MopedSystem, "timed region ends at cycle %llu\n", at);
        stats.cycles = at - regionStart;
        statistics::dump();
        regionDumped = true;
        break;
      default:
        break;
    }
}

void
MopedSystem::issue(const MopedG5Request &r)
{
    bool core = r.port == MOPED_G5_CORE;
    auto &ports = core ? corePorts : mopedPorts;
    if (r.unit >= ports.size()) {
        fail(csprintf("request %llu names %s port %u of %u", r.id,
                      core ? "core" : "MOPED", r.unit, ports.size()));
        return;
    }
    MemCmd cmd;
    unsigned size = r.size;
    switch (r.op) {
      case MOPED_G5_LOAD:
      case MOPED_G5_M_GETS:
        cmd = MemCmd::ReadReq;
        break;
      case MOPED_G5_STORE:
      case MOPED_G5_M_GETX:
      case MOPED_G5_M_FILL:
        cmd = MemCmd::WriteReq;
        break;
      default:
        fail(csprintf("request %llu has unknown op %u", r.id, r.op));
        return;
    }
    if (!core)
        size = MOPED_G5_LINE_BYTES;
    Addr addr = r.paddr;
    unsigned offset = 0;
    bool masked = false;
    if (r.op == MOPED_G5_M_GETX) {
        if (r.mask == 0) {
            // Rights only: the copy unit's write that follows is an M_GETX of its own and
            // gains the rights then, so this one is answered at once.
            stats.lineOwns++;
            if (moped_g5_complete(host, r.id, nullptr, -1, hostCycle()) < 0)
                fail(hostError(host));
            return;
        }
        // Ruby's functional writes trip over masked packets waiting in a queue (gem5
        // v24's RubyRequest::functionalWrite reads their data first), so a contiguous
        // run of bytes goes as a plain write of just those bytes.
        unsigned first = __builtin_ctzll(r.mask);
        unsigned last = 63 - __builtin_clzll(r.mask);
        uint64_t run = last - first == 63 ? ~0ULL
                                          : ((1ULL << (last - first + 1)) - 1) << first;
        if (r.mask == run) {
            addr = r.paddr + first;
            offset = first;
            size = last - first + 1;
        } else {
            masked = true;
        }
    }
    RequestPtr req = std::make_shared<Request>(addr, size, 0, requestorId);
    if (r.op == MOPED_G5_M_FILL)
        req->setPC(MopedFillPc);
    if (masked) {
        std::vector<bool> enable(MOPED_G5_LINE_BYTES);
        for (unsigned i = 0; i < MOPED_G5_LINE_BYTES; ++i)
            enable[i] = (r.mask >> i) & 1;
        req->setByteEnable(enable);
    }
    PacketPtr pkt = new Packet(req, cmd);
    pkt->allocate();
    if (cmd == MemCmd::WriteReq)
        pkt->setData(r.data + offset);
    pkt->pushSenderState(new RequestState(r.id));
    if (curTick() % clockPeriod() != 0)
        stats.lateRequests++;
    if (core)
        stats.coreRequests++;
    else
        stats.mopedRequests++;
    // A masked M_GETX is the copy unit's write into a line it owns (counted there when
    // its rights-only M_GETX was answered above), so it counts as a write, not an own.
    if (r.op == MOPED_G5_M_GETS)
        stats.lineReads++;
    else if (r.op == MOPED_G5_M_GETX)
        stats.lineWrites++;
    else if (r.op == MOPED_G5_M_FILL)
        stats.lineFills++;
    DPRINTF(MopedSystem, "issue %llu op %u on %s %u at %#x\n", r.id, r.op,
            core ? "core" : "moped", r.unit, r.paddr);
    ports[r.unit]->send(pkt);
}

void
MopedSystem::complete(PacketPtr pkt)
{
    auto *state = safe_cast<RequestState *>(pkt->popSenderState());
    uint64_t id = state->id;
    delete state;
    const uint8_t *data = pkt->isRead() ? pkt->getConstPtr<uint8_t>() : nullptr;
    DPRINTF(MopedSystem, "complete %llu at %#x\n", id, pkt->getAddr());
    int rc = moped_g5_complete(host, id, data, -1, hostCycle());
    delete pkt;
    if (rc < 0) {
        fail(hostError(host));
        return;
    }
    if (processEvent.scheduled())
        deschedule(processEvent);
    process();
}

void
MopedSystem::fail(const std::string &why)
{
    done = true;
    std::ofstream out(simout.resolve("moped-error.txt"));
    out << why << "\n";
    warn("%s: %s", name(), why);
    exitSimLoop("moped: the run failed", 1);
}

MopedSystem::MopedStats::MopedStats(statistics::Group *parent)
    : statistics::Group(parent),
      ADD_STAT(cycles, statistics::units::Cycle::get(),
               "Cycles until the last core finished"),
      ADD_STAT(coreRequests, statistics::units::Count::get(),
               "Core loads and stores issued to the sequencers"),
      ADD_STAT(mopedRequests, statistics::units::Count::get(),
               "MOPED line requests issued to the MOPED sequencers"),
      ADD_STAT(lateRequests, statistics::units::Count::get(),
               "Requests issued a tick after their cycle's edge (the host made "
               "them as a completion reached it): Ruby takes them a cycle later "
               "than the embedded model would"),
      ADD_STAT(lineReads, statistics::units::Count::get(),
               "MOPED line reads for the copy unit and page walks (M_GETS)"),
      ADD_STAT(lineOwns, statistics::units::Count::get(),
               "MOPED receive lines owned (M_GETX for the rights, answered at "
               "once: the write that follows gains them)"),
      ADD_STAT(lineWrites, statistics::units::Count::get(),
               "MOPED writes into receive lines (M_GETX with the bytes)"),
      ADD_STAT(lineFills, statistics::units::Count::get(),
               "MOPED requests for whole receive lines without their data "
               "(M_FILL)"),
      ADD_STAT(retries, statistics::units::Count::get(),
               "Sequencer retries after a refused request")
{
}

} // namespace gem5
