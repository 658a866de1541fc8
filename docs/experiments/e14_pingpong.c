/* Lab notebook E14 (docs/validation.md): SMPI's modelled ping-pong on a platform, to set
 * against a real MPI calibration. Rank 0 reads message sizes (one per line) from the file
 * named by argv[1]; for each, ranks 0 and 1 exchange one message each way (MPI_Send, then
 * MPI_Recv), and rank 0 prints the size and the round trip's simulated time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static long sizes[1000];
  int n = 0;
  if (rank == 0) {
    FILE *f = fopen(argv[1], "r");
    while (n < 1000 && fscanf(f, "%ld", &sizes[n]) == 1) n++;
    fclose(f);
  }
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(sizes, n, MPI_LONG, 0, MPI_COMM_WORLD);
  long max = 0;
  for (int i = 0; i < n; i++) if (sizes[i] > max) max = sizes[i];
  char *buf = SMPI_SHARED_MALLOC(max);
  for (int i = 0; i < n; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank == 0) {
      MPI_Send(buf, sizes[i], MPI_CHAR, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, sizes[i], MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      printf("%ld %.9e\n", sizes[i], MPI_Wtime() - t0);
    } else {
      MPI_Recv(buf, sizes[i], MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, sizes[i], MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
  }
  SMPI_SHARED_FREE(buf);
  MPI_Finalize();
  return 0;
}
