/* moped's MPI tracer: a PMPI library preloaded into an MPI program by `moped trace`.
 *
 * Each process records the MPI calls it makes, with its thread's CPU time before and after
 * each (CLOCK_THREAD_CPUTIME_ID, ns: time the process spent descheduled, as when more
 * processes than cores share a machine, is no work of its own), its peers as ranks of MPI_COMM_WORLD, its buffers' addresses and
 * sizes in bytes, and writes them at MPI_Finalize to $MOPED_TRACE_DIR/rank-R.trace, one
 * line per call (the format is read by moped's `workload::trace`, whose documentation
 * gives it). Calls this file does not wrap are not recorded; `moped trace` says which
 * MPI functions it knows.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *trace_buf;
static size_t trace_len, trace_cap;
static int world_rank = -1, world_size;
static MPI_Group world_group;
static int tracing;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Appends one formatted line to the in-memory trace (written once, at MPI_Finalize, so
 * tracing costs no file I/O between calls). */
static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...) {
    if (!tracing) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(trace_buf + trace_len, trace_cap - trace_len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < trace_cap - trace_len) {
            trace_len += (size_t)n;
            return;
        }
        size_t cap = trace_cap ? trace_cap * 2 : (1u << 20);
        while (n >= 0 && cap - trace_len <= (size_t)n) cap *= 2;
        char *grown = realloc(trace_buf, cap);
        if (!grown) {
            fprintf(stderr, "moped trace: rank %d: out of memory for the trace\n", world_rank);
            abort();
        }
        trace_buf = grown;
        trace_cap = cap;
    }
}

static uint64_t bytes_of(int count, MPI_Datatype type) {
    int size = 0;
    PMPI_Type_size(type, &size);
    return (uint64_t)(count < 0 ? 0 : count) * (uint64_t)size;
}

/* A rank of `comm` as a rank of MPI_COMM_WORLD; MPI_ANY_SOURCE is written -1 and
 * MPI_PROC_NULL -2, whatever the MPI's own values. */
static int world_of(MPI_Comm comm, int r) {
    if (r == MPI_ANY_SOURCE) return -1;
    if (r == MPI_PROC_NULL) return -2;
    if (r < 0 || comm == MPI_COMM_WORLD) return r;
    MPI_Group g;
    int w = MPI_UNDEFINED;
    PMPI_Comm_group(comm, &g);
    PMPI_Group_translate_ranks(g, 1, &r, world_group, &w);
    PMPI_Group_free(&g);
    return w == MPI_UNDEFINED ? -3 : w;
}

/* A communicator as the list of its members' world ranks ("w" for MPI_COMM_WORLD). */
static void emit_comm(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) {
        emit(" w\n");
        return;
    }
    int n = 0;
    PMPI_Comm_size(comm, &n);
    emit(" ");
    for (int i = 0; i < n; i++) emit(i ? ",%d" : "%d", world_of(comm, i));
    emit("\n");
}

static unsigned long long addr(const void *p) { return (unsigned long long)(uintptr_t)p; }

/* MPI_ANY_TAG is written -1. */
static int tag_of(int tag) { return tag == MPI_ANY_TAG ? -1 : tag; }

static void start(void) {
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
    tracing = 1;
    emit("moped-trace 1 rank %d of %d\n", world_rank, world_size);
    emit("init %llu\n", (unsigned long long)now_ns());
}

int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    start();
    return rc;
}

int MPI_Finalize(void) {
    emit("finalize %llu\n", (unsigned long long)now_ns());
    const char *dir = getenv("MOPED_TRACE_DIR");
    if (dir && world_rank >= 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.trace", dir, world_rank);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(trace_buf, 1, trace_len, f) != trace_len || fclose(f) != 0)
            fprintf(stderr, "moped trace: rank %d: cannot write %s\n", world_rank, path);
    }
    tracing = 0;
    return PMPI_Finalize();
}

#define T0 uint64_t t0 = now_ns()
#define T1 (unsigned long long)t0, (unsigned long long)now_ns()

/* One point-to-point call: its peer and tag as the trace writes them, its size, its
 * buffer, and its request where it made one. */
static void emit_p2p(const char *kind, uint64_t t0, int peer, int tag, int count,
                     MPI_Datatype type, const void *buf, const MPI_Request *req,
                     MPI_Comm comm) {
    emit("%s %llu %llu %d %d %llu %llu", kind, (unsigned long long)t0,
         (unsigned long long)now_ns(), world_of(comm, peer), tag,
         (unsigned long long)bytes_of(count, type), addr(buf));
    if (req) emit(" %lld", (long long)*req);
    emit_comm(comm);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm) {
    T0;
    int rc = PMPI_Send(buf, count, type, dst, tag, comm);
    emit_p2p("send", t0, dst, tag, count, type, buf, NULL, comm);
    return rc;
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm) {
    T0;
    int rc = PMPI_Ssend(buf, count, type, dst, tag, comm);
    emit_p2p("send", t0, dst, tag, count, type, buf, NULL, comm);
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
             MPI_Status *status) {
    T0;
    int rc = PMPI_Recv(buf, count, type, src, tag, comm, status);
    emit_p2p("recv", t0, src, tag_of(tag), count, type, buf, NULL, comm);
    return rc;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm,
              MPI_Request *req) {
    T0;
    int rc = PMPI_Isend(buf, count, type, dst, tag, comm, req);
    emit_p2p("isend", t0, dst, tag, count, type, buf, req, comm);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm,
              MPI_Request *req) {
    T0;
    int rc = PMPI_Irecv(buf, count, type, src, tag, comm, req);
    emit_p2p("irecv", t0, src, tag_of(tag), count, type, buf, req, comm);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status) {
    long long r = (long long)*req;
    T0;
    int rc = PMPI_Wait(req, status);
    emit("wait %llu %llu %lld\n", T1, r);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    long long *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) r[i] = (long long)reqs[i];
    T0;
    int rc = PMPI_Waitall(n, reqs, statuses);
    emit("waitall %llu %llu %d", T1, n);
    for (int i = 0; i < n; i++) emit(" %lld", r[i]);
    emit("\n");
    free(r);
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dst, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
    T0;
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dst, stag, rbuf, rcount, rtype, src, rtag,
                           comm, status);
    emit("sendrecv %llu %llu %d %d %llu %llu %d %d %llu %llu", T1, world_of(comm, dst), stag,
         (unsigned long long)bytes_of(scount, stype), addr(sbuf), world_of(comm, src), tag_of(rtag),
         (unsigned long long)bytes_of(rcount, rtype), addr(rbuf));
    emit_comm(comm);
    return rc;
}

int MPI_Barrier(MPI_Comm comm) {
    T0;
    int rc = PMPI_Barrier(comm);
    emit("barrier %llu %llu", T1);
    emit_comm(comm);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    emit("bcast %llu %llu %d %llu %llu", T1, world_of(comm, root),
         (unsigned long long)bytes_of(count, type), addr(buf));
    emit_comm(comm);
    return rc;
}

static int type_size(MPI_Datatype type) {
    int size = 0;
    PMPI_Type_size(type, &size);
    return size;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm) {
    T0;
    int rc = PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    const void *s = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    emit("reduce %llu %llu %d %d %d %llu %llu", T1, world_of(comm, root), count,
         type_size(type), addr(s), addr(rbuf));
    emit_comm(comm);
    return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm) {
    T0;
    int rc = PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    const void *s = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    emit("allreduce %llu %llu %d %d %llu %llu", T1, count, type_size(type), addr(s),
         addr(rbuf));
    emit_comm(comm);
    return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    emit("gather %llu %llu %d %llu %llu %llu", T1, world_of(comm, root),
         (unsigned long long)bytes_of(scount, stype), addr(sbuf), addr(rbuf));
    emit_comm(comm);
    return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm) {
    T0;
    int rc = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    emit("alltoall %llu %llu %llu %llu %llu", T1, (unsigned long long)bytes_of(scount, stype),
         addr(sbuf), addr(rbuf));
    emit_comm(comm);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status) {
    long long r = (long long)*req;
    T0;
    int rc = PMPI_Test(req, flag, status);
    emit("test %llu %llu %lld %d\n", T1, r, *flag ? 1 : 0);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status) {
    long long *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) r[i] = (long long)reqs[i];
    T0;
    int rc = PMPI_Waitany(n, reqs, index, status);
    if (*index >= 0 && *index < n) emit("wait %llu %llu %lld\n", T1, r[*index]);
    free(r);
    return rc;
}

/* Calls the model cannot run yet: recorded by name, so reading the trace says which. */
static void unmodelled(const char *name, uint64_t t0) {
    emit("unmodelled %llu %llu %s\n", (unsigned long long)t0, (unsigned long long)now_ns(), name);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm) {
    T0;
    int rc = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    unmodelled("MPI_Allgather", t0);
    return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    unmodelled("MPI_Scatter", t0);
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype stype,
                  void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                  MPI_Comm comm) {
    T0;
    int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    unmodelled("MPI_Alltoallv", t0);
    return rc;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm) {
    T0;
    int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
    unmodelled("MPI_Reduce_scatter", t0);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    T0;
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    unmodelled("MPI_Waitsome", t0);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[]) {
    T0;
    int rc = PMPI_Testall(n, reqs, flag, statuses);
    unmodelled("MPI_Testall", t0);
    return rc;
}
