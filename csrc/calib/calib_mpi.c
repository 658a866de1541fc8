/* hplsim-calib-mpi: time point-to-point MPI operations between ranks 0 and 1.
 *
 *   mpirun -np 2 hplsim-calib-mpi EXPERIMENT.csv > results.csv
 *
 * EXPERIMENT.csv: header with columns operation,size[,repetition]; rank 0 reads it and
 * broadcasts it, so only the launching host needs the file. Output (rank 0, stdout): one
 * CSV row per measurement, operation,size,duration,start,repetition,rank,host.
 *
 * Each protocol isolates one cost that SMPI models separately (docs/calibrate.md):
 *   send      MPI_Send while the receiver already waits (no late receiver) -> smpi/os
 *   recv      MPI_Recv of a message already sent (no late sender)        -> smpi/or
 *   isend     MPI_Isend while the receiver already waits                 -> smpi/ois
 *   pingpong  round trip Send+Recv of `size` bytes, after an untimed one  -> latency, bandwidth
 *   iprobe    one MPI_Iprobe that finds nothing (HPL's polling)           -> smpi/iprobe
 *   test      one MPI_Test on an Irecv whose message is not sent yet      -> smpi/test
 *   wtime     MPI_Wtime, mean over a batch of calls                       -> smpi/wtime
 *   iprobe-late  how late MPI_Iprobe reports a message that arrived while the receiver
 *             computed: the receiver computes LATE_WAIT s (the message arrives meanwhile),
 *             then probes every LATE_GAP s of computation until a probe reports it; the
 *             duration is the computation between the first probe and that one (0: the
 *             first probe reports it; LATE_GAP: one probe late, as Open MPI's ob1, whose
 *             failed probe is what takes arriving messages in)  -> mpi: iprobe_reports
 * Rank 1 sends the measurements it makes to rank 0 after each row, outside the timed
 * region; a barrier separates rows so that one row's traffic never overlaps the next. */
#include "calib_common.h"

#include <mpi.h>

enum { OP_SEND, OP_RECV, OP_ISEND, OP_PINGPONG, OP_IPROBE, OP_TEST, OP_WTIME, OP_IPROBE_LATE, OP_COUNT };
static const char *OP_NAMES[OP_COUNT] = {"send", "recv", "isend", "pingpong", "iprobe", "test", "wtime",
                                         "iprobe-late"};
/* which rank times the operation */
static const int OP_TIMER[OP_COUNT] = {0, 1, 0, 0, 1, 1, 0, 1};
/* iprobe-late: computation before the first probe (ample for any message's envelope to
 * arrive, even across a network) and between probes (the python fit knows it too) */
#define LATE_WAIT 2e-3
#define LATE_GAP 1e-4
#define LATE_MAX_PROBES 1000
enum { TAG_DATA = 1, TAG_READY = 2, TAG_RESULT = 3 };
#define WTIME_BATCH 1000
#define MAX_SIZE 2147483647LL

typedef struct { int op; int size; int rep; } row_t;

static int die0(int rank, const char *msg, const char *a, long long b) {
  if (rank == 0) {
    fprintf(stderr, "hplsim-calib-mpi: ");
    fprintf(stderr, msg, a, b);
    fputc('\n', stderr);
  }
  return 2;
}

/* Rank 0 only. Returns NULL and prints one line on error. */
static row_t *read_rows(const char *path, int *count) {
  FILE *f = fopen(path, "r");
  if (!f) { die0(0, "cannot read experiment file %s (errno %lld)", path, errno); return NULL; }
  char *line = NULL, *fields[16];
  size_t cap = 0;
  int c_op = -1, c_size = -1, c_rep = -1;
  if (getline(&line, &cap, f) < 0) { die0(0, "%s: empty experiment file%lld", path, 0); fclose(f); return NULL; }
  int nf = calib_split(line, fields, 16);
  for (int j = 0; j < nf; j++) {
    if (strcmp(fields[j], "operation") == 0) c_op = j;
    if (strcmp(fields[j], "size") == 0) c_size = j;
    if (strcmp(fields[j], "repetition") == 0) c_rep = j;
  }
  if (c_op < 0 || c_size < 0) { die0(0, "%s: header needs columns operation and size%lld", path, 0); fclose(f); return NULL; }
  int n = 0, alloc = 1024;
  row_t *rows = malloc(alloc * sizeof *rows);
  long long lineno = 1;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    if (line[strspn(line, " \t\r\n")] == '\0') continue;
    nf = calib_split(line, fields, 16);
    const char *op = c_op < nf ? fields[c_op] : "";
    row_t r = {-1, 0, 0};
    for (int j = 0; j < OP_COUNT; j++)
      if (strcmp(op, OP_NAMES[j]) == 0) r.op = j;
    if (r.op < 0) { die0(0, "unknown operation %s on line %lld", op, lineno); free(rows); rows = NULL; break; }
    long long s = calib_parse_int(c_size < nf ? fields[c_size] : "");
    if (s < 1 || s > MAX_SIZE) { die0(0, "%sline %lld: size must be an integer in 1..2^31-1", "", lineno); free(rows); rows = NULL; break; }
    long long rep = c_rep >= 0 && c_rep < nf ? calib_parse_int(fields[c_rep]) : 0;
    r.size = (int)s;
    r.rep = rep < 0 ? 0 : (int)rep;
    if (n == alloc) rows = realloc(rows, (alloc *= 2) * sizeof *rows);
    rows[n++] = r;
  }
  free(line);
  fclose(f);
  if (rows && n == 0) { die0(0, "%s: no rows in experiment file%lld", path, 0); free(rows); rows = NULL; }
  *count = n;
  return rows;
}

/* One row; returns the timed duration on the timing rank (undefined on the other). */
/* Computation that makes no MPI call: what a rank does between two of HPL's probes. */
static void compute_for(double seconds) {
  double until = calib_now() + seconds;
  while (calib_now() < until) {
  }
}

static double measure(const row_t *r, int rank, char *buf, double *start) {
  MPI_Comm comm = MPI_COMM_WORLD;
  MPI_Request req;
  MPI_Status st;
  int flag = 0;
  double t0 = 0, t1 = 0;
  char dummy = 0;
  switch (r->op) {
    case OP_SEND:
    case OP_ISEND:
      if (rank == 1) {
        MPI_Irecv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &req);
        MPI_Send(&dummy, 0, MPI_BYTE, 0, TAG_READY, comm);
        MPI_Wait(&req, &st);
      } else {
        MPI_Recv(&dummy, 0, MPI_BYTE, 1, TAG_READY, comm, &st);
        if (r->op == OP_SEND) {
          t0 = calib_now();
          MPI_Send(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm);
          t1 = calib_now();
        } else {
          t0 = calib_now();
          MPI_Isend(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm, &req);
          t1 = calib_now();
          MPI_Wait(&req, &st);
        }
      }
      break;
    case OP_RECV:
      if (rank == 0) {
        MPI_Isend(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm, &req);
        MPI_Send(&dummy, 0, MPI_BYTE, 1, TAG_READY, comm);
        MPI_Wait(&req, &st);
      } else {
        /* the READY message follows the data on the same pair, so once it is here the data
         * (or, above the eager limit, its rendezvous request) has arrived */
        MPI_Recv(&dummy, 0, MPI_BYTE, 0, TAG_READY, comm, &st);
        t0 = calib_now();
        MPI_Recv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &st);
        t1 = calib_now();
      }
      break;
    case OP_PINGPONG:
      /* one untimed round trip first: the ranks leave the barrier between rows up to tens
       * of µs apart, and a round trip timed right after it measured that skew (25 µs for 4
       * bytes, against 1–2 µs back to back; lab notebook E24) */
      if (rank == 0) {
        MPI_Send(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm);
        MPI_Recv(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm, &st);
      } else {
        MPI_Recv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &st);
        MPI_Send(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm);
      }
      if (rank == 0) {
        t0 = calib_now();
        MPI_Send(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm);
        MPI_Recv(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm, &st);
        t1 = calib_now();
      } else {
        MPI_Recv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &st);
        MPI_Send(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm);
      }
      break;
    case OP_IPROBE:
      if (rank == 1) {
        t0 = calib_now();
        MPI_Iprobe(0, TAG_DATA, comm, &flag, &st);
        t1 = calib_now();
      }
      break;
    case OP_TEST:
      if (rank == 1) {
        MPI_Irecv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &req);
        t0 = calib_now();
        MPI_Test(&req, &flag, &st);
        t1 = calib_now();
        MPI_Send(&dummy, 0, MPI_BYTE, 0, TAG_READY, comm);
        if (!flag) MPI_Wait(&req, &st);
      } else {
        MPI_Recv(&dummy, 0, MPI_BYTE, 1, TAG_READY, comm, &st);
        MPI_Send(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm);
      }
      break;
    case OP_IPROBE_LATE:
      if (rank == 1) {
        int probes = 0;
        MPI_Send(&dummy, 0, MPI_BYTE, 0, TAG_READY, comm);
        compute_for(LATE_WAIT);
        t0 = calib_now();
        for (;;) {
          MPI_Iprobe(0, TAG_DATA, comm, &flag, &st);
          if (flag || ++probes >= LATE_MAX_PROBES) break;
          compute_for(LATE_GAP);
        }
        t1 = calib_now();
        MPI_Recv(buf, r->size, MPI_BYTE, 0, TAG_DATA, comm, &st);
      } else {
        MPI_Recv(&dummy, 0, MPI_BYTE, 1, TAG_READY, comm, &st);
        MPI_Send(buf, r->size, MPI_BYTE, 1, TAG_DATA, comm);
      }
      break;
    case OP_WTIME:
      if (rank == 0) {
        volatile double sink = 0;
        t0 = calib_now();
        for (int i = 0; i < WTIME_BATCH; i++) sink += MPI_Wtime();
        t1 = calib_now();
        (void)sink;
        *start = t0;
        return (t1 - t0) / WTIME_BATCH;
      }
      break;
  }
  *start = t0;
  return t1 - t0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    printf("%s\n", strtok(version, "\n"));
    return 0;
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = 0, ok = 1;
  row_t *rows = NULL;
  if (size != 2) ok = 0, die0(rank, "needs exactly 2 ranks, got %s%lld", "", size);
  else if (argc != 2) ok = 0, die0(rank, "usage: mpirun -np 2 hplsim-calib-mpi EXPERIMENT.csv%s%lld", "", 0);
  else if (rank == 0) {
    rows = read_rows(argv[1], &n);
    ok = rows != NULL;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    MPI_Finalize();
    return 2;
  }
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank != 0) rows = malloc((size_t)n * sizeof *rows);
  MPI_Bcast(rows, n * (int)(sizeof *rows / sizeof(int)), MPI_INT, 0, MPI_COMM_WORLD);

  int max = 1;
  for (int i = 0; i < n; i++)
    if (rows[i].size > max) max = rows[i].size;
  char *buf = malloc((size_t)max);
  if (!buf) {
    fprintf(stderr, "hplsim-calib-mpi: rank %d cannot allocate %d bytes\n", rank, max);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  memset(buf, rank + 1, (size_t)max);  /* touch every page before anything is timed */

  char host[256], other[256];
  calib_hostname(host, sizeof host);
  if (rank == 0) MPI_Recv(other, sizeof other, MPI_CHAR, 1, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  else MPI_Send(host, sizeof host, MPI_CHAR, 0, TAG_RESULT, MPI_COMM_WORLD);

  if (rank == 0) puts("operation,size,duration,start,repetition,rank,host");
  for (int i = 0; i < n; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = 0, d = measure(&rows[i], rank, buf, &start);
    int timer = OP_TIMER[rows[i].op];
    if (timer == 1) {
      double pair[2] = {d, start};
      if (rank == 1) MPI_Send(pair, 2, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
      else {
        MPI_Recv(pair, 2, MPI_DOUBLE, 1, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        d = pair[0];
        start = pair[1];
      }
    }
    if (rank == 0) {
      /* flushed per row: an interrupted run keeps every row measured so far */
      printf("%s,%d,%.9e,%.9f,%d,%d,%s\n", OP_NAMES[rows[i].op], rows[i].size, d, start, rows[i].rep,
             timer, timer == 0 ? host : other);
      fflush(stdout);
    }
  }
  free(buf);
  free(rows);
  MPI_Finalize();
  return 0;
}
