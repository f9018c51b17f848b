/* A small MPI program for `moped trace`'s tests: a ping-pong between ranks 0 and 1, a ring
 * of non-blocking messages, a sendrecv, and the collectives the tracer knows, all on
 * MPI_COMM_WORLD, with a computation before the first message. */
#include <mpi.h>

static double a[4096], b[4096];

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    volatile double s = 0;
    for (int i = 0; i < 200000; i++) s += i * 0.5;
    for (int i = 0; i < 4096; i++) a[i] = r + i;
    for (int it = 0; it < 4; it++) {
        if (r == 0) {
            MPI_Send(a, 1024, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(b, 1024, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (r == 1) {
            MPI_Recv(b, 1024, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(a, 1024, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        }
    }
    MPI_Request q[2];
    MPI_Status st[2];
    MPI_Irecv(b, 16, MPI_DOUBLE, (r + p - 1) % p, 3, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(a, 16, MPI_DOUBLE, (r + 1) % p, 3, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, st);
    MPI_Sendrecv(a, 8, MPI_DOUBLE, (r + 1) % p, 4, b + 100, 8, MPI_DOUBLE, (r + p - 1) % p, 4,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(a, 100, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double x = r, y;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(a, b, 64, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    MPI_Alltoall(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
