/* The structure of RingRong (Ezibenroc/platform-calibration test_ring.c, which the Dahu
 * preset's loaded network was fitted on), written anew and simulated: does SMPI reproduce a
 * per-message
 * "intercept" from the benchmark's own busy partner? (hplsim lab notebook E73)
 * usage: rr DGEMM_SECONDS PROGRESSED [ALL_BUSY]: ALL_BUSY 1 is the benchmark before its
 * commit dff63df (b455639), whose receive of the reply busy-waits too (E91). */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double dgemm_s;
static int progressed_remote;
static int all_busy; /* b455639: every receive busy-waits, the reply too */
static int me, n;
static char *sbuf, *rbuf;

/* 32 ranks a node, as the hostfile of e73_runs.sh */
static int same_node(int peer) { return peer / 32 == me / 32; }

static void timed_send(int size, int dst, const char *what, FILE *out)
{
  double t0 = MPI_Wtime();
  MPI_Send(sbuf, size, MPI_CHAR, dst, 0, MPI_COMM_WORLD);
  fprintf(out, "%d %d %d send %s %.9f\n", me, dst, size, what, MPI_Wtime() - t0);
}

static void timed_recv(int size, int src, int busy, const char *what, FILE *out)
{
  /* busy: compute a dgemm between probes; a probe between nodes (Open MPI, no progress
   * thread) reports what had arrived by the rank's previous MPI call */
  int flag = 0, seen = 0;
  int progressed = progressed_remote && !same_node(src);
  while (busy) {
    smpi_execute(dgemm_s);
    if (progressed) {
      if (seen)
        break;
      MPI_Iprobe(src, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      seen = flag;
    } else {
      MPI_Iprobe(src, 0, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      if (flag)
        break;
    }
  }
  double t0 = MPI_Wtime();
  MPI_Recv(rbuf, size, MPI_CHAR, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  fprintf(out, "%d %d %d recv %s %.9f\n", me, src, size, what, MPI_Wtime() - t0);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  dgemm_s = atof(argv[1]);
  progressed_remote = atoi(argv[2]);
  all_busy = argc > 3 && atoi(argv[3]);
  int sizes[] = {1000, 4000, 12000, 24000, 48000, 128000, 1000000, 4000000};
  int nsizes = sizeof sizes / sizeof *sizes;
  sbuf = SMPI_SHARED_MALLOC(4000000);
  rbuf = SMPI_SHARED_MALLOC(4000000);
  char name[64];
  snprintf(name, sizeof name, "out_%d.txt", me);
  FILE *out = fopen(name, "w");
  int prev = (me - 1 + n) % n, next = (me + 1) % n;
  for (int s = 0; s < nsizes; s++)
    for (int it = 0; it < 10; it++) {
      int size = sizes[s];
      if (me == 0) {
        timed_send(size, next, "ring", out);
        timed_recv(size, next, all_busy, "rong", out);
        timed_recv(size, prev, 1, "ring", out);
        timed_send(size, prev, "rong", out);
      } else {
        timed_recv(size, prev, 1, "ring", out);
        timed_send(size, prev, "rong", out);
        timed_send(size, next, "ring", out);
        timed_recv(size, next, all_busy, "rong", out);
      }
    }
  fclose(out);
  MPI_Finalize();
  return 0;
}
