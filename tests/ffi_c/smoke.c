/*
 * Drives moped's C ABI (moped_gem5.h) as gem5's MopedSystem does, with an ideal memory in
 * place of Ruby: one flat memory answering every request after a fixed latency. Built and
 * run by tests/ffi.rs against the static library; the argument is a workload spec.
 * Prints "finished ..." and exits 0 when the run finished with every message verified.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moped_gem5.h"

/* The layout the Rust side's `MopedG5Request` has (tests/ffi.rs checks the same numbers). */
_Static_assert(offsetof(MopedG5Request, paddr) == 24, "paddr");
_Static_assert(offsetof(MopedG5Request, mask) == 32, "mask");
_Static_assert(offsetof(MopedG5Request, data) == 40, "data");
_Static_assert(sizeof(MopedG5Request) == 104, "size");

#define PAGE_BYTES 4096u
#define MEM_BYTES (512u << 20)

/* Sparse memory: pages allocated (zeroed) at their first use. */
typedef struct Memory {
    uint8_t *pages[MEM_BYTES / PAGE_BYTES];
    uint64_t out_of_range;
} Memory;

static uint8_t *line_at(Memory *m, uint64_t paddr)
{
    if (paddr >= MEM_BYTES) {
        m->out_of_range++;
        return NULL;
    }
    uint8_t **page = &m->pages[paddr / PAGE_BYTES];
    if (*page == NULL) {
        *page = calloc(1, PAGE_BYTES);
        if (*page == NULL) {
            fprintf(stderr, "out of host memory\n");
            exit(2);
        }
    }
    return *page + (paddr % PAGE_BYTES) / MOPED_G5_LINE_BYTES * MOPED_G5_LINE_BYTES;
}

static void read_line(void *ctx, uint64_t paddr, uint8_t out[MOPED_G5_LINE_BYTES])
{
    uint8_t *l = line_at(ctx, paddr);
    if (l)
        memcpy(out, l, MOPED_G5_LINE_BYTES);
    else
        memset(out, 0, MOPED_G5_LINE_BYTES);
}

static void write_line(void *ctx, uint64_t paddr, const uint8_t data[MOPED_G5_LINE_BYTES])
{
    uint8_t *l = line_at(ctx, paddr);
    if (l)
        memcpy(l, data, MOPED_G5_LINE_BYTES);
}

/* gem5's answer to whether a core's load will hit: this memory has no caches, so never. */
static int never_hits(void *ctx, uint32_t core, uint64_t paddr)
{
    (void)ctx;
    (void)core;
    (void)paddr;
    return 0;
}

typedef struct Inflight {
    uint64_t due;
    MopedG5Request req;
} Inflight;

static int fail(const char *what, MopedG5Host *h)
{
    char err[4096];
    moped_g5_error(h, err, sizeof err);
    fprintf(stderr, "%s: %s\n", what, err);
    return 1;
}

/* Serves a request on the memory; `out` gets the bytes a LOAD or an M_GETS reads. */
static void serve(Memory *m, const MopedG5Request *r, uint8_t out[MOPED_G5_LINE_BYTES])
{
    uint64_t line = r->paddr & ~(uint64_t)(MOPED_G5_LINE_BYTES - 1);
    uint8_t *l = line_at(m, line);
    unsigned off = (unsigned)(r->paddr - line);
    if (l == NULL)
        return;
    switch (r->op) {
      case MOPED_G5_LOAD:
        memcpy(out, l + off, r->size);
        break;
      case MOPED_G5_M_GETS:
        memcpy(out, l, MOPED_G5_LINE_BYTES);
        break;
      case MOPED_G5_STORE:
        memcpy(l + off, r->data, r->size);
        break;
      default:
        if (r->op == MOPED_G5_M_FILL && r->mask == 0)
            memset(l, 0, MOPED_G5_LINE_BYTES);
        for (unsigned i = 0; i < MOPED_G5_LINE_BYTES; i++)
            if ((r->mask >> i) & 1)
                l[i] = r->data[i];
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: smoke WORKLOAD.toml\n");
        return 2;
    }
    static Memory mem;
    MopedG5Memory m = {&mem, read_line, write_line};
    char err[1024];

    /* A bad design: no host, and a message naming it. */
    MopedG5Host *bad = moped_g5_host_new(argv[1], "nonesuch", 1.0, 1, NULL, NULL, m, err,
                                         sizeof err);
    if (bad != NULL || strstr(err, "nonesuch") == NULL) {
        fprintf(stderr, "a bad design was not refused: %s\n", err);
        return 1;
    }
    /* A null host everywhere. */
    if (moped_g5_advance(NULL, 1) != UINT64_MAX || moped_g5_finished(NULL) != 0 ||
        moped_g5_cores(NULL) != 0) {
        fprintf(stderr, "a null host was not refused\n");
        return 1;
    }

    MopedG5Host *h = moped_g5_host_new(argv[1], "optcache", 0.1, 7, NULL,
                                       "l2.latency=12; moped.port_latency=8", m, err,
                                       sizeof err);
    if (h == NULL) {
        fprintf(stderr, "moped_g5_host_new: %s\n", err);
        return 1;
    }
    if (moped_g5_set_hit_probe(NULL, NULL, never_hits) != -1 ||
        moped_g5_set_hit_probe(h, NULL, never_hits) != 0) {
        fprintf(stderr, "moped_g5_set_hit_probe did not answer as the header says\n");
        return 1;
    }
    if (moped_g5_memory_bytes(h) > MEM_BYTES || moped_g5_cores(h) != 16 ||
        moped_g5_has_moped(h) != 1) {
        fprintf(stderr, "unexpected system: %llu bytes, %u cores\n",
                (unsigned long long)moped_g5_memory_bytes(h), moped_g5_cores(h));
        return 1;
    }

    size_t cap = 64, n = 0;
    Inflight *fl = malloc(cap * sizeof *fl);
    uint64_t now = 0;
    int status = 0;
    for (;;) {
        uint64_t next = moped_g5_advance(h, now);
        MopedG5Request r;
        while (moped_g5_take_request(h, &r)) {
            if (n == cap) {
                cap *= 2;
                fl = realloc(fl, cap * sizeof *fl);
            }
            fl[n].due = now + (r.port == MOPED_G5_CORE ? 4 : 16);
            fl[n].req = r;
            n++;
        }
        status = moped_g5_finished(h);
        if (status != 0)
            break;
        size_t first = n;
        for (size_t i = 0; i < n; i++)
            if (first == n || fl[i].due < fl[first].due)
                first = i;
        uint64_t due = first < n ? fl[first].due : UINT64_MAX;
        now = next < due ? next : due;
        if (now == UINT64_MAX) {
            fprintf(stderr, "the host waits for nothing\n");
            return 1;
        }
        /* Completes everything due now, in issue order. */
        for (size_t i = 0; i < n;) {
            if (fl[i].due > now) {
                i++;
                continue;
            }
            uint8_t data[MOPED_G5_LINE_BYTES];
            MopedG5Request done = fl[i].req;
            memmove(&fl[i], &fl[i + 1], (n - i - 1) * sizeof *fl);
            n--;
            serve(&mem, &done, data);
            int reads = done.op == MOPED_G5_LOAD || done.op == MOPED_G5_M_GETS;
            if (moped_g5_complete(h, done.id, reads ? data : NULL, -1, now) != 0)
                return fail("moped_g5_complete", h);
        }
    }
    if (status < 0)
        return fail("the run failed", h);
    if (mem.out_of_range != 0) {
        fprintf(stderr, "%llu accesses beyond the memory\n",
                (unsigned long long)mem.out_of_range);
        return 1;
    }
    size_t len = moped_g5_summary_json(h, NULL, 0);
    char *json = malloc(len + 1);
    if (moped_g5_summary_json(h, json, len + 1) != len || strlen(json) != len ||
        strstr(json, "\"mpi.messages_verified\"") == NULL) {
        fprintf(stderr, "a bad summary\n");
        return 1;
    }
    printf("finished at cycle %llu; summary of %zu bytes\n", (unsigned long long)now, len);
    free(json);
    free(fl);
    moped_g5_host_free(h);
    return 0;
}
