/* Kernel tracer for the real HPL (`hplsim.real.trace`).
 *
 * Linked into a copy of the real xhpl with `-Wl,--wrap=<kernel>` for every kernel the
 * emulation replaces by a time model (the BLAS HPL calls through HPL_CALL_CBLAS, and HPL's
 * own copy and row-swap kernels), and for HPL_pdgesv. Each wrapper times the real call on
 * CLOCK_MONOTONIC and records it, but only inside HPL_pdgesv (the factorization and solve
 * that HPL times): matrix generation and the residual check are not recorded.
 *
 * A call the emulation skips (an empty operand: the BLAS's quick return, see
 * csrc/kernel-models/blas.c) is not recorded either, so that the recorded calls are exactly
 * the ones the emulation charges.
 *
 * At exit each rank writes $HPLSIM_TRACE_DIR/trace-<rank>.csv (columns: function, m, n, k,
 * m0, m1, side, duration, start, host, cpu, core, rank). The first row of every rank is
 * HPL_pdgesv itself (its duration is HPL's timed region on that rank).
 * $HPLSIM_TRACE_MAX caps the number of calls kept per rank (default 4,000,000).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The kernels, their names and what their sizes are: the table of kernels (hplsim.hpl.kernels).
 * A record holds the three sizes the emulation's runtime receives for the same call. */
#include "kernels.h" /* csrc/kernel-models/, on the include path */

enum { T_PDGESV = K_NKERNELS };
/* The trace's size columns, in order (`ld`, the last column, is written after the rank). */
static const char *const SIZE_COLUMNS[] = {"m", "n", "k", "m0", "m1"};
#define NSLOTS (sizeof hplsim_kernels->slots / sizeof *hplsim_kernels->slots)

typedef struct {
  int kernel, x[NSLOTS];
  char side;
  double start, duration;
} rec_t;

static rec_t *recs;
static size_t nrec, cap, maxrec, dropped;
static int active;

static inline double now(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void add(int kernel, int a, int b, int c, char side, double t0, double t1)
{
  if (nrec == cap) {
    if (maxrec == 0) {
      const char *env = getenv("HPLSIM_TRACE_MAX");
      maxrec = env ? strtoull(env, NULL, 10) : 4000000;
      if (maxrec == 0)
        maxrec = 1;
    }
    if (cap >= maxrec) {
      dropped++;
      return;
    }
    size_t ncap = cap ? 2 * cap : 65536;
    if (ncap > maxrec)
      ncap = maxrec;
    rec_t *n = realloc(recs, ncap * sizeof *n);
    if (!n) {
      dropped++;
      return;
    }
    recs = n;
    cap = ncap;
  }
  recs[nrec++] = (rec_t){kernel, {a, b, c}, side, t0, t1 - t0};
}

/* a, b, c: the sizes in the order of the kernel's slots (for the row swaps, the leading
 * dimension of the matrix whose rows they walk comes third: they cost 1.6x more when it is a
 * multiple of the L1 set span, lab notebook E25). */
#define TIMED(kernel, a, b, c, side, record, call)                                                  \
  do {                                                                                              \
    if (!active || !(record)) {                                                                     \
      call;                                                                                         \
    } else {                                                                                        \
      double t0_ = now();                                                                           \
      call;                                                                                         \
      add(kernel, a, b, c, side, t0_, now());                                                       \
    }                                                                                               \
  } while (0)

/* ------------------------------------------------------------------------- the wrappers */

/* One wrapper per shape (the form of a kernel's C arguments, hplsim.hpl.kernels): the header's
 * HPLSIM_TRACED_KERNELS names each kernel with its shape, so that the kernels' names are
 * written in the table alone. A call is recorded unless it is the BLAS's (or HPL's) quick
 * return. */
#define REAL(r) __real_##r
#define WRAP(r) __wrap_##r

#define WRAP_GEMM(r, id)                                                                            \
  void REAL(r)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, \
               double *, int);                                                                      \
  void WRAP(r)(int order, int ta, int tb, int M, int N, int K, double alpha, const double *A, int lda, \
               const double *B, int ldb, double beta, double *C, int ldc)                           \
  {                                                                                                 \
    int rec = !(M <= 0 || N <= 0 || ((K <= 0 || alpha == 0.0) && beta == 1.0));                     \
    TIMED(id, M, N, K, 0, rec, REAL(r)(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)); \
  }

/* k is the order of the triangular operand: M on the left (HplLeft / CblasLeft = 141), N on the right */
#define WRAP_TRSM(r, id)                                                                            \
  void REAL(r)(int, int, int, int, int, int, int, double, const double *, int, double *, int);     \
  void WRAP(r)(int order, int side, int uplo, int ta, int diag, int M, int N, double alpha,         \
               const double *A, int lda, double *B, int ldb)                                        \
  {                                                                                                 \
    int left = side == 141;                                                                         \
    TIMED(id, M, N, left ? M : N, left ? 'L' : 'R', M > 0 && N > 0,                                 \
          REAL(r)(order, side, uplo, ta, diag, M, N, alpha, A, lda, B, ldb));                       \
  }

#define WRAP_GEMV(r, id)                                                                            \
  void REAL(r)(int, int, int, int, double, const double *, int, const double *, int, double, double *, \
               int);                                                                                \
  void WRAP(r)(int order, int ta, int M, int N, double alpha, const double *A, int lda, const double *X, \
               int incx, double beta, double *Y, int incy)                                          \
  {                                                                                                 \
    TIMED(id, M, N, 0, 0, !(M <= 0 || N <= 0 || (alpha == 0.0 && beta == 1.0)),                     \
          REAL(r)(order, ta, M, N, alpha, A, lda, X, incx, beta, Y, incy));                         \
  }

#define WRAP_GER(r, id)                                                                             \
  void REAL(r)(int, int, int, double, const double *, int, const double *, int, double *, int);    \
  void WRAP(r)(int order, int M, int N, double alpha, const double *X, int incx, const double *Y,   \
               int incy, double *A, int lda)                                                        \
  {                                                                                                 \
    TIMED(id, M, N, 0, 0, !(M <= 0 || N <= 0 || alpha == 0.0),                                      \
          REAL(r)(order, M, N, alpha, X, incx, Y, incy, A, lda));                                   \
  }

#define WRAP_TRSV(r, id)                                                                            \
  void REAL(r)(int, int, int, int, int, const double *, int, double *, int);                       \
  void WRAP(r)(int order, int uplo, int ta, int diag, int N, const double *A, int lda, double *X,   \
               int incx)                                                                            \
  {                                                                                                 \
    TIMED(id, N, 0, 0, 0, N > 0, REAL(r)(order, uplo, ta, diag, N, A, lda, X, incx));               \
  }

#define WRAP_AXPY(r, id)                                                                            \
  void REAL(r)(int, double, const double *, int, double *, int);                                   \
  void WRAP(r)(int N, double alpha, const double *X, int incx, double *Y, int incy)                 \
  {                                                                                                 \
    TIMED(id, N, 0, 0, 0, N > 0, REAL(r)(N, alpha, X, incx, Y, incy));                              \
  }

#define WRAP_SCAL(r, id)                                                                            \
  void REAL(r)(int, double, double *, int);                                                         \
  void WRAP(r)(int N, double alpha, double *X, int incx)                                            \
  {                                                                                                 \
    TIMED(id, N, 0, 0, 0, N > 0, REAL(r)(N, alpha, X, incx));                                       \
  }

#define WRAP_SWAP(r, id)                                                                            \
  void REAL(r)(int, double *, int, double *, int);                                                  \
  void WRAP(r)(int N, double *X, int incx, double *Y, int incy)                                     \
  {                                                                                                 \
    TIMED(id, N, 0, 0, 0, N > 0, REAL(r)(N, X, incx, Y, incy));                                     \
  }

#define WRAP_IAMAX(r, id)                                                                           \
  int REAL(r)(int, const double *, int);                                                            \
  int WRAP(r)(int N, const double *X, int incx)                                                     \
  {                                                                                                 \
    int r_;                                                                                         \
    TIMED(id, N, 0, 0, 0, N > 0, r_ = REAL(r)(N, X, incx));                                         \
    return r_;                                                                                      \
  }

#define WRAP_CPY(r, id)                                                                             \
  void REAL(r)(int, int, const double *, int, double *, int);                                       \
  void WRAP(r)(int M, int N, const double *A, int LDA, double *B, int LDB)                          \
  {                                                                                                 \
    TIMED(id, M, N, 0, 0, M > 0 && N > 0, REAL(r)(M, N, A, LDA, B, LDB));                           \
  }

#define WRAP_SWP_A(r, id)                                                                           \
  void REAL(r)(int, int, double *, int, const int *);                                               \
  void WRAP(r)(int M, int N, double *A, int LDA, const int *IPIV)                                   \
  {                                                                                                 \
    TIMED(id, M, N, LDA, 0, M > 0 && N > 0, REAL(r)(M, N, A, LDA, IPIV));                           \
  }

#define WRAP_SWP_AU(r, id)                                                                          \
  void REAL(r)(int, int, double *, int, double *, int, const int *, const int *);                   \
  void WRAP(r)(int M, int N, double *A, int LDA, double *U, int LDU, const int *LA, const int *LAU) \
  {                                                                                                 \
    TIMED(id, M, N, LDA, 0, M > 0 && N > 0, REAL(r)(M, N, A, LDA, U, LDU, LA, LAU));                \
  }

#define WRAP_SWP_02(r, id)                                                                          \
  void REAL(r)(int, int, const double *, int, double *, double *, int, const int *, const int *);   \
  void WRAP(r)(int M, int N, const double *A, int LDA, double *W0, double *W, int LDW, const int *LA, \
               const int *LAU)                                                                      \
  {                                                                                                 \
    TIMED(id, M, N, LDA, 0, M > 0 && N > 0, REAL(r)(M, N, A, LDA, W0, W, LDW, LA, LAU));            \
  }

#define WRAP_SWP_03(r, id)                                                                          \
  void REAL(r)(int, int, double *, int, const double *, const double *, int);                       \
  void WRAP(r)(int M, int N, double *U, int LDU, const double *W0, const double *W, int LDW)        \
  {                                                                                                 \
    TIMED(id, M, N, LDU, 0, M > 0 && N > 0, REAL(r)(M, N, U, LDU, W0, W, LDW));                     \
  }

#define WRAP_SWP_04(r, id)                                                                          \
  void REAL(r)(int, int, int, double *, int, double *, int, const double *, const double *, int,    \
               const int *, const int *);                                                           \
  void WRAP(r)(int M0, int M1, int N, double *U, int LDU, double *A, int LDA, const double *W0,     \
               const double *W, int LDW, const int *LA, const int *LAU)                             \
  {                                                                                                 \
    TIMED(id, M0, M1, N, 0, !((M0 <= 0 && M1 <= 0) || N <= 0),                                      \
          REAL(r)(M0, M1, N, U, LDU, A, LDA, W0, W, LDW, LA, LAU));                                 \
  }

#define WRAP_SWP_06(r, id)                                                                          \
  void REAL(r)(int, int, double *, int, double *, int, const int *);                                \
  void WRAP(r)(int M, int N, double *A, int LDA, double *U, int LDU, const int *LA)                 \
  {                                                                                                 \
    TIMED(id, M, N, LDA, 0, M > 0 && N > 0, REAL(r)(M, N, A, LDA, U, LDU, LA));                     \
  }

/* a shape without its WRAP_ macro above fails to compile here */
#define WRAP_KERNEL(shape, r, id) WRAP_##shape(r, id)
HPLSIM_TRACED_KERNELS(WRAP_KERNEL)

/* ------------------------------------------------------------------------- timed region */

struct HPL_S_grid;
struct HPL_S_palg;
struct HPL_S_pmat;
void __real_HPL_pdgesv(struct HPL_S_grid *, struct HPL_S_palg *, struct HPL_S_pmat *);
void __wrap_HPL_pdgesv(struct HPL_S_grid *grid, struct HPL_S_palg *algo, struct HPL_S_pmat *a)
{
  size_t slot = nrec;
  double t0 = now();
  add(T_PDGESV, 0, 0, 0, 0, t0, t0); /* placeholder, completed below: first row of the run */
  active = 1;
  __real_HPL_pdgesv(grid, algo, a);
  active = 0;
  if (slot < nrec)
    recs[slot].duration = now() - t0;
}

/* ------------------------------------------------------------------------- output */

static int env_rank(void)
{
  const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    if (v && *v)
      return atoi(v);
  }
  return (int)getpid();
}

static int socket_of(int core)
{
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", core);
  FILE *f = fopen(path, "r");
  int s = 0;
  if (f) {
    if (fscanf(f, "%d", &s) != 1)
      s = 0;
    fclose(f);
  }
  return s;
}

__attribute__((destructor)) static void hplsim_trace_dump(void)
{
  const char *dir = getenv("HPLSIM_TRACE_DIR");
  if (!dir || !*dir || nrec == 0)
    return;
  int rank = env_rank();
  char path[4096], host[256] = "";
  snprintf(path, sizeof path, "%s/trace-%d.csv", dir, rank);
  gethostname(host, sizeof host - 1);
  int core = sched_getcpu();
  int cpu = socket_of(core < 0 ? 0 : core);
  FILE *out = fopen(path, "w");
  if (!out) {
    perror(path);
    return;
  }
  fprintf(out, "function,m,n,k,m0,m1,side,duration,start,host,cpu,core,rank,ld\n");
  for (size_t i = 0; i < nrec; i++) {
    const rec_t *r = &recs[i];
    const char *const *slots = r->kernel < K_NKERNELS ? hplsim_kernels[r->kernel].slots : NULL;
    char sizes[96] = "", ld[16] = "";
    size_t used = 0;
    for (size_t c = 0; c < sizeof SIZE_COLUMNS / sizeof *SIZE_COLUMNS; c++) {
      char cell[16] = "";
      for (size_t s = 0; slots && s < NSLOTS; s++)
        if (slots[s] && strcmp(slots[s], SIZE_COLUMNS[c]) == 0)
          snprintf(cell, sizeof cell, "%d", r->x[s]);
      used += snprintf(sizes + used, sizeof sizes - used, c ? ",%s" : "%s", cell);
    }
    for (size_t s = 0; slots && s < NSLOTS; s++)
      if (slots[s] && strcmp(slots[s], "ld") == 0 && r->x[s] > 0)
        snprintf(ld, sizeof ld, "%d", r->x[s]);
    const char *name = r->kernel < K_NKERNELS ? hplsim_kernels[r->kernel].name : "HPL_pdgesv";
    fprintf(out, "%s,%s,%s,%.9e,%.9f,%s,%d,%d,%d,%s\n", name, sizes,
            r->side ? (r->side == 'L' ? "L" : "R") : "", r->duration, r->start, host, cpu, core, rank, ld);
  }
  if (dropped)
    fprintf(stderr, "hplsim trace: rank %d kept %zu calls, dropped %zu (HPLSIM_TRACE_MAX)\n", rank, nrec,
            dropped);
  fclose(out);
}
