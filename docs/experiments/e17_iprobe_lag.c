/* Lab notebook E17 (docs/validation.md): how many MPI_Iprobe calls does a rank need to see
 * a message that arrived while it computed? Rank 1 sends; rank 0 computes 10 ms (no MPI
 * call), then probes with 1 ms of computation between probes and prints how many probes
 * it took. Built with mpicc (Open MPI) and with smpicc (SMPI), the same source:
 *   mpicc -O2 -o lag e17_iprobe_lag.c && mpirun -np 2 --bind-to core ./lag
 *   smpicc -O2 -o lag-smpi e17_iprobe_lag.c && smpirun -np 2 -platform P.xml -hostfile H ./lag-smpi */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static void compute_for(double seconds)
{
  double t = now();
  while (now() - t < seconds) {
  }
}

int main(int argc, char **argv)
{
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int sizes[] = {8, 4096, 65536, 1 << 20, 10 << 20};
  char *buf = malloc(10 << 20);
  for (int s = 0; s < 5; s++)
    for (int rep = 0; rep < 5; rep++) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 1) {
        MPI_Send(buf, sizes[s], MPI_BYTE, 0, 7, MPI_COMM_WORLD);
      } else {
        int flag = 0, probes = 0;
        MPI_Status st;
        compute_for(0.01); /* the message arrives meanwhile */
        while (!flag) {
          MPI_Iprobe(1, 7, MPI_COMM_WORLD, &flag, &st);
          probes++;
          if (!flag)
            compute_for(0.001);
        }
        MPI_Recv(buf, sizes[s], MPI_BYTE, 1, 7, MPI_COMM_WORLD, &st);
        printf("size %d probes %d\n", sizes[s], probes);
      }
    }
  free(buf);
  MPI_Finalize();
  return 0;
}
