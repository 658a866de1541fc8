/* Concurrent transfers timed in simulated time: what a platform's network does to
 * MB-sized messages as SMPI runs them (tests/test_loaded_network.py).
 *
 * usage: flows BYTES — with 2K ranks, ranks 0..K-1 each send BYTES to rank i+K at once,
 * after a barrier; each receiver prints "recv RANK SECONDS" (from the barrier to the end
 * of its receive). The hostfile places the ranks.
 *
 * Built with -DHPLSIM_NETLAWS and the runtime's netlaws.c, fatal.c and simgrid_config.cpp,
 * it installs the platform's per-route factors as the emulated HPL does. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef HPLSIM_NETLAWS
#include "netlaws.h"
#endif

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
#ifdef HPLSIM_NETLAWS
    hplsim_netlaws_install();
#endif
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long bytes = argc > 1 ? atol(argv[1]) : 0;
    int k = size / 2;
    char *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank < k) {
        MPI_Send(buf, (int)bytes, MPI_CHAR, rank + k, 0, MPI_COMM_WORLD);
    } else if (rank < 2 * k) {
        MPI_Recv(buf, (int)bytes, MPI_CHAR, rank - k, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("recv %d %.9f\n", rank, MPI_Wtime() - t0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
