// A random tester of whole-line writes (see MopedLineTester.py): each of a few lines runs
// checks one after the other, a check being one write (a MOPED's whole-line write, or a
// core's 8-byte store) and then reads from random ports, each compared with the bytes the
// line must hold. One line's requests never overlap, so every read has one right answer;
// the lines' requests overlap each other, on caches small enough that they evict,
// invalidate and fill one another's lines all the time.

#ifndef MOPED_EXT_MOPED_MOPED_LINE_TESTER_HH
#define MOPED_EXT_MOPED_MOPED_LINE_TESTER_HH

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/statistics.hh"
#include "mem/packet.hh"
#include "mem/port.hh"
#include "moped_ext/moped/sequencer_port.hh"
#include "params/MopedLineTester.hh"
#include "sim/clocked_object.hh"
#include "sim/eventq.hh"

namespace gem5
{

class MopedLineTester : public ClockedObject
{
  public:
    static constexpr unsigned LineBytes = 64;

    explicit MopedLineTester(const MopedLineTesterParams &p);

    Port &getPort(const std::string &if_name,
                  PortID idx = InvalidPortID) override;
    void startup() override;

  private:
    // What a request is, riding on its packet.
    struct Op : public Packet::SenderState
    {
        Op(unsigned line, bool read, std::string port)
            : line(line), read(read), port(std::move(port))
        {}
        unsigned line;
        bool read;
        std::string port;
    };

    // A line under test: the bytes it must hold and where its current check stands.
    struct Line
    {
        Addr addr = 0;
        std::array<uint8_t, LineBytes> expect{};
        // Which bytes the tester wrote (the others hold what memory started with).
        std::array<bool, LineBytes> known{};
        unsigned readsLeft = 0;
        bool busy = false;
        bool written = false;
    };

    void next(unsigned line);
    void write(unsigned line);
    void read(unsigned line);
    void complete(PacketPtr pkt);
    void watch();
    void fail(const std::string &why);

    const MopedLineTesterParams &params;
    RequestorID requestorId;
    std::vector<std::unique_ptr<MopedSeqPort>> corePorts;
    std::vector<std::unique_ptr<MopedSeqPort>> mopedPorts;
    std::vector<Line> lines;
    std::mt19937_64 rng;
    uint64_t started = 0;
    uint64_t finished = 0;
    unsigned outstanding = 0;
    Cycles lastCompletion{0};
    bool done = false;
    EventFunctionWrapper watchEvent;

    struct TesterStats : public statistics::Group
    {
        explicit TesterStats(statistics::Group *parent);
        statistics::Scalar checks;
        statistics::Scalar lineWrites;
        statistics::Scalar coreStores;
        statistics::Scalar coreReads;
        statistics::Scalar lineReads;
    } stats;
};

} // namespace gem5

#endif // MOPED_EXT_MOPED_MOPED_LINE_TESTER_HH
