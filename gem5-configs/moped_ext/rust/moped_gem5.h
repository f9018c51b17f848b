/*
 * moped's C ABI for gem5: the cores' MPI programs, the OS model and the MOPED devices of
 * one simulated system, as one object driven by "requests out, responses in, time".
 *
 * The host (gem5's MopedSystem SimObject) owns the coherent memory system: it issues the
 * memory requests this object hands out on the right Ruby sequencer, tells it when each
 * completes, and wakes it at the cycle it asks for. Everything else (per-core program
 * state, the blocking load and bounded store buffer of each core, address translation with
 * per-core TLBs, the MMIO ports, the MOPED devices and the messages between them, page
 * faults served by the OS, checking every MPI message's bytes) runs in Rust, the same code
 * the embedded simulator runs. Messages between MOPEDs do not travel through Ruby's
 * network: they take the latency the embedded simulator's network model gives them, on
 * the same links as Ruby's messages when gem5's MopedNetwork carries those (below).
 *
 * Time is in the CMP's cycles (gem5's curCycle() of the object driving the host). A call
 * that names a cycle before the latest one named is taken as at the latest one.
 *
 * Built by `cargo rustc --release --features ffi --lib --crate-type staticlib`.
 * Every function is safe to call with a null host (it then fails or returns 0).
 */
#ifndef MOPED_GEM5_H
#define MOPED_GEM5_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOPED_G5_LINE_BYTES 64

/* Functional access to the host's memory, seeing the current value of every line wherever
 * it is (a cache, a message in flight, memory). Used to load the initial memory image
 * (buffers, page tables) from within moped_g5_host_new, so the memory must be usable
 * then; for the OS's page-table updates; and to check message bytes. Every address is
 * line-aligned and below moped_g5_memory_bytes(). */
typedef struct MopedG5Memory {
    void *ctx;
    void (*read_line)(void *ctx, uint64_t paddr, uint8_t out[MOPED_G5_LINE_BYTES]);
    void (*write_line)(void *ctx, uint64_t paddr, const uint8_t data[MOPED_G5_LINE_BYTES]);
} MopedG5Memory;

typedef struct MopedG5Host MopedG5Host;

/* Which sequencer a request goes to. */
enum MopedG5Port {
    MOPED_G5_CORE = 0,  /* core `unit`'s sequencer (L1 first) */
    MOPED_G5_MOPED = 1, /* the MOPED sequencer of L2 `unit` */
};

/* What a request asks. */
enum MopedG5Op {
    MOPED_G5_LOAD = 0,   /* core load of `size` bytes at `paddr`; the answer carries them */
    MOPED_G5_STORE = 1,  /* core store of `size` bytes (`data`, little-endian) at `paddr` */
    MOPED_G5_M_GETS = 2, /* MOPED reads the whole line at `paddr` (event M_GETS) */
    MOPED_G5_M_GETX = 3, /* MOPED gains exclusive rights and writes the `mask` bytes of `data`
                            (mask 0: the rights only); rights lost since are regained */
    MOPED_G5_M_FILL = 4, /* as M_GETX, for a line overwritten whole (event M_FILL): its old
                            data are not needed */
};

typedef struct MopedG5Request {
    uint64_t id;     /* names the request in moped_g5_complete */
    uint32_t port;   /* enum MopedG5Port */
    uint32_t unit;   /* core or L2 index */
    uint32_t op;     /* enum MopedG5Op */
    uint32_t size;   /* bytes: 1..8 for core accesses, 64 for MOPED ones */
    uint64_t paddr;  /* physical address; line-aligned for MOPED ones */
    uint64_t mask;   /* M_GETX/M_FILL: bit i selects byte i of the line */
    uint8_t data[MOPED_G5_LINE_BYTES]; /* STORE: bytes 0..size; M_GETX/M_FILL: the line */
} MopedG5Request;

/* Creates the system for `workload` (a spec .toml or a GOAL .goal file) under `design`
 * (baseline, basemoped, optcopy or optcache). `config_toml` (nullable) is a system config
 * file, `sets` (nullable) a ';'-separated list of KEY=VALUE overrides as `moped mpi --set`
 * takes them. `iterations` scales iteration counts (1.0 = as specified). Writes the
 * initial memory image through `mem`. On error returns NULL and writes a message naming
 * the file and line or the key into `err` (NUL-terminated, truncated to `err_len`). */
MopedG5Host *moped_g5_host_new(const char *workload, const char *design, double iterations,
                               uint64_t seed, const char *config_toml, const char *sets,
                               MopedG5Memory mem, char *err, size_t err_len);
void moped_g5_host_free(MopedG5Host *host);

/* The number of cores (= L2s = MOPEDs) the system needs. */
uint32_t moped_g5_cores(const MopedG5Host *host);
/* The bytes of physical memory the system uses (the config's memory.size_bytes): the OS
 * hands out page frames below it, so gem5's memory must cover [0, this). */
uint64_t moped_g5_memory_bytes(const MopedG5Host *host);
/* Whether the design has MOPEDs (false for baseline). */
int moped_g5_has_moped(const MopedG5Host *host);

/* Lets gem5 answer, as a core's window load enters Ruby, whether it will hit its L1 or L2
 * (`hits(ctx, core, paddr)` nonzero), so that such a load holds no miss register, as in the
 * embedded model; a NULL `hits` leaves every window load counted as a miss. 0, or -1
 * without a host. `hits` may be called with `ctx` for as long as the host lives. */
int moped_g5_set_hit_probe(MopedG5Host *host, void *ctx,
                           int (*hits)(void *ctx, uint32_t core, uint64_t paddr));

/* Advances the system to cycle `now` (never backwards). Returns the next cycle at which it
 * needs a call even if no request completes, or UINT64_MAX if none (also once the run has
 * finished or failed: see moped_g5_finished). Call it after moped_g5_complete too (at the
 * same cycle): a completion may let work start at once and change the next cycle. */
uint64_t moped_g5_advance(MopedG5Host *host, uint64_t now);

/* The workload's timed region (its warm-up over, as gem5's m5 resetstats and m5 dumpstats
 * mark it): returns 1 where the region starts, 2 where it ends (with its cycle in `cycle`,
 * nullable), 0 if no mark was reached since the last call. The host stops at a mark, the
 * rest of that cycle left for the next moped_g5_advance, so a caller that resets its
 * statistics at the start and dumps them at the end counts what the embedded run's
 * timed region counts. Without an end mark the region ends with the run. */
int moped_g5_take_mark(MopedG5Host *host, uint64_t *cycle);

/* Pops the next request to issue into `out`; returns 1 if there was one, else 0. The host
 * may refuse to issue it now (sequencer busy) and must then keep it and retry later. */
int moped_g5_take_request(MopedG5Host *host, MopedG5Request *out);

/* A request finished at cycle `now`. For LOAD and M_GETS, `data` holds the bytes read
 * (`size` bytes for LOAD, the whole line for M_GETS); otherwise it may be NULL. An M_GETX
 * or M_FILL completes once its bytes are written. `level` says where a core access was
 * served: 0 L1, 1 L2, 2 another cache, 3 memory, 4 upgrade, -1 unknown (counted in the
 * summary only). Returns 0, or -1 if the run failed (see moped_g5_error): a message's
 * bytes differ at its receiver, an unknown id, a LOAD or M_GETS without data. */
int moped_g5_complete(MopedG5Host *host, uint64_t id, const uint8_t *data, int32_t level,
                      uint64_t now);

/* 1 when every core has finished and every check passed; -1 when the run failed. */
int moped_g5_finished(const MopedG5Host *host);

/* The failure message, or "" (NUL-terminated, truncated to `len`); returns its full
 * length. */
size_t moped_g5_error(const MopedG5Host *host, char *out, size_t len);

/* The run's summary as JSON (cycles, per-core accesses, messages and bytes verified, MOPED
 * and OS counters, each with a description and unit), written to `out` like
 * moped_g5_error. Returns the full length (call again with a larger buffer if needed).
 * The format of moped's stats.json ("stats": [{name, value, unit, desc}], "tree"), plus
 * "workload", "design", "state" (running, finished or failed), "error", "notes",
 * "timed_region" ({from, to, end_dumped}: the cycles the statistics cover, and whether
 * its end was a mark, where the caller dumped its statistics), and
 * "cycles", "messages_verified" and "bytes_verified" as {value, unit, desc}. */
size_t moped_g5_summary_json(const MopedG5Host *host, char *out, size_t len);

/* Ruby's network on moped's network model. gem5's MopedNetwork hands every message a
 * controller sends to one of the send functions below and delivers it at the cycle they
 * return: the links, their serialization, hop latency and contention are the embedded
 * simulator's (`src/net`). Nodes are the cores' L2 controllers 0..cores, then the
 * directory banks; `vnet` is the protocol's virtual network (0 requests, 1 forwards,
 * 2 responses); `bytes` the message's size (header, plus the line for data). */

/* The links' parameters, as moped's system config names them (system.cores,
 * directory.banks, network.*, system.core_ghz). */
typedef struct MopedG5NetConfig {
    uint32_t cores;
    uint32_t dirs;
    uint32_t cores_per_leaf;
    uint32_t hop_latency;
    uint32_t link_bytes_per_cycle;
    uint32_t header_bytes;
    double core_ghz;
    double net_mhz;
} MopedG5NetConfig;

typedef struct MopedG5Net MopedG5Net;

/* Links of their own, for a system without a workload (gem5's RubyTester). On error
 * returns NULL and writes a message naming the config key into `err`. */
MopedG5Net *moped_g5_net_new(const MopedG5NetConfig *cfg, char *err, size_t err_len);
void moped_g5_net_free(MopedG5Net *net);

/* Sends a message entering the network at cycle `now`; returns the cycle it arrives, or
 * UINT64_MAX for a node, vnet or size the network does not have (the message in `err`). */
uint64_t moped_g5_net_send(MopedG5Net *net, uint32_t src, uint32_t dst, uint32_t bytes,
                           uint32_t vnet, uint64_t now, char *err, size_t err_len);

/* The same on the host's own network, which also carries the messages between MOPEDs, so
 * both kinds wait for each other as in the embedded simulator. UINT64_MAX when the
 * message fails the run (see moped_g5_error). */
uint64_t moped_g5_host_net_send(MopedG5Host *host, uint32_t src, uint32_t dst,
                                uint32_t bytes, uint32_t vnet, uint64_t now);

/* 1 if `net` has the links of the host's network (same parameters), else 0. */
int moped_g5_net_matches(const MopedG5Host *host, const MopedG5Net *net);

#ifdef __cplusplus
}
#endif

#endif /* MOPED_GEM5_H */
