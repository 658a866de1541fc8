/* Lab notebook E13 (docs/validation.md): are a platform's private links full-duplex?
 * Ranks 0 and 1 on two hosts: one 100 MB message one way, then one each way at once. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int n = 100000000;
  char *s = SMPI_SHARED_MALLOC(n), *r = SMPI_SHARED_MALLOC(n);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  if (rank == 0) MPI_Send(s, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
  else MPI_Recv(r, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  double t1 = MPI_Wtime();
  MPI_Sendrecv(s, n, MPI_CHAR, 1 - rank, 1, r, n, MPI_CHAR, 1 - rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  double t2 = MPI_Wtime();
  if (rank == 0) printf("one way: %.4f s (%.2f GB/s); both ways at once: %.4f s (%.2f GB/s each)\n",
                        t1 - t0, n / (t1 - t0) / 1e9, t2 - t1, n / (t2 - t1) / 1e9);
  MPI_Finalize();
  return 0;
}
