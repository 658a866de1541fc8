/* hplsim-calib-blas: time single-threaded OpenBLAS dgemm/dtrsm calls, one per input row.
 *
 *   hplsim-calib-blas [options] EXPERIMENT.csv > results.csv
 *
 * EXPERIMENT.csv has a header naming its columns among function,m,n,k,side,lda,ldb,ldc,
 * repetition (function defaults to dgemm; empty leading dimensions mean the minimum).
 * Output: one CSV row per call, columns of hplsim's archive (docs/formats/archive.md).
 *
 * Each call reads its operands at a fresh random offset inside buffers larger than the
 * last-level cache, so a small call does not find the previous call's data in cache (HPL
 * never multiplies the same block twice in a row). The buffers are filled once, before
 * anything is timed, in the requested mode, because the data's bits change the power
 * drawn, hence the frequency, hence dgemm's speed.
 *
 *   hplsim-calib-blas --spin --core C
 *
 * keeps core C busy without floating point until SIGTERM, as an MPI rank does while it
 * polls for a message: what the cores not measured do during `--others spin`, since a
 * core's dgemm may run faster when its socket's other cores draw less power. */
#include "calib_common.h"
/* The kernels' names and which of them this benchmark measures: the table of kernels
 * (hplsim.hpl.kernels), as the emulation's runtime knows them. */
#include "kernels.h" /* csrc/kernel-models/, on the include path */

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sys/prctl.h>
#include <cblas.h>

/* Declared here rather than taken from OpenBLAS's cblas.h: Debian may point cblas.h at
 * another implementation's header through alternatives. */
extern void openblas_set_num_threads(int);
extern char *openblas_get_config(void);
extern char *openblas_get_corename(void);

enum { INIT_CONSTANT, INIT_SEQUENTIAL, INIT_RANDOM, INIT_MASKED };
static const char *INIT_NAMES[] = {"constant", "sequential", "random", "masked", NULL};

typedef struct {
  enum hplsim_kernel kernel;  /* K_DGEMM or K_DTRSM */
  long long m, n, k, lda, ldb, ldc;
  char side;  /* 'L' / 'R' for dtrsm, 0 for dgemm */
  long long rep;
} row_t;

static volatile sig_atomic_t stop_signal = 0;
static void on_signal(int sig) { stop_signal = sig; }

/* SIGINT and SIGTERM end the current loop (measurement or spin) instead of the process. */
static void stop_on_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static void die(int code, const char *fmt, const char *a, long long b) {
  fprintf(stderr, "hplsim-calib-blas: ");
  fprintf(stderr, fmt, a, b);
  fputc('\n', stderr);
  exit(code);
}

static void usage(void) {
  fputs("usage: hplsim-calib-blas [--init constant|sequential|random|masked] [--mask-bits K]\n"
        "         [--constant V] [--seed S] [--rank R] [--core C] [--pad-bytes B]\n"
        "         [--warmup-seconds S] [--warmup-passes P] [--no-header] EXPERIMENT.csv\n"
        "       hplsim-calib-blas --spin --core C   (poll until SIGTERM, no floating point)\n"
        "       hplsim-calib-blas --dump FILE --dump-count N [--init ...]   (test: write A,B,C)\n"
        "       hplsim-calib-blas --version\n", stderr);
}

/* ---------------------------------------------------------------- input */

/* The kernel a row's function names, or -1 if this benchmark does not measure it. */
static int calibrated_kernel(const char *name) {
  for (int k = 0; k < K_NKERNELS; k++)
    if (hplsim_kernels[k].calibrated && strcmp(hplsim_kernels[k].name, name) == 0) return k;
  return -1;
}

static row_t *read_rows(const char *path, size_t *count) {
  FILE *f = fopen(path, "r");
  if (!f) die(2, "cannot read experiment file %s: %lld", path, (long long)errno);
  char *line = NULL;
  size_t cap = 0;
  char *fields[32];
  int col[9];  /* function,m,n,k,side,lda,ldb,ldc,repetition -> field index */
  const char *names[9] = {"function", "m", "n", "k", "side", "lda", "ldb", "ldc", "repetition"};
  for (int i = 0; i < 9; i++) col[i] = -1;
  if (getline(&line, &cap, f) < 0) die(2, "%s: empty experiment file%lld", path, 0);
  int nf = calib_split(line, fields, 32);
  for (int j = 0; j < nf; j++)
    for (int i = 0; i < 9; i++)
      if (strcmp(fields[j], names[i]) == 0) col[i] = j;
  if (col[1] < 0 || col[2] < 0) die(2, "%s: header needs columns m and n%lld", path, 0);

  size_t n = 0, alloc = 1024;
  row_t *rows = malloc(alloc * sizeof *rows);
  long long lineno = 1;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    if (line[strspn(line, " \t\r\n")] == '\0') continue;
    nf = calib_split(line, fields, 32);
    const char *v[9];
    for (int i = 0; i < 9; i++) v[i] = (col[i] >= 0 && col[i] < nf) ? fields[col[i]] : "";
    row_t r = {0};
    int kernel = *v[0] ? calibrated_kernel(v[0]) : K_DGEMM;
    if (kernel < 0) die(2, "unknown function %s on line %lld (dgemm or dtrsm)", v[0], lineno);
    r.kernel = (enum hplsim_kernel)kernel;
    r.m = calib_parse_int(v[1]);
    r.n = calib_parse_int(v[2]);
    r.k = calib_parse_int(v[3]);
    r.lda = calib_parse_int(v[5]);
    r.ldb = calib_parse_int(v[6]);
    r.ldc = calib_parse_int(v[7]);
    r.rep = calib_parse_int(v[8]);
    if (r.rep < 0) r.rep = 0;
    if (r.m < 1 || r.n < 1) die(2, "%sline %lld: m and n must be integers >= 1", "", lineno);
    if (r.kernel == K_DTRSM) {
      if (strcmp(v[4], "L") == 0 || strcmp(v[4], "l") == 0) r.side = 'L';
      else if (strcmp(v[4], "R") == 0 || strcmp(v[4], "r") == 0) r.side = 'R';
      else die(2, "%sline %lld: dtrsm needs side L or R", "", lineno);
      long long order = r.side == 'L' ? r.m : r.n;
      if (r.lda <= 0) r.lda = order;
      if (r.ldb <= 0) r.ldb = r.m;
      if (r.lda < order || r.ldb < r.m) die(2, "%sline %lld: leading dimension below the minimum", "", lineno);
      r.k = -1;
      r.ldc = -1;
    } else {
      if (r.k < 1) die(2, "%sline %lld: dgemm needs k >= 1", "", lineno);
      if (r.lda <= 0) r.lda = r.m;
      if (r.ldb <= 0) r.ldb = r.k;
      if (r.ldc <= 0) r.ldc = r.m;
      if (r.lda < r.m || r.ldb < r.k || r.ldc < r.m)
        die(2, "%sline %lld: leading dimension below the minimum", "", lineno);
    }
    if (r.lda > 2147483647LL || r.ldb > 2147483647LL || r.ldc > 2147483647LL || r.k > 2147483647LL)
      die(2, "%sline %lld: size does not fit a BLAS int", "", lineno);
    if (n == alloc) rows = realloc(rows, (alloc *= 2) * sizeof *rows);
    rows[n++] = r;
  }
  free(line);
  fclose(f);
  if (n == 0) die(2, "%s: no rows in experiment file%lld", path, 0);
  *count = n;
  return rows;
}

/* Elements each operand needs at offset 0 (column-major: ld × columns). */
static void needs(const row_t *r, size_t *a, size_t *b, size_t *c) {
  if (r->kernel == K_DTRSM) {
    long long order = r->side == 'L' ? r->m : r->n;
    *a = (size_t)(r->lda * (order - 1) + order);
    *b = (size_t)(r->ldb * (r->n - 1) + r->m);
    *c = 0;
  } else {
    *a = (size_t)(r->lda * (r->k - 1) + r->m);
    *b = (size_t)(r->ldb * (r->n - 1) + r->k);
    *c = (size_t)(r->ldc * (r->n - 1) + r->m);
  }
}

/* ---------------------------------------------------------------- data */

static double *alloc_buffer(size_t n) {
  void *p = NULL;
  if (n == 0) n = 8;
  if (posix_memalign(&p, 64, n * sizeof(double)) != 0)
    die(3, "cannot allocate %s%lld bytes", "", (long long)(n * sizeof(double)));
  return p;
}

/* random: sign and all 52 mantissa bits random, exponent fixed (values in ±[1, 2)), so
 * every bit that can toggle does; masked: the same with the low `bits` mantissa bits 0. */
static void fill(double *x, size_t n, int mode, double constant, int bits, calib_rng *rng,
                 size_t first_index) {
  const uint64_t one = 0x3FF0000000000000ULL;
  const uint64_t mantissa = 0x000FFFFFFFFFFFFFULL;
  const uint64_t keep = bits >= 52 ? 0 : (mantissa & ~((1ULL << bits) - 1));
  for (size_t i = 0; i < n; i++) {
    switch (mode) {
      case INIT_CONSTANT: x[i] = constant; break;
      case INIT_SEQUENTIAL: x[i] = (double)(first_index + i); break;
      default: {
        uint64_t r = calib_rng_next(rng);
        uint64_t u = (r & 0x8000000000000000ULL) | one | (r & (mode == INIT_MASKED ? keep : mantissa));
        memcpy(&x[i], &u, sizeof u);
      }
    }
  }
}

/* The triangular factor of dtrsm: a power-of-two scale (mantissas untouched) so that a
 * unit triangular matrix of order <= 2^e stays well conditioned and repeated in-place
 * solves neither overflow nor underflow into slow denormals. */
static void scale_for_trsm(double *x, size_t n, long long max_order) {
  int e = 2;  /* 2^-2 below 1/order: measured drift ~0.5 % per solve of the same data */
  while ((1LL << (e - 2)) < max_order && e < 62) e++;
  double s = ldexp(1.0, -e);
  for (size_t i = 0; i < n; i++) x[i] *= s;
}

/* Values that make floating-point units slow (subnormals: microcode assists) or that
 * say the data drifted away from what was asked (inf, NaN). Checked once, untimed. */
static size_t count_abnormal(const double *x, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    int c = fpclassify(x[i]);
    bad += (c == FP_SUBNORMAL || c == FP_INFINITE || c == FP_NAN);
  }
  return bad;
}

/* ---------------------------------------------------------------- calls */

typedef struct {
  double *A, *B, *C;
  size_t pad;  /* elements of slack in each buffer for random offsets */
  calib_rng off;
} buffers_t;

static size_t offset(buffers_t *bf) {
  /* multiples of 8 doubles: 64-byte aligned like HPL's ALIGN 8, only the location varies */
  return (size_t)(calib_rng_next(&bf->off) % (bf->pad / 8 + 1)) * 8;
}

static void call(buffers_t *bf, const row_t *r) {
  double *A = bf->A + offset(bf), *B = bf->B + offset(bf), *C = bf->C + offset(bf);
  if (r->kernel == K_DTRSM) {
    cblas_dtrsm(CblasColMajor, r->side == 'L' ? CblasLeft : CblasRight,
                r->side == 'L' ? CblasLower : CblasUpper, CblasNoTrans, CblasUnit,
                (int)r->m, (int)r->n, 1.0, A, (int)r->lda, B, (int)r->ldb);
  } else {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)r->m, (int)r->n, (int)r->k,
                -1.0, A, (int)r->lda, B, (int)r->ldb, 1.0, C, (int)r->ldc);
  }
}

static void print_row(const row_t *r, double start, double duration, const char *host, int core,
                      int rank) {
  char k[24] = "", ldc[24] = "", side[2] = {r->side, 0};
  if (r->kernel != K_DTRSM) {
    snprintf(k, sizeof k, "%lld", r->k);
    snprintf(ldc, sizeof ldc, "%lld", r->ldc);
  }
  printf("%s,%lld,%lld,%s,%s,%lld,%lld,%s,%.9f,%.9e,%s,%d,%d,%d,%lld\n",
         hplsim_kernels[r->kernel].name, r->m, r->n, k, side, r->lda, r->ldb, ldc, start, duration,
         host, calib_package_of(core), core, rank, r->rep);
}

/* ---------------------------------------------------------------- spin */

/* A waiting MPI rank's load: a loop that reads a flag in memory and counts, with no
 * floating point and no pause instruction (PSM2 and Open MPI poll their queues that way).
 * It ends when its parent does (PR_SET_PDEATHSIG), so a killed runner leaves no spinner. */
static int spin(int core) {
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) die(2, "cannot follow the parent's end%s%lld", "", errno);
  if (getppid() == 1) return 0; /* the parent ended before the line above */
  char host[256];
  calib_hostname(host, sizeof host);
  fprintf(stderr, "hplsim-calib-blas: spinning on %s core %d\n", host, sched_getcpu());
  double t0 = calib_now();
  unsigned long long polls = 0;
  while (!stop_signal) polls++;
  fprintf(stderr, "hplsim-calib-blas: spin core %d: %llu polls in %.3f s\n", core, polls, calib_now() - t0);
  return 0;
}

int main(int argc, char **argv) {
  int init = INIT_RANDOM, bits = 0, rank = -1, core = -1, header = 1, passes = 0, spinning = 0;
  double constant = 1.0, warmup = 0.0;
  unsigned long long seed = 0, pad_bytes = 64ULL << 20;
  long long dump_count = 0;
  const char *dump = NULL;
  static struct option opts[] = {
      {"init", required_argument, 0, 'i'},           {"mask-bits", required_argument, 0, 'b'},
      {"constant", required_argument, 0, 'c'},       {"seed", required_argument, 0, 's'},
      {"rank", required_argument, 0, 'r'},           {"core", required_argument, 0, 'C'},
      {"pad-bytes", required_argument, 0, 'p'},      {"warmup-seconds", required_argument, 0, 'w'},
      {"warmup-passes", required_argument, 0, 'P'},  {"no-header", no_argument, 0, 'H'},
      {"dump", required_argument, 0, 'd'},           {"dump-count", required_argument, 0, 'n'},
      {"version", no_argument, 0, 'V'},              {"help", no_argument, 0, 'h'},
      {"spin", no_argument, 0, 'S'},
      {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
      case 'i':
        init = -1;
        for (int j = 0; INIT_NAMES[j]; j++)
          if (strcmp(optarg, INIT_NAMES[j]) == 0) init = j;
        if (init < 0) die(2, "unknown --init %s%lld", optarg, 0);
        break;
      case 'b': bits = atoi(optarg); break;
      case 'c': constant = strtod(optarg, NULL); break;
      case 's': seed = strtoull(optarg, NULL, 10); break;
      case 'r': rank = atoi(optarg); break;
      case 'C': core = atoi(optarg); break;
      case 'p': pad_bytes = strtoull(optarg, NULL, 10); break;
      case 'w': warmup = strtod(optarg, NULL); break;
      case 'P': passes = atoi(optarg); break;
      case 'H': header = 0; break;
      case 'S': spinning = 1; break;
      case 'd': dump = optarg; break;
      case 'n': dump_count = atoll(optarg); break;
      case 'V':
        printf("%s (core: %s)\n", openblas_get_config(), openblas_get_corename());
        return 0;
      case 'h': usage(); return 0;
      default: usage(); return 2;
    }
  }
  if (bits < 0 || bits > 52) die(2, "--mask-bits must be in 0..52, got %s%lld", "", bits);
  if (rank < 0) rank = calib_env_rank();
  /* One process per core, like HPL's ranks: OpenBLAS threads would fight over the cores. */
  openblas_set_num_threads(1);
  if (core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) die(2, "cannot pin to core %s%lld", "", core);
  }
  if (spinning) {
    if (core < 0) die(2, "--spin needs --core%s%lld", "", 0);
    stop_on_signals();
    return spin(core);
  }
  calib_rng data;
  calib_rng_seed(&data, seed, (uint64_t)rank, 1);

  if (dump) {
    if (dump_count <= 0) die(2, "--dump needs --dump-count >= 1%s%lld", "", 0);
    FILE *f = fopen(dump, "wb");
    if (!f) die(2, "cannot write %s%lld", dump, 0);
    double *x = alloc_buffer((size_t)dump_count);
    for (int m = 0; m < 3; m++) { /* A, B, C in the order the real run fills them */
      fill(x, (size_t)dump_count, init, constant, bits, &data, 0);
      fwrite(x, sizeof(double), (size_t)dump_count, f);
    }
    fclose(f);
    return 0;
  }
  if (optind != argc - 1) { usage(); return 2; }

  size_t nrows;
  row_t *rows = read_rows(argv[optind], &nrows);
  size_t na = 0, nb = 0, nc = 0;
  long long max_order = 1;
  int any_trsm = 0;
  for (size_t i = 0; i < nrows; i++) {
    size_t a, b, c;
    needs(&rows[i], &a, &b, &c);
    if (a > na) na = a;
    if (b > nb) nb = b;
    if (c > nc) nc = c;
    if (rows[i].kernel == K_DTRSM) {
      any_trsm = 1;
      long long order = rows[i].side == 'L' ? rows[i].m : rows[i].n;
      if (order > max_order) max_order = order;
    }
  }
  buffers_t bf;
  bf.pad = (size_t)(pad_bytes / sizeof(double));
  if (bf.pad < (1u << 18)) bf.pad = 1u << 18;  /* room for the 512^2 warm-up operands */
  calib_rng_seed(&bf.off, seed, (uint64_t)rank, 2);
  bf.A = alloc_buffer(na + bf.pad);
  bf.B = alloc_buffer(nb + bf.pad);
  bf.C = alloc_buffer(nc + bf.pad);
  fill(bf.A, na + bf.pad, init, constant, bits, &data, 0);
  fill(bf.B, nb + bf.pad, init, constant, bits, &data, 0);
  fill(bf.C, nc + bf.pad, init, constant, bits, &data, 0);
  if (any_trsm) scale_for_trsm(bf.A, na + bf.pad, max_order);

  stop_on_signals();

  char host[256];
  calib_hostname(host, sizeof host);
  fprintf(stderr, "hplsim-calib-blas: rank %d on %s core %d: %zu rows, %.1f MiB of operands\n", rank,
          host, sched_getcpu(), nrows, (double)(na + nb + nc + 3 * bf.pad) * 8 / 1048576.0);

  /* Warm-up: bring the core to its steady frequency before the first timed call. */
  double w0 = calib_now();
  if (warmup > 0) {
    row_t w = {.kernel = K_DGEMM, .m = 512, .n = 512, .k = 512, .lda = 512, .ldb = 512, .ldc = 512};
    double until = calib_now() + warmup;
    size_t saved = bf.pad;
    bf.pad = 0;
    while (calib_now() < until && !stop_signal) call(&bf, &w);
    bf.pad = saved;
  }
  for (int p = 0; p < passes && !stop_signal; p++)
    for (size_t i = 0; i < nrows && !stop_signal; i++) call(&bf, &rows[i]);
  double m0 = calib_now();
  /* phases on stderr, in CLOCK_MONOTONIC seconds: the runner puts them in the metadata */
  fprintf(stderr, "hplsim-calib-blas: phase warmup %.9f %.9f\n", w0, m0);

  /* Results go out in chunks, flushed at most every 0.2 s, so the runner can follow
   * progress while writes stay rare and outside the timed region. */
  static char outbuf[1 << 16];
  setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
  if (header) puts("function,m,n,k,side,lda,ldb,ldc,start,duration,host,cpu,core,rank,repetition");
  double last_flush = calib_now();
  for (size_t i = 0; i < nrows && !stop_signal; i++) {
    double t0 = calib_now();
    call(&bf, &rows[i]);
    double t1 = calib_now();
    print_row(&rows[i], t0, t1 - t0, host, sched_getcpu(), rank);
    if (t1 - last_flush > 0.2) {
      fflush(stdout);
      last_flush = calib_now();
    }
  }
  fflush(stdout);
  size_t bad = count_abnormal(bf.B, nb + bf.pad) + count_abnormal(bf.C, nc + bf.pad);
  if (bad)
    fprintf(stderr, "hplsim-calib-blas: warning: rank %d: %zu operand values became subnormal, inf or NaN "
            "(their speed is data-dependent)\n", rank, bad);
  fprintf(stderr, "hplsim-calib-blas: phase measure %.9f %.9f\n", m0, calib_now());
  if (stop_signal) {
    fprintf(stderr, "hplsim-calib-blas: rank %d stopped by signal %d\n", rank, (int)stop_signal);
    return 128 + stop_signal;
  }
  return 0;
}
