/* Traces of a simulated run (hplsim predict --trace): per rank, the intervals of every
 * modelled kernel and every MPI call of HPL, tagged with HPL's phase and panel number.
 *
 * Nothing in HPL's sources changes for this. The build links the emulated HPL with
 * `-Wl,--wrap=SYMBOL` for every `__wrap_SYMBOL` defined below (hplsim/hpl/build.py reads
 * them from this file): HPL's calls to MPI_Send, HPL_pdfact, ... land here, and
 * `__real_SYMBOL` is the original. Every wrapper starts with one test of hplsim_trace_on
 * (set in MPI_Init from HPLSIM_TRACE_DIR), so an untraced run pays one branch per call.
 *
 * Clocks. Kernels do not advance the simulated clock when called: runtime.c accumulates
 * them and injects the sum at the rank's next MPI call (hplsim_flush). A kernel record
 * therefore first holds its offset from the last injection and gets its absolute times
 * when the sum is injected (trace_flush, called by hplsim_flush just before the
 * injection): the kernels then occupy [clock, clock + pending] back to back, exactly as
 * the simulation charges them. MPI records take the clock around the real call; HPL's
 * MPI macros (hpl_pmisc.h) flush before every call, so the two never overlap.
 *
 * Records go to a per-rank buffer and, in blocks, to DIR/rank-NNNNNN.bin (appended, so
 * memory stays bounded at any rank count); the Python side (hplsim/emulate/trace.py)
 * turns the files into one Parquet table. The record layout is `hplsim_trace_record`
 * (docs/formats/trace.md describes the raw files too).
 */
#include <mpi.h>
#include <simgrid/engine.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "exchange.h"
#include "fatal.h"
#include "hpl.h"
#include "kernels.h"
#include "model.h"
#include "probe.h"
#include "runtime.h"

/* Set in MPI_Init when the run records a trace; the runtime then calls the two hooks below. */
static int hplsim_trace_on;

/* One record: 40 bytes, native (little-endian) byte order. */
typedef struct {
  double t0, t1;   /* simulated seconds */
  int64_t c;       /* MPI: bytes (-1: none); kernel: third size */
  int32_t a;       /* MPI: peer's world rank (-1: none); kernel: first size */
  int32_t b;       /* MPI: tag; kernel: second size */
  int32_t panel;   /* HPL's panel number (column / NB); -1 outside any panel */
  uint16_t code;   /* kernel (enum hplsim_kernel) or MPI call (enum below) */
  uint8_t kind;    /* enum below */
  uint8_t phase;   /* enum below */
} hplsim_trace_record;

_Static_assert(sizeof(hplsim_trace_record) == 40, "the trace format says 40-byte records");

enum { KIND_KERNEL = 0, KIND_MPI = 1, KIND_REGION = 2 };
enum { PH_NONE = 0, PH_FACT, PH_BCAST, PH_SWAP, PH_UPDATE, PH_TRSV };
/* MPI calls. WAIT_* complete the request of an IRECV / ISSEND (same peer, tag, bytes). */
enum {
  C_SEND = 0, C_SSEND, C_ISSEND, C_RECV, C_IRECV, C_WAIT_RECV, C_WAIT_SEND, C_IPROBE_MISS,
  C_IPROBE_HIT, C_WTIME, C_EXCHANGE
};

#define BLOCK 1024 /* records written at a time (40 kB per rank: 40 MB at 1,024 ranks) */

/* Final records, written to the file in blocks; kernel records waiting for their
 * injection (times relative to it). Kept apart: under HPLSIM_IPROBE_REPORTS=progressed a
 * probe runs (and is recorded) before the compute pending ahead of it is injected. */
static hplsim_trace_record *buf, *pend;
static size_t nbuf, capacity, npend, pend_capacity;
static double since_flush;   /* modelled seconds accumulated since the last injection */
static int max_panel = -1;   /* record only panels < max_panel (-1: all) */
static char path[4096];

/* The innermost HPL phase the rank is in (phases nest: a look-ahead broadcast runs inside
 * an update, a swap inside an update). */
#define MAX_DEPTH 8
static struct {
  uint8_t phase;
  int32_t panel;
} stack[MAX_DEPTH];
static int depth;

static int recording(void)
{
  int panel = depth ? stack[depth - 1].panel : -1;
  return max_panel < 0 || (panel >= 0 && panel < max_panel);
}

static hplsim_trace_record *grow(hplsim_trace_record **array, size_t *n, size_t *cap)
{
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : BLOCK;
    *array = realloc(*array, *cap * sizeof **array);
    if (!*array)
      hplsim_fatal("trace: out of memory");
  }
  hplsim_trace_record *r = &(*array)[(*n)++];
  r->phase = depth ? stack[depth - 1].phase : PH_NONE;
  r->panel = depth ? stack[depth - 1].panel : -1;
  return r;
}

static void write_out(void)
{
  if (nbuf == 0)
    return;
  FILE *f = fopen(path, "ab");
  if (!f || fwrite(buf, sizeof *buf, nbuf, f) != nbuf || fclose(f) != 0)
    hplsim_fatal("trace: cannot write %s", path);
  nbuf = 0;
}

/* A final record (its times are absolute). */
static hplsim_trace_record *append(void)
{
  if (nbuf >= BLOCK)
    write_out();
  return grow(&buf, &nbuf, &capacity);
}

static void trace_kernel(enum hplsim_kernel kernel, double seconds, double x0, double x1, double x2)
{
  if (recording()) {
    hplsim_trace_record *r = grow(&pend, &npend, &pend_capacity);
    r->t0 = since_flush;
    r->t1 = since_flush + seconds;
    r->kind = KIND_KERNEL;
    r->code = (uint16_t)kernel;
    r->a = (int32_t)x0;
    r->b = (int32_t)x1;
    r->c = (int64_t)x2;
  }
  since_flush += seconds;
}

static void trace_flush(void)
{
  double clock = simgrid_get_clock();
  for (size_t i = 0; i < npend; i++) {
    hplsim_trace_record *r = append();
    *r = pend[i];
    r->t0 += clock;
    r->t1 += clock;
  }
  npend = 0;
  since_flush = 0.0;
}

/* ---------------------------------------------------------------- MPI calls */

/* Peers are ranks of HPL's row, column or world communicators: the trace gives world
 * ranks (hplsim_world_rank, comms.c). */

static int64_t bytes_of(int count, MPI_Datatype type)
{
  static MPI_Datatype last_type = MPI_DATATYPE_NULL;
  static int last_size;
  if (type != last_type) {
    MPI_Type_size(type, &last_size);
    last_type = type;
  }
  return (int64_t)count * last_size;
}

static void mpi_record(int code, double t0, int peer, int tag, int64_t bytes)
{
  hplsim_trace_record *r = append();
  r->t0 = t0;
  r->t1 = simgrid_get_clock();
  r->kind = KIND_MPI;
  r->code = (uint16_t)code;
  r->a = peer;
  r->b = tag;
  r->c = bytes;
}

/* A modelled pivot exchange (exchange.c): from the rank's entry to the end of its sleep,
 * with the bytes the messages it stood for would have carried. */
static void trace_exchange(double t0, int64_t bytes)
{
  if (recording())
    mpi_record(C_EXCHANGE, t0, -1, -1, bytes);
}

/* One of HPL's probes (probe.c), from the start of its charge: SimGrid's look or the
 * message counts' answer, whichever the runtime used. */
static void trace_probe(double t0, int peer, int tag, int found)
{
  if (recording())
    mpi_record(found ? C_IPROBE_HIT : C_IPROBE_MISS, t0, peer, tag, -1);
}

/* Non-blocking calls whose MPI_Wait is still to come: the wait completes them. */
#define MAX_REQUESTS 16
static struct {
  MPI_Request req;
  int code, peer, tag;
  int64_t bytes;
} requests[MAX_REQUESTS];
static int nrequests;

static void remember(MPI_Request req, int code, int peer, int tag, int64_t bytes)
{
  if (nrequests == MAX_REQUESTS) /* never with HPL (one request at a time); forget the oldest */
    memmove(requests, requests + 1, --nrequests * sizeof requests[0]);
  requests[nrequests].req = req;
  requests[nrequests].code = code;
  requests[nrequests].peer = peer;
  requests[nrequests].tag = tag;
  requests[nrequests].bytes = bytes;
  nrequests++;
}

int __real_MPI_Send(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int __wrap_MPI_Send(const void *buf_, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  if (!hplsim_trace_on || !recording())
    return __real_MPI_Send(buf_, count, type, dest, tag, comm);
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Send(buf_, count, type, dest, tag, comm);
  mpi_record(C_SEND, t0, hplsim_world_rank(comm, dest), tag, bytes_of(count, type));
  return err;
}

int __real_MPI_Ssend(const void *, int, MPI_Datatype, int, int, MPI_Comm);
int __wrap_MPI_Ssend(const void *buf_, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  if (!hplsim_trace_on || !recording())
    return __real_MPI_Ssend(buf_, count, type, dest, tag, comm);
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Ssend(buf_, count, type, dest, tag, comm);
  mpi_record(C_SSEND, t0, hplsim_world_rank(comm, dest), tag, bytes_of(count, type));
  return err;
}

int __real_MPI_Issend(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int __wrap_MPI_Issend(const void *buf_, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                      MPI_Request *req)
{
  if (!hplsim_trace_on || !recording())
    return __real_MPI_Issend(buf_, count, type, dest, tag, comm, req);
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Issend(buf_, count, type, dest, tag, comm, req);
  int peer = hplsim_world_rank(comm, dest);
  int64_t bytes = bytes_of(count, type);
  mpi_record(C_ISSEND, t0, peer, tag, bytes);
  remember(*req, C_WAIT_SEND, peer, tag, bytes);
  return err;
}

int __real_MPI_Recv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);
int __wrap_MPI_Recv(void *buf_, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                    MPI_Status *status)
{
  if (!hplsim_trace_on || !recording())
    return __real_MPI_Recv(buf_, count, type, source, tag, comm, status);
  MPI_Status own;
  MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Recv(buf_, count, type, source, tag, comm, st);
  int got = count;
  MPI_Get_count(st, type, &got);
  mpi_record(C_RECV, t0, hplsim_world_rank(comm, st->MPI_SOURCE), st->MPI_TAG, bytes_of(got, type));
  return err;
}

int __real_MPI_Irecv(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
int __wrap_MPI_Irecv(void *buf_, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                     MPI_Request *req)
{
  if (!hplsim_trace_on || !recording())
    return __real_MPI_Irecv(buf_, count, type, source, tag, comm, req);
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Irecv(buf_, count, type, source, tag, comm, req);
  int peer = hplsim_world_rank(comm, source);
  int64_t bytes = bytes_of(count, type);
  mpi_record(C_IRECV, t0, peer, tag, bytes);
  remember(*req, C_WAIT_RECV, peer, tag, bytes);
  return err;
}

int __real_MPI_Wait(MPI_Request *, MPI_Status *);
int __wrap_MPI_Wait(MPI_Request *req, MPI_Status *status)
{
  if (!hplsim_trace_on)
    return __real_MPI_Wait(req, status);
  MPI_Request handle = *req;
  int i = nrequests - 1;
  while (i >= 0 && requests[i].req != handle)
    i--;
  double t0 = simgrid_get_clock();
  int err = __real_MPI_Wait(req, status);
  if (i >= 0) { /* a request posted while recording */
    mpi_record(requests[i].code, t0, requests[i].peer, requests[i].tag, requests[i].bytes);
    memmove(requests + i, requests + i + 1, (size_t)(--nrequests - i) * sizeof requests[0]);
  }
  return err;
}

/* ---------------------------------------------------------------- HPL's phases */

static void enter(int phase, const HPL_T_panel *panel)
{
  if (depth == MAX_DEPTH)
    hplsim_fatal("trace: HPL phases nested deeper than %d", MAX_DEPTH);
  stack[depth].phase = (uint8_t)phase;
  stack[depth].panel = panel ? panel->ja / panel->nb : -1;
  depth++;
}

static void leave(void) { depth--; }

#define WRAP_PANEL(ret, name, phase, params, args, panel) \
  ret __real_##name params;                               \
  ret __wrap_##name params                                \
  {                                                       \
    if (!hplsim_trace_on)                                 \
      return __real_##name args;                          \
    enter(phase, panel);                                  \
    ret r = __real_##name args;                           \
    leave();                                              \
    return r;                                             \
  }
#define WRAP_PANEL_VOID(name, phase, params, args, panel) \
  void __real_##name params;                              \
  void __wrap_##name params                               \
  {                                                       \
    if (!hplsim_trace_on) {                               \
      __real_##name args;                                 \
      return;                                             \
    }                                                     \
    enter(phase, panel);                                  \
    __real_##name args;                                   \
    leave();                                              \
  }

#define UPD_PARAMS (HPL_T_panel * PBCST, int *IFLAG, HPL_T_panel *PANEL, const int NN)
#define UPD_ARGS (PBCST, IFLAG, PANEL, NN)
WRAP_PANEL_VOID(HPL_pdfact, PH_FACT, (HPL_T_panel * PANEL), (PANEL), PANEL)
WRAP_PANEL(int, HPL_binit, PH_BCAST, (HPL_T_panel * PANEL), (PANEL), PANEL)
WRAP_PANEL(int, HPL_bcast, PH_BCAST, (HPL_T_panel * PANEL, int *IFLAG), (PANEL, IFLAG), PANEL)
WRAP_PANEL(int, HPL_bwait, PH_BCAST, (HPL_T_panel * PANEL), (PANEL), PANEL)
WRAP_PANEL_VOID(HPL_pdupdateNN, PH_UPDATE, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdupdateNT, PH_UPDATE, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdupdateTN, PH_UPDATE, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdupdateTT, PH_UPDATE, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdlaswp00N, PH_SWAP, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdlaswp00T, PH_SWAP, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdlaswp01N, PH_SWAP, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdlaswp01T, PH_SWAP, UPD_PARAMS, UPD_ARGS, PANEL)
WRAP_PANEL_VOID(HPL_pdtrsv, PH_TRSV, (HPL_T_grid * GRID, HPL_T_pmat *A), (GRID, A), NULL)

/* HPL's timed region, exactly as HPL_pdtest measures it: from the MPI_Wtime value read
 * right before HPL_pdgesv to the one read right after (SMPI may charge each MPI_Wtime,
 * smpi/wtime: the second call's cost is in HPL's time). Always recorded: it carries the
 * rank's HPL time. */
static double last_wtime = -1.0;
static int awaiting_end;
static double region_start;

static void region_record(double end)
{
  hplsim_trace_record *r = append();
  r->t0 = region_start;
  r->t1 = end;
  r->kind = KIND_REGION;
  r->code = 0;
  r->a = r->b = -1;
  r->c = -1;
  awaiting_end = 0;
}

void __real_HPL_pdgesv(HPL_T_grid *, HPL_T_palg *, HPL_T_pmat *);
void __wrap_HPL_pdgesv(HPL_T_grid *GRID, HPL_T_palg *ALGO, HPL_T_pmat *A)
{
  if (!hplsim_trace_on) {
    __real_HPL_pdgesv(GRID, ALGO, A);
    return;
  }
  hplsim_flush();
  region_start = last_wtime >= 0.0 ? last_wtime : simgrid_get_clock();
  __real_HPL_pdgesv(GRID, ALGO, A);
  hplsim_flush();
  awaiting_end = 1;
}

double __real_MPI_Wtime(void);
double __wrap_MPI_Wtime(void)
{
  if (!hplsim_trace_on)
    return __real_MPI_Wtime();
  double t0 = simgrid_get_clock();
  double now = __real_MPI_Wtime();
  last_wtime = now;
  int ending = awaiting_end;
  if (ending)
    region_record(now);
  if (ending || recording())
    mpi_record(C_WTIME, t0, -1, -1, -1);
  return now;
}

/* ---------------------------------------------------------------- start and end */

/* The names of the codes, so that the reader needs no copy of these enums. */
static void write_codes(const char *dir)
{
  static const char *kinds[] = {"kernel", "mpi", "region"};
  static const char *phases[] = {"none", "fact", "bcast", "swap", "update", "trsv"};
  static const char *calls[] = {"MPI_Send", "MPI_Ssend", "MPI_Issend", "MPI_Recv", "MPI_Irecv",
                                "MPI_Wait(recv)", "MPI_Wait(send)", "MPI_Iprobe(miss)", "MPI_Iprobe(hit)",
                                "MPI_Wtime", "pivot exchange (modelled)"};
  char name[4200];
  snprintf(name, sizeof name, "%s/codes.tsv", dir);
  FILE *f = fopen(name, "w");
  if (!f)
    hplsim_fatal("trace: cannot write %s", name);
  fprintf(f, "table\tcode\tname\n");
  for (int i = 0; i < (int)(sizeof kinds / sizeof *kinds); i++)
    fprintf(f, "kind\t%d\t%s\n", i, kinds[i]);
  for (int i = 0; i < (int)(sizeof phases / sizeof *phases); i++)
    fprintf(f, "phase\t%d\t%s\n", i, phases[i]);
  for (int i = 0; i < (int)(sizeof calls / sizeof *calls); i++)
    fprintf(f, "mpi\t%d\t%s\n", i, calls[i]);
  for (int i = 0; i < K_NKERNELS; i++)
    fprintf(f, "kernel\t%d\t%s\n", i, hplsim_kernel_name((enum hplsim_kernel)i));
  if (fclose(f) != 0)
    hplsim_fatal("trace: cannot write %s", name);
}

int __real_MPI_Init(int *, char ***);
int __wrap_MPI_Init(int *argc, char ***argv)
{
  int err = __real_MPI_Init(argc, argv);
  const char *dir = getenv("HPLSIM_TRACE_DIR");
  if (dir && *dir) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (snprintf(path, sizeof path, "%s/rank-%06d.bin", dir, rank) >= (int)sizeof path)
      hplsim_fatal("trace: directory name too long");
    remove(path);
    if (rank == 0)
      write_codes(dir);
    const char *panels = getenv("HPLSIM_TRACE_PANELS");
    max_panel = panels && *panels ? atoi(panels) : -1;
    hplsim_trace_on = 1;
    hplsim_on_kernel = trace_kernel;
    hplsim_on_flush = trace_flush;
    hplsim_on_exchange = trace_exchange;
    hplsim_on_probe = trace_probe;
  }
  return err;
}

int __real_MPI_Finalize(void);
int __wrap_MPI_Finalize(void)
{
  if (hplsim_trace_on) {
    hplsim_flush();
    if (awaiting_end)
      region_record(simgrid_get_clock());
    write_out();
    free(buf);
    free(pend);
    buf = pend = NULL;
    hplsim_trace_on = 0;
    hplsim_on_kernel = NULL;
    hplsim_on_flush = NULL;
    hplsim_on_exchange = NULL;
    hplsim_on_probe = NULL;
  }
  return __real_MPI_Finalize();
}
