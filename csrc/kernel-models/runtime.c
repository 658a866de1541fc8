/* Per-rank set-up and the injection of modelled durations into the simulation. */
#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/host.h>
#include <smpi/smpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "fatal.h"
#include "model.h"
#include "netlaws.h"
#include "progress.h"
#include "rng.h"
#include "runtime.h"

static hplsim_rng noise_rng; /* kernel durations */
static hplsim_rng pivot_rng; /* idamax's pivot choices: independent of the noise on/off */
static double kernel_seconds[K_NKERNELS];
/* Modelled time not yet injected: consecutive kernel calls are injected as one execution
 * when the rank next calls MPI (every MPI call of HPL goes through hplsim_flush, see the
 * patch to hpl_pmisc.h). Nobody can observe a rank between two MPI calls, so the
 * simulated times are the same, with far fewer simulation events. */
static double pending;
static long kernel_calls[K_NKERNELS];

void (*hplsim_on_kernel)(enum hplsim_kernel kernel, double seconds, double x0, double x1, double x2);
void (*hplsim_on_flush)(void);

void hplsim_runtime_init(const char *model_table, unsigned long long seed)
{
  int rank, local_rank, len;
  char host[MPI_MAX_PROCESSOR_NAME];
  char err[512];
  MPI_Comm node;
  /* before this rank's first message: the first rank's runs before anyone's */
  hplsim_netlaws_install();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  /* SMPI answers with the SimGrid host the rank is deployed on. */
  MPI_Get_processor_name(host, &len);
  /* The rank's index among the ranks of its host, in rank order: its CPU is this
   * modulo the host's CPU count in the model. */
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  if (hplsim_model_load(model_table, host, local_rank, err, sizeof err) != 0)
    hplsim_fatal("%s", err);
  hplsim_rng_seed(&noise_rng, seed, (unsigned long long)rank, 1);
  hplsim_rng_seed(&pivot_rng, seed, (unsigned long long)rank, 2);
  hplsim_progress_init(rank);
  if (getenv("HPLSIM_REPORT_MAPPING"))
    fprintf(stderr, "HPLSIM_MAPPING %d %s %d %d\n", rank, host, local_rank, hplsim_model_cpu());
}

void hplsim_kernel(enum hplsim_kernel kernel, double x0, double x1, double x2)
{
  double seconds = hplsim_model_draw(kernel, x0, x1, x2, &noise_rng);
  kernel_calls[kernel]++;
  if (seconds > 0.0) {
    kernel_seconds[kernel] += seconds;
    pending += seconds;
    if (hplsim_on_kernel)
      hplsim_on_kernel(kernel, seconds, x0, x1, x2);
  }
}

int hplsim_has_pending(void)
{
  return pending > 0.0;
}

/* Counts the rank's MPI calls (every one goes through hplsim_flush first): the probe
 * logic tells a loop that only polls from one that communicates between its probes. */
static unsigned long mpi_calls;

unsigned long hplsim_mpi_calls(void)
{
  return mpi_calls;
}

int hplsim_owns_core(void)
{
  static int owns = -1;
  if (owns < 0) {
    int size, here = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int w = 0; w < size; w++)
      here += hplsim_same_host(w);
    owns = here <= sg_host_core_count(sg_host_self());
  }
  return owns;
}

/* How modelled compute is injected. A rank with a core of its own computes alone on it:
 * an execution on the host's CPU lasts exactly its duration, and so does a sleep, which
 * SimGrid's CPU model does not couple to the host's other actions (each execution
 * re-solves the host's shared constraint when it starts and ends: E67). So such a rank
 * sleeps; a rank sharing cores with others executes, and SimGrid shares the cores.
 * HPLSIM_INJECT=exec executes always (SMPI's Paje trace shows only executions). */
static int sleeps(void)
{
  static int mode = -1;
  if (mode < 0) {
    const char *how = getenv("HPLSIM_INJECT");
    mode = how && strcmp(how, "exec") == 0 ? 0 : hplsim_owns_core();
  }
  return mode;
}

double hplsim_take_pending(void)
{
  mpi_calls++;
  double seconds = pending;
  if (seconds > 0.0) {
    pending = 0.0;
    if (hplsim_on_flush)
      hplsim_on_flush();
  }
  return seconds;
}

void hplsim_flush(void)
{
  double seconds = hplsim_take_pending();
  if (seconds > 0.0) {
    if (sleeps())
      sg_actor_sleep_for(seconds);
    else
      smpi_execute_benched(seconds);
  }
}

void hplsim_flush_then_sleep(double extra)
{
  double seconds = hplsim_take_pending();
  if (sleeps()) {
    if (seconds + extra > 0.0)
      sg_actor_sleep_for(seconds + extra);
    return;
  }
  if (seconds > 0.0)
    smpi_execute_benched(seconds);
  if (extra > 0.0)
    sg_actor_sleep_for(extra);
}

/* Point-to-point messages the rank sent through SimGrid (HPL's sends flush through here). */
static unsigned long sends;

void hplsim_flush_send(void)
{
  sends++;
  hplsim_flush();
}

unsigned long hplsim_sends(void)
{
  return sends;
}

int hplsim_random_index(int n)
{
  return (int)(((unsigned __int128)hplsim_rng_next(&pivot_rng) * (unsigned)n) >> 64);
}

double hplsim_pivot_magnitude(int n)
{
  /* HPLSIM_PIVOTS=lowest-row: the behaviour before (every local maximum 0, so the pivot
   * always comes from the lowest process row), kept for experiments. */
  static int lowest_row = -1;
  if (lowest_row < 0) {
    const char *env = getenv("HPLSIM_PIVOTS");
    lowest_row = env && strcmp(env, "lowest-row") == 0;
  }
  return lowest_row ? 0.0 : hplsim_rng_max_uniform(&pivot_rng, n);
}

/* Per rank: a line with its modelled compute time, then calls and seconds per kernel
 * (kernels never called are left out). */
void hplsim_runtime_report(FILE *out, int rank)
{
  double total = 0.0;
  for (int k = 0; k < K_NKERNELS; k++)
    total += kernel_seconds[k];
  fprintf(out, "HPLSIM_KERNEL_TIME %d %.17g", rank, total);
  for (int k = 0; k < K_NKERNELS; k++)
    if (kernel_calls[k])
      fprintf(out, " %s:%ld:%.17g", hplsim_kernel_name((enum hplsim_kernel)k), kernel_calls[k], kernel_seconds[k]);
  fputc('\n', out);
}
